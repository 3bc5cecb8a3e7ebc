// Every validation rule: its error class, a message naming the argument, value and rule, thrown before
// anything is allocated (checked with the emulation's counters on the NPU backend).

import assert from "node:assert/strict";
import {
  Device,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { BACKENDS, emuLive, RUNNING_BACKENDS } from "../support/helpers.ts";

type Op = typeof upsampleNearestExact2dBackward;
interface Case {
  name: string;
  op: Op;
  grad: (device: Device) => unknown;
  options: (device: Device) => unknown;
  error: typeof TypeError;
  message: RegExp;
}

const g2 = (device: Device, shape = [2, 3, 8, 8]): unknown => device.zeros(shape);
const opt2 = { outputSize: [8, 8], inputSize: [2, 3, 4, 4] };
const n2 = upsampleNearestExact2dBackward;
const b2 = upsampleBilinear2dBackward as Op;
const n1 = upsampleNearestExact1dBackward as unknown as Op;

const CASES: Case[] = [
  {
    name: "gradOutput not a tensor",
    op: n2,
    grad: () => [1, 2],
    options: () => opt2,
    error: TypeError,
    message: /gradOutput must be a Tensor/,
  },
  {
    name: "options missing",
    op: n2,
    grad: g2,
    options: () => undefined,
    error: TypeError,
    message: /options must be an object/,
  },
  {
    name: "unknown option",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, scaleH: 2 }),
    error: TypeError,
    message: /unknown option "scaleH"/,
  },
  {
    name: "scales on a 2d op",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, scales: 2 }),
    error: TypeError,
    message: /unknown option "scales"/,
  },
  {
    name: "alignCorners on nearest",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, alignCorners: true }),
    error: TypeError,
    message: /unknown option "alignCorners"/,
  },
  {
    name: "outputSize not an array",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, outputSize: 8 }),
    error: TypeError,
    message: /outputSize must be an array of 2 integers, got 8/,
  },
  {
    name: "outputSize length",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, outputSize: [8] }),
    error: TypeError,
    message: /expected outputSize equals to 2, but got size 1/,
  },
  {
    name: "inputSize length",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, inputSize: [3, 4, 4] }),
    error: TypeError,
    message: /expected inputSize equals to 4, but got size 3/,
  },
  {
    name: "1d outputSize length",
    op: n1,
    grad: (d) => d.zeros([1, 1, 4]),
    options: () => ({ outputSize: [4, 4], inputSize: [1, 1, 2] }),
    error: TypeError,
    message: /expected outputSize equals to 1, but got size 2/,
  },
  {
    name: "size not a number",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, outputSize: ["8", 8] }),
    error: TypeError,
    message: /outputSize must hold integers/,
  },
  {
    name: "fractional size",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, outputSize: [8.5, 8] }),
    error: RangeError,
    message: /outputSize values must be integers >= 0/,
  },
  {
    name: "NaN size",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, inputSize: [2, 3, NaN, 4] }),
    error: RangeError,
    message: /inputSize values must be integers/,
  },
  {
    name: "negative size",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, inputSize: [2, -3, 4, 4] }),
    error: RangeError,
    message: /inputSize values must be integers >= 0/,
  },
  {
    name: "zero spatial size",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, outputSize: [0, 8] }),
    error: RangeError,
    message: /sizes should be greater than 0, but got input \(H: 4, W: 4\) output \(H: 0, W: 8\)/,
  },
  {
    name: "huge sizes",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, inputSize: [2 ** 20, 2 ** 20, 2 ** 20, 4] }),
    error: RangeError,
    message: /more than 2\^53 - 1/,
  },
  {
    name: "gradOutput rank",
    op: n2,
    grad: (d) => d.zeros([3, 8, 8]),
    options: () => opt2,
    error: TypeError,
    message: /gradOutput must be 4-D \[N, C, H, W\], got shape \[3, 8, 8\]/,
  },
  {
    name: "gradOutput shape",
    op: n2,
    grad: (d) => d.zeros([2, 3, 8, 9]),
    options: () => opt2,
    error: RangeError,
    message: /output.size\(3\) = 8 but got gradOutput.size\(3\) = 9/,
  },
  {
    name: "gradOutput N vs inputSize",
    op: n2,
    grad: (d) => d.zeros([1, 3, 8, 8]),
    options: () => opt2,
    error: RangeError,
    message: /output.size\(0\) = 2 but got gradOutput.size\(0\) = 1/,
  },
  {
    name: "scale not a number",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, scalesH: "2" }),
    error: TypeError,
    message: /scalesH must be a number, got "2"/,
  },
  {
    name: "negative scale",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, scalesW: -2 }),
    error: RangeError,
    message: /scalesW must be a finite number >= 0 .*got -2/,
  },
  {
    name: "NaN scale",
    op: b2,
    grad: g2,
    options: () => ({ ...opt2, scalesH: NaN }),
    error: RangeError,
    message: /scalesH must be a finite number >= 0 .*got NaN/,
  },
  {
    name: "infinite scale",
    op: n1,
    grad: (d) => d.zeros([1, 1, 4]),
    options: () => ({ outputSize: [4], inputSize: [1, 1, 2], scales: Infinity }),
    error: RangeError,
    message: /scales must be a finite number >= 0 .*got Infinity/,
  },
  {
    name: "scale inconsistent with sizes",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, scalesH: 1.7 }),
    error: RangeError,
    message:
      /scalesH 1.7 does not match the sizes: outputSize H \(8\) must equal floor\(inputSize H \(4\) \* scalesH\) = 6/,
  },
  {
    name: "nearest upscale over 50x (sizes)",
    op: n1,
    grad: (d) => d.zeros([1, 1, 101]),
    options: () => ({ outputSize: [101], inputSize: [1, 1, 2] }),
    error: RangeError,
    message:
      /enlarges L at most 50x \(aclnn: 1 \/ scale >= 0.02\), got inputSize L 2 -> outputSize L 101/,
  },
  {
    name: "nearest upscale over 50x (scale)",
    op: n2,
    grad: (d) => d.zeros([1, 1, 51, 2]),
    options: () => ({ outputSize: [51, 2], inputSize: [1, 1, 1, 2], scalesH: 51 }),
    error: RangeError,
    message: /enlarges H at most 50x.*with scalesH 51/,
  },
  {
    name: "nearest 50x shrink is allowed: 1000 -> 20 with scale 0.02 goes through",
    op: n1,
    grad: (d) => d.zeros([1, 1, 20]),
    options: () => ({ outputSize: [20], inputSize: [1, 1, 1000], scales: 0.02, deterministic: 1 }),
    error: TypeError,
    message: /deterministic must be a boolean/,
  },
  {
    name: "alignCorners not boolean",
    op: b2,
    grad: g2,
    options: () => ({ ...opt2, alignCorners: 1 }),
    error: TypeError,
    message: /alignCorners must be a boolean, got 1/,
  },
  {
    name: "deterministic not boolean",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, deterministic: "yes" }),
    error: TypeError,
    message: /deterministic must be a boolean, got "yes"/,
  },
  {
    name: "out not a tensor",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, out: new Float32Array(96) }),
    error: TypeError,
    message: /out must be a Tensor/,
  },
  {
    name: "out dtype",
    op: n2,
    grad: g2,
    options: (d) => ({ ...opt2, out: d.zeros([2, 3, 4, 4], { dtype: "float16" }) }),
    error: TypeError,
    message: /out dtype float16 must equal gradOutput dtype float32/,
  },
  {
    name: "out shape",
    op: n2,
    grad: g2,
    options: (d) => ({ ...opt2, out: d.zeros([2, 3, 4, 5]) }),
    error: RangeError,
    message: /out shape \[2, 3, 4, 5\] must equal inputSize \[2, 3, 4, 4\]/,
  },
  {
    name: "out from another device",
    op: n2,
    grad: g2,
    options: () => ({ ...opt2, out: Device.open({ backend: "cpu" }).zeros([2, 3, 4, 4]) }),
    error: TypeError,
    message: /out is on another device/,
  },
];

for (const backend of BACKENDS) {
  backend.test(`validation on ${backend.label}: every rule, before any allocation`, async (t) => {
    using device = backend.open();
    for (const c of CASES) {
      await t.step(c.name, () => {
        const grad = c.grad(device);
        const options = c.options(device);
        const before = !backend.emulated ? null : emuLive();
        assert.throws(() => c.op(grad as never, options as never), (error: Error) => {
          assert.equal(error.constructor, c.error, `${c.name}: ${error}`);
          assert.match(error.message, c.message);
          assert.match(error.message, /^upsample\w+Backward: /);
          return true;
        });
        if (before) assert.deepEqual(emuLive(), before, `${c.name}: something was allocated`);
      });
    }
  });

  backend.test(`validation on ${backend.label}: disposed tensors and overlap`, () => {
    using device = backend.open();
    const grad = device.zeros([1, 1, 4, 4]);
    grad.dispose();
    const options = { outputSize: [4, 4], inputSize: [1, 1, 2, 2] };
    assert.throws(
      () => n2(grad, options),
      /gradOutput \(float32 tensor \[1, 1, 4, 4\].*\) was disposed/,
    );
    using live = device.zeros([1, 1, 4, 4]);
    const out = device.zeros([1, 1, 2, 2]);
    out.dispose();
    assert.throws(() => n2(live, { ...options, out }), TypeError);
    // out aliasing gradOutput's storage.
    using big = device.zeros([1, 1, 8, 4]);
    const gradView = big.slice(2, 0, 4);
    const outView = big.slice(2, 3, 5).slice(3, 0, 2);
    assert.throws(() => n2(gradView, { ...options, out: outView }), /out must not share memory/);
    // Disjoint slices of one storage are fine.
    using outOk = big.slice(2, 6, 8).slice(3, 0, 2);
    n2(gradView, { ...options, out: outOk });
    gradView.dispose();
    outView.dispose();
  });

  backend.test(`validation on ${backend.label}: closed device`, () => {
    const device = backend.open();
    const grad = device.zeros([1, 1, 4, 4]);
    device.close();
    assert.equal(grad.disposed, true);
    assert.throws(
      () => n2(grad, { outputSize: [4, 4], inputSize: [1, 1, 2, 2] }),
      /was disposed or its device closed/,
    );
    assert.throws(() => device.zeros([1]), /zeros: the device was closed/);
    device.close(); // idempotent
  });
}

Deno.test("N = 0 gives an empty result of shape inputSize", async () => {
  for (const backend of RUNNING_BACKENDS) {
    using device = backend.open();
    using grad = device.zeros([0, 3, 8, 8]);
    using result = upsampleBilinear2dBackward(grad, {
      outputSize: [8, 8],
      inputSize: [0, 3, 4, 4],
    });
    assert.deepEqual(result.shape, [0, 3, 4, 4]);
    assert.equal((await result.toFloat32Array()).length, 0);
  }
});

Deno.test("cpu: a result too large for the host is refused before allocation, naming the op", () => {
  using device = Device.open({ backend: "cpu" });
  using grad = device.zeros([1, 1, 1]);
  assert.throws(
    () => upsampleNearestExact1dBackward(grad, { outputSize: [1], inputSize: [1, 1, 2 ** 33] }),
    /^RangeError: upsampleNearestExact1dBackward: the result: shape \[1, 1, 8589934592\] of float32 needs 34359738368 bytes \(32\.00 GiB\), more than one tensor can take on this device: 4294967296 bytes/,
  );
  // null means "not given", like undefined, for every optional option.
  using out = upsampleNearestExact1dBackward(grad, {
    outputSize: [1],
    inputSize: [1, 1, 1],
    out: null as never,
    scales: null as never,
  });
  assert.deepEqual(out.shape, [1, 1, 1]);
});
