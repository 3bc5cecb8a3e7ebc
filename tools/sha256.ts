/**
 * SHA-256 of bytes as lowercase hex (Web Crypto), shared by the wasm build and its staleness test.
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
