// The public forward ops (upsampleNearestExact1d, upsampleNearestExact2d, upsampleBilinear2d) on
// the CPU backend: every PyTorch 1.13 fixture of tests/fixtures/forward/ through the public API, the
// input as a contiguous, channels-last, transposed or offset view and the result allocated or
// written into a strided `out` view, bit for bit (cells outside `out`'s view untouched); the same
// bits with one thread and with two (every call sent to the workers), queued or awaited one by one;
// the `deterministic` option; empty N or C; lifetimes as the backward's (the result freed when the
// launch fails, `out` returned and kept, inputs and results disposed while queued, close()), and on
// the emulated NPU a failed launch of each forward op leaves no device memory behind.

import assert from "node:assert/strict";
import {
  AclError,
  Device,
  type DType,
  type Tensor,
  upsampleBilinear2d,
  upsampleNearestExact1d,
  upsampleNearestExact2d,
} from "../../mod.ts";
import type { Backend } from "../../src/backend.ts";
import type { CpuBackend } from "../../src/cpu/backend.ts";
import { isChannelsLast } from "../../src/cpu/pytorch/forward/mod.ts";
import { deviceInternals } from "../../src/device.ts";
import type { UpsampleOp } from "../../src/rules/ops.ts";
import { contiguousStrides } from "../../src/tensor/layout.ts";
import {
  count,
  encode,
  firstDifference,
  FORWARD_LAYOUTS,
  type ForwardCase,
  type ForwardLayout,
  loadForwardFixtures,
  nanStorage,
  outputShape,
  type Raw,
  rawSha256,
  show,
  storageIndices,
} from "../support/forward_fixtures.ts";
import { emu, EMULATED_LANE, emuLive, openThreaded, rng } from "../support/helpers.ts";

const allFixtures = await loadForwardFixtures();

/**
 * Whether the public API takes the fixture's arguments: its scales agree with its sizes
 * (`floor(in * scale) == out`, `interpolate`'s rule). A few fixtures call PyTorch's aten op with
 * scales that disagree ("disagree-*": the kernels' index rule then follows the scale); the public
 * ops refuse those, which the first test checks. (Nearest-exact past 50x, e.g. 1x1 -> 128x128, is
 * the forward's to run: the 50x limit is the backward's only.)
 */
function reachable(c: ForwardCase): boolean {
  return c.scales.every((s, i) =>
    s === 0 || Math.floor(c.inputSize[2 + i] * s) === c.outputSize[i]
  );
}

const fixtures = allFixtures.filter(reachable);

/** The forward problem of a call (a fixture, or a generated call). */
interface Problem {
  op: UpsampleOp;
  dtype: DType;
  inputSize: number[];
  outputSize: number[];
  scales: number[];
  alignCorners: boolean;
}

/** Calls the public op of `p` on `input`. */
function forward(p: Problem, input: Tensor, extra: Record<string, unknown> = {}): Tensor {
  const { outputSize, scales } = p;
  if (p.op === "nearestExact1d") {
    return upsampleNearestExact1d(input, { outputSize, scales: scales[0], ...extra });
  }
  if (p.op === "nearestExact2d") {
    return upsampleNearestExact2d(input, {
      outputSize,
      scalesH: scales[0],
      scalesW: scales[1],
      ...extra,
    });
  }
  return upsampleBilinear2d(input, {
    outputSize,
    scalesH: scales[0],
    scalesW: scales[1],
    alignCorners: p.alignCorners,
    ...extra,
  });
}

/** A tensor's logical elements in storage encoding (float32 values or 16-bit patterns). */
async function readRaw(t: Tensor): Promise<Raw> {
  return t.dtype === "float32" ? await t.toFloat32Array() : await t.toRawBits();
}

/**
 * A view of `shape` laid out as `layout` over a storage tensor of its own, holding `raw` (logical
 * order, storage encoding); the storage's other cells hold the dtype's NaN. channelsLast: storage
 * `[N, H, W, C]` permuted; transposed: the last two dims of the storage swapped back; offset: the
 * second of N + 1 blocks of a storage `[N + 1, ...]` (an odd offset when a block is).
 */
function viewOf(
  device: Device,
  raw: Raw,
  dtype: DType,
  shape: readonly number[],
  layout: ForwardLayout,
): { view: Tensor; storage: Tensor; indices: Float64Array } {
  const rank = shape.length;
  let perm = Array.from({ length: rank }, (_, i) => i);
  let storageShape = [...shape];
  let offset = 0;
  if (layout === "channelsLast") {
    assert.equal(rank, 4, "channels-last needs a 4-D shape");
    perm = [0, 3, 1, 2]; // logical dim i is storage dim perm[i]
    storageShape = [shape[0], shape[2], shape[3], shape[1]];
  } else if (layout === "transposed") {
    [perm[rank - 1], perm[rank - 2]] = [perm[rank - 2], perm[rank - 1]];
    [storageShape[rank - 1], storageShape[rank - 2]] = [shape[rank - 2], shape[rank - 1]];
  } else if (layout === "offset") {
    storageShape[0] += 1;
    offset = count(shape.slice(1));
  }
  const storageStrides = contiguousStrides(storageShape);
  const strides = perm.map((d) => storageStrides[d]);
  const indices = storageIndices(shape, strides, offset);
  const data = nanStorage(dtype, count(storageShape));
  for (let k = 0; k < indices.length; k++) data[indices[k]] = raw[k];
  const storage = device.tensor(data, storageShape, { dtype });
  let view = storage;
  if (layout === "channelsLast") view = storage.permute(0, 3, 1, 2);
  else if (layout === "transposed") view = storage.transpose(rank - 2, rank - 1);
  else if (layout === "offset") view = storage.slice(0, 1);
  assert.deepEqual([...view.shape], [...shape]);
  if (indices.length > 0) {
    // (An empty view's offset and strides are normalized.)
    assert.deepEqual([...view.strides], strides, `${layout} view strides`);
    assert.equal(view.offset, offset, `${layout} view offset`);
  }
  return { view, storage, indices };
}

/** The fixture's input in the layout PyTorch computed from (a view; it keeps its storage). */
function inputOf(device: Device, c: ForwardCase): Tensor {
  const { view, storage } = viewOf(device, c.input, c.dtype, c.inputSize, c.layout);
  if (view !== storage) storage.dispose();
  return view;
}

/** Throws unless `got` (logical, storage encoding) holds the fixture's bits (or hash). */
async function checkFixture(c: ForwardCase, got: Raw, what: string): Promise<void> {
  if (c.expected === null) {
    assert.equal(await rawSha256(got), c.expectedSha256, `${c.name} ${what}: output hash`);
    return;
  }
  const i = firstDifference(c.dtype, got, c.expected);
  if (i >= 0) {
    assert.fail(
      `${c.name} ${what}: element ${i} is ${show(c.dtype, got, i)}, PyTorch ${
        show(c.dtype, c.expected, i)
      }`,
    );
  }
}

/** The layouts a shape can be presented in (channels-last only for 4-D). */
function layoutsFor(shape: readonly number[]): ForwardLayout[] {
  return FORWARD_LAYOUTS.filter((l) => l !== "channelsLast" || shape.length === 4);
}

/** Strides of a layout, for the channels-last test of PyTorch's bilinear dispatch. */
function stridesOf(shape: readonly number[], layout: ForwardLayout): number[] {
  const rank = shape.length;
  if (layout === "channelsLast") {
    const [, c, h, w] = shape;
    return [h * w * c, 1, w * c, c];
  }
  if (layout === "transposed") {
    const swapped = [...shape];
    [swapped[rank - 1], swapped[rank - 2]] = [swapped[rank - 2], swapped[rank - 1]];
    const s = contiguousStrides(swapped);
    [s[rank - 1], s[rank - 2]] = [s[rank - 2], s[rank - 1]];
    return s;
  }
  return contiguousStrides(shape);
}

/**
 * The input layouts a fixture's bits hold for: nearest-exact copies whatever the layout; PyTorch's
 * bilinear runs its channels-last kernel exactly when the input is channels-last contiguous (other
 * layouts are made contiguous first), so the layouts on the same side of that test as the one PyTorch
 * computed from.
 */
function inputLayouts(c: ForwardCase): ForwardLayout[] {
  const all = layoutsFor(c.inputSize);
  if (c.op !== "bilinear2d") return all;
  const side = (l: ForwardLayout): boolean =>
    isChannelsLast(c.inputSize, stridesOf(c.inputSize, l));
  return all.filter((l) => side(l) === side(c.layout));
}

const cpuOf = (device: Device): CpuBackend =>
  deviceInternals(device).backend() as unknown as CpuBackend;

Deno.test("forward API: every fixture, input in each layout PyTorch's bits hold for, bit for bit", async () => {
  using device = Device.open({ backend: "cpu", threads: 1 });
  const spy = spyForward(device);
  // The fixtures the public API refuses: scales that disagree with the sizes.
  const refused = allFixtures.filter((c) => !reachable(c));
  assert.ok(refused.length > 0 && refused.every((c) => c.name.includes("disagree")), `${refused}`);
  for (const c of refused) {
    using x = device.tensor(c.input, c.inputSize, { dtype: c.dtype });
    const before = { ...spy };
    assert.throws(() => forward(c, x), (e) => {
      assert.ok(e instanceof RangeError, String(e));
      assert.match(
        e.message,
        /^upsample\w+: scales[HW]? [\d.]+ does not match the sizes: outputSize [LHW] \(\d+\) must equal floor\(inputSize [LHW] \(\d+\) \* scales[HW]?\) = \d+$/,
      );
      return true;
    });
    assert.equal(spy.allocations, before.allocations, `${c.name}: refused before allocating`);
  }
  assert.ok(
    fixtures.some((c) => c.op === "nearestExact2d" && c.outputSize[0] > 50 * c.inputSize[2]),
    "a nearest-exact fixture past 50x runs",
  );
  let calls = 0;
  const layoutsSeen = new Set<string>();
  for (const c of fixtures) {
    for (const layout of inputLayouts(c)) {
      const { view, storage } = viewOf(device, c.input, c.dtype, c.inputSize, layout);
      try {
        using result = forward(c, view);
        assert.deepEqual([...result.shape], outputShape(c), `${c.name}: result shape`);
        assert.equal(result.dtype, c.dtype);
        await checkFixture(c, await readRaw(result), `(input ${layout}, result allocated)`);
        // The input is left as it was.
        const after = await readRaw(view);
        assert.equal(firstDifference(c.dtype, after, c.input), -1, `${c.name}: input changed`);
      } finally {
        view.dispose();
        storage.dispose();
      }
      layoutsSeen.add(`${c.op}/${layout}`);
      calls++;
    }
  }
  // Every op met every layout it can have (channels-last: the 2-D ops only).
  for (const op of ["nearestExact1d", "nearestExact2d", "bilinear2d"]) {
    for (const layout of FORWARD_LAYOUTS) {
      if (op === "nearestExact1d" && layout === "channelsLast") continue;
      assert.ok(layoutsSeen.has(`${op}/${layout}`), `${op} never ran on a ${layout} input`);
    }
  }
  assert.ok(calls > 2 * fixtures.length, `${calls} calls`);
  assert.equal(spy.frees, spy.allocations, "every storage freed");
});

Deno.test("forward API: `out` as a strided view gets PyTorch's bits, is returned, and nothing outside it is written", async () => {
  using device = Device.open({ backend: "cpu", threads: 1 });
  let checked = 0;
  for (const [index, c] of fixtures.entries()) {
    const shape = outputShape(c);
    // Cycle the result's layouts over the fixtures (contiguous `out` included).
    const layouts = layoutsFor(shape);
    const outLayout = layouts[index % layouts.length];
    const input = viewOf(device, c.input, c.dtype, c.inputSize, c.layout);
    const fill = nanStorage(c.dtype, count(shape));
    const out = viewOf(device, fill, c.dtype, shape, outLayout);
    try {
      const result = forward(c, input.view, { out: out.view });
      assert.equal(result, out.view, `${c.name}: out is returned`);
      await checkFixture(c, await readRaw(out.view), `(input ${c.layout}, out ${outLayout})`);
      // The storage's cells outside the view keep their NaN.
      const storage = await readRaw(out.storage);
      const inView = new Set(out.indices);
      const nan = nanStorage(c.dtype, 1)[0];
      for (let i = 0; i < storage.length; i++) {
        if (inView.has(i)) continue;
        const same = c.dtype === "float32" ? Number.isNaN(storage[i]) : storage[i] === nan;
        assert.ok(same, `${c.name}: out ${outLayout} storage cell ${i} outside the view written`);
      }
      assert.equal(out.view.disposed, false);
    } finally {
      for (const t of [input.view, input.storage, out.view, out.storage]) t.dispose();
    }
    checked++;
  }
  assert.equal(checked, fixtures.length);
});

/** Generated calls of every op and dtype, with shapes that cut into bands and whole planes. */
function generatedProblems(seed: number, n: number): Problem[] {
  const r = rng(seed);
  const int = (lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
  const ops: UpsampleOp[] = ["nearestExact1d", "nearestExact2d", "bilinear2d"];
  const dtypes: DType[] = ["float32", "float16", "bfloat16"];
  return Array.from({ length: n }, (_, i) => {
    const op = ops[i % 3];
    const dtype = dtypes[Math.floor(i / 3) % 3];
    const spatial = op === "nearestExact1d" ? 1 : 2;
    const inSp = Array.from({ length: spatial }, () => int(1, 40));
    const outSp = inSp.map((s) => Math.max(1, Math.min(49 * s, Math.floor(s * (0.3 + 3 * r())))));
    // Valid scales sometimes (floor(in * s) == out, within the 50x limit).
    const scales = inSp.map((s, d) => {
      if (r() < 0.6) return 0;
      const scale = (outSp[d] + r() * 0.99) / s;
      return Math.floor(s * scale) === outSp[d] && 1 / scale >= 0.02 ? scale : 0;
    });
    return {
      op,
      dtype,
      inputSize: [int(1, 2), int(1, 9), ...inSp],
      outputSize: outSp,
      scales,
      alignCorners: op === "bilinear2d" && r() < 0.4,
    };
  });
}

/** Values of a generated input (exact in every dtype, with a few specials). */
function inputValues(p: Problem, seed: number): Raw {
  const r = rng(seed);
  const n = count(p.inputSize);
  const values = Array.from({ length: n }, () => Math.round((r() * 2 - 1) * 512) / 64);
  if (n > 3) [values[0], values[1], values[2]] = [-0, Infinity, NaN];
  return encode(p.dtype, values);
}

Deno.test("forward API: one thread and two (every call on the workers) give the same bits, awaited one by one or all queued", async () => {
  using single = Device.open({ backend: "cpu", threads: 1 });
  using two = openThreaded(2);
  using byDefault = Device.open({ backend: "cpu" });
  const problems: Problem[] = [
    ...fixtures,
    ...generatedProblems(0xf0a4d, 90),
    // Larger calls: more planes than chunks, and fewer (bands of rows).
    ...(["nearestExact2d", "bilinear2d"] as const).flatMap((op) =>
      (["float32", "bfloat16", "float16"] as const).map((dtype) => ({
        op,
        dtype,
        inputSize: [1, 2, 61, 67],
        outputSize: [128, 97],
        scales: [0, 0],
        alignCorners: false,
      }))
    ),
    {
      op: "nearestExact1d",
      dtype: "float32",
      inputSize: [3, 5, 999],
      outputSize: [1801],
      scales: [0],
      alignCorners: false,
    },
  ];
  const inputs = problems.map((p, i) =>
    "input" in p ? (p as ForwardCase).input : inputValues(p, i)
  );
  const expected: Raw[] = [];
  for (const [i, p] of problems.entries()) {
    using x = single.tensor(inputs[i], p.inputSize, { dtype: p.dtype });
    using y = forward(p, x);
    expected.push(await readRaw(y));
  }
  const what = (p: Problem, label: string): string =>
    `${p.op} ${p.dtype} [${p.inputSize}] -> [${p.outputSize}] scales [${p.scales}]` +
    `${p.alignCorners ? " alignCorners" : ""} (${label})`;
  for (const [label, device] of [["2 threads", two], ["default", byDefault]] as const) {
    // Awaited one by one.
    for (const [i, p] of problems.entries()) {
      using x = device.tensor(inputs[i], p.inputSize, { dtype: p.dtype });
      using y = forward(p, x);
      const got = await readRaw(y);
      const at = firstDifference(p.dtype, got, expected[i]);
      if (at >= 0) {
        assert.fail(
          `${what(p, label)}: element ${at} is ${show(p.dtype, got, at)}, one thread gives ` +
            `${show(p.dtype, expected[i], at)}`,
        );
      }
    }
  }
  // All queued at once, then read in reverse.
  const queued = problems.map((p, i) => {
    const x = two.tensor(inputs[i], p.inputSize, { dtype: p.dtype });
    const y = forward(p, x);
    x.dispose(); // the queued call keeps its storage
    return y;
  });
  for (let i = problems.length - 1; i >= 0; i--) {
    const got = await readRaw(queued[i]);
    queued[i].dispose();
    const at = firstDifference(problems[i].dtype, got, expected[i]);
    assert.equal(at, -1, `${what(problems[i], "2 threads, queued")}: element ${at}`);
  }
  assert.ok(cpuOf(two).workersStarted >= 1, "the two-thread device ran calls on its workers");
  await two.synchronize();
});

Deno.test("forward API: the deterministic option is accepted per call and per device, with the same bits", async () => {
  const picks = fixtures.filter((c) => c.expected !== null && count(outputShape(c)) > 8)
    .filter((_, i) => i % 9 === 0);
  assert.ok(picks.length >= 10);
  using plain = Device.open({ backend: "cpu", threads: 1 });
  using det = Device.open({ backend: "cpu", deterministic: true });
  assert.equal(det.deterministic, true);
  for (const c of picks) {
    for (
      const [device, deterministic] of [
        [plain, true],
        [plain, false],
        [plain, undefined],
        [det, undefined],
        [det, false],
      ] as const
    ) {
      using x = inputOf(device, c);
      using y = forward(c, x, { deterministic });
      await checkFixture(c, await readRaw(y), `(deterministic: ${deterministic})`);
    }
  }
  plain.setDeterministic(true);
  const c = picks[0];
  using x = inputOf(plain, c);
  using y = forward(c, x);
  await checkFixture(c, await readRaw(y), "(device.setDeterministic(true))");
});

Deno.test("forward API: empty N or C give an empty result of shape [N, C, ...outputSize], with and without out", async () => {
  using single = Device.open({ backend: "cpu", threads: 1 });
  using two = openThreaded(2);
  const spies = new Map([single, two].map((d) => [d, spyForward(d)]));
  const ops: Array<[UpsampleOp, number[], number[]]> = [
    ["nearestExact1d", [5], [11]],
    ["nearestExact2d", [4, 6], [9, 3]],
    ["bilinear2d", [4, 6], [9, 3]],
  ];
  for (const device of [single, two]) {
    for (const [op, inSp, outSp] of ops) {
      for (const [n, c] of [[0, 3], [2, 0], [0, 0]]) {
        for (const dtype of ["float32", "bfloat16"] as const) {
          const p: Problem = {
            op,
            dtype,
            inputSize: [n, c, ...inSp],
            outputSize: outSp,
            scales: outSp.map(() => 0),
            alignCorners: op === "bilinear2d" && n === 0,
          };
          const what = `${op} ${dtype} input [${p.inputSize}]`;
          using x = device.zeros(p.inputSize, { dtype });
          using y = forward(p, x);
          assert.deepEqual([...y.shape], [n, c, ...outSp], what);
          assert.equal((await readRaw(y)).length, 0, what);
          using out = device.zeros([n, c, ...outSp], { dtype });
          assert.equal(forward(p, x, { out }), out, `${what}: out returned`);
          // A strided (transposed) empty out too.
          const last = 1 + outSp.length;
          const swapped = [n, c, ...outSp];
          [swapped[last], swapped[last - 1]] = [swapped[last - 1], swapped[last]];
          using storage = device.zeros(swapped, { dtype });
          using outT = storage.transpose(last - 1, last);
          assert.deepEqual([...outT.shape], [n, c, ...outSp]);
          assert.equal(forward(p, x, { out: outT }), outT, `${what}: strided out returned`);
        }
      }
    }
  }
  await two.synchronize();
  for (const [device, spy] of spies) {
    assert.ok(spy.allocations > 0);
    assert.equal(spy.frees, spy.allocations, `${device.name}: every storage freed`);
  }
});

/**
 * Counts the backend's allocate/free calls, and makes its next `launchForward` throw `fail.next`
 * when that is set (once).
 */
function spyForward(device: Device): {
  allocations: number;
  frees: number;
  next: Error | null;
} {
  const backend = deviceInternals(device).backend() as Backend<unknown>;
  const spy = { allocations: 0, frees: 0, next: null as Error | null };
  const launch = backend.launchForward.bind(backend);
  const free = backend.free.bind(backend);
  const allocate = backend.allocate.bind(backend);
  Object.assign(backend, {
    launchForward: (...args: Parameters<typeof launch>): void => {
      const error = spy.next;
      spy.next = null;
      if (error !== null) throw error;
      launch(...args);
    },
    free: (handle: unknown): void => (spy.frees++, free(handle)),
    allocate: (...args: Parameters<typeof allocate>) => (spy.allocations++, allocate(...args)),
  });
  return spy;
}

Deno.test("forward API lifetimes: a failed launch frees the result it allocated, keeps the caller's out, and the next call works", async () => {
  for (const threads of [1, 2]) {
    using device = threads === 1 ? Device.open({ backend: "cpu", threads: 1 }) : openThreaded(2);
    const spy = spyForward(device);
    const picks = fixtures.filter((f) => f.expected !== null && f.native);
    for (const c of picks.filter((_, i) => i % 4 === 0)) {
      using x = inputOf(device, c);
      using out = device.zeros(outputShape(c), { dtype: c.dtype });
      const boom = new Error("launch failed (injected)");
      let counted = { ...spy };
      spy.next = boom;
      assert.throws(() => forward(c, x), (e) => e === boom);
      assert.equal(spy.allocations - counted.allocations, 1, `${c.name}: one result allocated`);
      assert.equal(spy.frees - counted.frees, 1, `${c.name}: and freed`);
      counted = { ...spy };
      spy.next = boom;
      assert.throws(() => forward(c, x, { out }), (e) => e === boom);
      assert.equal(spy.allocations, counted.allocations, `${c.name}: nothing allocated with out`);
      assert.equal(spy.frees, counted.frees, `${c.name}: out not freed`);
      assert.equal(out.disposed, false);
      // The next call, into the same out, works and returns it.
      assert.equal(forward(c, x, { out }), out);
      await checkFixture(c, await readRaw(out), `(threads ${threads}, after a failed launch)`);
    }
  }
});

Deno.test("forward API lifetimes: inputs disposed while queued, results disposed while queued, dispose() twice, close()", async () => {
  using device = openThreaded(2);
  const spy = spyForward(device);
  const c = fixtures.find((f) => f.expected !== null && f.op === "bilinear2d" && f.native)!;
  const big: Problem = {
    op: "bilinear2d",
    dtype: "float32",
    inputSize: [2, 8, 64, 64],
    outputSize: [128, 128],
    scales: [0, 0],
    alignCorners: false,
  };
  using bigX = device.zeros(big.inputSize);
  // The input disposed at once: the queued call still reads it.
  const x = device.tensor(c.input, c.inputSize, { dtype: c.dtype });
  const busy = forward(big, bigX); // keeps the queue busy
  const y = forward(c, x);
  x.dispose();
  assert.equal(x.disposed, true);
  await checkFixture(c, await readRaw(y), "(input disposed while queued)");
  // A result disposed while queued: its read rejects, the device goes on.
  const z = forward(big, bigX);
  const read = z.toFloat32Array();
  z.dispose();
  z.dispose(); // twice: a no-op
  await assert.rejects(read, /was disposed while the read was pending/);
  busy.dispose();
  y.dispose();
  await device.synchronize();
  // Live: bigX only (the results and the input were freed once their work was done).
  assert.equal(spy.allocations - spy.frees, 1, "the queued calls' storages were freed");
  // close() with a queued forward result: it is disposed, its read rejects, ops refuse.
  const other = openThreaded(2);
  const ox = other.zeros(big.inputSize);
  const queued = forward(big, ox);
  const pending = queued.toFloat32Array();
  other.close();
  assert.equal(queued.disposed, true);
  assert.equal(ox.disposed, true);
  await assert.rejects(pending, TypeError);
  assert.throws(
    () => forward(big, ox),
    /^TypeError: upsampleBilinear2d: input \(float32 tensor \[2, 8, 64, 64\] on cpu\) was disposed or its device closed/,
  );
});

EMULATED_LANE.test("forward API lifetimes on npu-emulated: a failed launch of each op frees its result and keeps out", async () => {
  using device = EMULATED_LANE.open();
  const apis = {
    nearestExact1d: "aclnnUpsampleNearestExact1d",
    nearestExact2d: "aclnnUpsampleNearestExact2d",
    bilinear2d: "aclnnUpsampleBilinear2d",
  };
  const cases: Problem[] = [
    {
      op: "nearestExact1d",
      dtype: "float32",
      inputSize: [1, 2, 5],
      outputSize: [9],
      scales: [0],
      alignCorners: false,
    },
    {
      op: "nearestExact2d",
      dtype: "float16",
      inputSize: [1, 2, 3, 5],
      outputSize: [6, 9],
      scales: [0, 0],
      alignCorners: false,
    },
    {
      op: "bilinear2d",
      dtype: "float32",
      inputSize: [1, 2, 3, 5],
      outputSize: [6, 9],
      scales: [0, 0],
      alignCorners: true,
    },
  ];
  for (const p of cases) {
    using x = device.tensor(inputValues(p, 7), p.inputSize, { dtype: p.dtype });
    using out = device.zeros([p.inputSize[0], p.inputSize[1], ...p.outputSize], { dtype: p.dtype });
    // Warm up (workspace, executors) so that the baseline includes what the device keeps.
    forward(p, x).dispose();
    forward(p, x, { out });
    await device.synchronize();
    const baseline = emuLive();
    for (const withOut of [false, true]) {
      try {
        emu().aclemuFailNextLaunch(507015);
        assert.throws(
          () => forward(p, x, withOut ? { out } : {}),
          (e) => e instanceof AclError && e.code === 507015 && e.api.startsWith(apis[p.op]),
        );
      } finally {
        emu().aclemuResetFaults();
      }
      await device.synchronize();
      assert.equal(emuLive().allocations, baseline.allocations, `${p.op}: device memory freed`);
      assert.equal(out.disposed, false);
    }
    using y = forward(p, x);
    assert.equal((await readRaw(y)).length, count(y.shape), `${p.op}: the next call works`);
  }
});
