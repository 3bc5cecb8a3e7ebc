/**
 * Kernel worker threads of one CPU device: `node:worker_threads` workers, each with an instance of
 * the kernels on the device's shared WebAssembly memory, so tensors are never copied. A job is
 * shared by the calling thread and the workers: all take chunks from one counter, the calling thread
 * from the start (it needs no waking), each worker from when it wakes. Workers are `unref()`ed: a
 * script that never closes its device still exits.
 *
 * The hand-off, in the shared control block (control.ts): the calling thread writes the job, sets
 * each worker's state word to the job's number J and wakes worker 0 (worker i wakes 2i + 1 and
 * 2i + 2); a worker joins by swapping its word from J to -J (`compareExchange`) and back to idle when
 * it leaves. When the calling thread runs out of chunks it swaps every word still at J back to idle,
 * so a worker that wakes after the job needs nothing does not join it, and waits for the chunks in
 * progress (a short block in `Atomics.wait`, then asynchronously). The next job is written only when
 * no worker is inside the last one; otherwise the call runs on the calling thread alone.
 *
 * @module
 */

import { Worker } from "node:worker_threads";
import { STACK_BYTES, type WasmKernels } from "../wasm/instance.ts";
import { LINE_BYTES } from "../wasm/prepared.ts";
import {
  CONTROL,
  controlWords,
  IDLE,
  JOB_LIMIT,
  type Kernel,
  KERNEL_EXPORTS,
  QUIT,
  takeChunks,
  type WorkerData,
} from "./control.ts";
import { WORKER_SOURCE } from "./worker_embedded.ts";

/** One kernel call cut into chunks of planes, each maybe into bands of rows (see worker.ts). */
export interface KernelJob {
  /** Which export runs. */
  readonly kernel: typeof KERNEL_EXPORTS[number];
  /** Its arguments: dtype, out, grad, planes, ... (pointers as unsigned byte addresses). */
  readonly args: readonly number[];
  /** Planes of the whole call. */
  readonly planes: number;
  /** Planes per chunk. */
  readonly chunkPlanes: number;
  /** Bytes per plane of `out` and of `gradOutput`. */
  readonly outPlaneBytes: number;
  readonly gradPlaneBytes: number;
  /** Index of the work-space argument (thread t, 0 the calling thread, adds `t * workBytes`), or -1. */
  readonly workArg: number;
  readonly workBytes: number;
  /** Rows the kernel's last two arguments range over, and the bands each chunk is cut into. */
  readonly rows: number;
  readonly bands: number;
  /** Workers asked to take part, besides the calling thread (the pool's size bounds it too). */
  readonly workers: number;
}

/**
 * The longest the calling thread blocks for the workers' last chunks once it has none left, as a
 * multiple of the time its own chunks took on average (at least {@link MIN_BLOCK_MS}); then it
 * returns and the job's promise settles when they are done, so a worker the host preempted in the
 * middle of a chunk does not block the event loop.
 */
const BLOCK_CHUNKS = 2;
const MIN_BLOCK_MS = 0.5;

/**
 * Up to `size` workers sharing one {@link KernelJob} at a time with the calling thread. Workers
 * start when a job first needs them (one per chunk beyond the calling thread's at most): on a
 * many-core host a device whose calls have few planes never starts the isolates (~17 MiB each) it
 * would leave idle.
 *
 * @example
 * ```ts ignore
 * const pool = KernelPool.create(kernels, 1);
 * const pending = pool?.run(job);
 * if (pending !== null && pending !== undefined) await pending;
 * pool?.close();
 * ```
 */
export class KernelPool {
  /** Number of workers. */
  readonly size: number;
  readonly #control: Int32Array<SharedArrayBuffer>;
  readonly #workers: Worker[] = [];
  readonly #kernels: WasmKernels;
  readonly #exports: Kernel[];
  readonly #args: number[] = [];
  readonly #stacks: number;
  #job = 0;
  #used = 0;
  #broken = false;
  #closed = false;
  /** Chunks the calling thread ran in the last job (for reports and tests). */
  lastHere = 0;

  private constructor(kernels: WasmKernels, size: number, stacks: number) {
    this.size = size;
    this.#kernels = kernels;
    this.#stacks = stacks;
    this.#control = new Int32Array(new SharedArrayBuffer(4 * controlWords(size)));
    const exports = kernels.exports as unknown as Record<string, Kernel>;
    this.#exports = KERNEL_EXPORTS.map((name) => exports[name]);
  }

  /** Workers started so far. */
  get started(): number {
    return this.#workers.length;
  }

  // Starts workers until there are `count`.
  #start(count: number): void {
    for (let index = this.#workers.length; index < count; index++) {
      const workerData: WorkerData = {
        module: this.#kernels.module,
        memory: this.#kernels.heap.memory,
        control: this.#control.buffer,
        index,
        // A line below its block's end: the stack's busiest bytes never share a line with the
        // next block (a kernel's tables, read by every thread).
        stackTop: this.#stacks + (index + 1) * STACK_BYTES - LINE_BYTES,
      };
      const worker = new Worker(WORKER_SOURCE, { eval: true, workerData });
      worker.unref();
      // A worker that dies (or fails to start) fails the job in flight and every later one.
      worker.on("error", () => this.#fail());
      worker.on("exit", () => this.#fail());
      this.#workers.push(worker);
    }
  }

  /**
   * `size` workers on `kernels`' shared memory, or null when the memory cannot hold their stacks
   * (which stay allocated as long as the memory lives).
   */
  static create(kernels: WasmKernels, size: number): KernelPool | null {
    const stacks = kernels.heap.allocate(size * STACK_BYTES);
    return stacks < 0 ? null : new KernelPool(kernels, size, stacks);
  }

  /** Whether a worker died: jobs must run elsewhere. */
  get broken(): boolean {
    return this.#broken;
  }

  /**
   * Whether a new job can be written: no worker is still inside the last one (one that joined as
   * it ended leaves within microseconds, unless the host preempted it).
   */
  get ready(): boolean {
    const control = this.#control;
    for (let i = 0; i < this.#used; i++) {
      if (Atomics.load(control, CONTROL.state + CONTROL.slot * i) < 0) return false;
    }
    return true;
  }

  /**
   * Waits, blocking, up to `ms` milliseconds for {@link ready} (a forced plan's tests: a worker the
   * host preempted as it left the last job), and says whether it came.
   */
  waitReady(ms: number): boolean {
    const until = performance.now() + ms;
    while (!this.ready) {
      if (performance.now() >= until) return false;
      Atomics.wait(this.#control, CONTROL.done, Atomics.load(this.#control, CONTROL.done), 1);
    }
    return true;
  }

  /**
   * Runs `job` on the calling thread and the workers: returns undefined when every chunk is done
   * (the usual case), else a promise that settles when they are (it rejects when a kernel threw or a
   * worker died: the job's output is then undefined). Check {@link ready} first. One job at a time.
   */
  run(job: KernelJob): Promise<void> | undefined {
    const control = this.#control;
    if (this.#broken || this.#closed) return Promise.reject(new Error("kernel workers stopped"));
    const chunks = Math.ceil(job.planes / job.chunkPlanes) * job.bands;
    const used = Math.min(this.size, job.workers, chunks - 1);
    this.#start(used);
    control[CONTROL.kernel] = KERNEL_EXPORTS.indexOf(job.kernel);
    control[CONTROL.argCount] = job.args.length;
    for (let i = 0; i < job.args.length; i++) control[CONTROL.args + i] = job.args[i];
    control[CONTROL.planes] = job.planes;
    control[CONTROL.chunkPlanes] = job.chunkPlanes;
    control[CONTROL.chunks] = chunks;
    control[CONTROL.outPlaneBytes] = job.outPlaneBytes;
    control[CONTROL.gradPlaneBytes] = job.gradPlaneBytes;
    control[CONTROL.workArg] = job.workArg;
    control[CONTROL.workBytes] = job.workBytes;
    control[CONTROL.rows] = job.rows;
    control[CONTROL.bands] = job.bands;
    control[CONTROL.failed] = 0;
    control[CONTROL.nextChunk] = 0;
    control[CONTROL.used] = used;
    Atomics.store(control, CONTROL.done, 0);
    this.#used = used;
    const number = this.#job = this.#job + 1 >= JOB_LIMIT ? 1 : this.#job + 1;
    for (let i = 0; i < used; i++) Atomics.store(control, CONTROL.state + CONTROL.slot * i, number);
    // Worker 0 wakes the others, in a tree (see worker.ts).
    if (used > 0) Atomics.notify(control, CONTROL.state);
    const start = performance.now();
    const here = takeChunks(control, this.#exports[control[CONTROL.kernel]], this.#args, 0);
    this.lastHere = here;
    // Workers that have not joined yet are not needed any more.
    for (let i = 0; i < used; i++) {
      Atomics.compareExchange(control, CONTROL.state + CONTROL.slot * i, number, IDLE);
    }
    const bound = Math.max(
      MIN_BLOCK_MS,
      (BLOCK_CHUNKS * (performance.now() - start)) / Math.max(1, here),
    );
    const until = performance.now() + bound;
    for (;;) {
      const done = Atomics.load(control, CONTROL.done);
      if (done >= chunks) break;
      const left = until - performance.now();
      if (left <= 0) return this.#finished(chunks);
      Atomics.wait(control, CONTROL.done, done, left);
    }
    return this.#outcome();
  }

  #outcome(): Promise<void> | undefined {
    if (Atomics.load(this.#control, CONTROL.failed) !== 0 || this.#broken) {
      return Promise.reject(new Error("a kernel failed in a worker thread"));
    }
    return undefined;
  }

  async #finished(chunks: number): Promise<void> {
    const control = this.#control;
    // Unref'ed workers do not keep the process alive, nor does a pending Atomics.waitAsync: one
    // worker is ref'ed while the calling thread waits, so a script awaiting a result does not exit.
    this.#workers[0]?.ref();
    for (;;) {
      const done = Atomics.load(control, CONTROL.done);
      if (done >= chunks) break;
      const wait = Atomics.waitAsync(control, CONTROL.done, done);
      if (wait.async) await wait.value;
    }
    this.#workers[0]?.unref();
    await this.#outcome();
  }

  #fail(): void {
    if (this.#closed) return;
    this.#broken = true;
    Atomics.store(this.#control, CONTROL.failed, 1);
    Atomics.store(this.#control, CONTROL.done, 0x7fffffff);
    Atomics.notify(this.#control, CONTROL.done);
  }

  /**
   * Lets every worker leave its loop once its current chunk returns (they end on their own; nothing
   * waits for them) and settles the job in flight at once: after close its result is unused.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const control = this.#control;
    for (let i = 0; i < this.#workers.length; i++) {
      const at = CONTROL.state + CONTROL.slot * i;
      Atomics.store(control, at, QUIT);
      Atomics.notify(control, at);
    }
    Atomics.store(control, CONTROL.done, 0x7fffffff);
    Atomics.notify(control, CONTROL.done);
  }
}
