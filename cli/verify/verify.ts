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
import { FAMILY_NAMES } from "../../src/rules/generation.ts";
import type { VerifyOptions } from "./args.ts";
import { makeCases, routeCases, seededRandom } from "./cases.ts";
import { checkCase, type VerifyRun } from "./check.ts";
import { referenceOf } from "./compare.ts";
import { CompareTally, type KernelCounts, referenceTarget } from "./exact.ts";
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
  const run: VerifyRun = {
    npu,
    reference,
    pytorch,
    target,
    bound,
    family,
    exactTarget,
    repeater: options.repeat && unavailable === null ? Repeater.open(npu, options.seed) : null,
    deterministicAvailable: unavailable === null,
    tally: new CompareTally(),
    counts: {
      failures: 0,
      skipped: 0,
      repeats: 0,
      repeatMismatches: 0,
      pytorchDifferences: 0,
      pytorchElements: 0,
      examples: [],
    },
    log,
  };
  const random = seededRandom(options.seed ^ 0x5eed);
  try {
    for (const c of cases) {
      const count = c.inputSize[0] * c.inputSize[1] * c.outputSize.reduce((a, b) => a * b, 1);
      // Multiples of 1/64 in [-4, 4]: exact in every dtype, so all three devices get the same input.
      const values = Float32Array.from(
        { length: count },
        () => Math.floor(random() * 512 - 256) / 64,
      );
      await checkCase(run, c, values);
    }
  } finally {
    run.repeater?.close();
  }
  return logSummary(run, cases.length, unavailable);
}

// The report's closing lines (totals, per kernel, PyTorch's differences, the repeat check) and
// the summary; `unavailable`: why deterministic mode could not be set, or null.
function logSummary(run: VerifyRun, drawn: number, unavailable: string | null): VerifySummary {
  const { tally, repeater, family, npu, log } = run;
  const {
    failures,
    skipped,
    repeats,
    repeatMismatches,
    pytorchDifferences,
    pytorchElements,
    examples,
  } = run.counts;
  const total = tally.total();
  const checked = total.exact + total.bounded;
  log(
    `${drawn} configurations on ${npu.name}: ` +
      `${checked - total.exactFailed - total.boundedFailed} match the device ` +
      `reference (${total.exact - total.exactFailed} bit for bit where it is exact, ` +
      `${total.bounded - total.boundedFailed} within its bound), ${failures} do not` +
      (skipped > 0 ? `, ${skipped} refused before the device (SKIPPED above)` : ""),
  );
  log(
    `family ${family.label}: ${drawn} drawn, ${checked} checked, ${skipped} skipped; ` +
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
    cases: drawn,
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
