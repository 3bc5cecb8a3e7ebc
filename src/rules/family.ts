/**
 * What each Ascend family runs at all: the nearest-exact ops and bfloat16 bilinear are missing on the
 * Atlas training (910) and inference (310P) series.
 *
 * @module
 */

import { type AscendGeneration, FAMILY_NAMES } from "./generation.ts";
import { OP_SPECS, type UpsampleParams } from "./ops.ts";

/**
 * Throws a `TypeError` for a call the family does not run: on the Atlas training (910) and inference
 * (310P) series the nearest-exact ops (their kernels ship for A2/A3 and 950 only: ops-cv
 * image/upsample_nearest_exact2d_grad/op_host/config/) and bfloat16 bilinear with different sizes
 * (aclnn_upsample_bilinear_2d_backward_v2.cpp CheckDtypeValid refuses it on DAV_1001/DAV_2002).
 *
 * @throws {TypeError} naming the op, the dtype, the family and what to do instead
 * @example
 * ```ts
 * import { checkFamilySupports } from "./family.ts";
 * const call = { op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 4, 4], outputSize: [8, 8], scales: [0, 0], alignCorners: false } as const;
 * checkFamilySupports(call, "910"); // fine
 * ```
 */
export function checkFamilySupports(params: UpsampleParams, generation: AscendGeneration): void {
  if (generation !== "910" && generation !== "310p") return;
  const name = OP_SPECS[params.op].name;
  const family = FAMILY_NAMES[generation];
  if (params.op !== "bilinear2d") {
    throw new TypeError(
      `${name} is not supported on the ${family}: CANN ships its kernel (UpsampleNearestExact2dGrad) ` +
        `for Atlas A2/A3 and Ascend 950 only, so the device would fail with 561003; run it on the ` +
        `CPU backend (Device.open({ backend: "cpu" }))`,
    );
  }
  const same = params.inputSize[2] === params.outputSize[0] &&
    params.inputSize[3] === params.outputSize[1];
  if (params.dtype === "bfloat16" && !same) {
    throw new TypeError(
      `${name}: dtype bfloat16 is not supported on the ${family} when the sizes differ (aclnn ` +
        `answers 161002 there); use float16 or float32`,
    );
  }
}
