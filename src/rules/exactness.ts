/**
 * Where the CPU device reference (`numerics: "device"`) gives the Ascend device's bits: per call,
 * the kernel the device runs and whether the reference reproduces its result bit for bit
 * (`"exact"`) or only within the comparison bound of `bound.ts` (`"bounded"`). A call is exact only
 * where the tests show the reference equal to the emulation (`native/`) bit for bit; see
 * docs/device-semantics.md, "Where the reference is exact".
 *
 * @module
 */

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
  return verdict(plan.kernel, COPIES.has(plan.kernel));
}

function verdict(kernel: string, exact: boolean): ExactnessVerdict {
  return exact
    ? { exactness: "exact", kernel, reason: "a bit copy (or nothing launched)" }
    : { exactness: "bounded", kernel, reason: "not yet shown bit-exact: within the bound" };
}
