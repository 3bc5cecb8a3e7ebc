// The CPU backend's `numerics: "device"` against the independent model of the Ascend kernels in
// tests/support/device_model.ts (plain loops written from the CANN source, no code shared with src/), on
// both CPU kernel sets; device vs PyTorch numerics differ in exactly
// the predicted cells at ties; the device's empty-tensor and skipped-pass rules; the option itself.

import assert from "node:assert/strict";
import {
  Device,
  type DType,
  runParams,
  type Tensor,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { deviceModel } from "../support/device_model.ts";
import { EMU_DIR, EMULATED_LANE, roundTo } from "../support/helpers.ts";
import { referenceNearestExactBackward } from "../support/reference.ts";

/** One call of the tests. */
interface ModelCall {
  op: "nearestExact1d" | "nearestExact2d" | "bilinear2d";
  dtype: DType;
  inputSize: number[];
  outputSize: number[];
  scales: number[];
  alignCorners: boolean;
}

/** The device model's result, rounded once to the dtype. */
function modelDevice(call: ModelCall, grad: Float32Array): Float32Array {
  const { op, inputSize, outputSize, scales, alignCorners } = call;
  const result = deviceModel(grad, {
    op,
    inputSize,
    outputSize,
    scales: scales[0],
    scalesH: scales[0],
    scalesW: scales[1],
    alignCorners,
  });
  return roundTo(call.dtype, result);
}

const KERNELS = [
  {
    label: "wasm",
    open: (numerics: "pytorch" | "device") => Device.open({ backend: "cpu", numerics, threads: 1 }),
  },
  {
    label: "typescript",
    open: (numerics: "pytorch" | "device") =>
      Device.open({ backend: "cpu", numerics, cpuKernels: "typescript" }),
  },
] as const;

function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function run(device: Device, call: ModelCall, values: Float32Array): Tensor {
  const { op, dtype, inputSize, outputSize, scales, alignCorners } = call;
  using grad = device.tensor(values, [inputSize[0], inputSize[1], ...outputSize], { dtype });
  return runParams(grad, { op, inputSize, outputSize, scales, alignCorners });
}

async function compute(
  device: Device,
  call: ModelCall,
  values: Float32Array,
): Promise<Float32Array> {
  using result = run(device, call, values);
  return await result.toFloat32Array();
}

// Gradients of small nonzero integers: every float32 sum is exact whatever the order, so nearest
// results must equal the model bit for bit, and any displaced term shows.
function integerGrad(random: () => number, length: number): Float32Array {
  return Float32Array.from(
    { length },
    () => (1 + Math.floor(random() * 8)) * (random() < 0.5 ? -1 : 1),
  );
}

function unitGrad(random: () => number, length: number): Float32Array {
  return Float32Array.from(
    { length },
    () => Math.fround((0.5 + random() / 2) * (random() < 0.5 ? -1 : 1)),
  );
}

const gradLength = (call: ModelCall): number =>
  call.inputSize[0] * call.inputSize[1] * call.outputSize.reduce((a, b) => a * b, 1);

// Nearest-exact dimensions [in, out, scale]: ties where the two rules part ways, and ordinary ones.
const TIES: Array<[number, number, number]> = [
  [2, 41, 0],
  [4, 82, 0],
  [27, 8, 0.3],
  [6, 37, 0],
  [14, 23, 0],
  [37, 11, 0.3],
];

// Not ties along one dimension, but large and with a fractional scale.
const LARGE: Array<[number, number, number]> = [[96, 134, 0], [64, 247, 3.86]];

function randomNearestDim(random: () => number): [number, number, number] {
  if (random() < 0.3) return TIES[Math.floor(random() * TIES.length)];
  if (random() < 0.1) return LARGE[Math.floor(random() * LARGE.length)];
  const input = 1 + Math.floor(random() * 40);
  if (random() < 0.5) {
    const scale = [0.3, 0.5, 0.6, 1.3, 1.7, 2, 2.5, 3, 3.86][Math.floor(random() * 9)];
    const output = Math.floor(input * scale);
    if (output >= 1) return [input, output, scale];
  }
  return [input, 1 + Math.floor(random() * Math.min(120, 50 * input)), 0];
}

function nearestCases(count: number, seed: number): ModelCall[] {
  const random = seeded(seed);
  const dtypes: DType[] = ["float32", "float16", "bfloat16"];
  return Array.from({ length: count }, (_, k): ModelCall => {
    const twoD = k % 2 === 1;
    const dims = twoD
      ? [randomNearestDim(random), randomNearestDim(random)]
      : [randomNearestDim(random)];
    return {
      op: twoD ? "nearestExact2d" : "nearestExact1d",
      dtype: dtypes[k % 3],
      inputSize: [
        1 + Math.floor(random() * 2),
        1 + Math.floor(random() * 3),
        ...dims.map((d) => d[0]),
      ],
      outputSize: dims.map((d) => d[1]),
      scales: dims.map((d) => d[2]),
      alignCorners: false,
    };
  });
}

for (const kernels of KERNELS) {
  Deno.test(`device numerics (${kernels.label}): nearest-exact equals the model bit for bit, ties included`, async () => {
    using device = kernels.open("device");
    assert.equal(device.numerics, "device");
    const random = seeded(7);
    for (const call of nearestCases(60, 11)) {
      const grad = integerGrad(random, gradLength(call));
      const actual = await compute(device, call, grad);
      assert.deepEqual(actual, modelDevice(call, grad), JSON.stringify(call));
    }
  });
}

function bilinearCases(count: number, seed: number): ModelCall[] {
  const random = seeded(seed);
  const int = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
  const scaled = (input: number): [number, number] => {
    const scale = [0.5, 0.6, 1.3, 1.7, 2, 2.5, 3][int(0, 6)];
    return [Math.max(1, Math.floor(input * scale)), scale];
  };
  const cases: ModelCall[] = [];
  for (let k = 0; k < count; k++) {
    const inH = int(1, 24), inW = int(1, 24);
    let outH = int(1, 60), outW = int(1, 60), sH = 0, sW = 0;
    const kind = k % 4;
    if (kind === 1) { // one scale: the device derives both from the sizes
      [outH, sH] = scaled(inH);
      if (outH !== Math.floor(inH * sH)) sH = 0;
    } else if (kind === 2) { // both scales: the V2 kernel uses them
      [outH, sH] = scaled(inH);
      [outW, sW] = scaled(inW);
      if (outH !== Math.floor(inH * sH)) sH = 0;
      if (outW !== Math.floor(inW * sW)) sW = 0;
    } else if (kind === 3) { // equal sizes with a scale that fits: not the identity
      outH = inH;
      outW = inW;
      sH = inH > 1 ? 1 + 0.5 / inH : 0;
      sW = inW > 1 ? 1 + 0.5 / inW : 0;
    }
    cases.push({
      op: "bilinear2d",
      dtype: (["float32", "float16", "bfloat16"] as const)[k % 3],
      inputSize: [int(1, 2), int(1, 3), inH, inW],
      outputSize: [outH, outW],
      scales: [sH, sW],
      alignCorners: kind === 0 && random() < 0.5,
    });
  }
  return cases;
}

for (const kernels of KERNELS) {
  Deno.test(`device numerics (${kernels.label}): bilinear routing and weights follow the model`, async () => {
    using device = kernels.open("device");
    const random = seeded(3);
    for (const call of bilinearCases(48, 5)) {
      const grad = roundTo(call.dtype, unitGrad(random, gradLength(call)));
      const actual = await compute(device, call, grad);
      const expected = modelDevice(call, grad);
      const [n, c] = call.inputSize;
      const plane = call.inputSize[2] * call.inputSize[3];
      const gPlane = call.outputSize[0] * call.outputSize[1];
      for (let k = 0; k < actual.length; k++) {
        const p = Math.floor(k / plane);
        let sum = 0;
        for (let j = 0; j < gPlane; j++) sum += Math.abs(grad[p * gPlane + j]);
        const ulp = call.dtype === "float32"
          ? 0
          : Math.abs(expected[k]) * (call.dtype === "float16" ? 2 ** -10 : 2 ** -7);
        const tolerance = 1e-6 * sum + ulp + 1e-30;
        assert.ok(
          Math.abs(actual[k] - expected[k]) <= tolerance,
          `${JSON.stringify(call)} element ${k} of ${n * c * plane}: ${actual[k]} vs model ${
            expected[k]
          }`,
        );
      }
    }
  });
}

Deno.test("device numerics: the tie cells differ from PyTorch numerics by exactly the moved gradients", async () => {
  const random = seeded(21);
  for (const kernels of KERNELS) {
    using device = kernels.open("device");
    using pytorch = kernels.open("pytorch");
    assert.equal(pytorch.numerics, "pytorch");
    for (const [input, output, scale] of TIES) {
      const call: ModelCall = {
        op: "nearestExact1d",
        dtype: "float32",
        inputSize: [2, 3, input],
        outputSize: [output],
        scales: [scale],
        alignCorners: false,
      };
      const grad = integerGrad(random, gradLength(call));
      const onDevice = await compute(device, call, grad);
      assert.deepEqual(onDevice, modelDevice(call, grad));
      const onPytorch = await compute(pytorch, call, grad);
      // Both models are independent of src/: the device's and PyTorch's (tests/support/reference.ts).
      const model = modelDevice(call, grad);
      const torch = referenceNearestExactBackward(grad, call.inputSize, call.outputSize, [scale]);
      const predicted = model.map((v, k) => v - torch[k]);
      const moved = predicted.filter((v) => v !== 0).length;
      assert.ok(moved > 0, `[${input}, ${output}, ${scale}] is a tie`);
      assert.deepEqual(onPytorch, torch);
      for (let k = 0; k < predicted.length; k++) {
        assert.equal(
          onDevice[k] - onPytorch[k],
          predicted[k],
          `[${input}, ${output}, ${scale}] cell ${k}`,
        );
      }
    }
  }
});

Deno.test("device numerics: a 1d call with N or C = 0 is rejected as the device does; 2d is empty", () => {
  for (
    const open of [
      () => Device.open({ backend: "npu", libDir: EMU_DIR }),
      () => Device.open({ backend: "cpu", numerics: "device" }),
    ]
  ) {
    using device = open();
    using grad = device.zeros([2, 0, 8]);
    assert.throws(
      () => upsampleNearestExact1dBackward(grad, { outputSize: [8], inputSize: [2, 0, 4] }),
      (e: unknown) =>
        e instanceof RangeError && /161002/.test(e.message) && /N or C = 0/.test(e.message),
    );
  }
  using device = Device.open({ backend: "cpu", numerics: "device" });
  using grad2 = device.zeros([2, 0, 8, 8]);
  using result = upsampleNearestExact2dBackward(grad2, {
    outputSize: [8, 8],
    inputSize: [2, 0, 4, 4],
  });
  assert.deepEqual(result.shape, [2, 0, 4, 4]);
  using pytorch = Device.open({ backend: "cpu" });
  using grad3 = pytorch.zeros([0, 3, 8]);
  using empty = upsampleNearestExact1dBackward(grad3, { outputSize: [8], inputSize: [0, 3, 4] });
  assert.deepEqual(empty.shape, [0, 3, 4]);
});

Deno.test("device numerics: a pass the device skips although its sizes differ is refused", () => {
  using device = Device.open({ backend: "cpu", numerics: "device" });
  using grad = device.zeros([1, 1, 9]);
  // floor(10 * 0.9999999) = 9, and fl32(0.9999999) is within 1e-6 of 1: the kernel skips the pass.
  assert.throws(
    () =>
      upsampleNearestExact1dBackward(grad, {
        outputSize: [9],
        inputSize: [1, 1, 10],
        scales: 0.9999999,
      }),
    (e: unknown) => e instanceof RangeError && /skips a pass/.test(e.message),
  );
});

EMULATED_LANE.test("Device.open numerics: validated, reported, and always device on an NPU", () => {
  assert.throws(
    () => Device.open({ backend: "cpu", numerics: "torch" as "pytorch" }),
    /numerics must be "pytorch" or "device", got torch/,
  );
  assert.throws(
    () => Device.open({ backend: "npu", libDir: EMU_DIR, numerics: "pytorch" }),
    (e: unknown) =>
      e instanceof TypeError &&
      /numerics "pytorch" is not available with backend "npu"/.test(e.message),
  );
  using cpu = Device.open({ backend: "cpu" });
  assert.equal(cpu.numerics, "pytorch");
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR, numerics: "device" });
  assert.equal(npu.numerics, "device");
  using npuDefault = Device.open({ backend: "npu", libDir: EMU_DIR });
  assert.equal(npuDefault.numerics, "device");
  // "auto" with a CANN present: PyTorch's numerics exist only on the CPU, the device's on the NPU.
  using autoPytorch = Device.open({ libDir: EMU_DIR, numerics: "pytorch" });
  assert.deepEqual([autoPytorch.backend, autoPytorch.numerics], ["cpu", "pytorch"]);
  using autoDevice = Device.open({ libDir: EMU_DIR, numerics: "device" });
  assert.deepEqual([autoDevice.backend, autoDevice.numerics], ["npu", "device"]);
});
