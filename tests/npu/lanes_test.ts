// The lanes (tests/support/lanes.ts) and the toolkit-shaped install of the emulation
// (tools/install_emulated_toolkit.sh): which lanes run with which CANN found, that two different CANN
// files never share a process, and that a sourced set_env.sh makes the library's own search find the
// emulation as it finds CANN on an Atlas host.

import assert from "node:assert/strict";
import { Device } from "../../mod.ts";
import { EMU_DIR } from "../support/helpers.ts";
import { type BackendCase, decideLanes, type LaneProbe, mappedRuntimes } from "../support/lanes.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const INSTALL = `${REPO}tools/install_emulated_toolkit.sh`;

function fakeProbe(overrides: Partial<LaneProbe>): LaneProbe {
  return {
    selection: undefined,
    openDiscovered: () => {
      throw new Error("could not load CANN\nsecond line");
    },
    folderOf: () => "/opt/cann/lib64",
    identity: (path) => (path.startsWith(EMU_DIR) ? "1:100" : undefined),
    mappedRuntimes: () => [],
    ...overrides,
  };
}

const byLabel = (lanes: BackendCase[]): Record<string, BackendCase> =>
  Object.fromEntries(lanes.map((lane) => [lane.label, lane]));

Deno.test("lanes: no CANN found: the npu lane is ignored with the reason, the emulation runs", () => {
  const lanes = byLabel(decideLanes(fakeProbe({}), EMU_DIR));
  assert.deepEqual(Object.keys(lanes), ["cpu", "cpu-typescript", "npu-emulated", "npu"]);
  assert.match(lanes.npu.ignore!, /^no NPU through the library's search \(could not load CANN/);
  assert.match(lanes.npu.ignore!, /set_env\.sh or set ACLNN_LIB_DIR$/);
  assert.throws(() => lanes.npu.open(), /lane npu is ignored in this process/);
  assert.equal(lanes["npu-emulated"].ignore, undefined);
  assert.equal(lanes["npu-emulated"].emulated, true);
  assert.equal(lanes.cpu.ignore, undefined);
});

Deno.test("lanes: the discovered CANN is the emulation's own file: both NPU lanes run (one runtime)", () => {
  const probe = fakeProbe({
    openDiscovered: () => Device.open({ backend: "cpu" }),
    mappedRuntimes: () => [{ path: `${EMU_DIR}libascendcl.so`, identity: "1:100" }],
  });
  const lanes = byLabel(decideLanes(probe, EMU_DIR));
  assert.equal(lanes.npu.ignore, undefined);
  assert.match(lanes.npu.source!, / from \/opt\/cann\/lib64$/);
  assert.equal(lanes.npu.emulated, false, "no emulator controls on the npu lane");
  assert.equal(lanes["npu-emulated"].ignore, undefined);
});

Deno.test("lanes: another libascendcl in the process: the emulated lane never loads", () => {
  const probe = fakeProbe({
    openDiscovered: () => Device.open({ backend: "cpu" }),
    mappedRuntimes: () => [
      { path: `${EMU_DIR}libascendcl.so`, identity: "1:100" },
      { path: "/usr/local/Ascend/ascend-toolkit/8.0.0/lib64/libascendcl.so", identity: "2:7" },
    ],
  });
  const lanes = byLabel(decideLanes(probe, EMU_DIR));
  assert.equal(lanes.npu.ignore, undefined);
  assert.match(
    lanes["npu-emulated"].ignore!,
    /another CANN runtime \(\/usr\/local\/Ascend\/.*libascendcl\.so\) .* by SONAME; ACLNN_TEST_LANES=cpu,cpu-typescript,npu-emulated/,
  );
  assert.throws(() => lanes["npu-emulated"].open(), /ignored in this process/);
  // Even a failed probe that left a runtime mapped keeps the emulation out.
  const failed = byLabel(
    decideLanes(
      fakeProbe({ mappedRuntimes: () => [{ path: "/x/libacl_rt.so", identity: "3:1" }] }),
      EMU_DIR,
    ),
  );
  assert.ok(failed.npu.ignore);
  assert.match(failed["npu-emulated"].ignore!, /another CANN runtime \(\/x\/libacl_rt\.so\)/);
});

Deno.test("lanes: an unbuilt emulation and ACLNN_TEST_LANES", () => {
  const unbuilt = byLabel(decideLanes(fakeProbe({ identity: () => undefined }), EMU_DIR));
  assert.match(unbuilt["npu-emulated"].ignore!, /not built in .* \(run deno task build:native\)/);
  let probed = false;
  const selected = byLabel(
    decideLanes(
      fakeProbe({
        selection: "cpu, npu-emulated",
        openDiscovered: () => {
          probed = true;
          throw new Error("unreachable");
        },
      }),
      EMU_DIR,
    ),
  );
  assert.equal(probed, false, "an unselected npu lane is never probed");
  assert.equal(selected.npu.ignore, "not in ACLNN_TEST_LANES=cpu, npu-emulated");
  assert.equal(selected["cpu-typescript"].ignore, "not in ACLNN_TEST_LANES=cpu, npu-emulated");
  assert.equal(selected.cpu.ignore, undefined);
  assert.equal(selected["npu-emulated"].ignore, undefined);
  assert.throws(
    () => decideLanes(fakeProbe({ selection: "cpu,gpu" }), EMU_DIR),
    /ACLNN_TEST_LANES: unknown lane "gpu" \(lanes: cpu, cpu-typescript, npu-emulated, npu\)/,
  );
});

Deno.test("lanes: /proc/self/maps entries give the identity stat reports", () => {
  const maps = [
    "7f75-7f76 r--p 00000000 fe:00 2146709    /opt/a/lib64/libascendcl.so",
    "7f76-7f77 r-xp 00002000 fe:00 2146709    /opt/a/lib64/libascendcl.so",
    "7f78-7f79 r-xp 00000000 103:02 77 /opt/b/libacl_rt.so",
    "7f80-7f81 r-xp 00000000 fe:00 5 /opt/a/lib64/libnnopbase.so",
    "7f90-7f91 rw-p 00000000 00:00 0 ",
  ].join("\n");
  assert.deepEqual(mappedRuntimes(maps), [
    { path: "/opt/a/lib64/libascendcl.so", identity: "65024:2146709" },
    { path: "/opt/b/libacl_rt.so", identity: `${(0x103 << 8) | 2}:77` },
  ]);
});

// --- the toolkit-shaped install, through real processes ---

const CANN_VARIABLES = [
  "ACLNN_LIB_DIR",
  "ASCEND_HOME_PATH",
  "ASCEND_TOOLKIT_HOME",
  "ASCEND_OPP_PATH",
  "ASCEND_AICPU_PATH",
  "TOOLCHAIN_HOME",
  "LD_LIBRARY_PATH",
  "ACLNN_TEST_LANES",
];

// The environment of this process without anything CANN-related (CI runs the suite with set_env.sh
// sourced).
function cleanEnv(): Record<string, string> {
  const env = Deno.env.toObject();
  for (const name of CANN_VARIABLES) delete env[name];
  return env;
}

async function run(
  command: string,
  args: string[],
  env: Record<string, string> = cleanEnv(),
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(command, { args, env, clearEnv: true }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

// Sources set_env.sh (when given) in bash, then asks tests/support/lanes.ts which lanes run there.
async function lanesWith(setEnv: string | null): Promise<Record<string, BackendCase>> {
  const deno = `'${Deno.execPath()}' run --allow-ffi --allow-env --allow-read ` +
    `'${REPO}tests/support/lanes.ts' --json '${EMU_DIR}'`;
  const script = setEnv === null ? `exec ${deno}` : `. '${setEnv}' && exec ${deno}`;
  const { code, stdout, stderr } = await run("bash", ["-c", script]);
  assert.equal(code, 0, stderr);
  return byLabel(JSON.parse(stdout.trim().split("\n").at(-1)!));
}

const exists = (path: string): boolean => {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
};

const canRun = (await Deno.permissions.query({ name: "run" })).state === "granted" &&
  (await Deno.permissions.query({ name: "write" })).state === "granted";

Deno.test({
  name:
    "toolkit: the installed tree is laid out like CANN's and set_env.sh exports what CANN's does",
  ignore: !canRun,
  fn: async () => {
    const root = await Deno.makeTempDir({ prefix: "aclemu-toolkit-" });
    try {
      const installed = await run("bash", [INSTALL, root, "--from", EMU_DIR]);
      assert.equal(installed.code, 0, installed.stderr);
      const toolkit = `${root}/ascend-toolkit`;
      assert.equal(Deno.readLinkSync(`${toolkit}/latest`), "8.0.0");
      assert.match(Deno.readLinkSync(`${toolkit}/8.0.0/lib64`), /^[\w]+-linux\/lib64$/);
      for (const lib of ["libascendcl.so", "libnnopbase.so", "libopapi.so"]) {
        const a = Deno.statSync(`${toolkit}/latest/lib64/${lib}`);
        const b = Deno.statSync(`${EMU_DIR}${lib}`);
        assert.equal(`${a.dev}:${a.ino}`, `${b.dev}:${b.ino}`, `${lib} is the build's file`);
      }
      assert.ok(Deno.statSync(`${toolkit}/latest/opp/built-in`).isDirectory);
      // Sourced twice, from bash and from a POSIX sh, with a user's LD_LIBRARY_PATH kept after it.
      for (const shell of ["bash", "sh"]) {
        const env = { ...cleanEnv(), LD_LIBRARY_PATH: "/user/lib" };
        const shown = await run(shell, [
          "-c",
          `. '${toolkit}/set_env.sh' && . '${toolkit}/set_env.sh' && env`,
        ], env);
        assert.equal(shown.code, 0, shown.stderr);
        const vars = Object.fromEntries(
          shown.stdout.split("\n").filter((l) => l.includes("=")).map((l) => {
            const i = l.indexOf("=");
            return [l.slice(0, i), l.slice(i + 1)];
          }),
        );
        const latest = `${toolkit}/latest`;
        assert.equal(vars.ASCEND_HOME_PATH, latest, shell);
        assert.equal(vars.ASCEND_TOOLKIT_HOME, latest, shell);
        assert.equal(vars.ASCEND_OPP_PATH, `${latest}/opp`, shell);
        assert.equal(
          vars.LD_LIBRARY_PATH,
          `${latest}/lib64:${latest}/lib64/plugin/opskernel:${latest}/lib64/plugin/nnengine:/user/lib`,
          shell,
        );
      }
      const missing = await run("bash", [INSTALL, `${root}/other`, "--from", `${root}/nothing`]);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /emulation build folder not found: run `make -s -C native`/);
      const usage = await run("bash", [INSTALL]);
      assert.equal(usage.code, 2);
      assert.match(usage.stderr, /^usage: /);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "toolkit: sourcing set_env.sh makes the npu lane run; a copied CANN keeps the emulation out",
  ignore: !canRun,
  fn: async () => {
    const root = await Deno.makeTempDir({ prefix: "aclemu-toolkit-" });
    try {
      const without = await lanesWith(null);
      if (!exists("/usr/local/Ascend")) {
        assert.match(without.npu.ignore ?? "", /no NPU through the library's search/);
        assert.equal(without["npu-emulated"].ignore, undefined);
      }

      assert.equal((await run("bash", [INSTALL, `${root}/linked`, "--from", EMU_DIR])).code, 0);
      const linked = await lanesWith(`${root}/linked/ascend-toolkit/set_env.sh`);
      assert.equal(linked.npu.ignore, undefined);
      assert.match(
        linked.npu.source!,
        new RegExp(` from ${root}/linked/ascend-toolkit/latest/lib64$`),
      );
      assert.equal(linked["npu-emulated"].ignore, undefined, "one runtime: both lanes");

      const copied = await run("bash", [INSTALL, `${root}/copied`, "--copy", "--from", EMU_DIR]);
      assert.equal(copied.code, 0, copied.stderr);
      const lanes = await lanesWith(`${root}/copied/ascend-toolkit/set_env.sh`);
      assert.equal(lanes.npu.ignore, undefined);
      assert.match(lanes["npu-emulated"].ignore ?? "", /another CANN runtime .*\/copied\//);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});
