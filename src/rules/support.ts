/**
 * What each Ascend family runs at all, and whether a call's kernel keeps deterministic mode's word:
 * the checks both the NPU backend and the CPU device reference make before anything is allocated.
 *
 * @module
 */

import { type AscendGeneration, FAMILY_NAMES } from "./generation.ts";
import { type AscendPlan, ascendPlan, type AscendTarget } from "./numerics.ts";
import { OP_SPECS, type UpsampleParams } from "./ops.ts";

/**
 * Thrown when an NPU's SoC is in CANN's platform table but of an arch (NpuArch) that runs none of
 * the upsample backward operators, e.g. Ascend310B (Atlas 200I/500 A2); `Device.open()` in
 * `"auto"` mode then falls back to the CPU backend with this message as its reason.
 *
 * @example
 * ```ts
 * import { UnsupportedSocError } from "./support.ts";
 * const error = new UnsupportedSocError("Ascend310B1", 3002, "Ascend310B1 (NpuArch 3002) ...");
 * error.npuArch; // 3002
 * ```
 */
export class UnsupportedSocError extends Error {
  /** Creates the error; `message` says why and what to do. */
  constructor(
    /** The SoC name `aclrtGetSocName` answered. */
    readonly soc: string,
    /** Its NpuArch in CANN's platform table. */
    readonly npuArch: number,
    message: string,
  ) {
    super(message);
    this.name = "UnsupportedSocError";
  }
}

/**
 * Thrown when a call asks for deterministic mode but the kernel the device will run adds in an order
 * nothing fixes and ignores the flag (PyTorch's `use_deterministic_algorithms` raises for the same
 * kind of kernel). With `deterministicWarnOnly` a one-time warning replaces it.
 *
 * @example
 * ```ts
 * import { NondeterministicKernelError } from "./support.ts";
 * const error = new NondeterministicKernelError("upsampleBilinear2dBackward", "ResizeBilinearV2Grad5HD.MODE6", "a2", "...");
 * error.kernel; // "ResizeBilinearV2Grad5HD.MODE6"
 * ```
 */
export class NondeterministicKernelError extends Error {
  /** Creates the error; `message` names the op, the kernel, why and the way out. */
  constructor(
    /** The public op name. */
    readonly op: string,
    /** The kernel the device would run. */
    readonly kernel: string,
    /** Its generation. */
    readonly generation: AscendGeneration,
    message: string,
  ) {
    super(message);
    this.name = "NondeterministicKernelError";
  }
}

const warned = new Set<string>();

/**
 * With `call.deterministic`, throws {@link NondeterministicKernelError} (or warns once per op, kernel
 * and generation when `warnOnly`) when `plan`'s kernel adds in an order nothing fixes: the TBE
 * ResizeBilinearV2Grad's atomic modes (A2/A3's fallback, every 910/310P bilinear call with different
 * sizes in modes 5 and 6). The way out on A2/A3: both scales or neither, so V2 takes its own kernel.
 *
 * @throws {NondeterministicKernelError} unless `warnOnly`
 * @example
 * ```ts
 * import { checkDeterministicKernel } from "./support.ts";
 * import { DEFAULT_ASCEND_TARGET } from "./numerics.ts";
 * const call = { op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 64, 64], outputSize: [128, 128], scales: [2, 0], alignCorners: false, deterministic: true } as const;
 * try { checkDeterministicKernel(call, DEFAULT_ASCEND_TARGET, false); } catch (e) { console.log((e as Error).name); }
 * ```
 */
export function checkDeterministicKernel(
  call: UpsampleParams & { readonly deterministic: boolean },
  target: AscendTarget,
  warnOnly: boolean,
): void {
  if (!call.deterministic || call.op !== "bilinear2d" || target.generation === "950") return;
  const plan = ascendPlan(call, target);
  if (!plan.orderDependent) return;
  const error = nondeterministic(call, plan, target);
  if (!warnOnly) throw error;
  const key = `${error.op}:${error.kernel}:${error.generation}`;
  if (warned.has(key)) return;
  warned.add(key);
  console.warn(`@aclnn/upsample: ${error.message} (deterministicWarnOnly: running it anyway)`);
}

function nondeterministic(
  call: UpsampleParams,
  plan: AscendPlan,
  target: AscendTarget,
): NondeterministicKernelError {
  const name = OP_SPECS[call.op].name;
  const generation = target.generation;
  const [outH] = call.outputSize;
  let wayOut: string;
  if (generation === "a2" && target.bilinearApi === "v2") {
    wayOut = "pass both scalesH and scalesW (each equal to outputSize/inputSize) or neither, " +
      "so that V2 runs its own kernel (UpsampleBilinear2dGrad), which is deterministic";
  } else if (generation === "a2") {
    wayOut = "use a CANN with aclnnUpsampleBilinear2dBackwardV2 (this one has V1 only)";
  } else {
    wayOut = `no deterministic bilinear kernel exists on the ${FAMILY_NAMES[generation]}: ` +
      "turn deterministic mode off for this call, or run it on the CPU backend";
  }
  return new NondeterministicKernelError(
    name,
    plan.kernel,
    generation,
    `${name}: deterministic mode was asked for, but on the ${
      FAMILY_NAMES[generation]
    } this call runs ${plan.kernel}, whose cores add the partial sums of ${outH} gradient rows ` +
      `into the result with atomic adds in an order nothing fixes (it never reads the ` +
      `deterministic flag); ${wayOut}. deterministicWarnOnly: true (Device.open) turns this ` +
      `error into a one-time warning`,
  );
}
