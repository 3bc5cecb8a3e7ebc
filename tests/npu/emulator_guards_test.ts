// Guards the emulation keeps on the binding, read through its counters (independent of the binding's
// own bookkeeping): ACL initialized by another in-process user is never torn down by a device's close,
// and a whole workload frees no device memory that a queued or unsynchronized kernel still uses.

import assert from "node:assert/strict";
import { Device, upsampleBilinear2dBackward, upsampleNearestExact2dBackward } from "../../mod.ts";
import { emu, EMU_DIR, EMULATED_LANE, lastReferencedFree } from "../support/helpers.ts";

const RAW = {
  aclInit: { parameters: ["pointer"], result: "i32" },
  aclFinalize: { parameters: [], result: "i32" },
} as const;

Deno.test({
  name: "emulator guards: a device closed while another ACL user holds the runtime leaves it up",
  ignore: EMULATED_LANE.ignore !== undefined,
}, () => {
  const raw = Deno.dlopen(`${EMU_DIR}libascendcl.so`, RAW);
  try {
    const finalized = emu().aclemuFinalizeCount();
    const status = raw.symbols.aclInit(null); // the other user (0: first, 100002: ACL was up already)
    assert.ok(status === 0 || status === 100002, `aclInit answered ${status}`);
    const refs = emu().aclemuInitRefCount();
    {
      using device = Device.open({ backend: "npu", libDir: EMU_DIR });
      assert.equal(emu().aclemuInitRefCount(), refs + 1n, "the device's aclInit counted (100002)");
      device.zeros([1, 1, 2, 2]).dispose();
    }
    assert.equal(
      emu().aclemuFinalizeCount(),
      finalized,
      "no aclFinalize while another user held ACL",
    );
    assert.ok(emu().aclemuInitRefCount() >= 1n, "ACL is still initialized for the other user");
    if (status === 0) {
      assert.equal(raw.symbols.aclFinalize(), 0);
      assert.equal(emu().aclemuFinalizeCount(), finalized + 1n, "the owner's finalize tears down");
    }
  } finally {
    raw.close();
  }
});

Deno.test({
  name:
    "emulator guards: ops, growing workspaces, reads and close free nothing a kernel still uses",
  ignore: EMULATED_LANE.ignore !== undefined,
}, async () => {
  const before = emu().aclemuReferencedFrees();
  emu().aclemuSetStreamDelayUs(2000n); // kernels stay queued while the host goes on
  try {
    const device = Device.open({ backend: "npu", libDir: EMU_DIR });
    for (const size of [4, 16, 64]) { // each size needs a larger workspace than the last
      using grad = device.tensor(new Array(4 * size * size).fill(1), [1, 1, 2 * size, 2 * size]);
      using nearest = upsampleNearestExact2dBackward(grad, {
        outputSize: [2 * size, 2 * size],
        inputSize: [1, 1, size, size],
      });
      using bilinear = upsampleBilinear2dBackward(grad, {
        outputSize: [2 * size, 2 * size],
        inputSize: [1, 1, size, size],
      });
      assert.equal((await nearest.toFloat32Array())[0], 4);
      assert.equal((await bilinear.toFloat32Array()).length, size * size);
    }
    // close right after a launch: the device must synchronize before it frees
    using grad = device.tensor(new Array(16).fill(1), [1, 1, 4, 4]);
    upsampleNearestExact2dBackward(grad, { outputSize: [4, 4], inputSize: [1, 1, 2, 2] });
    device.close();
  } finally {
    emu().aclemuSetStreamDelayUs(0n);
  }
  assert.equal(emu().aclemuReferencedFrees(), before, lastReferencedFree());
  assert.equal(emu().aclemuPendingTasks(), 0n);
});
