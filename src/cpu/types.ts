/**
 * Argument types of the CPU kernels.
 *
 * @module
 */

import type { DType, HostArray } from "../tensor/dtype.ts";
import type { TableRule } from "../rules/tables.ts";

/**
 * A strided view of a host buffer. `strides` and `offset` count elements, not bytes; the logical
 * shape comes from the kernel arguments.
 */
export interface StridedArray {
  /** The storage: float32 values, or float16/bfloat16 bit patterns. */
  data: HostArray;
  /** The element type of `data`. */
  dtype: DType;
  /** One stride per logical dimension, in elements (any integers). */
  strides: readonly number[];
  /** Index in `data` of the logical element (0, ..., 0). */
  offset: number;
}

/** Arguments of the nearest-exact backward kernels (already validated by the caller). */
export interface UpsampleBackwardArgs {
  /** Logical shape `[N, C, ...outputSize]`, any strides. */
  gradOutput: StridedArray;
  /** Logical shape `inputSize`; every element is overwritten. Never overlaps `gradOutput`. */
  out: StridedArray;
  /** `[N, C, L]` (1d) or `[N, C, H, W]` (2d). */
  inputSize: readonly number[];
  /** `[L]` (1d) or `[H, W]` (2d). */
  outputSize: readonly number[];
  /** One per spatial dimension, as the user gave them: 0 means "derive from the sizes". */
  scales: readonly number[];
  /** Whose index tables to run on (default `"pytorch"`; `"ascend-a2"`, `"ascend950..."`: Ascend kernels'). */
  rule?: TableRule;
}

/** Arguments of the bilinear 2d backward kernel. */
export interface BilinearBackwardArgs extends UpsampleBackwardArgs {
  /** PyTorch's `align_corners`; when true the scales are ignored. */
  alignCorners: boolean;
}

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
