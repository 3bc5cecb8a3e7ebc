// The forward ops' WebAssembly kernels: every PyTorch fixture their layout allows, bit for bit;
// random shapes, scales, dtypes and values (inf, NaN, -0, huge, subnormal) against the TypeScript
// kernels; the calls they must decline; and the worker-thread plan against one thread.

import assert from "node:assert/strict";
import type { StorageView } from "../../src/backend.ts";
import { CpuBuffer } from "../../src/cpu/buffer.ts";
import {
  bilinear2dForwardCpu,
  forwardLinearTable,
  nearestExact1dForwardCpu,
  nearestExact2dForwardCpu,
  type UpsampleForwardArgs,
} from "../../src/cpu/pytorch/forward/mod.ts";
import {
  launchWasmForward,
  prepareWasmForward,
  type WasmForwardCall,
} from "../../src/cpu/wasm/launch_forward.ts";
import { callClass } from "../../src/cpu/threads/planner.ts";
import { KernelScheduler } from "../../src/cpu/threads/scheduler.ts";
import { WasmKernels } from "../../src/cpu/wasm/instance.ts";
import type { PreparedCall } from "../../src/cpu/wasm/prepared.ts";
import type { StridedArray } from "../../src/cpu/types.ts";
import type { UpsampleOp } from "../../src/rules/ops.ts";
import type { TableRule } from "../../src/rules/tables.ts";
import { contiguousStrides } from "../../src/tensor/layout.ts";
import { type DType, DTYPES } from "../../src/tensor/dtype.ts";
import {
  count,
  emptyView,
  encode,
  firstDifference,
  type ForwardCase,
  loadForwardFixtures,
  outputShape,
  present,
  type Raw,
  rawSha256,
  seeded as rng,
  show,
} from "../support/forward_fixtures.ts";

const fixtures = await loadForwardFixtures();

/** A contiguous tensor of `kernels`' heap holding `raw` (logical order) at element `offset`. */
function heapTensor(
  kernels: WasmKernels,
  dtype: DType,
  shape: number[],
  raw: Raw | null,
  offset = 0,
): StorageView<CpuBuffer> {
  const n = count(shape);
  const handle = CpuBuffer.inHeap(kernels.heap, dtype, n + offset + 3)!;
  const view = handle.view();
  view.fill(dtype === "float32" ? NaN : dtype === "float16" ? 0x7e00 : 0x7fc0);
  if (raw !== null) view.set(raw, offset);
  return {
    handle,
    dtype,
    storageLength: handle.length,
    shape,
    strides: contiguousStrides(shape),
    offset,
  };
}

/** The logical elements of a contiguous heap tensor. */
function read(view: StorageView<CpuBuffer>): Raw {
  return view.handle.view().slice(view.offset, view.offset + count(view.shape));
}

interface Problem {
  op: UpsampleOp;
  dtype: DType;
  inputSize: number[];
  outputSize: number[];
  scales: number[];
  alignCorners: boolean;
  rule?: TableRule;
}

function call(
  p: Problem,
  input: StorageView<CpuBuffer>,
  out: StorageView<CpuBuffer>,
): WasmForwardCall {
  return { ...p, input, out };
}

function runTs(p: Problem, input: StridedArray, out: StridedArray): void {
  const args: UpsampleForwardArgs = { ...p, input, out };
  if (p.op === "nearestExact1d") nearestExact1dForwardCpu(args);
  else if (p.op === "nearestExact2d") nearestExact2dForwardCpu(args);
  else bilinear2dForwardCpu(args);
}

function freeAll(...views: StorageView<CpuBuffer>[]): void {
  for (const v of views) v.handle.release();
}

async function checkFixture(c: ForwardCase, got: Raw, what: string): Promise<void> {
  if (c.expected === null) {
    assert.equal(await rawSha256(got), c.expectedSha256, `${c.name} ${what}`);
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

Deno.test("forward wasm: every fixture with a contiguous input gives PyTorch's bits; other layouts are declined", async () => {
  const kernels = new WasmKernels();
  let ran = 0, declined = 0;
  for (const c of fixtures) {
    const offset = c.layout === "offset" ? 7 : 0;
    const input = heapTensor(kernels, c.dtype, c.inputSize, c.input, offset);
    const out = heapTensor(kernels, c.dtype, outputShape(c), null, 5);
    if (c.layout === "channelsLast" || c.layout === "transposed") {
      // PyTorch saw a strided input here: the wasm path only takes contiguous views.
      const strided = {
        ...input,
        strides: present(c.input, c.dtype, c.inputSize, c.layout).strides,
      };
      const contiguousToo = strided.strides.every((s, d) =>
        s === input.strides[d] || c.inputSize[d] === 1
      );
      if (!contiguousToo) {
        assert.equal(launchWasmForward(kernels, call(c, strided, out)), false, c.name);
        declined++;
        freeAll(input, out);
        continue;
      }
    }
    const done = launchWasmForward(kernels, call(c, input, out));
    const hw1 = c.op === "bilinear2d" && c.inputSize[1] > 1 &&
      c.inputSize[2] * c.inputSize[3] === 1;
    if (hw1) {
      // Contiguous with H = W = 1 and C > 1 is channels-last to PyTorch: the TypeScript kernels' job.
      assert.equal(done, false, c.name);
      declined++;
    } else {
      assert.equal(done, true, c.name);
      await checkFixture(c, read(out), "(wasm)");
      ran++;
    }
    freeAll(input, out);
  }
  assert.ok(ran > 100 && declined > 10, `${ran} ran, ${declined} declined`);
});

const SPECIALS = [Infinity, -Infinity, NaN, -0, 3e38, -3e38, 1e-40, 65504, 2 ** -24, 1e-8, 70000];

function values(r: () => number, n: number, special: number, wide: boolean): Float32Array {
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    if (r() < special) v[i] = SPECIALS[Math.floor(r() * SPECIALS.length)];
    else v[i] = (r() - 0.5) * 8 * (wide ? 2 ** Math.floor(r() * 25 - 12) : 1);
  }
  return v;
}

/** Rounds float32 values into a dtype's storage (exact values of the dtype). */
function toDtype(dtype: DType, v: Float32Array): Raw {
  return encode(dtype, v);
}

function randomProblem(r: () => number, i: number): Problem {
  const op = (["nearestExact1d", "nearestExact2d", "bilinear2d", "bilinear2d"] as const)[i % 4];
  const dtype = DTYPES[Math.floor(i / 4) % 3];
  const dim = (): [number, number, number] => {
    const inp = 1 + Math.floor(r() * 23);
    const pick = r();
    if (pick < 0.4) {
      const s = [0.3, 0.6, 1.7, 2, 2.5, 1 / 3, 1.00001, 0.5, 3.86][Math.floor(r() * 9)];
      const out = Math.floor(inp * s);
      if (out >= 1) return [inp, out, s];
    }
    return [inp, 1 + Math.floor(r() * 45), 0];
  };
  const planes = [1, 1 + Math.floor(r() * 3), 1 + Math.floor(r() * 6)];
  const alignCorners = op === "bilinear2d" && r() < 0.4;
  if (op === "nearestExact1d") {
    const [inW, outW, s] = dim();
    return {
      op,
      dtype,
      inputSize: [planes[1], planes[2], inW],
      outputSize: [outW],
      scales: [s],
      alignCorners,
    };
  }
  let [inH, outH, sh] = dim();
  let [inW, outW, sw] = dim();
  if (op === "bilinear2d" && (sh === 0) !== (sw === 0)) sh = sw = 0;
  if (op === "bilinear2d" && r() < 0.15) [inH, outH] = [inW, outW]; // an identity dimension
  const c = r() < 0.25 ? 1 : planes[2];
  return {
    op,
    dtype,
    inputSize: [planes[1], c, inH, inW],
    outputSize: [outH, outW],
    scales: [sh, sw],
    alignCorners,
  };
}

Deno.test("forward wasm: random shapes, dtypes, scales and values give the TypeScript kernels' bits", () => {
  const kernels = new WasmKernels();
  const r = rng(4242);
  let runs = 0;
  for (let i = 0; i < 600; i++) {
    const p = randomProblem(r, i);
    const raw = toDtype(
      p.dtype,
      values(r, count(p.inputSize), i % 3 === 0 ? 0.05 : 0.002, i % 5 === 0),
    );
    const input = heapTensor(kernels, p.dtype, p.inputSize, raw, i % 7);
    const out = heapTensor(kernels, p.dtype, outputShape(p), null, i % 3);
    const done = launchWasmForward(kernels, call(p, input, out));
    const expected = emptyView(p.dtype, outputShape(p), "contiguous");
    runTs(p, present(raw, p.dtype, p.inputSize, "contiguous"), expected);
    if (done) {
      const got = read(out);
      const k = firstDifference(p.dtype, got, expected.data as Raw);
      if (k >= 0) {
        assert.fail(
          `${JSON.stringify(p)}: element ${k}: wasm ${show(p.dtype, got, k)}, TypeScript ${
            show(p.dtype, expected.data as Raw, k)
          }`,
        );
      }
      runs++;
    }
    freeAll(input, out);
  }
  assert.ok(runs > 550, `${runs} ran on wasm`);
});

Deno.test("forward wasm: device rules run on their own tables, as the TypeScript kernels", () => {
  const kernels = new WasmKernels();
  const r = rng(77);
  for (const rule of ["ascend-a2", "ascend-5hd-fma"] as TableRule[]) {
    for (let i = 0; i < 40; i++) {
      const p = { ...randomProblem(r, 2 + 4 * (i % 3)), rule };
      if (rule !== "ascend-a2" && p.op !== "bilinear2d") continue;
      const raw = toDtype(p.dtype, values(r, count(p.inputSize), 0.01, false));
      const input = heapTensor(kernels, p.dtype, p.inputSize, raw);
      const out = heapTensor(kernels, p.dtype, outputShape(p), null);
      assert.ok(launchWasmForward(kernels, call(p, input, out)));
      const expected = emptyView(p.dtype, outputShape(p), "contiguous");
      runTs(p, present(raw, p.dtype, p.inputSize, "contiguous"), expected);
      assert.equal(
        firstDifference(p.dtype, read(out), expected.data as Raw),
        -1,
        `${rule} ${JSON.stringify(p)}`,
      );
      freeAll(input, out);
    }
  }
});

/**
 * An input `a` with `a * l0` within 2^-28 (relatively) of `2^e`, not equal to it, or null: added to
 * a float `q` of exponent e + 24, the double sum rounds exactly onto a float32 midpoint while the
 * exact sum lies off it, where rounding twice (double, then float32) goes wrong.
 */
function nearPowerOfTwo(l0: number, e: number): number | null {
  const f = new Float32Array([l0]);
  const bits = new Uint32Array(f.buffer)[0];
  const exp = (bits >>> 23) & 0xff;
  if (exp === 0) return null;
  const mant = BigInt((bits & 0x7fffff) | 0x800000); // l0 = mant * 2^(exp - 150)
  for (let n = 46n; n <= 48n; n++) {
    const target = 1n << n;
    const base = target / mant;
    for (const A of [base - 1n, base, base + 1n, base + 2n]) {
      if (A < 1n << 23n || A >= 1n << 24n) continue;
      const r = A * mant - target;
      if (r === 0n || (r < 0n ? -r : r) >= 1n << (n - 28n)) continue;
      // a = A * 2^x with a * l0 = (A * mant) * 2^(x + exp - 150) ~ 2^n * 2^(x + exp - 150) = 2^e
      const x = e - Number(n) - (exp - 150);
      return Number(A) * 2 ** x;
    }
  }
  return null;
}

Deno.test("forward wasm: exact fused multiply-adds where the double sum lands halfway between floats", () => {
  // Planes of an H-only upscale (W is 8 -> 8, the identity, so t0 and t1 are the inputs, and the
  // rows fill whole vectors): in plane
  // k, output row oh_k gets t1 = 1 (q = fl(1 * l1) = l1) and t0 = a with a * l0 just off half an
  // ulp of q. The wasm kernel must settle these lanes exactly (its fast path rounds twice).
  const kernels = new WasmKernels();
  const inH = 3, outH = 301, planes = 64, W = 8;
  const p: Problem = {
    op: "bilinear2d",
    dtype: "float32",
    inputSize: [1, planes, inH, W],
    outputSize: [outH, W],
    scales: [0, 0],
    alignCorners: false,
  };
  const th = forwardLinearTable(inH, outH, false, 0, "float32", "pytorch", 0);
  const targets: { oh: number; a: number }[] = [];
  for (let oh = 0; oh < outH && targets.length < planes; oh++) {
    const l0 = th.l0[oh], l1 = th.l1[oh];
    if (th.i0[oh] === th.i1[oh] || l1 <= 0 || l1 >= 1 || l0 <= 0) continue;
    const e = Math.floor(Math.log2(l1)) - 24;
    const a = nearPowerOfTwo(l0, e);
    if (a !== null && Math.fround(a) === a) targets.push({ oh, a });
  }
  assert.ok(targets.length >= 8, `${targets.length} rows with a near-midpoint sum`);
  const v = new Float32Array(planes * inH * W).fill(0.5);
  targets.forEach(({ oh, a }, k) => {
    v.fill(a, (k * inH + th.i0[oh]) * W, (k * inH + th.i0[oh] + 1) * W);
    v.fill(1, (k * inH + th.i1[oh]) * W, (k * inH + th.i1[oh] + 1) * W);
  });
  const input = heapTensor(kernels, "float32", p.inputSize, v);
  const out = heapTensor(kernels, "float32", outputShape(p), null);
  assert.ok(launchWasmForward(kernels, call(p, input, out)));
  const expected = emptyView("float32", outputShape(p), "contiguous");
  runTs(p, present(v, "float32", p.inputSize, "contiguous"), expected);
  const got = read(out);
  const k = firstDifference("float32", got, expected.data as Raw);
  assert.equal(k, -1, `element ${k}`);
  // The double sum of each target is a midpoint, and the exact result is not its even neighbour.
  let offMidpoint = 0;
  targets.forEach(({ oh, a }, plane) => {
    const q = th.l1[oh], sum = a * th.l0[oh] + q;
    const r = got[(plane * outH + oh) * W];
    if (Math.fround(sum) !== r) offMidpoint++;
  });
  assert.ok(offMidpoint >= 4, `${offMidpoint} results differ from rounding the double sum`);
  freeAll(input, out);
});

Deno.test("forward threads: the plan does not time the call that starts a worker", async () => {
  const kernels = new WasmKernels(64 * 2 ** 20, true);
  const scheduler = KernelScheduler.create(kernels, 2, false)!;
  try {
    const p: Problem = {
      op: "bilinear2d",
      dtype: "float32",
      inputSize: [2, 8, 30, 40],
      outputSize: [61, 77],
      scales: [0, 0],
      alignCorners: false,
    };
    const raw = toDtype(p.dtype, values(rng(5), count(p.inputSize), 0.01, false));
    const input = heapTensor(kernels, p.dtype, p.inputSize, raw);
    const out = heapTensor(kernels, p.dtype, outputShape(p), null);
    const ready = (): PreparedCall => prepareWasmForward(kernels, call(p, input, out), 2)!;
    const cls = callClass(ready());
    // Call 1 is shared (the prior for a class not yet timed) and starts the worker; call 2 runs
    // alone (the shape's first exploration). Had call 1 been timed, both plans of the shape would
    // have a time, and the class a measured speed-up.
    await scheduler.run(ready());
    assert.equal(scheduler.lastWorkers, 2);
    assert.equal(scheduler.started, 1);
    await scheduler.run(ready());
    assert.equal(scheduler.lastWorkers, 0);
    assert.equal(scheduler.planner.estimate(cls).observed, 0);
    // Call 3 is shared again (the class's prior: the shape has no shared time) and timed, once
    // the worker has left call 1's job (a worker the host preempted as it left makes a call run
    // alone whatever its plan: a busy CI host did).
    scheduler.waitReady(2000);
    await scheduler.run(ready());
    assert.equal(scheduler.lastWorkers, 2);
    assert.equal(scheduler.planner.estimate(cls).observed, 1);
    freeAll(input, out);
  } finally {
    scheduler.close();
  }
});

Deno.test("forward threads: the worker plan gives the bits of one thread, in planes and in bands of rows", async () => {
  const kernels = new WasmKernels(256 * 2 ** 20, true);
  const scheduler = KernelScheduler.create(kernels, 2, true)!;
  try {
    const r = rng(99);
    const problems: Problem[] = [
      {
        op: "bilinear2d",
        dtype: "float32",
        inputSize: [2, 5, 30, 40],
        outputSize: [61, 77],
        scales: [0, 0],
        alignCorners: false,
      },
      {
        op: "bilinear2d",
        dtype: "bfloat16",
        inputSize: [1, 3, 17, 9],
        outputSize: [40, 33],
        scales: [0, 0],
        alignCorners: true,
      },
      {
        op: "bilinear2d",
        dtype: "float16",
        inputSize: [1, 1, 20, 20],
        outputSize: [7, 50],
        scales: [0, 0],
        alignCorners: false,
      },
      {
        op: "bilinear2d",
        dtype: "float32",
        inputSize: [3, 1, 20, 20],
        outputSize: [45, 31],
        scales: [0, 0],
        alignCorners: false,
      },
      {
        op: "nearestExact2d",
        dtype: "float32",
        inputSize: [2, 7, 30, 40],
        outputSize: [51, 68],
        scales: [1.7, 1.7],
        alignCorners: false,
      },
      {
        op: "nearestExact2d",
        dtype: "bfloat16",
        inputSize: [1, 2, 12, 16],
        outputSize: [24, 32],
        scales: [0, 0],
        alignCorners: false,
      },
      {
        op: "nearestExact1d",
        dtype: "float16",
        inputSize: [3, 5, 100],
        outputSize: [170],
        scales: [0],
        alignCorners: false,
      },
    ];
    for (const p of problems) {
      const raw = toDtype(p.dtype, values(r, count(p.inputSize), 0.01, false));
      const input = heapTensor(kernels, p.dtype, p.inputSize, raw);
      const one = heapTensor(kernels, p.dtype, outputShape(p), null);
      const many = heapTensor(kernels, p.dtype, outputShape(p), null);
      assert.ok(launchWasmForward(kernels, call(p, input, one), 2));
      const ready = prepareWasmForward(kernels, call(p, input, many), 2)!;
      await scheduler.run(ready);
      assert.ok(scheduler.lastWorkers >= 2, "on the workers");
      assert.equal(firstDifference(p.dtype, read(many), read(one)), -1, JSON.stringify(p));
      // And against the TypeScript kernels.
      const expected = emptyView(p.dtype, outputShape(p), "contiguous");
      runTs(p, present(raw, p.dtype, p.inputSize, "contiguous"), expected);
      assert.equal(
        firstDifference(p.dtype, read(many), expected.data as Raw),
        -1,
        JSON.stringify(p),
      );
      freeAll(input, one, many);
    }
  } finally {
    scheduler.close();
  }
});
