// The per-call fast paths of issue 19 on the emulated NPU: a repeated call skips the argument checks
// through the memo of its gradOutput (src/ops/call_memo.ts) and goes straight to phase 2; anything
// that changed between two calls gives exactly the error (or launch) a first call would; the memo
// keeps no tensor alive; synchronize() completes on the JS thread after a short poll of an ACL event
// (src/ffi/stream_poll.ts), hands longer waits to a worker, and leaves no event behind.

import assert from "node:assert/strict";
import {
  Device,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { deviceInternals } from "../../src/device.ts";
import type { NpuBackend } from "../../src/ffi/npu_backend.ts";
import {
  assertRepeatsFailAsFirstCalls,
  type CallChange,
  emu,
  EMU_DIR,
  EMULATED_LANE,
  emuLive,
} from "../support/helpers.ts";

type Options = Record<string, unknown>;
type Fn = (...args: unknown[]) => unknown;

const openNpu = (): Device => Device.open({ backend: "npu", libDir: EMU_DIR });
const npuOf = (device: Device): NpuBackend =>
  deviceInternals(device).backend() as unknown as NpuBackend;
const gc = (globalThis as { gc?: () => void }).gc;
const macrotask = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

/** Counts calls of `name` in the device's opapi table until `restore()`. */
function watch(device: Device, name: string): { count(): number; restore(): void } {
  const t = npuOf(device).runtime.libs.opapi as unknown as Record<string, Fn>;
  const original = t[name];
  let calls = 0;
  t[name] = (...args: unknown[]): unknown => {
    calls++;
    return original(...args);
  };
  return { count: () => calls, restore: () => void (t[name] = original) };
}

EMULATED_LANE.test("fast path: a change after a repeated call gives the error a first call gives", async () => {
  using device = openNpu();
  const grad = (): Tensor => device.tensor(new Array(16).fill(1), [1, 1, 4, 4]);
  const base = (out: Tensor): Options => ({
    outputSize: [4, 4],
    inputSize: [1, 1, 2, 2],
    out,
  });
  // Each case changes one thing in the options (or the tensors) of a call that was just repeated.
  const cases: CallChange[] = [
    ["unknown key", (o) => void (o.scalesX = 1)],
    ["outputSize element", (o) => void ((o.outputSize as number[])[1] = 5)],
    ["inputSize as a string", (o) => void (o.inputSize = "1,1,2,2")],
    ["scale", (o) => void (o.scalesH = 3)],
    ["NaN scale", (o) => void (o.scalesW = NaN)],
    ["alignCorners on nearest", (o) => void (o.alignCorners = true)],
    ["deterministic not boolean", (o) => void (o.deterministic = "yes")],
    ["out disposed", (_o, _g, out) => out.dispose()],
    ["gradOutput disposed", (_o, g) => g.dispose()],
    ["out overlapping", (o, g) => void (o.out = g.slice(3, 0, 2).slice(2, 0, 2))],
    ["outputSize shorter", (o) => void (o.outputSize as number[]).pop()],
    ["inherited alignCorners", (o) => void Object.setPrototypeOf(o, { alignCorners: 1 })],
  ];
  assertRepeatsFailAsFirstCalls(
    upsampleNearestExact2dBackward as (g: Tensor, o: never) => Tensor,
    grad,
    () => device.zeros([1, 1, 2, 2]),
    base,
    cases,
  );
  await device.synchronize();
});

EMULATED_LANE.test("fast path: repeated calls run phase 2 only, and follow the device's deterministic mode", async () => {
  using device = openNpu();
  using grad = device.tensor(Array.from({ length: 16 }, (_, i) => i), [1, 1, 4, 4]);
  using out = device.zeros([1, 1, 2, 2]);
  const phase1 = watch(device, "aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize");
  const phase2 = watch(device, "aclnnUpsampleBilinear2dBackwardV2");
  try {
    const call = (): Tensor =>
      upsampleBilinear2dBackward(grad, { outputSize: [4, 4], inputSize: [1, 1, 2, 2], out });
    for (let i = 0; i < 5; i++) assert.equal(call(), out);
    assert.equal(phase1.count(), 1);
    assert.equal(phase2.count(), 5);
    const first = await out.toFloat32Array();
    device.setDeterministic(true); // the device default is part of the key
    call();
    assert.equal(phase1.count(), 2, "a new deterministic mode is a new phase 1");
    assert.equal(emu().aclemuLastLaunchDeterministic(), 1);
    assert.deepEqual(await out.toFloat32Array(), first);
  } finally {
    phase1.restore();
    phase2.restore();
  }
});

EMULATED_LANE.test({
  name: "fast path: the memo keeps neither tensor alive",
  ignore: typeof gc !== "function",
  fn: async () => {
    using device = openNpu();
    await device.synchronize();
    const before = emuLive().allocations;
    const collect = async (limit: bigint): Promise<void> => {
      for (let i = 0; i < 20 && emuLive().allocations > limit; i++) {
        gc!();
        await macrotask();
        await macrotask();
        await device.synchronize();
      }
    };
    // out dropped while its gradOutput (the memo's key) lives on, then the gradOutput dropped too.
    const kept = { grad: device.tensor(new Array(16).fill(1), [1, 1, 4, 4]) as Tensor | null };
    const use = (): void => {
      const out = device.zeros([1, 1, 2, 2]);
      for (let i = 0; i < 3; i++) {
        upsampleNearestExact2dBackward(kept.grad!, {
          outputSize: [4, 4],
          inputSize: [1, 1, 2, 2],
          out,
        });
      }
    };
    use();
    await device.synchronize();
    // The workspace may stay (a device cache); out's buffer is freed, the gradient's stays.
    await collect(before + 2n);
    assert.ok(emuLive().allocations <= before + 2n, "a dropped out freed despite the memo");
    kept.grad = null;
    await collect(before + 1n);
    assert.ok(emuLive().allocations <= before + 1n, "a dropped gradOutput freed despite the memo");
  },
});

EMULATED_LANE.test("synchronize: a short wait completes on the JS thread, a long one on a worker; no event left", async () => {
  const baseline = emu().aclemuLiveEvents();
  const device = openNpu();
  const backend = npuOf(device);
  const acl = backend.runtime.libs.acl as unknown as Record<string, Fn>;
  const original = acl.aclrtSynchronizeStreamNonblocking;
  let handedOff = 0;
  const libs = backend.runtime.libs;
  // Deno's nonblocking symbols are read-only: swap in a copy of the table that counts hand-offs.
  const table: Record<string, Fn> = {};
  for (const name of Object.getOwnPropertyNames(libs.acl)) table[name] = acl[name];
  table.aclrtSynchronizeStreamNonblocking = (...args: unknown[]): unknown => {
    handedOff++;
    return original(...args);
  };
  (backend.runtime as unknown as { libs: object }).libs = { ...libs, acl: table };
  try {
    using grad = device.tensor(new Array(16).fill(1), [1, 1, 4, 4]);
    using out = device.zeros([1, 1, 2, 2]);
    const options = { outputSize: [4, 4], inputSize: [1, 1, 2, 2], out };
    for (let i = 0; i < 20; i++) {
      upsampleNearestExact2dBackward(grad, options);
      // Leave the tiny kernel time to finish (ample even under qemu or a loaded host), so the
      // poll's first query can find it done: the assertion below never depends on the 50 µs bound.
      await new Promise((resolve) => setTimeout(resolve, 20));
      await device.synchronize();
    }
    assert.deepEqual([...await out.toFloat32Array()], [4, 4, 4, 4]);
    assert.ok(
      handedOff < 20,
      `every one of 20 finished tiny ops was waited for on a worker thread`,
    );
    // A kernel far longer than the spin: the event loop keeps running while it waits.
    emu().aclemuSetStreamDelayUs(30_000n);
    upsampleNearestExact2dBackward(grad, options);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const before = handedOff;
    await device.synchronize();
    clearInterval(timer);
    assert.equal(handedOff, before + 1, "the long wait went to a worker thread");
    assert.ok(ticks > 0, "timers ran during the wait");
    assert.equal(
      emu().aclemuLiveEvents(),
      baseline + 1n,
      "one poll event while the device is open",
    );
  } finally {
    emu().aclemuSetStreamDelayUs(0n);
    (backend.runtime as unknown as { libs: object }).libs = libs;
    device.close();
  }
  assert.equal(emu().aclemuLiveEvents(), baseline, "the poll event is destroyed with the device");
});
