/**
 * One configuration of `deno task verify` (`verify.ts` runs the list and reports): skipped where
 * the NPU's family refuses it, run on the NPU (in deterministic mode twice, the bits compared),
 * then compared with the device reference (bit for bit where `exact.ts` says it is exact, within
 * the bound elsewhere) and, for the report, with PyTorch's semantics.
 *
 * @module
 */

import type { Device } from "../../src/device.ts";
import { AclError } from "../../src/ffi/status.ts";
import { checkFamilySupports } from "../../src/rules/family.ts";
import {
  type AscendGeneration,
  FAMILY_NAMES,
  type SocGeneration,
} from "../../src/rules/generation.ts";
import type { AscendTarget } from "../../src/rules/numerics.ts";
import { NondeterministicKernelError } from "../../src/rules/support.ts";
import { runParams } from "../../src/ops/run_params.ts";
import { describeCase, type VerifyCase } from "./cases.ts";
import {
  compareWithDevice,
  type DeviceComparison,
  deviceReference,
  type ReferenceChoice,
} from "./compare.ts";
import {
  compareBits,
  type CompareTally,
  describeBitMismatch,
  indexOf,
  verdictOf,
} from "./exact.ts";
import type { NpuFamily } from "./mix.ts";
import { differingBits, float32Bits, type Repeater } from "./repeat.ts";

/** The running counts of a verify run ({@link checkCase} adds to them). */
export interface VerifyCounts {
  /** Failed configurations (off the reference, a runtime failure, a family mismatch). */
  failures: number;
  /** Configurations refused before the device. */
  skipped: number;
  /** Configurations run a second time in deterministic mode. */
  repeats: number;
  /** Of those, the ones whose two runs differ. */
  repeatMismatches: number;
  /** Configurations that differ from PyTorch's semantics. */
  pytorchDifferences: number;
  /** Their differing elements. */
  pytorchElements: number;
  /** One line per configuration that differs from PyTorch's semantics. */
  readonly examples: string[];
}

/** What every configuration of a verify run shares. */
export interface VerifyRun {
  /** The NPU under test. */
  readonly npu: Device;
  /** The CPU device reference (`numerics: "device"`) of the reference's SoC. */
  readonly reference: Device;
  /** The CPU backend with PyTorch's semantics. */
  readonly pytorch: Device;
  /** The reference's family (`referenceOf`). */
  readonly target: SocGeneration;
  /** The bound's options (`referenceOf`). */
  readonly bound: ReferenceChoice["options"];
  /** What the NPU's family and CANN run. */
  readonly family: NpuFamily;
  /** The reference's target for `exact.ts`'s verdicts. */
  readonly exactTarget: AscendTarget;
  /** The repeat check's seeds, or null when it does not run. */
  readonly repeater: Repeater | null;
  /** Whether the runtime can set deterministic mode. */
  readonly deterministicAvailable: boolean;
  /** Per kernel, how configurations were compared. */
  readonly tally: CompareTally;
  /** The counts the report prints. */
  readonly counts: VerifyCounts;
  /** The report's sink. */
  readonly log: (line: string) => void;
}

/**
 * Checks configuration `c` on input `values` (exact in every dtype): adds to `run.counts` and
 * `run.tally`, and logs SKIPPED, ERROR, MISMATCH and REPEAT MISMATCH lines.
 *
 * @throws what the NPU or the reference throws other than an AclError or a family's refusal
 * @example
 * ```ts ignore
 * await checkCase(run, makeCases(1, 1, ["float32"])[0], Float32Array.of(0.5, 1));
 * ```
 */
export async function checkCase(
  run: VerifyRun,
  c: VerifyCase,
  values: Float32Array,
): Promise<void> {
  const { counts, log } = run;
  const refused = run.family.refusal(c);
  if (refused !== null) {
    // What the reference's family runs and the NPU's refuses: the NPU is not of that family.
    if (!familyRuns(c, run.family.generation) && familyRuns(c, run.target.generation)) {
      counts.failures++;
      log(
        `MISMATCH ${describeCase(c)}: the ${
          FAMILY_NAMES[run.family.generation]
        } does not run it, ` +
          `the ${FAMILY_NAMES[run.target.generation]} does`,
      );
    } else {
      counts.skipped++;
      log(`SKIPPED ${describeCase(c)}: ${refused}`);
    }
    return;
  }
  const deterministic = run.deterministicAvailable && (c.deterministic || run.npu.deterministic);
  const onNpu = await runRepeated(run, c, values, deterministic);
  if (onNpu !== null) await compareCase(run, c, values, onNpu, deterministic);
}

// The NPU's result (null: refused or failed, counted and logged); in deterministic mode run twice
// and the bits compared, as deterministic mode promises the same bits.
async function runRepeated(
  run: VerifyRun,
  c: VerifyCase,
  values: Float32Array,
  deterministic: boolean,
): Promise<Float32Array | null> {
  const { counts, log, repeater } = run;
  let first: CaseResult;
  try {
    first = await runOnNpu(run.npu, c, values, deterministic, repeater, 0);
  } catch (error) {
    // What the library refuses before the device that the family's checks did not foresee.
    if (error instanceof NondeterministicKernelError) {
      counts.skipped++;
      log(`SKIPPED ${describeCase(c)}: ${error.message}`);
      return null;
    }
    // A runtime failure on one configuration is a failed check, reported; the run goes on.
    if (!(error instanceof AclError)) throw error;
    counts.failures++;
    log(`ERROR ${describeCase(c)}: ${error.message}`);
    return null;
  }
  if (deterministic && repeater !== null) {
    try {
      const second = await runOnNpu(run.npu, c, values, deterministic, repeater, 1);
      counts.repeats++;
      const differing = differingBits(first.bits, second.bits, c.dtype);
      if (differing.length > 0) {
        counts.repeatMismatches++;
        log(`REPEAT MISMATCH ${describeCase(c)}: ${repeatReport(c, first, second, differing)}`);
        log(`  (${repeater.how})`);
      }
    } catch (error) {
      if (!(error instanceof AclError)) throw error;
      counts.failures++;
      log(`ERROR ${describeCase(c)} (second run): ${error.message}`);
      return null;
    }
  }
  return first.values;
}

// The NPU's result against the device reference (bit for bit where exact, else the bound), then
// against PyTorch's semantics (what lies outside is the device's own behaviour, never a failure).
async function compareCase(
  run: VerifyRun,
  c: VerifyCase,
  values: Float32Array,
  onNpu: Float32Array,
  deterministic: boolean,
): Promise<void> {
  const { counts, log } = run;
  const bounds = { ...run.bound, deterministic };
  let expected: Float32Array;
  try {
    expected = await deviceReference(c, values, { ...bounds, device: run.reference });
  } catch (error) {
    // The reference's family does not run what the NPU ran: the NPU is not that family.
    if (!(error instanceof TypeError) || familyRuns(c, run.target.generation)) throw error;
    counts.failures++;
    log(`MISMATCH ${describeCase(c)}: the NPU ran it; ${error.message}`);
    return;
  }
  const verdict = verdictOf(c, deterministic, run.exactTarget);
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
  run.tally.add(verdict.kernel, verdict.exactness, ok);
  if (!ok) counts.failures++;
  const semantics = compareWithDevice(
    c,
    values,
    onNpu,
    await runCase(run.pytorch, c, values),
    bounds,
  );
  if (!semantics.ok) {
    counts.pytorchDifferences++;
    counts.pytorchElements += semantics.failures;
    counts.examples.push(`  ${describeCase(c)}: ${summarize(semantics, "PyTorch")}`);
  }
}

/** One NPU result: its values (for the bound) and its raw bits (for the repeat). */
interface CaseResult {
  readonly values: Float32Array;
  /** float32: the values' bits; float16/bfloat16: the tensor's raw bits. */
  readonly bits: Uint32Array | Uint16Array;
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
  const bits = c.dtype === "float32" ? float32Bits(read) : await result.toRawBits();
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
