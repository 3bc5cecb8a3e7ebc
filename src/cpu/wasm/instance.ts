/**
 * One instance of the WebAssembly kernels (`kernels.c`) with its own memory and heap: the CPU
 * backend keeps its tensors in that memory so the kernels read and write them in place.
 *
 * @module
 */

import { type FmaPath, fmaPath, kernelModuleBytes, probeFusedModule } from "./fma_path.ts";
import { MAX_PAGES, WasmHeap } from "./heap.ts";
import { withSharedMemoryImport } from "./shared_import.ts";

/** The kernels' exports (pointers are byte addresses in the instance's memory). */
export interface KernelExports {
  /** See `nearest_backward` in kernels.c. */
  nearest_backward(
    dtype: number,
    out: number,
    grad: number,
    planes: number,
    inH: number,
    inW: number,
    outW: number,
    hStarts: number,
    wStarts: number,
    wFactor: number,
    maxRange: number,
    work: number,
    row0: number,
    row1: number,
  ): void;
  /** See `bilinear_down2` in kernels.c. */
  bilinear_down2(
    dtype: number,
    out: number,
    grad: number,
    planes: number,
    outH: number,
    outW: number,
    hL0: number,
    hL1: number,
    wL0: number,
    wL1: number,
    oh0: number,
    oh1: number,
  ): void;
  /** Work bytes `nearest_backward` needs. */
  nearest_scratch_bytes(inW: number, outW: number): number;
  /** Work bytes `bilinear_backward` needs. */
  bilinear_scratch_bytes(inH: number, inW: number, outH: number, outW: number): number;
  /** See `bilinear_backward` in kernels.c. */
  bilinear_backward(
    dtype: number,
    out: number,
    grad: number,
    planes: number,
    inH: number,
    inW: number,
    outH: number,
    outW: number,
    hI0: number,
    hI1: number,
    hL0: number,
    hL1: number,
    wI0: number,
    wI1: number,
    wL0: number,
    wL1: number,
    work: number,
    row0: number,
    row1: number,
  ): void;
  /** See `nearest_forward` in forward_nearest.c. */
  nearest_forward(
    dtype: number,
    out: number,
    input: number,
    planes: number,
    inH: number,
    inW: number,
    outH: number,
    outW: number,
    hIdx: number,
    wIdx: number,
    groups: number,
    pattern: number,
    row0: number,
    row1: number,
  ): void;
  /** See `bilinear_forward` in forward_bilinear.c. */
  bilinear_forward(
    dtype: number,
    out: number,
    input: number,
    planes: number,
    mode: number,
    inH: number,
    inW: number,
    outH: number,
    outW: number,
    hI0: number,
    hI1: number,
    hL0: number,
    hL1: number,
    wI0: number,
    wI1: number,
    wL0: number,
    wL1: number,
    groups: number,
    work: number,
    row0: number,
    row1: number,
  ): void;
  /** Work bytes `bilinear_forward` needs per thread. */
  bilinear_forward_scratch_bytes(inW: number, outW: number): number;
  /** Widens float16 (1) / bfloat16 (2) bits to float32. */
  widen_to_f32(dtype: number, src: number, dst: number, n: number): void;
  /** Rounds float32 to float16 (1) / bfloat16 (2) bits, nearest even. */
  narrow_from_f32(dtype: number, src: number, dst: number, n: number): void;
  /** First byte after the module's stack and data. */
  __heap_base: WebAssembly.Global;
  /** The shadow stack's top; each thread's instance gets a stack of its own. */
  __stack_pointer: WebAssembly.Global;
}

/** Bytes of the shadow stack the module reserves (`-z stack-size` in tools/build_wasm.ts). */
export const STACK_BYTES = 65536;

// Modules by path and memory: "fused", "exact", and shared ones by import limits
// ("fused/initial/maximum" pages).
const compiled = new Map<string, WebAssembly.Module>();

/**
 * The kernels' module, compiled once per process, path and memory kind on first use (importing
 * this module does nothing). `shared`: the same code importing a shared memory of `initialPages` to
 * `maxPages` pages (see shared_import.ts). `path`: the fused or exact module (default: the one
 * fma_path.ts chose for the process).
 *
 * @example
 * ```ts ignore
 * const instance = new WebAssembly.Instance(kernelModule(false), { env: { memory } });
 * ```
 */
export function kernelModule(
  shared: boolean,
  initialPages = 2,
  maxPages: number = MAX_PAGES,
  path: FmaPath = fmaPath().path,
): WebAssembly.Module {
  const key = shared ? `${path}/${initialPages}/${maxPages}` : path;
  let module = compiled.get(key);
  if (module === undefined) {
    if (path === "fused" && !probeFusedModule().fused) {
      throw new Error(`the fused kernels cannot run here: ${probeFusedModule().reason}`);
    }
    const bytes = kernelModuleBytes(path);
    module = shared
      ? new WebAssembly.Module(withSharedMemoryImport(bytes, initialPages, maxPages))
      : (path === "fused" ? probeFusedModule().module : null) ?? new WebAssembly.Module(bytes);
    compiled.set(key, module);
  }
  return module;
}

/**
 * A shared memory of `pages` pages that cannot grow, or null where the host refuses to commit that
 * much address space. A shared memory that can grow makes V8 reload its size at every bounds check
 * (another thread may grow it: V8's turboshaft-graph-interface.cc, "we don't cache the size of
 * shared growable memories"); at its full size from the start, the kernels run as fast as on a
 * private memory (measured: ~7-9 % faster on bilinear). Untouched pages take no RSS.
 */
function fullSizeSharedMemory(pages: number): WebAssembly.Memory | null {
  try {
    return new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
  } catch {
    return null;
  }
}

/**
 * The kernels bound to a fresh memory, and the heap that allocates tensors in it.
 *
 * @example
 * ```ts
 * import { WasmKernels } from "./instance.ts";
 * const kernels = new WasmKernels();
 * const ptr = kernels.heap.allocate(64);
 * kernels.heap.free(ptr);
 * ```
 */
export class WasmKernels {
  /** Allocator of the instance's memory. */
  readonly heap: WasmHeap;
  /** The raw exports. */
  readonly exports: KernelExports;
  /** The call plan whose tables were last written into the scratch block (see launch.ts). */
  plan: unknown = null;
  /** The scratch address they were written at. */
  planBase = -1;
  #scratch = -1;
  #scratchBytes = 0;
  #i32: Int32Array<ArrayBufferLike> = new Int32Array(0);
  #f32: Float32Array<ArrayBufferLike> = new Float32Array(0);

  /** Whether the memory is shared with worker threads. */
  readonly shared: boolean;
  /** The compiled kernels this instance runs (worker threads instantiate the same). */
  readonly module: WebAssembly.Module;
  /** Which module: `fused` (relaxed_madd) or `exact` (see fma_path.ts). */
  readonly fma: FmaPath;

  /**
   * @param maxBytes the memory never grows past this (default and limit: 4 GiB)
   * @param shared a shared memory, which worker threads can instantiate the kernels on
   * @param fma the module (default: the process's choice, fma_path.ts); tests force each
   */
  constructor(maxBytes: number = MAX_PAGES * 65536, shared = false, fma?: FmaPath) {
    const maxPages = Math.max(2, Math.min(MAX_PAGES, Math.floor(maxBytes / 65536)));
    const fixed = shared ? fullSizeSharedMemory(maxPages) : null;
    const memory = fixed ?? new WebAssembly.Memory({ initial: 2, maximum: maxPages, shared });
    this.fma = fma ?? fmaPath().path;
    this.module = kernelModule(shared, fixed === null ? 2 : maxPages, maxPages, this.fma);
    const instance = new WebAssembly.Instance(this.module, { env: { memory } });
    this.shared = shared;
    this.exports = instance.exports as unknown as KernelExports;
    this.heap = new WasmHeap(memory, this.exports.__heap_base.value as number, maxPages);
  }

  /** The whole memory as int32 (re-created after the memory grew). */
  get i32(): Int32Array<ArrayBufferLike> {
    if (this.#i32.buffer !== this.heap.memory.buffer) this.#views();
    return this.#i32;
  }

  /** The whole memory as float32 (re-created after the memory grew). */
  get f32(): Float32Array<ArrayBufferLike> {
    if (this.#f32.buffer !== this.heap.memory.buffer) this.#views();
    return this.#f32;
  }

  #views(): void {
    const buffer = this.heap.memory.buffer;
    this.#i32 = new Int32Array(buffer);
    this.#f32 = new Float32Array(buffer);
  }

  /** Bytes held by the scratch block. */
  get scratchBytes(): number {
    return this.#scratchBytes;
  }

  /**
   * A scratch block of at least `bytes` bytes, reused across calls (grown when too small), or -1
   * when the memory cannot hold it. Allocating may grow the memory: take views afterwards.
   */
  scratch(bytes: number): number {
    if (bytes <= this.#scratchBytes) return this.#scratch;
    if (this.#scratch >= 0) this.heap.free(this.#scratch);
    this.#scratchBytes = 0;
    // No plan's tables are in a freed block (the block may come back at the same address).
    this.plan = null;
    this.planBase = -1;
    // Some headroom so that slowly growing shapes do not reallocate every call.
    const size = Math.ceil((bytes * 1.25) / 16) * 16;
    this.#scratch = this.heap.allocate(size);
    if (this.#scratch >= 0) this.#scratchBytes = size;
    return this.#scratch;
  }
}
