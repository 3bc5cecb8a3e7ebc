/**
 * Cached aclnn descriptors: one `aclTensor` per view of a device buffer (shape, strides, offset, dtype),
 * with the `aclIntArray`s of that view's sizes, so that repeated calls on the same tensors skip
 * `aclCreateTensor`/`aclCreateIntArray` and their destroys.
 *
 * Why reuse is allowed: an aclTensor is a host-side description owned by the caller until
 * `aclDestroyTensor` (OB `docs/zh/nnopbase/aclnn/aclCreateTensor.md`); the aclnn ops take it as
 * `const aclTensor*` and build their own contiguous copies in the executor (CV
 * `aclnn_upsample_nearest_exact2d_backward.cpp`); CANN's repeatable-executor API even keeps one aclTensor
 * across executions (`aclSetTensorAddr.md`). `aclCreateIntArray` copies its values. The descriptor of a
 * view never changes because a buffer's address, length and dtype never do.
 *
 * Each view's descriptor also holds the repeatable executors of the ops that read it as gradOutput
 * (`executors.ts`), destroyed before either view's aclTensor.
 *
 * Lifetime: every cached object belongs to a live buffer. `forget(buffer)` (the buffer is freed) and
 * `clear()` (the device closes) destroy them. A launch that fails calls `rollback()`, which destroys the
 * objects created during that launch, so a failed call leaves no new aclnn object behind.
 *
 * @module
 */

import type { StorageView, UpsampleOp } from "../backend.ts";
import type { DType } from "../tensor/dtype.ts";
import type { NpuBuffer } from "./aclnn_call.ts";
import { MAX_EXECUTORS_PER_VIEW, type ReusedExecutor } from "./executors.ts";
import { ACL_DTYPE, ACL_FORMAT, type NnopbaseLib } from "./symbols.ts";

/** The nnopbase calls the cache makes (a subset of the library's table, so tests can wrap it). */
export type DescriptorApi = Pick<
  NnopbaseLib,
  | "aclCreateTensor"
  | "aclCreateIntArray"
  | "aclDestroyTensor"
  | "aclDestroyIntArray"
  | "aclDestroyAclOpExecutor"
>;

/**
 * Views kept per buffer. Two are needed by one call (gradOutput and out may be views of one storage);
 * more keep a few slices of a shared storage warm without letting an unbounded number of views pile up.
 */
export const MAX_VIEWS_PER_BUFFER = 4;

// Bits of ViewDescriptor.created: which objects the current launch made.
const NEW_TENSOR = 1;
const NEW_SPATIAL = 2;
const NEW_SIZES = 4;

/** The aclnn objects describing one view of a device buffer. Internal to the NPU backend. */
export class ViewDescriptor {
  /** UNSAFE: the `aclTensor*`. */
  tensor = 0n;
  /** UNSAFE: `aclIntArray*` of `shape[2..]` (a gradOutput's outputSize); 0n until first asked for. */
  spatial = 0n;
  /** UNSAFE: `aclIntArray*` of the whole shape (an out's inputSize); 0n until first asked for. */
  sizes = 0n;
  /** Objects created by the launch in progress (NEW_* bits), destroyed if it fails. */
  created = 0;
  /** Repeatable executors of ops reading this view as gradOutput, most recently made last. */
  readonly executors: ReusedExecutor[] = [];
  /** gradOutput views with an executor writing this view (each listed once). */
  readonly feeds: ViewDescriptor[] = [];
  /**
   * The view's own shape and strides arrays when they are frozen (a Tensor's are): the same frozen
   * arrays again are the same view without comparing elements. Null when the caller's may change.
   */
  readonly frozenShape: readonly number[] | null;
  /** See {@link ViewDescriptor.frozenShape}. */
  readonly frozenStrides: readonly number[] | null;

  /**
   * Internal: made by {@link DescriptorCache.view}.
   *
   * @example
   * ```ts ignore
   * const descriptor = cache.view(call.gradOutput);
   * ```
   */
  constructor(
    /** The buffer the view reads. */
    readonly buffer: NpuBuffer,
    /** Element type. */
    readonly dtype: DType,
    /** A copy of the view's shape. */
    readonly shape: readonly number[],
    /** A copy of the view's strides. */
    readonly strides: readonly number[],
    /** Storage offset in elements. */
    readonly offset: number,
    /** The view's shape array (kept only when frozen). */
    sourceShape: readonly number[],
    /** The view's strides array (kept only when frozen). */
    sourceStrides: readonly number[],
  ) {
    const frozen = Object.isFrozen(sourceShape) && Object.isFrozen(sourceStrides);
    this.frozenShape = frozen ? sourceShape : null;
    this.frozenStrides = frozen ? sourceStrides : null;
  }
}

/** Reused buffers for the descriptors (aclCreateTensor and aclCreateIntArray copy their inputs). */
const dimsScratch = new BigInt64Array(8);
const stridesScratch = new BigInt64Array(8);
const storageScratch = new BigInt64Array(1);
// 32-bit views of the same memory: writing halves avoids allocating a BigInt per element.
const dims32 = new Uint32Array(dimsScratch.buffer);
const strides32 = new Uint32Array(stridesScratch.buffer);
const storage32 = new Uint32Array(storageScratch.buffer);
const SMALL = Array.from({ length: 9 }, (_, i) => BigInt(i));
const FORMAT_BY_RANK: Readonly<Record<number, number>> = {
  3: ACL_FORMAT.NCL,
  4: ACL_FORMAT.NCHW,
  5: ACL_FORMAT.NCDHW,
};

// Stores a non-negative safe integer as int64 (little-endian halves).
function putInt64(target: Uint32Array, index: number, value: number): void {
  target[2 * index] = value >>> 0;
  target[2 * index + 1] = Math.floor(value / 4294967296);
}

function sameView(entry: ViewDescriptor, view: StorageView<NpuBuffer>): boolean {
  if (entry.offset !== view.offset || entry.dtype !== view.dtype) return false;
  const { shape, strides } = view;
  // The same tensor again (its layout arrays are frozen): nothing to compare.
  if (entry.frozenShape === shape && entry.frozenStrides === strides) return true;
  const rank = shape.length;
  if (entry.shape.length !== rank) return false;
  for (let d = 0; d < rank; d++) {
    if (entry.shape[d] !== shape[d] || entry.strides[d] !== strides[d]) return false;
  }
  return true;
}

/**
 * The descriptor cache of one NPU backend.
 *
 * @example
 * ```ts ignore
 * const cache = new DescriptorCache(libs.nnopbase, (api) => runtime.error(561000, api));
 * const grad = cache.view(call.gradOutput);
 * phase1(grad.tensor, cache.spatialSizes(grad), ...);
 * cache.commit(); // or cache.rollback() when the launch failed
 * cache.forget(buffer); // when the buffer is freed
 * cache.clear(); // when the device closes
 * ```
 */
export class DescriptorCache {
  readonly #api: DescriptorApi;
  readonly #failed: (api: string) => Error;
  readonly #byBuffer = new Map<NpuBuffer, ViewDescriptor[]>();
  // Descriptors with objects made by the launch in progress.
  readonly #created: ViewDescriptor[] = [];
  #objects = 0;
  #executors = 0;

  /**
   * @param api the nnopbase functions
   * @param failed the error to throw when a create call returns NULL (given the API name)
   */
  constructor(api: DescriptorApi, failed: (api: string) => Error) {
    this.#api = api;
    this.#failed = failed;
  }

  /** Live aclTensor + aclIntArray objects held by the cache. */
  get objects(): number {
    return this.#objects;
  }

  /** Live repeatable executors held by the cache. */
  get executors(): number {
    return this.#executors;
  }

  /** Buffers with at least one cached view. */
  get buffers(): number {
    return this.#byBuffer.size;
  }

  /**
   * The descriptor of `view`, with its aclTensor created on a miss (the least recently used view of the
   * buffer is destroyed when it already has {@link MAX_VIEWS_PER_BUFFER}).
   *
   * @throws what `failed` returns for `"aclCreateTensor"` when the runtime refuses to create it
   */
  view(view: StorageView<NpuBuffer>): ViewDescriptor {
    const buffer = view.handle;
    let list = this.#byBuffer.get(buffer);
    if (list !== undefined) {
      const last = list.length - 1;
      for (let i = last; i >= 0; i--) {
        const entry = list[i];
        if (!sameView(entry, view)) continue;
        if (i !== last) { // most recently used last, so eviction takes the oldest
          list.splice(i, 1);
          list.push(entry);
        }
        return entry;
      }
    }
    const tensor = this.#createTensor(view);
    const entry = new ViewDescriptor(
      buffer,
      view.dtype,
      view.shape.slice(),
      view.strides.slice(),
      view.offset,
      view.shape,
      view.strides,
    );
    entry.tensor = tensor;
    this.#objects++;
    this.#noteCreated(entry, NEW_TENSOR);
    if (list === undefined) this.#byBuffer.set(buffer, list = []);
    else if (list.length >= MAX_VIEWS_PER_BUFFER) this.#destroy(list.shift()!);
    list.push(entry);
    return entry;
  }

  /** The `aclIntArray` of `entry.shape[2..]` (outputSize of a gradOutput view), created once. */
  spatialSizes(entry: ViewDescriptor): bigint {
    if (entry.spatial === 0n) {
      entry.spatial = this.#createIntArray(entry.shape, 2);
      this.#noteCreated(entry, NEW_SPATIAL);
    }
    return entry.spatial;
  }

  /** The `aclIntArray` of `entry.shape` (inputSize of an out view), created once. */
  fullSizes(entry: ViewDescriptor): bigint {
    if (entry.sizes === 0n) {
      entry.sizes = this.#createIntArray(entry.shape, 0);
      this.#noteCreated(entry, NEW_SIZES);
    }
    return entry.sizes;
  }

  /**
   * The repeatable executor made for these parameters on `grad` -> `out`, or null.
   *
   * @example
   * ```ts ignore
   * const reused = cache.executorFor(grad, out, "nearestExact2d", 0, 0, false, false);
   * ```
   */
  executorFor(
    grad: ViewDescriptor,
    out: ViewDescriptor,
    op: UpsampleOp,
    scale0: number,
    scale1: number,
    alignCorners: boolean,
    deterministic: boolean,
  ): ReusedExecutor | null {
    const list = grad.executors;
    for (let i = list.length - 1; i >= 0; i--) {
      const entry = list[i];
      if (entry.matches(op, out, scale0, scale1, alignCorners, deterministic)) return entry;
    }
    return null;
  }

  /**
   * Keeps a repeatable executor made for `grad` -> `entry.out` (the oldest of `grad`'s is destroyed
   * when it already has {@link MAX_EXECUTORS_PER_VIEW}).
   */
  keepExecutor(grad: ViewDescriptor, entry: ReusedExecutor): void {
    const list = grad.executors;
    if (list.length >= MAX_EXECUTORS_PER_VIEW) this.dropExecutor(grad, list[0]);
    list.push(entry);
    this.#executors++;
    const out = entry.out;
    if (!out.feeds.includes(grad)) out.feeds.push(grad);
  }

  /** Destroys a kept executor (a failed phase 2, an eviction, or one of its views going). */
  dropExecutor(grad: ViewDescriptor, entry: ReusedExecutor): void {
    const list = grad.executors;
    const index = list.indexOf(entry);
    if (index < 0) return;
    list.splice(index, 1);
    const out = entry.out;
    if (!list.some((other) => other.out === out)) {
      const at = out.feeds.indexOf(grad);
      if (at >= 0) out.feeds.splice(at, 1);
    }
    const executor = entry.executor;
    entry.executor = 0n;
    this.#executors--;
    this.#api.aclDestroyAclOpExecutor(executor);
  }

  /** The launch succeeded: keep what it created. */
  commit(): void {
    const created = this.#created;
    if (created.length === 0) return;
    for (const entry of created) entry.created = 0;
    created.length = 0;
  }

  /** The launch failed: destroy every object it created (older descriptors stay cached). */
  rollback(): void {
    const created = this.#created;
    for (const entry of created) {
      const bits = entry.created;
      entry.created = 0;
      if (bits & NEW_TENSOR) {
        // The whole descriptor is new, so are its int arrays.
        const list = this.#byBuffer.get(entry.buffer);
        const index = list === undefined ? -1 : list.indexOf(entry);
        if (index >= 0) {
          list!.splice(index, 1);
          if (list!.length === 0) this.#byBuffer.delete(entry.buffer);
          this.#destroy(entry);
        }
        continue;
      }
      if (bits & NEW_SPATIAL) this.#destroyIntArray(entry, "spatial");
      if (bits & NEW_SIZES) this.#destroyIntArray(entry, "sizes");
    }
    created.length = 0;
  }

  /** The buffer is being freed: destroy the descriptors of its views. */
  forget(buffer: NpuBuffer): void {
    const list = this.#byBuffer.get(buffer);
    if (list === undefined) return;
    this.#byBuffer.delete(buffer);
    for (const entry of list) this.#destroy(entry);
  }

  /** The device is closing: destroy everything. */
  clear(): void {
    for (const list of this.#byBuffer.values()) {
      for (const entry of list) {
        while (entry.executors.length > 0) this.dropExecutor(entry, entry.executors[0]);
      }
    }
    for (const list of this.#byBuffer.values()) {
      for (const entry of list) this.#destroy(entry);
    }
    this.#byBuffer.clear();
    this.#created.length = 0;
  }

  #noteCreated(entry: ViewDescriptor, bit: number): void {
    if (entry.created === 0) this.#created.push(entry);
    entry.created |= bit;
  }

  #createTensor(view: StorageView<NpuBuffer>): bigint {
    const rank = view.shape.length;
    for (let d = 0; d < rank; d++) {
      putInt64(dims32, d, view.shape[d]);
      putInt64(strides32, d, view.strides[d]);
    }
    putInt64(storage32, 0, view.storageLength);
    const tensor = this.#api.aclCreateTensor(
      dimsScratch,
      SMALL[rank],
      ACL_DTYPE[view.dtype],
      stridesScratch,
      BigInt(view.offset),
      FORMAT_BY_RANK[rank] ?? ACL_FORMAT.ND,
      storageScratch,
      1n,
      view.handle.address,
    );
    if (tensor === 0n) throw this.#failed("aclCreateTensor");
    return tensor;
  }

  #createIntArray(values: readonly number[], from: number): bigint {
    const count = values.length - from;
    for (let i = 0; i < count; i++) putInt64(dims32, i, values[from + i]);
    const array = this.#api.aclCreateIntArray(dimsScratch, SMALL[count]);
    if (array === 0n) throw this.#failed("aclCreateIntArray");
    this.#objects++;
    return array;
  }

  #destroyIntArray(entry: ViewDescriptor, which: "spatial" | "sizes"): void {
    const array = entry[which];
    if (array === 0n) return;
    entry[which] = 0n;
    this.#api.aclDestroyIntArray(array);
    this.#objects--;
  }

  #destroy(entry: ViewDescriptor): void {
    // Executors first: they may point at the aclTensors of both their views.
    while (entry.executors.length > 0) this.dropExecutor(entry, entry.executors[0]);
    while (entry.feeds.length > 0) {
      const grad = entry.feeds[0];
      const mine = grad.executors.filter((e) => e.out === entry);
      for (const e of mine) this.dropExecutor(grad, e);
      if (entry.feeds[0] === grad) entry.feeds.shift(); // (dropExecutor unlisted it already)
    }
    if (entry.tensor !== 0n) {
      this.#api.aclDestroyTensor(entry.tensor);
      entry.tensor = 0n;
      this.#objects--;
    }
    this.#destroyIntArray(entry, "spatial");
    this.#destroyIntArray(entry, "sizes");
  }
}
