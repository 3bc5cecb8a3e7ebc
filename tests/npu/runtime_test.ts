// Runtime behaviours of the binding against the emulation: aclFinalize only after our own aclInit
// (100002 means another in-process ACL user owns the runtime), 107021 from aclrtCtxGetSysParamOpt
// read as "off", the status names of the CANN headers, and device memory: memoryInfo() and
// allocations that do not fit failing with the bytes requested and free, leaking nothing.

import assert from "node:assert/strict";
import { AclError, Device, DeviceMemoryError, upsampleBilinear2dBackward } from "../../mod.ts";
import { deviceInternals } from "../../src/device.ts";
import { loadCann } from "../../src/ffi/loader.ts";
import type { NpuBackend } from "../../src/ffi/npu_backend.ts";
import { statusName } from "../../src/ffi/status.ts";
import { emu, EMU_DIR, EMU_OLD_RUNTIME_DIR, EMULATED_LANE, emuLive } from "../support/helpers.ts";

const npuOf = (device: Device): NpuBackend =>
  deviceInternals(device).backend() as unknown as NpuBackend;
const openNpu = (): Device => Device.open({ backend: "npu", libDir: EMU_DIR });

const RAW_INIT = {
  aclInit: { parameters: ["pointer"], result: "i32" },
  aclFinalize: { parameters: [], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

/** Counts the binding's aclFinalize calls (a second, independent look at the same question). */
function countFinalize(): { count: number; restore(): void } {
  const table = loadCann(EMU_DIR).acl as unknown as Record<string, () => number>;
  const original = table.aclFinalize;
  const counter = {
    count: 0,
    restore: (): void => {
      table.aclFinalize = original;
    },
  };
  table.aclFinalize = (): number => {
    counter.count++;
    return original();
  };
  return counter;
}

Deno.test("runtime: status names of the CANN headers, 107021 among them", () => {
  assert.equal(statusName(107021), "ACL_ERROR_RT_SYSPARAMOPT_NOT_SET");
  assert.equal(statusName(100002), "ACL_ERROR_REPEAT_INITIALIZE");
  assert.equal(statusName(561103), "ACLNN_ERR_INNER_NULLPTR");
  assert.equal(statusName(207018), "ACL_ERROR_RT_DEVICE_OOM");
  assert.equal(statusName(561999), "ACLNN_ERR_INNER_*");
  assert.equal(statusName(123), "unknown");
  assert.match(new AclError(107021, "aclrtCtxGetSysParamOpt", "").message, /SYSPARAMOPT_NOT_SET/);
});

EMULATED_LANE.test("runtime: with ACL initialized by another user (100002) the binding never finalizes it", () => {
  const raw = Deno.dlopen(`${EMU_DIR}libascendcl.so`, RAW_INIT);
  const finalize = countFinalize();
  const finalized = emu().aclemuFinalizeCount();
  try {
    // Another in-process ACL user (e.g. a native extension) initialized ACL first.
    assert.equal(raw.symbols.aclInit(null), 0, "no device of this process is open");
    const device = openNpu();
    assert.equal(npuOf(device).runtime.ownsInit, false, "our aclInit answered 100002");
    device.close();
    assert.equal(finalize.count, 0, "the binding did not call aclFinalize");
    assert.equal(emu().aclemuFinalizeCount(), finalized, "no finalize of a shared ACL");
    // ACL is still initialized for its owner: its finalize succeeds (a second one would be 100037).
    assert.equal(raw.symbols.aclFinalize(), 0);
    // On our own: our aclInit answers 0, and the last close finalizes.
    const own = openNpu();
    assert.equal(npuOf(own).runtime.ownsInit, true);
    own.close();
    assert.equal(finalize.count, 1);
    assert.notEqual(raw.symbols.aclFinalize(), 0, "already finalized by the binding");
  } finally {
    finalize.restore();
    raw.close();
  }
});

EMULATED_LANE.test("runtime: a second folder sharing the runtime keeps ACL alive until its last device closes", async () => {
  const finalize = countFinalize();
  try {
    const first = openNpu();
    // The no-v2 folder's libascendcl.so is the same library: one runtime, two binding objects.
    const second = Device.open({ backend: "npu", libDir: `${EMU_DIR}no-v2/` });
    first.close();
    assert.equal(finalize.count, 0, "the other folder's device is still open");
    using grad = second.tensor(new Array(16).fill(1), [1, 1, 4, 4]);
    using result = upsampleBilinear2dBackward(grad, {
      outputSize: [4, 4],
      inputSize: [1, 1, 2, 2],
    });
    assert.deepEqual([...await result.toFloat32Array()], [4, 4, 4, 4]);
    second.close();
    assert.equal(finalize.count, 1, "finalized once, after the last device");
  } finally {
    finalize.restore();
  }
});

EMULATED_LANE.test("runtime: deterministic mode reads as off before any set (107021) and toggles", () => {
  using device = openNpu();
  const backend = npuOf(device);
  // A fresh context has never had the option set: the runtime answers 107021, which means "off".
  const get = backend.runtime.libs.acl.aclrtCtxGetSysParamOpt!;
  const value = new BigInt64Array(1);
  const status = get(0, value);
  assert.ok(status === 107021 || (status === 0 && value[0] === 0n), `answered ${status}`);
  assert.equal(backend.readDeterministic(), false);
  device.setDeterministic(true);
  assert.equal(backend.readDeterministic(), true);
  device.setDeterministic(false);
  assert.equal(backend.readDeterministic(), false);
});

EMULATED_LANE.test("runtime: a runtime answering 107021 for a never-set option reads as off, whatever it wrote", () => {
  using device = openNpu();
  type Get = (opt: number, value: BigInt64Array) => number;
  type Set = (opt: number, value: bigint) => number;
  const table = npuOf(device).runtime.libs.acl as unknown as Record<string, Get | Set>;
  const realGet = table.aclrtCtxGetSysParamOpt as Get;
  const realSet = table.aclrtCtxSetSysParamOpt as Set;
  let set = false;
  // A runtime where nothing was set yet: 107021, and garbage in the out-parameter.
  table.aclrtCtxGetSysParamOpt = (opt: number, value: BigInt64Array): number => {
    if (set) return realGet(opt, value);
    value[0] = 12345n;
    return 107021;
  };
  table.aclrtCtxSetSysParamOpt = (opt: number, value: bigint): number => {
    set = true;
    return realSet(opt, value);
  };
  try {
    assert.equal(npuOf(device).readDeterministic(), false);
    device.setDeterministic(true);
    assert.equal(npuOf(device).readDeterministic(), true);
  } finally {
    table.aclrtCtxGetSysParamOpt = realGet;
    table.aclrtCtxSetSysParamOpt = realSet;
  }
});

EMULATED_LANE.test("runtime: memoryInfo() of the emulated NPU follows allocations", () => {
  using device = openNpu();
  const before = device.memoryInfo();
  assert.ok(before.total > 0 && before.free <= before.total, JSON.stringify(before));
  const t = device.zeros([1 << 20]); // 4 MiB
  const during = device.memoryInfo();
  assert.equal(during.total, before.total);
  assert.ok(before.free - during.free >= 4 << 20, `${before.free} -> ${during.free}`);
  t.dispose();
  assert.equal(device.memoryInfo().free, before.free);
  device.close();
  assert.throws(() => device.memoryInfo(), /memoryInfo: the device was closed/);
});

Deno.test("runtime: memoryInfo() on the CPU backend is host memory (needs --allow-sys)", () => {
  using device = Device.open({ backend: "cpu" });
  if (Deno.permissions.querySync({ name: "sys", kind: "systemMemoryInfo" }).state === "granted") {
    const info = device.memoryInfo();
    const host = Deno.systemMemoryInfo();
    assert.equal(info.total, host.total);
    assert.ok(info.free > 0 && info.free <= info.total);
  } else {
    assert.throws(() => device.memoryInfo(), Deno.errors.NotCapable);
  }
});

EMULATED_LANE.test("runtime: an allocation that does not fit states the bytes requested and free, leaking nothing", () => {
  using device = openNpu();
  // Some memory in use, so the request is more than is free but not more than the device has (a
  // tensor larger than the device's total is a RangeError before any allocation: friction_test.ts).
  using _used = device.zeros([1024]);
  const { free, total } = device.memoryInfo();
  const baseline = emuLive();
  const tooBig = Math.floor(free / 4) + 1;
  assert.ok(tooBig * 4 <= total);
  assert.throws(() => device.zeros([tooBig]), (error) => {
    assert.ok(error instanceof DeviceMemoryError, String(error));
    assert.ok(error instanceof AclError);
    assert.equal(error.api, "aclrtMalloc");
    assert.equal(error.code, 207001);
    assert.equal(error.requestedBytes, tooBig * 4);
    assert.equal(error.totalBytes, total);
    assert.ok(error.freeBytes >= 0 && error.freeBytes < tooBig * 4);
    assert.match(
      error.message,
      new RegExp(`requested ${tooBig * 4} bytes, \\d+ bytes free of ${total}`),
    );
    return true;
  });
  assert.deepEqual(emuLive(), baseline);
});

/** Runs a child Deno on a script of tests/support/child/ (e.g. with ACLEMU_DEVICE_MEMORY, read at load time). */
async function child(
  script: string,
  env: Record<string, string>,
  args: string[] = [],
): Promise<string> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-ffi", "--allow-env", "--allow-read", script, ...args],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, text);
  return text;
}

EMULATED_LANE.test("runtime: on a small device, a result or workspace that does not fit fails clearly", async () => {
  const script = new URL("../support/child/small_device.ts", import.meta.url).pathname;
  const text = await child(script, { ACLEMU_DEVICE_MEMORY: String(1 << 20) });
  assert.match(
    text,
    /result: DeviceMemoryError: aclrtMalloc failed with 207001 .*requested \d+ bytes, \d+ bytes free of 1048576/,
  );
  assert.match(text, /workspace: DeviceMemoryError: .*requested \d+ bytes/);
  assert.match(text, /deferred frees reclaimed/);
  assert.match(text, /nothing leaked/);
});

EMULATED_LANE.test("runtime: an old runtime without the optional symbols works, and deterministic mode fails clearly", async () => {
  const script = new URL("../support/child/old_runtime.ts", import.meta.url).pathname;
  const text = await child(script, {}, [EMU_OLD_RUNTIME_DIR]);
  assert.match(text, /ops run with deterministic mode off/);
  assert.match(
    text,
    /aclrtCtxSetSysParamOpt: deterministic mode needs the context system parameters.*CANN.*but aclrtCtxSetSysParamOpt is missing from the CANN runtime in .*old-runtime/,
  );
  assert.match(text, /errors without the runtime's message/);
  assert.match(text, /nothing leaked/);
});
