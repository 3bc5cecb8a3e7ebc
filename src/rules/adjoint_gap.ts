/**
 * Where a family's forward and backward kernels are not each other's transpose, by construction of
 * their source: nearest-exact on Atlas A2/A3 and the Ascend 950, whose forward floors
 * `(o + 0.5) * s` (`forward_axes.ts`) while the backward gathers ranges `ceil(i * s' - 0.5)`
 * (`ascend_a2.ts`, `ascend950_nearest.ts`), and a scale the 2d forward ignores on equal sizes; A2/A3
 * bilinear where V2's backward uses a scale its forward does not.
 * An NPU says so once per op and family when a device runs both directions of such a call
 * ({@link AdjointGapWatch} describes it, the warnings channel `src/warnings.ts` says it, code
 * `ACLNN_UPSAMPLE_ADJOINT_GAP`); `verify --adjoint` names the pairs as device facts
 * (docs/device-semantics.md, "The adjoint check").
 *
 * @module
 */

import { bilinearRoute } from "./ascend_a2.ts";
import { bilinearCubeRoute } from "./forward_device.ts";
import { FAMILY_NAMES } from "./generation.ts";
import { nearestIndexForward, nearestStepA2, step950 } from "./forward_axes.ts";
import type { AscendTarget } from "./numerics.ts";
import { FORWARD_OP_SPECS, OP_SPECS, type UpsampleParams } from "./ops.ts";
import { nearestRule950, nearestTables } from "./tables.ts";
import type { WarningNotice } from "./warning_codes.ts";

/**
 * Why `call`'s forward and backward differ on `target`'s kernels, or null where they are each
 * other's transpose.
 *
 * @example
 * ```ts
 * import { adjointGap } from "./adjoint_gap.ts";
 * const call = { op: "nearestExact1d", dtype: "float32", inputSize: [1, 1, 2], outputSize: [41], scales: [0], alignCorners: false } as const;
 * adjointGap(call, { generation: "a2", bilinearApi: "v2", fma: true }); // "... output 20 ..."
 * ```
 */
export function adjointGap(call: UpsampleParams, target: AscendTarget): string | null {
  const { op, inputSize, outputSize, scales } = call;
  const generation = target.generation;
  if (op === "bilinear2d") return generation === "a2" ? bilinearGapA2(call, target) : null;
  if (generation !== "a2" && generation !== "950") return null;
  const twoD = op === "nearestExact2d";
  const sameSizes = outputSize.every((size, d) => size === inputSize[2 + d]);
  for (let d = 0; d < outputSize.length; d++) {
    const inSize = inputSize[2 + d], outSize = outputSize[d];
    let forward: Int32Array;
    if (generation === "950" && sameSizes) {
      forward = Int32Array.from({ length: outSize }, (_, o) => o); // a copy whatever the scales
    } else {
      const step = generation === "a2"
        ? nearestStepA2(inSize, outSize, scales[d], twoD)
        : step950(inSize, outSize, scales[d]);
      forward = nearestIndexForward(inSize, outSize, step);
    }
    let backward: Int32Array;
    try {
      const rule = generation === "a2" ? "ascend-a2" : nearestRule950(target.fma);
      backward = nearestTables(inSize, outSize, scales[d], rule).index;
    } catch {
      return null; // the backward refuses the call: no pair
    }
    const o = forward.findIndex((input, k) => input !== backward[k]);
    if (o >= 0) {
      return `on the ${FAMILY_NAMES[generation]} the nearest-exact forward kernel reads input ` +
        `${forward[o]} for output ${o} of dimension ${d} (${inSize} -> ${outSize}), while the ` +
        `backward kernel sends that output's gradient to input ${backward[o]}: here the device's ` +
        `backward is not the transpose of its forward (its own kernels' rules; docs/device-` +
        `semantics.md, "The adjoint check")`;
    }
  }
  return null;
}

// A2/A3 bilinear: V2's backward uses a given scale (`1 / scale`) where its forward does not: on a
// dimension of equal sizes (the Cube forward steps by 1 there, aclnn_upsample_bilinear_2d.cpp
// GetBilinearScales) or when the forward falls back to the TBE kernel, which reads the sizes
// (1 / scale above 50, the forward Cube kernel's limit; V2's backward bounds only 1 / scale >= 0.01,
// CheckMinScale in aclnn_upsample_bilinear2d_backward.cpp, so every larger 1 / scale that passes
// out == floor(in * scale) belongs to the gap).
function bilinearGapA2(call: UpsampleParams, target: AscendTarget): string | null {
  if (target.bilinearApi !== "v2" || call.alignCorners) return null;
  if (bilinearRoute(call, "v2").kernel !== "kernel") return null; // the backward reads the sizes
  const cube = bilinearCubeRoute(call);
  for (let d = 0; d < 2; d++) {
    const scale = call.scales[d];
    const inSize = call.inputSize[2 + d], outSize = call.outputSize[d];
    if (scale <= 0) continue;
    const backwardStep = Math.fround(1 / scale);
    const forwardStep = cube && inSize === outSize
      ? 1
      : cube
      ? backwardStep
      : Math.fround(Math.fround(inSize) / Math.fround(outSize));
    if (forwardStep !== backwardStep) {
      return `on the ${FAMILY_NAMES.a2} the bilinear forward kernel steps ${forwardStep} along ` +
        `dimension ${d} (${inSize} -> ${outSize}) while the backward kernel uses 1 / scale = ` +
        `${backwardStep}: here the device's backward is not the transpose of its forward (its own ` +
        `kernels' rules; docs/device-semantics.md, "The adjoint check")`;
    }
  }
  return null;
}

/** Which op of a pair a call runs. */
export type AdjointDirection = "forward" | "backward";

// Spatial sizes, scales and corners a forward and a backward call share when they are a pair.
function pairSignature(call: UpsampleParams): string {
  const { op, inputSize, outputSize, scales, alignCorners } = call;
  return `${op}|${inputSize.slice(2)}|${outputSize}|${scales}|${alignCorners}`;
}

// Signatures remembered per direction before the oldest are dropped (a long run of new sizes).
const MAX_REMEMBERED = 1024;

/**
 * One device's memory of the calls that met an adjoint gap, by direction, and the warning a call
 * deserves. It describes (a {@link WarningNotice}); the caller emits through the warnings channel.
 *
 * By default a call is worth a warning only when the device ran the other direction on the same
 * sizes: a backward alone computes its own kernel's gradient, and whether that is the transpose of
 * the device's forward matters only to a caller who runs that forward too.
 *
 * @example
 * ```ts
 * import { AdjointGapWatch } from "./adjoint_gap.ts";
 * const watch = new AdjointGapWatch({ generation: "a2", bilinearApi: "v2", fma: true });
 * const call = { op: "nearestExact1d", dtype: "float32", inputSize: [1, 1, 2], outputSize: [41], scales: [0], alignCorners: false } as const;
 * watch.notice(call, "backward", false); // null: the forward never ran on these sizes
 * watch.notice(call, "forward", false)?.kind; // "ADJOINT_GAP"
 * ```
 */
export class AdjointGapWatch {
  readonly #target: AscendTarget;
  // Each validated call object's gap and pair signature (a repeated call passes the same object).
  readonly #gaps = new WeakMap<object, { gap: string; signature: string } | null>();
  readonly #ran: Record<AdjointDirection, Set<string>> = {
    forward: new Set(),
    backward: new Set(),
  };

  /** A watch over the kernels of `target`. */
  constructor(target: AscendTarget) {
    this.#target = target;
  }

  /** The key a gap of `call` is said once under: op and family. */
  key(call: UpsampleParams): string {
    return `${call.op}:${this.#target.generation}`;
  }

  /**
   * The warning `call` run in `direction` deserves: where it meets a gap and the other direction
   * ran on the same sizes, or, with `everyCall` (the user asked for the kind), wherever it meets
   * one; else null.
   */
  notice(
    call: UpsampleParams,
    direction: AdjointDirection,
    everyCall: boolean,
  ): WarningNotice | null {
    let known = this.#gaps.get(call);
    if (known === undefined) {
      const gap = adjointGap(call, this.#target);
      known = gap === null ? null : { gap, signature: pairSignature(call) };
      this.#gaps.set(call, known);
    }
    if (known === null) return null;
    const { gap, signature } = known;
    const ran = this.#ran[direction];
    if (ran.size >= MAX_REMEMBERED) ran.clear();
    ran.add(signature);
    const other: AdjointDirection = direction === "forward" ? "backward" : "forward";
    const paired = this.#ran[other].has(signature);
    if (!paired && !everyCall) return null;
    const name = (d: AdjointDirection): string =>
      (d === "forward" ? FORWARD_OP_SPECS : OP_SPECS)[call.op].name;
    const message = paired
      ? `${name(direction)}: this device also ran ${name(other)} on these sizes, and the two ` +
        `are not each other's transpose: ${gap}`
      : `${name(direction)}: ${gap}`;
    return { kind: "ADJOINT_GAP", key: this.key(call), message };
  }
}
