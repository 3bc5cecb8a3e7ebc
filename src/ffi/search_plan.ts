/**
 * Where to search for CANN ({@link searchPlan}): the `libDir` option alone when given, else
 * `$ACLNN_LIB_DIR` alone when set, else the CANN roots CANN's own samples probe, then the system
 * loader; and what could not be read of the environment, with the flag that grants it.
 *
 * @module
 */

/** One folder to try. */
export interface SearchCandidate {
  /** The folder (`"(system loader)"` for bare names). */
  readonly dir: string;
  /** Where it came from, e.g. `"$ASCEND_HOME_PATH"`. */
  readonly source: string;
  /** A CANN root this folder belongs to: reported as missing instead of the folder. */
  readonly root?: string;
}

/** What to search for a `libDir` option, and what the environment asked for. */
export interface SearchPlan {
  /** The folders to try, in order. */
  readonly candidates: readonly SearchCandidate[];
  /** `"libDir"` or `"ACLNN_LIB_DIR"` when one folder was chosen explicitly (no other is tried). */
  readonly exclusive: "libDir" | "ACLNN_LIB_DIR" | undefined;
  /** What points at a CANN (`libDir`, `$ACLNN_LIB_DIR`, `$ASCEND_HOME_PATH`), if anything. */
  readonly requestedBy: string | undefined;
  /**
   * Environment variables the search reads but could not (no `--allow-env` for them): `ACLNN_LIB_DIR`,
   * `ASCEND_HOME_PATH`, `ASCEND_INSTALL_PATH`, `HOME`.
   */
  readonly unreadableEnv: readonly string[];
}

/** Name of the pseudo-folder "bare library names, found by the system loader". */
export const SYSTEM_LOADER = "(system loader)";

function readEnv(name: string, unreadable: string[]): string | undefined {
  // Query first: a plain Deno.env.get would prompt on a terminal, which a library must not do.
  if (Deno.permissions.querySync({ name: "env", variable: name }).state !== "granted") {
    unreadable.push(name);
    return undefined;
  }
  return Deno.env.get(name) || undefined;
}

/**
 * The folders to try for a `libDir` option, in order, with what the environment asked for.
 *
 * @example
 * ```ts
 * import { searchPlan } from "./search_plan.ts";
 * searchPlan("/opt/cann/lib64").candidates.length; // 1: libDir is exclusive
 * ```
 */
export function searchPlan(libDir?: string): SearchPlan {
  const unreadableEnv: string[] = [];
  const fromEnv = readEnv("ACLNN_LIB_DIR", unreadableEnv);
  const home = readEnv("ASCEND_HOME_PATH", unreadableEnv);
  if (libDir) {
    return {
      candidates: [{ dir: libDir, source: "libDir" }],
      exclusive: "libDir",
      requestedBy: "the libDir option",
      unreadableEnv,
    };
  }
  if (fromEnv) {
    return {
      candidates: [{ dir: fromEnv, source: "$ACLNN_LIB_DIR" }],
      exclusive: "ACLNN_LIB_DIR",
      requestedBy: "$ACLNN_LIB_DIR",
      unreadableEnv,
    };
  }
  const install = readEnv("ASCEND_INSTALL_PATH", unreadableEnv);
  const userHome = readEnv("HOME", unreadableEnv);
  const roots: Array<[string | undefined, string]> = [
    [home, "$ASCEND_HOME_PATH"],
    [install, "$ASCEND_INSTALL_PATH"],
    [userHome && `${userHome}/Ascend/cann`, "standard path"],
    [userHome && `${userHome}/Ascend/ascend-toolkit/latest`, "standard path"],
    ["/usr/local/Ascend/cann", "standard path"],
    ["/usr/local/Ascend/ascend-toolkit/latest", "standard path"],
    ["/opt/Ascend/cann", "standard path"],
  ];
  const seen = new Set<string>();
  const candidates: SearchCandidate[] = [];
  for (const [root, source] of roots) {
    if (root === undefined) continue;
    const trimmed = root.replace(/\/+$/, "") || "/";
    if (seen.has(trimmed)) continue;
    seen.add(trimmed);
    candidates.push({ dir: `${trimmed}/lib64`, source, root: trimmed });
  }
  candidates.push({ dir: SYSTEM_LOADER, source: "system loader" });
  return {
    candidates,
    exclusive: undefined,
    requestedBy: home ? "$ASCEND_HOME_PATH" : undefined,
    unreadableEnv,
  };
}

/**
 * The first line of a failed search whose environment could not be read (the variables, what they
 * decide, and the flag that grants them), or undefined when it all was read.
 *
 * @example
 * ```ts
 * import { unreadableEnvSummary } from "./search_plan.ts";
 * unreadableEnvSummary(["ACLNN_LIB_DIR", "HOME"]);
 * // "could not load CANN: ACLNN_LIB_DIR, HOME could not be read (no --allow-env for them), ..."
 * ```
 */
export function unreadableEnvSummary(unreadable: readonly string[]): string | undefined {
  if (unreadable.length === 0) return undefined;
  return `could not load CANN: ${unreadable.join(", ")} could not be read (no --allow-env for ` +
    "them), so a CANN they name was not searched";
}

/**
 * The flag granting the environment variables the search reads, e.g.
 * `--allow-env=ACLNN_LIB_DIR,ASCEND_HOME_PATH,ASCEND_INSTALL_PATH,HOME`.
 *
 * @example
 * ```ts
 * import { allowEnvFlag } from "./search_plan.ts";
 * allowEnvFlag(["ACLNN_LIB_DIR", "HOME"]); // "--allow-env=ACLNN_LIB_DIR,HOME"
 * ```
 */
export function allowEnvFlag(unreadable: readonly string[]): string {
  return `--allow-env=${unreadable.join(",")}`;
}
