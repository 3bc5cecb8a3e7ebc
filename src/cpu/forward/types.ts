/**
 * Argument type of the forward CPU kernels.
 *
 * @module
 */

import type { TableRule } from "../../rules/tables.ts";
import type { StridedArray } from "../types.ts";

/**
 * Arguments of the forward kernels (`interpolate`'s ops), already validated by the caller: sizes
 * consistent with the views, the same dtype for `input` and `out`, `out` not overlapping `input`.
 *
 * @example
 * ```ts
 * import type { UpsampleForwardArgs } from "./types.ts";
 * const args: UpsampleForwardArgs = {
 *   input: { data: new Float32Array(4), dtype: "float32", strides: [4, 4, 2, 1], offset: 0 },
 *   out: { data: new Float32Array(16), dtype: "float32", strides: [16, 16, 4, 1], offset: 0 },
 *   inputSize: [1, 1, 2, 2],
 *   outputSize: [4, 4],
 *   scales: [0, 0],
 *   alignCorners: false,
 * };
 * ```
 */
export interface UpsampleForwardArgs {
  /** Logical shape `inputSize`, any strides. */
  input: StridedArray;
  /** Logical shape `[N, C, ...outputSize]`, any strides; every element is overwritten. */
  out: StridedArray;
  /** `[N, C, L]` (1d) or `[N, C, H, W]` (2d). */
  inputSize: readonly number[];
  /** `[L]` (1d) or `[H, W]` (2d). */
  outputSize: readonly number[];
  /** One per spatial dimension, PyTorch's `scale_factor` (output / input); 0: from the sizes. */
  scales: readonly number[];
  /** Bilinear only: PyTorch's `align_corners` (default false); when true the scales are ignored. */
  alignCorners?: boolean;
  /** Whose index tables to run on (default `"pytorch"`: PyTorch 1.13's CPU kernels). */
  rule?: TableRule;
}
