// The FORWARD device reference (src/rules/forward_device.ts, forward_axes.ts, forward_950.ts;
// src/cpu/ascend/forward/reference.ts, forward_device_tbe.ts) per family: hand-computed small cases read
// from the ops-cv / TBE sources, the kernel each family's host code routes to, each arithmetic
// variant against a float64 evaluation of its own formula (within float32 rounding, float16 for the
// 310P's vbi float16), the three points the two earlier readings disputed, and the refusals.

import assert from "node:assert/strict";
import {
  bilinearCubeRoute,
  type ForwardPlan,
  forwardPlan,
  forwardRefusal,
  type ForwardTarget,
} from "../../src/rules/forward_device.ts";
import {
  cubeTaps,
  nearestIndexForward,
  nearestStepA2,
  simt950Axis,
  sizeStep,
  step950,
  tbeAxis,
  tbeStep,
} from "../../src/rules/forward_axes.ts";
import type { AscendGeneration } from "../../src/rules/generation.ts";
import type { UpsampleParams } from "../../src/rules/ops.ts";
import { forwardDeviceCpu } from "../../src/cpu/ascend/forward/reference.ts";
import { fmaF16 } from "../../src/cpu/ascend/forward/tbe.ts";
import {
  bfloat16BitsFromNumber,
  bfloat16BitsToNumber,
  type DType,
  float16BitsFromNumber,
  float16BitsToNumber,
} from "../../src/tensor/dtype.ts";

const f = Math.fround;
const U = 2 ** -24;

function target(generation: AscendGeneration, extra: Partial<ForwardTarget> = {}): ForwardTarget {
  return { generation, bilinearApi: "v2", fma: true, tbeFma: false, ...extra };
}

type Op = UpsampleParams["op"];

function call(
  op: Op,
  inputSize: number[],
  outputSize: number[],
  options: { scales?: number[]; dtype?: DType; alignCorners?: boolean } = {},
): UpsampleParams {
  return {
    op,
    dtype: options.dtype ?? "float32",
    inputSize,
    outputSize,
    scales: options.scales ?? outputSize.map(() => 0),
    alignCorners: options.alignCorners ?? false,
  };
}

const bilinear = (i: number[], o: number[], opt: Parameters<typeof call>[3] = {}): UpsampleParams =>
  call("bilinear2d", i, o, opt);

function kernelOf(
  c: UpsampleParams,
  generation: AscendGeneration,
  extra: Partial<ForwardTarget> = {},
): string {
  return forwardPlan(c, target(generation, extra)).kernel;
}

const contiguous = (shape: readonly number[]): number[] =>
  shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));

/** Encodes numbers into a host array of `dtype` (16-bit: bit patterns, rounded to nearest even). */
function encode(dtype: DType, values: ArrayLike<number>): Float32Array | Uint16Array {
  if (dtype === "float32") return Float32Array.from(values);
  const to = dtype === "float16" ? float16BitsFromNumber : bfloat16BitsFromNumber;
  return Uint16Array.from(values, (v) => to(v));
}

function decode(dtype: DType, data: Float32Array | Uint16Array): Float32Array {
  if (dtype === "float32") return Float32Array.from(data);
  const from = dtype === "float16" ? float16BitsToNumber : bfloat16BitsToNumber;
  return Float32Array.from(data, (b) => from(b));
}

interface Run {
  readonly plan: ForwardPlan;
  /** The result in row-major order, decoded to numbers. */
  readonly values: Float32Array;
  /** The result's storage (bit patterns for 16-bit dtypes). */
  readonly raw: Float32Array | Uint16Array;
}

/**
 * Plans `c` for `t` and computes it on the CPU. `strided`: the input lies transposed in a larger
 * buffer at an offset and the result is written with padded rows, to exercise the views.
 */
function run(c: UpsampleParams, x: ArrayLike<number>, t: ForwardTarget, strided = false): Run {
  const plan = forwardPlan(c, t);
  const outShape = [c.inputSize[0], c.inputSize[1], ...c.outputSize];
  const rank = c.inputSize.length;
  const inCount = c.inputSize.reduce((a, b) => a * b, 1);
  const outCount = outShape.reduce((a, b) => a * b, 1);
  let input, out;
  if (!strided) {
    input = {
      data: encode(c.dtype, x),
      dtype: c.dtype,
      strides: contiguous(c.inputSize),
      offset: 0,
    };
    out = {
      data: encode(c.dtype, new Float32Array(outCount)),
      dtype: c.dtype,
      strides: contiguous(outShape),
      offset: 0,
    };
  } else {
    // Input: the last two dims swapped in storage (or N and C for 1d), offset 3.
    const perm = c.inputSize.map((_, i) => i);
    [perm[rank - 1], perm[rank - 2]] = [perm[rank - 2], perm[rank - 1]];
    const storedShape = perm.map((p) => c.inputSize[p]);
    const storedStrides = contiguous(storedShape);
    const strides = c.inputSize.map((_, d) => storedStrides[perm.indexOf(d)]);
    const data = new Float32Array(inCount + 3).fill(NaN);
    const logical = contiguous(c.inputSize);
    for (let k = 0; k < inCount; k++) {
      let pos = 3;
      for (let d = 0; d < rank; d++) {
        pos += Math.floor(k / logical[d]) % c.inputSize[d] * strides[d];
      }
      data[pos] = x[k];
    }
    input = { data: encode(c.dtype, data), dtype: c.dtype, strides, offset: 3 };
    // Out: rows padded by 2 cells.
    const padded = [...outShape];
    padded[rank - 1] += 2;
    out = {
      data: encode(c.dtype, new Float32Array(padded.reduce((a, b) => a * b, 1))),
      dtype: c.dtype,
      strides: contiguous(padded),
      offset: 0,
    };
  }
  forwardDeviceCpu(
    { input, out, inputSize: c.inputSize, outputSize: c.outputSize, scales: c.scales },
    plan,
  );
  // Gather the result in row-major order.
  const raw = c.dtype === "float32" ? new Float32Array(outCount) : new Uint16Array(outCount);
  const logical = contiguous(outShape);
  for (let k = 0; k < outCount; k++) {
    let pos = out.offset;
    for (let d = 0; d < rank; d++) pos += Math.floor(k / logical[d]) % outShape[d] * out.strides[d];
    raw[k] = out.data[pos];
  }
  return { plan, values: decode(c.dtype, raw), raw };
}

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------
// Nearest-exact.

Deno.test("A2/A3 nearest-exact: exact index with fl32(1.0 / scale), bits copied, tiling-key names", () => {
  const a2 = target("a2");
  // 1d 2 -> 41: fl32(20.5 * fl32(2 / 41)) = 0.99999994, so output 20 reads input 0.
  const r = run(call("nearestExact1d", [1, 1, 2], [41]), [1, 2], a2);
  assert.equal(r.plan.kernel, "UpsampleNearestExact2d.SMALL_C");
  assert.equal(r.plan.variant, "gather");
  assert.deepEqual([r.values[20], r.values[21]], [1, 2]);
  // 6 -> 10 with scale 1.7: fl32(1.0 / 1.7) = 0.58823532 (double division): output 8 reads 5.
  const x = [0, 1, 2, 3, 4, 5];
  const w = run(call("nearestExact1d", [1, 1, 6], [10], { scales: [1.7] }), x, a2).values;
  assert.deepEqual(Array.from(w), [0, 0, 1, 2, 2, 3, 3, 4, 5, 5]);
  // The 2d op ignores the scale of a dimension of equal sizes (step 1); the 1d op does not.
  assert.equal(nearestStepA2(4, 4, 1.2, true), 1);
  const oneD = run(call("nearestExact1d", [1, 1, 4], [4], { scales: [1.2] }), [0, 1, 2, 3], a2);
  assert.deepEqual(Array.from(oneD.values), [0, 1, 2, 2]);
  const twoD = run(
    call("nearestExact2d", [1, 1, 1, 4], [1, 4], { scales: [1, 1.2] }),
    [0, 1, 2, 3],
    a2,
  );
  assert.deepEqual(Array.from(twoD.values), [0, 1, 2, 3]);
  // A bit copy: -0 and a float16 NaN payload survive.
  const bits = run(
    call("nearestExact1d", [1, 1, 2], [4], { dtype: "float16" }),
    [-0, 1],
    a2,
  );
  assert.ok(Object.is(bits.values[0], -0));
  const nan = forwardPlan(call("nearestExact1d", [1, 1, 1], [2], { dtype: "float16" }), a2);
  const out = new Uint16Array(2);
  forwardDeviceCpu({
    input: { data: Uint16Array.of(0x7d55), dtype: "float16", strides: [1, 1, 1], offset: 0 },
    out: { data: out, dtype: "float16", strides: [2, 2, 1], offset: 0 },
    inputSize: [1, 1, 1],
    outputSize: [2],
    scales: [0],
  }, nan);
  assert.deepEqual(Array.from(out), [0x7d55, 0x7d55]);
  // GetTilingKey on the NHWC transpose (upsample_nearest_tiling.cpp).
  assert.equal(
    kernelOf(call("nearestExact2d", [1, 1, 4, 4], [8, 8]), "a2"),
    "UpsampleNearestExact2d.SMALL_CW",
  );
  assert.equal(
    kernelOf(call("nearestExact2d", [1, 3000, 2, 3], [4, 6]), "a2"),
    "UpsampleNearestExact2d.SMALL_C",
  );
  assert.equal(
    kernelOf(call("nearestExact2d", [1, 3000, 2, 8], [1, 2]), "a2"),
    "UpsampleNearestExact2d.COMMON",
  );
});

Deno.test("310P nearest-exact writes 0 + x in the dtype: -0 becomes +0 (disputed point 2)", () => {
  // upsample_nearest_310p.h CalcTensorsC: Duplicate<T>(dst, T(0)); Add(dst, dst, src).
  for (const dtype of ["float32", "float16"] as const) {
    const c = call("nearestExact2d", [1, 2, 1, 2], [2, 3], { dtype });
    const r = run(c, [-0, 1.5, -2, -0], target("310p"));
    assert.equal(r.plan.kernel, "UpsampleNearestExact2d.310P");
    assert.equal(r.plan.variant, "gather-add-zero");
    // Same index as A2/A3, every -0 now +0.
    const a2 = run(c, [-0, 1.5, -2, -0], target("a2"));
    assert.deepEqual(Array.from(r.values), Array.from(a2.values).map((v) => 0 + v));
    assert.ok(Object.is(a2.values[0], -0) && Object.is(r.values[0], 0));
    assert.ok(Array.from(r.values).every((v) => !Object.is(v, -0)));
  }
  const nan = run(call("nearestExact1d", [1, 1, 1], [2]), [NaN], target("310p"));
  assert.ok(Number.isNaN(nan.values[0]) && Number.isNaN(nan.values[1]));
});

Deno.test("950 nearest-exact: step 1.0f / fl32(scale), equal sizes copied, GATHER and 3d names", () => {
  const t = target("950");
  // 6 -> 10, scale 1.7: 1.0f / fl32(1.7) = 0.58823526 (float division): output 8 reads 4 (A2: 5).
  assert.equal(step950(6, 10, 1.7), f(1 / f(1.7)));
  const w = run(call("nearestExact1d", [1, 1, 6], [10], { scales: [1.7] }), [0, 1, 2, 3, 4, 5], t);
  assert.equal(w.plan.kernel, "ResizeNearestNeighborV2.SIMT_COMMON");
  assert.deepEqual(Array.from(w.values), [0, 0, 1, 2, 2, 3, 3, 4, 4, 5]);
  // Equal sizes: SIMT_INPUT_EQ_OUTPUT copies whatever the scale (A2/A3's 1d op applies it).
  const eq = run(call("nearestExact1d", [1, 1, 4], [4], { scales: [1.2] }), [-0, 1, 2, 3], t);
  assert.equal(eq.plan.kernel, "ResizeNearestNeighborV2.SIMT_INPUT_EQ_OUTPUT");
  assert.ok(Object.is(eq.values[0], -0));
  assert.deepEqual(Array.from(eq.values).slice(1), [1, 2, 3]);
  const one = run(call("nearestExact2d", [1, 1, 1, 1], [2, 3]), [7], t);
  assert.equal(one.plan.kernel, "ResizeNearestNeighborV2.SIMT_INPUT_EQ_ONE");
  assert.deepEqual(Array.from(one.values), [7, 7, 7, 7, 7, 7]);
  // The gather templates need N * C to fill 0.67 of the AIV cores (Ascend950PR_9599: 72; the
  // Ascend950DT_950x: 16), an enlargement and no scales.
  const up = call("nearestExact2d", [1, 16, 4, 4], [8, 8]);
  assert.equal(kernelOf(up, "950"), "ResizeNearestNeighborV2.SIMT_COMMON");
  assert.equal(
    kernelOf(up, "950", { soc: "Ascend950DT_950x" }),
    "ResizeNearestNeighborV2.GATHER_ALL_HW",
  );
  assert.equal(
    kernelOf({ ...up, inputSize: [1, 64, 4, 4] }, "950"),
    "ResizeNearestNeighborV2.GATHER_ALL_HW",
  );
  assert.equal(
    kernelOf(call("nearestExact2d", [1, 16, 200, 200], [400, 401]), "950", {
      soc: "Ascend950DT_950x",
    }),
    "ResizeNearestNeighborV2.GATHER_CUT_H",
  );
  assert.equal(
    kernelOf({ ...up, scales: [2, 2] }, "950", { soc: "Ascend950DT_950x" }),
    "ResizeNearestNeighborV2.SIMT_COMMON",
  );
  assert.equal(
    kernelOf(call("nearestExact2d", [1, 17, 745, 745], [5900, 5000]), "950"),
    "UpsampleNearestExact3dNcdhw.SIMD",
  );
});

Deno.test("nearest-exact gathers on strided views, every dtype and family that runs it", () => {
  const random = prng(11);
  for (const generation of ["a2", "950", "310p"] as const) {
    for (const dtype of ["float32", "float16", "bfloat16"] as const) {
      if (generation === "310p" && dtype === "bfloat16") continue;
      for (
        const [inSize, outSize, scales] of [[[2, 3, 5], [9], [0]], [[1, 2, 3, 4], [7, 3], [0, 0]]]
      ) {
        const c = call(inSize.length === 3 ? "nearestExact1d" : "nearestExact2d", inSize, outSize, {
          scales,
          dtype,
        });
        const x = Array.from({ length: inSize.reduce((a, b) => a * b, 1) }, () => random() * 4 - 2);
        const plain = run(c, x, target(generation));
        const strided = run(c, x, target(generation), true);
        assert.deepEqual(strided.raw, plain.raw);
        // Expected: the exact index of each dimension.
        const spatial = outSize.length;
        const [n, ch] = inSize;
        const inH = spatial === 2 ? inSize[2] : 1, inW = inSize[spatial + 1];
        const outH = spatial === 2 ? outSize[0] : 1, outW = outSize[spatial - 1];
        const steps = plain.plan.steps;
        const hi = spatial === 2 ? nearestIndexForward(inH, outH, steps[0]) : Int32Array.of(0);
        const wi = nearestIndexForward(inW, outW, steps[spatial - 1]);
        const xs = decode(dtype, encode(dtype, x));
        for (let p = 0; p < n * ch; p++) {
          for (let oh = 0; oh < outH; oh++) {
            for (let ow = 0; ow < outW; ow++) {
              const got = plain.values[(p * outH + oh) * outW + ow];
              assert.equal(got, xs[(p * inH + hi[oh]) * inW + wi[ow]]);
            }
          }
        }
      }
    }
  }
});

// ---------------------------------------------------------------------------------------------
// Refusals.

Deno.test("refusals: what each family cannot run, with the status the op returns", () => {
  const near2 = call("nearestExact2d", [1, 1, 2, 2], [4, 4]);
  const near1 = call("nearestExact1d", [1, 1, 2], [4]);
  for (const c of [near1, near2]) {
    assert.match(
      forwardRefusal(c, "910")!,
      /^upsampleNearestExact\w+ is not supported .*ships configs for ascend910b, ascend910_93, ascend310p and Kirin SoCs \(kirinx90, kirin9030\) only.*561000 \(ACLNN_ERR_INNER\) at launch/,
    );
    assert.throws(() => forwardPlan(c, target("910")), TypeError);
    assert.equal(forwardRefusal(c, "a2"), null);
    const bf16 = { ...c, dtype: "bfloat16" as const };
    assert.match(
      forwardRefusal(bf16, "310p")!,
      /^upsampleNearestExact\w+: dtype bfloat16 .*float16 and float32 only.*561000/,
    );
    assert.throws(() => forwardPlan(bf16, target("310p")), TypeError);
    assert.equal(forwardRefusal({ ...c, dtype: "float16" }, "310p"), null);
    assert.equal(forwardRefusal(bf16, "a2"), null);
    assert.equal(forwardRefusal(bf16, "950"), null);
  }
  // 1d with N or C = 0: 161002 on every family (its checks precede the empty shortcut); 2d: success
  // with nothing launched, before any check (so even on the 910).
  for (const g of ["a2", "950", "910", "310p"] as const) {
    assert.match(
      forwardRefusal(call("nearestExact1d", [0, 2, 3], [6]), g)!,
      /^upsampleNearestExact1d: .*161002/,
    );
    assert.throws(() => forwardPlan(call("nearestExact1d", [2, 0, 3], [6]), target(g)), RangeError);
    const empty = forwardPlan(call("nearestExact2d", [0, 2, 3, 3], [6, 6]), target(g));
    assert.deepEqual([empty.kernel, empty.variant], ["", "none"]);
    const emptyBilinear = forwardPlan(bilinear([1, 0, 3, 3], [6, 6]), target(g));
    assert.deepEqual([emptyBilinear.kernel, emptyBilinear.variant], ["", "none"]);
    // bfloat16 bilinear runs everywhere (the TBE route casts it to float32).
    assert.equal(forwardRefusal(bilinear([1, 1, 3, 3], [5, 5], { dtype: "bfloat16" }), g), null);
    assert.match(
      forwardRefusal(bilinear([1, 1, 3, 3], [6, 6], { scales: [-2, 2] }), g)!,
      /^upsampleBilinear2d: .*161002/,
    );
  }
  // A2/A3's Cube kernel skips the H pass (step fl32(1 / 0.9999999) within 1e-6 of 1) although
  // 10 -> 9: the W pass then writes rows of the wrong length (507015 or garbage).
  const skip = bilinear([1, 1, 10, 4], [9, 8], { scales: [0.9999999, 2] });
  assert.ok(bilinearCubeRoute(skip));
  assert.match(
    forwardRefusal(skip, "a2")!,
    /^upsampleBilinear2d: the device fails with 507015 .*skips the H pass/,
  );
  assert.throws(() => forwardPlan(skip, target("a2")), RangeError);
  for (const g of ["950", "910", "310p"] as const) assert.equal(forwardRefusal(skip, g), null);
  // Equal sizes on the skipped dimension are fine: 4 -> 4 with scale 1.2 keeps step 1.
  assert.equal(forwardRefusal(bilinear([1, 1, 4, 4], [4, 8], { scales: [1.2, 2] }), "a2"), null);
});

// ---------------------------------------------------------------------------------------------
// A2/A3 bilinear: the Cube kernel and its routing.

Deno.test("A2/A3 bilinear routing to the Cube kernel, with the fl32(real scale) <= 50 limit (disputed point 1)", () => {
  const route = (c: UpsampleParams): string => kernelOf(c, "a2");
  const cube = "UpsampleBilinear2dNcdhw", tbe = "ResizeBilinearV2_5HD.VBI_FP32";
  assert.equal(route(bilinear([1, 1, 4, 4], [6, 8], { scales: [1.5, 2] })), cube);
  // Both scales 2: the TBE kernel, unless bfloat16.
  assert.equal(route(bilinear([1, 1, 4, 4], [8, 8], { scales: [2, 2] })), tbe);
  assert.equal(route(bilinear([1, 1, 4, 4], [8, 8], { scales: [2, 2], dtype: "bfloat16" })), cube);
  // A scale on one dimension only, or none: the TBE kernel from the sizes.
  assert.equal(route(bilinear([1, 1, 4, 4], [8, 6], { scales: [2, 0] })), tbe);
  assert.equal(route(bilinear([1, 1, 4, 4], [8, 6])), tbe);
  // (int64)(in * scale) must equal out on both dimensions.
  assert.equal(route(bilinear([1, 1, 4, 4], [6, 8], { scales: [1.6, 2] })), cube);
  assert.equal(route(bilinear([1, 1, 4, 4], [6, 8], { scales: [1.4, 2] })), tbe);
  // CheckBilinear2dScales: fl32(GetBilinearScales) <= 50 on both: 1 / 0.01 = 100 goes to the TBE
  // kernel, 1 / 0.02 = 50 to the Cube; with align corners the limit reads (in - 1) / (out - 1).
  const limit = bilinear([1, 1, 100, 100], [1, 1], { scales: [0.01, 0.01] });
  assert.equal(bilinearCubeRoute(limit), false);
  assert.equal(route(limit), tbe);
  assert.equal(route(bilinear([1, 1, 100, 100], [2, 2], { scales: [0.02, 0.02] })), cube);
  assert.equal(
    route(bilinear([1, 1, 100, 100], [2, 2], { scales: [0.02, 0.02], alignCorners: true })),
    tbe,
  );
  // Scales within 1e-9 of 1 with sizes that differ: TBE, but bfloat16 takes the Cube from the sizes.
  const near1 = bilinear([1, 1, 10, 10], [9, 9], { scales: [1 - 1e-10, 1 - 1e-10] });
  assert.equal(route(near1), tbe);
  const bf = forwardPlan({ ...near1, dtype: "bfloat16" }, target("a2"));
  assert.equal(bf.kernel, cube);
  assert.deepEqual(bf.steps, [sizeStep(10, 9), sizeStep(10, 9)]);
  // Equal sizes on the Cube route return self: a bit copy whatever the scales.
  const eq = run(
    bilinear([1, 1, 4, 4], [4, 4], { scales: [1.2, 1.2] }),
    new Array(16).fill(-0),
    target("a2"),
  );
  assert.deepEqual([eq.plan.kernel, eq.plan.variant], ["ViewCopy", "copy"]);
  assert.ok(Object.is(eq.values[5], -0));
  // W == 1, H != 1: the kernel on the transpose, H pass first.
  const hwnc = forwardPlan(bilinear([1, 1, 5, 1], [9, 3], { scales: [1.8, 3] }), target("a2"));
  assert.deepEqual([hwnc.kernel, hwnc.passOrder], ["UpsampleBilinear2dNcdhw.HWNC", "hw"]);
  // The Cube's steps: the l0op's fl32(1 / scale), 1 for equal sizes, (in - 1) / (out - 1) aligned.
  const plan = forwardPlan(bilinear([1, 1, 3, 4], [3, 10], { scales: [1.2, 2.5] }), target("a2"));
  assert.deepEqual(plan.steps, [1, f(1 / 2.5)]);
  const aligned = forwardPlan(
    bilinear([1, 1, 3, 4], [6, 10], { scales: [2, 2.5], alignCorners: true }),
    target("a2"),
  );
  assert.deepEqual(aligned.steps, [f(2 / 5), f(3 / 9)]);
});

Deno.test("A2/A3 Cube kernel: hand-computed passes, and its centre's contraction (target.fma)", () => {
  // bfloat16 2x2 -> 4x4, scales 2: the Cube route; steps 0.5, weights 0, .25, .75 and the last
  // cell's weight 1 (i0 = min(trunc(1.25), 1) = 1 = i1).
  const r = run(
    bilinear([1, 1, 2, 2], [4, 4], { scales: [2, 2], dtype: "bfloat16" }),
    [0, 1, 2, 3],
    target("a2"),
  );
  assert.equal(r.plan.kernel, "UpsampleBilinear2dNcdhw");
  assert.deepEqual(Array.from(r.values), [
    0,
    0.25,
    0.75,
    1,
    0.5,
    0.75,
    1.25,
    1.5,
    1.5,
    1.75,
    2.25,
    2.5,
    2,
    2.25,
    2.75,
    3,
  ]);
  // 2 -> 6 with scale 3 (H 1 -> 1 with scale 1.5): output 1's centre fl32(1/3) * 1.5 - 0.5 is 0
  // rounded twice, 1.49e-8 fused: [1, 1e8] gives 1 or 2.4901161.
  const c = bilinear([1, 1, 1, 2], [1, 6], { scales: [1.5, 3] });
  const fused = run(c, [1, 1e8], target("a2", { fma: true }));
  const twice = run(c, [1, 1e8], target("a2", { fma: false }));
  assert.equal(fused.plan.fma, true);
  assert.equal(twice.values[1], 1);
  assert.equal(cubeTaps(2, 6, f(1 / 3), false, true).l1[1], 2 ** -26);
  assert.equal(cubeTaps(2, 6, f(1 / 3), false, false).l1[1], 0);
  assert.equal(fused.values[1], f(1 + f(2 ** -26 * 1e8))); // 2.4901161
  // The HWNC route gives the same values as the direct one (its W pass is the identity on W = 1).
  const x = [1, 2.5, -3, 4, 0.125];
  const h = run(bilinear([1, 1, 5, 1], [9, 3], { scales: [1.8, 3] }), x, target("a2"));
  const taps = cubeTaps(5, 9, f(1 / 1.8), false, true);
  for (let o = 0; o < 9; o++) {
    const v = taps.i0[o] === taps.i1[o]
      ? x[taps.i0[o]]
      : f(f(taps.l0[o] * x[taps.i0[o]]) + f(taps.l1[o] * x[taps.i1[o]]));
    for (let w = 0; w < 3; w++) assert.equal(h.values[o * 3 + w], v);
  }
});

// ---------------------------------------------------------------------------------------------
// The TBE ResizeBilinearV2 (A2/A3 fallback, 910, 310P).

Deno.test("TBE ResizeBilinearV2: the mode per family and dtype (tiling keys 999999, 100110, 100000)", () => {
  const up = bilinear([1, 2, 4, 4], [7, 7]);
  const name = (m: string): string => `ResizeBilinearV2_5HD.${m}`;
  assert.equal(kernelOf(up, "a2"), name("VBI_FP32"));
  assert.equal(kernelOf(up, "910"), name("L1"));
  assert.equal(kernelOf(up, "310p"), name("L1"));
  assert.equal(kernelOf({ ...up, dtype: "bfloat16" }, "310p"), name("L1"));
  assert.equal(kernelOf({ ...up, dtype: "float16" }, "310p"), name("VBI_FP16"));
  assert.equal(kernelOf({ ...up, dtype: "float16" }, "910"), name("L1"));
  // N * ceil(C / 16) >= 32 with every size < 64: the NC lerps, on every family.
  const nc = bilinear([2, 256, 4, 4], [7, 7]);
  for (const g of ["a2", "910", "310p"] as const) assert.equal(kernelOf(nc, g), name("NC"));
  assert.equal(kernelOf({ ...nc, outputSize: [7, 64] }, "910"), name("L1"));
  assert.equal(kernelOf({ ...nc, inputSize: [2, 240, 4, 4] }, "910"), name("L1"));
  // Equal sizes copy (scales ignored), a 1x1 image is broadcast.
  const copy = run(
    bilinear([1, 1, 2, 2], [2, 2], { scales: [1.2, 1.2] }),
    [-0, 1, 2, 3],
    target("910"),
  );
  assert.deepEqual([copy.plan.kernel, copy.plan.variant], [name("NO_BILINEAR"), "copy"]);
  assert.ok(Object.is(copy.values[0], -0));
  const b = run(bilinear([1, 2, 1, 1], [2, 3]), [5, -6], target("310p"));
  assert.deepEqual([b.plan.kernel, b.plan.variant], [name("NO_BILINEAR"), "broadcast"]);
  assert.deepEqual(Array.from(b.values), [5, 5, 5, 5, 5, 5, -6, -6, -6, -6, -6, -6]);
  // Sizes only: a scale changes nothing (the op_api passes none).
  const s = forwardPlan(bilinear([1, 1, 4, 4], [6, 6], { scales: [1.7, 1.7] }), target("910"));
  assert.deepEqual(s.steps, [tbeStep(4, 6, false), tbeStep(4, 6, false)]);
});

Deno.test("TBE lerps and weighted sums by hand; the clamped weight of vbi (disputed point 3)", () => {
  // L1 (910), 1x2 -> 1x4: TensorFlow's lerps from the sizes.
  const l1 = run(bilinear([1, 1, 1, 2], [1, 4]), [1, 3], target("910"));
  assert.equal(l1.plan.variant, "tbe-l1");
  assert.deepEqual(Array.from(l1.values), [1, 1.5, 2.5, 3]);
  // 2 -> 3: output 2's source is fl32(fl32(2.5 * fl32(2/3)) - 0.5) = 1.1666667 > in - 1 = 1.
  // resize_bilinear_v2.py's calcu_out_in_idx clamps it (vmin with in - 1) wherever `max_idx_ub`
  // is passed: W in every mode, H in the NC and vbi modes: weight 0 there. The L1 mode's H call
  // passes none: weight src - floor(src), where the bottom row is the top row.
  const raw = tbeAxis(2, 3, tbeStep(2, 3, false), false, false);
  const clamped = tbeAxis(2, 3, tbeStep(2, 3, false), false, true);
  assert.deepEqual([raw.lo[2], raw.hi[2], clamped.weight[2]], [1, 1, 0]);
  assert.equal(raw.weight[2], f(f(f(2.5 * f(2 / 3)) - 0.5) - 1));
  // vbi float32 (A2/A3 fallback): with the clamped weight the last column is exactly x; the
  // unclamped weight would give fl32(fl32(x * (1 - r)) + fl32(x * r)) != x for x = 6.1.
  const x = f(6.1), r = raw.weight[2];
  assert.notEqual(f(f(x * f(1 - r)) + f(x * r)), x);
  const vbi = run(bilinear([1, 1, 1, 2], [1, 3]), [1, x], target("a2"));
  assert.equal(vbi.plan.kernel, "ResizeBilinearV2_5HD.VBI_FP32");
  assert.equal(vbi.values[2], x);
  // The L1 mode's unclamped H weight changes nothing for finite values (bottom == top).
  const rows = run(bilinear([1, 1, 2, 1], [3, 2]), [3, x], target("910"));
  assert.deepEqual([rows.values[4], rows.values[5]], [x, x]);
  // Lerp and weighted sum are different arithmetic: the same call differs in the last bits.
  const random = prng(5);
  const c = bilinear([1, 1, 5, 7], [11, 13]);
  const xs = Array.from({ length: 35 }, () => f(random() * 10 - 5));
  const a = run(c, xs, target("a2")).values, b = run(c, xs, target("910")).values;
  assert.ok(a.some((v, k) => v !== b[k]));
  // Both bit for bit as the source states them (rounded float32 vector steps).
  const step = [tbeStep(5, 11, false), tbeStep(7, 13, false)];
  const yRaw = tbeAxis(5, 11, step[0], false, false), y = tbeAxis(5, 11, step[0], false, true);
  const xAxis = tbeAxis(7, 13, step[1], false, true);
  const at = (hh: number, ww: number): number => xs[hh * 7 + ww];
  for (let oh = 0; oh < 11; oh++) {
    for (let ow = 0; ow < 13; ow++) {
      const [t, bo, l, ri] = [yRaw.lo[oh], yRaw.hi[oh], xAxis.lo[ow], xAxis.hi[ow]];
      const yl = yRaw.weight[oh], xl = xAxis.weight[ow];
      const left = f(f(f(at(bo, l) - at(t, l)) * yl) + at(t, l));
      const right = f(f(f(at(bo, ri) - at(t, ri)) * yl) + at(t, ri));
      assert.equal(b[oh * 13 + ow], f(f(f(right - left) * xl) + left));
      const yc = y.weight[oh], y1 = f(1 - yc), x1 = f(1 - xl);
      let acc = f(at(t, l) * f(x1 * y1));
      acc = f(acc + f(at(t, ri) * f(xl * y1)));
      acc = f(acc + f(at(bo, l) * f(x1 * yc)));
      acc = f(acc + f(at(bo, ri) * f(xl * yc)));
      assert.equal(a[oh * 13 + ow], acc);
    }
  }
  // NC: the W step is L' * 1 where the right column is the left one (row 0: L' = the top row).
  const ncValues = Array.from({ length: 2 * 256 * 4 }, (_, k) => f(k * 0.37 - 100));
  const nc = run(bilinear([2, 256, 2, 2], [3, 3]), ncValues, target("910"));
  assert.equal(nc.plan.variant, "tbe-nc");
  assert.equal(nc.values[2], ncValues[1]);
});

Deno.test("310P vbi float16: weights rounded to float16 and a float16 accumulator", () => {
  const c = bilinear([1, 1, 2, 2], [3, 3], { dtype: "float16" });
  const x = [1.5, -2.25, 3.125, 0.375];
  const r = run(c, x, target("310p"));
  assert.equal(r.plan.variant, "tbe-vbi16");
  const h = Math.f16round;
  const H = tbeAxis(2, 3, tbeStep(2, 3, false), false, true);
  const W = H;
  for (let oh = 0; oh < 3; oh++) {
    for (let ow = 0; ow < 3; ow++) {
      const yl = H.weight[oh], xl = W.weight[ow];
      const w = [f(f(1 - xl) * f(1 - yl)), f(xl * f(1 - yl)), f(f(1 - xl) * yl), f(xl * yl)].map(h);
      const v = [
        x[H.lo[oh] * 2 + W.lo[ow]],
        x[H.lo[oh] * 2 + W.hi[ow]],
        x[H.hi[oh] * 2 + W.lo[ow]],
        x[H.hi[oh] * 2 + W.hi[ow]],
      ];
      let acc = h(v[0] * w[0]);
      for (let k = 1; k < 4; k++) acc = h(acc + h(v[k] * w[k]));
      assert.equal(r.values[oh * 3 + ow], acc);
    }
  }
  // fmaF16 rounds once: (1 + 2^-10)^2 - (1 + 2^-9) is 2^-20, rounded twice 0.
  assert.equal(fmaF16(1 + 2 ** -10, 1 + 2 ** -10, -(1 + 2 ** -9)), 2 ** -20);
  assert.equal(h(h((1 + 2 ** -10) ** 2) - (1 + 2 ** -9)), 0);
});

// ---------------------------------------------------------------------------------------------
// Ascend 950 bilinear.

Deno.test("950 ResizeBilinearV2With4d: copies, the scales as 1.0f / fl32(scale), SIMT_HW's border", () => {
  const t = target("950");
  const name = (k: string): string => `ResizeBilinearV2With4d.${k}`;
  const eq = run(bilinear([1, 1, 2, 2], [2, 2], { scales: [1.3, 1.3] }), [-0, 1, 2, 3], t);
  assert.deepEqual([eq.plan.kernel, eq.plan.variant], [name("ALL_COPY"), "copy"]);
  assert.ok(Object.is(eq.values[0], -0));
  assert.equal(kernelOf(bilinear([1, 1, 1, 1], [8, 8]), "950"), name("NCHW_BROADCAST"));
  assert.equal(
    kernelOf(bilinear([1, 1, 1, 1], [2, 2], { dtype: "float16" }), "950"),
    name("SIMT_NCHW"),
  );
  // Align corners: a 1x1 output (or image) is a copy of the cell (0, 0).
  const corner = run(bilinear([1, 1, 3, 3], [1, 1], { alignCorners: true }), [
    7,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
  ], t);
  assert.deepEqual([corner.plan.variant, corner.values[0]], ["broadcast", 7]);
  // The scales are used (A2/A3's TBE fallback would take in / out): 4 -> 6 with scale 1.7.
  const s = forwardPlan(bilinear([1, 1, 4, 4], [6, 6], { scales: [1.7, 0] }), t);
  assert.deepEqual(s.steps, [f(1 / f(1.7)), sizeStep(4, 6)]);
  // SIMT_HW (out H * W >= 72 * 1024 on Ascend950PR_9599): no clamp at 0, so output 0 of 2 -> 272
  // has src = -0.496 and weight d = src - floor(src) = 0.504 on the same cell.
  const hw = forwardPlan(bilinear([1, 1, 2, 2], [272, 272]), t);
  assert.deepEqual([hw.kernel, hw.variant], [name("SIMT_HW"), "simt950-hw"]);
  assert.equal(
    kernelOf(bilinear([1, 1, 2, 2], [272, 272]), "950", { soc: "Ascend950PR_9589" }),
    name("SIMT_HW"),
  );
  assert.equal(kernelOf(bilinear([1, 1, 2, 2], [200, 200]), "950"), name("SIMT_NCHW"));
  const axis = simt950Axis(2, 272, sizeStep(2, 272), false, false, true);
  assert.deepEqual([axis.lo[0], axis.hi[0]], [0, 0]);
  assert.ok(axis.d[0] > 0.5 && axis.d[0] < 0.51);
  assert.equal(simt950Axis(2, 272, sizeStep(2, 272), false, true, true).d[0], 0);
});

// ---------------------------------------------------------------------------------------------
// Each arithmetic variant against a float64 evaluation of its own formula.

/** One dimension's taps and weights as the variant's formula states them. */
interface Taps {
  lo: Int32Array;
  hi: Int32Array;
  /** Weight of `hi` (that of `lo` is 1 - it). */
  w: Float64Array;
}

function tapsOf(plan: ForwardPlan, d: number, inSize: number, outSize: number): Taps {
  const step = plan.steps[d], align = plan.alignCorners;
  if (plan.variant === "cube") {
    const t = cubeTaps(inSize, outSize, step, align, plan.fma);
    return { lo: t.i0, hi: t.i1, w: Float64Array.from(t.l1) };
  }
  if (plan.variant === "simt950" || plan.variant === "simt950-hw") {
    const t = simt950Axis(inSize, outSize, step, align, plan.variant === "simt950", plan.fma);
    return { lo: t.lo, hi: t.hi, w: Float64Array.from(t.d) };
  }
  const t = tbeAxis(inSize, outSize, step, align, d === 1 || plan.variant !== "tbe-l1");
  return { lo: t.lo, hi: t.hi, w: Float64Array.from(t.weight) };
}

function ulp(dtype: DType, v: number): number {
  const p = dtype === "float32" ? 24 : dtype === "float16" ? 11 : 8;
  const min = dtype === "float16" ? 2 ** -14 : 2 ** -126;
  return 2 ** (Math.floor(Math.log2(Math.max(Math.abs(v), min))) - p + 1);
}

Deno.test("every bilinear variant within float32 rounding of a float64 evaluation of its formula", () => {
  const random = prng(2024);
  const cases: {
    g: AscendGeneration;
    c: UpsampleParams;
    extra?: Partial<ForwardTarget>;
    variant: string;
  }[] = [];
  const shapes: [number[], number[], number[]][] = [
    [[1, 2, 5, 7], [9, 4], [0, 0]],
    [[2, 1, 3, 4], [6, 10], [2, 2.5]],
    [[1, 1, 6, 3], [4, 11], [0, 0]],
    [[1, 3, 1, 5], [3, 5], [0, 0]],
  ];
  for (const [i, o, scales] of shapes) {
    for (const alignCorners of [false, true]) {
      for (const dtype of ["float32", "float16", "bfloat16"] as const) {
        const c = bilinear(i, o, { scales, alignCorners, dtype });
        cases.push({ g: "910", c, variant: "tbe-l1" });
        cases.push({ g: "950", c, extra: { fma: true }, variant: "simt950" });
        cases.push({ g: "950", c, extra: { fma: false }, variant: "simt950" });
        cases.push({ g: "a2", c, extra: { tbeFma: true }, variant: "" });
        cases.push({ g: "a2", c, extra: { tbeFma: false, fma: false }, variant: "" });
        cases.push({ g: "a2", c: { ...c, dtype: "bfloat16", scales: [2, 2] }, variant: "" });
        if (dtype === "float16") {
          cases.push({ g: "310p", c, extra: { tbeFma: true }, variant: "tbe-vbi16" });
          cases.push({ g: "310p", c, variant: "tbe-vbi16" });
        }
      }
    }
  }
  const nc = bilinear([2, 256, 3, 4], [5, 2]);
  cases.push({ g: "310p", c: nc, variant: "tbe-nc" }, {
    g: "a2",
    c: { ...nc, dtype: "float16" },
    variant: "tbe-nc",
  });
  cases.push({ g: "950", c: bilinear([1, 1, 3, 2], [272, 272]), variant: "simt950-hw" });
  const seen = new Set<string>();
  for (const { g, c, extra, variant } of cases) {
    if (g === "a2" && c.scales[0] === 2 && !bilinearCubeRoute(c)) continue;
    const x = Array.from(
      { length: c.inputSize.reduce((a, b) => a * b, 1) },
      () => random() * 8 - 4,
    );
    const r = run(c, x, target(g, extra), random() < 0.5);
    const plan = r.plan;
    if (variant !== "") assert.equal(plan.variant, variant, `${g} ${JSON.stringify(c)}`);
    seen.add(plan.variant);
    if (
      !["cube", "tbe-l1", "tbe-nc", "tbe-vbi32", "tbe-vbi16", "simt950", "simt950-hw"].includes(
        plan.variant,
      )
    ) continue;
    const xs = decode(c.dtype, encode(c.dtype, x));
    const [n, ch, inH, inW] = c.inputSize;
    const [outH, outW] = c.outputSize;
    const th = tapsOf(plan, 0, inH, outH), tw = tapsOf(plan, 1, inW, outW);
    // vbi float16 rounds weights, products and sums to float16; the rest rounds in float32.
    const unit = plan.variant === "tbe-vbi16" ? 2 ** -11 : U;
    for (let p = 0; p < n * ch; p++) {
      for (let oh = 0; oh < outH; oh++) {
        for (let ow = 0; ow < outW; ow++) {
          const at = (h: number, w: number): number => xs[(p * inH + h) * inW + w];
          const wy = th.w[oh], wx = tw.w[ow];
          const terms = [
            (1 - wy) * (1 - wx) * at(th.lo[oh], tw.lo[ow]),
            (1 - wy) * wx * at(th.lo[oh], tw.hi[ow]),
            wy * (1 - wx) * at(th.hi[oh], tw.lo[ow]),
            wy * wx * at(th.hi[oh], tw.hi[ow]),
          ];
          const exact = terms.reduce((a, b) => a + b, 0);
          const size = Math.abs(at(th.lo[oh], tw.lo[ow])) + Math.abs(at(th.lo[oh], tw.hi[ow])) +
            Math.abs(at(th.hi[oh], tw.lo[ow])) + Math.abs(at(th.hi[oh], tw.hi[ow]));
          const got = r.values[(p * outH + oh) * outW + ow];
          const bound = 8 * unit * size + ulp(c.dtype, exact);
          assert.ok(
            Math.abs(got - exact) <= bound,
            `${g} ${plan.kernel} ${
              JSON.stringify(c)
            } at ${p},${oh},${ow}: ${got} vs ${exact} (bound ${bound})`,
          );
        }
      }
    }
  }
  for (const v of ["cube", "tbe-l1", "tbe-nc", "tbe-vbi32", "tbe-vbi16", "simt950", "simt950-hw"]) {
    assert.ok(seen.has(v), `variant ${v} covered`);
  }
});

Deno.test("the contraction switches reach their kernels: Cube and 950 follow fma, vbi tbeFma", () => {
  const c = bilinear([1, 1, 4, 4], [6, 6], { scales: [1.5, 1.5] });
  assert.equal(forwardPlan(c, target("a2", { fma: false })).fma, false);
  assert.equal(forwardPlan(c, target("a2", { fma: true })).fma, true);
  assert.equal(
    forwardPlan(bilinear([1, 1, 4, 4], [6, 6]), target("a2", { tbeFma: true })).fma,
    true,
  );
  assert.equal(forwardPlan(bilinear([1, 1, 4, 4], [6, 6]), target("a2", { fma: true })).fma, false);
  assert.equal(
    forwardPlan(bilinear([1, 1, 4, 4], [6, 6]), target("910", { tbeFma: true })).fma,
    false,
  );
  assert.equal(
    forwardPlan(bilinear([1, 1, 4, 4], [6, 6]), target("950", { fma: false })).fma,
    false,
  );
  // The 950 SIMT coordinate (o + 0.5) * fl32(1/3) - 0.5 at o = 1 is 0 rounded twice.
  const t = bilinear([1, 1, 1, 2], [1, 6]);
  const fused = run(t, [1, 1e8], target("950", { fma: true })).values[1];
  const twice = run(t, [1, 1e8], target("950", { fma: false })).values[1];
  assert.equal(twice, 1);
  assert.ok(fused > 2.4 && fused < 2.5);
});
