/**
 * Runs prepared kernel calls of a CPU device with several threads: each call on the calling thread
 * or on worker threads, as the {@link Planner} decides from its cost, cut into chunks of whole
 * four-plane groups and, when there are fewer groups than chunks wanted, into bands of rows.
 *
 * @module
 */

import type { WasmKernels } from "../wasm/instance.ts";
import { type PreparedCall, runPrepared } from "../wasm/launch_backward.ts";
import { Planner } from "./planner.ts";
import { KernelPool } from "./pool.ts";

/** Chunks per worker and job: a worker the machine slows down takes fewer. */
const CHUNKS_PER_WORKER = 4;

/** How a call was cut: planes per chunk and bands of rows per chunk. */
export interface Cut {
  chunkPlanes: number;
  bands: number;
  chunks: number;
}

/**
 * The cut of a call with `planes` planes and `rows` rows for `workers` workers: whole four-plane
 * groups, about {@link CHUNKS_PER_WORKER} chunks per worker; with fewer groups than that, each
 * group is cut into bands of rows (when `bandable`), at most one row each.
 *
 * @example
 * ```ts
 * import { cutCall } from "./scheduler.ts";
 * cutCall(2, 70, true, 2); // { chunkPlanes: 4, bands: 8, chunks: 8 }
 * ```
 */
export function cutCall(planes: number, rows: number, bandable: boolean, workers: number): Cut {
  const groups = Math.ceil(planes / 4), wanted = workers * CHUNKS_PER_WORKER;
  const chunkPlanes = 4 * Math.max(1, Math.ceil(groups / wanted));
  const planeChunks = Math.ceil(planes / chunkPlanes);
  const bands = bandable && planeChunks < wanted
    ? Math.max(1, Math.min(rows, Math.ceil(wanted / planeChunks)))
    : 1;
  return { chunkPlanes, bands, chunks: planeChunks * bands };
}

/**
 * The thread plan of one device: a lazily started {@link KernelPool} and a {@link Planner}.
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
  /** Workers the last call was given (0: the calling thread). */
  lastWorkers = 0;

  private constructor(kernels: WasmKernels, pool: KernelPool, force: boolean) {
    this.#kernels = kernels;
    this.#pool = pool;
    this.#force = force;
    this.planner = new Planner(pool.size);
  }

  /**
   * A scheduler for `threads` workers, or null when the memory cannot hold their stacks. `force`:
   * every call to all the workers it can use (tests).
   */
  static create(kernels: WasmKernels, threads: number, force: boolean): KernelScheduler | null {
    const pool = KernelPool.create(kernels, threads);
    return pool === null ? null : new KernelScheduler(kernels, pool, force);
  }

  /** Workers (started so far, and at most). */
  get started(): number {
    return this.#pool.started;
  }
  get size(): number {
    return this.#pool.size;
  }

  /** Whether a worker died (calls must then run elsewhere). */
  get broken(): boolean {
    return this.#pool.broken;
  }

  /**
   * Runs `ready` on the calling thread (returns undefined; a kernel error throws) or starts it on
   * the workers (returns a promise that settles when they are done; it rejects when a worker died).
   */
  run(ready: PreparedCall): Promise<void> | undefined {
    const size = this.#pool.size;
    const most = cutCall(ready.planes, ready.rows, ready.bandable, size).chunks;
    const bytes = ready.planes * (ready.outPlaneBytes + ready.gradPlaneBytes);
    const choice = this.planner.choose(ready, most);
    const workers = this.#force ? Math.min(size, most) : choice.workers;
    this.lastWorkers = workers;
    const start = performance.now();
    if (workers === 0) {
      runPrepared(this.#kernels, ready);
      this.planner.record(choice, performance.now() - start, bytes);
      return undefined;
    }
    const cut = cutCall(ready.planes, ready.rows, ready.bandable, workers);
    const planned = { workers, t1Ms: choice.t1Ms, cls: choice.cls, shape: choice.shape };
    return this.#pool.run({ ...ready, ...cut, workers }).then(() => {
      this.planner.record(planned, performance.now() - start, bytes);
    });
  }

  /** Stops the workers (see {@link KernelPool.close}). */
  close(): void {
    this.#pool.close();
  }
}
