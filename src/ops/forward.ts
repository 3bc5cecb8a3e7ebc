/**
 * The three forward ops, the other half of each pair: validate once, allocate the result, dispatch
 * to the device's backend.
 *
 * @module
 */

import type { ForwardCall } from "../backend.ts";
import { type DeviceInternals, deviceInternals } from "../device.ts";
import type { UpsampleOp } from "../rules/ops.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { recallForward, rememberForward } from "./call_memo.ts";
import { type ResolvedForward, resolveForward } from "./forward_validate.ts";
import { storageView } from "./upsample.ts";

/** Options shared by the three forward ops. */
export interface UpsampleForwardCommonOptions {
  /**
   * Tensor to write the result into (shape `[N, C, ...outputSize]`, dtype of the input, same
   * device; may be a strided view; must not overlap the input). It is returned.
   */
  out?: Tensor;
  /** Deterministic mode for this call only; the device's setting when omitted. */
  deterministic?: boolean;
}

/** Options of {@link upsampleNearestExact1d}. */
export interface UpsampleNearestExact1dOptions extends UpsampleForwardCommonOptions {
  /** `[L_out]`: the spatial size of the result. */
  outputSize: readonly number[];
  /** PyTorch `scale_factor` (output / input); omitted or 0 derives it from the sizes. */
  scales?: number;
}

/** Options of {@link upsampleNearestExact2d}. */
export interface UpsampleNearestExact2dOptions extends UpsampleForwardCommonOptions {
  /** `[H_out, W_out]`: the spatial size of the result. */
  outputSize: readonly number[];
  /** PyTorch height `scale_factor`; omitted or 0 derives it from the sizes. */
  scalesH?: number;
  /** PyTorch width `scale_factor`; omitted or 0 derives it from the sizes. */
  scalesW?: number;
}

/** Options of {@link upsampleBilinear2d}. */
export interface UpsampleBilinear2dOptions extends UpsampleNearestExact2dOptions {
  /** PyTorch `align_corners` (default false); when true the scales are not used. */
  alignCorners?: boolean;
}

/**
 * PyTorch's `interpolate(x, size=outputSize, mode="nearest-exact")` on 3-D input `[N, C, L]`: each
 * output cell copies the input cell `min(floor((o + 0.5) * scale), L - 1)` reads in PyTorch, or,
 * on an NPU, the one the device's kernel reads (docs/device-semantics.md). The gradient is
 * {@link upsampleNearestExact1dBackward}.
 *
 * @throws {TypeError | RangeError} before anything is allocated, on bad arguments
 * @throws {AclError} on an NPU runtime failure
 * @example
 * ```ts
 * import { Device, upsampleNearestExact1d } from "@aclnn/upsample";
 * using device = Device.open({ backend: "cpu" });
 * using x = device.tensor([1, 2], [1, 1, 2]);
 * using y = upsampleNearestExact1d(x, { outputSize: [4] });
 * console.log(await y.toFloat32Array()); // Float32Array [1, 1, 2, 2]
 * ```
 */
export function upsampleNearestExact1d(
  input: Tensor,
  options: UpsampleNearestExact1dOptions,
): Tensor {
  return runForward("nearestExact1d", input, options);
}

/**
 * PyTorch's `interpolate(x, size=outputSize, mode="nearest-exact")` on 4-D input `[N, C, H, W]`.
 * The gradient is {@link upsampleNearestExact2dBackward}.
 *
 * @throws {TypeError | RangeError} before anything is allocated, on bad arguments
 * @throws {AclError} on an NPU runtime failure
 * @example
 * ```ts
 * import { Device, upsampleNearestExact2d } from "@aclnn/upsample";
 * using device = Device.open({ backend: "cpu" });
 * using x = device.tensor([1, 2, 3, 4], [1, 1, 2, 2]);
 * using y = upsampleNearestExact2d(x, { outputSize: [4, 4] });
 * console.log((await y.toFloat32Array()).slice(0, 4)); // Float32Array [1, 1, 2, 2]
 * ```
 */
export function upsampleNearestExact2d(
  input: Tensor,
  options: UpsampleNearestExact2dOptions,
): Tensor {
  return runForward("nearestExact2d", input, options);
}

/**
 * PyTorch's `interpolate(x, size=outputSize, mode="bilinear", align_corners=alignCorners)` on 4-D
 * input `[N, C, H, W]`. The gradient is {@link upsampleBilinear2dBackward}.
 *
 * @throws {TypeError | RangeError} before anything is allocated, on bad arguments
 * @throws {AclError} on an NPU runtime failure
 * @example
 * ```ts
 * import { Device, upsampleBilinear2d } from "@aclnn/upsample";
 * using device = Device.open({ backend: "cpu" });
 * using x = device.tensor([0, 4], [1, 1, 1, 2]);
 * using y = upsampleBilinear2d(x, { outputSize: [1, 3], alignCorners: true });
 * console.log(await y.toFloat32Array()); // Float32Array [0, 2, 4]
 * ```
 */
export function upsampleBilinear2d(input: Tensor, options: UpsampleBilinear2dOptions): Tensor {
  return runForward("bilinear2d", input, options);
}

function runForward(op: UpsampleOp, input: unknown, options: unknown): Tensor {
  // The same arguments as the last call on this input: its checks already passed (call_memo.ts).
  const memo = recallForward(op, input, options);
  if (memo !== null) {
    const out = (options as { out?: Tensor | null }).out ?? null;
    return launch(memo.resolved, memo.internals, out, memo.call, false);
  }
  const call = resolveForward(op, input, options);
  return launch(call, deviceInternals(call.device), call.out, null, true);
}

// As the backward ops' launch (upsample.ts): the backend's checks, the result, the launch of `reuse`
// or a new call object, and the memo of a first call.
function launch(
  call: ResolvedForward,
  device: DeviceInternals,
  out: Tensor | null,
  reuse: ForwardCall<unknown> | null,
  memoize: boolean,
): Tensor {
  const backend = device.backend();
  backend.checkForwardSupported(call);
  const result = out ?? device.empty(call.dtype, call.resultShape);
  let launched: ForwardCall<unknown>;
  try {
    launched = reuse ?? forwardCall(call, result);
    backend.launchForward(launched);
  } catch (error) {
    if (result !== out) result.dispose();
    throw error;
  }
  if (memoize) rememberForward(call, out !== null && backend.keepsCall(launched) ? launched : null);
  return result;
}

function forwardCall(call: ResolvedForward, result: Tensor): ForwardCall<unknown> {
  return {
    op: call.op,
    dtype: call.dtype,
    inputSize: call.inputSize,
    outputSize: call.outputSize,
    scales: call.scales,
    alignCorners: call.alignCorners,
    input: storageView(call.input),
    out: storageView(result),
    deterministic: call.deterministic,
  };
}
