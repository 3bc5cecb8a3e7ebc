/**
 * Hashes of the wasm kernels' C sources, shared by the build (`build_wasm.ts`) and the test that
 * catches a stale build.
 *
 * @module
 */

import { fileURLToPath } from "node:url";

/**
 * SHA-256 of bytes as lowercase hex (Web Crypto).
 *
 * @example
 * ```ts
 * import { sha256Hex } from "./sha256.ts";
 * await sha256Hex(new TextEncoder().encode("abc")); // "ba7816bf..."
 * ```
 */
export async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** One C source or header of the kernels. */
export interface KernelSource {
  /** File name, e.g. `nearest.c`. */
  name: string;
  /** Absolute path. */
  path: string;
}

/**
 * The `.c` and `.h` files of a folder, sorted by name.
 *
 * @example
 * ```ts ignore
 * const files = await kernelSources(new URL("../src/cpu/wasm/", import.meta.url));
 * ```
 */
export async function kernelSources(dir: URL): Promise<KernelSource[]> {
  const files: KernelSource[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && /\.[ch]$/.test(entry.name)) {
      files.push({ name: entry.name, path: fileURLToPath(new URL(entry.name, dir)) });
    }
  }
  return files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * SHA-256 over every source of the folder: each file's name, a NUL, its bytes, a NUL.
 *
 * @example
 * ```ts ignore
 * const hash = await sourcesHash(new URL("../src/cpu/wasm/", import.meta.url));
 * ```
 */
export async function sourcesHash(dir: URL): Promise<string> {
  return await filesHash(dir, (await kernelSources(dir)).map((file) => file.name));
}

/**
 * SHA-256 over the named files of a folder, in the order given: each file's name, a NUL, its bytes,
 * a NUL.
 *
 * @example
 * ```ts ignore
 * const hash = await filesHash(new URL("../src/cpu/threads/", import.meta.url), ["worker.ts"]);
 * ```
 */
export async function filesHash(dir: URL, names: readonly string[]): Promise<string> {
  const parts: Uint8Array[] = [];
  const encoder = new TextEncoder();
  for (const name of names) {
    parts.push(encoder.encode(`${name}\0`), await Deno.readFile(new URL(name, dir)));
    parts.push(new Uint8Array(1));
  }
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    all.set(part, at);
    at += part.length;
  }
  return await sha256Hex(all);
}
