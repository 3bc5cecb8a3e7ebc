/**
 * Loader for the PyTorch reference fixtures of the forward ops in `tests/fixtures/forward/` (written
 * by `tools/gen_forward_fixtures.py` with PyTorch 1.13 CPU), and the strided views the tests present
 * them in.
 *
 * `manifest.json` lists the cases; inputs and expected outputs are little-endian files in the case's
 * dtype (float32 values, or float16/bfloat16 bit patterns) in logical row-major order, or, for large
 * shapes, a generated input (`{"lcg": seed}`, `lcgValues`, exact in every dtype) and the SHA-256 of
 * the expected output's bytes. Reading needs `--allow-read`.
 *
 * @module
 */

import type { UpsampleOp } from "../../src/rules/ops.ts";
import type { StridedArray } from "../../src/cpu/types.ts";
import { contiguousStrides } from "../../src/tensor/layout.ts";
import { type DType, encodeInto } from "../../src/tensor/dtype.ts";
import { lcgValues, sha256Hex } from "./fixtures.ts";

/** How PyTorch saw the input (and how the test presents it): see the generator's `present`. */
export type ForwardLayout = "contiguous" | "channelsLast" | "transposed" | "offset";

/** Every layout, in a fixed order. */
export const FORWARD_LAYOUTS: readonly ForwardLayout[] = [
  "contiguous",
  "channelsLast",
  "transposed",
  "offset",
];

/** Storage of a dtype: float32 values or 16-bit patterns. */
export type Raw = Float32Array | Uint16Array;

/** One reference case. */
export interface ForwardCase {
  /** Unique name, e.g. `bilinear2d/hp/channels-last-c13`. */
  name: string;
  /** The op. */
  op: UpsampleOp;
  /** The dtype of input and output. */
  dtype: DType;
  /** `[N, C, L]` or `[N, C, H, W]` of the input. */
  inputSize: number[];
  /** `[L]` or `[H, W]`. */
  outputSize: number[];
  /** PyTorch scale factors per spatial dimension; 0 = not given. */
  scales: number[];
  /** Bilinear only. */
  alignCorners: boolean;
  /** The layout of the input PyTorch computed from. */
  layout: ForwardLayout;
  /** Whether PyTorch 1.13 computed the dtype itself (else: its float32 result, rounded). */
  native: boolean;
  /** The input in logical row-major order, in the dtype's storage encoding. */
  input: Raw;
  /** The expected output, logical order, storage encoding; null when only a hash is stored. */
  expected: Raw | null;
  /** SHA-256 (hex) of the expected output's bytes, when no file is stored. */
  expectedSha256: string | null;
}

interface ManifestCase {
  name: string;
  op: UpsampleOp;
  dtype: DType;
  inputSize: number[];
  outputSize: number[];
  scales: number[];
  alignCorners: boolean;
  layout: ForwardLayout;
  native: boolean;
  input: { file: string } | { lcg: number };
  expected: { file: string } | { sha256: string };
}

/** The fixture folder. */
export const FORWARD_FIXTURE_DIR: URL = new URL("../fixtures/forward/", import.meta.url);

/** `[N, C, ...outputSize]`. */
export function outputShape(c: Pick<ForwardCase, "inputSize" | "outputSize">): number[] {
  return [c.inputSize[0], c.inputSize[1], ...c.outputSize];
}

/** Number of elements of a shape. */
export function count(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

async function readRaw(rel: string, dtype: DType, length: number, what: string): Promise<Raw> {
  const bytes = await Deno.readFile(new URL(rel, FORWARD_FIXTURE_DIR));
  const size = dtype === "float32" ? 4 : 2;
  if (bytes.byteLength !== length * size) {
    throw new Error(`${what}: ${rel} has ${bytes.byteLength} bytes, expected ${length * size}`);
  }
  const buffer = bytes.slice().buffer; // aligned copy; the files are little-endian, as x86 and arm
  return dtype === "float32" ? new Float32Array(buffer) : new Uint16Array(buffer);
}

/** `values` (exact in `dtype`) in the dtype's storage encoding. */
export function encode(dtype: DType, values: ArrayLike<number>): Raw {
  const raw = dtype === "float32"
    ? new Float32Array(values.length)
    : new Uint16Array(values.length);
  encodeInto(dtype, values, raw);
  return raw;
}

/** Loads every case (reads `tests/fixtures/forward/`). */
export async function loadForwardFixtures(): Promise<ForwardCase[]> {
  const text = await Deno.readTextFile(new URL("manifest.json", FORWARD_FIXTURE_DIR));
  const manifest = JSON.parse(text) as { version: number; cases: ManifestCase[] };
  if (manifest.version !== 1) throw new Error(`forward manifest version ${manifest.version}`);
  const out: ForwardCase[] = [];
  const names = new Set<string>();
  for (const c of manifest.cases) {
    if (names.has(c.name)) throw new Error(`forward fixture ${c.name}: duplicate name`);
    names.add(c.name);
    const inCount = count(c.inputSize), outCount = count(outputShape(c));
    const input = "file" in c.input
      ? await readRaw(c.input.file, c.dtype, inCount, c.name)
      : encode(c.dtype, lcgValues(c.input.lcg, inCount));
    out.push({
      name: c.name,
      op: c.op,
      dtype: c.dtype,
      inputSize: c.inputSize,
      outputSize: c.outputSize,
      scales: c.scales,
      alignCorners: c.alignCorners,
      layout: c.layout,
      native: c.native,
      input,
      expected: "file" in c.expected
        ? await readRaw(c.expected.file, c.dtype, outCount, c.name)
        : null,
      expectedSha256: "sha256" in c.expected ? c.expected.sha256 : null,
    });
  }
  return out;
}

/** The strides of `layout` for a logical shape, and the storage length it needs (offset included). */
export function layoutStrides(
  shape: readonly number[],
  layout: ForwardLayout,
): { strides: number[]; offset: number; length: number } {
  const n = count(shape);
  const rank = shape.length;
  if (layout === "channelsLast" && rank === 4) {
    const [, c, h, w] = shape.map((s) => Math.max(s, 1));
    return { strides: [h * w * c, 1, w * c, c], offset: 0, length: n };
  }
  if (layout === "transposed") {
    const swapped = [...shape];
    [swapped[rank - 1], swapped[rank - 2]] = [swapped[rank - 2], swapped[rank - 1]];
    const s = contiguousStrides(swapped);
    [s[rank - 1], s[rank - 2]] = [s[rank - 2], s[rank - 1]];
    return { strides: s, offset: 0, length: n };
  }
  if (layout === "offset") return { strides: contiguousStrides(shape), offset: 7, length: n + 13 };
  return { strides: contiguousStrides(shape), offset: 0, length: n };
}

/** Storage index of each logical (row-major) element of a view. */
export function storageIndices(
  shape: readonly number[],
  strides: readonly number[],
  offset: number,
): Float64Array {
  const n = count(shape);
  const indices = new Float64Array(n);
  const at = new Array<number>(shape.length).fill(0);
  for (let k = 0; k < n; k++) {
    let p = offset;
    for (let d = 0; d < shape.length; d++) p += at[d] * strides[d];
    indices[k] = p;
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++at[d] < shape[d]) break;
      at[d] = 0;
    }
  }
  return indices;
}

/** A fresh storage of `length` elements filled with the dtype's NaN (so unwritten cells show). */
export function nanStorage(dtype: DType, length: number, into?: Raw): Raw {
  if (dtype === "float32") {
    const a = (into as Float32Array | undefined) ?? new Float32Array(length);
    return a.fill(NaN);
  }
  const a = (into as Uint16Array | undefined) ?? new Uint16Array(length);
  return a.fill(dtype === "float16" ? 0x7e00 : 0x7fc0);
}

/** Logical values `raw` laid out as `layout` in `storage` (or a fresh one), as a strided view. */
export function present(
  raw: Raw,
  dtype: DType,
  shape: readonly number[],
  layout: ForwardLayout,
  storage?: Raw,
): StridedArray {
  const { strides, offset, length } = layoutStrides(shape, layout);
  const data = nanStorage(dtype, length, storage);
  const indices = storageIndices(shape, strides, offset);
  for (let k = 0; k < indices.length; k++) data[indices[k]] = raw[k];
  return { data, dtype, strides, offset };
}

/** The logical (row-major) elements of a view, in storage encoding. */
export function logical(view: StridedArray, shape: readonly number[]): Raw {
  const indices = storageIndices(shape, view.strides, view.offset);
  const out = view.dtype === "float32"
    ? new Float32Array(indices.length)
    : new Uint16Array(indices.length);
  const src = view.data;
  for (let k = 0; k < indices.length; k++) out[k] = src[indices[k]];
  return out;
}

function isNaNBits(dtype: DType, bits: number): boolean {
  return dtype === "float16"
    ? (bits & 0x7c00) === 0x7c00 && (bits & 0x3ff) !== 0
    : (bits & 0x7f80) === 0x7f80 && (bits & 0x7f) !== 0;
}

/**
 * The index of the first element where `got` and `want` differ in their bits (any NaN matches any
 * NaN), or -1.
 */
export function firstDifference(dtype: DType, got: Raw, want: Raw): number {
  if (got.length !== want.length) return Math.min(got.length, want.length);
  if (dtype === "float32") {
    const g = new Uint32Array(got.buffer, got.byteOffset, got.length);
    const w = new Uint32Array(want.buffer, want.byteOffset, want.length);
    for (let i = 0; i < g.length; i++) {
      if (g[i] !== w[i] && !(Number.isNaN(got[i]) && Number.isNaN(want[i]))) return i;
    }
    return -1;
  }
  for (let i = 0; i < got.length; i++) {
    if (got[i] !== want[i] && !(isNaNBits(dtype, got[i]) && isNaNBits(dtype, want[i]))) return i;
  }
  return -1;
}

/** SHA-256 (hex) of a storage's bytes. */
export async function rawSha256(raw: Raw): Promise<string> {
  return await sha256Hex(new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength));
}

/** A readable element of a raw array, for messages. */
export function show(dtype: DType, raw: Raw, i: number): string {
  if (dtype === "float32") {
    const bits = new Uint32Array(raw.buffer, raw.byteOffset, raw.length)[i];
    return `${raw[i]} (0x${bits.toString(16)})`;
  }
  return `0x${raw[i].toString(16)}`;
}

/** A NaN-filled view of `shape` laid out as `layout` (every element the kernel must write). */
export function emptyView(
  dtype: DType,
  shape: readonly number[],
  layout: ForwardLayout,
): StridedArray {
  const { strides, offset, length } = layoutStrides(shape, layout);
  return { data: nanStorage(dtype, length), dtype, strides, offset };
}

/**
 * A seeded generator of numbers in [0, 1) (mulberry32, as tests/support/helpers.ts's `rng`; kept
 * here so the forward suites import nothing of the public API).
 */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
