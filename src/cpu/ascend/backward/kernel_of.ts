/**
 * Which of the device reference's own kernels runs a backward call (the ones that compute a
 * device kernel's arithmetic and order, not PyTorch's shared table kernels): the TBE
 * ResizeBilinearV2Grad launch, the 950's gathers and scatter, and A2/A3's Cube kernels in the
 * reading `cubeOrder: "ascending"` names. `src/rules/exactness.ts` says where each is exact.
 *
 * @module
 */

import { ascendPlan, type AscendTarget } from "../../../rules/numerics.ts";
import type { UpsampleParams } from "../../../rules/ops.ts";
import type { BilinearBackwardArgs } from "../../types.ts";
import { runCubeCpu } from "./cube_a2.ts";
import { gather950LaunchOf, runGather950Cpu } from "./gather950.ts";
import { runScatter950Cpu, scatter950LaunchOf } from "./scatter950.ts";
import { runTbeCpu, tbeLaunchOf } from "./tbe_launch.ts";

// The emulation's (and ascendPlan's) name prefix of the TBE kernel's launches.
const TBE_KERNEL = "ResizeBilinearV2Grad5HD";
// A2/A3's Cube-matmul backward kernels.
const CUBE_KERNELS = new Set(["UpsampleBilinear2dGrad", "UpsampleNearestExact2dGrad"]);

/**
 * The device kernel that runs `call` on `target` in the reference, as a function of the call's
 * host views, or null where the shared table kernels compute it (`ascendCall`'s rule and scales).
 *
 * @example
 * ```ts
 * import { deviceKernelOf } from "./kernel_of.ts";
 * const call = { op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 3, 5], outputSize: [6, 9], scales: [0, 0], alignCorners: false, deterministic: false } as const;
 * deviceKernelOf(call, { generation: "910", bilinearApi: "v2", fma: true }) !== null; // true: the TBE kernel
 * ```
 */
export function deviceKernelOf(
  call: UpsampleParams & { readonly deterministic: boolean },
  target: AscendTarget,
): ((args: BilinearBackwardArgs) => void) | null {
  const plan = ascendPlan(call, target);
  if (plan.kernel.startsWith(TBE_KERNEL)) {
    const launch = tbeLaunchOf(call, target);
    return (args) => runTbeCpu(args, launch);
  }
  const gather = plan.gather ? gather950LaunchOf(call, target) : null;
  if (gather !== null) return (args) => runGather950Cpu(args, gather);
  const scatter = plan.atomic ? scatter950LaunchOf(call, target) : null;
  if (scatter !== null) return (args) => runScatter950Cpu(args, scatter);
  if (target.cubeOrder === "ascending" && CUBE_KERNELS.has(plan.kernel)) {
    const op = call.op;
    return (args) => runCubeCpu(args, op);
  }
  return null;
}
