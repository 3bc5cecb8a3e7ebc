/**
 * The pure TypeScript CPU backend: backward kernels of nearest-exact (1d, 2d) and bilinear (2d)
 * upsampling with PyTorch CPU numerics, and the scale/index helpers they share.
 *
 * @example
 * ```ts
 * import { nearestExact1dBackwardCpu } from "./mod.ts";
 * const out = new Float32Array(1);
 * nearestExact1dBackwardCpu({
 *   gradOutput: { data: Float32Array.of(1, 2), dtype: "float32", strides: [2, 2, 1], offset: 0 },
 *   out: { data: out, dtype: "float32", strides: [1, 1, 1], offset: 0 },
 *   inputSize: [1, 1, 1],
 *   outputSize: [2],
 *   scales: [0],
 * });
 * // out = [3]
 * ```
 *
 * @module
 */

export type { BilinearBackwardArgs, StridedArray, UpsampleBackwardArgs } from "../../types.ts";
export {
  bilinearScale,
  linearIndexTable,
  type LinearTable,
  nearestExactIndexTable,
  nearestExactScale,
  nearestExactSourceIndex,
  rangeStarts,
} from "../../../rules/pytorch.ts";
export { nearestExact1dBackwardCpu, nearestExact2dBackwardCpu } from "./nearest_exact.ts";
export { bilinear2dBackwardCpu } from "./bilinear.ts";
