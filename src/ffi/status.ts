/**
 * Status codes of ACL, the runtime and aclnn, and the typed errors of the NPU path.
 *
 * @module
 */

/**
 * Names of the status codes this library may see, checked against CANN's public headers: ACL codes from
 * `include/external/acl/acl_base.h` and `acl_base_rt.h`, runtime codes from `include/external/acl/error_codes/rt_error_codes.h`
 * (repository `hicann/runtime`), aclnn codes from `include/nnopbase/opdev/op_errno.h` (`hicann/opbase`).
 */
export const STATUS_NAMES: Readonly<Record<number, string>> = {
  0: "ACL_SUCCESS",
  100000: "ACL_ERROR_INVALID_PARAM",
  100001: "ACL_ERROR_UNINITIALIZE",
  100002: "ACL_ERROR_REPEAT_INITIALIZE",
  100024: "ACL_ERROR_OP_NOT_FOUND",
  100037: "ACL_ERROR_REPEAT_FINALIZE",
  107000: "ACL_ERROR_RT_PARAM_INVALID",
  107001: "ACL_ERROR_RT_INVALID_DEVICEID",
  107002: "ACL_ERROR_RT_CONTEXT_NULL",
  107003: "ACL_ERROR_RT_STREAM_CONTEXT",
  107008: "ACL_ERROR_RT_ADDR_UNALIGNED",
  107016: "ACL_ERROR_RT_INVALID_MEMORY_TYPE",
  107017: "ACL_ERROR_RT_INVALID_HANDLE",
  107019: "ACL_ERROR_RT_WAIT_TIMEOUT",
  107020: "ACL_ERROR_RT_TASK_TIMEOUT",
  107021: "ACL_ERROR_RT_SYSPARAMOPT_NOT_SET",
  161001: "ACLNN_ERR_PARAM_NULLPTR",
  161002: "ACLNN_ERR_PARAM_INVALID",
  200000: "ACL_ERROR_BAD_ALLOC",
  200001: "ACL_ERROR_API_NOT_SUPPORT",
  200002: "ACL_ERROR_INVALID_DEVICE",
  200003: "ACL_ERROR_MEMORY_ADDRESS_UNALIGNED",
  207000: "ACL_ERROR_RT_FEATURE_NOT_SUPPORT",
  207001: "ACL_ERROR_RT_MEMORY_ALLOCATION",
  207002: "ACL_ERROR_RT_MEMORY_FREE",
  207004: "ACL_ERROR_RT_NO_DEVICE",
  207018: "ACL_ERROR_RT_DEVICE_OOM",
  361001: "ACLNN_ERR_RUNTIME_ERROR",
  500000: "ACL_ERROR_INTERNAL_ERROR",
  500001: "ACL_ERROR_FAILURE",
  507000: "ACL_ERROR_RT_INTERNAL_ERROR",
  507014: "ACL_ERROR_RT_AICORE_TIMEOUT",
  507015: "ACL_ERROR_RT_AICORE_EXCEPTION",
  507046: "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT",
  561000: "ACLNN_ERR_INNER",
  561001: "ACLNN_ERR_INNER_INFERSHAPE_ERROR",
  561002: "ACLNN_ERR_INNER_TILING_ERROR",
  561003: "ACLNN_ERR_INNER_FIND_KERNEL_ERROR",
  561101: "ACLNN_ERR_INNER_CREATE_EXECUTOR",
  561103: "ACLNN_ERR_INNER_NULLPTR",
  561107: "ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND",
};

/**
 * Name of a status code, e.g. `ACLNN_ERR_PARAM_INVALID`, or `status 123` when unknown.
 *
 * @example
 * ```ts
 * import { statusName } from "./status.ts";
 * statusName(161002); // "ACLNN_ERR_PARAM_INVALID"
 * ```
 */
export function statusName(code: number): string {
  return STATUS_NAMES[code] ?? (code >= 561000 && code < 562000 ? "ACLNN_ERR_INNER_*" : "unknown");
}

/**
 * A CANN call returned a non-zero status. Carries the status, the API that returned it and the runtime's
 * own message (`aclGetRecentErrMsg`).
 *
 * @example
 * ```ts
 * import { AclError } from "@aclnn/upsample";
 * const error = new AclError(207001, "aclrtMalloc", "out of memory");
 * console.log(error.message); // "aclrtMalloc failed with 207001 (ACL_ERROR_RT_MEMORY_ALLOCATION): out of memory"
 * ```
 */
export class AclError extends Error {
  /** The status code. */
  readonly code: number;
  /** The C function that returned it. */
  readonly api: string;
  /** Name of the status code. */
  readonly statusName: string;
  /** The runtime's message for the failure (may be empty). */
  readonly detail: string;

  /** Builds the error; `detail` is the runtime's message. */
  constructor(code: number, api: string, detail: string) {
    const name = statusName(code);
    super(`${api} failed with ${code} (${name})${detail ? `: ${detail}` : ""}`);
    this.name = "AclError";
    this.code = code;
    this.api = api;
    this.statusName = name;
    this.detail = detail;
  }
}

/**
 * Device memory ran out: an allocation (a tensor, an op's result or its workspace) did not fit. Says how
 * many bytes were requested and how many were free at that moment (`aclrtGetMemInfo`; -1 when the
 * runtime cannot tell).
 *
 * @example
 * ```ts
 * import { DeviceMemoryError } from "@aclnn/upsample";
 * const error = new DeviceMemoryError(207001, "aclrtMalloc", "", 2 ** 33, 2 ** 20, 2 ** 32);
 * console.log(error.requestedBytes); // 8589934592
 * ```
 */
export class DeviceMemoryError extends AclError {
  /** Bytes the failed allocation asked for. */
  readonly requestedBytes: number;
  /** Free device bytes when it failed, or -1 when unknown. */
  readonly freeBytes: number;
  /** Device memory in total, or -1 when unknown. */
  readonly totalBytes: number;

  /** Builds the error; `detail` is the runtime's message. */
  constructor(
    code: number,
    api: string,
    detail: string,
    requestedBytes: number,
    freeBytes: number,
    totalBytes: number,
  ) {
    const memory = freeBytes < 0
      ? `requested ${requestedBytes} bytes; free device memory unknown (no aclrtGetMemInfo)`
      : `requested ${requestedBytes} bytes, ${freeBytes} bytes free of ${totalBytes}`;
    super(code, api, detail ? `${detail}; ${memory}` : memory);
    this.name = "DeviceMemoryError";
    this.requestedBytes = requestedBytes;
    this.freeBytes = freeBytes;
    this.totalBytes = totalBytes;
  }
}

/**
 * CANN's libraries could not be loaded, or no usable NPU was found. The message lists each path tried
 * once with its own reason (a missing folder, a missing file, the loader's message) and ends with a
 * line saying how to fix it.
 *
 * @example
 * ```ts
 * import { LibraryLoadError } from "@aclnn/upsample";
 * const error = new LibraryLoadError(["/opt/x/lib64: no such folder"], {
 *   fix: "set ACLNN_LIB_DIR to the folder holding libascendcl.so",
 * });
 * console.log(error.attempts.length, error.fix); // 1 "set ACLNN_LIB_DIR to the folder holding libascendcl.so"
 * ```
 */
export class LibraryLoadError extends Error {
  /** One line per path tried: the path and why it failed. */
  readonly attempts: readonly string[];
  /** How to fix it (the message's last line, without its `fix: ` prefix). */
  readonly fix: string;

  /**
   * Builds the error from the list of attempts; `summary` is the first line (default: CANN could not
   * be loaded), `fix` the last.
   */
  constructor(
    attempts: readonly string[],
    { summary = "could not load CANN (libascendcl, libnnopbase, libopapi)", fix = "" }: {
      summary?: string;
      fix?: string;
    } = {},
  ) {
    const tried = attempts.length > 0 ? `; tried:\n  ${attempts.join("\n  ")}` : "";
    super(`${summary}${tried}${fix ? `\nfix: ${fix}` : ""}`);
    this.name = "LibraryLoadError";
    this.attempts = attempts;
    this.fix = fix;
  }
}

/**
 * The loaded CANN lacks a symbol this call needs: an operator (an older or partial installation), or an
 * optional runtime function such as the context system-parameter pair behind deterministic mode.
 *
 * @example
 * ```ts
 * import { MissingSymbolError } from "@aclnn/upsample";
 * const error = new MissingSymbolError("aclnnUpsampleNearestExact1dBackward", "/opt/lib64/libopapi.so");
 * console.log(error.symbol); // "aclnnUpsampleNearestExact1dBackward"
 * ```
 */
export class MissingSymbolError extends Error {
  /** The C symbol that is missing. */
  readonly symbol: string;
  /** The library that was searched. */
  readonly library: string;

  /**
   * Builds the error for `symbol`, missing from `library`; `need` says what needs it and which CANN has
   * it (default: the operator wording).
   */
  constructor(symbol: string, library: string, need?: string) {
    super(
      need === undefined
        ? `the CANN operator symbol ${symbol} is missing from ${library}; this CANN is too old or partial`
        : `${need}, but ${symbol} is missing from ${library}`,
    );
    this.name = "MissingSymbolError";
    this.symbol = symbol;
    this.library = library;
  }
}
