/**
 * PyTorch's upsampling and its gradients — `nearest-exact` 1d and 2d, `bilinear` 2d — for Deno, on
 * Huawei Ascend NPUs through CANN's aclnn operators (`Deno.dlopen`), with a CPU backend (WebAssembly
 * SIMD kernels) where no NPU is present. The CPU backend gives PyTorch's answers (float32
 * nearest-exact bit-exact with PyTorch's CPU kernels, bilinear within a few ulp) or, with
 * `numerics: "device"`, what the Ascend kernels compute; an NPU differs from PyTorch in tie cases
 * and some scale routing (the repository's `docs/semantics.md` and `docs/device-semantics.md`).
 *
 * Importing this module has no side effects and needs no permission; `Device.open()` loads CANN
 * lazily (`--allow-ffi`, plus `--allow-env --allow-read` for the library search) and falls back to
 * the CPU backend, saying why in `device.fallbackReason`.
 *
 * @example
 * ```ts
 * import { Device, upsampleNearestExact2dBackward } from "@aclnn/upsample";
 *
 * using device = Device.open(); // NPU 0 when CANN loads, else the CPU backend
 * using grad = device.tensor(new Array(16).fill(1), [1, 1, 4, 4], { dtype: "float32" });
 * using gradInput = upsampleNearestExact2dBackward(grad, {
 *   outputSize: [4, 4],
 *   inputSize: [1, 1, 2, 2],
 * });
 * console.log(device.backend, await gradInput.toFloat32Array()); // Float32Array [4, 4, 4, 4]
 * ```
 *
 * @module
 */

export { Device, type DeviceOpenOptions, type TensorOptions } from "./src/device.ts";
export { Tensor } from "./src/tensor/tensor.ts";
export { type DType, DTYPES } from "./src/tensor/dtype.ts";
export type { BackendKind, MemoryInfo } from "./src/backend.ts";
export type { Numerics } from "./src/rules/numerics.ts";
export type { AscendGeneration } from "./src/rules/generation.ts";
export {
  type UpsampleBackwardCommonOptions,
  upsampleBilinear2dBackward,
  type UpsampleBilinear2dBackwardOptions,
  upsampleNearestExact1dBackward,
  type UpsampleNearestExact1dBackwardOptions,
  upsampleNearestExact2dBackward,
  type UpsampleNearestExact2dBackwardOptions,
} from "./src/ops/upsample.ts";
export {
  upsampleBilinear2d,
  type UpsampleBilinear2dOptions,
  type UpsampleForwardCommonOptions,
  upsampleNearestExact1d,
  type UpsampleNearestExact1dOptions,
  upsampleNearestExact2d,
  type UpsampleNearestExact2dOptions,
} from "./src/ops/forward.ts";
export { type RunParams, runParams } from "./src/ops/run_params.ts";
export { UPSAMPLE_OPS, type UpsampleOp, type UpsampleParams } from "./src/rules/ops.ts";
export {
  AclError,
  DeviceMemoryError,
  LibraryLoadError,
  MissingSymbolError,
} from "./src/ffi/status.ts";
export {
  DeviceDefectError,
  NondeterministicKernelError,
  UnsupportedSocError,
} from "./src/rules/support.ts";
export type { DeviceDefects } from "./src/rules/arrangement.ts";
export {
  setDefaultWarnings,
  UpsampleWarning,
  WARNING_KINDS,
  type WarningAction,
  type WarningCode,
  type WarningHandler,
  type WarningKind,
  type WarningRule,
  type WarningsOption,
} from "./src/warnings.ts";
