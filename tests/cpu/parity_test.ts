// Parity with PyTorch: every fixture, through the public API, on the CPU backend. float32 nearest-exact
// must be bit-exact; bilinear within 4 ulp or 4e-5 * max|expected| (see check()); float16/bfloat16 equal
// the RNE of the float32 result (bilinear: within one step of the dtype).
// The NPU lanes (the emulation, and the CANN the library's search finds) compute what the Ascend kernels
// compute, which differs from PyTorch at ties and in some scale routing: they run the same fixtures
// against the device model (tests/support/device_model.ts).

import { AssertionError } from "node:assert/strict";
import {
  type Device,
  runParams,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { bfloat16BitsFromNumber, float16BitsFromNumber } from "../../src/tensor/dtype.ts";
import { assertMatchesDeviceOp, deviceCaseOf } from "../support/device_model.ts";
import { type FixtureCase, loadFixtures, sha256Hex } from "../support/fixtures.ts";
import {
  assertBitEqual,
  assertClose,
  BACKENDS,
  emuLive,
  makeView,
  roundTo,
  ulpDistance,
} from "../support/helpers.ts";

const fixtures = await loadFixtures();

// ACLNN_PARITY_MAX_ELEMENTS=<n>: fixtures whose gradOutput holds more elements are ignored. The aarch64
// lane of CI (.ci/aarch64, under qemu) runs every op, dtype, layout and tie rule on small shapes and
// leaves the large op-plugin shapes (up to 24M elements) to the full suites.
const maxElements = parseMaxElements(Deno.env.get("ACLNN_PARITY_MAX_ELEMENTS"));

function parseMaxElements(text: string | undefined): number {
  if (text === undefined) return Infinity;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) {
    throw new RangeError(`ACLNN_PARITY_MAX_ELEMENTS must be a non-negative integer, got "${text}"`);
  }
  return n;
}
const elements = (f: FixtureCase): number =>
  f.inputSize[0] * f.inputSize[1] * f.outputSize.reduce((a, b) => a * b, 1);

// Runs a fixture's op on a device and returns the float32 values of the result.
async function runFixture(device: Device, fixture: FixtureCase): Promise<Float32Array> {
  const gradShape = [fixture.inputSize[0], fixture.inputSize[1], ...fixture.outputSize];
  using grad = makeView(device, fixture.gradOutput, gradShape, fixture.dtype, fixture.layout);
  using result = runParams(grad, fixture);
  return await result.toFloat32Array();
}

function bytesInDtype(fixture: FixtureCase, values: Float32Array): Uint8Array {
  if (fixture.dtype === "float32") return new Uint8Array(values.buffer.slice(0));
  const encode = fixture.dtype === "float16" ? float16BitsFromNumber : bfloat16BitsFromNumber;
  const bits = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) bits[i] = encode(values[i]);
  return new Uint8Array(bits.buffer);
}

async function check(fixture: FixtureCase, actual: Float32Array): Promise<void> {
  const what = `${fixture.name} (${fixture.dtype}, ${fixture.layout})`;
  if (fixture.expected === null) {
    const hash = await sha256Hex(bytesInDtype(fixture, actual));
    if (hash !== fixture.expectedSha256) {
      const sum = actual.reduce((a, b) => a + b, 0);
      throw new AssertionError({
        message: `${what}: sha256 ${hash} != ${fixture.expectedSha256} (sum ${sum} vs ` +
          `${fixture.expectedSum})`,
      });
    }
    return;
  }
  const expected = roundTo(fixture.dtype, fixture.expected);
  if (fixture.op !== "bilinear2d") return assertBitEqual(actual, expected, what);
  let max = 0;
  for (const v of fixture.expected) if (Number.isFinite(v)) max = Math.max(max, Math.abs(v));
  // torch 1.13 (the fixtures) computes the source coordinate in double; PyTorch >= 2.0 and this library
  // in float32. Where the coordinate is not exact in float32 the weights differ by up to ~2^-24 of the
  // coordinate, i.e. up to ~4e-5 * max|expected| for coordinates near 1000 (the 50x shrink case).
  if (fixture.dtype === "float32") return assertClose(actual, expected, what, { atol: 4e-5 * max });
  // One step of the low-precision dtype: float32 rounding noise may cross a rounding boundary.
  const step = fixture.dtype === "float16" ? 2 ** -10 : 2 ** -7;
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i], e = expected[i];
    if (ulpDistance(a, e) === 0) continue;
    if (Math.abs(a - e) <= step * Math.max(Math.abs(e), 2 ** -14) + 1e-6 * max) continue;
    throw new AssertionError({ message: `${what}: element ${i}: got ${a}, expected ${e}` });
  }
}

async function checkDevice(fixture: FixtureCase, actual: Float32Array): Promise<void> {
  const c = deviceCaseOf(fixture);
  const fn = c.op === "nearestExact1d"
    ? upsampleNearestExact1dBackward
    : c.op === "nearestExact2d"
    ? upsampleNearestExact2dBackward
    : upsampleBilinear2dBackward;
  const what = `${fixture.name} (${fixture.dtype}, ${fixture.layout})`;
  await assertMatchesDeviceOp(actual, fn, fixture.gradOutput, fixture.dtype, c, what);
}

for (const backend of BACKENDS) {
  const expectation = backend.kind === "npu" ? "the device model" : "PyTorch";
  backend.test(`fixtures on ${backend.label} match ${expectation}`, async (t) => {
    using device = backend.open();
    const before = !backend.emulated ? null : emuLive();
    let checked = 0;
    for (const fixture of fixtures) {
      const ignore = elements(fixture) > maxElements;
      await t.step({
        name: `${fixture.name} ${fixture.dtype} ${fixture.layout}`,
        ignore,
        fn: async () => {
          const actual = await runFixture(device, fixture);
          // Both NPU lanes follow the device (the real one above all), never PyTorch's bits.
          return backend.kind === "npu" ? checkDevice(fixture, actual) : check(fixture, actual);
        },
        sanitizeOps: false,
        sanitizeResources: false,
      });
      if (!ignore && elements(fixture) > 0) checked++;
    }
    console.log(`  ${checked} non-empty fixtures checked on ${backend.label}`);
    // A run that checked nothing (e.g. ACLNN_PARITY_MAX_ELEMENTS=0) must not pass as if it had.
    if (checked === 0) {
      throw new AssertionError({
        message:
          `no fixture checked on ${backend.label}: ACLNN_PARITY_MAX_ELEMENTS=${maxElements} ` +
          `leaves none of the ${fixtures.length} fixtures with elements`,
      });
    }
    if (before) {
      await device.synchronize();
      const after = emuLive();
      if (after.allocations > before.allocations + 1n || after.objects !== before.objects) {
        throw new AssertionError({
          message: `leak on ${backend.label}: ${JSON.stringify(before, replacer)} -> ` +
            `${JSON.stringify(after, replacer)}`,
        });
      }
    }
  });
}

function replacer(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}
