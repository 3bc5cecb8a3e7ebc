/**
 * `Device`: where tensors live and ops run — an Ascend NPU through CANN, or the CPU backend (WebAssembly SIMD and TypeScript kernels).
 *
 * @module
 */

import type { Backend, BackendKind, MemoryInfo } from "./backend.ts";
import { CpuBackend } from "./cpu/backend.ts";
import type { Numerics } from "./rules/numerics.ts";
import { type AscendGeneration, generationOfSoc } from "./rules/generation.ts";
import {
  checkDType,
  checkShape,
  type DeviceOpenOptions,
  resolveOpenOptions,
  type TensorOptions,
} from "./device_options.ts";

export type { DeviceOpenOptions, TensorOptions };
import { openNpuBackend } from "./ffi/npu_open.ts";
import { autoFallback } from "./backend_choice.ts";
import { WarningChannel } from "./warnings.ts";
import { allocateHost, type DType, encodeInto, type HostArray } from "./tensor/dtype.ts";
import { contiguousStrides, numel } from "./tensor/layout.ts";
import { checkFits } from "./tensor/fits.ts";
import { Storage, StorageList, type StorageOwner } from "./tensor/storage.ts";
import { createTensor, type Tensor, tensorInternals } from "./tensor/tensor.ts";

/** What ops need from a device, kept off its public surface. */
export interface DeviceInternals {
  /** The backend; throws when the device is closed. */
  backend(): Backend<unknown>;
  /** A contiguous tensor with uninitialised storage. */
  empty(dtype: DType, shape: readonly number[]): Tensor;
}

const INTERNALS = new WeakMap<Device, DeviceInternals>();

/** Internal: the backend and allocator of a device (not exported from `mod.ts`). */
export function deviceInternals(device: Device): DeviceInternals {
  return INTERNALS.get(device)!;
}

/**
 * A device: an Ascend NPU driven through CANN's aclnn API, or the CPU backend, which runs
 * WebAssembly SIMD kernels (TypeScript kernels where those cannot run: non-contiguous views,
 * `cpuKernels: "typescript"`). The CPU backend gives PyTorch's results by default; with
 * `numerics: "device"` it gives what the Ascend kernels compute, which differ from PyTorch's in tie
 * cases and some scale routing (see `docs/device-semantics.md`). Close a device (or use `using`) to
 * free everything it owns.
 *
 * The CPU backend is always deterministic; `setDeterministic` only records the wish there. On the NPU it
 * sets `ACL_OPT_DETERMINISTIC` for the device's context before the next launch.
 *
 * @example
 * ```ts
 * import { Device } from "@aclnn/upsample";
 * using device = Device.open({ backend: "cpu" });
 * using grad = device.tensor([1, 2, 3, 4], [1, 1, 2, 2]);
 * console.log(device.backend, device.name, grad.shape); // "cpu" "cpu (WebAssembly SIMD)" [1, 1, 2, 2]
 * ```
 */
export class Device {
  readonly #backend: Backend<unknown>;
  readonly #storages = new StorageList();
  readonly #owner: StorageOwner;
  #deterministic: boolean;
  #closed = false;
  #fallbackReason: string | undefined;
  #soc: string | undefined;

  private constructor(backend: Backend<unknown>, deterministic: boolean) {
    this.#backend = backend;
    this.#deterministic = deterministic;
    this.#owner = { storageBackend: backend, forget: (storage) => this.#storages.remove(storage) };
    if (deterministic) {
      try {
        backend.setDeterministic(true);
      } catch (error) {
        backend.close(); // e.g. a runtime without the switch: the device never opened
        throw error;
      }
    }
    INTERNALS.set(this, {
      backend: () => {
        this.#checkOpen("use");
        return this.#backend;
      },
      empty: (dtype, shape) => this.#allocate(dtype, shape, numel(shape)),
    });
  }

  /**
   * Opens a device. Without options: NPU 0 when CANN loads and reports a device, else the CPU backend;
   * {@link Device.fallbackReason} then says why. When the user clearly asked for an NPU (`libDir`,
   * `deviceId`, `$ACLNN_LIB_DIR` or `$ASCEND_HOME_PATH` given) and did not get one, the reason is also
   * a `CPU_FALLBACK` warning (by default one stderr line, once per process; the `warnings` option).
   *
   * @throws {TypeError | RangeError} on bad options (and, with `backend: "npu"`, a `deviceId` out of range)
   * @throws {LibraryLoadError} when `backend: "npu"` is asked for and CANN cannot be loaded
   * @throws {Deno.errors.NotCapable} when `backend: "npu"` is asked for without an unscoped `--allow-ffi`
   * @throws {AclError} when the runtime fails to initialise the device
   * @throws {UpsampleWarning} when the `warnings` option makes `CPU_FALLBACK` an error and it fires
   */
  static open(options: DeviceOpenOptions = {}): Device {
    const resolved = resolveOpenOptions(options);
    const { backend, deviceId, libDir, deterministic, cpuKernels, threads, numerics, ascend } =
      resolved;
    const { deterministicWarnOnly, deviceDefects } = resolved;
    const warnings = new WarningChannel(resolved.warnings);
    const warn = warnings.emit.bind(warnings);
    const cpu = (): CpuBackend =>
      new CpuBackend(cpuKernels, {
        threads,
        numerics,
        ascend,
        deterministicWarnOnly,
        warn,
        deviceDefects,
      });
    if (backend === "cpu" || numerics === "pytorch") {
      const device = new Device(cpu(), deterministic);
      device.#soc = options.soc;
      return device;
    }
    if (backend === "npu") {
      const npu = openNpuBackend({
        deviceId,
        libDir,
        deterministicWarnOnly,
        warnings,
        deviceDefects,
      });
      return new Device(npu, deterministic);
    }
    let npu: ReturnType<typeof openNpuBackend>;
    try {
      const npuOptions = { deviceId, libDir, deterministicWarnOnly, warnings, deviceDefects };
      npu = openNpuBackend({ ...npuOptions, probe: true });
    } catch (error) {
      // "auto" falls back when there is no usable CANN or device; a broken runtime still throws.
      const reason = autoFallback(error, { libDir, deviceId: options.deviceId }, warnings);
      const device = new Device(cpu(), deterministic);
      device.#fallbackReason = reason;
      return device;
    }
    return new Device(npu, deterministic);
  }

  /**
   * Why `Device.open()` in `"auto"` mode chose the CPU backend (no CANN found, with every path tried and
   * the fix; no permission; `deviceId` out of range; ...), or `undefined` when it was not a fallback
   * (an NPU, or `backend: "cpu"` asked for).
   *
   * @example
   * ```ts
   * import { Device } from "@aclnn/upsample";
   * using device = Device.open();
   * if (device.fallbackReason) console.log(`CPU backend: ${device.fallbackReason}`);
   * ```
   */
  get fallbackReason(): string | undefined {
    return this.#fallbackReason;
  }

  /** `"npu"` or `"cpu"`. */
  get backend(): BackendKind {
    return this.#backend.kind;
  }

  /**
   * Whose results this device computes: `"pytorch"` (PyTorch's CPU kernels) or `"device"` (the
   * Ascend kernels' rules of {@link Device.generation}). An NPU always reports `"device"`.
   */
  get numerics(): Numerics {
    const backend = this.#backend;
    return backend instanceof CpuBackend ? backend.numerics : "device";
  }

  /**
   * The SoC whose kernels this device runs or reproduces: on an NPU what `aclrtGetSocName`
   * answered (undefined when the runtime lacks it); on the CPU backend with `numerics: "device"`
   * the `soc` option (undefined: the A2/A3 default); undefined with PyTorch's numerics.
   */
  get soc(): string | undefined {
    const backend = this.#backend;
    if (backend instanceof CpuBackend) return backend.numerics === "device" ? this.#soc : undefined;
    return (backend as { soc?: string | null }).soc ?? undefined;
  }

  /**
   * The Ascend kernel generation this device computes (`"a2"`: Atlas A2/A3, `"950"`: Ascend 950,
   * `"910"`: Atlas training series, `"310p"`: Atlas inference series), or undefined with PyTorch's
   * numerics. On an NPU it follows {@link Device.soc} (`"a2"` assumed
   * for a SoC the library does not know); a device reference for an NPU's results opens the CPU
   * backend with `numerics: "device"` and that NPU's `soc` (when known).
   */
  get generation(): AscendGeneration | undefined {
    const backend = this.#backend;
    if (backend instanceof CpuBackend) {
      return backend.numerics === "device" ? backend.ascend.generation : undefined;
    }
    return generationOfSoc((backend as { soc?: string | null }).soc).generation;
  }

  /**
   * The SoC name reported by CANN and the NPU index (`"Ascend910B3 #0"`; the host emulation of CANN
   * adds `" (host emulation, not an NPU)"`), `"cpu (WebAssembly SIMD)"` or `"cpu (TypeScript)"`.
   */
  get name(): string {
    return this.#backend.name;
  }

  /** Whether deterministic mode is on for ops that do not say otherwise. */
  get deterministic(): boolean {
    return this.#deterministic;
  }

  /** Whether {@link Device.close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Switches deterministic mode for later ops on this device. */
  setDeterministic(on: boolean): void {
    this.#checkOpen("setDeterministic");
    if (typeof on !== "boolean") {
      throw new TypeError(`setDeterministic(on): on must be a boolean, got ${String(on)}`);
    }
    this.#backend.setDeterministic(on);
    this.#deterministic = on;
  }

  /**
   * Creates a tensor from numbers (rounded to nearest even for float16 and bfloat16), in row-major order.
   *
   * For `float16` and `bfloat16`, a `Uint16Array` or `Int16Array` holds the raw bit patterns instead
   * (IEEE binary16, or the top half of a float32), stored as they are: NaN payloads, `-0` and
   * subnormals included, as PyTorch's `tensor.view(torch.int16)` round-trips them. Read them back with
   * {@link Tensor.toRawBits}. For `float32` such arrays are refused (pass numbers or a `Float32Array`).
   *
   * @throws {TypeError} on a bad dtype, values that are not numbers, or 16-bit patterns for float32
   * @throws {RangeError} when the value count does not match the shape
   * @example
   * ```ts
   * import { Device } from "@aclnn/upsample";
   * using device = Device.open({ backend: "cpu" });
   * // 1, -0, a NaN with payload 0x155, the smallest subnormal: as float16 bits.
   * using half = device.tensor(new Uint16Array([0x3c00, 0x8000, 0x7d55, 0x0001]), [4], {
   *   dtype: "float16",
   * });
   * console.log(await half.toRawBits()); // Uint16Array [15360, 32768, 32085, 1]
   * ```
   */
  tensor(values: ArrayLike<number>, shape: readonly number[], options: TensorOptions = {}): Tensor {
    this.#checkOpen("tensor");
    const dtype = checkDType(options);
    const length = checkShape(shape, "tensor");
    checkFits(this.#backend, dtype, shape, length, "tensor");
    if (values === null || typeof values !== "object" || typeof values.length !== "number") {
      throw new TypeError(
        `tensor(values, shape): values must be an array or typed array of numbers`,
      );
    }
    if (values.length !== length) {
      throw new RangeError(
        `tensor(values, shape): ${values.length} values do not fill shape [${shape.join(", ")}] ` +
          `(${length} elements)`,
      );
    }
    if (!ArrayBuffer.isView(values)) {
      for (let i = 0; i < length; i++) {
        if (typeof values[i] !== "number") {
          throw new TypeError(
            `tensor(values, shape): values[${i}] is ${typeof values[i]}, not a number`,
          );
        }
      }
    }
    if (values instanceof Uint16Array || values instanceof Int16Array) {
      if (dtype === "float32") {
        throw new TypeError(
          `tensor(values, shape): a ${values.constructor.name} holds float16/bfloat16 bit patterns, ` +
            `but dtype is float32 (pass numbers or a Float32Array, or dtype "float16"/"bfloat16")`,
        );
      }
      // Bit patterns as they are; upload copies them.
      const bits = new Uint16Array(values.buffer, values.byteOffset, length);
      return this.#allocateWith(dtype, shape, length, bits);
    }
    const host = allocateHost(dtype, length);
    encodeInto(dtype, values, host);
    return this.#allocateWith(dtype, shape, length, host);
  }

  /** Creates a zero-filled tensor. */
  zeros(shape: readonly number[], options: TensorOptions = {}): Tensor {
    this.#checkOpen("zeros");
    const dtype = checkDType(options);
    const length = checkShape(shape, "zeros");
    checkFits(this.#backend, dtype, shape, length, "zeros");
    return this.#allocateWith(dtype, shape, length, allocateHost(dtype, length));
  }

  /**
   * Free and total bytes of the memory this device's tensors live in. On an NPU: the device memory as
   * the runtime reports it (`aclrtGetMemInfo`), so an op's result plus its workspace fits when they are
   * below `free`. On the CPU backend: host memory (`Deno.systemMemoryInfo()`, `available` as free),
   * which needs `--allow-sys` beyond the usual `--allow-ffi --allow-env --allow-read`.
   *
   * @throws {MissingSymbolError} on an NPU whose runtime lacks `aclrtGetMemInfo`
   * @throws {Deno.errors.NotCapable} on the CPU backend without `--allow-sys`, naming the flag
   * @example
   * ```ts ignore
   * import { Device } from "@aclnn/upsample";
   * using device = Device.open();
   * const { free, total } = device.memoryInfo();
   * console.log(`${(free / 2 ** 30).toFixed(1)} of ${(total / 2 ** 30).toFixed(1)} GiB free`);
   * ```
   */
  memoryInfo(): MemoryInfo {
    this.#checkOpen("memoryInfo");
    return this.#backend.memoryInfo();
  }

  /** Waits until every queued op and copy on this device has finished. */
  synchronize(): Promise<void> {
    // Not an async function: one promise fewer per call (a CPU op loop awaits this every step); a
    // closed device still rejects rather than throws.
    try {
      this.#checkOpen("synchronize");
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#backend.synchronize();
  }

  /** Frees every tensor of this device and releases the device. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#storages.freeAll();
    this.#backend.close();
  }

  /** Same as {@link Device.close}, for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }

  // A contiguous tensor holding `host` (already in the dtype's encoding); freed again if the copy fails.
  #allocateWith(dtype: DType, shape: readonly number[], length: number, host: HostArray): Tensor {
    const tensor = this.#allocate(dtype, shape, length);
    if (length === 0) return tensor;
    try {
      this.#backend.upload(tensorInternals(tensor).storage.handle, host);
    } catch (error) {
      tensor.dispose();
      throw error;
    }
    return tensor;
  }

  #allocate(dtype: DType, shape: readonly number[], length: number): Tensor {
    const handle = this.#backend.allocate(dtype, length);
    const storage = new Storage(this.#owner, handle, dtype, length);
    this.#storages.add(storage);
    try {
      return createTensor(this, storage, { shape, strides: contiguousStrides(shape), offset: 0 });
    } catch (error) {
      storage.free();
      throw error;
    }
  }

  #checkOpen(what: string): void {
    if (this.#closed) throw new TypeError(`${what}: the device was closed`);
  }
}
