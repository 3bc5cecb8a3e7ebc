// referenceExactness (src/rules/exactness.ts) per family and kernel: the verdict at each case the
// docs name, and the claim behind "exact" for the atomic kernels checked without the emulation:
// where it says exact, the reference's bits do not depend on the atomic order (every seed gives
// them); where it says bounded, some seed changes them.

import assert from "node:assert/strict";
import { referenceExactness } from "../../src/rules/exactness.ts";
import type { AscendTarget } from "../../src/rules/numerics.ts";
import type { UpsampleParams } from "../../src/rules/ops.ts";
import { scatter950, scatter950LaunchOf } from "../../src/cpu/ascend/backward/scatter950.ts";
import { seededRandom } from "../../cli/verify/cases.ts";

type Call = UpsampleParams & { readonly deterministic: boolean; readonly direction?: "forward" };

function bilinear(
  inHW: readonly number[],
  outHW: readonly number[],
  extra: Partial<Call> = {},
): Call {
  return {
    op: "bilinear2d",
    dtype: "float32",
    inputSize: [1, 2, ...inHW],
    outputSize: [...outHW],
    scales: [0, 0],
    alignCorners: false,
    deterministic: false,
    ...extra,
  };
}

const TBE = (generation: "910" | "310p" | "a2", api: "v1" | "v2" = "v2"): AscendTarget => ({
  generation,
  bilinearApi: api,
  fma: true,
  tbeFma: false,
});
const A950: AscendTarget = { generation: "950", bilinearApi: "v2", fma: true };

function verdictOf(call: Call, target: AscendTarget): string {
  const v = referenceExactness(call, target);
  return `${v.kernel} ${v.exactness}`;
}

Deno.test("exactness: the TBE kernel per mode and order (910, 310P, A2/A3 V1)", () => {
  for (const target of [TBE("910"), TBE("310p"), TBE("a2", "v1")]) {
    const l1 = target.generation !== "a2";
    const cases: [Call, string][] = [
      [bilinear([1, 1], [5, 7]), "MODE1 exact"],
      [bilinear([1, 1], [3, 2048]), "MODE2 exact"],
      [bilinear([6, 9], [1, 1]), "MODE3 exact"],
      [bilinear([5, 7], [11, 13], { alignCorners: true }), "MODE4 exact"],
      [bilinear([30, 5], [29, 84]), `MODE${l1 ? 5 : 6} exact`], // two partials a row at most
      [bilinear([64, 40], [32, 100]), `MODE${l1 ? 5 : 6} exact`], // one partial a row
      [bilinear([32, 40], [32, 100]), `MODE${l1 ? 5 : 6} exact`], // H unchanged
      [bilinear([20, 40], [64, 100]), `MODE${l1 ? 5 : 6} bounded`], // 3+ partials, 2+ cores
      [bilinear([20, 40], [64, 100], { deterministic: true }), `MODE${l1 ? 5 : 6} exact`], // route
      [bilinear([3, 1100], [4, 1120]), "MODE6 bounded"], // flushed in windows
      [bilinear([1, 2100], [1, 2200]), "MODE6 exact"], // one row, one core
    ];
    for (const [call, expected] of cases) {
      const got = verdictOf(call, target);
      assert.equal(
        got,
        `ResizeBilinearV2Grad5HD.${expected}`,
        `${target.generation}: ${JSON.stringify(call)}`,
      );
    }
  }
  // A2/A3 mode 6 losing columns (width 1535 from 2, align corners): another arrangement runs.
  const lossy = bilinear([4, 1535], [2, 2], { alignCorners: true });
  assert.equal(verdictOf(lossy, TBE("a2", "v1")), "ResizeBilinearV2Grad5HD.MODE6 bounded");
});

Deno.test("exactness: A2/A3's Cube kernels are bounded unless cubeOrder names the reading", () => {
  const a2 = TBE("a2");
  const kernel = bilinear([4, 4], [8, 8]);
  const nearest: Call = { ...bilinear([4, 4], [8, 8]), op: "nearestExact2d" };
  // The forward op runs the Cube kernel where the scales fit (forward_device.ts bilinearCubeRoute).
  const forward: Call = { ...bilinear([4, 4], [6, 8]), scales: [1.5, 2], direction: "forward" };
  for (
    const [call, name] of [[kernel, "UpsampleBilinear2dGrad"], [
      nearest,
      "UpsampleNearestExact2dGrad",
    ]] as const
  ) {
    assert.equal(verdictOf(call, a2), `${name} bounded`);
    assert.equal(verdictOf(call, { ...a2, cubeOrder: "ascending" }), `${name} exact`);
  }
  assert.match(verdictOf(forward, a2), / bounded$/);
  assert.match(verdictOf(forward, { ...a2, cubeOrder: "ascending" }), / exact$/);
  // Copies: V1 with equal sizes, and the 910's forward TBE kernel.
  assert.equal(verdictOf(bilinear([4, 4], [4, 4]), TBE("a2", "v1")), "ViewCopy exact");
  assert.match(verdictOf({ ...kernel, direction: "forward" }, TBE("910")), / exact$/);
});

Deno.test("exactness: the 950's kernels", () => {
  assert.equal(
    verdictOf(bilinear([4, 4], [8, 8]), A950),
    "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE exact",
  );
  assert.equal(
    verdictOf(bilinear([4, 4], [8, 8], { deterministic: true }), A950),
    "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE exact",
  );
  assert.equal(verdictOf(bilinear([8, 8], [8, 8]), A950), "ResizeBilinearV2Grad.ALL_COPY exact");
  assert.equal(verdictOf(bilinear([8, 8], [4, 4]), A950), "ResizeBilinearV2Grad.SIMT_NCHW exact");
  assert.equal(verdictOf(bilinear([6, 6], [4, 4]), A950), "ResizeBilinearV2Grad.SIMT_NCHW bounded");
  const nearest: Call = { ...bilinear([4, 4], [8, 8]), op: "nearestExact2d" };
  assert.equal(verdictOf(nearest, A950), "UpsampleNearestExact2dGrad.SIMT exact");
});

Deno.test("exactness: the 950's scatter is seed-free where exact and not where bounded", () => {
  const random = seededRandom(0x950);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  let exact = 0, bounded = 0;
  for (let k = 0; k < 40; k++) {
    const outHW = [int(1, 10), int(1, 10)];
    const inHW = [outHW[0] * int(1, 3) + int(0, 3), outHW[1] * int(1, 3) + int(0, 3)];
    const dtype = (["float32", "float16", "bfloat16"] as const)[k % 3];
    const call = bilinear(inHW, outHW, { dtype, alignCorners: k % 4 === 0 });
    const launch = scatter950LaunchOf(call, A950);
    if (launch === null) continue;
    const verdict = referenceExactness(call, A950);
    const grad = Float32Array.from({ length: 2 * outHW[0] * outHW[1] }, () => random() * 2 - 1);
    const runs = [0n, 1n, 2n, 3n].map((seed) =>
      new Uint32Array(scatter950(grad, 2, { ...launch, seed }).buffer).join(",")
    );
    const what = `${verdict.exactness} ${dtype} [${inHW}] <- [${outHW}]`;
    if (verdict.exactness === "exact") {
      assert.ok(runs.every((r) => r === runs[0]), what);
      exact++;
    } else {
      assert.ok(runs.some((r) => r !== runs[0]), `${what}: no seed changed a bit`);
      bounded++;
    }
  }
  assert.ok(exact >= 10 && bounded >= 3, `${exact} exact, ${bounded} bounded`);
});
