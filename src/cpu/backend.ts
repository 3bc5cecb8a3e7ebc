/**
 * The CPU backend: storage is a host typed array (float32 values, or float16/bfloat16 bit patterns) and
 * ops run synchronously in TypeScript, so results are ready when the op returns and are always
 * deterministic.
 *
 * @module
 */

import type { Backend, StorageView, UpsampleCall, UpsampleParams } from "../backend.ts";
import { OP_RULES } from "../ops/validate.ts";
import { elementCount } from "../tensor/layout.ts";
import { allocateHost, type DType, type HostArray } from "../tensor/dtype.ts";
import type { StridedArray } from "./types.ts";
import {
  bilinear2dBackwardCpu,
  nearestExact1dBackwardCpu,
  nearestExact2dBackwardCpu,
} from "./mod.ts";

// Typed arrays past this length cannot be allocated by V8; checked before allocating.
const MAX_HOST_ELEMENTS = 2 ** 32 - 1;
const MAX_POOLED_BYTES = 256 * 2 ** 20;
const MAX_POOLED_PER_SIZE = 4;

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
export class CpuBackend implements Backend<HostArray> {
  /** Always `"cpu"`. */
  readonly kind = "cpu" as const;
  /** Always `"cpu (TypeScript)"`. */
  readonly name = "cpu (TypeScript)";

  // Freed arrays kept for reuse, by dtype and length: a training loop allocates the same shapes
  // every step, and a fresh typed array costs a zero-fill plus page faults.
  #pool = new Map<string, HostArray[]>();
  #pooledBytes = 0;

  /** Allocates a host array (reused from a freed one of the same dtype and length when possible). */
  allocate(dtype: DType, length: number): HostArray {
    if (length > MAX_HOST_ELEMENTS) {
      throw new RangeError(
        `the CPU backend cannot hold ${length} elements in one tensor (limit ${MAX_HOST_ELEMENTS})`,
      );
    }
    const reused = this.#pool.get(poolKey(dtype === "float32", length))?.pop();
    if (reused === undefined) return allocateHost(dtype, length);
    this.#pooledBytes -= reused.byteLength;
    return reused;
  }

  /** Keeps the array for reuse, up to a bounded amount of memory; the GC reclaims the rest. */
  free(handle: HostArray): void {
    if (handle.length === 0 || this.#pooledBytes + handle.byteLength > MAX_POOLED_BYTES) return;
    const key = poolKey(handle instanceof Float32Array, handle.length);
    const list = this.#pool.get(key);
    if (list === undefined) this.#pool.set(key, [handle]);
    else if (list.length < MAX_POOLED_PER_SIZE) list.push(handle);
    else return;
    this.#pooledBytes += handle.byteLength;
  }

  /** Copies encoded host data in. */
  upload(handle: HostArray, data: HostArray): void {
    handle.set(data);
  }

  /** Returns a copy of a range of the storage. */
  download(handle: HostArray, _dtype: DType, start: number, length: number): Promise<HostArray> {
    return Promise.resolve(handle.slice(start, start + length));
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
  launch(call: UpsampleCall<HostArray>): void {
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
    return Promise.resolve();
  }

  /** Drops the pool. */
  close(): void {
    this.#pool.clear();
    this.#pooledBytes = 0;
  }
}

// float16 and bfloat16 storages are both Uint16Array bit patterns, so they share a pool.
function poolKey(float32: boolean, length: number): string {
  return `${float32 ? 32 : 16}:${length}`;
}

function strided(view: StorageView<HostArray>): StridedArray {
  return { data: view.handle, dtype: view.dtype, strides: view.strides, offset: view.offset };
}
