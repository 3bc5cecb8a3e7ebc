// Fault injection on the emulated NPU: every allocation point of every op failed in turn (the
// result, the upload in device.tensor/zeros, the workspace an op asks for, and its growth), failed
// launches and failed syncs. The workspaces are the emulated generation's: on Atlas A2/A3 nearest-exact
// 2d asks for its intermediate (N*C*outH*inW*4 bytes), 1d and bilinear for none; on the Ascend 950
// nearest-exact asks for 16 MiB and bilinear for 32 bytes (native/README.md, "Ascend 950"). Each must surface as AclError with the status code and
// the API; afterwards device memory and aclnn objects are back to their baseline (after a
// synchronize where frees are deferred) and the same device computes the next op correctly.

import assert from "node:assert/strict";
import {
  AclError,
  Device,
  type DType,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { assertMatchesDeviceOp, type OpOptions } from "../support/device_model.ts";
import {
  emu,
  EMU_DIR,
  EMU_NO_V2_DIR,
  EMULATED_LANE,
  emulatedGeneration,
  emulatedSoc,
  emuLive,
  rng,
} from "../support/helpers.ts";

interface OpCase {
  readonly label: string;
  readonly api: string;
  readonly gradShape: number[];
  readonly options: Record<string, unknown>;
  readonly run: (grad: Tensor, options: Record<string, unknown>) => Tensor;
  /**
   * Device allocations of one call without `out` on a fresh device (result, then workspace), per
   * emulated generation.
   */
  readonly allocations: { readonly a2: number; readonly "950": number };
}

/** The allocations of one call of `op` on a fresh device of the emulated generation. */
const allocationsOf = (op: OpCase): number =>
  op.allocations[emulatedGeneration() === "950" ? "950" : "a2"];

const OPS: readonly OpCase[] = [
  {
    label: "nearest-exact 1d",
    api: "aclnnUpsampleNearestExact1dBackward",
    gradShape: [2, 3, 10],
    options: { outputSize: [10], inputSize: [2, 3, 4], scales: 2.5 },
    run: (g, o) => upsampleNearestExact1dBackward(g, o as never),
    allocations: { a2: 1, "950": 2 },
  },
  {
    label: "nearest-exact 2d",
    api: "aclnnUpsampleNearestExact2dBackward",
    gradShape: [2, 3, 6, 8],
    options: { outputSize: [6, 8], inputSize: [2, 3, 3, 5] },
    run: (g, o) => upsampleNearestExact2dBackward(g, o as never),
    allocations: { a2: 2, "950": 2 },
  },
  {
    label: "bilinear 2d",
    api: "aclnnUpsampleBilinear2dBackwardV2",
    gradShape: [2, 3, 6, 8],
    options: { outputSize: [6, 8], inputSize: [2, 3, 3, 5], scalesH: 2, scalesW: 1.6 },
    run: (g, o) => upsampleBilinear2dBackward(g, o as never),
    allocations: { a2: 1, "950": 2 },
  },
];

const DTYPE_CYCLE: readonly DType[] = ["float32", "float16", "bfloat16"];
const ALLOCATION_FAILED = 207001;

const openNpu = (libDir = EMU_DIR): Device => Device.open({ backend: "npu", libDir });
const valuesFor = (shape: readonly number[], seed: number): Float32Array => {
  const r = rng(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  return Float32Array.from({ length: n }, () => Math.fround((r() - 0.5) * 8));
};

/** Throws unless an NPU result is what the device computes for the op (tests/support/device_model.ts). */
async function assertDevice(
  actual: Float32Array,
  op: OpCase,
  values: Float32Array,
  dtype: DType,
  what: string,
  options = op.options,
): Promise<void> {
  const fn = op.api.includes("1d")
    ? upsampleNearestExact1dBackward
    : op.api.includes("Nearest")
    ? upsampleNearestExact2dBackward
    : upsampleBilinear2dBackward;
  const version = op.api === "aclnnUpsampleBilinear2dBackward" ? 1 : 2;
  // The emulated generation's rules (devices here run with deterministic mode off).
  await assertMatchesDeviceOp(
    actual,
    fn,
    values,
    dtype,
    options as unknown as OpOptions,
    what,
    version,
    { soc: emulatedSoc() ?? undefined, deterministic: false },
  );
}

// A nonblocking aclrtSynchronizeStream runs on a worker thread, and aclGetRecentErrMsg is per thread
// (CANN's default err_msg_mode), so a failed sync carries no runtime message on the JS thread.
const NO_DETAIL = new Set(["aclrtSynchronizeStream"]);

function assertAclError(error: unknown, code: number, api: string, what: string): true {
  assert.ok(error instanceof AclError, `${what}: expected AclError, got ${error}`);
  assert.equal(error.code, code, `${what}: code`);
  assert.equal(error.api, api, `${what}: api`);
  assert.notEqual(error.statusName, "unknown", `${what}: status name`);
  assert.match(error.message, new RegExp(`^${api} failed with ${code} \\(${error.statusName}\\)`));
  if (!NO_DETAIL.has(api)) {
    assert.ok(error.detail.length > 0, `${what}: the runtime's message is attached`);
  }
  return true;
}

/** Asserts live allocations and aclnn objects equal `baseline` (and no launch happened). */
function assertBaseline(
  baseline: { allocations: bigint; objects: bigint },
  launches: bigint,
  what: string,
): void {
  assert.deepEqual(emuLive(), baseline, `${what}: device memory or aclnn objects not at baseline`);
  assert.equal(emu().aclemuLaunchCount(), launches, `${what}: a launch happened`);
}

/** The device still works: the op's result is what the device computes. */
async function assertWorks(
  device: Device,
  op: OpCase,
  dtype: DType,
  seed: number,
  what: string,
): Promise<void> {
  const values = valuesFor(op.gradShape, seed);
  using grad = device.tensor(values, op.gradShape, { dtype });
  using result = op.run(grad, op.options);
  await assertDevice(await result.toFloat32Array(), op, values, dtype, what);
}

EMULATED_LANE.test("faults: the allocation points of each op (fresh device, empty workspace cache)", () => {
  for (const op of OPS) {
    using device = openNpu();
    using grad = device.zeros(op.gradShape);
    const before = emu().aclemuLiveAllocations();
    using _result = op.run(grad, op.options);
    assert.equal(
      emu().aclemuLiveAllocations() - before,
      BigInt(allocationsOf(op)),
      `${op.label}: allocations of one call`,
    );
    using out = device.zeros(op.options.inputSize as number[]);
    const withOut = emu().aclemuLiveAllocations();
    op.run(grad, { ...op.options, out });
    assert.equal(emu().aclemuLiveAllocations(), withOut, `${op.label}: with out and a warm cache`);
  }
});

EMULATED_LANE.test("faults: every allocation of every op failed in turn", async () => {
  let seed = 1;
  let cases = 0;
  try {
    for (const op of OPS) {
      for (const withOut of [false, true]) {
        const points = allocationsOf(op) - (withOut ? 1 : 0);
        for (let k = 1; k <= points; k++) {
          const dtype = DTYPE_CYCLE[seed % 3];
          const what = `${op.label}, ${withOut ? "with out, " : ""}allocation ${k} of ${points}`;
          using device = openNpu();
          const values = valuesFor(op.gradShape, seed++);
          using grad = device.tensor(values, op.gradShape, { dtype });
          using out = withOut ? device.zeros(op.options.inputSize as number[], { dtype }) : null;
          await device.synchronize();
          const baseline = emuLive();
          const launches = emu().aclemuLaunchCount();
          emu().aclemuFailAllocation(BigInt(k));
          const options = out ? { ...op.options, out } : op.options;
          assert.throws(
            () => op.run(grad, options),
            (e) => assertAclError(e, ALLOCATION_FAILED, "aclrtMalloc", what),
          );
          assert.equal(emuLive().objects, baseline.objects, `${what}: aclnn objects leaked`);
          await device.synchronize();
          assertBaseline(baseline, launches, what);
          if (out) assert.equal(out.disposed, false, `${what}: the caller's out was disposed`);
          // The same device, the same tensors: the op now succeeds and is right.
          using result = op.run(grad, options);
          await assertDevice(
            await result.toFloat32Array(),
            op,
            values,
            dtype,
            `${what}: the next call`,
          );
          cases++;
        }
      }
    }
  } finally {
    emu().aclemuResetFaults();
  }
  console.log(`  ${cases} allocation faults injected into ops`);
  // A2/A3: nearest 1d 1 + 0, 2d 2 + 1, bilinear 1 + 0; 950: each op 2 + 1.
  assert.equal(cases, emulatedGeneration() === "950" ? 9 : 5);
});

EMULATED_LANE.test("faults: the allocation in device.tensor and device.zeros", async () => {
  using device = openNpu();
  await device.synchronize();
  const baseline = emuLive();
  try {
    for (const dtype of DTYPE_CYCLE) {
      emu().aclemuFailAllocation(1n);
      assert.throws(
        () => device.tensor([1, 2, 3, 4, 5, 6], [1, 2, 3], { dtype }),
        (e) => assertAclError(e, ALLOCATION_FAILED, "aclrtMalloc", `tensor ${dtype}`),
      );
      assert.deepEqual(emuLive(), baseline, `tensor ${dtype}: leaked`);
      emu().aclemuFailAllocation(1n);
      assert.throws(
        () => device.zeros([2, 2], { dtype }),
        (e) => assertAclError(e, ALLOCATION_FAILED, "aclrtMalloc", `zeros ${dtype}`),
      );
      assert.deepEqual(emuLive(), baseline, `zeros ${dtype}: leaked`);
    }
    // The second of two uploads fails: the first tensor is untouched and usable.
    emu().aclemuFailAllocation(2n);
    using first = device.tensor([1, 2, 3, 4], [1, 1, 4]);
    assert.throws(() => device.tensor([5, 6], [1, 1, 2]), AclError);
    assert.deepEqual([...await first.toFloat32Array()], [1, 2, 3, 4]);
    assert.equal(emuLive().allocations, baseline.allocations + 1n);
  } finally {
    emu().aclemuResetFaults();
  }
  await assertWorks(device, OPS[1], "float16", 99, "after upload faults");
});

EMULATED_LANE.test("faults: growing the cached workspace fails, the old one is kept and still used", async () => {
  // A2/A3: a small nearest-exact 2d call, then one whose intermediate (N*C*outH*inW*4 bytes) is
  // bigger. 950: nearest-exact always asks 16 MiB, so a bilinear call (32 bytes) warms the cache
  // and nearest-exact 2d grows it.
  const on950 = emulatedGeneration() === "950";
  const op = on950 ? OPS[2] : OPS[1];
  using device = openNpu();
  await assertWorks(device, op, "float32", 5, "warm-up (small workspace)");
  const big: OpCase = {
    ...OPS[1],
    gradShape: [1, 2, 30, 40],
    options: { outputSize: [30, 40], inputSize: [1, 2, 7, 9] },
  };
  const values = valuesFor(big.gradShape, 6);
  using grad = device.tensor(values, big.gradShape);
  await device.synchronize();
  const baseline = emuLive();
  try {
    emu().aclemuFailAllocation(2n); // 1: the result, 2: the grown workspace
    assert.throws(
      () => big.run(grad, big.options),
      (e) => assertAclError(e, ALLOCATION_FAILED, "aclrtMalloc", "workspace growth"),
    );
  } finally {
    emu().aclemuResetFaults();
  }
  await device.synchronize();
  assertBaseline(baseline, 0n, "workspace growth");
  // The small workspace is still cached and valid for small calls, and growth works afterwards.
  await assertWorks(device, op, "float32", 7, "small call after the failed growth");
  assert.deepEqual(emuLive(), baseline);
  using result = big.run(grad, big.options);
  await assertDevice(await result.toFloat32Array(), big, values, "float32", "grown");
  assert.equal(emuLive().allocations, baseline.allocations + 1n, "old workspace replaced");
});

EMULATED_LANE.test("faults: a failed launch of each op, with and without out", async () => {
  const codes = [507015, 361001, 561000, 107000];
  let cases = 0;
  for (const op of OPS) {
    using device = openNpu();
    for (const [i, code] of codes.entries()) {
      const dtype = DTYPE_CYCLE[i % 3];
      const what = `${op.label} ${dtype}, launch fails with ${code}`;
      const values = valuesFor(op.gradShape, 100 + i);
      using grad = device.tensor(values, op.gradShape, { dtype });
      using out = i % 2 === 1 ? device.zeros(op.options.inputSize as number[], { dtype }) : null;
      const options = out ? { ...op.options, out } : op.options;
      // Warm the workspace cache so the baseline includes it.
      op.run(grad, op.options).dispose();
      await device.synchronize();
      const baseline = emuLive();
      const launches = emu().aclemuLaunchCount();
      try {
        emu().aclemuFailNextLaunch(code);
        assert.throws(() => op.run(grad, options), (e) => assertAclError(e, code, op.api, what));
      } finally {
        emu().aclemuFailNextLaunch(0);
      }
      assert.equal(emuLive().objects, baseline.objects, `${what}: aclnn objects leaked`);
      await device.synchronize();
      assertBaseline(baseline, launches, what);
      if (out) assert.equal(out.disposed, false, `${what}: the caller's out was disposed`);
      using result = op.run(grad, options);
      if (out) assert.equal(result, out);
      await assertDevice(
        await result.toFloat32Array(),
        op,
        values,
        dtype,
        `${what}: the next call`,
      );
      cases++;
    }
  }
  console.log(`  ${cases} launch faults injected`);
});

EMULATED_LANE.test("faults: a failed launch of bilinear V1 names the V1 operator", async () => {
  using device = openNpu(EMU_NO_V2_DIR);
  const op: OpCase = { ...OPS[2], api: "aclnnUpsampleBilinear2dBackward" };
  const options = { outputSize: [6, 8], inputSize: [2, 3, 3, 5] };
  using grad = device.tensor(valuesFor(op.gradShape, 3), op.gradShape);
  // Warm the workspace cache so the baseline includes it (the 950's V1 asks for 32 bytes).
  op.run(grad, options).dispose();
  await device.synchronize();
  const baseline = emuLive();
  try {
    emu().aclemuFailNextLaunch(507015);
    assert.throws(() => op.run(grad, options), (e) => assertAclError(e, 507015, op.api, "V1"));
  } finally {
    emu().aclemuResetFaults();
  }
  await device.synchronize();
  assert.deepEqual(emuLive(), baseline);
  await assertWorks(device, { ...op, options }, "float16", 4, "V1 after the fault");
});

EMULATED_LANE.test("faults: a failed sync rejects the read (or synchronize), then the data is readable", async () => {
  const code = 507046;
  for (const op of OPS) {
    using device = openNpu();
    const values = valuesFor(op.gradShape, 11);
    using grad = device.tensor(values, op.gradShape);
    const check = (got: Float32Array, what: string): Promise<void> =>
      assertDevice(got, op, values, "float32", `${op.label}: ${what}`);
    op.run(grad, op.options).dispose();
    await device.synchronize();
    const baseline = emuLive();
    try {
      // Through a read.
      const result = op.run(grad, op.options);
      emu().aclemuFailNextSync(code);
      await assert.rejects(
        () => result.toFloat32Array(),
        (e) => assertAclError(e, code, "aclrtSynchronizeStream", `${op.label} read`),
      );
      await check(await result.toFloat32Array(), "read after the failure");
      result.dispose();
      assert.deepEqual(emuLive(), baseline, `${op.label}: after the read failure`);

      // Through device.synchronize(), with results dropped while queued (deferred frees).
      op.run(grad, op.options).dispose();
      const kept = op.run(grad, op.options);
      op.run(grad, op.options).dispose();
      emu().aclemuFailNextSync(code);
      await assert.rejects(
        () => device.synchronize(),
        (e) => assertAclError(e, code, "aclrtSynchronizeStream", `${op.label} synchronize`),
      );
      // The deferred frees happened despite the failure.
      assert.equal(emuLive().allocations, baseline.allocations + 1n, `${op.label}: deferred frees`);
      await check(await kept.toFloat32Array(), "after synchronize failed");
      kept.dispose();

      // Two readers waiting on the failing sync: every rejection is the AclError, and both
      // results are readable afterwards.
      const a = op.run(grad, op.options);
      const b = op.run(grad, op.options);
      emu().aclemuFailNextSync(code);
      const settled = await Promise.allSettled([a.toFloat32Array(), b.toFloat32Array()]);
      const rejected = settled.filter((s) => s.status === "rejected");
      assert.ok(rejected.length >= 1, `${op.label}: the failed sync was reported`);
      for (const s of rejected) {
        assertAclError(s.reason, code, "aclrtSynchronizeStream", `${op.label} concurrent`);
      }
      await check(await a.toFloat32Array(), "a");
      await check(await b.toFloat32Array(), "b");
      a.dispose();
      b.dispose();
    } finally {
      emu().aclemuResetFaults();
    }
    await device.synchronize();
    assert.deepEqual(emuLive(), baseline, `${op.label}: after the sync faults`);
    await assertWorks(device, op, "bfloat16", 12, `${op.label}: after sync faults`);
  }
});

EMULATED_LANE.test("faults: everything injected above left nothing behind once the devices closed", () => {
  const live = emuLive();
  assert.equal(live.allocations, 0n);
  assert.equal(live.objects, 0n);
  assert.equal(emu().aclemuLiveStreams(), 0n);
});
