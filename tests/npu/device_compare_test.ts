// cli/verify/compare.ts and tests/support/device_match.ts: a result within the documented bound of the
// device reference passes, a displaced gradient (PyTorch's mapping at a tie) or an error beyond
// the bound fails with the first failing index; the emulated NPU matches the reference.

import assert from "node:assert/strict";
import {
  Device,
  runParams,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import {
  bilinearApiOf,
  compareWithDevice,
  deviceBounds,
  type DeviceProblem,
  deviceReference,
} from "../../cli/verify/compare.ts";
import {
  assertMatchesDevice,
  deviceTarget,
  referenceFor,
  targetGeneration,
} from "../support/device_match.ts";
import { describeCase, makeCases } from "../../cli/verify/cases.ts";
import {
  a2OnlyTest,
  EMU_DIR,
  EMU_NO_V2_DIR,
  EMU_TORCH_MAP_DIR,
  EMULATED_LANE,
  roundTo,
} from "../support/helpers.ts";

const U = 2 ** -24;

function problem1d(
  input: number,
  output: number,
  dtype: DeviceProblem["dtype"] = "float32",
): DeviceProblem {
  return {
    op: "nearestExact1d",
    dtype,
    inputSize: [1, 2, input],
    outputSize: [output],
    scales: [0],
    alignCorners: false,
  };
}

Deno.test("compare: the nearest-exact bound is 2 m u sum|g| per element", () => {
  const problem = problem1d(2, 5); // device ranges: input 0 <- [0, 2), input 1 <- [2, 5)
  const grad = Float32Array.of(1, -2, 3, -4, 5, 1, 1, 1, 1, 1);
  const bounds = deviceBounds(problem, grad);
  assert.deepEqual([...bounds], [2 * 2 * U * 3, 2 * 3 * U * 12, 2 * 2 * U * 2, 2 * 3 * U * 3]);
});

Deno.test("compare: within the bound passes, beyond it fails at the first such element", async () => {
  const problem = problem1d(4, 82);
  const grad = Float32Array.from(
    { length: 2 * 82 },
    (_, k) => Math.fround(0.5 + ((k * 37) % 11) / 22),
  );
  const expected = await deviceReference(problem, grad);
  const bounds = deviceBounds(problem, grad);
  assert.equal(compareWithDevice(problem, grad, expected, expected).ok, true);
  const within = expected.map((v, k) => v + bounds[k] * 0.9);
  const inside = compareWithDevice(problem, grad, within, expected);
  assert.equal(inside.ok, true, JSON.stringify(inside));
  assert.ok(inside.maxViolation > 0.5 && inside.maxViolation <= 1);
  const beyond = expected.slice();
  beyond[5] += bounds[5] * 4;
  const outside = compareWithDevice(problem, grad, beyond, expected);
  assert.equal(outside.ok, false);
  assert.equal(outside.failures, 1);
  assert.deepEqual(outside.firstFailure?.index, [0, 1, 1]);
});

Deno.test("compare: PyTorch's mapping at a tie fails; the device reference differs there", async () => {
  const problem = problem1d(2, 41);
  const grad = new Float32Array(82).fill(1);
  using pytorch = Device.open({ backend: "cpu" });
  using g = pytorch.tensor(grad, [1, 2, 41]);
  using torchResult = upsampleNearestExact1dBackward(g, { outputSize: [41], inputSize: [1, 2, 2] });
  const torch = await torchResult.toFloat32Array();
  assert.deepEqual([...torch], [21, 20, 21, 20]);
  const expected = await deviceReference(problem, grad);
  assert.deepEqual([...expected], [20, 21, 20, 21]);
  const report = compareWithDevice(problem, grad, torch, expected);
  assert.equal(report.ok, false);
  assert.equal(report.failures, 4);
  assert.deepEqual(report.firstFailure?.index, [0, 0, 0]);
  await assert.rejects(
    () =>
      assertMatchesDevice(torchResult, g, {
        op: "nearestExact1d",
        inputSize: [1, 2, 2],
        outputSize: [41],
      }),
    /4 of 4 elements differ from the device reference beyond the bound .* first at \[0, 0, 0\]: 21 vs 20/,
  );
});

Deno.test("compare: float16 allows one ulp of the dtype on top of the float32 bound", () => {
  const problem = problem1d(1, 1, "float16");
  const grad = Float32Array.of(1000, 1000);
  // ulp of float16 at 1000 is 0.5.
  assert.equal(
    compareWithDevice(problem, grad, Float32Array.of(1000.5, 1000), Float32Array.of(1000, 1000)).ok,
    true,
  );
  assert.equal(
    compareWithDevice(problem, grad, Float32Array.of(1001, 1000), Float32Array.of(1000, 1000)).ok,
    false,
  );
});

Deno.test("compare: bilinear weights may round otherwise, a wrong route may not", async () => {
  // One scale: the device ignores it; the reference must too.
  const problem: DeviceProblem = {
    op: "bilinear2d",
    dtype: "float32",
    inputSize: [1, 1, 5, 5],
    outputSize: [11, 11],
    scales: [2.3, 0], // fl32(1 / 2.3) != 5 / 11
    alignCorners: false,
  };
  const grad = Float32Array.from({ length: 121 }, (_, k) => Math.fround(0.5 + ((k * 13) % 7) / 14));
  const expected = await deviceReference(problem, grad);
  const bounds = deviceBounds(problem, grad);
  assert.equal(
    compareWithDevice(problem, grad, expected.map((v, k) => v - 0.9 * bounds[k]), expected).ok,
    true,
  );
  using cpu = Device.open({ backend: "cpu" }); // PyTorch uses the scale
  using g = cpu.tensor(grad, [1, 1, 11, 11]);
  using scaled = upsampleBilinear2dBackward(g, {
    inputSize: [1, 1, 5, 5],
    outputSize: [11, 11],
    scalesH: 2.3,
  });
  assert.equal(compareWithDevice(problem, grad, await scaled.toFloat32Array(), expected).ok, false);
});

EMULATED_LANE.test("compare: the emulated NPU matches the device reference (V2 and V1)", async () => {
  for (const [libDir, api] of [[EMU_DIR, "v2"], [EMU_NO_V2_DIR, "v1"]] as const) {
    using npu = Device.open({ backend: "npu", libDir });
    assert.equal(bilinearApiOf(npu), api);
    const values = Array.from({ length: 2 * 3 * 12 * 10 }, (_, k) => 0.5 + ((k * 29) % 17) / 34);
    using grad = npu.tensor(values, [2, 3, 12, 10]);
    const call = { inputSize: [2, 3, 6, 4], outputSize: [12, 10] };
    using nearest = upsampleNearestExact2dBackward(grad, call);
    await assertMatchesDevice(nearest, grad, { op: "nearestExact2d", ...call });
    using bilinear = upsampleBilinear2dBackward(grad, call);
    await assertMatchesDevice(bilinear, grad, { op: "bilinear2d", ...call });
  }
});

Deno.test("deviceReference: a given device must be a CPU device with the right numerics", async () => {
  using pytorch = Device.open({ backend: "cpu" });
  await assert.rejects(
    () => deviceReference(problem1d(2, 4), new Float32Array(8), { device: pytorch }),
    /options.device must be a CPU device with numerics "device", got cpu with numerics "pytorch"/,
  );
  using reference = Device.open({ backend: "cpu", numerics: "device" });
  const result = await deviceReference(problem1d(2, 41), new Float32Array(82).fill(1), {
    device: reference,
  });
  assert.deepEqual([...result], [20, 21, 20, 21]);
});

// Seeded configurations of `deno task verify` (ties, one-scale bilinear, random; all dtypes),
// gradients in ±[0.5, 1] so that a displaced term cannot hide in the bound. The reference follows
// the SoC the NPU reports (A2/A3, or Ascend 950: there V1 runs V2's kernels with the scales, and
// takes bfloat16, so no V1 case is left out).
async function checkCases(
  libDir: string,
  count: number,
): Promise<{ failed: string[]; checked: number }> {
  using npu = Device.open({ backend: "npu", libDir });
  const target = deviceTarget(npu);
  const bilinearApi = bilinearApiOf(npu);
  const failed: string[] = [];
  let checked = 0;
  for (const c of makeCases(count, 5, ["float32", "float16", "bfloat16"])) {
    if (
      targetGeneration(target) === "a2" && bilinearApi === "v1" && c.op === "bilinear2d" &&
      (c.dtype === "bfloat16" || c.scales.some((s) => s > 0))
    ) continue;
    const shape = [c.inputSize[0], c.inputSize[1], ...c.outputSize];
    const length = shape.reduce((a, b) => a * b, 1);
    const values = roundTo(
      c.dtype,
      Float32Array.from({ length }, (_, k) => ((k * 7919) % 1000 / 2000 + 0.5) * (k % 3 ? 1 : -1)),
    );
    using grad = npu.tensor(values, shape, { dtype: c.dtype });
    using result = runParams(grad, c);
    const { expected, bound } = await referenceFor(c, values, bilinearApi, target);
    const report = compareWithDevice(c, values, await result.toFloat32Array(), expected, bound);
    checked++;
    if (!report.ok) failed.push(`${describeCase(c)}: ${report.failures} of ${report.elements}`);
  }
  return { failed, checked };
}

EMULATED_LANE.test("compare: seeded verify cases on the emulated NPU match the device reference (V2, V1)", async () => {
  for (const libDir of [EMU_DIR, EMU_NO_V2_DIR]) {
    const { failed, checked } = await checkCases(libDir, 60);
    assert.ok(checked >= 30, `${checked} cases checked`);
    assert.deepEqual(failed, [], libDir);
  }
});

EMULATED_LANE.test(
  a2OnlyTest(
    "compare: an emulator that maps nearest-exact like PyTorch fails at the ties",
    "the torch-map variant changes the A2/A3 nearest-exact kernel only (native/src/opapi/" +
      "nearest_exact.c); as an Ascend 950 it runs nearest_exact_950.c, which it leaves alone",
  ),
  async () => {
    const { failed } = await checkCases(EMU_TORCH_MAP_DIR, 60);
    assert.ok(failed.length > 0);
    assert.ok(failed.every((line) => /\(tie\)|nearestExact/.test(line)), failed.join("\n"));
    assert.ok(failed.some((line) => /\(tie\)/.test(line)), failed.join("\n"));
  },
);
