/**
 * Process-wide ACL state for one loaded CANN: `aclInit` once (finalized after the last device closes),
 * which context is current on the JS thread, status checking with the runtime's own messages.
 *
 * @module
 */

import type { CannLibraries } from "./loader.ts";
import { AclError } from "./status.ts";

const ACL_ERROR_REPEAT_INITIALIZE = 100002;

const runtimes = new WeakMap<CannLibraries, CannRuntime>();

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

  /** Calls `aclInit` for the first user (an earlier init by someone else, 100002, is fine). */
  acquire(): void {
    if (this.#users === 0) {
      const status = this.libs.acl.aclInit(null);
      if (status !== 0 && status !== ACL_ERROR_REPEAT_INITIALIZE) {
        throw this.error(status, "aclInit");
      }
    }
    this.#users++;
  }

  /** Calls `aclFinalize` after the last user. */
  release(): void {
    if (this.#users > 0 && --this.#users === 0) {
      this.#context = 0n;
      this.libs.acl.aclFinalize();
    }
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
    const pointer = this.libs.acl.aclGetRecentErrMsg();
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
