/**
 * One pass of the deterministic route (`rules/route.ts`) as the TBE kernel ResizeBilinearV2Grad
 * (5HD, float32) computes it, bit for bit: a launch whose image has the gradient's height, so that
 * its H weights are exactly 1 and 0 and the order of its cores' atomic adds cannot matter. Written
 * from the kernel's source (CANN 8.1.RC1 toolkit copy `leideng/CANN-8.1.RC1`,
 * `opp/built-in/op_impl/ai_core/tbe/impl/dynamic/resize_bilinear_v2_grad.py`, class
 * ResizeBilinearV2Grad5HD; docs/device-semantics.md): the method each mode runs is named where it
 * is modelled. The 16 channel lanes of a C0 block never mix, so each plane is computed alone.
 * Every product and sum rounds to float32; `vec_axpy` (`acc = g * w + acc`) rounds once when the
 * kernel contracts it (`fma`, the switch the source leaves open).
 *
 * @module
 */

import { fmaF32 } from "../../../rules/float32.ts";
import { linear5hdTable, type Tbe5hdSpec } from "../../../rules/ascend_5hd.ts";
import type { RoutePass } from "../../../rules/route.ts";
import type { LinearTable } from "../../../rules/pytorch.ts";
import { MODE5_CHUNK, segmentCounts } from "./tbe_kernel.ts";

const f = Math.fround;
// The H weights of an H-unchanged launch: scale 1, src = h, r = 0 (get_src_index, get_ratio).
const HL = 1;
const HR = 0;

/**
 * The pass on `planes` planes of `pass.rows x pass.outCols` float32 gradient cells (contiguous),
 * giving `planes x pass.rows x pass.inCols` cells. Cores' atomic flushes are applied row by row;
 * any other order gives the same bits (H unchanged).
 *
 * @example
 * ```ts
 * import { tbePass } from "./tbe_pass.ts";
 * const pass = { axis: "w", rows: 1, inCols: 2, outCols: 4, mode: 4, kernel: "ResizeBilinearV2Grad5HD.MODE4" } as const;
 * tbePass(new Float32Array([1, 1, 1, 1]), 1, pass, false, { tensorC: 1536, l1Support: false }, false);
 * // Float32Array [2, 2]
 * ```
 */
export function tbePass(
  grad: Float32Array,
  planes: number,
  pass: RoutePass,
  alignCorners: boolean,
  spec: Tbe5hdSpec,
  fma: boolean,
): Float32Array {
  const { rows, inCols, outCols, mode } = pass;
  // Mode 5 computes its W coordinates on the vector unit (l1_ratio): never contracted.
  const table = linear5hdTable(inCols, outCols, alignCorners, fma && mode !== 5);
  const result = new Float32Array(planes * rows * inCols);
  const count = mode === 5 ? segmentCounts(table.i0, outCols, inCols) : null;
  const axpy = fma ? fmaF32 : roundedAxpy;
  const rowCells = Math.max(inCols, spec.tensorC / 2);
  const scratch: Scratch = {
    ub: new Float32Array(rowCells),
    ub2: new Float32Array(rowCells),
    terms: new Float32Array(4 * MODE5_CHUNK),
  };
  for (let p = 0; p < planes; p++) {
    const g = grad.subarray(p * rows * outCols, (p + 1) * rows * outCols);
    const out = result.subarray(p * rows * inCols, (p + 1) * rows * inCols);
    if (mode === 4) {
      smallInOut(g, out, rows, inCols, outCols, table, axpy);
      continue;
    }
    if (mode !== 5 && mode !== 6) throw new RangeError(`tbePass: tiling mode ${mode} in a route`);
    for (let h = 0; h < rows; h++) {
      const gRow = g.subarray(h * outCols, (h + 1) * outCols);
      const below = h < rows - 1 ? h + 1 : h; // get_stride: the last row adds to itself
      const flush = (row: number, start: number, values: Float32Array, n: number): void => {
        if (row < 0) return;
        const o = row * inCols + start;
        for (let i = 0; i < n; i++) out[o + i] = f(out[o + i] + values[i]);
      };
      // A finite row's zero-weight partials (ub2) are all +0: adding them changes nothing.
      const below2 = finiteRow(gRow, 0, outCols) ? -1 : below;
      if (mode === 5) mode5Row(gRow, inCols, outCols, table, count!, scratch, h, below2, flush);
      else mode6Row(gRow, inCols, outCols, table, spec, axpy, scratch, h, below2, flush);
    }
  }
  return result;
}

type Flush = (row: number, start: number, values: Float32Array, n: number) => void;

// The unified-buffer rows (and mode 5's products), reused row after row.
interface Scratch {
  readonly ub: Float32Array;
  readonly ub2: Float32Array;
  readonly terms: Float32Array;
}

// vec_axpy, `acc + g * w`: fused (fmaF32, one rounding) or each step rounded.
type Axpy = (g: number, w: number, acc: number) => number;

function roundedAxpy(g: number, w: number, acc: number): number {
  return f(f(g * w) + acc);
}

// Mode 4 (small_in_out -> small_in_loop): the plane in UB, zeroed; gradient cells in row-major
// order, vec_axpy of hl*wl, hl*wr, hr*wl, hr*wr (scalar products, rounded) into the four cells.
function smallInOut(
  g: Float32Array,
  out: Float32Array,
  rows: number,
  inCols: number,
  outCols: number,
  t: LinearTable,
  axpy: Axpy,
): void {
  for (let h = 0; h < rows; h++) {
    const below = (h < rows - 1 ? h + 1 : h) * inCols;
    const zeros = !finiteRow(g, h * outCols, outCols);
    for (let j = 0; j < outCols; j++) {
      const gv = g[h * outCols + j];
      const c0 = t.i0[j], c1 = t.i1[j];
      const o00 = h * inCols + c0, o01 = h * inCols + c1;
      out[o00] = axpy(gv, f(HL * t.l0[j]), out[o00]);
      out[o01] = axpy(gv, f(HL * t.l1[j]), out[o01]);
      if (!zeros) continue; // g * 0 = +-0 leaves every sum as it is (none is -0)
      out[below + c0] = axpy(gv, f(HR * t.l0[j]), out[below + c0]);
      out[below + c1] = axpy(gv, f(HR * t.l1[j]), out[below + c1]);
    }
  }
}

// Whether a gradient row is all finite: then its zero-weight terms (hr = 0) are exact zeros, which
// change no sum (a sum starts at +0 and is never -0), and need not be computed.
function finiteRow(g: Float32Array, start: number, n: number): boolean {
  for (let i = start; i < start + n; i++) {
    if (!Number.isFinite(g[i])) return false;
  }
  return true;
}

// Mode 5 (normal_small: small_in_mul, small_in_add, one atomic data_move of each UB row): per chunk
// the four products (vec_muls of the weights by hl / hr, vmul by the gradient), then per segment
// vec_add of the l-terms into its cell and the r-terms into the next, column by column; the last
// image column takes all l-terms of the segment, then all r-terms.
function mode5Row(
  gRow: Float32Array,
  inCols: number,
  outCols: number,
  t: LinearTable,
  count: Int32Array,
  scratch: Scratch,
  h: number,
  below: number,
  flush: Flush,
): void {
  const ub = scratch.ub.fill(0, 0, inCols), ub2 = scratch.ub2.fill(0, 0, inCols);
  const terms = scratch.terms;
  const zeros = below >= 0; // else ub2's terms are exact zeros nobody adds (see tbePass)
  const chunks = Math.ceil(outCols / MODE5_CHUNK);
  let segment = 0;
  for (let k = 0; k < chunks; k++) {
    const first = k * MODE5_CHUNK;
    const width = Math.min(MODE5_CHUNK, outCols - first);
    for (let q = 0; q < width; q++) {
      const gv = gRow[first + q];
      terms[4 * q] = f(f(t.l0[first + q] * HL) * gv);
      terms[4 * q + 1] = f(f(t.l1[first + q] * HL) * gv);
      if (!zeros) continue;
      terms[4 * q + 2] = f(f(t.l0[first + q] * HR) * gv);
      terms[4 * q + 3] = f(f(t.l1[first + q] * HR) * gv);
    }
    const end = k < chunks - 1 ? t.i0[first + MODE5_CHUNK - 1] + 1 : inCols;
    let q0 = 0;
    for (let cell = t.i0[first]; cell < end; cell++, segment++) {
      const q1 = q0 + count[segment];
      if (cell < inCols - 1) {
        addTerms(ub, cell, terms, q0, q1, 0);
        if (zeros) addTerms(ub2, cell, terms, q0, q1, 2);
      } else {
        addLast(ub, cell, terms, q0, q1, 0);
        if (zeros) addLast(ub2, cell, terms, q0, q1, 2);
      }
      q0 = q1;
    }
  }
  flush(h, 0, ub, inCols);
  flush(below, 0, ub2, inCols);
}

// One segment's vec_add: per column, its l-term into `cell` and its r-term into `cell + 1`.
function addTerms(
  row: Float32Array,
  cell: number,
  terms: Float32Array,
  q0: number,
  q1: number,
  first: number,
): void {
  let left = row[cell], right = row[cell + 1];
  for (let q = q0; q < q1; q++) {
    left = f(left + terms[4 * q + first]);
    right = f(right + terms[4 * q + first + 1]);
  }
  row[cell] = left;
  row[cell + 1] = right;
}

// The last image column: the segment's l-terms, then its r-terms, into the same cell.
function addLast(
  row: Float32Array,
  cell: number,
  terms: Float32Array,
  q0: number,
  q1: number,
  first: number,
): void {
  let sum = row[cell];
  for (let q = q0; q < q1; q++) sum = f(sum + terms[4 * q + first]);
  for (let q = q0; q < q1; q++) sum = f(sum + terms[4 * q + first + 1]);
  row[cell] = sum;
}

// Mode 6 (normal_big: big_in_loop2 / big_in_loop, calculate_grad): per column, vec_axpy into the
// column's cell and the next (ub: weight hl, ub2: weight hr). A row narrower than half the buffer
// is flushed once; a wider one through a window of U + 1 cells (U = tensor_c / 2 - 1) starting at
// loop_init * U: check_next_loop flushes the whole window when a column leaves it, every chunk of
// tensor_c gradient columns ends with a flush up to its last cell, and get_output_loop_idx puts a
// last image column that is a multiple of U in slot U.
function mode6Row(
  gRow: Float32Array,
  inCols: number,
  outCols: number,
  t: LinearTable,
  spec: Tbe5hdSpec,
  axpy: Axpy,
  scratch: Scratch,
  h: number,
  below: number,
  flush: Flush,
): void {
  const half = spec.tensorC / 2;
  const windowed = inCols >= half;
  const u = half - 1;
  const size = windowed ? u + 1 : inCols;
  const ub = scratch.ub.subarray(0, size).fill(0), ub2 = scratch.ub2.subarray(0, size).fill(0);
  const emit = (start: number, n: number): void => {
    flush(h, start, ub, n);
    flush(below, start, ub2, n);
    ub.fill(0);
    ub2.fill(0);
  };
  let windowStart = 0, lastCell = 0, lastStride = 0;
  for (let base = 0; base < outCols; base += spec.tensorC) {
    const width = Math.min(spec.tensorC, outCols - base);
    for (let j = base; j < base + width; j++) {
      const cell = t.i0[j], stride = t.i1[j] - cell;
      let slot = cell;
      if (windowed) {
        const window = windowStart / u;
        if ((cell === (window + 1) * u && stride === 1) || cell > u * (window + 1)) {
          emit(windowStart, u + 1);
          windowStart = Math.floor(cell / u) * u;
        }
        slot = cell !== 0 && cell % u === 0 && stride === 0 ? u : cell % u;
      }
      lastCell = cell;
      lastStride = stride;
      const gv = gRow[j];
      ub[slot] = axpy(gv, f(HL * t.l0[j]), ub[slot]);
      ub[slot + stride] = axpy(gv, f(HL * t.l1[j]), ub[slot + stride]);
      if (below < 0) continue; // ub2's terms are exact zeros nobody adds (see tbePass)
      ub2[slot] = axpy(gv, f(HR * t.l0[j]), ub2[slot]);
      ub2[slot + stride] = axpy(gv, f(HR * t.l1[j]), ub2[slot + stride]);
    }
    if (windowed) emit(windowStart, lastCell + 1 + lastStride - windowStart);
  }
  if (!windowed) emit(0, inCols);
}
