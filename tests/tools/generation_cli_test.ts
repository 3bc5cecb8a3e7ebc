// verify and doctor follow the runtime's kernel family: each runs in a child process on the emulation
// as an Atlas A2 (Ascend910B3), an Ascend 950 (Ascend950PR_9599), an Atlas training series
// (Ascend910A) or inference series (Ascend310P3) SoC (ACLEMU_SOC is read once per process). verify
// passes against its own family's reference and fails against another's (--soc); an unknown SoC is
// reported with A2/A3 assumed, one of another arch refused; its repeatability check in deterministic
// mode passes on each family and fails where the emulation's planted zero-weight fault makes the
// deterministic route order-dependent; doctor names the family, per op support and determinism, what
// deterministic mode runs per op, and the contraction probe's answer (both ACLEMU_FMA /
// ACLEMU_TBE_FMA settings); on A2/A3 the Cube-order probe's reading.

import assert from "node:assert/strict";
import { EMU_DIR, EMULATED_LANE } from "../support/helpers.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const A2 = "Ascend910B3", A950 = "Ascend950PR_9599";

async function run(
  entry: "verify" | "doctor",
  soc: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; text: string }> {
  const inherited = Deno.env.toObject();
  for (
    const key of [
      "ACLEMU_SOC",
      "ACLEMU_FMA",
      "ACLEMU_TBE_FMA",
      "ACLEMU_ATOMIC_SEED",
      "ACLEMU_TBE_ZERO_WEIGHT_FAULT",
      "ACLEMU_FORWARD_SHIFT_FAULT",
      "ACLEMU_ULP_FAULT",
      "ACLNN_LIB_DIR",
    ]
  ) {
    delete inherited[key];
  }
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-ffi",
      "--allow-env",
      "--allow-read",
      `${ROOT}cli/${entry}/main.ts`,
      "--lib-dir",
      EMU_DIR,
      ...args,
    ],
    env: { ...inherited, ...env, ACLEMU_SOC: soc, NO_COLOR: "1" },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);
  return { code: output.code, text: decode(output.stdout) + decode(output.stderr) };
}

const ignore = EMULATED_LANE.ignore !== undefined;
const CASES = ["--cases", "40", "--seed", "7"];

const A910 = "Ascend910A", A310P = "Ascend310P3";
const FAMILIES: ReadonlyArray<readonly [string, string]> = [
  [A2, "Atlas A2/A3"],
  [A950, "Ascend 950"],
  [A910, "Atlas training series \\(Ascend 910\\)"],
  [A310P, "Atlas inference series \\(Ascend 310P\\)"],
];

Deno.test({
  name: "verify: passes on each emulated family against the runtime's SoC",
  ignore,
}, async () => {
  for (const [soc, family] of FAMILIES) {
    const { code, text } = await run("verify", soc, CASES);
    assert.equal(code, 0, text);
    assert.match(
      text,
      new RegExp(`reference: ${family} rules \\(the runtime's SoC: ${soc} is NpuArch`),
    );
    const tbeOnly = soc === A910 || soc === A310P;
    // 40 seeded configurations and the 3 deterministic ones that reach the route, drawn from what
    // the family runs (bilinear alone on the 910 and 310P): every one checked.
    assert.match(text, /43 configurations on .*: 43 match the device reference/);
    assert.match(text, new RegExp(`^family ${family}: 43 drawn, 43 checked, 0 skipped;`, "m"));
    if (tbeOnly) assert.doesNotMatch(text, /^(MISMATCH|SKIPPED) nearestExact/m);
    // Every deterministic configuration twice, with two atomic-order seeds: the same bits.
    const repeats = text.match(
      /repeatability in deterministic mode: (\d+) configurations run twice \(the emulation with two atomic-order seeds\), 0 gave different bits/,
    );
    assert.ok(repeats !== null, text);
    assert.ok(Number(repeats[1]) >= (tbeOnly ? 3 : 8), text);
    assert.doesNotMatch(text, /REPEAT MISMATCH|SKIPPED/);
  }
});

Deno.test({
  name:
    "verify: the repeatability check fails where the planted fault makes the route order-dependent",
  ignore,
}, async () => {
  // ACLEMU_TBE_ZERO_WEIGHT_FAULT gives the route's zero-weight rows a weight: in the H pass of the
  // 1100-row image (tiling mode 6), the cells where two windows overlap then take 4 partial sums
  // from 2 cores, whose order the emulation draws from the atomic seed.
  const fault = { ACLEMU_TBE_ZERO_WEIGHT_FAULT: "1" };
  const args = ["--cases", "1", "--dtype", "float32"]; // one bilinear case, not deterministic
  const { code, text } = await run("verify", A910, args, fault);
  assert.equal(code, 1, text);
  const wide = "bilinear2d float32 inputSize \\[1, 4, 1100, 32\\] outputSize \\[1200, 64\\] " +
    "scales \\[0, 2\\] alignCorners false \\(route, deterministic\\)";
  const bits = "\\S+ \\(0x[0-9a-f]{8}\\)";
  assert.match(
    text,
    new RegExp(
      `^REPEAT MISMATCH ${wide}: [1-9]\\d* of 140800 elements differ between two runs in ` +
        `deterministic mode, e\\.g\\. \\[0, \\d, \\d+, \\d+\\]: ${bits} then ${bits}\n` +
        ` {2}\\(the emulation's atomic-order seeds \\(aclemuSetAtomicSeed\\) 0x5eed\\w+, ` +
        `then 0x5eed\\w+\\)$`,
      "m",
    ),
  );
  // Only that call: the other route calls' passes stay order-independent under the fault.
  assert.equal(text.match(/^REPEAT MISMATCH /gm)?.length, 1, text);
  assert.match(
    text,
    /repeatability in deterministic mode: 3 configurations run twice .*, 1 gave different bits \(REPEAT MISMATCH above\)/,
  );
  // --no-repeat skips the check (the fault still moves the values off the reference).
  const skipped = await run("verify", A910, [...args, "--no-repeat"], fault);
  assert.equal(skipped.code, 1, skipped.text);
  assert.doesNotMatch(skipped.text, /REPEAT MISMATCH/);
  assert.match(skipped.text, /repeatability in deterministic mode: not checked \(--no-repeat\)/);
  assert.match(skipped.text, /^MISMATCH bilinear2d float32 inputSize \[1, 4, 1100, 32\]/m);
});

Deno.test({
  name: "verify: fails against another family's reference (--soc), and --soc of its own passes",
  ignore,
}, async () => {
  const pairs = [[A2, A950], [A950, A2], [A910, A2], [A310P, A950], [A2, A910]];
  for (const [soc, other] of pairs) {
    const crossed = await run("verify", soc, [...CASES, "--soc", other]);
    assert.equal(crossed.code, 1, `${soc} vs ${other}: ${crossed.text}`);
    assert.match(crossed.text, new RegExp(`\\(--soc: ${other} `));
    assert.match(crossed.text, /^MISMATCH /m);
  }
  for (const [soc] of FAMILIES) {
    const own = await run("verify", soc, [...CASES, "--soc", soc]);
    assert.equal(own.code, 0, own.text);
  }
});

Deno.test({
  name: "verify: an unknown --soc is assumed A2/A3 with why; one of another arch is refused",
  ignore,
}, async () => {
  const unknown = await run("verify", A2, [...CASES, "--soc", "Ascend999"]);
  assert.equal(unknown.code, 0, unknown.text);
  assert.match(
    unknown.text,
    /reference: Atlas A2\/A3 rules \(--soc: Ascend999 is not in CANN's platform table .*assumed\)/,
  );
  const other = await run("verify", A2, [...CASES, "--soc", "Ascend310B1"]);
  assert.notEqual(other.code, 0, other.text);
  assert.match(
    other.text,
    /Ascend310B1 \(NpuArch 3002, Ascend310B: Atlas 200I\/500 A2\) runs none of/,
  );
});

Deno.test({
  name:
    "doctor: names the family, per op support and determinism, what deterministic mode runs per op, and the contraction probe",
  ignore,
}, async () => {
  for (const [soc, family] of FAMILIES) {
    const a950 = soc === A950;
    const tbeOnly = soc === A910 || soc === A310P;
    for (const fma of ["1", "0"]) {
      const env: Record<string, string> = a950 ? { ACLEMU_FMA: fma } : { ACLEMU_TBE_FMA: fma };
      const { text } = await run("doctor", soc, [], env);
      assert.match(text, new RegExp(`\\[ok\\] +kernel generation: ${family}: ${soc} is NpuArch`));
      if (tbeOnly) {
        assert.match(text, /nearest-exact 1d\/2d: not supported on this family/);
        assert.match(text, /bilinear: supported for float32 and float16 .* modes 5 and 6/);
      } else {
        assert.match(text, /nearest-exact 1d\/2d: supported; deterministic flag: no kernel change/);
      }
      // What deterministic mode runs, per op, for a representative call.
      const mode = (op: string, call: string, what: string, scale = ""): RegExp =>
        new RegExp(
          `^\\[info\\] deterministic mode, upsample${op}Backward ${call} float32${scale}: ${what}$`,
          "m",
        );
      const nearest = tbeOnly
        ? "not supported on this family \\(the library refuses the call before the device\\)"
        : `native kernel \\(UpsampleNearestExact2dGrad${a950 ? "\\.SIMT" : ""}\\)`;
      assert.match(text, mode("NearestExact1d", "\\[1,8,64\\] from \\[128\\]", nearest));
      assert.match(text, mode("NearestExact2d", "\\[1,8,64,64\\] from \\[128,128\\]", nearest));
      const tbe = `ResizeBilinearV2Grad5HD\\.MODE${soc === A2 ? 6 : 5}`;
      assert.match(
        text,
        a950
          ? mode(
            "Bilinear2d",
            "\\[1,8,128,128\\] from \\[64,64\\]",
            "flag-switched kernel \\(ResizeBilinearV2Grad\\.SIMT_NCHW_DETERMINE; with the flag " +
              "off: ResizeBilinearV2Grad\\.SIMT_NCHW\\)",
          )
          : mode(
            "Bilinear2d",
            "\\[1,8,64,64\\] from \\[128,128\\]",
            `deterministic route \\(two launches: ${tbe}, ${tbe}\\)`,
            soc === A2 ? " scalesH 2" : "", // A2/A3: one scale, so V2 falls back to the TBE kernel
          ),
      );
      if (soc === A2) assert.match(text, /V1 and V2's fallback .*mode 6 here: no L1/);
      if (a950) {
        assert.match(text, /bilinear: supported; deterministic flag: changes the kernel/);
        const answer = fma === "1"
          ? "input 2: this device contracts"
          : "input 3: this device rounds";
        assert.match(
          text,
          new RegExp(`\\[ok\\] +FMA probe \\(nearest-exact 1d, 6 -> 1\\): ${answer}`),
        );
      } else {
        const answer = fma === "1"
          ? "contracts a \\* b \\+ c into one FMA \\(device reference: tbeFma: true\\)"
          : "rounds the product before the sum \\(device reference: tbeFma: false\\)";
        assert.match(
          text,
          new RegExp(`\\[ok\\] +TBE FMA probe \\(bilinear 3 <- 19\\): this device ${answer}`),
        );
        // The kernel's window: 767 on A2/A3, 1023 on the 910 and 310P; the image 2U + 1 wide.
        const wide = soc === A2 ? 1535 : 2047;
        assert.match(
          text,
          new RegExp(
            `\\[ok\\] +TBE column-loss probe \\(bilinear \\[2, ${wide}\\] <- \\[2, 2\\].*` +
              `follows the lossy reading: gradient column 1 never reaches image column ${wide - 1}`,
          ),
        );
      }
    }
  }
  const unknown = await run("doctor", "Ascend999", []);
  assert.match(
    unknown.text,
    /\[warn\] kernel generation: Atlas A2\/A3 assumed: Ascend999 is not in CANN's platform table/,
  );
  const other = await run("doctor", "Ascend310B1", []);
  assert.match(
    other.text,
    /Ascend310B1 \(NpuArch 3002, Ascend310B: Atlas 200I\/500 A2\) runs none of/,
  );
});

Deno.test({
  name: "verify --adjoint: passes on every family (device facts named), fails on a planted shift",
  ignore,
}, async (t) => {
  for (const soc of [A2, A950, A910, A310P]) {
    await t.step(soc, async () => {
      const { code, text } = await run("verify", soc, [
        "--adjoint",
        "--cases",
        "30",
        "--seed",
        "3",
      ]);
      assert.equal(code, 0, text);
      assert.match(text, /^adjoint: \d+ pairs, 0 outside the bound, \d+ device facts/m);
      assert.match(text, /^adjoint bilinear2d float32: worst .* = 0\.\d+$/m);
      if (soc === A2 || soc === A950) {
        // Nearest-exact's forward floors (o + 0.5) * s while its backward gathers ranges: ties.
        assert.match(text, /^DEVICE FACT nearestExact\w+ .*not the transpose of its forward/m);
      }
    });
  }
  await t.step("doctor's adjoint lines", async () => {
    const a2 = await run("doctor", A2, []);
    assert.match(a2.text, /^\[ok\] +adjoint nearestExact2d .* of its rounding bound$/m);
    assert.match(a2.text, /^\[ok\] +adjoint bilinear2d .* of its rounding bound$/m);
    const training = await run("doctor", A910, []);
    assert.match(training.text, /^\[info\] adjoint nearestExact2d .*: not run: .*Atlas training/m);
    const shifted = await run("doctor", A2, [], { ACLEMU_FORWARD_SHIFT_FAULT: "1" });
    assert.match(shifted.text, /^\[FAIL\] adjoint nearestExact1d .*kernels disagree$/m);
  });
  await t.step(
    "doctor's Cube-order probe: A2/A3 alone, the emulation's reading, a planted ulp neither",
    async () => {
      const { text } = await run("doctor", A2, []);
      assert.match(
        text,
        /^\[ok\] +Cube order probe \(A2\/A3's Cube matmuls\): this device follows the reading "ascending" .*device reference cubeOrder: "ascending"; deno task verify --cube-order ascending/m,
      );
      assert.match(
        text,
        /^ {7}nearest-exact 2d backward \[1, 2, 5, 7\] <- \[11, 16\]: differs from "ascending" in 0 of 70 elements, from "pytorch" in [1-9]\d*$/m,
      );
      assert.match(
        text,
        /^ {7}bilinear backward .*UpsampleBilinear2dGrad\): differs from "ascending" in 0 of 70 elements, from "pytorch" in [1-9]\d*$/m,
      );
      const faulted = await run("doctor", A2, [], { ACLEMU_ULP_FAULT: "1" });
      assert.match(
        faulted.text,
        /^\[info\] Cube order probe \(A2\/A3's Cube matmuls\): this device follows neither reading bit for bit/m,
      );
      for (const soc of [A950, A910]) {
        assert.doesNotMatch((await run("doctor", soc, [])).text, /Cube order probe/);
      }
    },
  );
  await t.step("doctor's Cube FMA probe on A2/A3 follows ACLEMU_FMA", async () => {
    for (const [fma, answer] of [["1", "contracts the centre"], ["0", "rounds the product"]]) {
      const { text } = await run("doctor", A2, [], { ACLEMU_FMA: fma });
      assert.match(
        text,
        new RegExp(
          `^\\[ok\\] +Cube FMA probe \\(bilinear forward 2 -> 6, scale 3\\): this device ${answer}`,
          "m",
        ),
      );
    }
  });
  await t.step("ACLEMU_FORWARD_SHIFT_FAULT", async () => {
    const fault = { ACLEMU_FORWARD_SHIFT_FAULT: "1" };
    const { code, text } = await run("verify", A2, ["--adjoint", "--cases", "30"], fault);
    assert.equal(code, 1, text);
    assert.match(text, /^FAILURE nearestExact\w+ /m);
    assert.doesNotMatch(text, /^FAILURE bilinear2d /m);
  });
});
