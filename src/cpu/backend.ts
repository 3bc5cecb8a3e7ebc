/**
 * The CPU backend: tensors live in a WebAssembly memory; ops run on the wasm SIMD kernels when both
 * tensors are contiguous, else on the TypeScript kernels (same bits either way). With one thread
 * every op runs inside the call. With more, the memory is shared and a large op is shared by the
 * calling thread and worker threads (or runs alone where its shape was measured faster so), each
 * thread taking whole chunks of planes or rows, so every element is computed by the same operations
 * as on one thread: results are the same bits whatever the thread count, and always deterministic.
 * Small ops run inside the call when nothing is queued (a hand-off costs more than they do).
 *
 * @module
 */

import type {
  Backend,
  ForwardCall,
  MemoryInfo,
  TensorLimit,
  UpsampleCall,
  UpsampleParams,
} from "../backend.ts";
import { FORWARD_OP_SPECS, OP_SPECS } from "../rules/ops.ts";
import type { DType, HostArray } from "../tensor/dtype.ts";
import { checkResultFits } from "../tensor/fits.ts";
import { CpuBuffer } from "./buffer.ts";
import { hostMemoryInfo } from "./host_memory.ts";
import { MAX_PAGES } from "./wasm/heap.ts";
import {
  ascendCall,
  type AscendTarget,
  checkAscendRules,
  DEFAULT_ASCEND_TARGET,
  type Numerics,
} from "../rules/numerics.ts";
import { type DeterministicOptions, launchPlanOf } from "../rules/support.ts";
import type { DeviceDefects } from "../rules/arrangement.ts";
import type { WarningNotice } from "../rules/warning_codes.ts";
import { runRouteCpu, transposedArgs, transposedSizes } from "./ascend/backward/route.ts";
import { runTbeCpu, tbeLaunchOf } from "./ascend/backward/tbe_launch.ts";
import { deviceKernelOf } from "./ascend/backward/kernel_of.ts";
import { forwardPlan } from "../rules/forward_device.ts";
import { forwardDeviceCpu } from "./ascend/forward/reference.ts";
import { TaskQueue } from "./task_queue.ts";
import { KernelScheduler } from "./threads/scheduler.ts";
import { STACK_BYTES, WasmKernels } from "./wasm/instance.ts";
import { type AnyCall, forwardArgs, keepCall, kernelArgs, prepare, runHere } from "./dispatch.ts";

// One tensor takes at most a wasm32 memory (4 GiB), whichever kernels run: past it the backend would
// fall back to a host array as large, slowly, with the TypeScript kernels alone to run on it.
const TENSOR_LIMIT: TensorLimit = {
  bytes: MAX_PAGES * 65536,
  source: "the CPU backend's WebAssembly memory limit (wasm32)",
};
// Typed arrays past this length cannot be allocated by V8; checked before allocating.
const MAX_HOST_ELEMENTS = 2 ** 32 - 1;
// Freed buffers kept whole for the next allocation of the same dtype and length (a training loop
// allocates the same shapes every step): no allocator search, no new objects, no zero fill.
const MAX_CACHED_BYTES = 256 * 2 ** 20;
const MAX_CACHED_PER_SIZE = 4;
const DTYPE_INDEX = { float32: 0, float16: 1, bfloat16: 2 } as const;
// With nothing queued, every synchronize() can hand out the same settled promise.
const RESOLVED: Promise<void> = Promise.resolve();

/**
 * Internal tuning read when a backend is created (tests lower the threshold to send their small
 * shapes to the workers).
 */
export const cpuTuning = {
  /**
   * Calls moving fewer elements (gradOutput + result) run on the calling thread when nothing is
   * queued. Measured with `bench/threshold.ts`: below it a hand-off to two workers cost more than
   * it saved. Larger calls are planned per call (`threads/planner.ts`); 0 shares every call with all
   * the workers it can use (tests).
   */
  minParallelElements: 65536,
};

/** Which kernels a CPU device runs. */
export type CpuKernels = "auto" | "typescript";

/** Tuning of a {@link CpuBackend} (internal; tests use it to reach the fallbacks). */
export interface CpuBackendOptions {
  /** Bytes the wasm memory may grow to (default 4 GiB, the wasm32 limit). */
  heapLimitBytes?: number;
  /**
   * Threads computing large ops with the wasm kernels (default 1: every op on the calling thread,
   * in a memory that is not shared). Ignored with the TypeScript kernels.
   */
  threads?: number;
  /** Whose results to compute: PyTorch's CPU kernels' (default) or the Ascend device's. */
  numerics?: Numerics;
  /**
   * With `numerics: "device"`: which Ascend kernels to reproduce (default
   * {@link DEFAULT_ASCEND_TARGET}: A2/A3, bilinear V2).
   */
  ascend?: AscendTarget;
  /** Device numerics: warn once instead of throwing for an order-dependent kernel (default false). */
  deterministicWarnOnly?: boolean;
  /** Where warnings go (the device's warnings channel, `src/warnings.ts`); default: nowhere. */
  warn?: (notice: WarningNotice) => void;
  /** Device numerics: where a kernel loses terms, avoid (default), refuse or allow (Device.open). */
  deviceDefects?: DeviceDefects;
}

/**
 * Runs the three backward ops on host memory.
 *
 * @example
 * ```ts
 * import { CpuBackend } from "./backend.ts";
 * const backend = new CpuBackend();
 * const handle = backend.allocate("float32", 4);
 * backend.free(handle);
 * backend.close();
 * ```
 */
export class CpuBackend implements Backend<CpuBuffer> {
  /** Always `"cpu"`. */
  readonly kind = "cpu" as const;
  /** `"cpu (WebAssembly SIMD)"` or `"cpu (TypeScript)"`. */
  readonly name: string;
  /** Threads computing ops (1 with the TypeScript kernels). */
  readonly threads: number;
  /** `"pytorch"`: PyTorch's CPU results; `"device"`: what the Ascend kernels of {@link ascend} compute. */
  readonly numerics: Numerics;
  /** The Ascend kernels reproduced with `numerics: "device"` (generation, bilinear API, contraction). */
  readonly ascend: AscendTarget;
  /** Device numerics: warn once instead of throwing for an order-dependent kernel. */
  readonly deterministicWarnOnly: boolean;
  /** One tensor takes at most the 4 GiB of a wasm32 memory. */
  readonly tensorLimit: TensorLimit = TENSOR_LIMIT;
  readonly #routeOptions: DeterministicOptions;
  #kernels: WasmKernels | null;
  #cache: Map<number, CpuBuffer[]>[] = [new Map(), new Map(), new Map()];
  #cachedBytes = 0;
  #closed = false;
  readonly #queue = new TaskQueue();
  // Created on the first large op; null when the memory could not hold the workers' stacks.
  #scheduler: KernelScheduler | null | undefined;
  readonly #minParallel: number;
  // A failure of queued work, reported by the next download or synchronize.
  #failure: unknown = null;

  /**
   * @param kernels `"auto"` (default): tensors in WebAssembly memory, wasm SIMD
   * kernels for contiguous tensors; `"typescript"`: plain typed arrays and TypeScript kernels only.
   */
  constructor(kernels: CpuKernels = "auto", options: CpuBackendOptions = {}) {
    const threads = kernels === "typescript" ? 1 : options.threads ?? 1;
    this.threads = threads;
    this.numerics = options.numerics ?? "pytorch";
    this.ascend = options.ascend ?? DEFAULT_ASCEND_TARGET;
    this.deterministicWarnOnly = options.deterministicWarnOnly ?? false;
    this.#routeOptions = {
      warnOnly: this.deterministicWarnOnly,
      warn: options.warn,
      deviceDefects: options.deviceDefects ?? "avoid",
    };
    this.#minParallel = cpuTuning.minParallelElements;
    this.#kernels = kernels === "typescript"
      ? null
      : new WasmKernels(options.heapLimitBytes, threads > 1);
    this.name = this.#kernels === null ? "cpu (TypeScript)" : "cpu (WebAssembly SIMD)";
  }

  /** Bytes of tensor blocks in use in the wasm memory (0 with TypeScript kernels). */
  get heapLiveBytes(): number {
    const kernels = this.#kernels;
    if (kernels === null) return 0;
    let cached = 0;
    for (const sizes of this.#cache) {
      for (const list of sizes.values()) {
        for (const buffer of list) if (buffer.heap !== null) cached += buffer.byteLength;
      }
    }
    const stacks = this.#scheduler ? this.#scheduler.size * STACK_BYTES : 0;
    return kernels.heap.liveBytes - kernels.scratchBytes - cached - stacks;
  }

  /** Worker threads started so far (they start when a large op first needs them). */
  get workersStarted(): number {
    return this.#scheduler ? this.#scheduler.started : 0;
  }

  /** Workers the last large call was given (0: the calling thread), for benchmarks. */
  get lastWorkers(): number {
    return this.#scheduler ? this.#scheduler.lastWorkers : 0;
  }

  /** Chunks the calling thread ran in the last shared call, for benchmarks. */
  get lastHere(): number {
    return this.#scheduler ? this.#scheduler.lastHere : 0;
  }

  /** Allocates storage: a block of the wasm memory, or a typed array when that memory is full. */
  allocate(dtype: DType, length: number): CpuBuffer {
    if (length > MAX_HOST_ELEMENTS) {
      throw new RangeError(
        `the CPU backend cannot hold ${length} elements in one tensor (limit ${MAX_HOST_ELEMENTS})`,
      );
    }
    const cached = this.#cache[DTYPE_INDEX[dtype]].get(length)?.pop();
    if (cached !== undefined) {
      this.#cachedBytes -= cached.byteLength;
      return cached;
    }
    const kernels = this.#kernels;
    const inHeap = kernels === null ? null : CpuBuffer.inHeap(kernels.heap, dtype, length);
    return inHeap ?? CpuBuffer.host(dtype, length);
  }

  /**
   * Keeps a buffer for reuse (bounded), else returns it to the heap (typed arrays: to the GC); after
   * the work queued so far, which may still use it.
   */
  free(handle: CpuBuffer): void {
    if (this.#queue.busy) this.#queue.run(() => this.#free(handle));
    else this.#free(handle);
  }

  #free(handle: CpuBuffer): void {
    const bytes = handle.byteLength;
    if (!this.#closed && bytes > 0 && this.#cachedBytes + bytes <= MAX_CACHED_BYTES) {
      const sizes = this.#cache[DTYPE_INDEX[handle.dtype]];
      const list = sizes.get(handle.length);
      if (list === undefined) sizes.set(handle.length, [handle]);
      else if (list.length < MAX_CACHED_PER_SIZE) list.push(handle);
      else return handle.release();
      this.#cachedBytes += bytes;
      return;
    }
    handle.release();
  }

  /**
   * Host memory, where CPU tensors live (WebAssembly memory, or typed arrays once that is full):
   * `Deno.systemMemoryInfo()`'s `available` (what can be allocated without swapping) and `total`.
   * Needs `--allow-sys`; without it the error names the flag.
   */
  memoryInfo(): MemoryInfo {
    return hostMemoryInfo();
  }

  /** Copies encoded host data in. */
  upload(handle: CpuBuffer, data: HostArray): void {
    handle.view().set(data);
  }

  /** Returns a copy of a range of the storage, once the work queued so far is done. */
  download(handle: CpuBuffer, _dtype: DType, start: number, length: number): Promise<HostArray> {
    if (!this.#queue.busy && this.#failure === null) {
      return Promise.resolve(handle.view().slice(start, start + length));
    }
    return new Promise((resolve, reject) => {
      this.#queue.run(() => {
        if (this.#closed) {
          reject(new TypeError("toFloat32Array: the device was closed during the read"));
        } else if (this.#failure !== null) reject(this.#takeFailure());
        else resolve(handle.view().slice(start, start + length));
      });
    });
  }

  /**
   * Rejects results too large for one host typed array, and with device numerics what the device
   * rejects or leaves undefined, before anything is allocated.
   */
  checkSupported(params: UpsampleParams & { readonly deterministic: boolean }): void {
    if (this.numerics === "device") {
      checkAscendRules(params, this.ascend);
      launchPlanOf(params, this.ascend, this.#routeOptions);
    }
    checkResultFits(this, params.dtype, OP_SPECS[params.op].name, params.inputSize, null);
  }

  /** Runs the op now, or queues it (a large op with several threads, or while work is queued). */
  launch(call: UpsampleCall<CpuBuffer>): void {
    const shared = this.numerics === "device" ? this.#launchDevice(call) : call;
    if (shared !== null) this.#start(shared);
  }

  // Runs `call` now, or after the work queued so far. No closure in this method or its callers
  // above: V8 would allocate a context for the captured call on every launch (48 bytes, a repeated
  // tiny call's only allocation), so the queued path makes its closure in #enqueue.
  #start(call: AnyCall): void {
    if (this.#queue.busy) this.#enqueue(call);
    else this.#queue.hold(this.#launch(call, true));
  }

  #enqueue(call: AnyCall): void {
    this.#queue.run(() => this.#launch(call, false));
  }

  // With device numerics: runs the deterministic route, or an arrangement avoiding the kernel's
  // column loss, as the NPU runs them (launchPlanOf), or the device's own kernel where the
  // reference has one (kernel_of.ts), and returns null; else the call for the shared kernels
  // ("lossy" runs them, and they lose the same columns).
  #launchDevice(call: UpsampleCall<CpuBuffer>): UpsampleCall<CpuBuffer> | null {
    const arranged = launchPlanOf(call, this.ascend, this.#routeOptions);
    if (arranged?.kind === "route") {
      const route = arranged.route;
      this.#runInOrder(() => runRouteCpu(kernelArgs(call), route));
      return null;
    }
    if (arranged?.kind === "transposed") {
      const launch = tbeLaunchOf(transposedSizes(call), this.ascend);
      this.#runInOrder(() => runTbeCpu(transposedArgs(kernelArgs(call)), launch));
      return null;
    }
    const kernel = deviceKernelOf(call, this.ascend);
    if (kernel !== null) {
      this.#runInOrder(() => kernel(kernelArgs(call)));
      return null;
    }
    return ascendCall(call, this.ascend);
  }

  /** Rejects forward results too large for one host typed array, before anything is allocated. */
  checkForwardSupported(params: UpsampleParams & { readonly deterministic: boolean }): void {
    const { op, dtype, inputSize, outputSize } = params;
    // What the family refuses (forwardPlan throws it), before anything is allocated.
    if (this.numerics === "device") forwardPlan(params, this.ascend);
    checkResultFits(this, dtype, FORWARD_OP_SPECS[op].name, inputSize, outputSize);
  }

  /** Runs the forward op now, or queues it (a large op with several threads, or while work is queued). */
  launchForward(call: ForwardCall<CpuBuffer>): void {
    if (this.numerics === "device") this.#launchForwardDevice(call);
    else this.#start(call);
  }

  // With device numerics: the device's forward, on the calling thread, in order.
  #launchForwardDevice(call: ForwardCall<CpuBuffer>): void {
    const plan = forwardPlan(call, this.ascend);
    this.#runInOrder(() => forwardDeviceCpu(forwardArgs(call), plan));
  }

  /** Whether a launched call object may be launched again (in the WebAssembly memory: see keepCall). */
  keepsCall(call: UpsampleCall<CpuBuffer> | ForwardCall<CpuBuffer>): boolean {
    return keepCall(call);
  }

  // Runs `task` (a device-reference kernel, always on the calling thread) now, or after the work
  // queued so far; a queued failure is reported by the next download or synchronize.
  #runInOrder(task: () => void): void {
    const run = (direct: boolean): void => {
      if (this.#closed) return;
      try {
        task();
      } catch (error) {
        if (direct) throw error;
        this.#failure ??= error;
      }
    };
    if (this.#queue.busy) this.#queue.run(() => run(false));
    else run(true);
  }

  // Runs the op on the calling thread, or starts it on the workers and returns when they are done.
  // `direct`: called by launch() itself, so errors can still reach the caller.
  #launch(call: AnyCall, direct: boolean): Promise<void> | void {
    if (this.#closed || call.inputSize[0] * call.inputSize[1] === 0) return; // empty: nothing to do
    try {
      const kernels = this.#kernels;
      const ready = kernels === null ? null : prepare(kernels, call, this.threads);
      if (ready !== null && this.threads > 1 && ready.elements >= this.#minParallel) {
        this.#scheduler ??= KernelScheduler.create(kernels!, this.threads, this.#minParallel === 0);
        const scheduler = this.#scheduler;
        // The scheduler runs it here alone or shared with the workers (timed), as its shape's times say.
        const pending = scheduler === null || scheduler.broken ? null : scheduler.run(ready);
        if (pending !== null) return pending === undefined ? undefined : this.#then(pending, call);
      }
      runHere(kernels, call, ready);
    } catch (error) {
      // Queued: the caller has returned; the next download or synchronize reports it.
      if (direct) throw error;
      this.#failure ??= error;
    }
  }

  #then(pending: Promise<void>, call: AnyCall): Promise<void> {
    return pending.catch(() => {
      // A worker died: this op and the later ones run on the calling thread.
      const kernels = this.#kernels;
      if (kernels === null) return; // closed
      try {
        runHere(kernels, call, prepare(kernels, call, this.threads));
      } catch (error) {
        this.#failure ??= error;
      }
    });
  }

  /** The CPU kernels are deterministic whatever the mode. */
  setDeterministic(_on: boolean): void {}

  /** Waits for the queued work; rejects when some of it failed (once per failure). */
  synchronize(): Promise<void> {
    if (!this.#queue.busy) {
      return this.#failure === null ? RESOLVED : Promise.reject(this.#takeFailure());
    }
    return new Promise((resolve, reject) => {
      this.#queue.run(() => {
        if (this.#failure !== null && !this.#closed) reject(this.#takeFailure());
        else resolve();
      });
    });
  }

  #takeFailure(): unknown {
    const failure = this.#failure;
    this.#failure = null;
    return failure;
  }

  /**
   * Drops the wasm memory (tensors still in it must not be used afterwards) and stops the workers;
   * queued ops are dropped, pending reads reject, pending synchronizations resolve.
   */
  close(): void {
    this.#closed = true;
    this.#kernels = null;
    this.#cache = [new Map(), new Map(), new Map()];
    this.#cachedBytes = 0;
    this.#scheduler?.close();
    for (const task of this.#queue.clear()) task();
  }
}
