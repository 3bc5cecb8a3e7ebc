/**
 * A test-only model of the library's "deterministic route" for bilinear backward on the parts that
 * run the TBE kernel ResizeBilinearV2Grad (5HD, float32): a call whose image has the gradient's
 * height ("H unchanged": inH == outH) maps gradient row h onto image row h with weights 1 and 0, so
 * every result cell receives nonzero atomic flushes from one core only (the neighbour row's flushes
 * are exact zeros, and `x + 0 = x` in any order). A general call (gradient Ho x Wo → image Hi x Wi)
 * is run as two H-unchanged calls of the same kernel:
 *
 * 1. W pass: gradOutput `[N, C, Ho, Wo]` → T `[N, C, Ho, Wi]` (inH = outH = Ho, inW = Wi, outW = Wo);
 * 2. H pass: T seen transposed, `[N, C, Wi, Ho]` → U `[N, C, Wi, Hi]` (inH = outH = Wi, inW = Hi,
 *    outW = Ho); the result is U transposed back to `[N, C, Hi, Wi]`.
 *
 * A pass whose two sizes are equal is skipped (the kernel's mode 0 is a copy). Both passes use the
 * call's alignCorners. 16-bit calls: the gradient widened to float32 exactly, both passes and the
 * intermediate in float32, one round-to-nearest-even to the dtype at the end.
 *
 * Every kernel launch is {@link resize5hdModel} (`resize5hd_model.ts`); nothing here comes from
 * `src/` or `native/`.
 *
 * @module
 */

import { roundTo } from "./ascend950_model.ts";
import {
  axis5hd,
  type Call5hd,
  flushes5hd,
  resize5hdModel,
  type Soc5hd,
  tilingMode5hd,
} from "./resize5hd_model.ts";

/** The dtypes of a route call. */
export type RouteDtype = "float32" | "float16" | "bfloat16";

/**
 * The seed of the H pass's interleaving, derived from the call's seed (a fixed odd multiplier and
 * offset, so that the two passes do not draw the same interleaving stream).
 */
export function hPassSeed(seed: number): number {
  return (Math.imul(seed >>> 0, 0x9e3779b1) + 0x7f4a7c15) >>> 0;
}

/**
 * The W pass's launch of a call: gradient `[N, C, Ho, Wo]` → T `[N, C, Ho, Wi]`, or `null` when
 * Wo == Wi (skipped).
 */
export function wPassCall(call: Call5hd): Call5hd | null {
  if (call.outW === call.inW) return null;
  return { ...call, inH: call.outH, outH: call.outH, inW: call.inW, outW: call.outW };
}

/**
 * The H pass's launch of a call: T transposed `[N, C, Wi, Ho]` → U `[N, C, Wi, Hi]`, or `null` when
 * Ho == Hi (skipped).
 */
export function hPassCall(call: Call5hd): Call5hd | null {
  if (call.outH === call.inH) return null;
  return { ...call, inH: call.inW, outH: call.inW, inW: call.inH, outW: call.outH };
}

/** `[P, rows, cols]` → `[P, cols, rows]` (P = planes). */
function transposePlanes(
  x: Float32Array,
  planes: number,
  rows: number,
  cols: number,
): Float32Array {
  const y = new Float32Array(x.length);
  const size = rows * cols;
  for (let p = 0; p < planes; p++) {
    const o = p * size;
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) y[o + c * rows + r] = x[o + r * cols + c];
    }
  }
  return y;
}

/**
 * The route's result for `grad` (N*C*outH*outW, NCHW contiguous; for a 16-bit dtype each value is
 * first rounded to the dtype, as the tensor holds it, then widened exactly): the W pass, then the H
 * pass on the transposed intermediate, each through {@link resize5hdModel}, then one rounding to the
 * dtype. `options.seed` drives the cores' atomic interleavings: the W pass takes `seed`, the H pass
 * {@link hPassSeed}`(seed)`; `undefined`: program order (core 0's flushes, then core 1's, ...).
 * `values`: N*C*Hi*Wi (NCHW), for a 16-bit dtype the rounded values as float32 numbers; `modes`: the
 * tiling mode of each pass's launch (`null`: skipped).
 */
export function routeModel(
  grad: Float32Array,
  call: Call5hd,
  soc: Soc5hd,
  options: { fma: boolean; seed?: number; dtype?: RouteDtype },
): { values: Float32Array; modes: { w: number | null; h: number | null } } {
  const { N, C, inH, inW, outH, outW } = call;
  if (grad.length !== N * C * outH * outW) throw new RangeError("grad has the wrong length");
  const dtype = options.dtype ?? "float32";
  const planes = N * C;
  let x = dtype === "float32" ? grad : grad.map((v) => roundTo(dtype, v));
  const modes: { w: number | null; h: number | null } = { w: null, h: null };
  const wCall = wPassCall(call);
  if (wCall !== null) {
    const r = resize5hdModel(x, wCall, soc, { fma: options.fma, seed: options.seed });
    x = r.values; // T: [N, C, Ho, Wi]
    modes.w = r.mode;
  }
  const hCall = hPassCall(call);
  if (hCall !== null) {
    const seed = options.seed === undefined ? undefined : hPassSeed(options.seed);
    const t = transposePlanes(x, planes, outH, inW); // [N, C, Wi, Ho]
    const r = resize5hdModel(t, hCall, soc, { fma: options.fma, seed });
    x = transposePlanes(r.values, planes, inW, inH); // U [N, C, Wi, Hi] → [N, C, Hi, Wi]
    modes.h = r.mode;
  }
  const values = x === grad ? grad.slice() : x;
  if (dtype !== "float32") {
    for (let i = 0; i < values.length; i++) values[i] = roundTo(dtype, values[i]);
  }
  return { values, modes };
}

/**
 * The determinism property of one launch: over the atomic flushes of every (n, c) plane
 * ({@link flushes5hd}, modes 5 and 6), the number of result cells (summed over the planes) that
 * receive a nonzero flush value (NaN counts as nonzero) from two or more different cores. Such a
 * cell's float32 sum may depend on the cores' order; a cell fed by one core only (plus exact zeros
 * from others) may not. Other modes have no atomic flushes (mode 2 adds once onto zero): 0.
 */
export function crossCoreCells(
  call: Call5hd,
  soc: Soc5hd,
  grad: Float32Array,
  fma: boolean,
): number {
  const mode = tilingMode5hd(call, soc);
  if (mode !== 5 && mode !== 6) return 0;
  const gPlane = call.outH * call.outW;
  const iPlane = call.inH * call.inW;
  if (grad.length !== call.N * call.C * gPlane) throw new RangeError("grad has the wrong length");
  const owner = new Int32Array(iPlane); // -1 none, k: only core k so far, -2: two or more cores
  let cells = 0;
  for (let p = 0; p < call.N * call.C; p++) {
    owner.fill(-1);
    const perCore = flushes5hd(grad.subarray(p * gPlane, (p + 1) * gPlane), call, soc, fma);
    perCore.forEach((list, k) => {
      for (const fl of list) {
        const o = fl.row * call.inW + fl.start;
        for (let i = 0; i < fl.values.length; i++) {
          if (fl.values[i] === 0) continue; // +0 and -0: exact, order-free
          const cell = o + i;
          if (owner[cell] === -1) owner[cell] = k;
          else if (owner[cell] !== k && owner[cell] !== -2) {
            owner[cell] = -2;
            cells++;
          }
        }
      }
    });
  }
  return cells;
}

/**
 * The gradient columns (indices along `outW`) whose contribution one launch drops: in windowed mode 6
 * (`inW >= tensor_c / 2`), a column that jumps onto the last image column when that index is a
 * multiple of the window's `U = tensor_c / 2 - 1` lands in slot U of a window whose last flush ends
 * before it (`mode6Row` of the kernel model). Found by the model: each column whose image index is
 * `inW - 1` gets a unit gradient in row 0 of one plane, and is lost when no flush carries anything.
 * Other modes and narrower images: none.
 */
export function lostColumns5hd(call: Call5hd, soc: Soc5hd, fma: boolean): number[] {
  const one: Call5hd = { ...call, N: 1, C: 1 };
  if (tilingMode5hd(one, soc) !== 6 || call.inW < Math.floor(soc.tensorC / 2)) return [];
  const W = axis5hd(call.inW, call.outW, call.alignCorners, "scalar", fma);
  const lost: number[] = [];
  for (let j = 0; j < call.outW; j++) {
    if (W.idx[j] !== call.inW - 1) continue;
    const plane = new Float32Array(call.outH * call.outW);
    plane[j] = 1;
    const carried = flushes5hd(plane, one, soc, fma).flat().some((fl) =>
      fl.values.some((v) => v !== 0)
    );
    if (!carried) lost.push(j);
  }
  return lost;
}

/**
 * The gradient indices the route drops ({@link lostColumns5hd} of each pass): `w` gradient columns
 * (W pass), `h` gradient rows (H pass, whose "W" axis is the original H: inW = Hi, outW = Ho).
 */
export function routeLostColumns(
  call: Call5hd,
  soc: Soc5hd,
  fma: boolean,
): { w: number[]; h: number[] } {
  const wCall = wPassCall(call);
  const hCall = hPassCall(call);
  return {
    w: wCall === null ? [] : lostColumns5hd(wCall, soc, fma),
    h: hCall === null ? [] : lostColumns5hd(hCall, soc, fma),
  };
}
