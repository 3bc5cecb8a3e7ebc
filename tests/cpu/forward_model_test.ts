// Self-tests of the independent model of the FORWARD kernels (tests/support/forward_model.ts): the
// host code's routing per family, small cases worked out by hand from the ops-cv / TBE sources, the
// FMA switch, each family's model against a float64 evaluation of its own stated formula, the
// refusals, and the adjoint property against the independent BACKWARD models (device_model.ts for
// A2/A3, ascend950_model.ts for the 950, resize5hd_model.ts for the 910 and 310P), with the calls
// where forward and backward disagree by construction listed and asserted to disagree.

import assert from "node:assert/strict";
import {
  ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
  ACLNN_ERR_PARAM_INVALID,
  type Family,
  fmaTo,
  type ForwardCall,
  type ForwardDtype,
  forwardKernel,
  forwardModel,
  forwardRefusal,
  nearestIndex,
} from "../support/forward_model.ts";
import { deviceCaseOf, deviceModel } from "../support/device_model.ts";
import { arch35Model, fmaf, roundTo, ulpOf } from "../support/ascend950_model.ts";
import { resize5hdModel, SOC_5HD } from "../support/resize5hd_model.ts";

const f = Math.fround;
const U = 2 ** -24;
const FAMILIES: readonly Family[] = ["a2", "950", "910", "310p"];

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

/** Values of magnitude in [0.5, 1), both signs, representable in `dtype`. */
function values(length: number, rand: () => number, dtype: ForwardDtype = "float32"): Float32Array {
  return Float32Array.from(
    { length },
    () => roundTo(dtype, (rand() < 0.5 ? -1 : 1) * (0.5 + rand() / 2)),
  );
}

function nearest1d(
  family: Family,
  inL: number,
  outL: number,
  scale = 0,
  dtype: ForwardDtype = "float32",
): ForwardCall {
  return {
    op: "nearestExact1d",
    family,
    dtype,
    inputSize: [1, 1, inL],
    outputSize: [outL],
    scales: [scale],
    alignCorners: false,
  };
}

function nearest2d(
  family: Family,
  inHW: readonly [number, number],
  outHW: readonly [number, number],
  scales: readonly [number, number] = [0, 0],
  nc: readonly [number, number] = [1, 1],
  dtype: ForwardDtype = "float32",
): ForwardCall {
  return {
    op: "nearestExact2d",
    family,
    dtype,
    inputSize: [...nc, ...inHW],
    outputSize: [...outHW],
    scales: [...scales],
    alignCorners: false,
  };
}

function bilinear(
  family: Family,
  inHW: readonly [number, number],
  outHW: readonly [number, number],
  extra: {
    scales?: readonly [number, number];
    align?: boolean;
    nc?: readonly [number, number];
    dtype?: ForwardDtype;
  } = {},
): ForwardCall {
  return {
    op: "bilinear2d",
    family,
    dtype: extra.dtype ?? "float32",
    inputSize: [...(extra.nc ?? [1, 1]), ...inHW],
    outputSize: [...outHW],
    scales: [...(extra.scales ?? [0, 0])],
    alignCorners: extra.align ?? false,
  };
}

function run(call: ForwardCall, x: Float32Array, fma = false): Float32Array {
  return forwardModel(x, call, { fma }).values;
}

function inCount(call: ForwardCall): number {
  return call.inputSize.reduce((a, b) => a * b, 1);
}

function outCount(call: ForwardCall): number {
  return call.inputSize[0] * call.inputSize[1] * call.outputSize.reduce((a, b) => a * b, 1);
}

// -------------------------------------------------------------------------------------------------

Deno.test("forward model: the host code's routing per family", async (t) => {
  await t.step("A2/A3 bilinear: its own kernel only with both scales given and fitting", () => {
    const k = (c: ForwardCall): string => forwardKernel(c);
    // No scale (aclnn's default): |scale| < 1e-12 fails CheckBilinear2dScales -> the TBE kernel.
    assert.equal(k(bilinear("a2", [4, 5], [7, 9])), "ResizeBilinearV2.100000.vbi_fp32");
    assert.equal(k(bilinear("a2", [4, 6], [10, 9], { scales: [2.5, 1.5] })), "UpsampleBilinear2d");
    // A scale on one dimension only: also the TBE kernel (sizes), like the backward's fallback.
    assert.equal(
      k(bilinear("a2", [4, 4], [8, 6], { scales: [2, 0] })),
      "ResizeBilinearV2.100000.vbi_fp32",
    );
    // Both scales 2: the TBE kernel for float16/float32, the own kernel for bfloat16.
    assert.equal(
      k(bilinear("a2", [4, 4], [8, 8], { scales: [2, 2] })),
      "ResizeBilinearV2.100000.vbi_fp32",
    );
    assert.equal(
      k(bilinear("a2", [4, 4], [8, 8], { scales: [2, 2], dtype: "bfloat16" })),
      "UpsampleBilinear2d",
    );
    // (int64)(in * scale) != out: the TBE kernel.
    assert.equal(
      k(bilinear("a2", [4, 4], [10, 10], { scales: [2, 2.5] })),
      "ResizeBilinearV2.100000.vbi_fp32",
    );
    // 1 / scale above 50 on one dimension: the TBE kernel.
    assert.equal(
      k(bilinear("a2", [131, 4], [2, 8], { scales: [1 / 65, 2] })),
      "ResizeBilinearV2.100000.vbi_fp32",
    );
    // Equal sizes with fitting scales: GoUpsampleBilinear2DAICORE returns self.
    assert.equal(k(bilinear("a2", [3, 3], [3, 3], { scales: [1.3, 1.3] })), "ViewCopy");
    // W = 1 and H != 1: the kernel runs on an H/W transpose.
    assert.equal(
      k(bilinear("a2", [4, 1], [8, 3], { scales: [2, 3] })),
      "UpsampleBilinear2d.transposed",
    );
    // TBE keys: equal sizes or a 1x1 input 999999; all sizes < 64 and N*C1 >= 32: 100110.
    assert.equal(k(bilinear("a2", [4, 4], [4, 4])), "ResizeBilinearV2.999999");
    assert.equal(k(bilinear("a2", [1, 1], [5, 3])), "ResizeBilinearV2.999999");
    assert.equal(k(bilinear("a2", [5, 6], [9, 7], { nc: [32, 1] })), "ResizeBilinearV2.100110");
    assert.equal(
      k(bilinear("a2", [5, 6], [9, 7], { nc: [31, 16] })),
      "ResizeBilinearV2.100000.vbi_fp32",
    );
    assert.equal(k(bilinear("a2", [5, 6], [9, 7], { nc: [16, 17] })), "ResizeBilinearV2.100110");
  });

  await t.step("910 / 310P bilinear: the TBE kernel, vbi float16 on the 310P only", () => {
    assert.equal(forwardKernel(bilinear("910", [4, 5], [7, 9])), "ResizeBilinearV2.100000.l1");
    assert.equal(
      forwardKernel(bilinear("910", [4, 5], [7, 9], { dtype: "float16" })),
      "ResizeBilinearV2.100000.l1",
    );
    assert.equal(
      forwardKernel(bilinear("310p", [4, 5], [7, 9], { dtype: "float16" })),
      "ResizeBilinearV2.100000.vbi_fp16",
    );
    assert.equal(forwardKernel(bilinear("310p", [4, 5], [7, 9])), "ResizeBilinearV2.100000.l1");
    assert.equal(
      forwardKernel(bilinear("310p", [4, 5], [7, 9], { dtype: "bfloat16" })),
      "ResizeBilinearV2.100000.l1",
    );
    // Scales are never passed to the TBE kernel.
    assert.equal(
      forwardKernel(bilinear("910", [3, 3], [3, 3], { scales: [1.3, 1.3] })),
      "ResizeBilinearV2.999999",
    );
  });

  await t.step("950 bilinear: ALL_COPY, NCHW_BROADCAST, SIMT_NCHW, SIMT_HW", () => {
    assert.equal(
      forwardKernel(bilinear("950", [3, 3], [3, 3], { scales: [1.3, 1.3] })),
      "ResizeBilinearV2.ALL_COPY",
    );
    // A 1x1 input: the broadcast from 128 output bytes (8x8 float32: 256), else SIMT (3x3: 36).
    assert.equal(forwardKernel(bilinear("950", [1, 1], [8, 8])), "ResizeBilinearV2.NCHW_BROADCAST");
    assert.equal(forwardKernel(bilinear("950", [1, 1], [3, 3])), "ResizeBilinearV2.SIMT_NCHW");
    assert.equal(forwardKernel(bilinear("950", [4, 5], [7, 9])), "ResizeBilinearV2.SIMT_NCHW");
    // SIMT_HW from 72 * 1024 output pixels.
    assert.equal(forwardKernel(bilinear("950", [2, 2], [256, 288])), "ResizeBilinearV2.SIMT_HW");
    assert.equal(forwardKernel(bilinear("950", [2, 2], [256, 287])), "ResizeBilinearV2.SIMT_NCHW");
  });

  await t.step("nearest-exact: UpsampleNearest keys (A2/A3, 310P), the 950's schedules", () => {
    assert.equal(forwardKernel(nearest2d("a2", [3, 4], [7, 9])), "UpsampleNearest.1001");
    assert.equal(forwardKernel(nearest2d("310p", [1, 4], [7, 9])), "UpsampleNearest.1002");
    assert.equal(
      forwardKernel(nearest2d("a2", [1, 4], [7, 9], [0, 0], [1, 8192])),
      "UpsampleNearest.1000",
    );
    // The 1d op (NLC, H = 1) never takes 1001; 1002 needs the W scale (input per output) below 2.
    assert.equal(forwardKernel(nearest1d("a2", 5, 13)), "UpsampleNearest.1002");
    assert.equal(forwardKernel(nearest1d("a2", 13, 5)), "UpsampleNearest.1000");
    assert.equal(forwardKernel(nearest1d("a2", 3, 2)), "UpsampleNearest.1002");
    assert.equal(
      forwardKernel(nearest2d("950", [3, 4], [7, 9])),
      "ResizeNearestNeighborV2.SIMT_COMMON",
    );
    assert.equal(
      forwardKernel(nearest2d("950", [3, 4], [3, 4], [2, 2])),
      "ResizeNearestNeighborV2.SIMT_INPUT_EQ_OUTPUT",
    );
    assert.equal(
      forwardKernel(nearest1d("950", 1, 7)),
      "ResizeNearestNeighborV2.SIMT_INPUT_EQ_ONE",
    );
    // Enough planes (ceil(NC / ceil(NC / 72)) / 72 >= 0.67), upsampling, no scales: the gather.
    assert.equal(
      forwardKernel(nearest2d("950", [4, 4], [8, 8], [0, 0], [1, 49])),
      "ResizeNearestNeighborV2.GATHER_ALL_HW",
    );
    assert.equal(
      forwardKernel(nearest2d("950", [4, 4], [8, 8], [0, 0], [1, 48])),
      "ResizeNearestNeighborV2.SIMT_COMMON",
    );
    assert.equal(
      forwardKernel(nearest2d("950", [4, 4], [8, 8], [2, 2], [1, 49])),
      "ResizeNearestNeighborV2.SIMT_COMMON",
    );
    assert.equal(
      forwardKernel(nearest2d("950", [100, 100], [150, 150], [0, 0], [1, 64])),
      "ResizeNearestNeighborV2.GATHER_CUT_H",
    );
    // IsCaseNearestExact3d: N*C = 17, H, W in [740, 750], H x7.5-8, W x6.5-7.
    assert.equal(
      forwardKernel(nearest2d("950", [745, 745], [5800, 5000], [0, 0], [17, 1])),
      "UpsampleNearestExact3d",
    );
  });
});

// -------------------------------------------------------------------------------------------------

Deno.test("forward model: small cases worked out by hand", async (t) => {
  await t.step("a nearest-exact tie: 1d 2 -> 41, output 20 (20.5 * 2/41 = 1)", () => {
    // fl32(2/41) = 0.048780486; fl32(20.5 * 0.048780486) = 0.99999994: floor 0, not 1.
    const want = [...Array(21).fill(1), ...Array(20).fill(2)];
    for (const family of ["a2", "950", "310p"] as const) {
      assert.deepEqual([...run(nearest1d(family, 2, 41), Float32Array.of(1, 2))], want, family);
    }
  });

  await t.step("a tie the families break apart: 1d 16 -> 17 with scale 1.1, output 16", () => {
    // A2/A3: (float)(1.0 / 1.1) = 0.90909094, 16.5 * that rounds to 15 -> input 15.
    // 950: 1.0f / (float)1.1 = 0.90909088, 16.5 * that = 14.999999 -> input 14.
    assert.equal(f(1 / 1.1), 0.9090909361839294);
    assert.equal(f(1 / f(1.1)), 0.9090908765792847);
    const x = Float32Array.from({ length: 16 }, (_, i) => i);
    assert.equal(run(nearest1d("a2", 16, 17, 1.1), x)[16], 15);
    assert.equal(run(nearest1d("310p", 16, 17, 1.1), x)[16], 15);
    assert.equal(run(nearest1d("950", 16, 17, 1.1), x)[16], 14);
    assert.equal(run(nearest1d("950", 16, 17, 1.1), x)[15], 14);
  });

  await t.step("nearest-exact equal sizes with a scale: A2 2d ignores it, the 950 uses it", () => {
    const x = Float32Array.from({ length: 9 }, (_, i) => i); // rows [0 1 2], [3 4 5], [6 7 8]
    // A2/A3: H 3 -> 3 is the identity (ComputeScaleValue), W scale 2 -> 1/2: columns 0 0 1 1 2 2.
    const a2 = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8];
    assert.deepEqual([...run(nearest2d("a2", [3, 3], [3, 6], [2, 2]), x)], a2);
    // 950: H uses 1/2 too: rows floor(0.25), floor(0.75), floor(1.25) = 0, 0, 1.
    const n950 = [0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5];
    assert.deepEqual([...run(nearest2d("950", [3, 3], [3, 6], [2, 2]), x)], n950);
    // Both sizes equal: the 950 copies (SIMT_INPUT_EQ_OUTPUT), whatever the scales.
    assert.deepEqual([...run(nearest2d("950", [3, 3], [3, 3], [2, 2]), x)], [...x]);
    // The A2 1d op has no equal-size shortcut: 4 -> 4 with scale 2 samples 0 0 1 1.
    assert.deepEqual([...run(nearest1d("a2", 4, 4, 2), Float32Array.of(5, 6, 7, 8))], [5, 5, 6, 6]);
    assert.deepEqual([...run(nearest1d("950", 4, 4, 2), Float32Array.of(5, 6, 7, 8))], [
      5,
      6,
      7,
      8,
    ]);
  });

  await t.step("an explicit scale that disagrees with in/out: 1d 4 -> 10, scale 2", () => {
    // s = 1/2: floor((o + 0.5) / 2) = 0 0 1 1 2 2 3 3 4 4 -> clamped at 3 for outputs 8, 9.
    for (const family of ["a2", "950", "310p"] as const) {
      assert.deepEqual(
        [...run(nearest1d(family, 4, 10, 2), Float32Array.of(0, 1, 2, 3))],
        [0, 0, 1, 1, 2, 2, 3, 3, 3, 3],
      );
    }
    // Bilinear (2, 4) -> (2, 10), scales (1, 2): the 950 uses 1/2 along W (orig = o/2 - 1/4,
    // clamped at 0, both taps at the last pixel past it); A2 ((int64)(4 * 2) != 10), 910, 310P:
    // sizes, 0.4.
    const x = Float32Array.of(0, 1, 2, 3, 0, 1, 2, 3);
    const c = (fam: Family): ForwardCall => bilinear(fam, [2, 4], [2, 10], { scales: [1, 2] });
    assert.deepEqual(
      [...run(c("950"), x)].slice(0, 10),
      [0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3, 3, 3],
    );
    for (const fam of ["a2", "910", "310p"] as const) {
      const got = [...run(c(fam), x)].slice(0, 10);
      const want = [0, 0.1, 0.5, 0.9, 1.3, 1.7, 2.1, 2.5, 2.9, 3];
      got.forEach((v, i) => assert.ok(Math.abs(v - want[i]) < 4e-7, `${fam} ${i}: ${v}`));
    }
  });

  await t.step("align_corners 2x2 -> 3x3: the midpoints, exact on every family", () => {
    const want = [1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4];
    for (const family of FAMILIES) {
      for (const scales of [[0, 0], [1.5, 1.5]] as const) {
        const c = bilinear(family, [2, 2], [3, 3], { align: true, scales });
        assert.deepEqual(
          [...run(c, Float32Array.of(1, 2, 3, 4))],
          want,
          `${family} ${forwardKernel(c)}`,
        );
      }
    }
  });

  await t.step(
    "out = 1: half-pixel centre 1.5 (the mean of the middle 2x2), align_corners x[0]",
    () => {
      const x = Float32Array.from({ length: 16 }, (_, i) => i);
      for (const family of FAMILIES) {
        // scales 0.25 fit ((int64)(4 * 0.25) = 1): the A2 kernel; elsewhere ignored or 1/0.25 = 4.
        for (const scales of [[0, 0], [0.25, 0.25]] as const) {
          assert.deepEqual(
            [...run(bilinear(family, [4, 4], [1, 1], { scales }), x)],
            [7.5],
            family,
          );
          assert.deepEqual(
            [...run(bilinear(family, [4, 4], [1, 1], { scales, align: true }), x)],
            [0],
            family,
          );
        }
      }
      assert.equal(
        forwardKernel(bilinear("a2", [4, 4], [1, 1], { scales: [0.25, 0.25] })),
        "UpsampleBilinear2d",
      );
    },
  );

  await t.step(
    "a 1-pixel input: copied, except the 950's SIMT blend of the pixel with itself",
    () => {
      const v = f(0.0031);
      for (const family of ["a2", "910", "310p"] as const) {
        for (const scales of [[0, 0], [1, 3]] as const) {
          assert.deepEqual([
            ...run(bilinear(family, [1, 1], [1, 3], { scales }), Float32Array.of(v)),
          ], [v, v, v]);
        }
      }
      // 950, 1x1 -> 1x3 (12 bytes: SIMT_NCHW, not the broadcast): output 2 has orig = 2.5/3 - 0.5
      // and (1 - dx) * v + dx * v in float32, which is not v.
      const s = f(f(1) / f(3));
      const dx = f(f(f(2.5) * s) - 0.5);
      const blend = f(f(f(1 - dx) * v) + f(dx * v));
      const row = f(f(1 * blend) + f(0 * blend));
      assert.notEqual(row, v);
      assert.deepEqual([...run(bilinear("950", [1, 1], [1, 3]), Float32Array.of(v))], [v, v, row]);
      // 8x8 outputs (256 bytes) take NCHW_BROADCAST: v everywhere.
      assert.ok(run(bilinear("950", [1, 1], [8, 8]), Float32Array.of(v)).every((u) => u === v));
    },
  );

  await t.step("the 310P's vbi float16 kernel: float16 weights, float16 sums", () => {
    // (1, 3) -> (1, 7): s = 3/7; H has one row (ly = 0, w10 = w11 = 0).
    const x = Float32Array.of(0.3, 0.7, 1.1).map((u) => roundTo("float16", u));
    const c = bilinear("310p", [1, 3], [1, 7], { dtype: "float16" });
    const s = f(3 / 7);
    const want = [...Array(7).keys()].map((o) => {
      const src = Math.max(f(f(f(o + 0.5) * s) - 0.5), 0);
      const i0 = Math.floor(src), i1 = Math.min(i0 + 1, 2);
      const lx = f(Math.min(src, 2) - i0);
      const w = [f(f(1 - lx) * 1), f(lx * 1), 0, 0].map((u) => roundTo("float16", u));
      let acc = roundTo("float16", x[i0] * w[0]);
      acc = roundTo("float16", acc + roundTo("float16", x[i1] * w[1]));
      acc = roundTo("float16", acc + roundTo("float16", x[i0] * w[2]));
      return roundTo("float16", acc + roundTo("float16", x[i1] * w[3]));
    });
    assert.deepEqual([...run(c, x)], want);
    // The float32 kernels (910's L1, A2's vbi float32) compute in float32 and round once.
    const lerp = [...run(bilinear("910", [1, 3], [1, 7], { dtype: "float16" }), x)];
    assert.notDeepEqual(lerp, want);
  });
});

// -------------------------------------------------------------------------------------------------

Deno.test("forward model: the FMA switch", async (t) => {
  await t.step("A2 kernel: the centre scale * (d + 0.5f) - 0.5f (1x2 -> 1x5, scale 2.5)", () => {
    // s = (float)(1 / 2.5) = 0.4f; output 1: 0.4f * 1.5 = 0.6000000089 -> 0.60000002 then
    // 0.10000002, or fused 0.10000000894; the value is the centre itself (x = [0, 1]).
    const c = bilinear("a2", [1, 2], [1, 5], { scales: [1, 2.5] });
    assert.equal(forwardKernel(c), "UpsampleBilinear2d");
    const x = Float32Array.of(0, 1);
    assert.equal(run(c, x, false)[1], f(f(f(0.4) * 1.5) - 0.5));
    assert.equal(run(c, x, true)[1], fmaf(f(0.4), 1.5, -0.5));
    assert.notEqual(run(c, x, false)[1], run(c, x, true)[1]);
  });

  await t.step("950 SIMT: (H + 0.5f) * scale - 0.5f and the weighted sums", () => {
    const c = bilinear("950", [1, 2], [1, 5]);
    const x = Float32Array.of(0, 1);
    assert.equal(run(c, x, false)[1], f(f(f(0.4) * 1.5) - 0.5));
    assert.equal(run(c, x, true)[1], fmaf(f(0.4), 1.5, -0.5));
  });

  await t.step("vbi multiply-accumulate (A2/A3's TBE fallback, 310P float16)", () => {
    const x32 = Float32Array.of(0.3, 0.7, 1.1, 0.9).map(f);
    const a2 = bilinear("a2", [2, 2], [3, 4]);
    assert.notDeepEqual(run(a2, x32, false), run(a2, x32, true));
    const x16 = x32.map((u) => roundTo("float16", u));
    const p = bilinear("310p", [2, 2], [3, 4], { dtype: "float16" });
    assert.notDeepEqual(run(p, x16, false), run(p, x16, true));
    // fmaTo rounds once in float16: 1 + 2^-11 * 2^-1 lands on a midpoint only when rounded twice.
    assert.equal(
      fmaTo("float16", 1 + 2 ** -10, 2 ** -11 + 2 ** -21, 1),
      roundTo("float16", 1 + (1 + 2 ** -10) * (2 ** -11 + 2 ** -21)),
    );
    assert.equal(fmaTo("float32", 3, f(1 / 6), -0.5), fmaf(3, f(1 / 6), -0.5));
  });

  await t.step("no effect on nearest-exact and the TBE lerp kernels", () => {
    const rand = prng(11);
    for (let i = 0; i < 40; i++) {
      const inn = 1 + Math.floor(rand() * 9), out = 1 + Math.floor(rand() * 14);
      for (const family of ["a2", "950", "310p"] as const) {
        const c = nearest1d(family, inn, out, rand() < 0.5 ? 0 : 0.5 + rand() * 3);
        const x = values(inn, rand);
        assert.deepEqual(run(c, x, false), run(c, x, true));
      }
      for (const family of ["910", "310p"] as const) {
        const c = bilinear(family, [inn, inn + 1], [out, out + 2], { align: rand() < 0.5 });
        const x = values(inCount(c), rand);
        assert.deepEqual(run(c, x, false), run(c, x, true));
      }
    }
  });
});

// -------------------------------------------------------------------------------------------------
// Float64 evaluations of each family's stated formulas (written here, in doubles).

/** The real-valued input-per-output scale of nearest-exact per family (null: a copy). */
function nearestScale64(call: ForwardCall, dim: 0 | 1): number | null {
  const oneD = call.op === "nearestExact1d";
  const inn = oneD ? [1, call.inputSize[2]] : [call.inputSize[2], call.inputSize[3]];
  const out = oneD ? [1, call.outputSize[0]] : [call.outputSize[0], call.outputSize[1]];
  const given = oneD ? (dim === 0 ? 0 : call.scales[0]) : call.scales[dim];
  if (call.family === "950") {
    if (inn[0] === out[0] && inn[1] === out[1]) return null;
  } else if (!oneD && inn[dim] === out[dim]) return 1;
  return given > 0 ? 1 / given : inn[dim] / out[dim];
}

interface Axis64 {
  lo: number[];
  hi: number[];
  wHi: number[];
}

/** Bilinear axes in doubles, per kernel family; `kind` from the routed kernel. */
function axis64(kind: string, inn: number, out: number, align: boolean, given: number): Axis64 {
  const a: Axis64 = { lo: [], hi: [], wHi: [] };
  for (let d = 0; d < out; d++) {
    let c: number;
    if (kind === "a2") {
      const s = out === inn
        ? 1
        : align
        ? (out > 1 ? (inn - 1) / (out - 1) : 0)
        : given > 0
        ? 1 / given
        : inn / out;
      c = align ? s * d : Math.max(s * (d + 0.5) - 0.5, 0);
    } else if (kind === "tbe") {
      const s = align && out > 1 ? (inn - 1) / (out - 1) : inn / out;
      c = align ? d * s : Math.max((d + 0.5) * s - 0.5, 0);
    } else {
      const s = align
        ? (out > 1 ? (inn - 1) / (out - 1) : inn / out)
        : given > 0
        ? 1 / given
        : inn / out;
      c = Math.max(align ? d * s : (d + 0.5) * s - 0.5, 0);
    }
    const lo = Math.min(Math.floor(c), inn - 1);
    const hi = Math.min(lo + 1, inn - 1);
    a.lo.push(lo);
    a.hi.push(hi);
    // 950: both taps at the last pixel past it carry 1 - delta and delta: the value is the pixel.
    a.wHi.push(hi === lo ? 0 : Math.min(Math.max(c - lo, 0), 1));
  }
  return a;
}

function bilinear64(x: Float32Array, call: ForwardCall): Float64Array {
  const [n, ch, inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  const kernel = forwardKernel(call);
  const out = new Float64Array(n * ch * outH * outW);
  if (kernel === "ViewCopy" || kernel.endsWith("ALL_COPY")) {
    out.set(x);
    return out;
  }
  const kind = kernel.startsWith("UpsampleBilinear2d")
    ? "a2"
    : /^ResizeBilinearV2\.\d/.test(kernel)
    ? "tbe"
    : "950";
  const H = axis64(kind, inH, outH, call.alignCorners, call.scales[0]);
  const W = axis64(kind, inW, outW, call.alignCorners, call.scales[1]);
  for (let p = 0; p < n * ch; p++) {
    const px = (h: number, w: number): number => x[(p * inH + h) * inW + w];
    for (let oh = 0; oh < outH; oh++) {
      for (let ow = 0; ow < outW; ow++) {
        const wy = H.wHi[oh], wx = W.wHi[ow];
        const top = (1 - wx) * px(H.lo[oh], W.lo[ow]) + wx * px(H.lo[oh], W.hi[ow]);
        const bot = (1 - wx) * px(H.hi[oh], W.lo[ow]) + wx * px(H.hi[oh], W.hi[ow]);
        out[(p * outH + oh) * outW + ow] = (1 - wy) * top + wy * bot;
      }
    }
  }
  return out;
}

function randomCall(
  rand: () => number,
  family: Family,
  op: ForwardCall["op"],
  dtype: ForwardDtype,
): ForwardCall {
  const dim = (): number => 1 + Math.floor(rand() * 9);
  const outDim = (inn: number): number => Math.max(1, Math.floor(inn * (0.3 + rand() * 2.7)));
  if (op === "nearestExact1d") {
    const inn = dim(), out = outDim(inn);
    return nearest1d(family, inn, out, rand() < 0.5 ? 0 : (out + 0.05 + 0.9 * rand()) / inn, dtype);
  }
  const inn: [number, number] = [dim(), dim()];
  const out: [number, number] = [outDim(inn[0]), outDim(inn[1])];
  const mode = rand();
  // Scales: none, fitting ((int64)(in * s) = out), or arbitrary.
  const scales: [number, number] = mode < 0.4
    ? [0, 0]
    : mode < 0.8
    ? [(out[0] + 0.05 + 0.9 * rand()) / inn[0], (out[1] + 0.05 + 0.9 * rand()) / inn[1]]
    : [0.5 + 2.5 * rand(), 0.5 + 2.5 * rand()];
  const nc: [number, number] = [1 + Math.floor(rand() * 2), 1 + Math.floor(rand() * 3)];
  return op === "nearestExact2d"
    ? nearest2d(family, inn, out, scales, nc, dtype)
    : bilinear(family, inn, out, { scales, align: rand() < 0.3, nc, dtype });
}

Deno.test("forward model: each family against a float64 evaluation of its formula", async (t) => {
  await t.step("nearest-exact: min(floor((o + 0.5) * s), in - 1), a tie the only freedom", () => {
    const rand = prng(2024);
    let ties = 0;
    const calls: ForwardCall[] = [];
    for (const family of ["a2", "950", "310p"] as const) {
      calls.push(nearest1d(family, 2, 41), nearest1d(family, 16, 17, 1.1));
    }
    for (let i = 0; i < 300; i++) {
      const family = (["a2", "950", "310p"] as const)[i % 3];
      calls.push(randomCall(rand, family, i % 2 ? "nearestExact2d" : "nearestExact1d", "float32"));
    }
    for (const call of calls) {
      const family = call.family;
      const [n, ch] = call.inputSize;
      const oneD = call.op === "nearestExact1d";
      const inH = oneD ? 1 : call.inputSize[2], inW = call.inputSize[oneD ? 2 : 3];
      const outH = oneD ? 1 : call.outputSize[0], outW = call.outputSize[oneD ? 0 : 1];
      const x = Float32Array.from({ length: inCount(call) }, (_, k) => k); // index-coded
      const got = run(call, x);
      const sH = nearestScale64(call, 0), sW = nearestScale64(call, 1);
      const idx = (o: number, s: number | null, inn: number): { i: number; tie: boolean } => {
        if (s === null) return { i: o, tie: false };
        const c = (o + 0.5) * s;
        return { i: Math.min(Math.floor(c), inn - 1), tie: Math.abs(c - Math.round(c)) < 1e-5 };
      };
      for (let p = 0; p < n * ch; p++) {
        for (let oh = 0; oh < outH; oh++) {
          for (let ow = 0; ow < outW; ow++) {
            const h = idx(oh, sH, inH), w = idx(ow, sW, inW);
            const v = got[(p * outH + oh) * outW + ow];
            const gh = Math.floor(v / inW) % inH, gw = v % inW;
            assert.equal(Math.floor(v / (inH * inW)), p);
            if (gh !== h.i) {
              assert.ok(h.tie && Math.abs(gh - h.i) === 1, `${JSON.stringify(call)} H ${oh}`);
            }
            if (gw !== w.i) {
              assert.ok(w.tie && Math.abs(gw - w.i) === 1, `${JSON.stringify(call)} W ${ow}`);
            }
            if (gh !== h.i || gw !== w.i) ties++;
          }
        }
      }
      // 16-bit dtypes: the same gather, bit for bit.
      for (const dtype of ["float16", "bfloat16"] as const) {
        if (family === "310p" && dtype === "bfloat16") continue;
        const c16 = { ...call, dtype };
        const x16 = values(inCount(call), rand, dtype);
        const g16 = run(c16, x16);
        got.forEach((k, j) => assert.equal(g16[j], x16[k]));
      }
    }
    assert.ok(ties > 0, "the sweep met no tie broken by float32 rounding");
  });

  await t.step("bilinear: interpolation in doubles within the float32 (or 16-bit) rounding", () => {
    const rand = prng(77);
    const calls: ForwardCall[] = [];
    for (const dtype of ["float32", "float16", "bfloat16"] as const) {
      for (const family of FAMILIES) {
        calls.push(
          bilinear(family, [5, 6], [9, 7], { nc: [32, 1], dtype }), // TBE 100110
          bilinear(family, [1, 1], [5, 3], { dtype }), // TBE 999999, 950 SIMT
          bilinear(family, [4, 1], [8, 3], { scales: [2, 3], dtype }), // A2 transposed
          bilinear(family, [3, 4], [7, 9], { scales: [2.5, 2.5], align: true, dtype }),
          bilinear(family, [3, 3], [3, 3], { scales: [1.3, 1.3], dtype }), // copies
          bilinear(family, [1, 1], [8, 8], { dtype }), // 950 NCHW_BROADCAST
        );
      }
      calls.push(bilinear("950", [2, 2], [256, 288], { dtype })); // SIMT_HW: no clamp at 0
    }
    for (let i = 0; i < 400; i++) {
      const family = FAMILIES[i % 4];
      const dtype = (["float32", "float16", "bfloat16"] as const)[Math.floor(i / 4) % 3];
      calls.push(randomCall(rand, family, "bilinear2d", dtype));
    }
    const seen = new Set<string>();
    for (const call of calls) {
      const dtype = call.dtype;
      const x = values(inCount(call), rand, dtype);
      const maxIn = Math.max(call.inputSize[2], call.inputSize[3]);
      const kernel = forwardKernel(call);
      seen.add(kernel);
      const ref = bilinear64(x, call);
      for (const fma of [false, true]) {
        const got = run(call, x, fma);
        got.forEach((v, j) => {
          let tol = (32 + 8 * maxIn) * U;
          if (kernel.endsWith("vbi_fp16")) tol += 16 * 2 ** -11;
          if (dtype !== "float32") tol += ulpOf(dtype, Math.abs(ref[j]) + tol);
          assert.ok(
            Math.abs(v - ref[j]) <= tol,
            `${kernel} ${JSON.stringify(call)} [${j}]: ${v} vs ${ref[j]}`,
          );
        });
      }
    }
    const every = [
      "ViewCopy",
      "UpsampleBilinear2d",
      "UpsampleBilinear2d.transposed",
      "ResizeBilinearV2.999999",
      "ResizeBilinearV2.100110",
      "ResizeBilinearV2.100000.vbi_fp32",
      "ResizeBilinearV2.100000.vbi_fp16",
      "ResizeBilinearV2.100000.l1",
      "ResizeBilinearV2.ALL_COPY",
      "ResizeBilinearV2.NCHW_BROADCAST",
      "ResizeBilinearV2.SIMT_NCHW",
      "ResizeBilinearV2.SIMT_HW",
    ];
    assert.deepEqual([...seen].sort(), every.sort());
  });
});

// -------------------------------------------------------------------------------------------------

Deno.test("forward model: refusals", async (t) => {
  await t.step("nearest-exact on the 910 and bfloat16 nearest-exact on the 310P: no kernel", () => {
    for (
      const c of [
        nearest1d("910", 3, 5),
        nearest2d("910", [3, 3], [5, 5]),
        nearest1d("310p", 3, 5, 0, "bfloat16"),
      ]
    ) {
      const r = forwardRefusal(c);
      assert.ok(r !== null && r.startsWith(`${ACLNN_ERR_INNER_FIND_KERNEL_ERROR} `), String(r));
      assert.throws(
        () => forwardModel(new Float32Array(inCount(c)), c, { fma: false }),
        RangeError,
      );
    }
    for (const dtype of ["float32", "float16"] as const) {
      assert.equal(forwardRefusal(nearest1d("310p", 3, 5, 0, dtype)), null);
    }
    for (const dtype of ["float32", "float16", "bfloat16"] as const) {
      assert.equal(forwardRefusal(nearest1d("a2", 3, 5, 0, dtype)), null);
      assert.equal(forwardRefusal(nearest1d("950", 3, 5, 0, dtype)), null);
      for (const family of FAMILIES) {
        assert.equal(forwardRefusal(bilinear(family, [2, 2], [3, 3], { dtype })), null);
      }
    }
  });

  await t.step("parameter checks: 161002", () => {
    const param = (c: ForwardCall): void => {
      const r = forwardRefusal(c);
      assert.ok(r !== null && r.startsWith(`${ACLNN_ERR_PARAM_INVALID} `), String(r));
    };
    for (const family of FAMILIES) param(bilinear(family, [2, 2], [3, 3], { scales: [-1, 2] }));
    param({ ...nearest1d("a2", 3, 5), inputSize: [0, 1, 3] }); // the 1d op checks N, C first
    param({ ...nearest1d("950", 3, 5), outputSize: [0] });
    param({ ...nearest2d("a2", [3, 3], [5, 5]), inputSize: [1, 3, 3] });
    param({ ...bilinear("950", [3, 3], [5, 5]), outputSize: [5] });
    // Negative nearest-exact scales are not checked: treated as none.
    assert.equal(forwardRefusal(nearest1d("a2", 3, 5, -2)), null);
  });

  await t.step("empty tensors: the 2d ops return success without a launch", () => {
    const c = nearest2d("910", [3, 3], [5, 5], [0, 0], [0, 2]);
    assert.equal(forwardRefusal(c), null); // the empty shortcut precedes the kernel lookup
    const r = forwardModel(new Float32Array(0), c, { fma: false });
    assert.equal(r.kernel, "none");
    assert.equal(r.values.length, 0);
    const b = bilinear("a2", [0, 3], [4, 4]);
    assert.equal(forwardKernel(b), "none");
    assert.ok(forwardModel(new Float32Array(0), b, { fma: false }).values.every(Number.isNaN));
  });
});

// -------------------------------------------------------------------------------------------------
// The adjoint property against the backward models.

function backward(call: ForwardCall, g: Float32Array, fma: boolean): Float32Array {
  switch (call.family) {
    case "a2":
      return deviceModel(g, deviceCaseOf(call));
    case "950":
      return arch35Model(g, {
        op: call.op,
        inputSize: call.inputSize,
        outputSize: call.outputSize,
        scales: call.scales,
        alignCorners: call.alignCorners,
        gradDtype: "float32",
        deterministic: false,
        fma,
      }).values;
    default: {
      const [N, C, inH, inW] = call.inputSize;
      const [outH, outW] = call.outputSize;
      const soc = call.family === "910" ? SOC_5HD.Ascend910A : SOC_5HD.Ascend310P3;
      return resize5hdModel(
        g,
        { N, C, inH, inW, outH, outW, alignCorners: call.alignCorners },
        soc,
        { fma },
      )
        .values;
    }
  }
}

/**
 * `|<F x, g> - <x, B g>|` and its float32 bound `(8 + 2 * maxDim) u S`, S the same two inner
 * products of the magnitudes (every weight is non-negative, so S bounds every term's size): each
 * side rounds a term at most a few times (8u), and the two kernels may round a coordinate of
 * magnitude up to maxDim differently (a weight off by up to 2 maxDim u).
 */
function adjoint(call: ForwardCall, seed: number, fma: boolean): { diff: number; bound: number } {
  const rand = prng(seed);
  const x = values(inCount(call), rand);
  const g = values(outCount(call), rand);
  const y = run(call, x, fma), b = backward(call, g, fma);
  const yAbs = run(call, x.map(Math.abs), fma), bAbs = backward(call, g.map(Math.abs), fma);
  let lhs = 0, rhs = 0, s = 0;
  y.forEach((v, j) => {
    lhs += v * g[j];
    s += yAbs[j] * Math.abs(g[j]);
  });
  x.forEach((v, i) => {
    rhs += v * b[i];
    s += Math.abs(v) * bAbs[i];
  });
  const maxDim = Math.max(...call.inputSize.slice(2), ...call.outputSize);
  return { diff: Math.abs(lhs - rhs), bound: (8 + 2 * maxDim) * U * s };
}

interface Listed {
  readonly why: string;
  readonly call: ForwardCall;
  /** Whether forward and backward disagree by construction. */
  readonly disagree: boolean;
}

/**
 * The calls of each family, with the forward/backward disagreements by construction:
 * - nearest-exact ties: the forward floors `fl32((o + 0.5) * fl32(in / out))`, the backward gathers
 *   `[ceil(fl32(i * fl32(out / in)) - 0.5), ...)`; at `(o + 0.5) * in / out = k` they round apart;
 * - nearest-exact, a given scale below out/in: the forward clamps the overflowing outputs onto the
 *   last input, the backward's ranges end at `ceil(in * s - 0.5)` and drop them;
 * - nearest-exact, equal sizes with a scale: A2/A3's 2d forward ignores it on that dimension
 *   (ComputeScaleValue), the 950's forward copies when both sizes are equal (SIMT_INPUT_EQ_OUTPUT);
 *   their backwards use the scale;
 * - A2/A3 bilinear, equal sizes with scales: the forward returns self, the backward's kernel maps
 *   with 1/scale; `1 / scale` in (50, 100]: the forward's CheckBilinear2dScales sends it to the TBE
 *   kernel (sizes), the backward's kernel takes it (its limit is 0.01) with `1 / scale`.
 * Not a disagreement: a scale on one dimension only on A2/A3 (both directions fall back to the TBE
 * kernels, both from the sizes), both scales 2 (forward TBE, backward kernel, both 0.5).
 */
function listed(family: Family): Listed[] {
  const L = (why: string, call: ForwardCall, disagree = false): Listed => ({
    why,
    call,
    disagree,
  });
  const common: Listed[] = [
    L("bilinear from sizes", bilinear(family, [4, 5], [7, 9])),
    L("bilinear align_corners", bilinear(family, [3, 5], [6, 9], { align: true })),
    L("bilinear downsampling", bilinear(family, [9, 8], [4, 3], { nc: [1, 2] })),
    L("bilinear 1x1 input", bilinear(family, [1, 1], [3, 4])),
    L("bilinear one-dimension scale", bilinear(family, [4, 4], [8, 6], { scales: [2, 0] })),
  ];
  const nearest: Listed[] = [
    L("nearest 1d from sizes, no tie", nearest1d(family, 5, 13)),
    L("nearest 2d from sizes, no tie", nearest2d(family, [3, 5], [7, 9], [0, 0], [2, 1])),
    L("nearest 1d scale above out/in", nearest1d(family, 4, 9, 2.3)),
    L("nearest 1d tie 2 -> 41", nearest1d(family, 2, 41), true),
    L("nearest 1d scale below out/in", nearest1d(family, 4, 10, 2), true),
    // Output 16: (16 + 0.5) / 1.1 = 15. A2/A3: forward (float)(1.0 / 1.1) gives 15, the backward's
    // ceil(fl32(fl32(15 * 1.1f) - 0.5)) = 16 starts input 15 at output 16: agree. 950: forward
    // 1.0f / 1.1f gives 14, the backward (fused or not, 16.0000004 rounds to 16) gives 15.
    L("nearest 1d 16 -> 17 scale 1.1 (a tie)", nearest1d(family, 16, 17, 1.1), family === "950"),
  ];
  switch (family) {
    case "a2":
      return [
        ...common,
        ...nearest,
        L("nearest 2d equal H with a scale", nearest2d(family, [3, 4], [3, 8], [1.5, 2]), true),
        L("bilinear fitting scales", bilinear(family, [4, 6], [10, 9], { scales: [2.5, 1.5] })),
        L("bilinear scales 2, 2", bilinear(family, [4, 4], [8, 8], { scales: [2, 2] })),
        L("bilinear transposed (W = 1)", bilinear(family, [4, 1], [8, 3], { scales: [2, 3] })),
        L(
          "bilinear equal sizes with scales",
          bilinear(family, [3, 3], [3, 3], { scales: [1.3, 1.3] }),
          true,
        ),
        L(
          "bilinear 1/scale 65 > 50",
          bilinear(family, [131, 4], [2, 8], { scales: [1 / 65, 2] }),
          true,
        ),
      ];
    case "950":
      return [
        ...common,
        ...nearest,
        L("nearest 1d equal sizes with a scale", nearest1d(family, 5, 5, 2), true),
        L("nearest 2d equal sizes with scales", nearest2d(family, [3, 3], [3, 3], [2, 2]), true),
        L("nearest 2d equal H with a scale", nearest2d(family, [3, 4], [3, 8], [1.5, 2])),
        L("bilinear scales", bilinear(family, [4, 6], [6, 15], { scales: [1.7, 2.5] })),
        L(
          "bilinear equal sizes with scales",
          bilinear(family, [3, 3], [3, 3], { scales: [1.3, 1.3] }),
        ),
      ];
    default:
      return [
        ...common,
        L(
          "bilinear equal sizes with scales",
          bilinear(family, [3, 3], [3, 3], { scales: [1.3, 1.3] }),
        ),
        L("bilinear 100110 (N*C1 = 32)", bilinear(family, [5, 6], [9, 7], { nc: [32, 1] })),
      ];
  }
}

/** Whether a call without scales has a nearest-exact tie `(o + 0.5) * in / out = k`, 1 <= k < in.
 */
function hasTie(inn: number, out: number): boolean {
  for (let o = 0; o < out; o++) {
    const num = (2 * o + 1) * inn;
    if (num % (2 * out) === 0 && num / (2 * out) >= 1 && num / (2 * out) < inn) return true;
  }
  return false;
}

Deno.test("forward model: adjoint against the backward models", async (t) => {
  for (const family of FAMILIES) {
    await t.step(`${family}: the listed calls, disagreeing exactly where listed`, () => {
      for (const { why, call, disagree } of listed(family)) {
        for (const fma of [false, true]) {
          const { diff, bound } = adjoint(call, 5 + why.length, fma);
          if (disagree) {
            assert.ok(
              diff > 10 * bound,
              `${family} ${why}: expected a disagreement (${diff} vs ${bound})`,
            );
          } else {assert.ok(
              diff <= bound,
              `${family} ${why} (${forwardKernel(call)}): ${diff} > ${bound}`,
            );}
        }
      }
    });
    await t.step(`${family}: random calls outside those categories agree`, () => {
      const rand = prng(9000 + family.length);
      const ops: ForwardCall["op"][] = family === "910" || family === "310p"
        ? ["bilinear2d"]
        : ["nearestExact1d", "nearestExact2d", "bilinear2d"];
      let checked = 0;
      while (checked < 60) {
        const op = ops[checked % ops.length];
        const dim = (): number => 1 + 2 * Math.floor(rand() * 4); // odd sizes: no nearest tie
        const o = (): number => 1 + Math.floor(rand() * 12);
        let call: ForwardCall;
        if (op === "nearestExact1d") {
          call = nearest1d(family, dim(), o());
        } else if (op === "nearestExact2d") {
          call = nearest2d(family, [dim(), dim()], [o(), o()], [0, 0], [1, 2]);
        } else {
          const inn: [number, number] = [1 + Math.floor(rand() * 7), 1 + Math.floor(rand() * 7)];
          const out: [number, number] = [o(), o()];
          // Scales only where both directions read them alike: A2 fitting scales (not on equal
          // sizes), the 950's scales; the TBE families ignore them both ways.
          let scales: [number, number] = [0, 0];
          if (rand() < 0.5 && (family !== "a2" || (inn[0] !== out[0] && inn[1] !== out[1]))) {
            scales = [
              (out[0] + 0.1 + 0.8 * rand()) / inn[0],
              (out[1] + 0.1 + 0.8 * rand()) / inn[1],
            ];
          }
          call = bilinear(family, inn, out, { scales, align: rand() < 0.3, nc: [1, 2] });
        }
        if (op !== "bilinear2d") {
          const oneD = op === "nearestExact1d";
          const ins = oneD ? [call.inputSize[2]] : call.inputSize.slice(2);
          if (ins.some((v, k) => hasTie(v, call.outputSize[k]))) continue;
          if (ins.some((v, k) => v / call.outputSize[k] < 0.02)) continue;
        }
        for (const fma of [false, true]) {
          const { diff, bound } = adjoint(call, checked, fma);
          assert.ok(
            diff <= bound,
            `${family} ${forwardKernel(call)} ${JSON.stringify(call)}: ${diff} > ${bound}`,
          );
        }
        checked++;
      }
    });
  }
});

Deno.test("forward model: nearestIndex, the index rule both nearest kernels share", async (t) => {
  await t.step("the clamp at in - 1 and the 2 -> 41 tie", () => {
    assert.deepEqual([...nearestIndex(4, 10, 0.5)], [0, 0, 1, 1, 2, 2, 3, 3, 3, 3]);
    assert.deepEqual([...nearestIndex(2, 41, f(f(2) / f(41)))].slice(19, 22), [0, 0, 1]);
  });
});
