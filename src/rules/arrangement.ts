/**
 * Launch arrangements of a bilinear backward call on the TBE kernel ResizeBilinearV2Grad (A2/A3's
 * fallback and V1, the 910, the 310P) that avoid its tiling mode 6 column loss.
 *
 * The loss (`losesColumns5hd`, from the kernel's source: CANN 8.1.RC1 toolkit copy GitHub
 * `leideng/CANN-8.1.RC1`, `opp/built-in/op_impl/ai_core/tbe/impl/dynamic/
 * resize_bilinear_v2_grad.py`, `big_in_loop`, `check_next_loop`, `get_output_loop_idx`) happens
 * only in a launch that (a) runs tiling mode 6 (CalTilingMode, `tilingMode5hd`: not equal sizes,
 * not a 1x1 image or gradient, not both planes under `tensor_c` cells, not L1's mode 5), and
 * (b) sums rows in windows along its own W axis: image width `>= tensor_c / 2`, its last column a
 * multiple of `U = tensor_c / 2 - 1`, and a gradient column jumping past a whole window onto it.
 * Both conditions read the launch's sizes only. So the same call computed by other launches of the
 * same kernel, whose W axis is another one of the call's axes or whose planes are smaller, avoids
 * it wherever (a) or (b) fails for every launch:
 *
 * - `"transposed"`: one launch with H and W swapped through strided views (`[Wo, Ho] -> [Wi, Hi]`,
 *   V1, scales from the sizes as the kernel takes them anyway): its windows run along the call's H;
 * - `"route"`: the deterministic route's two H-unchanged passes (`route.ts`), W first or H first:
 *   each pass's mode follows its own planes (a one-row pass under `tensor_c` cells is mode 4).
 *
 * {@link arrangementCandidates} checks every launch of each with the kernel's rules; the first
 * loss-free one is what the device runs (`support.ts` `launchPlanOf`). Every launch sums each
 * result cell's terms in a fixed order or (atomic modes) in an order the bound covers; the route's
 * passes are order-free (route.ts says why), so the reference computes them bit for bit.
 *
 * @module
 */

import {
  kernelName5hd,
  linear5hdTable,
  losesColumns5hd,
  orderDependent5hd,
  type Tbe5hdSpec,
  tbe5hdSpec,
  type TilingMode5hd,
  tilingMode5hd,
} from "./ascend_5hd.ts";
import type { AscendGeneration } from "./generation.ts";
import type { UpsampleParams } from "./ops.ts";
import { type DeterministicRoute, deterministicRoute, type RouteOrder } from "./route.ts";

/** A generation that runs the TBE kernel. */
export type TbeGeneration = Exclude<AscendGeneration, "950">;

/**
 * What the user wants where CANN's source says a kernel loses terms (the `deviceDefects` option):
 * `"avoid"` (default) runs an arrangement of launches that avoids the loss, or refuses where none
 * exists; `"refuse"` always refuses such a call; `"allow"` runs the kernel and returns its result.
 */
export type DeviceDefects = "avoid" | "refuse" | "allow";

/** The values of {@link DeviceDefects}. */
export const DEVICE_DEFECTS: readonly DeviceDefects[] = Object.freeze(["avoid", "refuse", "allow"]);

/**
 * The gradient columns of one mode-6 launch whose terms the kernel never writes: those it places at
 * slot U of a window that starts at the last image column (after a jump past a whole window, when
 * that column is a multiple of U), whose final flush moves one cell. Empty exactly where
 * `losesColumns5hd` is false. `lowerCells` is the launch's W table (lower cell per gradient column).
 *
 * @example
 * ```ts
 * import { lostColumns5hd } from "./arrangement.ts";
 * import { tbe5hdSpec } from "./ascend_5hd.ts";
 * lostColumns5hd(Int32Array.of(0, 1534), 1535, tbe5hdSpec("a2")); // [1]
 * lostColumns5hd(Int32Array.of(0, 767, 1534), 1535, tbe5hdSpec("a2")); // []
 * ```
 */
export function lostColumns5hd(lowerCells: Int32Array, inW: number, spec: Tbe5hdSpec): number[] {
  const lost: number[] = [];
  const u = spec.tensorC / 2 - 1;
  const last = inW - 1;
  if (Math.floor(inW / (u + 1)) === 0 || last === 0 || last % u !== 0) return lost;
  let loopInit = 0;
  for (let j = 0; j < lowerCells.length; j++) {
    const cell = lowerCells[j];
    const stride = cell < last ? 1 : 0;
    // check_next_loop: the column leaves the window, which is flushed and moved.
    if (cell > u * (loopInit + 1) || (cell === (loopInit + 1) * u && stride === 1)) {
      loopInit = Math.floor(cell / u);
    }
    // get_output_loop_idx puts it at slot U; a window starting at `last` flushes one cell.
    if (loopInit * u === last) lost.push(j);
  }
  return lost;
}

/** One launch of the kernel in an arrangement, with what its tiling makes of it. */
export interface ArrangedLaunch {
  /** What the launch is, e.g. `"the single launch"`, `"the W pass"`. */
  readonly what: string;
  /** The call's axis the launch's W (its windows) runs along. */
  readonly windowAxis: "h" | "w";
  /** The launch's image and gradient `[H, W]` as the kernel sees them. */
  readonly inputHW: readonly [number, number];
  /** The launch's gradient `[H, W]`. */
  readonly outputHW: readonly [number, number];
  /** Its tiling mode. */
  readonly mode: TilingMode5hd;
  /** The kernel as the emulation names it. */
  readonly kernel: string;
  /** The gradient columns (along {@link windowAxis}) whose terms it loses: empty when none. */
  readonly lost: readonly number[];
}

/** One way to compute a call, with each launch checked. */
export type Arrangement =
  | {
    /** The call's own launch (`"native"`) or the same launch with H and W swapped. */
    readonly kind: "native" | "transposed";
    /** Its launch. */
    readonly launches: readonly [ArrangedLaunch];
    /** Whether the result is the same bits on every run (no atomic order matters). */
    readonly orderFree: boolean;
  }
  | {
    /** The deterministic route's passes (`route.ts`). */
    readonly kind: "route";
    /** Its passes, in launch order. */
    readonly launches: readonly ArrangedLaunch[];
    /** Always true (route.ts says why). */
    readonly orderFree: true;
    /** The route to launch; null where a pass loses columns (`deterministicRoute` refuses it). */
    readonly route: DeterministicRoute | null;
  };

/**
 * The kernel's view of one launch `[outH, outW] -> [inH, inW]`: its mode and the columns it loses.
 *
 * @example
 * ```ts
 * import { launch5hd } from "./arrangement.ts";
 * import { tbe5hdSpec } from "./ascend_5hd.ts";
 * launch5hd("the single launch", "w", [4, 1535], [4, 2], true, false, tbe5hdSpec("a2")).lost; // [1]
 * ```
 */
export function launch5hd(
  what: string,
  windowAxis: "h" | "w",
  inputHW: readonly [number, number],
  outputHW: readonly [number, number],
  alignCorners: boolean,
  tbeFma: boolean,
  spec: Tbe5hdSpec,
): ArrangedLaunch {
  const mode = tilingMode5hd(inputHW, outputHW, spec);
  let lost: number[] = [];
  if (mode === 6) {
    // Mode 6 computes its W coordinates on the scalar unit (contracted under tbeFma).
    const table = linear5hdTable(inputHW[1], outputHW[1], alignCorners, tbeFma);
    if (losesColumns5hd(table.i0, inputHW[1], spec)) {
      lost = lostColumns5hd(table.i0, inputHW[1], spec);
    }
  }
  return { what, windowAxis, inputHW, outputHW, mode, kernel: kernelName5hd(mode), lost };
}

/**
 * Whether the single launch of a call can lose columns at all, from its sizes alone (a cheap test
 * before any table: the image width is `k * U + 1` with `k >= 2`).
 *
 * @example
 * ```ts
 * import { mayLoseColumns } from "./arrangement.ts";
 * mayLoseColumns(1535, "a2"); // true
 * mayLoseColumns(1536, "a2"); // false
 * ```
 */
export function mayLoseColumns(inW: number, generation: TbeGeneration): boolean {
  const u = tbe5hdSpec(generation).tensorC / 2 - 1;
  return inW > u + 1 && (inW - 1) % u === 0;
}

/**
 * The arrangements of a bilinear call whose single launch runs the TBE kernel, in the order the
 * device prefers them: the native launch, the call transposed, the route W first, the route H first.
 * The transposed launch and the routes go through V1 (scales from the sizes, as the kernel takes
 * them whatever the API). Each launch is checked with `losesColumns5hd` (a route with a losing
 * pass has no route to launch: `deterministicRoute` refuses it).
 *
 * @example
 * ```ts
 * import { arrangementCandidates } from "./arrangement.ts";
 * const call = { op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 4, 1535], outputSize: [2, 2], scales: [0, 0], alignCorners: true } as const;
 * arrangementCandidates(call, "a2", false).map((a) => [a.kind, a.launches.some((l) => l.lost.length > 0)]);
 * // [["native", true], ["transposed", false], ["route", true], ["route", true]]
 * ```
 */
export function arrangementCandidates(
  call: UpsampleParams,
  generation: TbeGeneration,
  tbeFma: boolean,
): Arrangement[] {
  const spec = tbe5hdSpec(generation);
  const [, , inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  const { alignCorners } = call;
  const native = launch5hd(
    "the single launch",
    "w",
    [inH, inW],
    [outH, outW],
    alignCorners,
    tbeFma,
    spec,
  );
  const transposed = launch5hd(
    "the call transposed",
    "h",
    [inW, inH],
    [outW, outH],
    alignCorners,
    tbeFma,
    spec,
  );
  const candidates: Arrangement[] = [
    { kind: "native", launches: [native], orderFree: !orderDependent5hd(native.mode, inH, outH) },
    {
      kind: "transposed",
      launches: [transposed],
      orderFree: !orderDependent5hd(transposed.mode, inW, outW),
    },
  ];
  // The route's H-unchanged passes (route.ts): [rows, outCols] -> [rows, inCols], equal sizes left out.
  const pass = (axis: "h" | "w", rows: number, order: RouteOrder): ArrangedLaunch[] => {
    const [inCols, outCols] = axis === "w" ? [inW, outW] : [inH, outH];
    if (inCols === outCols) return [];
    const what = `the route's ${axis.toUpperCase()} pass (${order === "wh" ? "W" : "H"} first)`;
    // Mode 5 has no windows: the contraction of its vector-unit table never matters here.
    return [launch5hd(what, axis, [rows, inCols], [rows, outCols], alignCorners, tbeFma, spec)];
  };
  for (const order of ["wh", "hw"] as const) {
    const launches = order === "wh"
      ? [...pass("w", outH, order), ...pass("h", inW, order)]
      : [...pass("h", outW, order), ...pass("w", inH, order)];
    // One pass (a dimension unchanged) is the same launch in either order.
    if (order === "hw" && launches.length < 2) break;
    const loses = launches.some((launch) => launch.lost.length > 0);
    const route = loses ? null : deterministicRoute(call, generation, tbeFma, order).route;
    candidates.push({ kind: "route", launches, orderFree: true, route });
  }
  return candidates;
}

/**
 * Whether an arrangement loses no term.
 *
 * @example
 * ```ts
 * import { arrangementCandidates, lossFree } from "./arrangement.ts";
 * const call = { op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 4, 1535], outputSize: [2, 2], scales: [0, 0], alignCorners: true } as const;
 * arrangementCandidates(call, "a2", false).map(lossFree); // [false, true, false, false]
 * ```
 */
export function lossFree(arrangement: Arrangement): boolean {
  return arrangement.launches.every((launch) => launch.lost.length === 0);
}

/**
 * The lost columns of a launch as text, e.g. `"gradient column 1 (W) onto image column 1534"`.
 *
 * @example
 * ```ts
 * import { launch5hd, lossText } from "./arrangement.ts";
 * import { tbe5hdSpec } from "./ascend_5hd.ts";
 * lossText(launch5hd("the single launch", "w", [4, 1535], [4, 2], true, false, tbe5hdSpec("a2")));
 * // "the single launch (ResizeBilinearV2Grad5HD.MODE6) loses gradient column 1 along W, which jumps onto image column 1534"
 * ```
 */
export function lossText(launch: ArrangedLaunch): string {
  return `${launch.what} (${launch.kernel}) ${lossPhrase(launch)}`;
}

/**
 * What a launch loses, e.g. `"loses gradient column 1 along W, which jumps onto image column 1534"`.
 *
 * @example
 * ```ts
 * import { launch5hd, lossPhrase } from "./arrangement.ts";
 * import { tbe5hdSpec } from "./ascend_5hd.ts";
 * lossPhrase(launch5hd("the single launch", "w", [4, 1535], [4, 2], true, false, tbe5hdSpec("a2")));
 * // "loses gradient column 1 along W, which jumps onto image column 1534"
 * ```
 */
export function lossPhrase(launch: ArrangedLaunch): string {
  const axis = launch.windowAxis.toUpperCase();
  const lost = launch.lost;
  const columns = lost.length === 1
    ? `column ${lost[0]}`
    : `columns ${lost[0]}..${lost[lost.length - 1]}`;
  const verb = lost.length === 1 ? "jumps" : "jump";
  return `loses gradient ${columns} along ${axis}, which ${verb} onto image column ` +
    `${launch.inputHW[1] - 1}`;
}
