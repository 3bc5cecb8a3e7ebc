/**
 * The Ascend 950 (arch35) bilinear rules: each NCHW ResizeBilinearV2Grad kernel's per-dimension
 * table as the shared CPU kernels consume it (which kernel runs: `ascend950_route.ts`). Paths are in CANN's
 * public operator source (`hicann/ops-cv`); docs/device-semantics.md ("Ascend 950") states the
 * rules in prose. In the tiling, "Src" is the result y (the library's `inputSize`) and "Des" the
 * gradient (`outputSize`); here `inSize` / `outSize` are the library's.
 *
 * The gather kernels (DETERMINE, DETERMINE_SCALES) weigh a gradient term by a product of one
 * weight per dimension, but each result cell recomputes the coordinates of its outputs (DETERMINE
 * by a running float sum from the cell's own start), so an output's weights towards two cells
 * come from two computations: both are reproduced exactly here and stored in the output's table
 * entry (`l0` towards `i0`, `l1` towards `i1`). What the shared kernels cannot express: (1) the
 * product order (the device multiplies `g * wH * wW` or `g * wW * wH`, the CPU kernels
 * `(wH * wW) * g`: one rounding apart per term) and a possible contraction of `acc += ...` into a
 * fused multiply-add; (2) a third cell an output reaches with a weight within rounding of 0 (an
 * output whose coordinate lies on an integer, seen from both neighbours' loops), which is dropped.
 * Both are covered by the comparison bound (`bound.ts`).
 *
 * @module
 */

import { type Bilinear950Kernel, scale950 } from "./ascend950_route.ts";
import { mulAddF32 } from "./float32.ts";
import { identityLinearTable, type LinearTable } from "./pytorch.ts";

export type { Bilinear950Kernel };

/** One weight a gather kernel gives output `o` towards result cell `cell`. */
interface Entry {
  readonly cell: number;
  readonly weight: number;
}

// max(0, min(c, fl32(in) - 1)): the kernels' `fmaxf(0.0f, fminf(c, (float)lenSrc - 1.0f))`.
function clampCoordinate(c: number, inSize: number): number {
  const top = Math.fround(Math.fround(inSize) - 1);
  return Math.max(0, Math.min(c, top));
}

// 1 - |c - cell|, each step in float32 (the gathers' yLerp / xLerp).
function tent(c: number, cell: number): number {
  return Math.fround(1 - Math.abs(Math.fround(c - cell)));
}

// The first output a gather cell visits: max(0, ceilf(((float)cell - 1 + off) * inv - off)).
function firstOutput(cell: number, inv: number, off: number, fma: boolean): number {
  const c = mulAddF32(Math.fround(Math.fround(cell - 1) + off), inv, -off, fma);
  return Math.max(0, Math.ceil(c));
}

/**
 * The per-output entries of the DETERMINE kernel along one dimension
 * (resize_bilinear_v2_grad_simt_determine.h, `SimtCompute`): cell `h` starts at output
 * `firstOutput(h)` with coordinate `(start + off) * scale - off`, adds `scale` in float32 per
 * output (the running sum), and stops once the coordinate reaches `h + 1` or the outputs end;
 * weight `1 - |clamp(c) - h|`.
 */
function determineEntries(
  inSize: number,
  outSize: number,
  scale: number,
  off: number,
  fma: boolean,
): Entry[][] {
  const inv = Math.fround(1 / scale);
  const entries: Entry[][] = Array.from({ length: outSize }, () => []);
  for (let h = 0; h < inSize; h++) {
    const start = firstOutput(h, inv, off, fma);
    let c = mulAddF32(Math.fround(start + off), scale, -off, fma);
    const end = Math.fround(h + 1);
    for (let o = start; c < end && o < outSize; o++) {
      entries[o].push({ cell: h, weight: tent(clampCoordinate(c, inSize), h) });
      c = Math.fround(c + scale);
    }
  }
  return entries;
}

/**
 * The per-output entries of the DETERMINE_SCALES kernel along one dimension
 * (resize_bilinear_v2_grad_simt_determine_scales.h): coordinates per output
 * (`CalcSourceIndex`: `scale * (o + 0.5f) - 0.5f`, or `scale * o` with alignCorners); an interior
 * cell (`CalcInternalPoint`) loops while the coordinate is below `h + 1` with weight
 * `1 - |clamp(c) - h|`; a first or last cell (`CalcHBoundaryPoint` / `CalcWBoundaryPoint` /
 * `CalcCornerPoint`) runs to the last output and takes `1 - |clamp(c) - h|` when
 * `min(floor(clamp(c)), in - 1) == h`, `clamp(c) - that` when it is `h - 1`.
 */
function determineScalesEntries(
  inSize: number,
  outSize: number,
  scale: number,
  off: number,
  fma: boolean,
): Entry[][] {
  const inv = Math.fround(1 / scale);
  const source = (o: number): number =>
    off > 0 ? mulAddF32(scale, Math.fround(o + off), -off, fma) : Math.fround(scale * o);
  const entries: Entry[][] = Array.from({ length: outSize }, () => []);
  const top = Math.fround(Math.fround(inSize - 1));
  for (let h = 0; h < inSize; h++) {
    const start = firstOutput(h, inv, off, fma);
    const boundary = h === 0 || h === inSize - 1;
    const end = Math.fround(h + 1);
    for (let o = start; o < outSize; o++) {
      const c = o === start ? mulAddF32(Math.fround(start + off), scale, -off, fma) : source(o);
      if (!boundary && !(c < end)) break;
      const clamped = clampCoordinate(c, inSize);
      if (!boundary) {
        entries[o].push({ cell: h, weight: tent(clamped, h) });
        continue;
      }
      const lower = Math.min(Math.floor(clamped), top);
      if (lower === h) entries[o].push({ cell: h, weight: tent(clamped, h) });
      else if (lower + 1 === h) entries[o].push({ cell: h, weight: Math.fround(clamped - lower) });
    }
  }
  return entries;
}

/**
 * A {@link LinearTable} from per-output entries: the adjacent pair of cells with the most weight
 * (`i1 = i0 + 1`, or `i1 = i0` with `l1 = 0` at the last cell); `i0` never decreases. Entries
 * outside the pair have weights within rounding of 0 (see the module documentation).
 */
function tableFromEntries(inSize: number, entries: Entry[][]): LinearTable {
  const outSize = entries.length;
  const i0 = new Int32Array(outSize), i1 = new Int32Array(outSize);
  const l0 = new Float32Array(outSize), l1 = new Float32Array(outSize);
  let previous = 0;
  for (let o = 0; o < outSize; o++) {
    const list = entries[o];
    let lo = previous, best = -1;
    for (const { cell } of list) {
      if (cell < previous) continue;
      let mass = 0;
      for (const e of list) if (e.cell === cell || e.cell === cell + 1) mass += Math.abs(e.weight);
      if (mass > best || (mass === best && cell < lo)) {
        best = mass;
        lo = cell;
      }
    }
    previous = lo;
    const hi = lo < inSize - 1 ? lo + 1 : lo;
    i0[o] = lo;
    i1[o] = hi;
    for (const e of list) {
      if (e.cell === lo) l0[o] = e.weight;
      else if (e.cell === hi && hi !== lo) l1[o] = e.weight;
    }
  }
  return { i0, i1, l0, l1 };
}

/**
 * The SIMT scatter's table along one dimension (resize_bilinear_v2_grad_simt.h, `SimtCompute`):
 * `c = (o + off) * scale - off` (a fused multiply-add with `fma`), clamped at 0;
 * `lo = min(floor(c), in - 1)`, `λ = clamp(c - lo, 0, 1)`, `hi = lo + 1` below the last cell else
 * `lo`; weights `1 - λ`, `λ`. Each term `(wW * wH) * g` is added atomically into the result in its
 * dtype, in an unspecified order.
 */
function simtTable(
  inSize: number,
  outSize: number,
  scale: number,
  off: number,
  fma: boolean,
): LinearTable {
  const i0 = new Int32Array(outSize), i1 = new Int32Array(outSize);
  const l0 = new Float32Array(outSize), l1 = new Float32Array(outSize);
  for (let o = 0; o < outSize; o++) {
    let c = mulAddF32(Math.fround(o + off), scale, -off, fma);
    if (c < 0) c = 0;
    const lo = Math.min(Math.floor(c), inSize - 1);
    const lambda = Math.min(Math.max(Math.fround(c - lo), 0), 1);
    i0[o] = lo;
    i1[o] = lo < inSize - 1 ? lo + 1 : lo;
    l0[o] = Math.fround(1 - lambda);
    l1[o] = lambda;
  }
  return { i0, i1, l0, l1 };
}

/**
 * The table of one dimension of a 950 bilinear kernel, `scales` as the call gives them (0 = from
 * the sizes); the kernel's float32 scale is {@link scale950}. `fma`: the coordinate arithmetic
 * `(x + off) * s - off` contracted into one fused multiply-add (not stated by the source; another
 * arch35 kernel, image_projective_transform, disables contraction because it changed results).
 *
 * @throws {RangeError} for `"all-copy"` with different sizes
 * @example
 * ```ts
 * import { linearTable950 } from "./ascend950_bilinear.ts";
 * linearTable950(3, 3, false, 1.3, "simt", false).i0; // Int32Array [0, 0, 1]
 * linearTable950(2, 4, false, 0, "determine", false).l1; // Float32Array [0, 0.25, 0.75, 0]
 * ```
 */
export function linearTable950(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scales: number,
  kernel: Bilinear950Kernel,
  fma: boolean,
): LinearTable {
  const off = alignCorners ? 0 : 0.5;
  if (kernel === "all-copy") {
    if (inSize !== outSize) {
      throw new RangeError(`the 950's all-copy needs equal sizes, got ${inSize} -> ${outSize}`);
    }
    return identityLinearTable(inSize);
  }
  if (kernel === "simt") {
    return simtTable(
      inSize,
      outSize,
      scale950(inSize, outSize, alignCorners, scales, false),
      off,
      fma,
    );
  }
  const scale = scale950(inSize, outSize, alignCorners, scales, true);
  const entries = kernel === "determine"
    ? determineEntries(inSize, outSize, scale, off, fma)
    : determineScalesEntries(inSize, outSize, scale, off, fma);
  return tableFromEntries(inSize, entries);
}

/**
 * The per-output entries of a gather kernel along one dimension, every cell an output reaches
 * (for tests and the bound: more than two cells, or cells the table drops, show up here).
 *
 * @example
 * ```ts
 * import { gatherEntries950 } from "./ascend950_bilinear.ts";
 * gatherEntries950(2, 4, false, 0, "determine", false)[1]; // [{ cell: 0, weight: 0.75 }, { cell: 1, weight: 0.25 }]
 * ```
 */
export function gatherEntries950(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scales: number,
  kernel: "determine" | "determine-scales",
  fma: boolean,
): { cell: number; weight: number }[][] {
  const off = alignCorners ? 0 : 0.5;
  const scale = scale950(inSize, outSize, alignCorners, scales, true);
  return kernel === "determine"
    ? determineEntries(inSize, outSize, scale, off, fma)
    : determineScalesEntries(inSize, outSize, scale, off, fma);
}
