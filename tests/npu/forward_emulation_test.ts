// The forward ops on the emulated NPU, per family (the lane's ACLEMU_SOC: A2/A3 by default, the 950,
// 910 and 310P lanes of .ci/run): the kernel the device reference plans is the one the emulation
// launched; the NPU's result equals the CPU device reference's bit for bit and the independent
// model's (tests/support/forward_model.ts); what the family refuses is refused before anything is
// allocated; the adjoint check passes on the device, its exceptions are the device reference's
// own, and it catches a planted index shift, another family's backward and PyTorch's forward.

import assert from "node:assert/strict";
import { Device, upsampleBilinear2d } from "../../mod.ts";
import { generationOfSoc } from "../../src/rules/generation.ts";
import { forwardPlan, forwardRefusal } from "../../src/rules/forward_device.ts";
import type { UpsampleParams } from "../../src/rules/ops.ts";
import { adjointPair, forward } from "../../cli/verify/adjoint.ts";
import { makeCases, seededRandom } from "../../cli/verify/cases.ts";
import {
  assertBitEqual,
  configuredEmulationSoc,
  emu,
  EMU_DIR,
  emuLastKernel,
  EMULATED_LANE,
  emuLive,
  makeView,
} from "../support/helpers.ts";
import { forwardModel } from "../support/forward_model.ts";

const SOC = configuredEmulationSoc();
const GENERATION = generationOfSoc(SOC).generation;
const IGNORE = EMULATED_LANE.ignore !== undefined;

const CONTROLS = {
  aclemuSetForwardShiftFault: { parameters: ["i32"], result: "void" },
} as const satisfies Deno.ForeignLibraryInterface;

function openNpu(): Device {
  return Device.open({ backend: "npu", libDir: EMU_DIR });
}

async function forwardOn(
  device: Device,
  call: UpsampleParams,
  x: Float32Array,
): Promise<Float32Array> {
  using input = device.tensor(x, call.inputSize, { dtype: call.dtype });
  using y = forward(input, call);
  return await y.toFloat32Array();
}

/** Values exact in every dtype, finite and nonzero (the model copies -0 where the 310P adds 0). */
function input(call: UpsampleParams, seed: number): Float32Array {
  const random = seededRandom(seed);
  const count = call.inputSize.reduce((a, b) => a * b, 1);
  return Float32Array.from({ length: count }, () => {
    const v = (1 + Math.floor(random() * 255)) / 64;
    return random() < 0.5 ? -v : v;
  });
}

const bilinear = (inputSize: number[], outputSize: number[]): UpsampleParams => ({
  op: "bilinear2d",
  dtype: "float32",
  inputSize,
  outputSize,
  scales: [0, 0],
  alignCorners: false,
});

// Seeded forward calls of every op, dtype and shape class verify draws, and the copy, broadcast and
// small-plane (TBE NC) paths; the family's refusals out.
function cases(count: number, seed: number): UpsampleParams[] {
  const fixed = [
    bilinear([32, 1, 5, 7], [9, 11]),
    bilinear([1, 2, 1, 1], [4, 5]),
    bilinear([1, 2, 6, 6], [6, 6]),
    { ...bilinear([1, 2, 6, 6], [6, 12]), op: "nearestExact2d" as const, scales: [0, 2] },
  ];
  return [...makeCases(count, seed, ["float32", "float16", "bfloat16"]), ...fixed].filter((c) =>
    c.inputSize[0] * c.inputSize[1] > 0 && forwardRefusal(c, GENERATION) === null
  );
}

Deno.test({
  name: `forward emulation on ${SOC}: the planned kernel, the reference's bits, the model's values`,
  ignore: IGNORE,
  async fn(): Promise<void> {
    using npu = openNpu();
    using reference = Device.open({ backend: "cpu", numerics: "device", soc: SOC });
    const kernels = new Set<string>();
    for (const [k, call] of cases(60, 11).entries()) {
      const x = input(call, k);
      emu().aclemuResetFaults();
      const result = await forwardOn(npu, call, x);
      const plan = forwardPlan(call, {
        generation: GENERATION,
        bilinearApi: "v2",
        fma: true,
        soc: SOC,
      });
      assert.equal(emuLastKernel(), plan.kernel, JSON.stringify(call));
      kernels.add(plan.kernel);
      assertBitEqual(
        result,
        await forwardOn(reference, call, x),
        `${JSON.stringify(call)} reference`,
      );
      // The emulation's defaults: ACLEMU_FMA on (950, A2/A3's Cube), ACLEMU_TBE_FMA off (TBE).
      const fma = !plan.kernel.startsWith("ResizeBilinearV2_5HD");
      const model = forwardModel(x, { ...call, family: GENERATION }, { fma });
      // The model reads the L1 path's edge column differently: only an exact zero's sign may differ.
      const differs = result.findIndex((v, i) =>
        !(v === model.values[i] || v !== v && model.values[i] !== model.values[i])
      );
      assert.equal(differs, -1, `${JSON.stringify(call)} model: element ${differs}`);
    }
    assert.ok(kernels.size >= 3, `kernels seen: ${[...kernels]}`);
  },
});

Deno.test({
  name: `forward emulation on ${SOC}: what the family refuses is refused before allocating`,
  ignore: IGNORE,
  fn(): void {
    using npu = openNpu();
    const refused: UpsampleParams[] = [
      {
        op: "nearestExact2d",
        dtype: "bfloat16",
        inputSize: [1, 2, 4, 4],
        outputSize: [8, 8],
        scales: [0, 0],
        alignCorners: false,
      },
      {
        op: "nearestExact1d",
        dtype: "float32",
        inputSize: [1, 2, 4],
        outputSize: [8],
        scales: [0],
        alignCorners: false,
      },
    ].filter((call) =>
      forwardRefusal(call as UpsampleParams, GENERATION) !== null
    ) as UpsampleParams[];
    if (GENERATION === "910") assert.equal(refused.length, 2);
    if (GENERATION === "310p") assert.equal(refused.length, 1);
    for (const call of refused) {
      using x = npu.zeros(call.inputSize, { dtype: call.dtype });
      const before = emuLive();
      assert.throws(() => forward(x, call), TypeError);
      assert.deepEqual(emuLive(), before);
    }
  },
});

Deno.test({
  name:
    `forward emulation on ${SOC}: the adjoint check, its device facts, and three planted faults`,
  ignore: IGNORE,
  async fn(t): Promise<void> {
    // Its pairs meet the family's adjoint gaps on purpose (ACLNN_UPSAMPLE_ADJOINT_GAP): quiet.
    using npu = Device.open({
      backend: "npu",
      libDir: EMU_DIR,
      warnings: { ADJOINT_GAP: "ignore" },
    });
    using reference = Device.open({ backend: "cpu", numerics: "device", soc: SOC });
    const pairs = makeCases(40, 5, ["float32", "float16"]).filter((c) =>
      forwardRefusal(c, GENERATION) === null &&
      (GENERATION === "a2" || GENERATION === "950" || c.op === "bilinear2d")
    );
    await t.step("on the device: within the bound, or the reference breaks it too", async () => {
      let facts = 0;
      for (const [k, call] of pairs.entries()) {
        const onNpu = await adjointPair(npu, npu, call, k);
        if (onNpu.ratio <= 1) continue;
        facts++;
        const onReference = await adjointPair(reference, reference, call, k);
        assert.ok(onReference.ratio > 1, `${JSON.stringify(call)}: ${onNpu.ratio} on the NPU only`);
      }
      // Nearest-exact's forward floors (o + 0.5) * s, its backward gathers ranges: ties differ.
      if (GENERATION === "a2" || GENERATION === "950") assert.ok(facts > 0, "no tie met");
    });
    const nearest = pairs.filter((c) => c.op !== "bilinear2d");
    await t.step("a forward index shifted by one cell (ACLEMU_FORWARD_SHIFT_FAULT)", async () => {
      if (nearest.length === 0) return; // the 910 and 310P run no nearest-exact backward
      const controls = Deno.dlopen(`${EMU_DIR}libascendcl.so`, CONTROLS);
      try {
        controls.symbols.aclemuSetForwardShiftFault(1);
        let caught = 0;
        for (const [k, call] of nearest.entries()) {
          if ((await adjointPair(npu, npu, call, k)).ratio <= 1) continue;
          if ((await adjointPair(reference, reference, call, k)).ratio <= 1) caught++;
        }
        assert.ok(caught > 0, "the shifted forward went unnoticed");
      } finally {
        controls.symbols.aclemuSetForwardShiftFault(-1);
        controls.close();
      }
    });
    await t.step(
      "another family's backward, and PyTorch's forward, break the identity",
      async () => {
        const other = GENERATION === "950" ? "Ascend910B3" : "Ascend950PR_9599";
        using otherReference = Device.open({ backend: "cpu", numerics: "device", soc: other });
        using pytorch = Device.open({ backend: "cpu" });
        const broken = async (forward: Device, backward: Device): Promise<number> => {
          let count = 0;
          for (const [k, call] of pairs.entries()) {
            try {
              if ((await adjointPair(forward, backward, call, k)).ratio > 1) count++;
            } catch (error) {
              if (!(error instanceof TypeError || error instanceof RangeError)) throw error;
            }
          }
          return count;
        };
        assert.ok(await broken(npu, otherReference) > 0, `${SOC} forward with ${other} backward`);
        if (GENERATION === "a2") assert.ok(await broken(pytorch, npu) > 0, "PyTorch's forward");
      },
    );
  },
});

Deno.test({
  name: `forward emulation on ${SOC}: strided views in and out give the contiguous bits`,
  ignore: IGNORE,
  async fn(): Promise<void> {
    using npu = openNpu();
    const call = bilinear([2, 3, 9, 7], [13, 5]);
    const x = input(call, 3);
    const expected = await forwardOn(npu, call, x);
    for (const layout of ["transposed", "offset", "channelsLast"] as const) {
      using view = makeView(npu, x, call.inputSize, "float32", layout);
      using out = makeView(npu, new Float32Array(2 * 3 * 13 * 5), [2, 3, 13, 5], "float32", layout);
      using y = upsampleBilinear2d(view, { outputSize: call.outputSize, out });
      assert.equal(y, out);
      assertBitEqual(await y.toFloat32Array(), expected, layout);
    }
  },
});
