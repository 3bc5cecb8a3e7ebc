// The emulation's planted one-ulp fault (ACLEMU_ULP_FAULT / aclemuSetUlpFault, native/src/opapi/
// kernels.c): on the lane's family (ACLEMU_SOC), every backward launch whose order of additions is
// fixed changes exactly one element of its result, the first nonzero finite one in row-major order,
// by one ulp of the result's dtype away from zero; a launch that adds atomically in a drawn order
// (ResizeBilinearV2Grad5HD modes 5 and 6, the 950's SIMT scatter) is left alone. verify's test
// (tests/tools/verify_test.ts) shows that only its bit-for-bit comparison catches it.

import assert from "node:assert/strict";
import { Device, runParams } from "../../mod.ts";
import { makeCases, seededRandom, type VerifyCase } from "../../cli/verify/cases.ts";
import { npuFamily } from "../../cli/verify/mix.ts";
import {
  configuredEmulationSoc,
  emu,
  EMU_DIR,
  emuLastKernel,
  EMULATED_LANE,
  emuSetAtomicSeed,
  roundTo,
} from "../support/helpers.ts";

const CONTROLS = {
  aclemuSetUlpFault: { parameters: ["i32"], result: "void" },
  aclemuUlpFault: { parameters: [], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

// The kernels whose launches add atomically in an order drawn per launch (soc.c
// emu_kernel_is_atomic): the fault leaves them alone.
const ATOMIC =
  /^ResizeBilinearV2Grad5HD\.MODE[56]$|^ResizeBilinearV2Grad\.(SIMT_NCHW|SIMT_NHWC|C_PARALLEL)$/;

// The result's raw bits: float32 bit patterns, or the 16-bit ones.
async function bitsOf(npu: Device, c: VerifyCase, values: Float32Array): Promise<number[]> {
  using grad = npu.tensor(values, [c.inputSize[0], c.inputSize[1], ...c.outputSize], {
    dtype: c.dtype,
  });
  using result = runParams(grad, c);
  if (c.dtype !== "float32") return [...await result.toRawBits()];
  const read = await result.toFloat32Array();
  return [...new Uint32Array(read.buffer, read.byteOffset, read.length)];
}

EMULATED_LANE.test(`emulator: the planted one-ulp fault moves one element of each order-free launch (${configuredEmulationSoc()})`, async () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  const controls = Deno.dlopen(`${EMU_DIR}libascendcl.so`, CONTROLS);
  const family = npuFamily(npu, true);
  const cases = makeCases(40, 13, ["float32", "float16", "bfloat16"], family.mix)
    .filter((c) => !c.deterministic && family.refusal(c) === null);
  let moved = 0, atomic = 0;
  try {
    assert.equal(controls.symbols.aclemuUlpFault(), 0, "off by default");
    for (const [k, c] of cases.entries()) {
      const random = seededRandom(900 + k);
      const count = c.inputSize[0] * c.inputSize[1] * c.outputSize.reduce((a, b) => a * b, 1);
      // Some exact zeros among the gradient, so the first nonzero result is not always the first.
      const values = roundTo(
        c.dtype,
        Float32Array.from({ length: count }, () => random() < 0.3 ? 0 : random() * 2 - 1),
      );
      emuSetAtomicSeed(BigInt(k)); // the same order for both runs of an atomic launch
      const launches = emu().aclemuLaunchCount();
      const clean = await bitsOf(npu, c, values);
      const kernel = emuLastKernel();
      if (emu().aclemuLaunchCount() - launches !== 1n) continue; // one launch per call only
      controls.symbols.aclemuSetUlpFault(1);
      emuSetAtomicSeed(BigInt(k));
      const faulted = await bitsOf(npu, c, values);
      controls.symbols.aclemuSetUlpFault(-1);
      const what = `${kernel}: ${JSON.stringify(c)}`;
      const differing = clean.flatMap((bits, i) => bits !== faulted[i] ? [i] : []);
      if (ATOMIC.test(kernel)) {
        assert.deepEqual(differing, [], what);
        atomic++;
        continue;
      }
      const [magnitude, infinity] = c.dtype === "float32"
        ? [0x7fffffff, 0x7f800000]
        : [0x7fff, c.dtype === "float16" ? 0x7c00 : 0x7f80];
      const first = clean.findIndex((bits) =>
        (bits & magnitude) !== 0 && (bits & magnitude) < infinity
      );
      if (first < 0) {
        assert.deepEqual(differing, [], `${what}: nothing nonzero to move`);
        continue;
      }
      assert.deepEqual(differing, [first], what);
      assert.equal(faulted[first], clean[first] + 1, `${what}: one ulp away from zero`);
      moved++;
    }
  } finally {
    controls.symbols.aclemuSetUlpFault(-1);
    controls.close();
    emu().aclemuResetFaults();
  }
  console.log(
    `${configuredEmulationSoc()}: ${moved} launches moved one ulp, ${atomic} atomic ones left alone`,
  );
  assert.ok(moved >= 10, `${moved} order-free launches faulted`);
});
