/**
 * Builds the CPU backend's WebAssembly kernels: `deno task build:wasm` compiles the C sources of
 * `src/cpu/wasm/` with the pinned toolchain, clang 19 and wasm-ld 19 (Debian bookworm / Ubuntu:
 * `apt-get install -y clang-19 lld-19`; `CLANG` and `WASM_LD` name other binaries of the same
 * version), and writes `src/cpu/wasm/kernels_wasm.ts`: two modules as base64 with the SHA-256 of the
 * sources they came from. The exact module runs every multiply-add PyTorch fuses through an exact
 * emulation and needs only SIMD128; the fused one (`-mrelaxed-simd -DKERNELS_FUSED`) uses
 * `f32x4.relaxed_madd` and is picked at run time only where that instruction validates and is fused
 * (`src/cpu/wasm/instance.ts`). The generated file is committed, so neither CI nor users need clang;
 * `tests/cpu/cpu_wasm_test.ts` fails when a source changed without a rebuild.
 *
 * @module
 */

import { fileURLToPath as fromFileUrl } from "node:url";
import { buildWorker } from "./build_worker.ts";
import { sourcesHash } from "./sha256.ts";

const DIR = new URL("../src/cpu/wasm/", import.meta.url);
const TARGET = fromFileUrl(new URL("../src/cpu/wasm/kernels_wasm.ts", import.meta.url));

/** The clang major version the committed modules are built with. */
export const CLANG_MAJOR = 19;

/** How to get the pinned toolchain, said when it is missing. */
const INSTALL_HINT = `clang ${CLANG_MAJOR} and wasm-ld ${CLANG_MAJOR} are needed: ` +
  `apt-get install -y clang-${CLANG_MAJOR} lld-${CLANG_MAJOR} (Debian bookworm, Ubuntu 24.04), ` +
  `or set CLANG and WASM_LD to version-${CLANG_MAJOR} binaries`;

/** Flags: SIMD, bulk memory, an exported stack pointer; no float contraction, so every add/multiply rounds as written. */
export const CLANG_ARGS = [
  "--target=wasm32",
  "-O3",
  "-msimd128",
  "-mbulk-memory",
  "-mmutable-globals",
  "-ffp-contract=off",
  "-nostdlib",
  "-Wall",
  "-Wextra",
  "-Werror",
  "-Wl,--no-entry",
  "-Wl,--import-memory",
  "-Wl,--export=__heap_base",
  // Worker threads give their instance its own stack (src/cpu/threads/worker.ts).
  "-Wl,--export=__stack_pointer",
  "-Wl,-z,stack-size=65536",
  "-Wl,--strip-all",
];

/** The fused module's extra flags: relaxed SIMD for `f32x4.relaxed_madd` (forward_bilinear.c). */
export const FUSED_ARGS = ["-mrelaxed-simd", "-DKERNELS_FUSED=1"];

async function run(cmd: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  try {
    const { success, stdout, stderr } = await new Deno.Command(cmd, {
      args,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const d = new TextDecoder();
    return { ok: success, out: d.decode(stdout) + d.decode(stderr) };
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return { ok: false, out: `${cmd}: not found` };
    throw e;
  }
}

/** The pinned compiler and linker, checked: their paths, or an error saying how to install them. */
export async function toolchain(): Promise<{ clang: string; wasmLd: string }> {
  const clang = Deno.env.get("CLANG") ?? `clang-${CLANG_MAJOR}`;
  const wasmLd = Deno.env.get("WASM_LD") ?? `wasm-ld-${CLANG_MAJOR}`;
  const version = await run(clang, ["--version"]);
  if (!version.ok) throw new Error(`${version.out.trim()}; ${INSTALL_HINT}`);
  const major = /clang version (\d+)\./.exec(version.out)?.[1];
  if (major !== String(CLANG_MAJOR)) {
    throw new Error(`${clang} is clang ${major ?? "of unknown version"}; ${INSTALL_HINT}`);
  }
  const ld = await run(wasmLd, ["--version"]);
  if (!ld.ok || !new RegExp(`LLD ${CLANG_MAJOR}\\.`).test(ld.out)) {
    throw new Error(`${wasmLd}: ${ld.out.trim() || "not version " + CLANG_MAJOR}; ${INSTALL_HINT}`);
  }
  return { clang, wasmLd: await onPath(wasmLd) };
}

/** `name` as an absolute path (clang's -fuse-ld takes one), searched on PATH. */
async function onPath(name: string): Promise<string> {
  if (name.includes("/")) return name;
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    const path = `${dir}/${name}`;
    if (await Deno.stat(path).then((s) => s.isFile, () => false)) return path;
  }
  return name;
}

/** Compiles kernels.c (one translation unit: it includes the other sources) with `extra` flags. */
export async function compileKernels(extra: string[]): Promise<Uint8Array<ArrayBuffer>> {
  const { clang, wasmLd } = await toolchain();
  const output = await Deno.makeTempFile({ suffix: ".wasm" });
  try {
    const { ok, out } = await run(clang, [
      ...CLANG_ARGS,
      ...extra,
      `-fuse-ld=${wasmLd}`,
      "-o",
      output,
      fromFileUrl(new URL("kernels.c", DIR)),
    ]);
    if (!ok) throw new Error(`${clang} failed:\n${out}`);
    return await Deno.readFile(output);
  } finally {
    await Deno.remove(output).catch(() => {});
  }
}

function base64Lines(bytes: Uint8Array): string {
  const base64 = btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(""));
  return (base64.match(/.{1,88}/g) ?? []).map((l) => `  "${l}"`).join(" +\n");
}

if (import.meta.main) {
  let exact: Uint8Array, fused: Uint8Array;
  try {
    exact = await compileKernels([]);
    fused = await compileKernels(FUSED_ARGS);
  } catch (e) {
    console.error((e as Error).message);
    Deno.exit(1);
  }
  await Deno.writeTextFile(
    TARGET,
    `// Generated by tools/build_wasm.ts from the C sources next to it (clang ${CLANG_MAJOR}); do not edit.\n\n` +
      `/** SHA-256 of the C sources these modules were built from (see tools/sha256.ts). */\n` +
      `export const KERNELS_SOURCE_SHA256 =\n  "${await sourcesHash(DIR)}";\n\n` +
      `/** The exact module (${exact.length} bytes, SIMD128 only), base64. */\n` +
      `export const KERNELS_WASM_BASE64 =\n${base64Lines(exact)};\n\n` +
      `/** The fused module (${fused.length} bytes, relaxed SIMD: f32x4.relaxed_madd), base64. */\n` +
      `export const KERNELS_FUSED_WASM_BASE64 =\n${base64Lines(fused)};\n`,
  );
  console.log(`wrote ${TARGET} (${exact.length} + ${fused.length} bytes of wasm)`);
  console.log(`wrote src/cpu/threads/worker_embedded.ts (${await buildWorker()} characters of JS)`);
}
