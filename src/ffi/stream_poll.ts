/**
 * A bounded spin before a worker-thread sync. `await device.synchronize()` on an NPU hands
 * `aclrtSynchronizeStream` to a worker thread (Deno's `nonblocking` FFI call) so the event loop is never
 * blocked for long; that hand-off and the wake-up after it cost ~10-40 µs, more than a small op takes
 * on the device. So the backend first records an ACL event on the stream and polls it from the JS
 * thread (`aclrtQueryEventStatus`) for at most {@link SYNC_SPIN_MS}; when the stream reaches it in that
 * time, the sync is completed on the JS thread (the stream has drained up to the event, so
 * `aclrtSynchronizeStream` returns at once, with the stream's status as before). Otherwise the wait goes
 * to the worker thread as it always did. A synchronize therefore blocks the event loop for at most that
 * bound (plus one query), never for the duration of device work.
 *
 * Between polls the thread yields its CPU (`sched_yield`): on a host where the device's work itself
 * needs a CPU (the emulation's stream thread, queued behind the polling thread), a pure spin kept it
 * from running for the whole bound in ~1/3 of the syncs measured; with the yield, ~1 in 2000. Time the
 * OS gives other threads during a yield counts against the bound, as any preemption would. Without
 * `libc.so.6` (or with `--allow-ffi` not covering it) the poll spins without yielding.
 *
 * The event is created on the first poll and destroyed with the backend. A runtime without the event
 * calls (they are optional symbols), or one that refuses to create the event, is never polled; a failed
 * record or query just skips the spin for that sync (the worker-thread sync reports what is wrong).
 *
 * Prototypes: CANN `include/external/acl/acl_rt.h` (`aclrtCreateEvent`, `aclrtRecordEvent`,
 * `aclrtQueryEventStatus`, `aclrtDestroyEvent`; `aclrtEventRecordedStatus` is an enum,
 * `ACL_EVENT_RECORDED_STATUS_COMPLETE` = 1).
 *
 * @module
 */

import type { CannRuntime } from "./runtime.ts";
import { LIBC_SYMBOLS } from "./symbols.ts";

/**
 * How long a synchronize may poll the stream on the JS thread before it hands the wait to a worker
 * thread, in milliseconds (50 µs: a small op's launch-to-completion on this path takes ~5-15 µs).
 */
export const SYNC_SPIN_MS = 0.05;

/** `ACL_EVENT_RECORDED_STATUS_COMPLETE` (acl_rt.h). */
const RECORDED_COMPLETE = 1;

const LIBC = "libc.so.6";
// sched_yield, opened on first use (null: not available or not permitted: polls spin).
let yieldCpu: (() => number) | null | undefined;

function yielder(): (() => number) | null {
  if (yieldCpu !== undefined) return yieldCpu;
  yieldCpu = null;
  try {
    // Never prompt: only when --allow-ffi already covers it.
    if (Deno.permissions.querySync({ name: "ffi", path: LIBC }).state === "granted") {
      yieldCpu = Deno.dlopen(LIBC, LIBC_SYMBOLS).symbols.sched_yield;
    }
  } catch {
    // no such library (a libc without that soname): spin
  }
  return yieldCpu;
}

/**
 * The poll event of one backend's stream. Internal to the NPU backend.
 *
 * @example
 * ```ts ignore
 * const poll = new StreamPoll();
 * runtime.activate(context);
 * if (poll.reached(runtime, stream)) aclrtSynchronizeStream(stream); // returns at once
 * poll.dispose(runtime); // when the backend closes, after its last sync
 * ```
 */
export class StreamPoll {
  #event = 0n;
  #off = false;
  // The launch count the event's latest record follows (-1: none).
  #covers = -1;
  readonly #status = new Int32Array(1);
  readonly #slot = new BigUint64Array(1);

  /**
   * Records the event on `stream` after launch number `launches` (the backend's context must be
   * current). The backend calls this for a launch onto an idle stream: the record then reaches the
   * stream together with the launch instead of waking it again at the sync. False when it could not.
   */
  mark(runtime: CannRuntime, stream: bigint, launches: number): boolean {
    if (this.#off) return false;
    const { acl } = runtime.libs; // read per call: tests may swap the table
    const record = acl.aclrtRecordEvent;
    if (this.#event === 0n) {
      const create = acl.aclrtCreateEvent;
      if (
        create === null || record === null || acl.aclrtQueryEventStatus === null ||
        acl.aclrtDestroyEvent === null || create(this.#slot) !== 0
      ) {
        this.#off = true; // no events here: always the worker thread, as before
        return false;
      }
      this.#event = this.#slot[0];
    }
    this.#covers = -1;
    if (record!(this.#event, stream) !== 0) return false;
    this.#covers = launches;
    return true;
  }

  /**
   * Whether the stream finished launch number `launches` and everything before it: polls the event
   * (recorded now unless its latest record already follows that launch) for at most `spinMs`
   * milliseconds. Never throws: a failure answers false.
   */
  reached(runtime: CannRuntime, stream: bigint, launches: number, spinMs = SYNC_SPIN_MS): boolean {
    if (this.#covers !== launches && !this.mark(runtime, stream, launches)) return false;
    const query = runtime.libs.acl.aclrtQueryEventStatus;
    if (query === null) return false;
    const event = this.#event;
    const status = this.#status;
    const pause = yielder();
    const deadline = performance.now() + spinMs;
    do {
      if (query(event, status) !== 0) return false;
      if (status[0] === RECORDED_COMPLETE) return true;
      pause?.();
    } while (performance.now() < deadline);
    return false;
  }

  /** Destroys the event (call after the stream's last sync, with the context current). Idempotent. */
  dispose(runtime: CannRuntime): void {
    this.#off = true;
    this.#covers = -1;
    const event = this.#event;
    if (event === 0n) return;
    this.#event = 0n;
    runtime.libs.acl.aclrtDestroyEvent?.(event);
  }
}
