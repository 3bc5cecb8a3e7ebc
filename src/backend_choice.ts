/**
 * Why `Device.open()` in `"auto"` mode falls back to the CPU, and the one warning it gives when the user
 * clearly asked for an NPU (`ACLNN_UPSAMPLE_CPU_FALLBACK`, through the warnings channel).
 *
 * @module
 */

import { searchPlan } from "./ffi/loader.ts";
import { AclError, LibraryLoadError } from "./ffi/status.ts";
import { UnsupportedSocError } from "./rules/support.ts";
import type { WarningChannel } from "./warnings.ts";

// Runtime calls that answer "is there an NPU here at all"; a failure of a later call is a broken
// runtime, which "auto" reports by throwing rather than hiding behind the CPU backend.
const DISCOVERY_APIS = new Set(["aclInit", "aclrtGetDeviceCount"]);

/** What in `Device.open`'s options asks for an NPU. */
export interface NpuRequest {
  /** The `libDir` option. */
  readonly libDir?: string;
  /** The `deviceId` option as given (undefined when not given). */
  readonly deviceId?: number;
}

/**
 * The reason to fall back to the CPU for a failure of opening the NPU in `"auto"` mode (with the fix),
 * or rethrows the failure when it is not one to fall back on. When the user asked for an NPU
 * ({@link requestedNpu}), gives a `CPU_FALLBACK` warning through `warnings` (once per process by
 * default).
 *
 * @throws whatever `error` is, when it is not a fallback case
 * @throws {UpsampleWarning} when the `CPU_FALLBACK` rule is `"error"` and an NPU was asked for
 * @example
 * ```ts
 * import { autoFallback } from "./backend_choice.ts";
 * import { LibraryLoadError } from "./ffi/status.ts";
 * import { WarningChannel } from "./warnings.ts";
 * const error = new LibraryLoadError(["/x/lib64: no such folder"]);
 * const reason = autoFallback(error, {}, new WarningChannel());
 * console.log(reason.startsWith("could not load CANN")); // true
 * ```
 */
export function autoFallback(
  error: unknown,
  request: NpuRequest,
  warnings: WarningChannel,
): string {
  const reason = fallbackReasonOf(error);
  if (reason === undefined) throw error;
  const by = requestedNpu(request);
  if (by !== undefined) {
    warnings.emit({
      kind: "CPU_FALLBACK",
      key: "",
      message: `Device.open() uses the CPU backend although ${by} asks for an NPU: ${reason}`,
    });
  }
  return reason;
}

/**
 * The reason (ending with its fix) for which `"auto"` falls back to the CPU when opening the NPU
 * failed with `error`, or undefined when `error` is not one to fall back on.
 *
 * @example
 * ```ts
 * import { fallbackReasonOf } from "./backend_choice.ts";
 * fallbackReasonOf(new TypeError("bug")); // undefined
 * ```
 */
export function fallbackReasonOf(error: unknown): string | undefined {
  if (
    error instanceof LibraryLoadError || error instanceof Deno.errors.NotCapable ||
    error instanceof UnsupportedSocError
  ) {
    return error.message;
  }
  if (error instanceof AclError && DISCOVERY_APIS.has(error.api)) {
    return `${error.message}\nfix: check the driver and the NPUs with \`npu-smi info\`, and that ` +
      "your CANN's set_env.sh was sourced";
  }
  return undefined;
}

/**
 * What asks for an NPU: the `libDir` or `deviceId` option, `$ACLNN_LIB_DIR` or `$ASCEND_HOME_PATH`
 * (read only when `--allow-env` grants them), or undefined.
 *
 * @example
 * ```ts
 * import { requestedNpu } from "./backend_choice.ts";
 * requestedNpu({ deviceId: 1 }); // "the deviceId option"
 * ```
 */
export function requestedNpu(request: NpuRequest): string | undefined {
  if (request.libDir) return "the libDir option";
  if (request.deviceId !== undefined) return "the deviceId option";
  return searchPlan().requestedBy;
}
