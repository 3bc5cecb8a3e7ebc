/**
 * Where a family's forward and backward kernels are not each other's transpose, by construction of
 * their source: nearest-exact on Atlas A2/A3 and the Ascend 950, whose forward floors
 * `(o + 0.5) * s` (`forward_axes.ts`) while the backward gathers ranges `ceil(i * s' - 0.5)`
 * (`ascend_a2.ts`, `ascend950_nearest.ts`), and a scale the 2d forward ignores on equal sizes; A2/A3
 * bilinear where V2's backward uses a scale its forward does not.
 * The library says so once per op and family when a call meets such a point
 * ({@link warnAdjointGap}); `verify --adjoint` names the pairs as device facts
 * (docs/device-semantics.md, "The adjoint check").
 *
 * @module
 */

import { bilinearRoute } from "./ascend_a2.ts";
import { bilinearCubeRoute } from "./forward_device.ts";
import { FAMILY_NAMES } from "./generation.ts";
import { nearestIndexForward, nearestStepA2, step950 } from "./forward_axes.ts";
import type { AscendTarget } from "./numerics.ts";
import type { UpsampleParams } from "./ops.ts";
import { nearestRule950, nearestTables } from "./tables.ts";

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

const warned = new Set<string>();
let quiet = false;
// Calls already looked at (a repeated call passes its validated call object again).
const seen = new WeakSet<object>();

/**
 * Warns once per op and family when `call` meets a point where the device's forward and backward
 * differ by construction ({@link adjointGap}): a gradient computed there is not the exact gradient
 * of the device's own forward.
 *
 * @example
 * ```ts
 * import { warnAdjointGap } from "./adjoint_gap.ts";
 * const call = { op: "nearestExact2d", dtype: "float32", inputSize: [1, 1, 4, 4], outputSize: [8, 8], scales: [0, 0], alignCorners: false } as const;
 * warnAdjointGap(call, { generation: "a2", bilinearApi: "v2", fma: true }); // no tie: silent
 * ```
 */
export function warnAdjointGap(call: UpsampleParams, target: AscendTarget): void {
  const key = `${call.op}:${target.generation}`;
  if (quiet || warned.has(key) || seen.has(call)) return;
  seen.add(call);
  const gap = adjointGap(call, target);
  if (gap === null) return;
  warned.add(key);
  console.warn(`@aclnn/upsample: ${gap} (said once per op and family)`);
}

/**
 * Turns {@link warnAdjointGap}'s warning off for this process: `verify` and `doctor` make such calls
 * on purpose and report the gaps themselves.
 *
 * @example
 * ```ts
 * import { suppressAdjointGapWarning } from "./adjoint_gap.ts";
 * suppressAdjointGapWarning();
 * ```
 */
export function suppressAdjointGapWarning(): void {
  quiet = true;
}
