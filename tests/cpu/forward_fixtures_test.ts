// The forward kernels against PyTorch 1.13 (tests/fixtures/forward/, tools/gen_forward_fixtures.py):
// the TypeScript kernels on every case, the input in the layout PyTorch computed from and the
// output in each layout, bit for bit; and the fixtures themselves (files, sizes, coverage).

import assert from "node:assert/strict";
import type { StridedArray } from "../../src/cpu/types.ts";
import {
  bilinear2dForwardCpu,
  nearestExact1dForwardCpu,
  nearestExact2dForwardCpu,
  type UpsampleForwardArgs,
} from "../../src/cpu/pytorch/forward/mod.ts";
import {
  emptyView,
  firstDifference,
  FORWARD_FIXTURE_DIR,
  FORWARD_LAYOUTS,
  type ForwardCase,
  type ForwardLayout,
  loadForwardFixtures,
  logical,
  outputShape,
  present,
  rawSha256,
  show,
} from "../support/forward_fixtures.ts";

const fixtures = await loadForwardFixtures();

/** Runs the case's op on the TypeScript kernels. */
function runTs(c: ForwardCase, input: StridedArray, out: StridedArray): void {
  const args: UpsampleForwardArgs = {
    input,
    out,
    inputSize: c.inputSize,
    outputSize: c.outputSize,
    scales: c.scales,
    alignCorners: c.alignCorners,
  };
  if (c.op === "nearestExact1d") nearestExact1dForwardCpu(args);
  else if (c.op === "nearestExact2d") nearestExact2dForwardCpu(args);
  else bilinear2dForwardCpu(args);
}

/** Checks a logical output against the case's expected bits (or hash). */
async function check(c: ForwardCase, got: Float32Array | Uint16Array, what: string): Promise<void> {
  if (c.expected !== null) {
    const i = firstDifference(c.dtype, got, c.expected);
    if (i >= 0) {
      assert.fail(
        `${c.name} ${what}: element ${i} is ${show(c.dtype, got, i)}, PyTorch ${
          show(c.dtype, c.expected, i)
        }`,
      );
    }
  } else {
    assert.equal(await rawSha256(got), c.expectedSha256, `${c.name} ${what}: output hash`);
  }
}

/** The output layouts a case is checked with: contiguous and one more, by case index. */
function outLayouts(c: ForwardCase, index: number): ForwardLayout[] {
  const usable = FORWARD_LAYOUTS.filter((l) => l !== "channelsLast" || c.inputSize.length === 4);
  return ["contiguous", usable[1 + (index % (usable.length - 1))]];
}

Deno.test("forward fixtures: files, sizes and coverage", async () => {
  assert.ok(fixtures.length > 150, `${fixtures.length} cases`);
  let bytes = 0;
  const referenced = new Set<string>();
  const manifest = JSON.parse(
    await Deno.readTextFile(new URL("manifest.json", FORWARD_FIXTURE_DIR)),
  ) as { cases: { input: { file?: string }; expected: { file?: string } }[] };
  for (const c of manifest.cases) {
    for (const rel of [c.input.file, c.expected.file]) {
      if (rel === undefined) continue;
      referenced.add(rel);
      bytes += (await Deno.stat(new URL(rel, FORWARD_FIXTURE_DIR))).size;
    }
  }
  for await (const entry of Deno.readDir(new URL("data/", FORWARD_FIXTURE_DIR))) {
    assert.ok(referenced.has(`data/${entry.name}`), `unreferenced file data/${entry.name}`);
  }
  assert.ok(bytes < 1_000_000, `${bytes} bytes of forward fixture data`);
  const kinds = new Set(fixtures.map((c) => `${c.op}/${c.dtype}/${c.layout}`));
  for (const op of ["nearestExact1d", "nearestExact2d", "bilinear2d"]) {
    for (const dtype of ["float32", "float16", "bfloat16"]) {
      assert.ok(kinds.has(`${op}/${dtype}/contiguous`), `${op} ${dtype}`);
    }
  }
  for (const layout of FORWARD_LAYOUTS) {
    assert.ok(kinds.has(`bilinear2d/float32/${layout}`), layout);
    assert.ok(kinds.has(`bilinear2d/bfloat16/${layout}`), layout);
    assert.ok(kinds.has(`nearestExact2d/float32/${layout}`), layout);
  }
  // 1.13 computes float32 and bfloat16 bilinear itself, and nothing else.
  for (const c of fixtures) {
    assert.equal(
      c.native,
      c.dtype === "float32" || (c.dtype === "bfloat16" && c.op === "bilinear2d"),
    );
  }
  assert.ok(fixtures.some((c) => c.inputSize[0] === 0), "N = 0");
  assert.ok(fixtures.some((c) => c.expectedSha256 !== null), "hashed outputs");
});

Deno.test("forward fixtures: the TypeScript kernels give PyTorch's bits, every input and output layout", async () => {
  let checked = 0;
  for (const [index, c] of fixtures.entries()) {
    const input = present(c.input, c.dtype, c.inputSize, c.layout);
    for (const layout of outLayouts(c, index)) {
      const shape = outputShape(c);
      const out = emptyView(c.dtype, shape, layout);
      runTs(c, input, out);
      await check(c, logical(out, shape), `(TypeScript, input ${c.layout}, out ${layout})`);
      checked++;
    }
  }
  assert.ok(checked >= 2 * fixtures.length - 1);
});

Deno.test("forward fixtures: a changed bit is caught (the comparison can fail)", async () => {
  const c = fixtures.find((f) =>
    f.op === "bilinear2d" && f.expected !== null && f.expected.length > 4
  )!;
  const input = present(c.input, c.dtype, c.inputSize, c.layout);
  const shape = outputShape(c);
  const out = emptyView(c.dtype, shape, "contiguous");
  runTs(c, input, out);
  const got = logical(out, shape);
  got[1] = c.dtype === "float32" ? got[1] * (1 + 2 ** -23) || 1 : got[1] ^ 1;
  await assert.rejects(() => check(c, got, "(tampered)"), /element 1/);
});
