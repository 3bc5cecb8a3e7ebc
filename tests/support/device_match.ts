/**
 * `assertMatchesDevice`: a test assertion that a result (from an NPU, emulated or real) is what the
 * Ascend device computes — the device reference (CPU backend, `numerics: "device"`) within the
 * bound of `cli/verify/compare.ts` (index mapping exact, sums within k·u·Σ|g|).
 *
 * The rules are those of the generation the NPU reports (`device.soc`, `device.generation`): the
 * A2/A3 reference by default, the Ascend 950 one (`Device.open({ soc })`) for an `Ascend950*` SoC,
 * where bilinear V1 runs the same ResizeBilinearV2Grad kernels as V2 (with the scales), so its
 * reference is V2's, as in `cli/verify/verify.ts`.
 *
 * @module
 */

import { AssertionError } from "node:assert/strict";
import { Device, type Tensor } from "../../mod.ts";
import type { UpsampleOp } from "../../src/backend.ts";
import type { BilinearApi } from "../../src/rules/ascend_a2.ts";
import { type AscendGeneration, generationOfSoc } from "../../src/rules/generation.ts";
import {
  bilinearApiOf,
  type BoundOptions,
  compareWithDevice,
  type DeviceComparison,
  type DeviceProblem,
  deviceReference,
} from "../../cli/verify/compare.ts";

/** Whose rules a result is checked against: the device that computed it. */
export interface DeviceTarget {
  /** The SoC the NPU reports (`device.soc`); undefined or unknown: the A2/A3 rules. */
  readonly soc?: string;
  /** Whether the call ran deterministic (the 950's bilinear kernel depends on it; default false). */
  readonly deterministic?: boolean;
}

/**
 * The target of results computed on `device`: its SoC, and its deterministic mode unless the call
 * set its own.
 *
 * @example
 * ```ts ignore
 * await assertMatchesDeviceOp(actual, op, values, "float32", options, "what", 2, deviceTarget(npu));
 * ```
 */
export function deviceTarget(device: Device, deterministic = device.deterministic): DeviceTarget {
  return { soc: device.soc, deterministic };
}

/** The kernel generation whose rules apply to `target` (A2/A3 unless its SoC is an Ascend 950). */
export function targetGeneration(target: DeviceTarget = {}): AscendGeneration {
  return generationOfSoc(target.soc).generation;
}

const referenceDevices = new Map<string, Device>();

/**
 * The CPU device the reference of the SoC `soc` runs on (for every op and bilinear API:
 * `deviceReference` runs A2/A3's V1 bilinear as V2's fallback to the TBE kernel from the sizes),
 * opened once per test process: a device per comparison would cost a WebAssembly memory each,
 * which a qemu-run aarch64 process never gives back.
 *
 * @example
 * ```ts ignore
 * const expected = await deviceReference(problem, grad, { device: referenceDevice() });
 * ```
 */
export function referenceDevice(soc?: string): Device {
  const numerics = "device";
  // An unknown SoC is not an option Device.open takes: the A2/A3 rules are assumed for it.
  const deviceSoc = generationOfSoc(soc).known ? soc : undefined;
  const key = `${numerics} ${deviceSoc ?? ""}`;
  let device = referenceDevices.get(key);
  if (device === undefined) {
    device = Device.open({
      backend: "cpu",
      numerics,
      threads: 1,
      ...(deviceSoc === undefined ? {} : { soc: deviceSoc }),
    });
    referenceDevices.set(key, device);
  }
  return device;
}

/**
 * The device reference's result for `problem` as `target`'s device computes it, and the options
 * `compareWithDevice` needs for it (the generation, the bilinear API, deterministic mode).
 */
export async function referenceFor(
  problem: DeviceProblem,
  grad: Float32Array,
  bilinearApi: BilinearApi,
  target: DeviceTarget = {},
): Promise<{ expected: Float32Array; bound: BoundOptions }> {
  const generation = targetGeneration(target);
  // (The 950's V1 runs V2's kernels with the scales: deviceReference and referenceDevice know.)
  const expected = await deviceReference(problem, grad, {
    bilinearApi,
    generation,
    device: referenceDevice(target.soc),
  });
  const bound: BoundOptions = generation === "950"
    ? { bilinearApi, generation, deterministic: target.deterministic ?? false }
    : { bilinearApi };
  return { expected, bound };
}

/** The op call that produced the result. */
export interface DeviceCall {
  /** Which op. */
  op: UpsampleOp;
  /** `[N, C, L]` or `[N, C, H, W]`. */
  inputSize: readonly number[];
  /** `[L]` or `[H, W]`. */
  outputSize: readonly number[];
  /** One per spatial dimension (default 0: from the sizes). */
  scales?: readonly number[];
  /** Bilinear only (default false). */
  alignCorners?: boolean;
}

/**
 * Asserts that `actual` (computed from `gradOutput` by `call`) matches the device reference;
 * throws an `AssertionError` naming the first element outside its bound. Returns the comparison.
 * The bilinear API is the one `actual`'s device runs (V1 on a CANN without V2), unless given; the
 * rules are those of `actual`'s device ({@link deviceTarget}), unless `options.target` says.
 *
 * @example
 * ```ts ignore
 * using result = upsampleNearestExact1dBackward(grad, { outputSize: [41], inputSize: [1, 1, 2] });
 * await assertMatchesDevice(result, grad, { op: "nearestExact1d", inputSize: [1, 1, 2], outputSize: [41] });
 * ```
 */
export async function assertMatchesDevice(
  actual: Tensor,
  gradOutput: Tensor,
  call: DeviceCall,
  options: { bilinearApi?: BilinearApi; label?: string; target?: DeviceTarget } = {},
): Promise<DeviceComparison> {
  const problem = {
    op: call.op,
    dtype: gradOutput.dtype,
    inputSize: call.inputSize,
    outputSize: call.outputSize,
    scales: call.scales ?? call.outputSize.map(() => 0),
    alignCorners: call.alignCorners ?? false,
  };
  const bilinearApi = options.bilinearApi ?? bilinearApiOf(actual.device);
  const target = options.target ?? deviceTarget(actual.device);
  const grad = await gradOutput.toFloat32Array();
  const { expected, bound } = await referenceFor(problem, grad, bilinearApi, target);
  const comparison = compareWithDevice(
    problem,
    grad,
    await actual.toFloat32Array(),
    expected,
    bound,
  );
  if (!comparison.ok) {
    const first = comparison.firstFailure!;
    throw new AssertionError({
      message: `${options.label ?? call.op}: ${comparison.failures} of ${comparison.elements} ` +
        `elements differ from the ${targetGeneration(target) === "950" ? "Ascend 950 " : ""}` +
        `device reference beyond the bound (inputSize ` +
        `[${call.inputSize.join(", ")}], outputSize [${call.outputSize.join(", ")}], scales ` +
        `[${problem.scales.join(", ")}]); first at [${first.index.join(", ")}]: ${first.actual} ` +
        `vs ${first.expected} (bound ${first.bound})`,
      actual: first.actual,
      expected: first.expected,
    });
  }
  return comparison;
}
