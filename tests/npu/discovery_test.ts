// How Device.open finds CANN and explains its choice: each misconfiguration gets its reason and its fix
// (child processes where permissions or the environment must differ), libDir and ACLNN_LIB_DIR are
// exclusive, and a libopapi.so without the upsample operators does not end the search.

import assert from "node:assert/strict";
import {
  AclError,
  Device,
  LibraryLoadError,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { autoFallback, fallbackReasonOf, requestedNpu } from "../../src/backend_choice.ts";
import { WarningChannel } from "../../src/warnings.ts";
import { loadCannFrom, loaderReason, searchPlan } from "../../src/ffi/loader.ts";
import { makeToolkit, makeTree, REAL_CANN, removeTree, runDeno } from "../support/cann_tree.ts";
import { EMU_DIR, EMU_SPLIT_DIR, EMULATED_LANE } from "../support/helpers.ts";

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
  { flags = ALL, env = {}, times = 1 }: {
    flags?: string[];
    env?: Record<string, string>;
    times?: number;
  } = {},
): Promise<{ results: Opened[]; stderr: string }> {
  const child = await runDeno(CHILD, {
    flags,
    env,
    args: [JSON.stringify(options), String(times)],
  });
  assert.equal(child.code, 0, child.stderr);
  const results = child.stdout.trim().split("\n").map((line) => JSON.parse(line) as Opened);
  return { results, stderr: child.stderr };
}

// The reason's last line is the fix.
function fixLine(text: string): string {
  const last = text.trim().split("\n").at(-1)!;
  assert.match(last, /^fix: \S/, `no fix line in:\n${text}`);
  return last;
}

function warnings(stderr: string): number {
  return stderr.split("\n").filter((line) => line.startsWith("@aclnn/upsample:")).length;
}

Deno.test({
  name: "discovery: no CANN anywhere: the CPU with every place searched and the fix, no warning",
  ignore: REAL_CANN,
}, async () => {
  const { results: [opened], stderr } = await open({});
  assert.equal(opened.backend, "cpu");
  const reason = opened.fallbackReason!;
  assert.match(reason, /^could not load CANN/);
  assert.match(reason, /\/usr\/local\/Ascend\/ascend-toolkit\/latest: no such folder/);
  assert.match(reason, /\/usr\/local\/Ascend\/cann: no such folder/);
  assert.match(reason, /libascendcl\.so \(nor libacl_rt\.so\): not found by the system loader/);
  assert.doesNotMatch(reason, /Could not open library/);
  assert.match(fixLine(reason), /source .*set_env\.sh.*ACLNN_LIB_DIR/);
  assert.equal(warnings(stderr), 0, stderr);
});

Deno.test({
  name: "discovery: a wrong ASCEND_HOME_PATH is named, with the fix, and warns once",
  ignore: REAL_CANN,
}, async () => {
  const { results, stderr } = await open({}, {
    env: { ASCEND_HOME_PATH: "/nonexistent/Ascend/ascend-toolkit/latest" },
    times: 2,
  });
  for (const opened of results) {
    assert.equal(opened.backend, "cpu");
    assert.match(
      opened.fallbackReason!,
      /\n {2}\/nonexistent\/Ascend\/ascend-toolkit\/latest: no such folder \(from \$ASCEND_HOME_PATH\)\n/,
    );
    assert.match(fixLine(opened.fallbackReason!), /set_env\.sh/);
  }
  assert.equal(warnings(stderr), 1, stderr);
  assert.match(stderr, /although \$ASCEND_HOME_PATH asks for an NPU/);
});

Deno.test("discovery: a deviceId out of range falls back with the device count and the fix", async () => {
  const { results: [opened], stderr } = await open({ deviceId: 7 }, {
    env: { ACLNN_LIB_DIR: EMU_DIR },
  });
  assert.equal(opened.backend, "cpu");
  assert.match(
    opened.fallbackReason!,
    /deviceId 7 is out of range: CANN in .* reports 2 device\(s\)/,
  );
  assert.match(fixLine(opened.fallbackReason!), /use a deviceId below 2/);
  assert.match(stderr, /although the deviceId option asks for an NPU/);
  // Asked for the NPU itself: a RangeError carrying the same fix.
  const { results: [npu] } = await open({ backend: "npu", deviceId: 7 }, {
    env: { ACLNN_LIB_DIR: EMU_DIR },
  });
  assert.equal(npu.error, "RangeError");
  assert.match(npu.message!, /deviceId 7 is out of range.*fix: use a deviceId below 2/);
});

Deno.test({
  name: "discovery: without --allow-env the variables are reported unread, with the fix",
  ignore: REAL_CANN,
}, async () => {
  const { results: [opened] } = await open({}, {
    flags: ["--allow-ffi", "--allow-read"],
    env: { ACLNN_LIB_DIR: EMU_DIR },
  });
  assert.equal(opened.backend, "cpu");
  assert.match(
    fixLine(opened.fallbackReason!),
    /^fix: run with --allow-env=ACLNN_LIB_DIR,ASCEND_HOME_PATH,ASCEND_INSTALL_PATH,HOME \(or --allow-env\)/,
  );
});

Deno.test("discovery: a path-scoped --allow-ffi is refused up front: the pointer APIs need the unscoped flag", async () => {
  const flags = [`--allow-ffi=${EMU_DIR}`, "--allow-env", "--allow-read"];
  const env = { ACLNN_LIB_DIR: EMU_DIR };
  const { results: [opened], stderr } = await open({}, { flags, env });
  assert.equal(opened.backend, "cpu");
  assert.match(opened.fallbackReason!, /pointer APIs .* refuse a path-scoped --allow-ffi=<path>/);
  assert.match(fixLine(opened.fallbackReason!), /^fix: run with --allow-ffi /);
  assert.equal(warnings(stderr), 1, stderr);
  const { results: [npu] } = await open({ backend: "npu" }, { flags, env });
  assert.equal(npu.error, "NotCapable");
  assert.match(npu.message!, /path-scoped --allow-ffi=<path>[^]*\nfix: run with --allow-ffi/);
});

Deno.test("discovery: libDir is exclusive: a libDir without CANN never loads the one in ACLNN_LIB_DIR", async () => {
  const env = { ACLNN_LIB_DIR: EMU_DIR };
  const { results: [opened], stderr } = await open({ libDir: "/nonexistent/lib64" }, { env });
  assert.equal(opened.backend, "cpu");
  const reason = opened.fallbackReason!;
  assert.match(reason, /tried:\n {2}\/nonexistent\/lib64: no such folder \(from libDir\)\nfix: /);
  assert.match(fixLine(reason), /pass as libDir the folder holding libascendcl\.so/);
  assert.match(stderr, /although the libDir option asks for an NPU/);
  const { results: [npu] } = await open({ backend: "npu", libDir: "/nonexistent/lib64" }, { env });
  assert.equal(npu.error, "LibraryLoadError");
});

Deno.test("discovery: ACLNN_LIB_DIR is exclusive too; ASCEND_HOME_PATH finds a toolkit tree", async () => {
  const toolkit = makeToolkit();
  const home = `${toolkit}/ascend-toolkit/latest`;
  try {
    const found = await open({}, { env: { ASCEND_HOME_PATH: home } });
    assert.equal(found.results[0].backend, "npu");
    assert.equal(found.results[0].fallbackReason, undefined);
    assert.equal(found.stderr, "");
    const { results: [opened] } = await open({}, {
      env: { ASCEND_HOME_PATH: home, ACLNN_LIB_DIR: `${toolkit}/missing` },
    });
    assert.equal(opened.backend, "cpu");
    assert.match(opened.fallbackReason!, /missing: no such folder \(from \$ACLNN_LIB_DIR\)\nfix: /);
    assert.doesNotMatch(opened.fallbackReason!, /ascend-toolkit/);
    assert.match(fixLine(opened.fallbackReason!), /set ACLNN_LIB_DIR to the folder/);
  } finally {
    removeTree(toolkit);
  }
});

Deno.test("discovery: each path is listed once with its own reason, without the loader's prefixes", () => {
  const tree = makeTree({ "empty/": "", "bad/libascendcl.so": "/etc/hostname" });
  try {
    assert.throws(
      () => loadCannFrom([`${tree}/missing`, `${tree}/empty`, `${tree}/bad`]),
      (error: LibraryLoadError) => {
        assert.ok(error instanceof LibraryLoadError);
        assert.deepEqual(error.attempts.map((line) => line.replace(tree, "<tmp>")), [
          "<tmp>/missing: no such folder",
          "<tmp>/empty/libascendcl.so: no such file (nor libacl_rt.so)",
          `<tmp>/bad/libascendcl.so: ${error.attempts[2].split(": ").slice(1).join(": ")}`,
          "<tmp>/bad/libacl_rt.so: no such file",
        ]);
        assert.doesNotMatch(error.message, /Could not open library/);
        assert.match(error.attempts[2], /bad\/libascendcl\.so: .+/);
        assert.ok(error.fix.length > 0);
        assert.match(error.message, /\nfix: list the folder holding libascendcl\.so/);
        return true;
      },
    );
  } finally {
    removeTree(tree);
  }
  assert.equal(
    loaderReason(
      "Could not open library: Could not open library: /x/a.so: invalid ELF header",
      "/x/a.so",
    ),
    "invalid ELF header",
  );
});

Deno.test("discovery: the search plan follows CANN's roots; libDir and ACLNN_LIB_DIR stand alone", () => {
  const saved = { lib: Deno.env.get("ACLNN_LIB_DIR"), home: Deno.env.get("ASCEND_HOME_PATH") };
  try {
    Deno.env.delete("ACLNN_LIB_DIR");
    Deno.env.set("ASCEND_HOME_PATH", "/opt/toolkit/");
    const plan = searchPlan();
    assert.equal(plan.exclusive, undefined);
    assert.equal(plan.requestedBy, "$ASCEND_HOME_PATH");
    const dirs = plan.candidates.map((candidate) => candidate.dir);
    assert.equal(dirs[0], "/opt/toolkit/lib64");
    assert.ok(dirs.includes("/usr/local/Ascend/cann/lib64"));
    assert.ok(dirs.includes("/usr/local/Ascend/ascend-toolkit/latest/lib64"));
    assert.equal(dirs.at(-1), "(system loader)");
    Deno.env.set("ACLNN_LIB_DIR", "/from/env");
    assert.deepEqual(searchPlan().candidates.map((candidate) => candidate.dir), ["/from/env"]);
    assert.deepEqual(searchPlan("/from/option").candidates.map((candidate) => candidate.dir), [
      "/from/option",
    ]);
    assert.equal(searchPlan("/from/option").exclusive, "libDir");
  } finally {
    for (const [name, value] of [["ACLNN_LIB_DIR", saved.lib], ["ASCEND_HOME_PATH", saved.home]]) {
      if (value === undefined) Deno.env.delete(name!);
      else Deno.env.set(name!, value);
    }
  }
});

// newer CANN: libopapi.so (here the emulation's libnnopbase, which loads but has no operator) next to
// libopapi_cv.so with the upsample operators.
function splitTree(withCv: boolean): string {
  return makeTree({
    "lib64/libascendcl.so": `${EMU_DIR}libascendcl.so`,
    "lib64/libnnopbase.so": `${EMU_DIR}libnnopbase.so`,
    "lib64/libopapi.so": `${EMU_DIR}libnnopbase.so`,
    ...(withCv ? { "lib64/libopapi_cv.so": `${EMU_DIR}libopapi.so` } : {}),
  });
}

async function runEachOp(device: Device): Promise<number[]> {
  const values = Array.from({ length: 36 }, (_, i) => (i % 7) - 3);
  using grad2d = device.tensor(values, [1, 1, 6, 6]);
  using grad1d = device.tensor(values, [1, 6, 6]);
  const size = { outputSize: [6, 6], inputSize: [1, 1, 3, 3] };
  using nearest = upsampleNearestExact2dBackward(grad2d, size);
  using bilinear = upsampleBilinear2dBackward(grad2d, size);
  using nearest1d = upsampleNearestExact1dBackward(grad1d, {
    outputSize: [6],
    inputSize: [1, 6, 3],
  });
  return [
    ...await nearest.toFloat32Array(),
    ...await bilinear.toFloat32Array(),
    ...await nearest1d.toFloat32Array(),
  ];
}

EMULATED_LANE.test("discovery: a libopapi.so without the upsample operators does not end the search", async () => {
  const split = splitTree(true);
  const noOps = splitTree(false);
  try {
    const libs = loadCannFrom([`${split}/lib64`]);
    assert.match(libs.opapiPath, /lib64\/libopapi_cv\.so$/);
    // The emulation's own split build (native/Makefile: split/) too.
    assert.match(loadCannFrom([EMU_SPLIT_DIR]).opapiPath, /split\/+libopapi_cv\.so$/);
    // The ops run from libopapi_cv.so and give what the emulation's own folder gives.
    const outputs: number[][] = [];
    for (const libDir of [`${split}/lib64`, EMU_SPLIT_DIR, EMU_DIR]) {
      using device = Device.open({ backend: "npu", libDir });
      outputs.push(await runEachOp(device));
    }
    assert.deepEqual(outputs[0], outputs[2]);
    assert.deepEqual(outputs[1], outputs[2]);
    assert.ok(outputs[0].some((value) => value !== 0));
    assert.throws(() => loadCannFrom([`${noOps}/lib64`]), (error: LibraryLoadError) => {
      assert.match(
        error.message,
        /lib64\/libopapi\.so: loads, but has none of the upsample operators/,
      );
      assert.match(error.message, /lib64\/libopapi_cv\.so: no such file/);
      return true;
    });
  } finally {
    removeTree(split);
    removeTree(noOps);
  }
});

Deno.test("discovery: which failures fall back: no CANN, no permission, no device; a broken runtime throws", () => {
  const noDriver = fallbackReasonOf(new AclError(507033, "aclInit", "no driver"));
  assert.match(
    noDriver!,
    /^aclInit failed with 507033.*\nfix: check the driver and the NPUs with `npu-smi info`/,
  );
  assert.match(fallbackReasonOf(new AclError(207004, "aclrtGetDeviceCount", ""))!, /\nfix: /);
  assert.match(
    fallbackReasonOf(new LibraryLoadError(["/x: no such folder"], { fix: "f" }))!,
    /\nfix: f$/,
  );
  assert.match(fallbackReasonOf(new Deno.errors.NotCapable("no ffi\nfix: g"))!, /fix: g$/);
  // A device that exists but fails to open, or a bug, is not hidden behind the CPU backend.
  assert.equal(fallbackReasonOf(new AclError(507000, "aclrtSetDevice", "")), undefined);
  assert.equal(fallbackReasonOf(new TypeError("bug")), undefined);
  const bug = new TypeError("bug");
  assert.throws(() => autoFallback(bug, {}, new WarningChannel()), (error) => error === bug);
  assert.equal(requestedNpu({ libDir: "/x" }), "the libDir option");
  assert.equal(requestedNpu({ deviceId: 0 }), "the deviceId option");
});
