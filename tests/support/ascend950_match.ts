/**
 * `assertMatchesArch35`: a test assertion that a result (from the emulated 950, or the library's CPU
 * device reference for the 950) is what the independent model (`ascend950_model.ts`) says the 950
 * computes. Test-only; shares no code with `src/` or `native/`.
 *
 * What "matches" means, per kind of kernel:
 *
 * - **copy** (`DATA_COPY`, `ALL_COPY`, `ViewCopy`): bit-identical.
 * - **gather** (nearest-exact `SIMT`, bilinear `*_DETERMINE*`): one float32 accumulator per result
 *   element, the terms in a fixed order, one rounding to the dtype. The model replays that order, so
 *   an implementation of the same loop agrees bit for bit; the assertion allows
 *   `GATHER_ULPS` float32 ulps of `S = Σ|term|` (an FMA contracted or not, or a product rounded
 *   differently, moves each term by an ulp or so) plus, for float16/bfloat16, one ulp of the dtype at
 *   the result (two float32 sums a few ulps apart may round to neighbouring values of the dtype). With
 *   gradients bounded away from 0 (the tests use `|g|` in [0.5, 1]) a term mapped to the wrong cell
 *   moves that cell by at least 0.5 · (its weight), far beyond this bound for any `S` the tests reach,
 *   so nearest-exact's index mapping is checked exactly.
 * - **atomic** (bilinear `SIMT_NCHW`/`SIMT_NHWC`, `C_PARALLEL`): each term `t_k` is rounded to the output
 *   dtype T, and each `asc_atomic_add` rounds the running sum to T, in an order the hardware picks. Let
 *   `m` be the number of non-zero terms of an element and `S = Σ|t_k|`. The first addition into the
 *   zeroed element is exact; each of the other `m − 1` additions rounds a value of magnitude at most
 *   `S + E_{j−1}` (E_j: the error accumulated after j additions), so errs by at most
 *   `½ ulp_T(S + E_{j−1})`:
 *   `E_1 = 0, E_j = E_{j−1} + ½ ulp_T(S + E_{j−1})` and `|result − Σ t_k| ≤ E_m`, whatever the order
 *   (`ulp_T(x)` the spacing of T at magnitude x, the subnormal spacing below T's normal range). For
 *   `E ≪ S` that is about `(m − 1) · ½ ulp_T(S)`: half an ulp of the output dtype per addition. The
 *   assertion compares with the exact sum of the model's rounded terms (plus `m · 2^-53 · S` for that
 *   double sum), so any order of additions passes and a missing or misplaced term does not.
 *
 * @module
 */

import { AssertionError } from "node:assert/strict";
import {
  type Arch35Call,
  arch35Model,
  type Arch35Result,
  type Dtype,
  type KernelKind,
  ulpOf,
} from "./ascend950_model.ts";

/** Float32 ulps of `Σ|term|` a gather result may be from the model. */
export const GATHER_ULPS = 4;

/** The comparison of one result with the model. */
export interface Arch35Comparison {
  /** The kernel the model says runs. */
  readonly kernel: string;
  /** Its kind. */
  readonly kind: KernelKind;
  /** Elements compared. */
  readonly elements: number;
  /** Elements bit-identical to the model. */
  readonly bitEqual: number;
  /** Largest `|actual − expected| / bound` (0 when all are bit-identical). */
  readonly worst: number;
  /** The model's result. */
  readonly model: Arch35Result;
}

/**
 * The atomic bound of one element: `E_m` of the recurrence above, for `m` non-zero terms with
 * `Σ|t| = absSum`, accumulated in `dtype`.
 */
export function atomicBound(dtype: Dtype, terms: number, absSum: number): number {
  let e = 0;
  for (let j = 2; j <= terms; j++) e += ulpOf(dtype, absSum + e) / 2;
  return e + terms * 2 ** -53 * absSum;
}

/** The gather bound of one element (see the module text). */
export function gatherBound(dtype: Dtype, absSum: number, a: number, e: number): number {
  let bound = GATHER_ULPS * ulpOf("float32", absSum);
  if (dtype !== "float32") bound += ulpOf(dtype, Math.max(Math.abs(a), Math.abs(e)));
  return bound;
}

/**
 * Throws an `AssertionError` unless `actual` (contiguous `inputSize`, read as float32) matches the
 * model for `call` on `grad` (contiguous, values already in the gradient's dtype) within the bound of
 * its kernel kind; returns the comparison. A model can be passed to skip recomputing it.
 *
 * @example
 * ```ts
 * import { assertMatchesArch35 } from "./ascend950_match.ts";
 * const call = { op: "nearestExact1d", inputSize: [1, 1, 2], outputSize: [41], scales: [0],
 *   gradDtype: "float32", deterministic: false } as const;
 * const g = new Float32Array(41).fill(1);
 * assertMatchesArch35(Float32Array.of(20, 21), g, call, "tie");
 * ```
 */
export function assertMatchesArch35(
  actual: Float32Array,
  grad: Float32Array,
  call: Arch35Call,
  what: string,
  model: Arch35Result = arch35Model(grad, call),
): Arch35Comparison {
  const dtype = call.outDtype ?? call.gradDtype;
  const expected = model.values;
  if (actual.length !== expected.length) {
    throw new AssertionError({
      message: `${what}: length ${actual.length} != ${expected.length} (${model.kernel})`,
    });
  }
  let bitEqual = 0, worst = 0;
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i], e = expected[i];
    if (Object.is(a, e) || (Number.isNaN(a) && Number.isNaN(e))) {
      bitEqual++;
      continue;
    }
    let bound: number, reference: number;
    if (model.kind === "copy") {
      bound = 0;
      reference = e;
    } else if (model.kind === "gather") {
      bound = gatherBound(dtype, model.absSum[i], a, e);
      reference = e;
    } else {
      bound = atomicBound(dtype, model.terms[i], model.absSum[i]);
      reference = model.exactSum![i];
    }
    const error = Math.abs(a - reference);
    if (!(Number.isFinite(a) && Number.isFinite(e) && error <= bound)) {
      throw new AssertionError({
        message: `${what}: element ${i} of ${expected.length}: got ${a}, the 950 model ` +
          `(${model.kernel}, ${model.kind}) gives ${e}` +
          (model.kind === "atomic" ? ` (exact sum of its terms ${reference})` : "") +
          `; |error| ${error} > bound ${bound} (${model.terms[i]} terms, Σ|t| ${model.absSum[i]})`,
        actual: a,
        expected: e,
      });
    }
    if (bound > 0) worst = Math.max(worst, error / bound);
  }
  return {
    kernel: model.kernel,
    kind: model.kind,
    elements: expected.length,
    bitEqual,
    worst,
    model,
  };
}
