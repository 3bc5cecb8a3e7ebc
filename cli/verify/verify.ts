/**
 * The verification behind `deno task verify` (the command is `main.ts`): seeded random configurations
 * of the three ops run on an NPU (real CANN, or the host emulation), each result checked against the
 * device reference — the CPU backend computing what the Ascend A2/A3 kernels compute
 * (`numerics: "device"`): index mapping exact, every element within the documented bound. Separately
 * it reports where and how much the device differs from PyTorch's semantics (the CPU backend's
 * default), which is expected and never a failure.
 *
 * @module
 */

import { Device } from "../../src/device.ts";
import { AclError } from "../../src/ffi/status.ts";
import { checkFamilySupports } from "../../src/rules/family.ts";
import { type AscendGeneration, FAMILY_NAMES } from "../../src/rules/generation.ts";
import { NondeterministicKernelError } from "../../src/rules/support.ts";
import type { Tensor } from "../../src/tensor/tensor.ts";
import { runParams } from "../../src/ops/run_params.ts";
import type { VerifyOptions } from "./args.ts";
import { describeCase, makeCases, seededRandom, type VerifyCase } from "./cases.ts";
import {
  compareWithDevice,
  type DeviceComparison,
  deviceReference,
  referenceOf,
} from "./compare.ts";

/** What a run found. */
export interface VerifySummary {
  /** Configurations run. */
  readonly cases: number;
  /** Configurations whose NPU result is outside the device reference's bound. */
  readonly failures: number;
  /** Configurations where the device's result differs from PyTorch's semantics. */
  readonly pytorchDifferences: number;
  /** Elements that differ from PyTorch's semantics, over all configurations. */
  readonly pytorchElements: number;
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
  const all = makeCases(options.cases, options.seed, options.dtypes);
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
  const random = seededRandom(options.seed ^ 0x5eed);
  let failures = 0;
  let pytorchDifferences = 0;
  let pytorchElements = 0;
  const examples: string[] = [];
  for (const c of cases) {
    const count = c.inputSize[0] * c.inputSize[1] * c.outputSize.reduce((a, b) => a * b, 1);
    // Multiples of 1/64 in [-4, 4]: exact in every dtype, so all three devices get the same input.
    const values = Float32Array.from(
      { length: count },
      () => Math.floor(random() * 512 - 256) / 64,
    );
    let onNpu: Float32Array;
    try {
      onNpu = await runCase(npu, c, values);
    } catch (error) {
      // A runtime failure on one configuration is a failed check, reported; the run goes on.
      if (error instanceof NondeterministicKernelError) {
        log(`SKIPPED ${describeCase(c)}: ${error.message}`);
        continue;
      }
      if (!(error instanceof AclError)) throw error;
      failures++;
      log(`ERROR ${describeCase(c)}: ${error.message}`);
      continue;
    }
    // V1 bilinear on A2/A3 is PyTorch's rule from the sizes: its reference runs with PyTorch numerics.
    const v1 = c.op === "bilinear2d" && bound.bilinearApi === "v1";
    let expected: Float32Array;
    try {
      expected = await deviceReference(c, values, {
        ...bound,
        device: v1 ? pytorch : reference,
      });
    } catch (error) {
      // The reference's family does not run what the NPU ran: the NPU is not that family.
      if (!(error instanceof TypeError) || familyRuns(c, target.generation)) throw error;
      failures++;
      log(`MISMATCH ${describeCase(c)}: the NPU ran it; ${error.message}`);
      continue;
    }
    const check = compareWithDevice(c, values, onNpu, expected, bound);
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
      bound,
    );
    if (!semantics.ok) {
      pytorchDifferences++;
      pytorchElements += semantics.failures;
      examples.push(`  ${describeCase(c)}: ${summarize(semantics, "PyTorch")}`);
    }
  }
  log(
    `${cases.length} configurations on ${npu.name}: ${cases.length - failures} match the device ` +
      `reference (mapping exact, every element within its bound), ${failures} do not`,
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
  return {
    cases: cases.length,
    failures: failures + familyMismatches,
    pytorchDifferences,
    pytorchElements,
  };
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

async function runCase(device: Device, c: VerifyCase, values: Float32Array): Promise<Float32Array> {
  using grad = device.tensor(values, [c.inputSize[0], c.inputSize[1], ...c.outputSize], {
    dtype: c.dtype,
  });
  using result = launch(grad, c);
  return await result.toFloat32Array();
}

function launch(grad: Tensor, c: VerifyCase): Tensor {
  return runParams(grad, c);
}
