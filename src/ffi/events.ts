/**
 * Device-side timing with ACL events (internal, used by the benchmarks): a start event and an end event
 * recorded on a device's stream around a sequence of launches, the time between them as the device
 * measured it (`aclrtEventElapsedTime`), and the host time the launches took to enqueue. The two events
 * are made once per timer and destroyed by `dispose()` on every path.
 *
 * Prototypes: CANN `include/external/acl/acl_rt.h` (`aclrtCreateEvent`, `aclrtRecordEvent`,
 * `aclrtSynchronizeEvent`, `aclrtEventElapsedTime`, `aclrtDestroyEvent`).
 *
 * @module
 */

import type { NpuBackend } from "./npu_backend.ts";
import type { CannRuntime } from "./runtime.ts";
import { MissingSymbolError } from "./status.ts";
import type { AclLib } from "./symbols.ts";

/** One timed sequence. */
export interface StreamTiming {
  /** Milliseconds between the start and end events, measured on the device. */
  readonly deviceMs: number;
  /** Milliseconds the host spent in the enqueue callback (launch overhead, validation included). */
  readonly hostMs: number;
}

const EVENT_SYMBOLS = [
  "aclrtCreateEvent",
  "aclrtDestroyEvent",
  "aclrtRecordEvent",
  "aclrtSynchronizeEventNonblocking",
  "aclrtEventElapsedTime",
] as const;

type EventFns = { [K in (typeof EVENT_SYMBOLS)[number]]: NonNullable<AclLib[K]> };

function eventFunctions(runtime: CannRuntime): EventFns {
  const fns: Partial<Record<string, unknown>> = {};
  for (const symbol of EVENT_SYMBOLS) {
    const fn = runtime.libs.acl[symbol];
    if (fn === null) {
      throw new MissingSymbolError(
        symbol === "aclrtSynchronizeEventNonblocking" ? "aclrtSynchronizeEvent" : symbol,
        `the CANN runtime in ${runtime.libs.dir}`,
        "device-side timing needs the runtime's ACL events",
      );
    }
    fns[symbol] = fn;
  }
  return fns as EventFns;
}

/**
 * Times launches on one NPU backend's stream with a pair of ACL events.
 *
 * @example
 * ```ts ignore
 * using timer = StreamTimer.create(backend);
 * const { deviceMs, hostMs } = await timer.time(() => launchSomething());
 * ```
 */
export class StreamTimer {
  readonly #backend: NpuBackend;
  readonly #fns: EventFns;
  readonly #start: bigint;
  readonly #end: bigint;
  readonly #ms = new Float32Array(1);
  #disposed = false;

  private constructor(backend: NpuBackend, fns: EventFns, start: bigint, end: bigint) {
    this.#backend = backend;
    this.#fns = fns;
    this.#start = start;
    this.#end = end;
  }

  /**
   * Creates the two events in the backend's context.
   *
   * @throws {MissingSymbolError} when the runtime has no ACL events
   * @throws {AclError} when creating an event fails (the first is destroyed again)
   */
  static create(backend: NpuBackend): StreamTimer {
    const { runtime } = backend;
    const fns = eventFunctions(runtime);
    runtime.activate(backend.context);
    const slot = new BigUint64Array(1);
    runtime.check(fns.aclrtCreateEvent(slot), "aclrtCreateEvent");
    const start = slot[0];
    const status = fns.aclrtCreateEvent(slot);
    if (status !== 0) {
      const error = runtime.error(status, "aclrtCreateEvent");
      fns.aclrtDestroyEvent(start);
      throw error;
    }
    return new StreamTimer(backend, fns, start, slot[0]);
  }

  /**
   * Records the start event, runs `enqueue` (which launches work on the stream), records the end event,
   * waits for it on a worker thread and returns the device time between the events.
   *
   * @throws {AclError} naming the event call that failed (the events stay valid until `dispose()`)
   */
  async time(enqueue: () => void): Promise<StreamTiming> {
    if (this.#disposed) throw new TypeError("StreamTimer.time: the timer was disposed");
    const { runtime, stream, context } = this.#backend;
    const fns = this.#fns;
    runtime.activate(context);
    runtime.check(fns.aclrtRecordEvent(this.#start, stream), "aclrtRecordEvent");
    const t0 = performance.now();
    enqueue();
    const hostMs = performance.now() - t0;
    runtime.activate(context);
    runtime.check(fns.aclrtRecordEvent(this.#end, stream), "aclrtRecordEvent");
    const status = await fns.aclrtSynchronizeEventNonblocking(this.#end);
    runtime.check(status, "aclrtSynchronizeEvent");
    runtime.check(
      fns.aclrtEventElapsedTime(this.#ms, this.#start, this.#end),
      "aclrtEventElapsedTime",
    );
    return { deviceMs: this.#ms[0], hostMs };
  }

  /** Destroys both events. Idempotent; a failed destroy is not retried (the handle is gone either way). */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    try {
      this.#backend.runtime.activate(this.#backend.context);
    } catch {
      // The device was closed first: destroying still releases the handles (or answers 107017).
    }
    this.#fns.aclrtDestroyEvent(this.#start);
    this.#fns.aclrtDestroyEvent(this.#end);
  }

  /** Same as {@link StreamTimer.dispose}, for `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }
}
