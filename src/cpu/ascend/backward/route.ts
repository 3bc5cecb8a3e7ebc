/**
 * The deterministic route of bilinear backward (`rules/route.ts`) on the CPU device reference:
 * the same plan the NPU backend launches, computed bit for bit: gradOutput widened to float32
 * (exact; aclnnCast for 16-bit dtypes), the first pass into a float32 intermediate, the second on
 * it (an H pass on planes seen transposed), and one round-to-nearest-even into `out` (the cast
 * back). Also the views of the call transposed (the column-loss arrangement of
 * `rules/arrangement.ts`).
 *
 * @module
 */

import type { DeterministicRoute } from "../../../rules/route.ts";
import { readPlanes, writePlanes } from "./planes.ts";
import { tbePass } from "./tbe_pass.ts";
import type { BilinearBackwardArgs, StridedArray } from "../../types.ts";

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
  let swapped = false; // cells are [W, H] planes
  for (const pass of route.passes) {
    // The H pass runs on planes seen with H and W swapped, the W pass on planes as they are.
    if ((pass.axis === "h") !== swapped) {
      cells = transposePlanes(cells, planes, rows, cols);
      [rows, cols] = [cols, rows];
      swapped = !swapped;
    }
    cells = tbePass(cells, planes, pass, args.alignCorners, route.spec, route.fma);
    cols = pass.inCols;
  }
  if (swapped) cells = transposePlanes(cells, planes, inW, inH);
  writePlanes(args, cells, planes, inH, inW);
}

/**
 * The sizes of a call with H and W swapped (the `"transposed"` arrangement of `rules/
 * arrangement.ts`): what the kernel's tiling and tables see. Scales are dropped: the TBE kernel
 * takes them from the sizes.
 *
 * @example
 * ```ts
 * import { transposedSizes } from "./route.ts";
 * transposedSizes({ inputSize: [1, 2, 4, 1535], outputSize: [2, 2], alignCorners: true });
 * // { inputSize: [1, 2, 1535, 4], outputSize: [2, 2], scales: [0, 0], alignCorners: true }
 * ```
 */
export function transposedSizes<C extends Pick<BilinearBackwardArgs, "inputSize" | "outputSize">>(
  call: C,
): C & { readonly scales: readonly number[] } {
  const [n, c, inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  return { ...call, inputSize: [n, c, inW, inH], outputSize: [outW, outH], scales: [0, 0] };
}

/**
 * Kernel arguments with H and W swapped: the sizes ({@link transposedSizes}) and both views through
 * swapped strides, the same storage. The kernel then writes `out` as the device's transposed
 * launch does.
 *
 * @example
 * ```ts
 * import { transposedArgs } from "./route.ts";
 * const view = { data: new Float32Array(6), dtype: "float32", strides: [6, 6, 3, 1], offset: 0 } as const;
 * transposedArgs({ gradOutput: view, out: view, inputSize: [1, 1, 2, 3], outputSize: [2, 3], scales: [0, 0], alignCorners: false }).out.strides;
 * // [6, 6, 1, 3]
 * ```
 */
export function transposedArgs(args: BilinearBackwardArgs): BilinearBackwardArgs {
  const swap = (view: StridedArray): StridedArray => {
    const [sn, sc, sh, sw] = view.strides;
    return { ...view, strides: [sn, sc, sw, sh] };
  };
  return { ...transposedSizes(args), gradOutput: swap(args.gradOutput), out: swap(args.out) };
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
