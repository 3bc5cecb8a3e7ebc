import assert from "node:assert/strict";
import {
  allocateHost,
  bfloat16BitsFromFloat32,
  bfloat16BitsFromNumber,
  bfloat16BitsToNumber,
  decodeInto,
  dtypeByteSize,
  DTYPES,
  encodeInto,
  float16BitsFromFloat32,
  float16BitsFromNumber,
  float16BitsToNumber,
  isDType,
  roundToDType,
} from "../../src/tensor/dtype.ts";
import { rng as prng } from "../support/helpers.ts";

/** Independent decoders: the engine's Float16Array, and float32 bits << 16. */
function f16Oracle(bits: number): number {
  return new Float16Array(Uint16Array.of(bits).buffer)[0];
}
function bf16Oracle(bits: number): number {
  return new Float32Array(Uint32Array.of(bits << 16).buffer)[0];
}

interface Format {
  name: string;
  from: (x: number) => number;
  to: (bits: number) => number;
  oracle: (bits: number) => number;
  nan: number;
  inf: number;
  maxFinite: number;
}
const FORMATS: Format[] = [
  {
    name: "float16",
    from: float16BitsFromNumber,
    to: float16BitsToNumber,
    oracle: f16Oracle,
    nan: 0x7e00,
    inf: 0x7c00,
    maxFinite: 0x7bff,
  },
  {
    name: "bfloat16",
    from: bfloat16BitsFromNumber,
    to: bfloat16BitsToNumber,
    oracle: bf16Oracle,
    nan: 0x7fc0,
    inf: 0x7f80,
    maxFinite: 0x7f7f,
  },
];

Deno.test("dtype names and sizes", () => {
  assert.deepEqual([...DTYPES], ["float32", "float16", "bfloat16"]);
  for (const d of DTYPES) assert.ok(isDType(d));
  for (const bad of ["float64", "Float32", "", 32, null, undefined, {}]) assert.ok(!isDType(bad));
  assert.deepEqual(DTYPES.map(dtypeByteSize), [4, 2, 2]);
  assert.ok(allocateHost("float32", 3) instanceof Float32Array);
  assert.ok(allocateHost("float16", 3) instanceof Uint16Array);
  assert.equal(allocateHost("bfloat16", 5).length, 5);
  assert.throws(() => allocateHost("float32", -1), RangeError);
  assert.throws(() => allocateHost("float16", 1.5), RangeError);
});

for (const f of FORMATS) {
  Deno.test(`${f.name}: all 65536 bit patterns decode exactly and round-trip`, () => {
    for (let bits = 0; bits < 0x10000; bits++) {
      const v = f.to(bits);
      const want = f.oracle(bits);
      assert.ok(Object.is(v, want), `${f.name} ${bits.toString(16)}: ${v} vs ${want}`);
      if (v !== v) assert.equal(f.from(v), f.nan);
      else if (f.from(v) !== bits) {
        assert.fail(`${f.name} ${bits.toString(16)} -> ${v} -> ${f.from(v)}`);
      }
    }
  });

  Deno.test(`${f.name}: ties to even, just above and below every halfway point`, () => {
    for (let bits = 0; bits < f.maxFinite; bits++) {
      for (const sign of [0, 0x8000]) {
        const a = f.to(bits | sign);
        const b = f.to((bits + 1) | sign);
        const mid = (a + b) / 2; // exact in float64
        const even = bits % 2 === 0 ? bits : bits + 1;
        assert.equal(f.from(mid), even | sign, `${f.name} tie ${mid}`);
        // Nudge by far less than a float32 ulp: rounding through float32 first would hit the tie.
        const nudge = Math.abs(mid) * 2 ** -40 || 2 ** -1000;
        assert.equal(
          f.from(mid + (sign ? -nudge : nudge)),
          (bits + 1) | sign,
          `${f.name} above ${mid}`,
        );
        assert.equal(f.from(mid - (sign ? -nudge : nudge)), bits | sign, `${f.name} below ${mid}`);
      }
    }
  });

  Deno.test(`${f.name}: specials, overflow, subnormals, -0`, () => {
    const max = f.to(f.maxFinite);
    const halfUlp = (f.to(f.maxFinite) - f.to(f.maxFinite - 1)) / 2;
    assert.equal(f.from(max + halfUlp), f.inf); // tie between max and "next" (inf, even)
    assert.equal(f.from(max + halfUlp * (1 - 2 ** -30)), f.maxFinite);
    assert.equal(f.from(-(max + halfUlp)), f.inf | 0x8000);
    assert.equal(f.from(1e300), f.inf);
    assert.equal(f.from(Number.MAX_VALUE), f.inf);
    assert.equal(f.from(Infinity), f.inf);
    assert.equal(f.from(-Infinity), f.inf | 0x8000);
    assert.equal(f.from(NaN), f.nan);
    assert.equal(f.from(0), 0);
    assert.equal(f.from(-0), 0x8000);
    const minSub = f.to(1);
    assert.equal(f.from(minSub / 2), 0); // tie to even (zero)
    assert.equal(f.from(-minSub / 2), 0x8000);
    assert.equal(f.from((minSub / 2) * (1 + 2 ** -40)), 1);
    assert.equal(f.from(minSub * 1.5), 2); // tie between 1 and 2: even
    assert.equal(f.from(5e-324), 0);
    assert.equal(f.from(-5e-324), 0x8000);
    assert.ok(Object.is(f.to(0x8000), -0));
    assert.ok(Number.isNaN(f.to(f.nan)));
  });

  Deno.test(`${f.name}: random doubles round to the nearest (even on ties)`, () => {
    const rng = prng(f.name.length);
    for (let i = 0; i < 200000; i++) {
      const x = (rng() < 0.5 ? -1 : 1) * rng() * 2 ** Math.floor(rng() * 300 - 150);
      const r = f.from(x);
      const v = f.to(r);
      if (!Number.isFinite(v)) {
        assert.ok(Math.abs(x) >= f.to(f.maxFinite), `${x} overflowed`);
        continue;
      }
      const mag = r & 0x7fff;
      const sign = r & 0x8000;
      for (const other of [mag - 1, mag + 1]) {
        if (other < 0 || other > f.maxFinite) continue;
        const w = f.to(other | sign);
        const dv = Math.abs(x - v);
        const dw = Math.abs(x - w);
        assert.ok(
          dv < dw || (dv === dw && mag % 2 === 0),
          `${f.name}(${x}) = ${v}, but ${w} is nearer`,
        );
      }
    }
  });
}

Deno.test("float32 fast paths agree with the float64 paths on float32 values", () => {
  const rng = prng(5);
  const u32 = new Uint32Array(1);
  const f32 = new Float32Array(u32.buffer);
  for (let i = 0; i < 300000; i++) {
    u32[0] = Math.floor(rng() * 2 ** 32);
    const x = f32[0];
    assert.equal(bfloat16BitsFromFloat32(x), bfloat16BitsFromNumber(x), `${u32[0].toString(16)}`);
    assert.equal(float16BitsFromFloat32(x), float16BitsFromNumber(x));
  }
  assert.equal(bfloat16BitsFromFloat32(NaN), 0x7fc0);
  // A float32 NaN whose bit trick would carry into inf.
  u32[0] = 0x7f800001;
  assert.equal(bfloat16BitsFromFloat32(f32[0]), 0x7fc0);
});

Deno.test("roundToDType", () => {
  assert.equal(roundToDType("float32", 0.1), Math.fround(0.1));
  assert.equal(roundToDType("float16", 0.1), 0.0999755859375);
  assert.equal(roundToDType("bfloat16", 0.1), 0.10009765625);
  assert.equal(roundToDType("bfloat16", 1 + 2 ** -8 + 2 ** -40), 1 + 2 ** -7);
  assert.equal(roundToDType("float16", 70000), Infinity);
});

Deno.test("encodeInto/decodeInto: every path equals the scalar conversions", () => {
  const rng = prng(9);
  const values: number[] = [NaN, -NaN, Infinity, -Infinity, 0, -0, 65520, 1e-8, -3e38, 3.4e38];
  for (let i = 0; i < 5000; i++) values.push((rng() - 0.5) * 2 ** Math.floor(rng() * 80 - 40));
  const asF32 = Float32Array.from(values);
  for (const dtype of DTYPES) {
    for (const source of [values, asF32]) {
      const host = allocateHost(dtype, source.length + 2);
      host.fill(7);
      encodeInto(dtype, source, host);
      for (let i = 0; i < source.length; i++) {
        const x = source[i];
        const want = dtype === "float32"
          ? Math.fround(x)
          : dtype === "float16"
          ? float16BitsFromNumber(x)
          : bfloat16BitsFromNumber(x);
        assert.ok(Object.is(host[i], want), `${dtype}[${i}] of ${x}: ${host[i]} vs ${want}`);
      }
      assert.deepEqual([host[source.length], host[source.length + 1]], [7, 7]);
      const back = new Float32Array(host.length);
      decodeInto(dtype, host, back);
      for (let i = 0; i < source.length; i++) {
        const want = dtype === "float32"
          ? host[i]
          : dtype === "float16"
          ? float16BitsToNumber(host[i])
          : bfloat16BitsToNumber(host[i]);
        assert.ok(Object.is(back[i], Math.fround(want)), `decode ${dtype}[${i}]`);
      }
    }
  }
});

Deno.test("encodeInto/decodeInto on subarray views with a byte offset", () => {
  const buffer = new Uint16Array(10);
  const view = buffer.subarray(3, 6);
  encodeInto("bfloat16", [1, 2, 3], view);
  assert.deepEqual([...buffer], [0, 0, 0, 0x3f80, 0x4000, 0x4040, 0, 0, 0, 0]);
  encodeInto("float16", [1, 2, 3], view);
  assert.deepEqual([...buffer], [0, 0, 0, 0x3c00, 0x4000, 0x4200, 0, 0, 0, 0]);
  const out = new Float32Array(5).subarray(1, 4);
  decodeInto("float16", view, out);
  assert.deepEqual([...out], [1, 2, 3]);
  encodeInto("bfloat16", [1, 2, 3], view);
  decodeInto("bfloat16", view, out);
  assert.deepEqual([...out], [1, 2, 3]);
});

Deno.test("encodeInto/decodeInto reject wrong storage and short targets", () => {
  assert.throws(() => encodeInto("float16", [1], new Float32Array(1)), TypeError);
  assert.throws(() => encodeInto("float32", [1], new Uint16Array(1)), TypeError);
  assert.throws(() => encodeInto("bfloat16", [1, 2], new Uint16Array(1)), RangeError);
  assert.throws(() => decodeInto("float32", new Uint16Array(1), new Float32Array(1)), TypeError);
  assert.throws(() => decodeInto("float16", new Uint16Array(3), new Float32Array(2)), RangeError);
});
