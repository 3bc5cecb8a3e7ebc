/**
 * The verification behind `deno task verify` (the command is `main.ts`): seeded random configurations
 * of the three ops run on an NPU (real CANN, or the host emulation), each result checked against the
 * device reference — the CPU backend computing what the Ascend A2/A3 kernels compute
 * (`numerics: "device"`): index mapping exact, every element within the documented bound. Separately
 * it reports where and how much the device differs from PyTorch's semantics (the CPU backend's
 * default), which is expected and never a failure.
 *
 * Repeatability: where the runtime has deterministic mode, every configuration that runs in it (every
 * fifth seeded one, and the bilinear calls that reach the deterministic route) runs a
 * second time and must give the same bits (raw bits; NaNs alike). On the host emulation each run
 * first sets another seed of the emulated atomic kernels' order of additions
 * (`aclemuSetAtomicSeed`), so an order-dependent launch shows up as two different results.
 *
 * @module
 */

import { Device, deviceInternals } from "../../src/device.ts";
import type { CannLibraries } from "../../src/ffi/loader.ts";
import { NpuBackend } from "../../src/ffi/npu_backend.ts";
import { AclError } from "../../src/ffi/status.ts";
import { checkFamilySupports } from "../../src/rules/family.ts";
import { type AscendGeneration, FAMILY_NAMES } from "../../src/rules/generation.ts";
import { NondeterministicKernelError } from "../../src/rules/support.ts";
import { runParams } from "../../src/ops/run_params.ts";
import type { VerifyOptions } from "./args.ts";
import { describeCase, makeCases, routeCases, seededRandom, type VerifyCase } from "./cases.ts";
import {
  compareWithDevice,
  type DeviceComparison,
  deviceReference,
  referenceOf,
} from "./compare.ts";

/** What a run found. */
export interface VerifySummary {
  /** Configurations run (those refused before the device included). */
  readonly cases: number;
  /** Configurations the library refused before the device (printed as SKIPPED). */
  readonly skipped: number;
  /** Configurations whose NPU result is outside the device reference's bound. */
  readonly failures: number;
  /** Configurations where the device's result differs from PyTorch's semantics. */
  readonly pytorchDifferences: number;
  /** Elements that differ from PyTorch's semantics, over all configurations. */
  readonly pytorchElements: number;
  /** Configurations in deterministic mode run a second time (0 when the check did not run). */
  readonly repeats: number;
  /** Of those, the ones whose two runs gave different bits (each a failure of verify). */
  readonly repeatMismatches: number;
}

/**
 * Runs the verification on `npu` and prints a report through `log`.
 *
 * @example
 * ```ts ignore
 * import { Device } from "@aclnn/upsample";
 * import { parseVerifyArgs } from "./args.ts";
 * import { verifyDevice } from "./verify.ts";
 * using npu = Device.open({ backend: "npu" });
 * const summary = await verifyDevice(npu, parseVerifyArgs([]), console.log);
 * ```
 */
export async function verifyDevice(
  npu: Device,
  options: VerifyOptions,
  log: (line: string) => void,
): Promise<VerifySummary> {
  // The reference follows the SoC the runtime reports (aclrtGetSocName), or --soc.
  const { target, options: bound } = referenceOf(npu, options.soc);
  if (target.unsupported !== undefined) {
    throw new RangeError(`verify --soc ${options.soc}: ${target.unsupported}`);
  }
  log(
    `reference: ${FAMILY_NAMES[target.generation]} rules ` +
      `(${options.soc !== undefined ? "--soc" : "the runtime's SoC"}: ${target.reason})`,
  );
  const soc = bound.soc;
  using reference = Device.open({
    backend: "cpu",
    numerics: "device",
    ...(soc === undefined ? {} : { soc }),
  });
  using pytorch = Device.open({ backend: "cpu" });
  // What the NPU's own family does not run is refused before the device: not compared.
  const npuGeneration = npu.generation ?? "a2";
  const all = [
    ...makeCases(options.cases, options.seed, options.dtypes),
    ...routeCases(options.dtypes),
  ];
  const cases = all.filter((c) => familyRuns(c, npuGeneration));
  // What the reference's family runs and the NPU's refuses: the NPU is not of that family.
  let familyMismatches = 0;
  for (const c of all) {
    if (familyRuns(c, npuGeneration) || !familyRuns(c, target.generation)) continue;
    familyMismatches++;
    log(
      `MISMATCH ${describeCase(c)}: the ${FAMILY_NAMES[npuGeneration]} does not run it, the ` +
        `${FAMILY_NAMES[target.generation]} does`,
    );
  }
  if (cases.length < all.length) {
    log(
      `${all.length - cases.length} of ${all.length} configurations skipped: the ` +
        `${FAMILY_NAMES[npuGeneration]} does not run them (nearest-exact, bfloat16 bilinear with ` +
        `different sizes)`,
    );
  }
  // Deterministic mode per call needs the runtime's switch (aclrtCtxSetSysParamOpt).
  const unavailable = deterministicUnavailable(npu);
  if (unavailable !== null) {
    log(
      `deterministic mode is not available (${unavailable}): the configurations marked ` +
        `deterministic run with it off`,
    );
  }
  const repeater = options.repeat && unavailable === null ? Repeater.open(npu, options.seed) : null;
  const random = seededRandom(options.seed ^ 0x5eed);
  let failures = 0;
  let pytorchDifferences = 0;
  let pytorchElements = 0;
  let skipped = 0;
  let repeats = 0;
  let repeatMismatches = 0;
  const examples: string[] = [];
  try {
    for (const c of cases) {
      const count = c.inputSize[0] * c.inputSize[1] * c.outputSize.reduce((a, b) => a * b, 1);
      // Multiples of 1/64 in [-4, 4]: exact in every dtype, so all three devices get the same input.
      const values = Float32Array.from(
        { length: count },
        () => Math.floor(random() * 512 - 256) / 64,
      );
      const deterministic = unavailable === null && (c.deterministic || npu.deterministic);
      let first: CaseResult;
      try {
        first = await runOnNpu(npu, c, values, deterministic, repeater, 0);
      } catch (error) {
        // What the library refuses before the device: no route covers it in deterministic mode,
        // or what bilinear V1 (a CANN without V2) would get wrong on Atlas A2/A3.
        const v1Limit = (error instanceof RangeError || error instanceof TypeError) &&
          c.op === "bilinear2d" && bound.bilinearApi === "v1";
        if (error instanceof NondeterministicKernelError || v1Limit) {
          skipped++;
          log(`SKIPPED ${describeCase(c)}: ${(error as Error).message}`);
          continue;
        }
        // A runtime failure on one configuration is a failed check, reported; the run goes on.
        if (!(error instanceof AclError)) throw error;
        failures++;
        log(`ERROR ${describeCase(c)}: ${error.message}`);
        continue;
      }
      if (deterministic && repeater !== null) {
        // The same call again: deterministic mode promises the same bits.
        try {
          const second = await runOnNpu(npu, c, values, deterministic, repeater, 1);
          repeats++;
          const differing = differingBits(first.bits, second.bits, c.dtype);
          if (differing.length > 0) {
            repeatMismatches++;
            log(`REPEAT MISMATCH ${describeCase(c)}: ${repeatReport(c, first, second, differing)}`);
            log(`  (${repeater.how})`);
          }
        } catch (error) {
          if (!(error instanceof AclError)) throw error;
          failures++;
          log(`ERROR ${describeCase(c)} (second run): ${error.message}`);
          continue;
        }
      }
      const onNpu = first.values;
      const bounds = { ...bound, deterministic };
      // V1 bilinear on A2/A3 is PyTorch's rule from the sizes: its reference runs with PyTorch numerics.
      const v1 = c.op === "bilinear2d" && bound.bilinearApi === "v1";
      let expected: Float32Array;
      try {
        expected = await deviceReference(c, values, {
          ...bounds,
          device: v1 ? pytorch : reference,
        });
      } catch (error) {
        // The reference's family does not run what the NPU ran: the NPU is not that family.
        if (!(error instanceof TypeError) || familyRuns(c, target.generation)) throw error;
        failures++;
        log(`MISMATCH ${describeCase(c)}: the NPU ran it; ${error.message}`);
        continue;
      }
      const check = compareWithDevice(c, values, onNpu, expected, bounds);
      if (!check.ok) {
        failures++;
        log(`MISMATCH ${describeCase(c)}: ${summarize(check, "device reference")}`);
      }
      // The same bound against PyTorch's semantics: what lies outside is the device's own behaviour.
      const semantics = compareWithDevice(
        c,
        values,
        onNpu,
        await runCase(pytorch, c, values),
        bounds,
      );
      if (!semantics.ok) {
        pytorchDifferences++;
        pytorchElements += semantics.failures;
        examples.push(`  ${describeCase(c)}: ${summarize(semantics, "PyTorch")}`);
      }
    }
  } finally {
    repeater?.close();
  }
  log(
    `${cases.length} configurations on ${npu.name}: ${cases.length - failures - skipped} match ` +
      `the device reference (mapping exact, every element within its bound), ${failures} do not` +
      (skipped > 0 ? `, ${skipped} refused before the device (SKIPPED above)` : ""),
  );
  log(
    `differences from PyTorch semantics (expected on an Ascend device, not a failure): ` +
      `${pytorchDifferences} of ${cases.length} configurations, ${pytorchElements} elements`,
  );
  for (const line of examples.slice(0, 10)) log(line);
  if (examples.length > 10) log(`  ... and ${examples.length - 10} more configurations`);
  if (familyMismatches > 0) {
    log(
      `${familyMismatches} configurations the reference's family runs and the NPU's does not ` +
        `(MISMATCH above)`,
    );
  }
  log(
    repeater !== null
      ? `repeatability in deterministic mode: ${repeats} configurations run twice ` +
        `(${repeater.emulated ? "the emulation with two atomic-order seeds" : "two launches"}), ` +
        `${repeatMismatches} gave different bits${
          repeatMismatches > 0 ? " (REPEAT MISMATCH above)" : ""
        }`
      : `repeatability in deterministic mode: not checked (${
        unavailable !== null ? "deterministic mode is not available" : "--no-repeat"
      })`,
  );
  return {
    cases: cases.length,
    skipped,
    failures: failures + familyMismatches,
    pytorchDifferences,
    pytorchElements,
    repeats,
    repeatMismatches,
  };
}

/** One NPU result: its values (for the bound) and its raw bits (for the repeat). */
interface CaseResult {
  readonly values: Float32Array;
  /** float32: the values' bits; float16/bfloat16: the tensor's raw bits. */
  readonly bits: Uint32Array | Uint16Array;
}

// Why deterministic mode cannot be set on `npu` (a runtime without aclrtCtxSetSysParamOpt), or null.
function deterministicUnavailable(npu: Device): string | null {
  const was = npu.deterministic;
  try {
    npu.setDeterministic(true);
    npu.setDeterministic(was);
    return null;
  } catch (error) {
    return error instanceof Error
      ? `${error.name}: ${error.message.split("\n")[0]}`
      : String(error);
  }
}

const EMULATION_CONTROLS = {
  aclemuSetAtomicSeed: { parameters: ["u64"], result: "void", optional: true },
  aclemuAtomicSeed: { parameters: [], result: "u64", optional: true },
} as const satisfies Deno.ForeignLibraryInterface;

/**
 * Runs a configuration's two runs apart: on the host emulation it sets one seed of the atomic
 * kernels' order before each (`aclemuSetAtomicSeed`, restored at the end); on hardware the two runs
 * are two launches.
 */
class Repeater {
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

function libsOf(npu: Device): CannLibraries | null {
  const backend = deviceInternals(npu).backend();
  return backend instanceof NpuBackend ? backend.runtime.libs : null;
}

async function runOnNpu(
  npu: Device,
  c: VerifyCase,
  values: Float32Array,
  deterministic: boolean,
  repeater: Repeater | null,
  k: 0 | 1,
): Promise<CaseResult> {
  using grad = npu.tensor(values, [c.inputSize[0], c.inputSize[1], ...c.outputSize], {
    dtype: c.dtype,
  });
  if (deterministic) repeater?.before(k);
  using result = runParams(grad, c, { deterministic });
  const read = await result.toFloat32Array();
  const bits = c.dtype === "float32"
    ? new Uint32Array(read.buffer, read.byteOffset, read.length)
    : await result.toRawBits();
  return { values: read, bits };
}

/**
 * The indices whose bits differ between two runs of one configuration (float32: the values' bits;
 * float16/bfloat16: the raw bits), every NaN counted alike (payload and sign ignored).
 *
 * @example
 * ```ts
 * import { differingBits } from "./verify.ts";
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

function repeatReport(
  c: VerifyCase,
  first: CaseResult,
  second: CaseResult,
  differing: readonly number[],
): string {
  const i = differing[0];
  const width = c.dtype === "float32" ? 8 : 4;
  const hex = (bits: number): string => `0x${bits.toString(16).padStart(width, "0")}`;
  return `${differing.length} of ${first.bits.length} elements differ between two runs in ` +
    `deterministic mode, e.g. [${indexOf(c.inputSize, i).join(", ")}]: ${first.values[i]} ` +
    `(${hex(first.bits[i])}) then ${second.values[i]} (${hex(second.bits[i])})`;
}

// The multi-index of row-major element `flat` of a tensor of `shape`.
function indexOf(shape: readonly number[], flat: number): number[] {
  const index = new Array<number>(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    index[d] = flat % shape[d];
    flat = Math.floor(flat / shape[d]);
  }
  return index;
}

function familyRuns(c: VerifyCase, generation: AscendGeneration): boolean {
  try {
    checkFamilySupports(c, generation);
    return true;
  } catch {
    return false;
  }
}

function summarize(check: DeviceComparison, what: string): string {
  const e = check.firstFailure!;
  return `${check.failures} of ${check.elements} elements differ, e.g. [${e.index.join(", ")}]: ` +
    `NPU ${e.actual}, ${what} ${e.expected} (bound ${e.bound.toPrecision(3)})`;
}

// PyTorch's semantics on the CPU backend (always deterministic: the mode changes nothing there).
async function runCase(device: Device, c: VerifyCase, values: Float32Array): Promise<Float32Array> {
  using grad = device.tensor(values, [c.inputSize[0], c.inputSize[1], ...c.outputSize], {
    dtype: c.dtype,
  });
  using result = runParams(grad, c);
  return await result.toFloat32Array();
}
