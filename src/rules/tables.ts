/**
 * The index tables both CPU kernel sets run on, chosen by a {@link TableRule} and cached per
 * dimension: PyTorch's (`pytorch.ts`) or an Ascend generation's (`ascend_a2.ts`). One place picks
 * the rule, so the TypeScript and WebAssembly kernels can never follow different ones.
 *
 * @module
 */

import { deviceLinearTable, deviceNearestStarts, indexFromStarts } from "./ascend_a2.ts";
import {
  linearIndexTable,
  type LinearTable,
  nearestExactIndexTable,
  rangeStarts,
} from "./pytorch.ts";

/**
 * Whose per-dimension tables the CPU kernels run on: `"pytorch"` (PyTorch's CPU kernels) or
 * `"ascend-a2"` (the Ascend A2/A3 kernels').
 */
export type TableRule = "pytorch" | "ascend-a2";

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
      const starts = deviceNearestStarts(inSize, outSize, scales);
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
    () =>
      rule === "ascend-a2"
        ? deviceLinearTable(inSize, outSize, alignCorners, scales)
        : linearIndexTable(inSize, outSize, alignCorners, scales),
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
