// The wasm SIMD kernels against the TypeScript kernels (`cpuKernels: "typescript"`), bit for bit,
// on configurations chosen to reach every branch of kernels.c: plane counts 1..9 (bilinear's
// partial lane groups), widths around multiples of 4 (vector loops and their tails), nearest
// factors 1 and 2, ranges of 0..2 and > 2 outputs, the fused 2x2 rows, every dtype, and gradients
// with inf, NaN, -0, huge and subnormal values. Then the heap: growth between ops, fallbacks.

import assert from "node:assert/strict";
import {
  Device,
  type DType,
  DTYPES,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import type { StorageView, UpsampleCall, UpsampleOp } from "../../src/backend.ts";
import { CpuBackend } from "../../src/cpu/backend.ts";
import type { CpuBuffer } from "../../src/cpu/buffer.ts";
import { contiguousStrides } from "../../src/tensor/layout.ts";
import { WasmHeap } from "../../src/cpu/wasm/heap.ts";
import { WasmKernels } from "../../src/cpu/wasm/instance.ts";
import { KERNELS_SOURCE_SHA256 } from "../../src/cpu/wasm/kernels_wasm.ts";
import {
  bfloat16BitsFromFloat32,
  bfloat16BitsToNumber,
  float16BitsFromFloat32,
  float16BitsToNumber,
} from "../../src/tensor/dtype.ts";
import { sourcesHash } from "../../tools/sha256.ts";
import { assertBitEqual, rng } from "../support/helpers.ts";

const SPECIALS = [Infinity, -Infinity, NaN, -0, 3e38, -3e38, 1e-40, 65504, 2 ** -24, 1e-8];

// The gradients of a comparison: values in [-4, 4), with a share of specials (infinities, NaN,
// -0, overflowing and subnormal values). A low share leaves whole 32-cell chunks free of them, so
// the float16 rows' chunked fast path runs as well as its exact redo.
function gradValues(r: () => number, n: number, specialShare = 0.03): Float32Array {
  const values = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    values[i] = r() < specialShare ? SPECIALS[Math.floor(r() * SPECIALS.length)] : (r() - 0.5) * 8;
  }
  return values;
}

type Run = (device: Device, grad: Tensor) => Tensor;

/** An op call on two contiguous float32 buffers, as the CPU backend receives it from an op. */
function backendCall(
  op: UpsampleOp,
  grad: CpuBuffer,
  out: CpuBuffer,
  outputSize: number[],
  inputSize: number[],
  alignCorners = false,
): UpsampleCall<CpuBuffer> {
  const view = (handle: CpuBuffer, shape: number[]): StorageView<CpuBuffer> => ({
    handle,
    dtype: "float32",
    storageLength: handle.length,
    shape,
    strides: contiguousStrides(shape),
    offset: 0,
  });
  return {
    op,
    dtype: "float32",
    inputSize,
    outputSize,
    scales: outputSize.map(() => 0),
    alignCorners,
    deterministic: true,
    gradOutput: view(grad, [inputSize[0], inputSize[1], ...outputSize]),
    out: view(out, inputSize),
  };
}

/**
 * The two devices every comparison runs on, opened once: each wasm device has its own 4 GiB-maximum
 * memory, and under qemu (.ci/aarch64) every such reservation costs ~24 MB that is never returned.
 */
let comparing: { wasm: Device; ts: Device } | undefined;

async function compare(
  what: string,
  shape: number[],
  dtype: DType,
  run: Run,
  seed: number,
  specialShare?: number,
): Promise<void> {
  const values = gradValues(rng(seed), shape.reduce((a, b) => a * b, 1), specialShare);
  const { wasm, ts } = comparing ??= {
    wasm: Device.open({ backend: "cpu" }),
    ts: Device.open({ backend: "cpu", cpuKernels: "typescript" }),
  };
  using a = run(wasm, wasm.tensor(values, shape, { dtype }));
  using b = run(ts, ts.tensor(values, shape, { dtype }));
  assertBitEqual(await a.toFloat32Array(), await b.toFloat32Array(), `${what} ${dtype}`);
}

Deno.test("wasm kernels: the committed module was built from the C sources", async () => {
  assert.equal(
    await sourcesHash(new URL("../../src/cpu/wasm/", import.meta.url)),
    KERNELS_SOURCE_SHA256,
    "a C source of src/cpu/wasm changed: run `deno task build:wasm` and commit kernels_wasm.ts",
  );
});

Deno.test("wasm kernels: nearest-exact equals the TypeScript kernels bit for bit", async (t) => {
  // [inSize, outSize, scale]: factors 1 and 2, 0..2 outputs per input, > 2, ties, 50x.
  const dims: [number, number, number][] = [
    [9, 9, 0],
    [9, 18, 0],
    [4, 8, 2],
    [7, 11, 1.7],
    [70, 119, 1.7],
    [12, 7, 0],
    [27, 8, 0.3],
    [5, 17, 0],
    [3, 13, 0],
    [1, 50, 50],
    [2, 41, 0],
    [13, 26, 0],
    // Factor-2 rows of 32 cells and more: the float16 kernels sum them in checked chunks.
    [40, 80, 0],
    [70, 140, 0],
  ];
  let seed = 1;
  for (const dtype of DTYPES) {
    await t.step(dtype, async () => {
      for (const [inW, outW, sw] of dims) {
        for (const planes of [[1, 1], [2, 3]]) {
          for (const share of [0.03, 0.002]) {
            await compare(
              `1d ${inW}->${outW} (specials ${share})`,
              [...planes, outW],
              dtype,
              (_d, g) =>
                upsampleNearestExact1dBackward(g, {
                  outputSize: [outW],
                  inputSize: [...planes, inW],
                  scales: sw || undefined,
                }),
              seed++,
              share,
            );
          }
        }
        for (const [inH, outH, sh] of [[3, 6, 0], [5, 3, 0], [4, 11, 0], [6, 6, 0]]) {
          const inputSize = [2, 2, inH, inW];
          for (const share of [0.03, 0.002]) {
            await compare(
              `2d ${inH}x${inW}->${outH}x${outW} (specials ${share})`,
              [2, 2, outH, outW],
              dtype,
              (_d, g) =>
                upsampleNearestExact2dBackward(g, {
                  outputSize: [outH, outW],
                  inputSize,
                  scalesH: sh || undefined,
                  scalesW: sw || undefined,
                }),
              seed++,
              share,
            );
          }
        }
      }
    });
  }
});

Deno.test("wasm kernels: bilinear equals the TypeScript kernels bit for bit", async (t) => {
  const dims: [number, number][] = [[4, 8], [8, 4], [5, 5], [1, 7], [7, 1], [6, 13], [13, 6], [
    2,
    9,
  ]];
  let seed = 1000;
  for (const dtype of DTYPES) {
    await t.step(dtype, async () => {
      for (const planes of [1, 2, 3, 4, 5, 7, 9]) {
        for (const alignCorners of [false, true]) {
          const [inH, outH] = dims[(planes + (alignCorners ? 3 : 0)) % dims.length];
          const [inW, outW] = dims[(planes * 3 + 1) % dims.length];
          await compare(
            `bilinear ${planes} planes ${inH}x${inW}->${outH}x${outW} ac=${alignCorners}`,
            [1, planes, outH, outW],
            dtype,
            (_d, g) =>
              upsampleBilinear2dBackward(g, {
                outputSize: [outH, outW],
                inputSize: [1, planes, inH, inW],
                alignCorners,
              }),
            seed++,
          );
        }
      }
    });
  }
});

Deno.test("wasm heap: tensors stay intact while the memory grows between ops", async () => {
  using device = Device.open({ backend: "cpu" });
  const values = gradValues(rng(7), 2 * 3 * 8 * 8);
  using grad = device.tensor(values, [2, 3, 8, 8]);
  using first = upsampleBilinear2dBackward(grad, { outputSize: [8, 8], inputSize: [2, 3, 4, 4] });
  const expected = await first.toFloat32Array();
  // Several large tensors: each grows the memory, which detaches the views taken before.
  const big = [1, 2, 3].map((k) => device.zeros([k * 1024, 1024]));
  using again = upsampleBilinear2dBackward(grad, { outputSize: [8, 8], inputSize: [2, 3, 4, 4] });
  assertBitEqual(await again.toFloat32Array(), expected, "after growth");
  assertBitEqual(await first.toFloat32Array(), expected, "earlier result after growth");
  assertBitEqual(await grad.toFloat32Array(), values, "gradient after growth");
  for (const tensor of big) tensor.dispose();
});

Deno.test("wasm heap: a full heap falls back to host arrays and the TypeScript kernels", async () => {
  // 1 MiB of heap: the gradient fits, the 2 MiB result and later tensors do not.
  const backend = new CpuBackend("auto", { heapLimitBytes: 2 ** 20 });
  const small = backend.allocate("float32", 1024);
  const large = backend.allocate("float32", 512 * 1024);
  assert.notEqual(small.heap, null);
  assert.equal(large.heap, null);
  const values = gradValues(rng(9), 1024);
  backend.upload(small, values);
  backend.launch(backendCall("nearestExact2d", small, large, [32, 32], [1, 1, 16, 16]));
  using ts = Device.open({ backend: "cpu", cpuKernels: "typescript" });
  using expected = upsampleNearestExact2dBackward(ts.tensor(values, [1, 1, 32, 32]), {
    outputSize: [32, 32],
    inputSize: [1, 1, 16, 16],
  });
  const got = await backend.download(large, "float32", 0, 256);
  assertBitEqual(got as Float32Array, await expected.toFloat32Array(), "host fallback");
  backend.free(small);
  backend.free(large);
  assert.equal(backend.heapLiveBytes, 0);
  backend.close();
});

Deno.test("wasm conversions: every float16/bfloat16 pattern widens, and float32 narrows, as dtype.ts", () => {
  const kernels = new WasmKernels();
  const n = 65536;
  // 2^20 float32 patterns: every float16 value and its neighbours' midpoints, then random bits.
  const m = 1 << 20;
  const src16 = kernels.heap.allocate(2 * n);
  const dst32 = kernels.heap.allocate(4 * Math.max(n, m));
  const out16 = kernels.heap.allocate(2 * m);
  const buffer = kernels.heap.memory.buffer;
  const bits = new Uint16Array(buffer, src16, n);
  for (let i = 0; i < n; i++) bits[i] = i;
  const wide = new Float32Array(buffer, dst32, n);
  for (const [code, toNumber] of [[1, float16BitsToNumber], [2, bfloat16BitsToNumber]] as const) {
    kernels.exports.widen_to_f32(code, src16, dst32, n);
    for (let i = 0; i < n; i++) {
      const want = toNumber(i);
      if (Number.isNaN(want)) assert.ok(Number.isNaN(wide[i]), `widen ${code} ${i}`);
      else assert.equal(Object.is(wide[i], want), true, `widen ${code} 0x${i.toString(16)}`);
    }
  }
  const samples = new Uint32Array(buffer, dst32, m);
  const r = rng(11);
  for (let i = 0; i < m; i++) {
    const h = i & 0xffff;
    // Exact float16 values, values half an ulp above them (ties and near-ties), random bits.
    if (i < n) samples[i] = new Uint32Array(Float32Array.of(float16BitsToNumber(h)).buffer)[0];
    else if (i < 2 * n) samples[i] = samples[h] + 0x1000 + (i & 1);
    else samples[i] = Math.floor(r() * 2 ** 32);
  }
  const floats = new Float32Array(buffer, dst32, m);
  const narrowed = new Uint16Array(buffer, out16, m);
  for (
    const [code, fromFloat32] of [[1, float16BitsFromFloat32], [
      2,
      bfloat16BitsFromFloat32,
    ]] as const
  ) {
    kernels.exports.narrow_from_f32(code, dst32, out16, m);
    for (let i = 0; i < m; i++) {
      const want = fromFloat32(floats[i]);
      if (narrowed[i] !== want) {
        assert.fail(
          `narrow ${code}: bits 0x${samples[i].toString(16)} -> 0x${
            narrowed[i].toString(16)
          }, want 0x${want.toString(16)}`,
        );
      }
    }
  }
});

Deno.test("wasm kernels: one device interleaving shapes and ops reuses tables only when valid", async () => {
  // Each call's tables are written once per shape into a shared scratch block: alternate ops and
  // shapes, and grow the scratch block between calls of one shape, against fresh TypeScript runs.
  using wasm = Device.open({ backend: "cpu" });
  using ts = Device.open({ backend: "cpu", cpuKernels: "typescript" });
  const calls: [number[], Run][] = [
    [
      [2, 3, 6, 10],
      (_d, g) =>
        upsampleNearestExact2dBackward(g, { outputSize: [6, 10], inputSize: [2, 3, 4, 6] }),
    ],
    [
      [2, 3, 6, 10],
      (_d, g) => upsampleBilinear2dBackward(g, { outputSize: [6, 10], inputSize: [2, 3, 4, 6] }),
    ],
    [
      [2, 3, 6, 10],
      (_d, g) =>
        upsampleBilinear2dBackward(g, {
          outputSize: [6, 10],
          inputSize: [2, 3, 4, 6],
          alignCorners: true,
        }),
    ],
    [
      [1, 2, 40, 90],
      (_d, g) =>
        upsampleNearestExact2dBackward(g, { outputSize: [40, 90], inputSize: [1, 2, 23, 51] }),
    ],
    [
      [2, 3, 6, 10],
      (_d, g) =>
        upsampleNearestExact2dBackward(g, { outputSize: [6, 10], inputSize: [2, 3, 3, 5] }),
    ],
  ];
  const order = [0, 0, 1, 0, 2, 2, 1, 3, 0, 4, 0, 3, 3, 1];
  for (const [step, k] of order.entries()) {
    const [shape, run] = calls[k];
    const values = gradValues(rng(100 + step), shape.reduce((a, b) => a * b, 1));
    using a = run(wasm, wasm.tensor(values, shape));
    using b = run(ts, ts.tensor(values, shape));
    assertBitEqual(await a.toFloat32Array(), await b.toFloat32Array(), `step ${step} (call ${k})`);
  }
});

Deno.test("wasm heap: random allocations never overlap, stay aligned, and freed space is reused", () => {
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 256 });
  const heap = new WasmHeap(memory, 100);
  const r = rng(21);
  const live = new Map<number, number>();
  for (let step = 0; step < 4000; step++) {
    if (live.size > 0 && r() < 0.45) {
      const ptrs = [...live.keys()];
      const ptr = ptrs[Math.floor(r() * ptrs.length)];
      heap.free(ptr);
      live.delete(ptr);
      continue;
    }
    const bytes = 1 + Math.floor(r() ** 3 * 20000);
    const ptr = heap.allocate(bytes);
    assert.ok(ptr >= 100 && ptr % 16 === 0, `aligned block at ${ptr}`);
    assert.ok(ptr + bytes <= memory.buffer.byteLength, "inside the memory");
    for (const [other, size] of live) {
      assert.ok(ptr + bytes <= other || other + size <= ptr, `${ptr}+${bytes} overlaps ${other}`);
    }
    live.set(ptr, bytes);
  }
  for (const ptr of live.keys()) heap.free(ptr);
  assert.equal(heap.liveBlocks, 0);
  assert.equal(heap.liveBytes, 0);
  assert.throws(() => heap.free(112), /not a live block/);
  // Everything coalesced: the largest block that fit before fits again without growing.
  const pages = memory.buffer.byteLength;
  const all = heap.allocate(pages - 112);
  assert.equal(all, 112);
  assert.equal(memory.buffer.byteLength, pages);
  // Past the maximum: -1, and nothing changes.
  assert.equal(heap.allocate(256 * 65536), -1);
  heap.free(all);
});

Deno.test("wasm kernels: exact 2x bilinear downscale (the one-update-per-cell path) and near misses", async (t) => {
  // [outH, outW, scalesH, scalesW, alignCorners]: 2x with derived and explicit scales (fast path),
  // widths with vector tails, then scales or corners that break the pattern (general path).
  const cases: [number, number, number, number, boolean][] = [
    [4, 4, 0, 0, false],
    [3, 7, 0, 0, false],
    [1, 9, 0.5, 0.5, false],
    [5, 6, 0.5000001, 0, false],
    // Unequal weights along W only: the rows whose four cells differ (not the shared-update loop).
    [4, 6, 0, 0.5000001, false],
    [4, 4, 0, 0, true],
  ];
  let seed = 2000;
  for (const dtype of DTYPES) {
    await t.step(dtype, async () => {
      for (const [outH, outW, sh, sw, alignCorners] of cases) {
        for (const planes of [1, 3, 5]) {
          await compare(
            `down2 ${outH}x${outW} scales ${sh},${sw} ac=${alignCorners} planes ${planes}`,
            [1, planes, outH, outW],
            dtype,
            (_d, g) =>
              upsampleBilinear2dBackward(g, {
                outputSize: [outH, outW],
                inputSize: [1, planes, 2 * outH, 2 * outW],
                scalesH: sh || undefined,
                scalesW: sw || undefined,
                alignCorners,
              }),
            seed++,
          );
        }
      }
    });
  }
});

Deno.test("wasm heap: when the kernels' scratch space does not fit, the TypeScript kernels run", async () => {
  // 1 MiB of heap holds both tensors (256 KiB + 64 KiB) but not bilinear's 1 MiB weight table.
  const backend = new CpuBackend("auto", { heapLimitBytes: 2 ** 20 });
  const grad = backend.allocate("float32", 256 * 256);
  const out = backend.allocate("float32", 128 * 128);
  assert.ok(grad.heap !== null && out.heap !== null);
  const values = gradValues(rng(31), 256 * 256);
  backend.upload(grad, values);
  backend.launch(backendCall("bilinear2d", grad, out, [256, 256], [1, 1, 128, 128], true));
  using ts = Device.open({ backend: "cpu", cpuKernels: "typescript" });
  using expected = upsampleBilinear2dBackward(ts.tensor(values, [1, 1, 256, 256]), {
    outputSize: [256, 256],
    inputSize: [1, 1, 128, 128],
    alignCorners: true,
  });
  const got = await backend.download(out, "float32", 0, 16384);
  assertBitEqual(got as Float32Array, await expected.toFloat32Array(), "scratch fallback");
  backend.free(grad);
  backend.free(out);
  backend.close();
});

Deno.test("CPU buffers are reused by dtype and length on both kernel sets, and not after close", () => {
  for (const kernels of ["auto", "typescript"] as const) {
    const backend = new CpuBackend(kernels);
    const a = backend.allocate("float16", 100);
    backend.free(a);
    assert.equal(backend.allocate("bfloat16", 100) === a, false, `${kernels}: other dtype`);
    assert.equal(backend.allocate("float16", 101) === a, false, `${kernels}: other length`);
    assert.equal(backend.allocate("float16", 100), a, `${kernels}: same dtype and length`);
    // At most four per size are kept.
    const many = Array.from({ length: 6 }, () => backend.allocate("float32", 8));
    for (const buffer of many) backend.free(buffer);
    const again = Array.from({ length: 6 }, () => backend.allocate("float32", 8));
    assert.equal(again.filter((buffer) => many.includes(buffer)).length, 4, kernels);
    backend.close();
    backend.free(a); // after close: released, not kept
  }
});
