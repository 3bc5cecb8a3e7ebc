/**
 * The comparison bound between an NPU result and the device reference (the CPU backend with
 * `numerics: "device"`):
 * every element must lie within a bound derived from the terms the device sums into it, which is
 * far smaller than any single term, so the index mapping is checked exactly (for gradients bounded
 * away from 0) while the device's own summation order and rounding are allowed.
 *
 * The bound of an element (docs/device-semantics.md, "Comparing with the device"), with
 * `u = 2^-24`, `m` the number of gradient terms that may reach it and `S` the sum of their |g|:
 * - nearest-exact: `2 m u S` (two float32 summations of the same `m` terms, any order);
 * - bilinear: `(2 (m + 2) u + δH + δW) S`, `δ = 4 u (inSize + 1)` per dimension for the weights
 *   (the kernel's coordinate arithmetic may round otherwise, e.g. fused multiply-add);
 *   terms whose coordinate lies within that of a cell boundary count for both cells;
 * - float16/bfloat16: plus one ulp of the dtype at the result's magnitude (each side rounds its
 *   float32 sum once, half an ulp each).
 *
 * Ascend 950 (`generation: "950"`, docs/device-semantics.md "Ascend 950"), same form:
 * - nearest-exact: `2 m u S`; the SIMT gather sums in the reference's order, so it is bit-exact
 *   when the contraction choice (`fma`) matches the device's.
 * - bilinear, SIMT scatter (atomic adds, order unspecified): the reference adds in one fixed order
 *   (the emulation's under aclemuSetAtomicSeed(0), `scatter950.ts`); `2 (m + 2) u S` covers every
 *   order of the same float32 terms, `δ` as A2.
 * - bilinear, DETERMINE / DETERMINE_SCALES gathers: `δ = 2 u (in + 1) (k + 2)` per dimension, `k =
 *   ceil(2 out / max(in - 1, 1)) + 3` the most outputs one cell's loop visits: the running float
 *   sum of DETERMINE moves a coordinate by up to one rounding per step once its start rounds
 *   otherwise (a contraction choice unlike the device's), and an output's weight towards a third
 *   cell (within that distance of 0) is dropped by the shared kernels; the product order
 *   (`g * wH * wW` on the device, `(wH * wW) * g` in the reference) is one rounding per term,
 *   inside `2 (m + 2) u S`.
 * - float16/bfloat16 through the SIMT scatter: plus `m` ulps of the dtype at magnitude `S`. Each
 *   of the `m` terms is cast to the dtype before its atomic add and each add rounds in the dtype:
 *   `2 m - 1` roundings of at most half an ulp at magnitude `S` (every term and partial sum is at
 *   most `S`), against one rounding on the reference side (the one-ulp term above).
 *
 * @module
 */

import type { DType } from "../tensor/dtype.ts";
import type { BilinearApi } from "./ascend_a2.ts";
import type { AscendGeneration } from "./generation.ts";
import { ascendPlan, type AscendTarget } from "./numerics.ts";
import type { UpsampleParams } from "./ops.ts";
import { dimensionRule, linearTable, nearestTables, type TableRule } from "./tables.ts";

/** One op call, as compared: sizes, scales (0 = from the sizes), dtype (the parameters every backend sees). */
export type DeviceProblem = UpsampleParams;

/** Options of {@link compareWithDevice} and {@link deviceBounds}. */
export interface BoundOptions {
  /** Which bilinear aclnn API the NPU ran (default `"v2"`). */
  readonly bilinearApi?: BilinearApi;
  /** The NPU's kernel generation (default `"a2"`; `device.generation` of the NPU device). */
  readonly generation?: AscendGeneration;
  /** Whether the NPU ran deterministic (default false; the 950's bilinear kernel depends on it). */
  readonly deterministic?: boolean;
  /** 950: the contraction choice of the reference compared with (default true, its default). */
  readonly fma?: boolean;
  /** A2/A3, 910, 310P: the TBE ResizeBilinearV2Grad's contraction choice (default false). */
  readonly tbeFma?: boolean;
}

/** One element outside its bound. */
export interface DeviceMismatch {
  /** Its index in the result, `[n, c, l]` or `[n, c, h, w]`. */
  readonly index: readonly number[];
  /** The NPU's value. */
  readonly actual: number;
  /** The device reference's value. */
  readonly expected: number;
  /** The largest difference allowed there. */
  readonly bound: number;
}

/** The outcome of {@link compareWithDevice}. */
export interface DeviceComparison {
  /** True when every element lies within its bound. */
  readonly ok: boolean;
  /** Elements compared. */
  readonly elements: number;
  /** Elements outside their bound. */
  readonly failures: number;
  /** Largest `|actual - expected| / bound` (0 where both are equal; Infinity for a bound of 0). */
  readonly maxViolation: number;
  /** Largest `|actual - expected|`. */
  readonly maxAbsError: number;
  /** The first element (row-major) outside its bound. */
  readonly firstFailure: DeviceMismatch | undefined;
}

const U = 2 ** -24;

/** Per output index of one dimension: the inputs `[lo[o], hi[o]]` its term may reach. */
interface Reach {
  readonly lo: Int32Array;
  readonly hi: Int32Array;
  /** Relative error allowed for the weights of this dimension (0 for nearest-exact). */
  readonly weightError: number;
}

function nearestReach(inSize: number, outSize: number, scale: number, rule: TableRule): Reach {
  const index = nearestTables(inSize, outSize, scale, rule).index;
  return { lo: index, hi: index, weightError: 0 };
}

// The weight error of one dimension of a 950 gather kernel (module documentation).
function gatherWeightError(inSize: number, outSize: number): number {
  const steps = Math.ceil((2 * outSize) / Math.max(inSize - 1, 1)) + 3;
  return 2 * U * (inSize + 1) * (steps + 2);
}

function linearReach(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scale: number,
  rule: TableRule,
  gather = false,
): Reach {
  const t = linearTable(inSize, outSize, alignCorners, scale, rule);
  const weightError = gather ? gatherWeightError(inSize, outSize) : 4 * U * (inSize + 1);
  const slack = 4 * weightError;
  const lo = new Int32Array(outSize);
  const hi = new Int32Array(outSize);
  for (let o = 0; o < outSize; o++) {
    // A coordinate within rounding of a cell boundary may fall on either side on the device.
    lo[o] = Math.max(0, t.l1[o] < slack ? t.i0[o] - 1 : t.i0[o]);
    hi[o] = Math.min(inSize - 1, t.l1[o] > 1 - slack ? t.i1[o] + 1 : t.i1[o]);
  }
  return { lo, hi, weightError };
}

const ONE: Reach = { lo: Int32Array.of(0), hi: Int32Array.of(0), weightError: 0 };

interface Reaches {
  readonly h: Reach;
  readonly w: Reach;
  /** Whether the device adds each term into the result in its dtype (16-bit: rounds per add). */
  readonly atomic: boolean;
}

function reaches(problem: DeviceProblem, options: BoundOptions): Reaches {
  const { op, inputSize, outputSize, alignCorners } = problem;
  const target: AscendTarget = {
    generation: options.generation ?? "a2",
    bilinearApi: options.bilinearApi ?? "v2",
    fma: options.fma ?? true,
    tbeFma: options.tbeFma ?? false,
  };
  const plan = ascendPlan({ ...problem, deterministic: options.deterministic ?? false }, target);
  const { rule, scales, gather, atomic } = plan;
  if (op === "nearestExact1d") {
    return { h: ONE, w: nearestReach(inputSize[2], outputSize[0], scales[0], rule), atomic };
  }
  if (op === "nearestExact2d") {
    return {
      h: nearestReach(inputSize[2], outputSize[0], scales[0], rule),
      w: nearestReach(inputSize[3], outputSize[1], scales[1], rule),
      atomic,
    };
  }
  return {
    h: linearReach(
      inputSize[2],
      outputSize[0],
      alignCorners,
      scales[0],
      dimensionRule(rule, 0),
      gather,
    ),
    w: linearReach(
      inputSize[3],
      outputSize[1],
      alignCorners,
      scales[1],
      dimensionRule(rule, 1),
      gather,
    ),
    atomic,
  };
}

/**
 * The bound of every element of the result (row-major, shape `inputSize`) for `gradOutput`
 * (row-major `[N, C, ...outputSize]`, float32 values), as described in the module documentation.
 *
 * @example
 * ```ts
 * import { deviceBounds } from "./bound.ts";
 * const problem = { op: "nearestExact1d", dtype: "float32", inputSize: [1, 1, 2], outputSize: [4], scales: [0], alignCorners: false } as const;
 * deviceBounds(problem, Float32Array.of(1, -1, 2, 2)); // [2 * 2 * 2^-24 * 2, 2 * 2 * 2^-24 * 4]
 * ```
 */
export function deviceBounds(
  problem: DeviceProblem,
  gradOutput: Float32Array,
  options: BoundOptions = {},
): Float64Array {
  const { h, w, atomic } = reaches(problem, options);
  const atomic16 = atomic && problem.dtype !== "float32";
  const { inputSize } = problem;
  const planes = inputSize[0] * inputSize[1];
  const inH = h === ONE ? 1 : inputSize[2], inW = inputSize[inputSize.length - 1];
  const outH = h.lo.length, outW = w.lo.length;
  const bounds = new Float64Array(planes * inH * inW);
  const rowSum = new Float64Array(outH * inW);
  const rowCount = new Float64Array(inW);
  const colCount = new Float64Array(inH);
  for (let ow = 0; ow < outW; ow++) for (let i = w.lo[ow]; i <= w.hi[ow]; i++) rowCount[i]++;
  for (let oh = 0; oh < outH; oh++) for (let i = h.lo[oh]; i <= h.hi[oh]; i++) colCount[i]++;
  const bilinear = problem.op === "bilinear2d";
  const perTerm = h.weightError + w.weightError;
  for (let p = 0; p < planes; p++) {
    rowSum.fill(0);
    for (let oh = 0; oh < outH; oh++) {
      const g = p * outH * outW + oh * outW;
      for (let ow = 0; ow < outW; ow++) {
        const a = Math.abs(gradOutput[g + ow]);
        for (let i = w.lo[ow]; i <= w.hi[ow]; i++) rowSum[oh * inW + i] += a;
      }
    }
    const base = p * inH * inW;
    for (let oh = 0; oh < outH; oh++) {
      for (let ih = h.lo[oh]; ih <= h.hi[oh]; ih++) {
        for (let iw = 0; iw < inW; iw++) bounds[base + ih * inW + iw] += rowSum[oh * inW + iw];
      }
    }
    for (let ih = 0; ih < inH; ih++) {
      for (let iw = 0; iw < inW; iw++) {
        const m = colCount[ih] * rowCount[iw];
        const factor = bilinear ? 2 * (m + 2) * U + perTerm : 2 * m * U;
        const sum = bounds[base + ih * inW + iw];
        bounds[base + ih * inW + iw] = sum * factor +
          (atomic16 ? m * dtypeUlp(problem.dtype, sum) : 0);
      }
    }
  }
  return bounds;
}

/** One ulp of `dtype` at the magnitude of `x` (float16 and bfloat16; 0 for float32). */
function dtypeUlp(dtype: DType, x: number): number {
  if (dtype === "float32") return 0;
  const a = Math.abs(x);
  const mantissa = dtype === "float16" ? 10 : 7;
  const minExponent = dtype === "float16" ? -14 : -126;
  const e = a === 0 ? minExponent : Math.max(Math.floor(Math.log2(a)), minExponent);
  return 2 ** (e - mantissa);
}

/**
 * Compares `actual` (the NPU's result) with `expected` (the device reference's, from
 * the device reference) for the same `gradOutput`; all three row-major float32 values.
 *
 * @example
 * ```ts
 * import { compareWithDevice } from "./bound.ts";
 * const problem = { op: "nearestExact1d", dtype: "float32", inputSize: [1, 1, 2], outputSize: [41], scales: [0], alignCorners: false } as const;
 * const grad = new Float32Array(41).fill(1);
 * compareWithDevice(problem, grad, Float32Array.of(21, 20), Float32Array.of(20, 21)).ok; // false
 * ```
 */
export function compareWithDevice(
  problem: DeviceProblem,
  gradOutput: Float32Array,
  actual: Float32Array,
  expected: Float32Array,
  options: BoundOptions = {},
): DeviceComparison {
  const bounds = deviceBounds(problem, gradOutput, options);
  if (actual.length !== bounds.length || expected.length !== bounds.length) {
    throw new RangeError(
      `compareWithDevice: inputSize [${problem.inputSize.join(", ")}] has ${bounds.length} ` +
        `elements, got ${actual.length} actual and ${expected.length} expected`,
    );
  }
  let failures = 0, maxViolation = 0, maxAbsError = 0;
  let firstFailure: DeviceMismatch | undefined;
  for (let k = 0; k < bounds.length; k++) {
    const a = actual[k], e = expected[k];
    if (a === e || (Number.isNaN(a) && Number.isNaN(e))) continue;
    const diff = Math.abs(a - e);
    const bound = bounds[k] + dtypeUlp(problem.dtype, Math.max(Math.abs(a), Math.abs(e)));
    maxAbsError = Math.max(maxAbsError, Number.isNaN(diff) ? Infinity : diff);
    const violation = bound > 0 ? diff / bound : Infinity;
    maxViolation = Math.max(maxViolation, Number.isNaN(violation) ? Infinity : violation);
    if (diff <= bound) continue;
    failures++;
    firstFailure ??= { index: unravel(k, problem.inputSize), actual: a, expected: e, bound };
  }
  return {
    ok: failures === 0,
    elements: bounds.length,
    failures,
    maxViolation,
    maxAbsError,
    firstFailure,
  };
}

function unravel(flat: number, shape: readonly number[]): number[] {
  const index = new Array<number>(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    index[d] = flat % shape[d];
    flat = Math.floor(flat / shape[d]);
  }
  return index;
}
