/**
 * Bilinear 2d forward with PyTorch 1.13's CPU results, bit for bit (the rules: mod.ts). Which of
 * its two kernels PyTorch runs depends on the input's layout:
 *
 * - **generic** (`upsample_generic_Nd_kernel_impl`, any input that is not channels-last
 *   contiguous): per output, W first: `t0 = fma(a, lw0, fl(b * lw1))` from input row h0 (a, b at
 *   columns w0, w1), `t1` likewise from row h1, then `fma(t0, lh0, fl(t1 * lh1))` (GCC contracts
 *   `t0 * w0 + t1 * w1` of `Interpolate<..., 2>::eval` into one fused multiply-add). A `t` depends
 *   on the input row and the output column only, so each row's is computed once per plane.
 *   bfloat16: the same order with every operation rounded to bfloat16 (`c10::BFloat16` arithmetic,
 *   no fusion): `t = bf(bf(a * lw0) + bf(b * lw1))`, `bf(bf(t0 * lh0) + bf(t1 * lh1))`.
 * - **channels-last** (`cpu_upsample_linear_channels_last`, an input `isChannelsLast` accepts,
 *   among them contiguous NCHW with C = 1 or H = W = 1): corner weights `w00 = fl(lh0 * lw0)`, ...
 *   (bfloat16: rounded to bfloat16); the first `C - C % V` channels (vector lanes, V = 8 for
 *   float32, 16 for bfloat16) `fma(i00, w00, fma(i01, w01, fma(i11, w11, fl(i10 * w10))))`, the
 *   remaining channels (the scalar tail) `((i00 w00 + i01 w01) + i10 w10) + i11 w11` summed in
 *   double (float32: `acc_type<float>`) or in float32 (bfloat16), rounded once to the dtype.
 *
 * float16 (refused by 1.13) runs the float32 formulas on the widened input and rounds the result
 * once, to nearest even. Tables: {@link forwardLinearTable}. A rule other than `"pytorch"` runs the
 * generic float32 formula on its tables for every dtype, rounded once.
 *
 * @module
 */

import type { LinearTable } from "../../../rules/pytorch.ts";
import { fmaF32 } from "../../../rules/float32.ts";
import type { TableRule } from "../../../rules/tables.ts";
import { RowReader, RowWriter, scratchBuffer } from "../../strided.ts";
import type { StridedArray } from "../../types.ts";
import { bf16Round, bilinearArith, forwardLinearTable, isChannelsLast } from "./tables.ts";
import type { UpsampleForwardArgs } from "../../types.ts";

// Scratch slots of strided.ts the forward kernels use (the backward's are 0..2).
const SLOT_READ = 8, SLOT_ROW0 = 9, SLOT_ROW1 = 10, SLOT_OUT = 11;

/** bfloat16 product and sum of bfloat16 values: computed in float32, rounded to bfloat16. */
function bfMul(x: number, y: number): number {
  return bf16Round(Math.fround(x * y));
}
function bfAdd(x: number, y: number): number {
  return bf16Round(Math.fround(x + y));
}

/** Horizontal interpolation of one input row (float32 values at `src[base + w]`) into `dst`. */
function lerpRow(
  dst: Float32Array,
  src: Float32Array,
  base: number,
  tw: LinearTable,
  bf16: boolean,
): void {
  const wi0 = tw.i0, wi1 = tw.i1, wl0 = tw.l0, wl1 = tw.l1;
  const outW = wi0.length;
  if (bf16) {
    for (let ow = 0; ow < outW; ow++) {
      dst[ow] = bfAdd(bfMul(src[base + wi0[ow]], wl0[ow]), bfMul(src[base + wi1[ow]], wl1[ow]));
    }
  } else {
    for (let ow = 0; ow < outW; ow++) {
      dst[ow] = fmaF32(src[base + wi0[ow]], wl0[ow], Math.fround(src[base + wi1[ow]] * wl1[ow]));
    }
  }
}

/** The generic kernel: rows interpolated along W once, then combined per output row. */
function generic(
  args: UpsampleForwardArgs,
  th: LinearTable,
  tw: LinearTable,
  bf16: boolean,
): void {
  const { input, out, inputSize, outputSize } = args;
  const [n, c] = inputSize;
  const inW = inputSize[3];
  const [outH, outW] = outputSize;
  const is = input.strides, os = out.strides;
  const reader = new RowReader(input, inW, SLOT_READ);
  const writer = new RowWriter(out, outW);
  const rows = [scratchBuffer(SLOT_ROW0, outW), scratchBuffer(SLOT_ROW1, outW)];
  const rowOf = [-1, -1];
  const result = scratchBuffer(SLOT_OUT, outW);
  const hi0 = th.i0, hi1 = th.i1, hl0 = th.l0, hl1 = th.l1;
  // The interpolated row `h` of the current plane, from a two-row cache.
  const row = (plane: number, h: number, keep: number): Float32Array => {
    if (rowOf[0] === h) return rows[0];
    if (rowOf[1] === h) return rows[1];
    const slot = rowOf[0] === keep ? 1 : 0;
    const src = reader.row(plane + h * is[2]);
    lerpRow(rows[slot], src, reader.base, tw, bf16);
    rowOf[slot] = h;
    return rows[slot];
  };
  for (let ni = 0; ni < n; ni++) {
    for (let ci = 0; ci < c; ci++) {
      const plane = input.offset + ni * is[0] + ci * is[1];
      const oPlane = out.offset + ni * os[0] + ci * os[1];
      rowOf[0] = rowOf[1] = -1;
      for (let oh = 0; oh < outH; oh++) {
        const t0 = row(plane, hi0[oh], -1);
        const t1 = row(plane, hi1[oh], hi0[oh]);
        const l0 = hl0[oh], l1 = hl1[oh];
        if (bf16) {
          for (let ow = 0; ow < outW; ow++) {
            result[ow] = bfAdd(bfMul(t0[ow], l0), bfMul(t1[ow], l1));
          }
        } else {
          for (let ow = 0; ow < outW; ow++) {
            result[ow] = fmaF32(t0[ow], l0, Math.fround(t1[ow] * l1));
          }
        }
        writer.write(oPlane + oh * os[2], result, 0);
      }
    }
  }
}

/** Element access in any dtype, as float32 values. */
function elementReader(view: StridedArray): (i: number) => number {
  const data = view.data;
  if (view.dtype === "float32") return (i) => (data as Float32Array)[i];
  if (view.dtype === "float16") {
    const f16 = new Float16Array(data.buffer, data.byteOffset, data.length);
    return (i) => f16[i];
  }
  const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
  return (i) => {
    u32[0] = (data as Uint16Array)[i] << 16;
    return f32[0];
  };
}

/** The channels-last kernel, output element by element. */
function channelsLast(
  args: UpsampleForwardArgs,
  th: LinearTable,
  tw: LinearTable,
  bf16: boolean,
): void {
  const { input, out, inputSize, outputSize } = args;
  const [n, c] = inputSize;
  const [outH, outW] = outputSize;
  const is = input.strides, os = out.strides;
  const read = elementReader(input);
  // Output elements go through a one-element row writer (rounding and NaN as every kernel's).
  const writer = new RowWriter({ ...out, strides: [1] }, 1);
  const cell = new Float32Array(1);
  const lanes = c - (c % (bf16 ? 16 : 8));
  const round = bf16 ? (x: number): number => bf16Round(Math.fround(x)) : Math.fround;
  for (let ni = 0; ni < n; ni++) {
    for (let oh = 0; oh < outH; oh++) {
      const r0 = input.offset + ni * is[0] + th.i0[oh] * is[2];
      const r1 = input.offset + ni * is[0] + th.i1[oh] * is[2];
      const lh0 = th.l0[oh], lh1 = th.l1[oh];
      for (let ow = 0; ow < outW; ow++) {
        const c0 = tw.i0[ow] * is[3], c1 = tw.i1[ow] * is[3];
        const lw0 = tw.l0[ow], lw1 = tw.l1[ow];
        const w00 = round(lh0 * lw0), w01 = round(lh0 * lw1);
        const w10 = round(lh1 * lw0), w11 = round(lh1 * lw1);
        const o = out.offset + ni * os[0] + oh * os[2] + ow * os[3];
        for (let ci = 0; ci < c; ci++) {
          const ch = ci * is[1];
          const i00 = read(r0 + c0 + ch), i01 = read(r0 + c1 + ch);
          const i10 = read(r1 + c0 + ch), i11 = read(r1 + c1 + ch);
          let v: number;
          if (ci < lanes) {
            // Products of float32 values are exact in double: fmaF32 and, for bfloat16 (whose
            // products are exact in float32 too), fround of the double sum round once.
            v = bf16
              ? Math.fround(
                i00 * w00 +
                  Math.fround(i01 * w01 + Math.fround(i11 * w11 + Math.fround(i10 * w10))),
              )
              : fmaF32(i00, w00, fmaF32(i01, w01, fmaF32(i11, w11, Math.fround(i10 * w10))));
          } else if (bf16) {
            v = Math.fround(
              Math.fround(Math.fround(i00 * w00 + i01 * w01) + i10 * w10) + i11 * w11,
            );
          } else {
            v = Math.fround(i00 * w00 + i01 * w01 + i10 * w10 + i11 * w11);
          }
          cell[0] = v;
          writer.write(o + ci * os[1], cell, 0);
        }
      }
    }
  }
}

/**
 * `interpolate(mode="bilinear", align_corners=...)` on a 4-D input: writes `out`
 * (`[N, C, ...outputSize]`) with PyTorch 1.13's CPU results, bit for bit, any strides, any dtype
 * (module doc: float16 in float32, rounded once). `scales` are `[scalesH, scalesW]` (0: from the
 * sizes; ignored with `alignCorners`).
 *
 * @example
 * ```ts
 * import { bilinear2dForwardCpu } from "./bilinear.ts";
 * const out = new Float32Array(4);
 * bilinear2dForwardCpu({
 *   input: { data: Float32Array.of(1, 3), dtype: "float32", strides: [2, 2, 2, 1], offset: 0 },
 *   out: { data: out, dtype: "float32", strides: [4, 4, 4, 1], offset: 0 },
 *   inputSize: [1, 1, 1, 2],
 *   outputSize: [1, 4],
 *   scales: [0, 0],
 * });
 * // out = [1, 1.5, 2.5, 3]
 * ```
 */
export function bilinear2dForwardCpu(args: UpsampleForwardArgs): void {
  const { input, out, inputSize, outputSize, scales } = args;
  if (inputSize.length !== 4 || outputSize.length !== 2 || scales.length !== 2) {
    throw new RangeError("expected a 2d problem: inputSize [N, C, H, W], outputSize [H, W]");
  }
  if (input.strides.length !== 4 || out.strides.length !== 4) {
    throw new RangeError("input and out need 4 strides");
  }
  if (input.dtype !== out.dtype) {
    throw new TypeError(`input is ${input.dtype} but out is ${out.dtype}`);
  }
  const [n, c, inH, inW] = inputSize;
  const [outH, outW] = outputSize;
  if (n === 0 || c === 0) return;
  const rule: TableRule = args.rule ?? "pytorch";
  const alignCorners = args.alignCorners ?? false;
  const arith = bilinearArith(input.dtype, rule);
  const th = forwardLinearTable(inH, outH, alignCorners, scales[0], arith, rule, 0);
  const tw = forwardLinearTable(inW, outW, alignCorners, scales[1], arith, rule, 1);
  const bf16 = arith === "bfloat16";
  if (rule === "pytorch" && isChannelsLast(inputSize, input.strides)) {
    channelsLast(args, th, tw, bf16);
  } else {
    generic(args, th, tw, bf16);
  }
}
