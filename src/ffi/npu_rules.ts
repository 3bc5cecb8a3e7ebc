/**
 * The family's rules as an NPU applies them before a launch: what its kernels run at all, what the
 * loaded CANN lacks, the deterministic route of a bilinear call and whether its intermediates fit,
 * and the one-time warning where the device's forward and backward differ by construction. Every
 * check runs before anything is allocated.
 *
 * @module
 */

import type { MemoryInfo, UpsampleParams } from "../backend.ts";
import { warnAdjointGap } from "../rules/adjoint_gap.ts";
import { checkAscendEmpty } from "../rules/ascend_a2.ts";
import { checkFamilySupports } from "../rules/family.ts";
import { forwardPlan } from "../rules/forward_device.ts";
import type { AscendGeneration } from "../rules/generation.ts";
import type { AscendTarget } from "../rules/numerics.ts";
import type { DeterministicRoute } from "../rules/route.ts";
import { type DeterministicOptions, deterministicRouteOf } from "../rules/support.ts";
import { checkOpSupported, missingForwardApi, opApiName } from "./aclnn_call.ts";
import type { CannLibraries } from "./loader.ts";
import { checkRouteMemory, missingRouteApi } from "./route_launch.ts";
import { MissingSymbolError } from "./status.ts";

type Params = UpsampleParams & { readonly deterministic: boolean };

/**
 * One NPU's rules (its libraries, generation and SoC fixed when it opens).
 *
 * @example
 * ```ts ignore
 * const rules = new NpuRules(libs, "910", "Ascend910A", false);
 * rules.checkBackward(params, () => backend.memoryInfo(), backend.name);
 * ```
 */
export class NpuRules {
  /** The kernels this NPU runs, as the device reference names them. */
  readonly target: AscendTarget;
  readonly #libs: CannLibraries;
  readonly #options: DeterministicOptions;

  /** Rules of an NPU of `generation` (and SoC `soc`) running `libs`. */
  constructor(
    libs: CannLibraries,
    generation: AscendGeneration,
    soc: string | null,
    deterministicWarnOnly: boolean,
  ) {
    this.#libs = libs;
    const bilinearApi = opApiName(libs, "bilinear2d").endsWith("V2") ? "v2" : "v1";
    this.target = { generation, bilinearApi, fma: true, ...(soc === null ? {} : { soc }) };
    this.#options = {
      warnOnly: deterministicWarnOnly,
      missingApi: (route) => missingRouteApi(libs, route),
    };
  }

  /**
   * A backward call: what the family does not run, missing operator symbols and V1-only limits,
   * aclnn's empty-tensor rule, the adjoint-gap warning, and in deterministic mode the route (or
   * its refusal) and whether its intermediates fit the device's free memory (`memory`, null when
   * the runtime cannot tell).
   *
   * @throws {TypeError | RangeError | MissingSymbolError | NondeterministicKernelError}
   */
  checkBackward(params: Params, memory: () => MemoryInfo | null, deviceName: string): void {
    const { generation } = this.target;
    checkFamilySupports(params, generation);
    checkOpSupported(this.#libs, params, generation);
    // What aclnn would answer with 161002, said before anything is allocated.
    checkAscendEmpty(params);
    warnAdjointGap(params, this.target);
    const route = this.routeOf(params);
    const free = route === null ? null : memory();
    if (route !== null && free !== null) checkRouteMemory(route, free, deviceName);
  }

  /**
   * A forward call: what the family refuses or leaves undefined (its plan throws it, as the device
   * reference's does), a missing operator symbol, the adjoint-gap warning.
   *
   * @throws {TypeError | RangeError | MissingSymbolError}
   */
  checkForward(params: Params): void {
    forwardPlan(params, this.target);
    warnAdjointGap(params, this.target);
    const missing = missingForwardApi(this.#libs, params.op);
    if (missing !== null) throw new MissingSymbolError(missing, this.#libs.opapiPath);
  }

  /** The deterministic route of a call (null: the native launch), planned once per call. */
  routeOf(call: Params): DeterministicRoute | null {
    return deterministicRouteOf(call, this.target, this.#options);
  }
}
