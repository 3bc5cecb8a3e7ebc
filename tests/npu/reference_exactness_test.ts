// The CPU device reference against the emulated NPU where `referenceExactness` (src/rules/
// exactness.ts) says it is exact: bit for bit under any atomic seed, and within the bound where it
// says bounded. Per family (the lane's ACLEMU_SOC: A2/A3 by default, the 910, 310P and 950 lanes of
// .ci/run), on seeded random calls and each tiling mode of the TBE kernel ResizeBilinearV2Grad, both
// contraction settings (ACLEMU_TBE_FMA / tbeFma), A2/A3 with V2 and with a V1-only toolkit (no-v2);
// the atomic modes' order-dependent calls equal the reference under its named seed
// (aclemuSetAtomicSeed(0), REFERENCE_LAUNCH_SEED). Failures name the kernel and the call.

import assert from "node:assert/strict";
import { Device, type DType, runParams } from "../../mod.ts";
import { compareWithDevice } from "../../src/rules/bound.ts";
import { referenceExactness } from "../../src/rules/exactness.ts";
import { FAMILY_NAMES, generationOfSoc } from "../../src/rules/generation.ts";
import type { BilinearApi } from "../../src/rules/ascend_a2.ts";
import { ascendPlan, type AscendTarget, checkAscendRules } from "../../src/rules/numerics.ts";
import type { UpsampleParams } from "../../src/rules/ops.ts";
import { deviceKernelOf } from "../../src/cpu/ascend/backward/kernel_of.ts";
import { forward } from "../../cli/verify/adjoint.ts";
import { makeCases, seededRandom } from "../../cli/verify/cases.ts";
import {
  configuredEmulationSoc,
  emu,
  EMU_DIR,
  EMU_NO_V2_DIR,
  emuLastKernel,
  EMULATED_LANE,
  emuSetAtomicSeed,
  emuSetTbeFma,
  roundTo,
} from "../support/helpers.ts";

const SOC = configuredEmulationSoc();
const GENERATION = generationOfSoc(SOC).generation;
const IGNORE = EMULATED_LANE.ignore !== undefined;
const FAMILY = FAMILY_NAMES[GENERATION];

type Call = UpsampleParams & { readonly deterministic: boolean };

function target(api: BilinearApi, tbeFma: boolean): AscendTarget {
  return { generation: GENERATION, bilinearApi: api, fma: true, tbeFma, soc: SOC };
}

function call(
  inHW: readonly number[],
  outHW: readonly number[],
  alignCorners = false,
  dtype: DType = "float32",
  nc: readonly number[] = [1, 2],
): Call {
  // A2/A3's V2 sends a call to the TBE kernel when a scale does not match its size (an H scale
  // alone, matching out == floor(in * scale), still falls back: both scales come from the sizes).
  const scales = GENERATION === "a2" ? [(outHW[0] + 0.25) / inHW[0], 0] : [0, 0];
  return {
    op: "bilinear2d",
    dtype,
    inputSize: [...nc, ...inHW],
    outputSize: [...outHW],
    scales,
    alignCorners,
    deterministic: false,
  };
}

// The TBE kernel's tiling modes at their thresholds, per family (tensor_c 1536 on A2/A3, 2048 on
// the 910 and 310P), and seeded random calls of every mode.
function tbeCalls(): Call[] {
  const tc = GENERATION === "a2" ? 1536 : 2048;
  const fixed: Call[] = [
    call([1, 1], [5, 7]), // mode 1
    call([1, 1], [3, tc]), // mode 2
    call([6, 9], [1, 1]), // mode 3
    call([5, 7], [11, 13], true), // mode 4
    call([30, 5], [29, 84], false, "float32", [2, 2]), // issue 29's order-free mode-5 example
    call([2, 5], [29, 84]),
    call([3, 40], [45, 100]), // 5 (910/310P) or 6, many rows per core
    call([64, 40], [32, 100]), // rows halved: one partial a row
    call([32, 40], [32, 100]), // H unchanged
    call([3, tc / 2 + 5], [4, tc / 2 + 40]), // mode 6 through windows
    call([2, 100], [9, tc + 40], true), // mode 6, gradient rows wider than tensor_c
  ];
  const random = seededRandom(0xe8ac7);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  for (let k = 0; k < 24; k++) {
    const inHW = [int(1, 20), int(1, 40)];
    const outHW = [int(1, 40), int(1, 90)];
    if (k % 6 === 0) outHW[1] = int(700, 1200); // wide rows: modes 5 and 6
    const dtype: DType = random() < 0.3 ? "float16" : "float32";
    fixed.push(call(inHW, outHW, random() < 0.3, dtype, [int(1, 2), int(1, 2)]));
  }
  return fixed;
}

function gradient(c: Call, seed: number): Float32Array {
  const random = seededRandom(seed);
  const count = c.inputSize[0] * c.inputSize[1] * c.outputSize[0] * c.outputSize[1];
  return roundTo(c.dtype, Float32Array.from({ length: count }, () => random() * 2 - 1));
}

// `c` (backward, or forward) on `device`, its input `values` in the call's dtype.
async function runOn(
  device: Device,
  c: UpsampleParams,
  values: Float32Array,
  direction: "backward" | "forward" = "backward",
): Promise<Float32Array> {
  const shape = direction === "backward"
    ? [c.inputSize[0], c.inputSize[1], ...c.outputSize]
    : c.inputSize;
  using x = device.tensor(values, shape, { dtype: c.dtype });
  using y = direction === "backward" ? runParams(x, c) : forward(x, c);
  return await y.toFloat32Array();
}

// The device reference's own kernel for `c` on `t` (kernel_of.ts, the path CpuBackend takes) on
// contiguous host arrays, rounded to the call's dtype.
function reference(c: Call, values: Float32Array, t: AscendTarget): Float32Array {
  const kernel = deviceKernelOf(c, t);
  if (kernel === null) throw new Error(`no device kernel for ${JSON.stringify(c)}`);
  const strides = (dims: readonly number[]) =>
    dims.map((_, i) => dims.slice(i + 1).reduce((a, b) => a * b, 1));
  const shape = [c.inputSize[0], c.inputSize[1], ...c.outputSize];
  const out = new Float32Array(c.inputSize.reduce((a, b) => a * b, 1));
  kernel({
    gradOutput: { data: values, dtype: "float32", strides: strides(shape), offset: 0 },
    out: { data: out, dtype: "float32", strides: strides(c.inputSize), offset: 0 },
    inputSize: c.inputSize,
    outputSize: c.outputSize,
    scales: c.scales,
    alignCorners: c.alignCorners,
  });
  return roundTo(c.dtype, out);
}

function firstDifference(a: Float32Array, b: Float32Array): number {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  return x.findIndex((v, i) => v !== y[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i])));
}

interface Tally {
  exact: number;
  bounded: number;
  /** Bounded calls whose bits changed with the seed (so seed 0 pins an order that matters). */
  reordered: number;
  kernels: Map<string, { exact: number; bounded: number }>;
}

async function checkTbe(libDir: string, api: BilinearApi, tbeFma: boolean): Promise<Tally> {
  using npu = Device.open({ backend: "npu", libDir });
  const tally: Tally = { exact: 0, bounded: 0, reordered: 0, kernels: new Map() };
  const t = target(api, tbeFma);
  emuSetTbeFma(tbeFma ? 1 : 0);
  try {
    for (const [k, drawn] of tbeCalls().entries()) {
      // V1 takes no scales (A2/A3 sends every call whose sizes differ to the TBE kernel).
      const c = api === "v1" ? { ...drawn, scales: [0, 0] } : drawn;
      const plan = ascendPlan(c, t);
      if (!plan.kernel.startsWith("ResizeBilinearV2Grad5HD")) continue;
      const verdict = referenceExactness(c, t);
      assert.equal(verdict.kernel, plan.kernel);
      const values = gradient(c, 1000 + k);
      const expected = reference(c, values, t);
      const what = `${FAMILY} ${api} tbeFma ${tbeFma}: ${verdict.kernel} ${verdict.exactness} ` +
        `${c.dtype} [${c.inputSize}] <- [${c.outputSize}] align ${c.alignCorners}`;
      // The named seed: the reference's order of the cores' atomic adds.
      emuSetAtomicSeed(0n);
      const seeded = await runOn(npu, c, values);
      assert.equal(emuLastKernel(), plan.kernel, what);
      const at = firstDifference(seeded, expected);
      assert.equal(at, -1, `${what}, seed 0: element ${at}: ${seeded[at]} != ${expected[at]}`);
      const counts = tally.kernels.get(plan.kernel) ?? { exact: 0, bounded: 0 };
      tally.kernels.set(plan.kernel, counts);
      // Any other seed: bit for bit where exact, within the bound elsewhere.
      emuSetAtomicSeed(BigInt(0x5eed + k));
      const other = await runOn(npu, c, values);
      if (verdict.exactness === "exact") {
        const d = firstDifference(other, expected);
        assert.equal(d, -1, `${what}, another seed: element ${d}: ${other[d]} != ${expected[d]}`);
        tally.exact++;
        counts.exact++;
      } else {
        const options = { generation: GENERATION, bilinearApi: api, tbeFma } as const;
        assert.ok(compareWithDevice(c, values, other, expected, options).ok, `${what}: bound`);
        tally.bounded++;
        counts.bounded++;
        if (firstDifference(other, seeded) !== -1) tally.reordered++;
      }
    }
  } finally {
    emuSetTbeFma(-1);
    emu().aclemuResetFaults();
  }
  return tally;
}

function report(label: string, tally: Tally): void {
  const kernels = [...tally.kernels].map(([k, v]) => `${k} ${v.exact}/${v.bounded}`).join(", ");
  console.log(
    `${label}: exact ${tally.exact}, bounded ${tally.bounded} (${tally.reordered} reordered ` +
      `by the seed; ${kernels})`,
  );
}

for (const tbeFma of [false, true]) {
  Deno.test({
    name: `reference exactness (${FAMILY}, tbeFma ${tbeFma}): the TBE kernel bit for bit where ` +
      `exact, under seed 0 everywhere`,
    ignore: IGNORE || GENERATION === "950",
    async fn(): Promise<void> {
      const apis = GENERATION === "a2"
        ? [[EMU_DIR, "v2"], [EMU_NO_V2_DIR, "v1"]] as const
        : [[EMU_DIR, "v2"]] as const;
      for (const [libDir, api] of apis) {
        const tally = await checkTbe(libDir, api, tbeFma);
        report(`${FAMILY} ${api} tbeFma ${tbeFma}`, tally);
        assert.ok(tally.exact >= 12, `${tally.exact} exact calls`);
        assert.ok(tally.bounded >= 2, `${tally.bounded} order-dependent calls`);
        assert.ok(tally.reordered >= 1, `${tally.reordered} calls changed with the seed`);
      }
    },
  });
}

// Every op, dtype and shape class verify draws (makeCases), deterministic off and on, through the
// public CPU device reference (Device.open numerics "device" with the lane's SoC): bit for bit
// under a seed other than the reference's where `referenceExactness` says exact, within the bound
// elsewhere; the forward ops bit for bit where exact.
async function checkDrawn(deterministic: boolean): Promise<Map<string, [number, number]>> {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR, deterministic, warnings: "ignore" });
  using cpu = Device.open({
    backend: "cpu",
    numerics: "device",
    soc: SOC,
    threads: 1,
    deterministic,
    warnings: "ignore",
  });
  const t = target("v2", false);
  const split = new Map<string, [number, number]>();
  for (const [k, drawn] of makeCases(90, 29, ["float32", "float16", "bfloat16"]).entries()) {
    const c = { ...drawn, deterministic };
    for (const direction of ["backward", "forward"] as const) {
      let verdict;
      try {
        if (direction === "backward") checkAscendRules(c, t);
        verdict = referenceExactness({ ...c, direction }, t);
      } catch {
        continue; // what the family refuses (tests of its own)
      }
      const shape = direction === "backward"
        ? [c.inputSize[0], c.inputSize[1], ...c.outputSize]
        : c.inputSize;
      const random = seededRandom(7000 + k);
      const count = shape.reduce((a, b) => a * b, 1);
      const values = roundTo(c.dtype, Float32Array.from({ length: count }, () => random() * 2 - 1));
      const run = (device: Device) => runOn(device, c, values, direction);
      emuSetAtomicSeed(BigInt(0xabc + k));
      const actual = await run(npu);
      const expected = await run(cpu);
      const what = `${FAMILY} ${direction} ${verdict.kernel} (${verdict.exactness}) ${c.op} ` +
        `${c.dtype} [${c.inputSize}] <-> [${c.outputSize}] scales [${c.scales}] align ` +
        `${c.alignCorners} deterministic ${deterministic}`;
      // A deterministic call the route takes ends with its last pass (or the cast back).
      const routed = direction === "backward" && deterministic && ascendPlan(c, t).orderDependent;
      if (!routed) assert.equal(emuLastKernel(), verdict.kernel, what);
      // The named seed: the reference's order of every atomic kernel (Cube kernels aside: their
      // reference sums in PyTorch's order unless cubeOrder says otherwise).
      if (direction === "backward" && !verdict.kernel.startsWith("Upsample")) {
        emuSetAtomicSeed(0n);
        const seeded = await run(npu);
        const at = firstDifference(seeded, expected);
        assert.equal(at, -1, `${what}, seed 0: element ${at}: ${seeded[at]} != ${expected[at]}`);
      }
      const key = `${direction} ${verdict.kernel}`;
      const tally = split.get(key) ?? [0, 0];
      split.set(key, tally);
      if (verdict.exactness === "exact") {
        const at = firstDifference(actual, expected);
        assert.equal(at, -1, `${what}: element ${at}: ${actual[at]} != ${expected[at]}`);
        tally[0]++;
      } else {
        if (direction === "backward") {
          const options = { generation: GENERATION, deterministic, tbeFma: false } as const;
          assert.ok(compareWithDevice(c, values, actual, expected, options).ok, `${what}: bound`);
        }
        tally[1]++;
      }
    }
  }
  return split;
}

for (const deterministic of [false, true]) {
  Deno.test({
    name: `reference exactness (${FAMILY}, deterministic ${deterministic}): every drawn call ` +
      `bit for bit where exact, within the bound elsewhere`,
    ignore: IGNORE,
    async fn(): Promise<void> {
      const split = await checkDrawn(deterministic);
      const lines = [...split].sort().map(([k, [e, b]]) => `${k} ${e}/${b}`);
      console.log(`${FAMILY} deterministic ${deterministic} (exact/bounded): ${lines.join(", ")}`);
      const exactCalls = [...split.values()].reduce((sum, [e]) => sum + e, 0);
      assert.ok(exactCalls >= 40, `${exactCalls} exact calls`);
    },
  });
}

// A2/A3's Cube kernels under cubeOrder "ascending": the reference's two passes (cube_a2.ts) are the
// emulation's reading bit for bit, every op and dtype of verify's mix.
Deno.test({
  name: `reference exactness (${FAMILY}): the Cube kernels in the "ascending" reading`,
  ignore: IGNORE || GENERATION !== "a2",
  async fn(): Promise<void> {
    using npu = Device.open({ backend: "npu", libDir: EMU_DIR, warnings: "ignore" });
    const t: AscendTarget = { ...target("v2", false), cubeOrder: "ascending" };
    const kernels = new Map<string, number>();
    for (const [k, c] of makeCases(120, 31, ["float32", "float16", "bfloat16"]).entries()) {
      const call = { ...c, deterministic: false };
      try {
        checkAscendRules(call, t);
      } catch {
        continue;
      }
      const verdict = referenceExactness(call, t);
      if (!verdict.kernel.startsWith("Upsample")) continue;
      assert.equal(verdict.exactness, "exact", verdict.kernel);
      const random = seededRandom(9000 + k);
      const count = c.inputSize[0] * c.inputSize[1] * c.outputSize.reduce((a, b) => a * b, 1);
      const values = roundTo(c.dtype, Float32Array.from({ length: count }, () => random() * 2 - 1));
      const actual = await runOn(npu, c, values);
      assert.equal(emuLastKernel(), verdict.kernel);
      const expected = reference(call, values, t);
      const at = firstDifference(actual, expected);
      assert.equal(
        at,
        -1,
        `${verdict.kernel} ${c.op} ${c.dtype} [${c.inputSize}] <- [${c.outputSize}] scales ` +
          `[${c.scales}]: element ${at}: ${actual[at]} != ${expected[at]}`,
      );
      kernels.set(verdict.kernel, (kernels.get(verdict.kernel) ?? 0) + 1);
    }
    console.log(`${FAMILY} Cube kernels, "ascending" reading, bit for bit: ${[...kernels]}`);
    assert.ok((kernels.get("UpsampleBilinear2dGrad") ?? 0) >= 5);
    assert.ok((kernels.get("UpsampleNearestExact2dGrad") ?? 0) >= 20);
  },
});

// The 950's SIMT scatter (deterministic off, an image larger than its gradient): bit for bit under
// any seed where at most two terms reach a cell, under seed 0 everywhere.
Deno.test({
  name: `reference exactness (${FAMILY}): the SIMT scatter, exact where order-free, seed 0 always`,
  ignore: IGNORE || GENERATION !== "950",
  async fn(): Promise<void> {
    using npu = Device.open({ backend: "npu", libDir: EMU_DIR, warnings: "ignore" });
    using cpu = Device.open({
      backend: "cpu",
      numerics: "device",
      soc: SOC,
      threads: 1,
      warnings: "ignore",
    });
    const t = target("v2", false);
    const random = seededRandom(0x5ca7);
    const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
    let exact = 0, bounded = 0, reordered = 0;
    for (let k = 0; k < 30; k++) {
      const outHW = [int(1, 12), int(1, 12)];
      const factor = k % 3 === 0 ? 1 : int(2, 3);
      const inHW = [outHW[0] * factor + int(0, 3), outHW[1] * factor + int(0, 3)];
      const dtype: DType = (["float32", "float16", "bfloat16"] as const)[k % 3];
      const c = { ...call(inHW, outHW, random() < 0.3, dtype), scales: [0, 0] };
      const verdict = referenceExactness(c, t);
      if (verdict.kernel !== "ResizeBilinearV2Grad.SIMT_NCHW") continue;
      const values = gradient(c, 400 + k);
      const run = (device: Device) => runOn(device, c, values);
      const expected = await run(cpu);
      const what = `${FAMILY} ${verdict.kernel} (${verdict.exactness}) ${dtype} [${c.inputSize}] ` +
        `<- [${c.outputSize}] align ${c.alignCorners}`;
      emuSetAtomicSeed(0n);
      const seeded = await run(npu);
      let at = firstDifference(seeded, expected);
      assert.equal(at, -1, `${what}, seed 0: element ${at}: ${seeded[at]} != ${expected[at]}`);
      emuSetAtomicSeed(BigInt(77 + k));
      const other = await run(npu);
      if (verdict.exactness === "exact") {
        at = firstDifference(other, expected);
        assert.equal(at, -1, `${what}, another seed: element ${at}`);
        exact++;
      } else {
        const options = { generation: GENERATION, deterministic: false } as const;
        assert.ok(compareWithDevice(c, values, other, expected, options).ok, `${what}: bound`);
        if (firstDifference(other, seeded) !== -1) reordered++;
        bounded++;
      }
    }
    console.log(
      `${FAMILY} SIMT scatter: exact ${exact}, bounded ${bounded} (${reordered} reordered)`,
    );
    assert.ok(exact >= 5 && bounded >= 3, `${exact} exact, ${bounded} bounded`);
  },
});
