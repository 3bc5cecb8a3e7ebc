/**
 * Runs prepared kernel calls of a CPU device with several threads: each call on the calling thread
 * alone or shared by the calling thread and the workers, as the {@link Planner} decides from what
 * the call's shape took, cut into chunks of whole four-plane groups and, when there are fewer
 * groups than chunks wanted, into bands of rows.
 *
 * @module
 */

import type { WasmKernels } from "../wasm/instance.ts";
import { LINE_BYTES, type PreparedCall, runPrepared } from "../wasm/prepared.ts";
import { Planner } from "./planner.ts";
import { KernelPool } from "./pool.ts";

/** Chunks per thread and job: a thread the machine slows down (or wakes late) takes fewer. */
const CHUNKS_PER_THREAD = 8;

/** How a call was cut: planes per chunk and bands of rows per chunk. */
export interface Cut {
  chunkPlanes: number;
  bands: number;
  chunks: number;
}

/**
 * The cut of a call with `planes` planes and `rows` rows for `threads` threads: whole four-plane
 * groups, about {@link CHUNKS_PER_THREAD} chunks per thread; with fewer groups than that, each
 * group is cut into bands of rows (when `bandable`), at most one row each.
 *
 * @example
 * ```ts
 * import { cutCall } from "./scheduler.ts";
 * cutCall(2, 70, true, 2); // { chunkPlanes: 4, bands: 8, chunks: 8 }
 * ```
 */
export function cutCall(planes: number, rows: number, bandable: boolean, threads: number): Cut {
  const groups = Math.ceil(planes / 4), wanted = threads * CHUNKS_PER_THREAD;
  const chunkPlanes = 4 * Math.max(1, Math.ceil(groups / wanted));
  const planeChunks = Math.ceil(planes / chunkPlanes);
  const bands = bandable && planeChunks < wanted
    ? Math.max(1, Math.min(rows, Math.ceil(wanted / planeChunks)))
    : 1;
  return { chunkPlanes, bands, chunks: planeChunks * bands };
}

/**
 * The distance between two threads' work spaces: whole cache lines plus one when the scratch block
 * has the room, else the packed size. Packed, a work space of 3088 bytes (nearest-exact 70 -> 119
 * wide) shares a cache line with the next thread's, and the kernels write both ends of theirs for
 * every row: each such write takes the line from the other core.
 *
 * @example
 * ```ts ignore
 * const stride = workStride(ready, 2, kernels); // >= ready.workBytes
 * ```
 */
export function workStride(ready: PreparedCall, threads: number, kernels: WasmKernels): number {
  const packed = ready.workBytes;
  if (ready.workArg < 0 || packed === 0 || threads < 2) return packed;
  const padded = (Math.ceil(packed / LINE_BYTES) + 1) * LINE_BYTES;
  const base = ready.args[ready.workArg] >>> 0;
  const end = kernels.scratch(0) + kernels.scratchBytes;
  return kernels.scratch(0) >= 0 && base + (threads - 1) * padded + packed <= end ? padded : packed;
}

// How long a forced plan waits for a preempted worker to leave the last job.
const FORCED_WAIT_MS = 500;

/**
 * The thread plan of one device: a lazily started {@link KernelPool} of `threads - 1` workers and a
 * {@link Planner}.
 *
 * @example
 * ```ts ignore
 * const scheduler = KernelScheduler.create(kernels, 2, false);
 * const pending = scheduler?.run(prepareWasm(kernels, call, 2)!);
 * if (pending !== undefined) await pending;
 * ```
 */
export class KernelScheduler {
  /** Decides per call; exposed for reports and tests. */
  readonly planner: Planner;
  readonly #kernels: WasmKernels;
  readonly #pool: KernelPool;
  readonly #force: boolean;
  /** Threads the last call was shared by (1: the calling thread alone). */
  lastThreads = 1;

  private constructor(kernels: WasmKernels, pool: KernelPool, force: boolean) {
    this.#kernels = kernels;
    this.#pool = pool;
    this.#force = force;
    this.planner = new Planner(pool.size + 1);
  }

  /**
   * A scheduler for `threads` threads (the calling thread and `threads - 1` workers), or null when
   * the memory cannot hold the workers' stacks. `force`: every call shared by all the threads it can
   * use (tests).
   */
  static create(kernels: WasmKernels, threads: number, force: boolean): KernelScheduler | null {
    const pool = KernelPool.create(kernels, Math.max(1, threads - 1));
    return pool === null ? null : new KernelScheduler(kernels, pool, force);
  }

  /** Workers (started so far, and at most). */
  get started(): number {
    return this.#pool.started;
  }
  get size(): number {
    return this.#pool.size;
  }

  /** Threads the last call was shared by, 0 when the calling thread ran it alone (benchmarks). */
  get lastWorkers(): number {
    return this.lastThreads > 1 ? this.lastThreads : 0;
  }

  /** Chunks the calling thread ran in the last shared call (reports and tests). */
  get lastHere(): number {
    return this.#pool.lastHere;
  }

  /**
   * Waits, blocking, up to `ms` milliseconds until no worker is still leaving the last job (else
   * the next call runs alone whatever its plan; tests of the plan wait for this), and says whether
   * that came (see {@link KernelPool.waitReady}).
   */
  waitReady(ms: number): boolean {
    return this.#pool.waitReady(ms);
  }

  /** Whether a worker died (calls must then run elsewhere). */
  get broken(): boolean {
    return this.#pool.broken;
  }

  /**
   * Runs `ready` alone or shared: returns undefined when it is done (a kernel error on the calling
   * thread alone throws), or a promise that settles when the workers' last chunks are (it rejects
   * when a kernel failed in a shared call or a worker died; the caller then runs it alone).
   */
  run(ready: PreparedCall): Promise<void> | undefined {
    const threads = this.#pool.size + 1;
    const most = cutCall(ready.planes, ready.rows, ready.bandable, threads).chunks;
    const choice = this.planner.choose(ready, most);
    let share = this.#force ? Math.min(threads, most) : choice.threads;
    // A worker still leaving the last job (preempted as it ended): this call runs alone.
    // Forced (tests): every call shared, so it waits for such a worker instead.
    if (share > 1 && !this.#pool.ready && !(this.#force && this.#pool.waitReady(FORCED_WAIT_MS))) {
      share = 1;
    }
    this.lastThreads = share;
    const start = performance.now();
    if (share <= 1) {
      runPrepared(this.#kernels, ready);
      if (choice.threads <= 1) this.planner.record(choice, performance.now() - start);
      return undefined;
    }
    const cut = cutCall(ready.planes, ready.rows, ready.bandable, share);
    const workBytes = workStride(ready, share, this.#kernels);
    const started = this.#pool.started;
    const pending = this.#pool.run({ ...ready, ...cut, workers: share - 1, workBytes });
    // A call that started a worker (an isolate: ~10 ms) says nothing of what sharing costs: the
    // first shared call of a device took 12.3 ms where the next took 2.2-5.3.
    const planned = share === choice.threads && this.#pool.started === started;
    if (pending === undefined) {
      if (planned) this.planner.record(choice, performance.now() - start);
      return undefined;
    }
    const recorded = { ...choice };
    return pending.then(() => {
      if (planned) this.planner.record(recorded, performance.now() - start);
    });
  }

  /** Stops the workers (see {@link KernelPool.close}). */
  close(): void {
    this.#pool.close();
  }
}
