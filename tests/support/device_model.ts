/**
 * An independent model of what the Ascend A2/A3 kernels compute (test-only), written from the
 * public operator source `hicann/ops-cv` (the emulator's C sources in native/src/opapi/ cite the
 * files), and an assertion that an NPU result matches it: index mapping exact, each element within
 * a bound derived from the summed terms. Float32 arithmetic is `Math.fround` after every operation.
 *
 * - nearest-exact: input cell `i` sums the gradient positions
 *   `[lo(i), lo(i + 1))`, `lo(i) = min(ceil(fl32(fl32(i * s) - 0.5)), out)`, `s = fl32(scale)` when
 *   given, else `fl32(out) / fl32(in)`; the 1d op is the 2d kernel on `(N, C, 1, L)`.
 * - bilinear V2: the UpsampleBilinear2dGrad kernel for equal sizes, or when no scale is given or both
 *   scales satisfy `out == floor(in * scale)` (and `1/scale` or `in/out` >= 0.01 on both dims);
 *   otherwise ResizeBilinearV2Grad with scales from the sizes. V1: a copy for equal sizes, else
 *   ResizeBilinearV2Grad: the built-in TBE kernel, as `resize5hd_model.ts` models it from its source.
 * - Both Cube kernels sum a W pass into a float32 intermediate, then an H pass; a pass whose scale is
 *   within 1e-6 of 1 is skipped.
 *
 * @module
 */

import type { UpsampleOp } from "../../src/rules/ops.ts";
import { resize5hdModel, SOC_5HD } from "./resize5hd_model.ts";

import { AssertionError } from "node:assert/strict";
import {
  type DType,
  type upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { compareWithDevice, type DeviceProblem } from "../../cli/verify/compare.ts";
import { type DeviceTarget, referenceFor, targetGeneration } from "./device_match.ts";
import { assertMatchesArch35 } from "./ascend950_match.ts";
import { roundTo } from "./helpers.ts";

const f = Math.fround;

/** One call of an op as the device sees it (contiguous NCHW / NCL gradient). */
export interface DeviceCase {
  /** The op. */
  readonly op: UpsampleOp;
  /** `[N, C, ...spatial]` of the result. */
  readonly inputSize: readonly number[];
  /** The spatial size of the gradient. */
  readonly outputSize: readonly number[];
  /** nearest1d's scale (0 or omitted: from the sizes). */
  readonly scales?: number;
  /** Height scale (2d ops). */
  readonly scalesH?: number;
  /** Width scale (2d ops). */
  readonly scalesW?: number;
  /** Bilinear align_corners. */
  readonly alignCorners?: boolean;
  /** Which bilinear op runs: 2 (V2, the default) or 1 (a CANN without V2). */
  readonly bilinearVersion?: 1 | 2;
}

/**
 * A library op call (op name, sizes, one scale per spatial dimension) as the model takes it.
 *
 * @example
 * ```ts
 * import { deviceCaseOf } from "./device_model.ts";
 * deviceCaseOf({ op: "nearestExact1d", inputSize: [1, 1, 2], outputSize: [41], scales: [0], alignCorners: false });
 * ```
 */
export function deviceCaseOf(call: {
  readonly op: "nearestExact1d" | "nearestExact2d" | "bilinear2d";
  readonly inputSize: readonly number[];
  readonly outputSize: readonly number[];
  readonly scales: readonly number[];
  readonly alignCorners: boolean;
}): DeviceCase {
  const twoD = call.op !== "nearestExact1d";
  return {
    op: call.op,
    inputSize: call.inputSize,
    outputSize: call.outputSize,
    scales: twoD ? undefined : call.scales[0],
    scalesH: twoD ? call.scales[0] : undefined,
    scalesW: twoD ? call.scales[1] : undefined,
    alignCorners: call.alignCorners,
  };
}

/** Gradient position -> up to two (cell, weight) pairs; cell -1 is nothing. */
interface Tap {
  i0: number;
  w0: number;
  i1: number;
  w1: number;
}

const skipped = (s: number): boolean => f(Math.abs(f(s - 1))) < f(1e-6);

function nearestTaps(out: number, inn: number, s: number): Tap[] {
  const taps: Tap[] = Array.from({ length: out }, () => ({ i0: -1, w0: 1, i1: -1, w1: 0 }));
  let lo = 0;
  for (let i = 0; i < inn; i++) {
    const hi = Math.min(Math.ceil(f(f(f(i + 1) * s) - 0.5)), out);
    for (let o = lo; o < hi; o++) taps[o].i0 = i;
    lo = Math.max(lo, hi);
  }
  return taps;
}

function bilinearKernelTaps(out: number, inn: number, s: number, align: boolean): Tap[] {
  return Array.from({ length: out }, (_, o) => {
    const src = Math.max(align ? f(o * s) : f(f(f(o + 0.5) * s) - 0.5), 0);
    const i0 = Math.floor(src);
    const lambda = f(src - i0);
    if (i0 > inn - 1) return { i0: -1, w0: 0, i1: -1, w1: 0 };
    if (i0 === inn - 1) return { i0, w0: 1, i1: i0, w1: 0 }; // 0 * inf = NaN, as in a matmul
    return { i0, w0: f(1 - lambda), i1: i0 + 1, w1: lambda };
  });
}

interface Dims {
  planes: number;
  inH: number;
  inW: number;
  outH: number;
  outW: number;
}

function twoPass(
  g: Float32Array,
  d: Dims,
  th: Tap[],
  tw: Tap[],
  skipH: boolean,
  skipW: boolean,
): Float32Array {
  const { planes, inH, inW, outH, outW } = d;
  const runW = !skipW, runH = !skipH || skipW;
  const result = new Float32Array(planes * inH * inW);
  const inter = new Float32Array(outH * inW);
  for (let p = 0; p < planes; p++) {
    const gp = p * outH * outW, rp = p * inH * inW;
    if (runW) {
      const dst = runH ? inter : result.subarray(rp, rp + inH * inW);
      dst.fill(0);
      for (let oh = 0; oh < outH; oh++) {
        for (let ow = 0; ow < outW; ow++) {
          const v = g[gp + oh * outW + ow], t = tw[ow];
          if (t.i0 >= 0) dst[oh * inW + t.i0] = f(dst[oh * inW + t.i0] + f(t.w0 * v));
          if (t.i1 >= 0) dst[oh * inW + t.i1] = f(dst[oh * inW + t.i1] + f(t.w1 * v));
        }
      }
    }
    if (!runH) continue;
    for (let oh = 0; oh < outH; oh++) {
      const t = th[oh];
      for (let x = 0; x < inW; x++) {
        const v = runW ? inter[oh * inW + x] : g[gp + oh * outW + x];
        if (t.i0 >= 0) result[rp + t.i0 * inW + x] = f(result[rp + t.i0 * inW + x] + f(t.w0 * v));
        if (t.i1 >= 0) result[rp + t.i1 * inW + x] = f(result[rp + t.i1 * inW + x] + f(t.w1 * v));
      }
    }
  }
  return result;
}

/** Whether bilinear V2 runs its own kernel (else ResizeBilinearV2Grad). */
function v2UsesKernel(c: DeviceCase, inH: number, inW: number): boolean {
  const [outH, outW] = c.outputSize;
  if (inH === outH && inW === outW) return true;
  const scales = [c.scalesH ?? 0, c.scalesW ?? 0], ins = [inH, inW], outs = [outH, outW];
  if (Math.abs(scales[0]) > 1e-9 || Math.abs(scales[1]) > 1e-9) {
    if (![0, 1].every((d) => outs[d] === Math.floor(ins[d] * scales[d]))) return false;
  }
  return [0, 1].every((d) => (scales[d] > 0 ? 1 / scales[d] : ins[d] / outs[d]) >= 0.01);
}

/**
 * The device's float32 result (contiguous `inputSize`, before rounding to the dtype) of one call on
 * a contiguous float32 gradient.
 *
 * @example
 * ```ts
 * import { deviceModel } from "./device_model.ts";
 * const g = Float32Array.from({ length: 41 }, () => 1);
 * deviceModel(g, { op: "nearestExact1d", inputSize: [1, 1, 2], outputSize: [41] }); // [20, 21]
 * ```
 */
export function deviceModel(grad: Float32Array, c: DeviceCase): Float32Array {
  const twoD = c.op !== "nearestExact1d";
  const [n, ch] = c.inputSize;
  const d: Dims = {
    planes: n * ch,
    inH: twoD ? c.inputSize[2] : 1,
    inW: c.inputSize[twoD ? 3 : 2],
    outH: twoD ? c.outputSize[0] : 1,
    outW: c.outputSize[twoD ? 1 : 0],
  };
  if (d.planes === 0) return new Float32Array(0);
  if (c.op !== "bilinear2d") {
    const scale = (given: number | undefined, inn: number, out: number): number =>
      (given ?? 0) > 0 ? f(given!) : f(f(out) / f(inn));
    const sH = twoD ? scale(c.scalesH, d.inH, d.outH) : 1;
    const sW = scale(twoD ? c.scalesW : c.scales, d.inW, d.outW);
    const th = nearestTaps(d.outH, d.inH, sH), tw = nearestTaps(d.outW, d.inW, sW);
    return twoPass(grad, d, th, tw, skipped(sH), skipped(sW));
  }
  const align = c.alignCorners ?? false;
  const same = d.inH === d.outH && d.inW === d.outW;
  if ((c.bilinearVersion ?? 2) === 1 && same) return Float32Array.from(grad);
  if ((c.bilinearVersion ?? 2) === 2 && v2UsesKernel(c, d.inH, d.inW)) {
    const scale = (given: number | undefined, inn: number, out: number): number => {
      if (align) return out > 1 ? f(f(inn - 1) / f(out - 1)) : 0;
      const s = (given ?? 0) > 0 ? f(1 / given!) : 0;
      return s > 0 ? s : f(f(inn) / f(out));
    };
    const sH = scale(c.scalesH, d.inH, d.outH), sW = scale(c.scalesW, d.inW, d.outW);
    const th = bilinearKernelTaps(d.outH, d.inH, sH, align);
    const tw = bilinearKernelTaps(d.outW, d.inW, sW, align);
    return twoPass(grad, d, th, tw, skipped(sH), skipped(sW));
  }
  // The built-in TBE ResizeBilinearV2Grad, as its own independent model (Ascend910B3's facts: every
  // A2/A3 SoC has the same unified buffer and no L1), cores in index order.
  const call = { N: 1, C: d.planes, inH: d.inH, inW: d.inW, outH: d.outH, outW: d.outW };
  return resize5hdModel(grad, { ...call, alignCorners: align }, SOC_5HD.Ascend910B3, { fma: false })
    .values;
}

const EPS32 = 2 ** -23;

/** One unit in the last place of a dtype at magnitude x (normal range). */
function ulpOf(dtype: DType, x: number): number {
  const bits = dtype === "float16" ? 10 : dtype === "bfloat16" ? 7 : 23;
  const min = dtype === "float16" ? -14 : -126;
  const e = x === 0 ? min : Math.max(Math.floor(Math.log2(x)), min);
  return 2 ** (e - bits);
}

/**
 * Throws unless `actual` (an NPU result read as float32, contiguous `inputSize`) matches the device
 * model: every element within `2 * k * eps * sum|w * g|` of the model (k the sum of the weights of
 * its terms, i.e. their count for nearest-exact; eps 2^-23: the worst case of a float32 sum of k terms
 * in any order), plus one ulp of the dtype for float16/bfloat16 (the rounding of a float32 that differs
 * in its last bits). NaN must match NaN, infinities exactly.
 *
 * @example
 * ```ts
 * import { assertMatchesDeviceModel } from "./device_model.ts";
 * const g = Float32Array.from({ length: 41 }, () => 1);
 * const c = { op: "nearestExact1d", inputSize: [1, 1, 2], outputSize: [41] } as const;
 * assertMatchesDeviceModel(Float32Array.of(20, 21), g, c, "float32", "tie");
 * ```
 */
export function assertMatchesDeviceModel(
  actual: Float32Array,
  grad: Float32Array,
  c: DeviceCase,
  dtype: DType,
  what: string,
): void {
  const want = roundTo(dtype, deviceModel(grad, c));
  // The bound's two models run only when some element is not bit-equal (large fixtures stay cheap).
  let magnitude: Float32Array | null = null, terms: Float32Array | null = null;
  if (actual.length !== want.length) {
    throw new AssertionError({ message: `${what}: length ${actual.length} != ${want.length}` });
  }
  for (let i = 0; i < want.length; i++) {
    const a = actual[i], e = want[i];
    if (Object.is(a, e) || (Number.isNaN(a) && Number.isNaN(e))) continue;
    magnitude ??= deviceModel(grad.map(Math.abs), c);
    terms ??= deviceModel(new Float32Array(grad.length).fill(1), c);
    let bound = 2 * Math.max(terms[i], 1) * EPS32 * magnitude[i];
    if (dtype !== "float32") bound += ulpOf(dtype, Math.max(Math.abs(e), Math.abs(a)));
    if (Number.isFinite(a) && Number.isFinite(e) && Math.abs(a - e) <= bound) continue;
    throw new AssertionError({
      message: `${what}: element ${i}: got ${a}, the device model gives ${e} (bound ${bound})`,
    });
  }
}

/**
 * Throws unless `actual` is what the independent model of `target`'s generation gives for `c`:
 * this file's A2/A3 model ({@link assertMatchesDeviceModel}), or for an Ascend 950 the model of
 * `ascend950_model.ts` within the bound of its kernel kind (`ascend950_match.ts`).
 *
 * @example
 * ```ts
 * import { assertMatchesModelOf } from "./device_model.ts";
 * const g = Float32Array.from({ length: 41 }, () => 1);
 * const c = { op: "nearestExact1d", inputSize: [1, 1, 2], outputSize: [41] } as const;
 * assertMatchesModelOf(Float32Array.of(20, 21), g, c, "float32", "tie", { soc: "Ascend950PR_9599" });
 * ```
 */
export function assertMatchesModelOf(
  actual: Float32Array,
  grad: Float32Array,
  c: DeviceCase,
  dtype: DType,
  what: string,
  target: DeviceTarget = {},
): void {
  if (targetGeneration(target) !== "950") {
    return assertMatchesDeviceModel(actual, grad, c, dtype, `${what} (independent device model)`);
  }
  const scales = c.op === "nearestExact1d" ? [c.scales ?? 0] : [c.scalesH ?? 0, c.scalesW ?? 0];
  assertMatchesArch35(actual, grad, {
    op: c.op,
    inputSize: c.inputSize,
    outputSize: c.outputSize,
    scales,
    alignCorners: c.alignCorners ?? false,
    bilinearApi: c.bilinearVersion === 1 ? "v1" : "v2",
    gradDtype: dtype,
    deterministic: target.deterministic ?? false,
  }, `${what} (independent Ascend 950 model)`);
}

/** The options of a public op call, as far as the device model needs them. */
export interface OpOptions {
  /** Spatial size of the gradient. */
  readonly outputSize: readonly number[];
  /** Shape of the result. */
  readonly inputSize: readonly number[];
  /** nearest-exact 1d scale. */
  readonly scales?: number;
  /** Height scale. */
  readonly scalesH?: number;
  /** Width scale. */
  readonly scalesW?: number;
  /** Bilinear align_corners. */
  readonly alignCorners?: boolean;
}

/** A public op by its function. */
export type UpsampleFunction =
  | typeof upsampleNearestExact1dBackward
  | typeof upsampleNearestExact2dBackward
  | typeof upsampleBilinear2dBackward;

/**
 * Throws unless `actual` is what the device computes for `op` on `values` (logical float32 values of
 * a gradient stored in `dtype`, shape `[N, C, ...outputSize]`): within the bound of
 * `cli/verify/compare.ts` of the library's device reference (the CPU backend with
 * `numerics: "device"`), and within {@link assertMatchesDeviceModel}'s bound of this independent
 * model, so the library's reference and the emulator are each checked against a second reading of
 * the kernels. Both follow `target`'s generation (default A2/A3; an Ascend 950 SoC: the library's
 * 950 reference and `ascend950_model.ts`).
 *
 * @example
 * ```ts
 * import { upsampleNearestExact1dBackward } from "../../mod.ts";
 * import { assertMatchesDeviceOp } from "./device_model.ts";
 * const g = Float32Array.from({ length: 41 }, () => 1);
 * const options = { outputSize: [41], inputSize: [1, 1, 2] };
 * await assertMatchesDeviceOp(Float32Array.of(20, 21), upsampleNearestExact1dBackward, g, "float32", options, "tie");
 * ```
 */
export async function assertMatchesDeviceOp(
  actual: Float32Array,
  op: UpsampleFunction,
  values: Float32Array,
  dtype: DType,
  options: OpOptions,
  what: string,
  bilinearVersion: 1 | 2 = 2,
  target: DeviceTarget = {},
): Promise<void> {
  const name: UpsampleOp = op === upsampleNearestExact1dBackward
    ? "nearestExact1d"
    : op === upsampleNearestExact2dBackward
    ? "nearestExact2d"
    : "bilinear2d";
  const { outputSize, inputSize, scales, scalesH, scalesW, alignCorners } = options;
  const grad = roundTo(dtype, values);
  const problem: DeviceProblem = {
    op: name,
    dtype,
    inputSize,
    outputSize,
    scales: name === "nearestExact1d" ? [scales ?? 0] : [scalesH ?? 0, scalesW ?? 0],
    alignCorners: alignCorners ?? false,
  };
  const bilinearApi = bilinearVersion === 1 ? "v1" : "v2";
  const { expected, bound } = await referenceFor(problem, grad, bilinearApi, target);
  const comparison = compareWithDevice(problem, grad, actual, expected, bound);
  if (!comparison.ok) {
    const first = comparison.firstFailure!;
    throw new AssertionError({
      message:
        `${what}: ${comparison.failures} of ${comparison.elements} elements differ from the ` +
        `device reference beyond the bound; first at [${
          first.index.join(", ")
        }]: ${first.actual} ` +
        `vs ${first.expected} (bound ${first.bound})`,
    });
  }
  const c: DeviceCase = {
    op: name,
    inputSize,
    outputSize,
    scales,
    scalesH,
    scalesW,
    alignCorners,
    bilinearVersion,
  };
  assertMatchesModelOf(actual, grad, c, dtype, what, target);
}
