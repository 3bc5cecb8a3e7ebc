/**
 * An independent, test-only model of the built-in TBE kernel ResizeBilinearV2Grad in its 5HD
 * (NC1HWC0, float32) form, the kernel that the Atlas training (910) and inference (310P) series run
 * for every bilinear backward call, and that A2/A3 run on their fallbacks. Written from the vendor's
 * public source, it shares no code with `src/` or `native/`:
 *
 * - kernel: CANN 8.1.RC1 toolkit, GitHub `leideng/CANN-8.1.RC1`,
 *   `Ascend/ascend-toolkit/8.1.RC1/opp/built-in/op_impl/ai_core/tbe/impl/dynamic/resize_bilinear_v2_grad.py`,
 *   class `ResizeBilinearV2Grad5HD` (cited below as `kernel.<method>`);
 * - tiling: canndev `ops/built-in/op_tiling/resize_bilinear_v2_grad.cc` (copy in GitHub
 *   `dengguojie/vue-element-admin`, commit 628f0d2c, the version with compile info
 *   `{core_num, l1_support, tensor_c}`; cited as `tiling.<function>`);
 * - platform facts: `hicann/runtime` `src/platform/platform_config/cann/<SoC>.ini`.
 *
 * Float32 arithmetic is `Math.fround` at every rounding point. Two places may fuse a multiply and an
 * add, both switched by {@link Options5hd.fma}: the scalar half-pixel coordinate
 * `scale * (d + 0.5) - 0.5` (`kernel.get_src_index`) and `vec_axpy` (`dst = src * scalar + dst`);
 * fused is {@link fmaf32} (one rounding), else two rounded operations. `vmul` / `vec_add` /
 * `vec_muls` / `vec_adds` always round each operation.
 *
 * The 16 lanes of a C0 block are independent (every vector instruction works lane by lane), so the
 * model computes each (n, c) plane of an NCHW tensor on its own. Atomic adds into global memory
 * (modes 5 and 6, and mode 2's single add) are `gm = fround(gm + partial)` per cell, the output
 * being zeroed first (`output_gm` is declared `is_atomic_add=True`).
 *
 * Assumptions the source does not settle (each marked where used):
 * - the repeats of one vector instruction whose destination is also a source run in order;
 * - the cores' atomic flushes interleave in any order; each core's own flushes stay in program order;
 * - the kernel reads `core_num_var` (tiling word 17) that this copy of the tiling does not write: the
 *   model launches `need_core_num` cores, as `run_info.SetBlockDim` says.
 *
 * @module
 */

import { fmaf } from "./ascend950_model.ts";

const f = Math.fround;

// ---------------------------------------------------------------------------------------------------
// Platform.

/** Compile info of the 5HD kernel for one SoC (`kernel.compute` adds `core_num, l1_support, tensor_c`). */
export interface Soc5hd {
  /** SoC_version of the platform .ini. */
  readonly name: string;
  /** Float32 cells per C0 lane that half the unified buffer holds: `ub_size / 4 / 2 / 16`. */
  readonly tensorC: number;
  /** Whether mode 5 (L1 tables) is compiled and may be chosen. */
  readonly l1Support: boolean;
  /** `ai_core_cnt` of the .ini (`tbe_platform.CORE_NUM`). */
  readonly coreNum: number;
}

/**
 * Compile info from the .ini facts: `kernel.__init__` sets `tensor_size = ub_size // 4 // 2` (float32)
 * and `tensor_c = tensor_size // c0` (c0 = 16); `kernel.l1_support` is 1 iff Short_SoC_version is one
 * of Ascend910, Ascend310P, Ascend610, BS9SX1A.
 */
export function soc5hdFromIni(
  name: string,
  shortSocVersion: string,
  ubSize: number,
  aiCoreCnt: number,
): Soc5hd {
  const tensorSize = Math.floor(Math.floor(ubSize / 4) / 2);
  return {
    name,
    tensorC: Math.floor(tensorSize / 16),
    l1Support: ["Ascend910", "Ascend310P", "Ascend610", "BS9SX1A"].includes(shortSocVersion),
    coreNum: aiCoreCnt,
  };
}

/**
 * The SoCs of the tests, from `hicann/runtime` `src/platform/platform_config/cann/<SoC>.ini`
 * (Short_SoC_version, ub_size, ai_core_cnt): 910A (Ascend910, 262144, 32), 310P3 (Ascend310P,
 * 262144, 8), 910B3 (Ascend910B, 196608, 20), 910_9391 (Ascend910_93, 196608, 24).
 */
export const SOC_5HD: Readonly<
  Record<"Ascend910A" | "Ascend310P3" | "Ascend910B3" | "Ascend910_9391", Soc5hd>
> = {
  Ascend910A: soc5hdFromIni("Ascend910A", "Ascend910", 262144, 32),
  Ascend310P3: soc5hdFromIni("Ascend310P3", "Ascend310P", 262144, 8),
  Ascend910B3: soc5hdFromIni("Ascend910B3", "Ascend910B", 196608, 20),
  Ascend910_9391: soc5hdFromIni("Ascend910_9391", "Ascend910_93", 196608, 24),
};

// ---------------------------------------------------------------------------------------------------
// Float helpers (written here).

/**
 * Float32 fused multiply-add `fl32(a * b + c)`, one rounding (the other independent model's exact
 * two-sum version, `ascend950_model.ts`).
 */
export const fmaf32: (a: number, b: number, c: number) => number = fmaf;

/** `vec_axpy` per lane: `dst = src * scalar + dst` (`fma`: one rounding). */
function axpy(acc: number, g: number, w: number, fma: boolean): number {
  return fma ? fmaf32(g, w, acc) : f(acc + f(g * w));
}

// ---------------------------------------------------------------------------------------------------
// Tiling.

/** One call: `in` is the image (the result, inputSize), `out` the gradient (gradOutput). */
export interface Call5hd {
  readonly N: number;
  readonly C: number;
  readonly inH: number;
  readonly inW: number;
  readonly outH: number;
  readonly outW: number;
  readonly alignCorners: boolean;
}

/**
 * `tiling.CalTilingMode` (gh, gw = gradient; ih, iw = image): 0 equal sizes (copy); 1 / 2 image 1x1
 * and gradient not 1x1 (`gh * gw > tensor_c` → 2); 3 gradient 1x1 and image not; 4
 * `ih * iw < tensor_c && gh * gw < tensor_c`; 5 `iw <= 640 && gw <= 4096 && gw > iw &&
 * gw / iw < 255` (C integer division) `&& l1_support == 1`; else 6.
 */
export function tilingMode5hd(call: Call5hd, soc: Soc5hd): 0 | 1 | 2 | 3 | 4 | 5 | 6 {
  const { inH: ih, inW: iw, outH: gh, outW: gw } = call;
  const tc = soc.tensorC;
  if (gh === ih && gw === iw) return 0;
  const one = (h: number, w: number): boolean => h === 1 && w === 1;
  if (one(ih, iw) && !one(gh, gw)) return gh * gw > tc ? 2 : 1;
  if (one(gh, gw) && !one(ih, iw)) return 3;
  if (ih * iw < tc && gh * gw < tc) return 4;
  if (iw <= 640 && gw <= 4096 && gw > iw && Math.trunc(gw / iw) < 255 && soc.l1Support) return 5;
  return 6;
}

/** How the tiling splits the work over cores (`tiling.CalCoreInfo`). */
export interface CoreSplit5hd {
  /** Launched cores (`need_core_num`, the block dim). */
  readonly needCoreNum: number;
  /** Modes 1-4: N*C1 planes per core; modes 0, 5, 6: gradient rows per core. */
  readonly perCore: number;
  /** What the last core gets. */
  readonly lastCore: number;
  /** What is split. */
  readonly unit: "nc1" | "rows";
}

/**
 * `tiling.CalCoreInfo`: modes 1-4 (`CoreType`) split nc1 = N * C1 (C1 = ceil(C / 16)), the others
 * the gradient rows: `per = ceil(x / core_num)`, `need = ceil(x / per)`, `last = x - (need-1) * per`.
 */
export function coreSplit5hd(call: Call5hd, soc: Soc5hd): CoreSplit5hd {
  const mode = tilingMode5hd(call, soc);
  const byPlanes = mode >= 1 && mode <= 4;
  const x = byPlanes ? call.N * Math.ceil(call.C / 16) : call.outH;
  const per = Math.ceil(x / soc.coreNum);
  const need = Math.ceil(x / per);
  return {
    needCoreNum: need,
    perCore: per,
    lastCore: x - (need - 1) * per,
    unit: byPlanes ? "nc1" : "rows",
  };
}

/**
 * Whether the result may depend on the order of the cores' atomic adds: modes 5 and 6 (atomic flushes
 * of row partials, `kernel.normal_small` / `kernel.normal_big` `set_atomic_add(1)`) with the rows
 * split over two or more cores. Mode 2 is atomic too but adds once per cell onto zero.
 */
export function orderDependent5hd(call: Call5hd, soc: Soc5hd): boolean {
  const mode = tilingMode5hd(call, soc);
  return (mode === 5 || mode === 6) && coreSplit5hd(call, soc).needCoreNum >= 2;
}

// ---------------------------------------------------------------------------------------------------
// Coordinates.

/**
 * `kernel.get_scale`: float32 `in / out`, or with align_corners `(in - 1) / (out - 1)` unless
 * `out < 2` (then `in / out`). (The summary's formula; the source agrees.)
 */
export function scale5hd(inSize: number, outSize: number, alignCorners: boolean): number {
  const fi = f(inSize);
  const fo = f(outSize);
  if (alignCorners) return fo < 2 ? f(fi / fo) : f(f(fi - 1) / f(fo - 1));
  return f(fi / fo);
}

/** Per gradient index along one axis: image index, stride to the right neighbour, weights. */
export interface Axis5hd {
  readonly idx: Int32Array;
  readonly stride: Int32Array;
  /** Left weight `1 - r`. */
  readonly l: Float32Array;
  /** Right weight `r = src - idx`. */
  readonly r: Float32Array;
}

/**
 * The coordinates of one axis. `path` "scalar": `kernel.calculate_h` / `calculate_w` →
 * `get_src_index` (half-pixel `scale * (d + 0.5) - 0.5`, the multiply-add fused when `fma`; negative →
 * 0; align: `scale * d`), `scalar_conv("floor")`, `get_stride` (`idx < in - 1` → 1), `get_ratio`
 * (`r = src - idx`, `l = 1 - r`). `path` "vector": mode 5's W tables (`kernel.l1_ratio`,
 * `kernel.l1_count`): `vec_adds 0.5`, `vec_muls scale`, `vec_adds -0.5`, `vec_max 0` (each rounded,
 * never fused), `vec_conv floor`, `r = index - float(int)`, `l = 1 - r` (`vec_sub`); its stride is
 * the scalar rule's (mode 5 uses it only through `idx < iw - 1`, `kernel.small_in_add`).
 */
export function axis5hd(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  path: "scalar" | "vector",
  fma: boolean,
): Axis5hd {
  const scale = scale5hd(inSize, outSize, alignCorners);
  const idx = new Int32Array(outSize);
  const stride = new Int32Array(outSize);
  const l = new Float32Array(outSize);
  const r = new Float32Array(outSize);
  for (let d = 0; d < outSize; d++) {
    let src: number;
    if (alignCorners) {
      src = f(scale * d);
    } else {
      const x = f(d + 0.5);
      src = path === "scalar" && fma ? fmaf32(scale, x, -0.5) : f(f(scale * x) - 0.5);
      if (src < 0) src = 0; // scalar: `if src < 0: src = 0`; vector: vec_max with 0
    }
    const i = Math.floor(src);
    idx[d] = i;
    stride[d] = i < inSize - 1 ? 1 : 0;
    r[d] = f(src - i);
    l[d] = f(1 - r[d]);
  }
  return { idx, stride, l, r };
}

// ---------------------------------------------------------------------------------------------------
// Flushes (atomic modes).

/** One atomic flush of a core: `values` added cell by cell to image row `row` from column `start`. */
export interface Flush5hd {
  readonly row: number;
  readonly start: number;
  readonly values: Float32Array;
}

/** Options of the model. */
export interface Options5hd {
  /** Scalar coordinate contraction and `vec_axpy` with one rounding. */
  readonly fma: boolean;
  /**
   * Interleaving of the cores' atomic flushes (modes 5/6): a seeded random interleaving keeping each
   * core's own order. `undefined`: core 0's flushes, then core 1's, ... each in program order.
   */
  readonly seed?: number;
}

interface Geometry {
  readonly call: Call5hd;
  readonly soc: Soc5hd;
  readonly fma: boolean;
  readonly hAxis: Axis5hd;
  readonly wAxis: Axis5hd;
}

function geometry(call: Call5hd, soc: Soc5hd, fma: boolean, wPath: "scalar" | "vector"): Geometry {
  return {
    call,
    soc,
    fma,
    hAxis: axis5hd(call.inH, call.outH, call.alignCorners, "scalar", fma),
    wAxis: axis5hd(call.inW, call.outW, call.alignCorners, wPath, fma),
  };
}

/**
 * Mode 5 (`kernel.normal_small` → `small_in_each_core`, `small_in_mul`, `small_in_add`; tables from
 * `kernel.l1_ratio` / `l1_count`): one gradient row of one plane → two flushes (ub to row hidx, then
 * ub2 to row hidx + hs: `data_move` with atomic add on; the same row twice when hs = 0).
 */
function mode5Row(g: Geometry, plane: Float32Array, h: number, count: Int32Array): Flush5hd[] {
  const { inW: iw, outW: gw } = g.call;
  const W = g.wAxis;
  const hl = g.hAxis.l[h];
  const hr = g.hAxis.r[h];
  const ub = new Float32Array(iw);
  const ub2 = new Float32Array(iw);
  const wLoop = Math.ceil(gw / 256); // tiling.CalRunningInfo: w_loop = CeilDiv(grads_w, 256)
  const t0l = new Float32Array(256);
  const t0r = new Float32Array(256);
  const t1l = new Float32Array(256);
  const t1r = new Float32Array(256);
  let srcW = 0; // src_w_idx: segment counter, per plane and row, across chunks
  for (let k = 0; k < wLoop; k++) {
    const c0 = k * 256;
    const width = Math.min(256, gw - c0); // last chunk: w_tail columns are loaded
    // small_in_mul: l0 = l * hl, r0 = r * hl, l1 = l * hr, r1 = r * hr (vec_muls), then the
    // products with the gradient (vmul): all rounded, no fusion.
    for (let q = 0; q < width; q++) {
      const gv = plane[h * gw + c0 + q];
      t0l[q] = f(f(W.l[c0 + q] * hl) * gv);
      t0r[q] = f(f(W.r[c0 + q] * hl) * gv);
      t1l[q] = f(f(W.l[c0 + q] * hr) * gv);
      t1r[q] = f(f(W.r[c0 + q] * hr) * gv);
    }
    // small_in_each_core: w_out_begin = int_index[0]; end = int_index[2047] + 1 (last column of the
    // chunk), or images_w for the last chunk.
    const begin = W.idx[c0];
    const end = k !== wLoop - 1 ? W.idx[c0 + 255] + 1 : iw;
    let dstW = 0;
    for (let t = begin; t < end; t++) {
      const rep = count[srcW] ?? 0; // add_repeat = count_num[src_w_idx]
      if (dstW + rep > width) throw new Error("mode 5: a segment runs past the chunk's columns");
      if (t < iw - 1) {
        // vec_add mask 32, `rep` repeats (in order): cell t += l-term, cell t+1 += r-term per column.
        for (let q = dstW; q < dstW + rep; q++) {
          ub[t] = f(ub[t] + t0l[q]);
          ub[t + 1] = f(ub[t + 1] + t0r[q]);
          ub2[t] = f(ub2[t] + t1l[q]);
          ub2[t + 1] = f(ub2[t + 1] + t1r[q]);
        }
      } else {
        // Last image column: four mask-16 vec_adds: all l-terms of the segment, then all r-terms,
        // into the same cell (ub, then ub2).
        for (let q = dstW; q < dstW + rep; q++) ub[t] = f(ub[t] + t0l[q]);
        for (let q = dstW; q < dstW + rep; q++) ub[t] = f(ub[t] + t0r[q]);
        for (let q = dstW; q < dstW + rep; q++) ub2[t] = f(ub2[t] + t1l[q]);
        for (let q = dstW; q < dstW + rep; q++) ub2[t] = f(ub2[t] + t1r[q]);
      }
      srcW++;
      dstW += rep;
    }
  }
  const row = g.hAxis.idx[h];
  return [
    { row, start: 0, values: ub },
    { row: row + g.hAxis.stride[h], start: 0, values: ub2 },
  ];
}

/**
 * `kernel.l1_count`: the number of gradient columns of each segment (a run of columns with the same
 * image column inside one 256-column chunk); a run that crosses a chunk boundary is split (`base`
 * grows when the chunk's first column has the previous column's index). The source's table holds
 * 640 entries; the model does not bound it.
 */
function mode5Count(W: Axis5hd, gw: number): Int32Array {
  const count = new Int32Array(W.idx.length + Math.ceil(gw / 256) + 1 + 640);
  let loopScalar = 1;
  let base = 0;
  let tmpSrc = 0;
  for (let j = 0; j < gw; j++) {
    const s = W.idx[j];
    if (j < loopScalar * 256) {
      tmpSrc = s;
    } else {
      loopScalar++;
      if (tmpSrc === s) base++;
    }
    count[s + base]++;
  }
  return count;
}

/**
 * Mode 6 (`kernel.normal_big` → `big_each_core`): one gradient row of one plane. Per column in
 * ascending order, `vec_axpy` of the gradient with `hl*wl` into ub[widx], `hl*wr` into ub[widx+ws],
 * `hr*wl` into ub2[widx], `hr*wr` into ub2[widx+ws] (`kernel.big_in_loop2` / `big_in_loop` →
 * `calculate_grad`). When `iw < tensor_c / 2` (`output_loop == 0`) the row is flushed once at the end
 * (ub to row hidx, then ub2 to row hidx + hs). Otherwise (`kernel.big_in_loop`) ub is a window of
 * U + 1 cells (U = tensor_c/2 - 1) starting at `loop_init * U`: `check_next_loop` flushes the
 * whole window (U + 1 cells) when a column's cell leaves it, and the end of every tensor_c-column
 * gradient chunk flushes `w_idx + 1 + w_stride - loop_init * U` cells; `get_output_loop_idx` puts a
 * last image column that is a multiple of U (stride 0) in slot U.
 */
function mode6Row(g: Geometry, plane: Float32Array, h: number): Flush5hd[] {
  const { inW: iw, outW: gw } = g.call;
  const W = g.wAxis;
  const fma = g.fma;
  const hl = g.hAxis.l[h];
  const hr = g.hAxis.r[h];
  const row = g.hAxis.idx[h];
  const row2 = row + g.hAxis.stride[h];
  const tc = g.soc.tensorC;
  const half = Math.floor(tc / 2); // output_max_w
  const flushes: Flush5hd[] = [];
  const gRow = plane.subarray(h * gw, (h + 1) * gw);
  const addColumn = (ub: Float32Array, ub2: Float32Array, j: number, o00: number): void => {
    const o01 = o00 + W.stride[j];
    const gv = gRow[j];
    // small_in_loop / big_in_loop: l_ratio = hl * wl, r_ratio = hl * wr (scalar, rounded), then
    // calculate_grad: axpy into 00, then 01; then hr * wl, hr * wr into ub2.
    ub[o00] = axpy(ub[o00], gv, f(hl * W.l[j]), fma);
    ub[o01] = axpy(ub[o01], gv, f(hl * W.r[j]), fma);
    ub2[o00] = axpy(ub2[o00], gv, f(hr * W.l[j]), fma);
    ub2[o01] = axpy(ub2[o01], gv, f(hr * W.r[j]), fma);
  };
  if (Math.floor(iw / half) === 0) {
    // big_in_loop2 over every chunk into the same buffers, one flush per row (output_move_num).
    const ub = new Float32Array(iw);
    const ub2 = new Float32Array(iw);
    for (let j = 0; j < gw; j++) addColumn(ub, ub2, j, W.idx[j]);
    flushes.push({ row, start: 0, values: ub }, { row: row2, start: 0, values: ub2 });
    return flushes;
  }
  const U = half - 1; // use_max_w
  let ub = new Float32Array(U + 1);
  let ub2 = new Float32Array(U + 1);
  let loopInit = 0; // a scalar with init_value 0 declared inside the nc1 loop: per plane
  let nextLoop = 0;
  const flush = (start: number, n: number): void => {
    if (start + n > iw) throw new Error("mode 6: a flush would leave the image row");
    flushes.push({ row, start, values: ub.slice(0, n) }, {
      row: row2,
      start,
      values: ub2.slice(0, n),
    });
    ub = new Float32Array(U + 1); // dup_zero
    ub2 = new Float32Array(U + 1);
  };
  let lastIdx = 0;
  let lastStride = 0;
  for (let base = 0; base < gw; base += tc) {
    const width = Math.min(tc, gw - base); // loop chunks of max_w = tensor_c, then tail_w
    for (let dw = 0; dw < width; dw++) {
      const j = base + dw;
      const wIdx = W.idx[j];
      const ws = W.stride[j];
      // check_next_loop
      if (wIdx === (loopInit + 1) * U && ws === 1) nextLoop = 1;
      if (wIdx > U * (loopInit + 1)) nextLoop = 1;
      // get_output_loop_idx
      const o00 = wIdx !== 0 && wIdx % U === 0 && ws === 0 ? U : wIdx % U;
      if (nextLoop === 1) {
        flush(loopInit * U, U + 1); // max_move_num = output_max_w cells
        loopInit = Math.floor(wIdx / U);
        nextLoop = 0;
      }
      addColumn(ub, ub2, j, o00);
      lastIdx = wIdx;
      lastStride = ws;
    }
    // End of big_in_loop: last_move_num = (w_idx + 1 + w_stride) - loop_init * U cells.
    flush(loopInit * U, lastIdx + 1 + lastStride - loopInit * U);
  }
  return flushes;
}

/**
 * The atomic flushes of one (n, c) plane in modes 5 and 6, per core in program order: core k takes
 * gradient rows `[k * h_per_core, min(gh, (k+1) * h_per_core))` (`kernel.normal_small` /
 * `normal_big`, `tiling.CalCoreInfo`), each row its flushes in order. `plane` is the gradient plane
 * (outH * outW). Throws for other modes.
 */
export function flushes5hd(
  plane: Float32Array,
  call: Call5hd,
  soc: Soc5hd,
  fma: boolean,
): Flush5hd[][] {
  const mode = tilingMode5hd(call, soc);
  if (mode !== 5 && mode !== 6) throw new Error(`mode ${mode} has no atomic flushes`);
  const g = geometry(call, soc, fma, mode === 5 ? "vector" : "scalar");
  const count = mode === 5 ? mode5Count(g.wAxis, call.outW) : new Int32Array(0);
  const split = coreSplit5hd(call, soc);
  const perCore: Flush5hd[][] = [];
  for (let k = 0; k < split.needCoreNum; k++) {
    const rows = k < split.needCoreNum - 1 ? split.perCore : split.lastCore;
    const list: Flush5hd[] = [];
    for (let i = 0; i < rows; i++) {
      const h = k * split.perCore + i;
      list.push(...(mode === 5 ? mode5Row(g, plane, h, count) : mode6Row(g, plane, h)));
    }
    perCore.push(list);
  }
  return perCore;
}

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An order of the cores' flushes: a uniformly random interleaving keeping each core's order. */
function interleave(lengths: readonly number[], rand: (() => number) | undefined): number[] {
  const order: number[] = [];
  if (rand === undefined) {
    lengths.forEach((n, k) => {
      for (let i = 0; i < n; i++) order.push(k);
    });
    return order;
  }
  const left = [...lengths];
  let total = left.reduce((a, b) => a + b, 0);
  while (total > 0) {
    let pick = Math.floor(rand() * total);
    let k = 0;
    while (pick >= left[k]) pick -= left[k++];
    order.push(k);
    left[k]--;
    total--;
  }
  return order;
}

// ---------------------------------------------------------------------------------------------------
// The other modes, per plane.

/**
 * `kernel.data_sum` on a lane-0 element array of `slots * 16` floats: `iter` times, `num` halves
 * and `vec_add(mask, src[0], src[num], src[0], repeat, 0, mask/8, 0)` with mask 64 (repeat num/64)
 * or, below 64, mask num (one repeat): repeat r adds `src[num + r*mask + e]` into `src[e]`; the
 * repeats run in order (assumption). In slots (num/16): S[j] += S[n + 4r + j] for j < 4, r
 * ascending, n = slots/2 .. 4; then S[0..1] += S[2..3]; then S[0] += S[1].
 */
function dataSum(el: Float32Array, iter: number): void {
  let num = el.length;
  for (let it = 0; it < iter; it++) {
    num = Math.floor(num / 2);
    const mask = Math.floor(num / 64) > 0 ? 64 : num;
    const repeat = Math.floor(num / 64) > 0 ? Math.floor(num / 64) : 1;
    for (let r = 0; r < repeat; r++) {
      for (let e = 0; e < mask; e++) el[e] = f(el[num + r * mask + e] + el[e]);
    }
  }
}

/**
 * Modes 1 and 2 (`kernel.one2n_small_core`: unit 256 slots, iter 8; `kernel.one2n_big_core`: unit
 * 1024, iter 10): `data_merge` adds the plane's cells into the slots (`w_grad_ub += grads`, from +0)
 * — mode 1 over the whole plane (cell q → slot q mod 256), mode 2 per chunk of tensor_c cells
 * (`max_w = tensor_size // c0`; cell at chunk offset q → slot q mod 1024), chunks in order; then
 * `data_sum`. Weight exactly 1 (no ratio). Mode 1 writes S[0]; mode 2 adds it atomically onto 0.
 */
function oneToN(plane: Float32Array, mode: 1 | 2, tensorC: number): number {
  const slots = mode === 1 ? 256 : 1024;
  const el = new Float32Array(slots * 16); // lane 0 of each slot: element slot * 16
  const chunk = mode === 1 ? plane.length : tensorC;
  for (let start = 0; start < plane.length; start += chunk) {
    const end = Math.min(plane.length, start + chunk);
    for (let p = start; p < end; p++) {
      const e = ((p - start) % slots) * 16;
      el[e] = f(el[e] + plane[p]);
    }
  }
  dataSum(el, mode === 1 ? 8 : 10);
  return mode === 1 ? el[0] : f(0 + el[0]);
}

/**
 * Mode 3 (`kernel.n2one_core`, `calculate_n2one_grads`): the four weights of gradient (0, 0),
 * `vec_axpy` each into a zeroed slot (00, 01, 10, 11), then `data_move` (no atomic) to the cells in
 * the order 11, 10, 01, 00: a later write replaces an earlier one on the same cell.
 */
function nToOne(g: Geometry, plane: Float32Array, out: Float32Array): void {
  const { inW: iw } = g.call;
  const H = g.hAxis;
  const W = g.wAxis;
  const gv = plane[0];
  const s00 = axpy(0, gv, f(H.l[0] * W.l[0]), g.fma);
  const s01 = axpy(0, gv, f(H.l[0] * W.r[0]), g.fma);
  const s10 = axpy(0, gv, f(H.r[0] * W.l[0]), g.fma);
  const s11 = axpy(0, gv, f(H.r[0] * W.r[0]), g.fma);
  const o00 = H.idx[0] * iw + W.idx[0];
  const o01 = o00 + W.stride[0];
  const o10 = o00 + H.stride[0] * iw;
  const o11 = o10 + W.stride[0];
  out[o11] = s11;
  out[o10] = s10;
  out[o01] = s01;
  out[o00] = s00;
}

/**
 * Mode 4 (`kernel.small_in_out` → `small_each_core` → `small_in_loop`): the plane in UB, gradient
 * cells in row-major order, `vec_axpy` of w00 = hl*wl into 00, w01 = hl*wr into 01, w10 = hr*wl
 * into 10, w11 = hr*wr into 11 (weights rounded scalar products); the buffer is then written.
 */
function smallInOut(g: Geometry, plane: Float32Array, out: Float32Array): void {
  const { inW: iw, outH: gh, outW: gw } = g.call;
  const H = g.hAxis;
  const W = g.wAxis;
  for (let dh = 0; dh < gh; dh++) {
    for (let dw = 0; dw < gw; dw++) {
      const gv = plane[dh * gw + dw];
      const o00 = H.idx[dh] * iw + W.idx[dw];
      const o01 = o00 + W.stride[dw];
      const o10 = o00 + H.stride[dh] * iw;
      const o11 = o10 + W.stride[dw];
      out[o00] = axpy(out[o00], gv, f(H.l[dh] * W.l[dw]), g.fma);
      out[o01] = axpy(out[o01], gv, f(H.l[dh] * W.r[dw]), g.fma);
      out[o10] = axpy(out[o10], gv, f(H.r[dh] * W.l[dw]), g.fma);
      out[o11] = axpy(out[o11], gv, f(H.r[dh] * W.r[dw]), g.fma);
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// The model.

/**
 * What ResizeBilinearV2Grad (5HD, float32) writes for `grad` (N*C*outH*outW, NCHW contiguous):
 * N*C*inH*inW values and the tiling mode. Modes 5/6 apply each plane's flushes in an interleaving of
 * the cores ({@link Options5hd.seed}); the 16 channels of one C1 group share it (one DMA moves them),
 * and each group draws the next interleaving from the same PRNG stream.
 */
export function resize5hdModel(
  grad: Float32Array,
  call: Call5hd,
  soc: Soc5hd,
  options: Options5hd,
): { values: Float32Array; mode: number } {
  const { N, C, inH, inW, outH, outW } = call;
  const gPlane = outH * outW;
  const iPlane = inH * inW;
  if (grad.length !== N * C * gPlane) throw new RangeError("grad has the wrong length");
  const mode = tilingMode5hd(call, soc);
  const values = new Float32Array(N * C * iPlane); // output_gm zeroed (is_atomic_add)
  const rand = options.seed === undefined ? undefined : mulberry32(options.seed);
  const g = geometry(call, soc, options.fma, mode === 5 ? "vector" : "scalar");
  let order: number[] = [];
  for (let n = 0; n < N; n++) {
    for (let c = 0; c < C; c++) {
      const p = n * C + c;
      const plane = grad.subarray(p * gPlane, (p + 1) * gPlane);
      const out = values.subarray(p * iPlane, (p + 1) * iPlane);
      switch (mode) {
        case 0: // kernel.n2n: data_move of the gradient rows (a bit copy)
          out.set(plane);
          break;
        case 1:
        case 2:
          out[0] = oneToN(plane, mode, soc.tensorC);
          break;
        case 3:
          nToOne(g, plane, out);
          break;
        case 4:
          smallInOut(g, plane, out);
          break;
        default: {
          const perCore = flushes5hd(plane, call, soc, options.fma);
          if (c % 16 === 0) order = interleave(perCore.map((l) => l.length), rand);
          const next = perCore.map(() => 0);
          for (const k of order) {
            const fl = perCore[k][next[k]++];
            const o = fl.row * inW + fl.start;
            for (let i = 0; i < fl.values.length; i++) out[o + i] = f(out[o + i] + fl.values[i]);
          }
        }
      }
    }
  }
  return { values, mode };
}
