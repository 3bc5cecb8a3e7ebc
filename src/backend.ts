/**
 * The contract between a {@link Device} and the code that owns its memory and runs its ops: the CPU
 * backend (`src/cpu/backend.ts`) and the NPU backend (`src/ffi/npu_backend.ts`).
 *
 * @module
 */

import type { IndexRule } from "./cpu/device_rules.ts";
import type { DType, HostArray } from "./tensor/dtype.ts";

/** Free and total bytes of a device's memory, as {@link Backend.memoryInfo} reports them. */
export interface MemoryInfo {
  /** Bytes free for new tensors, results and workspaces. */
  readonly free: number;
  /** Bytes in total. */
  readonly total: number;
}

/** Which kind of backend a device runs on. */
export type BackendKind = "npu" | "cpu";

/** The three backward ops. */
export type UpsampleOp = "nearestExact1d" | "nearestExact2d" | "bilinear2d";

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

/** The parameters of an op call that decide whether a backend supports it. */
export interface UpsampleParams {
  /** Which op to run. */
  readonly op: UpsampleOp;
  /** Element type of `gradOutput` and `out`. */
  readonly dtype: DType;
  /** `[N, C, L]` or `[N, C, H, W]`. */
  readonly inputSize: readonly number[];
  /** `[L]` or `[H, W]`. */
  readonly outputSize: readonly number[];
  /** PyTorch scale factors per spatial dimension; 0 means "derive from the sizes". */
  readonly scales: readonly number[];
  /** Bilinear only. */
  readonly alignCorners: boolean;
}

/** A validated op call: sizes and scales resolved, `out` allocated. */
export interface UpsampleCall<H> extends UpsampleParams {
  /** The incoming gradient, shape `[N, C, ...outputSize]`. */
  readonly gradOutput: StorageView<H>;
  /** The result, shape `inputSize`; fully overwritten. */
  readonly out: StorageView<H>;
  /** Deterministic mode for this launch. */
  readonly deterministic: boolean;
  /** CPU backend only: whose index rules its kernels follow (default `"pytorch"`). */
  readonly rule?: IndexRule;
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
  checkSupported(params: UpsampleParams): void;
  /** Enqueues an op (the CPU backend runs it at once). */
  launch(call: UpsampleCall<H>): void;
  /** Switches the runtime's deterministic mode. */
  setDeterministic(on: boolean): void;
  /** Waits for all queued work. */
  synchronize(): Promise<void>;
  /** Free and total bytes of the memory this backend's tensors live in. */
  memoryInfo(): MemoryInfo;
  /** Frees everything the backend still owns. Called once. */
  close(): void;
}
