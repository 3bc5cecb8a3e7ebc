// The fixture loader and the fixtures themselves: the manifest parses, every file has the byte
// length of its shape, every case is one the aclnn contract allows, the generator matches the Python
// one, and a small independent nearest-exact model (docs/semantics.md) reproduces every nearest-exact
// fixture small enough to recompute here, which pins the lcg and sha256 conventions end to end.

import assert from "node:assert/strict";
import {
  FIXTURE_DIR,
  type FixtureCase,
  gradOutputShape,
  lcgValues,
  loadFixtures,
  numel,
  readManifest,
  sha256Hex,
} from "../support/fixtures.ts";

const encoder = new TextEncoder();

Deno.test("lcgValues matches tools/gen_fixtures.py", () => {
  // Printed by `python3 tools/gen_fixtures.py`.
  assert.deepEqual(
    Array.from(lcgValues(12345, 6)),
    [-1.015625, -0.984375, 0.375, -1.296875, 1.515625, 1.609375],
  );
  assert.deepEqual(Array.from(lcgValues(0, 3)), [0.671875, 0.375, 0.484375]);
  assert.deepEqual(Array.from(lcgValues(4294967295, 3)), [0.28125, -0.875, 0.59375]);
  assert.equal(lcgValues(7, 70001)[70000], -0.703125);
  assert.equal(lcgValues(1, 0).length, 0);
  // Every value is k/64 with |k| <= 127: exact in float16 and bfloat16.
  for (const v of lcgValues(99, 10000)) {
    assert.ok(Number.isInteger(v * 64) && Math.abs(v * 64) <= 127, `${v}`);
  }
});

Deno.test("sha256Hex of known buffers", async () => {
  assert.equal(
    await sha256Hex(new Uint8Array(0)),
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  );
  assert.equal(
    await sha256Hex(encoder.encode("abc")),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  // A view into a larger buffer hashes only its own bytes.
  const big = encoder.encode("xxabcxx");
  assert.equal(await sha256Hex(big.subarray(2, 5)), await sha256Hex(encoder.encode("abc")));
});

Deno.test("manifest: every data file exists with the byte length of its shape", async () => {
  const manifest = await readManifest();
  assert.equal(manifest.version, 1);
  assert.ok(manifest.cases.length > 300, `${manifest.cases.length} cases`);
  const referenced = new Set<string>();
  let bytes = 0;
  for (const c of manifest.cases) {
    const files: [string, number][] = [];
    if ("file" in c.gradOutput) files.push([c.gradOutput.file, numel(gradOutputShape(c))]);
    if ("file" in c.expected) files.push([c.expected.file, numel(c.inputSize)]);
    for (const [rel, count] of files) {
      const info = await Deno.stat(new URL(rel, FIXTURE_DIR));
      assert.equal(info.size, count * 4, `${c.name}: ${rel}`);
      assert.ok(!referenced.has(rel), `${rel} referenced twice`);
      referenced.add(rel);
      bytes += info.size;
    }
  }
  // No stray data files, and the fixtures stay small.
  for await (const entry of Deno.readDir(new URL("data/", FIXTURE_DIR))) {
    assert.ok(referenced.has(`data/${entry.name}`), `unreferenced file data/${entry.name}`);
  }
  assert.ok(bytes < 5_000_000, `${bytes} bytes of fixture data`);
});

Deno.test("loadFixtures: cases are well formed and within the aclnn contract", async () => {
  const fixtures = await loadFixtures();
  const names = new Set(fixtures.map((f) => f.name));
  assert.equal(names.size, fixtures.length);
  const ops = new Set(fixtures.map((f) => `${f.op}/${f.dtype}`));
  for (const op of ["nearestExact1d", "nearestExact2d", "bilinear2d"]) {
    for (const dtype of ["float32", "float16", "bfloat16"]) assert.ok(ops.has(`${op}/${dtype}`));
  }
  const layouts = new Set(fixtures.map((f) => f.layout));
  assert.deepEqual([...layouts].sort(), ["channelsLast", "contiguous", "offset", "transposed"]);
  for (const f of fixtures) {
    const what = f.name;
    assert.equal(f.expected === null, f.expectedSha256 !== null, what);
    assert.equal(f.expectedSha256 === null, f.expectedSum === null, what);
    if (f.op === "bilinear2d") assert.notEqual(f.expected, null, `${what}: bilinear needs values`);
    else assert.equal(f.alignCorners, false, what);
    if (f.expected) assert.equal(f.expected.length, numel(f.inputSize), what);
    if (f.layout === "channelsLast") assert.notEqual(f.op, "nearestExact1d", what);
    // nearest-exact 1d: aclnn rejects N = 0 (checked before its empty-tensor shortcut).
    if (f.op === "nearestExact1d") assert.ok(f.inputSize[0] > 0, what);
    f.scales.forEach((scale, i) => {
      const inp = f.inputSize[2 + i], out = f.outputSize[i];
      assert.ok(inp > 0 && out > 0 && scale >= 0, what);
      if (scale > 0) assert.equal(Math.floor(inp * scale), out, `${what}: floor contract`);
      if (f.op !== "bilinear2d") {
        // At most 50x either way, so both readings of aclnn's 0.02 limit accept every case.
        assert.ok(out <= 50 * inp && inp <= 50 * out, `${what}: 50x limit`);
        if (scale > 0) assert.ok(scale >= 0.02 && scale <= 50, `${what}: 50x limit`);
      }
    });
    if (f.op === "bilinear2d") assert.equal(f.scales[0] === 0, f.scales[1] === 0, what);
    // Gradients are exact in the case's dtype.
    if (f.gradOutputSeed === null) {
      assert.equal(f.gradOutput.length, numel(gradOutputShape(f)), what);
      for (const v of f.gradOutput) assert.ok(Number.isNaN(v) || roundTo(f.dtype, v) === v, what);
    }
  }
});

Deno.test("generated gradOutput is produced on access and matches lcgValues", async () => {
  const fixtures = await loadFixtures();
  const f = fixtures.find((c) => c.gradOutputSeed !== null && numel(gradOutputShape(c)) < 1e5);
  assert.ok(f);
  const g = f.gradOutput;
  assert.equal(g.length, numel(gradOutputShape(f)));
  assert.deepEqual(g, lcgValues(f.gradOutputSeed!, g.length));
  assert.equal(f.gradOutput, g, "kept while referenced");
});

// ---- an independent nearest-exact model (docs/semantics.md) ----

function nearestIndex(inp: number, out: number, scale: number): Int32Array {
  const s = scale > 0 ? Math.fround(1 / scale) : Math.fround(Math.fround(inp) / Math.fround(out));
  const src = new Int32Array(out);
  for (let o = 0; o < out; o++) {
    src[o] = Math.min(Math.floor(Math.fround(Math.fround(o + 0.5) * s)), inp - 1);
  }
  return src;
}

function nearestBackward(f: FixtureCase, grad: Float32Array): Float32Array {
  const [n, c] = f.inputSize;
  const inH = f.op === "nearestExact1d" ? 1 : f.inputSize[2];
  const inW = f.inputSize[f.inputSize.length - 1];
  const outH = f.op === "nearestExact1d" ? 1 : f.outputSize[0];
  const outW = f.outputSize[f.outputSize.length - 1];
  const scaleH = f.op === "nearestExact1d" ? 0 : f.scales[0];
  const hs = nearestIndex(inH, outH, scaleH);
  const ws = nearestIndex(inW, outW, f.scales[f.scales.length - 1]);
  const result = new Float32Array(n * c * inH * inW); // +0.0 start, float32 adds in row-major order
  for (let p = 0; p < n * c; p++) {
    for (let oh = 0; oh < outH; oh++) {
      for (let ow = 0; ow < outW; ow++) {
        const k = p * inH * inW + hs[oh] * inW + ws[ow];
        result[k] = Math.fround(result[k] + grad[(p * outH + oh) * outW + ow]);
      }
    }
  }
  return result;
}

function bf16Bits(v: number): number {
  const u = new Uint32Array(new Float32Array([v]).buffer)[0];
  if (Number.isNaN(v)) return (u >>> 16) | 0x40;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

function roundTo(dtype: FixtureCase["dtype"], v: number): number {
  if (dtype === "float32") return Math.fround(v);
  if (dtype === "float16") return Math.f16round(v);
  return new Float32Array(new Uint32Array([bf16Bits(v) << 16]).buffer)[0];
}

function bytesIn(dtype: FixtureCase["dtype"], values: Float32Array): Uint8Array {
  if (dtype === "float32") {
    return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  }
  const bits = dtype === "float16"
    ? new Uint16Array(new Float16Array(values).buffer)
    : Uint16Array.from(values, bf16Bits);
  return new Uint8Array(bits.buffer);
}

function sameBits(a: number, b: number): boolean {
  return Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));
}

Deno.test("small nearest-exact fixtures agree with the semantics.md model (files and hashes)", async () => {
  const fixtures = await loadFixtures();
  let files = 0, hashes = 0;
  for (const f of fixtures) {
    if (f.op === "bilinear2d" || numel(gradOutputShape(f)) > 60_000) continue;
    const got = nearestBackward(f, f.gradOutput);
    if (f.expected) {
      for (let i = 0; i < got.length; i++) {
        assert.ok(
          sameBits(got[i], f.expected[i]),
          `${f.name}[${i}]: ${got[i]} vs ${f.expected[i]}`,
        );
      }
      files++;
    } else {
      assert.equal(await sha256Hex(bytesIn(f.dtype, got)), f.expectedSha256, f.name);
      let sum = 0;
      for (const v of got) sum += v;
      // numpy sums pairwise, so allow for rounding (lcg sums are exact in practice).
      assert.ok(Math.abs(sum - f.expectedSum!) <= 1e-9 * Math.max(1, Math.abs(sum)), f.name);
      hashes++;
    }
  }
  assert.ok(files > 100 && hashes > 50, `${files} files, ${hashes} hashes`);
});
