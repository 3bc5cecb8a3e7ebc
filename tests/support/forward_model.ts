/**
 * An independent, test-only model of what the FORWARD upsample kernels compute on each Ascend
 * family (aclnnUpsampleNearestExact1d, aclnnUpsampleNearestExact2d, aclnnUpsampleBilinear2d),
 * written from the vendor's public source. It shares no code with `src/` or `native/`; it reuses
 * only the float helpers `fmaf`, `roundTo` and `ulpOf` of the other test-only model
 * (`ascend950_model.ts`).
 *
 * Sources, cited next to each rule (paths in GitHub `hicann/ops-cv` unless said otherwise):
 * - routing: `image/upsample_bilinear2d/op_host/op_api/aclnn_upsample_bilinear_2d.cpp` (+ its l0op
 *   `upsample_bilinear2d.cpp`),
 *   `image/upsample_nearest/op_host/op_api/aclnn_upsample_nearest_exact2d.cpp` and
 *   `aclnn_upsample_nearest_exact1d.cpp`, `image/resize_bilinear_v2/op_api/resize_bilinear_v2.cpp`;
 * - A2/A3 kernels: `image/upsample_bilinear2d/op_host/upsample_bilinear2d_tiling.cpp`,
 *   `op_kernel/upsample_bilinear2d_kernel.h`, `op_kernel/upsample_bilinear2d_common.h`;
 *   `image/upsample_nearest/op_host/upsample_nearest_tiling.cpp`, `op_kernel/upsample_nearest.h`
 *   (`upsample_nearest_310p.h` on the 310P: same index rule), `op_host/upsample_nearest_def.cpp`;
 * - Ascend 950 kernels:
 *   `image/resize_bilinear_v2/op_host/arch35/resize_bilinear_v2_tiling_arch35.cpp`,
 *   `op_kernel/resize_bilinear_v2_apt.cpp`, `op_kernel/arch35/resize_bilinear_v2_simt_nchw.h`,
 *   `..._simt_hw.h`, `..._broadcast_nchw.h`;
 *   `image/resize_nearest_neighbor_v2/op_host/arch35/resize_nearest_neighbor_v2_tiling_base.cpp`,
 *   `op_kernel/arch35/resize_nearest_neighbor_v2_simt.h`, `..._nchw_gather.h`;
 *   `image/upsample_nearest3d/op_host/upsample_nearest3d_tiling_arch35.cpp`,
 *   `op_kernel/arch35/upsample_nearest3d_simt_base.h` (UpsampleNearestExact3d);
 * - the TBE ResizeBilinearV2 (910, 310P, and A2/A3's fallback): CANN 8.1.RC1 toolkit, GitHub
 *   `leideng/CANN-8.1.RC1`,
 *   `Ascend/ascend-toolkit/8.1.RC1/opp/built-in/op_impl/ai_core/tbe/impl/dynamic/`
 *   `resize_bilinear_v2.py` (cited as `tbe.<method>`), its tiling
 *   `ops/built-in/op_tiling/resize_bilinear_v2.cc` (copy in GitHub `dengguojie/vue-element-admin`,
 *   cited as `tbe-tiling`);
 * - platform facts: GitHub `hicann/runtime`
 *   `src/platform/platform_config/{cann,cann-dev}/<SoC>.ini`: `[AICoreintrinsicDtypeMap]` is what
 *   `tbe_platform.api_check_support` answers from (910A: vdiv, no vbi, no vcopy; 310P3: vdiv,
 *   `vbi|float16`, no vcopy; 910B3 and 910_9391: vdiv, `vbi|float16,float32`, vcopy);
 *   Ascend950PR_9599: `vector_core_cnt=72`, `ub_size=253952`.
 *
 * Float32 arithmetic is `Math.fround` at every rounding point; 16-bit roundings are `roundTo`
 * (round to nearest, ties to even). Where the source leaves the rounding of a multiply-add open,
 * {@link ForwardOptions.fma} switches it (fused: one rounding): the A2 kernel's scalar centre
 * `scale * (d + 0.5f) - 0.5f`; the 950 SIMT coordinate `(H + 0.5f) * scale - 0.5f` and its weighted
 * sums `a * b + c * d` (the left product fused, as LLVM's DAG combiner picks when both products
 * have one use); the vbi instruction's multiply-accumulate (TBE, 100000 key on A2/A3 and 310P).
 * Vector instructions (`vadds`, `vmuls`, `vsub`, `Adds`, `Muls` ...) always round each operation.
 *
 * Assumptions the source does not settle (marked where used): `vdiv` and float32 -> 16-bit `vconv`
 * / `Cast` round to nearest even; the Cube's float32 matmul (A2 kernel) rounds each product and the
 * sum of the (at most two) non-zero products, and the matmul window's zero-weight terms are dropped
 * (they change only signed zeros and non-finite inputs); vbi's first horizontal iteration writes
 * the product; the 950 SIMT_HW kernel's float -> uint conversion of a negative floor saturates to
 * 0.
 *
 * @module
 */

import { fmaf, roundTo, ulpOf } from "./ascend950_model.ts";

const f = Math.fround;

/** Ascend family (CANN NpuArch): a2 = 2201 (A2/A3), 950 = 3510, 910 = 1001, 310p = 2002. */
export type Family = "a2" | "950" | "910" | "310p";

/** The dtypes of the forward ops. */
export type ForwardDtype = "float32" | "float16" | "bfloat16";

/** One forward aclnn call as the model takes it. */
export interface ForwardCall {
  /** The op. */
  readonly op: "nearestExact1d" | "nearestExact2d" | "bilinear2d";
  /** The family the call runs on. */
  readonly family: Family;
  /** dtype of self and out (the ops take one dtype for both). */
  readonly dtype: ForwardDtype;
  /** `[N, C, L]` or `[N, C, H, W]` of the input. */
  readonly inputSize: readonly number[];
  /** Spatial size of the result: `[L]` or `[H, W]`. */
  readonly outputSize: readonly number[];
  /** PyTorch's scale_factor per spatial dimension (output per input); 0: none, as aclnn takes. */
  readonly scales: readonly number[];
  /** Bilinear align_corners (ignored by nearest-exact). */
  readonly alignCorners: boolean;
}

/** Options of the model. */
export interface ForwardOptions {
  /** Whether the multiply-adds the source leaves open are fused (one rounding): module doc. */
  readonly fma: boolean;
}

/** What the model says about one call. */
export interface ForwardResult {
  /**
   * Contiguous result `[N, C, ...outputSize]`; 16-bit results as float32 numbers of the rounded
   * values.
   */
  readonly values: Float32Array;
  /** The kernel the host code routes to, by the source's name (`Op.tiling-key[.variant]`). */
  readonly kernel: string;
}

/** `ACLNN_ERR_PARAM_INVALID`: a host-side parameter check failed. */
export const ACLNN_ERR_PARAM_INVALID = 161002;
/** `ACLNN_ERR_INNER_FIND_KERNEL_ERROR`: no kernel binary for the SoC and dtype. */
export const ACLNN_ERR_INNER_FIND_KERNEL_ERROR = 561003;

// -------------------------------------------------------------------------------------------------
// Float helpers (written here).

/**
 * `a * b + c` rounded once to `dtype` (a, b, c representable in it): float32 is `fmaf`; for 16-bit
 * dtypes the product is exact in a double and a sum that lands on a midpoint of the dtype is
 * resolved by the two-sum error's sign.
 */
export function fmaTo(dtype: ForwardDtype, a: number, b: number, c: number): number {
  if (dtype === "float32") return fmaf(a, b, c);
  const p = a * b;
  const s = p + c;
  if (!Number.isFinite(s)) return roundTo(dtype, s);
  const bb = s - p;
  const err = (p - (s - bb)) + (c - bb);
  const r = roundTo(dtype, s);
  if (err === 0 || r === s) return r;
  const ulp = ulpOf(dtype, s);
  const q = s / ulp;
  if (q - Math.floor(q) !== 0.5) return r;
  const lo = Math.floor(q) * ulp;
  return roundTo(dtype, err > 0 ? lo + ulp : lo);
}

/** float32 `a * b + c`: one FMA, or the product and the sum rounded. */
function mulAdd(a: number, b: number, c: number, fma: boolean): number {
  return fma ? fmaf(a, b, c) : f(f(a * b) + c);
}

/** `FloatEqual(a, 1.0)` of `upsample_bilinear2d_common.h`: `|a - 1| < 1e-6f` in float. */
function floatEqualOne(a: number): boolean {
  return a > 1 ? f(a - 1) < f(1e-6) : f(1 - a) < f(1e-6);
}

// -------------------------------------------------------------------------------------------------
// Shapes.

interface Shape {
  n: number;
  c: number;
  inH: number;
  inW: number;
  outH: number;
  outW: number;
}

function shapeOf(call: ForwardCall): Shape {
  const oneD = call.op === "nearestExact1d";
  const [n, c] = call.inputSize;
  return {
    n,
    c,
    inH: oneD ? 1 : call.inputSize[2],
    inW: call.inputSize[oneD ? 2 : 3],
    outH: oneD ? 1 : call.outputSize[0],
    outW: call.outputSize[oneD ? 0 : 1],
  };
}

function sizeOfDtype(dtype: ForwardDtype): number {
  return dtype === "float32" ? 4 : 2;
}

// -------------------------------------------------------------------------------------------------
// Refusals.

/**
 * What the family's host code rejects, as `"<status> (<name>): <why>"`, or null.
 *
 * - ranks and list sizes (all op_api files: `CheckShape` / `CheckFormat` / `CheckOutputSize`):
 *   161002;
 * - nearest-exact 1d (`aclnn_upsample_nearest_exact1d.cpp`, `CheckInputElement`, run before the
 *   empty-tensor shortcut): N, C, L and the output L must be > 0, else 161002;
 * - nearest-exact 2d (`aclnn_upsample_nearest_exact2d.cpp`): an empty self or out returns success
 *   before any check (not a refusal);
 * - nearest-exact on the 910: UpsampleNearest (the kernel both op_api files launch off RegBase) has
 *   no `ascend910` config (`image/upsample_nearest/op_host/upsample_nearest_def.cpp`: ascend910b,
 *   ascend910_93, ascend310p, kirin): 561003 at kernel selection;
 * - nearest-exact bfloat16 on the 310P: its config (`config310p`, same file, and
 *   `op_host/config/ascend310p/upsample_nearest_binary.json`) holds float16 and float32 only:
 *   561003 (the op_api's `CheckDtypeValid` lets bfloat16 through off RegBase);
 * - bilinear (`aclnn_upsample_bilinear_2d.cpp`, `CheckScalesValid`): a negative scale is 161002;
 *   every family takes float32, float16 and bfloat16 (`DTYPE_SUPPORT_LIST_ALL`; the TBE route casts
 *   bfloat16 to float32, `GoResizeBilinearV2AICORE`).
 */
export function forwardRefusal(call: ForwardCall): string | null {
  const param = (why: string): string =>
    `${ACLNN_ERR_PARAM_INVALID} (ACLNN_ERR_PARAM_INVALID): ${why}`;
  const kernel = (why: string): string =>
    `${ACLNN_ERR_INNER_FIND_KERNEL_ERROR} (ACLNN_ERR_INNER_FIND_KERNEL_ERROR): ${why}`;
  const oneD = call.op === "nearestExact1d";
  const rank = oneD ? 3 : 4;
  if (call.inputSize.length !== rank) return param(`self must be ${rank}-D`);
  if (call.outputSize.length !== rank - 2) return param(`outputSize must have ${rank - 2} entries`);
  if (call.scales.length !== rank - 2) return param(`scales must have ${rank - 2} entries`);
  const s = shapeOf(call);
  if (call.op === "bilinear2d") {
    if (call.scales.some((v) => v < 0)) return param("scales cannot be negative");
    return null;
  }
  if (oneD && !(s.n > 0 && s.c > 0 && s.inW > 0 && s.outW > 0)) {
    return param("N, C, L and the output L must be greater than 0");
  }
  const empty = s.n * s.c * s.inH * s.inW === 0 || s.n * s.c * s.outH * s.outW === 0;
  if (!oneD && empty) return null; // success, nothing launched
  if (call.family === "910") return kernel("UpsampleNearest ships no ascend910 binary");
  if (call.family === "310p" && call.dtype === "bfloat16") {
    return kernel("UpsampleNearest on ascend310p takes float16 and float32 only");
  }
  return null;
}

// -------------------------------------------------------------------------------------------------
// Routing.

type TbePath = "copy" | "lerp" | "vbi32" | "vbi16";

/** How a call is computed (internal). */
type Plan =
  | { kind: "none"; kernel: string }
  | { kind: "copy"; kernel: string }
  | { kind: "nearest"; kernel: string; sH: number; sW: number }
  | { kind: "a2"; kernel: string; transposed: boolean; attrH: number; attrW: number }
  | { kind: "tbe"; kernel: string; path: TbePath }
  | { kind: "simt950"; kernel: string; hw: boolean };

/**
 * A2/A3 and 310P nearest-exact: UpsampleNearest on an NHWC (2d) or NLC (1d) transpose of self.
 * Attribute (`aclnn_upsample_nearest_exact2d.cpp` / `..._exact1d.cpp`, off RegBase):
 * `static_cast<float>(1.0 / scales)` (a double division) or 0. Tiling
 * (`upsample_nearest_tiling.cpp`, `ComputeScaleValue`): 4-D with equal sizes → 1 (the scale is
 * ignored); else the attribute when > 0; else `(float)in / (float)out`. The 1d op (3-D NLC) has
 * `realScaleH = 1` and no equal-size shortcut. `GetTilingKey` (NHWC branch): 1001 when `C * outW <
 * 8192 && C * inW < 8192 && inH > 1`, else 1002 when `C < 8192 && inW < 8192 && scaleW < 2`, else
 * 1000 (every key runs the same index rule).
 */
function planNearestA2(call: ForwardCall, s: Shape): Plan {
  const oneD = call.op === "nearestExact1d";
  const attr = (v: number): number => (v > 0 ? f(1 / v) : 0);
  const tiling = (inn: number, out: number, a: number): number => {
    if (!oneD && inn === out) return 1;
    return a > 0 ? a : f(f(inn) / f(out));
  };
  const sH = oneD ? 1 : tiling(s.inH, s.outH, attr(call.scales[0]));
  const sW = tiling(s.inW, s.outW, attr(call.scales[oneD ? 0 : 1]));
  const big = 8192;
  const key = !oneD && s.c * s.outW < big && s.c * s.inW < big && s.inH > 1
    ? 1001
    : s.c < big && s.inW < big && sW < 2
    ? 1002
    : 1000;
  return { kind: "nearest", kernel: `UpsampleNearest.${key}`, sH, sW };
}

/**
 * Ascend 950 nearest-exact (`aclnn_upsample_nearest_exact2d.cpp` / `..._exact1d.cpp`, RegBase): the
 * scales as `static_cast<float>(scales)` (1d: `{1, scale}` on `(N, C, 1, L)`), half-pixel centres.
 * `IsCaseNearestExact3d` (N*C = 17, H and W in [740, 750], `(float)out / in` in [7.5, 8] for H and
 * [6.5, 7] for W) runs UpsampleNearestExact3d, whose tiling
 * (`upsample_nearest3d_tiling_arch35.cpp`, `ComputeScales`) and index
 * (`upsample_nearest3d_simt_base.h`, `ComputeOri`) are the same rule. Else ResizeNearestNeighborV2
 * (`resize_nearest_neighbor_v2_tiling_base.cpp`): `SetScales` `1.0f / attr` or `(float)src / des`;
 * `MatchTilingStrategyAndSetTilingKey` (NCHW): the gather (`IsMatchTiling_NCHW_Gather`: upsampling
 * with `desW > srcW && desH >= srcH`, no attribute scale, scales >= 0.25, `ceil(NC / ceil(NC /
 * cores)) / cores >= 0.67`; `DoTilingGatherNchw`: ALL_HW when the planes fit the UB, else CUT_H),
 * else SIMT: INPUT_EQ_OUTPUT (a copy, whatever the scales), INPUT_EQ_ONE, COMMON. 72 vector cores
 * and a 253952-byte UB (Ascend950PR_9599.ini).
 */
function planNearest950(call: ForwardCall, s: Shape): Plan {
  const oneD = call.op === "nearestExact1d";
  const attrH = oneD ? 1 : call.scales[0] > 0 ? f(call.scales[0]) : 0;
  const attrW = call.scales[oneD ? 0 : 1] > 0 ? f(call.scales[oneD ? 0 : 1]) : 0;
  const scale = (a: number, inn: number, out: number): number =>
    a > 0 ? f(1 / a) : f(f(inn) / f(out));
  const sH = scale(attrH, s.inH, s.outH);
  const sW = scale(attrW, s.inW, s.outW);
  if (!oneD) {
    const rh = f(f(s.outH) / f(s.inH));
    const rw = f(f(s.outW) / f(s.inW));
    if (
      s.n * s.c === 17 && s.inH >= 740 && s.inH <= 750 && rh >= 7.5 && rh <= 8 && s.inW >= 740 &&
      s.inW <= 750 && rw >= 6.5 && rw <= 7
    ) {
      return { kind: "nearest", kernel: "UpsampleNearestExact3d", sH, sW };
    }
  }
  const name = (sch: string): string => `ResizeNearestNeighborV2.${sch}`;
  const cores = 72;
  const ub = 253952;
  const ds = sizeOfDtype(call.dtype);
  const blockNum = 32 / ds;
  const align = (v: number): number => Math.ceil(v / blockNum) * blockNum;
  const nc = s.n * s.c;
  const need = Math.ceil(nc / Math.ceil(nc / cores));
  const leastUb = align(s.outW) * ds * 4 + align(s.inW) * ds * 2 + 64;
  const gather = s.outW > s.inW && s.outH >= s.inH && attrH === 0 && attrW === 0 && sH >= 0.25 &&
    sW >= 0.25 && f(f(need) / f(cores)) >= f(0.67) && leastUb <= ub;
  if (gather) {
    const yUb = s.outH * align(s.outW) * ds;
    const xUb = s.inH * align(s.inW) * ds;
    const all = 2 * xUb + 2 * yUb + yUb + align(s.outH) * ds + align(s.outW) * ds;
    return { kind: "nearest", kernel: name(all <= ub ? "GATHER_ALL_HW" : "GATHER_CUT_H"), sH, sW };
  }
  if (s.inH === s.outH && s.inW === s.outW) {
    return { kind: "copy", kernel: name("SIMT_INPUT_EQ_OUTPUT") };
  }
  if (s.inH === 1 && s.inW === 1) {
    return { kind: "nearest", kernel: name("SIMT_INPUT_EQ_ONE"), sH, sW };
  }
  return { kind: "nearest", kernel: name("SIMT_COMMON"), sH, sW };
}

/**
 * A2/A3 bilinear (`aclnn_upsample_bilinear_2d.cpp`, lines 417-430): UpsampleBilinear2d when the
 * arch is DAV_2201 and `CheckBilinear2dScales` and `CheckScalesAndShapeValid` pass, else the TBE
 * ResizeBilinearV2 (`GoResizeBilinearV2AICORE`). `CheckBilinear2dScales`: false when both scales
 * are within 1e-9 of 2 (not bfloat16), or either is below 1e-12 (no scale, or one dimension only);
 * both within 1e-9 of 1 with other sizes: false (bfloat16: scales taken as 0); then
 * `(float)GetBilinearScales` (equal sizes 1; align_corners `(in-1)/(out-1)` or 0; else `1.0 /
 * scale` or `in / out`, doubles) `<= 50` on both. `CheckScalesAndShapeValid`: `(int64)(in * scale)
 * == out` on both. `GoUpsampleBilinear2DAICORE`: equal sizes return self (no kernel: the ViewCopy);
 * `inW == 1 && inH != 1` transposes H and W around the kernel (and swaps the scales). The l0op
 * (`upsample_bilinear2d.cpp`, `UpsampleBilinear2dNcdhw`) passes `{(float)(1 / sH), (float)(1 /
 * sW)}` when both are > 0 and not both within 1e-9 of 1, `{0, 0}` when both are and the sizes
 * differ.
 */
function planBilinearA2(call: ForwardCall, s: Shape): Plan | null {
  const [sH, sW] = call.scales;
  const bf16 = call.dtype === "bfloat16";
  const near = (a: number, b: number, eps: number): boolean => Math.abs(a - b) < eps;
  if (near(sW, 2, 1e-9) && near(sH, 2, 1e-9) && !bf16) return null;
  if (Math.abs(sH) < 1e-12 || Math.abs(sW) < 1e-12) return null;
  let h1 = sH, w1 = sW;
  const differ = s.outH !== s.inH || s.outW !== s.inW;
  if (near(sH, 1, 1e-9) && near(sW, 1, 1e-9) && differ) {
    if (!bf16) return null;
    h1 = 0;
    w1 = 0;
  }
  const real = (inn: number, out: number, sc: number): number => {
    if (out === inn) return 1;
    if (call.alignCorners) return out > 1 ? (inn - 1) / (out - 1) : 0;
    return sc > 0 ? 1.0 / sc : inn / out;
  };
  if (!(f(real(s.inH, s.outH, h1)) <= 50 && f(real(s.inW, s.outW, w1)) <= 50)) return null;
  if (Math.trunc(s.inH * sH) !== s.outH || Math.trunc(s.inW * sW) !== s.outW) return null;
  if (!differ) return { kind: "copy", kernel: "ViewCopy" };
  const transposed = s.inW === 1 && s.inH !== 1;
  // The l0op's scales, in the kernel's (H, W) order (swapped when transposed).
  const [kH, kW] = transposed ? [sW, sH] : [sH, sW];
  const [kInH, kInW, kOutH, kOutW] = transposed
    ? [s.inW, s.inH, s.outW, s.outH]
    : [s.inH, s.inW, s.outH, s.outW];
  let attrH = 1, attrW = 1;
  if (kH > 0 && kW > 0 && (Math.abs(kH - 1) > 1e-9 || Math.abs(kW - 1) > 1e-9)) {
    attrH = f(1 / kH);
    attrW = f(1 / kW);
  } else if (near(kH, 1, 1e-9) && near(kW, 1, 1e-9) && (kOutH !== kInH || kOutW !== kInW)) {
    attrH = 0;
    attrW = 0;
  }
  return {
    kind: "a2",
    kernel: transposed ? "UpsampleBilinear2d.transposed" : "UpsampleBilinear2d",
    transposed,
    attrH,
    attrW,
  };
}

/**
 * The TBE ResizeBilinearV2 (910, 310P, A2/A3's fallback) on NC1HWC0 (`GoResizeBilinearV2AICORE`:
 * bfloat16 cast to float32 first; sizes only, `half_pixel_centers = !align_corners`,
 * `resize_bilinear_v2.cpp` `ResizeBilinearV2AICORE`). `tbe-tiling` `GetResizeBilinearV2Tiling`:
 * 999999 when the sizes are equal or the input is 1x1; 100110 when all four sizes are < 64 and `N *
 * C1 >= 32` (C1 = ceil(C / 16)); else 100000. `tbe._tiling_compute_default` (100000): the vbi
 * float32 kernel when `tik.vcopy` and `tik.vbi` float32 are supported (A2/A3), else the vbi float16
 * kernel for float16 images (310P), else the L1 kernel (910; 310P float32).
 */
function planTbe(call: ForwardCall, s: Shape): Plan {
  const name = (key: string): string => `ResizeBilinearV2.${key}`;
  if ((s.inH === s.outH && s.inW === s.outW) || (s.inH === 1 && s.inW === 1)) {
    return { kind: "tbe", kernel: name("999999"), path: "copy" };
  }
  const lim = 64;
  if (
    s.inH < lim && s.outH < lim && s.inW < lim && s.outW < lim && s.n * Math.ceil(s.c / 16) >= 32
  ) {
    return { kind: "tbe", kernel: name("100110"), path: "lerp" };
  }
  if (call.family === "a2") return { kind: "tbe", kernel: name("100000.vbi_fp32"), path: "vbi32" };
  if (call.family === "310p" && call.dtype === "float16") {
    return { kind: "tbe", kernel: name("100000.vbi_fp16"), path: "vbi16" };
  }
  return { kind: "tbe", kernel: name("100000.l1"), path: "lerp" };
}

/**
 * Ascend 950 bilinear (`aclnn_upsample_bilinear_2d.cpp`, RegBase: `GoResizeBilinearV2AiCoreWith4d`,
 * scales `{(float)scalesH, (float)scalesW}`, the dtype unchanged). Tiling
 * (`resize_bilinear_v2_tiling_arch35.cpp`, `MatchTilingStrategyAndSetTilingKey`, NCHW): ALL_COPY
 * for equal sizes; NCHW_BROADCAST for a 1x1 input with `outH * outW * sizeof(T) >= 128`; else
 * SIMT_HW when `outH * outW >= cores * 1024` (72 vector cores), else SIMT_NCHW (`_IDX64` past
 * 32-bit sizes).
 */
function planBilinear950(call: ForwardCall, s: Shape): Plan {
  const name = (key: string): string => `ResizeBilinearV2.${key}`;
  if (s.inH === s.outH && s.inW === s.outW) return { kind: "copy", kernel: name("ALL_COPY") };
  if (s.inH === 1 && s.inW === 1 && s.outH * s.outW * sizeOfDtype(call.dtype) >= 128) {
    return { kind: "copy", kernel: name("NCHW_BROADCAST") };
  }
  const big = s.n * s.c * s.outH * s.outW >= 2 ** 32 || s.n * s.c * s.inH * s.inW >= 2 ** 32;
  const hw = s.outH * s.outW >= 72 * 1024;
  return {
    kind: "simt950",
    kernel: name((hw ? "SIMT_HW" : "SIMT_NCHW") + (big ? "_IDX64" : "")),
    hw,
  };
}

function planOf(call: ForwardCall): Plan {
  const refusal = forwardRefusal(call);
  if (refusal !== null) throw new RangeError(refusal);
  const s = shapeOf(call);
  if (s.n * s.c * s.inH * s.inW === 0 || s.n * s.c * s.outH * s.outW === 0) {
    return { kind: "none", kernel: "none" };
  }
  if (call.op !== "bilinear2d") {
    return call.family === "950" ? planNearest950(call, s) : planNearestA2(call, s);
  }
  if (call.family === "950") return planBilinear950(call, s);
  if (call.family === "a2") {
    const own = planBilinearA2(call, s);
    if (own !== null) return own;
  }
  return planTbe(call, s);
}

/**
 * The kernel the host code routes `call` to, by the source's name (see {@link forwardModel});
 * throws a RangeError with {@link forwardRefusal}'s text for refused calls; `"none"` for empty
 * tensors.
 */
export function forwardKernel(call: ForwardCall): string {
  return planOf(call).kernel;
}

// -------------------------------------------------------------------------------------------------
// nearest-exact.

/**
 * The nearest-exact index of every output along one dimension: `min(floor(fl32(fl32(o + 0.5) * s)),
 * in - 1)`, `s` input per output. A2/A3 and 310P: `upsample_nearest.h` / `upsample_nearest_310p.h`
 * `CalculateIdxTensor` (ArithProgression, `Adds 0.5`, `Muls scale`, `Floor`, `Mins in - 1`: vector
 * instructions, each rounded). 950: `resize_nearest_neighbor_v2_simt.h` `CalSrcIdx` (`floorf((h +
 * 0.5f) * scale)`, no add after the product), `..._nchw_gather.h` `ComputeHOrWids` (`Adds bias`,
 * `Muls scale`, floor cast, `Mins`), `upsample_nearest3d_simt_base.h` `ComputeOri`. The half-pixel
 * floor sends a tie `(o + 0.5) * s = k` to k, or to k - 1 when the float32 product rounds below k.
 */
export function nearestIndex(inSize: number, outSize: number, scale: number): Int32Array {
  const idx = new Int32Array(outSize);
  for (let o = 0; o < outSize; o++) {
    idx[o] = Math.min(Math.floor(f(f(o + 0.5) * scale)), inSize - 1);
  }
  return idx;
}

function gather(x: Float32Array, s: Shape, iH: Int32Array, iW: Int32Array): Float32Array {
  const out = new Float32Array(s.n * s.c * s.outH * s.outW);
  for (let p = 0; p < s.n * s.c; p++) {
    for (let oh = 0; oh < s.outH; oh++) {
      const row = (p * s.inH + iH[oh]) * s.inW;
      const o = (p * s.outH + oh) * s.outW;
      for (let ow = 0; ow < s.outW; ow++) out[o + ow] = x[row + iW[ow]];
    }
  }
  return out;
}

// -------------------------------------------------------------------------------------------------
// A2/A3 UpsampleBilinear2d.

/** One dimension's taps: `single` (weight 1 at i0) or `w0 * x[i0] + w1 * x[i1]`. */
interface Taps {
  i0: Int32Array;
  i1: Int32Array;
  w0: Float32Array;
  w1: Float32Array;
  single: Uint8Array;
}

/**
 * `upsample_bilinear2d_tiling.cpp` `compute_scale_value`: equal sizes 1; align_corners `(float)(in
 * - 1) / (out - 1)` (0 when out = 1); else the attribute when > 0, else `(float)in / out` (each a
 * float division).
 */
function a2Scale(inn: number, out: number, align: boolean, attr: number): number {
  if (out === inn) return 1;
  if (align) return out > 1 ? f(f(inn - 1) / f(out - 1)) : 0;
  return attr > 0 ? attr : f(f(inn) / f(out));
}

/**
 * The weights of one pass (`upsample_bilinear2d_kernel.h` `calculateRadioTensorW/H`,
 * `upsample_bilinear2d_common.h` `getCenterValue`, `getLambda`): centre `scale * d` (align_corners)
 * or `max(scale * (d + 0.5f) - 0.5f, 0)` (one FMA when `fma`); `i0 = min((int64)centre, in - 1)`,
 * `i1 = min(i0 + 1, in - 1)`; `i0 == i1`: weight 1; else `l1 = min(max(centre - i0, 0), 1)`, `l0 =
 * 1 - l1`.
 */
function a2Taps(inn: number, out: number, scale: number, align: boolean, fma: boolean): Taps {
  const t: Taps = {
    i0: new Int32Array(out),
    i1: new Int32Array(out),
    w0: new Float32Array(out),
    w1: new Float32Array(out),
    single: new Uint8Array(out),
  };
  for (let d = 0; d < out; d++) {
    const centre = align ? f(scale * d) : Math.max(mulAdd(scale, f(d + 0.5), -0.5, fma), 0);
    const i0 = Math.min(Math.trunc(centre), inn - 1);
    const i1 = Math.min(i0 + 1, inn - 1);
    t.i0[d] = i0;
    t.i1[d] = i1;
    if (i0 === i1) {
      t.single[d] = 1;
      t.w0[d] = 1;
      continue;
    }
    const l1 = Math.min(Math.max(f(centre - i0), 0), 1);
    t.w1[d] = l1;
    t.w0[d] = f(1 - l1);
  }
  return t;
}

/** One output of a Cube pass: the (at most two) non-zero products, each rounded, and their sum. */
function tap(t: Taps, d: number, a: number, b: number): number {
  return t.single[d] ? a : f(f(t.w0[d] * a) + f(t.w1[d] * b));
}

/**
 * UpsampleBilinear2d on float32 planes (`upsample_bilinear2d_kernel.h` `Process`): the W pass
 * (`ExpansionW`, matmul `input rows x radioW`) runs when `!FloatEqual(scaleW, 1)`, into the float32
 * workspace, or straight into the output when `FloatEqual(scaleH, 1)`; the H pass (`ExpansionH`,
 * matmul `radioH x rows`) runs when `!FloatEqual(scaleH, 1) || FloatEqual(scaleW, 1)`, reading the
 * input itself when the W pass did not run.
 */
function a2Kernel(
  x: Float32Array,
  planes: number,
  dims: readonly [number, number, number, number],
  align: boolean,
  attrH: number,
  attrW: number,
  fma: boolean,
): Float32Array {
  const [inH, inW, outH, outW] = dims;
  const sH = a2Scale(inH, outH, align, attrH);
  const sW = a2Scale(inW, outW, align, attrW);
  const runW = !floatEqualOne(sW);
  const runH = !floatEqualOne(sH) || floatEqualOne(sW);
  const midW = runW ? outW : inW;
  if ((!runW && inW !== outW) || (!runH && inH !== outH)) {
    throw new Error("UpsampleBilinear2d: a skipped pass whose sizes differ (not reachable)");
  }
  let mid = x;
  if (runW) {
    const tw = a2Taps(inW, outW, sW, align, fma);
    mid = new Float32Array(planes * inH * outW);
    for (let r = 0; r < planes * inH; r++) {
      for (let ow = 0; ow < outW; ow++) {
        mid[r * outW + ow] = tap(tw, ow, x[r * inW + tw.i0[ow]], x[r * inW + tw.i1[ow]]);
      }
    }
  }
  if (!runH) return mid;
  const th = a2Taps(inH, outH, sH, align, fma);
  const out = new Float32Array(planes * outH * midW);
  for (let p = 0; p < planes; p++) {
    for (let oh = 0; oh < outH; oh++) {
      const r0 = (p * inH + th.i0[oh]) * midW;
      const r1 = (p * inH + th.i1[oh]) * midW;
      const o = (p * outH + oh) * midW;
      for (let w = 0; w < midW; w++) out[o + w] = tap(th, oh, mid[r0 + w], mid[r1 + w]);
    }
  }
  return out;
}

function transposeHW(x: Float32Array, planes: number, h: number, w: number): Float32Array {
  const out = new Float32Array(x.length);
  for (let p = 0; p < planes; p++) {
    for (let i = 0; i < h; i++) {
      for (let j = 0; j < w; j++) out[(p * w + j) * h + i] = x[(p * h + i) * w + j];
    }
  }
  return out;
}

// -------------------------------------------------------------------------------------------------
// TBE ResizeBilinearV2.

/** One dimension of the TBE kernel: lower and upper index and the lerp weight `lam = src - i0`. */
interface TbeAxis {
  i0: Int32Array;
  i1: Int32Array;
  lam: Float32Array;
}

/**
 * `tbe.calculate_scale` (vector `vconv`, `vadds -1` when align_corners and out > 1, `vdiv`):
 * `(float)in / out`, or `(in - 1) / (out - 1)`. `tbe.calcu_out_in_idx`: half-pixel `vadds 0.5`,
 * `vmuls scale`, `vadds -0.5`, `vmax 0` (each rounded), align_corners `vmuls scale`; `vconv floor`;
 * `i1 = min(i0 + 1, in - 1)`; `vmin(src, in - 1)` then `lam = src - (float)i0`. (The L1 kernel
 * leaves the H coordinate unclamped; there `i0 = in - 1` makes `bottom - top` zero, the same result
 * for finite inputs.)
 */
function tbeAxis(inn: number, out: number, align: boolean): TbeAxis {
  const scale = align && out > 1 ? f(f(inn - 1) / f(out - 1)) : f(f(inn) / f(out));
  const a: TbeAxis = {
    i0: new Int32Array(out),
    i1: new Int32Array(out),
    lam: new Float32Array(out),
  };
  for (let d = 0; d < out; d++) {
    const src = align ? f(f(d) * scale) : Math.max(f(f(f(d + 0.5) * scale) - 0.5), 0);
    const i0 = Math.min(Math.floor(src), inn - 1);
    a.i0[d] = i0;
    a.i1[d] = Math.min(i0 + 1, inn - 1);
    a.lam[d] = f(Math.min(src, inn - 1) - i0);
  }
  return a;
}

/**
 * The TBE kernel on one call. Images are float32 or float16 (bfloat16 was cast to float32 by the
 * op_api); the vector unit computes in float32 (`inner_dtype`) after a `vconv` of float16 images.
 * - `copy` (999999, `tbe._function_reisze_with_no_bilinear`): equal sizes are a data move, a 1x1
 *   input is broadcast.
 * - `lerp` (100110 `tbe._function_reisze_with_nc_process`; 100000
 *   `tbe._function_resize_with_l1_default`): `L = top_l + (bot_l - top_l) * ly`, `R` likewise
 *   (`vsub`, `vmuls`, `vadd`), then `L + (R - L) * lx`; 100110 writes `L * 1.0` when `i1 == i0`
 *   along W.
 * - `vbi32` (`tbe._function_default_vbi_fp32`): weights `(1-lx)(1-ly)`, `lx(1-ly)`, `(1-lx)ly`, `lx
 *   ly` (`vmuls`, float32), then vbi over the four horizontal iterations top-left, top-right,
 *   bottom-left, bottom-right: `acc = TL*w00; acc += TR*w01; ...` in float32.
 * - `vbi16` (`tbe._function_default_vbi_fp16`): the same weights converted to float16 (`vconv`),
 *   vbi in float16 on the float16 images, the float16 sum written as it is.
 * Float32 results are converted to the output dtype (`vconv`; bfloat16: the op_api's Cast).
 */
function tbeCompute(
  x: Float32Array,
  s: Shape,
  call: ForwardCall,
  path: TbePath,
  key100110: boolean,
  fma: boolean,
): Float32Array {
  const out = new Float32Array(s.n * s.c * s.outH * s.outW);
  const planes = s.n * s.c;
  if (path === "copy") {
    for (let p = 0; p < planes; p++) {
      for (let i = 0; i < s.outH * s.outW; i++) {
        out[p * s.outH * s.outW + i] = x[p * s.inH * s.inW + (s.inH * s.inW === 1 ? 0 : i)];
      }
    }
    return out;
  }
  const H = tbeAxis(s.inH, s.outH, call.alignCorners);
  const W = tbeAxis(s.inW, s.outW, call.alignCorners);
  const outType: ForwardDtype = call.dtype;
  for (let p = 0; p < planes; p++) {
    const base = p * s.inH * s.inW;
    for (let oh = 0; oh < s.outH; oh++) {
      const top = base + H.i0[oh] * s.inW;
      const bot = base + H.i1[oh] * s.inW;
      const ly = H.lam[oh];
      for (let ow = 0; ow < s.outW; ow++) {
        const tl = x[top + W.i0[ow]], tr = x[top + W.i1[ow]];
        const bl = x[bot + W.i0[ow]], br = x[bot + W.i1[ow]];
        const lx = W.lam[ow];
        let v: number;
        if (path === "lerp") {
          const L = f(f(f(bl - tl) * ly) + tl);
          const R = f(f(f(br - tr) * ly) + tr);
          v = key100110 && W.i1[ow] === W.i0[ow] ? L : f(f(f(R - L) * lx) + L);
          v = roundTo(outType, v);
        } else {
          const ly1 = f(1 - ly), lx1 = f(1 - lx);
          const w = [f(lx1 * ly1), f(lx * ly1), f(lx1 * ly), f(lx * ly)];
          const px = [tl, tr, bl, br];
          if (path === "vbi32") {
            let acc = f(px[0] * w[0]);
            for (let k = 1; k < 4; k++) acc = mulAdd(px[k], w[k], acc, fma);
            v = roundTo(outType, acc);
          } else {
            const wh = w.map((u) => roundTo("float16", u));
            let acc = roundTo("float16", px[0] * wh[0]);
            for (let k = 1; k < 4; k++) {
              acc = fma
                ? fmaTo("float16", px[k], wh[k], acc)
                : roundTo("float16", acc + roundTo("float16", px[k] * wh[k]));
            }
            v = acc;
          }
        }
        out[(p * s.outH + oh) * s.outW + ow] = v;
      }
    }
  }
  return out;
}

// -------------------------------------------------------------------------------------------------
// Ascend 950 ResizeBilinearV2 (SIMT).

/**
 * `resize_bilinear_v2_tiling_arch35.cpp` `SetDimsByFormat` / `ComputeScale`: not align_corners
 * `scale > 0 ? 1.0f / scale : (float)src / (float)des` (float divisions of the float attribute);
 * align_corners `(float)src / des`, or `(float)(src - 1) / (des - 1)` when `des > 1`.
 */
function scale950(inn: number, out: number, align: boolean, attr: number): number {
  if (align) return out > 1 ? f(f(inn - 1) / f(out - 1)) : f(f(inn) / f(out));
  return attr > 0 ? f(1 / attr) : f(f(inn) / f(out));
}

/** One dimension of the 950 SIMT kernel: left, right, delta. */
interface Axis950 {
  lo: Int32Array;
  hi: Int32Array;
  d: Float32Array;
}

/**
 * `resize_bilinear_v2_simt_nchw.h` `SimtCompute`: `orig = (H + 0.5f) * scale - 0.5f` (half-pixel;
 * the multiply-add contractible) or `H * scale`; `orig < 0` → 0; `left = orig > 0 ? floorf(orig) :
 * 0`, `right = orig > 0 ? ceilf(orig) : 0`, both capped at `src - 1`; `delta = orig -
 * floorf(orig)`, not clamped (past the last pixel both taps read it). `..._simt_hw.h` (`hw`): the
 * same without the clamp of `orig` at 0: `left = max(min((T_IDX)floorf(orig), src - 1), 0)` with a
 * negative floor converted to 0 (assumed saturation), `delta = orig - floorf(orig)`.
 */
function axis950(
  inn: number,
  out: number,
  scale: number,
  half: boolean,
  hw: boolean,
  fma: boolean,
): Axis950 {
  const a: Axis950 = { lo: new Int32Array(out), hi: new Int32Array(out), d: new Float32Array(out) };
  for (let i = 0; i < out; i++) {
    let orig = half ? mulAdd(f(i + 0.5), scale, -0.5, fma) : f(i * scale);
    if (hw) {
      a.lo[i] = Math.max(Math.min(Math.floor(orig), inn - 1), 0);
      a.hi[i] = Math.max(Math.min(Math.ceil(orig), inn - 1), 0);
    } else {
      if (orig < 0) orig = 0;
      a.lo[i] = Math.min(orig > 0 ? Math.floor(orig) : 0, inn - 1);
      a.hi[i] = Math.min(orig > 0 ? Math.ceil(orig) : 0, inn - 1);
    }
    a.d[i] = f(orig - Math.floor(orig));
  }
  return a;
}

/**
 * The 950 SIMT bilinear: per output `(1 - dy) * ((1 - dx) * LT + dx * RT) + dy * ((1 - dx) * LB +
 * dx * RB)` in float32 (inputs read as float, the result stored in the dtype); with `fma` each `a *
 * b + c * d` is `fma(a, b, c * d)`. align_corners with a 1x1 input or a 1x1 output takes the SIMT
 * copy modes 2 / 3 (`resize_bilinear_v2_apt.cpp`), the same values as the formula.
 */
function simt950(
  x: Float32Array,
  s: Shape,
  call: ForwardCall,
  hw: boolean,
  fma: boolean,
): Float32Array {
  const [aH, aW] = call.scales.map((v) => (v > 0 ? f(v) : 0));
  const half = !call.alignCorners;
  const H = axis950(s.inH, s.outH, scale950(s.inH, s.outH, call.alignCorners, aH), half, hw, fma);
  const W = axis950(s.inW, s.outW, scale950(s.inW, s.outW, call.alignCorners, aW), half, hw, fma);
  const out = new Float32Array(s.n * s.c * s.outH * s.outW);
  const sum2 = (a: number, b: number, c: number, d: number): number =>
    fma ? fmaf(a, b, f(c * d)) : f(f(a * b) + f(c * d));
  for (let p = 0; p < s.n * s.c; p++) {
    const base = p * s.inH * s.inW;
    for (let oh = 0; oh < s.outH; oh++) {
      const dy = H.d[oh], dy1 = f(1 - dy);
      const top = base + H.lo[oh] * s.inW, bot = base + H.hi[oh] * s.inW;
      for (let ow = 0; ow < s.outW; ow++) {
        const dx = W.d[ow], dx1 = f(1 - dx);
        const t = sum2(dx1, x[top + W.lo[ow]], dx, x[top + W.hi[ow]]);
        const b = sum2(dx1, x[bot + W.lo[ow]], dx, x[bot + W.hi[ow]]);
        out[(p * s.outH + oh) * s.outW + ow] = roundTo(call.dtype, sum2(dy1, t, dy, b));
      }
    }
  }
  return out;
}

// -------------------------------------------------------------------------------------------------
// The model.

/**
 * What the family's routed kernel computes for `call` on `x` (contiguous NCL / NCHW values, already
 * representable in the dtype), with the kernel's name. Throws a RangeError with {@link
 * forwardRefusal}'s text for a refused call; an empty call launches nothing (`kernel` "none", the
 * result's elements, if any, NaN: `out` keeps what it held).
 *
 * Per family (details and sources at each function of this file):
 * - nearest-exact, A2/A3 and 310P: UpsampleNearest, index {@link nearestIndex} with `s =
 *   (float)(1.0 / scale)` or `(float)in / out` (2d: 1 for equal sizes); 950:
 *   ResizeNearestNeighborV2 or UpsampleNearestExact3d, `s = 1.0f / (float)scale` or `(float)in /
 *   out`, equal sizes copied. A gather: the values are copied bit for bit in every dtype.
 * - bilinear, A2/A3: UpsampleBilinear2d (two Cube passes in float32, 16-bit cast around) when the
 *   scales are given and fit, else the TBE ResizeBilinearV2; 910 and 310P: the TBE kernel; 950: the
 *   SIMT ResizeBilinearV2 with the scales.
 *
 * @example
 * ```ts
 * import { forwardModel } from "./forward_model.ts";
 * const call = { op: "nearestExact1d", family: "a2", dtype: "float32", inputSize: [1, 1, 2],
 *   outputSize: [41], scales: [0], alignCorners: false } as const;
 * // Output 20: the tie 20.5 * 2/41 = 1 rounds below 1 in float32, so it reads input 0.
 * forwardModel(Float32Array.of(1, 2), call, { fma: false }).values[20]; // 1
 * ```
 */
export function forwardModel(
  x: Float32Array,
  call: ForwardCall,
  options: ForwardOptions,
): ForwardResult {
  const plan = planOf(call);
  const s = shapeOf(call);
  const outLen = s.n * s.c * s.outH * s.outW;
  if (plan.kind === "none") {
    return { values: new Float32Array(outLen).fill(NaN), kernel: plan.kernel };
  }
  if (x.length !== s.n * s.c * s.inH * s.inW) {
    throw new RangeError(`x has ${x.length} elements, the call needs ${s.n * s.c * s.inH * s.inW}`);
  }
  const fma = options.fma;
  switch (plan.kind) {
    case "copy": {
      // Equal sizes: a copy; the 950's NCHW_BROADCAST: a 1x1 input duplicated.
      const values = new Float32Array(outLen);
      const inPlane = s.inH * s.inW, outPlane = s.outH * s.outW;
      for (let p = 0; p < s.n * s.c; p++) {
        for (let i = 0; i < outPlane; i++) {
          values[p * outPlane + i] = x[p * inPlane + (inPlane === 1 ? 0 : i)];
        }
      }
      return { values, kernel: plan.kernel };
    }
    case "nearest": {
      const iH = nearestIndex(s.inH, s.outH, plan.sH);
      const iW = nearestIndex(s.inW, s.outW, plan.sW);
      return { values: gather(x, s, iH, iW), kernel: plan.kernel };
    }
    case "a2": {
      // `GoUpsampleBilinear2DAICORE`: 16-bit cast to float32, the kernel, the result cast back.
      const planes = s.n * s.c;
      let r: Float32Array;
      if (plan.transposed) {
        const xt = transposeHW(x, planes, s.inH, s.inW);
        const yt = a2Kernel(
          xt,
          planes,
          [s.inW, s.inH, s.outW, s.outH],
          call.alignCorners,
          plan.attrH,
          plan.attrW,
          fma,
        );
        r = transposeHW(yt, planes, s.outW, s.outH);
      } else {
        r = a2Kernel(
          x,
          planes,
          [s.inH, s.inW, s.outH, s.outW],
          call.alignCorners,
          plan.attrH,
          plan.attrW,
          fma,
        );
      }
      return { values: r.map((v) => roundTo(call.dtype, v)), kernel: plan.kernel };
    }
    case "tbe":
      return {
        values: tbeCompute(x, s, call, plan.path, plan.kernel.endsWith("100110"), fma),
        kernel: plan.kernel,
      };
    case "simt950":
      return { values: simt950(x, s, call, plan.hw, fma), kernel: plan.kernel };
  }
}
