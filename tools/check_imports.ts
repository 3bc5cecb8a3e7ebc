/**
 * The import rules of the library's rooms, checked on every `deno task check`:
 *
 * - `src/rules/` (the op vocabulary and the index rules) imports only `src/rules/` and
 *   `src/tensor/dtype.ts`: the rules never depend on a backend, a device or the public API;
 * - `src/cpu/` (the CPU backend) and `src/ffi/` (the CANN binding) never import each other;
 * - `src/cpu/pytorch/` (PyTorch's CPU kernels) and `src/cpu/ascend/` (the Ascend device reference)
 *   are kernels only: they import the rules, `src/tensor/dtype.ts`, the CPU's shared
 *   `types.ts` and `strided.ts`, and their own room; PyTorch's kernels never import the device
 *   reference (the reference may run PyTorch's kernels where the device sums in PyTorch's order);
 * - every other module of `src/` reaches a backend only through `src/backend.ts` (the contract),
 *   except the composition root that constructs them (`src/device.ts`, `src/backend_choice.ts`);
 * - `cli/` (doctor and verify) never imports `src/cpu/`: it uses the CPU backend through `Device`.
 *
 *     deno run --allow-read tools/check_imports.ts [root]
 *
 * Exit status 1 lists each forbidden import as `file:line: specifier (rule)`.
 *
 * @module
 */

import { dirname, join, normalize } from "node:path";

/** One import that breaks a rule. */
export interface ForbiddenImport {
  /** The importing file, relative to the root. */
  readonly file: string;
  /** 1-based line of the import. */
  readonly line: number;
  /** The specifier as written. */
  readonly specifier: string;
  /** The rule it breaks. */
  readonly rule: string;
}

const COMPOSITION_ROOT = new Set(["src/device.ts", "src/backend_choice.ts"]);
// What the kernel rooms share with the rest of the CPU backend.
const KERNEL_SHARED = new Set(["src/tensor/dtype.ts", "src/cpu/types.ts", "src/cpu/strided.ts"]);

/** The rule `target` breaks when `file` imports it, or `undefined` when the import is allowed. */
function brokenRule(file: string, target: string): string | undefined {
  const inRoom = (path: string, room: string): boolean => path.startsWith(room);
  if (inRoom(file, "src/rules/")) {
    if (!inRoom(target, "src/rules/") && target !== "src/tensor/dtype.ts") {
      return "src/rules/ imports only src/rules/ and src/tensor/dtype.ts";
    }
    return undefined;
  }
  const kernelRoom = ["src/cpu/pytorch/", "src/cpu/ascend/"].find((room) => inRoom(file, room));
  if (kernelRoom !== undefined) {
    const shared = KERNEL_SHARED.has(target) || inRoom(target, "src/rules/") ||
      inRoom(target, kernelRoom) ||
      (kernelRoom === "src/cpu/ascend/" && inRoom(target, "src/cpu/pytorch/"));
    if (!shared) {
      return `${kernelRoom} imports only src/rules/, src/tensor/dtype.ts, src/cpu/types.ts, ` +
        `src/cpu/strided.ts and its own room (src/cpu/ascend/ also src/cpu/pytorch/)`;
    }
    return undefined;
  }
  if (inRoom(file, "src/cpu/") && inRoom(target, "src/ffi/")) {
    return "src/cpu/ never imports src/ffi/";
  }
  if (inRoom(file, "src/ffi/") && inRoom(target, "src/cpu/")) {
    return "src/ffi/ never imports src/cpu/";
  }
  if (
    inRoom(file, "src/") && !inRoom(file, "src/cpu/") && !inRoom(file, "src/ffi/") &&
    !COMPOSITION_ROOT.has(file) && (inRoom(target, "src/cpu/") || inRoom(target, "src/ffi/"))
  ) {
    return "outside the backends, src/ reaches them through src/backend.ts (only src/device.ts " +
      "and src/backend_choice.ts construct them)";
  }
  if (inRoom(file, "cli/") && inRoom(target, "src/cpu/")) return "cli/ never imports src/cpu/";
  return undefined;
}

const IMPORT =
  /(?:^|[\s;])(?:import|export)\b[^"'`]*?\bfrom\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']\s*\)|^\s*import\s+["']([^"']+)["']/g;

/**
 * The forbidden imports of one file's source text (`file` relative to the root).
 *
 * @example
 * ```ts
 * import { forbiddenImports } from "./check_imports.ts";
 * forbiddenImports("src/cpu/x.ts", 'import { y } from "../ffi/y.ts";')[0].rule;
 * // "src/cpu/ never imports src/ffi/"
 * ```
 */
export function forbiddenImports(file: string, source: string): ForbiddenImport[] {
  const found: ForbiddenImport[] = [];
  const lines = source.split("\n");
  for (let i = 0; i < lines.length; i++) {
    // Comments and doc examples do not count (a doc example imports what a user would).
    const text = lines[i].trimStart();
    if (text.startsWith("*") || text.startsWith("//")) continue;
    for (const match of lines[i].matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2] ?? match[3];
      if (!specifier.startsWith(".")) continue;
      const target = normalize(join(dirname(file), specifier));
      const rule = brokenRule(file, target);
      if (rule !== undefined) found.push({ file, line: i + 1, specifier, rule });
    }
  }
  return found;
}

async function* typescriptFiles(root: string, folder: string): AsyncGenerator<string> {
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(join(root, folder)));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return;
    throw error;
  }
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(folder, entry.name);
    if (entry.isDirectory) yield* typescriptFiles(root, path);
    else if (entry.isFile && entry.name.endsWith(".ts")) yield path;
  }
}

/**
 * Every forbidden import under `root`'s `src/` and `cli/`.
 *
 * @example
 * ```ts
 * import { checkImports } from "./check_imports.ts";
 * const found = await checkImports(".");
 * console.log(found.length === 0 ? "clean" : found);
 * ```
 */
export async function checkImports(root: string): Promise<ForbiddenImport[]> {
  const found: ForbiddenImport[] = [];
  for (const folder of ["src", "cli"]) {
    for await (const file of typescriptFiles(root, folder)) {
      const source = await Deno.readTextFile(join(root, file));
      found.push(...forbiddenImports(file, source));
    }
  }
  return found;
}

if (import.meta.main) {
  const root = Deno.args[0] ?? new URL("..", import.meta.url).pathname;
  const found = await checkImports(root);
  for (const f of found) console.error(`${f.file}:${f.line}: ${f.specifier} (${f.rule})`);
  if (found.length > 0) {
    console.error(`${found.length} forbidden import(s)`);
    Deno.exit(1);
  }
  console.log("imports: every room keeps its rules");
}
