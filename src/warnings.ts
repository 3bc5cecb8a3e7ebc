/**
 * The one warnings channel: every warning the library gives goes through here, with a stable code,
 * said once per kind and key, and each kind can be silenced, routed to a callback or made an
 * error — per device (`Device.open({ warnings })`) or for the process ({@link setDefaultWarnings}),
 * as Python's `warnings` filters do for PyTorch's. By default a warning is one line on stderr that
 * names its code and how to silence it. docs/semantics.md, "Warnings", lists the kinds.
 *
 * @module
 */

import {
  isWarningKind,
  WARNING_KINDS,
  type WarningCode,
  warningCode,
  type WarningKind,
  type WarningNotice,
} from "./rules/warning_codes.ts";

export { WARNING_KINDS, type WarningCode, type WarningKind, type WarningNotice };

/**
 * What to do with a warning: `"warn"` (one line on stderr, said once), `"ignore"`, or `"error"`
 * (throw it as an {@link UpsampleWarning}, every time, before anything is allocated).
 */
export type WarningAction = "warn" | "ignore" | "error";

/** Receives each warning once per kind and key instead of stderr; what it throws propagates. */
export type WarningHandler = (warning: UpsampleWarning) => void;

/** An action or a handler, for one kind or for all. */
export type WarningRule = WarningAction | WarningHandler;

/**
 * The `warnings` option of `Device.open` and the argument of {@link setDefaultWarnings}: one rule
 * for every kind, or a rule per kind (kinds not named follow the process default, then `"warn"`).
 *
 * Adjoint gaps are said by default only where the same device ran both directions of a call; name
 * `ADJOINT_GAP` with `"warn"`, `"error"` or a handler to hear them on every call that meets one.
 */
export type WarningsOption = WarningRule | { readonly [K in WarningKind]?: WarningRule };

/**
 * A warning of the library: thrown under `"error"`, passed to a {@link WarningHandler}, or printed.
 *
 * @example
 * ```ts
 * import { Device, UpsampleWarning } from "@aclnn/upsample";
 * using device = Device.open({
 *   backend: "cpu",
 *   warnings: (warning: UpsampleWarning) => console.log(warning.code, warning.message),
 * });
 * ```
 */
export class UpsampleWarning extends Error {
  /** The stable code, `ACLNN_UPSAMPLE_` + {@link kind}. */
  readonly code: WarningCode;

  /** Creates the warning. */
  constructor(
    /** The kind (a key of the `warnings` option). */
    readonly kind: WarningKind,
    /** Said once per kind and key (e.g. `"bilinear2d:a2"`: op and family). */
    readonly key: string,
    message: string,
  ) {
    super(message);
    this.name = "UpsampleWarning";
    this.code = warningCode(kind);
  }
}

// What each kind's key means, for the stderr line.
const ONCE_PER: Readonly<Record<WarningKind, string>> = {
  CPU_FALLBACK: "once per process",
  ADJOINT_GAP: "once per op and family",
  DETERMINISTIC_WARN_ONLY: "once per op, kernel and family",
  DEVICE_DEFECT: "once per op, kernel and family",
};
const ACTIONS: ReadonlySet<string> = new Set(["warn", "ignore", "error"]);
// Keys already said, per destination (stderr, or a handler function): "said once" holds per process.
const STDERR = {};
let said = new WeakMap<object, Set<string>>();
let processDefault: WarningsOption | undefined;

/**
 * Sets the rule for devices opened without a `warnings` option, and for the kinds a device's
 * option does not name (`undefined`: back to `"warn"`); it applies to warnings given from then on,
 * devices already open included. Returns the previous default, e.g. to restore it.
 *
 * @throws {TypeError} on a rule that is not an action, a function, or an object keyed by kind
 * @example
 * ```ts
 * import { setDefaultWarnings } from "@aclnn/upsample";
 * const previous = setDefaultWarnings({ ADJOINT_GAP: "ignore", CPU_FALLBACK: "error" });
 * setDefaultWarnings(previous);
 * ```
 */
export function setDefaultWarnings(option: WarningsOption | undefined): WarningsOption | undefined {
  const checked = checkWarningsOption(option, "setDefaultWarnings(option)");
  const previous = processDefault;
  processDefault = checked;
  return previous;
}

/**
 * Checks a `warnings` option (`what` names it in messages) and returns a frozen copy, so that a
 * later change to the caller's object changes nothing.
 *
 * @throws {TypeError} naming `what`, the value and the rule
 * @example
 * ```ts
 * import { checkWarningsOption } from "./warnings.ts";
 * checkWarningsOption({ ADJOINT_GAP: "ignore" }, "Device.open warnings"); // { ADJOINT_GAP: "ignore" }
 * ```
 */
export function checkWarningsOption(
  option: unknown,
  what: string,
): WarningsOption | undefined {
  const shape = `"warn", "ignore", "error", a function, or an object keyed by warning kind ` +
    `(${WARNING_KINDS.join(", ")})`;
  if (option === undefined || typeof option === "function") {
    return option as WarningsOption | undefined;
  }
  if (typeof option === "string") {
    if (ACTIONS.has(option)) return option as WarningAction;
    throw new TypeError(`${what} must be ${shape}, got ${JSON.stringify(option)}`);
  }
  if (typeof option !== "object" || option === null || Array.isArray(option)) {
    throw new TypeError(`${what} must be ${shape}, got ${String(option)}`);
  }
  const copy: { [K in WarningKind]?: WarningRule } = {};
  for (const [kind, rule] of Object.entries(option)) {
    if (!isWarningKind(kind)) {
      const hint = kind.startsWith("ACLNN_UPSAMPLE_")
        ? ` (name the kind: the code without its ACLNN_UPSAMPLE_ prefix)`
        : "";
      throw new TypeError(
        `${what}: unknown warning kind ${JSON.stringify(kind)}${hint}; kinds: ` +
          WARNING_KINDS.join(", "),
      );
    }
    if (typeof rule !== "function" && !(typeof rule === "string" && ACTIONS.has(rule))) {
      throw new TypeError(
        `${what}.${kind} must be "warn", "ignore", "error" or a function, got ${
          typeof rule === "string" ? JSON.stringify(rule) : String(rule)
        }`,
      );
    }
    copy[kind] = rule;
  }
  return Object.freeze(copy);
}

/**
 * One device's view of the channel: its `warnings` option over the process default. Internal (the
 * backends and `Device.open` emit through it); not exported from `mod.ts`.
 *
 * @example
 * ```ts
 * import { WarningChannel } from "./warnings.ts";
 * const channel = new WarningChannel({ ADJOINT_GAP: "ignore" });
 * channel.hears("ADJOINT_GAP", "bilinear2d:a2"); // false
 * ```
 */
export class WarningChannel {
  readonly #option: WarningsOption | undefined;

  /** A channel for a device opened with `option` (already checked). */
  constructor(option?: WarningsOption) {
    this.#option = option;
  }

  /** The rule for `kind`: the device's, else the process default's, else `"warn"`. */
  ruleOf(kind: WarningKind): WarningRule {
    return ruleIn(this.#option, kind) ?? ruleIn(processDefault, kind) ?? "warn";
  }

  /**
   * Whether the rule for `kind` comes from an object that names it (the device's option, else the
   * process default): a rule for all kinds does not ask for a kind said only on request.
   */
  named(kind: WarningKind): boolean {
    return namedIn(this.#option, kind) ?? namedIn(processDefault, kind) ?? false;
  }

  /**
   * Whether a warning of `kind` and `key` would reach anyone (not ignored, not already said to its
   * destination; `"error"` always): lets a caller skip working out a warning nobody hears.
   */
  hears(kind: WarningKind, key: string): boolean {
    const rule = this.ruleOf(kind);
    if (rule === "ignore") return false;
    if (rule === "error") return true;
    return !said.get(rule === "warn" ? STDERR : rule)?.has(`${kind}:${key}`);
  }

  /**
   * Gives `notice` as its rule says: nothing, a thrown {@link UpsampleWarning}, one stderr line or
   * a handler call (both once per kind and key).
   *
   * @throws {UpsampleWarning} when the rule for its kind is `"error"`; whatever a handler throws
   */
  emit(notice: WarningNotice): void {
    const rule = this.ruleOf(notice.kind);
    if (rule === "ignore") return;
    const warning = new UpsampleWarning(notice.kind, notice.key, notice.message);
    if (rule === "error") throw warning;
    const destination = rule === "warn" ? STDERR : rule;
    let keys = said.get(destination);
    if (keys === undefined) said.set(destination, keys = new Set());
    const id = `${notice.kind}:${notice.key}`;
    if (keys.has(id)) return;
    keys.add(id);
    if (rule !== "warn") return rule(warning);
    console.warn(stderrLine(warning));
  }
}

/**
 * Forgets which warnings were said (every destination), so each is said again. For tests.
 *
 * @example
 * ```ts
 * import { forgetSaidWarnings } from "./warnings.ts";
 * forgetSaidWarnings();
 * ```
 */
export function forgetSaidWarnings(): void {
  said = new WeakMap();
}

/**
 * The stderr line of `warning`: its code, the message on one line, and how to silence it.
 *
 * @example
 * ```ts
 * import { stderrLine, UpsampleWarning } from "./warnings.ts";
 * stderrLine(new UpsampleWarning("CPU_FALLBACK", "", "no CANN")); // "@aclnn/upsample: [ACLNN_UPSAMPLE_CPU_FALLBACK] no CANN (..."
 * ```
 */
export function stderrLine(warning: UpsampleWarning): string {
  return `@aclnn/upsample: [${warning.code}] ${warning.message.replaceAll(/\s*\n\s*/g, "; ")} ` +
    `(said ${ONCE_PER[warning.kind]}; silence it with Device.open({ warnings: { ` +
    `${warning.kind}: "ignore" } }) or setDefaultWarnings)`;
}

function ruleIn(option: WarningsOption | undefined, kind: WarningKind): WarningRule | undefined {
  if (option === undefined) return undefined;
  return typeof option === "object" ? option[kind] : option;
}

// Whether `option` names `kind` (undefined: it leaves `kind` to the next level).
function namedIn(option: WarningsOption | undefined, kind: WarningKind): boolean | undefined {
  if (option === undefined) return undefined;
  if (typeof option !== "object") return false; // one rule for all kinds decides here
  return option[kind] === undefined ? undefined : true;
}
