// Self-tests of the model of the deterministic route (tests/support/route_model.ts): a bilinear
// backward call on the TBE 5HD kernel split into two H-unchanged launches (W pass, then H pass on the
// transposed intermediate). Checked: the determinism property of H-unchanged launches over every
// tiling mode they reach and every SoC (no result cell gets nonzero atomic flushes from two cores),
// with an H-changing control that does; bit-identical route results over the cores' interleavings;
// accuracy against an exact float64 backward; how one +Infinity spreads; and the mode-6 column loss
// of the H pass.

import assert from "node:assert/strict";
import {
  type Call5hd,
  coreSplit5hd,
  orderDependent5hd,
  resize5hdModel,
  type Soc5hd,
  SOC_5HD,
  tilingMode5hd,
} from "../support/resize5hd_model.ts";
import {
  crossCoreCells,
  hPassCall,
  lostColumns5hd,
  routeLostColumns,
  routeModel,
  wPassCall,
} from "../support/route_model.ts";
import { roundTo } from "../support/ascend950_model.ts";

const f = Math.fround;
const A910 = SOC_5HD.Ascend910A;
const P310 = SOC_5HD.Ascend310P3;
const B3 = SOC_5HD.Ascend910B3;
const A3 = SOC_5HD.Ascend910_9391;
const ALL_SOCS: readonly Soc5hd[] = [A910, P310, B3, A3];
const SEEDS: readonly number[] = [1, 2, 3, 5, 8, 13, 21, 34];

type Dtype = "float32" | "float16" | "bfloat16";

/** A call from gradient `outH x outW` to image `inH x inW` (N = 1, C = 2 unless told). */
function call(
  outH: number,
  outW: number,
  inH: number,
  inW: number,
  alignCorners = false,
  C = 2,
): Call5hd {
  return { N: 1, C, inH, inW, outH, outW, alignCorners };
}

function show(c: Call5hd): string {
  return `${c.outH}x${c.outW}->${c.inH}x${c.inW} align=${c.alignCorners} NC=${c.N * c.C}`;
}

/** mulberry32, uniform in [0, 1). */
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

/** Both signs, magnitudes 2^-5 .. 2^6 (float32; rounded to a 16-bit dtype when asked). */
function randomGrad(c: Call5hd, seed: number, dtype: Dtype = "float32"): Float32Array {
  const next = prng(seed);
  const g = Float32Array.from(
    { length: c.N * c.C * c.outH * c.outW },
    () => (next() - 0.5) * 2 ** Math.floor(next() * 12 - 4),
  );
  return dtype === "float32" ? g : g.map((v) => roundTo(dtype, v));
}

/** The bit pattern of a result, every NaN as 0x7fc00000. */
function pattern(a: Float32Array): string {
  const u = new Uint32Array(a.length);
  const bits = new Uint32Array(a.buffer, a.byteOffset, a.length);
  for (let i = 0; i < a.length; i++) u[i] = Number.isNaN(a[i]) ? 0x7fc00000 : bits[i];
  return u.join(",");
}

// ---------------------------------------------------------------------------------------------------
// An exact float64 bilinear backward with PyTorch's coordinates.

/**
 * One axis as PyTorch forms it for a float32 / float16 / bfloat16 tensor (opmath float:
 * `area_pixel_compute_scale` and `area_pixel_compute_source_index` in float32, no contraction):
 * scale `in / out`, or `(in - 1) / (out - 1)` with alignCorners (0 when out < 2); source
 * `scale * (d + 0.5) - 0.5` clamped at 0 (align: `scale * d`); lower index `floor(src)`, the upper
 * one `idx + p` with `p = idx < in - 1 ? 1 : 0` (the last index clamped); weights `1 - r` (here
 * exact, in float64) and `r = src - idx`.
 */
interface TorchAxis {
  readonly idx: Int32Array;
  readonly p: Int32Array;
  readonly l: Float64Array;
  readonly r: Float64Array;
}

function torchAxis(inSize: number, outSize: number, alignCorners: boolean): TorchAxis {
  const scale = alignCorners
    ? (outSize > 1 ? f(f(inSize - 1) / f(outSize - 1)) : 0)
    : f(f(inSize) / f(outSize));
  const idx = new Int32Array(outSize);
  const p = new Int32Array(outSize);
  const l = new Float64Array(outSize);
  const r = new Float64Array(outSize);
  for (let d = 0; d < outSize; d++) {
    const src = alignCorners ? f(scale * d) : Math.max(f(f(scale * f(d + 0.5)) - 0.5), 0);
    idx[d] = Math.floor(src);
    p[d] = idx[d] < inSize - 1 ? 1 : 0;
    r[d] = src - idx[d];
    l[d] = 1 - r[d];
  }
  return { idx, p, l, r };
}

/** The largest number of gradient indices that touch one image index (lower or upper). */
function maxTouch(a: TorchAxis, inSize: number): number {
  const n = new Int32Array(inSize);
  for (let d = 0; d < a.idx.length; d++) {
    n[a.idx[d]]++;
    if (a.p[d] === 1) n[a.idx[d] + 1]++;
  }
  return Math.max(...n);
}

/** Per result cell: the exact (float64) sum of the terms `g * wH * wW` and the sum of their |.|. */
function exactBackward(grad: Float32Array, c: Call5hd): { sum: Float64Array; abs: Float64Array } {
  const H = torchAxis(c.inH, c.outH, c.alignCorners);
  const W = torchAxis(c.inW, c.outW, c.alignCorners);
  const sum = new Float64Array(c.N * c.C * c.inH * c.inW);
  const abs = new Float64Array(sum.length);
  for (let q = 0; q < c.N * c.C; q++) {
    const gOff = q * c.outH * c.outW;
    const iOff = q * c.inH * c.inW;
    for (let h = 0; h < c.outH; h++) {
      for (let w = 0; w < c.outW; w++) {
        const g = grad[gOff + h * c.outW + w];
        for (const [row, wh] of [[H.idx[h], H.l[h]], [H.idx[h] + H.p[h], H.r[h]]]) {
          for (const [col, ww] of [[W.idx[w], W.l[w]], [W.idx[w] + W.p[w], W.r[w]]]) {
            const t = g * wh * ww;
            sum[iOff + row * c.inW + col] += t;
            abs[iOff + row * c.inW + col] += Math.abs(t);
          }
        }
      }
    }
  }
  return { sum, abs };
}

/**
 * The route's error bound. Every exact term t = g * wH * wW reaches a result cell through at most
 * k roundings, each a factor (1 + d) with |d| <= u = 2^-24: per pass the weight `fl(1 - r)` (1), the
 * product with the gradient / with T (1), and the additions on the term's path to the cell (every
 * `vec_axpy` / `vec_add` into the UB cell, then each atomic flush onto it). A cell's UB chain has at
 * most maxTouch additions (the gradient indices touching that image index); its flushes are at most
 * 2 per tensor_c-column chunk (a cell lies in at most two mode-6 windows) plus 2 (ub and ub2); modes
 * 1/2 add at most 10 levels of their slot tree. Exact additions (of zeros) only help. So
 *   k = sum over run passes of (maxTouch + 2 * ceil(out / tensor_c) + 14),
 * and (Higham, Lemma 3.1) |route - exact| <= gamma_k * sum |t|, gamma_k = k u / (1 - k u), plus
 * 2^-50 * sum |t| for the float64 reference's own roundings. A 16-bit dtype adds its one rounding:
 * |rne(y) - y| <= u_d |y| + s_d / 2 with |y| <= |exact| + B (u_d = 2^-11, float16 subnormal spacing
 * s_d = 2^-24; bfloat16 2^-8 and 2^-133).
 */
function routeBound(c: Call5hd, soc: Soc5hd, dtype: Dtype): (exact: number, abs: number) => number {
  const u = 2 ** -24;
  let k = 0;
  const pass = (inSize: number, outSize: number): number =>
    maxTouch(torchAxis(inSize, outSize, c.alignCorners), inSize) +
    2 * Math.ceil(outSize / soc.tensorC) + 14;
  if (wPassCall(c) !== null) k += pass(c.inW, c.outW);
  if (hPassCall(c) !== null) k += pass(c.inH, c.outH);
  const gamma = (k * u) / (1 - k * u) + 2 ** -50;
  const [ud, half] = dtype === "float16"
    ? [2 ** -11, 2 ** -25]
    : dtype === "bfloat16"
    ? [2 ** -8, 2 ** -134]
    : [0, 0];
  return (exact, abs) => {
    const b = gamma * abs;
    return b + ud * (Math.abs(exact) + b) + half;
  };
}

function assertWithinBound(
  what: string,
  values: Float32Array,
  grad: Float32Array,
  c: Call5hd,
  soc: Soc5hd,
  dtype: Dtype,
): void {
  const { sum, abs } = exactBackward(grad, c);
  const bound = routeBound(c, soc, dtype);
  for (let i = 0; i < values.length; i++) {
    const err = Math.abs(values[i] - sum[i]);
    const b = bound(sum[i], abs[i]);
    if (!(err <= b)) {
      assert.fail(`${what}: cell ${i}: ${values[i]} vs exact ${sum[i]} (bound ${b})`);
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// The determinism property.

/** The tiling mode, with windowed mode 6 (image rows of >= tensor_c / 2 cells) as "6w". */
function modeName(c: Call5hd, soc: Soc5hd): string {
  const m = tilingMode5hd(c, soc);
  return m === 6 && c.inW >= Math.floor(soc.tensorC / 2) ? "6w" : String(m);
}

/** H-unchanged calls [rows, image width, gradient width] reaching every mode such a call can. */
function hUnchangedShapes(soc: Soc5hd): [number, number, number][] {
  // Windowed mode 6 widths: one window boundary and several (A2/A3 tensor_c 1536: U = 767;
  // 910/310P 2048: U = 1023).
  const [w1, w2] = soc.tensorC === 1536 ? [1100, 2100] : [2100, 4200];
  return [
    [1, 1, 70], // mode 1 (1x1 image)
    [1, 1, 2100], // mode 2 (gradient row longer than tensor_c)
    [1, 70, 1], // mode 3 (1x1 gradient)
    [4, 7, 13], // mode 4, W upsampling
    [4, 13, 7], // mode 4, W downsampling
    [40, 30, 70], // W up: mode 5 on the L1 parts, else 6 (narrow rows)
    [31, 30, 70], // the same with an uneven core split
    [40, 70, 30], // W down: mode 6 (narrow rows)
    [2, 700, 300], // 2 rows (2 cores): mode 6
    [41, 1, 70], // 1-column image: 5 on L1, else 6
    [41, 1, 300], // 1-column image, gw / iw >= 255: mode 6
    [40, 70, 1], // 1-column gradient: mode 6
    [1, 30, 2100], // 1 row: 5 on L1, else 6 (one core)
    [1, w2, w1], // 1 row, windowed 6
    [5, w1, w1 + 333], // windowed 6, W up
    [5, w1, Math.floor(w1 * 0.6)], // windowed 6, W down
    [5, w2, w2 + 333],
    [5, w2, Math.floor(w2 / 2)],
  ];
}

Deno.test("route model: H-unchanged launches feed every result cell from one core", async (t) => {
  for (const soc of ALL_SOCS) {
    await t.step(`${soc.name}: every mode, both alignCorners, crossCoreCells == 0`, () => {
      const reached = new Set<string>();
      for (const [rows, iw, gw] of hUnchangedShapes(soc)) {
        for (const align of [false, true]) {
          const c = call(rows, gw, rows, iw, align);
          const grad = randomGrad(c, rows * 7919 + iw * 31 + gw + (align ? 1 : 0));
          for (const fma of [false, true]) {
            assert.equal(crossCoreCells(c, soc, grad, fma), 0, `${soc.name} ${show(c)} fma=${fma}`);
          }
          const mode = modeName(c, soc);
          const atomic = mode === "5" || mode === "6" || mode === "6w";
          if (!atomic || coreSplit5hd(c, soc).needCoreNum >= 2) reached.add(mode);
        }
      }
      // Every mode an H-unchanged call can reach, the atomic ones (5, 6, windowed 6) on two or
      // more cores; modes 1-3 need a 1-row call (1: image 1x1, 2: atomic but one add per cell onto
      // zero, 3: no adds) and split the planes, not the rows, over the cores.
      const want = soc.l1Support
        ? ["1", "2", "3", "4", "5", "6", "6w"]
        : ["1", "2", "3", "4", "6", "6w"];
      assert.deepEqual([...reached].sort(), want, soc.name);
    });
  }
  await t.step("control: H-changing mode 5/6 calls do have cells fed by two cores", () => {
    for (const soc of ALL_SOCS) {
      const [, w2] = soc.tensorC === 1536 ? [1100, 2100] : [2100, 4200];
      const controls = [
        call(40, 70, 20, 30), // H up: mode 5 on L1 else 6
        call(80, 30, 40, 70), // H up, W down: mode 6
        // H down by 4/3: neighbouring gradient rows still share image rows (each such cell gets
        // just two nonzero flushes onto 0, which commute: cross-core but not order-dependent).
        call(30, 70, 40, 30),
        call(10, Math.floor(w2 / 2), 5, w2, true), // windowed 6
      ];
      for (const c of controls) {
        const mode = tilingMode5hd(c, soc);
        assert.ok(mode === 5 || mode === 6, `${soc.name} ${show(c)} mode ${mode}`);
        assert.ok(orderDependent5hd(c, soc));
        const n = crossCoreCells(c, soc, randomGrad(c, 99), false);
        assert.ok(n > 0, `${soc.name} ${show(c)}: ${n}`);
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------------
// Bit-identical route results.

/** Calls whose passes reach every mode a pass can take (per SoC; comments: W pass, H pass). */
function routeCalls(soc: Soc5hd): Call5hd[] {
  const w2 = soc.tensorC === 1536 ? 2100 : 4200;
  return [
    call(1, 50, 6, 1), // 1 (image 1x1, gradient 1x50), 3 (gradient 1x1)
    call(1, 2100, 3, 1), // 2 (gradient 1x2100 > tensor_c), 3
    call(50, 3, 1, 1), // 4, 1
    call(2100, 1, 1, 1), // skipped, 2
    call(1, 1, 5, 7), // 3, 4
    call(6, 8, 3, 4, true), // 4, 4
    call(32, 70, 16, 30), // 5 / 6, 4
    call(16, 140, 8, 130), // 5 / 6, 5 / 6
    call(40, 30, 80, 70, true), // 6, 6 (downsampling both)
    call(10, 1100, 5, w2), // windowed 6, 5 / 6
    call(6, 8, 6, 4), // 4, skipped
    call(60, 4, 30, 4), // skipped, 5 / 6
  ];
}

Deno.test("route model: bit-identical over the cores' interleavings", async (t) => {
  for (const soc of ALL_SOCS) {
    await t.step(soc.name, () => {
      const wModes = new Set<number | null>();
      const hModes = new Set<number | null>();
      let varying = 0;
      for (const c of routeCalls(soc)) {
        for (const dtype of ["float32", "float16", "bfloat16"] as const) {
          if (dtype !== "float32" && c.outH * c.outW > 1000) continue;
          const grad = randomGrad(c, 17 + c.outW, dtype);
          const route = new Set<string>();
          for (const seed of [undefined, ...SEEDS]) {
            const r = routeModel(grad, c, soc, { fma: true, seed, dtype });
            route.add(pattern(r.values));
            wModes.add(r.modes.w);
            hModes.add(r.modes.h);
          }
          assert.equal(route.size, 1, `${soc.name} ${show(c)} ${dtype}: ${route.size} patterns`);
        }
        // The single launch of the same call (these H-upsampling ones: many flushes per shared
        // cell, few rows per core): order-dependent where two cores feed a cell.
        const mode = tilingMode5hd(c, soc);
        if (mode !== 5 && mode !== 6) continue;
        const grad = randomGrad(c, 17 + c.outW);
        const single = new Set(
          SEEDS.map((seed) => pattern(resize5hdModel(grad, c, soc, { fma: true, seed }).values)),
        );
        if (crossCoreCells(c, soc, grad, true) > 0) {
          assert.ok(single.size >= 2, `${soc.name} ${show(c)}: single launch ${single.size}`);
          varying++;
        } else {
          assert.equal(single.size, 1, `${soc.name} ${show(c)}`);
        }
      }
      assert.ok(varying >= 2, `${soc.name}: ${varying} order-dependent single launches`);
      const all = soc.l1Support ? [null, 1, 2, 3, 4, 5, 6] : [null, 1, 2, 3, 4, 6];
      assert.deepEqual([...wModes].sort(), [...all].sort(), `${soc.name} W pass modes`);
      assert.deepEqual([...hModes].sort(), [...all].sort(), `${soc.name} H pass modes`);
    });
  }
});

// ---------------------------------------------------------------------------------------------------
// Accuracy.

Deno.test("route model: within a float32 summation bound of the exact backward", async (t) => {
  for (const soc of ALL_SOCS) {
    await t.step(soc.name, () => {
      const calls = [
        ...routeCalls(soc),
        call(3, 7, 9, 20, true),
        call(9, 20, 3, 7),
        call(12, 1, 5, 600),
        call(7, 2000, 13, 1100, true),
      ];
      for (const c0 of calls) {
        for (const align of [false, true]) {
          const c = { ...c0, alignCorners: align };
          assert.deepEqual(routeLostColumns(c, soc, false), { w: [], h: [] }, show(c));
          for (const dtype of ["float32", "float16", "bfloat16"] as const) {
            const grad = randomGrad(c, 5 + c.inW * 3 + c.inH, dtype);
            // fma: the half-pixel source is contracted (one rounding), so its coordinates differ
            // from PyTorch's float32 ones; with alignCorners (`scale * d`) they are the same.
            for (const fma of align ? [false, true] : [false]) {
              const r = routeModel(grad, c, soc, { fma, seed: 3, dtype });
              const what = `${soc.name} ${show(c)} ${dtype} fma=${fma}`;
              assertWithinBound(what, r.values, grad, c, soc, dtype);
              if (dtype !== "float32") {
                assert.ok(r.values.every((v) => roundTo(dtype, v) === v), `${what}: not rounded`);
              }
            }
          }
        }
      }
    });
  }
});

// ---------------------------------------------------------------------------------------------------
// Non-finite gradients.

type Cell = readonly [number, number];

function nonFinite(values: Float32Array, c: Call5hd, plane = 0): Cell[] {
  const cells: Cell[] = [];
  const o = plane * c.inH * c.inW;
  for (let i = 0; i < c.inH; i++) {
    for (let j = 0; j < c.inW; j++) {
      if (!Number.isFinite(values[o + i * c.inW + j])) cells.push([i, j]);
    }
  }
  return cells;
}

function product(rows: Iterable<number>, cols: Iterable<number>): Cell[] {
  const rs = [...new Set(rows)].sort((a, b) => a - b);
  const cs = [...new Set(cols)].sort((a, b) => a - b);
  return rs.flatMap((r) => cs.map((col): Cell => [r, col]));
}

/**
 * The rule, derived from the kernel's structure. Every launch sends gradient cell (h, w) to rows
 * {idxH(h), idxH(h) + pH(h)} x columns {idxW(w), idxW(w) + pW(w)} with weights wH * wW; Inf * w is
 * Inf for w > 0 and NaN for w = 0 (no other infinity to cancel it). So:
 * - single launch: exactly rows {k, k + pH} x columns {i, i + pW} (k = idxH(h), i = idxW(w)).
 * - route, W pass (H unchanged: row h -> row h with weight 1, and row h + 1, or h itself for the last
 *   row, with weight 0 = NaN): T is non-finite on rows {h, min(h + 1, Ho - 1)} x columns {i, i + pW};
 *   skipped: {h} x {w}.
 * - route, H pass (the same on the transposed T: image column x -> x with weight 1 and
 *   min(x + 1, Wi - 1) with weight 0): each non-finite T(h', x) makes rows {idxH(h'), idxH(h') +
 *   pH(h')} x columns {x, min(x + 1, Wi - 1)} non-finite; skipped: T as is.
 * The route's set contains the single launch's (h' = h, x in {i, i + pW}); every extra cell
 * receives only NaN contributions (its paths all cross a weight-0 neighbour), so it is NaN.
 */
function routeNonFiniteRule(c: Call5hd, h: number, w: number): { single: Cell[]; route: Cell[] } {
  const H = torchAxis(c.inH, c.outH, c.alignCorners);
  const W = torchAxis(c.inW, c.outW, c.alignCorners);
  const hRows = (x: number): number[] => [H.idx[x], H.idx[x] + H.p[x]];
  const wCols = [W.idx[w], W.idx[w] + W.p[w]];
  const single = product(hRows(h), wCols);
  const wRan = wPassCall(c) !== null;
  const tRows = wRan ? [h, Math.min(h + 1, c.outH - 1)] : [h];
  const tCols = wRan ? wCols : [w];
  const route = hPassCall(c) === null
    ? product(tRows, tCols)
    : product(tRows.flatMap(hRows), tCols.flatMap((x) => [x, Math.min(x + 1, c.inW - 1)]));
  return { single, route };
}

function withInf(c: Call5hd, h: number, w: number, seed: number): Float32Array {
  const grad = randomGrad(c, seed);
  grad[h * c.outW + w] = Infinity; // plane 0
  return grad;
}

Deno.test("route model: one +Infinity in the gradient", async (t) => {
  await t.step("A2, 6x8 -> 3x4 (both passes mode 4), by hand", () => {
    // W axis 8 -> 4 half-pixel: src = 0.5 w - 0.25 (w = 0 clamped to 0): idx [0,0,0,1,1,2,2,3],
    // r [0,.25,.75,.25,.75,.25,.75,.25], upper index idx+1 except w = 7 (idx 3 = last: stride 0).
    // H axis 6 -> 3: idx [0,0,0,1,1,2], r [0,.25,.75,.25,.75,.25], stride 0 for h = 5.
    const c = call(6, 8, 3, 4, false, 1);
    const run = (h: number, w: number): { single: Float32Array; route: Float32Array } => {
      const grad = withInf(c, h, w, 4);
      return {
        single: resize5hdModel(grad, c, B3, { fma: false, seed: 1 }).values,
        route: routeModel(grad, c, B3, { fma: false, seed: 1 }).values,
      };
    };
    const kind = (v: number): string => (Number.isNaN(v) ? "NaN" : v === Infinity ? "+Inf" : "-");
    const kinds = (v: Float32Array): string[] => [...v].map(kind);
    const grid = (marks: Record<string, string>): string[] =>
      Array.from({ length: 12 }, (_, i) => marks[`${Math.floor(i / 4)},${i % 4}`] ?? "-");
    // Inf at (2, 3): hl .25 hr .75, wl .75 wr .25, all > 0. Single: rows {0,1} x cols {1,2}, all
    // +Inf. Route: T(6x4) rows {2,3} x cols {1,2} (T(2,1), T(2,2) +Inf; row 3 NaN = Inf * 0); the
    // H pass sends T row 2 to image rows {0,1}, T row 3 to {1,2}, and each T column x also to x+1
    // with weight 0: rows {0,1,2} x cols {1,2,3}. Only (0,1) stays +Inf (T(2,1) * hl, reached by
    // no NaN): (0,2) gets T(2,1)'s weight-0 NaN, row 1 gets T(3,x)'s NaN, the rest only NaN.
    let r = run(2, 3);
    assert.deepEqual(
      kinds(r.single),
      grid({ "0,1": "+Inf", "0,2": "+Inf", "1,1": "+Inf", "1,2": "+Inf" }),
    );
    const nan9: Record<string, string> = {};
    for (const i of [0, 1, 2]) for (const j of [1, 2, 3]) nan9[`${i},${j}`] = "NaN";
    assert.deepEqual(kinds(r.route), grid({ ...nan9, "0,1": "+Inf" }));
    // Inf at (0, 0): r = 0 on both axes. Single: (0,0) +Inf, (0,1), (1,0), (1,1) NaN (weight 0).
    // Route: T rows {0,1} x cols {0,1}; T rows 0 and 1 both go to image rows {0,1}: rows {0,1} x
    // cols {0,1,2}, all NaN (T(1,0) is NaN and reaches (0,0) with weight hl(1) = .75).
    r = run(0, 0);
    assert.deepEqual(
      kinds(r.single),
      grid({ "0,0": "+Inf", "0,1": "NaN", "1,0": "NaN", "1,1": "NaN" }),
    );
    const nan6: Record<string, string> = {};
    for (const i of [0, 1]) for (const j of [0, 1, 2]) nan6[`${i},${j}`] = "NaN";
    assert.deepEqual(kinds(r.route), grid(nan6));
    // Inf at (5, 7), the last cell: every stride is 0. Single: rows {2} x cols {3} only,
    // +Inf (weights .75 * .75, .75 * .25, ... all onto (2,3)). Route: the W pass's last T row gets
    // its own weight-0 flush (row h + 0): T(5,3) = NaN; the H pass keeps it on (2,3): NaN only.
    r = run(5, 7);
    assert.deepEqual(kinds(r.single), grid({ "2,3": "+Inf" }));
    assert.deepEqual(kinds(r.route), grid({ "2,3": "NaN" }));
  });

  await t.step("the rule over every mode, skipped passes and SoCs", () => {
    const cases: [Soc5hd, Call5hd][] = [
      [B3, call(6, 8, 3, 4, true, 1)],
      [A910, call(80, 70, 40, 30, false, 1)], // single 5; route 5, 5
      [B3, call(80, 70, 40, 30, true, 1)], // single 6; route 6, 6
      [A910, call(40, 30, 80, 70, false, 1)], // downsampling: 6; route 6, 6
      [B3, call(10, 1100, 5, 2100, true, 1)], // windowed 6
      [P310, call(6, 8, 6, 4, false, 1)], // H pass skipped
      [A3, call(60, 4, 30, 4, true, 1)], // W pass skipped
      [B3, call(1, 50, 6, 1, false, 1)], // W pass 1, H pass 3
      [A3, call(1, 2100, 3, 1, true, 1)], // W pass 2, H pass 3
      [A910, call(1, 1, 5, 7, false, 1)], // W pass 3, H pass 4
      [B3, call(50, 3, 1, 1, true, 1)], // W pass 4, H pass 1
    ];
    for (const [soc, c] of cases) {
      assert.deepEqual(routeLostColumns(c, soc, false), { w: [], h: [] });
      const next = prng(c.outW * 7 + c.inW);
      const spots: Cell[] = [
        [0, 0],
        [0, c.outW - 1],
        [c.outH - 1, 0],
        [c.outH - 1, c.outW - 1],
        [Math.floor(c.outH / 2), Math.floor(c.outW / 2)],
      ];
      for (let k = 0; k < 5; k++) {
        spots.push([Math.floor(next() * c.outH), Math.floor(next() * c.outW)]);
      }
      for (const [h, w] of spots) {
        const grad = withInf(c, h, w, h * 31 + w);
        const single = resize5hdModel(grad, c, soc, { fma: false, seed: 7 }).values;
        const route = routeModel(grad, c, soc, { fma: false, seed: 7 }).values;
        const rule = routeNonFiniteRule(c, h, w);
        const what = `${soc.name} ${show(c)} Inf at (${h}, ${w})`;
        assert.deepEqual(nonFinite(single, c), rule.single, `${what}: single launch`);
        assert.deepEqual(nonFinite(route, c), rule.route, `${what}: route`);
        const inSingle = new Set(rule.single.map(([i, j]) => i * c.inW + j));
        for (const [i, j] of rule.route) {
          if (!inSingle.has(i * c.inW + j)) {
            assert.ok(Number.isNaN(route[i * c.inW + j]), `${what}: (${i}, ${j}) not NaN`);
          }
        }
        assert.ok(rule.single.every(([i, j]) => rule.route.some(([a, b]) => a === i && b === j)));
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------------
// Mode-6 column loss.

Deno.test("route model: the H pass's windowed mode 6 drops a gradient row", async (t) => {
  await t.step("Ho = 2, alignCorners: lost iff Hi - 1 = m U, m >= 2 (U = tensor_c / 2 - 1)", () => {
    // Gradient row 1 lands on image row (Hi - 1) * 1 = Hi - 1 (scale (Hi-1)/1 exact), the last
    // (stride 0); row 0 on row 0, in window 0. In the H pass (inW = Hi, outW = 2, windowed when
    // Hi >= tensor_c / 2) that jump leaves window 0; when Hi - 1 = m U the new window starts at
    // m U and the cell takes slot U, past the window's last flush of 1 cell: lost. m = 1 stays in
    // window 0 (slot U, flushed with U + 1 cells).
    for (const soc of [B3, A910]) {
      const U = soc.tensorC / 2 - 1;
      const lossy: number[] = [];
      for (let hi = 2; hi <= 3 * U + 10; hi++) {
        const hc = hPassCall(call(2, 5, hi, 3, true, 1));
        if (hc !== null && lostColumns5hd(hc, soc, false).length > 0) lossy.push(hi);
      }
      assert.deepEqual(lossy, [2 * U + 1, 3 * U + 1], soc.name);
    }
  });

  await t.step("A2: 2x5 -> 1535x3 loses gradient row 1 in the route, not in one launch", () => {
    const c = call(2, 5, 1535, 3, true);
    assert.deepEqual(routeLostColumns(c, B3, false), { w: [], h: [1] });
    assert.deepEqual(routeLostColumns(c, B3, true), { w: [], h: [1] });
    assert.equal(modeName(hPassCall(c)!, B3), "6w"); // H pass: 3 rows, inW 1535, outW 2
    assert.equal(modeName(wPassCall(c)!, B3), "4"); // W pass: 2 rows, 5 -> 3
    assert.equal(modeName(c, B3), "6"); // one launch: image rows of 3 cells, not windowed
    // The same call on the 910 (U = 1023) loses nothing; Hi = 2047 = 2 U + 1 does.
    assert.deepEqual(routeLostColumns(c, A910, false), { w: [], h: [] });
    assert.deepEqual(routeLostColumns(call(2, 5, 2047, 3, true), A910, false), { w: [], h: [1] });
    // The W-pass twin (2 gradient columns -> 1535 image columns) loses in the W pass instead.
    assert.deepEqual(routeLostColumns(call(3, 2, 5, 1535, true), B3, false), { w: [1], h: [] });

    const grad = randomGrad(c, 12);
    const route = routeModel(grad, c, B3, { fma: false, seed: 2 }).values;
    const single = resize5hdModel(grad, c, B3, { fma: false, seed: 2 }).values;
    const { sum } = exactBackward(grad, c);
    // Image row 1534 is gradient row 1 interpolated along W (weight 1): nonzero in the exact
    // result and the single launch, all zero in the route.
    for (let q = 0; q < c.N * c.C; q++) {
      const row = (q * c.inH + 1534) * c.inW;
      for (let j = 0; j < c.inW; j++) {
        assert.notEqual(sum[row + j], 0);
        assert.equal(route[row + j], 0);
        // At most three terms of one sign each side: a few float32 roundings.
        assert.ok(Math.abs(single[row + j] - sum[row + j]) <= 2 ** -20 * Math.abs(sum[row + j]));
      }
    }
    // Gradient row 1 reaches image row 1534 only (src = 1534 exactly, r = 0): the rest of the
    // route is the exact backward of the gradient without row 1, within the bound.
    const kept = grad.slice();
    for (let q = 0; q < c.N * c.C; q++) kept.fill(0, (q * 2 + 1) * c.outW, (q * 2 + 2) * c.outW);
    assertWithinBound("route without row 1", route, kept, c, B3, "float32");
  });
});
