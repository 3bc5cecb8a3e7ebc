// Device-side timing (src/ffi/events.ts): launches timed between two ACL events on the device's stream,
// on every NPU lane; on the emulation, the time follows its stream clock, and the events are destroyed
// on every path (live-object count, injected event failures).

import assert from "node:assert/strict";
import { AclError, type Device, upsampleNearestExact2dBackward } from "../../mod.ts";
import { deviceInternals } from "../../src/device.ts";
import { StreamTimer } from "../../src/ffi/events.ts";
import type { NpuBackend } from "../../src/ffi/npu_backend.ts";
import { type BackendCase, BACKENDS, emu, EMULATED_LANE } from "../support/helpers.ts";

const backendOf = (device: Device): NpuBackend =>
  deviceInternals(device).backend() as unknown as NpuBackend;

async function launches(device: Device, count: number): Promise<StreamTimerResult> {
  using grad = device.tensor(new Float32Array(2 * 3 * 8 * 8).fill(1), [2, 3, 8, 8]);
  using timer = StreamTimer.create(backendOf(device));
  const results: Array<{ dispose(): void; toFloat32Array(): Promise<Float32Array> }> = [];
  const timing = await timer.time(() => {
    for (let i = 0; i < count; i++) {
      results.push(
        upsampleNearestExact2dBackward(grad, { outputSize: [8, 8], inputSize: [2, 3, 4, 4] }),
      );
    }
  });
  const values = await results.at(-1)!.toFloat32Array();
  for (const r of results) r.dispose();
  return { ...timing, values };
}

interface StreamTimerResult {
  deviceMs: number;
  hostMs: number;
  values: Float32Array;
}

// Why a lane's CANN cannot time with events (its runtime lacks them), or undefined.
function eventsMissing(lane: BackendCase): string | undefined {
  if (lane.ignore !== undefined) return undefined;
  using device = lane.open();
  return backendOf(device).runtime.libs.acl.aclrtCreateEvent === null
    ? `the CANN runtime of lane ${lane.label} has no ACL events`
    : undefined;
}

const withReason = (name: string, reason: string | undefined): string =>
  reason === undefined ? name : `${name} [ignored: ${reason}]`;

for (const lane of BACKENDS.filter((lane) => lane.kind === "npu")) {
  const missing = eventsMissing(lane);
  lane.test({
    name: withReason(`events on ${lane.label}: launches timed on the device stream`, missing),
    ignore: missing !== undefined,
  }, async () => {
    using device = lane.open();
    const { deviceMs, hostMs, values } = await launches(device, 4);
    assert.ok(Number.isFinite(deviceMs) && deviceMs >= 0, `device time ${deviceMs} ms`);
    assert.ok(hostMs >= 0, `host time ${hostMs} ms`);
    assert.deepEqual([...values].slice(0, 4), [4, 4, 4, 4]);
    // A timer is reusable until disposed, and refuses use afterwards.
    using timer = StreamTimer.create(backendOf(device));
    await timer.time(() => {});
    const again = await timer.time(() => {});
    assert.ok(again.deviceMs >= 0);
    timer.dispose();
    timer.dispose();
    await assert.rejects(() => timer.time(() => {}), /StreamTimer.time: the timer was disposed/);
  });
}

EMULATED_LANE.test("events on the emulation: the device time follows the stream clock, not the host's", async () => {
  using device = EMULATED_LANE.open();
  emu().aclemuSetStreamDelayUs(5_000n);
  try {
    const { deviceMs, hostMs } = await launches(device, 4);
    // Four kernels of >= 5 ms each ran between the events; enqueueing them took far less.
    assert.ok(deviceMs >= 19, `device time ${deviceMs} ms for four 5 ms kernels`);
    assert.ok(hostMs < deviceMs, `launch ${hostMs} ms vs device ${deviceMs} ms`);
  } finally {
    emu().aclemuSetStreamDelayUs(0n);
  }
});

EMULATED_LANE.test("events on the emulation: every failure names its call and leaves no event behind", async () => {
  using device = EMULATED_LANE.open();
  const live = (): bigint => emu().aclemuLiveEvents();
  const baseline = live();
  // The event calls of one timed sequence, in order. Each is failed in turn: the table the timer reads
  // its functions from is wrapped so that the fault is armed right before the k-th event call.
  const calls = [
    "aclrtCreateEvent",
    "aclrtCreateEvent",
    "aclrtRecordEvent",
    "aclrtRecordEvent",
    "aclrtSynchronizeEventNonblocking",
    "aclrtEventElapsedTime",
  ];
  // Deno's nonblocking symbols are read-only: the runtime gets a copy of its symbol table instead.
  const runtime = backendOf(device).runtime as unknown as { libs: { acl: object } };
  const libs = runtime.libs;
  const table: Record<string, (...args: unknown[]) => unknown> = {};
  for (const name of Object.getOwnPropertyNames(libs.acl)) {
    table[name] = (libs.acl as Record<string, (...args: unknown[]) => unknown>)[name];
  }
  let count = 0;
  let failAt = -1;
  for (const name of new Set(calls)) {
    const original = table[name];
    table[name] = (...args: unknown[]): unknown => {
      if (count++ === failAt) emu().aclemuFailNextEvent(507000);
      return original(...args);
    };
  }
  runtime.libs = { ...libs, acl: table };
  try {
    for (let k = 0; k < calls.length; k++) {
      count = 0;
      failAt = k;
      const expected = new RegExp(calls[k].replace("Nonblocking", ""));
      let timer: StreamTimer | null = null;
      try {
        if (k < 2) {
          assert.throws(() => StreamTimer.create(backendOf(device)), expected);
        } else {
          timer = StreamTimer.create(backendOf(device));
          await assert.rejects(() => timer!.time(() => {}), (error) => {
            assert.ok(error instanceof AclError, String(error));
            assert.match(error.message, expected);
            return true;
          });
        }
      } finally {
        timer?.dispose();
        emu().aclemuResetFaults();
      }
      assert.equal(live(), baseline, `after a failure of ${calls[k]} (call ${k}): no live event`);
    }
  } finally {
    runtime.libs = libs;
  }
});
