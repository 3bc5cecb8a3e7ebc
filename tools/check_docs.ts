/**
 * Dangling documentation references: every repository path named in a Markdown file, or in a
 * comment of a `.ts`, `.c`, `.h`, `.py` or `.sh` file (and of extension-less shell scripts such as
 * `.ci/run`), must exist, and every Markdown link `[text](target)` must reach a file (and, for a
 * `#heading` of a Markdown file, a heading of that file).
 *
 *     deno run --allow-read tools/check_docs.ts [root]     (part of `deno task check`)
 *
 * A repository path is a token whose first segment is one of the repository's top-level folders
 * and which ends in a file name with an extension or in `/` (`docs/README.md`,
 * `src/rules/pytorch.ts`, `native/test/`, `.ci/run`): paths of other repositories cited in prose
 * (CANN's `image/...`, PyTorch's `aten/...`) start elsewhere and are not checked, except the few
 * that start like ours, which {@link FOREIGN_PATHS} lists. A path is looked up from the repository
 * root and from each folder above the file that names it (so a file under `native/` may name
 * `native/src` by its `src` path); Markdown link targets from the linking file's folder. `*` and `{a,b}` match as
 * in a shell glob; a path under a git-ignored build folder (`native/build/`) is not checked, since
 * a fresh clone has not built it yet; a path with a `...` or `<placeholder>` segment is not checked
 * past it. Quoted strings inside fenced code (a JSDoc `@example`, a Markdown snippet) are an
 * example's data, not references, and are not checked. Exit status 1 lists each dangling reference
 * as `file:line: path`.
 *
 * @module
 */

/** One dangling reference. */
export interface DanglingReference {
  /** The file that holds the reference, relative to the root. */
  file: string;
  /** 1-based line of the reference. */
  line: number;
  /** The reference as written. */
  reference: string;
  /** Why it dangles. */
  reason: string;
}

/** Top-level folders whose paths are checked even before they exist. */
const EXPECTED_ROOTS = [
  "docs",
  "src",
  "tests",
  "native",
  "tools",
  "bench",
  "cli",
  "examples",
  ".ci",
];

/**
 * Paths of other repositories that start like one of ours, cited in prose (prefix match): CANN's
 * sources and docs in `hicann/ops-cv`, `hicann/opbase` and `hicann/runtime`.
 */
export const FOREIGN_PATHS: readonly string[] = [
  "docs/zh/", // hicann/ops-cv: the operator list
  "docs/en/", // hicann/opbase: API docs
  "src/acl/", // hicann/runtime: ACL's implementation
  "src/runtime/", // hicann/runtime: the runtime core
  "src/platform/", // hicann/runtime: the platform table (SoC .ini files)
  "src/nnopbase/composite_op/", // hicann/opbase: the op executor
];

/** Folders never walked (besides git-ignored build folders). */
const SKIP_DIRS = new Set([".git", "node_modules", ".deno", ".deno-npm", "__pycache__"]);

const CODE_EXTENSIONS = new Set([".ts", ".c", ".h", ".py", ".sh"]);

/** A comment or Markdown text with the line its first character is on. */
interface TextPiece {
  text: string;
  line: number;
}

function extensionOf(path: string): string {
  const base = path.slice(path.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(dot) : "";
}

function lineAt(source: string, index: number): number {
  let line = 1;
  for (let i = source.indexOf("\n"); i !== -1 && i < index; i = source.indexOf("\n", i + 1)) line++;
  return line;
}

/**
 * The comments of a C-like source (`//`, `/* *\/`), skipping string, character and template
 * literals and (for TypeScript) regular expression literals.
 */
export function cLikeComments(source: string, typescript: boolean): TextPiece[] {
  const pieces: TextPiece[] = [];
  let i = 0;
  let lastSignificant = "";
  const n = source.length;
  while (i < n) {
    const c = source[i];
    const next = source[i + 1];
    if (c === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      const stop = end === -1 ? n : end;
      pieces.push({ text: source.slice(i + 2, stop), line: lineAt(source, i) });
      i = stop;
      continue;
    }
    if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      const stop = end === -1 ? n : end;
      pieces.push({ text: source.slice(i + 2, stop), line: lineAt(source, i) });
      i = stop + 2;
      continue;
    }
    if (c === '"' || c === "'" || (c === "`" && typescript)) {
      i = skipString(source, i, c);
      lastSignificant = "a";
      continue;
    }
    if (c === "/" && typescript && /^$|[(,=:[!&|?{};+\-*%<>~^]$/.test(lastSignificant)) {
      i = skipRegExp(source, i);
      lastSignificant = "a";
      continue;
    }
    if (!/\s/.test(c)) lastSignificant = c;
    i++;
  }
  return pieces;
}

function skipString(source: string, start: number, quote: string): number {
  let i = start + 1;
  let depth = 0; // ${ } nesting inside a template literal
  while (i < source.length) {
    const c = source[i];
    if (c === "\\") {
      i += 2;
      continue;
    }
    if (quote === "`") {
      if (depth === 0 && c === "`") return i + 1;
      if (c === "$" && source[i + 1] === "{") {
        depth++;
        i += 2;
        continue;
      }
      if (depth > 0 && c === "}") depth--;
      else if (depth > 0 && (c === '"' || c === "'" || c === "`")) {
        i = skipString(source, i, c);
        continue;
      }
    } else if (c === quote || c === "\n") {
      return i + 1;
    }
    i++;
  }
  return i;
}

function skipRegExp(source: string, start: number): number {
  let i = start + 1;
  let inClass = false;
  while (i < source.length && source[i] !== "\n") {
    const c = source[i];
    if (c === "\\") i++;
    else if (c === "[") inClass = true;
    else if (c === "]") inClass = false;
    else if (c === "/" && !inClass) return i + 1;
    i++;
  }
  return i;
}

/**
 * The comments of a `#`-comment language (Python, shell): `#` at the start of a word, outside
 * quotes; for Python also triple-quoted strings (docstrings).
 */
export function hashComments(source: string, python: boolean): TextPiece[] {
  const pieces: TextPiece[] = [];
  let i = 0;
  const n = source.length;
  while (i < n) {
    const c = source[i];
    if (python && (source.startsWith('"""', i) || source.startsWith("'''", i))) {
      const quote = source.slice(i, i + 3);
      const end = source.indexOf(quote, i + 3);
      const stop = end === -1 ? n : end;
      pieces.push({ text: source.slice(i + 3, stop), line: lineAt(source, i) });
      i = stop + 3;
      continue;
    }
    if (c === "#" && (i === 0 || /\s/.test(source[i - 1]))) {
      const end = source.indexOf("\n", i);
      const stop = end === -1 ? n : end;
      pieces.push({ text: source.slice(i + 1, stop), line: lineAt(source, i) });
      i = stop;
      continue;
    }
    if (c === '"' || c === "'") {
      // Shell quotes may span lines; Python's single-quoted strings do not.
      let j = i + 1;
      while (j < n && source[j] !== c && (!python || source[j] !== "\n")) {
        if (source[j] === "\\" && c === '"') j++;
        j++;
      }
      i = j + 1;
      continue;
    }
    if (c === "\\") {
      i += 2;
      continue;
    }
    i++;
  }
  return pieces;
}

/** GitHub's anchor of a Markdown heading. */
export function headingSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, "")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/[^\p{L}\p{N}\s-]/gu, "")
    .replace(/\s/g, "-");
}

function markdownAnchors(source: string): Set<string> {
  const anchors = new Set<string>();
  const counts = new Map<string, number>();
  let fence = false;
  for (const line of source.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fence = !fence;
    if (fence) continue;
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = headingSlug(m[1]);
    const seen = counts.get(slug) ?? 0;
    counts.set(slug, seen + 1);
    anchors.add(seen === 0 ? slug : `${slug}-${seen}`);
  }
  return anchors;
}

/**
 * `text` with the quoted strings inside its ``` fences blanked (same length, newlines kept), so an
 * example's data (a made-up file name passed to a function) is not taken for a reference.
 */
export function blankFencedStrings(text: string): string {
  return text.replace(
    /(^|\n)([ \t*]*)(```|~~~)[^\n]*\n[\s\S]*?(\n[ \t*]*\3|$)/g,
    (block) => block.replace(/"[^"\n]*"|'[^'\n]*'|`[^`\n]*`/g, (q) => " ".repeat(q.length)),
  );
}

function escapeRegExp(text: string): string {
  return text.replace(/[.+?^$()|[\]\\]/g, "\\$&");
}

/** A shell-like glob (`*`, `{a,b}`) as a regular expression over root-relative paths. */
function globRegExp(glob: string): RegExp {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*") out += "[^/]*";
    else if (c === "{") {
      const end = glob.indexOf("}", i);
      if (end === -1) {
        out += escapeRegExp(c);
        continue;
      }
      out += "(?:" + glob.slice(i + 1, end).split(",").map(escapeRegExp).join("|") + ")";
      i = end;
    } else out += escapeRegExp(c);
  }
  return new RegExp(`^${out}$`);
}

/** Every file and folder under `root` (folders with a trailing `/`), relative to it. */
async function walk(root: string, ignored: (path: string) => boolean): Promise<string[]> {
  const entries: string[] = [];
  const visit = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(dir ? `${root}/${dir}` : root)) {
      const path = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory) {
        if (SKIP_DIRS.has(entry.name) || ignored(`${path}/`)) continue;
        entries.push(`${path}/`);
        await visit(path);
      } else if (!ignored(path)) {
        entries.push(path);
      }
    }
  };
  await visit("");
  return entries;
}

/** Folder patterns of `.gitignore` (`native/build/`, `bench/build/`), as root-relative prefixes. */
async function ignoredFolders(root: string): Promise<string[]> {
  let text = "";
  try {
    text = await Deno.readTextFile(`${root}/.gitignore`);
  } catch {
    return [];
  }
  return text.split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#") && line.endsWith("/") && !line.includes("*"))
    .map((line) => line.replace(/^\//, ""));
}

function isShellScript(source: string): boolean {
  return /^#!.*\b(ba)?sh\b/.test(source);
}

/**
 * Finds the dangling references under `root`.
 *
 * @example
 * ```ts ignore
 * import { checkDocs } from "./check_docs.ts";
 * for (const d of await checkDocs(".")) console.log(`${d.file}:${d.line}: ${d.reference}`);
 * ```
 */
export async function checkDocs(root: string): Promise<DanglingReference[]> {
  const ignoredPrefixes = await ignoredFolders(root);
  const isIgnored = (path: string): boolean =>
    ignoredPrefixes.some((prefix) =>
      prefix.includes("/") ? path.startsWith(prefix) : path.split("/").includes(prefix.slice(0, -1))
    );
  const entries = await walk(root, isIgnored);
  const existing = new Set(entries);
  const roots = new Set(EXPECTED_ROOTS);
  for (const entry of entries) {
    if (entry.endsWith("/") && entry.indexOf("/") === entry.length - 1) {
      roots.add(entry.slice(0, -1));
    }
  }
  const rootAlternatives = [...roots].map(escapeRegExp).join("|");
  const pathToken = new RegExp(
    `(?<![\\w./@:~-])(?:\\./)?(?:${rootAlternatives})/[\\w.\\-/*{},<>]*`,
    "g",
  );
  const exists = (path: string): boolean => {
    if (path.includes("*") || path.includes("{")) {
      const re = globRegExp(path);
      return entries.some((entry) => re.test(entry) || re.test(entry.replace(/\/$/, "")));
    }
    return existing.has(path) || existing.has(`${path}/`);
  };
  const anchorsCache = new Map<string, Set<string>>();
  const anchorsOf = async (path: string): Promise<Set<string>> => {
    let anchors = anchorsCache.get(path);
    if (!anchors) {
      anchors = markdownAnchors(await Deno.readTextFile(`${root}/${path}`));
      anchorsCache.set(path, anchors);
    }
    return anchors;
  };

  const found: DanglingReference[] = [];
  const reported = new Set<string>();
  const report = (d: DanglingReference, resolved: string): void => {
    const key = `${d.file}:${d.line}:${resolved}`;
    if (reported.has(key)) return;
    reported.add(key);
    found.push(d);
  };
  const checkPath = (file: string, line: number, raw: string): void => {
    let path = raw.replace(/^\.\//, "");
    // Prose punctuation after a path, and unbalanced closing braces.
    path = path.replace(/[.,:]+$/, "");
    if (!path.includes("{")) path = path.replace(/[},]+$/, "");
    const written = path;
    // Elided or placeholder segments: check the part before them.
    const cut = path.split("/").findIndex((seg) => seg === "..." || /[<>]/.test(seg));
    if (cut !== -1) path = path.split("/").slice(0, cut).join("/") + "/";
    if (FOREIGN_PATHS.some((prefix) => path.startsWith(prefix))) return;
    const base = path.replace(/\/$/, "");
    const last = base.slice(base.lastIndexOf("/") + 1);
    // `src/des` in `(src-1)/(des-1)` is arithmetic, not a path.
    if (!path.endsWith("/") && !last.includes(".") && base.split("/").length < 3) return;
    const folders = file.split("/").slice(0, -1);
    const candidates = [base];
    for (let k = 1; k <= folders.length; k++) {
      candidates.push(`${folders.slice(0, k).join("/")}/${base}`);
    }
    if (candidates.some((c) => isIgnored(c) || isIgnored(`${c}/`))) return;
    if (!candidates.some(exists)) {
      report({ file, line, reference: written, reason: "no such file or folder" }, base);
    }
  };

  for (const file of entries) {
    if (file.endsWith("/")) continue;
    const ext = extensionOf(file);
    const isMarkdown = ext === ".md";
    let source: string;
    let pieces: TextPiece[];
    if (isMarkdown) {
      source = await Deno.readTextFile(`${root}/${file}`);
      pieces = [{ text: source, line: 1 }];
    } else if (CODE_EXTENSIONS.has(ext) || ext === "") {
      if (ext === "") {
        const head = new Uint8Array(64);
        const f = await Deno.open(`${root}/${file}`);
        const count = (await f.read(head)) ?? 0;
        f.close();
        if (!isShellScript(new TextDecoder().decode(head.subarray(0, count)))) continue;
      }
      source = await Deno.readTextFile(`${root}/${file}`);
      if (ext === ".ts") pieces = cLikeComments(source, true);
      else if (ext === ".c" || ext === ".h") pieces = cLikeComments(source, false);
      else pieces = hashComments(source, ext === ".py");
    } else {
      continue;
    }
    for (const piece of pieces) {
      for (const m of blankFencedStrings(piece.text).matchAll(pathToken)) {
        checkPath(file, piece.line + lineAt(piece.text, m.index) - 1, m[0]);
      }
    }
    if (!isMarkdown) continue;
    await checkMarkdownLinks(file, source, report, exists, anchorsOf, isIgnored);
  }
  return found;
}

async function checkMarkdownLinks(
  file: string,
  source: string,
  report: (d: DanglingReference, resolved: string) => void,
  exists: (path: string) => boolean,
  anchorsOf: (path: string) => Promise<Set<string>>,
  isIgnored: (path: string) => boolean,
): Promise<void> {
  const dir = file.includes("/") ? file.slice(0, file.lastIndexOf("/")) : "";
  const link = /\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)|^\s*\[[^\]\n]+\]:\s*(\S+)/gm;
  for (const m of source.matchAll(link)) {
    const target = m[1] ?? m[2];
    const line = lineAt(source, m.index);
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, jsr: ...
    const hash = target.indexOf("#");
    const pathPart = hash === -1 ? target : target.slice(0, hash);
    const anchor = hash === -1 ? "" : decodeURIComponent(target.slice(hash + 1));
    let resolved = file;
    if (pathPart) {
      const segments = pathPart.startsWith("/") ? [] : dir ? dir.split("/") : [];
      for (const seg of decodeURIComponent(pathPart).split("/")) {
        if (seg === "" || seg === ".") continue;
        if (seg === "..") {
          if (segments.length === 0) {
            report({ file, line, reference: target, reason: "leaves the repository" }, target);
            resolved = "";
            break;
          }
          segments.pop();
        } else segments.push(seg);
      }
      if (resolved === "") continue;
      resolved = segments.join("/");
      if (isIgnored(resolved) || isIgnored(`${resolved}/`)) continue;
      if (!exists(resolved)) {
        report({ file, line, reference: target, reason: "link to a missing file" }, resolved);
        continue;
      }
    }
    if (anchor && resolved.endsWith(".md") && !(await anchorsOf(resolved)).has(anchor)) {
      report(
        { file, line, reference: target, reason: `no heading #${anchor} in ${resolved}` },
        target,
      );
    }
  }
}

if (import.meta.main) {
  const root = Deno.args[0] ?? new URL("..", import.meta.url).pathname.replace(/\/$/, "");
  const dangling = await checkDocs(root);
  for (const d of dangling) console.error(`${d.file}:${d.line}: ${d.reference} (${d.reason})`);
  if (dangling.length > 0) {
    console.error(`check_docs: ${dangling.length} dangling reference(s)`);
    Deno.exit(1);
  }
  console.log("check_docs: no dangling references");
}
