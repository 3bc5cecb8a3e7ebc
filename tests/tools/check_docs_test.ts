// tools/check_docs.ts: dangling path references in Markdown and in code comments, and Markdown links,
// on small repositories written to a temp dir, and the CLI's exit status (`deno task check` runs it on
// this repository). The small repositories keep their documents in guide/ and their tests in specs/
// (top-level folders the checker learns from the tree), so that no path of theirs reads as one of
// this repository's.

import assert from "node:assert/strict";
import { blankFencedStrings, checkDocs, headingSlug } from "../../tools/check_docs.ts";

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");

/** Writes `files` (path -> text) under a fresh temp dir and returns it. */
async function repo(files: Record<string, string>): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "check_docs_" });
  for (const [path, text] of Object.entries(files)) {
    const dir = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
    if (dir) await Deno.mkdir(`${root}/${dir}`, { recursive: true });
    await Deno.writeTextFile(`${root}/${path}`, text);
  }
  return root;
}

/** `file:line: reference` of every finding, sorted. */
async function findings(root: string): Promise<string[]> {
  return (await checkDocs(root)).map((d) => `${d.file}:${d.line}: ${d.reference}`).sort();
}

const CLEAN: Record<string, string> = {
  "README.md": "# Pkg\n\nSee [the rules](guide/rules.md#index-rule) and `src/a/b.ts`.\n",
  "guide/rules.md":
    "# Rules\n\n## Index rule\n\nBack to [README](../README.md); code in `src/a/`.\n",
  "src/a/b.ts":
    "/** Stated in guide/rules.md. */\nexport const b = 1; // specs/x_test.ts checks it\n",
  "specs/x_test.ts": "// src/a/b.ts\n",
  "native/README.md": "# native\n\nSources: `src/lib.c`, `src/{lib,util}.c`; output in `build/`.\n",
  "native/src/lib.c": "/* see native/README.md, src/util.c */\nint x;\n",
  "native/src/util.c": "int y;\n",
  ".gitignore": "native/build/\n",
  ".ci/run":
    "#!/usr/bin/env bash\n# runs specs/x_test.ts and native/build/libx.so (built first)\necho $#\n",
};

Deno.test("check_docs: a repository whose references all exist passes", async () => {
  const root = await repo(CLEAN);
  try {
    assert.deepEqual(await findings(root), []);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("check_docs: each kind of dangling reference is found, with its file and line", async () => {
  const root = await repo({
    ...CLEAN,
    "README.md":
      "# Pkg\n\nSee guide/semantics.md.\n\n[gone](guide/gone.md) [bad anchor](guide/rules.md#nope)\n",
    "src/a/b.ts":
      "/**\n * Rules in guide/semantics.md.\n */\nexport const b = 1; // specs/old_test.ts\n",
    "tools/gen.py": '"""Models of guide/semantics.md."""\n# writes specs/fixtures/\nx = 1\n',
    "tools/run.sh": "#!/bin/sh\n# builds bench/missing.c\n",
    "native/src/lib.c": "/* see src/nope.c */\nint x;\n",
  });
  try {
    assert.deepEqual(await findings(root), [
      "README.md:3: guide/semantics.md",
      "README.md:5: guide/gone.md",
      "README.md:5: guide/rules.md#nope",
      "native/src/lib.c:1: src/nope.c",
      "src/a/b.ts:2: guide/semantics.md",
      "src/a/b.ts:4: specs/old_test.ts",
      "tools/gen.py:1: guide/semantics.md",
      "tools/gen.py:2: specs/fixtures/",
      "tools/run.sh:2: bench/missing.c",
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("check_docs: code, example data, other repositories' paths and arithmetic are not references", async () => {
  const root = await repo({
    ...CLEAN,
    "src/a/b.ts": [
      "/**",
      " * CANN's image/upsample_nearest_exact2d_grad/op_kernel/x.h and PyTorch's",
      " * aten/src/ATen/native/UpSample.h; ops-cv's docs/zh/op_api_list.md; (src-1)/(des-1);",
      " * https://github.com/o/r/blob/main/src/missing.ts",
      " *",
      " * @example",
      " * ```ts",
      ' * check("src/made_up.ts");',
      " * ```",
      " */",
      'export const s = "guide/not_a_comment.md"; const r = /\\/\\/ src\\/x.ts/;',
      "export const t = `// src/in_template.ts`;",
    ].join("\n"),
    "guide/rules.md": "# Rules\n\n## Index rule\n\n`native/build/libx.so`, `specs/.../case.ts`.\n",
  });
  try {
    assert.deepEqual(await findings(root), []);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("check_docs: the command exits 1 and lists the dangling references", async () => {
  const root = await repo({ ...CLEAN, "src/a/b.ts": "// guide/semantics.md\nexport {};\n" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", `${ROOT}/tools/check_docs.ts`, root],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 1, stderr);
    assert.match(stderr, /src\/a\/b\.ts:1: guide\/semantics\.md/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("check_docs: helpers", () => {
  assert.equal(headingSlug("Atlas A2/A3"), "atlas-a2a3");
  assert.equal(headingSlug("The `verify` tool: 2 ways"), "the-verify-tool-2-ways");
  const text = ' * ```ts\n * f("src/x.ts");\n * ```\n * src/y.ts "src/z.ts"\n';
  const blanked = blankFencedStrings(text);
  assert.equal(blanked.length, text.length);
  assert.ok(
    !blanked.includes("src/x.ts") && blanked.includes("src/y.ts") && blanked.includes("src/z.ts"),
  );
});
