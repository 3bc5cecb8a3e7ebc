// Raw half-precision data on every lane: device.tensor() takes float16/bfloat16 bit patterns
// (Uint16Array, or Int16Array as PyTorch's .view(torch.int16) gives them) and toRawBits() returns
// them untouched — every one of the 65536 patterns, NaN payloads, -0 and subnormals — through views too;
// ops see the values the bits encode.

import assert from "node:assert/strict";
import { type DType, upsampleNearestExact2dBackward } from "../../mod.ts";
import { decodeInto } from "../../src/tensor/dtype.ts";
import { BACKENDS } from "../support/helpers.ts";

const ALL_PATTERNS = Uint16Array.from({ length: 65536 }, (_, i) => i);
const HALF_DTYPES = ["float16", "bfloat16"] as const;

function firstDifference(actual: Uint16Array, expected: Uint16Array): string | null {
  if (actual.length !== expected.length) return `length ${actual.length} != ${expected.length}`;
  for (let i = 0; i < actual.length; i++) {
    if (actual[i] !== expected[i]) {
      return `element ${i}: 0x${actual[i].toString(16)} != 0x${expected[i].toString(16)}`;
    }
  }
  return null;
}

for (const backend of BACKENDS) {
  backend.test(`raw bits on ${backend.label}: all 65536 patterns round-trip`, async () => {
    using device = backend.open();
    for (const dtype of HALF_DTYPES) {
      using t = device.tensor(ALL_PATTERNS, [256, 256], { dtype });
      assert.equal(firstDifference(await t.toRawBits(), ALL_PATTERNS), null, dtype);
      // The values the bits encode, NaN for every NaN pattern.
      const values = await t.toFloat32Array();
      const want = new Float32Array(65536);
      decodeInto(dtype, ALL_PATTERNS, want);
      for (let i = 0; i < 65536; i++) {
        assert.ok(Object.is(values[i], want[i]), `${dtype} 0x${i.toString(16)}: ${values[i]}`);
      }
      // Int16Array (PyTorch's int16 view) is the same bits.
      const signed = new Int16Array(ALL_PATTERNS.buffer.slice(0));
      using fromSigned = device.tensor(signed, [65536], { dtype });
      assert.equal(firstDifference(await fromSigned.toRawBits(), ALL_PATTERNS), null);
      // A non-contiguous view gathers the bits in logical order.
      using transposed = t.transpose(0, 1).slice(0, 3, 200, 7);
      const bits = await transposed.toRawBits();
      const expected = new Uint16Array(bits.length);
      let k = 0;
      for (let i = 3; i < 200; i += 7) for (let j = 0; j < 256; j++) expected[k++] = j * 256 + i;
      assert.equal(firstDifference(bits, expected), null, `${dtype} view`);
    }
  });

  backend.test(`raw bits on ${backend.label}: NaN payloads, -0 and subnormals kept; ops see their values`, async () => {
    using device = backend.open();
    const special: Record<DType, number[]> = {
      // Channel 0: NaNs with payloads (quiet, negative, signalling) and 1. Channel 1: -0, the
      // smallest subnormal, a negative subnormal, the smallest normal.
      float16: [0x7d55, 0xfe01, 0x7c01, 0x3c00, 0x8000, 0x0001, 0x83ff, 0x0400],
      bfloat16: [0x7fc1, 0xff81, 0x7f81, 0x3f80, 0x8000, 0x0001, 0x807f, 0x0080],
      float32: [],
    };
    for (const dtype of HALF_DTYPES) {
      const bits = Uint16Array.from(special[dtype]);
      using t = device.tensor(bits, [1, 2, 2, 2], { dtype });
      assert.deepEqual([...await t.toRawBits()], [...bits], `${dtype}: stored untouched`);
      // The op on raw bits gives the bits it gives on the same values passed as numbers.
      const values = new Float32Array(bits.length);
      decodeInto(dtype, bits, values);
      using same = device.tensor(values, [1, 2, 2, 2], { dtype });
      const options = { outputSize: [2, 2], inputSize: [1, 2, 1, 1] };
      using fromBits = upsampleNearestExact2dBackward(t, options);
      using fromValues = upsampleNearestExact2dBackward(same, options);
      const a = await fromBits.toFloat32Array();
      const b = await fromValues.toFloat32Array();
      // Channel 0 sums NaNs: NaN. Channel 1 sums -0 and subnormals: the same bits either way.
      assert.ok(Number.isNaN(a[0]) && Number.isNaN(b[0]), `${dtype}: NaN channel`);
      assert.ok(Object.is(a[1], b[1]), `${dtype}: ${a[1]} vs ${b[1]}`);
      assert.equal(
        firstDifference(
          (await fromBits.toRawBits()).subarray(1),
          (await fromValues.toRawBits()).subarray(1),
        ),
        null,
      );
    }
  });

  backend.test(`raw bits on ${backend.label}: misuse is refused, naming the rule`, async () => {
    using device = backend.open();
    assert.throws(
      () => device.tensor(new Uint16Array(4), [4]),
      /^TypeError: tensor\(values, shape\): a Uint16Array holds float16\/bfloat16 bit patterns, but dtype is float32/,
    );
    assert.throws(
      () => device.tensor(new Int16Array(4), [4], { dtype: "float32" }),
      /a Int16Array holds float16\/bfloat16 bit patterns/,
    );
    assert.throws(
      () => device.tensor(new Uint16Array(3), [4], { dtype: "float16" }),
      /^RangeError: tensor\(values, shape\): 3 values do not fill shape \[4\]/,
    );
    using f32 = device.tensor([1, 2], [2]);
    await assert.rejects(
      () => f32.toRawBits(),
      /^TypeError: toRawBits: the tensor is float32; raw bits are for float16 and bfloat16/,
    );
    using empty = device.zeros([0, 3], { dtype: "bfloat16" });
    assert.equal((await empty.toRawBits()).length, 0);
    const disposed = device.tensor(new Uint16Array([1]), [1], { dtype: "float16" });
    disposed.dispose();
    await assert.rejects(() => disposed.toRawBits(), /^TypeError: toRawBits: the float16 tensor/);
  });
}
