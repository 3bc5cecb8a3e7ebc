/**
 * An independent, test-only model of what the Ascend 950 (arch35, "RegBase") kernels of the three
 * upsample backward ops compute, written from CANN's public operator source `hicann/ops-cv` (paths
 * below are relative to that repository). It shares no code with `src/` or `native/`: the library's
 * device reference and the C emulation are each checked against this second reading of the kernels.
 *
 * Every rule cites the file it was read from. Float32 arithmetic is `Math.fround` after every
 * operation; a multiply-add the compiler may contract into one FMA (`a * b + c` in the kernel source)
 * is {@link fmaf} when `fma` is on, else two rounded operations. Rounding to a 16-bit dtype is done
 * here from the exact value (round to nearest, ties to even), not through the library's helpers.
 *
 * Routing (which kernel runs), per op:
 * - nearest-exact 1d/2d → UpsampleNearestExact2dGrad: `DATA_COPY` or `SIMT` (a gather per result
 *   element, float32 accumulator, one rounding to the dtype; no float32 cast around it on RegBase).
 * - bilinear V2 → always ResizeBilinearV2Grad (scales passed as float); V1 → `ViewCopy` for equal
 *   sizes, else ResizeBilinearV2Grad. ResizeBilinearV2Grad's tiling picks `ALL_COPY`, the gathers
 *   `SIMT_*_DETERMINE` / `SIMT_*_DETERMINE_SCALES`, or the atomic scatter `SIMT_*` (the only route
 *   whose result depends on the order of the atomic additions, which accumulate in the output dtype).
 *
 * @module
 */

const f = Math.fround;

/** The dtypes of the ops. */
export type Dtype = "float32" | "float16" | "bfloat16";

/** One aclnn call on the 950 as the model takes it. */
export interface Arch35Call {
  /** The op. */
  readonly op: "nearestExact1d" | "nearestExact2d" | "bilinear2d";
  /** Shape of the result: `[N, C, L]` or `[N, C, H, W]`. */
  readonly inputSize: readonly number[];
  /** Spatial size of the gradient: `[L]` or `[H, W]`. */
  readonly outputSize: readonly number[];
  /** The double `scales` of the call, one per spatial dimension (0: none). */
  readonly scales: readonly number[];
  /** Bilinear only. */
  readonly alignCorners?: boolean;
  /** Which bilinear aclnn API: V2 (default) or V1 (a CANN without V2). */
  readonly bilinearApi?: "v1" | "v2";
  /** dtype of the gradient. */
  readonly gradDtype: Dtype;
  /** dtype of the result (default: the gradient's; only bilinear float32 gradients may differ). */
  readonly outDtype?: Dtype;
  /** ACL_OPT_DETERMINISTIC at the launch (`context_->GetDeterministic()`). */
  readonly deterministic: boolean;
  /** Whether the compiler contracted `a * b + c` into one FMA (default true: the compiler's default). */
  readonly fma?: boolean;
  /** Storage format (default NCHW: what the library always passes). */
  readonly format?: "NCHW" | "NHWC";
}

/** How a kernel computes its result. */
export type KernelKind = "copy" | "gather" | "atomic";

/** What the model says about one call. */
export interface Arch35Result {
  /** Kernel name as the emulator's `aclemuLastKernel` reports it (`native/include/aclemu.h`). */
  readonly kernel: string;
  /** copy (bit copy), gather (one float32 sum per result element), atomic (scatter in the dtype). */
  readonly kind: KernelKind;
  /** The result, contiguous `inputSize`, each value representable in the output dtype. */
  readonly values: Float32Array;
  /** Per result element: the number of non-zero terms added (gather: products; atomic: atomic adds). */
  readonly terms: Int32Array;
  /** Per result element: the sum of the terms' magnitudes (atomic: of the rounded terms). */
  readonly absSum: Float64Array;
  /** Atomic kernels: per element the exact (double) sum of the rounded terms. */
  readonly exactSum?: Float64Array;
}

/** Order of the atomic additions (atomic kernels only): gradient order, its reverse, or a permutation. */
export type AtomicOrder = "forward" | "reverse" | Int32Array;

// ---------------------------------------------------------------------------------------------------
// Float helpers, written here (no code shared with src/).

const F64 = new Float64Array(1);
const U64 = new BigUint64Array(F64.buffer);

/** Binary exponent of a finite non-zero double (`floor(log2 |x|)`), exact. */
function exponentOf(x: number): number {
  F64[0] = x;
  const biased = Number((U64[0] >> 52n) & 0x7ffn);
  if (biased === 0) return Math.floor(Math.log2(Math.abs(x))); // double subnormal: never here
  return biased - 1023;
}

interface Format {
  readonly precision: number; // significand bits, implicit one included
  readonly minExponent: number; // exponent of the smallest normal
  readonly max: number; // largest finite
}

const FORMATS: Readonly<Record<Dtype, Format>> = {
  float32: { precision: 24, minExponent: -126, max: 3.4028234663852886e38 },
  float16: { precision: 11, minExponent: -14, max: 65504 },
  bfloat16: { precision: 8, minExponent: -126, max: 3.3895313892515355e38 },
};

/** One ulp of `dtype` at magnitude `x` (the subnormal spacing below the normal range). */
export function ulpOf(dtype: Dtype, x: number): number {
  const { precision, minExponent } = FORMATS[dtype];
  const e = x === 0 || !Number.isFinite(x) ? minExponent : Math.max(exponentOf(x), minExponent);
  return 2 ** (e - precision + 1);
}

/**
 * `x` (any double) rounded once to `dtype`: round to nearest, ties to even; overflow to ±Infinity
 * (what a static_cast / an atomic add of the dtype does with an exact sum).
 */
export function roundTo(dtype: Dtype, x: number): number {
  if (x === 0 || !Number.isFinite(x)) return x;
  const { max } = FORMATS[dtype];
  const ulp = ulpOf(dtype, x);
  const q = x / ulp; // exact: a power-of-two scaling
  const fl = Math.floor(q);
  const d = q - fl;
  const n = d > 0.5 ? fl + 1 : d < 0.5 ? fl : fl % 2 === 0 ? fl : fl + 1;
  const r = n * ulp;
  if (Math.abs(r) > max) return r > 0 ? Infinity : -Infinity;
  return r;
}

const F32 = new Float32Array(1);
const I32 = new Int32Array(F32.buffer);

/** The float32 neighbour of a finite float32 `x` in direction `dir` (+1 up, -1 down). */
function nextFloat32(x: number, dir: 1 | -1): number {
  if (x === 0) return dir * 2 ** -149;
  F32[0] = x;
  I32[0] += (x > 0) === (dir > 0) ? 1 : -1;
  return F32[0];
}

/**
 * Float32 fused multiply-add `fl32(a * b + c)` with a single rounding (a, b, c float32). `a * b` is
 * exact in a double; the double sum may round, so the rounding error is recovered (two-sum) and a
 * sum that lands exactly on a float32 midpoint is resolved by the error's sign.
 */
export function fmaf(a: number, b: number, c: number): number {
  const p = a * b;
  const s = p + c;
  if (!Number.isFinite(s)) return f(s);
  const bb = s - p;
  const err = (p - (s - bb)) + (c - bb);
  const r = f(s);
  if (err === 0 || r === s) return r;
  const other = nextFloat32(r, r < s ? 1 : -1);
  const mid = (r + other) / 2;
  if (mid !== s) return r;
  // s sits exactly on the midpoint: the true value lies on err's side of it.
  return err > 0 ? Math.max(r, other) : Math.min(r, other);
}

/** `a * b + c` in float32 as the kernel's compiler emits it: one FMA, or product and sum rounded. */
function mulAdd(a: number, b: number, c: number, fma: boolean): number {
  return fma ? fmaf(a, b, c) : f(f(a * b) + c);
}

// ---------------------------------------------------------------------------------------------------
// Shapes.

interface Shape4 {
  n: number;
  c: number;
  /** grad (des) spatial. */
  gH: number;
  gW: number;
  /** result (src, the forward op's input) spatial. */
  rH: number;
  rW: number;
}

function shape4(call: Arch35Call): Shape4 {
  const oneD = call.op === "nearestExact1d";
  const [n, c] = call.inputSize;
  return {
    n,
    c,
    rH: oneD ? 1 : call.inputSize[2],
    rW: call.inputSize[oneD ? 2 : 3],
    gH: oneD ? 1 : call.outputSize[0],
    gW: call.outputSize[oneD ? 0 : 1],
  };
}

function emptyResult(kernel: string, kind: KernelKind, size: number): Arch35Result {
  return {
    kernel,
    kind,
    values: new Float32Array(size),
    terms: new Int32Array(size),
    absSum: new Float64Array(size),
  };
}

// ---------------------------------------------------------------------------------------------------
// nearest-exact.

/**
 * The scale attributes the op_api hands to UpsampleNearestExact2dGrad, `[scaleH, scaleW]` (0: none).
 *
 * - 2d (`image/upsample_nearest_exact2d_grad/op_host/op_api/aclnn_upsample_nearest_exact2d_backward.cpp`):
 *   `realScalesH = scalesH > 0 ? static_cast<float>(scalesH) : 0` (the scale itself, output per input).
 * - 1d (`.../op_api/aclnn_upsample_nearest_exact1d_backward.cpp`): the 2d kernel on `(N, C, 1, L)` with
 *   `realScales_h = 1.0f` and `realScales_w = scales > 0 ? static_cast<float>(scales) : 0`.
 */
function nearestAttrs(call: Arch35Call): [number, number] {
  if (call.op === "nearestExact1d") return [1, call.scales[0] > 0 ? f(call.scales[0]) : 0];
  return [call.scales[0] > 0 ? f(call.scales[0]) : 0, call.scales[1] > 0 ? f(call.scales[1]) : 0];
}

/**
 * The op_api's checks (both nearest op_api files, `CheckScalesValid`, `CheckInputElement`): scales
 * not negative; `(scale > 0 ? 1 / scale : in / out) >= 0.02` in double per dimension (the 1d file
 * checks only L; its H is 1 / 1).
 */
function checkNearest(call: Arch35Call, s: Shape4): void {
  const dims = call.op === "nearestExact1d"
    ? [[s.rW, s.gW, call.scales[0]]]
    : [[s.rH, s.gH, call.scales[0]], [s.rW, s.gW, call.scales[1]]];
  for (const [inn, out, scale] of dims) {
    if (scale < 0) throw new RangeError(`nearest-exact: negative scale ${scale} (161002)`);
    const real = scale > 0 ? 1 / scale : inn / out;
    if (!(real >= 0.02)) {
      throw new RangeError(`nearest-exact: scale ${real} below 0.02 (more than 50x; 161002)`);
    }
  }
}

/**
 * Tiling (`image/upsample_nearest_exact2d_grad/op_host/upsample_nearest_exact2d_grad_tiling_arch35.cpp`):
 * `ComputeScales`: `scaleH = (float)gradH / (float)resultH` (the tiling's `inH` is the gradient's,
 * `outH` the result's: output per input), replaced by the attribute when it is > 0. `CalTilingData`:
 * DATA_COPY (schId 0) when the sizes are equal and `|scale - 1.0f| <= 1e-8f` on both dimensions,
 * else SIMT (schId 1-3, which only split the work differently).
 */
function nearestPlan(call: Arch35Call, s: Shape4): { kernel: string; sH: number; sW: number } {
  const [aH, aW] = nearestAttrs(call);
  const sH = aH > 0 ? aH : f(f(s.gH) / f(s.rH));
  const sW = aW > 0 ? aW : f(f(s.gW) / f(s.rW));
  const eps = f(1e-8);
  const copy = s.gH === s.rH && s.gW === s.rW && f(Math.abs(f(sH - 1))) <= eps &&
    f(Math.abs(f(sW - 1))) <= eps;
  return { kernel: `UpsampleNearestExact2dGrad.${copy ? "DATA_COPY" : "SIMT"}`, sH, sW };
}

/**
 * `ComputeOrig<isExact = true>` (`image/upsample_nearest_exact2d_grad/op_kernel/arch35/upsample_nearest_exact2d_grad_simt_base.h`):
 * `orig = min(ceilf(static_cast<float>(idx) * scale - 0.5f), limit)`; the product and the subtraction
 * are one FMA when contracted. `ceilf` of a value in (-1, 0] is -0, stored as an unsigned 0.
 */
function nearestOrig(idx: number, scale: number, limit: number, fma: boolean): number {
  const v = Math.ceil(mulAdd(f(idx), scale, -0.5, fma));
  return Math.min(Math.max(v, 0), limit);
}

function nearestModel(grad: Float32Array, call: Arch35Call, s: Shape4): Arch35Result {
  checkNearest(call, s);
  const plan = nearestPlan(call, s);
  const dtype = call.outDtype ?? call.gradDtype;
  const size = s.n * s.c * s.rH * s.rW;
  if (plan.kernel.endsWith("DATA_COPY")) {
    // `upsample_nearest_exact2d_grad_data_copy.h`: DataCopyPad in and out, bytes unchanged.
    const r = emptyResult(plan.kernel, "copy", size);
    r.values.set(grad);
    for (let i = 0; i < size; i++) {
      r.terms[i] = grad[i] === 0 ? 0 : 1;
      r.absSum[i] = Math.abs(grad[i]);
    }
    return r;
  }
  const fma = call.fma ?? true;
  const r = emptyResult(plan.kernel, "gather", size);
  // `SimtCompute` + `ComputeForSplitNchw/Hw/Chw` (same file): one thread per result element (N, C, H,
  // W); `grad += static_cast<float>(inputGm[...])` over h in [origH, origHUp), w in [origW, origWUp),
  // h outer; `outputGm[idx] = static_cast<T1>(grad)`.
  for (let p = 0; p < s.n * s.c; p++) {
    for (let h = 0; h < s.rH; h++) {
      const h0 = nearestOrig(h, plan.sH, s.gH, fma), h1 = nearestOrig(h + 1, plan.sH, s.gH, fma);
      for (let w = 0; w < s.rW; w++) {
        const w0 = nearestOrig(w, plan.sW, s.gW, fma), w1 = nearestOrig(w + 1, plan.sW, s.gW, fma);
        let acc = 0, terms = 0, abs = 0;
        for (let y = h0; y < h1; y++) {
          for (let x = w0; x < w1; x++) {
            const g = grad[(p * s.gH + y) * s.gW + x];
            acc = f(acc + g);
            if (g !== 0) terms++;
            abs += Math.abs(g);
          }
        }
        const k = (p * s.rH + h) * s.rW + w;
        r.values[k] = roundTo(dtype, acc);
        r.terms[k] = terms;
        r.absSum[k] = abs;
      }
    }
  }
  return r;
}

// ---------------------------------------------------------------------------------------------------
// bilinear.

/** The tiling's decisions for ResizeBilinearV2Grad on one call. */
export interface ResizePlan {
  /** Tiling key name (without the op prefix), e.g. `SIMT_NCHW_DETERMINE`. */
  readonly key: string;
  /** Source step per gradient step, H and W (`scaleH_`, `scaleW_`). */
  readonly scaleH: number;
  readonly scaleW: number;
  /** `1.0f / scale` (set when the plan is a gather). */
  readonly inverseH: number;
  readonly inverseW: number;
  readonly alignCorners: boolean;
  readonly halfPixelCenters: boolean;
}

/**
 * ResizeBilinearV2Grad's arch35 tiling
 * (`image/resize_bilinear_v2_grad/op_host/arch35/resize_bilinear_v2_grad_tiling_arch35.cpp`), for the
 * aclnn call's attributes: `alignCorners`, `halfPixelCenters = !alignCorners` and the scales
 * `{static_cast<float>(scalesH), static_cast<float>(scalesW)}` (both op_api files, RegBase branch).
 *
 * - `isDetermine_ = context_->GetDeterministic() == 1`.
 * - `IsMatchSimtDetermine`: deterministic, or neither align_corners nor half-pixel, or grads and y
 *   dtypes differ.
 * - `SetScales(isDetermine)` (run in Init with IsMatchSimtDetermine): align_corners: gather
 *   `(src > 1 && des > 1) ? (float)(src - 1) / (float)(des - 1) : (float)src / des`, scatter
 *   `des > 1 ? (float)(src - 1) / (float)(des - 1) : 0`; else `orig > 0 ? 1.0f / orig : (float)src / des`;
 *   a gather also sets `inverseScale = 1.0f / scale`.
 * - `SetTilingKey`: ALL_COPY (equal H and W, same dtypes), POINT_COPY (NHWC only), the gathers when
 *   IsMatchSimtDetermine, else C_PARALLEL (NHWC, C * size >= 128 bytes), else a gather when a scale is
 *   in (0, 1) (enlarging; then `SetScales(true)`), else the atomic SIMT.
 * - `SetSimtTilingKey(true)`: DETERMINE when align_corners, or when
 *   `fabs((float)src / des - scale) < 1e-6f` on both dimensions; else DETERMINE_SCALES. `_IDX64` when a
 *   size reaches the 32-bit range.
 */
export function resizePlan(call: Arch35Call): ResizePlan {
  const s = shape4(call);
  const align = call.alignCorners ?? false;
  const hpc = !align;
  const gradDtype = call.gradDtype, yDtype = call.outDtype ?? call.gradDtype;
  const origH = call.scales[0] !== 0 ? f(call.scales[0]) : 0;
  const origW = call.scales[1] !== 0 ? f(call.scales[1]) : 0;
  const src = [s.rH, s.rW], des = [s.gH, s.gW], orig = [origH, origW];
  const nhwc = call.format === "NHWC";
  const sizeOf = (d: Dtype): number => (d === "float32" ? 4 : 2);

  const setScales = (gather: boolean): number[] =>
    [0, 1].map((d) => {
      if (align) {
        if (gather) {
          return src[d] > 1 && des[d] > 1
            ? f(f(src[d] - 1) / f(des[d] - 1))
            : f(f(src[d]) / f(des[d]));
        }
        return des[d] > 1 ? f(f(src[d] - 1) / f(des[d] - 1)) : 0;
      }
      return orig[d] > 0 ? f(1 / orig[d]) : f(f(src[d]) / f(des[d]));
    });

  const matchDetermine = call.deterministic || (!align && !hpc) || gradDtype !== yDtype;
  let scales = setScales(matchDetermine);
  let gather = matchDetermine;

  const idx64 = s.n * s.c * s.gH * s.gW >= 2 ** 32 - 1 || s.n * s.c * s.rH * s.rW >= 2 ** 32 - 1;
  const layout = nhwc ? "NHWC" : "NCHW";
  const simtKey = (determine: boolean): string => {
    const suffix = idx64 ? "_IDX64" : "";
    if (!determine) return `SIMT_${layout}${suffix}`;
    const ratioMatches = [0, 1].every((d) =>
      f(Math.abs(f(f(f(src[d]) / f(des[d])) - scales[d]))) < f(1e-6)
    );
    return align || ratioMatches
      ? `SIMT_${layout}_DETERMINE${suffix}`
      : `SIMT_${layout}_DETERMINE_SCALES${suffix}`;
  };
  const cBytesOk = s.c * sizeOf(gradDtype) >= 128 && s.c * sizeOf(yDtype) >= 128;

  let key: string;
  if (s.rH === s.gH && s.rW === s.gW && gradDtype === yDtype) {
    key = "ALL_COPY";
  } else if (nhwc && gradDtype === yDtype && cBytesOk && pointCopy()) {
    key = "POINT_COPY";
  } else if (matchDetermine) {
    key = simtKey(true);
  } else if (nhwc && cBytesOk) {
    key = "C_PARALLEL";
  } else if (scales.some((v) => v > 0 && v < 1)) {
    key = simtKey(true);
    scales = setScales(true);
    gather = true;
  } else {
    key = simtKey(false);
  }
  return {
    key,
    scaleH: scales[0],
    scaleW: scales[1],
    inverseH: gather ? f(1 / scales[0]) : 0,
    inverseW: gather ? f(1 / scales[1]) : 0,
    alignCorners: align,
    halfPixelCenters: hpc,
  };

  // `IsMatchPointCopy` (same file), NHWC only.
  function pointCopy(): boolean {
    if (align) {
      if (s.gH === 1 && s.gW === 1) return true;
      return s.gH > 1 && s.gW > 1 && (s.rH - 1) % (s.gH - 1) === 0 &&
        (s.rW - 1) % (s.gW - 1) === 0;
    }
    if (origH > 0 || origW > 0) return false;
    if (s.rH % s.gH === 0 && s.rW % s.gW === 0) {
      return hpc ? Math.floor(s.rH / s.gH) % 2 === 1 && Math.floor(s.rW / s.gW) % 2 === 1 : true;
    }
    return false;
  }
}

/**
 * The bilinear op_api checks on RegBase (`aclnn_upsample_bilinear_2d_backward_v2.cpp` and
 * `image/resize_bilinear_v2_grad/op_api/aclnn_upsample_bilinear_2d_backward.cpp`): sizes > 0; V1 with a
 * float32 gradient allows any float result dtype, else the dtypes must match; no minimum-scale check
 * on RegBase (the V2 file's `CheckMinScale` is on the DAV_2201 branch only).
 */
function checkBilinear(call: Arch35Call): void {
  const out = call.outDtype ?? call.gradDtype;
  if (out !== call.gradDtype && !(call.bilinearApi === "v1" && call.gradDtype === "float32")) {
    throw new RangeError(`bilinear: result dtype ${out} differs from the gradient's (161002)`);
  }
}

/** The four-corner weights of one scatter (atomic) or the gather taps; see the kernels below. */
function bilinearModel(
  grad: Float32Array,
  call: Arch35Call,
  s: Shape4,
  order: AtomicOrder,
): Arch35Result {
  checkBilinear(call);
  const size = s.n * s.c * s.rH * s.rW;
  const sameSizes = s.rH === s.gH && s.rW === s.gW;
  // V1 (`image/resize_bilinear_v2_grad/op_api/aclnn_upsample_bilinear_2d_backward.cpp`): equal sizes are
  // a ViewCopy of the gradient (no kernel); V2 always runs ResizeBilinearV2Grad on RegBase.
  if (call.bilinearApi === "v1" && sameSizes) return copyOf(grad, "ViewCopy", size, call);
  const plan = resizePlan(call);
  const kernel = `ResizeBilinearV2Grad.${plan.key}`;
  if (plan.key === "ALL_COPY") return copyOf(grad, kernel, size, call);
  if (plan.key === "POINT_COPY" || plan.key === "C_PARALLEL") {
    throw new Error(`${kernel}: NHWC-only kernel not modelled (the library passes NCHW)`);
  }
  if (plan.key.includes("DETERMINE_SCALES")) return gatherScales(grad, call, s, plan, kernel);
  if (plan.key.includes("DETERMINE")) return gatherDetermine(grad, call, s, plan, kernel);
  return scatterAtomic(grad, call, s, plan, kernel, order);
}

// `resize_bilinear_v2_grad_all_copy.h`: DataCopyPad of the bytes (same dtypes only, by the tiling).
function copyOf(grad: Float32Array, kernel: string, size: number, call: Arch35Call): Arch35Result {
  const r = emptyResult(kernel, "copy", size);
  const dtype = call.outDtype ?? call.gradDtype;
  for (let i = 0; i < size; i++) {
    r.values[i] = roundTo(dtype, grad[i]);
    r.terms[i] = grad[i] === 0 ? 0 : 1;
    r.absSum[i] = Math.abs(grad[i]);
  }
  return r;
}

/**
 * The atomic scatter (`image/resize_bilinear_v2_grad/op_kernel/arch35/resize_bilinear_v2_grad_simt.h`,
 * `SimtCompute`): y is zeroed in its dtype (`InitOutput`), then one thread per gradient element:
 * `origH = (float(H) + offset) * scaleH - offset` (offset 0.5 with half-pixel centres; contractible),
 * clamped at 0; `topY = min((T_IDX)floorf(origH), src - 1)`;
 * `deltaY = fminf(fmaxf(origH - (float)topY, 0), 1)`; `bottomY = topY < src - 1 ? topY + 1 : topY`;
 * `deltaY1 = 1 - deltaY`; likewise X. Four `asc_atomic_add(y + idx, static_cast<T2>(dx * dy * g))`
 * (left-top, right-top, left-bottom, right-bottom; `dx * dy` first): each term rounded to the output
 * dtype, each addition rounded in it, in an order the hardware picks.
 */
function scatterAtomic(
  grad: Float32Array,
  call: Arch35Call,
  s: Shape4,
  plan: ResizePlan,
  kernel: string,
  order: AtomicOrder,
): Arch35Result {
  const dtype = call.outDtype ?? call.gradDtype;
  const fma = call.fma ?? true;
  const size = s.n * s.c * s.rH * s.rW;
  const r = emptyResult(kernel, "atomic", size);
  const exact = new Float64Array(size);
  const offset = plan.halfPixelCenters ? 0.5 : 0;
  const corner = (i: number, scale: number, len: number): [number, number, number, number] => {
    let o = mulAdd(f(f(i) + offset), scale, -offset, fma);
    o = o < 0 ? 0 : o;
    const lo = Math.min(Math.floor(o), len - 1);
    const delta = Math.min(Math.max(f(o - lo), 0), 1);
    const hi = lo < len - 1 ? lo + 1 : lo;
    return [lo, hi, delta, f(1 - delta)];
  };
  const count = grad.length;
  const at = (k: number): number =>
    order === "forward" ? k : order === "reverse" ? count - 1 - k : order[k];
  for (let k = 0; k < count; k++) {
    const gi = at(k);
    const w = gi % s.gW, h = Math.floor(gi / s.gW) % s.gH, p = Math.floor(gi / (s.gW * s.gH));
    const [top, bottom, dy, dy1] = corner(h, plan.scaleH, s.rH);
    const [left, right, dx, dx1] = corner(w, plan.scaleW, s.rW);
    const g = grad[gi];
    const base = p * s.rH * s.rW;
    const adds: Array<[number, number]> = [
      [base + top * s.rW + left, f(dx1 * dy1)],
      [base + top * s.rW + right, f(dx * dy1)],
      [base + bottom * s.rW + left, f(dx1 * dy)],
      [base + bottom * s.rW + right, f(dx * dy)],
    ];
    for (const [idx, weight] of adds) {
      const term = roundTo(dtype, f(weight * g));
      r.values[idx] = roundTo(dtype, r.values[idx] + term); // exact double sum, one rounding
      exact[idx] += term;
      if (term !== 0) r.terms[idx]++;
      r.absSum[idx] += Math.abs(term);
    }
  }
  return { ...r, exactSum: exact };
}

/**
 * The gather with a running coordinate
 * (`image/resize_bilinear_v2_grad/op_kernel/arch35/resize_bilinear_v2_grad_simt_determine.h`,
 * `SimtCompute`): one thread per result element (H, W in the result's size):
 * `inYStart = max(0, (int64)ceilf((float(H) - 1.0f + offset) * inverseScaleH - offset))`,
 * `outYStart = (float(inYStart) + offset) * scaleH - offset` (both contractible); then
 * `while (outY < H + 1 && inY < gradH) { while (outX < W + 1 && inX < gradW) { ... outX += scaleW } outY += scaleH }`
 * with the clamped coordinate `max(0, min(out, src - 1))`, `lerp = 1 - |clamped - H|` and
 * `acc += grad * yLerp * xLerp` (`grad * yLerp` first; the addition contractible); one rounding to y's
 * dtype at the end.
 */
function gatherDetermine(
  grad: Float32Array,
  call: Arch35Call,
  s: Shape4,
  plan: ResizePlan,
  kernel: string,
): Arch35Result {
  const dtype = call.outDtype ?? call.gradDtype;
  const fma = call.fma ?? true;
  const size = s.n * s.c * s.rH * s.rW;
  const r = emptyResult(kernel, "gather", size);
  const offset = plan.halfPixelCenters ? 0.5 : 0;
  const maxH = f(s.rH - 1), maxW = f(s.rW - 1);
  for (let p = 0; p < s.n * s.c; p++) {
    for (let H = 0; H < s.rH; H++) {
      const inYStart = startIndex(H, plan.inverseH, offset, fma);
      const outYStart = mulAdd(f(f(inYStart) + offset), plan.scaleH, -offset, fma);
      for (let W = 0; W < s.rW; W++) {
        const inXStart = startIndex(W, plan.inverseW, offset, fma);
        const outXStart = mulAdd(f(f(inXStart) + offset), plan.scaleW, -offset, fma);
        let acc = 0, terms = 0, abs = 0;
        let outY = outYStart;
        for (let inY = inYStart; outY < H + 1 && inY < s.gH; inY++) {
          let outX = outXStart;
          for (let inX = inXStart; outX < W + 1 && inX < s.gW; inX++) {
            const g = grad[(p * s.gH + inY) * s.gW + inX];
            const yc = Math.max(0, Math.min(outY, maxH));
            const xc = Math.max(0, Math.min(outX, maxW));
            const yLerp = f(1 - Math.abs(f(yc - H)));
            const xLerp = f(1 - Math.abs(f(xc - W)));
            const t = f(g * yLerp);
            acc = mulAdd(t, xLerp, acc, fma);
            const term = t * xLerp;
            if (term !== 0) terms++;
            abs += Math.abs(term);
            outX = f(outX + plan.scaleW);
          }
          outY = f(outY + plan.scaleH);
        }
        const k = (p * s.rH + H) * s.rW + W;
        r.values[k] = roundTo(dtype, acc);
        r.terms[k] = terms;
        r.absSum[k] = abs;
      }
    }
  }
  return r;
}

/** `max(0, (int64)ceilf((float(i) - 1.0f + offset) * inverse - offset))` (both gather kernels). */
function startIndex(i: number, inverse: number, offset: number, fma: boolean): number {
  return Math.max(0, Math.ceil(mulAdd(f(f(i - 1) + offset), inverse, -offset, fma)));
}

/**
 * The gather with recomputed coordinates
 * (`image/resize_bilinear_v2_grad/op_kernel/arch35/resize_bilinear_v2_grad_simt_determine_scales.h`,
 * `SimtScalesCompute`): start indices as in DETERMINE; the next coordinate is
 * `CalcSourceIndex(scale, i) = scale * (float(i) + 0.5f) - 0.5f` (half-pixel; contractible) or
 * `scale * float(i)`. Four loops by where (H, W) lies:
 * - inside on both (`CalcInternalPoint`): as DETERMINE, `acc += grad * yLerp * xLerp`;
 * - W on the edge, H inside (`CalcWBoundaryPoint`): the X loop runs to the gradient's end (no
 *   `outX < W + 1` bound); `XTemp = min(floorf(xc), src - 1)`, `lepx = {xLerp, xc - XTemp}`, and for
 *   j in 0, 1 with `XTemp + j == W`: `acc += grad * lepx[j] * yLerp`;
 * - H on the edge, W inside (`CalcHBoundaryPoint`): the Y loop unbounded, `acc += grad * lepy[i] * xLerp`;
 * - corners (`CalcCornerPoint`): both unbounded, `acc += grad * lepx[j] * lepy[i]` for each (i, j) whose
 *   cells are (H, W).
 */
function gatherScales(
  grad: Float32Array,
  call: Arch35Call,
  s: Shape4,
  plan: ResizePlan,
  kernel: string,
): Arch35Result {
  const dtype = call.outDtype ?? call.gradDtype;
  const fma = call.fma ?? true;
  const size = s.n * s.c * s.rH * s.rW;
  const r = emptyResult(kernel, "gather", size);
  const hpc = plan.halfPixelCenters;
  const offset = hpc ? 0.5 : 0;
  const maxH = f(s.rH - 1), maxW = f(s.rW - 1);
  const source = (scale: number, i: number): number =>
    hpc ? mulAdd(scale, f(f(i) + 0.5), -0.5, fma) : f(scale * f(i));
  for (let p = 0; p < s.n * s.c; p++) {
    for (let H = 0; H < s.rH; H++) {
      const edgeH = H === 0 || H === s.rH - 1;
      const inYStart = startIndex(H, plan.inverseH, offset, fma);
      const outYStart = mulAdd(f(f(inYStart) + offset), plan.scaleH, -offset, fma);
      for (let W = 0; W < s.rW; W++) {
        const edgeW = W === 0 || W === s.rW - 1;
        const inXStart = startIndex(W, plan.inverseW, offset, fma);
        const outXStart = mulAdd(f(f(inXStart) + offset), plan.scaleW, -offset, fma);
        let acc = 0, terms = 0, abs = 0;
        const add = (a: number, b: number, c: number): void => {
          const t = f(a * b);
          acc = mulAdd(t, c, acc, fma);
          if (t * c !== 0) terms++;
          abs += Math.abs(t * c);
        };
        let outY = outYStart;
        for (let inY = inYStart; (edgeH || outY < H + 1) && inY < s.gH; inY++) {
          let outX = outXStart;
          for (let inX = inXStart; (edgeW || outX < W + 1) && inX < s.gW; inX++) {
            const g = grad[(p * s.gH + inY) * s.gW + inX];
            const yc = Math.max(0, Math.min(outY, maxH));
            const xc = Math.max(0, Math.min(outX, maxW));
            const yLerp = f(1 - Math.abs(f(yc - H)));
            const xLerp = f(1 - Math.abs(f(xc - W)));
            const yTemp = Math.min(Math.floor(yc), maxH);
            const xTemp = Math.min(Math.floor(xc), maxW);
            const lepy = [yLerp, f(yc - yTemp)], lepx = [xLerp, f(xc - xTemp)];
            if (!edgeH && !edgeW) {
              add(g, yLerp, xLerp);
            } else if (!edgeH) { // CalcWBoundaryPoint
              for (let j = 0; j < 2; j++) if (xTemp + j === W) add(g, lepx[j], yLerp);
            } else if (!edgeW) { // CalcHBoundaryPoint
              for (let i = 0; i < 2; i++) if (yTemp + i === H) add(g, lepy[i], xLerp);
            } else { // CalcCornerPoint
              for (let i = 0; i < 2; i++) {
                for (let j = 0; j < 2; j++) {
                  if (yTemp + i === H && xTemp + j === W) add(g, lepx[j], lepy[i]);
                }
              }
            }
            outX = source(plan.scaleW, inX + 1);
          }
          outY = source(plan.scaleH, inY + 1);
        }
        const k = (p * s.rH + H) * s.rW + W;
        r.values[k] = roundTo(dtype, acc);
        r.terms[k] = terms;
        r.absSum[k] = abs;
      }
    }
  }
  return r;
}

// ---------------------------------------------------------------------------------------------------
// Entry points.

/**
 * The 950's result of one call on a contiguous gradient (`[N, C, ...outputSize]`, values already in
 * the gradient's dtype), with the kernel that computes it. Atomic kernels add in `order` (default:
 * gradient order); the hardware's order is unspecified, see {@link assertMatchesArch35}.
 *
 * @example
 * ```ts
 * import { arch35Model } from "./ascend950_model.ts";
 * const call = { op: "nearestExact1d", inputSize: [1, 1, 6], outputSize: [1], scales: [0],
 *   gradDtype: "float32", deterministic: false } as const;
 * arch35Model(Float32Array.of(1), call).values; // [0, 0, 1, 0, 0, 0] (FMA contracted)
 * arch35Model(Float32Array.of(1), { ...call, fma: false }).values; // [0, 0, 0, 1, 0, 0]
 * ```
 */
export function arch35Model(
  grad: Float32Array,
  call: Arch35Call,
  order: AtomicOrder = "forward",
): Arch35Result {
  const s = shape4(call);
  const expected = s.n * s.c * s.gH * s.gW;
  if (grad.length !== expected) {
    throw new RangeError(`gradient has ${grad.length} elements, the call needs ${expected}`);
  }
  if (s.n * s.c === 0) return emptyResult("", "copy", 0);
  return call.op === "bilinear2d"
    ? bilinearModel(grad, call, s, order)
    : nearestModel(grad, call, s);
}

/** The kernel that runs for a call (as `aclemuLastKernel` names it). */
export function arch35Kernel(call: Arch35Call): string {
  const s = shape4(call);
  if (call.op !== "bilinear2d") return nearestPlan(call, s).kernel;
  if (call.bilinearApi === "v1" && s.rH === s.gH && s.rW === s.gW) return "ViewCopy";
  return `ResizeBilinearV2Grad.${resizePlan(call).key}`;
}

/** Whether the deterministic flag changes the kernel for this call (gather vs atomic scatter). */
export function toggleChangesKernel(call: Omit<Arch35Call, "deterministic">): boolean {
  return arch35Kernel({ ...call, deterministic: false }) !==
    arch35Kernel({ ...call, deterministic: true });
}
