/**
 * Exact bilinear backward for the NPU tests' bounds: float64 sums of PyTorch's float32 weights from
 * the sizes (`linearIndexTable`, no scales; the TBE kernel's tables without contraction), and the
 * scale that makes A2/A3's V2 fall back to the TBE kernel.
 *
 * @module
 */

import { linearIndexTable } from "../../src/rules/pytorch.ts";

/** Per result cell: the exact sum of the terms `g * wH * wW` and the sum of their magnitudes. */
export interface ExactGradient {
  /** The float64 sum of each cell's terms. */
  readonly value: Float64Array;
  /** The float64 sum of each cell's |terms|. */
  readonly magnitude: Float64Array;
}

/**
 * The exact gradient of contiguous gradient planes `g` (`planes x outH x outW`), without the
 * gradient columns in `dropped` (what a lossy launch leaves out).
 *
 * @example
 * ```ts
 * import { exactBilinearBackward } from "./exact_bilinear.ts";
 * exactBilinearBackward(Float32Array.of(1, 1, 1, 1), 1, [1, 2], [1, 4], false).value; // Float64Array [2, 2]
 * ```
 */
export function exactBilinearBackward(
  g: Float32Array,
  planes: number,
  inHW: readonly number[],
  outHW: readonly number[],
  alignCorners: boolean,
  dropped: readonly number[] = [],
): ExactGradient {
  const [inH, inW] = inHW;
  const [outH, outW] = outHW;
  const th = linearIndexTable(inH, outH, alignCorners, 0);
  const tw = linearIndexTable(inW, outW, alignCorners, 0);
  const value = new Float64Array(planes * inH * inW);
  const magnitude = new Float64Array(value.length);
  for (let p = 0; p < planes; p++) {
    for (let oh = 0; oh < outH; oh++) {
      for (let ow = 0; ow < outW; ow++) {
        if (dropped.includes(ow)) continue;
        const v = g[(p * outH + oh) * outW + ow];
        for (const [ih, wh] of [[th.i0[oh], th.l0[oh]], [th.i1[oh], th.l1[oh]]]) {
          for (const [iw, ww] of [[tw.i0[ow], tw.l0[ow]], [tw.i1[ow], tw.l1[ow]]]) {
            const k = (p * inH + ih) * inW + iw;
            value[k] += v * wh * ww;
            magnitude[k] += Math.abs(v * wh * ww);
          }
        }
      }
    }
  }
  return { value, magnitude };
}

/**
 * An H scale that gives `outH` from `inH` (`floor(inH * scale) == outH`): given alone (W from the
 * sizes) it makes A2/A3's V2 fall back to the TBE kernel, which takes its scales from the sizes.
 *
 * @example
 * ```ts
 * import { fallbackScaleH } from "./exact_bilinear.ts";
 * Math.floor(3 * fallbackScaleH(3, 7)); // 7
 * ```
 */
export function fallbackScaleH(inH: number, outH: number): number {
  let scale = outH / inH;
  while (Math.floor(inH * scale) < outH) scale = scale * (1 + 2 ** -52);
  return scale;
}
