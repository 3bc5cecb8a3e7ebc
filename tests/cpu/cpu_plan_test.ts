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
import { callClass, EXPLORE_LATE, Planner, WINDOW } from "../../src/cpu/threads/planner.ts";
import { cutCall, workStride } from "../../src/cpu/threads/scheduler.ts";
import { CONTROL, controlWords, takeChunks } from "../../src/cpu/threads/control.ts";
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
  assert.deepEqual(cutCall(512, 64, true, 2), { chunkPlanes: 32, bands: 1, chunks: 16 });
  assert.deepEqual(cutCall(8, 64, true, 2), { chunkPlanes: 4, bands: 8, chunks: 16 });
  assert.deepEqual(cutCall(1, 3, true, 4), { chunkPlanes: 4, bands: 3, chunks: 3 });
  assert.deepEqual(cutCall(1, 64, false, 4), { chunkPlanes: 4, bands: 1, chunks: 1 });
});

Deno.test("chunks: threads taking turns cover every plane and row once, each with its own work space", () => {
  for (const [planes, rows, threads] of [[512, 64, 2], [6, 23, 3], [1, 3, 4], [9, 1, 5]]) {
    const cut = cutCall(planes, rows, true, threads);
    const control = new Int32Array(new SharedArrayBuffer(4 * controlWords(threads - 1)));
    // dtype, out, grad, planes, work, row0, row1
    const args = [0, 1 << 20, 1 << 24, planes, 4096, 0, rows];
    control[CONTROL.argCount] = args.length;
    args.forEach((a, i) => (control[CONTROL.args + i] = a));
    Object.assign(control, {
      [CONTROL.planes]: planes,
      [CONTROL.chunkPlanes]: cut.chunkPlanes,
      [CONTROL.chunks]: cut.chunks,
      [CONTROL.outPlaneBytes]: 100,
      [CONTROL.gradPlaneBytes]: 300,
      [CONTROL.workArg]: 4,
      [CONTROL.workBytes]: 64,
      [CONTROL.rows]: rows,
      [CONTROL.bands]: cut.bands,
    });
    const seen = new Uint8Array(planes * rows);
    const ran = new Array<number>(threads).fill(0);
    // Thread t + 1 starts while thread t runs its first chunk (nested: a deterministic interleaving);
    // the last thread's kernel throws once.
    const kernelOf = (thread: number): (...a: number[]) => void => {
      let calls = 0;
      return (...a: number[]): void => {
        const first = (a[1] - (1 << 20)) / 100;
        assert.equal(a[2] - (1 << 24), first * 300, "grad follows out");
        assert.equal(a[4], 4096 + 64 * thread, "work space of this thread");
        for (let p = first; p < first + a[3]; p++) {
          for (let r = a[5]; r < a[6]; r++) seen[p * rows + r]++;
        }
        if (++calls === 1 && thread + 1 < threads) {
          ran[thread + 1] = takeChunks(control, kernelOf(thread + 1), [], thread + 1);
        }
        if (calls === 1 && thread === threads - 1 && threads > 1) throw new Error("kernel failed");
      };
    };
    ran[0] = takeChunks(control, kernelOf(0), [], 0);
    assert.ok(seen.every((n) => n === 1), `${planes}x${rows}: every plane and row once`);
    assert.equal(control[CONTROL.done], cut.chunks);
    assert.equal(ran.reduce((a, b) => a + b, 0), cut.chunks);
    if (cut.chunks >= threads) assert.ok(ran.every((n) => n > 0), `every thread ran: ${ran}`);
    // A throwing kernel marks the job failed; its chunk still counts as done.
    assert.equal(control[CONTROL.failed], threads > 1 && cut.chunks >= threads ? 1 : 0);
  }
});

Deno.test("work space: threads' work spaces a whole cache line apart where the scratch block has the room", () => {
  const kernels = (base: number, bytes: number) =>
    ({ scratch: () => base, scratchBytes: bytes }) as unknown as Parameters<typeof workStride>[2];
  const ready = (work: number) =>
    ({ args: [0, 0, 0, 0, work], workArg: 4, workBytes: 3088 }) as unknown as Parameters<
      typeof workStride
    >[0];
  // 3088 bytes: 49 lines, plus one line of gap; never sharing a line with the next thread's.
  assert.equal(workStride(ready(1024), 2, kernels(1000, 10_000)), 3200);
  assert.equal(workStride(ready(1024), 3, kernels(1000, 10_000)), 3200);
  // No room for the gaps: packed, as the block was sized.
  assert.equal(workStride(ready(1024), 3, kernels(1000, 24 + 3 * 3088)), 3088);
  assert.equal(workStride(ready(1024), 1, kernels(1000, 10_000)), 3088);
  const none = { args: [0], workArg: -1, workBytes: 0 } as unknown as Parameters<
    typeof workStride
  >[0];
  assert.equal(workStride(none, 2, kernels(1000, 10_000)), 0);
});

const big = {
  kernel: "bilinear_backward" as const,
  args: [0],
  planes: 512,
  outPlaneBytes: 64 * 64 * 4,
  gradPlaneBytes: 128 * 128 * 4,
};

/**
 * Runs `calls` calls of `call` through `planner` on a simulated host where a call takes `single(i)`
 * ms alone and `shared(i)` ms shared; returns the threads of each call.
 */
function simulate(
  planner: Planner,
  call: typeof big,
  calls: number,
  single: (i: number) => number,
  shared: (i: number) => number,
  chunks = 16,
): number[] {
  const plans: number[] = [];
  for (let i = 0; i < calls; i++) {
    const choice = planner.choose(call, chunks);
    planner.record(choice, choice.threads > 1 ? shared(i) : single(i));
    plans.push(choice.threads);
  }
  return plans;
}

/** Mean ms per call of a plan on that host. */
function meanMs(plans: number[], single: number, shared: number, from = 0): number {
  const used = plans.slice(from);
  return used.reduce((sum, t) => sum + (t > 1 ? shared : single), 0) / used.length;
}

Deno.test("planner: a class not yet timed is shared; its second call runs alone; then the shape's faster plan", () => {
  const planner = new Planner(2);
  const first = planner.choose(big, 16);
  assert.equal(first.threads, 2, "the calling thread takes part: sharing is the default bet");
  planner.record(first, 6);
  const second = planner.choose(big, 16);
  assert.equal(second.threads, 1, "the second call times the calling thread alone");
  planner.record(second, 10);
  assert.equal(planner.choose(big, 16).threads, 2);
  // Never more threads than chunks; one chunk runs alone.
  assert.equal(new Planner(8).choose(big, 3).threads, 3);
  assert.equal(new Planner(8).choose(big, 1).threads, 1);
});

Deno.test("planner: where sharing pays, the calls are shared but for the exploration", () => {
  const plans = simulate(new Planner(2), big, 500, () => 10, () => 5.5);
  const alone = plans.slice(8).filter((t) => t === 1).length;
  // Calls 8..500 explore alone 8, 16, 32, 64, then 128 calls apart: 10, 26, 58, 122, 250, 378.
  assert.ok(alone <= 6, `alone ${alone} of ${plans.length - 8}`);
  assert.ok(meanMs(plans, 10, 5.5, 64) <= 5.6, "within 2 % of the shared time");
});

Deno.test("planner: each losing exploration doubles the gap to the next, up to EXPLORE_LATE; a winning one runs again at once", () => {
  // Calls are numbered from 1; the second runs the other plan.
  const explored = (plans: number[], plan: number): number[] =>
    plans.flatMap((t, i) => (t === plan ? [] : [i + 1]));
  const pays = simulate(new Planner(2), big, 300, () => 10, () => 5.5);
  assert.deepEqual(explored(pays, 2), [2, 10, 26, 58, 122, 250]);
  assert.equal(EXPLORE_LATE, 128);
  // Sharing loses until call 100, then pays. Call 1 shares (the prior; a shape's first call is not
  // timed); call 2 runs alone; call 3 shares (sharing not yet timed), loses and turns the plan;
  // sharing then runs at call 10 (the gap call 2 set), then 16, 32, 64 calls apart. At call 122 it
  // wins: its older (slow) times are dropped, so the plan turns at once, and alone runs again 8
  // calls later.
  const turns = simulate(new Planner(2), big, 200, () => 10, (i) => (i >= 99 ? 5.5 : 11));
  assert.deepEqual(explored(turns.slice(0, 121), 1), [1, 3, 10, 26, 58]);
  assert.equal(turns[129], 1, "call 130 runs alone");
  const after = turns.slice(121, 129);
  assert.ok(after.every((t) => t === 2), `from the winning exploration on: ${after}`);
});

Deno.test("planner: a shape's first call is not timed: a cold first run does not send the shape to the other plan", () => {
  // Bilinear forward x2 on this VM: the device's first shared call 12.7 ms (cold: the kernel's
  // first run on its module), then 2.2-2.4 ms shared and 3.8-4.1 ms alone.
  const plans = simulate(new Planner(2), big, 40, () => 3.9, (i) => (i === 0 ? 12.7 : 2.3));
  assert.deepEqual(plans.slice(0, 2), [2, 1], "the prior, then the exploration alone");
  const after = plans.slice(2, 9);
  assert.ok(after.every((t) => t === 2), `calls 3-9: ${after}`);
});

Deno.test("planner: where sharing loses (a host that scales poorly), never slower than one thread by more than the exploration", () => {
  for (const loss of [1.02, 1.1, 1.5, 3]) {
    const plans = simulate(new Planner(2), big, 500, () => 10, () => 10 * loss);
    const mean = meanMs(plans, 10, 10 * loss, 64);
    // The default against one thread, as bench:compare pairs them: >= 0.97x.
    assert.ok(10 / mean >= 0.97, `loss ${loss}: ${(10 / mean).toFixed(3)}x one thread`);
  }
});

Deno.test("planner: each shape follows its own timings, not its class's", () => {
  const planner = new Planner(2);
  const loses = { ...big, planes: 300 };
  const plans = { pays: [] as number[], loses: [] as number[] };
  for (let i = 0; i < 64; i++) {
    for (const [name, call] of [["pays", big], ["loses", loses]] as const) {
      const choice = planner.choose(call, 16);
      planner.record(choice, choice.threads === 1 ? 10 : name === "pays" ? 5 : 11);
      if (i >= 8) plans[name].push(choice.threads);
    }
  }
  const shared = (list: number[]): number => list.filter((t) => t > 1).length;
  assert.ok(shared(plans.pays) >= plans.pays.length - 8, `pays: ${plans.pays}`);
  assert.ok(shared(plans.loses) <= 8, `loses: ${plans.loses}`);
});

Deno.test("planner: a new shape starts from what its class measured", () => {
  const planner = new Planner(2);
  simulate(planner, big, 20, () => 10, () => 13);
  const estimate = planner.estimate(callClass(big));
  assert.ok(estimate.speedup < 1 && estimate.observed > 0, JSON.stringify(estimate));
  // Another shape of the class starts alone; one of another class (forward) shares.
  assert.equal(planner.choose({ ...big, planes: 64 }, 16).threads, 1);
  assert.equal(planner.choose({ ...big, kernel: "bilinear_forward" }, 16).threads, 2);
});

Deno.test("planner: a busy phase moves a shape to the calling thread; idle again, back to sharing", () => {
  const planner = new Planner(2);
  // Idle (sharing 0.55x), then busy (sharing 1.4x: a worker preempted mid-chunk), then idle.
  const phase = (i: number): number => (i >= 200 && i < 400 ? 14 : 5.5);
  const plans = simulate(planner, big, 600, () => 10, phase);
  const shareOf = (from: number, to: number): number =>
    plans.slice(from, to).filter((t) => t > 1).length / (to - from);
  assert.ok(shareOf(100, 200) > 0.95, "idle: shared");
  // Each shared call of the busy phase pushes a slow time; the median turns within a window.
  const turned = plans.slice(200).findIndex((t) => t === 1);
  assert.ok(turned >= 0 && turned <= WINDOW, `busy: alone after ${turned} calls`);
  assert.ok(shareOf(220, 400) < 0.05, "busy: alone but for the exploration");
  // Idle again: the next exploration times sharing fast, and the plan follows within a window.
  const back = plans.slice(400).findIndex((t, i) => i > 0 && t > 1 && plans[400 + i - 1] > 1);
  assert.ok(back >= 0 && back <= EXPLORE_LATE + WINDOW, `idle again: shared after ${back} calls`);
  assert.ok(shareOf(400 + EXPLORE_LATE + WINDOW, 600) > 0.95, "idle again: shared");
});
