// The library's CPU device reference for the Ascend 950
// (`Device.open({ backend: "cpu", numerics: "device", soc: "Ascend950PR_9599" })`) against the
// independent arch35 model (tests/support/ascend950_model.ts): the same seeded random mix as the
// emulation's (tests/npu/ascend950_emulation_test.ts), both FMA settings, and the one-element FMA case.
// V1 bilinear computes what V2 does on the 950 (ViewCopy vs ALL_COPY for equal sizes, the same
// ResizeBilinearV2Grad otherwise), so the reference's V2 answers both.

import assert from "node:assert/strict";
import { Device, runParams } from "../../mod.ts";
import { arch35Model } from "../support/ascend950_model.ts";
import { assertMatchesArch35 } from "../support/ascend950_match.ts";
import { arch35Call, describe, gradient, randomCall } from "../support/ascend950_mix.ts";
import { rng } from "../support/helpers.ts";

const SOC_950 = "Ascend950PR_9599";

/** The 950 reference with a contraction setting; `ascendFma` undefined: the default. */
function reference(ascendFma?: boolean): Device {
  return Device.open({ backend: "cpu", numerics: "device", soc: SOC_950, threads: 1, ascendFma });
}

Deno.test("950 reference: the device names its SoC and generation", () => {
  using device = reference();
  assert.equal(device.soc, SOC_950);
  assert.equal(device.generation, "950");
  using a2 = Device.open({ backend: "cpu", numerics: "device" });
  assert.equal(a2.generation, "a2");
});

for (const fma of [true, false]) {
  Deno.test(`950 reference: a seeded random mix of calls matches the arch35 model (FMA ${fma ? "contracted" : "not contracted"})`, async () => {
    using device = reference(fma);
    const next = rng(20250950);
    let calls = 0, atomic = 0;
    for (let k = 0; k < 220; k++) {
      const call = randomCall(next);
      const count = call.inputSize[0] * call.inputSize[1] *
        call.outputSize.reduce((a, b) => a * b, 1);
      const grad = gradient(next, count, call.dtype);
      const modelCall = { ...arch35Call(call, fma), bilinearApi: "v2" as const };
      const model = arch35Model(grad, modelCall);
      using g = device.tensor(grad, [call.inputSize[0], call.inputSize[1], ...call.outputSize], {
        dtype: call.dtype,
      });
      using result = runParams(g, call, { deterministic: call.deterministic });
      const actual = await result.toFloat32Array();
      assertMatchesArch35(actual, grad, modelCall, `call ${k}: ${describe(call)}`, model);
      calls++;
      if (model.kind === "atomic") atomic++;
    }
    assert.equal(calls, 220);
    assert.ok(atomic > 0, "the mix reached the atomic scatter");
  });
}

Deno.test("950 reference: the FMA one-element case (1d 6 -> 1: input 2 contracted, 3 not), and A2's 3", async () => {
  const call = {
    op: "nearestExact1d",
    inputSize: [1, 1, 6],
    outputSize: [1],
    scales: [0],
    alignCorners: false,
  } as const;
  const cases: Array<[Device, number]> = [
    [reference(), 2],
    [reference(true), 2],
    [reference(false), 3],
    [Device.open({ backend: "cpu", numerics: "device" }), 3],
  ];
  for (const [device, cell] of cases) {
    try {
      using g = device.tensor([1], [1, 1, 1]);
      using result = runParams(g, call);
      const expected = [0, 0, 0, 0, 0, 0];
      expected[cell] = 1;
      assert.deepEqual([...await result.toFloat32Array()], expected, `${device.generation}`);
    } finally {
      device.close();
    }
  }
});
