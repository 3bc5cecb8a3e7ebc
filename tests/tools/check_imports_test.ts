// tools/check_imports.ts: the rooms' import rules hold on this tree, and each rule finds a breach
// planted in a temporary tree.
import assert from "node:assert/strict";
import { join } from "node:path";
import { checkImports, forbiddenImports } from "../../tools/check_imports.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

Deno.test("check_imports: this tree keeps every room's rules", async () => {
  assert.deepEqual(await checkImports(ROOT), []);
});

Deno.test("check_imports: each rule finds its breach", () => {
  const cases: [string, string, string][] = [
    ["src/rules/x.ts", 'import { Device } from "../device.ts";', "src/rules/ imports only"],
    ["src/cpu/x.ts", 'import type { NpuBuffer } from "../ffi/descriptors.ts";', "src/cpu/ never"],
    ["src/ffi/x.ts", 'export { CpuBackend } from "../cpu/backend.ts";', "src/ffi/ never"],
    ["src/ops/x.ts", 'const m = await import("../ffi/loader.ts");', "outside the backends"],
    ["cli/verify/x.ts", 'import { WasmKernels } from "../../src/cpu/wasm/instance.ts";', "cli/"],
    [
      "src/cpu/pytorch/forward/x.ts",
      'import { y } from "../../ascend/forward/tbe.ts";',
      "src/cpu/pytorch/",
    ],
    [
      "src/cpu/pytorch/backward/x.ts",
      'import { y } from "../../wasm/heap.ts";',
      "src/cpu/pytorch/",
    ],
    [
      "src/cpu/ascend/backward/x.ts",
      'import { y } from "../../threads/pool.ts";',
      "src/cpu/ascend/",
    ],
  ];
  for (const [file, source, rule] of cases) {
    const found = forbiddenImports(file, source);
    assert.equal(found.length, 1, `${file}: ${source}`);
    assert.ok(found[0].rule.startsWith(rule), found[0].rule);
    assert.equal(found[0].line, 1);
  }
  // Allowed: the composition root, the contract, dtype from the rules, doc examples.
  assert.deepEqual(
    forbiddenImports("src/device.ts", 'import { CpuBackend } from "./cpu/backend.ts";'),
    [],
  );
  assert.deepEqual(
    forbiddenImports("src/rules/x.ts", 'import type { DType } from "../tensor/dtype.ts";'),
    [],
  );
  assert.deepEqual(
    forbiddenImports("src/ops/x.ts", ' * import { x } from "../ffi/loader.ts";'),
    [],
  );
  // The device reference may run PyTorch's kernels and the shared strided rows.
  const reference = 'import { y } from "../../pytorch/backward/bilinear.ts";\n' +
    'import { RowReader } from "../../strided.ts";';
  assert.deepEqual(forbiddenImports("src/cpu/ascend/backward/x.ts", reference), []);
});

Deno.test("check_imports: a planted breach in a tree fails it", async () => {
  const root = await Deno.makeTempDir();
  try {
    await Deno.mkdir(join(root, "src", "ffi"), { recursive: true });
    await Deno.writeTextFile(
      join(root, "src", "ffi", "bad.ts"),
      'import { x } from "../cpu/tables.ts";\nexport const y = x;\n',
    );
    const found = await checkImports(root);
    assert.equal(found.length, 1);
    assert.equal(found[0].file, "src/ffi/bad.ts");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
