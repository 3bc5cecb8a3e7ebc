// The TBE kernel's mode-6 column loss on the emulated NPU, per family (the lane's ACLEMU_SOC: A2/A3
// by default with V2 falling back and V1 only, the 910 and 310P lanes of .ci/run): with deterministic
// off the NPU runs the arrangement that avoids the loss (src/rules/arrangement.ts), equal bit for
// bit to the CPU device reference (which computes the same arrangement), over several atomic seeds,
// and within a float32 bound of the exact gradient; deviceDefects "allow" gives the device's result
// (the reference's too, without the lost terms), "refuse" and calls no arrangement covers throw
// DeviceDefectError before anything is allocated or launched.

import assert from "node:assert/strict";
import {
  Device,
  DeviceDefectError,
  type DeviceDefects,
  upsampleBilinear2dBackward,
} from "../../mod.ts";
import { generationOfSoc } from "../../src/rules/generation.ts";
import { kernelName5hd, tbe5hdSpec, tilingMode5hd } from "../../src/rules/ascend_5hd.ts";
import { lostColumns5hd, type TbeGeneration } from "../../src/rules/arrangement.ts";
import { linearIndexTable } from "../../src/rules/pytorch.ts";
import { seededRandom } from "../../cli/verify/cases.ts";
import {
  exactBilinearBackward,
  type ExactGradient,
  fallbackScaleH,
} from "../support/exact_bilinear.ts";
import {
  assertBitEqual,
  configuredEmulationSoc,
  emu,
  EMU_DIR,
  EMU_NO_V2_DIR,
  emuKernelLaunches,
  emuLastKernel,
  EMULATED_LANE,
  emuSetAtomicSeed,
} from "../support/helpers.ts";

const SOC = configuredEmulationSoc();
const GENERATION = generationOfSoc(SOC).generation;
const TBE = GENERATION !== "950";
const IGNORE = EMULATED_LANE.ignore !== undefined || !TBE;
const SPEC = tbe5hdSpec(TBE ? GENERATION as TbeGeneration : "a2");
const U = SPEC.tensorC / 2 - 1; // the kernel's window: 767 on A2/A3, 1023 on the 910 and 310P

interface Case {
  readonly name: string;
  readonly inHW: readonly [number, number];
  readonly outHW: readonly [number, number];
  readonly deterministic?: boolean;
}

// Every case loses columns in its single launch (align corners: a gradient column jumps onto the
// last image column, 2U or 3U, past a whole window).
const AVOIDED: readonly Case[] = [
  { name: "2U + 1 from 2, transposed", inHW: [5, 2 * U + 1], outHW: [3, 2] },
  { name: "3U + 1 from 3, transposed", inHW: [4, 3 * U + 1], outHW: [6, 3] },
  {
    name: "deterministic: the route H first",
    inHW: [1, 2 * U + 1],
    outHW: [SPEC.tensorC / 2 + 50, 2],
    deterministic: true,
  },
];

const TOOLKITS: ReadonlyArray<readonly [string, string]> = GENERATION === "a2"
  ? [["V2 falling back", EMU_DIR], ["V1 only", EMU_NO_V2_DIR]]
  : [["V1", EMU_DIR]];

function sizes(c: Case): { inputSize: number[]; outputSize: number[] } {
  return { inputSize: [1, 2, ...c.inHW], outputSize: [...c.outHW] };
}

// A scale on H alone makes A2/A3's V2 fall back to the TBE kernel (it takes scales from the sizes).
function options(c: Case): Parameters<typeof upsampleBilinear2dBackward>[1] {
  return {
    ...sizes(c),
    alignCorners: true,
    scalesH: fallbackScaleH(c.inHW[0], c.outHW[0]),
    scalesW: 0,
    deterministic: c.deterministic ?? false,
  };
}

function gradient(c: Case, seed: number): Float32Array {
  const random = seededRandom(seed);
  return Float32Array.from({ length: 2 * c.outHW[0] * c.outHW[1] }, () => random() * 2 - 1);
}

async function run(device: Device, c: Case, values: Float32Array): Promise<Float32Array> {
  using grad = device.tensor(values, [1, 2, ...c.outHW]);
  using result = upsampleBilinear2dBackward(grad, options(c));
  return await result.toFloat32Array();
}

// The exact gradient without the gradient columns in `dropped`, and the sum of |terms| per cell.
function exact(c: Case, g: Float32Array, dropped: readonly number[] = []): ExactGradient {
  return exactBilinearBackward(g, 2, c.inHW, c.outHW, true, dropped);
}

function assertWithin(
  c: Case,
  result: Float32Array,
  values: Float32Array,
  dropped: number[],
): void {
  const { value, magnitude } = exact(c, values, dropped);
  // Each cell sums at most ceil(out / in) + 2 terms per dimension into float32, in two passes at most.
  const chain = Math.ceil(c.outHW[0] / c.inHW[0]) + Math.ceil(c.outHW[1] / c.inHW[1]) + 6;
  for (let i = 0; i < value.length; i++) {
    const bound = magnitude[i] * chain * 2 ** -24 + 1e-30;
    assert.ok(
      Math.abs(result[i] - value[i]) <= bound,
      `${c.name}: cell ${i}: ${result[i]} vs exact ${value[i]} (bound ${bound})`,
    );
  }
}

// The gradient columns the single launch loses (the kernel's W table with align corners).
function lostOf(c: Case): number[] {
  const table = linearIndexTable(c.inHW[1], c.outHW[1], true, 0);
  return lostColumns5hd(table.i0, c.inHW[1], SPEC);
}

for (const [toolkit, libDir] of TOOLKITS) {
  Deno.test({
    name:
      `column loss emulation on ${SOC} ${toolkit}: avoided, the reference's bits, the exact gradient`,
    ignore: IGNORE,
    async fn(t): Promise<void> {
      using npu = Device.open({ backend: "npu", libDir });
      using reference = Device.open({ backend: "cpu", numerics: "device", soc: SOC });
      for (const c of AVOIDED) {
        await t.step(c.name, async () => {
          const lost = lostOf(c);
          assert.ok(lost.length > 0, `${c.name}: the single launch loses no column`);
          assert.equal(tilingMode5hd(c.inHW, c.outHW, SPEC), 6);
          const values = gradient(c, 29);
          const patterns = new Set<string>();
          let result: Float32Array = new Float32Array(0);
          for (let seed = 1; seed <= 3; seed++) {
            emu().aclemuResetFaults();
            emuSetAtomicSeed(BigInt(seed));
            const launches = emu().aclemuLaunchCount();
            result = await run(npu, c, values);
            const launched = Number(emu().aclemuLaunchCount() - launches);
            if (c.deterministic) {
              // The H pass ([Wo, Ho] -> [Wo, Hi]) then a one-row W pass in mode 4.
              assert.equal(emuLastKernel(), kernelName5hd(4), c.name);
              assert.ok(launched >= 2, `${c.name}: ${launched} launches`);
            } else {
              // One launch of the call transposed: its windows follow H, which loses nothing.
              const mode = tilingMode5hd([c.inHW[1], c.inHW[0]], [c.outHW[1], c.outHW[0]], SPEC);
              assert.equal(emuLastKernel(), kernelName5hd(mode), c.name);
            }
            patterns.add(new Uint32Array(result.buffer).join(","));
          }
          assert.equal(patterns.size, 1, `${c.name}: ${patterns.size} bit patterns over 3 seeds`);
          assertBitEqual(result, await run(reference, c, values), `${c.name}: NPU vs reference`);
          assertWithin(c, result, values, []);
          // The lost columns' terms are there: the last image column is the exact one.
          const [inH, inW] = c.inHW;
          const { value } = exact(c, values);
          const lastColumn = (v: ArrayLike<number>): number[] =>
            Array.from({ length: inH }, (_, h) => v[h * inW + inW - 1]);
          assert.ok(lastColumn(value).some((v) => v !== 0), c.name);
        });
      }
    },
  });
}

Deno.test({
  name: `column loss emulation on ${SOC}: deviceDefects "allow" is the device's lossy result`,
  ignore: IGNORE,
  async fn(): Promise<void> {
    const c = AVOIDED[0];
    const open = (backend: "npu" | "cpu", deviceDefects: DeviceDefects): Device =>
      backend === "npu"
        ? Device.open({ backend, libDir: EMU_DIR, deviceDefects, warnings: "ignore" })
        : Device.open({ backend, numerics: "device", soc: SOC, deviceDefects, warnings: "ignore" });
    using npu = open("npu", "allow");
    using reference = open("cpu", "allow");
    const values = gradient(c, 5);
    const launched = emuKernelLaunches(kernelName5hd(6));
    const result = await run(npu, c, values);
    assert.equal(emuKernelLaunches(kernelName5hd(6)) - launched, 1);
    assertBitEqual(result, await run(reference, c, values), "NPU vs reference, allow");
    // The exact gradient without the lost columns' terms, not with them.
    const lost = lostOf(c);
    assertWithin(c, result, values, lost);
    const { value } = exact(c, values);
    const last = c.inHW[1] - 1;
    assert.ok(result[last] !== Math.fround(value[last]) && value[last] !== 0);
  },
});

Deno.test({
  name: `column loss emulation on ${SOC}: refused before anything is allocated or launched`,
  ignore: IGNORE,
  async fn(): Promise<void> {
    const both: Case = { name: "both axes", inHW: [2 * U + 1, 2 * U + 1], outHW: [2, 2] };
    using avoid = Device.open({ backend: "npu", libDir: EMU_DIR });
    using refuse = Device.open({ backend: "npu", libDir: EMU_DIR, deviceDefects: "refuse" });
    using reference = Device.open({ backend: "cpu", numerics: "device", soc: SOC });
    for (
      const [device, c, pattern] of [
        [avoid, both, /No arrangement of launches avoids it: the call transposed/],
        [refuse, AVOIDED[0], /deviceDefects is "refuse"/],
        [reference, both, /No arrangement of launches avoids it/],
      ] as const
    ) {
      using grad = device.tensor(gradient(c, 1), [1, 2, ...c.outHW]);
      await device.synchronize();
      const allocations = emu().aclemuLiveAllocations();
      const launches = emu().aclemuLaunchCount();
      assert.throws(
        () => upsampleBilinear2dBackward(grad, options(c)),
        (e: unknown) =>
          e instanceof DeviceDefectError && pattern.test(e.message) &&
          e.kernel === kernelName5hd(6) && e.imageColumn === c.inHW[1] - 1 &&
          e.lostColumns.length > 0 && e.message.includes("resize_bilinear_v2_grad.py"),
      );
      assert.equal(emu().aclemuLiveAllocations(), allocations);
      assert.equal(emu().aclemuLaunchCount(), launches);
    }
  },
});

Deno.test({
  name: `column loss emulation on ${SOC}: float16 takes the transposed launch too (V1 casts)`,
  ignore: IGNORE,
  async fn(): Promise<void> {
    const c = AVOIDED[0];
    using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
    using reference = Device.open({ backend: "cpu", numerics: "device", soc: SOC });
    // Multiples of 2^-8 in (-1, 1): exact in float16.
    const values = gradient(c, 3).map((v) => Math.round(v * 256) / 256);
    const run16 = async (device: Device): Promise<Float32Array> => {
      using grad = device.tensor(values, [1, 2, ...c.outHW], { dtype: "float16" });
      using result = upsampleBilinear2dBackward(grad, options(c));
      return await result.toFloat32Array();
    };
    const result = await run16(npu);
    assertBitEqual(result, await run16(reference), "float16: NPU vs reference");
    const last = c.inHW[1] - 1;
    assert.equal(result[last], Math.fround(exact(c, values).value[last]));
  },
});
