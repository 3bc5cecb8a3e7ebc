/**
 * `assertMatchesDevice`: a test assertion that a result (from an NPU, emulated or real) is what the
 * Ascend device computes — the device reference (CPU backend, `numerics: "device"`) within the
 * bound of `cli/verify/compare.ts` (index mapping exact, sums within k·u·Σ|g|).
 *
 * @module
 */

import { AssertionError } from "node:assert/strict";
import { Device, type Tensor } from "../../mod.ts";
import type { UpsampleOp } from "../../src/backend.ts";
import type { BilinearApi } from "../../src/rules/ascend_a2.ts";
import {
  bilinearApiOf,
  compareWithDevice,
  type DeviceComparison,
  deviceReference,
} from "../../cli/verify/compare.ts";

const referenceDevices = new Map<string, Device>();

/**
 * The CPU device the reference of `op` runs on for `bilinearApi` (V1 bilinear is PyTorch's from the
 * sizes), opened once per test process: a device per comparison would cost a WebAssembly memory
 * each, which a qemu-run aarch64 process never gives back.
 *
 * @example
 * ```ts ignore
 * const expected = await deviceReference(problem, grad, { device: referenceDevice(problem.op, "v2") });
 * ```
 */
export function referenceDevice(op: UpsampleOp, bilinearApi: BilinearApi = "v2"): Device {
  const numerics = op === "bilinear2d" && bilinearApi === "v1" ? "pytorch" : "device";
  let device = referenceDevices.get(numerics);
  if (device === undefined) {
    device = Device.open({ backend: "cpu", numerics, threads: 1 });
    referenceDevices.set(numerics, device);
  }
  return device;
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
 * The bilinear API is the one `actual`'s device runs (V1 on a CANN without V2), unless given.
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
  options: { bilinearApi?: BilinearApi; label?: string } = {},
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
  const grad = await gradOutput.toFloat32Array();
  const expected = await deviceReference(problem, grad, {
    bilinearApi,
    device: referenceDevice(problem.op, bilinearApi),
  });
  const comparison = compareWithDevice(
    problem,
    grad,
    await actual.toFloat32Array(),
    expected,
    { bilinearApi },
  );
  if (!comparison.ok) {
    const first = comparison.firstFailure!;
    throw new AssertionError({
      message: `${options.label ?? call.op}: ${comparison.failures} of ${comparison.elements} ` +
        `elements differ from the device reference beyond the bound (inputSize ` +
        `[${call.inputSize.join(", ")}], outputSize [${call.outputSize.join(", ")}], scales ` +
        `[${problem.scales.join(", ")}]); first at [${first.index.join(", ")}]: ${first.actual} ` +
        `vs ${first.expected} (bound ${first.bound})`,
      actual: first.actual,
      expected: first.expected,
    });
  }
  return comparison;
}
