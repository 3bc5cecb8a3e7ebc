/**
 * The built-in TBE kernel ResizeBilinearV2Grad (NC1HWC0, float32) that bilinear backward runs on
 * Atlas A2/A3 when V2 falls back (and V1 always), and on the Atlas training (Ascend 910) and
 * inference (310P) series for every call whose sizes differ. The kernel is read from a public copy
 * of the CANN 8.1.RC1 toolkit (GitHub `leideng/CANN-8.1.RC1`, `opp/built-in/op_impl/ai_core/tbe/
 * impl/dynamic/resize_bilinear_v2_grad.py`, class ResizeBilinearV2Grad5HD), which ships no tiling
 * source; the tiling rules (CalTilingMode, CalCoreInfo) come from an older public copy of canndev's
 * `ops/built-in/op_tiling/resize_bilinear_v2_grad.cc` (GitHub `dengguojie/vue-element-admin`, the
 * version that reads the compile info `{core_num, l1_support, tensor_c}` and writes no
 * `core_num_var`). docs/device-semantics.md states the rules in prose. Its coordinates are PyTorch's float32 arithmetic (`pytorch.ts`), unless the
 * kernel's `scale * (d + 0.5) - 0.5` is contracted into a fused multiply-add (the source does not
 * say: the `tbeFma` switch).
 *
 * @module
 */

import { fmaF32 } from "./float32.ts";
import { type AscendGeneration, socInfo } from "./generation.ts";
import { bilinearScale, linearIndexTable, type LinearTable } from "./pytorch.ts";

/** The compile-time facts the kernel's tiling reads on one generation. */
export interface Tbe5hdSpec {
  /**
   * Float32 cells of 16 channels one unified-buffer half holds: `ub_size / 4 / 2 / 16` (the
   * kernel's `tensor_c`): 1536 on A2/A3 (192 KiB), 2048 on the 910 and 310P (256 KiB).
   */
  readonly tensorC: number;
  /** Whether the AI Core has an L1 buffer the kernel uses (`l1_support`: Short_SoC_version Ascend910, Ascend310P). */
  readonly l1Support: boolean;
}

// ub_size and Short_SoC_version of every SoC of a generation agree (hicann/runtime platform_config:
// 196608 and Ascend910B/Ascend910_93 on 2201; 262144 and Ascend910 on 1001; 262144 and Ascend310P on 2002).
const SPECS: Readonly<Record<Exclude<AscendGeneration, "950">, Tbe5hdSpec>> = {
  a2: { tensorC: 196608 / 4 / 2 / 16, l1Support: false },
  "910": { tensorC: 262144 / 4 / 2 / 16, l1Support: true },
  "310p": { tensorC: 262144 / 4 / 2 / 16, l1Support: true },
};

/**
 * The tiling facts of a generation that runs the kernel (the 950 runs its own arch35 kernels).
 *
 * @example
 * ```ts
 * import { tbe5hdSpec } from "./ascend_5hd.ts";
 * tbe5hdSpec("910"); // { tensorC: 2048, l1Support: true }
 * ```
 */
export function tbe5hdSpec(generation: Exclude<AscendGeneration, "950">): Tbe5hdSpec {
  return SPECS[generation];
}

/** The kernel's tiling modes (CalTilingMode): 0 copy ... 6 row-split atomic (see {@link tilingMode5hd}). */
export type TilingMode5hd = 0 | 1 | 2 | 3 | 4 | 5 | 6;

/**
 * The tiling mode of one call, `inH x inW` the image (inputSize) and `outH x outW` the gradient:
 * 0 equal sizes (a copy); 1/2 a 1x1 image (the plane summed; 2 when the gradient exceeds
 * `tensorC` cells); 3 a 1x1 gradient; 4 both planes under `tensorC` cells (one core per plane,
 * row-major axpy); 5 (L1 only) `inW <= 640`, `outW <= 4096`, `outW > inW`, `outW / inW < 255`;
 * 6 otherwise. Modes 5 and 6 split gradient rows across cores and add each row's partial sums
 * into the result with atomic adds.
 *
 * @example
 * ```ts
 * import { tbe5hdSpec, tilingMode5hd } from "./ascend_5hd.ts";
 * tilingMode5hd([64, 64], [128, 128], tbe5hdSpec("910")); // 5
 * tilingMode5hd([64, 64], [128, 128], tbe5hdSpec("a2")); // 6: no L1
 * ```
 */
export function tilingMode5hd(
  inputHW: readonly number[],
  outputHW: readonly number[],
  spec: Tbe5hdSpec,
): TilingMode5hd {
  const [inH, inW] = inputHW;
  const [outH, outW] = outputHW;
  if (inH === outH && inW === outW) return 0;
  const imageOne = inH === 1 && inW === 1, gradOne = outH === 1 && outW === 1;
  if (imageOne && !gradOne) return outH * outW > spec.tensorC ? 2 : 1;
  if (gradOne && !imageOne) return 3;
  if (inH * inW < spec.tensorC && outH * outW < spec.tensorC) return 4;
  const mode5 = inW <= 640 && outW <= 4096 && outW > inW && Math.floor(outW / inW) < 255;
  return mode5 && spec.l1Support ? 5 : 6;
}

/**
 * Whether the kernel's result may differ between runs: modes 5 and 6 with more than one core at
 * work (`outH >= 2`; every SoC that runs it has 8 or more AI Cores), whose cores add partial rows
 * into the same result cells with atomic adds in an order nothing fixes, unless the image has the
 * gradient's height (`inH == outH`): then each result cell gets nonzero partials from one gradient
 * row only and exact zeros from its neighbour (`route.ts` says why). The kernel and its tiling
 * never read the deterministic flag.
 *
 * @example
 * ```ts
 * import { orderDependent5hd } from "./ascend_5hd.ts";
 * orderDependent5hd(6, 4, 8); // true
 * orderDependent5hd(6, 8, 8); // false: H unchanged
 * orderDependent5hd(4, 1, 1); // false: one gradient row, one core
 * ```
 */
export function orderDependent5hd(mode: TilingMode5hd, inH: number, outH: number): boolean {
  return (mode === 5 || mode === 6) && outH >= 2 && inH !== outH;
}

/**
 * The name the emulation gives the kernel of a mode (`aclemuLastKernel`).
 *
 * @example
 * ```ts
 * import { kernelName5hd } from "./ascend_5hd.ts";
 * kernelName5hd(6); // "ResizeBilinearV2Grad5HD.MODE6"
 * ```
 */
export function kernelName5hd(mode: TilingMode5hd): string {
  return `ResizeBilinearV2Grad5HD.MODE${mode}`;
}

/**
 * One dimension's table of the kernel with its `scale * (d + 0.5) - 0.5` contracted into one
 * fused multiply-add (scalar unit, `get_src_index`); without contraction the kernel's table is
 * PyTorch's from the sizes (`linearIndexTable`): scale `fl(in) / fl(out)` (align corners:
 * `fl(in - 1) / fl(out - 1)`), source clamped at 0, lower cell `floor`, `r = src - idx`, `l = 1 - r`,
 * both weights to the last cell at the end.
 *
 * @example
 * ```ts
 * import { linear5hdTable } from "./ascend_5hd.ts";
 * linear5hdTable(3, 7, false, true).i0; // Int32Array [0, 0, 0, 1, 1, 2, 2]
 * ```
 */
export function linear5hdTable(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  fma: boolean,
): LinearTable {
  if (!fma || alignCorners || inSize === outSize) {
    return linearIndexTable(inSize, outSize, alignCorners, 0);
  }
  const s = bilinearScale(inSize, outSize, false, 0);
  const i0 = new Int32Array(outSize);
  const i1 = new Int32Array(outSize);
  const l0 = new Float32Array(outSize);
  const l1 = new Float32Array(outSize);
  for (let o = 0; o < outSize; o++) {
    const src = Math.max(fmaF32(s, Math.fround(o + 0.5), -0.5), 0);
    const lo = Math.floor(src);
    const r = Math.fround(src - lo);
    i0[o] = lo;
    i1[o] = lo < inSize - 1 ? lo + 1 : lo;
    l1[o] = r;
    l0[o] = Math.fround(1 - r);
  }
  return { i0, i1, l0, l1 };
}

/**
 * Whether mode 6 loses gradient columns along W: with a row wider than half the buffer it flushes
 * the row in windows of `U + 1` cells (`U = tensor_c / 2 - 1`; `big_in_loop`, `check_next_loop`,
 * `get_output_loop_idx`), and a column that jumps past the window onto the last image column, when
 * that column's index is a multiple of `U`, is placed at slot `U` of a window whose final flush
 * moves one cell: its terms are never written (e.g. A2/A3, image width 1535 from 2 columns with
 * align_corners). `table` is the W dimension's lower cells per gradient column.
 *
 * @example
 * ```ts
 * import { losesColumns5hd, tbe5hdSpec } from "./ascend_5hd.ts";
 * losesColumns5hd(Int32Array.of(0, 1534), 1535, tbe5hdSpec("a2")); // true
 * losesColumns5hd(Int32Array.of(0, 1533), 1534, tbe5hdSpec("a2")); // false
 * ```
 */
export function losesColumns5hd(lowerCells: Int32Array, inW: number, spec: Tbe5hdSpec): boolean {
  const windowCells = spec.tensorC / 2;
  if (Math.floor(inW / windowCells) === 0) return false; // the whole row fits: one flush
  const u = windowCells - 1;
  const last = inW - 1;
  if (last === 0 || last % u !== 0) return false;
  let loopInit = 0;
  for (const cell of lowerCells) {
    const stride = cell < last ? 1 : 0;
    const jump = cell > u * (loopInit + 1);
    if (jump && stride === 0) return true;
    if (jump || (cell === (loopInit + 1) * u && stride === 1)) loopInit = Math.floor(cell / u);
  }
  return false;
}

// AI Cores where no SoC is named: the emulation's default for A2/A3 (20, as Ascend910B3/B4 and
// Ascend910_93), Ascend910A (32) and Ascend310P3 (8) of CANN's platform table.
const DEFAULT_CORES: Readonly<Record<Exclude<AscendGeneration, "950">, number>> = {
  a2: 20,
  "910": 32,
  "310p": 8,
};

/**
 * The kernel's `core_num` (the SoC's `ai_core_cnt`, hicann/runtime platform_config): modes 5 and 6
 * give each core `ceil(outH / core_num)` gradient rows (CalCoreInfo). Unset or unknown `soc`: the
 * generation's default (A2/A3 20, 910 32, 310P 8).
 *
 * @example
 * ```ts
 * import { tbe5hdCores } from "./ascend_5hd.ts";
 * tbe5hdCores("910", "Ascend910B"); // 30
 * tbe5hdCores("310p"); // 8
 * ```
 */
export function tbe5hdCores(generation: Exclude<AscendGeneration, "950">, soc?: string): number {
  const info = soc === undefined ? undefined : socInfo(soc);
  return info !== undefined && info.aiCoreCount > 0 ? info.aiCoreCount : DEFAULT_CORES[generation];
}

/**
 * Whether no order of the cores' atomic adds can change a bit of the result of an atomic mode (5
 * or 6; true for the others): every image row takes its nonzero partial rows from one core, or at
 * most two of them (`0 + a + b = 0 + b + a`). Gradient row `y` (core `floor(y / ceil(outH /
 * cores))`) adds weight `l > 0` to image row `i0[y]` and weight `r` to `i1[y]` (nothing when `r` is
 * exactly 0: its partials are zeros, or NaN wherever the row is not finite, in every order). A row
 * flushed in windows (mode 6 with `inW >= tensor_c / 2`: `big_in_loop`) may add a cell twice:
 * counted as two partials. `hTable` is the H dimension's table (`linear5hdTable`).
 *
 * @example
 * ```ts
 * import { atomicOrderFree5hd, linear5hdTable, tbe5hdSpec } from "./ascend_5hd.ts";
 * const spec = tbe5hdSpec("910");
 * atomicOrderFree5hd(6, linear5hdTable(16, 8, false, false), 200, spec, 32); // true: 1 partial a row
 * atomicOrderFree5hd(6, linear5hdTable(8, 16, false, false), 200, spec, 32); // false: 3 cores add to row 0
 * ```
 */
export function atomicOrderFree5hd(
  mode: TilingMode5hd,
  hTable: LinearTable,
  inW: number,
  spec: Tbe5hdSpec,
  cores: number,
): boolean {
  if (mode !== 5 && mode !== 6) return true;
  const outH = hTable.i0.length;
  const perCore = Math.ceil(outH / Math.max(cores, 1));
  const windowed = mode === 6 && inW >= spec.tensorC / 2;
  const weight = windowed ? 2 : 1;
  const partials = new Map<number, { core: number; count: number; cores: number }>();
  const add = (row: number, core: number): boolean => {
    const seen = partials.get(row);
    if (seen === undefined) {
      partials.set(row, { core, count: weight, cores: 1 });
      return true;
    }
    seen.count += weight;
    if (seen.core !== core) seen.cores = 2;
    return seen.cores < 2 || seen.count <= 2;
  };
  for (let y = 0; y < outH; y++) {
    const core = Math.floor(y / perCore);
    if (!add(hTable.i0[y], core)) return false;
    if (hTable.l1[y] !== 0 && !add(hTable.i1[y], core)) return false;
  }
  return true;
}
