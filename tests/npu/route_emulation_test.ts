// The deterministic route of bilinear backward on the emulated NPU, per family (the lane's
// ACLEMU_SOC: A2/A3 by default, the 910 and 310P lanes of .ci/run): bit-identical over 8 atomic
// seeds, the kernels it launches counted by the emulation, equal bit for bit to the CPU device
// reference and to the independent model (tests/support/route_model.ts), within a float32 bound of
// the exact gradient; the single launch still order-dependent; its intermediates counted and
// freed, refused up front when they cannot fit; a fault in either pass leaks nothing.

import assert from "node:assert/strict";
import {
  AclError,
  Device,
  type DType,
  type Tensor,
  upsampleBilinear2dBackward,
} from "../../mod.ts";
import { generationOfSoc } from "../../src/rules/generation.ts";
import { deterministicRoute } from "../../src/rules/route.ts";
import type { NpuBackend } from "../../src/ffi/npu_backend.ts";
import { deviceInternals } from "../../src/device.ts";
import { seededRandom } from "../../cli/verify/cases.ts";
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
  emuSetTbeFma,
} from "../support/helpers.ts";
import { routeModel } from "../support/route_model.ts";
import {
  exactBilinearBackward,
  type ExactGradient,
  fallbackScaleH,
} from "../support/exact_bilinear.ts";
import { soc5hdFromIni } from "../support/resize5hd_model.ts";
import { socInfo } from "../../src/rules/generation.ts";

const SOC = configuredEmulationSoc();
const GENERATION = generationOfSoc(SOC).generation;
const ROUTED = GENERATION === "a2" || GENERATION === "910" || GENERATION === "310p";
const IGNORE = EMULATED_LANE.ignore !== undefined || !ROUTED;
const SEEDS = 8;

/** One bilinear call: image H x W, gradient H x W. */
interface Case {
  readonly name: string;
  readonly inHW: readonly [number, number];
  readonly outHW: readonly [number, number];
  readonly alignCorners?: boolean;
  readonly scales?: readonly [number, number];
  readonly nc?: readonly [number, number];
}

// Together their passes reach tiling modes 4, 5 (910/310P), 6 and windowed 6 on every family.
const CASES: readonly Case[] = [
  { name: "64x64 <- 128x128", inHW: [64, 64], outHW: [128, 128], nc: [1, 3] },
  { name: "one scale", inHW: [64, 64], outHW: [128, 128], scales: [2, 0] },
  { name: "W pass in mode 4", inHW: [100, 30], outHW: [10, 90] },
  { name: "windowed rows", inHW: [5, 2100], outHW: [3, 2500] },
  { name: "align corners", inHW: [33, 47], outHW: [70, 65], alignCorners: true },
  { name: "W unchanged: one pass", inHW: [20, 48], outHW: [60, 48] },
  { name: "one column", inHW: [2000, 1], outHW: [3000, 1] },
];

function sizes(c: Case): { inputSize: number[]; outputSize: number[] } {
  return { inputSize: [...(c.nc ?? [1, 2]), ...c.inHW], outputSize: [...c.outHW] };
}

// On A2/A3 V2 runs its own kernel unless it falls back: a scale on one dimension only makes it.
function scalesOf(c: Case): readonly [number, number] {
  if (c.scales !== undefined || GENERATION !== "a2") return c.scales ?? [0, 0];
  return [fallbackScaleH(c.inHW[0], c.outHW[0]), 0];
}

function options(
  c: Case,
  deterministic: boolean,
): Parameters<typeof upsampleBilinear2dBackward>[1] {
  const [scalesH, scalesW] = scalesOf(c);
  return { ...sizes(c), alignCorners: c.alignCorners ?? false, scalesH, scalesW, deterministic };
}

/** Random values in (-1, 1): their partial sums round, so an order dependence would show. */
function gradient(c: Case, seed: number): Float32Array {
  const { inputSize, outputSize } = sizes(c);
  const random = seededRandom(seed);
  const count = inputSize[0] * inputSize[1] * outputSize[0] * outputSize[1];
  return Float32Array.from({ length: count }, () => random() * 2 - 1);
}

function openNpu(libDir = EMU_DIR): Device {
  return Device.open({ backend: "npu", libDir });
}

// On A2/A3 also a toolkit with V1 only (bilinear's every different-size call is the TBE kernel).
const TOOLKITS: ReadonlyArray<readonly [string, string]> = GENERATION === "a2"
  ? [["V2", EMU_DIR], ["V1 only", EMU_NO_V2_DIR]]
  : [["", EMU_DIR]];

async function runOn(
  device: Device,
  c: Case,
  values: Float32Array,
  dtype: DType,
  deterministic: boolean,
): Promise<Float32Array> {
  const { inputSize, outputSize } = sizes(c);
  using grad = device.tensor(values, [inputSize[0], inputSize[1], ...outputSize], { dtype });
  using result = upsampleBilinear2dBackward(grad, options(c, deterministic));
  return await result.toFloat32Array();
}

function routeOf(
  c: Case,
  dtype: DType,
): NonNullable<ReturnType<typeof deterministicRoute>["route"]> {
  if (GENERATION === "950") throw new Error("no route on the 950");
  const { inputSize, outputSize } = sizes(c);
  const call = {
    op: "bilinear2d" as const,
    dtype,
    inputSize,
    outputSize,
    scales: [0, 0],
    alignCorners: c.alignCorners ?? false,
  };
  const { route } = deterministicRoute(call, GENERATION, false);
  assert.ok(route !== null, `${c.name}: no route`);
  return route;
}

function bits(values: Float32Array): string {
  return Array.from(new Uint32Array(values.buffer), (b, i) => Number.isNaN(values[i]) ? "n" : b)
    .join(",");
}

// The exact gradient (float64 sums of the kernel's float32 weights) and the sum of |terms| per cell.
function exact(c: Case, g: Float32Array): ExactGradient {
  const { inputSize } = sizes(c);
  const planes = inputSize[0] * inputSize[1];
  return exactBilinearBackward(g, planes, c.inHW, c.outHW, c.alignCorners ?? false);
}

// bfloat16 runs on A2/A3 through V2 only (V1 and the 910/310P refuse it).
const RUNS = TOOLKITS.flatMap(([toolkit, libDir]) =>
  (["float32", "float16", ...(toolkit === "V2" ? ["bfloat16"] : [])] as DType[]).map((dtype) => ({
    toolkit,
    libDir,
    dtype,
  }))
);

for (const { toolkit, libDir, dtype } of RUNS) {
  Deno.test({
    name: `route emulation: ${dtype} on ${SOC} ${toolkit}: one bit pattern over ${SEEDS} seeds, ` +
      `the reference's`,
    ignore: IGNORE,
    async fn(t): Promise<void> {
      using npu = openNpu(libDir);
      using reference = Device.open({ backend: "cpu", numerics: "device", soc: SOC });
      const info = socInfo(SOC)!;
      const soc5hd = soc5hdFromIni(SOC, info.shortSoc, info.ubSize, info.aiCoreCount);
      for (const c of CASES) {
        await t.step(c.name, async () => {
          const route = routeOf(c, dtype);
          // The values are exact in every dtype: multiples of 2^-8 in (-1, 1).
          const values = gradient(c, 7).map((v) => Math.round(v * 256) / 256);
          const patterns = new Set<string>();
          let result: Float32Array = new Float32Array(0);
          for (let seed = 1; seed <= SEEDS; seed++) {
            emu().aclemuResetFaults();
            emuSetAtomicSeed(BigInt(seed));
            const counts = route.kernels.map((k) => emuKernelLaunches(k));
            result = await runOn(npu, c, values, dtype, true);
            for (const [i, kernel] of route.kernels.entries()) {
              const launched = emuKernelLaunches(kernel) - counts[i];
              const expected = route.kernels.filter((k) => k === kernel).length;
              assert.equal(launched, expected, `${c.name}: launches of ${kernel}`);
            }
            assert.equal(emuLastKernel(), route.kernels.at(-1));
            patterns.add(bits(result));
          }
          assert.equal(patterns.size, 1, `${c.name}: ${patterns.size} bit patterns`);
          const cpu = await runOn(reference, c, values, dtype, true);
          assertBitEqual(result, cpu, `${c.name}: emulation vs CPU device reference`);
          const { inputSize, outputSize } = sizes(c);
          const model = routeModel(
            values,
            {
              N: inputSize[0],
              C: inputSize[1],
              inH: inputSize[2],
              inW: inputSize[3],
              outH: outputSize[0],
              outW: outputSize[1],
              alignCorners: c.alignCorners ?? false,
            },
            soc5hd,
            { fma: false, seed: 3, dtype },
          );
          assertBitEqual(result, model.values, `${c.name}: emulation vs the independent model`);
          // Each pass sums at most ceil(out / in) + 2 terms per cell into float32, then the other
          // pass as many again; one more rounding to the dtype.
          const chain = Math.ceil(outputSize[0] / inputSize[2]) +
            Math.ceil(outputSize[1] / inputSize[3]) + 6;
          const cast = dtype === "float16" ? 2 ** -11 : dtype === "bfloat16" ? 2 ** -8 : 0;
          const { value, magnitude } = exact(c, values);
          for (let i = 0; i < value.length; i++) {
            const bound = magnitude[i] * chain * 2 ** -24 + Math.abs(value[i]) * cast + 1e-30;
            assert.ok(
              Math.abs(result[i] - value[i]) <= bound,
              `${c.name}: cell ${i}: ${result[i]} vs exact ${value[i]} (bound ${bound})`,
            );
          }
        });
      }
    },
  });
}

Deno.test({
  name: `route emulation: deterministic off still runs the single order-dependent launch on ${SOC}`,
  ignore: IGNORE,
  async fn(): Promise<void> {
    using npu = openNpu();
    const c: Case = { name: "16x400 -> 8x200", inHW: [8, 200], outHW: [16, 400], nc: [1, 1] };
    const values = gradient(c, 11);
    const patterns = new Set<string>();
    for (let seed = 1; seed <= SEEDS; seed++) {
      emu().aclemuResetFaults();
      emuSetAtomicSeed(BigInt(seed));
      const launches = emu().aclemuLaunchCount();
      patterns.add(bits(await runOn(npu, c, values, "float32", false)));
      assert.equal(emu().aclemuLaunchCount() - launches, 1n);
      assert.match(emuLastKernel(), /ResizeBilinearV2Grad5HD\.MODE[56]/);
    }
    assert.ok(patterns.size >= 2, `${patterns.size} bit pattern(s) without deterministic mode`);
  },
});

Deno.test({
  name: `route emulation: intermediates counted, freed, refused up front on ${SOC}`,
  ignore: IGNORE,
  async fn(): Promise<void> {
    using npu = openNpu();
    const c = CASES[0];
    const route = routeOf(c, "float16");
    assert.equal(route.intermediateBytes, 4 * 3 * (128 * 64 + 128 * 128 + 64 * 64));
    const { inputSize, outputSize } = sizes(c);
    using grad = npu.tensor(gradient(c, 5), [1, 3, ...outputSize], { dtype: "float16" });
    using out = npu.zeros(inputSize, { dtype: "float16" });
    await npu.synchronize();
    emu().aclemuResetFaults();
    const before = emu().aclemuLiveBytes();
    // Queued behind a slow stream, the intermediates are still held after the call returns.
    emu().aclemuSetStreamDelayUs(20000n);
    upsampleBilinear2dBackward(grad, { ...options(c, true), out });
    assert.equal(emu().aclemuLiveBytes() - before, BigInt(route.intermediateBytes));
    await npu.synchronize();
    assert.equal(emu().aclemuLiveBytes(), before);
    assert.equal(emu().aclemuReferencedFrees(), 0n);
    emu().aclemuSetStreamDelayUs(0n);
    // Too little free memory: refused with the bytes, nothing allocated or launched.
    const allocations = emu().aclemuLiveAllocations();
    const launches = emu().aclemuLaunchCount();
    emu().aclemuSetDeviceMemory(before + BigInt(route.intermediateBytes) - 1n);
    try {
      assert.throws(
        () => upsampleBilinear2dBackward(grad, { ...options(c, true), out }),
        (e: unknown) =>
          e instanceof RangeError &&
          e.message.includes(`needs ${route.intermediateBytes} bytes of device memory`),
      );
    } finally {
      emu().aclemuSetDeviceMemory(0n);
    }
    assert.equal(emu().aclemuLiveAllocations(), allocations);
    assert.equal(emu().aclemuLaunchCount(), launches);
  },
});

type Fn = (...args: unknown[]) => unknown;

// Makes the `nth` call of an opapi phase 2 fail at the emulation (its executor still freed there).
function failNth(device: Device, name: string, nth: number): () => void {
  const backend = deviceInternals(device).backend() as unknown as NpuBackend;
  const table = backend.runtime.libs.opapi as unknown as Record<string, Fn>;
  const original = table[name];
  let calls = 0;
  table[name] = (...args: unknown[]): unknown => {
    if (++calls === nth) emu().aclemuFailNextLaunch(507015);
    return original(...args);
  };
  return () => void (table[name] = original);
}

Deno.test({
  name: `route emulation: a fault in either pass leaks nothing and leaves out untouched on ${SOC}`,
  ignore: IGNORE,
  async fn(t): Promise<void> {
    using npu = openNpu();
    const c = CASES[0];
    const { inputSize, outputSize } = sizes(c);
    for (const pass of [1, 2]) {
      await t.step(`pass ${pass}`, async () => {
        await npu.synchronize();
        emu().aclemuResetFaults();
        const allocations = emu().aclemuLiveAllocations();
        const objects = emu().aclemuLiveObjects();
        {
          using grad = npu.tensor(gradient(c, 9), [1, 3, ...outputSize]);
          using out = npu.tensor(new Float32Array(3 * 64 * 64).fill(7), inputSize);
          const restore = failNth(npu, "aclnnUpsampleBilinear2dBackward", pass);
          let error: unknown = null;
          try {
            upsampleBilinear2dBackward(grad, { ...options(c, true), out });
          } catch (e) {
            error = e;
          } finally {
            restore();
          }
          assert.ok(error instanceof AclError && error.code === 507015, String(error));
          await npu.synchronize();
          assert.equal(emu().aclemuReferencedFrees(), 0n);
          const values = await out.toFloat32Array();
          assert.ok(values.every((v) => v === 7), "out was written");
          // The device still works: the same call succeeds.
          using _ok: Tensor = upsampleBilinear2dBackward(grad, options(c, true));
        }
        await npu.synchronize();
        // Everything the route made is gone with the tensors of the call.
        assert.equal(emu().aclemuLiveAllocations(), allocations);
        assert.equal(emu().aclemuLiveObjects(), objects);
      });
    }
  },
});

Deno.test({
  name: `route emulation: an infinite gradient gives the route's NaN set on ${SOC}`,
  ignore: IGNORE,
  async fn(): Promise<void> {
    using npu = openNpu();
    using reference = Device.open({ backend: "cpu", numerics: "device", soc: SOC });
    const c = CASES[0];
    const values = gradient(c, 13);
    for (const at of [0, 77 * 128 + 5, values.length - 1]) values[at] = Infinity;
    const route = await runOn(npu, c, values, "float32", true);
    assertBitEqual(route, await runOn(reference, c, values, "float32", true), "vs reference");
    const single = await runOn(npu, c, values, "float32", false);
    // The zero-weight neighbour row and column of each pass make inf * 0 = NaN: the route's
    // non-finite cells include the single launch's, and every extra one is NaN.
    for (let i = 0; i < route.length; i++) {
      if (!Number.isFinite(single[i])) assert.ok(!Number.isFinite(route[i]), `cell ${i}`);
      else if (!Number.isFinite(route[i])) assert.ok(Number.isNaN(route[i]), `cell ${i}`);
    }
    const extra = route.filter((v, i) => Number.isNaN(v) && Number.isFinite(single[i])).length;
    assert.ok(extra > 0, "the route's zero-weight terms add NaN cells");
  },
});

Deno.test({
  name: `route emulation: contracted (ACLEMU_TBE_FMA) equals the reference's tbeFma on ${SOC}`,
  ignore: IGNORE,
  async fn(): Promise<void> {
    using npu = openNpu();
    using reference = Device.open({ backend: "cpu", numerics: "device", soc: SOC, tbeFma: true });
    using rounding = Device.open({ backend: "cpu", numerics: "device", soc: SOC });
    let differs = 0;
    try {
      for (const c of CASES) {
        emu().aclemuResetFaults();
        emuSetTbeFma(1);
        const values = gradient(c, 17);
        const result = await runOn(npu, c, values, "float32", true);
        assertBitEqual(result, await runOn(reference, c, values, "float32", true), c.name);
        if (bits(result) !== bits(await runOn(rounding, c, values, "float32", true))) differs++;
      }
    } finally {
      emuSetTbeFma(-1);
    }
    assert.ok(differs > 0, "the contraction changed no result: the comparison shows nothing");
  },
});
