/**
 * What each Ascend family runs at all, and whether a call's kernel keeps deterministic mode's word:
 * the checks both the NPU backend and the CPU device reference make before anything is allocated.
 *
 * @module
 */

import {
  type ArrangedLaunch,
  type Arrangement,
  arrangementCandidates,
  type DeviceDefects,
  lossFree,
  lossPhrase,
  lossText,
  mayLoseColumns,
} from "./arrangement.ts";
import { type AscendGeneration, FAMILY_NAMES } from "./generation.ts";
import { type AscendPlan, ascendPlan, type AscendTarget } from "./numerics.ts";
import { OP_SPECS, type UpsampleParams } from "./ops.ts";
import type { DeterministicRoute } from "./route.ts";
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

/**
 * Thrown where CANN's source says the kernel a call runs loses terms (today: the TBE kernel
 * ResizeBilinearV2Grad's tiling mode 6 column loss, `losesColumns5hd`) and either no arrangement of
 * launches avoids it or the `deviceDefects` option is `"refuse"`; thrown before anything is
 * allocated. `deviceDefects: "allow"` runs the kernel and returns its result instead.
 *
 * @example
 * ```ts
 * import { DeviceDefectError } from "./support.ts";
 * const error = new DeviceDefectError("upsampleBilinear2dBackward", "ResizeBilinearV2Grad5HD.MODE6", "a2", [1], 1534, "...");
 * error.rule; // "losesColumns5hd"
 * ```
 */
export class DeviceDefectError extends Error {
  /** The rule of `src/rules/ascend_5hd.ts` that says the kernel loses terms. */
  readonly rule = "losesColumns5hd";
  /** The kernel's source file (CANN 8.1.RC1, `opp/built-in/op_impl/ai_core/tbe/impl/dynamic/`). */
  readonly source = "resize_bilinear_v2_grad.py";

  /** Creates the error; `message` names the call, the kernel, the columns, the rule and the way out. */
  constructor(
    /** The public op name. */
    readonly op: string,
    /** The kernel the device would run, as the emulation names it. */
    readonly kernel: string,
    /** Its generation. */
    readonly generation: AscendGeneration,
    /** The gradient columns (W of gradOutput) whose terms the single launch loses. */
    readonly lostColumns: readonly number[],
    /** The image column (W of the result) they jump onto and never reach. */
    readonly imageColumn: number,
    message: string,
  ) {
    super(message);
    this.name = "DeviceDefectError";
  }
}

/**
 * How a bilinear call runs on a family whose single launch is the TBE kernel, when not as that one
 * launch ({@link launchPlanOf}): the route's passes, the call transposed (one V1 launch with H and W
 * swapped through strided views), or the single launch with `deviceDefects: "allow"` where it
 * loses `lostColumns` of gradOutput's W (what the CPU device reference then leaves out).
 */
export type LaunchPlan =
  | { readonly kind: "route"; readonly route: DeterministicRoute }
  | { readonly kind: "transposed"; readonly kernel: string }
  | { readonly kind: "lossy"; readonly kernel: string; readonly lostColumns: readonly number[] };

/** How {@link launchPlanOf} treats a call no route covers, and what an arrangement may use. */
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
   * The first aclnn API an arrangement needs that the loaded CANN lacks (V1, or aclnnCast for a
   * route of 16-bit dtypes; the transposed launch asks with `cast: false`), or null; omitted: every
   * API is there (the CPU device reference).
   */
  readonly missingApi?: (route: Pick<DeterministicRoute, "cast">) => string | null;
  /**
   * Where the kernel loses terms (the `deviceDefects` option): avoid (default), refuse, or allow
   * (a `DEVICE_DEFECT` warning to {@link warn}).
   */
  readonly deviceDefects?: DeviceDefects;
}

/**
 * What a bilinear call in deterministic mode runs on a family whose native kernel ignores the flag:
 * the route of {@link launchPlanOf} when it is one, else null (the single launch, another
 * arrangement, or the call is not in deterministic mode).
 *
 * @throws {NondeterministicKernelError | DeviceDefectError} as {@link launchPlanOf}
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
  if (!call.deterministic) return null;
  const plan = launchPlanOf(call, target, options);
  return plan?.kind === "route" ? plan.route : null;
}

/**
 * How a bilinear call runs on a family whose single launch is the TBE kernel ResizeBilinearV2Grad:
 * null for that launch as it is, else a {@link LaunchPlan}: the first of the arrangements
 * (`arrangement.ts`: the single launch, the call transposed, the route W first, the route H first;
 * in deterministic mode the routes before the transposed launch) that loses no term (each launch checked with `losesColumns5hd`), keeps deterministic mode's word
 * when the call asks for it (no atomic order matters), and needs no API the CANN lacks. Where the
 * single launch loses terms and no arrangement avoids it, or `deviceDefects` is `"refuse"`, throws
 * {@link DeviceDefectError}; with `"allow"` the single launch runs (`"lossy"`, a `DEVICE_DEFECT`
 * warning). Where only a nondeterministic arrangement is left for a call in deterministic mode,
 * throws {@link NondeterministicKernelError}, or with `warnOnly` warns and runs it. A repeated call
 * (the same validated sizes, call_memo.ts) is planned once.
 *
 * @throws {NondeterministicKernelError | DeviceDefectError} before anything is allocated
 * @example
 * ```ts
 * import { launchPlanOf } from "./support.ts";
 * const call = { op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 4, 1535], outputSize: [2, 2], scales: [0, 0], alignCorners: true, deterministic: false } as const;
 * const target = { generation: "a2", bilinearApi: "v1", fma: true } as const;
 * launchPlanOf(call, target, { warnOnly: false })?.kind; // "transposed"
 * ```
 */
export function launchPlanOf(
  call: UpsampleParams & { readonly deterministic: boolean },
  target: AscendTarget,
  options: DeterministicOptions,
): LaunchPlan | null {
  const generation = target.generation;
  if (call.op !== "bilinear2d" || generation === "950") return null;
  // The common call: it neither asks for order nor can lose a column (its width is not k * U + 1).
  if (!call.deterministic && !mayLoseColumns(call.inputSize[3], generation)) return null;
  const known = planned.get(call.inputSize);
  if (
    known !== undefined && known.target === target && known.options === options &&
    known.outputSize === call.outputSize && known.scales === call.scales &&
    known.dtype === call.dtype && known.alignCorners === call.alignCorners &&
    known.deterministic === call.deterministic
  ) return known.plan;
  const plan = planLaunch(call, target, options);
  planned.set(call.inputSize, {
    target,
    options,
    outputSize: call.outputSize,
    scales: call.scales,
    dtype: call.dtype,
    alignCorners: call.alignCorners,
    deterministic: call.deterministic,
    plan,
  });
  return plan;
}

// The last plan per validated inputSize array (weakly held), with what else it depended on.
const planned = new WeakMap<readonly number[], {
  readonly target: AscendTarget;
  readonly options: DeterministicOptions;
  readonly outputSize: readonly number[];
  readonly scales: readonly number[];
  readonly dtype: string;
  readonly alignCorners: boolean;
  readonly deterministic: boolean;
  readonly plan: LaunchPlan | null;
}>();

function planLaunch(
  call: UpsampleParams & { readonly deterministic: boolean },
  target: AscendTarget,
  options: DeterministicOptions,
): LaunchPlan | null {
  const generation = target.generation;
  if (generation === "950") return null;
  const plan = ascendPlan(call, target);
  if (!plan.kernel.startsWith("ResizeBilinearV2Grad5HD")) return null;
  const all = arrangementCandidates(call, generation, target.tbeFma ?? false);
  const native = all[0];
  // Deterministic mode tries the routes (always order-free) before the transposed launch.
  const candidates = call.deterministic
    ? [native, ...all.filter((a) => a.kind === "route"), all[1]]
    : all;
  const nativeLoses = !lossFree(native);
  if (!nativeLoses && !(call.deterministic && plan.orderDependent)) return null;
  const defects = options.deviceDefects ?? "avoid";
  if (nativeLoses && defects === "refuse") throw defectError(call, target, native, null, null);
  const missing = (arrangement: Arrangement): string | null => {
    if (arrangement.kind !== "route") {
      if (arrangement.kind === "native") return null;
      // V1 takes no bfloat16 (aclnn_upsample_bilinear_2d_backward.cpp); the route casts instead.
      if (call.dtype === "bfloat16") return "a bfloat16 V1 (aclnnUpsampleBilinear2dBackward)";
      return options.missingApi?.({ cast: false }) ?? null;
    }
    return arrangement.route === null ? null : options.missingApi?.(arrangement.route) ?? null;
  };
  const usable = (arrangement: Arrangement): boolean =>
    (arrangement.kind !== "route" || arrangement.route !== null) && missing(arrangement) === null &&
    (lossFree(arrangement) || (defects === "allow" && arrangement.kind === "native"));
  const pick = candidates.find((a) => usable(a) && (!call.deterministic || a.orderFree)) ??
    candidates.find(usable);
  if (pick === undefined) throw defectError(call, target, native, candidates, missing);
  if (call.deterministic && !pick.orderFree) {
    // Only a nondeterministic arrangement is left for a call in deterministic mode.
    const why = candidates.filter((a) => a.kind === "route").map((a) =>
      a.route === null
        ? a.launches.filter((l) => l.lost.length > 0).map(lossText).join(", and ")
        : `this CANN lacks ${missing(a)}, which the deterministic route needs`
    ).join("; ");
    const error = nondeterministic(call, plan, target, why);
    if (!options.warnOnly) throw error;
    options.warn?.({
      kind: "DETERMINISTIC_WARN_ONLY",
      key: `${error.op}:${error.kernel}:${error.generation}`,
      message: `${error.message} (deterministicWarnOnly: running it anyway)`,
    });
  }
  const launch = pick.launches[0];
  if (pick.kind === "route") return { kind: "route", route: pick.route! };
  if (pick.kind === "transposed") return { kind: "transposed", kernel: launch.kernel };
  if (launch.lost.length === 0) return null;
  const name = OP_SPECS[call.op].name;
  options.warn?.({
    kind: "DEVICE_DEFECT",
    key: `${name}:${launch.kernel}:${generation}`,
    message: `${defectSummary(call, target, launch)} (deviceDefects: "allow": running it anyway)`,
  });
  return { kind: "lossy", kernel: launch.kernel, lostColumns: launch.lost };
}

// The call, its kernel, what it loses, the rule and the source.
function defectSummary(call: UpsampleParams, target: AscendTarget, launch: ArrangedLaunch): string {
  const [n, c, inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  return `${OP_SPECS[call.op].name}: gradOutput [${n}, ${c}, ${outH}, ${outW}] onto inputSize ` +
    `[${n}, ${c}, ${inH}, ${inW}] (alignCorners ${call.alignCorners}) runs ${launch.kernel} on ` +
    `the ${FAMILY_NAMES[target.generation]} (the TBE kernel ResizeBilinearV2Grad, tiling mode ` +
    `6), which ${lossPhrase(launch)}, a multiple of the kernel's window: the kernel never writes ` +
    `those terms (rule losesColumns5hd, src/rules/ascend_5hd.ts; source ` +
    `resize_bilinear_v2_grad.py big_in_loop, CANN 8.1.RC1 ` +
    `opp/built-in/op_impl/ai_core/tbe/impl/dynamic/)`;
}

// The single launch's loss, and why no other arrangement avoids it (`others` null: the
// `deviceDefects: "refuse"` option).
function defectError(
  call: UpsampleParams,
  target: AscendTarget,
  native: Arrangement,
  others: readonly Arrangement[] | null,
  missing: ((arrangement: Arrangement) => string | null) | null,
): DeviceDefectError {
  const name = OP_SPECS[call.op].name;
  const generation = target.generation;
  const launch = native.launches[0];
  const inW = call.inputSize[3];
  const what = defectSummary(call, target, launch);
  const allow = `deviceDefects: "allow" (Device.open) returns the device's result without them`;
  let message: string;
  if (others === null) {
    message = `${what}; deviceDefects is "refuse" ("avoid", the default, runs an arrangement of ` +
      `launches that avoids the loss where one exists); ${allow}`;
  } else {
    const reasons = others.slice(1).map((a) => {
      const lossy = a.launches.filter((l) => l.lost.length > 0);
      if (lossy.length > 0) return lossy.map(lossText).join(", and ");
      const label = a.kind === "transposed" ? "the call transposed" : "the route";
      return `${label} needs ${missing?.(a) ?? "an API"}, which this CANN lacks`;
    });
    message = `${what}. No arrangement of launches avoids it: ${reasons.join("; ")}; ${allow}, ` +
      `or run the call on the CPU backend (numerics "pytorch")`;
  }
  return new DeviceDefectError(name, launch.kernel, generation, launch.lost, inW - 1, message);
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
