// The parity suite can never pass having checked nothing: with ACLNN_PARITY_MAX_ELEMENTS=0 every
// non-empty fixture is ignored, and the suite must then fail, saying so (it once passed silently).
import assert from "node:assert/strict";

const PARITY = new URL("./parity_test.ts", import.meta.url).pathname;

Deno.test("parity: a run that checks no fixture fails instead of passing", async () => {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "test",
      "--no-check",
      "--allow-ffi",
      "--allow-env",
      "--allow-read",
      "--allow-run",
      PARITY,
    ],
    env: { ACLNN_PARITY_MAX_ELEMENTS: "0", ACLNN_TEST_LANES: "cpu", NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
  assert.notEqual(code, 0, text);
  assert.match(text, /no fixture checked on cpu: ACLNN_PARITY_MAX_ELEMENTS=0/);
});
