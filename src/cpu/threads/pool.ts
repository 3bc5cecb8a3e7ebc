/**
 * Kernel worker threads of one CPU device: `node:worker_threads` workers, each with an instance of
 * the kernels on the device's shared WebAssembly memory, so tensors are never copied. Workers are
 * `unref()`ed: a script that never closes its device still exits (a job in flight keeps the process
 * alive through the calling thread's `Atomics.waitAsync`, not through the workers).
 *
 * @module
 */

import { Worker } from "node:worker_threads";
import { STACK_BYTES, type WasmKernels } from "../wasm/instance.ts";
import { CONTROL, controlWords, KERNEL_EXPORTS, QUIT, type WorkerData } from "./control.ts";
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
  /** Index of the work-space argument (worker i adds `i * workBytes`), or -1. */
  readonly workArg: number;
  readonly workBytes: number;
  /** Rows the kernel's last two arguments range over, and the bands each chunk is cut into. */
  readonly rows: number;
  readonly bands: number;
  /** Workers to use at most (the pool's size bounds it too). */
  readonly workers: number;
}

/**
 * Up to `size` workers running one {@link KernelJob} at a time. Workers start when a job first
 * needs them (a job uses at most one per chunk): on a many-core host a device whose calls have few
 * planes never starts the isolates (~17 MiB each) it would leave idle.
 *
 * @example
 * ```ts ignore
 * const pool = KernelPool.create(kernels, 2);
 * await pool?.run(job);
 * pool?.close();
 * ```
 */
export class KernelPool {
  /** Number of workers. */
  readonly size: number;
  readonly #control: Int32Array<SharedArrayBuffer>;
  readonly #workers: Worker[] = [];
  readonly #sequence: number[] = [];
  readonly #kernels: WasmKernels;
  readonly #stacks: number;
  #broken = false;
  #closed = false;

  private constructor(kernels: WasmKernels, size: number, stacks: number) {
    this.size = size;
    this.#kernels = kernels;
    this.#stacks = stacks;
    this.#control = new Int32Array(new SharedArrayBuffer(4 * controlWords(size)));
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
        stackTop: this.#stacks + (index + 1) * STACK_BYTES,
      };
      const worker = new Worker(WORKER_SOURCE, { eval: true, workerData });
      worker.unref();
      // A worker that dies (or fails to start) fails the job in flight and every later one.
      worker.on("error", () => this.#fail());
      worker.on("exit", () => this.#fail());
      this.#workers.push(worker);
      this.#sequence.push(0);
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
   * Runs `job` on the workers; resolves when every chunk is done. Rejects when a kernel threw or a
   * worker died (the job's output is then undefined). One job at a time.
   */
  run(job: KernelJob): Promise<void> {
    const control = this.#control;
    if (this.#broken || this.#closed) return Promise.reject(new Error("kernel workers stopped"));
    const chunks = Math.ceil(job.planes / job.chunkPlanes) * job.bands;
    const used = Math.min(this.size, job.workers, chunks);
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
    Atomics.store(control, CONTROL.pending, used);
    // Unref'ed workers do not keep the process alive, nor does a pending Atomics.waitAsync: one
    // worker is ref'ed while a job runs (~0.5 us), so a script awaiting a result does not exit.
    this.#workers[0].ref();
    for (let i = 0; i < used; i++) {
      // Sequence numbers stay positive (QUIT is -1).
      const next = this.#sequence[i] === 0x7fffffff ? 1 : this.#sequence[i] + 1;
      this.#sequence[i] = next;
      Atomics.store(control, CONTROL.sequence + CONTROL.slot * i, next);
    }
    // Worker 0 wakes the others, in a tree (see worker.ts).
    Atomics.notify(control, CONTROL.sequence);
    return this.#finished();
  }

  async #finished(): Promise<void> {
    const control = this.#control;
    for (;;) {
      const pending = Atomics.load(control, CONTROL.pending);
      if (pending === 0) break;
      // Woken by the last worker, whatever the count was when this wait started.
      const wait = Atomics.waitAsync(control, CONTROL.pending, pending);
      if (wait.async) await wait.value;
    }
    this.#workers[0].unref();
    if (Atomics.load(control, CONTROL.failed) !== 0 || this.#broken) {
      throw new Error("a kernel failed in a worker thread");
    }
  }

  #fail(): void {
    if (this.#closed) return;
    this.#broken = true;
    Atomics.store(this.#control, CONTROL.failed, 1);
    Atomics.store(this.#control, CONTROL.pending, 0);
    Atomics.notify(this.#control, CONTROL.pending);
  }

  /**
   * Lets every worker leave its loop once its current kernel call returns (they end on their own;
   * nothing waits for them) and settles the job in flight at once: after close its result is unused.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const control = this.#control;
    for (let i = 0; i < this.#workers.length; i++) {
      const at = CONTROL.sequence + CONTROL.slot * i;
      Atomics.store(control, at, QUIT);
      Atomics.notify(control, at);
    }
    Atomics.store(control, CONTROL.pending, 0);
    Atomics.notify(control, CONTROL.pending);
  }
}
