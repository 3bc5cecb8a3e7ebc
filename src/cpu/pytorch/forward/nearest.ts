/**
 * nearest-exact forward (1d, 2d) as a gather: output `(oh, ow)` of a plane is the input element
 * `(hIndex[oh], wIndex[ow])`, its bits copied (NaN payloads and -0 included), in every dtype.
 * PyTorch 1.13 computes float32 only (float16 and bfloat16 raise "not implemented"); its float32
 * result of the widened input is the same copy, so every dtype gets the bits of its input.
 *
 * @module
 */

import { nearestTables, type TableRule } from "../../../rules/tables.ts";
import type { StridedArray } from "../../types.ts";
import type { UpsampleForwardArgs } from "../../types.ts";

/**
 * The storage as unsigned integers of the element's width: copying them copies the bits.
 *
 * @example
 * ```ts
 * import { bitsOf } from "./nearest.ts";
 * bitsOf({ data: Float32Array.of(1), dtype: "float32", strides: [1], offset: 0 })[0]; // 0x3f800000
 * ```
 */
export function bitsOf(view: StridedArray): Uint32Array | Uint16Array {
  const data = view.data;
  if (view.dtype !== "float32") return data as Uint16Array;
  return new Uint32Array(data.buffer, data.byteOffset, data.length);
}

/** Everything the shared gather needs; 1d is 2d with one row (H = 1, row stride 0). */
interface Gather {
  input: StridedArray;
  out: StridedArray;
  n: number;
  c: number;
  outH: number;
  outW: number;
  hIndex: Int32Array;
  wIndex: Int32Array;
  /** Strides of input and out as [n, c, h, w]. */
  is: readonly number[];
  os: readonly number[];
}

function gather(g: Gather): void {
  const { input, out, n, c, outH, outW, hIndex, wIndex, is, os } = g;
  if (n === 0 || c === 0) return;
  const src = bitsOf(input), dst = bitsOf(out);
  const sw = is[3], dw = os[3];
  // Source offsets of a row, once per call.
  const columns = new Float64Array(outW);
  for (let ow = 0; ow < outW; ow++) columns[ow] = wIndex[ow] * sw;
  for (let ni = 0; ni < n; ni++) {
    for (let ci = 0; ci < c; ci++) {
      const sPlane = input.offset + ni * is[0] + ci * is[1];
      const dPlane = out.offset + ni * os[0] + ci * os[1];
      for (let oh = 0; oh < outH; oh++) {
        const sRow = sPlane + hIndex[oh] * is[2];
        const dRow = dPlane + oh * os[2];
        if (dw === 1) {
          for (let ow = 0; ow < outW; ow++) dst[dRow + ow] = src[sRow + columns[ow]];
        } else {
          for (let ow = 0, p = dRow; ow < outW; ow++, p += dw) dst[p] = src[sRow + columns[ow]];
        }
      }
    }
  }
}

function checkArgs(args: UpsampleForwardArgs, spatial: number): void {
  const { input, out, inputSize, outputSize, scales } = args;
  const rank = spatial + 2;
  if (inputSize.length !== rank || outputSize.length !== spatial || scales.length !== spatial) {
    throw new RangeError(`expected a ${spatial}d problem: inputSize rank ${rank}`);
  }
  if (input.strides.length !== rank || out.strides.length !== rank) {
    throw new RangeError(`input and out need ${rank} strides`);
  }
  if (input.dtype !== out.dtype) {
    throw new TypeError(`input is ${input.dtype} but out is ${out.dtype}`);
  }
}

const ONE_ROW = Int32Array.of(0);

/**
 * `interpolate(mode="nearest-exact")` on a 3-D input: writes `out` (`[N, C, outputSize[0]]`),
 * each element a copy of the input element PyTorch's CPU kernel reads, any strides, any dtype.
 *
 * @example
 * ```ts
 * import { nearestExact1dForwardCpu } from "./nearest.ts";
 * const out = new Float32Array(5);
 * nearestExact1dForwardCpu({
 *   input: { data: Float32Array.of(1, 2), dtype: "float32", strides: [2, 2, 1], offset: 0 },
 *   out: { data: out, dtype: "float32", strides: [5, 5, 1], offset: 0 },
 *   inputSize: [1, 1, 2],
 *   outputSize: [5],
 *   scales: [0],
 * });
 * // out = [1, 1, 2, 2, 2]
 * ```
 */
export function nearestExact1dForwardCpu(args: UpsampleForwardArgs): void {
  checkArgs(args, 1);
  const { input, out, inputSize, outputSize, scales } = args;
  const [n, c, inW] = inputSize;
  const outW = outputSize[0];
  const rule: TableRule = args.rule ?? "pytorch";
  const is = input.strides, os = out.strides;
  gather({
    input,
    out,
    n,
    c,
    outH: 1,
    outW,
    hIndex: ONE_ROW,
    wIndex: nearestTables(inW, outW, scales[0], rule).index,
    is: [is[0], is[1], 0, is[2]],
    os: [os[0], os[1], 0, os[2]],
  });
}

/**
 * `interpolate(mode="nearest-exact")` on a 4-D input: writes `out` (`[N, C, ...outputSize]`),
 * each element a copy of the input element PyTorch's CPU kernel reads, any strides, any dtype.
 * `scales` are `[scalesH, scalesW]`, 0 meaning "from the sizes".
 *
 * @example
 * ```ts
 * import { nearestExact2dForwardCpu } from "./nearest.ts";
 * const out = new Float32Array(4);
 * nearestExact2dForwardCpu({
 *   input: { data: Float32Array.of(7), dtype: "float32", strides: [1, 1, 1, 1], offset: 0 },
 *   out: { data: out, dtype: "float32", strides: [4, 4, 2, 1], offset: 0 },
 *   inputSize: [1, 1, 1, 1],
 *   outputSize: [2, 2],
 *   scales: [0, 0],
 * });
 * // out = [7, 7, 7, 7]
 * ```
 */
export function nearestExact2dForwardCpu(args: UpsampleForwardArgs): void {
  checkArgs(args, 2);
  const { input, out, inputSize, outputSize, scales } = args;
  const [n, c, inH, inW] = inputSize;
  const [outH, outW] = outputSize;
  const rule: TableRule = args.rule ?? "pytorch";
  gather({
    input,
    out,
    n,
    c,
    outH,
    outW,
    hIndex: nearestTables(inH, outH, scales[0], rule).index,
    wIndex: nearestTables(inW, outW, scales[1], rule).index,
    is: input.strides,
    os: out.strides,
  });
}
