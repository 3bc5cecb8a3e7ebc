/**
 * Nearest-exact backward (1d, 2d) as a deterministic gather that is bit-exact with PyTorch's CPU
 * scatter: the forward index table of each dimension is monotone, so input cell `i` receives the
 * contiguous output range `[starts[i], starts[i + 1])`; each cell sums its gradients in float32,
 * from +0, in row-major (oh, ow) order — exactly the order of the scatter.
 *
 * @module
 */

import { longestRange, uniformFactor } from "../../../rules/pytorch.ts";
import { nearestTables, type TableRule } from "../../../rules/tables.ts";
import { RowReader, RowWriter, scratchBuffer } from "../../strided.ts";
import type { StridedArray, UpsampleBackwardArgs } from "../../types.ts";

// Storing `x + y` (two float32 values, added in double) into a Float32Array rounds exactly like a
// float32 addition: double rounding is innocuous for + when 53 >= 2 * 24 + 2. So only sums kept in a
// local across several additions need Math.fround after each step.

/**
 * acc[accBase + iw] += src[base + ow] for ow in the range of iw, in order, in float32; when
 * `first`, the sums start from +0 instead of the current contents of acc.
 */
function accumulateRow(
  acc: Float32Array,
  accBase: number,
  src: Float32Array,
  base: number,
  index: Int32Array,
  inW: number,
  factor: number,
  first: boolean,
): void {
  if (factor === 2) {
    if (first) {
      for (let iw = 0, p = base; iw < inW; iw++, p += 2) {
        acc[accBase + iw] = src[p] + 0 + src[p + 1];
      }
    } else {
      for (let iw = 0, p = base; iw < inW; iw++, p += 2) {
        acc[accBase + iw] = Math.fround(acc[accBase + iw] + src[p]) + src[p + 1];
      }
    }
  } else if (factor === 1) {
    if (first) {
      for (let iw = 0; iw < inW; iw++) acc[accBase + iw] = src[base + iw] + 0;
    } else {
      for (let iw = 0; iw < inW; iw++) acc[accBase + iw] = acc[accBase + iw] + src[base + iw];
    }
  } else {
    // A row scatter in ow order: each cell still receives its gradients in ascending ow order.
    if (first) acc.fill(0, accBase, accBase + inW);
    const outW = index.length;
    for (let ow = 0; ow < outW; ow++) acc[accBase + index[ow]] += src[base + ow];
  }
}

/** The common 2x case: two gradient rows, two columns each, summed in (oh, ow) order from +0. */
function sumTwoRowsFactor2(
  acc: Float32Array,
  accBase: number,
  src0: Float32Array,
  base0: number,
  src1: Float32Array,
  base1: number,
  inW: number,
): void {
  for (let iw = 0, p = base0, q = base1; iw < inW; iw++, p += 2, q += 2) {
    const top = Math.fround(src0[p] + 0 + src0[p + 1]);
    acc[accBase + iw] = Math.fround(top + src1[q]) + src1[q + 1];
  }
}

/**
 * Gradient rows summed into cells that own at most two columns each, from +0 in (oh, ow) order: a
 * gather with the short ranges spelled out, faster than a row scatter. One gradient row here; two
 * in {@link sumShortRanges2}.
 */
function sumShortRanges1(
  acc: Float32Array,
  accBase: number,
  src: Float32Array,
  base0: number,
  starts: Int32Array,
  inW: number,
): void {
  for (let iw = 0; iw < inW; iw++) {
    const s = starts[iw];
    const len = starts[iw + 1] - s;
    const p = base0 + s;
    acc[accBase + iw] = len === 2 ? src[p] + 0 + src[p + 1] : len === 1 ? src[p] + 0 : 0;
  }
}

/** As {@link sumShortRanges1}, for cells that own two gradient rows (`base0`, then `base1`). */
function sumShortRanges2(
  acc: Float32Array,
  accBase: number,
  src0: Float32Array,
  base0: number,
  src1: Float32Array,
  base1: number,
  starts: Int32Array,
  inW: number,
): void {
  for (let iw = 0; iw < inW; iw++) {
    const s = starts[iw];
    const len = starts[iw + 1] - s;
    const p = base0 + s;
    const q = base1 + s;
    if (len === 2) {
      const top = Math.fround(src0[p] + 0 + src0[p + 1]);
      acc[accBase + iw] = Math.fround(top + src1[q]) + src1[q + 1];
    } else if (len === 1) acc[accBase + iw] = Math.fround(src0[p] + 0) + src1[q];
    else acc[accBase + iw] = 0;
  }
}

/** Everything the shared 1d/2d gather needs; 1d is 2d with one row (H = 1, row stride 0). */
interface Plan {
  grad: StridedArray;
  out: StridedArray;
  n: number;
  c: number;
  inH: number;
  inW: number;
  outW: number;
  hStarts: Int32Array;
  wStarts: Int32Array;
  /** Forward index table of the width: output column -> input column. */
  wIndex: Int32Array;
  /** Strides of gradOutput and out as [n, c, h, w]. */
  gs: readonly number[];
  os: readonly number[];
}

/** Fewest channels for which the channels-last gather beats reading strided rows. */
const CHANNELS_LAST_MIN = 16;

/**
 * Channels-last gradOutput (channel stride 1, width stride C): a row of every channel is one run
 * of `outW * C` elements, so all channels are summed together, then transposed into `out`.
 */
function gatherChannelsLast(plan: Plan): void {
  const { grad, out, n, c, inH, inW, outW, hStarts, wStarts, gs, os } = plan;
  const runs: StridedArray = { data: grad.data, dtype: grad.dtype, strides: [1], offset: 0 };
  const reader = new RowReader(runs, outW * c, 0);
  const writer = new RowWriter(out, inW);
  const acc = scratchBuffer(1, inW * c); // [inW, C]
  const planar = scratchBuffer(2, inW * c); // [C, inW]
  for (let ni = 0; ni < n; ni++) {
    for (let ih = 0; ih < inH; ih++) {
      acc.fill(0, 0, inW * c);
      const hi = hStarts[ih + 1];
      for (let oh = hStarts[ih]; oh < hi; oh++) {
        const src = reader.row(grad.offset + ni * gs[0] + oh * gs[2]);
        const base = reader.base;
        for (let iw = 0, ow = wStarts[0]; iw < inW; iw++) {
          const owEnd = wStarts[iw + 1];
          const a = iw * c;
          for (; ow < owEnd; ow++) {
            const p = base + ow * c;
            for (let k = 0; k < c; k++) acc[a + k] = Math.fround(acc[a + k] + src[p + k]);
          }
        }
      }
      for (let k = 0; k < c; k++) {
        for (let iw = 0; iw < inW; iw++) planar[k * inW + iw] = acc[iw * c + k];
      }
      const oRow = out.offset + ni * os[0] + ih * os[2];
      for (let k = 0; k < c; k++) writer.write(oRow + k * os[1], planar, k * inW);
    }
  }
}

function gather(plan: Plan): void {
  const { grad, out, n, c, inH, inW, outW, hStarts, wStarts, wIndex, gs, os } = plan;
  if (n === 0 || c === 0) return;
  if (c >= CHANNELS_LAST_MIN && gs[1] === 1 && gs[3] === c) return gatherChannelsLast(plan);
  const reader = new RowReader(grad, outW, 0);
  // Rows of converted dtypes land in the reader's scratch row: a second reader holds the second row.
  const reader2 = reader.zeroCopy ? reader : new RowReader(grad, outW, 2);
  const factor = uniformFactor(wStarts);
  // Scales between 1 and 2: every input column owns at most two outputs.
  const shortRanges = factor === 0 && longestRange(wStarts) <= 2;
  // Accumulate straight into a float32 out with unit row stride; otherwise into a scratch row.
  const direct = out.dtype === "float32" && (os[3] === 1 || inW === 1);
  const writer = direct ? undefined : new RowWriter(out, inW);
  const scratch = direct ? undefined : scratchBuffer(1, inW);
  for (let ni = 0; ni < n; ni++) {
    for (let ci = 0; ci < c; ci++) {
      const gPlane = grad.offset + ni * gs[0] + ci * gs[1];
      const oPlane = out.offset + ni * os[0] + ci * os[1];
      for (let ih = 0; ih < inH; ih++) {
        const oRow = oPlane + ih * os[2];
        const acc = scratch ?? (out.data as Float32Array);
        const accBase = scratch === undefined ? oRow : 0;
        const lo = hStarts[ih];
        const hi = hStarts[ih + 1];
        if (lo === hi) acc.fill(0, accBase, accBase + inW);
        else if ((factor === 2 && hi - lo === 2) || (shortRanges && hi - lo <= 2)) {
          const src0 = reader.row(gPlane + lo * gs[2]);
          const base0 = reader.base;
          if (hi - lo === 1) sumShortRanges1(acc, accBase, src0, base0, wStarts, inW);
          else {
            const src1 = reader2.row(gPlane + (lo + 1) * gs[2]);
            if (factor === 2) sumTwoRowsFactor2(acc, accBase, src0, base0, src1, reader2.base, inW);
            else sumShortRanges2(acc, accBase, src0, base0, src1, reader2.base, wStarts, inW);
          }
          if (writer !== undefined) writer.write(oRow, acc, 0);
          continue;
        }
        for (let oh = lo; oh < hi; oh++) {
          const src = reader.row(gPlane + oh * gs[2]);
          accumulateRow(acc, accBase, src, reader.base, wIndex, inW, factor, oh === lo);
        }
        if (writer !== undefined) writer.write(oRow, acc, 0);
      }
    }
  }
}

function widthTables(inW: number, outW: number, scale: number, rule: TableRule): {
  wStarts: Int32Array;
  wIndex: Int32Array;
} {
  const { index, starts } = nearestTables(inW, outW, scale, rule);
  return { wStarts: starts, wIndex: index };
}

const ONE_ROW = Int32Array.of(0, 1);

function checkArgs(args: UpsampleBackwardArgs, spatial: number): void {
  const { gradOutput, out, inputSize, outputSize, scales } = args;
  const rank = spatial + 2;
  if (inputSize.length !== rank || outputSize.length !== spatial || scales.length !== spatial) {
    throw new RangeError(`expected a ${spatial}d problem: inputSize rank ${rank}`);
  }
  if (gradOutput.strides.length !== rank || out.strides.length !== rank) {
    throw new RangeError(`gradOutput and out need ${rank} strides`);
  }
  if (gradOutput.dtype !== out.dtype) {
    throw new TypeError(`gradOutput is ${gradOutput.dtype} but out is ${out.dtype}`);
  }
}

/**
 * Backward of `upsample_nearest_exact1d`: writes into `out` ([N, C, L_in]) the gradient of the
 * input, bit-exact with PyTorch's CPU kernel in float32 (float16/bfloat16 are accumulated in
 * float32 and rounded once).
 *
 * @example
 * ```ts
 * import { nearestExact1dBackwardCpu } from "./nearest_exact.ts";
 * const out = new Float32Array(2);
 * nearestExact1dBackwardCpu({
 *   gradOutput: { data: Float32Array.of(1, 2, 3, 4), dtype: "float32", strides: [4, 4, 1], offset: 0 },
 *   out: { data: out, dtype: "float32", strides: [2, 2, 1], offset: 0 },
 *   inputSize: [1, 1, 2],
 *   outputSize: [4],
 *   scales: [0],
 * });
 * // out = [3, 7]
 * ```
 */
export function nearestExact1dBackwardCpu(args: UpsampleBackwardArgs): void {
  checkArgs(args, 1);
  const { gradOutput, out, inputSize, outputSize, scales } = args;
  const [n, c, inW] = inputSize;
  const outW = outputSize[0];
  const gs = gradOutput.strides;
  const os = out.strides;
  gather({
    grad: gradOutput,
    out,
    n,
    c,
    inH: 1,
    inW,
    outW,
    hStarts: ONE_ROW,
    ...widthTables(inW, outW, scales[0], args.rule ?? "pytorch"),
    gs: [gs[0], gs[1], 0, gs[2]],
    os: [os[0], os[1], 0, os[2]],
  });
}

/**
 * Backward of `upsample_nearest_exact2d`: writes into `out` ([N, C, H_in, W_in]) the gradient of
 * the input, bit-exact with PyTorch's CPU kernel in float32 (float16/bfloat16 are accumulated in
 * float32 and rounded once). `scales` are `[scalesH, scalesW]`, 0 meaning "from the sizes".
 *
 * @example
 * ```ts
 * import { nearestExact2dBackwardCpu } from "./nearest_exact.ts";
 * const out = new Float32Array(1);
 * nearestExact2dBackwardCpu({
 *   gradOutput: { data: Float32Array.of(1, 2, 3, 4), dtype: "float32", strides: [4, 4, 2, 1], offset: 0 },
 *   out: { data: out, dtype: "float32", strides: [1, 1, 1, 1], offset: 0 },
 *   inputSize: [1, 1, 1, 1],
 *   outputSize: [2, 2],
 *   scales: [0, 0],
 * });
 * // out = [10]
 * ```
 */
export function nearestExact2dBackwardCpu(args: UpsampleBackwardArgs): void {
  checkArgs(args, 2);
  const { gradOutput, out, inputSize, outputSize, scales } = args;
  const [n, c, inH, inW] = inputSize;
  const [outH, outW] = outputSize;
  gather({
    grad: gradOutput,
    out,
    n,
    c,
    inH,
    inW,
    outW,
    hStarts: nearestTables(inH, outH, scales[0], args.rule ?? "pytorch").starts,
    ...widthTables(inW, outW, scales[1], args.rule ?? "pytorch"),
    gs: gradOutput.strides,
    os: out.strides,
  });
}
