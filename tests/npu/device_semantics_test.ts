// The emulated NPU follows the device, the CPU backend PyTorch. On tie configurations (sizes and
// scales where the float32 index math of the Ascend kernel and of PyTorch disagree) the NPU must
// differ from the CPU default in exactly the cells the two models predict, and equal the device
// model; bilinear V2 with one scale ignores it on Atlas A2/A3 (both dims derived from the sizes) and
// uses it on the Ascend 950. The device model and reference are those of the generation the NPU
// reports (device.soc).

import assert from "node:assert/strict";
import {
  Device,
  type DType,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { assertMatchesDeviceOp, deviceModel } from "../support/device_model.ts";
import { arch35Model } from "../support/ascend950_model.ts";
import { deviceTarget } from "../support/device_match.ts";
import { assertBitEqual, assertClose, BACKENDS, roundTo } from "../support/helpers.ts";
import {
  referenceBilinear2dBackward,
  referenceNearestExactBackward,
} from "../support/reference.ts";

interface TieCase {
  readonly inputSize: number[];
  readonly outputSize: number[];
  readonly scales: number[];
}

const TIES: readonly TieCase[] = [
  { inputSize: [1, 1, 2], outputSize: [41], scales: [0] }, // output 20: input 1 on the device, 0 in PyTorch
  { inputSize: [1, 2, 27], outputSize: [8], scales: [0.3] }, // output 7: input 24 vs 25
  { inputSize: [2, 1, 2, 27], outputSize: [41, 8], scales: [0, 0.3] },
  { inputSize: [1, 1, 27, 2], outputSize: [8, 41], scales: [0.3, 20.5] },
];

/** Cells where two results differ (NaN equal to NaN). */
function differing(a: Float32Array, b: Float32Array): number[] {
  const cells: number[] = [];
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) cells.push(i);
  return cells;
}

// On every NPU lane: the emulation, and the CANN the library's search finds (a real device must show
// the same cells).
const NPU_LANES = BACKENDS.filter((lane) => lane.kind === "npu");
const DTYPES = ["float32", "float16", "bfloat16"] as const satisfies readonly DType[];

for (const [lane, dtype] of NPU_LANES.flatMap((lane) => DTYPES.map((d) => [lane, d] as const))) {
  lane.test(`device semantics on ${lane.label}: tie cases differ from the CPU in exactly the predicted cells (${dtype})`, async () => {
    using cpu = Device.open({ backend: "cpu" });
    using npu = lane.open();
    const target = deviceTarget(npu);
    for (const tie of TIES) {
      const twoD = tie.outputSize.length === 2;
      const gradShape = [tie.inputSize[0], tie.inputSize[1], ...tie.outputSize];
      const count = gradShape.reduce((a, b) => a * b, 1);
      // Small distinct integers: exact in every dtype, and every sum exact in float32.
      const values = Float32Array.from({ length: count }, (_, i) => (i % 61) + 1);
      const fn = twoD ? upsampleNearestExact2dBackward : upsampleNearestExact1dBackward;
      const options = twoD
        ? {
          outputSize: tie.outputSize,
          inputSize: tie.inputSize,
          scalesH: tie.scales[0],
          scalesW: tie.scales[1],
        }
        : { outputSize: tie.outputSize, inputSize: tie.inputSize, scales: tie.scales[0] };
      const run = async (device: Device): Promise<Float32Array> => {
        using grad = device.tensor(values, gradShape, { dtype });
        using result = twoD
          ? upsampleNearestExact2dBackward(grad, options)
          : upsampleNearestExact1dBackward(grad, options);
        return await result.toFloat32Array();
      };
      const onCpu = await run(cpu), onNpu = await run(npu);
      const what =
        `${dtype} inputSize [${tie.inputSize}] outputSize [${tie.outputSize}] scales [${tie.scales}]`;
      const pytorch = roundTo(
        dtype,
        referenceNearestExactBackward(values, tie.inputSize, tie.outputSize, tie.scales),
      );
      const c = {
        op: twoD ? "nearestExact2d" : "nearestExact1d",
        inputSize: tie.inputSize,
        outputSize: tie.outputSize,
        scales: tie.scales[0],
        scalesH: tie.scales[0],
        scalesW: tie.scales[1],
      } as const;
      // The cells the device's own model predicts (A2/A3: device_model.ts; 950: ascend950_model.ts,
      // a gather summing in float32 and rounding once, like the A2's casts).
      const device = npu.generation === "950"
        ? arch35Model(values, {
          op: c.op,
          inputSize: c.inputSize,
          outputSize: c.outputSize,
          scales: tie.scales,
          gradDtype: dtype,
          deterministic: false,
        }).values
        : roundTo(dtype, deviceModel(values, c));
      assertBitEqual(onCpu, pytorch, `${what}: CPU against PyTorch`);
      await assertMatchesDeviceOp(
        onNpu,
        fn,
        values,
        dtype,
        options,
        `${what}: NPU against the device`,
        2,
        target,
      );
      const predicted = differing(device, pytorch);
      assert.ok(predicted.length > 0, `${what}: a tie case where the models agree`);
      assert.deepEqual(differing(onNpu, onCpu), predicted, `${what}: the cells that differ`);
    }
  });
}

for (const lane of NPU_LANES) {
  lane.test(`device semantics on ${lane.label}: bilinear V2 with one scale ignores it (A2/A3) or uses it (950), both scales are used`, async () => {
    using cpu = Device.open({ backend: "cpu" });
    using npu = lane.open();
    const target = deviceTarget(npu);
    const gradShape = [1, 2, 7, 7];
    const values = Float32Array.from({ length: 98 }, (_, i) => ((i * 13) % 17) / 4 - 2);
    const base = { outputSize: [7, 7], inputSize: [1, 2, 3, 3] };
    const results = new Map<string, { npu: Float32Array; cpu: Float32Array }>();
    for (
      const [label, scalesH, scalesW] of [["none", 0, 0], ["one", 2.4, 0], [
        "both",
        2.4,
        2.4,
      ]] as const
    ) {
      const options = { ...base, scalesH, scalesW };
      const run = async (device: Device): Promise<Float32Array> => {
        using grad = device.tensor(values, gradShape);
        using result = upsampleBilinear2dBackward(grad, options);
        return await result.toFloat32Array();
      };
      const onNpu = await run(npu);
      await assertMatchesDeviceOp(
        onNpu,
        upsampleBilinear2dBackward,
        values,
        "float32",
        options,
        label,
        2,
        target,
      );
      results.set(label, { npu: onNpu, cpu: await run(cpu) });
      const pytorch = referenceBilinear2dBackward(values, base.inputSize, base.outputSize, [
        scalesH,
        scalesW,
      ], false);
      assertClose(results.get(label)!.cpu, pytorch, `${label}: CPU against PyTorch`, { ulps: 4 });
    }
    const gap = (a: Float32Array, b: Float32Array): number =>
      a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
    if (npu.generation === "950") {
      // The 950's V2 passes both scales to ResizeBilinearV2Grad (no A2 scale check): the single
      // scale is used, as PyTorch uses it (docs/device-semantics.md, "bilinear on 950").
      assert.ok(gap(results.get("one")!.npu, results.get("none")!.npu) > 1e-2);
      assert.ok(gap(results.get("one")!.npu, results.get("one")!.cpu) < 1e-5);
    } else {
      // A2/A3 ignore the single scale: "one" is "none" up to summation order.
      assert.ok(gap(results.get("one")!.npu, results.get("none")!.npu) < 1e-5);
    }
    // PyTorch uses it (and both are used on both backends): far more than rounding apart.
    assert.ok(gap(results.get("one")!.cpu, results.get("none")!.cpu) > 1e-2);
    assert.ok(gap(results.get("both")!.npu, results.get("none")!.npu) > 1e-2);
    assert.ok(gap(results.get("both")!.npu, results.get("both")!.cpu) < 1e-5);
  });
}

Deno.test("device semantics: share of size pairs (in <= 39, out <= 119) the device maps differently", () => {
  let pairs = 0, differ = 0;
  for (let inSize = 1; inSize <= 39; inSize++) {
    for (let outSize = 1; outSize <= 119; outSize++) {
      if (inSize / outSize < 0.02) continue; // the op's 50x limit
      pairs++;
      const g = Float32Array.from({ length: outSize }, (_, o) => 2 ** (o % 24));
      const c = { op: "nearestExact1d", inputSize: [1, 1, inSize], outputSize: [outSize] } as const;
      const device = deviceModel(g, c);
      const pytorch = referenceNearestExactBackward(g, [1, 1, inSize], [outSize], [0]);
      if (differing(device, pytorch).length > 0) differ++;
    }
  }
  const share = differ / pairs;
  console.log(
    `  ${differ} of ${pairs} size pairs (${
      (100 * share).toFixed(2)
    } %) map some output differently`,
  );
  assert.ok(share > 0.01 && share < 0.05, `share ${share}`);
});
