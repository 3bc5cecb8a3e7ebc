// The two commands as entry points of the package (`@aclnn/upsample/doctor`, `.../verify`): `--help`
// prints usage, flags and exit codes; importing an entry runs nothing; on a host without an NPU,
// doctor reports the CPU backend as information (exit 0) unless an NPU was asked for, and verify
// does not claim one was; the emulation names itself as such.

import assert from "node:assert/strict";
import { REAL_CANN, runDeno } from "../support/cann_tree.ts";
import { EMU_DIR, EMULATED_LANE } from "../support/helpers.ts";

const DOCTOR = new URL("../../cli/doctor/main.ts", import.meta.url).pathname;
const VERIFY = new URL("../../cli/verify/main.ts", import.meta.url).pathname;
const FLAGS = ["--allow-ffi", "--allow-env", "--allow-read"];

Deno.test("cli: deno.json exports the library, doctor and verify", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("../../deno.json", import.meta.url)),
  );
  assert.deepEqual(config.exports, {
    ".": "./mod.ts",
    "./doctor": "./cli/doctor/main.ts",
    "./verify": "./cli/verify/main.ts",
  });
  assert.match(config.tasks.doctor, / cli\/doctor\/main\.ts$/);
  assert.match(config.tasks.verify, / cli\/verify\/main\.ts$/);
});

Deno.test("cli: importing an entry module runs nothing", async () => {
  const logged: unknown[] = [];
  const { log, error, warn } = console;
  console.log = console.error = console.warn = (...args: unknown[]) => logged.push(args);
  try {
    const doctor = await import("../../cli/doctor/main.ts");
    const verify = await import("../../cli/verify/main.ts");
    assert.equal(typeof doctor.main, "function");
    assert.equal(typeof verify.main, "function");
  } finally {
    Object.assign(console, { log, error, warn });
  }
  assert.deepEqual(logged, []);
});

for (const [name, script] of [["doctor", DOCTOR], ["verify", VERIFY]]) {
  Deno.test(`cli: ${name} --help prints usage, flags and exit codes, and exits 0`, async () => {
    const { code, stdout, stderr } = await runDeno(script, { flags: FLAGS, args: ["--help"] });
    assert.equal(code, 0, stderr);
    assert.match(stdout, new RegExp(`^${name}: `));
    assert.match(stdout, new RegExp(`usage: deno task ${name} .*\\[--help\\]`, "s"));
    assert.match(stdout, new RegExp(`deno run -A jsr:@aclnn/upsample/${name}`));
    assert.match(stdout, /\nflags:\n {2}--/);
    assert.match(stdout, /\nexit status:\n {2}0 .*\n {2}1 .*\n {2}2 /);
    assert.equal(stderr, "");
  });
}

Deno.test({
  name: "cli: doctor on a host without CANN reports the CPU backend as information and exits 0",
  ignore: REAL_CANN,
}, async () => {
  const { code, stdout, stderr } = await runDeno(DOCTOR, { flags: FLAGS });
  assert.equal(code, 0, stdout + stderr);
  assert.doesNotMatch(stdout, /\[FAIL\]/);
  assert.match(stdout, /\[info\] no CANN found\n/);
  assert.match(stdout, /\[info\] Device\.open\(\) picks the CPU backend: .*the CPU backend serves/);
  assert.match(stdout, /\[info\] CPU backend: cpu \(WebAssembly SIMD\)/);
  assert.match(stdout, /to use an NPU: source your CANN's set_env\.sh/);
  assert.match(stdout, /\[ok\] +upsampleBilinear2dBackward/);
});

Deno.test({
  name: "cli: doctor fails (exit 1) when an NPU was asked for and there is none",
  ignore: REAL_CANN,
}, async () => {
  for (const args of [["--npu"], ["--device-id", "0"], ["--lib-dir", "/nonexistent/lib64"]]) {
    const { code, stdout } = await runDeno(DOCTOR, { flags: FLAGS, args });
    assert.equal(code, 1, `${args}: ${stdout}`);
    assert.match(stdout, /\[FAIL\] no CANN found\n/, args.join(" "));
    assert.match(stdout, /\[FAIL\] Device\.open\(\) picks the CPU backend/, args.join(" "));
  }
});

Deno.test({
  name: "cli: verify without arguments on a host without CANN does not say an NPU was asked for",
  ignore: REAL_CANN,
}, async () => {
  const { code, stdout, stderr } = await runDeno(VERIFY, { flags: FLAGS });
  assert.equal(code, 2, stdout + stderr);
  assert.doesNotMatch(stderr, /asks for an NPU/);
  assert.match(stderr, /^verify: no usable NPU \(Device\.open picked the CPU backend\): could not/);
  assert.match(stderr, /\nfix: source your CANN's set_env\.sh/);
  // Told which NPU: that is an NPU asked for, and said once, by verify.
  const told = await runDeno(VERIFY, { flags: FLAGS, args: ["--device-id", "1"] });
  assert.equal(told.code, 2);
  assert.doesNotMatch(told.stderr, /ACLNN_UPSAMPLE_CPU_FALLBACK|asks for an NPU/);
});

EMULATED_LANE.test("cli: doctor says the emulation is the emulation, not Ascend hardware", async () => {
  const { code, stdout } = await runDeno(DOCTOR, {
    flags: FLAGS,
    env: { ACLNN_LIB_DIR: EMU_DIR },
  });
  assert.equal(code, 0, stdout);
  assert.match(
    stdout,
    /\[info\] this CANN is the host emulation \(native\/\), not Ascend hardware/,
  );
  assert.match(stdout, /picks the NPU: Ascend910B3 #0 \(host emulation, not an NPU\)/);
  // The SoC the emulation reports stays the real one: it picks the device generation.
  assert.match(stdout, /SoC Ascend910B3,/);
});
