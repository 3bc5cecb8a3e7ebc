/**
 * The benchmark shape suite, shared by `upsample_bench.ts`, `compare.ts`, `rss_probe.ts` and (as JSON on
 * stdin) `torch_bench.py`, plus helpers to fill inputs and run one case through the public API.
 *
 * @module
 */

import { type Device, type DType, runParams, type Tensor, type UpsampleOp } from "../mod.ts";

/** One benchmark shape: the forward op mapped `inputSize` to `[N, C, ...outputSize]`. */
export interface BenchCase {
  /** Short unique id (also used by `torch_bench.py`). */
  readonly id: string;
  /** Human-readable label for tables and bench groups. */
  readonly label: string;
  /** The op. */
  readonly op: UpsampleOp;
  /** Shape of the forward input and of the result. */
  readonly inputSize: readonly number[];
  /** Spatial size of the forward output (`gradOutput` is `[N, C, ...outputSize]`). */
  readonly outputSize: readonly number[];
  /** PyTorch scale factors per spatial dimension (0 = derive from the sizes). */
  readonly scales: readonly number[];
  /** Bilinear only. */
  readonly alignCorners: boolean;
  /** Large enough to be bandwidth-bound (fewer iterations, counted in bandwidth targets). */
  readonly large: boolean;
}

/** The element types benchmarked. */
export const BENCH_DTYPES: readonly DType[] = ["float32", "float16", "bfloat16"];

/** The shape suite of the benchmark issue. */
export const CASES: readonly BenchCase[] = [
  {
    id: "ne2d_x2",
    label: "nearest-exact 2d x2",
    op: "nearestExact2d",
    inputSize: [8, 64, 64, 64],
    outputSize: [128, 128],
    scales: [0, 0],
    alignCorners: false,
    large: true,
  },
  {
    id: "ne2d_s1.7",
    label: "nearest-exact 2d s=1.7",
    op: "nearestExact2d",
    inputSize: [8, 64, 70, 70],
    outputSize: [119, 119],
    scales: [1.7, 1.7],
    alignCorners: false,
    large: true,
  },
  {
    id: "ne1d_x2",
    label: "nearest-exact 1d x2",
    op: "nearestExact1d",
    inputSize: [16, 128, 4096],
    outputSize: [8192],
    scales: [0],
    alignCorners: false,
    large: true,
  },
  {
    id: "bl2d_x2",
    label: "bilinear 2d x2",
    op: "bilinear2d",
    inputSize: [8, 64, 64, 64],
    outputSize: [128, 128],
    scales: [0, 0],
    alignCorners: false,
    large: true,
  },
  {
    id: "bl2d_x2_ac",
    label: "bilinear 2d x2 alignCorners",
    op: "bilinear2d",
    inputSize: [8, 64, 64, 64],
    outputSize: [128, 128],
    scales: [0, 0],
    alignCorners: true,
    large: true,
  },
  {
    id: "bl2d_d0.5",
    label: "bilinear 2d x0.5 (down)",
    op: "bilinear2d",
    inputSize: [8, 64, 64, 64],
    outputSize: [32, 32],
    scales: [0.5, 0.5],
    alignCorners: false,
    large: true,
  },
  {
    id: "tiny",
    label: "tiny nearest-exact 2d",
    op: "nearestExact2d",
    inputSize: [1, 1, 1, 1],
    outputSize: [2, 2],
    scales: [0, 0],
    alignCorners: false,
    large: false,
  },
];

/** Shape of `gradOutput`: `[N, C, ...outputSize]`. */
export function gradShape(c: BenchCase): number[] {
  return [c.inputSize[0], c.inputSize[1], ...c.outputSize];
}

/** Number of elements of a shape. */
export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** Bytes per element of a dtype. */
export function dtypeBytes(dtype: DType): number {
  return dtype === "float32" ? 4 : 2;
}

/** Bytes a backward must move at least: `gradOutput` read once plus the result written once. */
export function bytesMoved(c: BenchCase, dtype: DType): number {
  return (numel(gradShape(c)) + numel(c.inputSize)) * dtypeBytes(dtype);
}

/** `[8, 64, 128, 128] -> [8, 64, 64, 64]` style description of a case. */
export function shapeText(c: BenchCase): string {
  return `[${gradShape(c).join(",")}]->[${c.inputSize.join(",")}]`;
}

/**
 * Deterministic pseudo-random gradient values in [-1, 1) (xorshift32), so every run and both sides
 * of the comparison see the same kind of data.
 */
export function gradValues(length: number, seed = 12345): Float32Array {
  const values = new Float32Array(length);
  let x = seed | 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    values[i] = (x >>> 8) / 8388608 - 1;
  }
  return values;
}

/** Creates the `gradOutput` tensor of a case on a device. */
export function makeGrad(device: Device, c: BenchCase, dtype: DType): Tensor {
  const shape = gradShape(c);
  return device.tensor(gradValues(numel(shape)), shape, { dtype });
}

/**
 * Runs the case's op on `grad` through the public API; allocates the result unless `out` is given.
 * The caller disposes the returned tensor (when it is not `out`).
 */
export function runCase(grad: Tensor, c: BenchCase, out?: Tensor): Tensor {
  return runParams(grad, c, { out });
}
