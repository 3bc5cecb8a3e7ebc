// Lifetimes and concurrency on both backends: use after dispose() or close() is a TypeError naming
// the tensor, dispose() twice is a no-op, close() frees live tensors exactly once, tensors dropped
// without dispose() are freed by the FinalizationRegistry (run with --v8-flags=--expose-gc), many
// queued ops awaited out of order are all right, and two emulated NPUs used interleaved never mix
// memory or streams (every device address and stream handed to the runtime is checked against the
// context that is current at that moment).

import assert from "node:assert/strict";
import {
  Device,
  type DType,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import type { Backend } from "../../src/backend.ts";
import { deviceInternals } from "../../src/device.ts";
import type { NpuBackend } from "../../src/ffi/npu_backend.ts";
import {
  assertMatchesDeviceOp,
  type OpOptions,
  type UpsampleFunction,
} from "../support/device_model.ts";
import {
  assertBitEqual,
  assertClose,
  BACKENDS,
  emu,
  EMU_DIR,
  EMULATED_LANE,
  emuLive,
  makeView,
  rng,
} from "../support/helpers.ts";

const gc = (globalThis as { gc?: () => void }).gc;
const macrotask = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

/** Collects garbage and lets finalizers run until `done()` or the attempts run out. */
async function collectUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 20 && !done(); i++) {
    gc!();
    await macrotask();
    await macrotask();
  }
}

/** Counts the backend's free() calls (works on both backends). */
function countFrees(device: Device): { frees: number } {
  const backend = deviceInternals(device).backend() as Backend<unknown>;
  const counter = { frees: 0 };
  const free = backend.free.bind(backend);
  backend.free = (handle: unknown): void => {
    counter.frees++;
    free(handle);
  };
  return counter;
}

const npuOf = (device: Device): NpuBackend =>
  deviceInternals(device).backend() as unknown as NpuBackend;

for (const backend of BACKENDS) {
  const emulated = backend.emulated;

  backend.test(`lifetimes on ${backend.label}: use after dispose() is a TypeError naming the tensor`, async () => {
    using device = backend.open();
    const t = device.tensor([1, 2, 3, 4, 5, 6], [1, 2, 3], { dtype: "float16" });
    using view = t.transpose(1, 2);
    using out = device.zeros([1, 2, 1], { dtype: "float16" });
    t.dispose();
    assert.equal(t.disposed, true);
    assert.equal(view.disposed, false, "a view keeps the storage");
    const named = (what: string): RegExp =>
      new RegExp(`^${what}: the float16 tensor \\[1, 2, 3\\] was disposed`);
    assert.throws(
      () => t.permute(0, 2, 1),
      (e) => e instanceof TypeError && named("permute").test(e.message),
    );
    assert.throws(
      () => t.transpose(0, 1),
      (e) => e instanceof TypeError && named("transpose").test(e.message),
    );
    assert.throws(
      () => t.slice(2, 0, 1),
      (e) => e instanceof TypeError && named("slice").test(e.message),
    );
    await assert.rejects(
      () => t.toFloat32Array(),
      (e) => e instanceof TypeError && named("toFloat32Array").test(e.message),
    );
    const options = { outputSize: [3], inputSize: [1, 2, 1] };
    assert.throws(
      () => upsampleNearestExact1dBackward(t, options),
      new RegExp(
        `^TypeError: upsampleNearestExact1dBackward: gradOutput \\(float16 tensor \\[1, 2, 3\\] ` +
          `on ${device.backend}\\) was disposed`,
      ),
    );
    out.dispose();
    assert.throws(
      () => upsampleNearestExact1dBackward(view.transpose(1, 2), { ...options, out }),
      /^TypeError: upsampleNearestExact1dBackward: out \(float16 tensor \[1, 2, 1\] on \w+\) was disposed/,
    );
    assert.deepEqual([...await view.toFloat32Array()], [1, 4, 2, 5, 3, 6]);
  });

  backend.test(`lifetimes on ${backend.label}: dispose() twice is a no-op, also through views`, async () => {
    using device = backend.open();
    const frees = countFrees(device);
    const base = device.tensor([1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 4]);
    const view = base.slice(2, 1, 3);
    const before = emulated ? emuLive() : null;
    view.dispose();
    view.dispose();
    view[Symbol.dispose]();
    assert.equal(frees.frees, 0, "disposing a view many times must not free the shared storage");
    assert.equal(base.disposed, false);
    assert.deepEqual([...await base.toFloat32Array()], [1, 2, 3, 4, 5, 6, 7, 8]);
    if (before) assert.deepEqual(emuLive(), before);
    base.dispose();
    base.dispose();
    base[Symbol.dispose]();
    assert.equal(frees.frees, 1, "the storage is freed exactly once");
    if (before) assert.equal(emuLive().allocations, before.allocations - 1n);
  });

  backend.test(`lifetimes on ${backend.label}: a dispose() while a read waits for the stream`, async () => {
    using device = backend.open();
    const baseline = emulated ? emuLive() : null;
    using grad = device.tensor(new Array(16).fill(1), [1, 1, 4, 4]);
    if (emulated) emu().aclemuSetStreamDelayUs(20_000n);
    try {
      const result = upsampleBilinear2dBackward(grad, {
        outputSize: [4, 4],
        inputSize: [1, 1, 2, 2],
      });
      const read = result.toFloat32Array();
      result.dispose();
      await assert.rejects(
        () => read,
        (e) =>
          e instanceof TypeError &&
          /^toFloat32Array: the float32 tensor \[1, 1, 2, 2\] was disposed/.test(e.message),
      );
    } finally {
      if (emulated) emu().aclemuSetStreamDelayUs(0n);
    }
    await device.synchronize();
    grad.dispose();
    if (baseline) assert.deepEqual(emuLive(), baseline);
  });

  backend.test(`lifetimes on ${backend.label}: close() with live tensors frees each once, then everything is a TypeError`, async () => {
    const baseline = emulated ? emuLive() : null;
    const streams = emulated ? emu().aclemuLiveStreams() : 0n;
    const device = backend.open();
    const frees = countFrees(device);
    const live: Tensor[] = [];
    for (const dtype of ["float32", "float16", "bfloat16"] as const) {
      live.push(device.tensor([1, 2, 3, 4], [1, 1, 4], { dtype }));
    }
    const views = live.map((t) => t.slice(2, 1));
    const disposedEarly = device.zeros([2, 2]);
    disposedEarly.dispose();
    // Results still queued on the stream when the device closes.
    if (emulated) emu().aclemuSetStreamDelayUs(2_000n);
    const results = live.map((t) =>
      upsampleNearestExact1dBackward(t, { outputSize: [4], inputSize: [1, 1, 2] })
    );
    const storages = live.length + results.length + 1;
    device.close();
    if (emulated) emu().aclemuSetStreamDelayUs(0n);
    assert.equal(frees.frees, storages, "every storage freed exactly once");
    if (baseline) {
      assert.deepEqual(emuLive(), baseline, "close() returned all device memory");
      assert.equal(emu().aclemuLiveStreams(), streams, "close() destroyed the stream");
    }
    for (const t of [...live, ...views, ...results]) {
      assert.equal(t.disposed, true);
      assert.throws(
        () => t.slice(2, 0, 1),
        (e) =>
          e instanceof TypeError &&
          /the (float32|float16|bfloat16) tensor \[1, 1, \d\] was disposed/.test(e.message),
      );
      await assert.rejects(() => t.toFloat32Array(), TypeError);
    }
    assert.throws(
      () => upsampleNearestExact1dBackward(live[0], { outputSize: [4], inputSize: [1, 1, 2] }),
      /^TypeError: upsampleNearestExact1dBackward: gradOutput \(float32 tensor \[1, 1, 4\] on \w+\) was disposed or its device closed/,
    );
    assert.throws(() => device.tensor([1], [1]), /^TypeError: tensor: the device was closed/);
    assert.throws(() => device.zeros([1]), /^TypeError: zeros: the device was closed/);
    assert.throws(
      () => device.setDeterministic(true),
      /^TypeError: setDeterministic: the device was closed/,
    );
    await assert.rejects(() => device.synchronize(), /synchronize: the device was closed/);
    // Disposing after close, closing again, and a new device reusing the freed memory: no double free.
    using next = backend.open();
    const nextBefore = emulated ? emuLive() : null;
    using keep = next.tensor([5, 6, 7, 8], [1, 1, 4]);
    for (const t of [...live, ...views, ...results]) t.dispose();
    device.close();
    assert.equal(frees.frees, storages, "nothing freed twice");
    if (nextBefore) assert.equal(emuLive().allocations, nextBefore.allocations + 1n);
    assert.deepEqual([...await keep.toFloat32Array()], [5, 6, 7, 8]);
  });

  Deno.test({
    name:
      `lifetimes on ${backend.label}: tensors dropped without dispose() are freed by the FinalizationRegistry`,
    ignore: typeof gc !== "function" || backend.ignore !== undefined,
    fn: async () => {
      using device = backend.open();
      const frees = countFrees(device);
      await device.synchronize();
      const before = emulated ? emuLive().allocations : 0n;
      // Allocate in a nested function and keep no reference: only the registry can free these.
      const drop = (count: number): void => {
        for (let i = 0; i < count; i++) {
          const t = device.zeros([64], { dtype: i % 2 === 0 ? "float32" : "bfloat16" });
          t.slice(0, 1, 5); // a dropped view too
        }
      };
      drop(24);
      if (emulated) assert.equal(emuLive().allocations, before + 24n);
      await collectUntil(() => frees.frees >= 24);
      assert.equal(frees.frees, 24, "every dropped storage freed once");
      if (emulated) assert.equal(emuLive().allocations, before, "device memory back after gc");

      // Dropped op results whose launches are still queued: freed after the work has run.
      const dropResults = (count: number): void => {
        using grad = device.tensor(new Array(32).fill(1), [1, 2, 4, 4]);
        for (let i = 0; i < count; i++) {
          upsampleBilinear2dBackward(grad, { outputSize: [4, 4], inputSize: [1, 2, 2, 2] });
        }
      };
      if (emulated) emu().aclemuSetStreamDelayUs(500n);
      try {
        dropResults(10);
        await collectUntil(() => frees.frees >= 24 + 11);
      } finally {
        if (emulated) emu().aclemuSetStreamDelayUs(0n);
      }
      await device.synchronize();
      assert.equal(frees.frees, 24 + 11);
      if (emulated) {
        assert.equal(emuLive().allocations, before, "queued results freed after the sync");
      }
    },
  });

  backend.test(`lifetimes on ${backend.label}: 150 queued ops awaited out of order, inputs dropped while queued`, async () => {
    using device = backend.open();
    using cpu = Device.open({ backend: "cpu" });
    const r = rng(0x11fe);
    const baseline = emulated ? emuLive() : null;
    const jobs: Array<{
      result: Tensor;
      want: Float32Array;
      bilinear32: boolean;
      what: string;
      device: { fn: UpsampleFunction; values: Float32Array; dtype: DType; options: OpOptions };
    }> = [];
    if (emulated) emu().aclemuSetStreamDelayUs(100n);
    try {
      for (let k = 0; k < 150; k++) {
        const kind = k % 3;
        const dtype: DType = (["float32", "float16", "bfloat16"] as const)[Math.floor(r() * 3)];
        const shape = kind === 0 ? [2, 3, 7] : [1 + Math.floor(r() * 2), 2, 5, 6];
        const values = Float32Array.from(
          { length: shape.reduce((a, b) => a * b, 1) },
          () => Math.fround(r() * 4 - 2),
        );
        const layout = (["contiguous", "channelsLast", "transposed", "offset"] as const)[k % 4];
        const grad = makeView(device, values, shape, dtype, layout);
        const reference = cpu.tensor(values, shape, { dtype });
        const run = (g: Tensor, out?: Tensor): Tensor =>
          kind === 0
            ? upsampleNearestExact1dBackward(g, { outputSize: [7], inputSize: [2, 3, 3], out })
            : kind === 1
            ? upsampleNearestExact2dBackward(g, {
              outputSize: [5, 6],
              inputSize: [shape[0], 2, 2, 4],
              out,
            })
            : upsampleBilinear2dBackward(g, {
              outputSize: [5, 6],
              inputSize: [shape[0], 2, 3, 2],
              alignCorners: k % 2 === 0,
              out,
            });
        const inputSize = kind === 0 ? [2, 3, 3] : [shape[0], 2, ...(kind === 1 ? [2, 4] : [3, 2])];
        const fn = [
          upsampleNearestExact1dBackward,
          upsampleNearestExact2dBackward,
          upsampleBilinear2dBackward,
        ][kind];
        const deviceCall = {
          fn,
          values,
          dtype,
          options: { outputSize: kind === 0 ? [7] : [5, 6], inputSize, alignCorners: k % 2 === 0 },
        };
        let out: Tensor | undefined;
        if (k % 5 === 0) {
          using buffer = device.zeros([...inputSize.slice(0, -1), inputSize.at(-1)! + 3], {
            dtype,
          });
          out = buffer.slice(inputSize.length - 1, 2, inputSize.at(-1)! + 2);
        }
        const result = run(grad, out);
        // Dropped at once: the queued launch must still read it (its free is deferred).
        grad.dispose();
        using expected = run(reference);
        reference.dispose();
        jobs.push({
          result,
          want: await expected.toFloat32Array(),
          bilinear32: kind === 2 && dtype === "float32",
          what: `job ${k} (kind ${kind}, ${dtype}, ${layout}${out ? ", strided out" : ""})`,
          device: deviceCall,
        });
      }
      // Out of order: shuffled, a third all at once, a third one by one, a third racing synchronize().
      for (let i = jobs.length - 1; i > 0; i--) {
        const j = Math.floor(r() * (i + 1));
        [jobs[i], jobs[j]] = [jobs[j], jobs[i]];
      }
      // The CPU lanes against the CPU, the NPU against what the device computes.
      const check = async (job: typeof jobs[number], got: Float32Array): Promise<void> => {
        const d = job.device;
        if (backend.kind === "npu") {
          return await assertMatchesDeviceOp(got, d.fn, d.values, d.dtype, d.options, job.what);
        }
        if (job.bilinear32) return assertClose(got, job.want, job.what, { ulps: 4 });
        assertBitEqual(got, job.want, job.what);
      };
      const third = Math.floor(jobs.length / 3);
      const together = jobs.slice(0, third);
      const values = await Promise.all(together.map((j) => j.result.toFloat32Array()));
      for (const [i, job] of together.entries()) await check(job, values[i]);
      for (const job of jobs.slice(third, 2 * third).reverse()) {
        await check(job, await job.result.toFloat32Array());
      }
      const racing = jobs.slice(2 * third);
      const [, ...raced] = await Promise.all([
        device.synchronize(),
        ...racing.map((j) => j.result.toFloat32Array()),
        device.synchronize(),
      ]);
      for (const [i, job] of racing.entries()) await check(job, raced[i] as Float32Array);
    } finally {
      if (emulated) emu().aclemuSetStreamDelayUs(0n);
      for (const job of jobs) job.result.dispose();
    }
    await device.synchronize();
    if (baseline) {
      const after = emuLive();
      assert.equal(after.objects, baseline.objects, "aclnn objects leaked");
      assert.ok(after.allocations <= baseline.allocations + 1n, "device memory leaked"); // + workspace
    }
  });
}

const CONTEXT_PROBE = {
  aclrtGetCurrentContext: { parameters: ["buffer"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

type Fn = (...args: unknown[]) => unknown;

EMULATED_LANE.test("two emulated NPUs used interleaved never mix memory or streams", async () => {
  const baseline = emuLive();
  const probe = Deno.dlopen(`${EMU_DIR}libascendcl.so`, CONTEXT_PROBE);
  const slot = new BigUint64Array(1);
  const current = (): bigint => (probe.symbols.aclrtGetCurrentContext(slot) === 0 ? slot[0] : 0n);
  const d0 = Device.open({ backend: "npu", deviceId: 0, libDir: EMU_DIR });
  const d1 = Device.open({ backend: "npu", deviceId: 1, libDir: EMU_DIR });
  const b0 = npuOf(d0), b1 = npuOf(d1);
  assert.notEqual(b0.context, b1.context);
  assert.notEqual(b0.stream, b1.stream);
  const { libs } = b0.runtime;
  assert.equal(b1.runtime.libs, libs, "one loaded runtime");
  const streams = new Map([[b0.stream, b0.context], [b1.stream, b1.context]]);
  const contextName = new Map([[b0.context, "device 0"], [b1.context, "device 1"], [0n, "none"]]);
  // Device allocations by base address: size and the context current when they were made.
  const owners = new Map<bigint, { bytes: bigint; context: bigint }>();
  const ownerOf = (address: bigint): bigint | null => {
    for (const [base, { bytes, context }] of owners) {
      if (address >= base && address < base + bytes) return context;
    }
    return null;
  };
  const violations: string[] = [];
  const expect = (what: string, owner: bigint | null | undefined): void => {
    const now = current();
    if (owner === null || owner === undefined) violations.push(`${what}: unknown device address`);
    else if (owner !== now) {
      violations.push(
        `${what}: belongs to ${contextName.get(owner)}, current is ${contextName.get(now)}`,
      );
    }
  };
  const counts = { malloc: 0, free: 0, copies: 0, tensors: 0, launches: 0 };
  const saved: Array<[Record<string, unknown>, string, unknown]> = [];
  const patch = (table: object, name: string, wrap: (original: Fn) => Fn): void => {
    const t = table as Record<string, unknown>;
    if (typeof t[name] !== "function") return;
    saved.push([t, name, t[name]]);
    t[name] = wrap(t[name] as Fn);
  };
  patch(libs.acl, "aclrtMalloc", (f) => (out, size, policy) => {
    const status = f(out, size, policy);
    if (status === 0) {
      owners.set((out as BigUint64Array)[0], { bytes: BigInt(size as bigint), context: current() });
      counts.malloc++;
    }
    return status;
  });
  patch(libs.acl, "aclrtFree", (f) => (address) => {
    expect("aclrtFree", owners.get(address as bigint)?.context ?? null);
    owners.delete(address as bigint);
    counts.free++;
    return f(address);
  });
  patch(libs.acl, "aclrtMemcpyToDevice", (f) => (dst, ...rest) => {
    expect("upload", ownerOf(dst as bigint));
    counts.copies++;
    return f(dst, ...rest);
  });
  patch(libs.acl, "aclrtMemcpyToHost", (f) => (dst, max, src, ...rest) => {
    expect("download", ownerOf(src as bigint));
    counts.copies++;
    return f(dst, max, src, ...rest);
  });
  patch(libs.nnopbase, "aclCreateTensor", (f) => (...args) => {
    const address = args[8] as bigint;
    if (address !== 0n) expect("aclCreateTensor", ownerOf(address));
    counts.tensors++;
    return f(...args);
  });
  for (const name of Object.keys(libs.opapi).filter((n) => !n.endsWith("GetWorkspaceSize"))) {
    patch(libs.opapi, name, (f) => (workspace, size, executor, stream) => {
      expect(`${name} stream`, streams.get(stream as bigint));
      if (workspace !== 0n) expect(`${name} workspace`, ownerOf(workspace as bigint));
      counts.launches++;
      return f(workspace, size, executor, stream);
    });
  }

  const r = rng(0xd0d1);
  try {
    emu().aclemuSetStreamDelayUs(50n);
    type Job = {
      result: Tensor;
      values: Float32Array;
      fn: UpsampleFunction;
      device: Device;
      what: string;
    };
    const jobs: Job[] = [];
    const options = { outputSize: [6, 6], inputSize: [1, 2, 3, 3] };
    const ops = [upsampleNearestExact2dBackward, upsampleBilinear2dBackward];
    const check = (got: Float32Array, j: Job): Promise<void> =>
      assertMatchesDeviceOp(got, j.fn, j.values, "float32", options, j.what);
    for (let k = 0; k < 120; k++) {
      const device = r() < 0.5 ? d0 : d1;
      const values = Float32Array.from({ length: 72 }, () => Math.fround(r() * 2 - 1));
      const op = ops[k % 2];
      using grad = device.tensor(values, [1, 2, 6, 6]);
      let out: Tensor | undefined;
      if (k % 4 === 0) out = device.zeros(options.inputSize);
      jobs.push({
        result: op(grad, { ...options, out }),
        values,
        fn: op,
        device,
        what: `job ${k} on ${device === d0 ? "device 0" : "device 1"}`,
      });
      // An out from the other device is refused before anything happens.
      const other = jobs.find((j) => j.device !== device);
      if (other) {
        assert.throws(
          () => op(grad, { ...options, out: other.result }),
          /out is on another device/,
        );
      }
      // Random frees interleaved with the other device's work.
      if (r() < 0.3 && jobs.length > 2) {
        const victim = jobs.splice(Math.floor(r() * (jobs.length - 1)), 1)[0];
        victim.result.dispose();
      }
    }
    // Close device 1 while device 0 still has queued work: device 0's results are untouched.
    const on1 = jobs.filter((j) => j.device === d1);
    const on0 = jobs.filter((j) => j.device === d0);
    await Promise.all(
      on1.map(async (j) => check(await j.result.toFloat32Array(), j)),
    );
    // More queued work on device 0, slowed down, so it is surely pending when device 1 closes.
    emu().aclemuSetStreamDelayUs(2_000n);
    for (let k = 0; k < 4; k++) {
      const values = Float32Array.from({ length: 72 }, () => Math.fround(r() * 2 - 1));
      using grad = d0.tensor(values, [1, 2, 6, 6]);
      const result = upsampleBilinear2dBackward(grad, options);
      on0.push({
        result,
        values,
        fn: upsampleBilinear2dBackward,
        device: d0,
        what: `late job ${k}`,
      });
    }
    d1.close();
    for (const j of on1) assert.equal(j.result.disposed, true);
    for (const j of on0.reverse()) {
      await check(await j.result.toFloat32Array(), j);
      j.result.dispose();
    }
  } finally {
    emu().aclemuSetStreamDelayUs(0n);
    d0.close();
    d1.close();
    for (const [table, name, original] of saved) table[name] = original;
    probe.close();
  }
  console.log(
    `  checked ${counts.malloc} allocations, ${counts.free} frees, ${counts.copies} copies, ` +
      `${counts.tensors} aclTensors, ${counts.launches} launches against the current context`,
  );
  assert.deepEqual(violations.slice(0, 10), [], `${violations.length} context violations`);
  assert.ok(counts.launches >= 124, "every launch was checked");
  assert.equal(counts.free, counts.malloc, "every allocation was freed once");
  assert.deepEqual(emuLive(), baseline, "both devices closed: nothing left");
});
