// The emulation's environment (ACLEMU_SOC, ACLEMU_DEVICE_MEMORY), seen through the public API. The
// emulation reads both once per process, so each case runs tests/support/child/device_name.ts in a child Deno.

import assert from "node:assert/strict";
import { EMULATED_LANE } from "../support/helpers.ts";

const CHILD = new URL("../support/child/device_name.ts", import.meta.url).pathname;

/** The child's JSON line (its last line of output) under `env` on top of this process's. */
async function openWith(env: Record<string, string>): Promise<Record<string, unknown>> {
  const inherited = Deno.env.toObject();
  delete inherited.ACLEMU_SOC;
  delete inherited.ACLEMU_DEVICE_MEMORY;
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-ffi", "--allow-env", "--allow-read", CHILD],
    env: { ...inherited, ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout).trim().split("\n");
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  return JSON.parse(stdout[stdout.length - 1]);
}

Deno.test({
  name: "emulator env: ACLEMU_SOC names the device; empty, the runtime answers no SoC",
  ignore: EMULATED_LANE.ignore !== undefined,
}, async () => {
  assert.deepEqual(await openWith({}), {
    name: "Ascend910B3 #0 (host emulation, not an NPU)",
    total: 4 * 2 ** 30,
  });
  assert.equal(
    (await openWith({ ACLEMU_SOC: "Ascend910_9391" })).name,
    "Ascend910_9391 #0 (host emulation, not an NPU)",
  );
  // aclrtGetSocName answers NULL: the binding falls back to a generic name.
  assert.equal(
    (await openWith({ ACLEMU_SOC: "" })).name,
    "Ascend NPU #0 (host emulation, not an NPU)",
  );
});

Deno.test({
  name:
    "emulator env: ACLEMU_DEVICE_MEMORY sets the capacity; a malformed value fails aclInit, naming it",
  ignore: EMULATED_LANE.ignore !== undefined,
}, async () => {
  assert.equal((await openWith({ ACLEMU_DEVICE_MEMORY: "123456" })).total, 123456);
  const bad = await openWith({ ACLEMU_DEVICE_MEMORY: "4GiB" });
  assert.equal(bad.error, "AclError");
  assert.match(String(bad.message), /aclInit failed with 100000 .*ACLEMU_DEVICE_MEMORY="4GiB"/);
});
