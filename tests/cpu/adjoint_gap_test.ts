// The device facts of the adjoint check come from the kernels' rules (src/rules/adjoint_gap.ts):
// they name exactly the calls where a family's device reference breaks <F(x), g> = <x, B(g)>
// (random calls per family), with the source's examples; PyTorch's pair never breaks it.

import assert from "node:assert/strict";
import { Device } from "../../mod.ts";
import { adjointGap, AdjointGapWatch } from "../../src/rules/adjoint_gap.ts";
import type { AscendGeneration } from "../../src/rules/generation.ts";
import type { UpsampleParams } from "../../src/rules/ops.ts";
import { adjointPair } from "../../cli/verify/adjoint.ts";
import { makeCases } from "../../cli/verify/cases.ts";

const target = (generation: AscendGeneration) => ({
  generation,
  bilinearApi: "v2" as const,
  fma: true,
});

Deno.test("adjoint gaps: the rules name exactly the pairs the device reference breaks", async () => {
  for (const [soc, generation] of [["Ascend910B3", "a2"], ["Ascend950PR_9599", "950"]] as const) {
    using reference = Device.open({ backend: "cpu", numerics: "device", soc });
    let gaps = 0;
    for (const [k, call] of makeCases(60, 9, ["float32"]).entries()) {
      const broken = (await adjointPair(reference, reference, call, k)).ratio > 1;
      const gap = adjointGap(call, target(generation));
      assert.equal(gap !== null, broken, `${soc} ${JSON.stringify(call)}: ${gap}`);
      if (gap !== null) gaps++;
    }
    assert.ok(gaps > 0, `${soc}: no gap met`);
  }
  using pytorch = Device.open({ backend: "cpu" });
  for (const [k, call] of makeCases(30, 4, ["float32"]).entries()) {
    assert.ok((await adjointPair(pytorch, pytorch, call, k)).ratio <= 1, JSON.stringify(call));
  }
});

Deno.test("adjoint gaps: the source's examples", () => {
  const nearest: UpsampleParams = {
    op: "nearestExact1d",
    dtype: "float32",
    inputSize: [1, 1, 2],
    outputSize: [41],
    scales: [0],
    alignCorners: false,
  };
  // fl32(20.5 * fl32(2 / 41)) = 0.99999994: the forward reads input 0, the backward sends to 1.
  assert.match(adjointGap(nearest, target("a2"))!, /reads input 0 for output 20 .* input 1/);
  assert.match(adjointGap(nearest, target("950"))!, /Ascend 950/);
  assert.equal(adjointGap(nearest, target("910")), null); // no nearest-exact pair there
  assert.equal(adjointGap({ ...nearest, outputSize: [4] }, target("a2")), null);
  const bilinear: UpsampleParams = {
    op: "bilinear2d",
    dtype: "float32",
    inputSize: [1, 1, 3, 3],
    outputSize: [3, 3],
    scales: [1.3, 1.3],
    alignCorners: false,
  };
  // Equal sizes with scales: the Cube forward steps by 1, V2's backward kernel by 1 / 1.3.
  assert.match(adjointGap(bilinear, target("a2"))!, /steps 1 along dimension 0/);
  assert.equal(adjointGap({ ...bilinear, scales: [0, 0] }, target("a2")), null);
  assert.equal(adjointGap(bilinear, target("950")), null);
  // 1 / scale = 65 > 50: the forward falls back to the TBE kernel (sizes: 131 / 2), the backward's
  // own kernel takes 1 / scale (its limit is 100).
  const shrink = {
    ...bilinear,
    inputSize: [1, 1, 131, 4],
    outputSize: [2, 8],
    scales: [1 / 65, 2],
  };
  assert.match(adjointGap(shrink, target("a2"))!, /steps 65.5 along dimension 0/);
});

Deno.test("adjoint gaps: the watch describes a gap only where both directions ran on the same sizes", () => {
  const call = (n: number, outputSize = [41]): UpsampleParams => ({
    op: "nearestExact1d",
    dtype: "float32",
    inputSize: [1, n, 2],
    outputSize,
    scales: [0],
    alignCorners: false,
  });
  const watch = new AdjointGapWatch(target("950"));
  assert.equal(watch.notice(call(1, [4]), "forward", true), null); // no gap at all
  // A backward alone, however often: nothing about the forward kernel.
  assert.equal(watch.notice(call(1), "backward", false), null);
  assert.equal(watch.notice(call(2), "backward", false), null);
  // Asked for (ADJOINT_GAP named): said on the call alone, about the op being run.
  const asked = watch.notice(call(1), "backward", true)!;
  assert.equal(asked.kind, "ADJOINT_GAP");
  assert.equal(asked.key, "nearestExact1d:950");
  assert.match(asked.message, /^upsampleNearestExact1dBackward: on the Ascend 950 /);
  // The forward on other sizes is no pair; on the same spatial sizes (N, C aside) it is.
  assert.equal(watch.notice(call(1, [43]), "forward", false), null);
  const paired = watch.notice(call(3), "forward", false)!;
  assert.match(
    paired.message,
    /^upsampleNearestExact1d: this device also ran upsampleNearestExact1dBackward on these sizes/,
  );
  assert.equal(paired.key, "nearestExact1d:950");
  // Another watch (another device) remembers nothing of this one's runs.
  assert.equal(new AdjointGapWatch(target("950")).notice(call(3), "forward", false), null);
});
