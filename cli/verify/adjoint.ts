/**
 * The adjoint check, which needs no model: for a forward op F and its backward B with the same
 * sizes, scales and align_corners, `<F(x), g> = <x, B(g)>` for every `x` and `g` (B is F's
 * transpose), up to the rounding of the two kernels. Run on one device, it proves that its forward
 * and backward kernels share their index and weight conventions; an index rule that differs
 * between them by one cell breaks it at once.
 *
 * The bound (docs/device-semantics.md, "The adjoint check"): with `W` F's matrix (weights >= 0)
 * and `u = 2^-24`, each float32 kernel result is within `k u` of its exact value relative to the
 * sum of its terms' magnitudes (`k`: the longest chain of roundings in one cell), so
 * `|<F(x), g> - <x, B(g)>| <= (kF + kB) u <|x|, W^T |g|>`, and a 16-bit result adds one rounding of
 * the dtype (`2^-11` float16, `2^-8` bfloat16) per cell of each side. `<|x|, W^T |g|>` is measured
 * on the device itself, as `<|x|, B(|g|)>` (its own error is a factor `1 + kB u`, covered by 1 %
 * headroom). Both dot products are summed in float64 on the host.
 *
 * @module
 */

import {
  type Device,
  type DType,
  runParams,
  type Tensor,
  upsampleBilinear2d,
  upsampleNearestExact1d,
  upsampleNearestExact2d,
} from "../../mod.ts";
import type { UpsampleParams } from "../../src/rules/ops.ts";
import { FAMILY_NAMES } from "../../src/rules/generation.ts";
import { adjointGap } from "../../src/rules/adjoint_gap.ts";
import type { VerifyOptions } from "./args.ts";
import { makeCases, seededRandom } from "./cases.ts";
import { referenceOf } from "./compare.ts";

/** The outcome of one pair. */
export interface AdjointResult {
  /** `<F(x), g>`, float64. */
  readonly forwardDot: number;
  /** `<x, B(g)>`, float64. */
  readonly backwardDot: number;
  /** The largest difference the two kernels' rounding allows. */
  readonly bound: number;
  /** `|forwardDot - backwardDot| / bound`: above 1 breaks the identity. */
  readonly ratio: number;
}

const UNIT = 2 ** -24;
const DTYPE_UNIT: Readonly<Record<DType, number>> = {
  float32: 0,
  float16: 2 ** -11,
  bfloat16: 2 ** -8,
};

/**
 * The rounding chains of F and B for a call (`kF`, `kB`): a nearest-exact forward copies (0), a
 * bilinear one sums 4 weighted terms with rounded weights (8); a backward cell sums at most
 * `prod(ceil(out / in) + 2)` terms, each product rounded, in one or two passes.
 *
 * @example
 * ```ts
 * import { roundingChains } from "./adjoint.ts";
 * roundingChains({ op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 4, 4], outputSize: [8, 8], scales: [0, 0], alignCorners: false });
 * // { forward: 8, backward: 20 }
 * ```
 */
export function roundingChains(call: UpsampleParams): { forward: number; backward: number } {
  let terms = 1;
  call.outputSize.forEach((out, d) => {
    terms *= Math.ceil(out / call.inputSize[2 + d]) + 2;
  });
  return { forward: call.op === "bilinear2d" ? 8 : 0, backward: terms + 4 };
}

/**
 * Runs one seeded pair: F on `forwardDevice`, B on `backwardDevice` (the same device for the
 * check; two devices pair one family's forward with another's backward), with inputs exact in the
 * dtype.
 *
 * @example
 * ```ts ignore
 * using device = Device.open({ backend: "cpu" });
 * const r = await adjointPair(device, device, call, 7);
 * r.ratio <= 1; // true: PyTorch's pair is adjoint
 * ```
 */
export async function adjointPair(
  forwardDevice: Device,
  backwardDevice: Device,
  call: UpsampleParams,
  seed: number,
): Promise<AdjointResult> {
  const { dtype, inputSize, outputSize } = call;
  const [n, c] = inputSize;
  const gradShape = [n, c, ...outputSize];
  const random = seededRandom(seed);
  // Multiples of 1/64 in [-1, 1]: exact in every dtype.
  const draw = (count: number): Float32Array =>
    Float32Array.from({ length: count }, () => Math.round((random() * 2 - 1) * 64) / 64);
  const x = draw(inputSize.reduce((a, b) => a * b, 1));
  const g = draw(gradShape.reduce((a, b) => a * b, 1));
  using xTensor = forwardDevice.tensor(x, inputSize, { dtype });
  using gTensor = backwardDevice.tensor(g, gradShape, { dtype });
  using gAbs = backwardDevice.tensor(g.map(Math.abs), gradShape, { dtype });
  using y = forward(xTensor, call);
  using gi = runParams(gTensor, call);
  using giAbs = runParams(gAbs, call);
  const [yValues, giValues, magnitudeValues] = await Promise.all([
    y.toFloat32Array(),
    gi.toFloat32Array(),
    giAbs.toFloat32Array(),
  ]);
  let forwardDot = 0, backwardDot = 0, magnitude = 0;
  for (let i = 0; i < g.length; i++) forwardDot += yValues[i] * g[i];
  for (let i = 0; i < x.length; i++) {
    backwardDot += x[i] * giValues[i];
    magnitude += Math.abs(x[i]) * magnitudeValues[i];
  }
  const chains = roundingChains(call);
  const gamma = (chains.forward + chains.backward) * UNIT + 2 * DTYPE_UNIT[dtype];
  const bound = gamma * magnitude * 1.01 + 1e-300;
  return { forwardDot, backwardDot, bound, ratio: Math.abs(forwardDot - backwardDot) / bound };
}

/**
 * The public forward op of `call` on `x` (the forward counterpart of `runParams`): its output
 * size, scales (0 = from the sizes) and, for bilinear, `alignCorners`.
 *
 * @example
 * ```ts
 * import { Device } from "../../mod.ts";
 * import { forward } from "./adjoint.ts";
 * using device = Device.open({ backend: "cpu" });
 * using x = device.tensor([1, 2], [1, 1, 2]);
 * const call = { op: "nearestExact1d", dtype: "float32", inputSize: [1, 1, 2], outputSize: [4], scales: [0], alignCorners: false } as const;
 * using y = forward(x, call); // [1, 1, 2, 2]
 * ```
 */
export function forward(x: Tensor, call: UpsampleParams): Tensor {
  const { op, outputSize, scales, alignCorners } = call;
  if (op === "nearestExact1d") return upsampleNearestExact1d(x, { outputSize, scales: scales[0] });
  const options = { outputSize, scalesH: scales[0], scalesW: scales[1] };
  return op === "nearestExact2d"
    ? upsampleNearestExact2d(x, options)
    : upsampleBilinear2d(x, { ...options, alignCorners });
}

/** What an adjoint run found. */
export interface AdjointSummary {
  /** Pairs run. */
  readonly pairs: number;
  /** Pairs outside the bound that no device fact explains (each a failure). */
  readonly failures: number;
  /** Pairs outside the bound where the device's forward and backward differ by construction. */
  readonly deviceFacts: number;
  /** Pairs the device's family does not run in one direction (not compared). */
  readonly skipped: number;
}

/**
 * Runs the adjoint check over `cases` on `forwardDevice` and `backwardDevice` (the same NPU for
 * `verify --adjoint`) and prints, per op, dtype and family, the worst ratio to the bound; a pair
 * outside it is a FAILURE unless `deviceFact` names why the device's own forward and backward
 * differ by construction (then a DEVICE FACT line).
 *
 * @example
 * ```ts ignore
 * const summary = await adjointReport(npu, npu, cases, () => Promise.resolve(null), console.log);
 * ```
 */
export async function adjointReport(
  forwardDevice: Device,
  backwardDevice: Device,
  cases: readonly UpsampleParams[],
  deviceFact: (call: UpsampleParams, seed: number) => Promise<string | null>,
  log: (line: string) => void,
  seed = 1,
): Promise<AdjointSummary> {
  const worst = new Map<string, number>();
  let failures = 0, facts = 0, skipped = 0, pairs = 0;
  for (const [k, call] of cases.entries()) {
    let result: AdjointResult;
    try {
      result = await adjointPair(forwardDevice, backwardDevice, call, seed + k);
    } catch (error) {
      // What one direction's family does not run is refused before the device.
      if (!(error instanceof TypeError || error instanceof RangeError)) throw error;
      skipped++;
      log(`SKIPPED ${describe(call)}: ${error.message}`);
      continue;
    }
    pairs++;
    const key = `${call.op} ${call.dtype}`;
    worst.set(key, Math.max(worst.get(key) ?? 0, result.ratio));
    if (result.ratio <= 1) continue;
    const fact = await deviceFact(call, seed + k);
    const numbers = `<F(x), g> = ${result.forwardDot}, <x, B(g)> = ${result.backwardDot}, ` +
      `${result.ratio.toFixed(1)} times the bound ${result.bound.toExponential(2)}`;
    if (fact !== null) {
      facts++;
      log(`DEVICE FACT ${describe(call)}: ${numbers}; ${fact}`);
    } else {
      failures++;
      log(`FAILURE ${describe(call)}: ${numbers}`);
    }
  }
  for (const [key, ratio] of [...worst].sort()) {
    log(`adjoint ${key}: worst |<F(x), g> - <x, B(g)>| / bound = ${ratio.toFixed(3)}`);
  }
  log(
    `adjoint: ${pairs} pairs, ${failures} outside the bound, ${facts} device facts, ` +
      `${skipped} not run by the family`,
  );
  return { pairs, failures, deviceFacts: facts, skipped };
}

function describe(call: UpsampleParams): string {
  const scales = call.scales.some((s) => s !== 0) ? ` scales [${call.scales.join(", ")}]` : "";
  const align = call.op === "bilinear2d" ? ` alignCorners ${call.alignCorners}` : "";
  return `${call.op} ${call.dtype} [${call.inputSize.join(", ")}] <-> ` +
    `[${call.outputSize.join(", ")}]${scales}${align}`;
}

/**
 * `verify --adjoint` on `npu`: seeded pairs of every op and dtype its family runs both ways, each
 * checked on the device; a pair outside the bound is a device fact where the family's own kernels
 * differ by construction (`adjointGap`, from their source), else a failure.
 *
 * @example
 * ```ts ignore
 * const summary = await verifyAdjoint(npu, parseVerifyArgs(["--adjoint"]), console.log);
 * ```
 */
export async function verifyAdjoint(
  npu: Device,
  options: VerifyOptions,
  log: (line: string) => void,
): Promise<AdjointSummary> {
  const { target, options: bound } = referenceOf(npu, options.soc);
  if (target.unsupported !== undefined) {
    throw new RangeError(`verify --soc ${options.soc}: ${target.unsupported}`);
  }
  log(
    `adjoint check on ${npu.name}: ${FAMILY_NAMES[target.generation]} (${target.reason}); a pair ` +
      `outside the bound is a device fact where the family's kernels differ by construction`,
  );
  const ascend = {
    generation: target.generation,
    bilinearApi: bound.bilinearApi ?? "v2",
    fma: true,
    ...(bound.soc === undefined ? {} : { soc: bound.soc }),
  };
  const cases = makeCases(options.cases, options.seed, options.dtypes);
  const fact = (call: UpsampleParams): Promise<string | null> =>
    Promise.resolve(adjointGap(call, ascend));
  return await adjointReport(npu, npu, cases, fact, log, options.seed);
}
