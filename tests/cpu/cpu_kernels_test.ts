import type { UpsampleOp } from "../../src/rules/ops.ts";
import assert from "node:assert/strict";
import {
  bilinear2dBackwardCpu,
  bilinearScale,
  linearIndexTable,
  nearestExact1dBackwardCpu,
  nearestExact2dBackwardCpu,
  nearestExactIndexTable,
  nearestExactScale,
  nearestExactSourceIndex,
  rangeStarts,
  type StridedArray,
} from "../../src/cpu/pytorch/backward/mod.ts";
import { decodeInto, type DType, DTYPES, encodeInto } from "../../src/tensor/dtype.ts";
import {
  referenceBilinear2dBackward,
  referenceNearestExactBackward,
} from "../support/reference.ts";
import { rng as prng } from "../support/helpers.ts";

// ---------------------------------------------------------------- helpers

type Layout =
  | "contiguous"
  | "offset"
  | "channelsLast"
  | "padded"
  | "transposed"
  | "flipped"
  | "broadcast";
const GRAD_LAYOUTS: Layout[] = [
  "contiguous",
  "offset",
  "channelsLast",
  "padded",
  "transposed",
  "flipped",
  "broadcast",
];
const OUT_LAYOUTS: Layout[] = ["contiguous", "offset", "channelsLast", "padded", "transposed"];

interface Built {
  view: StridedArray;
  /** Storage indices of the logical elements, row-major. */
  positions: Int32Array;
}

/** Strides/offset for `shape` in `layout`, and the storage length needed. */
function buildView(dtype: DType, shape: readonly number[], layout: Layout): Built {
  const rank = shape.length;
  // Physical dimension order (outermost first) and per-dimension extents (with padding).
  let order = shape.map((_, i) => i);
  if (layout === "channelsLast") order = [0, ...order.slice(2), 1];
  if (layout === "transposed") order = [1, 0, ...order.slice(2)];
  const extent = shape.map((s) => (layout === "padded" ? s + 1 : s));
  const mult = shape.map((_, i) => (layout === "padded" && i === rank - 1 ? 2 : 1));
  const strides = new Array<number>(rank).fill(0);
  let acc = 1;
  for (let k = rank - 1; k >= 0; k--) {
    const d = order[k];
    strides[d] = acc * mult[d];
    acc *= extent[d] * mult[d];
  }
  let offset = layout === "offset" ? 7 : layout === "padded" ? 3 : 0;
  if (layout === "broadcast") strides[1] = 0;
  if (layout === "flipped") {
    strides[rank - 1] = -1;
    offset = shape[rank - 1] - 1;
  }
  const total = shape.reduce((a, b) => a * b, 1);
  const positions = new Int32Array(total);
  let maxPos = offset;
  for (let i = 0; i < total; i++) {
    let rem = i;
    let pos = offset;
    for (let d = rank - 1; d >= 0; d--) {
      pos += (rem % shape[d]) * strides[d];
      rem = Math.floor(rem / shape[d]);
    }
    positions[i] = pos;
    if (pos > maxPos) maxPos = pos;
  }
  const length = total === 0 ? offset + 5 : maxPos + 5;
  const data = dtype === "float32" ? new Float32Array(length) : new Uint16Array(length);
  return { view: { data, dtype, strides, offset }, positions };
}

/** Logical float32 values of a view (decoded exactly). */
function readLogical(built: Built): Float32Array {
  const { view, positions } = built;
  const all = new Float32Array(view.data.length);
  decodeInto(view.dtype, view.data, all);
  return Float32Array.from(positions, (p) => all[p]);
}

function randomValue(rng: () => number, special: boolean): number {
  const u = rng();
  if (special && u < 0.03) {
    return [Infinity, -Infinity, NaN, -0, 0, -0][Math.floor(u / 0.005)] ?? -0;
  }
  return (rng() * 2 - 1) * 2 ** Math.floor(rng() * 16 - 8);
}

function fillRandom(built: Built, rng: () => number, special: boolean): void {
  const values = new Float64Array(built.view.data.length);
  for (let i = 0; i < values.length; i++) values[i] = randomValue(rng, special);
  encodeInto(built.view.dtype, values, built.view.data);
}

const SENTINEL = 12345.5;

function fillSentinel(built: Built): void {
  encodeInto(built.view.dtype, new Array(built.view.data.length).fill(SENTINEL), built.view.data);
}

/** Asserts out holds `expected` (float32 logical values, rounded to the dtype) and no stray writes. */
function assertOut(out: Built, expected: Float32Array, label: string): void {
  const dtype = out.view.dtype;
  const want = dtype === "float32"
    ? new Float32Array(expected.length)
    : new Uint16Array(expected.length);
  encodeInto(dtype, expected, want);
  const data = out.view.data;
  const logical = new Set(out.positions);
  for (let i = 0; i < expected.length; i++) {
    const got = data[out.positions[i]];
    if (!Object.is(got, want[i]) && !(got !== got && want[i] !== want[i])) {
      assert.fail(`${label}: element ${i}: got ${got}, want ${want[i]}`);
    }
  }
  const sentinel = dtype === "float32" ? new Float32Array(1) : new Uint16Array(1);
  encodeInto(dtype, [SENTINEL], sentinel);
  for (let p = 0; p < data.length; p++) {
    if (!logical.has(p) && data[p] !== sentinel[0]) assert.fail(`${label}: stray write at ${p}`);
  }
}

type Op = UpsampleOp;

interface Case {
  op: Op;
  dtype: DType;
  inputSize: number[];
  outputSize: number[];
  scales: number[];
  alignCorners?: boolean;
  gradLayout: Layout;
  outLayout: Layout;
  special: boolean;
}

function runCase(c: Case, rng: () => number): void {
  const gradShape = [c.inputSize[0], c.inputSize[1], ...c.outputSize];
  const grad = buildView(c.dtype, gradShape, c.gradLayout);
  fillRandom(grad, rng, c.special);
  const out = buildView(c.dtype, c.inputSize, c.outLayout);
  fillSentinel(out);
  const g = readLogical(grad);
  const args = {
    gradOutput: grad.view,
    out: out.view,
    inputSize: c.inputSize,
    outputSize: c.outputSize,
    scales: c.scales,
  };
  let expected: Float32Array;
  if (c.op === "bilinear2d") {
    const align = c.alignCorners ?? false;
    bilinear2dBackwardCpu({ ...args, alignCorners: align });
    expected = referenceBilinear2dBackward(g, c.inputSize, c.outputSize, c.scales, align);
  } else {
    if (c.op === "nearestExact1d") nearestExact1dBackwardCpu(args);
    else nearestExact2dBackwardCpu(args);
    expected = referenceNearestExactBackward(g, c.inputSize, c.outputSize, c.scales);
  }
  assertOut(out, expected, JSON.stringify(c));
}

/** (in, out, scales) per dimension: the ties and edge cases of semantics.md. */
const EDGE_DIMS: [number, number, number][] = [
  [2, 41, 0],
  [4, 82, 0],
  [96, 134, 0],
  [64, 247, 3.86],
  [27, 8, 0.3],
  [30, 9, 0.3],
  [100, 30, 0.3],
  [27, 8, 0],
  [20, 11, 0],
  [10, 15, 0],
  [1000, 20, 0.02],
  [1000, 20, 0],
  [1, 1, 0],
  [1, 2, 0],
  [1, 5, 0],
  [1, 64, 0],
  [2, 1, 0],
  [4, 1, 0],
  [7, 1, 0],
  [3, 3, 1.3],
  [8, 8, 0.6],
  [5, 5, 1.00001],
  [5, 4, 0.99999],
  [6, 6, 0],
];
const SCALES = [1.7, 0.6, 0.3, 1.3, 2.5, 1 / 3, 1.00001, 0.99999, 2, 3, 0.5];

function randomDim(rng: () => number): [number, number, number] {
  const r = rng();
  if (r < 0.4) return EDGE_DIMS[Math.floor(rng() * EDGE_DIMS.length)];
  if (r < 0.75) {
    for (;;) {
      const inSize = 1 + Math.floor(rng() * 40);
      const scale = SCALES[Math.floor(rng() * SCALES.length)];
      const outSize = Math.floor(inSize * scale);
      if (outSize > 0) return [inSize, outSize, rng() < 0.8 ? scale : 0];
    }
  }
  return [1 + Math.floor(rng() * 30), 1 + Math.floor(rng() * 60), 0];
}

function randomCase(rng: () => number, op: Op): Case {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)];
  const n = pick([0, 1, 1, 2, 2, 3]);
  const ch = pick([1, 1, 2, 3]);
  let dims = op === "nearestExact1d" ? [randomDim(rng)] : [randomDim(rng), randomDim(rng)];
  if (dims.length === 2 && (dims[0][0] * dims[1][0] > 40000 || dims[0][1] * dims[1][1] > 40000)) {
    dims = [dims[0], [3, 7, 0]];
  }
  return {
    op,
    dtype: pick(DTYPES),
    inputSize: [n, ch, ...dims.map((d) => d[0])],
    outputSize: dims.map((d) => d[1]),
    scales: dims.map((d) => d[2]),
    alignCorners: rng() < 0.5,
    gradLayout: pick(GRAD_LAYOUTS),
    outLayout: pick(OUT_LAYOUTS),
    special: rng() < 0.3,
  };
}

// ---------------------------------------------------------------- differential tests

for (const op of ["nearestExact1d", "nearestExact2d", "bilinear2d"] as const) {
  Deno.test(`${op}: random cases equal the reference bit for bit`, () => {
    const rng = prng(op.length * 7919 + 1);
    for (let i = 0; i < 400; i++) runCase(randomCase(rng, op), rng);
  });
}

Deno.test("every edge dimension, every dtype and layout pair, against the reference", () => {
  const rng = prng(42);
  for (const [inSize, outSize, scales] of EDGE_DIMS) {
    for (const dtype of DTYPES) {
      const layouts = [GRAD_LAYOUTS[Math.floor(rng() * 7)], OUT_LAYOUTS[Math.floor(rng() * 5)]];
      const base = { dtype, gradLayout: layouts[0], outLayout: layouts[1], special: true };
      runCase({
        ...base,
        op: "nearestExact1d",
        inputSize: [2, 2, inSize],
        outputSize: [outSize],
        scales: [scales],
      }, rng);
      for (const other of [[1, 1, 0], [3, 7, 2.5]] as const) {
        const sizes = { inputSize: [1, 2, inSize, other[0]], outputSize: [outSize, other[1]] };
        const sizesT = { inputSize: [1, 2, other[0], inSize], outputSize: [other[1], outSize] };
        runCase({ ...base, op: "nearestExact2d", ...sizes, scales: [scales, other[2]] }, rng);
        runCase({ ...base, op: "nearestExact2d", ...sizesT, scales: [other[2], scales] }, rng);
        for (const alignCorners of [false, true]) {
          runCase(
            { ...base, op: "bilinear2d", ...sizes, scales: [scales, other[2]], alignCorners },
            rng,
          );
          runCase(
            { ...base, op: "bilinear2d", ...sizesT, scales: [other[2], scales], alignCorners },
            rng,
          );
        }
      }
    }
  }
});

Deno.test("integer-factor fast paths (x1, x2, x3, x4) match the reference on every layout", () => {
  const rng = prng(7);
  for (const k of [1, 2, 3, 4]) {
    for (const gradLayout of GRAD_LAYOUTS) {
      for (const outLayout of OUT_LAYOUTS) {
        const dtype = DTYPES[Math.floor(rng() * 3)];
        const base = { dtype, gradLayout, outLayout, special: true };
        runCase({
          ...base,
          op: "nearestExact2d",
          inputSize: [2, 3, 5, 6],
          outputSize: [5 * k, 6 * k],
          scales: [0, 0],
        }, rng);
        runCase({
          ...base,
          op: "nearestExact1d",
          inputSize: [2, 3, 9],
          outputSize: [9 * k],
          scales: [k],
        }, rng);
        runCase({
          ...base,
          op: "bilinear2d",
          inputSize: [2, 3, 5, 6],
          outputSize: [5 * k, 6 * k],
          scales: [0, 0],
        }, rng);
      }
    }
  }
});

Deno.test("many channels, channels-last gradient (the channel-vector path) match the reference", () => {
  const rng = prng(13);
  for (let i = 0; i < 60; i++) {
    const op = (["nearestExact1d", "nearestExact2d", "bilinear2d"] as const)[i % 3];
    const c = randomCase(rng, op);
    c.inputSize[0] = 1 + (i % 2);
    c.inputSize[1] = 16 + (i % 4);
    if (op !== "nearestExact1d" && c.inputSize[2] * c.inputSize[3] > 2000) c.inputSize[2] = 1;
    if (op !== "nearestExact1d" && c.outputSize[0] * c.outputSize[1] > 2000) c.outputSize[0] = 1;
    if (op !== "nearestExact1d" && c.inputSize[2] === 1) c.scales[0] = 0;
    c.gradLayout = "channelsLast";
    runCase(c, rng);
  }
});

// ---------------------------------------------------------------- known values (semantics.md)

Deno.test("nearest-exact index facts: float32 ties and no same-size shortcut", () => {
  const s = nearestExactScale(2, 41, 0);
  assert.equal(Math.fround(Math.fround(20.5) * s), 0.9999999403953552);
  assert.equal(nearestExactSourceIndex(20, s, 2), 0);
  assert.deepEqual([...nearestExactIndexTable(3, 3, 1.3)], [0, 1, 1]);
  assert.deepEqual([...nearestExactIndexTable(3, 3, 0)], [0, 1, 2]);
  assert.equal(nearestExactScale(3, 3, 1.3), Math.fround(1 / 1.3));
  assert.equal(nearestExactScale(5, 8, 1.7), 0.5882353186607361); // not fl32(1 / fl32(1.7))
  assert.equal(nearestExactScale(10, 15, 0), Math.fround(10 / 15));
  // Clamping to the last input, and the inverse ranges.
  assert.deepEqual([...nearestExactIndexTable(7, 1, 0)], [3]);
  assert.deepEqual([...rangeStarts(Int32Array.of(0, 1, 1), 3)], [0, 1, 3, 3]);
  assert.deepEqual([...rangeStarts(Int32Array.of(1, 1), 3)], [0, 0, 2, 2]);
});

Deno.test("bilinear scale and tables: align_corners, out == 1, same size", () => {
  assert.equal(bilinearScale(4, 7, true, 2.5), 0.5);
  assert.equal(bilinearScale(4, 1, true, 0), 0);
  assert.equal(bilinearScale(5, 10, false, 0), 0.5);
  assert.equal(bilinearScale(5, 10, false, 3), Math.fround(1 / 3));
  const centre = linearIndexTable(6, 1, false, 0); // r = (6 - 1) / 2 = 2.5
  assert.deepEqual([centre.i0[0], centre.i1[0], centre.l0[0], centre.l1[0]], [2, 3, 0.5, 0.5]);
  const corner = linearIndexTable(6, 1, true, 0);
  assert.deepEqual([corner.i0[0], corner.i1[0], corner.l0[0], corner.l1[0]], [0, 1, 1, 0]);
  const same = linearIndexTable(4, 4, false, 1.7);
  assert.deepEqual([...same.i0], [0, 1, 2, 3]);
  assert.deepEqual([...same.i1], [0, 1, 2, 3]);
  assert.deepEqual([...same.l1], [0, 0, 0, 0]);
  const up = linearIndexTable(2, 4, false, 0);
  assert.deepEqual([...up.i0], [0, 0, 0, 1]);
  assert.deepEqual([...up.i1], [1, 1, 1, 1]);
  assert.deepEqual([...up.l1], [0, 0.25, 0.75, 0.25]); // last: i0 = i1 = 1, weights 0.75 + 0.25
});

function contiguous(
  dtype: DType,
  shape: readonly number[],
  values?: ArrayLike<number>,
): StridedArray {
  const strides = shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));
  const total = shape.reduce((a, b) => a * b, 1);
  const data = dtype === "float32" ? new Float32Array(total) : new Uint16Array(total);
  if (values) encodeInto(dtype, values, data);
  return { data, dtype, strides, offset: 0 };
}

function decoded(view: StridedArray): number[] {
  const out = new Float32Array(view.data.length);
  decodeInto(view.dtype, view.data, out);
  return [...out];
}

Deno.test("1x1 -> 128x128 of ones sums to 16384 exactly, in every dtype (float32 accumulation)", () => {
  for (const dtype of DTYPES) {
    const grad = contiguous(dtype, [1, 1, 128, 128], new Array(128 * 128).fill(1));
    for (const op of ["nearest", "bilinear2d"]) {
      const out = contiguous(dtype, [1, 1, 1, 1]);
      const args = {
        gradOutput: grad,
        out,
        inputSize: [1, 1, 1, 1],
        outputSize: [128, 128],
        scales: [0, 0],
      };
      if (op === "nearest") nearestExact2dBackwardCpu(args);
      else bilinear2dBackwardCpu({ ...args, alignCorners: false });
      assert.deepEqual(decoded(out), [16384], `${op} ${dtype}`);
    }
  }
  // 4096 bfloat16 ones: 4096 (PyTorch 1.13 accumulated in bfloat16 and got 256).
  const grad = contiguous("bfloat16", [1, 1, 4096], new Array(4096).fill(1));
  const out = contiguous("bfloat16", [1, 1, 1]);
  nearestExact1dBackwardCpu({
    gradOutput: grad,
    out,
    inputSize: [1, 1, 1],
    outputSize: [4096],
    scales: [0],
  });
  assert.deepEqual(decoded(out), [4096]);
});

Deno.test("half results are the float32 sum rounded once", () => {
  // 1 + 2^-11 + 2^-11 in float32 is exactly 1 + 2^-10; rounding each step in float16 would give 1.
  for (const [dtype, tiny] of [["float16", 2 ** -11], ["bfloat16", 2 ** -8]] as const) {
    const grad = contiguous(dtype, [1, 1, 3], [1, tiny, tiny]);
    const out = contiguous(dtype, [1, 1, 1]);
    nearestExact1dBackwardCpu({
      gradOutput: grad,
      out,
      inputSize: [1, 1, 1],
      outputSize: [3],
      scales: [0],
    });
    assert.deepEqual(decoded(out), [1 + 2 * tiny], dtype);
  }
});

Deno.test("accumulation starts from +0 and keeps float32 order; inf and NaN propagate", () => {
  const run = (values: number[], inputSize: number[], outputSize: number[]): number[] => {
    const grad = contiguous("float32", [1, 1, ...outputSize], values);
    const out = contiguous("float32", inputSize);
    nearestExact1dBackwardCpu({ gradOutput: grad, out, inputSize, outputSize, scales: [0] });
    return [...(out.data as Float32Array)];
  };
  assert.ok(Object.is(run([-0, -0], [1, 1, 1], [2])[0], 0));
  assert.deepEqual(run([2 ** 24, 1, 1], [1, 1, 1], [3]), [2 ** 24]); // ((2^24 + 1) + 1) in float32
  assert.deepEqual(run([Infinity, -Infinity, 1, 2], [1, 1, 2], [4]), [NaN, 3]);
  // Bilinear same-size dimension: the zero-weight update still applies, so 0 * inf = NaN.
  const grad = contiguous("float32", [1, 1, 1, 2], [Infinity, 1]);
  const out = contiguous("float32", [1, 1, 1, 2]);
  bilinear2dBackwardCpu({
    gradOutput: grad,
    out,
    inputSize: [1, 1, 1, 2],
    outputSize: [1, 2],
    scales: [0, 0],
    alignCorners: false,
  });
  assert.deepEqual([...(out.data as Float32Array)], [NaN, 1]);
});

Deno.test("bilinear preserves the gradient's total (weights sum to one)", () => {
  const rng = prng(3);
  for (let i = 0; i < 50; i++) {
    const c = randomCase(rng, "bilinear2d");
    c.inputSize[0] = 1;
    c.dtype = "float32";
    const grad = contiguous("float32", [1, c.inputSize[1], ...c.outputSize]);
    for (let k = 0; k < grad.data.length; k++) grad.data[k] = rng();
    const out = contiguous("float32", c.inputSize);
    bilinear2dBackwardCpu({ ...c, gradOutput: grad, out, alignCorners: c.alignCorners ?? false });
    const sum = (xs: ArrayLike<number>): number => Array.from(xs).reduce((a, b) => a + b, 0);
    const want = sum(grad.data);
    assert.ok(Math.abs(sum(out.data) - want) <= 1e-4 * want + 1e-6, JSON.stringify(c));
  }
});

Deno.test("repeated calls are bitwise identical, also after a larger call reused the scratch", () => {
  const rng = prng(11);
  const values = Array.from({ length: 2 * 3 * 9 * 13 }, () => rng() * 2 - 1);
  const run = (): Float32Array => {
    const out = contiguous("float32", [2, 3, 5, 4]);
    const args = { gradOutput: contiguous("float32", [2, 3, 9, 13], values), out };
    bilinear2dBackwardCpu({
      ...args,
      inputSize: [2, 3, 5, 4],
      outputSize: [9, 13],
      scales: [0, 0],
      alignCorners: false,
    });
    return out.data as Float32Array;
  };
  const first = run();
  const big = contiguous("float32", [1, 1, 300, 300]);
  const bigOut = contiguous("float32", [1, 1, 200, 250]);
  bilinear2dBackwardCpu({
    gradOutput: big,
    out: bigOut,
    inputSize: [1, 1, 200, 250],
    outputSize: [300, 300],
    scales: [0, 0],
    alignCorners: true,
  });
  assert.deepEqual(run(), first);
});

Deno.test("N = 0 and C = 0 write nothing and do not throw", () => {
  for (const inputSize of [[0, 3, 4, 4], [2, 0, 4, 4]]) {
    const grad = contiguous("float16", [inputSize[0], inputSize[1], 8, 8]);
    const out = contiguous("float16", inputSize);
    const args = { gradOutput: grad, out, inputSize, outputSize: [8, 8], scales: [0, 0] };
    nearestExact2dBackwardCpu(args);
    bilinear2dBackwardCpu({ ...args, alignCorners: true });
    assert.equal(out.data.length, 0);
  }
});

Deno.test("misuse is rejected: dtype mismatch, wrong ranks", () => {
  const grad = contiguous("float32", [1, 1, 4]);
  const args = {
    gradOutput: grad,
    out: contiguous("float16", [1, 1, 2]),
    inputSize: [1, 1, 2],
    outputSize: [4],
    scales: [0],
  };
  assert.throws(() => nearestExact1dBackwardCpu(args), TypeError);
  const out = contiguous("float32", [1, 1, 2]);
  assert.throws(() => nearestExact2dBackwardCpu({ ...args, out }), RangeError);
  assert.throws(() => bilinear2dBackwardCpu({ ...args, out, alignCorners: false }), RangeError);
});
