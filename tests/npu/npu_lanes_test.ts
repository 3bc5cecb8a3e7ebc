// The NPU checks that hold on any NPU, run on every NPU lane (the emulation and the CANN the library's
// search finds): views and strided results equal the contiguous run on the same device, deterministic
// mode repeats bits, reads await the stream, and random configurations match the device model
// (tests/support/device_model.ts, or ascend950_model.ts on an Ascend 950) and the device reference
// (tests/support/device_match.ts) of the generation the NPU reports; never PyTorch's bits: the device
// differs in tie cases.

import assert from "node:assert/strict";
import {
  type DType,
  runParams,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { assertMatchesDevice, deviceTarget } from "../support/device_match.ts";
import { assertMatchesDeviceOp } from "../support/device_model.ts";
import { assertBitEqual, BACKENDS, makeView, rng, roundTo } from "../support/helpers.ts";

const NPU_LANES = BACKENDS.filter((lane) => lane.kind === "npu");
const DTYPES: readonly DType[] = ["float32", "float16", "bfloat16"];

interface Config {
  op: "nearestExact1d" | "nearestExact2d" | "bilinear2d";
  inputSize: number[];
  outputSize: number[];
  scales: number[];
  alignCorners: boolean;
}

function run(config: Config, grad: Tensor, out?: Tensor, deterministic?: boolean): Tensor {
  return runParams(grad, config, { out, deterministic });
}

function randomConfig(next: () => number): Config {
  const op = (["nearestExact1d", "nearestExact2d", "bilinear2d"] as const)[Math.floor(next() * 3)];
  const inputSize = [1 + Math.floor(next() * 2), 1 + Math.floor(next() * 3)];
  const outputSize: number[] = [];
  const scales: number[] = [];
  for (let d = 0; d < (op === "nearestExact1d" ? 1 : 2); d++) {
    const size = 1 + Math.floor(next() * 9);
    const scale = [0, 0, 0.5, 1.5, 1.7, 2, 3][Math.floor(next() * 7)];
    const out = scale > 0 ? Math.max(1, Math.floor(size * scale)) : 1 + Math.floor(next() * 15);
    inputSize.push(size);
    outputSize.push(out);
    scales.push(scale > 0 && Math.floor(size * scale) >= 1 ? scale : 0);
  }
  return { op, inputSize, outputSize, scales, alignCorners: next() < 0.5 };
}

const gradShapeOf = (c: Config): number[] => [c.inputSize[0], c.inputSize[1], ...c.outputSize];
const valuesFor = (c: Config, next: () => number): Float32Array =>
  Float32Array.from(
    { length: gradShapeOf(c).reduce((a, b) => a * b, 1) },
    () => Math.round((next() - 0.5) * 64) / 16,
  );

for (const lane of NPU_LANES) {
  lane.test(`npu checks on ${lane.label}: views and strided out equal the contiguous run`, async () => {
    using device = lane.open();
    const next = rng(77);
    for (let k = 0; k < 12; k++) {
      const config = randomConfig(next);
      const shape = gradShapeOf(config);
      const values = valuesFor(config, next);
      for (const dtype of DTYPES) {
        using grad = device.tensor(values, shape, { dtype });
        using want = run(config, grad);
        const expected = await want.toFloat32Array();
        for (const layout of ["channelsLast", "transposed", "offset"] as const) {
          using view = makeView(device, values, shape, dtype, layout);
          using base = device.zeros(
            [...config.inputSize.slice(0, -1), config.inputSize.at(-1)! + 2],
            { dtype },
          );
          using out = base.slice(-1, 1, 1 + config.inputSize.at(-1)!);
          run(config, view, out);
          assertBitEqual(
            await out.toFloat32Array(),
            expected,
            `${dtype} ${layout} ${JSON.stringify(config)}`,
          );
        }
      }
    }
  });

  lane.test(`npu checks on ${lane.label}: deterministic mode repeats bits; reads await the stream`, async () => {
    using device = lane.open();
    device.setDeterministic(true);
    const config: Config = {
      op: "bilinear2d",
      inputSize: [4, 16, 32, 32],
      outputSize: [77, 45],
      scales: [0, 0],
      alignCorners: false,
    };
    using grad = device.tensor(valuesFor(config, rng(5)), gradShapeOf(config));
    const results = Array.from({ length: 4 }, () => run(config, grad));
    // Read the last first: each read waits for its own launch, queued behind the others.
    const last = await results[3].toFloat32Array();
    for (const r of results.slice(0, 3)) assertBitEqual(await r.toFloat32Array(), last, "repeat");
    for (const r of results) r.dispose();
    assert.equal(device.deterministic, true);
  });

  lane.test(`npu checks on ${lane.label}: random configurations match the device model and reference`, async () => {
    using device = lane.open();
    const target = deviceTarget(device);
    const next = rng(2025);
    for (let k = 0; k < 60; k++) {
      const config = randomConfig(next);
      const values = valuesFor(config, next);
      for (const dtype of DTYPES) {
        using grad = device.tensor(values, gradShapeOf(config), { dtype });
        using actual = run(config, grad);
        const fn = config.op === "nearestExact1d"
          ? upsampleNearestExact1dBackward
          : config.op === "nearestExact2d"
          ? upsampleNearestExact2dBackward
          : upsampleBilinear2dBackward;
        const [scalesH, scalesW] = config.scales;
        await assertMatchesDeviceOp(
          await actual.toFloat32Array(),
          fn,
          roundTo(dtype, values),
          dtype,
          { ...config, scales: scalesH, scalesH, scalesW },
          `${dtype} ${JSON.stringify(config)}`,
          2,
          target,
        );
        // And the library's own device reference (cli/verify/compare.ts), as `deno task verify` uses it.
        await assertMatchesDevice(actual, grad, config, {
          label: `${dtype} ${JSON.stringify(config)}`,
        });
      }
    }
  });
}
