// Differential: random valid configurations (sizes with 1s and ties, scales with outputSize ==
// floor(inputSize * scale) in double, alignCorners, every dtype, non-contiguous and offset
// gradients, strided out inside a sentinel-filled buffer) run on the CPU backend and the emulated
// NPU. The CPU must give PyTorch's answer (the oracles of tests/support/reference.ts: nearest-exact
// bit-exact, bilinear within 4 ulp); the NPU the device's, of the generation it reports
// (tests/support/device_model.ts, or ascend950_model.ts on an Ascend 950: mapping exact, sums within
// the model's bound). No bit equality between the two is assumed: the count of
// configurations where they differ is reported. Seeded: ROBUSTNESS_SEED=<n> to vary.

import assert from "node:assert/strict";
import {
  Device,
  type DType,
  NondeterministicKernelError,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import type { AscendTarget } from "../../src/rules/numerics.ts";
import { deterministicRouteOf } from "../../src/rules/support.ts";
import { assertMatchesModelOf, deviceCaseOf } from "../support/device_model.ts";
import { deviceTarget } from "../support/device_match.ts";
import {
  assertBitEqual,
  assertClose,
  EMU_DIR,
  EMULATED_LANE,
  makeView,
  rng,
  roundTo,
} from "../support/helpers.ts";
import {
  referenceBilinear2dBackward,
  referenceNearestExactBackward,
} from "../support/reference.ts";

type Op = "nearestExact1d" | "nearestExact2d" | "bilinear2d";
type GradLayout = "contiguous" | "channelsLast" | "transposed" | "offset" | "stepped";
type OutLayout = "none" | "contiguous" | "stepped" | "transposedOffset";

interface Config {
  readonly op: Op;
  readonly dtype: DType;
  readonly inputSize: number[];
  readonly outputSize: number[];
  readonly scales: number[];
  readonly alignCorners: boolean;
  readonly deterministic: boolean;
  readonly gradLayout: readonly [GradLayout, GradLayout];
  readonly outLayout: OutLayout;
  readonly values: Float32Array;
}

const SEED = Number(Deno.env.get("ROBUSTNESS_SEED") ?? 0x5eed2);
const CONFIGS = 1200;
const SENTINEL = -4096; // exact in every dtype, and far from any result below
const SPECIALS = [Infinity, -Infinity, NaN, -0, 3e38, -3e38, 1e-40, 65504, 2 ** -24];

function spatialPair(r: () => number, nearest: boolean): [number, number] {
  const pool = [1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17];
  const pickFrom = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const input = pickFrom(pool);
  switch (Math.floor(r() * 8)) {
    case 0:
      return [input, input]; // same size (bilinear's shortcut)
    case 1:
      return [input, input * (2 + Math.floor(r() * 3))]; // exact upscale
    case 2: {
      const output = pickFrom([1, 2, 3, 4, 5]);
      return [output * (2 + Math.floor(r() * 3)), output]; // exact downscale
    }
    case 3:
      return pickFrom<[number, number]>([[3, 2], [2, 3], [6, 4], [4, 6], [5, 2], [2, 5], [9, 6]]);
    case 7:
      // Size pairs where the device's index math and PyTorch's map some output differently.
      return pickFrom<[number, number]>([[2, 41], [4, 47], [6, 37], [8, 55], [14, 23], [16, 41]]);
    case 4:
      // The 50x boundary of nearest-exact (accepted), and beyond it for bilinear.
      return r() < 0.5 ? [1, nearest ? 50 : 60] : [2, nearest ? 100 : 120];
    default:
      return [input, pickFrom(pool)];
  }
}

function validScale(r: () => number, input: number, output: number, nearest: boolean): number {
  for (let attempt = 0; attempt < 6; attempt++) {
    const s = attempt === 0 ? output / input : (output + r()) / input;
    if (Math.floor(input * s) === output && (!nearest || 1 / s >= 0.02)) return s;
  }
  return 0;
}

function makeConfig(r: () => number): Config {
  const op = (["nearestExact1d", "nearestExact2d", "bilinear2d"] as const)[Math.floor(r() * 3)];
  const nearest = op !== "bilinear2d";
  const spatial = op === "nearestExact1d" ? 1 : 2;
  const inSp: number[] = [];
  const outSp: number[] = [];
  for (let d = 0; d < spatial; d++) {
    let [i, o] = spatialPair(r, nearest);
    // Keep 2d planes small: at most one long dimension.
    if (d === 1 && (i > 20 || o > 20) && (inSp[0] > 20 || outSp[0] > 20)) [i, o] = [3, 5];
    inSp.push(i);
    outSp.push(o);
  }
  const n = r() < 0.05 ? 0 : 1 + Math.floor(r() * 2);
  const c = r() < 0.02 ? 0 : [1, 2, 3, 5][Math.floor(r() * 4)];
  const scales = inSp.map((i, d) => (r() < 0.4 ? validScale(r, i, outSp[d], nearest) : 0));
  const u = r();
  const dtype: DType = u < 0.5 ? "float32" : u < 0.75 ? "float16" : "bfloat16";
  const layouts: GradLayout[] = ["contiguous", "channelsLast", "transposed", "offset", "stepped"];
  const pickLayout = (): GradLayout => layouts[Math.floor(r() * layouts.length)];
  const outLayouts: OutLayout[] = ["none", "none", "contiguous", "stepped", "transposedOffset"];
  const count = n * c * outSp.reduce((a, b) => a * b, 1);
  const special = r() < 0.1;
  const values = Float32Array.from(
    { length: count },
    () =>
      special && r() < 0.05
        ? SPECIALS[Math.floor(r() * SPECIALS.length)]
        : Math.fround((r() * 2 - 1) * 4),
  );
  return {
    op,
    dtype,
    inputSize: [n, c, ...inSp],
    outputSize: outSp,
    scales,
    alignCorners: !nearest && r() < 0.5,
    deterministic: r() < 0.5,
    gradLayout: [pickLayout(), pickLayout()],
    outLayout: outLayouts[Math.floor(r() * outLayouts.length)],
    values,
  };
}

/**
 * A view whose last dimension has stride 2, at offset 1, in a sentinel-filled storage; `base` is the
 * whole storage (the caller disposes it).
 */
function stepped(
  device: Device,
  values: Float32Array,
  shape: number[],
  dtype: DType,
): { view: Tensor; base: Tensor } {
  const last = shape[shape.length - 1];
  const storageShape = [...shape.slice(0, -1), 2 * last + 1];
  const storage = new Float32Array(storageShape.reduce((a, b) => a * b, 1)).fill(SENTINEL);
  for (let k = 0; k < values.length; k++) {
    storage[Math.floor(k / last) * (2 * last + 1) + 1 + 2 * (k % last)] = values[k];
  }
  const base = device.tensor(storage, storageShape, { dtype });
  return { view: base.slice(shape.length - 1, 1, undefined, 2), base };
}

function makeGrad(device: Device, cfg: Config, layout: GradLayout): Tensor {
  const shape = [cfg.inputSize[0], cfg.inputSize[1], ...cfg.outputSize];
  if (layout !== "stepped") return makeView(device, cfg.values, shape, cfg.dtype, layout);
  const { view, base } = stepped(device, cfg.values, shape, cfg.dtype);
  base.dispose(); // the view keeps the storage
  return view;
}

/** The out view and the whole buffer it lives in (compared entirely, sentinels included). */
function makeOut(device: Device, cfg: Config): { out: Tensor; buffer: Tensor } | null {
  const shape = cfg.inputSize;
  const count = shape.reduce((a, b) => a * b, 1);
  const filled = (n: number): Float32Array => new Float32Array(n).fill(SENTINEL);
  if (cfg.outLayout === "none") return null;
  if (cfg.outLayout === "contiguous") {
    const out = device.tensor(filled(count), shape, { dtype: cfg.dtype });
    return { out, buffer: out };
  }
  if (cfg.outLayout === "stepped" || shape.length === 3) {
    const { view, base } = stepped(device, filled(count), shape, cfg.dtype);
    return { out: view, buffer: base };
  }
  // 2d: storage [N, C, W, H + 2], transposed to [N, C, H + 2, W], rows 1..H.
  const [n, c, h, w] = shape;
  const buffer = device.tensor(filled(n * c * w * (h + 2)), [n, c, w, h + 2], {
    dtype: cfg.dtype,
  });
  using transposed = buffer.transpose(2, 3);
  return { out: transposed.slice(2, 1, h + 1), buffer };
}

const OPS = {
  nearestExact1d: upsampleNearestExact1dBackward,
  nearestExact2d: upsampleNearestExact2dBackward,
  bilinear2d: upsampleBilinear2dBackward,
} as const;

function run(cfg: Config, grad: Tensor, out: Tensor | undefined): Tensor {
  const common = {
    outputSize: cfg.outputSize,
    inputSize: cfg.inputSize,
    out,
    deterministic: cfg.deterministic,
  };
  if (cfg.op === "nearestExact1d") {
    return OPS.nearestExact1d(grad, { ...common, scales: cfg.scales[0] });
  }
  const options = { ...common, scalesH: cfg.scales[0], scalesW: cfg.scales[1] };
  if (cfg.op === "nearestExact2d") return OPS.nearestExact2d(grad, options);
  return OPS.bilinear2d(grad, { ...options, alignCorners: cfg.alignCorners });
}

/** Runs a config on a device: the result's values and, with `out`, the whole buffer's. */
async function runOn(
  device: Device,
  cfg: Config,
  layout: GradLayout,
): Promise<{ result: Float32Array; buffer: Float32Array | null }> {
  using grad = makeGrad(device, cfg, layout);
  const target = makeOut(device, cfg);
  try {
    using result = run(cfg, grad, target?.out);
    if (target) assert.equal(result, target.out, "the op returns out");
    assert.deepEqual(result.shape, cfg.inputSize);
    return {
      result: await result.toFloat32Array(),
      buffer: target ? await target.buffer.toFloat32Array() : null,
    };
  } finally {
    target?.out.dispose();
    target?.buffer.dispose();
  }
}

// Whether deterministic mode refuses cfg on the NPU: its kernel adds in an order nothing fixes and
// no deterministic route covers it (support.ts).
function refusedOn(npu: Device, cfg: Config): boolean {
  if (cfg.op !== "bilinear2d") return false;
  const target: AscendTarget = {
    generation: npu.generation ?? "a2",
    bilinearApi: "v2",
    fma: true,
  };
  try {
    deterministicRouteOf({ ...cfg, deterministic: true }, target, { warnOnly: false });
    return false;
  } catch (error) {
    if (error instanceof NondeterministicKernelError) return true;
    throw error;
  }
}

const describe = (cfg: Config, index: number): string =>
  `seed ${SEED} config ${index}: ${cfg.op} ${cfg.dtype} inputSize [${cfg.inputSize}] outputSize ` +
  `[${cfg.outputSize}] scales [${cfg.scales}]${
    cfg.op === "bilinear2d" ? ` alignCorners ${cfg.alignCorners}` : ""
  } ` +
  `grad ${cfg.gradLayout.join("/")} out ${cfg.outLayout}`;

/** PyTorch's answer (the naive oracles of tests/support/reference.ts), rounded to the dtype. */
function pytorchResult(cfg: Config, grad: Float32Array): Float32Array {
  const result = cfg.op === "bilinear2d"
    ? referenceBilinear2dBackward(grad, cfg.inputSize, cfg.outputSize, cfg.scales, cfg.alignCorners)
    : referenceNearestExactBackward(grad, cfg.inputSize, cfg.outputSize, cfg.scales);
  return roundTo(cfg.dtype, result);
}

/** CPU against PyTorch: nearest-exact bit-exact; bilinear within 4 ulp (one step in 16-bit dtypes). */
function assertPytorch(
  cfg: Config,
  actual: Float32Array,
  expected: Float32Array,
  what: string,
): void {
  if (cfg.op !== "bilinear2d") return assertBitEqual(actual, expected, what);
  if (cfg.dtype === "float32") return assertClose(actual, expected, what, { ulps: 4 });
  assertClose(actual, expected, what, {
    ulps: 0,
    rtol: cfg.dtype === "float16" ? 2 ** -10 : 2 ** -7,
  });
}

EMULATED_LANE.test("differential: random valid configurations on the CPU (PyTorch) and the emulated NPU (device model)", async () => {
  using cpu = Device.open({ backend: "cpu" });
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  const r = rng(SEED);
  const tally = new Map<string, number>();
  let differing = 0;
  let sentinelsChecked = 0;
  for (let i = 0; i < CONFIGS; i++) {
    const cfg = makeConfig(r);
    const what = describe(cfg, i);
    const grad = roundTo(cfg.dtype, cfg.values);
    const a = await runOn(cpu, cfg, cfg.gradLayout[0]);
    if (cfg.op === "nearestExact1d" && cfg.inputSize[0] * cfg.inputSize[1] === 0) {
      // The device rejects a 1d call with N or C = 0 (aclnn 161002); the binding says so first.
      await assert.rejects(() => runOn(npu, cfg, cfg.gradLayout[1]), /161002/, what);
      continue;
    }
    if (cfg.deterministic && refusedOn(npu, cfg)) {
      // Deterministic mode asked of a kernel that adds in a free order, no route: refused first.
      await assert.rejects(
        () => runOn(npu, cfg, cfg.gradLayout[1]),
        NondeterministicKernelError,
        what,
      );
      continue;
    }
    const b = await runOn(npu, cfg, cfg.gradLayout[1]);
    const key = `${cfg.op} ${cfg.dtype}`;
    tally.set(key, (tally.get(key) ?? 0) + 1);
    assertPytorch(cfg, a.result, pytorchResult(cfg, grad), `${what} (cpu)`);
    assertMatchesModelOf(
      b.result,
      grad,
      deviceCaseOf(cfg),
      cfg.dtype,
      `${what} (npu)`,
      deviceTarget(npu, cfg.deterministic),
    );
    if (
      a.result.some((v, k) =>
        !Object.is(v, b.result[k]) && !(v !== v && b.result[k] !== b.result[k])
      )
    ) {
      differing++;
    }
    for (const [side, run] of [["cpu", a], ["npu", b]] as const) {
      if (!run.buffer) continue;
      // Outside the out view the buffer still holds the sentinel.
      const outside = run.buffer.length - run.result.length;
      assert.ok(run.buffer.filter((v) => v === SENTINEL).length >= outside, `${what} (${side})`);
      sentinelsChecked += outside;
    }
  }
  console.log(
    `  ${CONFIGS} configurations (seed ${SEED}): ` +
      [...tally].sort().map(([k, v]) => `${k} ${v}`).join(", "),
  );
  console.log(
    `  ${differing} configurations where the NPU's bits differ from the CPU's; ` +
      `${sentinelsChecked} sentinel elements untouched`,
  );
  for (const op of ["nearestExact1d", "nearestExact2d", "bilinear2d"]) {
    for (const dtype of ["float32", "float16", "bfloat16"]) {
      assert.ok((tally.get(`${op} ${dtype}`) ?? 0) >= 15, `too few ${op} ${dtype} configurations`);
    }
  }
});
