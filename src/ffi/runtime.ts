/**
 * Process-wide ACL state for one loaded CANN: `aclInit` once (finalized after the last device closes,
 * and only when our `aclInit` was the one that initialized ACL), which context is current on the JS
 * thread, status checking with the runtime's own messages, and the optional runtime symbols.
 *
 * @module
 */

import type { CannLibraries } from "./loader.ts";
import { AclError, MissingSymbolError } from "./status.ts";
import type { AclLib } from "./symbols.ts";

const ACL_ERROR_REPEAT_INITIALIZE = 100002;

/** Optional `libascendcl` functions, and what a caller is told when one is missing. */
const OPTIONAL_NEEDS = {
  aclrtCtxSetSysParamOpt: "deterministic mode needs the context system parameters, which CANN " +
    "documents since at least 8.0 (upgrade CANN, or leave deterministic mode off)",
  aclrtCtxGetSysParamOpt: "reading deterministic mode needs the context system parameters, which " +
    "CANN documents since at least 8.0",
  aclrtGetMemInfo: "memoryInfo() needs the runtime's device memory query",
} as const;

/** The optional runtime functions whose absence is reported with {@link CannRuntime.require}. */
export type OptionalAclSymbol = keyof typeof OPTIONAL_NEEDS;

const runtimes = new WeakMap<CannLibraries, CannRuntime>();
// Users of every runtime in the process, and runtimes whose aclInit initialized ACL and whose last
// user is gone. Two library folders may share one runtime (a variant folder of symlinks, or the same
// CANN reached twice): finalizing when one folder's last device closes would pull ACL from under the
// other's, so the finalize waits until no runtime has a user.
let processUsers = 0;
const pendingFinalize = new Set<CannRuntime>();

/**
 * Shared runtime bookkeeping of one loaded CANN.
 *
 * @example
 * ```ts ignore
 * import { loadCann } from "./loader.ts";
 * import { CannRuntime } from "./runtime.ts";
 * const runtime = CannRuntime.of(loadCann());
 * runtime.acquire();
 * runtime.release();
 * ```
 */
export class CannRuntime {
  #users = 0;
  #context = 0n;
  // Whether our aclInit initialized ACL (0). A 100002 means another in-process ACL user did, and
  // finalizing would tear the runtime down under it.
  #ownsInit = false;
  /** Scratch out-parameter, reused (one 64-bit slot). */
  readonly out64: BigUint64Array = new BigUint64Array(1);
  /** Second scratch out-parameter (executor handle). */
  readonly outExecutor: BigUint64Array = new BigUint64Array(1);

  private constructor(
    /** The libraries. */
    readonly libs: CannLibraries,
  ) {}

  /** The runtime of a loaded CANN (one per process and folder). */
  static of(libs: CannLibraries): CannRuntime {
    let runtime = runtimes.get(libs);
    if (!runtime) {
      runtime = new CannRuntime(libs);
      runtimes.set(libs, runtime);
    }
    return runtime;
  }

  /** Whether ACL was initialized by this library's `aclInit` (and so is finalized by it). */
  get ownsInit(): boolean {
    return this.#ownsInit;
  }

  /**
   * Calls `aclInit` for the first user. An earlier init by another in-process ACL user (100002) is
   * fine: ACL is then theirs, and {@link CannRuntime.release} leaves it initialized.
   */
  acquire(): void {
    if (this.#users === 0 && !pendingFinalize.delete(this)) {
      const status = this.libs.acl.aclInit(null);
      if (status !== 0 && status !== ACL_ERROR_REPEAT_INITIALIZE) {
        throw this.error(status, "aclInit");
      }
      this.#ownsInit = status === 0;
    }
    this.#users++;
    processUsers++;
  }

  /**
   * Drops a user. `aclFinalize` is called only for an `aclInit` of ours that answered 0, and only once
   * no runtime in the process has a user left.
   */
  release(): void {
    if (this.#users === 0) return;
    processUsers--;
    if (--this.#users === 0) {
      this.#context = 0n;
      if (this.#ownsInit) pendingFinalize.add(this);
    }
    if (processUsers > 0) return;
    for (const runtime of pendingFinalize) {
      runtime.#ownsInit = false;
      runtime.libs.acl.aclFinalize();
    }
    pendingFinalize.clear();
  }

  /**
   * An optional runtime function, or a `MissingSymbolError` naming it, what needs it and the CANN
   * release that has it.
   */
  require<K extends OptionalAclSymbol>(symbol: K): NonNullable<AclLib[K]> {
    const fn = this.libs.acl[symbol];
    if (fn === null) {
      throw new MissingSymbolError(
        symbol,
        `the CANN runtime in ${this.libs.dir}`,
        OPTIONAL_NEEDS[symbol],
      );
    }
    return fn as NonNullable<AclLib[K]>;
  }

  /** Makes `context` current on this thread when it is not already (ACL contexts are per thread). */
  activate(context: bigint): void {
    if (this.#context === context) return;
    this.check(this.libs.acl.aclrtSetCurrentContext(context), "aclrtSetCurrentContext");
    this.#context = context;
  }

  /** Records that `aclrtSetDevice` made `context` current. */
  noteCurrent(context: bigint): void {
    this.#context = context;
  }

  /** Forgets a context that is being destroyed. */
  forget(context: bigint): void {
    if (this.#context === context) this.#context = 0n;
  }

  /** The runtime's message for the last failure on this thread (`aclGetRecentErrMsg`), or "". */
  recentMessage(): string {
    const recent = this.libs.acl.aclGetRecentErrMsg;
    if (recent === null) return ""; // an older runtime without it: the status code is all there is
    const pointer = recent();
    if (pointer === null) return "";
    return new Deno.UnsafePointerView(pointer).getCString().trim();
  }

  /** An `AclError` for a failed call, with the runtime's message. */
  error(code: number, api: string): AclError {
    return new AclError(code, api, this.recentMessage());
  }

  /** Throws an `AclError` unless `code` is 0. */
  check(code: number, api: string): void {
    if (code !== 0) throw this.error(code, api);
  }
}
