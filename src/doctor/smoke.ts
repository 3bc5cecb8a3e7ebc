/**
 * The doctor's short run of each op on a device, checked against a reference device.
 *
 * The inputs are chosen so that every valid implementation gives the same bits: exact 2x sizes (where
 * the device's index rule and PyTorch's map every output to the same input cell, and bilinear weights
 * are 1/4 and 3/4) and small integer gradients (every sum is exact in float32). A difference is then a
 * broken installation or binding, never rounding or the device's documented semantics.
 *
 * @module
 */

import type { Device } from "../device.ts";
import {
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../ops/upsample.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { type Check, checkFromError } from "./report.ts";

interface SmokeCase {
  readonly name: string;
  readonly gradShape: readonly number[];
  run(grad: Tensor): Tensor;
}

const CASES: readonly SmokeCase[] = [
  {
    name: "upsampleNearestExact1dBackward",
    gradShape: [1, 2, 8],
    run: (grad) => upsampleNearestExact1dBackward(grad, { outputSize: [8], inputSize: [1, 2, 4] }),
  },
  {
    name: "upsampleNearestExact2dBackward",
    gradShape: [1, 2, 6, 8],
    run: (grad) =>
      upsampleNearestExact2dBackward(grad, { outputSize: [6, 8], inputSize: [1, 2, 3, 4] }),
  },
  {
    name: "upsampleBilinear2dBackward",
    gradShape: [1, 2, 6, 8],
    run: (grad) =>
      upsampleBilinear2dBackward(grad, { outputSize: [6, 8], inputSize: [1, 2, 3, 4] }),
  },
];

async function runCase(device: Device, smoke: SmokeCase): Promise<Float32Array> {
  const count = smoke.gradShape.reduce((a, b) => a * b, 1);
  const values = Array.from({ length: count }, (_, i) => ((i * 7) % 11) - 5);
  using grad = device.tensor(values, smoke.gradShape);
  using result = smoke.run(grad);
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

/**
 * Runs each op once on `device` and on `reference`, and reports one check per op: the same bits, or
 * what differs (first element, count), or the error with its fix.
 *
 * @example
 * ```ts
 * import { Device } from "../device.ts";
 * import { smokeChecks } from "./smoke.ts";
 * using device = Device.open({ backend: "cpu" });
 * using reference = Device.open({ backend: "cpu", cpuKernels: "typescript" });
 * const checks = await smokeChecks(device, reference, "the TypeScript kernels");
 * console.log(checks.every((check) => check.status === "ok")); // true
 * ```
 */
export async function smokeChecks(
  device: Device,
  reference: Device,
  referenceName: string,
): Promise<Check[]> {
  const checks: Check[] = [];
  for (const smoke of CASES) {
    const title = `${smoke.name} on ${device.name}`;
    let actual: Float32Array;
    try {
      actual = await runCase(device, smoke);
    } catch (error) {
      checks.push(checkFromError("fail", title, error, fixFor(error)));
      continue;
    }
    checks.push(compareCheck(title, actual, await runCase(reference, smoke), referenceName));
  }
  return checks;
}

/**
 * The check of one op's result against its reference: ok when every value has the same bits, else a
 * failure naming how many differ and the first one.
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
    fix: "the results are wrong for inputs every implementation computes exactly: check that the " +
      "CANN libraries belong together (one installation), then run `deno task verify`",
  };
}

function show(value: number | undefined): string {
  return Object.is(value, -0) ? "-0" : String(value);
}
