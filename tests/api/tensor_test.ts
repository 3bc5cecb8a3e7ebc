// Layout math, tensors and views, device lifetimes: pure TypeScript units plus both backends.

import assert from "node:assert/strict";
import { Device } from "../../mod.ts";
import {
  contiguousStrides,
  isContiguous,
  numel,
  permuteLayout,
  sliceLayout,
  storageSpan,
  transposeLayout,
} from "../../src/tensor/layout.ts";
import { BACKENDS, emuLive } from "../support/helpers.ts";
import { Storage, StorageList } from "../../src/tensor/storage.ts";

Deno.test("layout: strides, element counts, contiguity, spans", () => {
  assert.deepEqual(contiguousStrides([2, 3, 4]), [12, 4, 1]);
  assert.deepEqual(contiguousStrides([2, 0, 4]), [4, 4, 1]);
  assert.equal(numel([2, 3, 4]), 24);
  assert.equal(numel([]), 1);
  assert.equal(numel([5, 0, 7]), 0);
  assert.throws(() => numel([2 ** 30, 2 ** 30, 2 ** 30]), /more than 2\^53 - 1/);
  assert.equal(isContiguous({ shape: [2, 3], strides: [3, 1], offset: 5 }), true);
  assert.equal(isContiguous({ shape: [2, 1, 3], strides: [3, 99, 1], offset: 0 }), true);
  assert.equal(isContiguous({ shape: [2, 3], strides: [1, 2], offset: 0 }), false);
  assert.deepEqual(storageSpan({ shape: [2, 2], strides: [4, 1], offset: 1 }), {
    first: 1,
    last: 6,
  });
  assert.equal(storageSpan({ shape: [2, 0], strides: [1, 1], offset: 0 }), null);
});

Deno.test("layout: permute, transpose, slice and their errors", () => {
  const base = { shape: [2, 3, 4], strides: [12, 4, 1], offset: 0 };
  assert.deepEqual(permuteLayout(base, [2, 0, 1]), {
    shape: [4, 2, 3],
    strides: [1, 12, 4],
    offset: 0,
  });
  assert.deepEqual(permuteLayout(base, [-1, 0, 1]).shape, [4, 2, 3]);
  assert.throws(() => permuteLayout(base, [0, 0, 1]), /must not repeat/);
  assert.throws(() => permuteLayout(base, [0, 1]), TypeError);
  assert.throws(() => permuteLayout(base, [0, 1, 3]), RangeError);
  assert.deepEqual(transposeLayout(base, 0, 2).strides, [1, 4, 12]);
  assert.deepEqual(sliceLayout(base, 2, 1, 4, 2), {
    shape: [2, 3, 2],
    strides: [12, 4, 2],
    offset: 1,
  });
  assert.deepEqual(sliceLayout(base, 1, -2), { shape: [2, 2, 4], strides: [12, 4, 1], offset: 4 });
  assert.deepEqual(sliceLayout(base, 0, 5, 9).shape, [0, 3, 4]);
  assert.throws(() => sliceLayout(base, 0, 0, 2, 0), /step must be >= 1, got 0/);
  assert.throws(() => sliceLayout(base, 0, 0.5), /start must be an integer/);
});

for (const backend of BACKENDS) {
  backend.test(`tensor on ${backend.label}: values, dtypes, views share storage`, async () => {
    using device = backend.open();
    using x = device.tensor([1, 2, 3, 4, 5, 6], [2, 3]);
    assert.deepEqual(x.shape, [2, 3]);
    assert.deepEqual(x.strides, [3, 1]);
    assert.equal(x.dtype, "float32");
    assert.equal(x.device, device);
    assert.deepEqual([...await x.toFloat32Array()], [1, 2, 3, 4, 5, 6]);
    using xt = x.transpose(0, 1);
    assert.equal(xt.contiguous, false);
    assert.deepEqual([...await xt.toFloat32Array()], [1, 4, 2, 5, 3, 6]);
    using col = x.slice(1, 1, 3).slice(0, 1);
    assert.deepEqual(col.shape, [1, 2]);
    assert.equal(col.offset, 4);
    assert.deepEqual([...await col.toFloat32Array()], [5, 6]);
    using p = x.permute(1, 0).slice(0, 0, 3, 2);
    assert.deepEqual([...await p.toFloat32Array()], [1, 4, 3, 6]);
    // Disposing the base keeps the storage alive for its views.
    x.dispose();
    assert.deepEqual([...await xt.toFloat32Array()], [1, 4, 2, 5, 3, 6]);
    assert.throws(() => x.transpose(0, 1), /transpose: the float32 tensor \[2, 3\] was disposed/);
    await assert.rejects(() => x.toFloat32Array(), TypeError);

    using h = device.tensor([1 / 3, 65519, 1e-8, -0], [4], { dtype: "float16" });
    assert.deepEqual([...await h.toFloat32Array()], [0.333251953125, 65504, 0, -0]);
    using b = device.tensor([1 / 3, 3e38, NaN, Infinity], [4], { dtype: "bfloat16" });
    const bv = await b.toFloat32Array();
    assert.equal(bv[0], 0.333984375);
    assert.equal(bv[1], 226 * 2 ** 120); // 3e38 = 1.7633 * 2^127 rounds to 1.765625 * 2^127
    assert.ok(Number.isNaN(bv[2]));
    assert.equal(bv[3], Infinity);
    using z = device.zeros([2, 2], { dtype: "bfloat16" });
    assert.deepEqual([...await z.toFloat32Array()], [0, 0, 0, 0]);
  });

  backend.test(`tensor on ${backend.label}: bad arguments`, () => {
    using device = backend.open();
    assert.throws(() => device.tensor([1, 2, 3], [2, 2]), /3 values do not fill shape \[2, 2\]/);
    assert.throws(
      () => device.tensor([1, "2", 3] as never, [3]),
      /^TypeError: tensor\(values, shape\): values\[1\] is string, not a number$/,
    );
    assert.throws(
      () => device.tensor([1], [1], { dtype: "int8" as never }),
      /dtype must be one of/,
    );
    assert.throws(() => device.zeros([2, -1]), RangeError);
    assert.throws(() => device.zeros("2" as never), TypeError);
    assert.throws(() => device.setDeterministic(1 as never), /on must be a boolean/);
  });

  backend.test(`device on ${backend.label}: dispose twice, close frees live tensors once`, () => {
    const before = !backend.emulated ? null : emuLive();
    const device = backend.open();
    const a = device.zeros([4, 4]);
    const view = a.transpose(0, 1);
    a.dispose();
    a.dispose();
    const b = device.tensor([1, 2], [2]);
    assert.equal(b.disposed, false);
    device.close();
    assert.equal(view.disposed, true);
    assert.equal(b.disposed, true);
    b.dispose();
    device.close();
    if (before) assert.deepEqual(emuLive(), before);
  });
}

Deno.test("Device.open: options are checked", () => {
  assert.throws(
    () => Device.open({ backend: "gpu" as never }),
    /backend must be "auto", "npu" or "cpu"/,
  );
  assert.throws(() => Device.open({ deviceId: -1 }), /deviceId must be an integer >= 0, got -1/);
  assert.throws(() => Device.open({ libdir: "/x" } as never), /unknown option "libdir"/);
  using cpu = Device.open({ backend: "cpu", deterministic: true });
  assert.equal(cpu.deterministic, true);
  assert.equal(cpu.name, "cpu (WebAssembly SIMD)");
  using ts = Device.open({ backend: "cpu", cpuKernels: "typescript" });
  assert.equal(ts.name, "cpu (TypeScript)");
  assert.throws(
    () => Device.open({ backend: "cpu", cpuKernels: "wasm" as never }),
    /cpuKernels must be "auto" or "typescript", got wasm/,
  );
});

for (const backend of BACKENDS) {
  backend.test(`storage reuse on ${backend.label}: freed memory never leaks into live tensors`, async () => {
    using device = backend.open();
    const a = device.tensor([1, 2, 3, 4], [4]);
    a.dispose();
    using zeros = device.zeros([4]);
    assert.deepEqual([...await zeros.toFloat32Array()], [0, 0, 0, 0]);
    const b = device.tensor([5, 6, 7, 8], [4]);
    using view = b.slice(0, 1, 3);
    b.dispose(); // the view keeps the storage: it must not be handed out again
    using c = device.tensor([9, 9, 9, 9], [4]);
    assert.deepEqual([...await view.toFloat32Array()], [6, 7]);
    assert.deepEqual([...await c.toFloat32Array()], [9, 9, 9, 9]);
    using h = device.zeros([4], { dtype: "bfloat16" });
    assert.deepEqual([...await h.toFloat32Array()], [0, 0, 0, 0]);
  });
}

Deno.test("StorageList: add, remove in any order, freeAll frees each storage once", () => {
  const freed: number[] = [];
  const list = new StorageList();
  const owner = {
    storageBackend: { free: (handle: unknown) => freed.push(handle as number) } as never,
    forget: (storage: Storage) => list.remove(storage),
  };
  const storages = [0, 1, 2, 3, 4].map((i) => new Storage(owner, i, "float32", 1));
  for (const s of storages) list.add(s);
  list.remove(storages[2]); // middle
  list.remove(storages[4]); // head
  list.remove(storages[4]); // twice: no effect
  assert.equal(list.size, 3);
  storages[0].retain();
  storages[0].release(); // frees and forgets through the owner
  assert.deepEqual(freed, [0]);
  assert.equal(list.size, 2);
  list.freeAll();
  assert.deepEqual(freed.sort(), [0, 1, 3]);
  assert.equal(list.size, 0);
});

Deno.test("tensors of one shape share frozen shape arrays; others get their own", () => {
  using device = Device.open({ backend: "cpu" });
  using a = device.zeros([2, 3]);
  using b = device.zeros([2, 3]);
  using c = device.zeros([3, 2]);
  assert.equal(a.shape, b.shape);
  assert.deepEqual(c.shape, [3, 2]);
  assert.deepEqual(a.shape, [2, 3]);
  assert.deepEqual(a.strides, [3, 1]);
  assert.ok(Object.isFrozen(a.shape) && Object.isFrozen(a.strides));
});
