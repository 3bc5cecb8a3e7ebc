/**
 * The index tables both CPU kernel sets run on, chosen by a {@link TableRule} and cached per
 * dimension: PyTorch's (`pytorch.ts`) or an Ascend generation's (`ascend_a2.ts`,
 * `ascend950_nearest.ts`, `ascend950_bilinear.ts`; the 950's bilinear routing is in
 * `ascend950_route.ts`). One place picks the rule, so the TypeScript and WebAssembly kernels can
 * never follow different ones.
 *
 * @module
 */

import { a2LinearTable, a2NearestStarts, indexFromStarts } from "./ascend_a2.ts";
import { linear5hdTable } from "./ascend_5hd.ts";
import { nearestStarts950 } from "./ascend950_nearest.ts";
import { type Bilinear950Kernel, linearTable950 } from "./ascend950_bilinear.ts";
import {
  linearIndexTable,
  type LinearTable,
  nearestExactIndexTable,
  rangeStarts,
} from "./pytorch.ts";

/**
 * The Ascend 950 nearest-exact rule: `"ascend950"` with `idx * scale - 0.5f` rounded twice,
 * `"ascend950-fma"` with it contracted into one fused multiply-add (see `nearestStarts950`).
 */
export type Ascend950NearestRule = "ascend950" | "ascend950-fma";

/**
 * The Ascend 950 bilinear rule of one ResizeBilinearV2Grad kernel (see `Bilinear950Kernel`), its
 * coordinate arithmetic contracted into fused multiply-adds (`-fma`) or not.
 */
export type Ascend950BilinearRule =
  | `ascend950-${Bilinear950Kernel}`
  | `ascend950-${Bilinear950Kernel}-fma`;

/**
 * The TBE ResizeBilinearV2Grad with its coordinates contracted into fused multiply-adds: on both
 * dimensions (`"ascend-5hd-fma"`), or on H only (`"ascend-5hd-fma-h"`: tiling mode 5 computes W's
 * on the vector unit). Without contraction its tables are PyTorch's (`"pytorch"`).
 */
export type Ascend5hdRule = "ascend-5hd-fma" | "ascend-5hd-fma-h";

/**
 * Whose per-dimension tables the CPU kernels run on: `"pytorch"` (PyTorch's CPU kernels),
 * `"ascend-a2"` (the Ascend A2/A3 kernels'), a contracted TBE ResizeBilinearV2Grad rule
 * ({@link Ascend5hdRule}), or an Ascend 950 rule (nearest-exact: {@link Ascend950NearestRule};
 * bilinear: {@link Ascend950BilinearRule}, one per kernel).
 */
export type TableRule =
  | "pytorch"
  | "ascend-a2"
  | Ascend5hdRule
  | Ascend950NearestRule
  | Ascend950BilinearRule;

/**
 * The rule of one dimension (0: H, 1: W) of a bilinear call under `rule`: the same rule, except
 * `"ascend-5hd-fma-h"`, whose W dimension is PyTorch's.
 *
 * @example
 * ```ts
 * import { dimensionRule } from "./tables.ts";
 * dimensionRule("ascend-5hd-fma-h", 1); // "pytorch"
 * ```
 */
export function dimensionRule(rule: TableRule, dimension: number): TableRule {
  if (rule !== "ascend-5hd-fma-h") return rule;
  return dimension === 0 ? "ascend-5hd-fma" : "pytorch";
}

/**
 * The 950 nearest-exact rule, with or without contraction.
 *
 * @example
 * ```ts
 * import { nearestRule950 } from "./tables.ts";
 * nearestRule950(true); // "ascend950-fma"
 * ```
 */
export function nearestRule950(fma: boolean): Ascend950NearestRule {
  return fma ? "ascend950-fma" : "ascend950";
}

/**
 * The 950 bilinear rule of `kernel`, with or without contraction.
 *
 * @example
 * ```ts
 * import { bilinearRule950 } from "./tables.ts";
 * bilinearRule950("determine", true); // "ascend950-determine-fma"
 * ```
 */
export function bilinearRule950(kernel: Bilinear950Kernel, fma: boolean): Ascend950BilinearRule {
  return fma ? `ascend950-${kernel}-fma` : `ascend950-${kernel}`;
}

function split950(rule: TableRule): { kernel: string; fma: boolean } | null {
  if (!rule.startsWith("ascend950")) return null;
  const fma = rule.endsWith("-fma");
  const body = fma ? rule.slice(0, -4) : rule;
  return { kernel: body === "ascend950" ? "" : body.slice("ascend950-".length), fma };
}

/** Nearest-exact tables of one dimension. */
export interface NearestTables {
  /** Forward index table: output -> input. */
  readonly index: Int32Array;
  /** Range starts: input `i` owns outputs `[starts[i], starts[i + 1])`. */
  readonly starts: Int32Array;
}

const nearestCache = new Map<string, NearestTables>();
const linearCache = new Map<string, LinearTable>();

/**
 * The nearest-exact tables of one dimension under `rule` (`scales` 0 = from the sizes).
 *
 * @example
 * ```ts
 * import { nearestTables } from "./tables.ts";
 * nearestTables(2, 41, 0, "pytorch").starts[1]; // 21
 * nearestTables(2, 41, 0, "ascend-a2").starts[1]; // 20
 * ```
 */
export function nearestTables(
  inSize: number,
  outSize: number,
  scales: number,
  rule: TableRule,
): NearestTables {
  return cachedTable(nearestCache, `${rule}:${inSize}:${outSize}:${scales}`, () => {
    if (rule === "ascend-a2") {
      const starts = a2NearestStarts(inSize, outSize, scales);
      return { index: indexFromStarts(starts), starts };
    }
    const r950 = split950(rule);
    if (r950 !== null) {
      if (r950.kernel !== "") {
        throw new RangeError(`nearestTables: ${rule} is a bilinear rule, not a nearest-exact one`);
      }
      const starts = nearestStarts950(inSize, outSize, scales, r950.fma);
      return { index: indexFromStarts(starts), starts };
    }
    const index = nearestExactIndexTable(inSize, outSize, scales);
    return { index, starts: rangeStarts(index, inSize) };
  });
}

/**
 * The bilinear table of one dimension under `rule`.
 *
 * @example
 * ```ts
 * import { linearTable } from "./tables.ts";
 * linearTable(3, 3, false, 1.3, "pytorch").i0; // Int32Array [0, 1, 2]: the identity
 * linearTable(3, 3, false, 1.3, "ascend-a2").i0; // Int32Array [0, 0, 1]
 * ```
 */
export function linearTable(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scales: number,
  rule: TableRule,
): LinearTable {
  return cachedTable(
    linearCache,
    `${rule}:${inSize}:${outSize}:${alignCorners}:${scales}`,
    () => {
      if (rule === "ascend-a2") return a2LinearTable(inSize, outSize, alignCorners, scales);
      if (rule === "ascend-5hd-fma" || rule === "ascend-5hd-fma-h") {
        return linear5hdTable(inSize, outSize, alignCorners, true);
      }
      const r950 = split950(rule);
      if (r950 === null) return linearIndexTable(inSize, outSize, alignCorners, scales);
      if (r950.kernel === "") {
        throw new RangeError(`linearTable: ${rule} is a nearest-exact rule, not a bilinear one`);
      }
      const kernel = r950.kernel as Bilinear950Kernel;
      return linearTable950(inSize, outSize, alignCorners, scales, kernel, r950.fma);
    },
  );
}

const TABLE_CACHE_SIZE = 64;

/**
 * Returns `cache.get(key)`, building and storing it first when missing; the cache is emptied when it
 * reaches 64 entries. For index tables, which are read-only once built: repeated calls on the same
 * shapes then skip rebuilding them.
 *
 * @example
 * ```ts
 * import { cachedTable } from "./tables.ts";
 * import { nearestExactIndexTable } from "./pytorch.ts";
 * const cache = new Map<string, Int32Array>();
 * const table = cachedTable(cache, "2:4:0", () => nearestExactIndexTable(2, 4, 0));
 * ```
 */
export function cachedTable<T>(cache: Map<string, T>, key: string, build: () => T): T {
  let table = cache.get(key);
  if (table === undefined) {
    table = build();
    if (cache.size >= TABLE_CACHE_SIZE) cache.clear();
    cache.set(key, table);
  }
  return table;
}
