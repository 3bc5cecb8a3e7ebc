/**
 * The host side every device-reference backward kernel shares: gradOutput's planes widened to
 * contiguous float32 (exact; the op_api's aclnnCast for 16-bit dtypes), the kernel on them, and its
 * float32 result rounded once into `out` (round to nearest even, the cast back; `hicann/ops-cv`
 * `aclnn_upsample_bilinear_2d_backward{,_v2}.cpp` DoResizeBilinearV2Grad).
 *
 * @module
 */

import type { UpsampleParams } from "../../../rules/ops.ts";
import { RowReader, RowWriter } from "../../strided.ts";
import type { BilinearBackwardArgs, StridedArray } from "../../types.ts";

/** The plane sizes of a 2d backward launch: the image (result) and the gradient. */
export interface PlaneSizes {
  /** Image (result) height. */
  readonly inH: number;
  /** Image width. */
  readonly inW: number;
  /** Gradient height. */
  readonly outH: number;
  /** Gradient width. */
  readonly outW: number;
}

/**
 * The plane sizes of a 2d call (`inputSize` `[N, C, inH, inW]`, `outputSize` `[outH, outW]`).
 *
 * @example
 * ```ts
 * import { planeSizesOf } from "./planes.ts";
 * planeSizesOf({ inputSize: [1, 2, 3, 5], outputSize: [6, 9] }); // { inH: 3, inW: 5, outH: 6, outW: 9 }
 * ```
 */
export function planeSizesOf(call: Pick<UpsampleParams, "inputSize" | "outputSize">): PlaneSizes {
  const [, , inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  return { inH, inW, outH, outW };
}

/**
 * Runs `kernel` (contiguous float32 gradient planes in, `inH x inW` float32 planes out) for a call
 * on host views (any strides, any dtype): nothing happens for an empty result.
 *
 * @example
 * ```ts
 * import { runOnPlanes } from "./planes.ts";
 * const gradOutput = { data: Float32Array.of(1, 2), dtype: "float32", strides: [2, 2, 2, 1], offset: 0 } as const;
 * const out = { data: new Float32Array(1), dtype: "float32", strides: [1, 1, 1, 1], offset: 0 } as const;
 * const args = { gradOutput, out, inputSize: [1, 1, 1, 1], outputSize: [1, 2], scales: [0, 0], alignCorners: false };
 * runOnPlanes(args, { inH: 1, inW: 1, outH: 1, outW: 2 }, (g) => Float32Array.of(g[0] + g[1]));
 * // out.data: [3]
 * ```
 */
export function runOnPlanes(
  args: BilinearBackwardArgs,
  sizes: PlaneSizes,
  kernel: (grad: Float32Array, planes: number) => Float32Array,
): void {
  const [n, c] = args.inputSize;
  const planes = n * c;
  if (planes === 0 || sizes.inH * sizes.inW === 0) return;
  const grad = readPlanes(args, planes, sizes.outH, sizes.outW);
  writePlanes(args, kernel(grad, planes), planes, sizes.inH, sizes.inW);
}

/**
 * gradOutput's logical `[N, C, rows, cols]` as contiguous float32 planes (16-bit values widened,
 * exactly, as the host's cast to float32 does).
 *
 * @example
 * ```ts
 * import { readPlanes } from "./planes.ts";
 * const gradOutput = { data: new Float32Array([1, 2]), dtype: "float32", strides: [2, 2, 2, 1], offset: 0 } as const;
 * readPlanes({ gradOutput, out: gradOutput, inputSize: [1, 1, 1, 1], outputSize: [1, 2], scales: [0, 0], alignCorners: false }, 1, 1, 2);
 * // Float32Array [1, 2]
 * ```
 */
export function readPlanes(
  args: BilinearBackwardArgs,
  planes: number,
  rows: number,
  cols: number,
): Float32Array {
  const view = args.gradOutput;
  const reader = new RowReader(view, cols, 0);
  const cells = new Float32Array(planes * rows * cols);
  for (let p = 0; p < planes; p++) {
    const start = planeStart(view, args.inputSize[1], p);
    for (let h = 0; h < rows; h++) {
      const row = reader.row(start + h * view.strides[2]);
      const base = reader.base;
      cells.set(row.subarray(base, base + cols), (p * rows + h) * cols);
    }
  }
  return cells;
}

/**
 * Writes contiguous float32 planes (`rows x cols` each) into `out`'s logical `[N, C, rows, cols]`,
 * rounding to its dtype (round to nearest even, as the host's cast back does).
 *
 * @example
 * ```ts
 * import { writePlanes } from "./planes.ts";
 * const out = { data: new Float32Array(2), dtype: "float32", strides: [2, 2, 2, 1], offset: 0 } as const;
 * writePlanes({ gradOutput: out, out, inputSize: [1, 1, 1, 2], outputSize: [1, 1], scales: [0, 0], alignCorners: false }, Float32Array.of(3, 4), 1, 1, 2);
 * ```
 */
export function writePlanes(
  args: BilinearBackwardArgs,
  cells: Float32Array,
  planes: number,
  rows: number,
  cols: number,
): void {
  const view = args.out;
  const writer = new RowWriter(view, cols);
  for (let p = 0; p < planes; p++) {
    const start = planeStart(view, args.inputSize[1], p);
    for (let h = 0; h < rows; h++) {
      writer.write(start + h * view.strides[2], cells, (p * rows + h) * cols);
    }
  }
}

// The storage index of plane p (= n * channels + c) of a `[N, C, H, W]` view.
function planeStart(view: StridedArray, channels: number, p: number): number {
  const [sN, sC] = view.strides;
  return view.offset + Math.floor(p / channels) * sN + (p % channels) * sC;
}
