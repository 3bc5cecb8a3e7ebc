// Child process of runtime_test.ts: the emulation's old-runtime variant (a libascendcl without
// aclrtCtxSetSysParamOpt/aclrtCtxGetSysParamOpt, aclrtGetSocName and aclGetRecentErrMsg), opened alone
// so no other copy of the runtime is in the process. Usage: old_runtime.ts <libDir>. Prints one line
// per check; any failed assertion exits non-zero.

import assert from "node:assert/strict";
import {
  AclError,
  Device,
  MissingSymbolError,
  upsampleNearestExact2dBackward,
} from "../../../mod.ts";
import { deviceInternals } from "../../../src/device.ts";
import type { NpuBackend } from "../../../src/ffi/npu_backend.ts";

const libDir = Deno.args[0];
const controls = Deno.dlopen(`${libDir}libascendcl.so`, {
  aclemuLiveAllocations: { parameters: [], result: "i64" },
  aclemuLiveObjects: { parameters: [], result: "i64" },
  aclemuLiveStreams: { parameters: [], result: "i64" },
  aclemuFailNextLaunch: { parameters: ["i32"], result: "void" },
}).symbols;
const live = (): bigint[] => [
  controls.aclemuLiveAllocations(),
  controls.aclemuLiveObjects(),
  controls.aclemuLiveStreams(),
];
const missing = (symbol: string) => (error: unknown): boolean => {
  assert.ok(error instanceof MissingSymbolError, String(error));
  assert.equal(error.symbol, symbol);
  assert.match(error.message, /CANN/);
  console.log(`${symbol}: ${error.message}`);
  return true;
};

const baseline = live();
const options = { outputSize: [4, 4], inputSize: [1, 1, 2, 2] };
{
  using device = Device.open({ backend: "npu", libDir });
  assert.match(
    device.name,
    /^Ascend NPU #0 \(host emulation, not an NPU\)$/,
    "no aclrtGetSocName: a generic name",
  );
  using grad = device.tensor(new Array(16).fill(1), [1, 1, 4, 4]);
  using result = upsampleNearestExact2dBackward(grad, options);
  assert.deepEqual([...await result.toFloat32Array()], [4, 4, 4, 4]);
  console.log("ops run with deterministic mode off");

  device.setDeterministic(false); // off is this runtime's only mode
  assert.throws(() => device.setDeterministic(true), missing("aclrtCtxSetSysParamOpt"));
  assert.equal(device.deterministic, false);
  const before = live();
  assert.throws(
    () => upsampleNearestExact2dBackward(grad, { ...options, deterministic: true }),
    missing("aclrtCtxSetSysParamOpt"),
  );
  assert.deepEqual(live(), before, "the per-call refusal left nothing behind");
  const backend = deviceInternals(device).backend() as unknown as NpuBackend;
  assert.throws(() => backend.readDeterministic(), missing("aclrtCtxGetSysParamOpt"));

  // No aclGetRecentErrMsg: the status code and API are all the error can carry.
  controls.aclemuFailNextLaunch(507015);
  assert.throws(() => upsampleNearestExact2dBackward(grad, options), (error) => {
    assert.ok(error instanceof AclError, String(error));
    assert.equal(error.detail, "");
    assert.equal(
      error.message,
      "aclnnUpsampleNearestExact2dBackward failed with 507015 (ACL_ERROR_RT_AICORE_EXCEPTION)",
    );
    return true;
  });
  console.log("errors without the runtime's message");
}
assert.throws(
  () => Device.open({ backend: "npu", libDir, deterministic: true }),
  missing("aclrtCtxSetSysParamOpt"),
);
assert.deepEqual(live(), baseline, "nothing leaked, the refused open included");
console.log("nothing leaked");
