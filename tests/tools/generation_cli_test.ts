// verify and doctor follow the runtime's kernel generation: each runs in a child process on the
// emulation as an Atlas A2 (Ascend910B3) or an Ascend 950 (Ascend950PR_9599) (ACLEMU_SOC is read once
// per process). verify passes against its own generation's reference and fails against the other's
// (--soc); an unknown SoC is reported with the generation assumed; doctor names the generation, the
// deterministic flag's effect per op and, on the 950, the FMA probe's answer (both ACLEMU_FMA settings).

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
  for (const key of ["ACLEMU_SOC", "ACLEMU_FMA", "ACLEMU_ATOMIC_SEED", "ACLNN_LIB_DIR"]) {
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

Deno.test({
  name: "verify: passes on each emulated generation against the runtime's SoC",
  ignore,
}, async () => {
  for (const [soc, rules] of [[A2, "Ascend A2/A3 rules"], [A950, "Ascend 950 rules"]]) {
    const { code, text } = await run("verify", soc, CASES);
    assert.equal(code, 0, text);
    assert.match(text, new RegExp(`reference: ${rules} \\(the runtime's SoC: ${soc} `));
    assert.match(text, /40 configurations on .*: 40 match the device reference/);
  }
});

Deno.test({
  name:
    "verify: fails against the other generation's reference (--soc), and --soc of its own passes",
  ignore,
}, async () => {
  for (const [soc, other] of [[A2, A950], [A950, A2]]) {
    const crossed = await run("verify", soc, [...CASES, "--soc", other]);
    assert.equal(crossed.code, 1, crossed.text);
    assert.match(crossed.text, new RegExp(`\\(--soc: ${other} `));
    assert.match(crossed.text, /^MISMATCH /m);
    const own = await run("verify", soc, [...CASES, "--soc", soc]);
    assert.equal(own.code, 0, own.text);
  }
});

Deno.test({
  name: "verify: an unknown --soc is reported with the generation assumed and why",
  ignore,
}, async () => {
  const { code, text } = await run("verify", A2, [...CASES, "--soc", "Ascend310P3"]);
  assert.equal(code, 0, text);
  assert.match(
    text,
    /reference: Ascend A2\/A3 rules \(--soc: Ascend310P3 is not a SoC the library models .*assumed\)/,
  );
});

Deno.test({
  name:
    "doctor: names the generation, the deterministic flag's effect per op, and the 950's FMA rule",
  ignore,
}, async () => {
  const a2 = await run("doctor", A2, []);
  assert.match(a2.text, /\[ok\] +kernel generation: Ascend A2\/A3: Ascend910B3 /);
  assert.match(a2.text, /deterministic flag on this SoC, nearest-exact 1d\/2d: no kernel change/);
  assert.match(
    a2.text,
    /deterministic flag on this SoC, bilinear: no change in public code .* whether its results repeat run to run is unknown/,
  );
  assert.doesNotMatch(a2.text, /FMA probe/);
  for (
    const [fma, answer] of [["1", /input 2: this device contracts/], [
      "0",
      /input 3: this device rounds the product/,
    ]] as const
  ) {
    const a950 = await run("doctor", A950, [], { ACLEMU_FMA: fma });
    assert.match(a950.text, /\[ok\] +kernel generation: Ascend 950 \(arch35\): Ascend950PR_9599 /);
    assert.match(
      a950.text,
      /deterministic flag on this SoC, nearest-exact 1d\/2d: no kernel change/,
    );
    assert.match(
      a950.text,
      /deterministic flag on this SoC, bilinear: changes the kernel of calls that enlarge no dimension/,
    );
    assert.match(
      a950.text,
      new RegExp(`\\[ok\\] +FMA probe \\(nearest-exact 1d, 6 -> 1\\): ${answer.source}`),
    );
  }
  const unknown = await run("doctor", "Ascend310P3", []);
  assert.match(
    unknown.text,
    /\[warn\] kernel generation: Ascend A2\/A3 assumed: Ascend310P3 is not a SoC/,
  );
});
