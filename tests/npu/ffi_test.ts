// The FFI path against the host emulation: views and strided out described exactly to aclnn, the
// workspace path, reads that await the stream, deterministic mode reaching the runtime, status mapping,
// library and symbol loading, the bilinear V1 fallback, and no leaked device memory or aclnn objects.

import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import {
  AclError,
  Device,
  LibraryLoadError,
  MissingSymbolError,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { deviceInternals } from "../../src/device.ts";
import { loadCannFrom } from "../../src/ffi/loader.ts";
import type { NpuBackend, NpuBuffer } from "../../src/ffi/npu_backend.ts";
import { tensorInternals } from "../../src/tensor/tensor.ts";
import { assertMatchesDeviceOp } from "../support/device_model.ts";
import { deviceTarget } from "../support/device_match.ts";
import {
  assertBitEqual,
  assertClose,
  configuredEmulationSoc,
  emu,
  EMU_DIR,
  EMU_NO_1D_DIR,
  EMU_NO_V2_DIR,
  EMULATED_LANE,
  emuLive,
  makeView,
  rng,
} from "../support/helpers.ts";

const openNpu = (deviceId = 0, libDir = EMU_DIR): Device =>
  Device.open({ backend: "npu", deviceId, libDir });
const randomValues = (n: number, seed: number): Float32Array => {
  const next = rng(seed);
  return Float32Array.from({ length: n }, () => Math.round((next() - 0.5) * 512) / 64);
};
const npuOf = (device: Device): NpuBackend =>
  deviceInternals(device).backend() as unknown as NpuBackend;
const addressOf = (tensor: Tensor): bigint =>
  (tensorInternals(tensor).storage.handle as NpuBuffer).address;

EMULATED_LANE.test("npu: device name, backend and auto selection", () => {
  using device = openNpu();
  assert.equal(device.backend, "npu");
  // aclrtGetSocName answers the SoC alone, as CANN does (the emulation: ACLEMU_SOC, default Ascend910B3).
  const soc = configuredEmulationSoc();
  assert.match(device.name, /^Ascend[0-9A-Za-z_]+ #0 \(host emulation, not an NPU\)$/);
  assert.equal(device.name, `${soc} #0 (host emulation, not an NPU)`);
  assert.equal(device.soc, soc);
  assert.equal(device.generation, soc.startsWith("Ascend950") ? "950" : "a2");
  using auto = Device.open({ libDir: EMU_DIR });
  assert.equal(auto.backend, "npu");
  assert.throws(() => openNpu(7), /deviceId 7 is out of range: .* reports 2 device\(s\)/);
});

EMULATED_LANE.test("npu: strided and offset views and a strided out give what the device computes", async () => {
  using npu = openNpu();
  const values = randomValues(2 * 3 * 7 * 9, 1);
  const shape = [2, 3, 7, 9];
  const options = { outputSize: [7, 9], inputSize: [2, 3, 4, 5], scalesH: 1.8, scalesW: 1.8 };
  for (const layout of ["channelsLast", "transposed", "offset"] as const) {
    using gradNpu = makeView(npu, values, shape, "float32", layout);
    // out: a transposed, offset slice of a bigger buffer.
    using outBase = npu.zeros([2, 3, 7, 4]);
    using out = outBase.transpose(2, 3).slice(3, 1, 6);
    assert.equal(out.contiguous, false);
    for (const op of [upsampleNearestExact2dBackward, upsampleBilinear2dBackward]) {
      const result = op(gradNpu, { ...options, out });
      assert.equal(result, out);
      await assertMatchesDeviceOp(
        await out.toFloat32Array(),
        op,
        values,
        "float32",
        options,
        layout,
        2,
        deviceTarget(npu),
      );
    }
    // The rows of the base outside the slice were not touched.
    const base = await outBase.toFloat32Array();
    base.forEach((v, i) => {
      const row = Math.floor(i / 4) % 7;
      if (row === 0 || row === 6) assert.equal(v, 0);
    });
  }
});

EMULATED_LANE.test("npu: the workspace path (nearest-exact 2d asks for one) is cached and freed on close", async () => {
  const baseline = emuLive();
  const device = openNpu();
  using grad = device.zeros([1, 2, 8, 8]);
  using out = device.zeros([1, 2, 4, 4]);
  const before = emu().aclemuLiveAllocations();
  upsampleNearestExact2dBackward(grad, { outputSize: [8, 8], inputSize: [1, 2, 4, 4], out });
  await device.synchronize();
  assert.equal(emu().aclemuLiveAllocations(), before + 1n, "one workspace allocated");
  upsampleNearestExact2dBackward(grad, { outputSize: [8, 8], inputSize: [1, 2, 4, 4], out });
  assert.equal(emu().aclemuLiveAllocations(), before + 1n, "the workspace is reused");
  device.close();
  assert.deepEqual(emuLive(), baseline);
});

const RAW = {
  aclrtMemcpy: { parameters: ["buffer", "usize", "usize", "usize", "i32"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

EMULATED_LANE.test("npu: reads await the stream; an unsynchronized raw copy sees stale data", async () => {
  using device = openNpu();
  const raw = Deno.dlopen(`${EMU_DIR}libascendcl.so`, RAW);
  try {
    using grad = device.tensor(new Array(16).fill(1), [1, 1, 4, 4]);
    using out = device.zeros([1, 1, 2, 2]);
    emu().aclemuSetStreamDelayUs(50_000n);
    upsampleNearestExact2dBackward(grad, { outputSize: [4, 4], inputSize: [1, 1, 2, 2], out });
    const stale = new Float32Array(4);
    assert.equal(raw.symbols.aclrtMemcpy(stale, 16n, addressOf(out), 16n, 2), 0);
    assert.deepEqual([...stale], [0, 0, 0, 0], "the launch had not run yet");
    assert.deepEqual([...await out.toFloat32Array()], [4, 4, 4, 4]);
  } finally {
    emu().aclemuSetStreamDelayUs(0n);
    raw.close();
  }
});

EMULATED_LANE.test("npu: deterministic mode reaches the runtime, per device and per call", async () => {
  using device = openNpu();
  using grad = device.zeros([1, 1, 4]);
  const run = (deterministic?: boolean): void => {
    using _r = upsampleNearestExact1dBackward(grad, {
      outputSize: [4],
      inputSize: [1, 1, 2],
      deterministic,
    });
  };
  assert.equal(npuOf(device).readDeterministic(), false);
  run();
  assert.equal(emu().aclemuLastLaunchDeterministic(), 0);
  device.setDeterministic(true);
  assert.equal(device.deterministic, true);
  assert.equal(npuOf(device).readDeterministic(), true);
  run();
  assert.equal(emu().aclemuLastLaunchDeterministic(), 1);
  run(false);
  assert.equal(emu().aclemuLastLaunchDeterministic(), 0);
  run();
  assert.equal(emu().aclemuLastLaunchDeterministic(), 1);
  await device.synchronize();
  using fresh = Device.open({ backend: "npu", libDir: EMU_DIR, deterministic: true });
  assert.equal(npuOf(fresh).readDeterministic(), true);
});

EMULATED_LANE.test("npu: runtime failures become AclError with status, API and message; nothing leaks", async () => {
  using device = openNpu();
  using grad = device.tensor(randomValues(64, 2), [1, 1, 8, 8]);
  const options = { outputSize: [8, 8], inputSize: [1, 1, 4, 4] };
  const baseline = emuLive();
  emu().aclemuFailNextLaunch(507015);
  assert.throws(() => upsampleNearestExact2dBackward(grad, options), (error: AclError) => {
    assert.ok(error instanceof AclError);
    assert.equal(error.code, 507015);
    assert.equal(error.statusName, "ACL_ERROR_RT_AICORE_EXCEPTION");
    assert.equal(error.api, "aclnnUpsampleNearestExact2dBackward");
    assert.ok(error.detail.length > 0, "the runtime's message is attached");
    return true;
  });
  await device.synchronize();
  const afterLaunch = emuLive();
  assert.equal(afterLaunch.objects, baseline.objects);
  assert.ok(afterLaunch.allocations <= baseline.allocations + 1n); // + the cached workspace
  emu().aclemuFailAllocation(1n);
  assert.throws(() => upsampleBilinear2dBackward(grad, options), (error: AclError) => {
    assert.equal(error.code, 207001);
    assert.equal(error.api, "aclrtMalloc");
    return true;
  });
  emu().aclemuFailNextSync(507046);
  using ok = upsampleBilinear2dBackward(grad, options);
  await assert.rejects(() => ok.toFloat32Array(), (error: AclError) => {
    assert.equal(error.code, 507046);
    assert.equal(error.api, "aclrtSynchronizeStream");
    return true;
  });
  emu().aclemuResetFaults();
  // The device still works.
  using again = upsampleNearestExact2dBackward(grad, options);
  using cpu = Device.open({ backend: "cpu" });
  using cpuGrad = cpu.tensor(await grad.toFloat32Array(), [1, 1, 8, 8]);
  using expected = upsampleNearestExact2dBackward(cpuGrad, options);
  assertBitEqual(await again.toFloat32Array(), await expected.toFloat32Array(), "after faults");
});

EMULATED_LANE.test("npu: a missing library lists every path tried", () => {
  // (The search plan itself: discovery_test.ts.) In-process the emulation is already loaded, so the
  // system loader would find it by SONAME: list folders explicitly.
  assert.throws(() => loadCannFrom(["/nonexistent/lib64", EMU_DIR + "obj"]), (error) => {
    assert.ok(error instanceof LibraryLoadError);
    assert.match(error.message, /\/nonexistent\/lib64: no such folder/);
    assert.ok(
      error.message.includes(`${EMU_DIR}obj/libascendcl.so: no such file (nor libacl_rt.so)`),
      error.message,
    );
    assert.equal(error.attempts.length, 2);
    return true;
  });
  // A folder with libascendcl but no libnnopbase (made by the native build): the missing one is named.
  assert.throws(() => loadCannFrom([`${EMU_DIR}partial`]), /partial\/libnnopbase\.so: /);
});

EMULATED_LANE.test("npu: a missing operator symbol is named, before anything is allocated", () => {
  using device = openNpu(0, EMU_NO_1D_DIR);
  using grad = device.zeros([1, 1, 4]);
  const before = emuLive();
  assert.throws(
    () => upsampleNearestExact1dBackward(grad, { outputSize: [4], inputSize: [1, 1, 2] }),
    (error: MissingSymbolError) => {
      assert.ok(error instanceof MissingSymbolError);
      assert.equal(error.symbol, "aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize");
      assert.match(error.message, /no-1d\/libopapi\.so/);
      return true;
    },
  );
  assert.deepEqual(emuLive(), before);
});

EMULATED_LANE.test("npu: bilinear falls back to V1; what V1 would get wrong is refused (A2/A3) or run (950)", async () => {
  using v1 = openNpu(0, EMU_NO_V2_DIR);
  using cpu = Device.open({ backend: "cpu" });
  const values = randomValues(2 * 2 * 6 * 10, 3);
  using grad = v1.tensor(values, [2, 2, 6, 10]);
  using gradCpu = cpu.tensor(values, [2, 2, 6, 10]);
  const options = { outputSize: [6, 10], inputSize: [2, 2, 3, 5] };
  using result = upsampleBilinear2dBackward(grad, { ...options, scalesH: 2, scalesW: 2 });
  using expected = upsampleBilinear2dBackward(gradCpu, options);
  assertClose(await result.toFloat32Array(), await expected.toFloat32Array(), "V1", { ulps: 0 });
  using bf16 = v1.tensor(values, [2, 2, 6, 10], { dtype: "bfloat16" });
  const grad7Values = randomValues(25, 4);
  using grad7 = v1.tensor(grad7Values, [1, 1, 5, 5]);
  const options7 = { outputSize: [5, 5], inputSize: [1, 1, 3, 3], scalesH: 1.7 };
  if (v1.generation !== "950") {
    // A2/A3's V1 has no bfloat16 and never uses scales: the binding refuses both.
    assert.throws(
      () => upsampleBilinear2dBackward(bf16, options),
      /\(V1\), which does not support bfloat16/,
    );
    assert.throws(
      () => upsampleBilinear2dBackward(grad7, options7),
      /scalesH 1.7 differs from outputSize\/inputSize \(5\/3\).*ignores scales/,
    );
    return;
  }
  // The 950's V1 takes bfloat16 and passes the scales to ResizeBilinearV2Grad (RegBase branch of
  // aclnn_upsample_bilinear_2d_backward.cpp): both run, and are what the 950 computes.
  const target = deviceTarget(v1);
  using onBf16 = upsampleBilinear2dBackward(bf16, options);
  await assertMatchesDeviceOp(
    await onBf16.toFloat32Array(),
    upsampleBilinear2dBackward,
    values,
    "bfloat16",
    options,
    "V1 bfloat16 (950)",
    1,
    target,
  );
  using scaled = upsampleBilinear2dBackward(grad7, options7);
  const got = await scaled.toFloat32Array();
  await assertMatchesDeviceOp(
    got,
    upsampleBilinear2dBackward,
    grad7Values,
    "float32",
    options7,
    "V1 scalesH 1.7 (950)",
    1,
    target,
  );
  // The scale is used: not the result from the sizes alone.
  using fromSizes = upsampleBilinear2dBackward(grad7, { ...options7, scalesH: undefined });
  const sizesOnly = await fromSizes.toFloat32Array();
  assert.ok(got.some((v, i) => Math.abs(v - sizesOnly[i]) > 1e-2), "scalesH 1.7 was used");
});

EMULATED_LANE.test("npu: two devices interleaved never mix memory or streams", async () => {
  using d0 = openNpu(0);
  using d1 = openNpu(1);
  using cpu = Device.open({ backend: "cpu" });
  const options = { outputSize: [6, 6], inputSize: [1, 2, 3, 3] };
  const results: Array<[Tensor, Tensor]> = [];
  for (let k = 0; k < 6; k++) {
    const values = randomValues(72, 10 + k);
    const device = k % 2 === 0 ? d0 : d1;
    const grad = device.tensor(values, [1, 2, 6, 6]);
    const cpuGrad = cpu.tensor(values, [1, 2, 6, 6]);
    results.push([
      upsampleBilinear2dBackward(grad, options),
      upsampleBilinear2dBackward(cpuGrad, options),
    ]);
    if (device === d1) {
      assert.throws(
        () => upsampleBilinear2dBackward(grad, { ...options, out: results[0][0] }),
        /out is on another device/,
      );
    }
  }
  // Await out of order.
  for (const [npuResult, cpuResult] of results.reverse()) {
    assertBitEqual(
      await npuResult.toFloat32Array(),
      await cpuResult.toFloat32Array(),
      "interleaved",
    );
  }
});

EMULATED_LANE.test("npu: after every device is closed, nothing is left in the emulation", () => {
  const live = emuLive();
  assert.equal(live.allocations, 0n);
  assert.equal(live.objects, 0n);
  assert.equal(emu().aclemuLiveStreams(), 0n);
});

EMULATED_LANE.test("npu: closing a device while a read is in flight", async () => {
  const baseline = emuLive();
  const device = openNpu();
  const grad = device.tensor(new Array(64).fill(1), [1, 1, 8, 8]);
  emu().aclemuSetStreamDelayUs(20_000n);
  try {
    const result = upsampleBilinear2dBackward(grad, {
      outputSize: [8, 8],
      inputSize: [1, 1, 4, 4],
    });
    const reading = result.toFloat32Array();
    device.close();
    await assert.rejects(reading, TypeError);
  } finally {
    emu().aclemuSetStreamDelayUs(0n);
  }
  // The stream finishes the delayed work on its own thread: wait for that, not for a fixed time
  // (under qemu a call takes far longer than on the host).
  for (let i = 0; i < 2_000 && !isDeepStrictEqual(emuLive(), baseline); i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.deepEqual(emuLive(), baseline);
});

EMULATED_LANE.test("npu: a worker-thread sync refused for lack of a context falls back to the JS thread", async () => {
  using device = openNpu();
  using grad = device.tensor(new Array(16).fill(1), [1, 1, 4, 4]);
  using result = upsampleNearestExact2dBackward(grad, {
    outputSize: [4, 4],
    inputSize: [1, 1, 2, 2],
  });
  // What a runtime that wants a current context on the waiting thread answers (107002).
  emu().aclemuFailNextSync(107002);
  assert.deepEqual([...await result.toFloat32Array()], [4, 4, 4, 4]);
  emu().aclemuResetFaults();
});

EMULATED_LANE.test("npu: a new device does not trust what an earlier one left in the runtime", () => {
  const first = openNpu();
  first.setDeterministic(true);
  const keep = openNpu(); // keeps device 0's context alive across the close below
  first.close();
  try {
    using device = openNpu();
    using grad = device.zeros([1, 1, 4]);
    using _r = upsampleNearestExact1dBackward(grad, { outputSize: [4], inputSize: [1, 1, 2] });
    assert.equal(device.deterministic, false);
    assert.equal(emu().aclemuLastLaunchDeterministic(), 0);
  } finally {
    keep.close();
  }
});

EMULATED_LANE.test("npu: a failed upload or download frees what it allocated and names aclrtMemcpy", async () => {
  using device = openNpu();
  const baseline = emuLive();
  for (const make of [() => device.tensor([1, 2, 3, 4], [4]), () => device.zeros([4])]) {
    emu().aclemuFailNextCopy(507000);
    assert.throws(make, (error: AclError) => {
      assert.ok(error instanceof AclError);
      assert.equal(error.code, 507000);
      assert.equal(error.api, "aclrtMemcpy");
      assert.match(error.detail, /injected failure/);
      return true;
    });
    assert.deepEqual(emuLive(), baseline, "the storage was freed");
  }
  using x = device.tensor([1, 2], [2]);
  emu().aclemuFailNextCopy(107000);
  await assert.rejects(() => x.toFloat32Array(), (error: AclError) => error.api === "aclrtMemcpy");
  assert.deepEqual([...await x.toFloat32Array()], [1, 2], "the tensor is still usable");
});
