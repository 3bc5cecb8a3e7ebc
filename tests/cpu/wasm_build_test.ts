// The committed kernel modules are what the pinned toolchain builds from the C sources: with clang 19
// and wasm-ld 19 present (CI installs them: .ci/run), both modules are rebuilt and compared byte for
// byte with src/cpu/wasm/kernels_wasm.ts; without them the test says so and is skipped (the source
// hash check of tests/cpu/cpu_wasm_test.ts still runs).

import assert from "node:assert/strict";
import { kernelModuleBytes } from "../../src/cpu/wasm/fma_path.ts";
import { compileKernels, FUSED_ARGS, toolchain } from "../../tools/build_wasm.ts";

const missing = await toolchain().then(() => null, (e: Error) => e.message);

Deno.test({
  name: "wasm build: the committed modules are the pinned toolchain's build of the C sources",
  ignore: missing !== null,
  fn: async (): Promise<void> => {
    for (const [path, extra] of [["exact", []], ["fused", FUSED_ARGS]] as const) {
      const built = await compileKernels([...extra]);
      const committed = kernelModuleBytes(path);
      assert.equal(
        built.length,
        committed.length,
        `${path}: size differs: run deno task build:wasm`,
      );
      assert.ok(
        built.every((b, i) => b === committed[i]),
        `${path}: bytes differ from the committed module: run deno task build:wasm`,
      );
    }
  },
});

if (missing !== null) console.log(`wasm build check skipped: ${missing}`);
