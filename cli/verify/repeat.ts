/**
 * Verify's repeatability check in deterministic mode: a configuration run twice must give the same
 * bits. On the host emulation each run first sets another seed of the emulated atomic kernels'
 * order of additions (`aclemuSetAtomicSeed`), so an order-dependent launch shows up as two
 * different results; on hardware the two runs are two launches. Also the bit comparison both this
 * check and verify's exact comparison use.
 *
 * @module
 */

import { type Device, deviceInternals } from "../../src/device.ts";
import type { CannLibraries } from "../../src/ffi/loader.ts";
import { NpuBackend } from "../../src/ffi/npu_backend.ts";
import type { VerifyCase } from "./cases.ts";

/**
 * The indices whose bits differ between two results of one configuration (float32: the values'
 * bits; float16/bfloat16: the raw bits), every NaN counted alike (payload and sign ignored).
 *
 * @example
 * ```ts
 * import { differingBits } from "./repeat.ts";
 * differingBits(Uint16Array.of(0x7e00, 0x0000), Uint16Array.of(0xfd55, 0x8000), "float16"); // [1]
 * ```
 */
export function differingBits(
  a: Uint32Array | Uint16Array,
  b: Uint32Array | Uint16Array,
  dtype: VerifyCase["dtype"],
): number[] {
  const isNaN = nanTest(dtype);
  const differing: number[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i] && !(isNaN(a[i]) && isNaN(b[i]))) differing.push(i);
  }
  return differing;
}

function nanTest(dtype: VerifyCase["dtype"]): (bits: number | undefined) => boolean {
  const [exponent, mantissa] = dtype === "float32"
    ? [0x7f800000, 0x007fffff]
    : dtype === "float16"
    ? [0x7c00, 0x03ff]
    : [0x7f80, 0x007f];
  return (bits) =>
    bits !== undefined && ((bits & exponent) >>> 0) === exponent && (bits & mantissa) !== 0;
}

/**
 * The bits of float32 values (a view, no copy). A 16-bit result widened to float32 is exact and
 * keeps every bit but a NaN's payload, so comparing these compares the 16-bit bits.
 *
 * @example
 * ```ts
 * import { float32Bits } from "./repeat.ts";
 * float32Bits(Float32Array.of(1, -0)); // Uint32Array [0x3f800000, 0x80000000]
 * ```
 */
export function float32Bits(values: Float32Array): Uint32Array {
  return new Uint32Array(values.buffer, values.byteOffset, values.length);
}

const EMULATION_CONTROLS = {
  aclemuSetAtomicSeed: { parameters: ["u64"], result: "void", optional: true },
  aclemuAtomicSeed: { parameters: [], result: "u64", optional: true },
} as const satisfies Deno.ForeignLibraryInterface;

/**
 * Runs a configuration's two runs apart: on the host emulation it sets one seed of the atomic
 * kernels' order before each (`aclemuSetAtomicSeed`, restored at the end); on hardware the two runs
 * are two launches.
 *
 * @example
 * ```ts ignore
 * const repeater = Repeater.open(npu, 1);
 * repeater.before(0); // ... run, then before(1) and run again
 * repeater.close();
 * ```
 */
export class Repeater {
  private constructor(
    private readonly library: Deno.DynamicLibrary<typeof EMULATION_CONTROLS> | null,
    private readonly setSeed: ((seed: bigint) => void) | null,
    private readonly seeds: readonly [bigint, bigint],
    private readonly saved: bigint | null,
  ) {}

  /** The repeater of `npu`; `seed` (verify's) picks the two atomic-order seeds. */
  static open(npu: Device, seed: number): Repeater {
    const libs = libsOf(npu);
    const seeds = [0x5eed0000n + 2n * BigInt(seed), 0x5eed0001n + 2n * BigInt(seed)] as const;
    if (libs === null || !libs.emulated) return new Repeater(null, null, seeds, null);
    // The emulation's libascendcl is loaded already: this only looks its controls up.
    const library = Deno.dlopen(libs.aclPath, EMULATION_CONTROLS);
    const { aclemuSetAtomicSeed, aclemuAtomicSeed } = library.symbols;
    if (aclemuSetAtomicSeed === null || aclemuAtomicSeed === null) {
      library.close();
      return new Repeater(null, null, seeds, null);
    }
    return new Repeater(library, aclemuSetAtomicSeed, seeds, aclemuAtomicSeed());
  }

  /** Whether the runs are the emulation's, each with its own atomic-order seed. */
  get emulated(): boolean {
    return this.setSeed !== null;
  }

  /** How the two runs differed, for a mismatch's report. */
  get how(): string {
    const [a, b] = this.seeds.map((seed) => `0x${seed.toString(16)}`);
    return this.emulated
      ? `the emulation's atomic-order seeds (aclemuSetAtomicSeed) ${a}, then ${b}`
      : "two launches of the same call on the same values";
  }

  /** Before run `k` (0 or 1) of a configuration. */
  before(k: 0 | 1): void {
    this.setSeed?.(this.seeds[k]);
  }

  /** Restores the emulation's seed. */
  close(): void {
    if (this.saved !== null) this.setSeed?.(this.saved);
    this.library?.close();
  }
}

/**
 * The CANN libraries `npu` runs on, or null for a CPU device.
 *
 * @example
 * ```ts
 * import { Device } from "../../src/device.ts";
 * import { libsOf } from "./repeat.ts";
 * using cpu = Device.open({ backend: "cpu" });
 * libsOf(cpu); // null
 * ```
 */
export function libsOf(npu: Device): CannLibraries | null {
  const backend = deviceInternals(npu).backend();
  return backend instanceof NpuBackend ? backend.runtime.libs : null;
}
