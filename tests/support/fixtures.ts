/**
 * Loader for the PyTorch reference fixtures in `tests/fixtures/` (written by `tools/gen_fixtures.py`
 * with PyTorch 1.13 CPU, float32).
 *
 * `tests/fixtures/manifest.json` lists the cases; gradients and expected results are little-endian
 * float32 files in logical row-major order, or, for the large shapes, a generated gradient
 * (`{"lcg": seed}`, see {@link lcgValues}) and the SHA-256 of the expected result encoded in the
 * case's dtype. Reading needs `--allow-read`.
 *
 * @module
 */

import type { UpsampleOp } from "../../src/rules/ops.ts";

/** The dtype the test runs the op in. */
export type FixtureDtype = "float32" | "float16" | "bfloat16";

/**
 * How the test presents gradOutput (PyTorch computed the expected result with the same layout):
 * `channelsLast` = `contiguous(memory_format=torch.channels_last)`; `transposed` = storage with the
 * last two dims swapped, viewed back; `offset` = a slice of a larger buffer at a non-zero offset.
 */
export type FixtureLayout = "contiguous" | "channelsLast" | "transposed" | "offset";

/** One reference case. */
export interface FixtureCase {
  /** Unique name, e.g. `nearest2d/tie-2-41x4-82`. */
  name: string;
  /** The op. */
  op: UpsampleOp;
  /** The dtype to run in; the float32 expected values must be rounded (RNE) to it. */
  dtype: FixtureDtype;
  /** `[N, C, L]` or `[N, C, H, W]` of the gradient input (the op's result). */
  inputSize: number[];
  /** `[L]` or `[H, W]`: spatial size of gradOutput. */
  outputSize: number[];
  /** One PyTorch scale factor (output / input) per spatial dim; 0 = not given. */
  scales: number[];
  /** Bilinear only (false for the nearest-exact ops). */
  alignCorners: boolean;
  /** The storage layout of gradOutput. */
  layout: FixtureLayout;
  /**
   * gradOutput `[N, C, ...outputSize]` in logical row-major order, exact in `dtype`. Generated
   * inputs are produced on first access (and may be regenerated after garbage collection).
   */
  gradOutput: Float32Array;
  /** The float32 PyTorch result in logical row-major order; null when only a hash is stored. */
  expected: Float32Array | null;
  /** SHA-256 (hex) of the expected result encoded in `dtype` (little-endian float32 or uint16 bits). */
  expectedSha256: string | null;
  /** Float64 sum of the float32 expected result (diagnostics; set with `expectedSha256`). */
  expectedSum: number | null;
  /** The generator seed when gradOutput is generated (`{"lcg": seed}`), else null. */
  gradOutputSeed: number | null;
}

/** A file reference or a generated input, as written in the manifest. */
type ManifestGrad = { file: string } | { lcg: number };
/** A file reference or a hash, as written in the manifest. */
type ManifestExpected = { file: string } | { sha256: string; sum: number };

/** One case as written in `manifest.json`. */
export interface ManifestCase {
  /** See {@link FixtureCase.name}. */
  name: string;
  /** See {@link FixtureCase.op}. */
  op: UpsampleOp;
  /** See {@link FixtureCase.dtype}. */
  dtype: FixtureDtype;
  /** See {@link FixtureCase.inputSize}. */
  inputSize: number[];
  /** See {@link FixtureCase.outputSize}. */
  outputSize: number[];
  /** See {@link FixtureCase.scales}. */
  scales: number[];
  /** See {@link FixtureCase.alignCorners}. */
  alignCorners: boolean;
  /** See {@link FixtureCase.layout}. */
  layout: FixtureLayout;
  /** `{ file }` (relative to `tests/fixtures/`) or `{ lcg: seed }`. */
  gradOutput: ManifestGrad;
  /** `{ file }` or `{ sha256, sum }`. */
  expected: ManifestExpected;
}

/** The whole manifest. */
export interface Manifest {
  /** Format version (1). */
  version: number;
  /** The PyTorch version that produced the results. */
  torch: string;
  /** The cases. */
  cases: ManifestCase[];
}

/** The fixture folder. */
export const FIXTURE_DIR: URL = new URL("../fixtures/", import.meta.url);

const OPS: readonly UpsampleOp[] = ["nearestExact1d", "nearestExact2d", "bilinear2d"];
const DTYPES: readonly FixtureDtype[] = ["float32", "float16", "bfloat16"];
const LAYOUTS: readonly FixtureLayout[] = ["contiguous", "channelsLast", "transposed", "offset"];

/**
 * The deterministic gradient generator shared with `tools/gen_fixtures.py`:
 * `x = seed >>> 0`, then per value `x = (x * 1664525 + 1013904223) mod 2^32` and
 * `value = ((x >>> 16) % 255 - 127) / 64` (multiples of 1/64 in [-1.984375, 1.984375], exact in
 * float32, float16 and bfloat16).
 */
export function lcgValues(seed: number, length: number): Float32Array {
  const out = new Float32Array(length);
  let x = seed >>> 0;
  for (let k = 0; k < length; k++) {
    // Math.imul wraps to int32; adding the increment stays exact in float64, >>> 0 reduces mod 2^32.
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out[k] = ((x >>> 16) % 255 - 127) / 64;
  }
  return out;
}

/** SHA-256 of `bytes` as lowercase hex (WebCrypto). */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new Uint8Array(bytes));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Number of elements of a shape. */
export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** The gradOutput shape of a case: `[N, C, ...outputSize]`. */
export function gradOutputShape(c: Pick<FixtureCase, "inputSize" | "outputSize">): number[] {
  return [c.inputSize[0], c.inputSize[1], ...c.outputSize];
}

/** Reads `manifest.json` without loading any data file. */
export async function readManifest(): Promise<Manifest> {
  const text = await Deno.readTextFile(new URL("manifest.json", FIXTURE_DIR));
  const manifest = JSON.parse(text) as Manifest;
  if (manifest.version !== 1 || !Array.isArray(manifest.cases)) {
    throw new Error(
      `tests/fixtures/manifest.json: unsupported manifest (version ${manifest.version})`,
    );
  }
  return manifest;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Reads a little-endian float32 file of `count` values. */
async function readFloat32File(rel: string, count: number, what: string): Promise<Float32Array> {
  const bytes = await Deno.readFile(new URL(rel, FIXTURE_DIR));
  if (bytes.byteLength !== count * 4) {
    throw new Error(`${what}: ${rel} has ${bytes.byteLength} bytes, expected ${count * 4}`);
  }
  if (LITTLE_ENDIAN) return new Float32Array(bytes.slice().buffer, 0, count); // aligned copy
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

function checkCase(c: ManifestCase): void {
  const fail = (why: string): never => {
    throw new Error(`fixture ${c.name ?? "?"}: ${why}`);
  };
  if (typeof c.name !== "string" || c.name === "") fail("missing name");
  if (!OPS.includes(c.op)) fail(`unknown op ${c.op}`);
  if (!DTYPES.includes(c.dtype)) fail(`unknown dtype ${c.dtype}`);
  if (!LAYOUTS.includes(c.layout)) fail(`unknown layout ${c.layout}`);
  const spatial = c.op === "nearestExact1d" ? 1 : 2;
  const sizes = [...(c.inputSize ?? []), ...(c.outputSize ?? []), ...(c.scales ?? [])];
  if (
    c.inputSize?.length !== spatial + 2 || c.outputSize?.length !== spatial ||
    c.scales?.length !== spatial || !sizes.every((v) => typeof v === "number")
  ) {
    fail("inputSize/outputSize/scales do not match the op's rank");
  }
  if (typeof c.alignCorners !== "boolean") fail("alignCorners must be a boolean");
  const g = c.gradOutput as Record<string, unknown> | undefined;
  if (typeof g?.file !== "string" && typeof g?.lcg !== "number") fail("bad gradOutput");
  const e = c.expected as Record<string, unknown> | undefined;
  const hashed = typeof e?.sha256 === "string" && /^[0-9a-f]{64}$/.test(e.sha256 as string) &&
    typeof e?.sum === "number";
  if (typeof e?.file !== "string" && !hashed) fail("bad expected");
}

/** Turns one manifest entry into a {@link FixtureCase}, reading its files. */
export async function loadCase(c: ManifestCase): Promise<FixtureCase> {
  checkCase(c);
  const goCount = numel(gradOutputShape(c));
  const giCount = numel(c.inputSize);
  const fixture: FixtureCase = {
    name: c.name,
    op: c.op,
    dtype: c.dtype,
    inputSize: [...c.inputSize],
    outputSize: [...c.outputSize],
    scales: [...c.scales],
    alignCorners: c.alignCorners,
    layout: c.layout,
    gradOutput: new Float32Array(0),
    expected: null,
    expectedSha256: null,
    expectedSum: null,
    gradOutputSeed: null,
  };
  if ("file" in c.gradOutput) {
    fixture.gradOutput = await readFloat32File(c.gradOutput.file, goCount, c.name);
  } else {
    const seed = c.gradOutput.lcg;
    fixture.gradOutputSeed = seed;
    // Generated on access; the big op-plugin shapes hold up to 24M values, so keep them collectable.
    let cache: WeakRef<Float32Array> | null = null;
    Object.defineProperty(fixture, "gradOutput", {
      enumerable: true,
      configurable: true,
      get(): Float32Array {
        let values = cache?.deref();
        if (values === undefined) {
          values = lcgValues(seed, goCount);
          cache = new WeakRef(values);
        }
        return values;
      },
    });
  }
  if ("file" in c.expected) {
    fixture.expected = await readFloat32File(c.expected.file, giCount, c.name);
  } else {
    fixture.expectedSha256 = c.expected.sha256;
    fixture.expectedSum = c.expected.sum;
  }
  return fixture;
}

/** Loads every fixture case (reads `tests/fixtures/`; needs `--allow-read`). */
export async function loadFixtures(): Promise<FixtureCase[]> {
  const manifest = await readManifest();
  const names = new Set<string>();
  const out: FixtureCase[] = [];
  for (const c of manifest.cases) {
    if (names.has(c.name)) throw new Error(`fixture ${c.name}: duplicate name`);
    names.add(c.name);
    out.push(await loadCase(c));
  }
  return out;
}
