// Discovery frictions: with `--allow-ffi` alone (how `deno test` is often run) the unreadable
// environment leads the message, naming the variables and the flag that grants them; a CANN root
// given as ACLNN_LIB_DIR or libDir is searched where CANN keeps its libraries; the host emulation
// tells itself apart from hardware by a symbol only it exports.

import assert from "node:assert/strict";
import { Device } from "../../mod.ts";
import { makeToolkit, makeTree, removeTree, runDeno } from "../support/cann_tree.ts";
import { configuredEmulationSoc, EMU_DIR, EMULATED_LANE } from "../support/helpers.ts";

const CHILD = new URL("../support/child/open_device.ts", import.meta.url).pathname;
const ALL = ["--allow-ffi", "--allow-env", "--allow-read"];

interface Opened {
  backend?: string;
  fallbackReason?: string;
  error?: string;
  message?: string;
}

async function open(
  options: Record<string, unknown>,
  flags: string[],
  env: Record<string, string>,
): Promise<Opened> {
  const child = await runDeno(CHILD, { flags, env, args: [JSON.stringify(options)] });
  assert.equal(child.code, 0, child.stderr);
  return JSON.parse(child.stdout.trim());
}

Deno.test("discovery: with --allow-ffi alone, the unreadable ACLNN_LIB_DIR leads the message", async () => {
  const env = { ACLNN_LIB_DIR: EMU_DIR };
  const npu = await open({ backend: "npu" }, ["--allow-ffi"], env);
  assert.equal(npu.error, "LibraryLoadError");
  const auto = await open({}, ["--allow-ffi"], env);
  assert.equal(auto.backend, "cpu");
  for (const message of [npu.message!, auto.fallbackReason!]) {
    const lines = message.split("\n");
    assert.match(
      lines[0],
      /^could not load CANN: ACLNN_LIB_DIR, ASCEND_HOME_PATH, ASCEND_INSTALL_PATH, HOME could not be read \(no --allow-env for them\)/,
    );
    assert.match(
      lines.at(-1)!,
      /^fix: run with --allow-env=ACLNN_LIB_DIR,ASCEND_HOME_PATH,ASCEND_INSTALL_PATH,HOME \(or --allow-env\) and --allow-read/,
    );
  }
  // A grant of exactly those variables is enough.
  const granted = await open(
    { backend: "npu" },
    [
      "--allow-ffi",
      "--allow-read",
      "--allow-env=ACLNN_LIB_DIR,ASCEND_HOME_PATH,ASCEND_INSTALL_PATH,HOME",
    ],
    env,
  );
  assert.equal(granted.backend, "npu", JSON.stringify(granted));
});

Deno.test("discovery: a CANN root as ACLNN_LIB_DIR or libDir is searched in its lib64", async () => {
  const root = makeToolkit();
  try {
    for (
      const dir of [
        `${root}/ascend-toolkit/latest`,
        `${root}/ascend-toolkit/latest/`,
        `${root}/ascend-toolkit`,
      ]
    ) {
      const viaEnv = await open({ backend: "npu" }, ALL, { ACLNN_LIB_DIR: dir });
      assert.equal(viaEnv.backend, "npu", `${dir}: ${JSON.stringify(viaEnv)}`);
      const viaOption = await open({ backend: "npu", libDir: dir }, ALL, {});
      assert.equal(viaOption.backend, "npu", `${dir}: ${JSON.stringify(viaOption)}`);
    }
  } finally {
    removeTree(root);
  }
  // A folder with no CANN at all: the message says the CANN layout below it was looked at too.
  const empty = makeTree({ "lib64": "" });
  try {
    const none = await open({ backend: "npu" }, ALL, { ACLNN_LIB_DIR: empty });
    assert.equal(none.error, "LibraryLoadError");
    assert.match(
      none.message!,
      new RegExp(
        `${empty}/libascendcl\\.so: no such file .*\\(nor in ${empty}/lib64, .*latest/lib64, where a CANN root keeps it\\)`,
      ),
    );
  } finally {
    removeTree(empty);
  }
});

EMULATED_LANE.test("discovery: the emulation names itself in device.name; its SoC stays the real one", () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  // The SoC is the one the emulation is set to report (ACLEMU_SOC, default Ascend910B3).
  const soc = configuredEmulationSoc();
  assert.equal(npu.name, `${soc} #0 (host emulation, not an NPU)`);
  assert.equal(npu.soc, soc);
});
