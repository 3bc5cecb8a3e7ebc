// The emulated NPU as the family its SoC belongs to (ACLEMU_SOC, read once per process: the A2/A3
// lane by default, and the Atlas training / inference series lanes of .ci/run): the kernel the
// device reference predicts is the one the emulation launched, on seeded calls and right at each
// tiling threshold; the TBE ResizeBilinearV2Grad's results against the independent model of
// tests/support/resize5hd_model.ts (bit for bit where the order is fixed) and the device reference
// (within its bound); the atomic modes' order changing between launches; deterministic mode
// refused (or warned about) before anything is allocated; the 910/310P refusals and V1 copy; the
// TBE contraction switch followed by the reference's tbeFma.

import assert from "node:assert/strict";
import {
  Device,
  type DType,
  NondeterministicKernelError,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { compareWithDevice } from "../../src/rules/bound.ts";
import type { UpsampleParams } from "../../src/rules/ops.ts";
import { FAMILY_NAMES, generationOfSoc, socInfo } from "../../src/rules/generation.ts";
import { SOC_ROWS } from "../../src/rules/soc_table_data.ts";
import { ascendPlan, type AscendTarget } from "../../src/rules/numerics.ts";
import { probeTbeFma } from "../../cli/doctor/generation.ts";
import { seededRandom } from "../../cli/verify/cases.ts";
import {
  configuredEmulationSoc,
  emu,
  EMU_DIR,
  emuLastKernel,
  EMULATED_LANE,
  emulatedSoc,
  emuLive,
  emuNpuArch,
  emuSetAtomicSeed,
  emuSetTbeFma,
  roundTo,
} from "../support/helpers.ts";
import { resize5hdModel, soc5hdFromIni } from "../support/resize5hd_model.ts";

const NOT_EMULATED = EMULATED_LANE.ignore;
const SOC = configuredEmulationSoc();
const GENERATION = generationOfSoc(SOC).generation;
const TBE = GENERATION !== "950";
const TBE_ONLY = GENERATION === "910" || GENERATION === "310p";

/** One bilinear call: image (inputSize) H x W, gradient H x W, scales, align corners. */
interface Case {
  readonly inHW: readonly [number, number];
  readonly outHW: readonly [number, number];
  readonly scales?: readonly [number, number];
  readonly alignCorners?: boolean;
  readonly nc?: readonly [number, number];
  readonly dtype?: DType;
}

function target(): AscendTarget {
  return { generation: GENERATION, bilinearApi: "v2", fma: true, tbeFma: false };
}

function params(c: Case, deterministic = false): UpsampleParams & { deterministic: boolean } {
  return {
    op: "bilinear2d" as const,
    dtype: c.dtype ?? "float32",
    inputSize: [...(c.nc ?? [1, 2]), ...c.inHW],
    outputSize: [...c.outHW],
    scales: [...(c.scales ?? [0, 0])],
    alignCorners: c.alignCorners ?? false,
    deterministic,
  };
}

/** Gradient values: multiples of 1/64 in [0.5, 1] and [-1, -0.5], exact in every dtype. */
function gradient(count: number, seed: number): Float32Array {
  const random = seededRandom(seed);
  return Float32Array.from({ length: count }, () => {
    const v = 0.5 + Math.floor(random() * 33) / 64;
    return random() < 0.5 ? -v : v;
  });
}

async function run(
  device: Device,
  c: Case,
  values: Float32Array,
  deterministic = false,
): Promise<Float32Array> {
  const p = params(c);
  using grad = device.tensor(values, [p.inputSize[0], p.inputSize[1], ...p.outputSize], {
    dtype: p.dtype,
  });
  using result = upsampleBilinear2dBackward(grad, {
    outputSize: p.outputSize,
    inputSize: p.inputSize,
    scalesH: p.scales[0],
    scalesW: p.scales[1],
    alignCorners: p.alignCorners,
    deterministic,
  });
  return await result.toFloat32Array();
}

/** Random float32 values in (-1, 1): their partial sums round, so the order of atomic adds shows. */
function roundingGradient(count: number, seed: number): Float32Array {
  const random = seededRandom(seed);
  return Float32Array.from({ length: count }, () => random() * 2 - 1);
}

/** Runs `c` on the emulated NPU and asserts it launched the kernel the reference predicts (returned). */
async function assertLaunched(
  npu: Device,
  c: Case,
  seed: number,
  deterministic = false,
): Promise<string> {
  const p = params(c, deterministic);
  const values = gradient(p.inputSize[0] * p.inputSize[1] * c.outHW[0] * c.outHW[1], seed);
  emu().aclemuResetFaults();
  await run(npu, c, values, deterministic);
  const predicted = ascendPlan(p, target()).kernel;
  assert.equal(emuLastKernel(), predicted, `${JSON.stringify(c)} deterministic ${deterministic}`);
  return predicted;
}

// On A2/A3 a scale on H alone (matching the sizes, as the library requires) sends V2 to its
// fallback, the TBE kernel; the other families run it whatever the scales.
function withScale(c: Case): Case {
  if (GENERATION !== "a2") return c;
  return { ...c, scales: [(c.outHW[0] + 0.25) / c.inHW[0], 0] };
}

// The calls at each tiling threshold of this family, and a seeded mix.
function thresholdCases(): Case[] {
  const tensorC = (socInfo(SOC)?.ubSize ?? 196608) / 128;
  const cases: Case[] = [
    { inHW: [1, 1], outHW: [2, tensorC / 2] },
    { inHW: [1, 1], outHW: [2, tensorC / 2 + 1] },
    { inHW: [4, 4], outHW: [1, 1] },
    { inHW: [1, tensorC - 2], outHW: [1, tensorC - 1] },
    { inHW: [1, tensorC - 1], outHW: [1, tensorC] },
    { inHW: [3, 640], outHW: [4, 1280] },
    { inHW: [3, 641], outHW: [4, 1282] },
    { inHW: [2, 20], outHW: [5, 4096] },
    { inHW: [2, 20], outHW: [5, 4097] },
    // Mode 5's `outW > inW`: equal widths (heights differ) are mode 6, one more column mode 5.
    { inHW: [3, 600], outHW: [4, 600] },
    { inHW: [3, 600], outHW: [4, 601] },
    { inHW: [3, 16], outHW: [4, 16 * 254 + 15] },
    { inHW: [3, 16], outHW: [4, 16 * 255] },
    { inHW: [5, 7], outHW: [11, 13], alignCorners: true },
    { inHW: [40, 60], outHW: [20, 30] },
  ];
  const random = seededRandom(0x5eed);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  for (let k = 0; k < 16; k++) {
    const inHW = [int(1, 24), int(1, 24)] as const;
    const outHW = [int(1, 48), int(1, 48)] as const;
    cases.push({
      inHW,
      outHW,
      alignCorners: random() < 0.3,
      nc: [int(1, 2), int(1, 3)],
      dtype: random() < 0.3 ? "float16" : "float32",
    });
  }
  return cases.map(withScale);
}

Deno.test({
  name: `family emulation: the SoC is ${SOC}`,
  ignore: NOT_EMULATED !== undefined,
}, () => {
  assert.equal(emulatedSoc(), SOC);
  // The emulation's own table (native/src/ascendcl/soc_table.c) agrees with the library's.
  assert.equal(emuNpuArch(), socInfo(SOC)?.npuArch ?? 2201);
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  assert.equal(npu.generation, GENERATION);
  assert.ok(npu.name.startsWith(SOC));
});

Deno.test({
  name: `family emulation (${
    FAMILY_NAMES[GENERATION]
  }): the reference's kernel is the one launched`,
  ignore: NOT_EMULATED !== undefined || !TBE,
}, async () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  const modes = new Set<string>();
  for (const [k, c] of thresholdCases().entries()) modes.add(await assertLaunched(npu, c, k));
  const expected = TBE_ONLY ? [0, 1, 2, 3, 4, 5, 6].filter((m) => m !== 0) : [1, 2, 3, 4, 6];
  for (const mode of expected) {
    assert.ok(modes.has(`ResizeBilinearV2Grad5HD.MODE${mode}`), `mode ${mode}: ${[...modes]}`);
  }
});

Deno.test({
  name: `family emulation (${
    FAMILY_NAMES[GENERATION]
  }): the TBE kernel against the independent model and the device reference`,
  ignore: NOT_EMULATED !== undefined || !TBE,
}, async () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  using reference = Device.open({ backend: "cpu", numerics: "device", soc: SOC, threads: 1 });
  const info = socInfo(SOC)!;
  const soc = soc5hdFromIni(SOC, info.shortSoc, info.ubSize, info.aiCoreCount);
  let exact = 0;
  for (const [k, c] of thresholdCases().entries()) {
    const p = params(c);
    const plan = ascendPlan(p, target());
    if (!plan.kernel.startsWith("ResizeBilinearV2Grad5HD")) continue;
    const values = roundTo(
      p.dtype,
      gradient(p.inputSize[0] * p.inputSize[1] * c.outHW[0] * c.outHW[1], 100 + k),
    );
    const actual = await run(npu, c, values);
    const [N, C, inH, inW] = p.inputSize;
    const call = {
      N,
      C,
      inH,
      inW,
      outH: c.outHW[0],
      outW: c.outHW[1],
      alignCorners: p.alignCorners,
    };
    const model = roundTo(p.dtype, resize5hdModel(values, call, soc, { fma: false }).values);
    const expected = await run(reference, c, values);
    const what = `${JSON.stringify(c)} (${plan.kernel})`;
    const options = { generation: GENERATION, tbeFma: false } as const;
    assert.ok(compareWithDevice(p, values, actual, expected, options).ok, `reference: ${what}`);
    assert.ok(compareWithDevice(p, values, model, expected, options).ok, `model: ${what}`);
    if (!plan.orderDependent) {
      assert.deepEqual(new Uint32Array(actual.buffer), new Uint32Array(model.buffer), what);
      exact++;
    }
  }
  assert.ok(exact >= 8, `${exact} bit-exact comparisons`);
});

Deno.test({
  name: `family emulation (${
    FAMILY_NAMES[GENERATION]
  }): atomic modes add in a new order per launch, within the bound`,
  ignore: NOT_EMULATED !== undefined || !TBE,
}, async () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  using reference = Device.open({ backend: "cpu", numerics: "device", soc: SOC, threads: 1 });
  // 2x upsampling over many rows: each image row gets partial rows from neighbouring cores.
  const atomic = withScale({ inHW: [8, 200], outHW: [16, 400], nc: [1, 1] });
  const oneRow = withScale({ inHW: [1, 3000], outHW: [1, 4000], nc: [1, 1] });
  for (const [c, orderDependent] of [[atomic, true], [oneRow, false]] as const) {
    const p = params(c);
    assert.equal(ascendPlan(p, target()).orderDependent, orderDependent);
    const values = roundingGradient(c.outHW[0] * c.outHW[1], 7);
    const expected = await run(reference, c, values);
    const patterns = new Set<string>();
    for (let seed = 1n; seed <= 12n; seed++) {
      emuSetAtomicSeed(seed);
      const actual = await run(npu, c, values);
      assert.ok(compareWithDevice(p, values, actual, expected, { generation: GENERATION }).ok);
      patterns.add(new Uint32Array(actual.buffer).join(","));
    }
    if (orderDependent) assert.ok(patterns.size >= 2, `${patterns.size} patterns`);
    else assert.equal(patterns.size, 1);
  }
  emu().aclemuResetFaults();
});

Deno.test({
  name: `family emulation (${
    FAMILY_NAMES[GENERATION]
  }): deterministic mode runs the route, refuses only what no route covers, before allocating`,
  ignore: NOT_EMULATED !== undefined,
}, async () => {
  const c = withScale({ inHW: [32, 64], outHW: [64, 128] });
  const p = params(c, true);
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR, deterministic: true });
  using grad = npu.zeros([1, 2, 64, 128]);
  const options = {
    outputSize: [64, 128],
    inputSize: p.inputSize,
    scalesH: p.scales[0],
    scalesW: p.scales[1],
  };
  emu().aclemuResetFaults();
  using routed = upsampleBilinear2dBackward(grad, options);
  await routed.toFloat32Array();
  if (!TBE) return assert.equal(emu().aclemuLaunchCount(), 1n); // the 950's flag switches its kernel
  assert.equal(ascendPlan(p, target()).orderDependent, true);
  assert.equal(emu().aclemuLaunchCount(), 2n, "the route's two passes");
  // A2: 2 -> 1535 rows (window 767); 910/310P: 2 -> 2047 (window 1023), with alignCorners: the
  // H pass would drop the last row's gradient (tiling mode 6's column loss).
  const rows = GENERATION === "a2" ? 1535 : 2047;
  const lossy = withScale({ inHW: [rows, 4], outHW: [2, 4], alignCorners: true, nc: [1, 1] });
  const q = params(lossy, true);
  const lossyOptions = {
    outputSize: q.outputSize,
    inputSize: q.inputSize,
    scalesH: q.scales[0],
    scalesW: q.scales[1],
    alignCorners: true,
  };
  using g = npu.zeros([1, 1, 2, 4]);
  const before = emuLive();
  const launches = emu().aclemuLaunchCount();
  assert.throws(
    () => upsampleBilinear2dBackward(g, lossyOptions),
    (e: unknown) =>
      e instanceof NondeterministicKernelError && e.generation === GENERATION &&
      e.kernel === ascendPlan(q, target()).kernel &&
      /the route.s H pass \(W first\) \(ResizeBilinearV2Grad5HD\.MODE6\) loses/.test(e.message),
  );
  assert.deepEqual(emuLive(), before, "nothing allocated");
  assert.equal(emu().aclemuLaunchCount(), launches, "nothing launched");
  using off = upsampleBilinear2dBackward(g, { ...lossyOptions, deterministic: false });
  await off.toFloat32Array();
  const warnings: string[] = [];
  const warn = console.warn;
  console.warn = (message: string) => warnings.push(message);
  try {
    using warned = Device.open({
      backend: "npu",
      libDir: EMU_DIR,
      deterministic: true,
      deterministicWarnOnly: true,
    });
    using g2 = warned.zeros([1, 1, 2, 4]);
    for (let i = 0; i < 2; i++) {
      using r = upsampleBilinear2dBackward(g2, lossyOptions);
      await r.toFloat32Array();
    }
  } finally {
    console.warn = warn;
  }
  assert.equal(warnings.length <= 1, true, warnings.join("\n")); // once per process and kernel
});

Deno.test({
  name: `family emulation (${FAMILY_NAMES[GENERATION]}): what the family does not run is refused`,
  ignore: NOT_EMULATED !== undefined || !TBE_ONLY,
}, async () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  using g1 = npu.zeros([1, 2, 8]);
  using g2 = npu.zeros([1, 2, 8, 8]);
  using b16 = npu.zeros([1, 2, 8, 8], { dtype: "bfloat16" });
  const before = emuLive();
  assert.throws(
    () => upsampleNearestExact1dBackward(g1, { outputSize: [8], inputSize: [1, 2, 4] }),
    /upsampleNearestExact1dBackward is not supported on the Atlas/,
  );
  assert.throws(
    () => upsampleNearestExact2dBackward(g2, { outputSize: [8, 8], inputSize: [1, 2, 4, 4] }),
    TypeError,
  );
  assert.throws(
    () => upsampleBilinear2dBackward(b16, { outputSize: [8, 8], inputSize: [1, 2, 4, 4] }),
    /dtype bfloat16 is not supported .* use float16 or float32/,
  );
  assert.deepEqual(emuLive(), before, "nothing allocated");
  // Equal sizes: V2 would launch nothing and leave out as it was; the library runs V1's copy.
  const values = gradient(2 * 64, 3);
  using grad = npu.tensor(values, [1, 2, 8, 8], { dtype: "bfloat16" });
  using out = npu.tensor(new Float32Array(128).fill(7), [1, 2, 8, 8], { dtype: "bfloat16" });
  upsampleBilinear2dBackward(grad, { outputSize: [8, 8], inputSize: [1, 2, 8, 8], out });
  assert.deepEqual(await out.toFloat32Array(), roundTo("bfloat16", values));
  assert.equal(emuLastKernel(), "ViewCopy");
});

Deno.test({
  name: `family emulation (${
    FAMILY_NAMES[GENERATION]
  }): ACLEMU_TBE_FMA is what the reference's tbeFma and doctor's probe follow`,
  ignore: NOT_EMULATED !== undefined || !TBE,
}, async () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  const scales = GENERATION === "a2" ? ([1, 0] as const) : undefined;
  // Image 1 x 3, gradient 1 x 19: column 9's coordinate is 1 rounded twice, just below 1 fused. A
  // single term per cell: the sums are exact either way, only the coordinate differs.
  const c: Case = { inHW: [1, 3], outHW: [1, 19], scales, nc: [1, 1] };
  const values = new Float32Array(19);
  values[9] = 1;
  try {
    for (const fma of [false, true]) {
      emuSetTbeFma(fma ? 1 : 0);
      assert.equal((await probeTbeFma(npu)).contracted, fma);
      using reference = Device.open({ backend: "cpu", numerics: "device", soc: SOC, tbeFma: fma });
      using other = Device.open({ backend: "cpu", numerics: "device", soc: SOC, tbeFma: !fma });
      const actual = await run(npu, c, values);
      const same = await run(reference, c, values);
      const differ = await run(other, c, values);
      assert.deepEqual(actual, same, `tbeFma ${fma}`);
      assert.notDeepEqual(actual, differ, `tbeFma ${!fma}`);
    }
  } finally {
    emuSetTbeFma(-1);
  }
});

Deno.test({
  name:
    "family emulation (Ascend 950): the reference's kernel is the one launched, at the 1e-6 scale threshold",
  ignore: NOT_EMULATED !== undefined || GENERATION !== "950",
}, async () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  // Scales whose source step 1 / fl32(scale) lies 0.5e-6 (DETERMINE) or 2e-6 (DETERMINE_SCALES) below
  // fl32(in / out); below, so that out == floor(in * scale) still holds as the library requires.
  const scaleAt = (input: number, output: number, delta: number): number =>
    1 / (Math.fround(Math.fround(input) / Math.fround(output)) - delta);
  const cases: Array<[Case, boolean]> = [];
  for (const delta of [0.5e-6, 2e-6]) {
    for (const [inHW, outHW] of [[[7, 9], [11, 13]], [[9, 12], [5, 7]]] as const) {
      const scales = [
        scaleAt(inHW[0], outHW[0], delta),
        scaleAt(inHW[1], outHW[1], delta),
      ] as const;
      for (const deterministic of [true, false]) {
        cases.push([{ inHW, outHW, scales }, deterministic]);
      }
    }
  }
  cases.push([{ inHW: [6, 6], outHW: [6, 6] }, false], [{ inHW: [12, 9], outHW: [5, 4] }, false]);
  const kernels = new Set<string>();
  for (const [k, [c, deterministic]] of cases.entries()) {
    kernels.add(await assertLaunched(npu, c, k, deterministic));
  }
  for (
    const suffix of ["ALL_COPY", "SIMT_NCHW", "SIMT_NCHW_DETERMINE", "SIMT_NCHW_DETERMINE_SCALES"]
  ) {
    assert.ok(kernels.has(`ResizeBilinearV2Grad.${suffix}`), `${suffix}: ${[...kernels]}`);
  }
});

Deno.test({
  name: "family emulation (Atlas A2/A3): V2's routing at its thresholds is the reference's",
  ignore: NOT_EMULATED !== undefined || GENERATION !== "a2",
}, async () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  const cases: Case[] = [
    { inHW: [1, 3], outHW: [100, 6] }, // in / out = 0.01: its own kernel
    { inHW: [1, 3], outHW: [101, 6] }, // below 0.01: the TBE fallback
    { inHW: [4, 3], outHW: [8, 6], scales: [2, 2] }, // both scales fit
    { inHW: [4, 3], outHW: [8, 6], scales: [2, 0] }, // one scale: the fallback
    { inHW: [4, 3], outHW: [8, 6], scales: [2.1, 2] }, // 8 == floor(8.4): its own kernel, 1 / 2.1
    { inHW: [4, 3], outHW: [9, 6], scales: [2.4, 2.2] }, // 9 == floor(9.6), 6 == floor(6.6)
    { inHW: [5, 5], outHW: [5, 5], scales: [1.1, 0] }, // equal sizes: its own kernel
  ];
  const kernels = new Set<string>();
  for (const [k, c] of cases.entries()) kernels.add(await assertLaunched(npu, c, k));
  assert.ok(kernels.has("UpsampleBilinear2dGrad") && kernels.size >= 2, [...kernels].join());
});

Deno.test({
  name:
    "family emulation: every SoC of CANN's table, as the emulation's table and Device.open see it",
  // Once, in the default lane: a child process per SoC name.
  ignore: NOT_EMULATED !== undefined || Deno.env.get("ACLEMU_SOC") !== undefined,
}, async () => {
  const child = new URL("../support/child/npu_arch.ts", import.meta.url).pathname;
  const inherited = Deno.env.toObject();
  delete inherited.ACLNN_LIB_DIR;
  const ask = async (soc: string): Promise<Record<string, unknown>> => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-ffi", "--allow-env", "--allow-read", child],
      env: { ...inherited, ACLEMU_SOC: soc, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(output.stdout).trim();
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
    return JSON.parse(text.split("\n").at(-1)!); // helpers.ts prints its lanes first
  };
  const rows = [...SOC_ROWS];
  for (let start = 0; start < rows.length; start += 8) {
    const batch = rows.slice(start, start + 8);
    const answers = await Promise.all(batch.map(([soc]) => ask(soc)));
    for (const [k, [soc, arch]] of batch.entries()) {
      const answer = answers[k];
      assert.equal(answer.arch, arch, `${soc}: the emulation's NpuArch`);
      const { generation, unsupported } = generationOfSoc(soc);
      if (unsupported === undefined) {
        assert.equal(answer.generation, generation, soc);
      } else {
        assert.equal(answer.error, "UnsupportedSocError", soc);
        assert.ok(String(answer.message).includes(unsupported), `${soc}: ${answer.message}`);
      }
    }
  }
});

Deno.test({
  name: `family emulation (${
    FAMILY_NAMES[GENERATION]
  }): deterministic mode repeats at every tiling threshold, the reference's bits`,
  ignore: NOT_EMULATED !== undefined || !TBE,
}, async () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  using reference = Device.open({ backend: "cpu", numerics: "device", soc: SOC });
  let routed = 0;
  for (const [k, c] of thresholdCases().entries()) {
    const values = roundingGradient(
      (c.nc ?? [1, 2]).reduce((a, b) => a * b, 1) * c.outHW[0] * c.outHW[1],
      k,
    );
    const patterns = new Set<string>();
    let result: Float32Array = new Float32Array(0);
    for (let seed = 1; seed <= 8; seed++) {
      emuSetAtomicSeed(BigInt(seed));
      result = await run(npu, c, values, true);
      patterns.add(Array.from(new Uint32Array(result.buffer)).join(","));
    }
    assert.equal(patterns.size, 1, `${JSON.stringify(c)}: ${patterns.size} bit patterns`);
    const expected = await run(reference, c, values, true);
    if (ascendPlan(params(c, true), target()).orderDependent) {
      routed++;
      // The route is reproduced bit for bit; a fixed-order kernel within the reference's bound.
      assert.deepEqual(result, expected, JSON.stringify(c));
    }
  }
  assert.ok(routed >= 3, `${routed} threshold calls took the route`);
});
