/**
 * Naive oracles for the CPU kernels, written straight from docs/semantics.md: a zeroed float32
 * gradient and a row-major scatter over the output with `Math.fround` after every float32 op.
 * Inputs are contiguous float32 `[N, C, ...outputSize]`; results are contiguous `inputSize`.
 *
 * @module
 */

/** float32 scale of one dimension: fl32(1 / scales) if scales > 0, else fl32(in) / fl32(out). */
function computeScale(inSize: number, outSize: number, scales: number): number {
  return scales > 0
    ? Math.fround(1 / scales)
    : Math.fround(Math.fround(inSize) / Math.fround(outSize));
}

function nearestSource(o: number, s: number, inSize: number): number {
  return Math.min(Math.floor(Math.fround(Math.fround(o + 0.5) * s)), inSize - 1);
}

/**
 * Reference nearest-exact backward (1d when `outputSize.length === 1`, else 2d).
 *
 * @example
 * ```ts
 * import { referenceNearestExactBackward } from "./reference.ts";
 * referenceNearestExactBackward(Float32Array.of(1, 2, 3, 4), [1, 1, 2], [4], [0]); // [3, 7]
 * ```
 */
export function referenceNearestExactBackward(
  grad: Float32Array,
  inputSize: readonly number[],
  outputSize: readonly number[],
  scales: readonly number[],
): Float32Array {
  const is2d = outputSize.length === 2;
  const [n, c] = inputSize;
  const inH = is2d ? inputSize[2] : 1;
  const inW = inputSize[inputSize.length - 1];
  const outH = is2d ? outputSize[0] : 1;
  const outW = outputSize[outputSize.length - 1];
  const sH = is2d ? computeScale(inH, outH, scales[0]) : 0;
  const sW = computeScale(inW, outW, scales[scales.length - 1]);
  const result = new Float32Array(n * c * inH * inW);
  for (let p = 0; p < n * c; p++) {
    for (let oh = 0; oh < outH; oh++) {
      const ih = is2d ? nearestSource(oh, sH, inH) : 0;
      for (let ow = 0; ow < outW; ow++) {
        const iw = nearestSource(ow, sW, inW);
        const g = grad[(p * outH + oh) * outW + ow];
        const k = (p * inH + ih) * inW + iw;
        result[k] = Math.fround(result[k] + g);
      }
    }
  }
  return result;
}

interface Linear {
  i0: number;
  i1: number;
  l0: number;
  l1: number;
}

function linear(
  o: number,
  inSize: number,
  outSize: number,
  align: boolean,
  scales: number,
): Linear {
  if (inSize === outSize) return { i0: o, i1: o, l0: 1, l1: 0 };
  let s: number;
  if (align) s = outSize > 1 ? Math.fround(Math.fround(inSize - 1) / Math.fround(outSize - 1)) : 0;
  else s = computeScale(inSize, outSize, scales);
  let r = align ? Math.fround(s * o) : Math.fround(Math.fround(s * Math.fround(o + 0.5)) - 0.5);
  if (!align && r < 0) r = 0;
  const i0 = Math.min(Math.floor(r), inSize - 1);
  const l1 = Math.min(Math.max(Math.fround(r - i0), 0), 1);
  const i1 = i0 + (i0 < inSize - 1 ? 1 : 0);
  return { i0, i1, l0: Math.fround(1 - l1), l1 };
}

/**
 * Reference bilinear 2d backward (PyTorch >= 2.0 CPU, float32 opmath, no FMA).
 *
 * @example
 * ```ts
 * import { referenceBilinear2dBackward } from "./reference.ts";
 * referenceBilinear2dBackward(Float32Array.of(1, 1, 1, 1), [1, 1, 1, 2], [1, 4], [0, 0], false);
 * // [2, 2]
 * ```
 */
export function referenceBilinear2dBackward(
  grad: Float32Array,
  inputSize: readonly number[],
  outputSize: readonly number[],
  scales: readonly number[],
  alignCorners: boolean,
): Float32Array {
  const [n, c, inH, inW] = inputSize;
  const [outH, outW] = outputSize;
  const result = new Float32Array(n * c * inH * inW);
  const add = (k: number, w: number, g: number): void => {
    result[k] = Math.fround(result[k] + Math.fround(w * g));
  };
  for (let p = 0; p < n * c; p++) {
    for (let oh = 0; oh < outH; oh++) {
      const h = linear(oh, inH, outH, alignCorners, scales[0]);
      for (let ow = 0; ow < outW; ow++) {
        const w = linear(ow, inW, outW, alignCorners, scales[1]);
        const g = grad[(p * outH + oh) * outW + ow];
        const at = (ih: number, iw: number): number => (p * inH + ih) * inW + iw;
        add(at(h.i0, w.i0), Math.fround(h.l0 * w.l0), g);
        add(at(h.i0, w.i1), Math.fround(h.l0 * w.l1), g);
        add(at(h.i1, w.i0), Math.fround(h.l1 * w.l0), g);
        add(at(h.i1, w.i1), Math.fround(h.l1 * w.l1), g);
      }
    }
  }
  return result;
}
