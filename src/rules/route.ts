/**
 * The deterministic route of bilinear backward on the families whose TBE kernel
 * ResizeBilinearV2Grad adds in an order nothing fixes (tiling modes 5 and 6: Atlas A2/A3's
 * fallback and V1, the Atlas training (910) and inference (310P) series).
 *
 * Why it is deterministic, from the kernel's source (`resize_bilinear_v2_grad.py`,
 * ResizeBilinearV2Grad5HD `normal_small` / `normal_big`; docs/device-semantics.md): modes 5 and 6
 * give each core whole gradient rows; a row's partial sums go to image rows `hidx` (weight
 * `1 - r`) and `hidx + 1` (weight `r`) by atomic adds onto an output zeroed before the launch
 * (`output_gm` is `is_atomic_add`). When the image has the gradient's height, `scale` is exactly 1,
 * so `src = h`, `r = 0` and `1 - r = 1` exactly: every result cell receives nonzero partials from
 * one gradient row only (one core, in its program order) plus the neighbour row's `g * 0` terms,
 * exact zeros, and `x + 0 = x` in any order. A partial sum starts from +0 and never becomes -0,
 * so the zero terms cannot flip a sign either; a non-finite gradient makes them NaN (`inf * 0`),
 * which any order keeps.
 *
 * So a call `[Ho, Wo] -> [Hi, Wi]` with `Hi != Ho` runs as two H-unchanged calls of the same
 * operator (V1, which runs ResizeBilinearV2Grad whenever the sizes differ): the W pass
 * `[Ho, Wo] -> T [Ho, Wi]`, then the H pass on T and the result seen with H and W swapped,
 * `[Wi, Ho] -> [Wi, Hi]` (strided views; the op's own Contiguous and ViewCopy move the data). A pass
 * whose sizes are equal is a copy and is left out. The passes may also run H first (order `"hw"`:
 * `[Wo, Ho] -> [Wo, Hi]` seen transposed, then `[Hi, Wo] -> [Hi, Wi]`): the same argument holds,
 * on other planes, and each pass's tiling mode and windows follow its own sizes. float16 and bfloat16 are cast to float32 first
 * and back once at the end (aclnnCast), as the single launch's host code casts around the kernel,
 * so the route adds no 16-bit rounding of its own.
 *
 * @module
 */

import {
  kernelName5hd,
  linear5hdTable,
  losesColumns5hd,
  type Tbe5hdSpec,
  tbe5hdSpec,
  type TilingMode5hd,
  tilingMode5hd,
} from "./ascend_5hd.ts";
import type { AscendGeneration } from "./generation.ts";
import type { UpsampleParams } from "./ops.ts";

/** The emulation's name of aclnnCast's kernel (`aclemuLastKernel`). */
export const CAST_KERNEL = "Cast";

/** One launch of ResizeBilinearV2Grad in a route: an H-unchanged call of the kernel. */
export interface RoutePass {
  /**
   * `"w"`: resizes W (its planes as they are); `"h"`: resizes H, its source and result both seen
   * with H and W swapped (strided views).
   */
  readonly axis: "w" | "h";
  /**
   * Rows both planes of the pass share (the kernel's H, unchanged): order `"wh"` Ho for W, Wi for
   * H; order `"hw"` Wo for H, Hi for W.
   */
  readonly rows: number;
  /** Columns of the pass's image (its result): Wi for W, Hi for H. */
  readonly inCols: number;
  /** Columns of the pass's gradient: Wo for W, Ho for H. */
  readonly outCols: number;
  /** The tiling mode the kernel picks for the pass. */
  readonly mode: TilingMode5hd;
  /** The kernel as the emulation names it, e.g. `"ResizeBilinearV2Grad5HD.MODE6"`. */
  readonly kernel: string;
}

/**
 * The order of a route's passes: `"wh"` the W pass first (the deterministic route's default),
 * `"hw"` the H pass first (the same two H-unchanged launches on other planes, what
 * `arrangement.ts` tries where the W-first order's W pass would lose columns).
 */
export type RouteOrder = "wh" | "hw";

/** The launches of a deterministic bilinear call, as {@link deterministicRoute} plans them. */
export interface DeterministicRoute {
  /**
   * The passes in launch order (W then H for `"wh"`, H then W for `"hw"`; a pass whose sizes are
   * equal is left out). Each pass reads what the one before it wrote.
   */
  readonly passes: readonly RoutePass[];
  /** Which pass runs first. */
  readonly order: RouteOrder;
  /** 16-bit dtypes: gradOutput cast to float32 before the passes, the result cast back after. */
  readonly cast: boolean;
  /** Every kernel launched, in order (`"Cast"` and the passes' kernels). */
  readonly kernels: readonly string[];
  /** The kernel's tiling facts on the family (what each pass's mode and windows depend on). */
  readonly spec: Tbe5hdSpec;
  /** Whether the kernel contracts its scalar coordinates and `vec_axpy` (the `tbeFma` switch). */
  readonly fma: boolean;
  /** Bytes of the float32 buffers the call allocates on the device and frees again. */
  readonly intermediateBytes: number;
  /**
   * Bytes the launches read and write in total: each pass its gradient and its image (float32),
   * the H pass's Contiguous and ViewCopy of its transposed views, the casts.
   */
  readonly bytesMoved: number;
}

/** A route, or why there is none for a call whose native kernel is order-dependent. */
export type RouteChoice =
  | { readonly route: DeterministicRoute; readonly refusal: null }
  | { readonly route: null; readonly refusal: string };

/**
 * The deterministic route of a bilinear call on a family that runs the TBE kernel, or why there is
 * none: a pass in tiling mode 6 that would drop gradient columns (`losesColumns5hd`) refuses it.
 * Only meaningful for calls whose single launch is order-dependent (`ascendPlan`).
 *
 * @example
 * ```ts
 * import { deterministicRoute } from "./route.ts";
 * const call = { op: "bilinear2d", dtype: "float32", inputSize: [2, 8, 64, 64], outputSize: [128, 128], scales: [0, 0], alignCorners: false } as const;
 * deterministicRoute(call, "910", false).route?.kernels;
 * // ["ResizeBilinearV2Grad5HD.MODE5", "ResizeBilinearV2Grad5HD.MODE5"]
 * ```
 */
export function deterministicRoute(
  call: UpsampleParams,
  generation: Exclude<AscendGeneration, "950">,
  tbeFma: boolean,
  order: RouteOrder = "wh",
): RouteChoice {
  const [n, c, inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  const spec = tbe5hdSpec(generation);
  const planes = n * c;
  const passes: RoutePass[] = [];
  const add = (axis: "w" | "h", rows: number, inCols: number, outCols: number): string | null => {
    if (inCols === outCols) return null;
    const mode = tilingMode5hd([rows, inCols], [rows, outCols], spec);
    // Mode 5 computes the pass's column coordinates on the vector unit: never contracted.
    const table = linear5hdTable(inCols, outCols, call.alignCorners, tbeFma && mode !== 5);
    if (mode === 6 && losesColumns5hd(table.i0, inCols, spec)) {
      return `its ${axis.toUpperCase()} pass (${outCols} -> ${inCols} columns, tiling mode 6) ` +
        `would drop the gradient of the columns that jump onto image column ${inCols - 1}, a ` +
        `multiple of the kernel's window (resize_bilinear_v2_grad.py big_in_loop)`;
    }
    passes.push({ axis, rows, inCols, outCols, mode, kernel: kernelName5hd(mode) });
    return null;
  };
  const refusal = order === "wh"
    ? add("w", outH, inW, outW) ?? add("h", inW, inH, outH)
    : add("h", outW, inH, outH) ?? add("w", inH, inW, outW);
  if (refusal !== null) return { route: null, refusal };
  const cast = call.dtype !== "float32";
  const kernels = passes.map((pass) => pass.kernel);
  const f32 = 4 * planes;
  // T: [Ho, Wi] after the W pass, [Hi, Wo] after the H pass.
  const tCells = order === "wh" ? outH * inW : inH * outW;
  let intermediateBytes = passes.length === 2 ? f32 * tCells : 0;
  if (cast) intermediateBytes += f32 * (outH * outW + inH * inW); // gradOutput and result in float32
  // The H pass also copies its transposed input (Contiguous) and output (ViewCopy): 3x its cells.
  let bytesMoved = 0;
  for (const pass of passes) {
    bytesMoved += (pass.axis === "h" ? 3 : 1) * f32 * pass.rows * (pass.inCols + pass.outCols);
  }
  // Each cast reads 2 bytes and writes 4 per cell, or the reverse.
  if (cast) bytesMoved += 6 * planes * (outH * outW + inH * inW);
  return {
    route: {
      passes,
      order,
      cast,
      kernels: cast ? [CAST_KERNEL, ...kernels, CAST_KERNEL] : kernels,
      spec,
      fma: tbeFma,
      intermediateBytes,
      bytesMoved,
    },
    refusal: null,
  };
}
