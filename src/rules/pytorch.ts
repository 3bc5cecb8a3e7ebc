/**
 * PyTorch's rule: the scales and per-dimension index tables of its CPU upsampling kernels, in their
 * float32 arithmetic (ATen's `UpSample.h`; docs/semantics.md states them in prose).
 *
 * @module
 */

/**
 * The float32 scale PyTorch's nearest-exact uses for one dimension: `fl32(1 / scales)` when
 * `scales > 0` (division in double, rounded once), else `fl32(inSize) / fl32(outSize)` in float32.
 *
 * @example
 * ```ts
 * import { nearestExactScale } from "./pytorch.ts";
 * nearestExactScale(4, 8, 0); // 0.5
 * nearestExactScale(3, 3, 1.3) === Math.fround(1 / 1.3); // true
 * ```
 */
export function nearestExactScale(inSize: number, outSize: number, scales: number): number {
  if (scales > 0) return Math.fround(1 / scales);
  return Math.fround(Math.fround(inSize) / Math.fround(outSize));
}

/**
 * The input index nearest-exact reads for output index `o`:
 * `min(floor(fl32(fl32(o + 0.5) * scale)), inSize - 1)`.
 *
 * @example
 * ```ts
 * import { nearestExactScale, nearestExactSourceIndex } from "./pytorch.ts";
 * const s = nearestExactScale(2, 41, 0);
 * nearestExactSourceIndex(20, s, 2); // 0 (the float32 product is 0.99999994)
 * ```
 */
export function nearestExactSourceIndex(o: number, scale: number, inSize: number): number {
  const r = Math.floor(Math.fround(Math.fround(o + 0.5) * scale));
  return r < inSize - 1 ? r : inSize - 1;
}

/**
 * The forward index table `src[o]` of nearest-exact for one dimension (monotone non-decreasing).
 *
 * @example
 * ```ts
 * import { nearestExactIndexTable } from "./pytorch.ts";
 * nearestExactIndexTable(3, 3, 1.3); // Int32Array [0, 1, 1]
 * ```
 */
export function nearestExactIndexTable(
  inSize: number,
  outSize: number,
  scales: number,
): Int32Array {
  const scale = nearestExactScale(inSize, outSize, scales);
  const table = new Int32Array(outSize);
  for (let o = 0; o < outSize; o++) table[o] = nearestExactSourceIndex(o, scale, inSize);
  return table;
}

/**
 * Inverts a monotone forward index table: input `i` receives the outputs
 * `[starts[i], starts[i + 1])`. Returns `inSize + 1` entries, the last being `table.length`.
 *
 * @example
 * ```ts
 * import { rangeStarts } from "./pytorch.ts";
 * rangeStarts(Int32Array.of(0, 1, 1), 3); // Int32Array [0, 1, 3, 3]
 * ```
 */
export function rangeStarts(table: Int32Array, inSize: number): Int32Array {
  const starts = new Int32Array(inSize + 1);
  const outSize = table.length;
  let o = 0;
  for (let i = 0; i <= inSize; i++) {
    while (o < outSize && table[o] < i) o++;
    starts[i] = o;
  }
  for (let k = 1; k < outSize; k++) {
    if (table[k] < table[k - 1]) throw new RangeError("index table is not monotone");
  }
  return starts;
}

/**
 * `k` when input `i` owns exactly the outputs `[i k, (i + 1) k)` for every `i` (an integer factor),
 * else 0. `starts` is a {@link rangeStarts} table.
 *
 * @example
 * ```ts
 * import { uniformFactor } from "./pytorch.ts";
 * uniformFactor(Int32Array.of(0, 2, 4)); // 2
 * uniformFactor(Int32Array.of(0, 1, 3)); // 0
 * ```
 */
export function uniformFactor(starts: Int32Array): number {
  const k = starts[1] - starts[0];
  if (k <= 0) return 0;
  for (let i = 0; i < starts.length; i++) if (starts[i] !== i * k) return 0;
  return k;
}

/**
 * The most outputs any input owns in a {@link rangeStarts} table.
 *
 * @example
 * ```ts
 * import { longestRange } from "./pytorch.ts";
 * longestRange(Int32Array.of(0, 1, 3, 3)); // 2
 * ```
 */
export function longestRange(starts: Int32Array): number {
  let most = 0;
  for (let i = 1; i < starts.length; i++) most = Math.max(most, starts[i] - starts[i - 1]);
  return most;
}

/**
 * The float32 scale of bilinear (`area_pixel_compute_scale`): with `alignCorners`,
 * `fl32(inSize - 1) / (outSize - 1)` (0 when `outSize == 1`, `scales` ignored); otherwise as
 * {@link nearestExactScale}.
 *
 * @example
 * ```ts
 * import { bilinearScale } from "./pytorch.ts";
 * bilinearScale(4, 7, true, 0); // 0.5
 * bilinearScale(4, 8, false, 0); // 0.5
 * ```
 */
export function bilinearScale(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scales: number,
): number {
  if (alignCorners) {
    return outSize > 1 ? Math.fround(Math.fround(inSize - 1) / Math.fround(outSize - 1)) : 0;
  }
  return nearestExactScale(inSize, outSize, scales);
}

/** Per-output-index source indices and weights of linear interpolation along one dimension. */
export interface LinearTable {
  /** Lower source index. */
  i0: Int32Array;
  /** Upper source index (`i0 + 1`, or `i0` at the last input). */
  i1: Int32Array;
  /** Weight of `i0` (float32). */
  l0: Float32Array;
  /** Weight of `i1` (float32). */
  l1: Float32Array;
}

/**
 * The identity table of a dimension of `size` (output `o` reads input `o` with weight 1): what
 * every rule gives where a dimension keeps its size and is copied.
 *
 * @example
 * ```ts
 * import { identityLinearTable } from "./pytorch.ts";
 * identityLinearTable(3).i0; // Int32Array [0, 1, 2]
 * ```
 */
export function identityLinearTable(size: number): LinearTable {
  const i0 = new Int32Array(size);
  for (let o = 0; o < size; o++) i0[o] = o;
  return { i0, i1: i0.slice(), l0: new Float32Array(size).fill(1), l1: new Float32Array(size) };
}

/**
 * Source indices and float32 weights of PyTorch's `compute_source_index_and_lambda` for every
 * output index of one dimension (same-size dimensions are the identity, whatever the scale).
 *
 * @example
 * ```ts
 * import { linearIndexTable } from "./pytorch.ts";
 * const t = linearIndexTable(2, 4, false, 0);
 * // t.i0 = [0, 0, 0, 1], t.i1 = [1, 1, 1, 1], t.l1 = [0, 0.25, 0.75, 0.25]
 * ```
 */
export function linearIndexTable(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scales: number,
): LinearTable {
  if (inSize === outSize) return identityLinearTable(outSize);
  const i0 = new Int32Array(outSize);
  const i1 = new Int32Array(outSize);
  const l0 = new Float32Array(outSize);
  const l1 = new Float32Array(outSize);
  const s = bilinearScale(inSize, outSize, alignCorners, scales);
  for (let o = 0; o < outSize; o++) {
    let r: number;
    if (alignCorners) {
      r = Math.fround(s * o);
    } else {
      r = Math.fround(Math.fround(s * Math.fround(o + 0.5)) - 0.5);
      if (r < 0) r = 0;
    }
    const f = Math.floor(r);
    const lo = f < inSize - 1 ? f : inSize - 1;
    let lambda = Math.fround(r - lo);
    lambda = lambda < 0 ? 0 : lambda > 1 ? 1 : lambda;
    i0[o] = lo;
    i1[o] = lo < inSize - 1 ? lo + 1 : lo;
    l1[o] = lambda;
    l0[o] = Math.fround(1 - lambda);
  }
  return { i0, i1, l0, l1 };
}
