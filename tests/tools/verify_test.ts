// `deno task verify`: its command line (bad values are errors naming the flag and the value), the
// configurations it runs (seeded, with tie and one-scale bilinear cases, all valid for the ops, drawn
// from what the NPU's family runs), and runs on the emulation of every family: at least 90 of 100
// drawn configurations checked, compared bit for bit where the device reference is exact and within
// the bound elsewhere, and failing under the planted one-ulp fault (ACLEMU_ULP_FAULT), which every
// bound lets through; on A2/A3 the Cube kernels compared bit for bit in the reading the Cube-order
// probe finds (--cube-order auto), within the bound with --cube-order pytorch.

import assert from "node:assert/strict";
import { Device, runParams } from "../../mod.ts";
import { parseVerifyArgs, UsageError } from "../../cli/verify/args.ts";
import { makeCases, routeCases, type VerifyCase } from "../../cli/verify/cases.ts";
import {
  emu,
  EMU_DIR,
  EMU_NO_V2_DIR,
  EMU_OLD_RUNTIME_DIR,
  EMU_TORCH_MAP_DIR,
  EMULATED_LANE,
} from "../support/helpers.ts";
import { differingBits, verifyDevice, type VerifySummary } from "../../cli/verify/verify.ts";
import { chooseCubeOrder } from "../../cli/verify/cube_order.ts";

Deno.test("verify: the command line", () => {
  const defaults = parseVerifyArgs([]);
  assert.equal(defaults.cases, 100);
  assert.equal(defaults.seed, 1);
  assert.equal(defaults.libDir, undefined);
  assert.deepEqual(defaults.dtypes, ["float32", "float16", "bfloat16"]);
  assert.equal(defaults.cubeOrder, "auto");
  assert.equal(parseVerifyArgs(["--cube-order", "ascending"]).cubeOrder, "ascending");
  assert.equal(parseVerifyArgs(["--cube-order=pytorch"]).cubeOrder, "pytorch");
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
    cubeOrder: "auto",
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
    [
      ["--cube-order", "descending"],
      /--cube-order must be pytorch, ascending or auto, got "descending"/,
    ],
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

Deno.test("verify: the draws follow the family's mix (its ops, a refused draw drawn again, equal sizes last)", () => {
  const dtypes = ["float32", "float16", "bfloat16"] as const;
  // Everything runs: the same cases as without a mix.
  assert.deepEqual(makeCases(100, 7, dtypes, { runs: () => true }), makeCases(100, 7, dtypes));
  // The 910 and 310P: bilinear alone (the tie slots draw random cases), bfloat16 only with equal
  // sizes (checkFamilySupports).
  const sizesDiffer = (c: VerifyCase): boolean =>
    c.inputSize[2] !== c.outputSize[0] || c.inputSize[3] !== c.outputSize[1];
  const runs = (c: VerifyCase): boolean => c.dtype !== "bfloat16" || !sizesDiffer(c);
  const tbeOnly = makeCases(200, 7, dtypes, { ops: ["bilinear2d"], runs });
  assert.ok(tbeOnly.every((c) => c.op === "bilinear2d" && runs(c)));
  assert.equal(tbeOnly.filter((c) => c.kind === "tie").length, 0);
  assert.equal(tbeOnly.filter((c) => c.kind === "one-scale").length, 40);
  assert.equal(tbeOnly.filter((c) => c.deterministic).length, 40, "by position, as ever");
  assert.ok(
    tbeOnly.some((c) => c.dtype === "float16") && tbeOnly.some((c) => c.dtype === "float32"),
  );
  // Only bfloat16 asked for: the family's one bfloat16 bilinear, equal sizes, scales not given.
  const bf16 = makeCases(20, 7, ["bfloat16"], { ops: ["bilinear2d"], runs });
  assert.ok(bf16.every((c) => !sizesDiffer(c) && c.scales.every((s) => s === 0)), "equal sizes");
  // Nothing runs: the draws are kept (verify reports them as skipped).
  assert.equal(makeCases(10, 7, dtypes, { runs: () => false }).length, 10);
  // The route cases take the first dtype the family runs.
  assert.deepEqual(
    routeCases(["bfloat16", "float32"], { runs }).map((c) => c.dtype),
    ["float32", "float32", "float32"],
  );
});

const MAIN = new URL("../../cli/verify/main.ts", import.meta.url).pathname;

/**
 * Runs `deno task verify`'s script in a child Deno (the libDir decides which emulation it loads, the
 * emulation's variables, ACLEMU_SOC included, come from `env` alone).
 */
async function verify(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; out: string; err: string }> {
  const inherited = Deno.env.toObject();
  for (const key of Object.keys(inherited)) {
    if (key.startsWith("ACLEMU_") || key === "ACLNN_LIB_DIR") delete inherited[key];
  }
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-ffi", "--allow-env", "--allow-read", MAIN, ...args],
    env: { ...inherited, ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);
  return { code: output.code, out: decode(output.stdout), err: decode(output.stderr) };
}

/** Every emulated family: [label, ACLEMU_SOC, libDir]. */
const FAMILIES: ReadonlyArray<readonly [string, string, string]> = [
  ["Atlas A2/A3", "Ascend910B3", EMU_DIR],
  ["Atlas A2/A3 \\(bilinear V1 only\\)", "Ascend910B3", EMU_NO_V2_DIR],
  ["Atlas training series \\(Ascend 910\\)", "Ascend910A", EMU_DIR],
  ["Atlas inference series \\(Ascend 310P\\)", "Ascend310P3", EMU_DIR],
  ["Ascend 950", "Ascend950PR_9599", EMU_DIR],
];

/** The family line of a run: drawn, checked, skipped, bit for bit, within the bound. */
function familyCounts(out: string, label: string): number[] {
  const line = out.match(
    new RegExp(
      `^family ${label}: (\\d+) drawn, (\\d+) checked, (\\d+) skipped; (\\d+) compared bit ` +
        `for bit, (\\d+) within the bound$`,
      "m",
    ),
  );
  assert.ok(line !== null, out);
  return line.slice(1).map(Number);
}

Deno.test({
  name:
    "verify: every emulated family checks at least 90 of 100 drawn configurations, bit for bit where the reference is exact",
  ignore: EMULATED_LANE.ignore !== undefined,
}, async () => {
  for (const [label, soc, libDir] of FAMILIES) {
    const { code, out, err } = await verify(
      ["--cases", "100", "--seed", "29", "--lib-dir", libDir],
      {
        ACLEMU_SOC: soc,
      },
    );
    assert.equal(code, 0, out + err);
    const [drawn, checked, skipped, exact, bounded] = familyCounts(out, label);
    console.log(`${soc} ${libDir}: ${drawn} drawn, ${checked} checked, ${exact} bit for bit`);
    assert.equal(drawn, 103, out); // and the 3 fixed route calls
    assert.ok(checked >= 93 && checked + skipped === drawn, out);
    assert.equal(exact + bounded, checked, out);
    assert.ok(exact >= 10, `${soc}: ${exact} compared bit for bit\n${out}`);
    // Each skipped configuration is printed with the library's reason.
    assert.equal(out.match(/^SKIPPED /gm)?.length ?? 0, skipped, out);
    // Per kernel, summing to the totals.
    const perKernel = [...out.matchAll(/^ {2}\S+: (\d+) bit for bit, (\d+) within the bound$/gm)];
    assert.ok(perKernel.length >= 2, out);
    assert.equal(perKernel.reduce((sum, m) => sum + Number(m[1]), 0), exact, out);
    assert.equal(perKernel.reduce((sum, m) => sum + Number(m[2]), 0), bounded, out);
    assert.match(
      out,
      new RegExp(
        `^103 configurations on .*: ${checked} match the device reference \\(${exact} bit for ` +
          `bit where it is exact, ${bounded} within its bound\\), 0 do not`,
        "m",
      ),
    );
    // A2/A3: the Cube-order probe runs first and finds the emulation's reading, so the Cube
    // kernels are compared bit for bit; the other families run no Cube kernel.
    const a2 = soc === "Ascend910B3";
    if (a2) {
      assert.match(
        out,
        /^Cube order: auto: doctor's Cube-order probe finds this device follows "ascending": /m,
      );
      const cube = [
        ...out.matchAll(/^ {2}Upsample\w+2dGrad: (\d+) bit for bit, (\d+) within the bound$/gm),
      ];
      assert.ok(cube.length >= 1 && cube.every((m) => Number(m[1]) > 0 && m[2] === "0"), out);
    } else {
      assert.doesNotMatch(out, /^Cube order:/m);
    }
    if (!a2 || libDir !== EMU_DIR) continue;
    // --cube-order pytorch: the same draws, the Cube kernels within the bound instead.
    const pytorch = await verify(
      ["--cases", "100", "--seed", "29", "--lib-dir", libDir, "--cube-order", "pytorch"],
      { ACLEMU_SOC: soc },
    );
    assert.equal(pytorch.code, 0, pytorch.out + pytorch.err);
    const [, checkedP, , exactP, boundedP] = familyCounts(pytorch.out, label);
    const cubeCount = [...out.matchAll(/^ {2}Upsample\w+2dGrad: (\d+) bit for bit/gm)]
      .reduce((sum, m) => sum + Number(m[1]), 0);
    console.log(`${soc}: --cube-order pytorch ${exactP} bit for bit, auto ${exact}`);
    assert.equal(checkedP, checked);
    assert.equal(exactP, exact - cubeCount, pytorch.out);
    assert.equal(boundedP, bounded + cubeCount, pytorch.out);
    assert.match(pytorch.out, /^Cube order: --cube-order pytorch: .*compared within the bound/m);
  }
});

Deno.test({
  name:
    "verify: the planted one-ulp fault in the order-free kernels fails on every family, though within every bound",
  ignore: EMULATED_LANE.ignore !== undefined,
}, async () => {
  for (const [label, soc, libDir] of FAMILIES) {
    const { code, out, err } = await verify(["--cases", "40", "--seed", "3", "--lib-dir", libDir], {
      ACLEMU_SOC: soc,
      ACLEMU_ULP_FAULT: "1",
    });
    assert.equal(code, 1, out + err);
    const mismatches = out.match(/^MISMATCH .*$/gm) ?? [];
    assert.ok(mismatches.length > 0, out);
    // Each one a bit-for-bit comparison whose every element lies within the bound: the bound alone
    // would have passed it (a routed call carries a pass's faulted cell into several).
    for (const line of mismatches) {
      assert.match(
        line,
        /: bit for bit \(\S+: .*\): [1-9]\d* of \d+ elements differ in their bits, e\.g\. \[[\d, ]+\]: NPU \S+ \(0x[0-9a-f]{8}\), reference \S+ \(0x[0-9a-f]{8}\); every element within the bound$/,
      );
    }
    const [, checked, , exact] = familyCounts(out, label);
    assert.match(
      out,
      new RegExp(
        `^43 configurations on .*: ${checked - mismatches.length} match the device reference`,
        "m",
      ),
    );
    assert.ok(mismatches.length <= exact, out);
    console.log(
      `${soc} ${libDir}: ${mismatches.length} of ${exact} exact comparisons caught the fault`,
    );
    if (soc !== "Ascend910B3") continue;
    // The fault moves the probe's bits too: auto takes the bound for the Cube kernels, and
    // --cube-order ascending compares them bit for bit, which catches it there as well.
    assert.match(out, /^Cube order: auto: .*follows neither reading .*within the bound/m);
    assert.doesNotMatch(out, /^MISMATCH .*\(Upsample\w+2dGrad: /m);
    const ascending = await verify(
      ["--cases", "40", "--seed", "3", "--lib-dir", libDir, "--cube-order", "ascending"],
      { ACLEMU_SOC: soc, ACLEMU_ULP_FAULT: "1" },
    );
    assert.equal(ascending.code, 1, ascending.out + ascending.err);
    assert.match(
      ascending.out,
      /^MISMATCH nearestExact\dd .*: bit for bit \(UpsampleNearestExact2dGrad: .*; every element within the bound$/m,
    );
  }
});

Deno.test("verify: passes on the emulated device and reports where it differs from PyTorch", async () => {
  const { code, out, err } = await verify(["--cases", "40", "--seed", "5", "--lib-dir", EMU_DIR]);
  assert.equal(code, 0, out + err);
  // 40 seeded configurations and the 3 that reach the deterministic route.
  assert.match(
    out,
    /43 configurations on Ascend\S* .*: 43 match the device reference \([1-9]\d* bit for bit where it is exact, [1-9]\d* within its bound\), 0 do not$/m,
  );
  assert.match(out, /^family Atlas A2\/A3: 43 drawn, 43 checked, 0 skipped;/m);
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
  const args = ["--cases", "40", "--seed", "5", "--lib-dir", EMU_TORCH_MAP_DIR];
  // Its Cube kernels sum in the "ascending" reading (the probe has no ties), so auto compares them
  // bit for bit; the ties miss both the bits and the bound.
  const { code, out, err } = await verify(args);
  assert.equal(code, 1, out + err);
  assert.match(out, /^Cube order: auto: .*follows "ascending"/m);
  assert.match(
    out,
    /MISMATCH nearestExact[12]d .*\(tie\): bit for bit \(UpsampleNearestExact2dGrad: .*elements differ in their bits.*; the bound: \d+ of \d+ elements differ/,
  );
  assert.match(out, /43 configurations on .*: \d+ match the device reference .*, [1-9]\d* do not/);
  // Within the bound alone (--cube-order pytorch), the index mapping fails it just the same.
  const bound = await verify([...args, "--cube-order", "pytorch"]);
  assert.equal(bound.code, 1, bound.out + bound.err);
  assert.match(
    bound.out,
    /MISMATCH nearestExact[12]d .*\(tie\): within the bound \(UpsampleNearestExact2dGrad\): \d+ of \d+ elements differ/,
  );
});

Deno.test("verify: a runtime without deterministic mode runs those cases with it off, unrepeated; a V1-only CANN gets what V1 runs", async () => {
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
  // A CANN without V2: the draws leave out what V1 would get wrong on A2/A3 (a scale that does not
  // match the sizes, bfloat16), and V1's bilinear is checked against the TBE kernel it runs.
  const v1 = await verify(["--cases", "10", "--lib-dir", EMU_NO_V2_DIR]);
  assert.equal(v1.code, 0, v1.out + v1.err);
  assert.doesNotMatch(v1.out, /^SKIPPED/m);
  assert.match(
    v1.out,
    /^family Atlas A2\/A3 \(bilinear V1 only\): 13 drawn, 13 checked, 0 skipped/m,
  );
  assert.match(v1.out, /^ {2}ResizeBilinearV2Grad5HD\.MODE\d: [1-9]\d* bit for bit/m);
  // Only bfloat16, which V1 does not take: its bilinear draws are refused and said why.
  const bf16 = await verify(["--cases", "10", "--dtype", "bfloat16", "--lib-dir", EMU_NO_V2_DIR]);
  assert.equal(bf16.code, 0, bf16.out + bf16.err);
  assert.match(bf16.out, /^SKIPPED bilinear2d bfloat16 .*this CANN only has/m);
  assert.match(
    bf16.out,
    /13 configurations on .*: \d+ match .*, 0 do not, [1-9]\d* refused before the device/,
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
    // The Cube order as given: auto's probe would take the failure meant for a configuration.
    const args = ["--cases", "6", "--cube-order", "pytorch"];
    summary = await verifyDevice(npu, parseVerifyArgs(args), (l) => lines.push(l));
  } finally {
    emu().aclemuResetFaults();
  }
  assert.equal(summary.cases, 9); // and the 3 route cases
  assert.equal(summary.failures, 1, lines.join("\n"));
  assert.equal(summary.checked, 8, lines.join("\n"));
  assert.equal(summary.exact + summary.bounded, 8);
  assert.equal(
    [...summary.kernels.values()].reduce((sum, k) => sum + k.exact + k.bounded, 0),
    8,
  );
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

EMULATED_LANE.test("verify --cube-order: auto takes the bound where the probe fails; a family without Cube kernels refuses an explicit order", async () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  const generation = npu.generation!;
  if (generation === "a2") {
    emu().aclemuFailNextLaunch(507015);
    let choice;
    try {
      choice = await chooseCubeOrder(npu, "auto", generation, undefined);
    } finally {
      emu().aclemuResetFaults();
    }
    assert.equal(choice.cubeOrder, "pytorch");
    assert.match(
      choice.line ?? "",
      /^Cube order: auto: doctor's Cube-order probe could not run \(.*507015.*\): .*within the bound/,
    );
    const explicit = await chooseCubeOrder(npu, "ascending", generation, undefined);
    assert.equal(explicit.cubeOrder, "ascending");
  }
  for (const other of ["910", "310p", "950"] as const) {
    assert.deepEqual(await chooseCubeOrder(npu, "auto", other, undefined), {
      cubeOrder: undefined,
      line: null,
    });
    await assert.rejects(
      chooseCubeOrder(npu, "ascending", other, undefined),
      /verify --cube-order ascending: the reference follows the .* rules, which run no Cube kernel/,
    );
  }
});
