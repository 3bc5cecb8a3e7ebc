/**
 * The doctor's short run of each op on a device, checked against a reference.
 *
 * On an NPU the reference is the device reference (the CPU backend with `numerics: "device"`) and the
 * comparison that of `deno task verify` (`cli/verify/compare.ts`): index mapping exact, each element
 * within a bound derived from the terms summed into it. The sizes include a tie of the device's index
 * rule (in 2, out 41: output 20 goes to input 1 on the device, to input 0 in PyTorch) and a fractional
 * scale, so a binding that computed PyTorch's mapping, or mixed up sizes, fails. On the CPU backend the
 * reference is its TypeScript kernels, which must give the same bits.
 *
 * @module
 */

import type { UpsampleOp, UpsampleParams } from "../../src/backend.ts";
import { checkFamilySupports } from "../../src/rules/family.ts";
import type { AscendGeneration } from "../../src/rules/generation.ts";
import type { Device } from "../../src/device.ts";
import { runParams } from "../../src/ops/run_params.ts";
import {
  compareWithDevice,
  type DeviceProblem,
  deviceReference,
  referenceOf,
} from "../verify/compare.ts";
import { type Check, checkFromError } from "./report.ts";

const NAMES: Readonly<Record<UpsampleOp, string>> = {
  nearestExact1d: "upsampleNearestExact1dBackward",
  nearestExact2d: "upsampleNearestExact2dBackward",
  bilinear2d: "upsampleBilinear2dBackward",
};

const PROBLEMS: readonly DeviceProblem[] = [
  {
    op: "nearestExact1d",
    dtype: "float32",
    inputSize: [1, 3, 2],
    outputSize: [41],
    scales: [0],
    alignCorners: false,
  },
  {
    op: "nearestExact2d",
    dtype: "float32",
    inputSize: [1, 2, 2, 5],
    outputSize: [41, 13],
    scales: [0, 0],
    alignCorners: false,
  },
  {
    op: "bilinear2d",
    dtype: "float32",
    inputSize: [1, 2, 5, 4],
    outputSize: [13, 8],
    scales: [0, 0],
    alignCorners: false,
  },
];

/** Deterministic gradient values in [-1, 1), not all representable sums (so rounding is exercised). */
function gradient(problem: DeviceProblem): Float32Array {
  const count = problem.inputSize[0] * problem.inputSize[1] *
    problem.outputSize.reduce((a, b) => a * b, 1);
  return Float32Array.from(
    { length: count },
    (_, i) => (((i * 2654435761) >>> 0) % 2000) / 1000 - 1,
  );
}

async function run(
  device: Device,
  problem: DeviceProblem,
  values: Float32Array,
): Promise<Float32Array> {
  const { inputSize, outputSize } = problem;
  using grad = device.tensor(values, [inputSize[0], inputSize[1], ...outputSize]);
  using result = runParams(grad, problem);
  return await result.toFloat32Array();
}

/** What a failed op call is told to do, by the kind of failure. */
function fixFor(error: unknown): string {
  const text = String(error);
  if (/561107|OPP_PATH/.test(text)) {
    return "set ASCEND_OPP_PATH to your CANN's opp folder (source its set_env.sh)";
  }
  if (/MissingSymbolError/.test(text)) {
    return "install a CANN whose operator library has this op, or use the CPU backend";
  }
  return "run `deno task verify` on this device for details, and report this output if it persists";
}

// Why the NPU's family does not run `problem` (the library refuses it as the device would fail).
function familyRefusal(problem: UpsampleParams, generation: AscendGeneration): string | undefined {
  try {
    checkFamilySupports(problem, generation);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * Runs each op once on `device` and checks it: an NPU against the device reference (within its
 * bound; `reference` is not used), the CPU backend against `reference` (same bits). One check per op, with the fix on failure.
 *
 * @example
 * ```ts
 * import { Device } from "../../src/device.ts";
 * import { smokeChecks } from "./smoke.ts";
 * using device = Device.open({ backend: "cpu" });
 * using reference = Device.open({ backend: "cpu", cpuKernels: "typescript" });
 * const checks = await smokeChecks(device, reference);
 * console.log(checks.every((check) => check.status === "ok")); // true
 * ```
 */
export async function smokeChecks(device: Device, reference?: Device): Promise<Check[]> {
  const checks: Check[] = [];
  const npu = device.backend === "npu";
  for (const problem of PROBLEMS) {
    const shape = `[${problem.inputSize.join(",")}] from [${problem.outputSize.join(",")}]`;
    const title = `${NAMES[problem.op]} ${shape} on ${device.name}`;
    const values = gradient(problem);
    const unsupported = npu ? familyRefusal(problem, device.generation ?? "a2") : undefined;
    if (unsupported !== undefined) {
      checks.push({ status: "info", title: `${title}: not run: ${unsupported}` });
      continue;
    }
    let actual: Float32Array;
    try {
      actual = await run(device, problem, values);
    } catch (error) {
      checks.push(checkFromError("fail", title, error, fixFor(error)));
      continue;
    }
    if (!npu) {
      if (reference === undefined) {
        throw new TypeError("smokeChecks: a CPU device needs a reference");
      }
      checks.push(
        compareCheck(
          title,
          actual,
          await run(reference, problem, values),
          "the TypeScript kernels",
        ),
      );
      continue;
    }
    // The rules of the SoC the runtime reports (an unknown one: A2/A3, which doctor says apart).
    const { options } = referenceOf(device);
    const expected = await deviceReference(problem, values, options);
    const result = compareWithDevice(problem, values, actual, expected, options);
    if (result.ok) {
      checks.push({
        status: "ok",
        title: `${title}: ${result.elements} values match the device reference ` +
          `(largest difference ${result.maxAbsError.toExponential(1)})`,
      });
    } else {
      const first = result.firstFailure!;
      checks.push({
        status: "fail",
        title: `${title}: ${result.failures} of ${result.elements} values outside the device ` +
          `reference's bound (at [${first.index.join(", ")}]: ${first.actual}, expected ` +
          `${first.expected} within ${first.bound.toExponential(1)})`,
        fix: WRONG_RESULTS_FIX,
      });
    }
  }
  return checks;
}

const WRONG_RESULTS_FIX = "the results are wrong: check that the CANN libraries belong together " +
  "(one installation), then run `deno task verify` and report its output";

/**
 * The check of one result against a reference that must give the same bits: ok when every value has
 * the same bits, else a failure naming how many differ and the first one.
 *
 * @example
 * ```ts
 * import { compareCheck } from "./smoke.ts";
 * compareCheck("op", Float32Array.of(1, 2), Float32Array.of(1, 3), "the CPU").status; // "fail"
 * ```
 */
export function compareCheck(
  title: string,
  actual: Float32Array,
  expected: Float32Array,
  referenceName: string,
): Check {
  const differing: number[] = [];
  for (let i = 0; i < expected.length; i++) {
    if (!Object.is(actual[i], expected[i])) differing.push(i);
  }
  if (differing.length === 0 && actual.length === expected.length) {
    return {
      status: "ok",
      title: `${title}: ${expected.length} values, equal to those of ${referenceName}`,
    };
  }
  const i = differing[0] ?? expected.length;
  return {
    status: "fail",
    title: `${title}: ${differing.length} of ${expected.length} values differ from those of ` +
      `${referenceName} (element ${i}: ${show(actual[i])}, expected ${show(expected[i])})`,
    fix: WRONG_RESULTS_FIX,
  };
}

function show(value: number | undefined): string {
  return Object.is(value, -0) ? "-0" : String(value);
}
