/**
 * The benchmark shape suite, shared by `upsample_bench.ts`, `compare.ts`, `rss_probe.ts` and (as JSON on
 * stdin) `torch_bench.py`, plus helpers to fill inputs and run one case through the public API.
 *
 * @module
 */

import {
  type Device,
  type DType,
  runParams,
  type Tensor,
  upsampleBilinear2d,
  upsampleNearestExact1d,
  upsampleNearestExact2d,
  type UpsampleOp,
} from "../mod.ts";

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
  /**
   * The forward op itself (`inputSize` -> `[N, C, ...outputSize]`) instead of its backward; the
   * forward cases are {@link FORWARD_CASES}.
   */
  readonly forward?: boolean;
  /** The dtypes measured (default {@link BENCH_DTYPES}). */
  readonly dtypes?: readonly DType[];
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

/** dtypes PyTorch 1.13 runs the forward op in: bilinear float32 and bfloat16, nearest-exact float32. */
const FWD_BILINEAR_DTYPES: readonly DType[] = ["float32", "bfloat16"];
const FWD_NEAREST_DTYPES: readonly DType[] = ["float32"];

/**
 * The forward ops (`bench:compare`'s "Forward ops" rows): the backward suite's shape classes, with
 * `inputSize` the forward input and `outputSize` its result's spatial size, in the dtypes PyTorch
 * 1.13 has a forward kernel for (it refuses float16 in every forward op and bfloat16 in
 * nearest-exact), plus the tiny call.
 */
export const FORWARD_CASES: readonly BenchCase[] = [
  ["fwd_ne2d_x2", "fwd nearest-exact 2d x2", "nearestExact2d", [8, 64, 64, 64], [128, 128], [0, 0]],
  [
    "fwd_ne2d_s1.7",
    "fwd nearest-exact 2d s=1.7",
    "nearestExact2d",
    [8, 64, 70, 70],
    [119, 119],
    [1.7, 1.7],
  ],
  [
    "fwd_ne2d_d0.5",
    "fwd nearest-exact 2d x0.5 (down)",
    "nearestExact2d",
    [8, 64, 64, 64],
    [32, 32],
    [0.5, 0.5],
  ],
  ["fwd_ne1d_x2", "fwd nearest-exact 1d x2", "nearestExact1d", [16, 128, 4096], [8192], [0]],
  ["fwd_bl2d_x2", "fwd bilinear 2d x2", "bilinear2d", [8, 64, 64, 64], [128, 128], [0, 0]],
  [
    "fwd_bl2d_x2_ac",
    "fwd bilinear 2d x2 alignCorners",
    "bilinear2d",
    [8, 64, 64, 64],
    [128, 128],
    [0, 0],
  ],
  [
    "fwd_bl2d_d0.5",
    "fwd bilinear 2d x0.5 (down)",
    "bilinear2d",
    [8, 64, 64, 64],
    [32, 32],
    [0.5, 0.5],
  ],
  [
    "fwd_bl2d_s1.7",
    "fwd bilinear 2d s=1.7",
    "bilinear2d",
    [8, 64, 70, 70],
    [119, 119],
    [1.7, 1.7],
  ],
  ["fwd_tiny", "fwd tiny nearest-exact 2d", "nearestExact2d", [1, 1, 1, 1], [2, 2], [0, 0]],
].map(([id, label, op, inputSize, outputSize, scales]) => ({
  id: id as string,
  label: label as string,
  op: op as UpsampleOp,
  inputSize: inputSize as number[],
  outputSize: outputSize as number[],
  scales: scales as number[],
  alignCorners: (id as string).endsWith("_ac"),
  large: id !== "fwd_tiny",
  forward: true,
  dtypes: op === "bilinear2d" ? FWD_BILINEAR_DTYPES : FWD_NEAREST_DTYPES,
}));

/** The dtypes a case is measured in. */
export function caseDtypes(c: BenchCase): readonly DType[] {
  return c.dtypes ?? BENCH_DTYPES;
}

/** Shape of `gradOutput`: `[N, C, ...outputSize]` (for a forward case: its result's shape). */
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

/**
 * Bytes a call must move at least: `gradOutput` read once plus the result written once (a forward:
 * its input read once and its result written once; the same two shapes).
 */
export function bytesMoved(c: BenchCase, dtype: DType): number {
  return (numel(gradShape(c)) + numel(c.inputSize)) * dtypeBytes(dtype);
}

/** `[8, 64, 128, 128] -> [8, 64, 64, 64]` style description of a case (operand -> result). */
export function shapeText(c: BenchCase): string {
  return `[${sourceShape(c).join(",")}]->[${resultShape(c).join(",")}]`;
}

/** The shape of the op's operand: `gradOutput` (backward) or the input `x` (forward). */
export function sourceShape(c: BenchCase): number[] {
  return c.forward ? [...c.inputSize] : gradShape(c);
}

/** The shape of the op's result: `inputSize` (backward) or `[N, C, ...outputSize]` (forward). */
export function resultShape(c: BenchCase): number[] {
  return c.forward ? gradShape(c) : [...c.inputSize];
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

/** Creates the operand of a case on a device: `gradOutput`, or a forward case's input. */
export function makeGrad(device: Device, c: BenchCase, dtype: DType): Tensor {
  const shape = sourceShape(c);
  return device.tensor(gradValues(numel(shape)), shape, { dtype });
}

/**
 * Runs the case's op on `grad` (a forward case: on its input) through the public API; allocates the
 * result unless `out` is given. The caller disposes the returned tensor (when it is not `out`).
 */
export function runCase(grad: Tensor, c: BenchCase, out?: Tensor): Tensor {
  if (!c.forward) return runParams(grad, c, { out });
  const outputSize = c.outputSize;
  if (c.op === "nearestExact1d") {
    return upsampleNearestExact1d(grad, { outputSize, scales: c.scales[0], out });
  }
  const [scalesH, scalesW] = c.scales;
  if (c.op === "nearestExact2d") {
    return upsampleNearestExact2d(grad, { outputSize, scalesH, scalesW, out });
  }
  return upsampleBilinear2d(grad, {
    outputSize,
    scalesH,
    scalesW,
    alignCorners: c.alignCorners,
    out,
  });
}
