/**
 * Which family of Ascend kernels a SoC runs, as a fact of CANN's platform table: the SoC name
 * (`aclrtGetSocName`) gives its NpuArch (`soc_table_data.ts`, from `hicann/runtime`
 * `src/platform/platform_config`), and the arch the family whose kernels the upsample backward
 * ops run (the op_api sources branch on `GetCurNpuArch()`, docs/device-semantics.md):
 *
 * | NpuArch | generation | family                               | SoC names                          |
 * | ------- | ---------- | ------------------------------------ | ---------------------------------- |
 * | 2201    | `"a2"`     | Atlas A2/A3                          | Ascend910B1..B4, Ascend910_93xx    |
 * | 3510    | `"950"`    | Ascend 950                           | Ascend950PR_*, Ascend950DT_*       |
 * | 1001    | `"910"`    | Atlas training series (Ascend 910)   | Ascend910A, Ascend910B, Ascend910Pro* |
 * | 2002    | `"310p"`   | Atlas inference series (Ascend 310P) | Ascend310P1/3/5/7                  |
 *
 * Every other arch of the table (e.g. 3002: Ascend310B, Atlas 200I/500 A2) runs none of these
 * operators: such a SoC is refused. No name prefix is read: `Ascend910B` is arch 1001, a first
 * generation 910, while `Ascend910B3` is 2201.
 *
 * @module
 */

import { SOC_ROWS } from "./soc_table_data.ts";

/**
 * An Ascend kernel family the library models: Atlas A2/A3 (`"a2"`), Ascend 950 (`"950"`), Atlas
 * training series, Ascend 910 (`"910"`), Atlas inference series, Ascend 310P (`"310p"`).
 */
export type AscendGeneration = "a2" | "950" | "910" | "310p";

/** Every modelled generation, in a fixed order. */
export const ASCEND_GENERATIONS: readonly AscendGeneration[] = Object.freeze([
  "a2",
  "950",
  "910",
  "310p",
]);

/** The product family of each generation, as messages name it. */
export const FAMILY_NAMES: Readonly<Record<AscendGeneration, string>> = Object.freeze({
  a2: "Atlas A2/A3",
  "950": "Ascend 950",
  "910": "Atlas training series (Ascend 910)",
  "310p": "Atlas inference series (Ascend 310P)",
});

/** The NpuArch (`DAV_xxxx`) of each generation. */
export const ARCH_OF_GENERATION: Readonly<Record<AscendGeneration, number>> = Object.freeze({
  a2: 2201,
  "950": 3510,
  "910": 1001,
  "310p": 2002,
});

// The products of the arches that run none of these operators, as CANN's op documents name them
// (3002: Ascend310B); any other arch is named by its Short_SoC_version.
const OTHER_FAMILIES: Readonly<Record<number, string>> = {
  3002: "Atlas 200I/500 A2",
  3003: "Kirin",
  3113: "Kirin",
  5101: "Kirin",
  5161: "Kirin",
  5163: "Kirin",
  5165: "Kirin",
};

/** One SoC of CANN's platform table. */
export interface SocInfo {
  /** `SoC_version`, as `aclrtGetSocName` answers it. */
  readonly soc: string;
  /** `NpuArch` (e.g. 2201 for DAV_2201). */
  readonly npuArch: number;
  /** `Short_SoC_version` (e.g. `"Ascend910B"`). */
  readonly shortSoc: string;
  /** `ai_core_cnt`. */
  readonly aiCoreCount: number;
  /** `ub_size`: unified-buffer bytes of one AI Core. */
  readonly ubSize: number;
}

let byName: Map<string, SocInfo> | null = null;

/**
 * The platform-table row of a SoC name, or undefined when CANN's table has no such SoC.
 *
 * @example
 * ```ts
 * import { socInfo } from "./generation.ts";
 * socInfo("Ascend910B")?.npuArch; // 1001: a first-generation 910
 * socInfo("Ascend910B3")?.npuArch; // 2201
 * ```
 */
export function socInfo(soc: string): SocInfo | undefined {
  byName ??= new Map(
    SOC_ROWS.map(([name, npuArch, shortSoc, aiCoreCount, ubSize]) => [
      name,
      { soc: name, npuArch, shortSoc, aiCoreCount, ubSize },
    ]),
  );
  return byName.get(soc);
}

/**
 * Every SoC name of CANN's platform table.
 *
 * @example
 * ```ts
 * import { socNames } from "./generation.ts";
 * socNames().includes("Ascend310P3"); // true
 * ```
 */
export function socNames(): readonly string[] {
  return SOC_ROWS.map((row) => row[0]);
}

/**
 * The generation of an NpuArch, or undefined for an arch that runs none of these operators.
 *
 * @example
 * ```ts
 * import { generationOfArch } from "./generation.ts";
 * generationOfArch(2002); // "310p"
 * generationOfArch(3002); // undefined: Atlas 200I/500 A2
 * ```
 */
export function generationOfArch(npuArch: number): AscendGeneration | undefined {
  return ASCEND_GENERATIONS.find((g) => ARCH_OF_GENERATION[g] === npuArch);
}

/** What {@link generationOfSoc} makes of a SoC name. */
export interface SocGeneration {
  /** The generation whose rules apply (`"a2"` when the SoC is unknown or unsupported). */
  readonly generation: AscendGeneration;
  /** Whether the name is in CANN's platform table with a modelled arch; false when assumed. */
  readonly known: boolean;
  /** Why this generation, in words (for messages, `doctor` and `verify`). */
  readonly reason: string;
  /** The platform-table row (undefined for a name CANN's table lacks). */
  readonly info: SocInfo | undefined;
  /**
   * Set when the SoC is in CANN's table but its arch runs none of these operators (the ops'
   * support tables name A2/A3, 950, the training and the inference series only): why, in words.
   */
  readonly unsupported: string | undefined;
}

/**
 * The generation of a SoC from CANN's platform table (no name prefix is read). A name the table
 * lacks, or none (`null`: a runtime without `aclrtGetSocName`), is assumed to be A2/A3 with
 * `known: false`; a name whose arch runs none of these operators gets `unsupported` (and A2 as a
 * placeholder generation: callers refuse it).
 *
 * @example
 * ```ts
 * import { generationOfSoc } from "./generation.ts";
 * generationOfSoc("Ascend950PR_9599").generation; // "950"
 * generationOfSoc("Ascend910B").generation; // "910": NpuArch 1001
 * generationOfSoc("Ascend310B1").unsupported; // "Ascend310B1 (NpuArch 3002, Ascend310B: Atlas 200I/500 A2) ..."
 * generationOfSoc(null).known; // false: A2/A3 assumed
 * ```
 */
export function generationOfSoc(soc: string | null | undefined): SocGeneration {
  if (soc === null || soc === undefined || soc === "") {
    return {
      generation: "a2",
      known: false,
      reason: "the runtime reports no SoC name (no aclrtGetSocName); the Atlas A2/A3 rules are " +
        "assumed",
      info: undefined,
      unsupported: undefined,
    };
  }
  const info = socInfo(soc);
  if (info === undefined) {
    return {
      generation: "a2",
      known: false,
      reason: `${soc} is not in CANN's platform table (hicann/runtime platform_config) as the ` +
        `library knows it; the Atlas A2/A3 rules are assumed`,
      info,
      unsupported: undefined,
    };
  }
  const generation = generationOfArch(info.npuArch);
  if (generation === undefined) {
    return {
      generation: "a2",
      known: false,
      reason: `${soc} is NpuArch ${info.npuArch}`,
      info,
      unsupported:
        `${soc} (NpuArch ${info.npuArch}, ${info.shortSoc}${
          OTHER_FAMILIES[info.npuArch] === undefined ? "" : `: ${OTHER_FAMILIES[info.npuArch]}`
        }) runs none of the upsample ` +
        `backward operators: their support tables name Atlas A2/A3, Ascend 950 and, for bilinear, ` +
        `the Atlas training (Ascend 910) and inference (310P) series only`,
    };
  }
  return {
    generation,
    known: true,
    reason: `${soc} is NpuArch ${info.npuArch} (CANN's platform table): the ${
      FAMILY_NAMES[generation]
    } rules apply`,
    info,
    unsupported: undefined,
  };
}
