// Self-tests of the independent Ascend 950 (arch35) model (tests/support/ascend950_model.ts) and its
// assertion (tests/support/ascend950_match.ts): small cases worked out by hand from the ops-cv kernels,
// the tiling's routing, the FMA switch, the 16-bit atomic accumulation and the bound that covers it.

import assert from "node:assert/strict";
import {
  type Arch35Call,
  arch35Kernel,
  arch35Model,
  fmaf,
  resizePlan,
  roundTo,
  toggleChangesKernel,
} from "../support/ascend950_model.ts";
import { assertMatchesArch35, atomicBound } from "../support/ascend950_match.ts";

const base = { gradDtype: "float32", deterministic: false } as const;

function nearest1d(inL: number, outL: number, scale = 0): Arch35Call {
  return {
    ...base,
    op: "nearestExact1d",
    inputSize: [1, 1, inL],
    outputSize: [outL],
    scales: [scale],
  };
}

function bilinear(
  inputSize: number[],
  outputSize: number[],
  extra: Partial<Arch35Call> = {},
): Arch35Call {
  return { ...base, op: "bilinear2d", inputSize, outputSize, scales: [0, 0], ...extra };
}

Deno.test("950 model: fmaf rounds once (against products and sums exact in a double)", () => {
  // 3 * fl32(1/6) - 0.5 is 1.49e-8 exactly; rounded first, the product is 0.5 and the result 0.
  const sixth = Math.fround(1 / 6);
  assert.equal(fmaf(3, sixth, -0.5), Math.fround(3 * sixth - 0.5));
  assert.ok(fmaf(3, sixth, -0.5) > 0);
  assert.equal(Math.fround(Math.fround(3 * sixth) - 0.5), 0);
  // A sum that lands on a float32 midpoint in double: 1 + 2^-24 + 2^-60 must round up.
  assert.equal(fmaf(1 + 2 ** -23, 2 ** -37, 1 + 2 ** -24), 1 + 2 ** -23);
  assert.equal(fmaf(2, 3, 4), 10);
});

Deno.test("950 model: roundTo rounds to nearest even in each dtype", () => {
  assert.equal(roundTo("float16", 2049), 2048); // tie, even
  assert.equal(roundTo("float16", 2051), 2052); // tie, even
  assert.equal(roundTo("float16", 2049.0001), 2050);
  assert.equal(roundTo("bfloat16", 257), 256);
  assert.equal(roundTo("bfloat16", 259), 260);
  assert.equal(roundTo("float32", 1 + 2 ** -24), 1);
  assert.equal(roundTo("float16", 65520), Infinity);
  assert.equal(roundTo("float16", 2 ** -25), 0); // half the smallest subnormal: ties to 0
  assert.equal(roundTo("float16", 3 * 2 ** -26), 2 ** -24);
});

Deno.test("950 model: nearest-exact, the FMA one-element case (1d 6 -> 1: input 2 contracted, 3 not)", () => {
  const g = Float32Array.of(1);
  const fused = arch35Model(g, { ...nearest1d(6, 1), fma: true });
  const split = arch35Model(g, { ...nearest1d(6, 1), fma: false });
  assert.equal(fused.kernel, "UpsampleNearestExact2dGrad.SIMT");
  assert.deepEqual([...fused.values], [0, 0, 1, 0, 0, 0]);
  assert.deepEqual([...split.values], [0, 0, 0, 1, 0, 0]);
});

Deno.test("950 model: nearest-exact by hand (in=2 out=41; scale 1.3 on equal sizes; 2x2 -> 4x4)", () => {
  // s = 41 / 2 = 20.5: input 1 starts at ceil(20.5 - 0.5) = 20.
  const ones = new Float32Array(41).fill(1);
  assert.deepEqual([...arch35Model(ones, nearest1d(2, 41)).values], [20, 21]);
  // Equal sizes, no scale: DATA_COPY. With scale 1.3: starts ceil(-0.5)=0, ceil(0.8)=1, ceil(2.1)=3,
  // min(ceil(3.4), 3)=3: input 0 = g0, input 1 = g1 + g2, input 2 = nothing.
  const g3 = Float32Array.of(1, 2, 4);
  assert.equal(arch35Kernel(nearest1d(3, 3)), "UpsampleNearestExact2dGrad.DATA_COPY");
  assert.deepEqual([...arch35Model(g3, nearest1d(3, 3)).values], [1, 2, 4]);
  assert.equal(arch35Kernel(nearest1d(3, 3, 1.3)), "UpsampleNearestExact2dGrad.SIMT");
  assert.deepEqual([...arch35Model(g3, nearest1d(3, 3, 1.3)).values], [1, 6, 0]);
  // 2d, both dims x2: each input cell sums its 2x2 block.
  const g16 = Float32Array.from({ length: 16 }, (_, i) => i + 1);
  const call: Arch35Call = {
    ...base,
    op: "nearestExact2d",
    inputSize: [1, 1, 2, 2],
    outputSize: [4, 4],
    scales: [0, 0],
  };
  assert.deepEqual([...arch35Model(g16, call).values], [
    1 + 2 + 5 + 6,
    3 + 4 + 7 + 8,
    9 + 10 + 13 + 14,
    11 + 12 + 15 + 16,
  ]);
  // Limits: more than 50x is refused, as the op_api does.
  assert.throws(() => arch35Model(new Float32Array(51), nearest1d(1, 51)), RangeError);
});

Deno.test("950 model: nearest-exact float16 sums in float32 and rounds once", () => {
  // 2048 + 1 + 1 in float32 is 2050, representable in float16; summed in float16 it would be 2048.
  const g = Float32Array.of(2048, 1, 1);
  const call: Arch35Call = { ...nearest1d(1, 3, 3), gradDtype: "float16" };
  assert.deepEqual([...arch35Model(g, call).values], [2050]);
});

Deno.test("950 model: bilinear gathers by hand (DETERMINE 2 -> 4, DETERMINE_SCALES 2 -> 5 with scale 2)", () => {
  // H 2 -> 4, half-pixel: row 0 = g0 + .75 g1 + .25 g2, row 1 = .25 g1 + .75 g2 + g3.
  const g4 = Float32Array.of(1, 2, 4, 8);
  const up = bilinear([1, 1, 2, 1], [4, 1]);
  assert.equal(arch35Kernel(up), "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE"); // enlarging: a gather
  assert.deepEqual([...arch35Model(g4, up).values], [3.5, 11.5]);
  // scalesH 2 with sizes 2 -> 5: 1/2 is not 2/5, so DETERMINE_SCALES, source o -> 0.5 (o + .5) - .5:
  // row 0 = g0 + .75 g1 + .25 g2, row 1 = .25 g1 + .75 g2 + g3 + g4 (both rows are edges).
  const g5 = Float32Array.of(1, 2, 4, 8, 16);
  const scaled = bilinear([1, 1, 2, 1], [5, 1], { scales: [2, 0] });
  assert.equal(arch35Kernel(scaled), "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE_SCALES");
  assert.deepEqual([...arch35Model(g5, scaled).values], [3.5, 27.5]);
});

Deno.test("950 model: bilinear downsampling scatters atomically unless deterministic (4 -> 2 by hand)", () => {
  // H 4 -> 2 (scale 2): gradient row 0 at source 0.5 -> rows 0, 1 by halves; row 1 at 2.5 -> rows 2, 3.
  const g = Float32Array.of(2, 4);
  const down = bilinear([1, 1, 4, 1], [2, 1]);
  const atomic = arch35Model(g, down);
  assert.equal(atomic.kernel, "ResizeBilinearV2Grad.SIMT_NCHW");
  assert.equal(atomic.kind, "atomic");
  assert.deepEqual([...atomic.values], [1, 1, 2, 2]);
  const gather = arch35Model(g, { ...down, deterministic: true });
  assert.equal(gather.kernel, "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE");
  assert.equal(gather.kind, "gather");
  assert.deepEqual([...gather.values], [1, 1, 2, 2]);
  assert.ok(toggleChangesKernel(down));
  assert.ok(!toggleChangesKernel(bilinear([1, 1, 2, 1], [4, 1])));
});

Deno.test("950 model: routing of the tiling (copies, dtypes, align_corners, one scale, V1)", () => {
  const plan = (call: Arch35Call): string => arch35Kernel(call);
  // Equal sizes: ALL_COPY on V2 even with a scale (A2's own kernel would not copy); V1: ViewCopy.
  assert.equal(
    plan(bilinear([1, 1, 3, 3], [3, 3], { scales: [1.3, 0] })),
    "ResizeBilinearV2Grad.ALL_COPY",
  );
  assert.equal(plan(bilinear([1, 1, 3, 3], [3, 3], { bilinearApi: "v1" })), "ViewCopy");
  // A float32 gradient with a float16 result (V1 allows it): never ALL_COPY nor atomic.
  const mixed = bilinear([1, 1, 3, 3], [3, 3], { bilinearApi: "v1", outDtype: "float16" });
  assert.equal(plan({ ...mixed, bilinearApi: "v2" }), "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE");
  assert.equal(
    plan(bilinear([1, 1, 8, 8], [3, 3], { bilinearApi: "v1", outDtype: "bfloat16" })),
    "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE",
  );
  // Shrinking: atomic; deterministic: DETERMINE, or DETERMINE_SCALES when 1/scale is not the ratio.
  assert.equal(plan(bilinear([1, 1, 8, 8], [3, 3])), "ResizeBilinearV2Grad.SIMT_NCHW");
  assert.equal(
    plan(bilinear([1, 1, 8, 8], [3, 3], { deterministic: true })),
    "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE",
  );
  assert.equal(
    plan(bilinear([1, 1, 8, 8], [3, 3], { deterministic: true, scales: [0.4, 0] })),
    "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE_SCALES",
  );
  // 1/0.375 = 8/3: the ratio, so plain DETERMINE even though a scale was given.
  assert.equal(
    plan(bilinear([1, 1, 8, 8], [3, 3], { deterministic: true, scales: [0.375, 0.375] })),
    "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE",
  );
  // One dimension enlarging is enough for a gather (a scale in (0, 1)).
  assert.equal(plan(bilinear([1, 1, 8, 2], [3, 5])), "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE");
  // align_corners: the scatter's scale is (src - 1) / (des - 1), 0 for des = 1; the gather's src / des.
  const ac = bilinear([1, 1, 5, 5], [1, 3], { alignCorners: true });
  assert.equal(plan(ac), "ResizeBilinearV2Grad.SIMT_NCHW");
  assert.deepEqual([resizePlan(ac).scaleH, resizePlan(ac).scaleW], [0, 2]);
  const acDet = resizePlan({ ...ac, deterministic: true });
  assert.equal(acDet.key, "SIMT_NCHW_DETERMINE");
  assert.deepEqual([acDet.scaleH, acDet.scaleW, acDet.inverseH], [5, 2, Math.fround(0.2)]);
  // The scale on one dimension is used (1 / scale), the other from the sizes.
  const one = resizePlan(bilinear([1, 1, 3, 3], [6, 7], { scales: [2.4, 0] }));
  assert.deepEqual([one.scaleH, one.scaleW], [
    Math.fround(1 / Math.fround(2.4)),
    Math.fround(3 / 7),
  ]);
  assert.equal(one.key, "SIMT_NCHW_DETERMINE_SCALES");
  // NHWC-only kernels are named, not modelled.
  const nhwc = bilinear([1, 64, 8, 8], [3, 3], { format: "NHWC" });
  assert.equal(plan(nhwc), "ResizeBilinearV2Grad.C_PARALLEL");
  assert.throws(() => arch35Model(new Float32Array(64 * 9), nhwc), /not modelled/);
});

Deno.test("950 model: float16 atomic sums depend on the order; the bound covers every order, not a lost term", () => {
  // 3x3 <- 2x2, half-pixel, scale 1.5: every gradient element reaches the centre with weight 1/16.
  // Terms 2048, 1, 1 (float16): 2048 + 1 ties to 2048 (twice); 1 + 1 + 2048 = 2050.
  const g = Float32Array.of(32768, 16, 16, 0);
  const call = bilinear([1, 1, 3, 3], [2, 2], { gradDtype: "float16" });
  const forward = arch35Model(g, call, "forward");
  const reverse = arch35Model(g, call, "reverse");
  assert.equal(forward.kind, "atomic");
  assert.equal(forward.values[4], 2048);
  assert.equal(reverse.values[4], 2050);
  assert.equal(forward.exactSum![4], 2050);
  assert.equal(forward.terms[4], 3);
  // Two roundings of at most half an ulp (2 in [2048, 4096) in float16), plus the double sum's 2^-53.
  const bound = atomicBound("float16", 3, 2050);
  assert.ok(bound >= 2 && bound < 2 + 1e-9, `bound ${bound}`);
  assertMatchesArch35(forward.values, g, call, "forward order", forward);
  assertMatchesArch35(reverse.values, g, call, "reverse order", forward);
  const lost = Float32Array.from(forward.values);
  lost[4] = 2048 - 2; // a term of 1 missing and a rounding more: outside
  assert.throws(() => assertMatchesArch35(lost, g, call, "lost term", forward), /element 4/);
  // A gather is held to float32 ulps plus one of the dtype: the deterministic route gives 2050 for
  // this cell; 2048 (one float16 ulp) passes, 2046 does not.
  const det = arch35Model(g, { ...call, deterministic: true });
  assert.equal(det.values[4], 2050);
  const off = Float32Array.from(det.values);
  off[4] = 2048;
  assertMatchesArch35(off, g, { ...call, deterministic: true }, "gather, one ulp");
  off[4] = 2046;
  assert.throws(() => assertMatchesArch35(off, g, { ...call, deterministic: true }, "gather"));
});

Deno.test("950 model: a nearest-exact mapping off by one cell fails the assertion", () => {
  const ones = new Float32Array(41).fill(0.75);
  const call = nearest1d(2, 41);
  const model = arch35Model(ones, call);
  assertMatchesArch35(model.values, ones, call, "itself");
  const moved = Float32Array.of(model.values[0] + 0.75, model.values[1] - 0.75);
  assert.throws(() => assertMatchesArch35(moved, ones, call, "moved"), /element 0/);
});
