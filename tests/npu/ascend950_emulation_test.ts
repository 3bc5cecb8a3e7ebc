// The emulated Ascend 950 (ACLEMU_SOC=Ascend950PR_9599) through the library, against the independent
// arch35 model (tests/support/ascend950_model.ts): a seeded random mix of calls (kernel and values),
// the deterministic toggle (atomic scatter vs gather, seeded so never flaky), the deterministic value
// of each launch, and the FMA switch. The emulation reads ACLEMU_SOC once per process, so this file
// adapts to the process it runs in:
// - in a 950 process (the CI's 950 lane, or the child below) it runs the 950 tests;
// - in an A2 process it runs the A2 side of the toggle and FMA tests, and re-runs this file in a child
//   `deno test` with ACLEMU_SOC=Ascend950PR_9599 (unless ACLNN_950_LANE=separate: .ci/run runs that
//   lane itself), asserting the child ran tests and all passed.

import assert from "node:assert/strict";
import { Device, runParams, type Tensor } from "../../mod.ts";
import { type Arch35Call, arch35Model } from "../support/ascend950_model.ts";
import {
  arch35Call,
  describe,
  gradient,
  type MixCall,
  randomCall,
} from "../support/ascend950_mix.ts";
import { assertMatchesArch35 } from "../support/ascend950_match.ts";
import {
  emu,
  EMU_DIR,
  EMU_NO_V2_DIR,
  emuFmaContraction,
  emuKernelLaunches,
  emuLastKernel,
  EMULATED_LANE,
  emulatedGeneration,
  emulatedSoc,
  emuSetAtomicSeed,
  emuSetFmaContraction,
  rng,
} from "../support/helpers.ts";

const SOC_950 = "Ascend950PR_9599";
const GENERATION = emulatedGeneration();
const NOT_EMULATED = EMULATED_LANE.ignore;

async function runOn(device: Device, call: MixCall, grad: Float32Array): Promise<Float32Array> {
  using g = device.tensor(grad, [call.inputSize[0], call.inputSize[1], ...call.outputSize], {
    dtype: call.dtype,
  });
  using result: Tensor = runParams(g, call, { deterministic: call.deterministic });
  return await result.toFloat32Array();
}

/** The shrinking bilinear call of the toggle tests: many terms per cell, atomic unless deterministic. */
const TOGGLE_CALL = {
  op: "bilinear2d",
  inputSize: [1, 2, 13, 11],
  outputSize: [9, 8],
  scales: [0, 0],
  alignCorners: false,
} as const;
const TOGGLE_LAUNCHES = 6;
const TOGGLE_SHAPE = [1, 2, ...TOGGLE_CALL.outputSize];
const TOGGLE_COUNT = TOGGLE_SHAPE.reduce((a, b) => a * b, 1);

/** Distinct bit patterns of `launches` runs of the toggle call (float16 gradient). */
async function togglePatterns(
  device: Device,
  perCall: boolean | undefined,
): Promise<{ patterns: Set<string>; last: Float32Array }> {
  const next = rng(950);
  const grad = gradient(next, TOGGLE_COUNT, "float16");
  using g = device.tensor(grad, TOGGLE_SHAPE, { dtype: "float16" });
  const patterns = new Set<string>();
  let last: Float32Array = new Float32Array(0);
  for (let i = 0; i < TOGGLE_LAUNCHES; i++) {
    using result = runParams(
      g,
      TOGGLE_CALL,
      perCall === undefined ? {} : { deterministic: perCall },
    );
    last = await result.toFloat32Array();
    patterns.add(Array.from(new Uint32Array(last.buffer)).join(","));
  }
  return { patterns, last };
}

const toggleGrad = (): Float32Array => gradient(rng(950), TOGGLE_COUNT, "float16");

// ------------------------------------------------------------------------------------------------
// The 950 process.

if (GENERATION === "950") {
  Deno.test(`950 emulation: the SoC is ${SOC_950}`, () => {
    assert.equal(emulatedSoc(), SOC_950);
  });

  for (const contraction of [1, 0]) {
    Deno.test(`950 emulation: a seeded random mix of calls matches the arch35 model (kernel and values; FMA contraction ${contraction})`, async () => {
      emu().aclemuResetFaults();
      emuSetFmaContraction(contraction);
      const next = rng(20250950);
      const calls = Array.from({ length: 220 }, () => randomCall(next));
      const seen = new Map<string, number>();
      const fma = emuFmaContraction();
      // V2 calls on one device, then V1 calls (a libDir without V2) on another, one device open at a
      // time: two devices of one deviceId share a context (see the two-device test below).
      for (const api of ["v2", "v1"] as const) {
        using device = Device.open({
          backend: "npu",
          libDir: api === "v1" ? EMU_NO_V2_DIR : EMU_DIR,
        });
        for (const [k, call] of calls.entries()) {
          if (call.api !== api) continue;
          const count = call.inputSize[0] * call.inputSize[1] *
            call.outputSize.reduce((a, b) => a * b, 1);
          const grad = gradient(next, count, call.dtype);
          const model = arch35Model(grad, arch35Call(call, fma));
          const actual = await runOn(device, call, grad);
          const what = `call ${k}: ${describe(call)}`;
          assert.equal(emuLastKernel(), model.kernel, `${what}: the kernel`);
          assertMatchesArch35(actual, grad, arch35Call(call, fma), what, model);
          seen.set(model.kernel, (seen.get(model.kernel) ?? 0) + 1);
        }
      }
      // The mix reached every route the library can take on the 950 (NCHW, 32-bit indices).
      for (
        const kernel of [
          "UpsampleNearestExact2dGrad.SIMT",
          "UpsampleNearestExact2dGrad.DATA_COPY",
          "ResizeBilinearV2Grad.SIMT_NCHW",
          "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE",
          "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE_SCALES",
          "ResizeBilinearV2Grad.ALL_COPY",
          "ViewCopy",
        ]
      ) assert.ok((seen.get(kernel) ?? 0) > 0, `the mix never ran ${kernel}: ${[...seen]}`);
    });
  }

  Deno.test("950 emulation: the deterministic toggle, device default and per call (atomic vs gather)", async () => {
    for (const via of ["device", "call"] as const) {
      for (const deterministic of [false, true]) {
        emu().aclemuResetFaults();
        emuSetAtomicSeed(0x950n);
        // The device default says the opposite when the call says it: the call must win.
        using device = Device.open({
          backend: "npu",
          libDir: EMU_DIR,
          deterministic: via === "device" ? deterministic : !deterministic,
        });
        const before = {
          atomic: emuKernelLaunches("ResizeBilinearV2Grad.SIMT_NCHW"),
          gather: emuKernelLaunches("ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE"),
        };
        const { patterns, last } = await togglePatterns(
          device,
          via === "call" ? deterministic : undefined,
        );
        const ran = {
          atomic: emuKernelLaunches("ResizeBilinearV2Grad.SIMT_NCHW") - before.atomic,
          gather: emuKernelLaunches("ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE") - before.gather,
        };
        const what = `deterministic ${deterministic} via the ${via}`;
        if (deterministic) {
          assert.equal(patterns.size, 1, `${what}: ${patterns.size} bit patterns`);
          assert.deepEqual(ran, { atomic: 0, gather: TOGGLE_LAUNCHES }, `${what}: kernels`);
        } else {
          assert.ok(patterns.size >= 2, `${what}: only ${patterns.size} bit pattern(s)`);
          assert.deepEqual(ran, { atomic: TOGGLE_LAUNCHES, gather: 0 }, `${what}: kernels`);
        }
        // Either way, the result is the model's (within the atomic bound when atomic).
        const call: Arch35Call = { ...TOGGLE_CALL, gradDtype: "float16", deterministic };
        assertMatchesArch35(last, toggleGrad(), call, what);
      }
    }
  });

  Deno.test("950 emulation: each launch runs with its own call's deterministic value (kernel and flag)", async () => {
    emu().aclemuResetFaults();
    using device = Device.open({ backend: "npu", libDir: EMU_DIR });
    using g = device.tensor(toggleGrad(), TOGGLE_SHAPE, { dtype: "float16" });
    // Interleaved, repeated (the second of each is phase 2 of a kept executor when the binding reuses one).
    for (
      const deterministic of [true, false, false, true, true, false, undefined, true, undefined]
    ) {
      using result = runParams(
        g,
        TOGGLE_CALL,
        deterministic === undefined ? {} : { deterministic },
      );
      await result.toFloat32Array();
      const expected = deterministic ?? device.deterministic;
      assert.equal(emu().aclemuLastLaunchDeterministic(), expected ? 1 : 0);
      assert.equal(
        emuLastKernel(),
        expected ? "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE" : "ResizeBilinearV2Grad.SIMT_NCHW",
        `deterministic ${deterministic}`,
      );
    }
    device.setDeterministic(true);
    using again = runParams(g, TOGGLE_CALL);
    await again.toFloat32Array();
    assert.equal(emuLastKernel(), "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE");
  });

  Deno.test("950 emulation: the atomic seed reproduces a run; a seed change changes the order", async () => {
    emu().aclemuResetFaults();
    using device = Device.open({ backend: "npu", libDir: EMU_DIR });
    const runs = async (seed: bigint): Promise<string[]> => {
      emuSetAtomicSeed(seed);
      const { patterns } = await togglePatterns(device, false);
      return [...patterns];
    };
    const first = await runs(7n), again = await runs(7n), other = await runs(8n);
    assert.deepEqual(again, first);
    assert.notDeepEqual(other, first);
  });

  Deno.test("950 emulation: the FMA switch, on the one-element case (1d 6 -> 1: input 2 contracted, 3 not)", async () => {
    emu().aclemuResetFaults();
    assert.equal(emuFmaContraction(), Deno.env.get("ACLEMU_FMA") !== "0", "the default");
    using device = Device.open({ backend: "npu", libDir: EMU_DIR });
    const call = {
      op: "nearestExact1d",
      inputSize: [1, 1, 6],
      outputSize: [1],
      scales: [0],
      alignCorners: false,
    } as const;
    try {
      for (const [on, cell] of [[1, 2], [0, 3]] as const) {
        emuSetFmaContraction(on);
        using g = device.tensor([1], [1, 1, 1]);
        using result = runParams(g, call);
        const values = await result.toFloat32Array();
        const expected = [0, 0, 0, 0, 0, 0];
        expected[cell] = 1;
        assert.deepEqual([...values], expected, `contraction ${on}`);
        const model = arch35Model(Float32Array.of(1), {
          ...call,
          gradDtype: "float32",
          deterministic: false,
          fma: on === 1,
        });
        assert.deepEqual([...model.values], expected, `the model, contraction ${on}`);
      }
    } finally {
      emuSetFmaContraction(-1);
    }
  });
}

// ------------------------------------------------------------------------------------------------
// The A2 process: the same toggle and FMA calls change nothing there; the 950 side in a child.

if (GENERATION === "a2") {
  Deno.test("950 emulation, A2 side: the toggle call gives one bit pattern in both modes", async () => {
    for (const deterministic of [false, true]) {
      emu().aclemuResetFaults();
      emuSetAtomicSeed(0x950n);
      using device = Device.open({ backend: "npu", libDir: EMU_DIR, deterministic });
      const { patterns } = await togglePatterns(device, undefined);
      assert.equal(patterns.size, 1, `deterministic ${deterministic}`);
      assert.ok(!emuLastKernel().includes("."), `an A2 kernel: ${emuLastKernel()}`);
    }
  });

  Deno.test("950 emulation, A2 side: the FMA switch does not change the A2 kernels (6 -> 1: input 3)", async () => {
    emu().aclemuResetFaults();
    using device = Device.open({ backend: "npu", libDir: EMU_DIR });
    try {
      for (const on of [1, 0]) {
        emuSetFmaContraction(on);
        using g = device.tensor([1], [1, 1, 1]);
        using result = runParams(g, {
          op: "nearestExact1d",
          inputSize: [1, 1, 6],
          outputSize: [1],
          scales: [0],
          alignCorners: false,
        });
        assert.deepEqual(
          [...await result.toFloat32Array()],
          [0, 0, 0, 1, 0, 0],
          `contraction ${on}`,
        );
      }
    } finally {
      emuSetFmaContraction(-1);
    }
  });

  const separate = Deno.env.get("ACLNN_950_LANE") === "separate";
  Deno.test({
    name: `950 emulation: this file in a child with ACLEMU_SOC=${SOC_950}` +
      (separate ? " [run as its own lane: ACLNN_950_LANE=separate]" : ""),
    ignore: separate,
  }, async () => {
    const env = Deno.env.toObject();
    delete env.ACLEMU_FMA;
    delete env.ACLEMU_ATOMIC_SEED;
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "test",
        "--allow-ffi",
        "--allow-env",
        "--allow-read",
        "--allow-run",
        new URL(import.meta.url).pathname,
      ],
      env: { ...env, ACLEMU_SOC: SOC_950, ACLNN_TEST_LANES: "cpu,npu-emulated", NO_COLOR: "1" },
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, text);
    const passed = Number(/\| (\d+) passed/.exec(text)?.[1] ?? 0);
    assert.ok(passed >= 5, `the 950 child ran ${passed} tests:\n${text}`);
    assert.match(text, /\| 0 failed/);
  });
}

if (GENERATION !== null) {
  Deno.test(`950 emulation (${GENERATION} process): two devices of one deviceId, alternating, each launch runs with its call's deterministic value`, async () => {
    emu().aclemuResetFaults();
    using a = Device.open({ backend: "npu", libDir: EMU_DIR });
    using b = Device.open({ backend: "npu", libDir: EMU_DIR });
    const steps: Array<[Device, string, boolean]> = [
      [a, "a", true],
      [b, "b", false],
      [a, "a", false],
      [b, "b", true],
      [a, "a", false], // a last set false itself; b's true since must not leak into this launch
      [b, "b", false],
    ];
    const got: string[] = [], want: string[] = [];
    for (const [device, label, deterministic] of steps) {
      using g = device.tensor(toggleGrad(), TOGGLE_SHAPE, { dtype: "float16" });
      using result = runParams(g, TOGGLE_CALL, { deterministic });
      await result.toFloat32Array();
      got.push(`${label} ${emu().aclemuLastLaunchDeterministic()}`);
      want.push(`${label} ${deterministic ? 1 : 0}`);
      if (GENERATION === "950") {
        got.push(emuLastKernel());
        want.push(
          deterministic
            ? "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE"
            : "ResizeBilinearV2Grad.SIMT_NCHW",
        );
      }
    }
    assert.deepEqual(got, want);
  });
}

if (GENERATION === null) {
  Deno.test({ name: "950 emulation [emulated lane ignored]", ignore: true, fn: () => {} });
  console.log(`950 emulation: not run here: ${NOT_EMULATED}`);
}
