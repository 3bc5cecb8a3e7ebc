/**
 * The op vocabulary every part of the library shares: the three backward ops, the parameters of a
 * call that decide its result, and the per-op names used in checks and messages.
 *
 * @module
 */

import type { DType } from "../tensor/dtype.ts";

/** The three backward ops (PyTorch's `upsample_nearest_exact1d/2d_backward`, `upsample_bilinear2d_backward`). */
export type UpsampleOp = "nearestExact1d" | "nearestExact2d" | "bilinear2d";

/** Every op, in a fixed order. */
export const UPSAMPLE_OPS: readonly UpsampleOp[] = Object.freeze([
  "nearestExact1d",
  "nearestExact2d",
  "bilinear2d",
]);

/** The parameters of an op call that decide its result (and whether a backend supports it). */
export interface UpsampleParams {
  /** Which op to run. */
  readonly op: UpsampleOp;
  /** Element type of `gradOutput` and `out`. */
  readonly dtype: DType;
  /** `[N, C, L]` or `[N, C, H, W]`. */
  readonly inputSize: readonly number[];
  /** `[L]` or `[H, W]`. */
  readonly outputSize: readonly number[];
  /** PyTorch scale factors per spatial dimension; 0 means "derive from the sizes". */
  readonly scales: readonly number[];
  /** Bilinear only. */
  readonly alignCorners: boolean;
}

/** The public names and option keys of one op. */
export interface OpSpec {
  /** The public function, as messages name it. */
  readonly name: string;
  /** The spatial dimensions' letters. */
  readonly spatial: readonly string[];
  /** The option keys of the scales, one per spatial dimension. */
  readonly scaleKeys: readonly string[];
  /** Every option key the op accepts. */
  readonly keys: ReadonlySet<string>;
}

const COMMON_KEYS = ["outputSize", "inputSize", "out", "deterministic"];

/**
 * Per-op names used in checks and messages.
 *
 * @example
 * ```ts
 * import { OP_SPECS } from "./ops.ts";
 * OP_SPECS.bilinear2d.name; // "upsampleBilinear2dBackward"
 * ```
 */
export const OP_SPECS: Readonly<Record<UpsampleOp, OpSpec>> = {
  nearestExact1d: {
    name: "upsampleNearestExact1dBackward",
    spatial: ["L"],
    scaleKeys: ["scales"],
    keys: new Set([...COMMON_KEYS, "scales"]),
  },
  nearestExact2d: {
    name: "upsampleNearestExact2dBackward",
    spatial: ["H", "W"],
    scaleKeys: ["scalesH", "scalesW"],
    keys: new Set([...COMMON_KEYS, "scalesH", "scalesW"]),
  },
  bilinear2d: {
    name: "upsampleBilinear2dBackward",
    spatial: ["H", "W"],
    scaleKeys: ["scalesH", "scalesW"],
    keys: new Set([...COMMON_KEYS, "scalesH", "scalesW", "alignCorners"]),
  },
};

const FORWARD_KEYS = ["outputSize", "out", "deterministic"];

/**
 * Per-op names of the forward ops (PyTorch's `upsample_nearest_exact1d/2d`, `upsample_bilinear2d`:
 * `interpolate`'s ops), used in checks and messages. Their input is `[N, C, ...inputSize spatial]`,
 * their result `[N, C, ...outputSize]`.
 *
 * @example
 * ```ts
 * import { FORWARD_OP_SPECS } from "./ops.ts";
 * FORWARD_OP_SPECS.bilinear2d.name; // "upsampleBilinear2d"
 * ```
 */
export const FORWARD_OP_SPECS: Readonly<Record<UpsampleOp, OpSpec>> = {
  nearestExact1d: {
    name: "upsampleNearestExact1d",
    spatial: ["L"],
    scaleKeys: ["scales"],
    keys: new Set([...FORWARD_KEYS, "scales"]),
  },
  nearestExact2d: {
    name: "upsampleNearestExact2d",
    spatial: ["H", "W"],
    scaleKeys: ["scalesH", "scalesW"],
    keys: new Set([...FORWARD_KEYS, "scalesH", "scalesW"]),
  },
  bilinear2d: {
    name: "upsampleBilinear2d",
    spatial: ["H", "W"],
    scaleKeys: ["scalesH", "scalesW"],
    keys: new Set([...FORWARD_KEYS, "scalesH", "scalesW", "alignCorners"]),
  },
};

/** aclnn's nearest-exact limit: the forward op may enlarge a dimension at most 50 times. */
export const MAX_NEAREST_SCALE = 50;
