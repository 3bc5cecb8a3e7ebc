// The CPU backend's worker threads: every fixture and 400 random calls (PyTorch and device
// numerics) give the same bits with 1, 2 and 3 threads and the default (small calls sent to the
// workers too); queued work keeps its order, `out` writes, early dispose() and close(); a large op
// leaves the event loop free; a script that never closes its device exits, with no permission at
// all; the shared memory is made at its full size, or growable where that is refused, with the
// same bits; workers start only when a call needs them, and the threshold counts both tensors.

import assert from "node:assert/strict";
import {
  Device,
  type DType,
  runParams,
  type Tensor,
  upsampleBilinear2d,
  upsampleNearestExact1d,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import type { CpuBackend } from "../../src/cpu/backend.ts";
import { deviceInternals } from "../../src/device.ts";
import { WasmKernels } from "../../src/cpu/wasm/instance.ts";
import { type FixtureCase, loadFixtures } from "../support/fixtures.ts";
import { makeView, openThreaded, rng, type ViewLayout } from "../support/helpers.ts";

type Numerics = "pytorch" | "device";

/** The devices compared with one thread: 2 and 3 workers for every call, and the default. */
function threadedDevices(numerics: Numerics = "pytorch"): { label: string; device: Device }[] {
  return [
    { label: "2 threads", device: openThreaded(2, numerics) },
    { label: "3 threads", device: openThreaded(3, numerics) },
    { label: "default", device: Device.open({ backend: "cpu", numerics }) },
  ];
}

interface Call {
  op: "nearestExact1d" | "nearestExact2d" | "bilinear2d";
  inputSize: number[];
  outputSize: number[];
  scales: number[];
  alignCorners: boolean;
}

function launch(call: Call, grad: Tensor, out?: Tensor): Tensor {
  return runParams(grad, call, { out });
}

function gradShape(call: Call): number[] {
  return [call.inputSize[0], call.inputSize[1], ...call.outputSize];
}

/** Float32 results compared as bit patterns (NaN payloads and -0 included). */
function assertSameBits(actual: Float32Array, expected: Float32Array, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  const a = new Uint32Array(actual.buffer), e = new Uint32Array(expected.buffer);
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== e[i]) {
      assert.fail(
        `${what}: element ${i} is ${actual[i]} (0x${a[i].toString(16)}), one thread ` +
          `gives ${expected[i]} (0x${e[i].toString(16)})`,
      );
    }
  }
}

Deno.test("threads: every fixture gives the bits of one thread, each awaited and all queued", async () => {
  const fixtures = await loadFixtures();
  using single = Device.open({ backend: "cpu", threads: 1 });
  const expected: Float32Array[] = [];
  for (const fixture of fixtures) expected.push(await runFixture(single, fixture));
  // One call at a time on two devices, everything queued at once on the third (fewer passes: the
  // suite also runs under emulators).
  const [two, three, byDefault] = threadedDevices();
  for (const { label, device } of [two, byDefault]) {
    using _device = device;
    for (let i = 0; i < fixtures.length; i++) {
      const what = `${fixtures[i].name} (${fixtures[i].dtype}, ${fixtures[i].layout}), ${label}`;
      assertSameBits(await runFixture(device, fixtures[i]), expected[i], what);
    }
  }
  using device = three.device;
  // Everything queued before the first read; inputs dropped right after each launch.
  const results = fixtures.map((fixture) => {
    using grad = makeView(
      device,
      fixture.gradOutput,
      gradShape(fixture),
      fixture.dtype,
      fixture.layout,
    );
    return launch(fixture, grad);
  });
  for (let i = results.length - 1; i >= 0; i--) {
    using result = results[i];
    const what = `${fixtures[i].name} (${fixtures[i].dtype}, ${
      fixtures[i].layout
    }), ${three.label}, queued`;
    assertSameBits(await result.toFloat32Array(), expected[i], what);
  }
});

async function runFixture(device: Device, fixture: FixtureCase): Promise<Float32Array> {
  using grad = makeView(
    device,
    fixture.gradOutput,
    gradShape(fixture),
    fixture.dtype,
    fixture.layout,
  );
  using result = launch(fixture, grad);
  return await result.toFloat32Array();
}

/** A random valid call: 1..13 planes (groups of four and remainders), every kernel branch. */
function randomCall(r: () => number): Call {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(r() * items.length)];
  const planes = [1 + Math.floor(r() * 3), 1 + Math.floor(r() * 5)];
  const kind = Math.floor(r() * 3);
  if (kind === 0) {
    const inL = 1 + Math.floor(r() * 40);
    const factor = pick([0.5, 1, 1.7, 2, 3]);
    const outL = Math.max(1, Math.floor(inL * factor));
    return {
      op: "nearestExact1d",
      inputSize: [...planes, inL],
      outputSize: [outL],
      scales: [r() < 0.5 ? 0 : outL / inL],
      alignCorners: false,
    };
  }
  const inH = 1 + Math.floor(r() * 24), inW = 1 + Math.floor(r() * 24);
  const factor = pick([0.5, 1, 1.7, 2, 2.5]);
  const outH = Math.max(1, Math.floor(inH * factor)), outW = Math.max(1, Math.floor(inW * factor));
  return {
    op: kind === 1 ? "nearestExact2d" : "bilinear2d",
    inputSize: [...planes, inH, inW],
    outputSize: [outH, outW],
    scales: r() < 0.5 ? [0, 0] : [outH / inH, outW / inW],
    alignCorners: kind === 2 && r() < 0.3,
  };
}

for (const [numerics, count] of [["pytorch", 300], ["device", 100]] as const) {
  Deno.test(`threads: ${count} random calls (${numerics} numerics), contiguous and strided, with and without out, give the bits of one thread`, async () => {
    const r = rng(numerics === "pytorch" ? 0x7e4d5 : 0x5d4e7);
    using single = Device.open({ backend: "cpu", threads: 1, numerics });
    const devices = threadedDevices(numerics);
    try {
      for (let k = 0; k < count; k++) {
        const call = randomCall(r);
        const dtype: DType = (["float32", "float16", "bfloat16"] as const)[k % 3];
        const layout: ViewLayout = k % 5 === 0
          ? "channelsLast"
          : k % 7 === 0
          ? "offset"
          : "contiguous";
        const values = Float32Array.from(
          { length: gradShape(call).reduce((a, b) => a * b, 1) },
          () => Math.fround(r() * 8 - 4),
        );
        const run = async (device: Device): Promise<Float32Array | string> => {
          using grad = makeView(device, values, gradShape(call), dtype, layout);
          // Every fourth call writes into a stale `out` (filled with NaN: it must be overwritten).
          const length = call.inputSize.reduce((a, b) => a * b, 1);
          using out = k % 4 === 0
            ? device.tensor(new Float32Array(length).fill(NaN), call.inputSize, { dtype })
            : undefined;
          let result: Tensor;
          try {
            result = launch(call, grad, out);
          } catch (error) {
            return String(error); // a call the device's rules reject: rejected the same way
          }
          using _result = result;
          return await result.toFloat32Array();
        };
        const expected = await run(single);
        for (const { label, device } of devices) {
          const what: string = `call ${k} ${JSON.stringify(call)} ${dtype} ${layout}, ${label}`;
          const got = await run(device);
          if (typeof expected === "string" || typeof got === "string") {
            assert.equal(got, expected, what);
          } else assertSameBits(got, expected, what);
        }
      }
    } finally {
      for (const { device } of devices) device.close();
    }
  });
}

/** A bilinear call large enough to take milliseconds. */
const LARGE: Call = {
  op: "bilinear2d",
  inputSize: [4, 64, 64, 64],
  outputSize: [128, 128],
  scales: [0, 0],
  alignCorners: false,
};

function largeGrad(device: Device): Tensor {
  const length = gradShape(LARGE).reduce((a, b) => a * b, 1);
  const values = new Float32Array(length);
  for (let i = 0; i < length; i++) values[i] = ((i * 2654435761) % 1000) / 250 - 2;
  return device.tensor(values, gradShape(LARGE));
}

Deno.test("threads: large ops shared by the calling thread and the workers, back to back and queued, arrive in order with one thread's bits", async () => {
  using single = Device.open({ backend: "cpu", threads: 1 });
  // Every call shared by all its threads (the default plan may run a shape alone where sharing was
  // measured slower).
  using device = openThreaded(2);
  const backend = deviceInternals(device).backend() as unknown as CpuBackend;
  using grad = largeGrad(device);
  using grad1 = largeGrad(single);
  using expected = launch(LARGE, grad1);
  const want = await expected.toFloat32Array();
  const results: Tensor[] = [];
  for (let i = 0; i < 6; i++) results.push(launch(LARGE, grad));
  // (Whether each op was shared depends on timing: a worker still leaving the last job, preempted,
  // makes the next op run alone; the bits are the same either way.)
  assert.equal(backend.workersStarted, 1, "the worker was asked");
  // Reads queued behind the ops, each awaited in turn.
  const reads = results.map((r) => r.toFloat32Array());
  for (const [i, read] of reads.entries()) assertSameBits(await read, want, `op ${i} of six`);
  for (const result of results) result.dispose();
});

Deno.test("threads: queued ops read earlier results and `out` writes in order", async () => {
  using single = Device.open({ backend: "cpu", threads: 1 });
  using device = openThreaded(2);
  const chain = async (d: Device): Promise<Float32Array[]> => {
    using grad = largeGrad(d);
    // down: [4, 64, 64, 64] -> x0.5 grads; then nearest back up, into one `out` reused twice.
    using out = d.zeros([4, 64, 128, 128]);
    const first = launch(LARGE, grad); // [4, 64, 64, 64]
    const up: Call = {
      op: "nearestExact2d",
      inputSize: [4, 64, 128, 128],
      outputSize: [64, 64],
      scales: [0.5, 0.5],
      alignCorners: false,
    };
    launch(up, first, out);
    first.dispose(); // still read by the queued op
    const again = launch(LARGE, out);
    launch(up, again, out);
    again.dispose();
    using last = launch(LARGE, out);
    return [await out.toFloat32Array(), await last.toFloat32Array()];
  };
  const [want, got] = [await chain(single), await chain(device)];
  assertSameBits(got[0], want[0], "out after two writes");
  assertSameBits(got[1], want[1], "op reading out");
});

Deno.test("threads: dispose() of a result being computed, then close() with queued work", async () => {
  const device = Device.open({ backend: "cpu", threads: 2 });
  using grad = largeGrad(device);
  const pending = launch(LARGE, grad);
  const read = pending.toFloat32Array();
  pending.dispose();
  await assert.rejects(
    () => read,
    /toFloat32Array: the float32 tensor \[4, 64, 64, 64\] was disposed/,
  );
  const queued = [launch(LARGE, grad), launch(LARGE, grad), launch(LARGE, grad)];
  const reads = queued.map((t) => t.toFloat32Array());
  const sync = device.synchronize();
  device.close();
  for (const r of reads) await assert.rejects(() => r, TypeError);
  await sync; // settles (a closed device has nothing left to wait for)
  for (const t of queued) assert.equal(t.disposed, true);
  await assert.rejects(() => device.synchronize(), /synchronize: the device was closed/);
  // A new device still computes right while the old workers wind down.
  using next = Device.open({ backend: "cpu", threads: 2 });
  using nextGrad = largeGrad(next);
  using single = Device.open({ backend: "cpu", threads: 1 });
  using singleGrad = largeGrad(single);
  using a = launch(LARGE, nextGrad);
  using b = launch(LARGE, singleGrad);
  assertSameBits(await a.toFloat32Array(), await b.toFloat32Array(), "after another device closed");
});

Deno.test("threads: Device.open rejects a bad thread count, naming the option", () => {
  for (const threads of [0, -1, 1.5, 1025, NaN, "2"]) {
    assert.throws(
      () => Device.open({ backend: "cpu", threads: threads as number }),
      (e) =>
        e instanceof RangeError &&
        /^Device\.open threads must be an integer from 1 to 1024, got /.test(e.message),
    );
  }
});

Deno.test("threads: a script that never closes its device exits, needing no permission", async () => {
  const mod = new URL("../../mod.ts", import.meta.url).href;
  const script = `
    import { Device, upsampleBilinear2dBackward } from "${mod}";
    const device = Device.open({ backend: "cpu", threads: 2 });
    const grad = device.tensor(new Float32Array(4 * 64 * 128 * 128).fill(1), [4, 64, 128, 128]);
    const run = () =>
      upsampleBilinear2dBackward(grad, { outputSize: [128, 128], inputSize: [4, 64, 64, 64] });
    const values = await run().toFloat32Array();
    run(); // still queued when the script ends
    console.log(values.length, values[0]);
  `;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-config", "--no-lock", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(script));
  await writer.close();
  // Only a hang guard, not a speed bound: generous enough for a loaded machine or qemu (.ci/aarch64).
  const timer = setTimeout(() => child.kill("SIGKILL"), 600_000);
  const { code, stdout, stderr } = await child.output();
  clearTimeout(timer);
  const text = new TextDecoder().decode(stdout);
  assert.equal(code, 0, `exit code ${code}; stderr: ${new TextDecoder().decode(stderr)}`);
  assert.equal(text.trim(), "1048576 4");
});

Deno.test("threads: the shared memory is made at its full size (it cannot grow, so V8 caches its size), else growable, same bits", async () => {
  const sized = new WasmKernels(64 * 2 ** 20, true);
  assert.ok(sized.heap.memory.buffer instanceof SharedArrayBuffer);
  assert.equal(sized.heap.memory.buffer.byteLength, 64 * 2 ** 20);

  // A host that refuses to commit that much address space at once: the memory grows instead.
  const Memory = WebAssembly.Memory;
  let refused = 0;
  WebAssembly.Memory = class extends Memory {
    constructor(descriptor: WebAssembly.MemoryDescriptor) {
      if (descriptor.shared && descriptor.initial === descriptor.maximum) {
        refused++;
        throw new RangeError("WebAssembly.Memory(): could not allocate memory");
      }
      super(descriptor);
    }
  };
  let growable: Device;
  try {
    const small = new WasmKernels(64 * 2 ** 20, true);
    assert.ok(small.heap.memory.buffer.byteLength < 64 * 2 ** 20);
    assert.notEqual(small.module, sized.module);
    growable = openThreaded(2);
  } finally {
    WebAssembly.Memory = Memory;
  }
  assert.equal(refused, 2);
  using one = Device.open({ backend: "cpu", threads: 1 });
  const fixed = openThreaded(2);
  const call: Call = {
    op: "bilinear2d",
    inputSize: [2, 5, 9, 11],
    outputSize: [17, 23],
    scales: [1.9, 2.1],
    alignCorners: false,
  };
  const values = Float32Array.from({ length: 2 * 5 * 17 * 23 }, (_, i) => Math.sin(i) * 3);
  const results = [];
  for (const device of [one, fixed, growable]) {
    using grad = device.tensor(values, gradShape(call));
    using result = launch(call, grad);
    results.push(await result.toFloat32Array());
  }
  fixed.close();
  growable.close();
  assert.deepEqual(results[1], results[0]);
  assert.deepEqual(results[2], results[0]);
});

Deno.test("threads: workers start when a call first needs them, one per chunk beyond the calling thread's at most; few planes split into bands of rows", async () => {
  using device = openThreaded(3);
  const backend = deviceInternals(device).backend() as unknown as CpuBackend;
  using one = Device.open({ backend: "cpu", threads: 1 });
  const run = async (planes: number, rows: number): Promise<Float32Array[]> => {
    const call: Call = {
      op: "nearestExact2d",
      inputSize: [1, planes, rows, 7],
      outputSize: [Math.floor(rows * 1.8), 13],
      scales: [1.8, 1.9],
      alignCorners: false,
    };
    const length = planes * call.outputSize[0] * 13;
    const values = Float32Array.from({ length }, (_, i) => (i % 29) - 14.5);
    const results = [];
    for (const d of [one, device]) {
      using grad = d.tensor(values, gradShape(call));
      using result = launch(call, grad);
      results.push(await result.toFloat32Array());
    }
    return results;
  };
  assert.equal(backend.workersStarted, 0);
  // Four planes of one row are one chunk of whole vectors, and one band: the calling thread alone.
  const [expectedFew, few] = await run(4, 1);
  assert.deepEqual(few, expectedFew);
  assert.equal(backend.workersStarted, 0);
  assert.equal(backend.lastWorkers, 0);
  // Eight planes of one row: two chunks, the calling thread and one worker.
  const [expectedTwo, two] = await run(8, 1);
  assert.deepEqual(two, expectedTwo);
  assert.equal(backend.workersStarted, 1);
  assert.equal(backend.lastWorkers, 2);
  // Two planes of five rows: bands of rows for the calling thread and both workers.
  const [expectedBands, bands] = await run(2, 5);
  assert.deepEqual(bands, expectedBands);
  assert.equal(backend.workersStarted, 2);
  assert.equal(backend.lastWorkers, 3);
});

Deno.test("threads: the threshold counts both tensors' elements: one element below it stays on the calling thread, at it the workers take the call", async () => {
  // [what, the call, both tensors' elements]; each can be cut into chunks for two threads.
  const calls: Array<[string, (d: Device) => Tensor, number]> = [
    ["backward 2d", (d) =>
      upsampleNearestExact2dBackward(d.zeros([1, 4, 8, 8]), {
        outputSize: [8, 8],
        inputSize: [1, 4, 4, 4],
      }), 4 * (64 + 16)],
    [
      "forward 2d",
      (d) => upsampleBilinear2d(d.zeros([1, 4, 4, 4]), { outputSize: [8, 8] }),
      4 * (16 + 64),
    ],
    [
      "forward 1d",
      (d) => upsampleNearestExact1d(d.zeros([2, 4, 16]), { outputSize: [64] }),
      8 * (16 + 64),
    ],
  ];
  for (const [what, call, elements] of calls) {
    for (const [minParallel, shared] of [[elements + 1, false], [elements, true]] as const) {
      using device = openThreaded(2, "pytorch", minParallel);
      const backend = deviceInternals(device).backend() as unknown as CpuBackend;
      using _result = call(device);
      await device.synchronize();
      assert.equal(backend.workersStarted > 0, shared, `${what}, threshold ${minParallel}`);
    }
  }
});
