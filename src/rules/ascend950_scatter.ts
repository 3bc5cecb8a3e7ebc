/**
 * The taps of the Ascend 950's atomic SIMT scatter (ResizeBilinearV2Grad SIMT_NCHW, `hicann/ops-cv`
 * `image/resize_bilinear_v2_grad/op_kernel/arch35/resize_bilinear_v2_grad_simt.h` SimtCompute), and
 * whether the order of its atomic adds can change a bit of a call's result.
 *
 * @module
 */

import { mulAddF32 } from "./float32.ts";

/** One dimension of the scatter: per gradient index, its two cells and weights. */
export interface ScatterTaps950 {
  /** Lower cell (`min(floor(src), len - 1)`). */
  readonly lo: Int32Array;
  /** Upper cell (`lo + 1`, or `lo` at the last cell). */
  readonly hi: Int32Array;
  /** `1 - d`. */
  readonly wLo: Float32Array;
  /** `d = clamp(src - lo, 0, 1)`. */
  readonly wHi: Float32Array;
}

/**
 * SimtCompute's coordinates of one dimension: `src = max((o + off) * s - off, 0)` (`off` 0.5 with
 * half-pixel centres, else 0; the multiply-add fused when `fma`), `lo = min(floor(src), len - 1)`
 * (NaN: the last cell), `d = clamp(src - lo, 0, 1)`, weights `1 - d` and `d`.
 *
 * @example
 * ```ts
 * import { scatterTaps950 } from "./ascend950_scatter.ts";
 * scatterTaps950(2, 4, 2, true, true).lo; // Int32Array [0, 2]
 * ```
 */
export function scatterTaps950(
  outSize: number,
  len: number,
  s: number,
  halfPixel: boolean,
  fma: boolean,
): ScatterTaps950 {
  const off = halfPixel ? 0.5 : 0;
  const lo = new Int32Array(outSize), hi = new Int32Array(outSize);
  const wLo = new Float32Array(outSize), wHi = new Float32Array(outSize);
  for (let o = 0; o < outSize; o++) {
    let src = mulAddF32(Math.fround(o + off), s, -off, fma);
    if (src < 0) src = 0;
    const fl = Math.floor(src);
    const cell = fl < len - 1 ? fl : len - 1;
    const d = Math.min(Math.max(Math.fround(src - cell), 0), 1);
    lo[o] = cell;
    hi[o] = cell < len - 1 ? cell + 1 : cell;
    wLo[o] = Math.fround(1 - d);
    wHi[o] = d;
  }
  return { lo, hi, wLo, wHi };
}

/**
 * The most nonzero terms one cell of one dimension takes (a tap of weight exactly 0 adds `±0`,
 * which changes no sum, or NaN in every order).
 *
 * @example
 * ```ts
 * import { scatterTaps950, mostTerms950 } from "./ascend950_scatter.ts";
 * mostTerms950(scatterTaps950(2, 4, 2, true, true), 4); // 1
 * ```
 */
export function mostTerms950(taps: ScatterTaps950, len: number): number {
  const count = new Int32Array(len);
  for (let o = 0; o < taps.lo.length; o++) {
    if (taps.wLo[o] !== 0) count[taps.lo[o]]++;
    if (taps.wHi[o] !== 0) count[taps.hi[o]]++;
  }
  return count.reduce((a, b) => Math.max(a, b), 0);
}
