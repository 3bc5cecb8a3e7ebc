/**
 * The family's rules as an NPU applies them before a launch: what its kernels run at all, what the
 * loaded CANN lacks, the deterministic route of a bilinear call and whether its intermediates fit,
 * and the one-time warning where the device ran both directions of a call its forward and backward
 * kernels do not transpose (through the device's warnings channel). Every check runs before
 * anything is allocated.
 *
 * @module
 */

import type { MemoryInfo, UpsampleParams } from "../backend.ts";
import { type AdjointDirection, AdjointGapWatch } from "../rules/adjoint_gap.ts";
import { checkAscendEmpty } from "../rules/ascend_a2.ts";
import { checkFamilySupports } from "../rules/family.ts";
import { forwardPlan } from "../rules/forward_device.ts";
import type { AscendGeneration } from "../rules/generation.ts";
import type { AscendTarget } from "../rules/numerics.ts";
import type { DeviceDefects } from "../rules/arrangement.ts";
import { type DeterministicOptions, type LaunchPlan, launchPlanOf } from "../rules/support.ts";
import { checkOpSupported, missingForwardApi, opApiName } from "./aclnn_call.ts";
import type { CannLibraries } from "./loader.ts";
import { checkRouteMemory, missingRouteApi } from "./route_launch.ts";
import { MissingSymbolError } from "./status.ts";
import { WarningChannel } from "../warnings.ts";

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
  readonly #warnings: WarningChannel;
  readonly #gaps: AdjointGapWatch;

  /** Rules of an NPU of `generation` (and SoC `soc`) running `libs`. */
  constructor(
    libs: CannLibraries,
    generation: AscendGeneration,
    soc: string | null,
    deterministicWarnOnly: boolean,
    warnings: WarningChannel = new WarningChannel(),
    deviceDefects: DeviceDefects = "avoid",
  ) {
    this.#libs = libs;
    const bilinearApi = opApiName(libs, "bilinear2d").endsWith("V2") ? "v2" : "v1";
    this.target = { generation, bilinearApi, fma: true, ...(soc === null ? {} : { soc }) };
    this.#warnings = warnings;
    this.#gaps = new AdjointGapWatch(this.target);
    this.#options = {
      warnOnly: deterministicWarnOnly,
      warn: (notice) => warnings.emit(notice),
      missingApi: (route) => missingRouteApi(libs, route),
      deviceDefects,
    };
  }

  /**
   * A backward call: what the family does not run, missing operator symbols and V1-only limits,
   * aclnn's empty-tensor rule, the adjoint-gap warning, the launch plan (the deterministic route,
   * or an arrangement avoiding the TBE kernel's column loss, or their refusal) and whether a
   * route's intermediates fit the device's free memory (`memory`, null when the runtime cannot
   * tell).
   *
   * @throws {TypeError | RangeError | MissingSymbolError | NondeterministicKernelError | DeviceDefectError}
   */
  checkBackward(params: Params, memory: () => MemoryInfo | null, deviceName: string): void {
    const { generation } = this.target;
    checkFamilySupports(params, generation);
    checkOpSupported(this.#libs, params, generation);
    // What aclnn would answer with 161002, said before anything is allocated.
    checkAscendEmpty(params);
    const plan = this.planOf(params);
    const free = plan?.kind !== "route" ? null : memory();
    if (plan?.kind === "route" && free !== null) checkRouteMemory(plan.route, free, deviceName);
    this.#adjointGap(params, "backward"); // last: a refused call ran nothing
  }

  /**
   * A forward call: what the family refuses or leaves undefined (its plan throws it, as the device
   * reference's does), a missing operator symbol, the adjoint-gap warning.
   *
   * @throws {TypeError | RangeError | MissingSymbolError}
   */
  checkForward(params: Params): void {
    forwardPlan(params, this.target);
    const missing = missingForwardApi(this.#libs, params.op);
    if (missing !== null) throw new MissingSymbolError(missing, this.#libs.opapiPath);
    this.#adjointGap(params, "forward"); // last: a refused call ran nothing
  }

  // The adjoint-gap warning of a call run in `direction` (AdjointGapWatch: by default only where
  // this device ran the other direction on the same sizes), unless nobody would hear it.
  #adjointGap(params: Params, direction: AdjointDirection): void {
    if (!this.#warnings.hears("ADJOINT_GAP", this.#gaps.key(params))) return;
    const notice = this.#gaps.notice(params, direction, this.#warnings.named("ADJOINT_GAP"));
    if (notice !== null) this.#warnings.emit(notice);
  }

  /**
   * How a bilinear call runs when not as its single launch (`launchPlanOf`: the deterministic
   * route, the call transposed, or the single launch allowed to lose columns); null: the native
   * launch. Planned once per call.
   */
  planOf(call: Params): LaunchPlan | null {
    return launchPlanOf(call, this.target, this.#options);
  }
}
