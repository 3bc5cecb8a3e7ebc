/**
 * Finds and opens CANN's libraries, lazily and once per folder per process.
 *
 * The search ({@link searchPlan}): the `libDir` option alone when given, else `$ACLNN_LIB_DIR` alone
 * when set (both are explicit choices, so neither falls through to another CANN), else the CANN roots
 * CANN's own samples probe (`hicann/runtime` `example/common/resolve_cann_env.sh`): `$ASCEND_HOME_PATH`,
 * `$ASCEND_INSTALL_PATH`, `$HOME/Ascend/cann`, `$HOME/Ascend/ascend-toolkit/latest`,
 * `/usr/local/Ascend/cann`, `/usr/local/Ascend/ascend-toolkit/latest`, `/opt/Ascend/cann`, each as
 * `<root>/lib64` (or `<root>/<arch>-linux/lib64`), then the system loader (bare names, resolved through
 * `LD_LIBRARY_PATH` as set by CANN's `set_env.sh`).
 *
 * In a folder the libraries are opened by absolute path in dependency order, so their `DT_NEEDED`
 * entries resolve to the copies already loaded although a running process cannot change its own
 * `LD_LIBRARY_PATH`. The operators come from the first of `libopapi.so` (the all-in-one library of
 * older CANN) and `libopapi_cv.so` (newer CANN splits the operators by repository, the upsample ops
 * living in ops-cv: `hicann/ops-cv` `docs/zh/op_api_list.md`) that has any upsample operator: a
 * `libopapi.so` that loads without them does not end the search.
 *
 * @module
 */

import {
  ACL_SYMBOLS,
  type AclLib,
  CAST_SYMBOLS,
  type CastLib,
  NNOPBASE_SYMBOLS,
  type NnopbaseLib,
  OPAPI_SYMBOLS,
  type OpapiLib,
} from "./symbols.ts";
import { LibraryLoadError } from "./status.ts";
import {
  allowEnvFlag,
  type SearchCandidate,
  type SearchPlan,
  searchPlan,
  SYSTEM_LOADER,
  unreadableEnvSummary,
} from "./search_plan.ts";

export {
  allowEnvFlag,
  type SearchCandidate,
  type SearchPlan,
  searchPlan,
  SYSTEM_LOADER,
  unreadableEnvSummary,
};

/** The opened libraries. */
export interface CannLibraries {
  /** Folder they were found in (`"(system loader)"` for bare names). */
  readonly dir: string;
  /** Where that folder came from, e.g. `"libDir"`, `"$ASCEND_HOME_PATH"`, `"standard path"`. */
  readonly source: string;
  /** Path (or name) of the opened runtime library. */
  readonly aclPath: string;
  /** Path (or name) of the opened aclnn base library. */
  readonly nnopbasePath: string;
  /** Path (or name) of the opened operator library, for messages. */
  readonly opapiPath: string;
  /** libascendcl symbols. */
  readonly acl: AclLib;
  /** libnnopbase symbols. */
  readonly nnopbase: NnopbaseLib;
  /** libopapi symbols (each may be null). */
  readonly opapi: OpapiLib;
  /**
   * aclnnCast, from the operator library or else the first of `libopapi.so`, `libopapi_math.so`
   * in the same folder that has it; null when none does (the deterministic bilinear route of
   * 16-bit dtypes needs it).
   */
  readonly cast: { readonly path: string; readonly symbols: CastLib } | null;
  /**
   * Whether these are the host emulation of CANN (`native/`), told by a symbol only the emulation
   * exports (`aclemuLaunchCount`); its SoC name is a real one, so the name alone cannot tell.
   */
  readonly emulated: boolean;
}

const ACL_NAMES = ["libascendcl.so", "libacl_rt.so"];
const NNOPBASE_NAMES = ["libnnopbase.so"];
const OPAPI_NAMES = ["libopapi.so", "libopapi_cv.so"];
const CAST_NAMES = ["libopapi.so", "libopapi_math.so"];
const UPSAMPLE_PHASE1 = Object.keys(OPAPI_SYMBOLS).filter((name) => name.endsWith("WorkspaceSize"));
const LIBRARIES = "libascendcl.so, libnnopbase.so and libopapi.so (or libopapi_cv.so)";
/** The fix for "nothing found" when the user made no explicit choice. */
export const SET_ENV_FIX = "source your CANN's set_env.sh (e.g. `source " +
  "/usr/local/Ascend/ascend-toolkit/set_env.sh` or `source /usr/local/Ascend/cann/set_env.sh`), or " +
  `set ACLNN_LIB_DIR to the folder holding ${LIBRARIES}`;

// Opened libraries are never closed: CANN keeps threads and global state alive until process exit.
const opened = new Map<string, CannLibraries>();

/**
 * Throws `NotCapable` unless `--allow-ffi` is granted unscoped: a path-scoped grant (or one given at a
 * prompt) lets `Deno.dlopen` through, but Deno's pointer APIs (`Deno.UnsafePointer`,
 * `Deno.UnsafePointerView`), which the binding needs for strings and handles, then throw.
 *
 * @throws {Deno.errors.NotCapable} naming the flag to use
 * @example
 * ```ts
 * import { checkFfiPermission } from "./loader.ts";
 * try {
 *   checkFfiPermission();
 * } catch (error) {
 *   console.log((error as Error).message);
 * }
 * ```
 */
export function checkFfiPermission(): void {
  if (Deno.permissions.querySync({ name: "ffi" }).state === "granted") return;
  throw new Deno.errors.NotCapable(
    "the NPU path needs --allow-ffi without a path: Deno's pointer APIs (Deno.UnsafePointer, " +
      "Deno.UnsafePointerView) refuse a path-scoped --allow-ffi=<path> and a grant given at a " +
      "prompt\nfix: run with --allow-ffi (plus --allow-env --allow-read for the library search)",
  );
}

function canRead(path: string): boolean {
  return Deno.permissions.querySync({ name: "read", path }).state === "granted";
}

// "exists" | "missing" | "unknown" (no read permission: let the loader tell).
function probe(path: string, directory: boolean): "exists" | "missing" | "unknown" {
  if (!canRead(path)) return "unknown";
  try {
    const info = Deno.statSync(path);
    return directory && !info.isDirectory ? "missing" : "exists";
  } catch {
    return "missing";
  }
}

/**
 * The loader's message without Deno's repeated "Could not open library:" prefixes and the path.
 *
 * @example
 * ```ts
 * import { loaderReason } from "./loader.ts";
 * loaderReason("Could not open library: Could not open library: /x/a.so: invalid ELF header", "/x/a.so");
 * // "invalid ELF header"
 * ```
 */
export function loaderReason(message: string, path: string): string {
  let reason = message.split("\n")[0];
  while (reason.startsWith("Could not open library: ")) {
    reason = reason.slice("Could not open library: ".length);
  }
  if (reason.startsWith(`${path}: `)) reason = reason.slice(path.length + 2);
  return reason;
}

function joinPath(dir: string, name: string): string {
  return dir === SYSTEM_LOADER ? name : `${dir.replace(/\/+$/, "")}/${name}`;
}

interface Opened<S extends Deno.ForeignLibraryInterface> {
  readonly lib: Deno.DynamicLibrary<S>;
  readonly path: string;
}

// Opens the first of `names` in `dir`; records one line per failure (one line when none exists).
function openFirst<S extends Deno.ForeignLibraryInterface>(
  dir: string,
  names: readonly string[],
  symbols: S,
  attempts: string[],
  accept: (lib: Deno.DynamicLibrary<S>) => string | null = () => null,
): Opened<S> | null {
  const missing: string[] = [];
  for (const name of names) {
    const path = joinPath(dir, name);
    if (dir !== SYSTEM_LOADER && probe(path, false) === "missing") {
      missing.push(path);
      continue;
    }
    let lib: Deno.DynamicLibrary<S>;
    try {
      lib = Deno.dlopen(path, symbols);
    } catch (error) {
      if (error instanceof Deno.errors.NotCapable) throw error;
      const reason = loaderReason((error as Error).message, path);
      if (/cannot open shared object file: No such file/.test(reason)) missing.push(path);
      else attempts.push(`${path}: ${reason}`);
      continue;
    }
    const refusal = accept(lib);
    if (refusal === null) return { lib, path };
    attempts.push(`${path}: ${refusal}`);
    lib.close();
  }
  if (missing.length > 0) {
    const [first, ...others] = missing;
    const also = others.map((path) => path.slice(path.lastIndexOf("/") + 1));
    const nor = also.length ? ` (nor ${also.join(", ")})` : "";
    attempts.push(
      dir === SYSTEM_LOADER
        ? `${first}${nor}: not found by the system loader (LD_LIBRARY_PATH, ld.so.cache)`
        : `${first}: no such file${nor}`,
    );
  }
  return null;
}

function hasUpsampleOps(lib: Deno.DynamicLibrary<typeof OPAPI_SYMBOLS>): string | null {
  const symbols = lib.symbols as unknown as Record<string, unknown>;
  return UPSAMPLE_PHASE1.some((name) => symbols[name] !== null)
    ? null
    : "loads, but has none of the upsample operators (aclnnUpsample*Backward)";
}

// Where CANN keeps its libraries under a root (`.../ascend-toolkit/latest`, `.../cann`, or the
// toolkit folder above `latest`): `lib64`, which CANN 8 makes a link to `<arch>-linux/lib64`.
function libraryFolders(root: string): string[] {
  const base = root.replace(/\/+$/, "") || "/";
  const arch = `${Deno.build.arch}-linux/lib64`;
  return [`${base}/lib64`, `${base}/${arch}`, `${base}/latest/lib64`, `${base}/latest/${arch}`];
}

function holdsRuntime(dir: string): "exists" | "missing" | "unknown" {
  const states = ACL_NAMES.map((name) => probe(joinPath(dir, name), false));
  return states.includes("exists") ? "exists" : states.includes("unknown") ? "unknown" : "missing";
}

// A folder given explicitly (libDir, $ACLNN_LIB_DIR) that is a CANN root rather than its library
// folder: the library folder below it, or `dir` itself when it holds the runtime or none is found.
function underRoot(dir: string): string {
  if (dir === SYSTEM_LOADER || holdsRuntime(dir) !== "missing") return dir;
  return libraryFolders(dir).find((sub) => holdsRuntime(sub) === "exists") ?? dir;
}

function openFolder(candidate: SearchCandidate, attempts: string[]): CannLibraries | null {
  const chosen = candidate.source === "libDir" || candidate.source.startsWith("$");
  // A folder the user chose (libDir, $ACLNN_LIB_DIR) may be a CANN root rather than its lib64.
  const given = chosen && candidate.root === undefined;
  let dir = given ? underRoot(candidate.dir) : candidate.dir;
  const from = chosen ? ` (from ${candidate.source})` : "";
  if (dir !== SYSTEM_LOADER) {
    if (candidate.root !== undefined && probe(candidate.root, true) === "missing") {
      attempts.push(`${candidate.root}: no such folder${from}`);
      return null;
    }
    if (probe(dir, true) === "missing") {
      // CANN 8 keeps the real folder under <root>/<arch>-linux/; lib64 is usually a link to it.
      const arch = candidate.root && `${candidate.root}/${Deno.build.arch}-linux/lib64`;
      if (!arch || probe(arch, true) !== "exists") {
        attempts.push(`${dir}: no such folder${from}`);
        return null;
      }
      dir = arch;
    }
  }
  const acl = openFirst(dir, ACL_NAMES, ACL_SYMBOLS, attempts);
  if (!acl) {
    if (given && holdsRuntime(dir) === "missing") attempts[attempts.length - 1] += rootHint(dir);
    return null;
  }
  const nnopbase = openFirst(dir, NNOPBASE_NAMES, NNOPBASE_SYMBOLS, attempts);
  const opapi = nnopbase && openFirst(dir, OPAPI_NAMES, OPAPI_SYMBOLS, attempts, hasUpsampleOps);
  if (!nnopbase || !opapi) {
    nnopbase?.lib.close();
    acl.lib.close();
    return null;
  }
  return {
    dir,
    source: candidate.source,
    aclPath: acl.path,
    nnopbasePath: nnopbase.path,
    opapiPath: opapi.path,
    acl: acl.lib.symbols,
    nnopbase: nnopbase.lib.symbols,
    opapi: opapi.lib.symbols,
    cast: openCast(dir, opapi.path),
    emulated: isEmulation(acl.path),
  };
}

// aclnnCast: the operator library first (already loaded: dlopen only looks it up), then the others.
function openCast(dir: string, opapiPath: string): CannLibraries["cast"] {
  const names = [opapiPath, ...CAST_NAMES.map((name) => joinPath(dir, name))];
  for (const path of new Set(names)) {
    if (dir !== SYSTEM_LOADER && probe(path, false) === "missing") continue;
    let lib: Deno.DynamicLibrary<typeof CAST_SYMBOLS>;
    try {
      lib = Deno.dlopen(path, CAST_SYMBOLS);
    } catch {
      continue; // not loadable: the route of 16-bit dtypes reports aclnnCast as missing
    }
    if (lib.symbols.aclnnCastGetWorkspaceSize !== null && lib.symbols.aclnnCast !== null) {
      return { path, symbols: lib.symbols };
    }
    lib.close();
  }
  return null;
}

// Said after "no libascendcl.so" in a folder given explicitly: the CANN layout was looked at too.
function rootHint(dir: string): string {
  const base = dir.replace(/\/+$/, "");
  return ` (nor in ${base}/lib64, ${base}/${Deno.build.arch}-linux/lib64 or ${base}/latest/lib64, ` +
    "where a CANN root keeps it)";
}

const EMULATION_SYMBOLS = {
  /** int64_t aclemuLaunchCount(void): exported by the host emulation (`native/`) only. */
  aclemuLaunchCount: { parameters: [], result: "i64", optional: true },
} as const satisfies Deno.ForeignLibraryInterface;

function isEmulation(aclPath: string): boolean {
  const lib = Deno.dlopen(aclPath, EMULATION_SYMBOLS); // already loaded: this only looks it up
  try {
    return lib.symbols.aclemuLaunchCount !== null;
  } finally {
    lib.close();
  }
}

/** The fix line of a failed search. */
function fixFor(plan: SearchPlan): string {
  if (plan.unreadableEnv.length > 0) {
    const read = Deno.permissions.querySync({ name: "read" }).state === "granted"
      ? ""
      : " and --allow-read";
    return `run with ${allowEnvFlag(plan.unreadableEnv)} (or --allow-env)${read}, so the search ` +
      `can read them; then, if CANN is still not found, ${SET_ENV_FIX}`;
  }
  if (plan.exclusive === "libDir") {
    return `pass as libDir the folder holding ${LIBRARIES} (a CANN's lib64, e.g. ` +
      "/usr/local/Ascend/ascend-toolkit/latest/lib64)";
  }
  if (plan.exclusive === "ACLNN_LIB_DIR") {
    return `set ACLNN_LIB_DIR to the folder holding ${LIBRARIES}, or unset it to search CANN's ` +
      "standard places";
  }
  return SET_ENV_FIX;
}

/** What a search found: the plan, each failed path with its reason, and the libraries or the error. */
export interface CannDiscovery {
  /** What was searched. */
  readonly plan: SearchPlan;
  /** One line per path that failed, in search order (also before the folder that worked). */
  readonly attempts: readonly string[];
  /** The opened libraries, or undefined when none were found. */
  readonly libs: CannLibraries | undefined;
  /** Why nothing was found (with the fix), or undefined. */
  readonly error: LibraryLoadError | undefined;
}

/**
 * Searches CANN for a `libDir` option as {@link loadCann} does, and reports what it found instead of
 * throwing when nothing was (`deno task doctor` shows all of it).
 *
 * @throws {Deno.errors.NotCapable} without an unscoped `--allow-ffi`
 * @example
 * ```ts ignore
 * import { discoverCann } from "./loader.ts";
 * const { libs, attempts } = discoverCann();
 * console.log(libs?.dir ?? "no CANN", attempts);
 * ```
 */
export function discoverCann(libDir?: string): CannDiscovery {
  checkFfiPermission();
  const plan = searchPlan(libDir);
  const attempts: string[] = [];
  for (const candidate of plan.candidates) {
    const libs = opened.get(candidate.dir) ?? openFolder(candidate, attempts);
    if (libs) {
      opened.set(candidate.dir, libs);
      return { plan, attempts, libs, error: undefined };
    }
  }
  const summary = unreadableEnvSummary(plan.unreadableEnv);
  const error = new LibraryLoadError(attempts, { fix: fixFor(plan), summary });
  return { plan, attempts, libs: undefined, error };
}

/**
 * Opens CANN for a `libDir` option: that folder alone, else the search of {@link searchPlan}.
 *
 * @throws {LibraryLoadError} listing every path tried with its reason, and the fix
 * @throws {Deno.errors.NotCapable} without an unscoped `--allow-ffi`
 * @example
 * ```ts ignore
 * import { loadCann } from "./loader.ts";
 * const cann = loadCann("/usr/local/Ascend/ascend-toolkit/latest/lib64");
 * console.log(cann.dir, cann.opapiPath);
 * ```
 */
export function loadCann(libDir?: string): CannLibraries {
  const { libs, error } = discoverCann(libDir);
  if (error) throw error;
  return libs!;
}

/**
 * Opens CANN from the first of `dirs` that holds all its libraries (`"(system loader)"` for bare
 * names); no other folder is tried.
 *
 * @throws {LibraryLoadError} listing every path tried with its reason
 * @example
 * ```ts ignore
 * import { loadCannFrom } from "./loader.ts";
 * loadCannFrom(["/opt/cann/lib64"]);
 * ```
 */
export function loadCannFrom(dirs: readonly string[]): CannLibraries {
  checkFfiPermission();
  const attempts: string[] = [];
  for (const dir of dirs) {
    const libs = opened.get(dir) ?? openFolder({ dir, source: "given" }, attempts);
    if (libs) {
      opened.set(dir, libs);
      return libs;
    }
  }
  throw new LibraryLoadError(attempts, { fix: `list the folder holding ${LIBRARIES}` });
}
