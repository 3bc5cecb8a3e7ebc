// The CPU backend's thread plan: the worker's embedded source is built from its TypeScript
// sources; calls with few planes split into bands of rows give the bits of one thread at any
// thread count (every op, dtype and numerics, including the exact 2x bilinear downscale); the
// planner keeps small calls on the calling thread, sends costly compute-bound ones to the
// workers, learns from what calls took, and never gives a call more workers than it has chunks.

import assert from "node:assert/strict";
import {
  Device,
  type DType,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { cpuTuning } from "../../src/cpu/backend.ts";
import { HANDOFF_MS, Planner } from "../../src/cpu/threads/planner.ts";
import { cutCall } from "../../src/cpu/threads/scheduler.ts";
import { WORKER_SOURCE_SHA256 } from "../../src/cpu/threads/worker_embedded.ts";
import { workerSourcesHash } from "../../tools/build_worker.ts";
import { assertBitEqual, rng } from "../support/helpers.ts";

Deno.test("worker: the embedded source was built from worker.ts and control.ts (deno task build:wasm)", async () => {
  assert.equal(await workerSourcesHash(), WORKER_SOURCE_SHA256);
});

function forced(threads: number, numerics: "pytorch" | "device"): Device {
  const saved = cpuTuning.minParallelElements;
  cpuTuning.minParallelElements = 0;
  try {
    return Device.open({ backend: "cpu", threads, numerics });
  } finally {
    cpuTuning.minParallelElements = saved;
  }
}

interface Band {
  op: "nearestExact1d" | "nearestExact2d" | "bilinear2d";
  inputSize: number[];
  outputSize: number[];
  scales: number[];
  alignCorners: boolean;
}

function run(call: Band, grad: Tensor): Tensor {
  const { inputSize, outputSize, scales } = call;
  if (call.op === "nearestExact1d") {
    return upsampleNearestExact1dBackward(grad, { outputSize, inputSize, scales: scales[0] });
  }
  const options = { outputSize, inputSize, scalesH: scales[0], scalesW: scales[1] };
  return call.op === "nearestExact2d"
    ? upsampleNearestExact2dBackward(grad, options)
    : upsampleBilinear2dBackward(grad, { ...options, alignCorners: call.alignCorners });
}

Deno.test("bands: calls with fewer plane groups than workers give the bits of one thread at 2, 3 and 5 threads", async () => {
  const random = rng(1919);
  const calls: Band[] = [];
  for (let i = 0; i < 60; i++) {
    const op = (["nearestExact2d", "bilinear2d", "bilinear2d", "nearestExact1d"] as const)[i % 4];
    const planes = 1 + Math.floor(random() * 6);
    const inH = op === "nearestExact1d" ? 1 : 1 + Math.floor(random() * 23);
    const inW = 1 + Math.floor(random() * 19);
    const down = i % 8 === 1; // the exact 2x downscale path
    const outH = op === "nearestExact1d" ? 1 : down ? inH : 1 + Math.floor(random() * 40);
    const outW = down ? inW : 1 + Math.floor(random() * 40);
    const h = down ? 2 * inH : inH, w = down ? 2 * inW : inW;
    const scale = (o: number, n: number): number =>
      random() < 0.5 || Math.floor(n * (o / n)) !== o ? 0 : o / n;
    calls.push({
      op,
      inputSize: op === "nearestExact1d" ? [1, planes, w] : [1, planes, h, w],
      outputSize: op === "nearestExact1d" ? [outW] : [outH, outW],
      scales: op === "nearestExact1d" ? [scale(outW, w)] : [scale(outH, h), scale(outW, w)],
      alignCorners: op === "bilinear2d" && !down && random() < 0.5,
    });
  }
  for (const numerics of ["pytorch", "device"] as const) {
    using one = Device.open({ backend: "cpu", threads: 1, numerics });
    const devices = [2, 3, 5].map((n) => forced(n, numerics));
    try {
      for (const call of calls) {
        for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
          const shape = [call.inputSize[0], call.inputSize[1], ...call.outputSize];
          const length = shape.reduce((a, b) => a * b, 1);
          const values = Float32Array.from({ length }, () => (random() - 0.5) * 8);
          let expected: Float32Array;
          {
            using grad = one.tensor(values, shape, { dtype });
            using result = run(call, grad);
            expected = await result.toFloat32Array();
          }
          for (const device of devices) {
            using grad = device.tensor(values, shape, { dtype });
            using result = run(call, grad);
            assertBitEqual(
              await result.toFloat32Array(),
              expected,
              `${numerics} ${dtype} ${JSON.stringify(call)}`,
            );
          }
        }
      }
    } finally {
      for (const device of devices) device.close();
    }
  }
});

Deno.test("cut: whole four-plane groups, bands of rows when groups are few, never more chunks than rows", () => {
  assert.deepEqual(cutCall(512, 64, true, 2), { chunkPlanes: 64, bands: 1, chunks: 8 });
  assert.deepEqual(cutCall(8, 64, true, 2), { chunkPlanes: 4, bands: 4, chunks: 8 });
  assert.deepEqual(cutCall(1, 3, true, 4), { chunkPlanes: 4, bands: 3, chunks: 3 });
  assert.deepEqual(cutCall(1, 64, false, 4), { chunkPlanes: 4, bands: 1, chunks: 1 });
});

const big = {
  kernel: "bilinear_backward" as const,
  args: [0],
  planes: 512,
  outPlaneBytes: 64 * 64 * 4,
  gradPlaneBytes: 128 * 128 * 4,
};

Deno.test("planner: no bet on unmeasured workers; a costly call goes to workers measured to pay, a small one never", () => {
  const planner = new Planner(2);
  const small = { ...big, planes: 1 };
  const bytes = big.planes * (big.outPlaneBytes + big.gradPlaneBytes);
  // A fresh class runs on the calling thread, then tries the workers on its second call.
  const first = planner.choose(big, 8);
  assert.equal(first.workers, 0);
  planner.record(first, 10, bytes);
  const second = planner.choose(big, 8);
  assert.equal(second.workers, 2, "the second call measures the workers");
  // They took 55 % of one thread's time: from now on the costly call goes to them.
  planner.record(second, 5.5, bytes);
  assert.equal(planner.choose(big, 8).workers, 2);
  assert.equal(planner.choose(small, 8).workers, 0);
  // Never more workers than chunks.
  assert.equal(planner.choose(big, 1).workers, 0);
  const eight = new Planner(8);
  eight.record(eight.choose(big, 3), 10, bytes);
  const tried = eight.choose(big, 3);
  assert.equal(tried.workers, 3);
  eight.record(tried, 4, bytes);
  assert.equal(eight.choose(big, 3).workers, 3);
});

Deno.test("planner: measured calls move the plan (no gain from the workers: the calling thread)", () => {
  const planner = new Planner(2);
  const bytes = big.planes * (big.outPlaneBytes + big.gradPlaneBytes);
  let here = 0;
  for (let i = 0; i < 200; i++) {
    const choice = planner.choose(big, 8);
    const t1 = 10;
    // The workers take as long as one thread plus the hand-off: they never pay.
    const ms = choice.workers === 0 ? t1 : t1 + HANDOFF_MS;
    planner.record(choice, ms, bytes);
    if (i >= 100 && choice.workers === 0) here++;
  }
  // Mostly the calling thread, the other plan now and then.
  assert.ok(here >= 90, `calling thread ${here} of the last 100 calls`);
  const estimate = planner.estimate(2 * 3);
  assert.ok(Math.abs(estimate.nsPerByte - (10 * 1e6) / bytes) < 1e-9);
  assert.ok(estimate.gain <= 0.01);
});

Deno.test("planner: each shape follows its own timings, not its class's average", () => {
  const planner = new Planner(2);
  const pays = big; // the workers take half its time
  const loses = { ...big, planes: 300 }; // the workers take 10 % more than one thread
  const bytesOf = (c: typeof big): number => c.planes * (c.outPlaneBytes + c.gradPlaneBytes);
  const plans = { pays: [] as number[], loses: [] as number[] };
  for (let i = 0; i < 64; i++) {
    for (const [name, call] of [["pays", pays], ["loses", loses]] as const) {
      const choice = planner.choose(call, 8);
      const t1 = bytesOf(call) / 1e6;
      const ms = choice.workers === 0 ? t1 : name === "pays" ? t1 / 2 : t1 * 1.1;
      planner.record(choice, ms, bytesOf(call));
      if (i >= 8) plans[name].push(choice.workers);
    }
  }
  const onWorkers = (list: number[]): number => list.filter((w) => w > 0).length;
  // Past their first calls: the shape that pays on the workers, the other on the calling thread,
  // but for the occasional exploration of the other plan.
  assert.ok(onWorkers(plans.pays) >= plans.pays.length - 4, `pays: ${plans.pays}`);
  assert.ok(onWorkers(plans.loses) <= 4, `loses: ${plans.loses}`);
});
