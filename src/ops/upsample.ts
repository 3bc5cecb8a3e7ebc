/**
 * The three backward ops: validate once, allocate the result, dispatch to the device's backend.
 *
 * @module
 */

import type { StorageView, UpsampleCall, UpsampleOp } from "../backend.ts";
import { type DeviceInternals, deviceInternals } from "../device.ts";
import { type Tensor, tensorInternals } from "../tensor/tensor.ts";
import { recall, remember } from "./call_memo.ts";
import { type ResolvedUpsample, resolveUpsample } from "./validate.ts";

/** Options shared by the three ops. */
export interface UpsampleBackwardCommonOptions {
  /**
   * Tensor to write the result into (shape `inputSize`, dtype of `gradOutput`, same device; may be a
   * strided view; must not overlap `gradOutput`). It is returned.
   */
  out?: Tensor;
  /** Deterministic mode for this call only; the device's setting when omitted. */
  deterministic?: boolean;
}

/** Options of {@link upsampleNearestExact1dBackward}. */
export interface UpsampleNearestExact1dBackwardOptions extends UpsampleBackwardCommonOptions {
  /** `[L_out]`: the spatial size of the forward output (and of `gradOutput`). */
  outputSize: readonly number[];
  /** `[N, C, L_in]`: the shape of the forward input (and of the result). */
  inputSize: readonly number[];
  /** PyTorch `scale_factor` (output / input); omitted or 0 derives it from the sizes. */
  scales?: number;
}

/** Options of {@link upsampleNearestExact2dBackward}. */
export interface UpsampleNearestExact2dBackwardOptions extends UpsampleBackwardCommonOptions {
  /** `[H_out, W_out]`: the spatial size of the forward output (and of `gradOutput`). */
  outputSize: readonly number[];
  /** `[N, C, H_in, W_in]`: the shape of the forward input (and of the result). */
  inputSize: readonly number[];
  /** PyTorch height `scale_factor`; omitted or 0 derives it from the sizes. */
  scalesH?: number;
  /** PyTorch width `scale_factor`; omitted or 0 derives it from the sizes. */
  scalesW?: number;
}

/** Options of {@link upsampleBilinear2dBackward}. */
export interface UpsampleBilinear2dBackwardOptions extends UpsampleNearestExact2dBackwardOptions {
  /** PyTorch `align_corners` (default false); when true the scales are not used. */
  alignCorners?: boolean;
}

/**
 * Gradient of PyTorch's `interpolate(mode="nearest-exact")` on 3-D input `[N, C, L]`: sums each
 * element of `gradOutput` into the input position the forward op read it from.
 *
 * Bit-exact with PyTorch's CPU result in float32; float16/bfloat16 are accumulated in float32 and rounded
 * once. On a device with `numerics: "device"` (every NPU) the Ascend kernels' index rule applies
 * instead, which differs at ties (docs/device-semantics.md). Enqueues and returns at once; read the
 * result with `await result.toFloat32Array()`.
 *
 * @throws {TypeError | RangeError} before anything is allocated, on bad arguments
 * @throws {AclError} on an NPU runtime failure
 * @example
 * ```ts
 * import { Device, upsampleNearestExact1dBackward } from "@aclnn/upsample";
 * using device = Device.open({ backend: "cpu" });
 * using grad = device.tensor([1, 2, 3, 4], [1, 1, 4]);
 * using gradInput = upsampleNearestExact1dBackward(grad, { outputSize: [4], inputSize: [1, 1, 2] });
 * console.log(await gradInput.toFloat32Array()); // Float32Array [3, 7]
 * ```
 */
export function upsampleNearestExact1dBackward(
  gradOutput: Tensor,
  options: UpsampleNearestExact1dBackwardOptions,
): Tensor {
  return run("nearestExact1d", gradOutput, options);
}

/**
 * Gradient of PyTorch's `interpolate(mode="nearest-exact")` on 4-D input `[N, C, H, W]`.
 *
 * Bit-exact with PyTorch's CPU result in float32; float16/bfloat16 are accumulated in float32 and rounded
 * once. On a device with `numerics: "device"` (every NPU) the Ascend kernels' index rule applies
 * instead, which differs at ties (docs/device-semantics.md). Enqueues and returns at once; read the
 * result with `await result.toFloat32Array()`.
 *
 * @throws {TypeError | RangeError} before anything is allocated, on bad arguments
 * @throws {AclError} on an NPU runtime failure
 * @example
 * ```ts
 * import { Device, upsampleNearestExact2dBackward } from "@aclnn/upsample";
 * using device = Device.open({ backend: "cpu" });
 * using grad = device.tensor(new Array(16).fill(1), [1, 1, 4, 4]);
 * using gradInput = upsampleNearestExact2dBackward(grad, {
 *   outputSize: [4, 4],
 *   inputSize: [1, 1, 2, 2],
 * });
 * console.log(await gradInput.toFloat32Array()); // Float32Array [4, 4, 4, 4]
 * ```
 */
export function upsampleNearestExact2dBackward(
  gradOutput: Tensor,
  options: UpsampleNearestExact2dBackwardOptions,
): Tensor {
  return run("nearestExact2d", gradOutput, options);
}

/**
 * Gradient of PyTorch's `interpolate(mode="bilinear")` on 4-D input `[N, C, H, W]`, with PyTorch >= 2.0
 * CPU numerics (float32 coordinates and weights), within a few ulp of PyTorch in float32. On a device
 * with `numerics: "device"` (every NPU) the Ascend kernels' scale routing applies instead
 * (docs/device-semantics.md).
 *
 * @throws {TypeError | RangeError} before anything is allocated, on bad arguments
 * @throws {AclError} on an NPU runtime failure
 * @example
 * ```ts
 * import { Device, upsampleBilinear2dBackward } from "@aclnn/upsample";
 * using device = Device.open({ backend: "cpu" });
 * using grad = device.tensor(new Array(16).fill(1), [1, 1, 4, 4]);
 * using gradInput = upsampleBilinear2dBackward(grad, {
 *   outputSize: [4, 4],
 *   inputSize: [1, 1, 2, 2],
 *   alignCorners: true,
 * });
 * console.log(await gradInput.toFloat32Array()); // Float32Array [4, 4, 4, 4]
 * ```
 */
export function upsampleBilinear2dBackward(
  gradOutput: Tensor,
  options: UpsampleBilinear2dBackwardOptions,
): Tensor {
  return run("bilinear2d", gradOutput, options);
}

function run(op: UpsampleOp, gradOutput: unknown, options: unknown): Tensor {
  // The same arguments as the last call on this gradOutput: its checks already passed (call_memo.ts).
  const memo = recall(op, gradOutput, options);
  if (memo !== null) {
    const out = (options as { out?: Tensor | null }).out ?? null;
    return launch(memo.resolved, memo.internals, out, memo.call, false);
  }
  const call = resolveUpsample(op, gradOutput, options);
  return launch(call, deviceInternals(call.device), call.out, null, true);
}

// The backend's own checks (cheap, and they may depend on the backend's state), the result (`out`,
// or allocated here and freed again when the launch throws) and the launch of `reuse` or a new call
// object; `memoize`: keep the validated call for the next call on the same gradOutput, with the
// call object when there is an `out` and the backend can keep it (Backend.keepsCall).
function launch(
  call: ResolvedUpsample,
  device: DeviceInternals,
  out: Tensor | null,
  reuse: UpsampleCall<unknown> | null,
  memoize: boolean,
): Tensor {
  const backend = device.backend();
  backend.checkSupported(call);
  const result = out ?? device.empty(call.dtype, call.inputSize);
  let launched: UpsampleCall<unknown>;
  try {
    launched = reuse ?? backendCall(call, result);
    backend.launch(launched);
  } catch (error) {
    if (result !== out) result.dispose();
    throw error;
  }
  if (memoize) remember(call, out !== null && backend.keepsCall(launched) ? launched : null);
  return result;
}

// Spelled out rather than spread: one object shape for every call keeps the backends' property loads
// monomorphic, and nothing is copied twice.
function backendCall(call: ResolvedUpsample, result: Tensor): UpsampleCall<unknown> {
  return {
    op: call.op,
    dtype: call.dtype,
    inputSize: call.inputSize,
    outputSize: call.outputSize,
    scales: call.scales,
    alignCorners: call.alignCorners,
    gradOutput: storageView(call.gradOutput),
    out: storageView(result),
    deterministic: call.deterministic,
  };
}

/**
 * The backend's view of a tensor: its storage handle and layout.
 *
 * @example
 * ```ts ignore
 * storageView(tensor).strides; // the tensor's strides, in elements
 * ```
 */
export function storageView(tensor: Tensor): StorageView<unknown> {
  const { storage, layout } = tensorInternals(tensor);
  return {
    handle: storage.handle,
    dtype: storage.dtype,
    storageLength: storage.length,
    shape: layout.shape,
    strides: layout.strides,
    offset: layout.offset,
  };
}
