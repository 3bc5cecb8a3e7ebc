// Properties through the public API on both backends: on the CPU the backward is the adjoint of
// PyTorch's forward (<forward(x), g> == <x, backward(g)>); the emulated NPU is not (the device maps
// ties differently and routes some scales elsewhere), so there it gives what the device model says.
// Repeated runs are bitwise equal, and non-contiguous views give the results of their contiguous copies.

import assert from "node:assert/strict";
import {
  type Device,
  runParams,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { linearIndexTable, nearestExactIndexTable } from "../../src/cpu/pytorch/backward/mod.ts";
import { assertMatchesDeviceOp } from "../support/device_model.ts";
import { assertBitEqual, BACKENDS, makeView, rng } from "../support/helpers.ts";

interface Config {
  op: "nearestExact1d" | "nearestExact2d" | "bilinear2d";
  inputSize: number[];
  outputSize: number[];
  scales: number[];
  alignCorners: boolean;
}

function randomConfig(next: () => number): Config {
  const op = (["nearestExact1d", "nearestExact2d", "bilinear2d"] as const)[Math.floor(next() * 3)];
  const spatial = op === "nearestExact1d" ? 1 : 2;
  const inputSize = [1 + Math.floor(next() * 2), 1 + Math.floor(next() * 3)];
  const outputSize: number[] = [];
  const scales: number[] = [];
  for (let d = 0; d < spatial; d++) {
    const size = 1 + Math.floor(next() * 12);
    const scale = [0, 0, 0.5, 1.3, 1.7, 2, 3][Math.floor(next() * 7)];
    const out = scale > 0 ? Math.floor(size * scale) : 1 + Math.floor(next() * 20);
    inputSize.push(size);
    outputSize.push(Math.max(out, 1));
    scales.push(out >= 1 ? scale : 0);
  }
  return { op, inputSize, outputSize, scales, alignCorners: next() < 0.5 };
}

// Forward op of the config, from the same index tables, in float64: out = A x.
function forward(config: Config, x: Float64Array): Float64Array {
  const [n, c, ...inS] = config.inputSize;
  const inH = inS.length === 2 ? inS[0] : 1;
  const inW = inS[inS.length - 1];
  const outH = config.outputSize.length === 2 ? config.outputSize[0] : 1;
  const outW = config.outputSize[config.outputSize.length - 1];
  const sH = config.scales.length === 2 ? config.scales[0] : 0;
  const sW = config.scales[config.scales.length - 1];
  const y = new Float64Array(n * c * outH * outW);
  const rows: Array<Array<[number, number]>> = [];
  const cols: Array<Array<[number, number]>> = [];
  const taps = (
    inSize: number,
    outSize: number,
    scale: number,
    list: Array<Array<[number, number]>>,
  ) => {
    if (config.op === "bilinear2d") {
      const t = linearIndexTable(inSize, outSize, config.alignCorners, scale);
      for (let o = 0; o < outSize; o++) list.push([[t.i0[o], t.l0[o]], [t.i1[o], t.l1[o]]]);
    } else {
      const t = nearestExactIndexTable(inSize, outSize, scale);
      for (let o = 0; o < outSize; o++) list.push([[t[o], 1]]);
    }
  };
  if (config.outputSize.length === 2) taps(inH, outH, sH, rows);
  else rows.push([[0, 1]]);
  taps(inW, outW, sW, cols);
  for (let p = 0; p < n * c; p++) {
    for (let oh = 0; oh < outH; oh++) {
      for (let ow = 0; ow < outW; ow++) {
        let sum = 0;
        for (const [ih, lh] of rows[oh]) {
          for (const [iw, lw] of cols[ow]) sum += lh * lw * x[(p * inH + ih) * inW + iw];
        }
        y[(p * outH + oh) * outW + ow] = sum;
      }
    }
  }
  return y;
}

function backward(config: Config, grad: Tensor, out?: Tensor): Tensor {
  return runParams(grad, config, { out });
}

const dot = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};

for (const backend of BACKENDS) {
  backend.test(`properties on ${backend.label}: adjoint identity, determinism, views`, async () => {
    using device: Device = backend.open();
    const next = rng(2024);
    let checked = 0;
    for (let k = 0; k < 150; k++) {
      const config = randomConfig(next);
      const gradShape = [config.inputSize[0], config.inputSize[1], ...config.outputSize];
      const gLength = gradShape.reduce((a, b) => a * b, 1);
      const xLength = config.inputSize.reduce((a, b) => a * b, 1);
      // Small integers /8: exact in float32, so float32 sums are exact for nearest-exact.
      const g = Float32Array.from({ length: gLength }, () => Math.floor(next() * 17 - 8) / 8);
      const x = Float64Array.from({ length: xLength }, () => Math.floor(next() * 17 - 8) / 8);
      using grad = device.tensor(g, gradShape);
      using gi = backward(config, grad);
      const result = await gi.toFloat32Array();
      if (backend.kind === "npu") {
        const fn = config.op === "nearestExact1d"
          ? upsampleNearestExact1dBackward
          : config.op === "nearestExact2d"
          ? upsampleNearestExact2dBackward
          : upsampleBilinear2dBackward;
        const [scalesH, scalesW] = config.scales;
        const options = { ...config, scales: scalesH, scalesH, scalesW };
        await assertMatchesDeviceOp(
          result,
          fn,
          g,
          "float32",
          options,
          `device ${JSON.stringify(config)}`,
        );
      } else {
        const lhs = dot(forward(config, x), g);
        const rhs = dot(x, result);
        const scale = Math.max(1, dot(g.map(Math.abs), g.map(Math.abs)));
        assert.ok(
          Math.abs(lhs - rhs) <= 1e-5 * scale,
          `adjoint ${JSON.stringify(config)}: <Ax, g> = ${lhs}, <x, A^T g> = ${rhs}`,
        );
      }
      using again = backward(config, grad);
      assertBitEqual(await again.toFloat32Array(), result, `repeat ${JSON.stringify(config)}`);
      for (const layout of ["channelsLast", "transposed", "offset"] as const) {
        using view = makeView(device, g, gradShape, "float32", layout);
        using outBase = device.zeros([
          ...config.inputSize.slice(0, -1),
          config.inputSize.at(-1)! + 3,
        ]);
        using out = outBase.slice(-1, 2, 2 + config.inputSize.at(-1)!);
        backward(config, view, out);
        assertBitEqual(await out.toFloat32Array(), result, `${layout} ${JSON.stringify(config)}`);
      }
      checked++;
    }
    assert.equal(checked, 150);
  });
}

for (const backend of BACKENDS) {
  backend.test(`signed zeros on ${backend.label}: sums start from +0 as PyTorch's scatter does`, async () => {
    using device = backend.open();
    for (const dtype of ["float32", "float16", "bfloat16"] as const) {
      for (
        const config of [
          {
            op: "nearestExact1d",
            inputSize: [1, 2, 3],
            outputSize: [6],
            scales: [0],
            alignCorners: false,
          },
          {
            op: "nearestExact2d",
            inputSize: [1, 2, 3, 3],
            outputSize: [6, 6],
            scales: [2, 2],
            alignCorners: false,
          },
          {
            op: "nearestExact2d",
            inputSize: [1, 2, 2, 3],
            outputSize: [2, 3],
            scales: [0, 0],
            alignCorners: false,
          },
          {
            op: "bilinear2d",
            inputSize: [1, 2, 3, 3],
            outputSize: [6, 6],
            scales: [0, 0],
            alignCorners: false,
          },
        ] as Config[]
      ) {
        const gradShape = [config.inputSize[0], config.inputSize[1], ...config.outputSize];
        using grad = device.tensor(
          new Array(gradShape.reduce((a, b) => a * b)).fill(-0),
          gradShape,
          {
            dtype,
          },
        );
        using result = backward(config, grad);
        for (const v of await result.toFloat32Array()) {
          assert.ok(Object.is(v, 0), `${config.op} ${dtype} [${config.outputSize}]: got ${v}`);
        }
      }
    }
  });
}
