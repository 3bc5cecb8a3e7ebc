/**
 * The deterministic route of bilinear backward (`rules/route.ts`) on the CPU device reference:
 * the same plan the NPU backend launches, computed bit for bit: gradOutput widened to float32
 * (exact; aclnnCast for 16-bit dtypes), the W pass into a float32 intermediate, the H pass on it
 * seen transposed, and one round-to-nearest-even into `out` (the cast back).
 *
 * @module
 */

import type { DeterministicRoute } from "../../../rules/route.ts";
import { RowReader, RowWriter } from "../../strided.ts";
import { tbePass } from "./tbe_pass.ts";
import type { BilinearBackwardArgs } from "../../types.ts";

/**
 * Runs `route` for a bilinear call on host views (any strides, any dtype).
 *
 * @example
 * ```ts
 * import { deterministicRoute } from "../../../rules/route.ts";
 * import { runRouteCpu } from "./route.ts";
 * const call = { op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 2, 2], outputSize: [4, 4], scales: [0, 0], alignCorners: false } as const;
 * const { route } = deterministicRoute(call, "910", false);
 * const out = new Float32Array(4);
 * runRouteCpu({
 *   gradOutput: { data: new Float32Array(16).fill(1), dtype: "float32", strides: [16, 16, 4, 1], offset: 0 },
 *   out: { data: out, dtype: "float32", strides: [4, 4, 2, 1], offset: 0 },
 *   inputSize: call.inputSize, outputSize: call.outputSize, scales: [0, 0], alignCorners: false,
 * }, route!); // out: [4, 4, 4, 4]
 * ```
 */
export function runRouteCpu(args: BilinearBackwardArgs, route: DeterministicRoute): void {
  const [n, c, inH, inW] = args.inputSize;
  const [outH, outW] = args.outputSize;
  const planes = n * c;
  let cells = readPlanes(args, planes, outH, outW);
  let rows = outH, cols = outW;
  for (const pass of route.passes) {
    if (pass.axis === "h") {
      cells = transposePlanes(cells, planes, rows, cols);
      [rows, cols] = [cols, rows];
    }
    cells = tbePass(cells, planes, pass, args.alignCorners, route.spec, route.fma);
    cols = pass.inCols;
  }
  // The H pass always runs (a route exists only where the heights differ): cells are [Wi, Hi].
  writePlanes(args, transposePlanes(cells, planes, inW, inH), planes, inH, inW);
}

/**
 * gradOutput's logical `[N, C, rows, cols]` as contiguous float32 planes (16-bit values widened,
 * exactly, as the host's cast to float32 does).
 *
 * @example
 * ```ts
 * import { readPlanes } from "./route.ts";
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
  const [sN, sC, sH] = view.strides;
  const channels = args.inputSize[1];
  const reader = new RowReader(view, cols, 0);
  const cells = new Float32Array(planes * rows * cols);
  for (let p = 0; p < planes; p++) {
    const planeStart = view.offset + Math.floor(p / channels) * sN + (p % channels) * sC;
    for (let h = 0; h < rows; h++) {
      const row = reader.row(planeStart + h * sH);
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
 * import { writePlanes } from "./route.ts";
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
  const [sN, sC, sH] = view.strides;
  const channels = args.inputSize[1];
  const writer = new RowWriter(view, cols);
  for (let p = 0; p < planes; p++) {
    const planeStart = view.offset + Math.floor(p / channels) * sN + (p % channels) * sC;
    for (let h = 0; h < rows; h++) writer.write(planeStart + h * sH, cells, (p * rows + h) * cols);
  }
}

function transposePlanes(
  cells: Float32Array,
  planes: number,
  rows: number,
  cols: number,
): Float32Array {
  const result = new Float32Array(cells.length);
  const plane = rows * cols;
  for (let p = 0; p < planes; p++) {
    const o = p * plane;
    for (let r = 0; r < rows; r++) {
      for (let k = 0; k < cols; k++) result[o + k * rows + r] = cells[o + r * cols + k];
    }
  }
  return result;
}
