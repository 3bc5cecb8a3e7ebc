// The NPU backend's descriptor cache (src/ffi/descriptors.ts) on the emulated NPU: a view's aclTensor
// and its aclIntArray are created once and reused while its storage lives; a different view (offset,
// strides, shape) gets its own; disposing the storage or closing the device destroys them; a storage
// freed and another allocated (possibly at the same address) never reuses a stale descriptor; the
// views kept per storage are bounded; and a descriptor creation that fails at any point of a call is
// an AclError naming the API, leaving no new aclnn object behind and the device working.

import assert from "node:assert/strict";
import {
  AclError,
  Device,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import type { UpsampleCall } from "../../src/backend.ts";
import { deviceInternals } from "../../src/device.ts";
import { launchAclnn, type NpuBuffer } from "../../src/ffi/aclnn_call.ts";
import { MAX_VIEWS_PER_BUFFER } from "../../src/ffi/descriptors.ts";
import type { NpuBackend } from "../../src/ffi/npu_backend.ts";
import { tensorInternals } from "../../src/tensor/tensor.ts";
import { deviceReference } from "../../cli/verify/compare.ts";
import { assertBitEqual, emu, EMU_DIR, EMULATED_LANE, emuLive, rng } from "../support/helpers.ts";

const openNpu = (): Device => Device.open({ backend: "npu", libDir: EMU_DIR });
const npuOf = (device: Device): NpuBackend =>
  deviceInternals(device).backend() as unknown as NpuBackend;
const values = (n: number, seed: number): Float32Array => {
  const next = rng(seed);
  return Float32Array.from({ length: n }, () => Math.round((next() - 0.5) * 512) / 64);
};
const OPTIONS = { outputSize: [4, 4], inputSize: [1, 2, 2, 2] };
const GRAD_SHAPE = [1, 2, 4, 4];

/**
 * What the device computes for nearest-exact 2d (the device reference, `cli/verify/compare.ts`). The
 * gradients are multiples of 1/64 summed a few at a time, so every sum is exact and its bits do not
 * depend on the order.
 */
function onDevice(data: Float32Array, shape: number[], options = OPTIONS): Promise<Float32Array> {
  const problem = {
    op: "nearestExact2d",
    dtype: "float32",
    inputSize: options.inputSize,
    outputSize: shape.slice(2),
    scales: [0, 0],
    alignCorners: false,
  } as const;
  return deviceReference(problem, data);
}

EMULATED_LANE.test("descriptors: a view's aclTensor and int array are made once and reused", async () => {
  const baseline = emuLive();
  const device = openNpu();
  try {
    const cache = npuOf(device).descriptors;
    const data = values(32, 1);
    using grad = device.tensor(data, GRAD_SHAPE);
    using out = device.zeros(OPTIONS.inputSize);
    const before = emuLive().objects;
    upsampleNearestExact2dBackward(grad, { ...OPTIONS, out });
    // gradOutput: aclTensor + outputSize; out: aclTensor + inputSize; + the repeatable executor.
    assert.equal(emuLive().objects, before + 5n, "first call creates the four descriptors");
    assert.equal(cache.objects, 4);
    assert.equal(cache.executors, 1);
    for (let i = 0; i < 5; i++) upsampleNearestExact2dBackward(grad, { ...OPTIONS, out });
    assert.equal(emuLive().objects, before + 5n, "later calls create nothing");
    assertBitEqual(await out.toFloat32Array(), await onDevice(data, GRAD_SHAPE), "result");
    // The same view through another Tensor object (a full slice) is the same descriptor.
    using same = grad.slice(0, 0, 1);
    upsampleNearestExact2dBackward(same, { ...OPTIONS, out });
    assert.equal(emuLive().objects, before + 5n, "an identical view reuses the descriptor");
    // The result of a call without out: its descriptors (and the executor writing it) go with it.
    const result = upsampleNearestExact2dBackward(grad, OPTIONS);
    assert.equal(emuLive().objects, before + 8n, "the fresh result's tensor, sizes and executor");
    assertBitEqual(await result.toFloat32Array(), await onDevice(data, GRAD_SHAPE), "fresh result");
    result.dispose();
    assert.equal(emuLive().objects, before + 5n, "disposing the result destroyed its descriptors");
  } finally {
    device.close();
  }
  assert.deepEqual(emuLive(), baseline, "close destroyed every cached descriptor");
});

EMULATED_LANE.test("descriptors: other offsets, strides and shapes of one storage get their own", async () => {
  using device = openNpu();
  const cache = npuOf(device).descriptors;
  // Three [1, 2, 4, 4] gradients stacked in one storage, and a transposed copy of the first.
  const data = values(3 * 32, 2);
  using stack = device.tensor(data, [3, 2, 4, 4]);
  using out = device.zeros(OPTIONS.inputSize);
  for (let k = 0; k < 3; k++) {
    using grad = stack.slice(0, k, k + 1); // same shape and strides, offset 32 k
    upsampleNearestExact2dBackward(grad, { ...OPTIONS, out });
    const want = await onDevice(data.slice(32 * k, 32 * (k + 1)), GRAD_SHAPE);
    assertBitEqual(await out.toFloat32Array(), want, `offset ${32 * k}`);
  }
  assert.equal(cache.objects, 3 * 2 + 2, "three grad views (tensor + sizes each) and one out");
  using transposed = stack.slice(0, 0, 1).transpose(2, 3); // other strides
  upsampleNearestExact2dBackward(transposed, { ...OPTIONS, out });
  const first = data.slice(0, 32);
  const t = new Float32Array(32);
  for (let c = 0; c < 2; c++) {
    for (let h = 0; h < 4; h++) {
      for (let w = 0; w < 4; w++) t[c * 16 + h * 4 + w] = first[c * 16 + w * 4 + h];
    }
  }
  assertBitEqual(await out.toFloat32Array(), await onDevice(t, GRAD_SHAPE), "transposed view");
  const objects = cache.objects;
  // Bounded: at most MAX_VIEWS_PER_BUFFER views of the stack are kept, the oldest destroyed.
  assert.ok(
    objects <= 2 * MAX_VIEWS_PER_BUFFER + 2,
    `at most ${MAX_VIEWS_PER_BUFFER} views per storage (${objects} objects)`,
  );
  for (let k = 0; k < 3; k++) {
    using grad = stack.slice(0, k, k + 1);
    upsampleNearestExact2dBackward(grad, { ...OPTIONS, out });
    const want = await onDevice(data.slice(32 * k, 32 * (k + 1)), GRAD_SHAPE);
    assertBitEqual(await out.toFloat32Array(), want, `offset ${32 * k}, again`);
  }
});

EMULATED_LANE.test("descriptors: many views of one storage stay bounded and right", async () => {
  using device = openNpu();
  const cache = npuOf(device).descriptors;
  const views = 3 * MAX_VIEWS_PER_BUFFER;
  const data = values(views * 32, 3);
  using stack = device.tensor(data, [views, 2, 4, 4]);
  using out = device.zeros(OPTIONS.inputSize);
  for (let round = 0; round < 2; round++) {
    for (let k = 0; k < views; k++) {
      using grad = stack.slice(0, k, k + 1);
      upsampleNearestExact2dBackward(grad, { ...OPTIONS, out });
      const want = await onDevice(data.slice(32 * k, 32 * (k + 1)), GRAD_SHAPE);
      assertBitEqual(await out.toFloat32Array(), want, `round ${round}, view ${k}`);
      assert.ok(cache.objects <= 2 * MAX_VIEWS_PER_BUFFER + 2, `bounded (${cache.objects})`);
    }
  }
});

EMULATED_LANE.test("descriptors: a freed storage's descriptors are gone, its successor gets fresh ones", async () => {
  using device = openNpu();
  const cache = npuOf(device).descriptors;
  using out = device.zeros(OPTIONS.inputSize);
  await device.synchronize();
  const baseline = emuLive();
  const addresses = new Set<bigint>();
  for (let k = 0; k < 6; k++) {
    // Same shape each time: the emulator may hand out the same address again.
    const data = values(32, 10 + k);
    const grad = device.tensor(data, GRAD_SHAPE);
    addresses.add((tensorInternals(grad).storage.handle as NpuBuffer).address);
    upsampleNearestExact2dBackward(grad, { ...OPTIONS, out });
    assertBitEqual(await out.toFloat32Array(), await onDevice(data, GRAD_SHAPE), `storage ${k}`);
    grad.dispose();
    assert.equal(cache.buffers, 1, "only out's descriptors remain");
  }
  assert.equal(emuLive().objects, baseline.objects + 2n, "out's tensor and sizes only");
  // Views keep the storage (and its descriptors) alive until the last one goes.
  const grad = device.tensor(values(32, 20), GRAD_SHAPE);
  const view = grad.slice(0, 0, 1);
  grad.dispose();
  upsampleNearestExact2dBackward(view, { ...OPTIONS, out });
  assert.equal(cache.buffers, 2);
  view.dispose();
  assert.equal(cache.buffers, 1);
  assert.equal(emuLive().objects, baseline.objects + 2n);
  // Disposed while its launch is still queued: the descriptors go at once (the executor holds its own
  // copy), the memory after the launch ran, and the result is right.
  const data = values(32, 21);
  const queued = device.tensor(data, GRAD_SHAPE);
  try {
    emu().aclemuSetStreamDelayUs(2_000n);
    upsampleNearestExact2dBackward(queued, { ...OPTIONS, out });
    queued.dispose();
    assert.equal(cache.buffers, 1, "destroyed while the launch is queued");
    assertBitEqual(await out.toFloat32Array(), await onDevice(data, GRAD_SHAPE), "queued launch");
  } finally {
    emu().aclemuSetStreamDelayUs(0n);
  }
  await device.synchronize();
  assert.deepEqual(emuLive(), {
    allocations: baseline.allocations + 1n, // + the workspace nearest-exact 2d asked for
    objects: baseline.objects + 2n,
  });
  console.log(`  ${addresses.size} distinct addresses over 6 storages`);
});

EMULATED_LANE.test({
  name: "descriptors: a tensor dropped without dispose() takes its descriptors with it (gc)",
  ignore: typeof (globalThis as { gc?: () => void }).gc !== "function",
  fn: async () => {
    const gc = (globalThis as { gc?: () => void }).gc!;
    using device = openNpu();
    const cache = npuOf(device).descriptors;
    using out = device.zeros(OPTIONS.inputSize);
    await device.synchronize();
    const baseline = emuLive();
    (() => {
      // Never disposed: only the FinalizationRegistry can free it.
      const grad = device.tensor(values(32, 50), GRAD_SHAPE);
      upsampleNearestExact2dBackward(grad, { ...OPTIONS, out });
    })();
    assert.equal(cache.buffers, 2);
    await device.synchronize();
    for (let i = 0; i < 20 && cache.buffers > 1; i++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    assert.equal(cache.buffers, 1, "the dropped gradient's descriptors were destroyed");
    assert.equal(emuLive().objects, baseline.objects + 2n, "out's tensor and sizes only");
  },
});

// Makes the emulator's own aclCreateTensor/aclCreateIntArray refuse the n-th creation (a real NULL
// with the emulator's message), through the loaded symbol table the cache calls.
function failNthCreation(device: Device, n: number): { restore(): void; calls(): number } {
  const table = npuOf(device).runtime.libs.nnopbase as unknown as Record<
    string,
    (...args: unknown[]) => bigint
  >;
  const createTensor = table.aclCreateTensor;
  const createIntArray = table.aclCreateIntArray;
  let count = 0;
  table.aclCreateTensor = (...args) => {
    if (++count === n) args[1] = 99n; // more dimensions than any tensor may have
    return createTensor(...args);
  };
  table.aclCreateIntArray = (values, size) => {
    if (++count === n) return createIntArray(null, size); // NULL values with a size
    return createIntArray(values, size);
  };
  return {
    restore: () => {
      table.aclCreateTensor = createTensor;
      table.aclCreateIntArray = createIntArray;
    },
    calls: () => count,
  };
}

EMULATED_LANE.test("descriptors: a creation that fails at any point leaves nothing new behind", async () => {
  const ops = [
    { label: "nearest-exact 2d", run: upsampleNearestExact2dBackward },
    { label: "bilinear 2d", run: upsampleBilinear2dBackward },
  ];
  let cases = 0;
  for (const op of ops) {
    for (const warm of [false, true]) {
      // Creations of a cold call with out: grad tensor, out tensor, outputSize, inputSize.
      for (let n = 1; n <= 4; n++) {
        const what = `${op.label}, ${warm ? "grad cached" : "cold"}, creation ${n} fails`;
        using device = openNpu();
        const data = values(32, 30 + n);
        using grad = device.tensor(data, GRAD_SHAPE);
        using out = device.zeros(OPTIONS.inputSize);
        if (warm) {
          using other = device.zeros(OPTIONS.inputSize);
          op.run(grad, { ...OPTIONS, out: other });
          other.dispose();
        }
        await device.synchronize();
        const baseline = emuLive();
        const launches = emu().aclemuLaunchCount();
        const fault = failNthCreation(device, n);
        try {
          const creations = warm ? 2 : 4; // a warm grad needs only out's two
          if (n > creations) {
            op.run(grad, { ...OPTIONS, out }); // nothing left to fail
            assert.equal(fault.calls(), creations, `${what}: creations`);
            continue;
          }
          assert.throws(() => op.run(grad, { ...OPTIONS, out }), (error: unknown) => {
            assert.ok(error instanceof AclError, `${what}: ${error}`);
            assert.equal(error.code, 561000);
            assert.match(error.api, /^aclCreate(Tensor|IntArray)$/);
            assert.ok(error.detail.length > 0, `${what}: the emulator's message`);
            return true;
          });
        } finally {
          fault.restore();
        }
        assert.deepEqual(emuLive(), baseline, `${what}: nothing new left`);
        assert.equal(emu().aclemuLaunchCount(), launches, `${what}: nothing launched`);
        assert.equal(out.disposed, false);
        op.run(grad, { ...OPTIONS, out });
        const want = op.run === upsampleNearestExact2dBackward
          ? await onDevice(data, GRAD_SHAPE)
          : await (async () => {
            using cpu = Device.open({ backend: "cpu" });
            using g = cpu.tensor(data, GRAD_SHAPE);
            using r = upsampleBilinear2dBackward(g, OPTIONS);
            return await r.toFloat32Array();
          })();
        const got = await out.toFloat32Array();
        for (let i = 0; i < got.length; i++) {
          assert.ok(Math.abs(got[i] - want[i]) <= 1e-5 * Math.max(1, Math.abs(want[i])), what);
        }
        cases++;
      }
    }
  }
  console.log(`  ${cases} descriptor-creation faults injected`);
  assert.equal(cases, 12);
});

EMULATED_LANE.test("descriptors: a failed launch keeps older descriptors and drops the new ones", async () => {
  using device = openNpu();
  const cache = npuOf(device).descriptors;
  using grad = device.tensor(values(32, 40), GRAD_SHAPE);
  using out = device.zeros(OPTIONS.inputSize);
  upsampleNearestExact2dBackward(grad, { ...OPTIONS, out });
  using other = device.zeros(OPTIONS.inputSize);
  await device.synchronize();
  const baseline = emuLive();
  assert.equal(cache.objects, 4);
  try {
    emu().aclemuFailNextLaunch(507015);
    assert.throws(() => upsampleNearestExact2dBackward(grad, { ...OPTIONS, out: other }), AclError);
  } finally {
    emu().aclemuResetFaults();
  }
  assert.deepEqual(emuLive(), baseline, "other's new descriptors destroyed, grad's kept");
  assert.equal(cache.objects, 4);
  upsampleNearestExact2dBackward(grad, { ...OPTIONS, out });
  assert.deepEqual(emuLive(), baseline, "the cached ones are still used");
});

EMULATED_LANE.test("descriptors: launchAclnn refuses sizes that disagree with the views", () => {
  using device = openNpu();
  const backend = npuOf(device);
  using grad = device.zeros(GRAD_SHAPE);
  using out = device.zeros(OPTIONS.inputSize);
  const view = (t: Tensor): UpsampleCall<NpuBuffer>["out"] => {
    const { storage, layout } = tensorInternals(t);
    return {
      handle: storage.handle as NpuBuffer,
      dtype: storage.dtype,
      storageLength: storage.length,
      shape: layout.shape,
      strides: layout.strides,
      offset: layout.offset,
    };
  };
  const before = emuLive();
  assert.throws(
    () =>
      launchAclnn(backend, {
        op: "nearestExact2d",
        dtype: "float32",
        inputSize: [1, 2, 2, 2],
        outputSize: [4, 3],
        scales: [0, 0],
        alignCorners: false,
        gradOutput: view(grad),
        out: view(out),
        deterministic: false,
      }),
    /launchAclnn: outputSize \[4,3\] \/ inputSize \[1,2,2,2\] disagree/,
  );
  assert.deepEqual(emuLive(), before);
});
