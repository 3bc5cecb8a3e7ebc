/**
 * The CPU device reference's run of a bilinear backward call that the device sends to the TBE
 * kernel ResizeBilinearV2Grad (A2/A3's V2 fallback and V1, the 910 and 310P): the host's casts
 * around the kernel (gradOutput widened to float32, exact; the float32 result rounded to out's
 * dtype, round to nearest even: `aclnn_upsample_bilinear_2d_backward{,_v2}.cpp`
 * DoResizeBilinearV2Grad) and one launch of `tbe_kernel.ts` with the target's compile info, core
 * count and contraction switch.
 *
 * @module
 */

import { tbe5hdCores, tbe5hdSpec } from "../../../rules/ascend_5hd.ts";
import type { AscendTarget } from "../../../rules/numerics.ts";
import type { UpsampleParams } from "../../../rules/ops.ts";
import type { BilinearBackwardArgs } from "../../types.ts";
import { planeSizesOf, runOnPlanes } from "./planes.ts";
import { tbeKernel, type TbeLaunch } from "./tbe_kernel.ts";

/**
 * The launch of `call` on `target` (910, 310P or A2/A3; the 950 runs no TBE kernel).
 *
 * @throws {RangeError} for a 950 target
 * @example
 * ```ts
 * import { tbeLaunchOf } from "./tbe_launch.ts";
 * const call = { op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 3, 5], outputSize: [6, 9], scales: [0, 0], alignCorners: false } as const;
 * tbeLaunchOf(call, { generation: "910", bilinearApi: "v2", fma: true }).cores; // 32
 * ```
 */
export function tbeLaunchOf(call: UpsampleParams, target: AscendTarget): TbeLaunch {
  const generation = target.generation;
  if (generation === "950") throw new RangeError("tbeLaunchOf: the 950 runs no TBE kernel");
  return {
    ...planeSizesOf(call),
    alignCorners: call.alignCorners,
    spec: tbe5hdSpec(generation),
    cores: tbe5hdCores(generation, target.soc),
    fma: target.tbeFma ?? false,
  };
}

/**
 * Runs one TBE launch for a bilinear call on host views (any strides, any dtype).
 *
 * @example
 * ```ts
 * import { runTbeCpu } from "./tbe_launch.ts";
 * const gradOutput = { data: new Float32Array(4).fill(1), dtype: "float32", strides: [4, 4, 4, 1], offset: 0 } as const;
 * const out = { data: new Float32Array(2), dtype: "float32", strides: [2, 2, 2, 1], offset: 0 } as const;
 * const args = { gradOutput, out, inputSize: [1, 1, 1, 2], outputSize: [1, 4], scales: [0, 0], alignCorners: false };
 * runTbeCpu(args, { inH: 1, inW: 2, outH: 1, outW: 4, alignCorners: false, spec: { tensorC: 1536, l1Support: false }, cores: 20, fma: false });
 * // out.data: [2, 2]
 * ```
 */
export function runTbeCpu(args: BilinearBackwardArgs, launch: TbeLaunch): void {
  runOnPlanes(args, launch, (grad, planes) => tbeKernel(grad, planes, launch));
}
