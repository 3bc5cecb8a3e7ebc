/**
 * doctor's deterministic-mode lines: per op, what a family runs for a representative call with
 * deterministic mode on, as the library decides it before launching (`src/rules/support.ts`
 * `deterministicRouteOf`, `src/rules/numerics.ts` `ascendPlan`): the native kernel (its order is
 * fixed), the 950's flag-switched kernel, the deterministic route (two launches of the TBE kernel
 * ResizeBilinearV2Grad with the image height unchanged, `src/rules/route.ts`), or a refusal, which
 * names why (a CANN without an API the route needs, or a pass the kernel's column loss would hit).
 *
 * @module
 */

import type { UpsampleParams } from "../../src/backend.ts";
import { type Device, deviceInternals } from "../../src/device.ts";
import { checkOpSupported, opApiName } from "../../src/ffi/aclnn_call.ts";
import { NpuBackend } from "../../src/ffi/npu_backend.ts";
import { missingRouteApi } from "../../src/ffi/route_launch.ts";
import type { BilinearApi } from "../../src/rules/ascend_a2.ts";
import { checkFamilySupports } from "../../src/rules/family.ts";
import type { AscendGeneration } from "../../src/rules/generation.ts";
import { ascendPlan, type AscendTarget } from "../../src/rules/numerics.ts";
import { OP_SPECS } from "../../src/rules/ops.ts";
import { type DeterministicRoute, deterministicRoute } from "../../src/rules/route.ts";
import { deterministicRouteOf, NondeterministicKernelError } from "../../src/rules/support.ts";
import type { Check } from "./report.ts";

/** What the loaded CANN offers the deterministic lines (none given: every API, bilinear V2). */
export interface DeterministicHost {
  /** The bilinear API the device runs (`"v1"`: a CANN without V2). */
  readonly bilinearApi: BilinearApi;
  /** Throws where this CANN cannot run the call at all (a missing operator, V1's limits). */
  readonly checkOp?: (call: UpsampleParams, generation: AscendGeneration) => void;
  /** The first aclnn API the route needs that this CANN lacks, or null. */
  readonly missingApi?: (route: Pick<DeterministicRoute, "cast">) => string | null;
  /** Why deterministic mode cannot be turned on (a runtime without the switch); else undefined. */
  readonly unavailable?: string;
}

/**
 * What the NPU's CANN offers: its bilinear API, its operator checks and the route's APIs, as the
 * NPU backend asks them, and whether its runtime can turn deterministic mode on at all.
 *
 * @throws {TypeError} when `npu` is not an NPU device
 * @example
 * ```ts ignore
 * const checks = deterministicChecks(npu.generation ?? "a2", npuDeterministicHost(npu));
 * ```
 */
export function npuDeterministicHost(npu: Device): DeterministicHost {
  const backend = deviceInternals(npu).backend();
  if (!(backend instanceof NpuBackend)) {
    throw new TypeError(`npuDeterministicHost: ${npu.name} is not an NPU`);
  }
  const libs = backend.runtime.libs;
  let unavailable: string | undefined;
  const was = npu.deterministic;
  try {
    npu.setDeterministic(true);
    npu.setDeterministic(was);
  } catch (error) {
    unavailable = error instanceof Error ? error.message.split("\n")[0] : String(error);
  }
  return {
    bilinearApi: opApiName(libs, "bilinear2d").endsWith("V2") ? "v2" : "v1",
    checkOp: (call, generation) => checkOpSupported(libs, call, generation),
    missingApi: (route) => missingRouteApi(libs, route),
    ...(unavailable === undefined ? {} : { unavailable }),
  };
}

/**
 * The representative call of each op on a family: 64 x 64 from 128 x 128 (float32, 8 planes). Its
 * bilinear call is one where deterministic mode matters: on Atlas A2/A3 with V2 a scale on H alone
 * (so V2 falls back to the TBE kernel, tiling mode 6), on the 910/310P as it is (mode 5), on the
 * Ascend 950 the reverse, 128 x 128 from 64 x 64 (the flag switches its atomic scatter to a gather).
 *
 * @example
 * ```ts
 * import { representativeCalls } from "./deterministic.ts";
 * representativeCalls("a2", "v2")[2].scales; // [2, 0]
 * ```
 */
export function representativeCalls(
  generation: AscendGeneration,
  bilinearApi: BilinearApi,
): UpsampleParams[] {
  const base = { dtype: "float32", alignCorners: false } as const;
  const bilinear: UpsampleParams = generation === "950"
    ? {
      ...base,
      op: "bilinear2d",
      inputSize: [1, 8, 128, 128],
      outputSize: [64, 64],
      scales: [0, 0],
    }
    : {
      ...base,
      op: "bilinear2d",
      inputSize: [1, 8, 64, 64],
      outputSize: [128, 128],
      scales: generation === "a2" && bilinearApi === "v2" ? [2, 0] : [0, 0],
    };
  return [
    { ...base, op: "nearestExact1d", inputSize: [1, 8, 64], outputSize: [128], scales: [0] },
    {
      ...base,
      op: "nearestExact2d",
      inputSize: [1, 8, 64, 64],
      outputSize: [128, 128],
      scales: [0, 0],
    },
    bilinear,
  ];
}

const COUNTS = ["no", "one", "two", "three", "four"];

/**
 * One line per op: what deterministic mode runs for the op's representative call on `generation`
 * ("native kernel (...)", "flag-switched kernel (...)", "deterministic route (two launches: ...)",
 * "refused (...)", "not supported on this family", or "not available" on a runtime without the
 * switch).
 *
 * @example
 * ```ts
 * import { deterministicChecks } from "./deterministic.ts";
 * deterministicChecks("910")[2].title;
 * // "deterministic mode, upsampleBilinear2dBackward [1,8,64,64] from [128,128] float32: deterministic route (two launches: ResizeBilinearV2Grad5HD.MODE5, ResizeBilinearV2Grad5HD.MODE5)"
 * ```
 */
export function deterministicChecks(
  generation: AscendGeneration,
  host: DeterministicHost = { bilinearApi: "v2" },
): Check[] {
  // The NPU backend's target (tbeFma unset: uncontracted, which the route's plan reads only for
  // the column-loss check).
  const target: AscendTarget = { generation, bilinearApi: host.bilinearApi, fma: true };
  return representativeCalls(generation, host.bilinearApi).map((call) =>
    deterministicCheck(call, target, host)
  );
}

function deterministicCheck(
  call: UpsampleParams,
  target: AscendTarget,
  host: DeterministicHost,
): Check {
  const { generation } = target;
  const scales = call.scales.flatMap((scale, i) =>
    scale > 0 ? [`${OP_SPECS[call.op].scaleKeys[i]} ${scale}`] : []
  );
  const title = `deterministic mode, ${OP_SPECS[call.op].name} [${call.inputSize.join(",")}] ` +
    `from [${call.outputSize.join(",")}] ${call.dtype}${scales.map((s) => ` ${s}`).join("")}: `;
  const info = (what: string, detail?: string[]): Check => ({
    status: "info",
    title: title + what,
    ...(detail === undefined ? {} : { detail }),
  });
  try {
    checkFamilySupports(call, generation);
  } catch {
    return info("not supported on this family (the library refuses the call before the device)");
  }
  if (host.unavailable !== undefined) {
    return info(
      "not available: this runtime cannot turn the mode on (the deterministic option above)",
    );
  }
  try {
    host.checkOp?.(call, generation);
  } catch (error) {
    return info("not run by this CANN", [`${(error as Error).name}: ${(error as Error).message}`]);
  }
  const on = { ...call, deterministic: true };
  const plan = ascendPlan(on, target);
  if (generation === "950") {
    const off = ascendPlan({ ...call, deterministic: false }, target);
    return info(
      off.kernel === plan.kernel
        ? `native kernel (${plan.kernel})`
        : `flag-switched kernel (${plan.kernel}; with the flag off: ${off.kernel})`,
    );
  }
  let route: DeterministicRoute | null;
  try {
    route = deterministicRouteOf(on, target, { warnOnly: false, missingApi: host.missingApi });
  } catch (error) {
    if (!(error instanceof NondeterministicKernelError)) throw error;
    const choice = deterministicRoute(call, generation, false);
    const missing = choice.route === null ? null : host.missingApi?.(choice.route) ?? null;
    if (missing !== null) {
      return {
        status: "warn",
        title: title + `refused (${plan.kernel} adds in a free order, and this CANN lacks ` +
          `${missing}, which the deterministic route needs)`,
        fix: `install a CANN whose operator libraries have ${missing}, or turn deterministic ` +
          `mode off for such calls`,
      };
    }
    return info(
      `refused (${plan.kernel} adds in a free order: ${choice.refusal ?? error.message})`,
    );
  }
  if (route === null) return info(`native kernel (${plan.kernel})`);
  const count = COUNTS[route.kernels.length] ?? String(route.kernels.length);
  return info(`deterministic route (${count} launches: ${route.kernels.join(", ")})`);
}
