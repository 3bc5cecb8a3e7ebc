/**
 * The CPU backend: tensors live in a WebAssembly memory and ops run synchronously, on the wasm SIMD
 * kernels when both tensors are contiguous, else on the TypeScript kernels (same bits either way),
 * so results are ready when the op returns and are always deterministic.
 *
 * @module
 */

import type { Backend, MemoryInfo, StorageView, UpsampleCall, UpsampleParams } from "../backend.ts";
import { OP_RULES } from "../ops/validate.ts";
import { elementCount } from "../tensor/layout.ts";
import type { DType, HostArray } from "../tensor/dtype.ts";
import { CpuBuffer } from "./buffer.ts";
import type { StridedArray } from "./types.ts";
import {
  bilinear2dBackwardCpu,
  nearestExact1dBackwardCpu,
  nearestExact2dBackwardCpu,
} from "./mod.ts";
import { WasmKernels } from "./wasm/instance.ts";
import { launchWasm } from "./wasm/launch.ts";

// Typed arrays past this length cannot be allocated by V8; checked before allocating.
const MAX_HOST_ELEMENTS = 2 ** 32 - 1;
// Freed buffers kept whole for the next allocation of the same dtype and length (a training loop
// allocates the same shapes every step): no allocator search, no new objects, no zero fill.
const MAX_CACHED_BYTES = 256 * 2 ** 20;
const MAX_CACHED_PER_SIZE = 4;
const DTYPE_INDEX = { float32: 0, float16: 1, bfloat16: 2 } as const;
// Ops finish before they return: every synchronize() can hand out the same settled promise.
const RESOLVED: Promise<void> = Promise.resolve();

/** Which kernels a CPU device runs. */
export type CpuKernels = "auto" | "typescript";

/** Tuning of a {@link CpuBackend} (internal; tests use it to reach the fallbacks). */
export interface CpuBackendOptions {
  /** Bytes the wasm memory may grow to (default 4 GiB, the wasm32 limit). */
  heapLimitBytes?: number;
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
  #kernels: WasmKernels | null;
  #cache: Map<number, CpuBuffer[]>[] = [new Map(), new Map(), new Map()];
  #cachedBytes = 0;
  #closed = false;

  /**
   * @param kernels `"auto"` (default): tensors in WebAssembly memory, wasm SIMD
   * kernels for contiguous tensors; `"typescript"`: plain typed arrays and TypeScript kernels only.
   */
  constructor(kernels: CpuKernels = "auto", options: CpuBackendOptions = {}) {
    this.#kernels = kernels === "typescript" ? null : new WasmKernels(options.heapLimitBytes);
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
    return kernels.heap.liveBytes - kernels.scratchBytes - cached;
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

  /** Keeps a buffer for reuse (bounded), else returns it to the heap (typed arrays: to the GC). */
  free(handle: CpuBuffer): void {
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
   * Needs `--allow-sys` (`systemMemoryInfo`).
   */
  memoryInfo(): MemoryInfo {
    const { available, total } = Deno.systemMemoryInfo();
    return { free: available, total };
  }

  /** Copies encoded host data in. */
  upload(handle: CpuBuffer, data: HostArray): void {
    handle.view().set(data);
  }

  /** Returns a copy of a range of the storage. */
  download(handle: CpuBuffer, _dtype: DType, start: number, length: number): Promise<HostArray> {
    return Promise.resolve(handle.view().slice(start, start + length));
  }

  /** Rejects results too large for one host typed array, before anything is allocated. */
  checkSupported(params: UpsampleParams): void {
    const length = elementCount(params.inputSize);
    if (length > MAX_HOST_ELEMENTS) {
      throw new RangeError(
        `${OP_RULES[params.op].name}: inputSize [${params.inputSize.join(", ")}] needs ${length} ` +
          `elements; the CPU backend holds at most ${MAX_HOST_ELEMENTS} in one tensor`,
      );
    }
  }

  /** Runs the op now. */
  launch(call: UpsampleCall<CpuBuffer>): void {
    if (this.#kernels !== null && launchWasm(this.#kernels, call)) return;
    // Views are taken after launchWasm, which may have grown the memory.
    const args = {
      gradOutput: strided(call.gradOutput),
      out: strided(call.out),
      inputSize: call.inputSize,
      outputSize: call.outputSize,
      scales: call.scales,
    };
    if (call.op === "nearestExact1d") nearestExact1dBackwardCpu(args);
    else if (call.op === "nearestExact2d") nearestExact2dBackwardCpu(args);
    else bilinear2dBackwardCpu({ ...args, alignCorners: call.alignCorners });
  }

  /** The CPU kernels are deterministic whatever the mode. */
  setDeterministic(_on: boolean): void {}

  /** Ops finish before they return, so there is never anything to wait for. */
  synchronize(): Promise<void> {
    return RESOLVED;
  }

  /** Drops the wasm memory (tensors still in it must not be used afterwards). */
  close(): void {
    this.#closed = true;
    this.#kernels = null;
    this.#cache = [new Map(), new Map(), new Map()];
    this.#cachedBytes = 0;
  }
}

function strided(view: StorageView<CpuBuffer>): StridedArray {
  return {
    data: view.handle.view(),
    dtype: view.dtype,
    strides: view.strides,
    offset: view.offset,
  };
}
