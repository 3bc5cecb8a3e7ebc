/**
 * The CPU backend's storage handle: a block of the backend's WebAssembly memory (so the wasm kernels
 * use it in place), or a plain typed array when that memory cannot hold it.
 *
 * @module
 */

import { allocateHost, type DType, dtypeByteSize, type HostArray } from "../tensor/dtype.ts";
import type { WasmHeap } from "./wasm/heap.ts";

// Placeholder view until first use: creating a typed array costs about as much as a small op.
const NO_VIEW = new Float32Array(0);

/**
 * Storage of one CPU tensor. {@link CpuBuffer.view} gives its elements as a typed array (float32
 * values or float16/bfloat16 bits); the view is re-created when the memory has grown, since growing
 * a wasm memory detaches its old `ArrayBuffer`.
 *
 * @example
 * ```ts
 * import { CpuBuffer } from "./buffer.ts";
 * const buffer = CpuBuffer.host("float32", 4);
 * buffer.view().set([1, 2, 3, 4]);
 * ```
 */
export class CpuBuffer {
  /** Element type. */
  readonly dtype: DType;
  /** Elements. */
  readonly length: number;
  /** The heap the block belongs to, or null for a host array. */
  readonly heap: WasmHeap | null;
  /** Byte address of the block in the heap's memory (-1 for a host array). */
  readonly ptr: number;
  #view: HostArray;
  #source: ArrayBufferLike | null;

  private constructor(dtype: DType, length: number, heap: WasmHeap | null, ptr: number) {
    this.dtype = dtype;
    this.length = length;
    this.heap = heap;
    this.ptr = ptr;
    this.#source = null;
    this.#view = heap === null ? allocateHost(dtype, length) : NO_VIEW;
  }

  /** A buffer backed by its own typed array. */
  static host(dtype: DType, length: number): CpuBuffer {
    return new CpuBuffer(dtype, length, null, -1);
  }

  /** A buffer in `heap`, or null when the heap cannot hold it. */
  static inHeap(heap: WasmHeap, dtype: DType, length: number): CpuBuffer | null {
    const ptr = heap.allocate(length * dtypeByteSize(dtype));
    return ptr < 0 ? null : new CpuBuffer(dtype, length, heap, ptr);
  }

  /** Bytes of storage. */
  get byteLength(): number {
    return this.length * dtypeByteSize(this.dtype);
  }

  /** The elements, as a typed array valid until the next allocation in the same heap. */
  view(): HostArray {
    const heap = this.heap;
    if (heap === null) return this.#view;
    const buffer = heap.memory.buffer;
    if (buffer !== this.#source) {
      this.#source = buffer;
      this.#view = this.dtype === "float32"
        ? new Float32Array(buffer, this.ptr, this.length)
        : new Uint16Array(buffer, this.ptr, this.length);
    }
    return this.#view;
  }

  /** Returns a heap block to its heap (a host array is left to the GC). */
  release(): void {
    if (this.heap !== null) this.heap.free(this.ptr);
  }
}
