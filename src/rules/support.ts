/**
 * What each Ascend family runs at all, and whether a call's kernel keeps deterministic mode's word:
 * the checks both the NPU backend and the CPU device reference make before anything is allocated.
 *
 * @module
 */

import { type AscendGeneration, FAMILY_NAMES } from "./generation.ts";
import { type AscendPlan, ascendPlan, type AscendTarget } from "./numerics.ts";
import { OP_SPECS, type UpsampleParams } from "./ops.ts";
import { type DeterministicRoute, deterministicRoute } from "./route.ts";
import type { WarningNotice } from "./warning_codes.ts";

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
 * nothing fixes and ignores the flag, and no deterministic route covers the call (PyTorch's
 * `use_deterministic_algorithms` raises where no deterministic implementation exists). Today only
 * calls whose route would hit the TBE kernel's column loss in tiling mode 6, or a CANN that lacks an
 * API the route needs. With `deterministicWarnOnly` a one-time warning replaces it
 * (`ACLNN_UPSAMPLE_DETERMINISTIC_WARN_ONLY`).
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

/** How {@link deterministicRouteOf} treats a call no route covers, and what the route may use. */
export interface DeterministicOptions {
  /**
   * Hand a `DETERMINISTIC_WARN_ONLY` warning to {@link warn} (said once per op, kernel and
   * generation by the channel) and run the native launch, instead of throwing (PyTorch's
   * `warn_only`).
   */
  readonly warnOnly: boolean;
  /**
   * Where a warning goes (the caller's warnings channel; the rules never print); omitted: nowhere.
   * What it throws propagates, before the call is remembered.
   */
  readonly warn?: (notice: WarningNotice) => void;
  /**
   * The first aclnn API the route needs that the loaded CANN lacks (V1, or aclnnCast for 16-bit
   * dtypes), or null; omitted: every API is there (the CPU device reference).
   */
  readonly missingApi?: (route: DeterministicRoute) => string | null;
}

/**
 * What a bilinear call in deterministic mode runs on a family whose native kernel ignores the flag:
 * null when the single native launch is deterministic (or the call is not in deterministic mode),
 * else the deterministic route (`route.ts`: two H-unchanged launches of the same kernel). Where no
 * route covers the call (a pass would hit tiling mode 6's column loss, or the CANN lacks an API the
 * route needs), throws {@link NondeterministicKernelError}, or with `warnOnly` hands a warning to
 * `options.warn` and returns null: the native launch runs, as PyTorch's `warn_only` runs the
 * nondeterministic kernel.
 *
 * @throws {NondeterministicKernelError} where no route covers an order-dependent call, unless `warnOnly`
 * @example
 * ```ts
 * import { deterministicRouteOf } from "./support.ts";
 * const call = { op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 64, 64], outputSize: [128, 128], scales: [2, 0], alignCorners: false, deterministic: true } as const;
 * const target = { generation: "910", bilinearApi: "v1", fma: true } as const;
 * deterministicRouteOf(call, target, { warnOnly: false })?.kernels.length; // 2
 * ```
 */
export function deterministicRouteOf(
  call: UpsampleParams & { readonly deterministic: boolean },
  target: AscendTarget,
  options: DeterministicOptions,
): DeterministicRoute | null {
  const generation = target.generation;
  if (!call.deterministic || call.op !== "bilinear2d" || generation === "950") return null;
  // A repeated call (the same validated sizes, call_memo.ts) is planned once.
  const known = planned.get(call.inputSize);
  if (
    known !== undefined && known.target === target && known.options === options &&
    known.outputSize === call.outputSize && known.scales === call.scales &&
    known.dtype === call.dtype && known.alignCorners === call.alignCorners
  ) return known.route;
  const route = planRoute(call, target, options);
  planned.set(call.inputSize, {
    target,
    options,
    outputSize: call.outputSize,
    scales: call.scales,
    dtype: call.dtype,
    alignCorners: call.alignCorners,
    route,
  });
  return route;
}

// The last plan per validated inputSize array (weakly held), with what else it depended on.
const planned = new WeakMap<readonly number[], {
  readonly target: AscendTarget;
  readonly options: DeterministicOptions;
  readonly outputSize: readonly number[];
  readonly scales: readonly number[];
  readonly dtype: string;
  readonly alignCorners: boolean;
  readonly route: DeterministicRoute | null;
}>();

function planRoute(
  call: UpsampleParams,
  target: AscendTarget,
  options: DeterministicOptions,
): DeterministicRoute | null {
  const generation = target.generation;
  if (generation === "950") return null;
  const plan = ascendPlan({ ...call, deterministic: true }, target);
  if (!plan.orderDependent) return null;
  const choice = deterministicRoute(call, generation, target.tbeFma ?? false);
  let why: string;
  if (choice.route === null) why = choice.refusal;
  else {
    const missing = options.missingApi?.(choice.route) ?? null;
    if (missing === null) return choice.route;
    why = `this CANN lacks ${missing}, which the deterministic route needs`;
  }
  const error = nondeterministic(call, plan, target, why);
  if (!options.warnOnly) throw error;
  options.warn?.({
    kind: "DETERMINISTIC_WARN_ONLY",
    key: `${error.op}:${error.kernel}:${error.generation}`,
    message: `${error.message} (deterministicWarnOnly: running it anyway)`,
  });
  return null;
}

function nondeterministic(
  call: UpsampleParams,
  plan: AscendPlan,
  target: AscendTarget,
  why: string,
): NondeterministicKernelError {
  const name = OP_SPECS[call.op].name;
  const generation = target.generation;
  const [outH] = call.outputSize;
  const wayOut = generation === "a2" && target.bilinearApi === "v2"
    ? "pass both scalesH and scalesW (each equal to outputSize/inputSize) or neither, so that " +
      "V2 runs its own kernel (UpsampleBilinear2dGrad), which is deterministic; or turn " +
      "deterministic mode off for this call, or run it on the CPU backend"
    : "turn deterministic mode off for this call, or run it on the CPU backend";
  return new NondeterministicKernelError(
    name,
    plan.kernel,
    generation,
    `${name}: deterministic mode was asked for, but on the ${
      FAMILY_NAMES[generation]
    } this call runs ${plan.kernel}, whose cores add the partial sums of ${outH} gradient rows ` +
      `into the result with atomic adds in an order nothing fixes (it never reads the ` +
      `deterministic flag), and no deterministic route covers it: ${why}; ${wayOut}. ` +
      `deterministicWarnOnly: true (Device.open) turns this error into a one-time warning`,
  );
}
