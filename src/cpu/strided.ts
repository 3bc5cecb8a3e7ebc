/**
 * Row access to strided host views for the kernels: rows of a gradient are read as float32
 * (zero-copy when they already are contiguous float32), rows of float32 accumulators are written
 * back with one round-to-nearest-even per element, and scratch buffers are reused across calls.
 *
 * @module
 */

import type { StridedArray } from "./types.ts";

const QUIET_NAN_F16 = 0x7e00;
const QUIET_NAN_BF16 = 0x7fc0;
/** Scratch buffers up to this many elements are kept for the next call. */
const MAX_CACHED = 1 << 22;
const cache: Float32Array[] = [];
// Shared placeholders for the fields a reader/writer does not use: typed-array creation is costly.
const EMPTY_F32 = new Float32Array(0);
const EMPTY_F16 = new Float16Array(0);
const EMPTY_U16 = new Uint16Array(0);
const EMPTY_U32 = new Uint32Array(0);
const bitViews = new WeakMap<Float32Array, Uint32Array>();

// The bits of a float32 array, as a Uint32Array view (cached: scratch buffers are reused).
function bitsView(array: Float32Array): Uint32Array {
  let view = bitViews.get(array);
  if (view === undefined) {
    view = new Uint32Array(array.buffer, array.byteOffset, array.length);
    bitViews.set(array, view);
  }
  return view;
}

/**
 * A float32 scratch buffer of at least `length` elements (contents unspecified), reused between
 * calls per `slot`. Two slots in use at once must differ.
 *
 * @example
 * ```ts
 * import { scratchBuffer } from "./strided.ts";
 * const acc = scratchBuffer(0, 16);
 * acc.fill(0, 0, 16);
 * ```
 */
export function scratchBuffer(slot: number, length: number): Float32Array {
  const have = cache[slot];
  if (have !== undefined && have.length >= length) return have;
  const fresh = new Float32Array(Math.max(length, 16));
  if (length <= MAX_CACHED) cache[slot] = fresh;
  return fresh;
}

/**
 * Reads rows (runs along the last dimension) of a strided view as float32.
 *
 * @example
 * ```ts
 * import { RowReader } from "./strided.ts";
 * const data = new Float32Array([1, 2, 3, 4]);
 * const reader = new RowReader({ data, dtype: "float32", strides: [2, 1], offset: 0 }, 2, 9);
 * const row = reader.row(2); // row[reader.base] === 3, row[reader.base + 1] === 4
 * ```
 */
export class RowReader {
  /** Index in the array last returned by {@link RowReader.row} of the row's first element. */
  base = 0;
  readonly #length: number;
  readonly #stride: number;
  /** 0: contiguous float32 (zero-copy), 1: strided float32, 2: float16, 3: bfloat16. */
  readonly #mode: 0 | 1 | 2 | 3;
  readonly #f32: Float32Array;
  readonly #f16: Float16Array;
  readonly #bits: Uint16Array;
  readonly #buffer: Float32Array;
  readonly #buffer32: Uint32Array;

  /**
   * @param view the strided view; the row stride is its last stride
   * @param length elements per row
   * @param slot scratch slot for the copy buffer (see {@link scratchBuffer})
   */
  constructor(view: StridedArray, length: number, slot: number) {
    this.#length = length;
    this.#stride = view.strides[view.strides.length - 1];
    const data = view.data;
    this.#f32 = EMPTY_F32;
    this.#f16 = EMPTY_F16;
    this.#bits = EMPTY_U16;
    if (view.dtype === "float32") {
      this.#f32 = data as Float32Array;
      this.#mode = this.#stride === 1 || length === 1 ? 0 : 1;
    } else if (view.dtype === "float16") {
      this.#f16 = new Float16Array(data.buffer, data.byteOffset, data.length);
      this.#mode = 2;
    } else {
      this.#bits = data as Uint16Array;
      this.#mode = 3;
    }
    this.#buffer = this.#mode === 0 ? EMPTY_F32 : scratchBuffer(slot, length);
    this.#buffer32 = this.#mode === 3 ? bitsView(this.#buffer) : EMPTY_U32;
  }

  /** Whether {@link RowReader.row} returns the storage itself (so earlier rows stay valid). */
  get zeroCopy(): boolean {
    return this.#mode === 0;
  }

  /**
   * The row starting at storage index `start`, as an array; its first element is at
   * {@link RowReader.base}. Valid until the next call.
   */
  row(start: number): Float32Array {
    const mode = this.#mode;
    if (mode === 0) {
      this.base = start;
      return this.#f32;
    }
    this.base = 0;
    const n = this.#length;
    const stride = this.#stride;
    const buffer = this.#buffer;
    if (mode === 1) {
      const f32 = this.#f32;
      for (let i = 0, p = start; i < n; i++, p += stride) buffer[i] = f32[p];
    } else if (mode === 2) {
      const f16 = this.#f16;
      for (let i = 0, p = start; i < n; i++, p += stride) buffer[i] = f16[p];
    } else {
      const bits = this.#bits;
      const u32 = this.#buffer32;
      for (let i = 0, p = start; i < n; i++, p += stride) u32[i] = bits[p] << 16;
    }
    return buffer;
  }
}

/**
 * Writes float32 rows into a strided view (the last stride is the row stride), rounding once to
 * nearest even for float16/bfloat16 (NaN becomes the quiet NaN of the dtype).
 *
 * @example
 * ```ts
 * import { RowWriter } from "./strided.ts";
 * const data = new Uint16Array(2);
 * const writer = new RowWriter({ data, dtype: "bfloat16", strides: [1], offset: 0 }, 2);
 * writer.write(0, new Float32Array([1, -0]), 0); // data = [0x3f80, 0x8000]
 * ```
 */
export class RowWriter {
  readonly #length: number;
  readonly #stride: number;
  readonly #mode: 0 | 1 | 2;
  readonly #f32: Float32Array;
  readonly #f16: Float16Array;
  readonly #bits: Uint16Array;
  #lastSrc: Float32Array | undefined;
  #lastSrc32: Uint32Array = EMPTY_U32;

  /**
   * @param view the strided destination
   * @param length elements per row
   */
  constructor(view: StridedArray, length: number) {
    this.#length = length;
    this.#stride = view.strides[view.strides.length - 1];
    const data = view.data;
    this.#f32 = EMPTY_F32;
    this.#f16 = EMPTY_F16;
    this.#bits = EMPTY_U16;
    if (view.dtype === "float32") {
      this.#f32 = data as Float32Array;
      this.#mode = 0;
    } else if (view.dtype === "float16") {
      this.#f16 = new Float16Array(data.buffer, data.byteOffset, data.length);
      this.#bits = data as Uint16Array;
      this.#mode = 1;
    } else {
      this.#bits = data as Uint16Array;
      this.#mode = 2;
    }
  }

  /**
   * Writes `src[srcBase .. srcBase + length)` to the row starting at storage index `start`.
   * `src` must be a float32 array whose elements are float32 results.
   */
  write(start: number, src: Float32Array, srcBase: number): void {
    const n = this.#length;
    const stride = this.#stride;
    const mode = this.#mode;
    if (mode === 0) {
      const f32 = this.#f32;
      for (let i = 0, p = start; i < n; i++, p += stride) f32[p] = src[srcBase + i];
    } else if (mode === 1) {
      const f16 = this.#f16;
      const bits = this.#bits;
      for (let i = 0, p = start; i < n; i++, p += stride) {
        const v = src[srcBase + i];
        if (v !== v) bits[p] = QUIET_NAN_F16;
        else f16[p] = v;
      }
    } else {
      const bits = this.#bits;
      if (src !== this.#lastSrc) {
        this.#lastSrc = src;
        this.#lastSrc32 = bitsView(src);
      }
      const u32 = this.#lastSrc32;
      for (let i = 0, p = start; i < n; i++, p += stride) {
        const u = u32[srcBase + i];
        bits[p] = (u & 0x7fffffff) > 0x7f800000
          ? QUIET_NAN_BF16
          : (u + 0x7fff + ((u >>> 16) & 1)) >>> 16;
      }
    }
  }
}
