/**
 * The `Tensor`: a strided view of device or host storage.
 *
 * @module
 */

import type { Device } from "../device.ts";
import { decodeInto, type DType, type HostArray } from "./dtype.ts";
import {
  elementCount,
  isContiguous,
  type Layout,
  permuteLayout,
  sliceLayout,
  storageSpan,
  transposeLayout,
} from "./layout.ts";
import type { Storage } from "./storage.ts";

const CREATE = Symbol("Tensor.create");

// Frees the storage reference of a tensor that was dropped without dispose().
const finalizer = new FinalizationRegistry<Storage>((storage) => storage.release());

// Set by the class's static block: whether a value really is a Tensor (not just `instanceof`, which an
// object made with `Object.create(Tensor.prototype)` passes without having a tensor's private fields).
let hasTensorBrand: (value: object) => boolean;
// Set by the class's static block: private state for this library's own modules.
let internalsOf: (tensor: Tensor) => { storage: Storage; layout: Layout };

// Frozen arrays are immutable, so tensors of one shape (a training loop's) share them: copying and
// freezing per tensor costs more than a small op. One memo for shapes, one for strides.
class FrozenMemo {
  #last: readonly number[] = Object.freeze([]);

  /** A frozen array equal to `values`: the previous one when it is equal. */
  of(values: readonly number[]): readonly number[] {
    const last = this.#last;
    if (values === last) return last;
    if (values.length === last.length) {
      let i = 0;
      while (i < values.length && values[i] === last[i]) i++;
      if (i === values.length) return last;
    }
    return (this.#last = Object.freeze([...values]));
  }
}

const shapes = new FrozenMemo();
const strideLists = new FrozenMemo();

/**
 * Internal: whether `value` is a tensor made by this module (a brand check, not `instanceof`).
 *
 * @example
 * ```ts ignore
 * isTensor(Object.create(Tensor.prototype)); // false
 * ```
 */
export function isTensor(value: unknown): value is Tensor {
  return typeof value === "object" && value !== null && hasTensorBrand(value);
}

/**
 * A strided view (shape, strides, offset) of storage that lives on a {@link Device}. Views made with
 * `permute`, `transpose` and `slice` share the storage; it is freed when the last tensor using it is
 * disposed (or garbage-collected), or when the device closes. Tensors are made by
 * {@linkcode Device.tensor}, {@linkcode Device.zeros} and the ops, never with `new`.
 *
 * @example
 * ```ts
 * import { Device } from "@aclnn/upsample";
 * using device = Device.open({ backend: "cpu" });
 * using x = device.tensor([1, 2, 3, 4, 5, 6], [2, 3]);
 * using xt = x.transpose(0, 1);
 * console.log(xt.shape, await xt.toFloat32Array()); // [3, 2] Float32Array [1, 4, 2, 5, 3, 6]
 * ```
 */
export class Tensor {
  readonly #device: Device;
  readonly #storage: Storage;
  readonly #layout: Layout;
  #disposed = false;

  static {
    hasTensorBrand = (value) => #storage in value;
    internalsOf = (tensor) => ({ storage: tensor.#storage, layout: tensor.#live("use") });
  }

  /**
   * Internal, not public API: tensors come from `device.tensor()`, `device.zeros()`, the ops and
   * the view methods.
   *
   * @ignore
   */
  constructor(token: typeof CREATE, device: Device, storage: Storage, layout: Layout) {
    if (token !== CREATE) {
      throw new TypeError("use device.tensor() or device.zeros() to make tensors");
    }
    this.#device = device;
    this.#storage = storage;
    this.#layout = {
      shape: shapes.of(layout.shape),
      strides: strideLists.of(layout.strides),
      offset: layout.offset,
    };
    storage.retain();
    finalizer.register(this, storage, this);
  }

  /** Size of each dimension. */
  get shape(): readonly number[] {
    return this.#layout.shape;
  }

  /** Element distance between neighbours along each dimension. */
  get strides(): readonly number[] {
    return this.#layout.strides;
  }

  /** Index of the first element in the storage. */
  get offset(): number {
    return this.#layout.offset;
  }

  /** Element type. */
  get dtype(): DType {
    return this.#storage.dtype;
  }

  /** The device that owns the storage. */
  get device(): Device {
    return this.#device;
  }

  /** Whether `dispose()` was called, or the device was closed. */
  get disposed(): boolean {
    return this.#disposed || this.#storage.released;
  }

  /** Whether the view is row-major with no gaps. */
  get contiguous(): boolean {
    return isContiguous(this.#layout);
  }

  /** Reorders dimensions: dimension `i` of the view is dimension `dims[i]` of this tensor. */
  permute(...dims: number[]): Tensor {
    return this.#view(permuteLayout(this.#live("permute"), dims));
  }

  /** Swaps two dimensions. */
  transpose(dim0: number, dim1: number): Tensor {
    return this.#view(transposeLayout(this.#live("transpose"), dim0, dim1));
  }

  /** Narrows `dim` to `start, start + step, ...` below `end`, like Python's `x[start:end:step]`. */
  slice(dim: number, start: number, end?: number, step?: number): Tensor {
    return this.#view(sliceLayout(this.#live("slice"), dim, start, end, step));
  }

  /**
   * Waits for queued work on the device, then returns the values as float32 in logical row-major order.
   */
  async toFloat32Array(): Promise<Float32Array> {
    const result = new Float32Array(elementCount(this.#live("toFloat32Array").shape));
    const read = await this.#download("toFloat32Array");
    if (read === null) return result;
    let values: Float32Array;
    if (read.host instanceof Float32Array) values = read.host;
    else {
      values = new Float32Array(read.host.length);
      decodeInto(this.dtype, read.host, values);
    }
    gatherLogical(values, read.layout, result);
    return result;
  }

  /**
   * Waits for queued work on the device, then returns the stored bit patterns of a `float16` or
   * `bfloat16` tensor in logical row-major order, untouched: NaN payloads, `-0` and subnormals as
   * stored (the values as numbers: {@link Tensor.toFloat32Array}). The inverse of passing a
   * `Uint16Array` to `device.tensor()`; PyTorch reads them with
   * `torch.tensor(bits, dtype=torch.int16).view(torch.float16)`.
   *
   * @throws {TypeError} for a float32 tensor (its values are exact in {@link Tensor.toFloat32Array})
   * @example
   * ```ts
   * import { Device } from "@aclnn/upsample";
   * using device = Device.open({ backend: "cpu" });
   * using x = device.tensor([1, -2, 0.5], [3], { dtype: "bfloat16" });
   * console.log(await x.toRawBits()); // Uint16Array [16256, 49152, 16128] (0x3f80, 0xc000, 0x3f00)
   * ```
   */
  async toRawBits(): Promise<Uint16Array> {
    const layout = this.#live("toRawBits");
    if (this.dtype === "float32") {
      throw new TypeError(
        `toRawBits: the tensor is float32; raw bits are for float16 and bfloat16 (use toFloat32Array)`,
      );
    }
    const result = new Uint16Array(elementCount(layout.shape));
    const read = await this.#download("toRawBits");
    if (read !== null) gatherLogical(read.host as Uint16Array, read.layout, result);
    return result;
  }

  // The storage span the view covers, downloaded (null when the view is empty), and the view's layout
  // relative to that span.
  async #download(what: string): Promise<{ host: HostArray; layout: Layout } | null> {
    const layout = this.#live(what);
    const storage = this.#storage;
    const span = storageSpan(layout);
    if (span === null) return null;
    // The read holds a reference: a dispose() while it waits for the stream must not free the storage
    // under the copy (the NPU frees deferred buffers as soon as that wait ends).
    storage.retain();
    let host: HostArray;
    try {
      host = await storage.owner.storageBackend.download(
        storage.handle,
        storage.dtype,
        span.first,
        span.last - span.first + 1,
      );
    } catch (error) {
      // A device closed under the read (the end of a `using` block) fails the backend's download.
      if (this.disposed) throw disposedDuringRead(this, what);
      throw error;
    } finally {
      storage.release();
    }
    if (this.disposed) throw disposedDuringRead(this, what);
    return { host, layout: { ...layout, offset: layout.offset - span.first } };
  }

  /** Drops this tensor's reference to its storage. Idempotent. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    finalizer.unregister(this);
    this.#storage.release();
  }

  /** Same as {@link Tensor.dispose}, for `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /** Short description for messages, e.g. `float32 tensor [2, 3] on cpu`. */
  toString(): string {
    return `${this.dtype} tensor [${this.shape.join(", ")}] on ${this.#device.backend}`;
  }

  #live(what: string): Layout {
    if (this.disposed) throw disposedError(this, what);
    return this.#layout;
  }

  #view(layout: Layout): Tensor {
    return new Tensor(CREATE, this.#device, this.#storage, layout);
  }
}

/**
 * Internal (not exported from `mod.ts`): creates a tensor over fresh storage (its first reference).
 *
 * @example
 * ```ts ignore
 * const tensor = createTensor(device, storage, { shape: [2], strides: [1], offset: 0 });
 * ```
 */
export function createTensor(device: Device, storage: Storage, layout: Layout): Tensor {
  return new Tensor(CREATE, device, storage, layout);
}

/**
 * Internal (not exported from `mod.ts`): the storage and layout of a live tensor.
 *
 * @example
 * ```ts ignore
 * const { storage, layout } = tensorInternals(tensor);
 * ```
 */
export function tensorInternals(tensor: Tensor): { storage: Storage; layout: Layout } {
  return internalsOf(tensor);
}

function disposedError(tensor: Tensor, what: string): TypeError {
  return new TypeError(
    `${what}: the ${tensor.dtype} tensor [${tensor.shape.join(", ")}] was disposed ` +
      `(dispose() called or its device closed); it cannot be used any more`,
  );
}

// The read was started but not awaited before the tensor or its device was disposed: most often a
// missed `await` inside a `using` block, whose end disposes them while the read is pending.
function disposedDuringRead(tensor: Tensor, what: string): TypeError {
  const shape = tensor.shape.join(", ");
  return new TypeError(
    `${what}: the ${tensor.dtype} tensor [${shape}] was disposed while the read was pending ` +
      "(dispose() called, or its device closed, as at the end of a `using` block); await the " +
      `read before the tensor or its device is disposed (\`await tensor.${what}()\` inside the ` +
      "block)",
  );
}

// Reorders a downloaded storage span (float32 values or 16-bit patterns) into logical row-major order.
function gatherLogical<A extends Float32Array | Uint16Array>(
  values: A,
  layout: Layout,
  out: A,
): void {
  if (isContiguous(layout)) {
    out.set(values.subarray(layout.offset, layout.offset + out.length));
    return;
  }
  const { shape, strides } = layout;
  const rank = shape.length;
  const index = new Array<number>(rank).fill(0);
  const inner = rank - 1;
  const innerSize = shape[inner];
  const innerStride = strides[inner];
  let base = layout.offset;
  for (let k = 0; k < out.length; k += innerSize) {
    for (let j = 0, p = base; j < innerSize; j++, p += innerStride) out[k + j] = values[p];
    // Advance the outer index like an odometer.
    for (let d = inner - 1; d >= 0; d--) {
      base += strides[d];
      if (++index[d] < shape[d]) break;
      base -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
}
