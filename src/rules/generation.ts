/**
 * Which generation of Ascend kernels a SoC runs: the upsample backward ops compute differently on
 * Atlas A2/A3 (`"a2"`: Ascend910B, Ascend910_93, arch DAV_2201) and on Ascend 950 (`"950"`:
 * arch35, "RegBase" in CANN's op_api), see docs/device-semantics.md. The SoC name is what
 * `aclrtGetSocName` answers (e.g. `"Ascend910B3"`, `"Ascend950PR_9599"`).
 *
 * @module
 */

/** An Ascend generation whose kernels the library models: Atlas A2/A3, or Ascend 950 (arch35). */
export type AscendGeneration = "a2" | "950";

/** Every modelled generation, in a fixed order. */
export const ASCEND_GENERATIONS: readonly AscendGeneration[] = Object.freeze(["a2", "950"]);

/** What {@link generationOfSoc} makes of a SoC name. */
export interface SocGeneration {
  /** The generation whose rules apply (`"a2"` when the SoC is unknown). */
  readonly generation: AscendGeneration;
  /** Whether the SoC name was recognised; false when `"a2"` is only assumed. */
  readonly known: boolean;
  /** Why this generation, in words (for messages, `doctor` and `verify`). */
  readonly reason: string;
}

/**
 * The generation of a SoC from its name: `Ascend910B*` and `Ascend910_93*` are A2/A3 (`"a2"`),
 * `Ascend950*` is Ascend 950 (`"950"`); anything else, or no name (`null`: a runtime without
 * `aclrtGetSocName`), is assumed to be A2/A3 with `known: false` and the reason saying so.
 *
 * @example
 * ```ts
 * import { generationOfSoc } from "./generation.ts";
 * generationOfSoc("Ascend950PR_9599").generation; // "950"
 * generationOfSoc("Ascend910B3"); // { generation: "a2", known: true, reason: "..." }
 * generationOfSoc(null).known; // false: A2/A3 assumed
 * ```
 */
export function generationOfSoc(soc: string | null | undefined): SocGeneration {
  if (soc === null || soc === undefined || soc === "") {
    return {
      generation: "a2",
      known: false,
      reason: "the runtime reports no SoC name (no aclrtGetSocName); the Ascend A2/A3 rules are " +
        "assumed",
    };
  }
  if (soc.startsWith("Ascend950")) {
    return {
      generation: "950",
      known: true,
      reason: `${soc} is an Ascend 950 (arch35): the 950 rules apply`,
    };
  }
  if (soc.startsWith("Ascend910B") || soc.startsWith("Ascend910_93")) {
    return {
      generation: "a2",
      known: true,
      reason: `${soc} is an Atlas A2/A3 SoC (DAV_2201): the A2/A3 rules apply`,
    };
  }
  return {
    generation: "a2",
    known: false,
    reason:
      `${soc} is not a SoC the library models (Ascend910B*, Ascend910_93*, Ascend950*); the ` +
      `Ascend A2/A3 rules are assumed`,
  };
}
