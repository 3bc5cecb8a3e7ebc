/**
 * Status codes of ACL, the runtime and aclnn, and the typed errors of the NPU path.
 *
 * @module
 */

/** Names of the status codes this library may see (cann-abi.md section 5). */
export const STATUS_NAMES: Readonly<Record<number, string>> = {
  0: "ACL_SUCCESS",
  100000: "ACL_ERROR_INVALID_PARAM",
  100001: "ACL_ERROR_UNINITIALIZE",
  100002: "ACL_ERROR_REPEAT_INITIALIZE",
  100024: "ACL_ERROR_OP_NOT_FOUND",
  107000: "ACL_ERROR_RT_PARAM_INVALID",
  107001: "ACL_ERROR_RT_INVALID_DEVICEID",
  107002: "ACL_ERROR_RT_CONTEXT_NULL",
  107003: "ACL_ERROR_RT_STREAM_CONTEXT",
  107017: "ACL_ERROR_RT_INVALID_HANDLE",
  161001: "ACLNN_ERR_PARAM_NULLPTR",
  161002: "ACLNN_ERR_PARAM_INVALID",
  200000: "ACL_ERROR_BAD_ALLOC",
  200001: "ACL_ERROR_API_NOT_SUPPORT",
  200002: "ACL_ERROR_INVALID_DEVICE",
  200003: "ACL_ERROR_MEMORY_ADDRESS_UNALIGNED",
  207001: "ACL_ERROR_RT_MEMORY_ALLOCATION",
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
 * import { AclError } from "./status.ts";
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
 * CANN's libraries could not be loaded: the message lists every path tried and why each failed.
 *
 * @example
 * ```ts
 * import { LibraryLoadError } from "./status.ts";
 * const error = new LibraryLoadError(["/opt/x/libascendcl.so: not found"]);
 * console.log(error.attempts.length); // 1
 * ```
 */
export class LibraryLoadError extends Error {
  /** One line per path tried: the path and why it failed. */
  readonly attempts: readonly string[];

  /** Builds the error from the list of attempts. */
  constructor(
    attempts: readonly string[],
    summary = "could not load CANN (libascendcl, libnnopbase, libopapi)",
  ) {
    super(`${summary}; tried:\n  ${attempts.join("\n  ")}`);
    this.name = "LibraryLoadError";
    this.attempts = attempts;
  }
}

/**
 * The loaded CANN has no symbol for an operator this library needs (an older or partial installation).
 *
 * @example
 * ```ts
 * import { MissingSymbolError } from "./status.ts";
 * const error = new MissingSymbolError("aclnnUpsampleNearestExact1dBackward", "/opt/lib64/libopapi.so");
 * console.log(error.symbol); // "aclnnUpsampleNearestExact1dBackward"
 * ```
 */
export class MissingSymbolError extends Error {
  /** The C symbol that is missing. */
  readonly symbol: string;

  /** Builds the error for `symbol`, missing from `library`. */
  constructor(symbol: string, library: string) {
    super(
      `the CANN operator symbol ${symbol} is missing from ${library}; this CANN is too old or partial`,
    );
    this.name = "MissingSymbolError";
    this.symbol = symbol;
  }
}
