// Child process of runtime_test.ts: the emulated NPU with ACLEMU_DEVICE_MEMORY set by the parent (the
// emulation reads it when it loads, so it cannot be changed in the test process itself). Prints one
// line per check; any failed assertion exits non-zero.

import assert from "node:assert/strict";
import {
  Device,
  DeviceMemoryError,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../../mod.ts";
import { emu, EMU_DIR, emuLive } from "../helpers.ts";

const capacity = Number(Deno.env.get("ACLEMU_DEVICE_MEMORY"));
const baseline = emuLive();
{
  using device = Device.open({ backend: "npu", libDir: EMU_DIR });
  assert.equal(device.memoryInfo().total, capacity);

  // A result that does not fit (26x nearest-exact: 520 x 520 float32 is more than 1 MiB).
  using grad = device.tensor(new Array(400).fill(1), [1, 1, 20, 20]);
  const live = emuLive();
  try {
    upsampleNearestExact2dBackward(grad, { outputSize: [20, 20], inputSize: [1, 1, 520, 520] });
    assert.fail("the result fitted");
  } catch (error) {
    assert.ok(error instanceof DeviceMemoryError, String(error));
    assert.equal(error.requestedBytes, 520 * 520 * 4);
    console.log(`result: ${error}`);
  }
  assert.deepEqual(emuLive(), live);

  // A result that fits exactly, with no room left for the workspace (a fresh device has none cached).
  using small = device.tensor(new Array(256).fill(1), [1, 1, 16, 16]);
  const before = device.memoryInfo().free;
  let resultCost = 0;
  {
    using _probe = device.zeros([1, 1, 8, 8]);
    resultCost = before - device.memoryInfo().free;
  }
  assert.equal(device.memoryInfo().free, before);
  using filler = device.zeros([(before - resultCost) / 4]);
  assert.equal(device.memoryInfo().free, resultCost);
  const filled = emuLive();
  try {
    upsampleNearestExact2dBackward(small, { outputSize: [16, 16], inputSize: [1, 1, 8, 8] });
    assert.fail("the workspace fitted");
  } catch (error) {
    assert.ok(error instanceof DeviceMemoryError, String(error));
    assert.ok(error.requestedBytes > 0 && error.freeBytes < error.requestedBytes);
    console.log(`workspace: ${error}`);
  }
  assert.deepEqual(emuLive(), filled, "the result, executor and descriptors were released");
  filler.dispose();

  // Results dropped while their launches are queued are freed only after a sync; an allocation that
  // fails meanwhile waits for that sync and tries again instead of failing. On the Ascend 950
  // nearest-exact asks a 16 MiB workspace, more than this device holds: bilinear there (32 bytes).
  const on950 = device.generation === "950";
  emu().aclemuSetStreamDelayUs(5_000n);
  try {
    for (let i = 0; i < 6; i++) {
      using g = device.zeros(on950 ? [1, 1, 1, 60_000] : [1, 1, 60_000]); // 240 kB
      (on950
        ? upsampleBilinear2dBackward(g, { outputSize: [1, 60_000], inputSize: [1, 1, 1, 30_000] })
        : upsampleNearestExact1dBackward(g, { outputSize: [60_000], inputSize: [1, 1, 30_000] }))
        .dispose();
    }
  } finally {
    emu().aclemuSetStreamDelayUs(0n);
  }
  console.log(`deferred frees reclaimed (${on950 ? "bilinear, 950" : "nearest-exact 1d"})`);
}
assert.deepEqual(emuLive(), baseline);
console.log("nothing leaked");
