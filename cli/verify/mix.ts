/**
 * The case mix of an NPU's family: which ops its kernels run, and whether it runs a drawn case at
 * all, from the same checks the NPU makes before a launch (`src/ffi/npu_rules.ts`: what the family
 * runs, the loaded CANN's operators and V1-only limits, the deterministic route or a refusal, an
 * arrangement around the TBE kernel's column loss). verify draws from it, so that on the Atlas
 * training (910) and inference (310P) series, which run bilinear only (and bfloat16 only with
 * equal sizes), or a CANN without V2, nearly every drawn configuration is checked.
 *
 * @module
 */

import type { UpsampleOp } from "../../src/backend.ts";
import type { Device } from "../../src/device.ts";
import { NpuRules } from "../../src/ffi/npu_rules.ts";
import type { BilinearApi } from "../../src/rules/ascend_a2.ts";
import { type AscendGeneration, FAMILY_NAMES } from "../../src/rules/generation.ts";
import { WarningChannel } from "../../src/warnings.ts";
import type { CaseMix, VerifyCase } from "./cases.ts";
import { libsOf } from "./repeat.ts";

/** An NPU's family as verify draws for it. */
export interface NpuFamily {
  /** The NPU's generation. */
  readonly generation: AscendGeneration;
  /** The bilinear API its CANN has. */
  readonly bilinearApi: BilinearApi;
  /** The family and API in words, e.g. `Atlas A2/A3 (bilinear V1 only)`. */
  readonly label: string;
  /** The mix {@link makeCases} draws from. */
  readonly mix: CaseMix;
  /** Why the NPU refuses `c` before the device (its error's message), or null when it runs it. */
  refusal(c: VerifyCase): string | null;
}

const OPS: readonly UpsampleOp[] = ["nearestExact1d", "nearestExact2d", "bilinear2d"];

/**
 * The family of `npu` (an NPU device): its rules as the NPU applies them, with deterministic mode
 * as verify runs each case (`deterministicAvailable` false: every case runs with it off).
 *
 * @throws {TypeError} when `npu` is not an NPU device
 * @example
 * ```ts ignore
 * import { Device } from "@aclnn/upsample";
 * import { makeCases } from "./cases.ts";
 * import { npuFamily } from "./mix.ts";
 * using npu = Device.open({ backend: "npu" });
 * const family = npuFamily(npu, true);
 * const cases = makeCases(100, 1, ["float32", "float16", "bfloat16"], family.mix);
 * ```
 */
export function npuFamily(npu: Device, deterministicAvailable: boolean): NpuFamily {
  const libs = libsOf(npu);
  if (libs === null || npu.generation === undefined) {
    throw new TypeError(`verify: ${npu.name} is not an NPU device`);
  }
  const generation = npu.generation;
  // The NPU's own checks, quiet: verify reports what they refuse itself.
  const rules = new NpuRules(
    libs,
    generation,
    npu.soc ?? null,
    false,
    new WarningChannel("ignore"),
  );
  const bilinearApi = rules.target.bilinearApi;
  const refusal = (c: VerifyCase): string | null => {
    const deterministic = deterministicAvailable && (c.deterministic || npu.deterministic);
    try {
      rules.checkBackward({ ...c, deterministic }, () => null, npu.name);
      return null;
    } catch (error) {
      if (!(error instanceof Error)) throw error;
      return error.message;
    }
  };
  // An op runs on the family when a plain float32 call of it does (sizes 2 -> 3).
  const ops = OPS.filter((op) =>
    refusal({
      op,
      dtype: "float32",
      inputSize: op === "nearestExact1d" ? [1, 1, 2] : [1, 1, 2, 2],
      outputSize: op === "nearestExact1d" ? [3] : [3, 3],
      scales: op === "nearestExact1d" ? [0] : [0, 0],
      alignCorners: false,
      kind: "random",
      deterministic: false,
    }) === null
  );
  const label = `${FAMILY_NAMES[generation]}${bilinearApi === "v1" ? " (bilinear V1 only)" : ""}`;
  return {
    generation,
    bilinearApi,
    label,
    mix: { ops, runs: (c) => refusal(c) === null },
    refusal,
  };
}
