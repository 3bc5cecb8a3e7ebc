/**
 * The contract between a {@link Device} and the code that owns its memory and runs its ops: the CPU
 * backend (`src/cpu/backend.ts`) and the NPU backend (`src/ffi/npu_backend.ts`).
 *
 * @module
 */

import type { UpsampleOp, UpsampleParams } from "./rules/ops.ts";
import type { TableRule } from "./rules/tables.ts";
import type { DType, HostArray } from "./tensor/dtype.ts";

export type { UpsampleOp, UpsampleParams };

/** Free and total bytes of a device's memory, as {@link Backend.memoryInfo} reports them. */
export interface MemoryInfo {
  /** Bytes free for new tensors, results and workspaces. */
  readonly free: number;
  /** Bytes in total. */
  readonly total: number;
}

/** The most bytes one tensor can take on a backend, and what sets that bound (for messages). */
export interface TensorLimit {
  /** Bytes (`Infinity` when the backend cannot tell). */
  readonly bytes: number;
  /** What sets it, e.g. `"the WebAssembly memory limit of the CPU backend"`. */
  readonly source: string;
}

/** Which kind of backend a device runs on. */
export type BackendKind = "npu" | "cpu";

/** A strided view of backend storage, as an op sees it. */
export interface StorageView<H> {
  /** The backend's handle of the storage. */
  readonly handle: H;
  /** Element type of the storage. */
  readonly dtype: DType;
  /** Elements in the storage. */
  readonly storageLength: number;
  /** Logical shape of the view. */
  readonly shape: readonly number[];
  /** Strides of the view, in elements. */
  readonly strides: readonly number[];
  /** Storage offset of the view, in elements. */
  readonly offset: number;
}

/** A validated op call: sizes and scales resolved, `out` allocated. */
export interface UpsampleCall<H> extends UpsampleParams {
  /** The incoming gradient, shape `[N, C, ...outputSize]`. */
  readonly gradOutput: StorageView<H>;
  /** The result, shape `inputSize`; fully overwritten. */
  readonly out: StorageView<H>;
  /** Deterministic mode for this launch. */
  readonly deterministic: boolean;
  /** CPU backend only: whose index tables its kernels run on (default `"pytorch"`). */
  readonly rule?: TableRule;
}

/** A validated forward call: sizes and scales resolved, `out` allocated. */
export interface ForwardCall<H> extends UpsampleParams {
  /** The input `x`, shape `inputSize`. */
  readonly input: StorageView<H>;
  /** The result, shape `[N, C, ...outputSize]`; fully overwritten. */
  readonly out: StorageView<H>;
  /** Deterministic mode for this launch. */
  readonly deterministic: boolean;
  /** CPU backend only: whose index tables its kernels run on (default `"pytorch"`). */
  readonly rule?: TableRule;
}

/**
 * What a device needs from a backend. Storage handles are opaque to everything but the backend.
 *
 * @typeParam H the backend's storage handle type
 */
export interface Backend<H> {
  /** `"npu"` or `"cpu"`. */
  readonly kind: BackendKind;
  /** Human-readable device name. */
  readonly name: string;
  /** Allocates uninitialised storage for `length` elements. */
  allocate(dtype: DType, length: number): H;
  /** Releases storage (possibly after queued work that uses it has finished). */
  free(handle: H): void;
  /** Copies host data (already in the storage's encoding) to the start of the storage. */
  upload(handle: H, data: HostArray): void;
  /** Waits for queued work, then copies `length` elements from `start` of the storage to the host. */
  download(handle: H, dtype: DType, start: number, length: number): Promise<HostArray>;
  /** Throws `TypeError`/`RangeError` when the backend cannot run these parameters (before allocation). */
  checkSupported(params: UpsampleParams & { readonly deterministic: boolean }): void;
  /** Enqueues an op (the CPU backend runs it at once). */
  launch(call: UpsampleCall<H>): void;
  /** Throws `TypeError`/`RangeError` when the backend cannot run this forward call (before allocation). */
  checkForwardSupported(params: UpsampleParams & { readonly deterministic: boolean }): void;
  /** Enqueues a forward op (the CPU backend runs it at once). */
  launchForward(call: ForwardCall<H>): void;
  /**
   * Whether a call object just launched may be kept and launched again by a call with the same
   * arguments (the ops' memo of a repeated call with `out`): true when holding it keeps no storage
   * alive (an NPU buffer handle is an address; a CPU one in the WebAssembly memory, a block of it).
   */
  keepsCall(call: UpsampleCall<H> | ForwardCall<H>): boolean;
  /** Switches the runtime's deterministic mode. */
  setDeterministic(on: boolean): void;
  /** Waits for all queued work. */
  synchronize(): Promise<void>;
  /** Free and total bytes of the memory this backend's tensors live in. */
  memoryInfo(): MemoryInfo;
  /**
   * Bytes one tensor can take at most, and what sets that bound (checked before anything is
   * allocated): the CPU backend's WebAssembly memory limit, an NPU's memory in total.
   */
  readonly tensorLimit: TensorLimit;
  /** Frees everything the backend still owns. Called once. */
  close(): void;
}
