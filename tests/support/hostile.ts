/**
 * Hostile values the invalid-argument suites of the backward and forward ops draw from: objects that
 * look like tensors but are not, and values that are not arrays of sizes.
 *
 * @module
 */

import { type DType, Tensor } from "../../mod.ts";

const numel = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** Objects that look like a tensor of `shape` and `dtype` but are not. */
export function forgeries(shape: readonly number[], dtype: DType): unknown[] {
  return [
    Object.create(Tensor.prototype),
    Object.create(Tensor.prototype, {
      shape: { value: shape },
      dtype: { value: dtype },
      disposed: { value: false },
    }),
    { shape, strides: [], offset: 0, dtype, disposed: false },
    { shape, dtype: "float64" },
    { shape, dtype: "int32", toFloat32Array: () => Promise.resolve(new Float32Array()) },
    new Float64Array(numel(shape)),
    new Float32Array(numel(shape)),
    new Int32Array(numel(shape)),
    new Uint16Array(numel(shape)),
    new BigInt64Array(numel(shape)),
    new Uint8Array(numel(shape) * 4).buffer,
    new DataView(new ArrayBuffer(8)),
    Array.from({ length: numel(shape) }, () => 0),
    [[[[0]]]],
    Object.create(null),
    new Map([["shape", shape]]),
    Promise.resolve(0),
    null,
    undefined,
    0,
    1.5,
    "float32 tensor",
    true,
    12n,
    Symbol("tensor"),
    () => 0,
  ];
}

/** Values that are not arrays of sizes. */
export const notArrays = (sizes: readonly number[]): unknown[] => [
  sizes[0],
  sizes.join(","),
  Int32Array.from(sizes),
  Float64Array.from(sizes),
  { 0: sizes[0], length: sizes.length },
  new Set(sizes),
  null,
  undefined,
  true,
  8n,
  Symbol("sizes"),
  () => sizes,
  Object.create(null),
];
