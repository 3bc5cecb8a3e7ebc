// Catchers of binding bugs a reviewer planted in src/ffi and src/tensor that the rest of the suite let
// through, each checked at the FFI boundary (the calls the binding makes, recorded by wrapping its
// symbol table) and, where the emulation can tell, by the emulation too:
// - the old workspace freed while a queued kernel still uses it (growth), and close() freeing without
//   a stream sync: the emulation counts frees of memory a queued or running task references;
// - 3-D/4-D views tagged with format ND: the aclFormat given to aclCreateTensor;
// - uploads/downloads with kind HOST_TO_HOST: the kind given to aclrtMemcpy;
// - the workspace size read as 32 bits: a phase 1 answering 2^32 + 64 bytes;
// plus second, independent guards of behaviours that had only one: deterministic mode reaching the
// runtime before each launch, and a read holding its storage until the copy is done.

import assert from "node:assert/strict";
import {
  Device,
  DeviceMemoryError,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { deviceInternals } from "../../src/device.ts";
import type { NpuBackend, NpuBuffer } from "../../src/ffi/npu_backend.ts";
import { ACL_FORMAT, MEMCPY_KIND } from "../../src/ffi/symbols.ts";
import { tensorInternals } from "../../src/tensor/tensor.ts";
import { emu, EMU_DIR, EMULATED_LANE, emuLive } from "../support/helpers.ts";

type Fn = (...args: unknown[]) => unknown;

const npuOf = (device: Device): NpuBackend =>
  deviceInternals(device).backend() as unknown as NpuBackend;
const addressOf = (tensor: Tensor): bigint =>
  (tensorInternals(tensor).storage.handle as NpuBuffer).address;
const openNpu = (): Device => Device.open({ backend: "npu", libDir: EMU_DIR });

/** Wraps entries of the device's symbol tables; `restore()` puts the originals back. */
function patcher(device: Device): {
  patch(table: "acl" | "nnopbase" | "opapi", name: string, wrap: (original: Fn) => Fn): void;
  restore(): void;
} {
  const libs = npuOf(device).runtime.libs;
  const saved: Array<[Record<string, unknown>, string, unknown]> = [];
  return {
    patch(table, name, wrap): void {
      const t = libs[table] as unknown as Record<string, unknown>;
      assert.equal(typeof t[name], "function", `${name} is loaded`);
      saved.push([t, name, t[name]]);
      t[name] = wrap(t[name] as Fn);
    },
    restore(): void {
      for (const [t, name, original] of saved.reverse()) t[name] = original;
      saved.length = 0;
    },
  };
}

// The emulation's count of frees of memory a queued or running task references.
const referencedFrees = (): bigint => emu().aclemuReferencedFrees();

EMULATED_LANE.test("binding bugs: growing the workspace while a kernel that uses the old one is queued", async () => {
  const baseline = emuLive();
  const before = referencedFrees();
  const device = openNpu();
  // A2/A3: nearest-exact 2d's workspace is its intermediate, so a bigger call grows it. The 950's
  // nearest-exact always asks 16 MiB and its bilinear 32 bytes: a bilinear call first, then a
  // nearest-exact one grows the cache (native/README.md, "Ascend 950").
  const on950 = device.generation === "950";
  const { patch, restore } = patcher(device);
  // Every workspace handed to a phase 2, and every free: a workspace freed while the stream still
  // holds a launch that was given it is the bug, whatever the emulation does with the memory. Until
  // the first await nothing but a blocking sync can have drained the stream.
  const workspaces: bigint[] = [];
  const freedEarly: string[] = [];
  let queued = 0;
  for (const name of ["aclnnUpsampleNearestExact2dBackward", "aclnnUpsampleBilinear2dBackwardV2"]) {
    patch("opapi", name, (f) => (...args) => {
      const status = f(...args);
      if (status === 0) {
        workspaces.push(args[0] as bigint);
        queued++;
      }
      return status;
    });
  }
  patch("acl", "aclrtFree", (f) => (address) => {
    if (queued > 0 && workspaces.includes(address as bigint)) {
      freedEarly.push(`workspace 0x${(address as bigint).toString(16)} freed with work queued`);
    }
    return f(address);
  });
  patch("acl", "aclrtSynchronizeStream", (f) => (stream) => {
    const status = f(stream);
    queued = 0;
    return status;
  });
  try {
    emu().aclemuSetStreamDelayUs(20_000n);
    using small = device.tensor(new Array(2 * 2 * 8 * 8).fill(1), [2, 2, 8, 8]);
    using large = device.tensor(new Array(2 * 2 * 64 * 64).fill(1), [2, 2, 64, 64]);
    // Every input cell gathers weight 4 (2 x 2 outputs) with either op.
    using a = (on950 ? upsampleBilinear2dBackward : upsampleNearestExact2dBackward)(small, {
      outputSize: [8, 8],
      inputSize: [2, 2, 4, 4],
    });
    // Queued behind `a`, and needs a bigger workspace: the cache grows while `a` waits.
    using b = upsampleNearestExact2dBackward(large, {
      outputSize: [64, 64],
      inputSize: [2, 2, 16, 16],
    });
    assert.equal(workspaces.length, 2);
    assert.notEqual(workspaces[0], 0n, "the first call was given a workspace");
    assert.notEqual(workspaces[0], workspaces[1], "the workspace grew");
    assert.deepEqual(freedEarly, []);
    assert.deepEqual([...await a.toFloat32Array()], new Array(64).fill(4));
    assert.deepEqual([...await b.toFloat32Array()], new Array(1024).fill(16));
  } finally {
    emu().aclemuSetStreamDelayUs(0n);
    restore();
    device.close();
  }
  assert.equal(referencedFrees() - before, 0n, "the emulation saw no free of referenced memory");
  assert.deepEqual(emuLive(), baseline);
});

EMULATED_LANE.test("binding bugs: close() with queued work synchronizes before it frees anything", () => {
  const baseline = emuLive();
  const before = referencedFrees();
  const device = openNpu();
  const { patch, restore } = patcher(device);
  const calls: string[] = [];
  patch("acl", "aclrtSynchronizeStream", (f) => (stream) => {
    calls.push("sync");
    return f(stream);
  });
  patch("acl", "aclrtFree", (f) => (address) => {
    calls.push("free");
    return f(address);
  });
  try {
    emu().aclemuSetStreamDelayUs(20_000n);
    const grad = device.tensor(new Array(64).fill(1), [1, 1, 8, 8]);
    upsampleNearestExact2dBackward(grad, { outputSize: [8, 8], inputSize: [1, 1, 4, 4] });
    upsampleBilinear2dBackward(grad, { outputSize: [8, 8], inputSize: [1, 1, 4, 4] });
    calls.length = 0;
    device.close(); // the results, the gradient and the workspace are still in use by the stream
  } finally {
    emu().aclemuSetStreamDelayUs(0n);
    restore();
  }
  assert.equal(calls[0], "sync", `close() began with ${calls.join(", ")}`);
  assert.ok(calls.filter((c) => c === "free").length >= 4, "the tensors and workspace were freed");
  assert.equal(referencedFrees() - before, 0n, "the emulation saw no free of referenced memory");
  assert.deepEqual(emuLive(), baseline);
});

EMULATED_LANE.test("binding bugs: views are tagged NCL (3-D) and NCHW (4-D), never ND", async () => {
  using device = openNpu();
  const { patch, restore } = patcher(device);
  const formats = new Map<number, Set<number>>();
  patch("nnopbase", "aclCreateTensor", (f) => (...args) => {
    const rank = Number(args[1] as bigint);
    if (!formats.has(rank)) formats.set(rank, new Set());
    formats.get(rank)!.add(args[5] as number);
    return f(...args);
  });
  try {
    // Fresh buffers so every descriptor is created here.
    using grad1 = device.tensor([1, 2, 3, 4], [1, 1, 4]);
    using grad2 = device.tensor(new Array(16).fill(1), [1, 1, 4, 4]);
    using r1 = upsampleNearestExact1dBackward(grad1, { outputSize: [4], inputSize: [1, 1, 2] });
    using r2 = upsampleNearestExact2dBackward(grad2, {
      outputSize: [4, 4],
      inputSize: [1, 1, 2, 2],
    });
    using r3 = upsampleBilinear2dBackward(grad2.transpose(2, 3), {
      outputSize: [4, 4],
      inputSize: [1, 1, 2, 2],
    });
    assert.deepEqual([...await r1.toFloat32Array()], [3, 7]);
    assert.deepEqual([...await r2.toFloat32Array()], [4, 4, 4, 4]);
    assert.deepEqual([...await r3.toFloat32Array()], [4, 4, 4, 4]);
  } finally {
    restore();
  }
  assert.deepEqual([...formats.get(3)!], [ACL_FORMAT.NCL]);
  assert.deepEqual([...formats.get(4)!], [ACL_FORMAT.NCHW]);
});

EMULATED_LANE.test("binding bugs: uploads are HOST_TO_DEVICE and downloads DEVICE_TO_HOST", async () => {
  using device = openNpu();
  const { patch, restore } = patcher(device);
  const kinds: string[] = [];
  patch("acl", "aclrtMemcpyToDevice", (f) => (...args) => {
    kinds.push(`up ${args[4]}`);
    return f(...args);
  });
  patch("acl", "aclrtMemcpyToHost", (f) => (...args) => {
    kinds.push(`down ${args[4]}`);
    return f(...args);
  });
  try {
    using x = device.tensor([1, 2, 3], [3]);
    using z = device.zeros([2]);
    assert.deepEqual([...await x.toFloat32Array()], [1, 2, 3]);
    assert.deepEqual([...await z.toFloat32Array()], [0, 0]);
  } finally {
    restore();
  }
  const up = `up ${MEMCPY_KIND.hostToDevice}`;
  const down = `down ${MEMCPY_KIND.deviceToHost}`;
  assert.deepEqual(kinds, [up, up, down, down]);
});

EMULATED_LANE.test("binding bugs: a workspace size above 2^32 bytes is requested whole", async () => {
  using device = openNpu();
  using grad = device.tensor(new Array(64).fill(1), [1, 1, 8, 8]);
  const options = { outputSize: [8, 8], inputSize: [1, 1, 4, 4] };
  await device.synchronize();
  const baseline = emuLive();
  const huge = 2n ** 32n + 64n;
  const { patch, restore } = patcher(device);
  const requests: bigint[] = [];
  // Phase 1 answers a size only the low 32 bits of which fit in a uint32 (64 bytes): a binding that
  // reads 32 bits would allocate 64 bytes and launch.
  patch("opapi", "aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize", (f) => (...args) => {
    const status = f(...args);
    (args[6] as BigUint64Array)[0] = huge;
    return status;
  });
  // No 4 GiB on the host for this: the request is recorded and refused as the device would.
  patch("acl", "aclrtMalloc", (f) => (out, size, policy) => {
    requests.push(size as bigint);
    return (size as bigint) > 2n ** 32n ? 207001 : f(out, size, policy);
  });
  const launches = emu().aclemuLaunchCount();
  try {
    assert.throws(() => upsampleNearestExact2dBackward(grad, options), (error) => {
      assert.ok(error instanceof DeviceMemoryError, String(error));
      assert.equal(error.requestedBytes, Number(huge));
      assert.match(error.message, /requested 4294967360 bytes/);
      return true;
    });
  } finally {
    restore();
  }
  assert.equal(requests.at(-1), huge);
  assert.equal(emu().aclemuLaunchCount(), launches, "nothing was launched");
  assert.deepEqual(emuLive(), baseline, "result, executor and descriptors were released");
});

EMULATED_LANE.test("binding bugs (second guard): the deterministic value in effect at each launch is the call's", async () => {
  using device = openNpu();
  using grad = device.zeros([1, 1, 4, 4]);
  const { patch, restore } = patcher(device);
  let current: bigint | null = null; // what the binding last set on the context
  const seen: Array<bigint | null> = [];
  patch("acl", "aclrtCtxSetSysParamOpt", (f) => (opt, value) => {
    const status = f(opt, value);
    if (status === 0 && opt === 0) current = value as bigint;
    return status;
  });
  for (const name of ["aclnnUpsampleBilinear2dBackwardV2", "aclnnUpsampleNearestExact2dBackward"]) {
    patch("opapi", name, (f) => (...args) => {
      seen.push(current);
      return f(...args);
    });
  }
  const options = { outputSize: [4, 4], inputSize: [1, 1, 2, 2] };
  try {
    const wanted = [false, true, true, false, true, false];
    for (const [i, deterministic] of wanted.entries()) {
      const op = i % 2 === 0 ? upsampleBilinear2dBackward : upsampleNearestExact2dBackward;
      using _r = op(grad, { ...options, deterministic });
    }
    device.setDeterministic(true);
    using _d = upsampleBilinear2dBackward(grad, options); // the device's mode
    await device.synchronize();
    // The first launch may rely on the default (never set): off.
    assert.deepEqual(
      seen.map((v) => v === 1n),
      [...wanted, true],
      `values in effect: ${seen.join(", ")}`,
    );
  } finally {
    restore();
  }
});

EMULATED_LANE.test("binding bugs (second guard): a read copies its storage before the storage is freed", async () => {
  using device = openNpu();
  using grad = device.tensor(new Array(16).fill(1), [1, 1, 4, 4]);
  const { patch, restore } = patcher(device);
  const events: string[] = [];
  let watched = -1n;
  patch("acl", "aclrtMemcpyToHost", (f) => (...args) => {
    if (args[2] === watched) events.push("copy");
    return f(...args);
  });
  patch("acl", "aclrtFree", (f) => (address) => {
    if (address === watched) events.push("free");
    return f(address);
  });
  emu().aclemuSetStreamDelayUs(20_000n);
  try {
    const result = upsampleBilinear2dBackward(grad, {
      outputSize: [4, 4],
      inputSize: [1, 1, 2, 2],
    });
    watched = addressOf(result);
    const read = result.toFloat32Array();
    result.dispose(); // while the read waits for the stream
    await assert.rejects(read, /was disposed/);
  } finally {
    emu().aclemuSetStreamDelayUs(0n);
    restore();
  }
  assert.deepEqual(events, ["copy", "free"]);
});
