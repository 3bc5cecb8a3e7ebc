/**
 * The index tables both CPU kernel sets run on, chosen by {@link IndexRule} and cached per
 * dimension: PyTorch's (`scale.ts`) or the Ascend device's (`device_rules.ts`). One place picks the
 * rule, so the TypeScript and WebAssembly kernels can never follow different ones.
 *
 * @module
 */

import {
  deviceLinearTable,
  deviceNearestStarts,
  indexFromStarts,
  type IndexRule,
} from "./device_rules.ts";
import {
  cachedTable,
  linearIndexTable,
  type LinearTable,
  nearestExactIndexTable,
  rangeStarts,
} from "./scale.ts";

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
 * nearestTables(2, 41, 0, "device").starts[1]; // 20
 * ```
 */
export function nearestTables(
  inSize: number,
  outSize: number,
  scales: number,
  rule: IndexRule,
): NearestTables {
  return cachedTable(nearestCache, `${rule}:${inSize}:${outSize}:${scales}`, () => {
    if (rule === "device") {
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
 * linearTable(3, 3, false, 1.3, "device").i0; // Int32Array [0, 0, 1]
 * ```
 */
export function linearTable(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scales: number,
  rule: IndexRule,
): LinearTable {
  return cachedTable(
    linearCache,
    `${rule}:${inSize}:${outSize}:${alignCorners}:${scales}`,
    () =>
      rule === "device"
        ? deviceLinearTable(inSize, outSize, alignCorners, scales)
        : linearIndexTable(inSize, outSize, alignCorners, scales),
  );
}
