/**
 * The CPU backend's tensor memory: one WebAssembly memory per device (growable, or for worker
 * threads shared and made at its full size: see instance.ts), shared with the wasm
 * kernels so they work on tensors in place, and a best-fit allocator with coalescing over it.
 *
 * @module
 */

/** 16-byte blocks: every tensor starts on a SIMD-vector boundary. */
const ALIGN = 16;
const PAGE = 65536;
/** The wasm32 limit: 4 GiB. */
export const MAX_PAGES = 65536;

/**
 * A best-fit allocator over a `WebAssembly.Memory`, growing it when no free block is large enough.
 * Memory freed is kept for reuse until the heap is dropped (a wasm memory cannot shrink).
 *
 * @example
 * ```ts
 * import { WasmHeap } from "./heap.ts";
 * const heap = new WasmHeap(new WebAssembly.Memory({ initial: 1, maximum: 16 }), 0);
 * const ptr = heap.allocate(1024);
 * heap.free(ptr);
 * ```
 */
export class WasmHeap {
  /** The memory the blocks live in. */
  readonly memory: WebAssembly.Memory;
  // Free blocks sorted by address; neighbours are always merged.
  #freeStart: number[] = [];
  #freeSize: number[] = [];
  // Size of every live block, by address.
  #live = new Map<number, number>();
  #top: number;
  readonly #maxPages: number;

  /**
   * @param memory the memory to carve blocks from
   * @param base first usable byte (the wasm module's `__heap_base`)
   * @param maxPages the memory is never grown past this many 64 KiB pages
   */
  constructor(memory: WebAssembly.Memory, base: number, maxPages: number = MAX_PAGES) {
    this.memory = memory;
    this.#top = alignUp(base);
    this.#maxPages = Math.min(maxPages, MAX_PAGES);
  }

  /** Bytes in live blocks. */
  get liveBytes(): number {
    let total = 0;
    for (const size of this.#live.values()) total += size;
    return total;
  }

  /** Number of live blocks. */
  get liveBlocks(): number {
    return this.#live.size;
  }

  /**
   * A block of at least `bytes` bytes (contents unspecified), or `-1` when the memory cannot grow
   * enough (the 4 GiB wasm32 limit or the host's memory).
   */
  allocate(bytes: number): number {
    const size = alignUp(Math.max(bytes, 1));
    let best = -1;
    for (let i = 0; i < this.#freeSize.length; i++) {
      const s = this.#freeSize[i];
      if (s >= size && (best < 0 || s < this.#freeSize[best])) best = i;
    }
    let ptr: number;
    if (best >= 0) {
      ptr = this.#freeStart[best];
      if (this.#freeSize[best] === size) {
        this.#freeStart.splice(best, 1);
        this.#freeSize.splice(best, 1);
      } else {
        this.#freeStart[best] += size;
        this.#freeSize[best] -= size;
      }
    } else {
      // Free blocks never touch the top (see #insertFree), so new space starts there.
      ptr = this.#top;
      if (!this.#ensure(ptr + size)) return -1;
      this.#top = ptr + size;
    }
    this.#live.set(ptr, size);
    return ptr;
  }

  /** Returns a block to the heap; freeing an unknown address throws. */
  free(ptr: number): void {
    const size = this.#live.get(ptr);
    if (size === undefined) throw new Error(`WasmHeap.free: ${ptr} is not a live block`);
    this.#live.delete(ptr);
    this.#insertFree(ptr, size);
  }

  #insertFree(ptr: number, size: number): void {
    const starts = this.#freeStart, sizes = this.#freeSize;
    let lo = 0, hi = starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (starts[mid] < ptr) lo = mid + 1;
      else hi = mid;
    }
    starts.splice(lo, 0, ptr);
    sizes.splice(lo, 0, size);
    if (lo + 1 < starts.length && starts[lo] + sizes[lo] === starts[lo + 1]) {
      sizes[lo] += sizes[lo + 1];
      starts.splice(lo + 1, 1);
      sizes.splice(lo + 1, 1);
    }
    if (lo > 0 && starts[lo - 1] + sizes[lo - 1] === starts[lo]) {
      sizes[lo - 1] += sizes[lo];
      starts.splice(lo, 1);
      sizes.splice(lo, 1);
    }
    // The block at the top is released to the bump region, so a later larger block can extend it.
    const last = starts.length - 1;
    if (last >= 0 && starts[last] + sizes[last] === this.#top) {
      this.#top = starts[last];
      starts.pop();
      sizes.pop();
    }
  }

  #ensure(end: number): boolean {
    const have = this.memory.buffer.byteLength;
    if (end <= have) return true;
    const pages = Math.ceil((end - have) / PAGE);
    const limit = this.#maxPages;
    if (have / PAGE + pages > limit) return false;
    try {
      // Grow by at least 1/8 of the current size: fewer grows (each detaches the old buffer).
      const extra = Math.min(Math.max(pages, Math.ceil(have / PAGE / 8)), limit - have / PAGE);
      this.memory.grow(extra);
    } catch {
      try {
        this.memory.grow(pages);
      } catch {
        return false;
      }
    }
    return true;
  }
}

function alignUp(n: number): number {
  return Math.ceil(n / ALIGN) * ALIGN;
}
