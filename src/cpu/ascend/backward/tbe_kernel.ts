/**
 * One launch of the TBE kernel ResizeBilinearV2Grad (NC1HWC0, float32), every tiling mode 0-6, as
 * the kernel computes it: its own coordinates, products, sums and their order. Written from the
 * kernel's source (CANN 8.1.RC1 toolkit copy, GitHub `leideng/CANN-8.1.RC1`,
 * `opp/built-in/op_impl/ai_core/tbe/impl/dynamic/resize_bilinear_v2_grad.py`, class
 * ResizeBilinearV2Grad5HD: the method each step follows is named next to it) and its tiling
 * (`ops/built-in/op_tiling/resize_bilinear_v2_grad.cc` CalTilingMode, CalCoreInfo; see
 * `rules/ascend_5hd.ts`). The 16 channel lanes of a C0 block never mix, so each (n, c) plane is
 * computed alone. Every product and sum rounds to float32; the scalar `scale * (d + 0.5) - 0.5` and
 * `vec_axpy` (`acc = g * w + acc`) round once when the kernel contracts them (`fma`, the switch the
 * source leaves open). Modes 5 and 6 add their cores' partial rows atomically: `tbe_flush.ts` says
 * in which order.
 *
 * @module
 */

import { mulAddF32 } from "../../../rules/float32.ts";
import { type Tbe5hdSpec, tilingMode5hd } from "../../../rules/ascend_5hd.ts";
import type { PlaneSizes } from "./planes.ts";
import { type Flush, mergeFlushes, pushFlush, REFERENCE_LAUNCH_SEED } from "./tbe_flush.ts";

const f = Math.fround;
/** Gradient columns per chunk of mode 5's L1 tables (CalRunningInfo: `w_loop = CeilDiv(grads_w, 256)`). */
export const MODE5_CHUNK = 256;

/** One launch: the image (inputSize) and gradient planes' sizes and the kernel's settings. */
export interface TbeLaunch extends PlaneSizes {
  /** Align-corners coordinates (else half-pixel centres). */
  readonly alignCorners: boolean;
  /** The generation's compile info (`tensor_c`, `l1_support`). */
  readonly spec: Tbe5hdSpec;
  /** AI Cores (`core_num`, the SoC's `ai_core_cnt`): modes 5 and 6 split the rows over them. */
  readonly cores: number;
  /** Whether the scalar multiply-add and `vec_axpy` are contracted (`tbeFma`). */
  readonly fma: boolean;
  /** The launch's atomic order (`tbe_flush.ts`); default {@link REFERENCE_LAUNCH_SEED}. */
  readonly seed?: bigint;
}

// One dimension's coordinate of a gradient index (get_src_index, get_ratio, get_stride).
interface Coord {
  idx: number;
  stride: number;
  l: number;
  r: number;
}

// get_scale: align_corners ? (in - 1) / (out - 1) (in / out for out < 2) : in / out, float32.
function tbeScale(inSize: number, outSize: number, align: boolean): number {
  if (align && outSize >= 2) return f(f(inSize - 1) / f(outSize - 1));
  return f(f(inSize) / f(outSize));
}

// get_src_index on the scalar unit: half-pixel `max(scale * (d + 0.5) - 0.5, 0)` (the OPEN
// contraction), or `scale * d`; floor; stride = idx < in - 1; r = src - idx; l = 1 - r.
function scalarCoord(
  d: number,
  scale: number,
  inSize: number,
  align: boolean,
  fma: boolean,
): Coord {
  const src = align ? f(scale * d) : Math.max(mulAddF32(scale, f(d + 0.5), -0.5, fma), 0);
  const idx = Math.floor(src);
  const r = f(src - idx);
  return { idx, stride: idx < inSize - 1 ? 1 : 0, l: f(1 - r), r };
}

/**
 * The launch on `planes` contiguous float32 gradient planes (`outH x outW` each), giving the
 * float32 result planes (`inH x inW` each) before any cast.
 *
 * @example
 * ```ts
 * import { tbeKernel } from "./tbe_kernel.ts";
 * const launch = { inH: 1, inW: 2, outH: 1, outW: 4, alignCorners: false, spec: { tensorC: 1536, l1Support: false }, cores: 20, fma: false };
 * tbeKernel(new Float32Array([1, 1, 1, 1]), 1, launch); // Float32Array [2, 2]
 * ```
 */
export function tbeKernel(grad: Float32Array, planes: number, launch: TbeLaunch): Float32Array {
  const { inH, inW, outH, outW } = launch;
  const mode = tilingMode5hd([inH, inW], [outH, outW], launch.spec);
  const result = new Float32Array(planes * inH * inW);
  const ctx = context(launch);
  // CalCoreInfo: modes 5 and 6 give each core ceil(outH / core_num) gradient rows.
  const perCore = Math.ceil(outH / Math.max(launch.cores, 1));
  const busy = Math.ceil(outH / perCore);
  const seed = launch.seed ?? REFERENCE_LAUNCH_SEED;
  const wTables = mode === 5 ? mode5Tables(ctx) : null;
  for (let p = 0; p < planes; p++) {
    const g = grad.subarray(p * outH * outW, (p + 1) * outH * outW);
    const o = result.subarray(p * inH * inW, (p + 1) * inH * inW);
    if (mode === 0) o.set(g); // n2n: equal sizes, a copy
    else if (mode === 1 || mode === 2) o[0] = oneToN(g, outH * outW, mode, launch.spec.tensorC);
    else if (mode === 3) nToOne(g[0], o, ctx);
    else if (mode === 4) smallInOut(g, o, ctx);
    else {
      const cores: Flush[][] = [];
      for (let k = 0; k < busy; k++) {
        const list: Flush[] = [];
        for (let y = k * perCore; y < Math.min(outH, (k + 1) * perCore); y++) {
          const row = g.subarray(y * outW, (y + 1) * outW);
          if (mode === 5) mode5Row(row, y, ctx, wTables!, list);
          else mode6Row(row, y, ctx, list);
        }
        cores.push(list);
      }
      mergeFlushes(cores, o, inW, seed, p);
    }
  }
  return result;
}

// What every mode reads: the launch, its scales and scratch rows.
interface Context {
  readonly launch: TbeLaunch;
  readonly scaleH: number;
  readonly scaleW: number;
  readonly ub: Float32Array;
  readonly ub2: Float32Array;
  /** Mode 5's products of one 256-column chunk, four per column. */
  readonly terms: Float32Array;
  /** The scalar W coordinate of every gradient column (the same for every row). */
  readonly ws: readonly Coord[];
}

function context(launch: TbeLaunch): Context {
  const cells = Math.max(launch.inW, launch.spec.tensorC / 2) + 2;
  const { inW, outW, alignCorners, fma } = launch;
  const scaleW = tbeScale(inW, outW, alignCorners);
  return {
    launch,
    scaleH: tbeScale(launch.inH, launch.outH, alignCorners),
    scaleW,
    ws: Array.from({ length: outW }, (_, x) => scalarCoord(x, scaleW, inW, alignCorners, fma)),
    ub: new Float32Array(cells),
    ub2: new Float32Array(cells),
    terms: new Float32Array(4 * MODE5_CHUNK),
  };
}

function hCoord(y: number, c: Context): Coord {
  const { inH, alignCorners, fma } = c.launch;
  return scalarCoord(y, c.scaleH, inH, alignCorners, fma);
}

function wCoord(x: number, c: Context): Coord {
  return c.ws[x];
}

// Modes 1 and 2 (one2n_small_core, one2n_big_core): a 1 x 1 image. data_merge adds gradient cell q
// into slot q mod unit (256 slots; mode 2: 1024, q counted inside each tensor_c chunk), then
// data_sum folds the slots in halves; mode 2 adds the sum atomically onto the zeroed result.
function oneToN(g: Float32Array, total: number, mode: 1 | 2, tensorC: number): number {
  const unit = mode === 2 ? 1024 : 256;
  const slots = new Float32Array(unit);
  for (let q = 0; q < total; q++) {
    const local = (mode === 2 ? q % tensorC : q) % unit;
    slots[local] = f(slots[local] + g[q]);
  }
  const v = dataSum(slots, unit);
  return mode === 2 ? f(0 + v) : v;
}

// data_sum: per fold n = unit/2 .. 4, slots j < 4 take slots n + 4r + j for r < n / 4 (vadd with
// repeat stride 0 on the destination, repeats in order); then 0..1 += 2..3, then 0 += 1.
function dataSum(s: Float32Array, unit: number): number {
  for (let n = unit / 2; n >= 4; n /= 2) {
    for (let r = 0; r < n / 4; r++) {
      for (let j = 0; j < 4; j++) s[j] = f(s[n + 4 * r + j] + s[j]);
    }
  }
  s[0] = f(s[2] + s[0]);
  s[1] = f(s[3] + s[1]);
  return f(s[1] + s[0]);
}

// vec_axpy: `acc + g * w`, fused or each step rounded.
function axpy(acc: number, g: number, w: number, fma: boolean): number {
  return mulAddF32(g, w, acc, fma);
}

// Mode 3 (calculate_n2one_grads): a 1 x 1 gradient; four axpy into zeroed slots, written without
// atomics in the order 11, 10, 01, 00, so where cells coincide (stride 0) the later write wins.
function nToOne(g: number, o: Float32Array, c: Context): void {
  const h = hCoord(0, c), w = wCoord(0, c);
  const fma = c.launch.fma, inW = c.launch.inW;
  const o00 = h.idx * inW + w.idx, o01 = o00 + w.stride, o10 = o00 + h.stride * inW;
  const o11 = o10 + w.stride;
  o[o11] = axpy(0, g, f(h.r * w.r), fma);
  o[o10] = axpy(0, g, f(h.r * w.l), fma);
  o[o01] = axpy(0, g, f(h.l * w.r), fma);
  o[o00] = axpy(0, g, f(h.l * w.l), fma);
}

// Mode 4 (small_in_out -> small_in_loop): the plane in the unified buffer, zeroed; gradient cells
// row-major, each one's axpy of hl*wl, hl*wr, hr*wl, hr*wr (rounded products) in that order.
function smallInOut(g: Float32Array, o: Float32Array, c: Context): void {
  const { outH, outW, inW, fma } = c.launch;
  const ws = c.ws;
  for (let y = 0; y < outH; y++) {
    const h = hCoord(y, c);
    for (let x = 0; x < outW; x++) {
      const w = ws[x], gv = g[y * outW + x];
      const o00 = h.idx * inW + w.idx, o01 = o00 + w.stride, o10 = o00 + h.stride * inW;
      const o11 = o10 + w.stride;
      o[o00] = axpy(o[o00], gv, f(h.l * w.l), fma);
      o[o01] = axpy(o[o01], gv, f(h.l * w.r), fma);
      o[o10] = axpy(o[o10], gv, f(h.r * w.l), fma);
      o[o11] = axpy(o[o11], gv, f(h.r * w.r), fma);
    }
  }
}

// Mode 5's W tables: l1_ratio's vector coordinates (vec_adds 0.5, vec_muls scale, vec_adds -0.5,
// vec_max 0, each rounded, never fused), and l1_count's columns per segment (a run of gradient
// columns on one image column, split where a 256-column chunk boundary falls inside it).
interface WTables {
  readonly idx: Int32Array;
  readonly l: Float32Array;
  readonly r: Float32Array;
  readonly count: Int32Array;
  readonly chunks: number;
}

function mode5Tables(c: Context): WTables {
  const { outW, inW, alignCorners } = c.launch;
  const chunks = Math.ceil(outW / MODE5_CHUNK);
  const padded = chunks * MODE5_CHUNK;
  const idx = new Int32Array(padded), l = new Float32Array(padded), r = new Float32Array(padded);
  for (let x = 0; x < padded; x++) {
    const v = alignCorners ? f(x * c.scaleW) : Math.max(f(f(f(x + 0.5) * c.scaleW) + -0.5), 0);
    idx[x] = Math.floor(v);
    r[x] = f(v - idx[x]);
    l[x] = f(1 - r[x]);
  }
  return { idx, l, r, count: segmentCounts(idx, outW, inW), chunks };
}

/**
 * Mode 5's l1_count: gradient columns per segment, a run of columns on one image column inside one
 * 256-column chunk (a run crossing a chunk boundary is two segments). `lower`: each gradient
 * column's image column.
 *
 * @example
 * ```ts
 * import { segmentCounts } from "./tbe_kernel.ts";
 * segmentCounts(Int32Array.of(0, 0, 1, 1), 4, 2); // Int32Array [2, 2, 0, 0]
 * ```
 */
export function segmentCounts(lower: Int32Array, outCols: number, inCols: number): Int32Array {
  const count = new Int32Array(inCols + Math.ceil(outCols / MODE5_CHUNK) + 1);
  let chunkEnd = MODE5_CHUNK, extra = 0, previous = 0;
  for (let j = 0; j < outCols; j++) {
    const cell = lower[j];
    if (j < chunkEnd) previous = cell;
    else {
      chunkEnd += MODE5_CHUNK;
      if (previous === cell) extra++;
    }
    count[cell + extra]++;
  }
  return count;
}

// Mode 5 (normal_small: small_in_each_core, small_in_mul, small_in_add), one gradient row: per chunk
// the products `(wl * hl) * g` etc. (vec_muls, vmul), then per segment vec_add of the l-terms into
// its cell and the r-terms into the next, column by column (the last image column: all l-terms,
// then all r-terms); ub flushed to row hidx, ub2 to hidx + hstride.
function mode5Row(row: Float32Array, y: number, c: Context, t: WTables, list: Flush[]): void {
  const { inW, outW } = c.launch;
  const h = hCoord(y, c);
  const ub = c.ub.fill(0, 0, inW), ub2 = c.ub2.fill(0, 0, inW);
  const terms = c.terms;
  let segment = 0;
  for (let k = 0; k < t.chunks; k++) {
    const first = k * MODE5_CHUNK;
    const width = k < t.chunks - 1 ? MODE5_CHUNK : outW - first;
    for (let q = 0; q < width; q++) {
      const x = first + q, gv = row[x];
      terms[4 * q] = f(f(t.l[x] * h.l) * gv);
      terms[4 * q + 1] = f(f(t.r[x] * h.l) * gv);
      terms[4 * q + 2] = f(f(t.l[x] * h.r) * gv);
      terms[4 * q + 3] = f(f(t.r[x] * h.r) * gv);
    }
    const end = k < t.chunks - 1 ? t.idx[first + MODE5_CHUNK - 1] + 1 : inW;
    let q0 = 0;
    for (let cell = t.idx[first]; cell < end; cell++, segment++) {
      const q1 = Math.min(q0 + t.count[segment], width);
      segmentAdd(ub, cell, inW, terms, q0, q1, 0);
      segmentAdd(ub2, cell, inW, terms, q0, q1, 2);
      q0 = q1;
    }
  }
  pushFlush(list, h.idx, 0, inW, ub, inW);
  pushFlush(list, h.idx + h.stride, 0, inW, ub2, inW);
}

// One segment's vec_add (small_in_add): per column its l-term into `cell` and its r-term into
// `cell + 1`; the last image column takes all l-terms, then all r-terms. `at`: 0 ub, 2 ub2.
function segmentAdd(
  dst: Float32Array,
  cell: number,
  inW: number,
  terms: Float32Array,
  q0: number,
  q1: number,
  at: number,
): void {
  if (cell < inW - 1) {
    let left = dst[cell], right = dst[cell + 1];
    for (let q = q0; q < q1; q++) {
      left = f(terms[4 * q + at] + left);
      right = f(terms[4 * q + at + 1] + right);
    }
    dst[cell] = left;
    dst[cell + 1] = right;
    return;
  }
  let sum = dst[cell];
  for (let q = q0; q < q1; q++) sum = f(terms[4 * q + at] + sum);
  for (let q = q0; q < q1; q++) sum = f(terms[4 * q + at + 1] + sum);
  dst[cell] = sum;
}

// Mode 6 (normal_big: big_each_core, big_in_loop2 / big_in_loop, calculate_grad), one gradient row:
// per column axpy of hl*wl into its cell, hl*wr into the next (ub), hr*wl and hr*wr (ub2). A row
// narrower than tensor_c / 2 cells is flushed once. A wider one through a window of U + 1 cells
// (U = tensor_c / 2 - 1) from loop_init * U: check_next_loop flushes the whole window when a
// column leaves it, get_output_loop_idx puts a last image column that is a multiple of U in slot
// U, and each tensor_c-column chunk ends with a flush up to its last cell.
function mode6Row(row: Float32Array, y: number, c: Context, list: Flush[]): void {
  const { inW, outW, fma, spec } = c.launch;
  const h = hCoord(y, c);
  const ub = c.ub.fill(0), ub2 = c.ub2.fill(0);
  const add = (slot: number, w: Coord, gv: number): void => {
    ub[slot] = axpy(ub[slot], gv, f(h.l * w.l), fma);
    ub[slot + w.stride] = axpy(ub[slot + w.stride], gv, f(h.l * w.r), fma);
    ub2[slot] = axpy(ub2[slot], gv, f(h.r * w.l), fma);
    ub2[slot + w.stride] = axpy(ub2[slot + w.stride], gv, f(h.r * w.r), fma);
  };
  const flush = (col: number, n: number): void => {
    pushFlush(list, h.idx, col, n, ub, inW);
    pushFlush(list, h.idx + h.stride, col, n, ub2, inW);
    ub.fill(0);
    ub2.fill(0);
  };
  if (Math.floor(inW / (spec.tensorC / 2)) === 0) {
    for (let x = 0; x < outW; x++) {
      const w = wCoord(x, c);
      add(w.idx, w, row[x]);
    }
    return flush(0, inW);
  }
  const u = spec.tensorC / 2 - 1;
  let loopInit = 0;
  for (let base = 0; base < outW; base += spec.tensorC) {
    const n = Math.min(outW - base, spec.tensorC);
    let w: Coord = { idx: 0, stride: 0, l: 0, r: 0 };
    for (let x = base; x < base + n; x++) {
      w = wCoord(x, c);
      const next = (w.idx === (loopInit + 1) * u && w.stride === 1) || w.idx > u * (loopInit + 1);
      const slot = w.idx !== 0 && w.idx % u === 0 && w.stride === 0 ? u : w.idx % u;
      if (next) {
        flush(loopInit * u, u + 1);
        loopInit = Math.floor(w.idx / u);
      }
      add(slot, w, row[x]);
    }
    flush(loopInit * u, Math.min(w.idx + 1 + w.stride - loopInit * u, u + 1));
  }
}
