/**
 * The FORWARD device reference: what an Ascend family's kernel computes for a forward call, bit for
 * bit, on host strided views of any dtype, from the plan of `src/rules/forward_device.ts`
 * (`forwardPlan`). Copies move bits; the arithmetic kernels read the input as float32 (16-bit
 * values widen exactly, as the device's casts and vconv do), compute one plane at a time in float32
 * (float16 for the 310P's vbi float16) and round the result once to the dtype (nearest even), as the
 * device's closing cast does. Per-dimension coordinates: `src/rules/forward_axes.ts`; the TBE
 * kernel: `forward_device_tbe.ts`.
 *
 * @module
 */

import { fmaF32 } from "../../../rules/float32.ts";
import {
  type CubeTaps,
  cubeTaps,
  floatEqualOne,
  nearestIndexForward,
  simt950Axis,
} from "../../../rules/forward_axes.ts";
import type { ForwardPlan } from "../../../rules/forward_device.ts";
import type { UpsampleForwardArgs } from "../../types.ts";
import { type PlaneKernel, tbePlaneKernel } from "./tbe.ts";
import { RowReader, RowWriter, scratchBuffer } from "../../strided.ts";
import type { StridedArray } from "../../types.ts";

const f = Math.fround;
// Scratch slots of strided.ts (backward 0..2, src/cpu/pytorch/forward 8..11).
const SLOT_ROW = 12, SLOT_PLANE = 13, SLOT_RESULT = 14, SLOT_MID = 15;

/** A call seen as 2d (1d: H = 1, row stride 0), strides as [n, c, h, w]. */
interface Geometry {
  readonly n: number;
  readonly c: number;
  readonly inH: number;
  readonly inW: number;
  readonly outH: number;
  readonly outW: number;
  readonly input: StridedArray;
  readonly out: StridedArray;
  /** Steps of the plan as [H, W] (1d: H = 1). */
  readonly steps: readonly number[];
}

function geometry(args: UpsampleForwardArgs, plan: ForwardPlan): Geometry {
  const { input, out, inputSize, outputSize } = args;
  const spatial = outputSize.length;
  if (inputSize.length !== spatial + 2 || (spatial !== 1 && spatial !== 2)) {
    throw new RangeError(
      `forwardDeviceCpu: expected inputSize [N, C, L] with outputSize [L] or [N, C, H, W] with ` +
        `[H, W], got [${inputSize.join(", ")}] and [${outputSize.join(", ")}]`,
    );
  }
  if (input.strides.length !== spatial + 2 || out.strides.length !== spatial + 2) {
    throw new RangeError(`forwardDeviceCpu: input and out need ${spatial + 2} strides`);
  }
  if (input.dtype !== out.dtype) {
    throw new TypeError(`forwardDeviceCpu: input is ${input.dtype} but out is ${out.dtype}`);
  }
  const to2d = (view: StridedArray): StridedArray =>
    spatial === 2
      ? view
      : { ...view, strides: [view.strides[0], view.strides[1], 0, view.strides[2]] };
  const oneD = spatial === 1;
  return {
    n: inputSize[0],
    c: inputSize[1],
    inH: oneD ? 1 : inputSize[2],
    inW: inputSize[spatial + 1],
    outH: oneD ? 1 : outputSize[0],
    outW: outputSize[spatial - 1],
    input: to2d(input),
    out: to2d(out),
    steps: oneD ? [1, plan.steps[0] ?? 1] : plan.steps,
  };
}

/** The storage as unsigned integers of the element's width: copying them copies the bits. */
function bitsOf(view: StridedArray): Uint32Array | Uint16Array {
  const data = view.data;
  if (view.dtype !== "float32") return data as Uint16Array;
  return new Uint32Array(data.buffer, data.byteOffset, data.length);
}

function identity(size: number): Int32Array {
  const index = new Int32Array(size);
  for (let i = 0; i < size; i++) index[i] = i;
  return index;
}

// Output (oh, ow) of each plane gets the bits of input (hIndex[oh], wIndex[ow]).
function gatherBits(g: Geometry, hIndex: Int32Array, wIndex: Int32Array): void {
  const src = bitsOf(g.input), dst = bitsOf(g.out);
  const is = g.input.strides, os = g.out.strides;
  for (let ni = 0; ni < g.n; ni++) {
    for (let ci = 0; ci < g.c; ci++) {
      const sPlane = g.input.offset + ni * is[0] + ci * is[1];
      const dPlane = g.out.offset + ni * os[0] + ci * os[1];
      for (let oh = 0; oh < g.outH; oh++) {
        const sRow = sPlane + hIndex[oh] * is[2], dRow = dPlane + oh * os[2];
        for (let ow = 0; ow < g.outW; ow++) dst[dRow + ow * os[3]] = src[sRow + wIndex[ow] * is[3]];
      }
    }
  }
}

// The 310P's UpsampleNearest (image/upsample_nearest/op_kernel/upsample_nearest_310p.h
// CalcTensorsC: Duplicate(dst, 0), Add(dst, dst, src) in the dtype): `0 + x`, so -0 becomes +0
// (and a NaN is written as the dtype's quiet NaN).
function gatherAddZero(g: Geometry, hIndex: Int32Array, wIndex: Int32Array): void {
  const reader = new RowReader(g.input, g.inW, SLOT_ROW);
  const writer = new RowWriter(g.out, g.outW);
  const row = scratchBuffer(SLOT_RESULT, g.outW);
  const is = g.input.strides, os = g.out.strides;
  for (let ni = 0; ni < g.n; ni++) {
    for (let ci = 0; ci < g.c; ci++) {
      const sPlane = g.input.offset + ni * is[0] + ci * is[1];
      const dPlane = g.out.offset + ni * os[0] + ci * os[1];
      for (let oh = 0; oh < g.outH; oh++) {
        const src = reader.row(sPlane + hIndex[oh] * is[2]), base = reader.base;
        for (let ow = 0; ow < g.outW; ow++) row[ow] = 0 + src[base + wIndex[ow]];
        writer.write(dPlane + oh * os[2], row, 0);
      }
    }
  }
}

// Runs `kernel` on each plane: the plane read as float32, the result rounded once to the dtype.
function perPlane(g: Geometry, kernel: PlaneKernel): void {
  const reader = new RowReader(g.input, g.inW, SLOT_ROW);
  const writer = new RowWriter(g.out, g.outW);
  const plane = scratchBuffer(SLOT_PLANE, g.inH * g.inW);
  const result = scratchBuffer(SLOT_RESULT, g.outH * g.outW);
  const is = g.input.strides, os = g.out.strides;
  for (let ni = 0; ni < g.n; ni++) {
    for (let ci = 0; ci < g.c; ci++) {
      const sPlane = g.input.offset + ni * is[0] + ci * is[1];
      for (let h = 0; h < g.inH; h++) {
        const src = reader.row(sPlane + h * is[2]), base = reader.base;
        for (let w = 0; w < g.inW; w++) plane[h * g.inW + w] = src[base + w];
      }
      kernel(plane, result);
      const dPlane = g.out.offset + ni * os[0] + ci * os[1];
      for (let oh = 0; oh < g.outH; oh++) writer.write(dPlane + oh * os[2], result, oh * g.outW);
    }
  }
}

// One output of a Cube pass: the matmul's (at most two) nonzero products added to +0, each
// product and sum rounded (the order inside the Cube is not public; the emulation's, see cubeKernel).
function tap(t: CubeTaps, o: number, a: number, b: number): number {
  if (t.i0[o] === t.i1[o]) return f(0 + a);
  return f(f(0 + f(t.l0[o] * a)) + f(t.l1[o] * b));
}

// W pass: `rows` rows of `src` (width inW) into `dst` (width outW).
function passW(t: CubeTaps, src: Float32Array, rows: number, inW: number, dst: Float32Array): void {
  const outW = t.i0.length;
  for (let r = 0; r < rows; r++) {
    const s = r * inW;
    for (let o = 0; o < outW; o++) {
      dst[r * outW + o] = tap(t, o, src[s + t.i0[o]], src[s + t.i1[o]]);
    }
  }
}

// H pass: `src` (rows of width `width`) into outH rows of `dst`.
function passH(t: CubeTaps, src: Float32Array, width: number, dst: Float32Array): void {
  const outH = t.i0.length;
  for (let o = 0; o < outH; o++) {
    const r0 = t.i0[o] * width, r1 = t.i1[o] * width;
    for (let w = 0; w < width; w++) dst[o * width + w] = tap(t, o, src[r0 + w], src[r1 + w]);
  }
}

/**
 * The A2/A3 Cube kernel UpsampleBilinear2d (image/upsample_bilinear2d/op_kernel/
 * upsample_bilinear2d_kernel.h `Process`, `ExpansionW`, `ExpansionH`): a W pass (rows times the
 * outW-column weight matrix) into a float32 intermediate, then an H pass; the W pass is skipped when
 * its step is within 1e-6 of 1 (`FloatEqual`), the H pass when its step is and the W pass ran. The
 * `.HWNC` route (W = 1) runs the same kernel on the H/W transpose: H pass first. Each output sums its
 * nonzero taps from +0, products and sums rounded (the Cube's internal order is not public: the
 * emulation's reading; the zero-weight terms of the matmul window are left out, which changes only
 * non-finite inputs and signed zeros).
 */
function cubeKernel(g: Geometry, plan: ForwardPlan): PlaneKernel {
  const { inH, inW, outH, outW } = g;
  const [sH, sW] = g.steps;
  const th = cubeTaps(inH, outH, sH, plan.alignCorners, plan.fma);
  const tw = cubeTaps(inW, outW, sW, plan.alignCorners, plan.fma);
  const wFirst = plan.passOrder === "wh";
  const firstStep = wFirst ? sW : sH, secondStep = wFirst ? sH : sW;
  const runFirst = !floatEqualOne(firstStep);
  const runSecond = !floatEqualOne(secondStep) || !runFirst;
  const skipped = (run: boolean, input: number, output: number): boolean =>
    !run && input !== output;
  if (
    skipped(runFirst, wFirst ? inW : inH, wFirst ? outW : outH) ||
    skipped(runSecond, wFirst ? inH : inW, wFirst ? outH : outW)
  ) {
    throw new RangeError(
      "forwardDeviceCpu: the Cube kernel skips a pass whose sizes differ (forwardRefusal)",
    );
  }
  return (plane, result) => {
    if (wFirst) {
      const mid = runFirst ? scratchBuffer(SLOT_MID, inH * outW) : plane;
      if (runFirst) passW(tw, plane, inH, inW, runSecond ? mid : result);
      if (runSecond) passH(th, mid, outW, result);
    } else {
      const mid = runFirst ? scratchBuffer(SLOT_MID, outH * inW) : plane;
      if (runFirst) passH(th, plane, inW, runSecond ? mid : result);
      if (runSecond) passW(tw, mid, outH, inW, result);
    }
  };
}

/**
 * The 950's SIMT bilinear (image/resize_bilinear_v2/op_kernel/arch35/resize_bilinear_v2_simt_nchw.h
 * and `..._simt_hw.h`): per output `(1 - dy) * ((1 - dx) * LT + dx * RT) + dy * ((1 - dx) * LB +
 * dx * RB)` in float32; with contraction each `a * b + c * d` is clang's `fmuladd(a, b, c * d)`
 * (the left product fused).
 */
function simtKernel(g: Geometry, plan: ForwardPlan): PlaneKernel {
  const clamp = plan.variant === "simt950";
  const [sH, sW] = g.steps;
  const ah = simt950Axis(g.inH, g.outH, sH, plan.alignCorners, clamp, plan.fma);
  const aw = simt950Axis(g.inW, g.outW, sW, plan.alignCorners, clamp, plan.fma);
  const fma = plan.fma;
  const sum2 = (a: number, b: number, c: number, d: number): number =>
    fma ? fmaF32(a, b, f(c * d)) : f(f(a * b) + f(c * d));
  const { inW, outH, outW } = g;
  return (plane, result) => {
    for (let oh = 0; oh < outH; oh++) {
      const top = ah.lo[oh] * inW, bottom = ah.hi[oh] * inW;
      const dy = ah.d[oh], dy1 = f(1 - dy);
      for (let ow = 0; ow < outW; ow++) {
        const left = aw.lo[ow], right = aw.hi[ow];
        const dx = aw.d[ow], dx1 = f(1 - dx);
        const t = sum2(dx1, plane[top + left], dx, plane[top + right]);
        const b = sum2(dx1, plane[bottom + left], dx, plane[bottom + right]);
        result[oh * outW + ow] = sum2(dy1, t, dy, b);
      }
    }
  };
}

/**
 * Computes `plan` (from `forwardPlan` of `src/rules/forward_device.ts`, for the same call) on host
 * strided views: writes `out` (`[N, C, ...outputSize]`) with what the family's kernel writes, bit
 * for bit under the plan's reading of the source, for float32, float16 and bfloat16. Variants:
 * `copy`, `broadcast` and `gather` move bits (NaN payloads and -0 kept); `gather-add-zero` writes
 * `0 + x`; `cube`, `tbe-*` and `simt950*` compute in float32 (the 310P's vbi float16 in float16) and
 * round once to the dtype; `none` writes nothing. `args.scales`, `args.alignCorners` and
 * `args.rule` are not read: the plan carries the steps and coordinates.
 *
 * @throws {RangeError | TypeError} for arguments that do not fit the call (ranks, strides, dtypes)
 * @example
 * ```ts
 * import { forwardPlan } from "../../../rules/forward_device.ts";
 * import { forwardDeviceCpu } from "./reference.ts";
 * const call = { op: "nearestExact1d", dtype: "float32", inputSize: [1, 1, 2], outputSize: [5], scales: [0], alignCorners: false } as const;
 * const plan = forwardPlan(call, { generation: "310p", bilinearApi: "v2", fma: true });
 * const out = new Float32Array(5);
 * forwardDeviceCpu({
 *   input: { data: Float32Array.of(-0, 2), dtype: "float32", strides: [2, 2, 1], offset: 0 },
 *   out: { data: out, dtype: "float32", strides: [5, 5, 1], offset: 0 },
 *   inputSize: [1, 1, 2],
 *   outputSize: [5],
 *   scales: [0],
 * }, plan);
 * // out = [0, 0, 2, 2, 2]: the 310P writes 0 + x, so -0 becomes +0
 * ```
 */
export function forwardDeviceCpu(args: UpsampleForwardArgs, plan: ForwardPlan): void {
  const g = geometry(args, plan);
  if (plan.variant === "none" || g.n === 0 || g.c === 0) return;
  switch (plan.variant) {
    case "copy":
      return gatherBits(g, identity(g.outH), identity(g.outW));
    case "broadcast":
      return gatherBits(g, new Int32Array(g.outH), new Int32Array(g.outW));
    case "gather":
    case "gather-add-zero": {
      const hIndex = nearestIndexForward(g.inH, g.outH, g.steps[0]);
      const wIndex = nearestIndexForward(g.inW, g.outW, g.steps[1]);
      return plan.variant === "gather"
        ? gatherBits(g, hIndex, wIndex)
        : gatherAddZero(g, hIndex, wIndex);
    }
    case "cube":
      return perPlane(g, cubeKernel(g, plan));
    case "simt950":
    case "simt950-hw":
      return perPlane(g, simtKernel(g, plan));
    default:
      return perPlane(g, tbePlaneKernel(plan, g.inH, g.inW, g.outH, g.outW));
  }
}
