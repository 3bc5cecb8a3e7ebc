/**
 * Why `Device.open()` in `"auto"` mode falls back to the CPU, and the one warning it gives when the user
 * clearly asked for an NPU.
 *
 * @module
 */

import { searchPlan } from "./ffi/loader.ts";
import { AclError, LibraryLoadError } from "./ffi/status.ts";
import { UnsupportedSocError } from "./rules/support.ts";

// Runtime calls that answer "is there an NPU here at all"; a failure of a later call is a broken
// runtime, which "auto" reports by throwing rather than hiding behind the CPU backend.
const DISCOVERY_APIS = new Set(["aclInit", "aclrtGetDeviceCount"]);

let warned = false;

/** What in `Device.open`'s options asks for an NPU. */
export interface NpuRequest {
  /** The `libDir` option. */
  readonly libDir?: string;
  /** The `deviceId` option as given (undefined when not given). */
  readonly deviceId?: number;
}

/**
 * The reason to fall back to the CPU for a failure of opening the NPU in `"auto"` mode (with the fix),
 * or rethrows the failure when it is not one to fall back on. Warns on stderr once per process when
 * the user asked for an NPU ({@link requestedNpu}).
 *
 * @throws whatever `error` is, when it is not a fallback case
 * @example
 * ```ts
 * import { autoFallback } from "./backend_choice.ts";
 * import { LibraryLoadError } from "./ffi/status.ts";
 * const reason = autoFallback(new LibraryLoadError(["/x/lib64: no such folder"]), {});
 * console.log(reason.startsWith("could not load CANN")); // true
 * ```
 */
export function autoFallback(error: unknown, request: NpuRequest): string {
  const reason = fallbackReasonOf(error);
  if (reason === undefined) throw error;
  const by = requestedNpu(request);
  if (by !== undefined && !warned) {
    warned = true;
    console.warn(
      `@aclnn/upsample: Device.open() uses the CPU backend although ${by} asks for an NPU: ${reason}`,
    );
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
 * Internal, for `deno task doctor`, which prints the reason itself: no fallback warning from here on.
 *
 * @example
 * ```ts
 * import { suppressFallbackWarning } from "./backend_choice.ts";
 * suppressFallbackWarning();
 * ```
 */
export function suppressFallbackWarning(): void {
  warned = true;
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
