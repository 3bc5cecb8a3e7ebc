/**
 * The verification behind `deno task verify` (the command is `main.ts`): seeded random configurations
 * of the three ops run on an NPU (real CANN, or the host emulation), each result checked against the
 * device reference — the CPU backend computing what the NPU's family of Ascend kernels computes
 * (`numerics: "device"`). Where the reference gives the device's bits (`src/rules/exactness.ts`:
 * the kernel fixes its order of additions, or no atomic order can change a bit) the result must
 * equal it bit for bit; elsewhere every element must lie within the documented bound (the index
 * mapping exact). The draws follow the NPU's family (`mix.ts`): the ops, dtypes and sizes it runs,
 * so nearly every configuration is checked; what it still refuses is SKIPPED with the reason.
 * Separately it reports where and how much the device differs from PyTorch's semantics (the CPU
 * backend's default), which is expected and never a failure.
 *
 * Repeatability: where the runtime has deterministic mode, every configuration that runs in it (every
 * fifth seeded one, and the bilinear calls that reach the deterministic route) runs a
 * second time and must give the same bits (raw bits; NaNs alike). On the host emulation each run
 * first sets another seed of the emulated atomic kernels' order of additions
 * (`aclemuSetAtomicSeed`), so an order-dependent launch shows up as two different results.
 *
 * @module
 */

import { Device } from "../../src/device.ts";
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
import {
  compareBits,
  CompareTally,
  describeBitMismatch,
  indexOf,
  type KernelCounts,
  referenceTarget,
  verdictOf,
} from "./exact.ts";
import { chooseCubeOrder } from "./cube_order.ts";
import { npuFamily } from "./mix.ts";
import { differingBits, Repeater } from "./repeat.ts";

export { differingBits };

/** What a run found. */
export interface VerifySummary {
  /** Configurations drawn (those skipped included). */
  readonly cases: number;
  /** Configurations compared with the device reference (bit for bit or within the bound). */
  readonly checked: number;
  /** Configurations the library refused before the device (printed as SKIPPED). */
  readonly skipped: number;
  /** Of the checked, those compared bit for bit (the reference is exact for them). */
  readonly exact: number;
  /** Of the checked, those compared within the bound. */
  readonly bounded: number;
  /** Per kernel (as the emulation names it), how its configurations were compared. */
  readonly kernels: ReadonlyMap<string, KernelCounts>;
  /**
   * Failed configurations: a result off the reference (its bits where exact, its bound elsewhere),
   * a runtime failure, or a family mismatch.
   */
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
  // A2/A3's Cube kernels: bit for bit in the reading the device follows (--cube-order, probed).
  const cube = await chooseCubeOrder(npu, options.cubeOrder, target.generation, options.soc);
  if (cube.line !== null) log(cube.line);
  using reference = Device.open({
    backend: "cpu",
    numerics: "device",
    warnings: "ignore",
    ...(soc === undefined ? {} : { soc }),
    ...(cube.cubeOrder === undefined ? {} : { cubeOrder: cube.cubeOrder }),
  });
  using pytorch = Device.open({ backend: "cpu", warnings: "ignore" });
  // Deterministic mode per call needs the runtime's switch (aclrtCtxSetSysParamOpt).
  const unavailable = deterministicUnavailable(npu);
  if (unavailable !== null) {
    log(
      `deterministic mode is not available (${unavailable}): the configurations marked ` +
        `deterministic run with it off`,
    );
  }
  // The draws follow what the NPU's family and CANN run.
  const family = npuFamily(npu, unavailable === null);
  const npuGeneration = family.generation;
  const cases = [
    ...makeCases(options.cases, options.seed, options.dtypes, family.mix),
    ...routeCases(options.dtypes, family.mix),
  ];
  log(
    `drawing what the ${family.label} runs: ${family.mix.ops?.join(", ")}; ` +
      `${options.cases} seeded configurations and ${cases.length - options.cases} fixed ` +
      `deterministic ones`,
  );
  // Exact where the reference reproduces the kernels' bits (exactness.ts), for the NPU's API.
  const exactTarget = referenceTarget(reference, bound.bilinearApi ?? family.bilinearApi);
  const tally = new CompareTally();
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
      const refused = family.refusal(c);
      if (refused !== null) {
        // What the reference's family runs and the NPU's refuses: the NPU is not of that family.
        if (!familyRuns(c, npuGeneration) && familyRuns(c, target.generation)) {
          failures++;
          log(
            `MISMATCH ${describeCase(c)}: the ${FAMILY_NAMES[npuGeneration]} does not run it, ` +
              `the ${FAMILY_NAMES[target.generation]} does`,
          );
        } else {
          skipped++;
          log(`SKIPPED ${describeCase(c)}: ${refused}`);
        }
        continue;
      }
      const deterministic = unavailable === null && (c.deterministic || npu.deterministic);
      let first: CaseResult;
      try {
        first = await runOnNpu(npu, c, values, deterministic, repeater, 0);
      } catch (error) {
        // What the library refuses before the device that the family's checks did not foresee.
        if (error instanceof NondeterministicKernelError) {
          skipped++;
          log(`SKIPPED ${describeCase(c)}: ${error.message}`);
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
      let expected: Float32Array;
      try {
        expected = await deviceReference(c, values, { ...bounds, device: reference });
      } catch (error) {
        // The reference's family does not run what the NPU ran: the NPU is not that family.
        if (!(error instanceof TypeError) || familyRuns(c, target.generation)) throw error;
        failures++;
        log(`MISMATCH ${describeCase(c)}: the NPU ran it; ${error.message}`);
        continue;
      }
      const verdict = verdictOf(c, deterministic, exactTarget);
      const check = compareWithDevice(c, values, onNpu, expected, bounds);
      let ok = check.ok;
      if (verdict.exactness === "exact") {
        const bits = compareBits(onNpu, expected);
        ok = bits.differing.length === 0;
        if (!ok) {
          log(
            `MISMATCH ${describeCase(c)}: bit for bit (${verdict.kernel}: ${verdict.reason}): ` +
              `${describeBitMismatch(c.inputSize, onNpu, expected, bits)}; ` +
              (check.ok
                ? "every element within the bound"
                : `the bound: ${summarize(check, "device reference")}`),
          );
        }
      } else if (!ok) {
        log(
          `MISMATCH ${describeCase(c)}: within the bound (${verdict.kernel}): ` +
            summarize(check, "device reference"),
        );
      }
      tally.add(verdict.kernel, verdict.exactness, ok);
      if (!ok) failures++;
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
  const total = tally.total();
  const checked = total.exact + total.bounded;
  log(
    `${cases.length} configurations on ${npu.name}: ` +
      `${checked - total.exactFailed - total.boundedFailed} match the device ` +
      `reference (${total.exact - total.exactFailed} bit for bit where it is exact, ` +
      `${total.bounded - total.boundedFailed} within its bound), ${failures} do not` +
      (skipped > 0 ? `, ${skipped} refused before the device (SKIPPED above)` : ""),
  );
  log(
    `family ${family.label}: ${cases.length} drawn, ${checked} checked, ${skipped} skipped; ` +
      `${total.exact} compared bit for bit, ${total.bounded} within the bound`,
  );
  log("per kernel:");
  for (const line of tally.lines()) log(line);
  log(
    `differences from PyTorch semantics (expected on an Ascend device, not a failure): ` +
      `${pytorchDifferences} of ${checked} configurations, ${pytorchElements} elements`,
  );
  for (const line of examples.slice(0, 10)) log(line);
  if (examples.length > 10) log(`  ... and ${examples.length - 10} more configurations`);
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
    checked,
    skipped,
    exact: total.exact,
    bounded: total.bounded,
    kernels: tally.kernels(),
    failures,
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
