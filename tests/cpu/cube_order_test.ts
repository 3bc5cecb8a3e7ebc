// Device.open's cubeOrder: the CPU device reference of an A2/A3 SoC reads the order inside the Cube
// matmuls as PyTorch's (default) or as the source's two passes in ascending order (cube_a2.ts), for
// the backward Cube kernels UpsampleNearestExact2dGrad and UpsampleBilinear2dGrad; the forward Cube
// kernel has one reading either way; TBE calls do not depend on it; bad values and other families
// are errors naming the option.

import assert from "node:assert/strict";
import { Device, runParams, upsampleBilinear2d } from "../../mod.ts";
import { cubeTaps, cubeTwoPass } from "../../src/cpu/ascend/backward/cube_a2.ts";
import { referenceExactness } from "../../src/rules/exactness.ts";
import { deviceInternals } from "../../src/device.ts";
import type { AscendTarget } from "../../src/rules/numerics.ts";

type Call = Parameters<typeof runParams>[1];

// Full-mantissa float32 values in (-1, 1), so the order of the additions shows in the bits.
function values(count: number, seed: number): Float32Array {
  let state = seed >>> 0;
  return Float32Array.from({ length: count }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return Math.fround(state / 2 ** 31 - 1);
  });
}

async function run(device: Device, call: Call, grad: Float32Array): Promise<Float32Array> {
  const { inputSize, outputSize } = call;
  using g = device.tensor(grad, [inputSize[0], inputSize[1], ...outputSize]);
  using result = runParams(g, call);
  return await result.toFloat32Array();
}

function bits(values: Float32Array): number[] {
  return [...new Uint32Array(values.buffer, values.byteOffset, values.length)];
}

const open = (cubeOrder?: "pytorch" | "ascending", soc?: string): Device =>
  Device.open({
    backend: "cpu",
    numerics: "device",
    threads: 1,
    ...(cubeOrder === undefined ? {} : { cubeOrder }),
    ...(soc === undefined ? {} : { soc }),
  });

Deno.test("cubeOrder: the target carries it, and the verdict of a Cube call follows it", () => {
  const call = {
    op: "nearestExact2d",
    dtype: "float32",
    inputSize: [1, 2, 5, 7],
    outputSize: [11, 16],
    scales: [0, 0],
    alignCorners: false,
    deterministic: false,
  } as const;
  for (const cubeOrder of [undefined, "pytorch", "ascending"] as const) {
    using device = open(cubeOrder, "Ascend910B3");
    const target = (deviceInternals(device).backend() as unknown as { ascend: AscendTarget })
      .ascend;
    assert.equal(target.cubeOrder ?? "pytorch", cubeOrder ?? "pytorch");
    assert.equal(target.soc, "Ascend910B3");
    const verdict = referenceExactness(call, target);
    assert.equal(verdict.kernel, "UpsampleNearestExact2dGrad");
    assert.equal(verdict.exactness, cubeOrder === "ascending" ? "exact" : "bounded");
    const forward = referenceExactness(
      { ...call, op: "bilinear2d", direction: "forward", scales: [2.2, 2.3] },
      target,
    );
    assert.equal(forward.exactness, cubeOrder === "ascending" ? "exact" : "bounded");
  }
});

Deno.test("cubeOrder: 'ascending' gives the two passes' bits, 'pytorch' PyTorch's order; both within reach of each other", async () => {
  using pytorch = open("pytorch");
  using ascending = open("ascending");
  using byDefault = open();
  const calls: Call[] = [
    {
      op: "nearestExact2d",
      inputSize: [2, 3, 5, 7],
      outputSize: [11, 16],
      scales: [0, 0],
      alignCorners: false,
    },
    {
      op: "bilinear2d", // both scales given and fitting: V2's own kernel UpsampleBilinear2dGrad
      inputSize: [1, 2, 6, 5],
      outputSize: [15, 12],
      scales: [2.5, 2.5],
      alignCorners: false,
    },
  ];
  for (const [k, call] of calls.entries()) {
    const [n, c, inH, inW] = call.inputSize, [outH, outW] = call.outputSize;
    const grad = values(n * c * outH * outW, 40 + k);
    const a = await run(ascending, call, grad);
    const p = await run(pytorch, call, grad);
    assert.deepEqual(bits(await run(byDefault, call, grad)), bits(p), "default: pytorch");
    // The reading itself, computed here from the taps.
    const th = cubeTaps(call.op, inH, outH, call.alignCorners, call.scales[0]);
    const tw = cubeTaps(call.op, inW, outW, call.alignCorners, call.scales[1]);
    const expected = cubeTwoPass(grad, n * c, inH, inW, outH, outW, th, tw);
    assert.deepEqual(bits(a), bits(expected), `${call.op}: the two passes`);
    const differing = bits(a).filter((x, i) => x !== bits(p)[i]).length;
    assert.ok(differing > 0, `${call.op}: the readings differ somewhere`);
    for (let i = 0; i < a.length; i++) {
      assert.ok(Math.abs(a[i] - p[i]) <= 1e-5 * (1 + Math.abs(p[i])), `${call.op} [${i}]`);
    }
  }
  // A TBE call (one scale: V2 falls back to ResizeBilinearV2Grad) does not depend on it.
  const tbe: Call = {
    op: "bilinear2d",
    inputSize: [1, 2, 6, 5],
    outputSize: [15, 12],
    scales: [2.5, 0],
    alignCorners: false,
  };
  const grad = values(2 * 15 * 12, 50);
  assert.deepEqual(bits(await run(ascending, tbe, grad)), bits(await run(pytorch, tbe, grad)));
  // The forward Cube kernel: one reading, the same bits under both.
  const x = values(2 * 4 * 6, 51);
  const forward = async (device: Device): Promise<number[]> => {
    using input = device.tensor(x, [1, 2, 4, 6]);
    using y = upsampleBilinear2d(input, { outputSize: [10, 15], scalesH: 2.5, scalesW: 2.5 });
    return bits(await y.toFloat32Array());
  };
  assert.deepEqual(await forward(ascending), await forward(pytorch));
});

Deno.test("cubeOrder: bad values, other backends and other families are errors naming the option", () => {
  assert.throws(
    () =>
      Device.open({
        backend: "cpu",
        numerics: "device",
        cubeOrder: "descending" as unknown as "ascending",
      }),
    (e: unknown) =>
      e instanceof TypeError &&
      /cubeOrder must be "pytorch" or "ascending", got descending/.test(e.message),
  );
  assert.throws(
    () => Device.open({ backend: "cpu", cubeOrder: "ascending" }),
    (e: unknown) =>
      e instanceof TypeError &&
      /cubeOrder "ascending" chooses the kernels the CPU device reference reproduces, so it needs backend "cpu" and numerics "device"/
        .test(e.message),
  );
  assert.throws(
    () => Device.open({ backend: "npu", numerics: "device", cubeOrder: "ascending" }),
    /needs backend "cpu"/,
  );
  for (const soc of ["Ascend910A", "Ascend310P3", "Ascend950PR_9599"]) {
    assert.throws(
      () => open("ascending", soc),
      (e: unknown) =>
        e instanceof TypeError &&
        new RegExp(
          `cubeOrder "ascending" applies to the Cube-matmul kernels of Atlas A2/A3 only, got soc "${soc}"`,
        ).test(e.message),
    );
  }
  open("pytorch", "Ascend910_9392").close();
});
