/**
 * One call of any of the three ops from its {@link UpsampleParams}: the single place that turns the
 * op vocabulary of `src/rules/ops.ts` into the right public call (used by `verify`, the benches
 * and the tests).
 *
 * @module
 */

import type { UpsampleParams } from "../rules/ops.ts";
import type { Tensor } from "../tensor/tensor.ts";
import {
  type UpsampleBackwardCommonOptions,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "./upsample.ts";

/** The parameters {@link runParams} reads: the op, its sizes, scales (0 = from the sizes) and `alignCorners`. */
export type RunParams = Pick<
  UpsampleParams,
  "op" | "inputSize" | "outputSize" | "scales" | "alignCorners"
>;

/**
 * Runs `params.op` on `gradOutput` (shape `[N, C, ...params.outputSize]`) with `params`' sizes,
 * scales (one per spatial dimension; 0 derives it from the sizes) and `alignCorners` (bilinear
 * only), plus `out` and `deterministic`. The same checks and errors as the op itself.
 *
 * @throws {TypeError | RangeError} before anything is allocated, on bad arguments
 * @example
 * ```ts
 * import { Device, runParams } from "@aclnn/upsample";
 * using device = Device.open({ backend: "cpu" });
 * using grad = device.tensor([1, 2, 3, 4], [1, 1, 4]);
 * const params = {
 *   op: "nearestExact1d",
 *   inputSize: [1, 1, 2],
 *   outputSize: [4],
 *   scales: [0],
 *   alignCorners: false,
 * } as const;
 * using gradInput = runParams(grad, params);
 * console.log(await gradInput.toFloat32Array()); // Float32Array [3, 7]
 * ```
 */
export function runParams(
  gradOutput: Tensor,
  params: RunParams,
  options: UpsampleBackwardCommonOptions = {},
): Tensor {
  const { op, inputSize, outputSize, scales, alignCorners } = params;
  if (op === "nearestExact1d") {
    return upsampleNearestExact1dBackward(gradOutput, {
      ...options,
      inputSize,
      outputSize,
      scales: scales[0],
    });
  }
  const sized = { ...options, inputSize, outputSize, scalesH: scales[0], scalesW: scales[1] };
  return op === "nearestExact2d"
    ? upsampleNearestExact2dBackward(gradOutput, sized)
    : upsampleBilinear2dBackward(gradOutput, { ...sized, alignCorners });
}
