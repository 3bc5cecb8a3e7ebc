// Self-tests of the independent model of the TBE 5HD kernel ResizeBilinearV2Grad
// (tests/support/resize5hd_model.ts): the tiling's thresholds per SoC, the core split, each mode's
// arithmetic against a float64 reference of the same weights, the orders the source fixes (modes 1/2
// slot trees, mode 4 row-major axpy, mode 5's last column, mode 6's window flushes) by hand-built
// inputs, and the atomic interleavings of modes 5/6.

import assert from "node:assert/strict";
import {
  axis5hd,
  type Call5hd,
  coreSplit5hd,
  flushes5hd,
  fmaf32,
  orderDependent5hd,
  resize5hdModel,
  scale5hd,
  type Soc5hd,
  SOC_5HD,
  tilingMode5hd,
} from "../support/resize5hd_model.ts";

const f = Math.fround;
const A910 = SOC_5HD.Ascend910A;
const P310 = SOC_5HD.Ascend310P3;
const B3 = SOC_5HD.Ascend910B3;
const A3 = SOC_5HD.Ascend910_9391;
const ALL_SOCS: readonly Soc5hd[] = [A910, P310, B3, A3];

function call(
  inH: number,
  inW: number,
  outH: number,
  outW: number,
  extra: Partial<Call5hd> = {},
): Call5hd {
  return { N: 1, C: 1, inH, inW, outH, outW, alignCorners: false, ...extra };
}

/** A deterministic gradient with a wide spread of magnitudes and both signs. */
function randomGrad(length: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const next = (): number => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
  return Float32Array.from({ length }, () => (next() - 0.5) * 2 ** Math.floor(next() * 12 - 4));
}

function bits(a: Float32Array): number[] {
  return [...new Uint32Array(a.buffer, a.byteOffset, a.length)];
}

/**
 * Float64 reference with the model's own (float32) weights: every term `w * g` exact, summed in a
 * double, with the sum of the terms' magnitudes. Mode 5's W weights come from the vector path.
 */
function reference(
  grad: Float32Array,
  c: Call5hd,
  soc: Soc5hd,
  fma: boolean,
): { sum: Float64Array; abs: Float64Array } {
  const mode = tilingMode5hd(c, soc);
  const { N, C, inH, inW, outH, outW } = c;
  const sum = new Float64Array(N * C * inH * inW);
  const abs = new Float64Array(sum.length);
  const H = axis5hd(inH, outH, c.alignCorners, "scalar", fma);
  const W = mode === 5
    ? axis5hd(inW, outW, c.alignCorners, "vector", false)
    : axis5hd(inW, outW, c.alignCorners, "scalar", fma);
  for (let p = 0; p < N * C; p++) {
    const gOff = p * outH * outW;
    const iOff = p * inH * inW;
    for (let h = 0; h < outH; h++) {
      for (let w = 0; w < outW; w++) {
        const g = grad[gOff + h * outW + w];
        if (mode === 0) {
          sum[iOff + h * inW + w] = g;
          continue;
        }
        if (mode === 1 || mode === 2) {
          sum[iOff] += g;
          abs[iOff] += Math.abs(g);
          continue;
        }
        const o00 = iOff + H.idx[h] * inW + W.idx[w];
        const targets = [
          [o00, f(H.l[h] * W.l[w])],
          [o00 + W.stride[w], f(H.l[h] * W.r[w])],
          [o00 + H.stride[h] * inW, f(H.r[h] * W.l[w])],
          [o00 + H.stride[h] * inW + W.stride[w], f(H.r[h] * W.r[w])],
        ];
        for (const [o, wt] of targets) {
          sum[o] += wt * g;
          abs[o] += Math.abs(wt * g);
        }
      }
    }
  }
  return { sum, abs };
}

function assertNearReference(c: Call5hd, soc: Soc5hd, fma: boolean, seed?: number): number {
  const grad = randomGrad(c.N * c.C * c.outH * c.outW, 7 + c.outW * 31 + c.inW);
  const { values, mode } = resize5hdModel(grad, c, soc, { fma, seed });
  const { sum, abs } = reference(grad, c, soc, fma);
  for (let i = 0; i < values.length; i++) {
    const bound = 4 * 2 ** -23 * abs[i];
    const err = Math.abs(values[i] - sum[i]);
    if (!(err <= bound)) {
      assert.fail(
        `${soc.name} mode ${mode} ${JSON.stringify(c)} fma=${fma} cell ${i}: ${values[i]} vs ${
          sum[i]
        }` +
          ` (bound ${bound})`,
      );
    }
  }
  return mode;
}

// ---------------------------------------------------------------------------------------------------

Deno.test("5hd model: compile info from the platform .ini facts", () => {
  assert.deepEqual(
    ALL_SOCS.map((s) => [s.name, s.tensorC, s.l1Support, s.coreNum]),
    [
      ["Ascend910A", 2048, true, 32],
      ["Ascend310P3", 2048, true, 8],
      ["Ascend910B3", 1536, false, 20],
      ["Ascend910_9391", 1536, false, 24],
    ],
  );
});

/** Exact float32 fma by BigInt arithmetic (float32 values are integers times 2^-149). */
function exactFma(a: number, b: number, c: number): number {
  const S = 2 ** 149;
  const big = (x: number): bigint => BigInt(x * S);
  const exact = big(a) * big(b) + big(c) * BigInt(S); // scaled by 2^298
  const approx = f(Number(exact) / 2 ** 298);
  const candidates = new Float32Array(3);
  const u = new Uint32Array(candidates.buffer);
  candidates[1] = approx;
  candidates[0] = approx;
  candidates[2] = approx;
  u[0] -= 1;
  u[2] += 1;
  let best = approx;
  let bestDist = -1n;
  for (const r of candidates) {
    if (!Number.isFinite(r)) continue;
    const d0 = big(r) * BigInt(S) - exact;
    const d = d0 < 0n ? -d0 : d0;
    const even = (new Uint32Array(Float32Array.of(r).buffer)[0] & 1) === 0;
    if (bestDist < 0n || d < bestDist || (d === bestDist && even)) {
      best = r;
      bestDist = d;
    }
  }
  return best;
}

Deno.test("5hd model: fmaf32 rounds once (hand cases and an exact BigInt check)", () => {
  const sixth = f(1 / 6);
  assert.ok(fmaf32(3, sixth, -0.5) > 0);
  assert.equal(f(f(3 * sixth) - 0.5), 0);
  // 1 + 2^-23 + 2^-24 - 2^-70: the double sum lands on the float32 midpoint 1 + 3*2^-24, which ties
  // to 1 + 2^-22; the exact value lies below it.
  const a = 2 ** -24 * (1 + 2 ** -23);
  const b = 1 - 2 ** -23;
  assert.equal(f(a * b + (1 + 2 ** -23)), 1 + 2 ** -22);
  assert.equal(fmaf32(a, b, 1 + 2 ** -23), 1 + 2 ** -23);
  const grad = randomGrad(3000, 11);
  for (let i = 0; i + 2 < grad.length; i += 3) {
    const x = grad[i], y = f(grad[i + 1] + 1);
    for (const z of [grad[i + 2], f(-x * y), f(-x * y * (1 + 2 ** -20))]) {
      assert.equal(fmaf32(x, y, z), exactFma(x, y, z), `${x} ${y} ${z}`);
    }
  }
});

Deno.test("5hd model: coordinates (scalar and vector paths, align_corners, out = 1)", () => {
  assert.equal(scale5hd(3, 5, false), f(3 / 5));
  assert.equal(scale5hd(3, 5, true), 0.5);
  assert.equal(scale5hd(7, 1, true), 7); // out < 2: in / out
  // 4 -> 16 half-pixel: d = 14 at 3.125, d = 15 at 3.375, both on the last column (stride 0).
  const w = axis5hd(4, 16, false, "vector", false);
  assert.deepEqual([w.idx[14], w.idx[15], w.stride[15], w.r[14], w.l[15]], [3, 3, 0, 0.125, 0.625]);
  assert.deepEqual([...axis5hd(4, 16, false, "scalar", false).r], [...w.r]);
  // Negative sources clamp to 0: d = 0 at 0.25 * 0.5 - 0.5 < 0.
  assert.deepEqual([w.idx[0], w.r[0], w.l[0]], [0, 0, 1]);
  // Align: d * (in-1)/(out-1); out = 1: src = 0.
  const al = axis5hd(3, 5, true, "scalar", true);
  assert.deepEqual([...al.idx], [0, 0, 1, 1, 2]);
  assert.deepEqual([...al.r], [0, 0.5, 0, 0.5, 0]);
  assert.deepEqual([...axis5hd(9, 1, true, "scalar", false).idx], [0]);
  assert.deepEqual([...axis5hd(9, 1, false, "scalar", false).idx], [4]); // 9 * 0.5 - 0.5
  // The contraction changes the half-pixel source where the product rounds: 1 -> 6 has
  // scale 1/6 and d = 2.5: fl(fl(1/6) * 2.5) - 0.5 vs one rounding.
  let differs = false;
  for (const [i, o] of [[1, 6], [3, 7], [5, 11], [7, 13], [10, 3], [13, 9]]) {
    const a = axis5hd(i, o, false, "scalar", true).r;
    const b = axis5hd(i, o, false, "scalar", false).r;
    if (bits(a).join() !== bits(b).join()) differs = true;
  }
  assert.ok(differs, "fma must change some half-pixel source");
});

Deno.test("5hd model: tiling mode at every threshold, per SoC", async (t) => {
  for (const soc of ALL_SOCS) {
    const tc = soc.tensorC;
    await t.step(soc.name, () => {
      const m = (ih: number, iw: number, gh: number, gw: number): number =>
        tilingMode5hd(call(ih, iw, gh, gw), soc);
      assert.equal(m(5, 7, 5, 7), 0);
      assert.equal(m(1, 1, 1, 1), 0);
      // Modes 1/2: gh * gw > tensor_c -> 2.
      assert.equal(m(1, 1, 1, tc - 1), 1);
      assert.equal(m(1, 1, 1, tc), 1);
      assert.equal(m(1, 1, 1, tc + 1), 2);
      assert.equal(m(1, 1, 2, tc / 2), 1);
      assert.equal(m(1, 1, 2, tc / 2 + 1), 2);
      // Mode 3.
      assert.equal(m(1, 2, 1, 1), 3);
      assert.equal(m(4000, 4000, 1, 1), 3);
      // Mode 4: both products < tensor_c.
      assert.equal(m(1, tc - 1, 2, 3), 4);
      assert.equal(m(1, tc, 2, 3), 6); // gw < iw: not 5
      assert.equal(m(2, 30, 1, tc - 1), 4);
      assert.equal(m(2, 30, 1, tc), soc.l1Support ? 5 : 6);
      // Mode 5 vs 6 (gh * gw >= tensor_c): iw 640/641, gw 4096/4097, gw/iw 254/255, gw > iw.
      const five = soc.l1Support ? 5 : 6;
      assert.equal(m(2, 640, 4, 4096), five);
      assert.equal(m(2, 641, 4, 4096), 6);
      assert.equal(m(2, 600, 4, 4097), 6);
      assert.equal(m(2, 10, 4, 2549), five); // 254.9 -> 254
      assert.equal(m(2, 10, 4, 2550), 6); // 255
      assert.equal(m(2, 16, 4, 4095), 6); // 255.94 -> 255
      assert.equal(m(2, 16, 4, 4064), five); // 254
      assert.equal(m(40, 600, 4, 600), 6); // gw == iw
      assert.equal(m(40, 600, 4, 601), five); // gw > iw
      assert.equal(m(2, 300, 40, 200), 6); // downsampling
    });
  }
  // A2/A3 never choose mode 5 (l1_support 0).
  for (const soc of [B3, A3]) {
    for (const [ih, iw, gh, gw] of [[2, 10, 400, 20], [3, 100, 1, 2100], [1, 640, 3, 4096]]) {
      assert.equal(tilingMode5hd(call(ih, iw, gh, gw), soc), 6);
    }
  }
});

Deno.test("5hd model: core split and order dependence", () => {
  // Rows (modes 0, 5, 6): 40 rows on 32 cores -> 2 per core, 20 cores; 33 -> 2, 17, last 1.
  assert.deepEqual(coreSplit5hd(call(2, 8, 40, 64), A910), {
    needCoreNum: 20,
    perCore: 2,
    lastCore: 2,
    unit: "rows",
  });
  assert.deepEqual(coreSplit5hd(call(2, 8, 33, 64), A910), {
    needCoreNum: 17,
    perCore: 2,
    lastCore: 1,
    unit: "rows",
  });
  assert.deepEqual(coreSplit5hd(call(2, 8, 33, 64), P310), {
    needCoreNum: 7,
    perCore: 5,
    lastCore: 3,
    unit: "rows",
  });
  // Planes (modes 1-4): N * C1, C1 = ceil(C / 16): 3 * 3 = 9 on 8 cores -> 2 per core, 5 cores.
  assert.deepEqual(coreSplit5hd(call(4, 4, 5, 5, { N: 3, C: 40 }), P310), {
    needCoreNum: 5,
    perCore: 2,
    lastCore: 1,
    unit: "nc1",
  });
  assert.equal(orderDependent5hd(call(2, 8, 40, 64), A910), true); // mode 5, 20 cores
  assert.equal(orderDependent5hd(call(2, 8, 40, 64), B3), true); // mode 6
  assert.equal(orderDependent5hd(call(3, 100, 1, 2100), A910), false); // one row, one core
  assert.equal(orderDependent5hd(call(3, 100, 1, 2100), A3), false);
  assert.equal(orderDependent5hd(call(6, 5, 11, 13), A910), false); // mode 4
  assert.equal(orderDependent5hd(call(1, 1, 40, 60), B3), false); // mode 2
  assert.equal(orderDependent5hd(call(5, 7, 40, 7), A910), false); // mode 4
  assert.equal(orderDependent5hd(call(50, 60, 50, 60), A910), false); // mode 0
});

Deno.test("5hd model: mode 0 is a bit copy", () => {
  const g = Float32Array.of(-0, 1e-45, NaN, -3.5, Infinity, 2 ** -130);
  const c = call(2, 3, 2, 3);
  const { values, mode } = resize5hdModel(g, c, A910, { fma: true });
  assert.equal(mode, 0);
  assert.deepEqual(bits(values), bits(g));
});

Deno.test("5hd model: modes 1/2 sum with weight 1 in the source's slot tree", async (t) => {
  await t.step("weight exactly 1", () => {
    for (const soc of ALL_SOCS) {
      const ones = new Float32Array(2 * 40 * 60).fill(1);
      const r = resize5hdModel(ones, call(1, 1, 40, 60, { C: 2 }), soc, { fma: true });
      assert.equal(r.mode, 2);
      assert.deepEqual([...r.values], [2400, 2400]);
      const r1 = resize5hdModel(ones.subarray(0, 63), call(1, 1, 7, 9), soc, { fma: false });
      assert.deepEqual([r1.mode, ...r1.values], [1, 63]);
    }
  });
  await t.step("mode 1: the tree, not left to right", () => {
    // Slots 0, 1, 2 = 1e8, 1, -1e8: the last folds add slot 2 into 0 (-> 0), slot 3 into 1, then
    // slot 1 into 0: 1. Left to right: fl(1e8 + 1) = 1e8, then 0.
    const g = Float32Array.of(1e8, 1, -1e8);
    assert.equal(f(f(1e8 + 1) - 1e8), 0);
    assert.deepEqual([...resize5hdModel(g, call(1, 1, 1, 3), A910, { fma: false }).values], [1]);
    // The repeats of the first fold in order: S0 = (1 + S128) + S132 = (1 + 2^24) - 2^24 = 0
    // (2^24 + 1 ties to 2^24); the other order would give 1.
    const h = new Float32Array(133);
    h[0] = 1;
    h[128] = 2 ** 24;
    h[132] = -(2 ** 24);
    assert.deepEqual([...resize5hdModel(h, call(1, 1, 1, 133), B3, { fma: true }).values], [0]);
    // Cell 256 shares slot 0 with cell 0 (they cancel) and slot 1 is added last: 1 (left to right: 0).
    const k = new Float32Array(300);
    k[0] = 2 ** 24;
    k[1] = 1;
    k[256] = -(2 ** 24);
    assert.deepEqual([...resize5hdModel(k, call(1, 1, 1, 300), A910, { fma: false }).values], [1]);
    // Slot 2 joins slot 0 before slot 1 does: (2^24 + 1) ties to 2^24, then - 2^24: 0 (left to
    // right: 1).
    const m = new Float32Array(300);
    m[0] = 2 ** 24;
    m[1] = -(2 ** 24);
    m[2] = 1;
    assert.equal(f(f(m[0] + m[1]) + m[2]), 1);
    assert.deepEqual([...resize5hdModel(m, call(1, 1, 1, 300), A910, { fma: false }).values], [0]);
  });
  await t.step("mode 2: chunks of tensor_c cells, 1024 slots each", () => {
    // A2 (tensor_c 1536), 1600 cells: cell 1536 starts chunk 1 and joins slot 0 (2^24 + 1 -> 2^24);
    // slot 512 (cell 512) folds into slot 0 later: 2^24. Slots by p mod 1024 would give 2^24 + 2.
    const g = new Float32Array(1600);
    g[0] = 2 ** 24;
    g[512] = 1;
    g[1536] = 1;
    const r = resize5hdModel(g, call(1, 1, 1, 1600), B3, { fma: true });
    assert.equal(r.mode, 2);
    assert.deepEqual([...r.values], [2 ** 24]);
    // 910A: 1600 <= 2048, mode 1, slots mod 256: cells 0, 512, 1536 all in slot 0: 2^24.
    const r1 = resize5hdModel(g, call(1, 1, 1, 1600), A910, { fma: true });
    assert.deepEqual([r1.mode, ...r1.values], [1, 2 ** 24]);
    // 910A mode 2 (2100 cells): chunk 0 is 2048 cells = two passes of 1024; cell 2048 starts chunk 1.
    const h = new Float32Array(2100);
    h[0] = 2 ** 24;
    h[1024] = 1; // slot 0, chunk 0: 2^24 + 1 -> 2^24
    h[512] = 1;
    h[1536] = 1; // slot 512 = 2, folds into slot 0: 2^24 + 2
    const r2 = resize5hdModel(h, call(1, 1, 1, 2100), A910, { fma: false });
    assert.deepEqual([r2.mode, ...r2.values], [2, 2 ** 24 + 2]);
  });
});

// The write order 11, 10, 01, 00 cannot show: cells coincide only through a stride 0, which with a
// 1x1 gradient means an image side of 1 (source 0, r = 0), so the replaced terms weigh 0.
Deno.test("5hd model: mode 3 by hand (weights written in the order 11, 10, 01, 00)", () => {
  const g = Float32Array.of(8);
  // 4x6 half-pixel: source (1.5, 2.5): four cells of 2.
  const r = resize5hdModel(g, call(4, 6, 1, 1), A910, { fma: true });
  assert.equal(r.mode, 3);
  const expected = new Float32Array(24);
  for (const o of [1 * 6 + 2, 1 * 6 + 3, 2 * 6 + 2, 2 * 6 + 3]) expected[o] = 2;
  assert.deepEqual([...r.values], [...expected]);
  // align_corners (out = 1: scale in/out, source 0): all on (0, 0).
  const a = resize5hdModel(g, call(4, 6, 1, 1, { alignCorners: true }), B3, { fma: false });
  assert.deepEqual([...a.values], [8, ...new Array(23).fill(0)]);
  // Image 1x5: H stride 0 (10 lands on 00) and W source 2 (r = 0): the zero-weight writes come first.
  const b = resize5hdModel(g, call(1, 5, 1, 1), A3, { fma: true });
  assert.deepEqual([...b.values], [0, 0, 8, 0, 0]);
});

/**
 * Mode 4 written plainly from the summary's rule, with the test's own coordinates: `fma` contracts
 * the half-pixel source and the accumulation (`fmaf32`), else every operation rounds.
 */
function plainMode4(grad: Float32Array, c: Call5hd, fma = false): Float32Array {
  const coords = (inS: number, outS: number) => {
    const scale = c.alignCorners
      ? (outS < 2 ? f(inS / outS) : f(f(inS - 1) / f(outS - 1)))
      : f(inS / outS);
    return Array.from({ length: outS }, (_, d) => {
      let src = c.alignCorners
        ? f(scale * d)
        : fma
        ? fmaf32(scale, f(d + 0.5), -0.5)
        : f(f(scale * f(d + 0.5)) - 0.5);
      if (src < 0) src = 0;
      const i = Math.floor(src);
      const r = f(src - i);
      return { i, s: i < inS - 1 ? 1 : 0, l: f(1 - r), r };
    });
  };
  const H = coords(c.inH, c.outH);
  const W = coords(c.inW, c.outW);
  const out = new Float32Array(c.inH * c.inW);
  for (let h = 0; h < c.outH; h++) {
    for (let w = 0; w < c.outW; w++) {
      const g = grad[h * c.outW + w];
      const o = H[h].i * c.inW + W[w].i;
      const cells: [number, number][] = [
        [o, f(H[h].l * W[w].l)],
        [o + W[w].s, f(H[h].l * W[w].r)],
        [o + H[h].s * c.inW, f(H[h].r * W[w].l)],
        [o + H[h].s * c.inW + W[w].s, f(H[h].r * W[w].r)],
      ];
      for (const [cell, wt] of cells) {
        out[cell] = fma ? fmaf32(g, wt, out[cell]) : f(out[cell] + f(wt * g));
      }
    }
  }
  return out;
}

Deno.test("5hd model: mode 4 is the row-major axpy loop (fma off: bit for bit; on: differs)", () => {
  const shapes: Call5hd[] = [
    call(6, 5, 11, 13),
    call(9, 8, 4, 3),
    call(6, 5, 11, 13, { alignCorners: true }),
    call(3, 7, 1, 20),
    call(1, 7, 30, 3, { alignCorners: true }),
  ];
  let fusedDiffers = false;
  for (const c of shapes) {
    const grad = randomGrad(c.outH * c.outW, c.outW + 100 * c.inW);
    const split = resize5hdModel(grad, c, A910, { fma: false });
    assert.equal(split.mode, 4);
    assert.deepEqual(bits(split.values), bits(plainMode4(grad, c)), JSON.stringify(c));
    const fused = resize5hdModel(grad, c, A910, { fma: true });
    assert.deepEqual(bits(fused.values), bits(plainMode4(grad, c, true)), JSON.stringify(c));
    if (bits(fused.values).join() !== bits(split.values).join()) fusedDiffers = true;
  }
  assert.ok(fusedDiffers);
  // 2x2 -> 4x4: scale 0.5, every coordinate and weight exact with or without contraction; the
  // results still differ, from vec_axpy's single rounding alone.
  const c = call(2, 2, 4, 4);
  assert.deepEqual(
    bits(axis5hd(2, 4, false, "scalar", true).r),
    bits(axis5hd(2, 4, false, "scalar", false).r),
  );
  let axpyDiffers = false;
  for (let seed = 0; seed < 4 && !axpyDiffers; seed++) {
    const grad = randomGrad(16, 40 + seed);
    const a = resize5hdModel(grad, c, B3, { fma: true }).values;
    const b = resize5hdModel(grad, c, B3, { fma: false }).values;
    axpyDiffers = bits(a).join() !== bits(b).join();
  }
  assert.ok(axpyDiffers);
});

Deno.test("5hd model: mode 5's W coordinates are vector ops (never contracted), mode 6's scalar", () => {
  // W 2 <- 50, half-pixel, column 37: fl(fl(0.04 * 37.5) - 0.5) = 1 exactly (image column 1, the
  // last, r = 0), while the contracted source is just below 1 (column 0 with r = 1 - 2^-24).
  const fused = axis5hd(2, 50, false, "scalar", true);
  const vector = axis5hd(2, 50, false, "vector", false);
  assert.deepEqual([fused.idx[37], vector.idx[37], vector.r[37]], [0, 1, 0]);
  const c = call(41, 2, 41, 50); // gh * gw = 2050: not mode 4
  const grad = new Float32Array(41 * 50);
  grad[37] = 1; // gradient (0, 37); H scale 1: image row 0
  const m5 = resize5hdModel(grad, c, A910, { fma: true });
  assert.equal(m5.mode, 5);
  assert.deepEqual([m5.values[0], m5.values[1]], [0, 1]);
  const m6 = resize5hdModel(grad, c, B3, { fma: true });
  assert.equal(m6.mode, 6);
  assert.deepEqual([m6.values[0], m6.values[1]], [f(1 - fused.r[37]), fused.r[37]]);
  assert.ok(m6.values[0] > 0);
});

const REFERENCE_CASES: readonly Call5hd[] = [
  call(3, 5, 3, 5, { C: 2 }), // 0
  call(1, 1, 7, 9, { N: 2, C: 3 }), // 1
  call(1, 1, 40, 60), // 2
  call(5, 7, 1, 1, { C: 3 }), // 3
  call(6, 5, 11, 13, { C: 2 }), // 4
  call(9, 8, 4, 3), // 4, downsampling
  call(3, 20, 40, 70, { C: 2 }), // 5 / 6
  call(2, 30, 5, 600), // 5 / 6, 256-column chunks with split segments
  call(1, 30, 80, 60), // image height 1: H stride 0, ub and ub2 on the same row
  call(50, 60, 20, 25), // 6, downsampling
  call(3, 800, 4, 1600), // 6; window on A2/A3 (iw >= 768)
  call(2, 1100, 3, 2100), // 6; window on all (iw >= 1024)
  call(2, 1600, 3, 700), // 6; window, downsampling (jumps)
  call(5, 4, 1, 7), // out H = 1
  call(4, 1, 9, 1), // in W = 1, out W = 1
];

Deno.test("5hd model: every mode within a few ulps of a float64 reference", async (t) => {
  for (const soc of ALL_SOCS) {
    await t.step(soc.name, () => {
      const seen = new Set<number>();
      for (const c of REFERENCE_CASES) {
        for (const alignCorners of [false, true]) {
          for (const fma of [false, true]) {
            seen.add(assertNearReference({ ...c, alignCorners }, soc, fma, fma ? 3 : undefined));
          }
        }
      }
      assert.deepEqual(
        [...seen].sort(),
        soc.l1Support ? [0, 1, 2, 3, 4, 5, 6] : [0, 1, 2, 3, 4, 6],
      );
    });
  }
});

Deno.test("5hd model: the atomic modes' results depend on the cores' interleaving", async (t) => {
  for (const soc of ALL_SOCS) {
    await t.step(soc.name, () => {
      // 40 gradient rows into 2 image rows: every image cell gets partials from many cores.
      const c = call(2, 8, 40, 64);
      assert.equal(orderDependent5hd(c, soc), true);
      const grad = randomGrad(40 * 64, 5);
      const results = new Set<string>();
      for (let seed = 0; seed < 24; seed++) {
        results.add(bits(resize5hdModel(grad, c, soc, { fma: false, seed }).values).join());
      }
      assert.ok(results.size >= 2, `${soc.name}: ${results.size} distinct results`);
      // No seed: deterministic (core order).
      const a = resize5hdModel(grad, c, soc, { fma: false }).values;
      const b = resize5hdModel(grad, c, soc, { fma: false }).values;
      assert.deepEqual(bits(a), bits(b));
      // One gradient row: one core, one result whatever the seed.
      const one = call(3, 100, 1, 2100);
      assert.equal(orderDependent5hd(one, soc), false);
      const g1 = randomGrad(2100, 9);
      const single = new Set<string>();
      for (let seed = 0; seed < 8; seed++) {
        single.add(bits(resize5hdModel(g1, one, soc, { fma: true, seed }).values).join());
      }
      single.add(bits(resize5hdModel(g1, one, soc, { fma: true }).values).join());
      assert.equal(single.size, 1);
    });
  }
});

Deno.test("5hd model: atomic flushes are applied in the chosen order, per core in program order", () => {
  // Recompute the model from its flushes in core order; and check the seeded case is a permutation.
  const c = call(2, 8, 6, 400);
  assert.equal(tilingMode5hd(c, A910), 5);
  const grad = randomGrad(6 * 400, 13);
  const perCore = flushes5hd(grad, c, A910, false);
  assert.equal(perCore.length, 6); // 6 rows on 32 cores: one row per core
  assert.ok(perCore.every((l) => l.length === 2)); // ub, then ub2
  const out = new Float32Array(16);
  for (const list of perCore) {
    for (const fl of list) {
      for (let i = 0; i < fl.values.length; i++) {
        out[fl.row * 8 + fl.start + i] = f(out[fl.row * 8 + fl.start + i] + fl.values[i]);
      }
    }
  }
  assert.deepEqual(bits(resize5hdModel(grad, c, A910, { fma: false }).values), bits(out));
});

Deno.test("5hd model: mode 5 adds the last image column's l-terms before its r-terms", () => {
  // 910A, image 128x4, gradient 128x16 (mode 5). H: scale 1, source = d: hl = 1, hr = 0. W:
  // columns 14, 15 land on image column 3 (the last) with r = 0.125, 0.375; in one vec_add per
  // half: l14, l15, then r14, r15. Interleaved (l14, r14, l15, r15) differs for some gradients.
  const c = call(128, 4, 128, 16);
  assert.equal(tilingMode5hd(c, A910), 5);
  const pick = randomGrad(2000, 21);
  let checked = 0;
  for (let i = 0; i + 1 < pick.length && checked < 3; i += 2) {
    const g14 = f(pick[i] * 2 ** 20);
    const g15 = pick[i + 1];
    const [l14, r14, l15, r15] = [f(0.875 * g14), f(0.125 * g14), f(0.625 * g15), f(0.375 * g15)];
    const source = f(f(f(l14 + l15) + r14) + r15);
    const interleaved = f(f(f(l14 + r14) + l15) + r15);
    if (source === interleaved) continue;
    const grad = new Float32Array(128 * 16);
    grad[14] = g14;
    grad[15] = g15;
    const { values } = resize5hdModel(grad, c, A910, { fma: true, seed: i });
    assert.equal(values[3], source);
    checked++;
  }
  assert.equal(checked, 3);
});

Deno.test("5hd model: mode 6 flushes wide rows in overlapping windows", async (t) => {
  await t.step("A2: windows of U + 1 = 768 cells and a flush per 1536-column chunk", () => {
    // Image 3x800, gradient 2x1600, half-pixel W scale 0.5: column 1535 reaches image column 767 =
    // U (stride 1): the window [0, 768) is flushed; the chunk ends at 1535 (cells 767..768); the
    // tail chunk (64 columns, up to image column 799 with stride 0) flushes 767..799.
    const c = call(3, 800, 2, 1600);
    const grad = randomGrad(2 * 1600, 17);
    const perCore = flushes5hd(grad, c, B3, false);
    assert.equal(perCore.length, 2);
    for (const list of perCore) {
      assert.deepEqual(list.map((fl) => [fl.start, fl.values.length]), [
        [0, 768],
        [0, 768],
        [767, 2],
        [767, 2],
        [767, 33],
        [767, 33],
      ]);
    }
    // 910A (tensor_c 2048): iw 800 < 1024, one flush pair per row.
    assert.deepEqual(
      flushes5hd(grad, c, A910, false)[0].map((fl) => [fl.start, fl.values.length]),
      [[0, 800], [0, 800]],
    );
  });
  await t.step(
    "a column that jumps onto a last column that is a multiple of U: the source drops it",
    () => {
      // A2, image 2x1535, gradient 2x2, align_corners: column 1 has source 1534 = 2U (stride 0) and
      // jumps from window 0: the window is flushed, loop_init = 2 and get_output_loop_idx puts the
      // terms in slot U; the final flush moves (1534 + 1 + 0) - 2U = 1 cell (slot 0): the terms are
      // lost. Column 0 (source 0) arrives.
      const c = call(2, 1535, 2, 2, { alignCorners: true });
      assert.equal(tilingMode5hd(c, B3), 6);
      const { values } = resize5hdModel(Float32Array.of(1, 2, 4, 8), c, B3, { fma: false });
      assert.deepEqual([values[0], values[1534], values[1535], values[1535 + 1534]], [1, 0, 4, 0]);
      // One column fewer (1534 is not a multiple of 767 as the last column): everything arrives.
      const d = call(2, 1534, 2, 2, { alignCorners: true });
      const v = resize5hdModel(Float32Array.of(1, 2, 4, 8), d, B3, { fma: false }).values;
      assert.deepEqual([v[0], v[1533], v[1534], v[1534 + 1533]], [1, 2, 4, 8]);
    },
  );
});

Deno.test("5hd model: out = 1 and in = 1 edges", () => {
  // Gradient height 1, align_corners: source row 0 (scale in/out); half-pixel: row 2 of 5.
  const g = Float32Array.from({ length: 7 }, (_, i) => i + 1);
  for (const [alignCorners, row] of [[true, 0], [false, 2]] as const) {
    const { values, mode } = resize5hdModel(g, call(5, 4, 1, 7, { alignCorners }), A910, {
      fma: false,
    });
    assert.equal(mode, 4);
    values.forEach((v, i) => {
      if (Math.floor(i / 4) !== row) assert.equal(v, 0);
    });
    const rowSum = values.subarray(row * 4, row * 4 + 4).reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(rowSum - 28) < 1e-5, `${rowSum}`);
  }
  // Image width 1 (stride 0): both W terms of each gradient cell land on the one column.
  const h = Float32Array.of(1, 2, 3, 4, 5, 6, 7, 8, 9);
  const r = resize5hdModel(h, call(4, 1, 9, 1), P310, { fma: true });
  const total = r.values.reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(total - 45) < 1e-5, `${total}`);
});
