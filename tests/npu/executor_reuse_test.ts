// The NPU backend's repeatable executors (src/ffi/executors.ts) on the emulated NPU: phase 1 runs once
// per (op, gradOutput view, out view, scales, alignCorners, deterministic) and later calls run phase 2
// only, with results bit-identical to a fresh call; an executor goes with either of its views, with the
// device, when evicted, and when its phase 2 fails; a runtime that will not make an executor repeatable
// gets one-shot launches; nothing leaks on any path.

import assert from "node:assert/strict";
import {
  AclError,
  Device,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { deviceInternals } from "../../src/device.ts";
import { MAX_EXECUTORS_PER_VIEW } from "../../src/ffi/executors.ts";
import type { NpuBackend } from "../../src/ffi/npu_backend.ts";
import { assertBitEqual, emu, EMU_DIR, EMULATED_LANE, emuLive, rng } from "../support/helpers.ts";

type Fn = (...args: unknown[]) => unknown;

const openNpu = (): Device => Device.open({ backend: "npu", libDir: EMU_DIR });
const npuOf = (device: Device): NpuBackend =>
  deviceInternals(device).backend() as unknown as NpuBackend;
const values = (n: number, seed: number): Float32Array => {
  const next = rng(seed);
  return Float32Array.from({ length: n }, () => Math.round((next() - 0.5) * 512) / 64);
};

/** Counts calls of `name` in a table of the device's libraries until `restore()`. */
function watch(
  device: Device,
  table: "nnopbase" | "opapi",
  name: string,
  wrap?: (original: Fn) => Fn,
): { count(): number; restore(): void } {
  const t = npuOf(device).runtime.libs[table] as unknown as Record<string, Fn>;
  const original = t[name];
  let calls = 0;
  const inner = wrap ? wrap(original) : original;
  t[name] = (...args) => {
    calls++;
    return inner(...args);
  };
  return { count: () => calls, restore: () => void (t[name] = original) };
}

EMULATED_LANE.test("executors: phase 1 runs once per key; every repeat is bit-identical", async () => {
  const baseline = emuLive();
  const device = openNpu();
  const phase1 = watch(device, "opapi", "aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize");
  try {
    const cache = npuOf(device).descriptors;
    const data = values(2 * 3 * 8 * 8, 7);
    using grad = device.tensor(data, [2, 3, 8, 8]);
    const options = { outputSize: [8, 8], inputSize: [2, 3, 5, 6] };
    const expected = upsampleBilinear2dBackward(grad, options);
    const want = await expected.toFloat32Array();
    expected.dispose(); // and the executor that wrote it
    using out = device.zeros(options.inputSize);
    const calls = phase1.count();
    for (let i = 0; i < 4; i++) {
      upsampleBilinear2dBackward(grad, { ...options, out });
      assertBitEqual(await out.toFloat32Array(), want, `repeat ${i}`);
    }
    assert.equal(phase1.count(), calls + 1, "one phase 1 for four calls");
    // Each key part makes its own executor.
    upsampleBilinear2dBackward(grad, { ...options, out, alignCorners: true });
    upsampleBilinear2dBackward(grad, { ...options, out, scalesH: 1.6, scalesW: 8 / 6 });
    upsampleBilinear2dBackward(grad, { ...options, out, deterministic: true });
    assert.equal(phase1.count(), calls + 4);
    assert.equal(cache.executors, MAX_EXECUTORS_PER_VIEW, "bounded per gradOutput view");
    upsampleBilinear2dBackward(grad, { ...options, out, alignCorners: true, deterministic: true });
    assert.equal(phase1.count(), calls + 5, "a fifth key");
    assert.equal(cache.executors, MAX_EXECUTORS_PER_VIEW);
    upsampleBilinear2dBackward(grad, { ...options, out });
    assert.equal(phase1.count(), calls + 6, "the oldest (the first key) was evicted");
    assert.equal(cache.executors, MAX_EXECUTORS_PER_VIEW);
    assertBitEqual(await out.toFloat32Array(), want, "after eviction");
  } finally {
    phase1.restore();
    device.close();
  }
  assert.deepEqual(emuLive(), baseline, "closing the device destroyed every executor");
});

EMULATED_LANE.test("executors: freeing either view destroys the executors that use it", async () => {
  const device = openNpu();
  try {
    const cache = npuOf(device).descriptors;
    using grad = device.tensor(values(8, 3), [1, 2, 4]);
    const options = { outputSize: [4], inputSize: [1, 2, 2] };
    const before = emuLive().objects;
    const outs = [device.zeros(options.inputSize), device.zeros(options.inputSize)];
    for (const out of outs) upsampleNearestExact1dBackward(grad, { ...options, out });
    assert.equal(cache.executors, 2);
    outs[0].dispose();
    assert.equal(cache.executors, 1, "out gone: its executor too");
    assert.equal(emuLive().objects, before + 2n + 2n + 1n, "grad's 2, out 1's 2, one executor");
    using other = device.tensor(values(8, 4), [1, 2, 4]);
    upsampleNearestExact1dBackward(other, { ...options, out: outs[1] });
    assert.equal(cache.executors, 2);
    other.dispose();
    assert.equal(cache.executors, 1, "gradOutput gone: its executor too");
    outs[1].dispose();
    assert.equal(cache.executors, 0);
    assert.equal(emuLive().objects, before + 2n, "grad's descriptors only");
    await device.synchronize();
  } finally {
    device.close();
  }
});

EMULATED_LANE.test("executors: a failed phase 2 on a kept executor drops it; the next call works", async () => {
  const baseline = emuLive();
  const device = openNpu();
  try {
    const cache = npuOf(device).descriptors;
    const data = values(32, 5);
    using grad = device.tensor(data, [1, 2, 4, 4]);
    const options = { outputSize: [4, 4], inputSize: [1, 2, 2, 2] };
    using out = device.zeros(options.inputSize);
    upsampleNearestExact2dBackward(grad, { ...options, out });
    const want = await out.toFloat32Array();
    const kept = emuLive().objects;
    assert.equal(cache.executors, 1);
    emu().aclemuFailNextLaunch(507015);
    assert.throws(() => upsampleNearestExact2dBackward(grad, { ...options, out }), (error) => {
      assert.ok(error instanceof AclError);
      assert.equal(error.api, "aclnnUpsampleNearestExact2dBackward");
      return true;
    });
    assert.equal(cache.executors, 0, "the failed executor is not kept");
    assert.equal(emuLive().objects, kept - 1n, "and was destroyed; the descriptors stay");
    upsampleNearestExact2dBackward(grad, { ...options, out });
    assertBitEqual(await out.toFloat32Array(), want, "a fresh executor");
    assert.equal(cache.executors, 1);
  } finally {
    device.close();
  }
  assert.deepEqual(emuLive(), baseline);
});

EMULATED_LANE.test("executors: a runtime that refuses repeatable executors gets one-shot launches", async () => {
  const baseline = emuLive();
  const device = openNpu();
  const refuse = watch(device, "nnopbase", "aclSetAclOpExecutorRepeatable", () => () => 561103);
  const phase2 = watch(device, "opapi", "aclnnUpsampleNearestExact2dBackward");
  try {
    const cache = npuOf(device).descriptors;
    const data = values(32, 9);
    using grad = device.tensor(data, [1, 2, 4, 4]);
    const options = { outputSize: [4, 4], inputSize: [1, 2, 2, 2] };
    using out = device.zeros(options.inputSize);
    const before = emuLive().objects;
    for (let i = 0; i < 3; i++) upsampleNearestExact2dBackward(grad, { ...options, out });
    assert.equal(phase2.count(), 3);
    assert.equal(cache.executors, 0, "nothing kept");
    assert.equal(
      emuLive().objects,
      before + 4n,
      "descriptors only: phase 2 consumed each executor",
    );
    refuse.restore();
    using fresh = upsampleNearestExact2dBackward(grad, options);
    assertBitEqual(await out.toFloat32Array(), await fresh.toFloat32Array(), "same result");
  } finally {
    refuse.restore();
    phase2.restore();
    device.close();
  }
  assert.deepEqual(emuLive(), baseline);
});
