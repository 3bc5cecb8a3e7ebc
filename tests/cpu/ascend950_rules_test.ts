// The Ascend 950 rules (src/rules/ascend950_*.ts) and their device reference: SoC -> generation,
// the bilinear kernel route of each case, the contraction (FMA) case of nearest-exact, the 1e-8
// copy rule, scale routing unlike A2, both CPU kernel sets agreeing bit for bit on the 950
// reference, the A2 reference unchanged by the 950 options, and the option errors.

import assert from "node:assert/strict";
import {
  Device,
  type DType,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { generationOfSoc } from "../../src/rules/generation.ts";
import { fmaF32 } from "../../src/rules/float32.ts";
import { nearestCopies950, nearestStarts950 } from "../../src/rules/ascend950_nearest.ts";
import { gatherEntries950, linearTable950 } from "../../src/rules/ascend950_bilinear.ts";
import { bilinearRoute950, scale950 } from "../../src/rules/ascend950_route.ts";
import { bilinearRoute } from "../../src/rules/ascend_a2.ts";
import { ascendCall } from "../../src/rules/numerics.ts";
import { compareWithDevice, deviceBounds } from "../../src/rules/bound.ts";

const SOC_950 = "Ascend950PR_9599";

function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("generationOfSoc maps SoC names through CANN's table, assuming A2/A3 for unknown ones", () => {
  assert.deepEqual(
    ["Ascend910B3", "Ascend910B4-1", "Ascend910_9391", "Ascend950PR_9599", "Ascend950DT_9591"]
      .map((soc) => generationOfSoc(soc).generation),
    ["a2", "a2", "a2", "950", "950"],
  );
  for (const soc of [null, undefined, "", "Ascend999", "Ascend910C"]) {
    const g = generationOfSoc(soc);
    assert.equal(g.generation, "a2");
    assert.equal(g.known, false);
    assert.match(g.reason, /assumed/);
  }
  assert.equal(generationOfSoc("Ascend950PR_9599").known, true);
});

Deno.test("fmaF32 rounds once, ties included", () => {
  const s = Math.fround(1 / 6);
  assert.equal(Math.fround(Math.fround(3 * s) - 0.5), 0);
  assert.equal(fmaF32(3, s, -0.5), 3 * s - 0.5); // exact in double, a float32 value
  // A double sum exactly halfway between two float32 values although the exact sum is not.
  const a = Math.fround(2 ** -18 * (1 + 2 ** -23)), b = Math.fround(1 - 2 ** -23);
  const c = Math.fround(64 + 2 ** -17);
  assert.equal(fmaF32(a, b, c), 64 + 2 ** -17);
  assert.equal(Math.fround(a * b + c), 64 + 2 ** -16); // rounding the double sum: wrong
});

Deno.test("950 nearest-exact: 6 -> 1 goes to input 3 without contraction, 2 with", async () => {
  assert.deepEqual([...nearestStarts950(6, 1, 0, false)], [0, 0, 0, 0, 1, 1, 1]);
  assert.deepEqual([...nearestStarts950(6, 1, 0, true)], [0, 0, 0, 1, 1, 1, 1]);
  for (const [ascendFma, hot] of [[false, 3], [true, 2]] as const) {
    for (const cpuKernels of ["auto", "typescript"] as const) {
      using device = Device.open({
        backend: "cpu",
        numerics: "device",
        soc: SOC_950,
        ascendFma,
        cpuKernels,
        threads: 1,
      });
      using grad = device.tensor([1], [1, 1, 1]);
      using result = upsampleNearestExact1dBackward(grad, {
        outputSize: [1],
        inputSize: [1, 1, 6],
      });
      const expected = [0, 0, 0, 0, 0, 0];
      expected[hot] = 1;
      assert.deepEqual([...await result.toFloat32Array()], expected, `${cpuKernels} ${ascendFma}`);
    }
  }
});

Deno.test("950 nearest-exact: the 1e-8 copy rule, and no 1e-6 skip as on A2", async () => {
  assert.equal(nearestCopies950([1, 1, 4, 4], [4, 4], [0, 0]), true);
  assert.equal(nearestCopies950([1, 1, 4, 4], [4, 4], [1, 1]), true);
  assert.equal(nearestCopies950([1, 1, 4, 4], [4, 4], [1.0000001, 0]), false);
  assert.equal(nearestCopies950([1, 1, 4], [8], [0]), false);
  // A2 skips a pass with a scale within 1e-6 of 1 and refuses 10 -> 9 at 0.9999999; the 950
  // gathers: input 9 owns no output.
  assert.deepEqual([...nearestStarts950(10, 9, 0.9999999, true)], [
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    9,
  ]);
  const options = { outputSize: [9], inputSize: [1, 1, 10], scales: 0.9999999 };
  {
    using a2 = Device.open({ backend: "cpu", numerics: "device" });
    using grad = a2.tensor(new Array(9).fill(1), [1, 1, 9]);
    assert.throws(() => upsampleNearestExact1dBackward(grad, options), /within 1e-6 of 1/);
  }
  using d950 = Device.open({ backend: "cpu", numerics: "device", soc: SOC_950 });
  using grad = d950.tensor(new Array(9).fill(1), [1, 1, 9]);
  using result = upsampleNearestExact1dBackward(grad, options);
  assert.deepEqual([...await result.toFloat32Array()], [1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
});

const call = (
  inputSize: number[],
  outputSize: number[],
  scales: number[],
  alignCorners = false,
  dtype: DType = "float32",
) => ({ op: "bilinear2d" as const, dtype, inputSize, outputSize, scales, alignCorners });

Deno.test("950 bilinear: the kernel of each case", () => {
  const route = (c: ReturnType<typeof call>, deterministic: boolean, more = {}) =>
    bilinearRoute950(c, { deterministic, ...more }).kernel;
  // Equal sizes: a copy, scales and alignCorners ignored, flag or not.
  assert.equal(route(call([1, 1, 3, 3], [3, 3], [1.3, 0]), false), "all-copy");
  assert.equal(route(call([1, 1, 3, 3], [3, 3], [0, 0], true), true), "all-copy");
  // Downsampling, flag off: the atomic scatter; on: DETERMINE (scales are the size ratio).
  assert.equal(route(call([1, 1, 8, 8], [4, 4], [0, 0]), false), "simt");
  assert.equal(route(call([1, 1, 8, 8], [4, 4], [0, 0]), true), "determine");
  assert.equal(route(call([1, 1, 8, 8], [4, 4], [0, 0], true), true), "determine");
  // A dimension upsampled: a gather even without the flag.
  assert.equal(route(call([1, 1, 4, 8], [8, 4], [0, 0]), false), "determine");
  assert.equal(route(call([1, 1, 4, 4], [8, 8], [0, 0], true), false), "determine");
  // A scale that is not the size ratio: DETERMINE_SCALES.
  assert.equal(route(call([1, 1, 7, 7], [11, 11], [1.7, 0]), false), "determine-scales");
  assert.equal(route(call([1, 1, 10, 10], [3, 3], [0.35, 0.35]), true), "determine-scales");
  assert.equal(route(call([1, 1, 10, 10], [3, 3], [0.35, 0.35]), false), "simt");
  // 1.0f / 0.3f is within 1e-6 of 10 / 3: DETERMINE.
  assert.equal(route(call([1, 1, 10, 10], [3, 3], [0.3, 0.3]), true), "determine");
  // Mixed dtypes (V1 only): the gathers, whatever the flag.
  const mixed = { api: "v1", gradDtype: "float32", outDtype: "float16" } as const;
  assert.equal(route(call([1, 1, 8, 8], [4, 4], [0, 0]), false, mixed), "determine");
  // NHWC only (the C emulation): wide C.
  const nhwc = call([1, 64, 8, 8], [4, 4], [0, 0]);
  assert.equal(route(nhwc, false, { format: "NHWC" }), "c-parallel");
  assert.equal(
    route(call([1, 64, 12, 12], [4, 4], [0, 0]), false, { format: "NHWC" }),
    "point-copy",
  );
  assert.equal(route(nhwc, true, { format: "NHWC" }), "determine");
  assert.equal(
    bilinearRoute950(call([1, 1, 8, 8], [4, 4], [0, 0]), { deterministic: false })
      .atomic,
    true,
  );
});

Deno.test("950 bilinear: scale routing unlike A2", () => {
  // A scale on one dimension only: A2 drops both (ResizeBilinearV2Grad from the sizes); the 950
  // uses it (DETERMINE_SCALES: 1.0f / scale on H, the size ratio on W).
  const one = call([1, 1, 4, 4], [8, 8], [2.5, 0]);
  assert.deepEqual(bilinearRoute(one, "v2"), { kernel: "sizes", scales: [0, 0] });
  const r = bilinearRoute950(one, { deterministic: false });
  assert.equal(r.kernel, "determine-scales");
  assert.deepEqual(r.scales, [Math.fround(1 / Math.fround(2.5)), 0.5]);
  // in 7, scale 1.7, out 11: the 950's scale is 1.0f / 1.7f, not (float)(1.0 / 1.7).
  assert.equal(scale950(7, 11, false, 1.7, true), Math.fround(1 / Math.fround(1.7)));
  assert.notEqual(Math.fround(1 / Math.fround(1.7)), Math.fround(1 / 1.7));
  const seven = call([1, 1, 7, 7], [11, 11], [1.7, 1.7]);
  assert.equal(bilinearRoute(seven, "v2").kernel, "kernel");
  assert.equal(bilinearRoute950(seven, { deterministic: true }).kernel, "determine-scales");
  // V1 uses the scales on the 950 too (A2's V1 never does).
  assert.equal(
    bilinearRoute950(one, { api: "v1", deterministic: false }).kernel,
    "determine-scales",
  );
  assert.equal(bilinearRoute(one, "v1").kernel, "sizes");
  // The rewrite names the kernel and the contraction.
  const rewritten = ascendCall({ ...one, deterministic: false, rule: undefined }, {
    generation: "950",
    bilinearApi: "v2",
    fma: false,
  });
  assert.equal(rewritten.rule, "ascend950-determine-scales");
  assert.deepEqual(rewritten.scales, [2.5, 0]);
});

Deno.test("950 bilinear: gather tables hold each output's weights per cell", () => {
  // 2 -> 4 (DETERMINE): outputs at -0.25, 0.25, 0.75, 1.25 (clamped to [0, 1]).
  const t = linearTable950(2, 4, false, 0, "determine", false);
  assert.deepEqual([...t.i0], [0, 0, 0, 1]);
  assert.deepEqual([...t.l0], [1, 0.75, 0.25, 1]);
  assert.deepEqual([...t.l1], [0, 0.25, 0.75, 0]);
  // Tables stay in the shape both kernel sets need: i0 never decreases, i1 in {i0, i0 + 1},
  // and i1 === i0 only with l1 === 0 or at the last cell; dropped entries are within rounding of 0.
  for (let inSize = 1; inSize <= 24; inSize++) {
    for (const outSize of [1, 2, 3, 5, 8, 13, 31, 64, 100]) {
      for (const kernel of ["determine", "determine-scales"] as const) {
        for (const fma of [false, true]) {
          for (const alignCorners of [false, true]) {
            const table = linearTable950(inSize, outSize, alignCorners, 0, kernel, fma);
            const entries = gatherEntries950(inSize, outSize, alignCorners, 0, kernel, fma);
            for (let o = 0; o < outSize; o++) {
              if (o > 0) assert.ok(table.i0[o] >= table.i0[o - 1]);
              const step = table.i1[o] - table.i0[o];
              assert.ok(step === 1 || (step === 0 && (table.l1[o] === 0 || o === outSize - 1)));
              for (const e of entries[o]) {
                if (e.cell !== table.i0[o] && e.cell !== table.i1[o]) {
                  assert.ok(Math.abs(e.weight) < 2 ** -24 * (inSize + 1) * 8, `${e.weight}`);
                }
              }
            }
          }
        }
      }
    }
  }
});

async function runBoth(
  soc: string | undefined,
  fn: (device: Device) => Tensor,
): Promise<Float32Array[]> {
  const results: Float32Array[] = [];
  for (const cpuKernels of ["auto", "typescript"] as const) {
    using device = Device.open({ backend: "cpu", numerics: "device", soc, cpuKernels, threads: 1 });
    using result = fn(device);
    results.push(await result.toFloat32Array());
  }
  return results;
}

Deno.test("950 reference: TypeScript and wasm kernels agree bit for bit", async () => {
  const random = seeded(950);
  const dtypes: DType[] = ["float32", "float16", "bfloat16"];
  for (let k = 0; k < 120; k++) {
    const dtype = dtypes[k % 3];
    const op = k % 4 === 0 ? "nearestExact1d" : k % 4 === 1 ? "nearestExact2d" : "bilinear2d";
    const spatial = op === "nearestExact1d" ? 1 : 2;
    const inputSize = [1 + (k % 2), 1 + (k % 5)];
    const outputSize: number[] = [];
    const scales: number[] = [];
    for (let d = 0; d < spatial; d++) {
      const input = 1 + Math.floor(random() * 9);
      const factor = [0.5, 1, 1.3, 1.7, 2, 3.5][Math.floor(random() * 6)];
      const output = Math.max(1, Math.floor(input * factor));
      inputSize.push(input);
      outputSize.push(output);
      scales.push(random() < 0.4 && Math.floor(input * factor) >= 1 ? factor : 0);
    }
    const alignCorners = op === "bilinear2d" && random() < 0.3;
    const deterministic = random() < 0.5;
    const count = inputSize[0] * inputSize[1] * outputSize.reduce((a, b) => a * b, 1);
    const values = Array.from(
      { length: count },
      () => (0.5 + random() / 2) * (random() < 0.5 ? -1 : 1),
    );
    const [wasm, ts] = await runBoth(SOC_950, (device) => {
      using grad = device.tensor(values, [inputSize[0], inputSize[1], ...outputSize], { dtype });
      if (op === "nearestExact1d") {
        return upsampleNearestExact1dBackward(grad, { outputSize, inputSize, scales: scales[0] });
      }
      const sized = {
        outputSize,
        inputSize,
        scalesH: scales[0],
        scalesW: scales[1],
        deterministic,
      };
      return op === "nearestExact2d"
        ? upsampleNearestExact2dBackward(grad, sized)
        : upsampleBilinear2dBackward(grad, { ...sized, alignCorners });
    });
    assert.deepEqual(wasm, ts, `${op} ${dtype} ${inputSize} -> ${outputSize} ${scales}`);
  }
});

Deno.test("A2 reference unchanged: soc Ascend910B3 equals the default", async () => {
  const values = Array.from({ length: 2 * 41 }, (_, i) => 0.5 + (i % 7) / 14);
  const [a, b] = await Promise.all(["Ascend910B3", undefined].map(async (soc) => {
    using device = Device.open({ backend: "cpu", numerics: "device", soc });
    assert.equal(device.generation, "a2");
    using grad = device.tensor(values, [1, 2, 41]);
    using result = upsampleNearestExact1dBackward(grad, { outputSize: [41], inputSize: [1, 2, 2] });
    return await result.toFloat32Array();
  }));
  assert.deepEqual(a, b);
  // in=2, out=41: output 20 goes to input 1 on A2 (and on the 950, same index rule).
  assert.equal(a[1], values.slice(20, 41).reduce((s, v) => Math.fround(s + v), 0));
});

Deno.test("950 bound: atomic 16-bit scatter allows m ulps, float32 stays tight", () => {
  // 8 -> 4 without the flag: the SIMT scatter, one term per result cell here.
  const down = call([1, 1, 8, 8], [4, 4], [0, 0]);
  const grad = new Float32Array(16).fill(1);
  const f32 = deviceBounds(down, grad, { generation: "950" });
  const f16 = deviceBounds({ ...down, dtype: "float16" }, grad, { generation: "950" });
  assert.ok(f32[0] < 2 ** -16);
  assert.equal(f16[0] - f32[0], 2 ** -10); // m = 1 ulp of float16 at S = 1
  // The deterministic gather of the same call is not atomic: no such term.
  const det = deviceBounds({ ...down, dtype: "float16" }, grad, {
    generation: "950",
    deterministic: true,
  });
  assert.ok(det[0] < 2 ** -10);
  const expected = new Float32Array(64).fill(0.25);
  const off = expected.map((v) => v + 2 ** -11);
  assert.equal(compareWithDevice(down, grad, off, expected, { generation: "950" }).ok, false);
  assert.equal(
    compareWithDevice({ ...down, dtype: "float16" }, grad, off, expected, { generation: "950" }).ok,
    true,
  );
});

Deno.test("Device.open soc / ascendFma: values, getters and errors", () => {
  {
    using device = Device.open({ backend: "cpu", numerics: "device", soc: SOC_950 });
    assert.equal(device.soc, SOC_950);
    assert.equal(device.generation, "950");
  }
  {
    using device = Device.open({ backend: "cpu", numerics: "device" });
    assert.equal(device.soc, undefined);
    assert.equal(device.generation, "a2");
  }
  {
    using device = Device.open({ backend: "cpu" });
    assert.equal(device.generation, undefined);
  }
  assert.throws(
    () => Device.open({ backend: "cpu", numerics: "device", soc: "Ascend999" }),
    (e: unknown) =>
      e instanceof RangeError && /soc "Ascend999" is not in CANN's platform table/.test(e.message),
  );
  assert.throws(
    () => Device.open({ backend: "cpu", numerics: "device", soc: "Ascend310B1" }),
    (e: unknown) =>
      e instanceof RangeError &&
      /Ascend310B1 \(NpuArch 3002, Ascend310B: Atlas 200I\/500 A2\) runs none/.test(e.message),
  );
  assert.throws(
    () => Device.open({ backend: "cpu", soc: SOC_950 }),
    (e: unknown) =>
      e instanceof TypeError && /soc .* needs backend "cpu" and numerics "device"/.test(e.message),
  );
  assert.throws(
    () => Device.open({ backend: "npu", numerics: "device", soc: SOC_950 }),
    /needs backend "cpu"/,
  );
  assert.throws(
    () => Device.open({ backend: "cpu", numerics: "device", soc: 950 as unknown as string }),
    /soc must be a SoC name string/,
  );
  // A2/A3 (also the default soc): ascendFma sets the forward Cube kernel's contraction.
  Device.open({ backend: "cpu", numerics: "device", ascendFma: true }).close();
  assert.throws(
    () => Device.open({ backend: "cpu", numerics: "device", soc: "Ascend910A", ascendFma: true }),
    (e: unknown) =>
      e instanceof TypeError &&
      /ascendFma true applies to the Ascend 950 rules and Atlas A2\/A3's forward Cube kernel only/
        .test(e.message),
  );
  assert.throws(
    () => Device.open({ backend: "cpu", numerics: "device", soc: SOC_950, tbeFma: true }),
    (e: unknown) => e instanceof TypeError && /tbeFma true applies to the TBE/.test(e.message),
  );
  assert.throws(
    () =>
      Device.open({
        backend: "cpu",
        numerics: "device",
        soc: SOC_950,
        ascendFma: 1 as unknown as boolean,
      }),
    /ascendFma must be a boolean/,
  );
});
