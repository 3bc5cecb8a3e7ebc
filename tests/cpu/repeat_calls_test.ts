// Repeated calls on the CPU backend: a call repeating the last one on its tensor (same arguments,
// `out` given) skips the checks (src/ops/call_memo.ts) and runs the kernel call prepared for it the
// first time (src/cpu/dispatch.ts) while its plan's tables are still in place. Whatever runs between
// two repeats (other plans, a grown scratch block, worker threads), each result is the TypeScript
// kernels' result; a changed argument gives the error a first call gives; the memo keeps no tensor
// alive.

import assert from "node:assert/strict";
import {
  Device,
  type Tensor,
  upsampleBilinear2d,
  upsampleBilinear2dBackward,
  upsampleNearestExact1d,
  upsampleNearestExact2d,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import type { CpuBackend } from "../../src/cpu/backend.ts";
import type { CpuBuffer } from "../../src/cpu/buffer.ts";
import { deviceInternals } from "../../src/device.ts";
import { tensorInternals } from "../../src/tensor/tensor.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import {
  assertBitEqual,
  assertRepeatsFailAsFirstCalls,
  type CallChange,
  openThreaded,
  rng,
} from "../support/helpers.ts";

type Options = Record<string, unknown>;
type Op = (x: Tensor, options: never) => Tensor;

/** One repeated call: the op, its source shape, its options (without `out`) and its result shape. */
interface Repeat {
  name: string;
  op: Op;
  shape: number[];
  options: Options;
  result: number[];
  dtype: DType;
}

const REPEATS: Repeat[] = [
  {
    name: "forward nearest-exact 2d x2",
    op: upsampleNearestExact2d as Op,
    shape: [2, 3, 5, 6],
    options: { outputSize: [10, 12] },
    result: [2, 3, 10, 12],
    dtype: "float32",
  },
  {
    name: "forward bilinear 2d s=1.7",
    op: upsampleBilinear2d as Op,
    shape: [1, 5, 7, 9],
    options: { outputSize: [11, 15], scalesH: 1.7, scalesW: 1.7 },
    result: [1, 5, 11, 15],
    dtype: "float32",
  },
  {
    name: "forward nearest-exact 1d x0.5 (float16)",
    op: upsampleNearestExact1d as Op,
    shape: [3, 2, 17],
    options: { outputSize: [8] },
    result: [3, 2, 8],
    dtype: "float16",
  },
  {
    name: "backward bilinear 2d alignCorners",
    op: upsampleBilinear2dBackward as Op,
    shape: [2, 2, 9, 13],
    options: { outputSize: [9, 13], inputSize: [2, 2, 4, 6], alignCorners: true },
    result: [2, 2, 4, 6],
    dtype: "float32",
  },
  {
    name: "backward nearest-exact 2d (bfloat16)",
    op: upsampleNearestExact2dBackward as Op,
    shape: [1, 6, 8, 8],
    options: { outputSize: [8, 8], inputSize: [1, 6, 3, 5] },
    result: [1, 6, 3, 5],
    dtype: "bfloat16",
  },
];

// Wide enough that its plan needs a larger scratch block than every call above: placed once, it moves
// the block (and the tables of every other plan with it).
const WIDE: Repeat = {
  name: "backward bilinear 2d, 3000 wide",
  op: upsampleBilinear2dBackward as Op,
  shape: [1, 1, 2, 3000],
  options: { outputSize: [2, 3000], inputSize: [1, 1, 1, 1700] },
  result: [1, 1, 1, 1700],
  dtype: "float32",
};

function values(shape: number[], seed: number): number[] {
  const next = rng(seed);
  return Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => next() * 8 - 4);
}

/** Fills a tensor's storage with a pattern no kernel writes, so a skipped launch shows. */
function spoil(t: Tensor): void {
  (tensorInternals(t).storage.handle as CpuBuffer).view().fill(0x7e01);
}

for (
  const [label, open] of [["1 thread", () => Device.open({ backend: "cpu", threads: 1 })], [
    "2 threads, every call shared",
    () => openThreaded(2),
  ]] as const
) {
  Deno.test(`repeated calls with out (${label}): each result is the first call's, whatever runs between`, async () => {
    using reference = Device.open({ backend: "cpu", cpuKernels: "typescript" });
    using device = open();
    const all = [...REPEATS, WIDE];
    const expected: Float32Array[] = [];
    for (const [i, r] of all.entries()) {
      using x = reference.tensor(values(r.shape, i + 1), r.shape, { dtype: r.dtype });
      using y = r.op(x, r.options as never);
      expected.push(await y.toFloat32Array());
    }
    const inputs = all.map((r, i) =>
      device.tensor(values(r.shape, i + 1), r.shape, { dtype: r.dtype })
    );
    const outs = all.map((r) => device.zeros(r.result, { dtype: r.dtype }));
    try {
      // Forward order, reverse order, the wide plan in between (round 2 on), each call twice in a row.
      for (let round = 0; round < 4; round++) {
        const order = REPEATS.map((_, i) => i);
        if (round % 2 === 1) order.reverse();
        if (round >= 2) order.splice(2, 0, REPEATS.length);
        for (const i of order) {
          for (let twice = 0; twice < 2; twice++) {
            spoil(outs[i]);
            const options = { ...all[i].options, out: outs[i] };
            assert.equal(all[i].op(inputs[i], options as never), outs[i]);
            assertBitEqual(
              await outs[i].toFloat32Array(),
              expected[i],
              `${all[i].name}, round ${round}`,
            );
          }
        }
      }
    } finally {
      for (const t of [...inputs, ...outs]) t.dispose();
    }
  });
}

Deno.test("repeated forward calls: a change after a repeated call gives the error a first call gives", async () => {
  using device = Device.open({ backend: "cpu", threads: 1 });
  // Each case changes one thing in the options (or the tensors) of a call that was just repeated.
  const cases: CallChange[] = [
    ["unknown key", (o) => void (o.scalesX = 1)],
    ["a backward key", (o) => void (o.inputSize = [1, 1, 4, 4])],
    ["outputSize element", (o) => void ((o.outputSize as number[])[1] = 3)],
    ["outputSize as a string", (o) => void (o.outputSize = "2,2")],
    ["scale", (o) => void (o.scalesH = 3)],
    ["NaN scale", (o) => void (o.scalesW = NaN)],
    ["alignCorners on nearest", (o) => void (o.alignCorners = true)],
    ["deterministic not boolean", (o) => void (o.deterministic = "yes")],
    ["out disposed", (_o, _x, out) => out.dispose()],
    ["input disposed", (_o, x) => x.dispose()],
    ["out overlapping", (o, x) => void (o.out = x.slice(2, 0, 2).slice(3, 0, 2))],
    ["outputSize shorter", (o) => void (o.outputSize as number[]).pop()],
    ["inherited alignCorners", (o) => void Object.setPrototypeOf(o, { alignCorners: 1 })],
  ];
  assertRepeatsFailAsFirstCalls(
    upsampleNearestExact2d as Op,
    () => device.tensor(values([1, 1, 4, 4], 3), [1, 1, 4, 4]),
    () => device.zeros([1, 1, 2, 2]),
    (out) => ({ outputSize: [2, 2], out }),
    cases,
  );
  await device.synchronize();
});

const gc = (globalThis as { gc?: () => void }).gc;
const macrotask = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test({
  name: "repeated forward calls: the memo and its kept call keep neither tensor alive",
  ignore: typeof gc !== "function",
  fn: async () => {
    using device = Device.open({ backend: "cpu", threads: 1 });
    const backend = deviceInternals(device).backend() as unknown as CpuBackend;
    const live = (): number => backend.heapLiveBytes;
    const before = live();
    const collect = async (limit: number): Promise<void> => {
      for (let i = 0; i < 20 && live() > limit; i++) {
        gc!();
        await macrotask();
        await macrotask();
      }
    };
    const inputBytes = 4 * 64 * 64;
    const kept = { input: device.zeros([1, 1, 64, 64]) as Tensor | null };
    const use = (): void => {
      const out = device.zeros([1, 1, 128, 128]);
      for (let i = 0; i < 3; i++) upsampleBilinear2d(kept.input!, { outputSize: [128, 128], out });
    };
    use();
    await device.synchronize();
    await collect(before + inputBytes);
    assert.ok(live() <= before + inputBytes, `a dropped out is freed despite the memo (${live()})`);
    assert.ok(live() >= before + inputBytes, "the input is still live");
    kept.input = null;
    await collect(before);
    assert.ok(
      live() <= before,
      `a dropped input is freed despite the memo (${live()} > ${before})`,
    );
  },
});

Deno.test({
  name: "repeated tiny calls with out allocate nothing on the JS heap (one thread and the default)",
  ignore: typeof gc !== "function",
  fn: async () => {
    // Before: the forward size check built a shape array and a message per call (240 bytes), the
    // backward launch a closure context (48 bytes); a loop of such calls fed the GC.
    for (const threads of [1, 2]) {
      using device = Device.open({ backend: "cpu", threads });
      const x = device.zeros([1, 2, 3, 3]), y = device.zeros([1, 2, 5, 5]);
      const gradInput = device.zeros([1, 2, 3, 3]);
      const x1 = device.zeros([1, 2, 3]), y1 = device.zeros([1, 2, 5]);
      // Options made once, as a training loop may: what is left to count is the library's.
      const up = { outputSize: [5, 5], out: y }, up1 = { outputSize: [5], out: y1 };
      const down = { outputSize: [5, 5], inputSize: [1, 2, 3, 3], out: gradInput };
      const calls: [string, () => unknown][] = [
        ["upsampleNearestExact2d", () => upsampleNearestExact2d(x, up)],
        ["upsampleNearestExact1d", () => upsampleNearestExact1d(x1, up1)],
        ["upsampleBilinear2d", () => upsampleBilinear2d(x, up)],
        ["upsampleNearestExact2dBackward", () => upsampleNearestExact2dBackward(y, down)],
        ["upsampleBilinear2dBackward", () => upsampleBilinear2dBackward(y, down)],
      ];
      for (const [name, call] of calls) {
        const loop = (n: number): void => {
          for (let i = 0; i < n; i++) call();
        };
        loop(30000); // past the optimising compilers, whose code also lands on the heap
        await device.synchronize();
        gc!();
        const calls = 20000, before = Deno.memoryUsage().heapUsed;
        loop(calls);
        const perCall = (Deno.memoryUsage().heapUsed - before) / calls;
        await device.synchronize();
        assert.ok(
          perCall < 16,
          `${threads} thread(s), ${name}: ${perCall.toFixed(1)} bytes per call`,
        );
      }
      for (const t of [x, y, gradInput, x1, y1]) t.dispose();
    }
  },
});
