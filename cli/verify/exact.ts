/**
 * verify's exact comparison: where the device reference gives the device's bits
 * (`src/rules/exactness.ts` `referenceExactness`), the NPU's result must equal it bit for bit;
 * elsewhere it must lie within the bound (`bound.ts`). This module gives the verdict for a case,
 * the bit comparison, and the per-kernel tally verify reports.
 *
 * @module
 */

import { type Device, deviceInternals } from "../../src/device.ts";
import type { BilinearApi } from "../../src/rules/ascend_a2.ts";
import {
  type Exactness,
  type ExactnessVerdict,
  referenceExactness,
} from "../../src/rules/exactness.ts";
import type { AscendTarget } from "../../src/rules/numerics.ts";
import type { VerifyCase } from "./cases.ts";
import { differingBits, float32Bits } from "./repeat.ts";

/**
 * The kernels the CPU device `reference` reproduces (its `soc`, `ascendFma`, `tbeFma` and any
 * other choice it was opened with), with the bilinear API of the NPU it is compared with.
 *
 * @throws {TypeError} when `reference` is not a CPU device reference
 * @example
 * ```ts
 * import { Device } from "../../src/device.ts";
 * import { referenceTarget } from "./exact.ts";
 * using reference = Device.open({ backend: "cpu", numerics: "device", soc: "Ascend910A" });
 * referenceTarget(reference, "v2").generation; // "910"
 * ```
 */
export function referenceTarget(reference: Device, bilinearApi: BilinearApi): AscendTarget {
  // The CPU backend keeps the target it computes (cli/ reaches the backend only through Device).
  const target = (deviceInternals(reference).backend() as { readonly ascend?: AscendTarget })
    .ascend;
  if (target === undefined || reference.numerics !== "device") {
    throw new TypeError(`verify: ${reference.name} is not a CPU device reference`);
  }
  return { ...target, bilinearApi };
}

/**
 * Whether the reference is exact for case `c` run with `deterministic` on `target`; a case the
 * rules cannot classify (a call the reference's family refuses) is bounded, with the reason.
 *
 * @example
 * ```ts
 * import { verdictOf } from "./exact.ts";
 * const c = { op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 4, 4], outputSize: [4, 4], scales: [0, 0], alignCorners: false, kind: "random", deterministic: false } as const;
 * verdictOf(c, false, { generation: "910", bilinearApi: "v2", fma: true }).exactness; // "exact"
 * ```
 */
export function verdictOf(
  c: VerifyCase,
  deterministic: boolean,
  target: AscendTarget,
): ExactnessVerdict {
  const { op, dtype, inputSize, outputSize, scales, alignCorners } = c;
  try {
    return referenceExactness(
      { op, dtype, inputSize, outputSize, scales, alignCorners, deterministic },
      target,
    );
  } catch (error) {
    return { exactness: "bounded", kernel: "?", reason: (error as Error).message };
  }
}

/** The outcome of {@link compareBits}. */
export interface BitComparison {
  /** Elements compared. */
  readonly elements: number;
  /** Indices whose bits differ (every NaN alike). */
  readonly differing: readonly number[];
}

/**
 * Compares two results bit for bit (values widened from `dtype`, which keeps every bit of it but a
 * NaN's payload; every NaN counts alike, a zero's sign counts).
 *
 * @example
 * ```ts
 * import { compareBits } from "./exact.ts";
 * compareBits(Float32Array.of(1, 0), Float32Array.of(1, -0)).differing; // [1]
 * ```
 */
export function compareBits(actual: Float32Array, expected: Float32Array): BitComparison {
  return {
    elements: expected.length,
    differing: differingBits(float32Bits(actual), float32Bits(expected), "float32"),
  };
}

/**
 * One line on a bit comparison that failed: how many elements differ and the first, with both
 * values and their float32 bits.
 *
 * @example
 * ```ts
 * import { compareBits, describeBitMismatch } from "./exact.ts";
 * const npu = Float32Array.of(1, 1 + 2 ** -23), reference = Float32Array.of(1, 1);
 * describeBitMismatch([2], npu, reference, compareBits(npu, reference));
 * // "1 of 2 elements differ in their bits, e.g. [1]: NPU 1.0000001192092896 (0x3f800001), reference 1 (0x3f800000)"
 * ```
 */
export function describeBitMismatch(
  shape: readonly number[],
  actual: Float32Array,
  expected: Float32Array,
  check: BitComparison,
): string {
  const i = check.differing[0];
  const hex = (values: Float32Array): string =>
    `0x${float32Bits(values)[i].toString(16).padStart(8, "0")}`;
  return `${check.differing.length} of ${check.elements} elements differ in their bits, e.g. ` +
    `[${indexOf(shape, i).join(", ")}]: NPU ${actual[i]} (${hex(actual)}), reference ` +
    `${expected[i]} (${hex(expected)})`;
}

/**
 * The multi-index of row-major element `flat` of a tensor of `shape`.
 *
 * @example
 * ```ts
 * import { indexOf } from "./exact.ts";
 * indexOf([2, 3], 4); // [1, 1]
 * ```
 */
export function indexOf(shape: readonly number[], flat: number): number[] {
  const index = new Array<number>(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    index[d] = flat % shape[d];
    flat = Math.floor(flat / shape[d]);
  }
  return index;
}

/** Counts of one kernel (or of all): configurations compared bit for bit and within the bound. */
export interface KernelCounts {
  /** Configurations compared bit for bit (the reference is exact). */
  exact: number;
  /** Configurations compared within the bound. */
  bounded: number;
  /** Of the exact ones, those whose bits differ. */
  exactFailed: number;
  /** Of the bounded ones, those outside the bound. */
  boundedFailed: number;
}

/**
 * Per kernel, how verify compared the configurations it checked.
 *
 * @example
 * ```ts
 * import { CompareTally } from "./exact.ts";
 * const tally = new CompareTally();
 * tally.add("ResizeBilinearV2Grad5HD.MODE1", "exact", true);
 * tally.total(); // { exact: 1, bounded: 0, exactFailed: 0, boundedFailed: 0 }
 * ```
 */
export class CompareTally {
  readonly #kernels = new Map<string, KernelCounts>();

  /** Records one configuration of `kernel`, compared as `exactness` says, passing or not. */
  add(kernel: string, exactness: Exactness, ok: boolean): void {
    const counts = this.#kernels.get(kernel) ??
      { exact: 0, bounded: 0, exactFailed: 0, boundedFailed: 0 };
    this.#kernels.set(kernel, counts);
    counts[exactness]++;
    if (!ok) counts[exactness === "exact" ? "exactFailed" : "boundedFailed"]++;
  }

  /** The counts per kernel (copies), by kernel name. */
  kernels(): Map<string, KernelCounts> {
    const sorted = [...this.#kernels].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
    return new Map(sorted.map(([k, counts]) => [k, { ...counts }]));
  }

  /** The sums over every kernel. */
  total(): KernelCounts {
    const sum: KernelCounts = { exact: 0, bounded: 0, exactFailed: 0, boundedFailed: 0 };
    for (const counts of this.#kernels.values()) {
      sum.exact += counts.exact;
      sum.bounded += counts.bounded;
      sum.exactFailed += counts.exactFailed;
      sum.boundedFailed += counts.boundedFailed;
    }
    return sum;
  }

  /** One line per kernel, by name: `  <kernel>: E bit for bit, B within the bound[, F failed]`. */
  lines(): string[] {
    return [...this.kernels()].map(([k, c]) => {
      const failed = c.exactFailed + c.boundedFailed;
      return `  ${k === "" ? "(nothing launched)" : k}: ${c.exact} bit for bit, ${c.bounded} ` +
        `within the bound${failed > 0 ? `, ${failed} failed` : ""}`;
    });
  }
}
