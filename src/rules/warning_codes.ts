/**
 * The warning kinds the library can raise and the description a rule hands back for one: the rules
 * never print (`src/warnings.ts`, the one channel, decides whether and where a warning goes).
 *
 * @module
 */

/**
 * Every warning kind, in a fixed order. Its stable code is `ACLNN_UPSAMPLE_` + the kind
 * ({@link warningCode}); docs/semantics.md, "Warnings", says when each fires.
 *
 * - `CPU_FALLBACK`: `Device.open()` in `"auto"` mode took the CPU backend although the options or
 *   the environment asked for an NPU;
 * - `ADJOINT_GAP`: a device's forward and backward kernels are not each other's transpose on a call
 *   whose other direction the same device ran on the same sizes;
 * - `DETERMINISTIC_WARN_ONLY`: with `deterministicWarnOnly`, an order-dependent kernel runs in
 *   deterministic mode where no deterministic route covers the call;
 * - `DEVICE_DEFECT`: reserved for running a kernel the vendor's source says loses terms, when the
 *   user opted into the device's result.
 *
 * @example
 * ```ts
 * import { WARNING_KINDS } from "./warning_codes.ts";
 * WARNING_KINDS.includes("ADJOINT_GAP"); // true
 * ```
 */
export const WARNING_KINDS: readonly WarningKind[] = Object.freeze([
  "CPU_FALLBACK",
  "ADJOINT_GAP",
  "DETERMINISTIC_WARN_ONLY",
  "DEVICE_DEFECT",
]);

/** One warning kind ({@link WARNING_KINDS}). */
export type WarningKind =
  | "CPU_FALLBACK"
  | "ADJOINT_GAP"
  | "DETERMINISTIC_WARN_ONLY"
  | "DEVICE_DEFECT";

/** A kind's stable code, e.g. `"ACLNN_UPSAMPLE_ADJOINT_GAP"`. */
export type WarningCode = `ACLNN_UPSAMPLE_${WarningKind}`;

/**
 * What a rule hands back instead of printing: the kind, the key under which it is said once (e.g.
 * op and family), and the message.
 */
export interface WarningNotice {
  /** The kind. */
  readonly kind: WarningKind;
  /** Said once per kind and key (e.g. `"bilinear2d:a2"`). */
  readonly key: string;
  /** What happened and why, without the code or how to silence it (the channel adds those). */
  readonly message: string;
}

/**
 * The stable code of `kind`.
 *
 * @example
 * ```ts
 * import { warningCode } from "./warning_codes.ts";
 * warningCode("CPU_FALLBACK"); // "ACLNN_UPSAMPLE_CPU_FALLBACK"
 * ```
 */
export function warningCode(kind: WarningKind): WarningCode {
  return `ACLNN_UPSAMPLE_${kind}`;
}

/**
 * Whether `value` is a warning kind.
 *
 * @example
 * ```ts
 * import { isWarningKind } from "./warning_codes.ts";
 * isWarningKind("ADJOINT_GAP"); // true
 * ```
 */
export function isWarningKind(value: unknown): value is WarningKind {
  return typeof value === "string" && (WARNING_KINDS as readonly string[]).includes(value);
}
