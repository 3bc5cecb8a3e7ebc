/**
 * The doctor's report: a list of checks, each ok, informational, a warning or a failure; every
 * warning and failure carries the line saying how to fix it.
 *
 * @module
 */

/** How a check came out. */
export type CheckStatus = "ok" | "info" | "warn" | "fail";

/** One line of the report, with optional detail lines and the fix. */
export interface Check {
  /** How it came out. */
  readonly status: CheckStatus;
  /** One line saying what was checked and what was found. */
  readonly title: string;
  /** Further lines (paths tried, values). */
  readonly detail?: readonly string[];
  /** How to fix it (warnings and failures). */
  readonly fix?: string;
}

/**
 * Splits a message whose last line is `fix: ...` into its lines and that fix.
 *
 * @example
 * ```ts
 * import { splitFix } from "./report.ts";
 * splitFix("no CANN; tried:\n  /x: no such folder\nfix: set ACLNN_LIB_DIR");
 * // { lines: ["no CANN; tried:", "  /x: no such folder"], fix: "set ACLNN_LIB_DIR" }
 * ```
 */
export function splitFix(message: string): { lines: string[]; fix: string | undefined } {
  const lines = message.split("\n");
  const last = lines.at(-1)!;
  const inline = last.lastIndexOf("; fix: ");
  if (last.startsWith("fix: ")) return { lines: lines.slice(0, -1), fix: last.slice(5) };
  if (inline >= 0) {
    return { lines: [...lines.slice(0, -1), last.slice(0, inline)], fix: last.slice(inline + 7) };
  }
  return { lines, fix: undefined };
}

/**
 * A failure or warning check built from an error's message (its `fix:` line becomes the fix, else
 * `fallbackFix`).
 *
 * @example
 * ```ts
 * import { checkFromError } from "./report.ts";
 * checkFromError("fail", "NPU", new Error("gone\nfix: plug it in"), "").fix; // "plug it in"
 * ```
 */
export function checkFromError(
  status: "warn" | "fail",
  title: string,
  error: unknown,
  fallbackFix: string,
): Check {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const { lines, fix } = splitFix(message);
  const [first, ...rest] = lines;
  return { status, title: `${title}: ${first}`, detail: rest, fix: fix ?? fallbackFix };
}

const MARKS: Readonly<Record<CheckStatus, string>> = {
  ok: "[ok]  ",
  info: "[info]",
  warn: "[warn]",
  fail: "[FAIL]",
};

/**
 * The report as text: one line per check, its detail indented below, then its `fix:` line.
 *
 * @example
 * ```ts
 * import { formatReport } from "./report.ts";
 * formatReport([{ status: "fail", title: "no CANN", fix: "install it" }]);
 * // "[FAIL] no CANN\n       fix: install it"
 * ```
 */
export function formatReport(checks: readonly Check[]): string {
  const out: string[] = [];
  for (const check of checks) {
    out.push(`${MARKS[check.status]} ${check.title}`);
    for (const line of check.detail ?? []) out.push(`       ${line.trim()}`);
    if (check.fix && check.status !== "ok" && check.status !== "info") {
      out.push(`       fix: ${check.fix}`);
    }
  }
  return out.join("\n");
}

/**
 * 1 when a check failed, else 0.
 *
 * @example
 * ```ts
 * import { exitCodeOf } from "./report.ts";
 * exitCodeOf([{ status: "warn", title: "x", fix: "y" }]); // 0
 * ```
 */
export function exitCodeOf(checks: readonly Check[]): number {
  return checks.some((check) => check.status === "fail") ? 1 : 0;
}
