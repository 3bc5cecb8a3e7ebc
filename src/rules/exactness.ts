/**
 * Where the CPU device reference (`numerics: "device"`) gives the Ascend device's bits: per call,
 * the kernel the device runs and whether the reference reproduces its result bit for bit
 * (`"exact"`) or only within the comparison bound of `bound.ts` (`"bounded"`). A call is exact only
 * where the tests show the reference equal to the emulation (`native/`) bit for bit; see
 * docs/device-semantics.md, "Where the reference is exact".
 *
 * @module
 */

import {
  atomicOrderFree5hd,
  linear5hdTable,
  tbe5hdCores,
  tbe5hdSpec,
  tilingMode5hd,
} from "./ascend_5hd.ts";
import { ascendPlan, type AscendTarget } from "./numerics.ts";
import { forwardPlan } from "./forward_device.ts";
import type { UpsampleParams } from "./ops.ts";

/** Whether the reference gives the device's bits (`"exact"`) or lies within the bound (`"bounded"`). */
export type Exactness = "exact" | "bounded";

/** The verdict on one call: exactness, the kernel the device runs, and why. */
export interface ExactnessVerdict {
  /** Exact (bit for bit) or bounded (within `bound.ts`'s bound). */
  readonly exactness: Exactness;
  /** The kernel, as the emulation names it (`aclemuLastKernel`); `""` when nothing is launched. */
  readonly kernel: string;
  /** Why, in a sentence. */
  readonly reason: string;
}

/** A call as {@link referenceExactness} reads it. */
export type ExactnessCall = UpsampleParams & {
  readonly deterministic: boolean;
  readonly direction?: "backward" | "forward";
};

const COPIES = new Set([
  "",
  "ViewCopy",
  "UpsampleNearestExact2dGrad.DATA_COPY",
  "ResizeBilinearV2Grad.ALL_COPY",
  "ResizeBilinearV2Grad5HD.MODE0",
]);

/**
 * Whether the CPU device reference gives `target`'s device bits for `call` (backward, the
 * default, or forward op). Throws what `ascendPlan` / `forwardPlan` throw for a call the family
 * does not run.
 *
 * @example
 * ```ts
 * import { referenceExactness } from "./exactness.ts";
 * const call = {
 *   op: "bilinear2d",
 *   dtype: "float32",
 *   inputSize: [1, 1, 4, 4],
 *   outputSize: [4, 4],
 *   scales: [0, 0],
 *   alignCorners: false,
 *   deterministic: false,
 * } as const;
 * referenceExactness(call, { generation: "910", bilinearApi: "v2", fma: true }).exactness; // "exact"
 * ```
 */
export function referenceExactness(call: ExactnessCall, target: AscendTarget): ExactnessVerdict {
  if (call.direction === "forward") {
    const plan = forwardPlan(call, target);
    return verdict(plan.kernel, plan.variant === "none" || plan.variant === "copy");
  }
  const plan = ascendPlan(call, target);
  if (target.generation !== "950" && plan.kernel.startsWith("ResizeBilinearV2Grad5HD")) {
    return tbeVerdict(call, target.generation, target, plan.kernel);
  }
  return verdict(plan.kernel, COPIES.has(plan.kernel));
}

// The TBE kernel: exact wherever the cores' atomic order cannot change a bit.
function tbeVerdict(
  call: ExactnessCall,
  generation: "a2" | "910" | "310p",
  target: AscendTarget,
  kernel: string,
): ExactnessVerdict {
  const spec = tbe5hdSpec(generation);
  const [, , inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  const mode = tilingMode5hd([inH, inW], [outH, outW], spec);
  const hTable = linear5hdTable(inH, outH, call.alignCorners, target.tbeFma ?? false);
  const cores = tbe5hdCores(generation, target.soc);
  if (atomicOrderFree5hd(mode, hTable, inW, spec, cores)) {
    return {
      exactness: "exact",
      kernel,
      reason: mode === 5 || mode === 6
        ? "the TBE kernel's own arithmetic and order; each image row takes its nonzero partial rows from one core or at most two, so no atomic order changes a bit"
        : "the TBE kernel's own arithmetic and order; no atomic adds (or one)",
    };
  }
  return {
    exactness: "bounded",
    kernel,
    reason:
      "the TBE kernel's cores add three or more partial rows into one image row in an order nothing fixes: the reference adds them in the order the emulation draws under aclemuSetAtomicSeed(0), within the bound for any other",
  };
}

function verdict(kernel: string, exact: boolean): ExactnessVerdict {
  return exact
    ? { exactness: "exact", kernel, reason: "a bit copy (or nothing launched)" }
    : { exactness: "bounded", kernel, reason: "not yet shown bit-exact: within the bound" };
}
