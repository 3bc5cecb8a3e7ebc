/**
 * The size check of a new tensor against the most its backend can hold (`Backend.tensorLimit`): a
 * shape too large fails at once, before any host or device memory is taken, with the bytes it
 * needs and the bound.
 *
 * @module
 */

import type { Backend } from "../backend.ts";
import { type DType, dtypeByteSize } from "./dtype.ts";
import { elementCount } from "./layout.ts";

/** Bytes as a short size, e.g. `"37.25 GiB"`. */
function size(bytes: number): string {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} bytes` : `${value.toFixed(2)} ${units[unit]}`;
}

function fits(backend: Backend<unknown>, dtype: DType, length: number): boolean {
  return length * dtypeByteSize(dtype) <= backend.tensorLimit.bytes;
}

/**
 * {@link checkFits} for an op's result: `[batch[0], batch[1], ...spatial]` (a forward op: its
 * input's sizes and `outputSize`), or `batch` whole when `spatial` is null (a backward op's
 * `inputSize`). It builds no array and no message unless it throws, as it runs on every op call:
 * a tiny gradient downsampled from a huge `inputSize` would otherwise take minutes and gigabytes of
 * host memory before failing.
 *
 * @throws {RangeError} as checkFits, naming `opName`'s result
 * @example
 * ```ts ignore
 * checkResultFits(backend, "float32", "upsampleBilinear2d", inputSize, outputSize);
 * ```
 */
export function checkResultFits(
  backend: Backend<unknown>,
  dtype: DType,
  opName: string,
  batch: readonly number[],
  spatial: readonly number[] | null,
): void {
  let length: number;
  if (spatial === null) length = elementCount(batch);
  else {
    length = batch[0] * batch[1];
    for (let i = 0; i < spatial.length; i++) length *= spatial[i];
  }
  if (fits(backend, dtype, length)) return;
  const shape = spatial === null ? batch : [batch[0], batch[1], ...spatial];
  checkFits(backend, dtype, shape, length, `${opName}: the result`);
}

/**
 * Throws when `length` elements of `dtype` take more bytes than one tensor can on `backend`.
 *
 * @throws {RangeError} naming the call, the shape, the bytes it needs and the backend's bound
 * @example
 * ```ts ignore
 * checkFits(backend, "float32", [100000, 100000], 1e10, "zeros");
 * // RangeError: zeros: shape [100000, 100000] of float32 needs 40000000000 bytes (37.25 GiB); ...
 * ```
 */
export function checkFits(
  backend: Backend<unknown>,
  dtype: DType,
  shape: readonly number[],
  length: number,
  what: string,
): void {
  if (fits(backend, dtype, length)) return;
  const bytes = length * dtypeByteSize(dtype);
  const limit = backend.tensorLimit;
  throw new RangeError(
    `${what}: shape [${shape.join(", ")}] of ${dtype} needs ${bytes} bytes (${
      size(bytes)
    }), more ` +
      `than one tensor can take on this device: ${limit.bytes} bytes (${size(limit.bytes)}), ` +
      `${limit.source}`,
  );
}
