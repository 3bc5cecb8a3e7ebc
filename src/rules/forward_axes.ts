/**
 * The per-dimension rules of the Ascend FORWARD kernels (`interpolate`'s ops on the NPU): the
 * float32 step (input cells per output cell) each kernel derives from the sizes and scales, and the
 * indices and weights it computes from it. No tensors here: `forward_device.ts` picks the kernel
 * and these rules, `src/cpu/ascend/forward/reference.ts` computes with them. Paths are in CANN's public
 * operator source (`hicann/ops-cv`) unless said otherwise; the TBE kernel is
 * `opp/built-in/op_impl/ai_core/tbe/impl/dynamic/resize_bilinear_v2.py` of the CANN 8.1.RC1 toolkit
 * (public copy: GitHub `leideng/CANN-8.1.RC1`, `Ascend/ascend-toolkit/8.1.RC1/`), cited as
 * `resize_bilinear_v2.py`.
 *
 * Notation: `fl32(x)` is `x` rounded to float32.
 *
 * @module
 */

import { mulAddF32 } from "./float32.ts";

const f = Math.fround;

/**
 * `fl32(in) / fl32(out)` in float32 (one correctly rounded division): every kernel's step when no
 * scale is used.
 *
 * @example
 * ```ts
 * import { sizeStep } from "./forward_axes.ts";
 * sizeStep(2, 41) === Math.fround(2 / 41); // true
 * ```
 */
export function sizeStep(inSize: number, outSize: number): number {
  return f(f(inSize) / f(outSize));
}

/**
 * The align-corners step `fl32(in - 1) / fl32(out - 1)` in float32 (`outSize > 1`).
 *
 * @example
 * ```ts
 * import { alignStep } from "./forward_axes.ts";
 * alignStep(3, 5); // 0.5
 * ```
 */
export function alignStep(inSize: number, outSize: number): number {
  return f(f(inSize - 1) / f(outSize - 1));
}

/**
 * The nearest-exact step on Atlas A2/A3 and the 310P. The op_api passes
 * `static_cast<float>(1.0 / scales)` (a double division, then float) or 0
 * (image/upsample_nearest/op_host/op_api/aclnn_upsample_nearest_exact2d.cpp, `!IsRegBase()`; the 1d
 * file likewise); the tiling (op_host/upsample_nearest_tiling.cpp, `ComputeScaleValue`) makes it
 * 1 for a dimension of equal sizes of the 2d op (`dim == 4`; the 1d op's NLC tensor has 3 dims, so
 * its scale applies even to equal sizes), else the attribute when > 0, else
 * `fl32(in) / fl32(out)`.
 *
 * @example
 * ```ts
 * import { nearestStepA2 } from "./forward_axes.ts";
 * nearestStepA2(6, 10, 1.7, true) === Math.fround(1 / 1.7); // true
 * nearestStepA2(4, 4, 1.2, true); // 1: the 2d op ignores the scale of equal sizes
 * ```
 */
export function nearestStepA2(
  inSize: number,
  outSize: number,
  scales: number,
  twoD: boolean,
): number {
  if (twoD && inSize === outSize) return 1;
  const attr = scales > 0 ? f(1.0 / scales) : 0;
  return attr > 0 ? attr : sizeStep(inSize, outSize);
}

/**
 * The Ascend 950 step of ResizeNearestNeighborV2 and ResizeBilinearV2With4d (half-pixel): the
 * op_api passes `static_cast<float>(scales)` and the tilings take `1.0f / attr` (a float32
 * division) when it is > 0, else `fl32(in) / fl32(out)`
 * (image/resize_nearest_neighbor_v2/op_host/arch35/resize_nearest_neighbor_v2_tiling_base.cpp
 * `SetScales`; image/resize_bilinear_v2/op_host/arch35/resize_bilinear_v2_tiling_arch35.cpp
 * `ComputeScale`). A2/A3 divide in double first: in 6, scale 1.7, out 10 the two differ.
 *
 * @example
 * ```ts
 * import { step950 } from "./forward_axes.ts";
 * step950(6, 10, 1.7) === Math.fround(1 / Math.fround(1.7)); // true
 * ```
 */
export function step950(inSize: number, outSize: number, scales: number): number {
  const attr = scales > 0 ? f(scales) : 0;
  return attr > 0 ? f(1 / attr) : sizeStep(inSize, outSize);
}

/**
 * The nearest-exact index table of one dimension, every family and template that uses the exact
 * rule: output `o` reads input `min(floor(fl32(fl32(o + 0.5) * step)), in - 1)`. A2/A3 and 310P
 * compute it with vector ops (image/upsample_nearest/op_kernel/upsample_nearest.h and
 * upsample_nearest_310p.h `CalcIdxTensor`: ArithProgression, Adds 0.5, Muls, Floor, Mins), the 950
 * in SIMT code `floorf((h + 0.5f) * scale)` (op_kernel/arch35/resize_nearest_neighbor_v2_simt.h
 * `CalSrcIdx`) or vector ops (`..._nchw_gather.h`): no multiply-add to contract.
 *
 * @example
 * ```ts
 * import { nearestIndexForward, sizeStep } from "./forward_axes.ts";
 * nearestIndexForward(2, 41, sizeStep(2, 41))[20]; // 0: fl32(20.5 * fl32(2/41)) = 0.99999994
 * ```
 */
export function nearestIndexForward(inSize: number, outSize: number, step: number): Int32Array {
  const index = new Int32Array(outSize);
  for (let o = 0; o < outSize; o++) {
    const i = Math.floor(f(f(o + 0.5) * step));
    index[o] = i < inSize - 1 ? i : inSize - 1;
  }
  return index;
}

/** One dimension of the A2/A3 Cube kernel: per output its two taps and weights (see {@link cubeTaps}). */
export interface CubeTaps {
  /** Lower input cell. */
  readonly i0: Int32Array;
  /** Upper input cell (`== i0` at the last cell). */
  readonly i1: Int32Array;
  /** Weight of `i0` (1 where `i0 == i1`). */
  readonly l0: Float32Array;
  /** Weight of `i1` (0 where `i0 == i1`). */
  readonly l1: Float32Array;
}

/**
 * The weights of one dimension of UpsampleBilinear2d, the A2/A3 Cube kernel
 * (image/upsample_bilinear2d/op_kernel/upsample_bilinear2d_common.h `getCenterValue`, `getLambda`;
 * op_kernel/upsample_bilinear2d_kernel.h `calculateRadioTensorW/H`): centre `fl32(step * o)`
 * (align corners) or `max(step * fl32(o + 0.5) - 0.5, 0)`, a scalar multiply-add the source leaves
 * to the compiler (`fma`: one rounding; else two); `i0 = min(trunc(c), in - 1)`,
 * `i1 = min(i0 + 1, in - 1)`; where `i0 == i1` the weight is 1, else `l1 = min(max(fl32(c - i0), 0), 1)`
 * and `l0 = fl32(1 - l1)`.
 *
 * @example
 * ```ts
 * import { cubeTaps } from "./forward_axes.ts";
 * const s = Math.fround(1 / 3);
 * cubeTaps(2, 6, s, false, false).l1[1]; // 0: fl32(1.5 * s) = 0.5
 * cubeTaps(2, 6, s, false, true).l1[1]; // 1.4901161e-8: one rounding
 * ```
 */
export function cubeTaps(
  inSize: number,
  outSize: number,
  step: number,
  alignCorners: boolean,
  fma: boolean,
): CubeTaps {
  const i0 = new Int32Array(outSize), i1 = new Int32Array(outSize);
  const l0 = new Float32Array(outSize), l1 = new Float32Array(outSize);
  for (let o = 0; o < outSize; o++) {
    let c = alignCorners ? f(step * o) : mulAddF32(step, f(o + 0.5), -0.5, fma);
    if (!(c > 0)) c = 0;
    const lo = Math.min(Math.trunc(c), inSize - 1);
    const hi = Math.min(lo + 1, inSize - 1);
    i0[o] = lo;
    i1[o] = hi;
    if (lo === hi) {
      l0[o] = 1;
      continue;
    }
    const lambda = Math.min(Math.max(f(c - lo), 0), 1);
    l1[o] = lambda;
    l0[o] = f(1 - lambda);
  }
  return { i0, i1, l0, l1 };
}

/** One dimension of the TBE ResizeBilinearV2 (see {@link tbeAxis}). */
export interface TbeAxis {
  /** `floor(src)`: the top row / left column. */
  readonly lo: Int32Array;
  /** `min(lo + 1, in - 1)`: the bottom row / right column. */
  readonly hi: Int32Array;
  /** The lerp weight of `hi`: `src - lo`, or `min(src, in - 1) - lo` when clamped. */
  readonly weight: Float32Array;
}

/**
 * One dimension of the TBE ResizeBilinearV2 (`resize_bilinear_v2.py` `calcu_out_in_idx`,
 * `calcu_out_in_idx_vbi`), every step a rounded vector instruction (never contracted): source
 * `max(fl32(fl32(fl32(o + 0.5) * step) - 0.5), 0)` (vadds, vmuls, vadds, vmax) or `fl32(o * step)`
 * (align corners), `lo = floor(src)` (vconv floor), `hi = min(lo + 1, in - 1)`, weight
 * `fl32(src - lo)`, or `fl32(min(src, in - 1) - lo)` when `clamp` (the callers that pass
 * `max_idx_ub`: W in every mode, H in the NC and vbi modes; the L1 mode's H passes none).
 * `step` comes from `calculate_scale`: vdiv of `in / out`, or `(in - 1) / (out - 1)` with align
 * corners and `out > 1` ({@link tbeStep}).
 *
 * @example
 * ```ts
 * import { tbeAxis, tbeStep } from "./forward_axes.ts";
 * tbeAxis(2, 3, tbeStep(2, 3, false), false, true).weight[2]; // 0: min(1.1666666, 1) - 1
 * tbeAxis(2, 3, tbeStep(2, 3, false), false, false).weight[2]; // 0.16666675: src - 1
 * ```
 */
export function tbeAxis(
  inSize: number,
  outSize: number,
  step: number,
  alignCorners: boolean,
  clamp: boolean,
): TbeAxis {
  const lo = new Int32Array(outSize), hi = new Int32Array(outSize);
  const weight = new Float32Array(outSize);
  const last = inSize - 1;
  for (let o = 0; o < outSize; o++) {
    const src = alignCorners ? f(o * step) : Math.max(f(f(f(o + 0.5) * step) - 0.5), 0);
    const i = Math.min(Math.floor(src), last); // floor(src) <= in - 1 for the sizes' own steps
    lo[o] = i;
    hi[o] = Math.min(i + 1, last);
    weight[o] = f((clamp ? Math.min(src, last) : src) - i);
  }
  return { lo, hi, weight };
}

/**
 * The TBE kernel's step (`resize_bilinear_v2.py` `calculate_scale`: vconv of the sizes, `vadds -1`
 * on both with align corners and `out > 1`, then vdiv, taken as correctly rounded): scales are
 * never passed to this kernel.
 *
 * @example
 * ```ts
 * import { tbeStep } from "./forward_axes.ts";
 * tbeStep(3, 5, true); // 0.5
 * tbeStep(3, 1, true); // 3: out = 1 keeps in / out
 * ```
 */
export function tbeStep(inSize: number, outSize: number, alignCorners: boolean): number {
  return alignCorners && outSize > 1 ? alignStep(inSize, outSize) : sizeStep(inSize, outSize);
}

/** One dimension of the 950 SIMT bilinear kernels (see {@link simt950Axis}). */
export interface Simt950Axis {
  /** Left / top cell. */
  readonly lo: Int32Array;
  /** Right / bottom cell. */
  readonly hi: Int32Array;
  /** `src - floor(src)`, not clamped to [0, 1]. */
  readonly d: Float32Array;
}

/**
 * One dimension of ResizeBilinearV2With4d's SIMT kernels on the Ascend 950. SIMT_NCHW
 * (image/resize_bilinear_v2/op_kernel/arch35/resize_bilinear_v2_simt_nchw.h `SimtCompute`):
 * `src = (o + 0.5f) * step - 0.5f` (a multiply-add the compiler may contract: `fma`) or
 * `fl32(o * step)`; `src < 0` becomes 0; `lo = src > 0 ? floor(src) : 0`, `hi = src > 0 ? ceil(src) : 0`,
 * both capped at `in - 1`; `d = src - floor(src)`. SIMT_HW (`..._simt_hw.h`, `clampAtZero` false):
 * no clamp of `src` at 0 and `lo = max(min((T_IDX)floorf(src), in - 1), 0)`: a negative floor
 * converted to an unsigned index is undefined in C++; taken as saturating to 0 (as the emulation
 * does), so near the top/left border `lo = hi = 0` and `d = src - floor(src)` (0.75 for -0.25).
 *
 * @example
 * ```ts
 * import { simt950Axis } from "./forward_axes.ts";
 * simt950Axis(2, 4, 0.5, false, true, true).d[0]; // 0: src -0.25 clamped
 * simt950Axis(2, 4, 0.5, false, false, true).d[0]; // 0.75: SIMT_HW keeps -0.25
 * ```
 */
export function simt950Axis(
  inSize: number,
  outSize: number,
  step: number,
  alignCorners: boolean,
  clampAtZero: boolean,
  fma: boolean,
): Simt950Axis {
  const lo = new Int32Array(outSize), hi = new Int32Array(outSize);
  const d = new Float32Array(outSize);
  const last = inSize - 1;
  for (let o = 0; o < outSize; o++) {
    let src = alignCorners ? f(o * step) : mulAddF32(f(o + 0.5), step, -0.5, fma);
    if (clampAtZero && src < 0) src = 0;
    const down = Math.floor(src), up = Math.ceil(src);
    // After the clamp (SIMT_NCHW) src >= 0, so `src > 0 ? floorf(src) : 0` is floor(src); SIMT_HW's
    // negative floor saturates to 0. Both: then capped at in - 1.
    lo[o] = Math.min(down > 0 ? down : 0, last);
    hi[o] = Math.min(up > 0 ? up : 0, last);
    d[o] = f(src - down);
  }
  return { lo, hi, d };
}

/**
 * The step of one dimension of the A2/A3 Cube kernel UpsampleBilinear2d (op_host/
 * upsample_bilinear2d_tiling.cpp `compute_scale_value`): 1 for equal sizes; align corners
 * `fl32(in - 1) / fl32(out - 1)` (0 for `out = 1`); else the l0op's attribute when > 0, else
 * `fl32(in) / fl32(out)`. The attribute (op_host/op_api/upsample_bilinear2d.cpp
 * `UpsampleBilinear2dNcdhw`) is `static_cast<float>(1 / scales)` ({@link cubeAttribute}).
 *
 * @example
 * ```ts
 * import { cubeStep } from "./forward_axes.ts";
 * cubeStep(3, 6, false, Math.fround(1 / 2)); // 0.5
 * cubeStep(3, 3, false, Math.fround(1 / 1.2)); // 1: equal sizes
 * ```
 */
export function cubeStep(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  attribute: number,
): number {
  if (inSize === outSize) return 1;
  if (alignCorners) return outSize > 1 ? alignStep(inSize, outSize) : 0;
  return attribute > 0 ? attribute : sizeStep(inSize, outSize);
}

/**
 * The scales attribute the l0op `UpsampleBilinear2dNcdhw` (image/upsample_bilinear2d/op_host/
 * op_api/upsample_bilinear2d.cpp) gives the Cube kernel, in the kernel's (H, W) order: both scales
 * > 0 and not both within 1e-9 of 1: `fl32(1 / scales)` each; both within 1e-9 of 1 with sizes that
 * differ: `[0, 0]` (from the sizes); else `[1, 1]`.
 *
 * @example
 * ```ts
 * import { cubeAttribute } from "./forward_axes.ts";
 * cubeAttribute([2, 1.5], false); // [0.5, 0.6666666865348816]
 * cubeAttribute([1, 1], true); // [0, 0]
 * ```
 */
export function cubeAttribute(scales: readonly number[], sizesDiffer: boolean): number[] {
  const [s0, s1] = scales;
  if (s0 > 0 && s1 > 0 && (Math.abs(s0 - 1) > 1e-9 || Math.abs(s1 - 1) > 1e-9)) {
    return [f(1 / s0), f(1 / s1)];
  }
  if (Math.abs(s0 - 1) < 1e-9 && Math.abs(s1 - 1) < 1e-9 && sizesDiffer) return [0, 0];
  return [1, 1];
}

/**
 * `FloatEqual(step, 1)` of the Cube kernel (upsample_bilinear2d_common.h): `|step - 1| < 1e-6` in
 * float32. The kernel skips a pass whose step is that close to 1.
 *
 * @example
 * ```ts
 * import { floatEqualOne } from "./forward_axes.ts";
 * floatEqualOne(Math.fround(1 / 0.9999999)); // true
 * ```
 */
export function floatEqualOne(step: number): boolean {
  const d = step > 1 ? f(step - 1) : f(1 - step);
  return d < f(1e-6);
}
