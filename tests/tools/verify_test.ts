// `deno task verify`: its command line (bad values are errors naming the flag and the value) and the
// configurations it runs (seeded, with tie and one-scale bilinear cases, all valid for the ops).

import assert from "node:assert/strict";
import { Device, runParams } from "../../mod.ts";
import { parseVerifyArgs, UsageError } from "../../cli/verify/args.ts";
import { makeCases, routeCases } from "../../cli/verify/cases.ts";
import {
  emu,
  EMU_DIR,
  EMU_NO_V2_DIR,
  EMU_OLD_RUNTIME_DIR,
  EMU_TORCH_MAP_DIR,
  EMULATED_LANE,
} from "../support/helpers.ts";
import { differingBits, verifyDevice, type VerifySummary } from "../../cli/verify/verify.ts";

Deno.test("verify: the command line", () => {
  const defaults = parseVerifyArgs([]);
  assert.equal(defaults.cases, 100);
  assert.equal(defaults.seed, 1);
  assert.equal(defaults.libDir, undefined);
  assert.deepEqual(defaults.dtypes, ["float32", "float16", "bfloat16"]);
  const given = parseVerifyArgs([
    "--cases",
    "7",
    "--seed=42",
    "--lib-dir",
    "/opt/cann/lib64",
    "--dtype",
    "bfloat16",
    "--device-id",
    "1",
  ]);
  assert.deepEqual(given, {
    cases: 7,
    seed: 42,
    libDir: "/opt/cann/lib64",
    deviceId: 1,
    dtypes: ["bfloat16"],
    repeat: true,
    adjoint: false,
    help: false,
  });
  assert.equal(parseVerifyArgs(["--no-repeat"]).repeat, false);
  assert.equal(parseVerifyArgs(["--adjoint"]).adjoint, true);
  const bad: Array<[string[], RegExp]> = [
    [["--cases", "abc"], /--cases must be an integer >= 1, got "abc"/],
    [["--cases", "0"], /--cases must be an integer >= 1, got "0"/],
    [["--cases", "2.5"], /--cases must be an integer >= 1, got "2.5"/],
    [["--seed=-1"], /--seed must be an integer >= 0, got "-1"/],
    [
      ["--dtype", "float64"],
      /--dtype must be one of float32, float16, bfloat16 or all, got "float64"/,
    ],
    [["--device-id", "x"], /--device-id must be an integer >= 0, got "x"/],
    [["--lib-dir", ""], /--lib-dir must be a folder/],
    [["--no-repeat=1"], /verify: .*no-repeat/s],
    [["--frobnicate"], /verify: .*frobnicate.*\nusage: deno task verify/s],
    [["stray"], /verify: .*stray.*\nusage: deno task verify/s],
  ];
  for (const [args, message] of bad) {
    assert.throws(() => parseVerifyArgs(args), (error) => {
      assert.ok(error instanceof UsageError, String(error));
      assert.match(error.message, message);
      return true;
    });
  }
});

Deno.test("verify: the cases are seeded, valid, and include ties, one-scale bilinear and deterministic ones", async () => {
  // Valid for several seeds, not just one: every case below is run through the op's validation.
  const cases = [1, 2, 3].flatMap((seed) => makeCases(200, seed, ["float32", "float16"]));
  assert.deepEqual(
    makeCases(200, 3, ["float32", "float16"]),
    cases.slice(400),
    "same seed, same cases",
  );
  assert.notDeepEqual(makeCases(200, 4, ["float32", "float16"]), cases.slice(400));
  const kinds = new Map<string, number>();
  for (const c of cases) kinds.set(c.kind, (kinds.get(c.kind) ?? 0) + 1);
  assert.equal(kinds.get("tie"), 120);
  assert.equal(kinds.get("one-scale"), 120);
  // Every fifth case runs in deterministic mode, chosen by position (the draws stay the same).
  assert.equal(cases.filter((c) => c.deterministic).length, 120);
  cases.forEach((c, i) => assert.equal(c.deterministic, i % 5 === 4, JSON.stringify(c)));
  for (const c of cases.filter((c) => c.kind === "one-scale")) {
    assert.equal(c.op, "bilinear2d");
    assert.equal(c.scales.filter((s) => s > 0).length, 1, JSON.stringify(c));
  }
  assert.ok(cases.every((c) => c.dtype === "float32" || c.dtype === "float16"));
  assert.deepEqual(
    new Set(cases.map((c) => c.op)),
    new Set(["nearestExact1d", "nearestExact2d", "bilinear2d"]),
  );
  // The route cases: deterministic bilinear, H changed, in their preferred dtype when asked for.
  const route = routeCases(["float32", "float16"]);
  assert.deepEqual(route.map((c) => c.dtype), ["float32", "float16", "float32"]);
  assert.deepEqual(routeCases(["bfloat16"]).map((c) => c.dtype), Array(3).fill("bfloat16"));
  for (const c of route) {
    assert.equal(c.op, "bilinear2d");
    assert.ok(c.deterministic && c.kind === "route");
    assert.notEqual(c.inputSize[2], c.outputSize[0], "H changes: the single launch is atomic");
  }
  // Every case is a valid call (validation throws otherwise).
  using cpu = Device.open({ backend: "cpu" });
  for (const c of [...cases, ...route]) {
    const gradShape = [c.inputSize[0], c.inputSize[1], ...c.outputSize];
    using grad = cpu.zeros(gradShape, { dtype: c.dtype });
    using _result = runParams(grad, c);
  }
  await cpu.synchronize();
});

const MAIN = new URL("../../cli/verify/main.ts", import.meta.url).pathname;

/** Runs `deno task verify`'s script in a child Deno (the libDir decides which emulation it loads). */
async function verify(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-ffi", "--allow-env", "--allow-read", MAIN, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);
  return { code: output.code, out: decode(output.stdout), err: decode(output.stderr) };
}

Deno.test("verify: passes on the emulated device and reports where it differs from PyTorch", async () => {
  const { code, out, err } = await verify(["--cases", "40", "--seed", "5", "--lib-dir", EMU_DIR]);
  assert.equal(code, 0, out + err);
  // 40 seeded configurations and the 3 that reach the deterministic route.
  assert.match(out, /43 configurations on Ascend\S* .*: 43 match the device reference/);
  assert.match(
    out,
    /repeatability in deterministic mode: 11 configurations run twice \(the emulation with two atomic-order seeds\), 0 gave different bits/,
  );
  assert.doesNotMatch(out, /MISMATCH/);
  // The tie and one-scale cases differ from PyTorch; each differing configuration shows an example.
  const semantics = out.match(
    /differences from PyTorch semantics .*: (\d+) of 43 configurations, (\d+) elements/,
  );
  assert.ok(semantics, out);
  assert.ok(Number(semantics[1]) >= 5 && Number(semantics[2]) >= Number(semantics[1]), out);
  assert.match(
    out,
    /\(tie\): \d+ of \d+ elements differ, e\.g\. \[[\d, ]+\]: NPU \S+, PyTorch \S+/,
  );
  assert.match(out, /\(one-scale\): \d+ of \d+ elements differ/);
});

Deno.test("verify: fails on an emulation that maps nearest-exact like PyTorch", async () => {
  const { code, out, err } = await verify([
    "--cases",
    "40",
    "--seed",
    "5",
    "--lib-dir",
    EMU_TORCH_MAP_DIR,
  ]);
  assert.equal(code, 1, out + err);
  assert.match(out, /MISMATCH nearestExact[12]d .*\(tie\): \d+ of \d+ elements differ/);
  assert.match(out, /43 configurations on .*: \d+ match the device reference .*, [1-9]\d* do not/);
});

Deno.test("verify: a runtime without deterministic mode runs those cases with it off, unrepeated; V1 limits are skipped", async () => {
  const { code, out, err } = await verify(["--cases", "5", "--lib-dir", EMU_OLD_RUNTIME_DIR]);
  assert.equal(code, 0, out + err);
  assert.match(
    out,
    /^deterministic mode is not available \(MissingSymbolError: .*aclrtCtxSetSysParamOpt/m,
  );
  assert.match(out, /8 configurations on .*: 8 match the device reference/);
  assert.match(
    out,
    /repeatability in deterministic mode: not checked \(deterministic mode is not available\)/,
  );
  // A CANN without V2: what V1 would get wrong on A2/A3 (a scale, bfloat16) is refused, counted.
  const v1 = await verify(["--cases", "10", "--lib-dir", EMU_NO_V2_DIR]);
  assert.equal(v1.code, 0, v1.out + v1.err);
  assert.match(v1.out, /^SKIPPED bilinear2d .*this CANN only has/m);
  assert.match(
    v1.out,
    /13 configurations on .*: \d+ match .*, 0 do not, [1-9] refused before the device/,
  );
});

Deno.test("verify: bad arguments are an error with the flag and value, exit status 2", async () => {
  const { code, out, err } = await verify(["--cases", "abc"]);
  assert.equal(code, 2, out + err);
  assert.match(err, /verify: --cases must be an integer >= 1, got "abc"/);
  assert.equal(out, "");
});

EMULATED_LANE.test("verify: a runtime failure in one configuration is reported and counted, the run goes on", async () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  const lines: string[] = [];
  emu().aclemuFailNextLaunch(507015);
  let summary: VerifySummary;
  try {
    summary = await verifyDevice(npu, parseVerifyArgs(["--cases", "6"]), (l) => lines.push(l));
  } finally {
    emu().aclemuResetFaults();
  }
  assert.equal(summary.cases, 9); // and the 3 route cases
  assert.equal(summary.failures, 1, lines.join("\n"));
  // Case 4 and the route cases run twice, with the same bits.
  assert.deepEqual([summary.repeats, summary.repeatMismatches], [4, 0], lines.join("\n"));
  assert.match(
    lines.join("\n"),
    /^ERROR \S+ .*failed with 507015 \(ACL_ERROR_RT_AICORE_EXCEPTION\)/m,
  );
  assert.match(
    lines.join("\n"),
    /9 configurations on .*: 8 match the device reference .*, 1 do not/,
  );
});

Deno.test("verify: a repeat compares raw bits, every NaN alike", () => {
  const f32 = (...values: number[]): Uint32Array =>
    new Uint32Array(Float32Array.from(values).buffer);
  assert.deepEqual(differingBits(f32(1, 0, NaN), f32(1, -0, NaN), "float32"), [1]);
  const otherNaN = new Uint32Array([0xffc00001]);
  assert.deepEqual(differingBits(f32(NaN), otherNaN, "float32"), []);
  assert.deepEqual(differingBits(f32(1), f32(1 + 2 ** -23), "float32"), [0]);
  // float16: 0x7c00 is infinity, not a NaN; bfloat16: 0x7f81 is a NaN.
  assert.deepEqual(
    differingBits(Uint16Array.of(0x7c01, 0x7c00), Uint16Array.of(0xfe00, 0x7c01), "float16"),
    [1],
  );
  assert.deepEqual(
    differingBits(Uint16Array.of(0x7f81, 0x3f80), Uint16Array.of(0xffc0, 0x3f81), "bfloat16"),
    [1],
  );
});
