// `deno task doctor` run as users run it (a child Deno with the task's permissions): on the emulation
// installed as a CANN toolkit (found through ASCEND_HOME_PATH), on variants, with nothing found and with
// bad arguments; and its pieces in-process (a failing op reported with its fix).

import assert from "node:assert/strict";
import { Device } from "../../mod.ts";
import { checkFromError, exitCodeOf, formatReport, splitFix } from "../../cli/doctor/report.ts";
import { compareCheck, smokeChecks } from "../../cli/doctor/smoke.ts";
import { deterministicChecks } from "../../cli/doctor/deterministic.ts";
import { columnLossCall, columnLossCheck, probeColumnLoss } from "../../cli/doctor/column_loss.ts";
import { cubeOrderCheck, probeCubeOrder } from "../../cli/doctor/cube_order.ts";
import {
  type ChildResult,
  makeToolkit,
  REAL_CANN,
  removeTree,
  runDeno,
} from "../support/cann_tree.ts";
import {
  emu,
  EMU_DIR,
  EMU_NO_V2_DIR,
  EMU_OLD_RUNTIME_DIR,
  EMU_SPLIT_DIR,
  EMU_TORCH_MAP_DIR,
  EMULATED_LANE,
  emulatedGeneration,
} from "../support/helpers.ts";

const DOCTOR = new URL("../../cli/doctor/main.ts", import.meta.url).pathname;
const FLAGS = ["--allow-ffi", "--allow-env", "--allow-read"];

async function doctor(env: Record<string, string>, args: string[] = []): Promise<ChildResult> {
  return await runDeno(DOCTOR, { flags: FLAGS, env, args });
}

// Every [warn] and [FAIL] line is followed (after its detail lines) by a fix line.
function assertFixes(report: string): void {
  const lines = report.split("\n");
  lines.forEach((line, i) => {
    if (!/^\[(warn|FAIL)\]/.test(line)) return;
    const rest = lines.slice(i + 1);
    const end = rest.findIndex((next) => next.startsWith("["));
    const block = end < 0 ? rest : rest.slice(0, end);
    assert.ok(block.some((next) => /^ {7}fix: \S/.test(next)), `no fix for: ${line}\n${report}`);
  });
}

Deno.test("doctor: the emulation installed as a CANN toolkit is found and every op checks out", async () => {
  const root = makeToolkit();
  const home = `${root}/ascend-toolkit/latest`;
  try {
    const { code, stdout, stderr } = await doctor({
      ASCEND_HOME_PATH: home,
      ASCEND_OPP_PATH: `${home}/opp`,
    });
    assert.equal(code, 0, stdout + stderr);
    assert.match(
      stdout,
      new RegExp(`\\[ok\\] +CANN found in ${home}/lib64 \\(\\$ASCEND_HOME_PATH\\)`),
    );
    assert.ok(stdout.includes(`${home}/lib64/libascendcl.so -> ${EMU_DIR}libascendcl.so`), stdout);
    assert.match(
      stdout,
      /\[ok\] +runtime: ACL \d+\.\d+\.\d+ \(aclrtGetVersion\), SoC Ascend910B\S*.*, 2 device\(s\)/,
    );
    assert.ok(stdout.includes(`[ok]   ASCEND_OPP_PATH=${home}/opp (exists)`), stdout);
    assert.match(stdout, /\[ok\] +bilinear: aclnnUpsampleBilinear2dBackwardV2 available/);
    assert.match(stdout, /\[ok\] +deterministic option \(ACL_OPT_DETERMINISTIC\) available/);
    assert.match(stdout, /\[ok\] +Device\.open\(\) picks the NPU: Ascend910B/);
    assert.match(
      stdout,
      /\[ok\] +TBE column-loss probe \(bilinear \[2, 1535\] <- \[2, 2\], alignCorners, the native single launch\): this device follows the lossy reading: gradient column 1 never reaches image column 1534/,
    );
    for (const op of ["NearestExact1d", "NearestExact2d", "Bilinear2d"]) {
      assert.match(
        stdout,
        new RegExp(`\\[ok\\] +upsample${op}Backward \\[.* on Ascend.*match the device reference`),
      );
    }
    assert.doesNotMatch(stdout, /\[FAIL\]/);
    assertFixes(stdout);
    assert.equal(stderr, "", "no fallback warning from the library");
  } finally {
    removeTree(root);
  }
});

Deno.test("doctor: a CANN without V2 bilinear, the split operator library, and an old runtime, through ACLNN_LIB_DIR", async () => {
  const v1 = await doctor({ ACLNN_LIB_DIR: EMU_NO_V2_DIR });
  assert.equal(v1.code, 0, v1.stdout);
  assert.match(v1.stdout, /\(ACLNN_LIB_DIR given: no other place is searched\)/);
  assert.match(
    v1.stdout,
    /\[warn\] bilinear: only V1 .*\n {7}fix: install a CANN whose operator library has aclnnUpsampleBilinear2dBackwardV2/,
  );
  assert.match(
    v1.stdout,
    /\[warn\] ASCEND_OPP_PATH is not set\n {7}fix: source your CANN's set_env\.sh/,
  );
  // V1 runs the TBE kernel without a scale: deterministic mode's representative call takes none.
  assert.match(
    v1.stdout,
    /\[info\] deterministic mode, upsampleBilinear2dBackward \[1,8,64,64\] from \[128,128\] float32: deterministic route \(two launches: /,
  );
  assertFixes(v1.stdout);
  // A runtime without the switch: deterministic mode is not available, said once per op.
  const old = await doctor({ ACLNN_LIB_DIR: EMU_OLD_RUNTIME_DIR });
  assert.match(
    old.stdout,
    /\[warn\] deterministic option: MissingSymbolError: .*aclrtCtxSetSysParamOpt/,
  );
  assert.equal(
    old.stdout.match(
      /deterministic mode, \S+ .*: not available: this runtime cannot turn the mode on/g,
    )
      ?.length,
    3,
    old.stdout,
  );
  const split = await doctor({ ACLNN_LIB_DIR: EMU_SPLIT_DIR });
  assert.equal(split.code, 0, split.stdout);
  assert.match(split.stdout, /split\/?\/libopapi_cv\.so/);
  assert.match(split.stdout, /libopapi\.so: loads, but has none of the upsample operators/);
});

Deno.test("doctor: a CANN whose nearest-exact maps like PyTorch fails the smoke run, with the fix", async () => {
  const { code, stdout } = await doctor({ ACLNN_LIB_DIR: EMU_TORCH_MAP_DIR });
  assert.equal(code, 1, stdout);
  assert.match(
    stdout,
    /\[FAIL\] upsampleNearestExact1dBackward \[1,3,2\] from \[41\] .*values outside the device reference's bound/,
  );
  assert.match(stdout, /\[ok\] +upsampleBilinear2dBackward/);
  assertFixes(stdout);
});

Deno.test({
  name: "doctor: nothing found fails with the places searched and the fix",
  ignore: REAL_CANN,
}, async () => {
  const { code, stdout } = await doctor({ ASCEND_HOME_PATH: "/nonexistent/toolkit" });
  assert.equal(code, 1, stdout);
  assert.match(
    stdout,
    /\[info\] searched, in order:\n {7}\/nonexistent\/toolkit\/lib64 \(\$ASCEND_HOME_PATH\)/,
  );
  assert.match(
    stdout,
    /\[FAIL\] no CANN found\n(?: {7}.*\n)* {7}fix: source your CANN's set_env\.sh/,
  );
  assert.match(stdout, /\[FAIL\] Device\.open\(\) picks the CPU backend: no CANN found/);
  assertFixes(stdout);
});

Deno.test("doctor: a device that does not exist fails with the count and the fix; bad arguments exit 2", async () => {
  const { code, stdout } = await doctor({ ACLNN_LIB_DIR: EMU_DIR }, ["--device-id", "5"]);
  assert.equal(code, 1, stdout);
  assert.match(
    stdout,
    /\[FAIL\] Device\.open\(\) picks the CPU backend: no usable NPU\n {7}deviceId 5 is out of range.*2 device\(s\)\n {7}fix: use a deviceId below 2/,
  );
  assertFixes(stdout);
  const bad = await doctor({}, ["--device-id", "x"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--device-id must be an integer >= 0, got "x"/);
  const unknown = await doctor({}, ["--verbose"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /--verbose/);
});

Deno.test("doctor: without --allow-ffi the report fails with the flag to use", async () => {
  const { code, stdout } = await runDeno(DOCTOR, {
    flags: ["--allow-env", "--allow-read"],
    env: { ACLNN_LIB_DIR: EMU_DIR },
  });
  assert.equal(code, 1, stdout);
  assert.match(
    stdout,
    /\[FAIL\] CANN search: NotCapable: the NPU path needs --allow-ffi without a path/,
  );
  assert.match(stdout, /fix: run with --allow-ffi/);
  assertFixes(stdout);
});

EMULATED_LANE.test("doctor: a failing op is reported with its fix, and one differing value fails", async () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  emu().aclemuFailNextLaunch(561107);
  try {
    const checks = await smokeChecks(npu);
    assert.equal(checks[0].status, "fail");
    assert.match(
      checks[0].title,
      /upsampleNearestExact1dBackward \[1,3,2\] from \[41\] on .*561107/,
    );
    assert.match(checks[0].fix!, /ASCEND_OPP_PATH/);
    assert.deepEqual(checks.slice(1).map((check) => check.status), ["ok", "ok"]);
    assert.equal(exitCodeOf(checks), 1);
  } finally {
    emu().aclemuResetFaults();
  }
  const fine = await smokeChecks(npu);
  assert.equal(exitCodeOf(fine), 0);
  assert.match(formatReport(fine), /^\[ok\] {3}upsampleNearestExact1dBackward/);
  // A single differing bit fails, naming the element; NaN equals NaN.
  const differs = compareCheck("op", Float32Array.of(1, -0, 3), Float32Array.of(1, 0, 3), "ref");
  assert.equal(differs.status, "fail");
  assert.match(
    differs.title,
    /1 of 3 values differ from those of ref \(element 1: -0, expected 0\)/,
  );
  assert.match(differs.fix!, /deno task verify/);
  assert.equal(compareCheck("op", Float32Array.of(NaN), Float32Array.of(NaN), "ref").status, "ok");
  // The report's pieces: a fix line is split off, and carried into the check.
  assert.deepEqual(splitFix("a\nb; fix: c"), { lines: ["a", "b"], fix: "c" });
  const check = checkFromError("fail", "x", new RangeError("bad\nfix: good"), "other");
  assert.equal(check.fix, "good");
  assert.equal(formatReport([check]), "[FAIL] x: RangeError: bad\n       fix: good");
});

Deno.test("doctor: deterministic mode's lines name a refusal and its fix, per what the CANN lacks", () => {
  const titles = (checks: ReturnType<typeof deterministicChecks>): string[] =>
    checks.map((check) => `${check.status} ${check.title.replace(/^.*?: /, "")}`);
  // Every API there: A2/A3's one-scale call takes the route, the 910's call too.
  assert.deepEqual(titles(deterministicChecks("a2")), [
    "info native kernel (UpsampleNearestExact2dGrad)",
    "info native kernel (UpsampleNearestExact2dGrad)",
    "info deterministic route (two launches: ResizeBilinearV2Grad5HD.MODE6, " +
    "ResizeBilinearV2Grad5HD.MODE6)",
  ]);
  // A CANN without V1, through which the route's passes launch: the 910's call is refused.
  const noV1 = deterministicChecks("910", {
    bilinearApi: "v2",
    missingApi: () => "aclnnUpsampleBilinear2dBackward",
  });
  assert.equal(noV1[2].status, "warn");
  assert.match(
    noV1[2].title,
    /\[1,8,64,64\] from \[128,128\] float32: refused \(ResizeBilinearV2Grad5HD\.MODE5 adds in a free order, and this CANN lacks aclnnUpsampleBilinear2dBackward, which the deterministic route needs\)$/,
  );
  assert.match(
    noV1[2].fix!,
    /install a CANN whose operator libraries have aclnnUpsampleBilinear2dBackward/,
  );
  assertFixes(formatReport(noV1));
  // A CANN that cannot run the call at all, and a runtime without the switch.
  const noOp = deterministicChecks("a2", {
    bilinearApi: "v2",
    checkOp: (call) => {
      if (call.op === "nearestExact1d") throw new TypeError("no 1d operator");
    },
  });
  assert.match(noOp[0].title, /: not run by this CANN$/);
  assert.deepEqual(noOp[0].detail, ["TypeError: no 1d operator"]);
  const off = deterministicChecks("950", { bilinearApi: "v2", unavailable: "no switch" });
  assert.ok(off.every((check) => /: not available: /.test(check.title)));
});

Deno.test({
  name:
    "doctor: the column-loss probe reads the native launch's loss, and the avoided call's exact result",
  ignore: EMULATED_LANE.ignore !== undefined || emulatedGeneration() === "950",
}, async () => {
  const generation = emulatedGeneration() as "a2" | "910" | "310p";
  const { inputHW, lostColumns } = columnLossCall(generation);
  assert.deepEqual(lostColumns, [1]);
  using allow = Device.open({
    backend: "npu",
    libDir: EMU_DIR,
    deviceDefects: "allow",
    warnings: "ignore",
  });
  const lossy = await probeColumnLoss(allow, generation);
  assert.equal(lossy.reading, "lossy", JSON.stringify(lossy));
  assert.deepEqual(lossy.inputHW, inputHW);
  assert.deepEqual(lossy.lastColumn, [0, 0]);
  // The library's default avoids the loss: the same probe then reads the exact result.
  using avoid = Device.open({ backend: "npu", libDir: EMU_DIR });
  assert.equal((await probeColumnLoss(avoid, generation)).reading, "exact");
  // The check opens the native launch itself, whatever the device's own option.
  const check = await columnLossCheck(avoid, generation);
  assert.equal(check.status, "ok", check.title);
  assert.match(check.title, /follows the lossy reading/);
  // A CPU device is not an NPU: a warning with its fix, no throw.
  using cpu = Device.open({ backend: "cpu" });
  const warn = await columnLossCheck(cpu, generation);
  assert.equal(warn.status, "warn");
  assert.ok(warn.fix);
});

Deno.test("doctor: the Cube-order probe tells the two readings apart, and neither", async () => {
  // CPU device references stand in for devices that follow each reading: the probe's calls must
  // differ between "pytorch" and "ascending", else it could not tell them apart.
  for (const cubeOrder of ["pytorch", "ascending"] as const) {
    using device = Device.open({ backend: "cpu", numerics: "device", cubeOrder, threads: 1 });
    const probe = await probeCubeOrder(device);
    assert.equal(probe.follows, cubeOrder, JSON.stringify(probe));
    assert.equal(probe.calls.length, 3);
    const [nearest, bilinear, forward] = probe.calls;
    assert.match(nearest.what, /^nearest-exact 2d backward/);
    assert.match(bilinear.what, /UpsampleBilinear2dGrad/);
    assert.equal(forward.pytorch, null, "the forward Cube kernel has one reading");
    assert.equal(forward.ascending, 0);
    for (const c of [nearest, bilinear]) {
      const [same, other] = cubeOrder === "ascending"
        ? [c.ascending, c.pytorch!]
        : [c.pytorch!, c.ascending];
      assert.equal(same, 0, c.what);
      assert.ok(other >= 10 && other < c.elements, `${c.what}: ${other} differ`);
    }
    const check = await cubeOrderCheck(device);
    assert.equal(check.status, "ok");
    assert.ok(check.title.includes(`follows the reading "${cubeOrder}"`), check.title);
    assert.ok(check.title.includes(`--cube-order ${cubeOrder}`), check.title);
    assert.equal(check.detail?.length, 3);
  }
  // PyTorch's own kernels follow neither (and map nearest-exact otherwise): the bound stays.
  using pytorch = Device.open({ backend: "cpu", threads: 1 });
  const neither = await cubeOrderCheck(pytorch);
  assert.equal(neither.status, "info");
  assert.match(neither.title, /follows neither reading bit for bit: .*within the .*bound/);
});

Deno.test({
  name:
    'doctor: the Cube-order probe finds the emulated A2/A3 follows "ascending", a planted ulp neither',
  ignore: EMULATED_LANE.ignore !== undefined || emulatedGeneration() !== "a2",
}, async () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  const probe = await probeCubeOrder(npu);
  assert.equal(probe.follows, "ascending", JSON.stringify(probe));
  assert.ok(probe.calls.every((c) => c.ascending === 0), JSON.stringify(probe));
  const controls = Deno.dlopen(
    `${EMU_DIR}libascendcl.so`,
    {
      aclemuSetUlpFault: { parameters: ["i32"], result: "void" },
    } as const,
  );
  try {
    controls.symbols.aclemuSetUlpFault(1);
    const faulted = await probeCubeOrder(npu);
    assert.equal(faulted.follows, undefined, JSON.stringify(faulted));
    // The fault moves one element of each backward launch; the forward is left alone.
    assert.deepEqual(faulted.calls.map((c) => c.ascending), [1, 1, 0]);
    const check = await cubeOrderCheck(npu);
    assert.equal(check.status, "info");
    assert.match(check.title, /follows neither reading/);
  } finally {
    controls.symbols.aclemuSetUlpFault(0);
    controls.close();
  }
});
