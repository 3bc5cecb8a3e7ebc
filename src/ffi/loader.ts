/**
 * Finds and opens CANN's three libraries, lazily and once per folder per process.
 *
 * Search order: the `libDir` option, `ACLNN_LIB_DIR`, `$ASCEND_HOME_PATH/lib64`,
 * `/usr/local/Ascend/ascend-toolkit/latest/lib64`, `/usr/local/Ascend/cann/lib64`, then the system loader
 * (bare names, resolved through `LD_LIBRARY_PATH` as set by CANN's `set_env.sh`). In a folder the
 * libraries are opened by absolute path in dependency order, so their `DT_NEEDED` entries resolve to the
 * copies already loaded even though a running process cannot change its own `LD_LIBRARY_PATH`.
 *
 * @module
 */

import {
  ACL_SYMBOLS,
  type AclLib,
  NNOPBASE_SYMBOLS,
  type NnopbaseLib,
  OPAPI_SYMBOLS,
  type OpapiLib,
} from "./symbols.ts";
import { LibraryLoadError } from "./status.ts";

/** The three opened libraries. */
export interface CannLibraries {
  /** Where they were found (`"(system loader)"` for bare names). */
  readonly dir: string;
  /** Path (or name) of the opened operator library, for messages. */
  readonly opapiPath: string;
  /** libascendcl symbols. */
  readonly acl: AclLib;
  /** libnnopbase symbols. */
  readonly nnopbase: NnopbaseLib;
  /** libopapi symbols (each may be null). */
  readonly opapi: OpapiLib;
}

const ACL_NAMES = ["libascendcl.so", "libacl_rt.so"];
const NNOPBASE_NAMES = ["libnnopbase.so"];
const OPAPI_NAMES = ["libopapi.so", "libopapi_cv.so"];
const SYSTEM = "(system loader)";

// Opened libraries are never closed: CANN keeps threads and global state alive until process exit.
const opened = new Map<string, CannLibraries>();

function envVar(name: string, attempts: string[]): string | undefined {
  try {
    return Deno.env.get(name) || undefined;
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) {
      attempts.push(`$${name}: not readable without --allow-env`);
      return undefined;
    }
    throw error;
  }
}

/**
 * The folders to try, in order, for a given `libDir` option.
 *
 * @example
 * ```ts
 * import { candidateDirs } from "./loader.ts";
 * candidateDirs("/opt/cann/lib64", []).at(-1); // "(system loader)"
 * ```
 */
export function candidateDirs(libDir: string | undefined, attempts: string[]): string[] {
  const dirs: string[] = [];
  if (libDir) dirs.push(libDir);
  const fromEnv = envVar("ACLNN_LIB_DIR", attempts);
  if (fromEnv) dirs.push(fromEnv);
  const home = envVar("ASCEND_HOME_PATH", attempts);
  if (home) dirs.push(`${home.replace(/\/+$/, "")}/lib64`);
  dirs.push(
    "/usr/local/Ascend/ascend-toolkit/latest/lib64",
    "/usr/local/Ascend/cann/lib64",
    SYSTEM,
  );
  return [...new Set(dirs)];
}

function openFirst<S extends Deno.ForeignLibraryInterface>(
  dir: string,
  names: readonly string[],
  symbols: S,
  attempts: string[],
): { lib: Deno.DynamicLibrary<S>; path: string } | null {
  for (const name of names) {
    const path = dir === SYSTEM ? name : `${dir.replace(/\/+$/, "")}/${name}`;
    try {
      return { lib: Deno.dlopen(path, symbols), path };
    } catch (error) {
      if (error instanceof Deno.errors.NotCapable) throw error;
      attempts.push(`${path}: ${(error as Error).message.split("\n")[0]}`);
    }
  }
  return null;
}

function openDir(dir: string, attempts: string[]): CannLibraries | null {
  const acl = openFirst(dir, ACL_NAMES, ACL_SYMBOLS, attempts);
  if (!acl) return null;
  const nnopbase = openFirst(dir, NNOPBASE_NAMES, NNOPBASE_SYMBOLS, attempts);
  if (!nnopbase) {
    acl.lib.close();
    return null;
  }
  const opapi = openFirst(dir, OPAPI_NAMES, OPAPI_SYMBOLS, attempts);
  if (!opapi) {
    nnopbase.lib.close();
    acl.lib.close();
    return null;
  }
  return {
    dir,
    opapiPath: opapi.path,
    acl: acl.lib.symbols,
    nnopbase: nnopbase.lib.symbols,
    opapi: opapi.lib.symbols,
  };
}

/**
 * Opens CANN from the first folder of the search list that holds all three libraries.
 *
 * @throws {LibraryLoadError} listing every path tried and why it failed
 * @throws {Deno.errors.NotCapable} without `--allow-ffi`
 * @example
 * ```ts ignore
 * import { loadCann } from "./loader.ts";
 * const cann = loadCann("/usr/local/Ascend/ascend-toolkit/latest/lib64");
 * console.log(cann.dir);
 * ```
 */
export function loadCann(libDir?: string): CannLibraries {
  const attempts: string[] = [];
  return loadCannFrom(candidateDirs(libDir, attempts), attempts);
}

/**
 * Opens CANN from the first of `dirs` that holds all three libraries (`"(system loader)"` for bare names).
 *
 * @throws {LibraryLoadError} listing `attempts` plus every path tried here
 * @example
 * ```ts ignore
 * import { loadCannFrom } from "./loader.ts";
 * loadCannFrom(["/opt/cann/lib64"]);
 * ```
 */
export function loadCannFrom(dirs: readonly string[], attempts: string[] = []): CannLibraries {
  for (const dir of dirs) {
    const cached = opened.get(dir);
    if (cached) return cached;
    const libs = openDir(dir, attempts);
    if (libs) {
      opened.set(dir, libs);
      return libs;
    }
  }
  throw new LibraryLoadError(attempts);
}
