/**
 * The configurations `deno task verify` runs: seeded random ones, plus the kinds where the Ascend
 * kernels and PyTorch part ways — nearest-exact size pairs and scales whose index mapping differs
 * ("ties"), and bilinear with a scale on one dimension only (the device then derives both scales from
 * the sizes) — and, in deterministic mode, every fifth one and a fixed few bilinear calls
 * that reach the deterministic route of the TBE kernel ResizeBilinearV2Grad (`src/rules/route.ts`).
 * A {@link CaseMix} makes the draws follow an NPU's family (`mix.ts`): its ops, and a case it
 * refuses drawn again.
 *
 * @module
 */

import type { UpsampleOp, UpsampleParams } from "../../src/backend.ts";
import type { DType } from "../../src/tensor/dtype.ts";

/** One op call of a verification run. */
export interface VerifyCase extends UpsampleParams {
  /** How it was chosen (`"route"`: one of {@link routeCases}). */
  readonly kind: "random" | "tie" | "one-scale" | "route";
  /**
   * Whether it runs with deterministic mode on (the per-call option): then verify also runs it a
   * second time and requires the same bits.
   */
  readonly deterministic: boolean;
}

/**
 * Nearest-exact dimensions whose index mapping on the device differs from PyTorch's in one output
 * (found by evaluating both rules for in <= 39, out <= 119 and the scales below: the kernels' rule of
 * ops-cv `upsample_nearest_exact2d_grad_kernel.h` against PyTorch's `floor((o + 0.5) * (1 / s))`):
 * `[in, out, scale]`, scale 0 = from the sizes.
 */
export const TIE_DIMENSIONS: ReadonlyArray<readonly [number, number, number]> = [
  [2, 41, 0], // output 20 -> input 1 on the device, input 0 in PyTorch
  [4, 82, 0],
  [6, 37, 0],
  [8, 115, 0],
  [12, 74, 0],
  [14, 23, 0],
  [14, 99, 0],
  [27, 8, 0.3],
  [30, 9, 0.3],
  [37, 11, 0.3],
];

const SCALES = [0.3, 0.5, 0.6, 1.3, 1.7, 2, 2.5, 3];
const OPS: readonly UpsampleOp[] = ["nearestExact1d", "nearestExact2d", "bilinear2d"];

/**
 * A seeded PRNG (mulberry32): the same seed gives the same cases on every host.
 *
 * @example
 * ```ts
 * import { seededRandom } from "./cases.ts";
 * const random = seededRandom(1);
 * random() === seededRandom(1)(); // true: values in [0, 1)
 * ```
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * What an NPU's family and CANN run, so that the draws follow it: the ops its kernels run, and a
 * test of a drawn case (its family's dtypes and sizes, a V1-only CANN's limits, a deterministic
 * call no route covers). The default runs everything (Atlas A2/A3 with V2).
 */
export interface CaseMix {
  /** The ops the family runs (default all three): a tie slot becomes a random draw without nearest-exact. */
  readonly ops?: readonly UpsampleOp[];
  /**
   * Whether the NPU runs a drawn case (default: every case). A case it refuses is drawn again, up to
   * {@link REDRAWS} times, then tried with its image sizes equal to the gradient's (the only bfloat16
   * bilinear the 910 and 310P run); failing that it is kept, and verify reports it as skipped.
   */
  readonly runs?: (c: VerifyCase) => boolean;
}

/** How often {@link makeCases} draws a case again that the {@link CaseMix} refuses. */
export const REDRAWS = 8;

/**
 * `count` cases from `seed`: every fifth is a tie case and every fifth (offset) a one-scale bilinear
 * case, the rest random over all ops, of which every fifth case of the list (`k % 5 == 4`) runs in
 * deterministic mode (decided by position, so the draws are those of every other case); dtypes
 * drawn from `dtypes`. With a {@link CaseMix} the draws follow a family: only its ops (a tie slot
 * is then a random case), and a case it refuses drawn again; with the default mix (everything
 * runs) the cases are the same as without one.
 *
 * @example
 * ```ts
 * import { makeCases } from "./cases.ts";
 * const cases = makeCases(10, 1, ["float32"]);
 * console.log(cases.length, cases.some((c) => c.kind === "tie")); // 10 true
 * const bilinear = makeCases(10, 1, ["float32"], { ops: ["bilinear2d"] });
 * console.log(bilinear.every((c) => c.op === "bilinear2d")); // true
 * ```
 */
export function makeCases(
  count: number,
  seed: number,
  dtypes: readonly DType[],
  mix: CaseMix = {},
): VerifyCase[] {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const int = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
  const ops = mix.ops ?? OPS;
  const runs = mix.runs ?? ((): boolean => true);
  const cases: VerifyCase[] = [];
  for (let k = 0; k < count; k++) {
    let c = drawCase(k, dtypes, ops, pick, int, random);
    for (let again = 0; again < REDRAWS && !runs(c); again++) {
      c = drawCase(k, dtypes, ops, pick, int, random);
    }
    if (!runs(c) && c.op === "bilinear2d" && runs(equalSizes(c))) c = equalSizes(c);
    cases.push(c);
  }
  return cases;
}

// The case of a bilinear draw with its image sizes equal to the gradient's, scales not given.
function equalSizes(c: VerifyCase): VerifyCase {
  return { ...c, inputSize: [c.inputSize[0], c.inputSize[1], ...c.outputSize], scales: [0, 0] };
}

// Case k of the list (its slot decides the kind and deterministic mode), drawn from `random`.
function drawCase(
  k: number,
  dtypes: readonly DType[],
  ops: readonly UpsampleOp[],
  pick: <T>(items: readonly T[]) => T,
  int: (lo: number, hi: number) => number,
  random: () => number,
): VerifyCase {
  const nearestOps = ops.filter((op) => op !== "bilinear2d") as Array<
    "nearestExact1d" | "nearestExact2d"
  >;
  const dtype = pick(dtypes);
  const batch = [int(1, 2), int(1, 3)];
  if (k % 5 === 0 && nearestOps.length > 0) {
    // A tie: one dimension from the list, the other (2d) random.
    const [input, output, scale] = TIE_DIMENSIONS[(k / 5) % TIE_DIMENSIONS.length];
    const op = pick(nearestOps);
    if (op === "nearestExact1d") {
      return caseOf(op, dtype, batch, [[input, output, scale]], "tie");
    }
    const other = randomDimension(int, pick, true);
    const dims = random() < 0.5 ? [[input, output, scale], other] : [other, [input, output, scale]];
    return caseOf(op, dtype, batch, dims as Dimension[], "tie");
  }
  if (k % 5 === 2 && ops.includes("bilinear2d")) {
    // Bilinear with one scale: the device ignores it and derives both scales from the sizes.
    const dims: Dimension[] = [0, 1].map((): Dimension => [int(1, 40), int(1, 120), 0]);
    const scaled = dims[int(0, 1)];
    const scale = pick(SCALES.filter((x) => scaled[0] * x >= 1)); // a non-empty output
    scaled[1] = Math.floor(scaled[0] * scale);
    scaled[2] = scale;
    return caseOf("bilinear2d", dtype, batch, dims, "one-scale");
  }
  const op = pick(ops);
  const spatial = op === "nearestExact1d" ? 1 : 2;
  const dims = Array.from(
    { length: spatial },
    () => randomDimension(int, pick, op !== "bilinear2d"),
  );
  const alignCorners = op === "bilinear2d" && random() < 0.5;
  return caseOf(op, dtype, batch, dims, "random", alignCorners, k % 5 === 4);
}

type Dimension = [input: number, output: number, scale: number];

// Sizes 1..40 in, a scale from SCALES (half the time) or an output size 1..120; nearest-exact keeps
// within its 50x limit.
function randomDimension(
  int: (lo: number, hi: number) => number,
  pick: <T>(items: readonly T[]) => T,
  nearestLimit: boolean,
): Dimension {
  const input = int(1, 40);
  if (int(0, 1) === 0) {
    const scale = pick(SCALES);
    const output = Math.floor(input * scale);
    if (output >= 1) return [input, output, scale];
  }
  const output = int(1, nearestLimit ? Math.min(120, 50 * input) : 120);
  return [input, output, 0];
}

// The case of `op` on `[...batch, ...inputs]` with one `[input, output, scale]` per dimension.
function caseOf(
  op: UpsampleOp,
  dtype: DType,
  batch: readonly number[],
  dims: readonly Dimension[],
  kind: VerifyCase["kind"],
  alignCorners = false,
  deterministic = false,
): VerifyCase {
  return {
    op,
    dtype,
    inputSize: [...batch, ...dims.map((d) => d[0])],
    outputSize: dims.map((d) => d[1]),
    scales: dims.map((d) => d[2]),
    alignCorners,
    kind,
    deterministic,
  };
}

/**
 * The fixed bilinear calls verify adds in deterministic mode: each has the image height differ
 * from the gradient's and puts the TBE kernel ResizeBilinearV2Grad in tiling mode 5 or 6, whose
 * single launch adds in an order nothing fixes, so where that kernel runs (Atlas A2/A3 through its
 * one-scale fallback, the 910 and 310P always) deterministic mode takes the deterministic route
 * (`src/rules/route.ts`); the Ascend 950 runs its flag-switched gather. `[in, out, scales,
 * alignCorners, preferred dtype]`: the third's H pass sums an image row wider than half the
 * kernel's `tensor_c` (1100 cells) in overlapping windows (tiling mode 6).
 */
const ROUTE_CALLS: ReadonlyArray<
  readonly [readonly number[], readonly number[], readonly number[], boolean, DType]
> = [
  [[1, 2, 64, 64], [128, 128], [2, 0], false, "float32"], // A2/A3: modes 6, 6; 910/310P: 5, 5
  [[2, 1, 48, 40], [96, 100], [0, 2.5], true, "float16"], // casts around the two launches
  [[1, 4, 1100, 32], [1200, 64], [0, 2], false, "float32"], // H pass: mode 6, a wide image
];

/**
 * The fixed deterministic bilinear cases that reach the deterministic route where the TBE kernel
 * runs (see {@link ROUTE_CALLS}), each in its preferred dtype when `dtypes` has it, else in one of
 * `dtypes`; with a {@link CaseMix}, in the first of those the NPU runs (kept as they are when it
 * runs none).
 *
 * @example
 * ```ts
 * import { routeCases } from "./cases.ts";
 * routeCases(["float32"]).map((c) => c.inputSize[2]); // [64, 48, 1100]
 * ```
 */
export function routeCases(dtypes: readonly DType[], mix: CaseMix = {}): VerifyCase[] {
  const runs = mix.runs ?? ((): boolean => true);
  return ROUTE_CALLS.map(([inputSize, outputSize, scales, alignCorners, preferred], i) => {
    const first = dtypes.includes(preferred) ? preferred : dtypes[i % dtypes.length];
    const cases = [first, ...dtypes.filter((d) => d !== first)].map((dtype): VerifyCase => ({
      op: "bilinear2d",
      dtype,
      inputSize,
      outputSize,
      scales,
      alignCorners,
      kind: "route",
      deterministic: true,
    }));
    return cases.find(runs) ?? cases[0];
  });
}

/**
 * A one-line description, e.g. `nearestExact2d float32 inputSize [1, 2, 27, 5] outputSize [8, 9]
 * scales [0.3, 0] (tie)`; a case in deterministic mode ends in `(random, deterministic)`.
 *
 * @example
 * ```ts
 * import { describeCase, routeCases } from "./cases.ts";
 * describeCase(routeCases(["float32"])[0]);
 * // "bilinear2d float32 inputSize [1, 2, 64, 64] outputSize [128, 128] scales [2, 0] alignCorners false (route, deterministic)"
 * ```
 */
export function describeCase(c: VerifyCase): string {
  const align = c.op === "bilinear2d" ? ` alignCorners ${c.alignCorners}` : "";
  const mode = c.deterministic ? ", deterministic" : "";
  return `${c.op} ${c.dtype} inputSize [${c.inputSize.join(", ")}] outputSize ` +
    `[${c.outputSize.join(", ")}] scales [${c.scales.join(", ")}]${align} (${c.kind}${mode})`;
}
