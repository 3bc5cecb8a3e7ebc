/**
 * The kernels' module with its memory import declared `shared`: the same code (not a second build,
 * so not a byte of kernel code differs), importable with a shared `WebAssembly.Memory` that worker
 * threads instantiate too. Only the import section of the binary is rewritten.
 *
 * @module
 */

const IMPORT_SECTION = 2;
const KIND_MEMORY = 2;
/** Limits flags: bit 0 = has a maximum, bit 1 = shared. */
const SHARED_WITH_MAX = 3;

/**
 * `bytes` (a wasm binary importing one memory) with that import made shared, of `initialPages` to
 * `maxPages` pages (equal: a memory that cannot grow).
 *
 * @throws {Error} when the binary has no memory import (a build that does not fit this backend)
 * @example
 * ```ts ignore
 * const shared = new WebAssembly.Module(withSharedMemoryImport(bytes, 2, 65536));
 * ```
 */
export function withSharedMemoryImport(
  bytes: Uint8Array,
  initialPages: number,
  maxPages: number,
): Uint8Array<ArrayBuffer> {
  let at = 8; // magic and version
  while (at < bytes.length) {
    const id = bytes[at];
    const size = readLeb(bytes, at + 1);
    const start = size.next, end = start + size.value;
    if (id === IMPORT_SECTION) {
      const section = sharedImports(bytes.subarray(start, end), initialPages, maxPages);
      const header = [IMPORT_SECTION, ...leb(section.length)];
      const result = new Uint8Array(at + header.length + section.length + bytes.length - end);
      result.set(bytes.subarray(0, at));
      result.set(header, at);
      result.set(section, at + header.length);
      result.set(bytes.subarray(end), at + header.length + section.length);
      return result;
    }
    at = end;
  }
  throw new Error("the wasm kernels import no memory");
}

// The import section's entries, the memory's limits replaced.
function sharedImports(
  section: Uint8Array,
  initialPages: number,
  maxPages: number,
): Uint8Array<ArrayBuffer> {
  const count = readLeb(section, 0);
  let at = count.next;
  for (let i = 0; i < count.value; i++) {
    for (let name = 0; name < 2; name++) {
      const length = readLeb(section, at);
      at = length.next + length.value;
    }
    const kind = section[at++];
    if (kind === KIND_MEMORY) {
      const flags = section[at];
      const initial = readLeb(section, at + 1);
      let end = initial.next;
      if (flags & 1) end = readLeb(section, end).next;
      // Never below what the binary asks for (its data and stack must fit).
      const limits = [
        SHARED_WITH_MAX,
        ...leb(Math.max(initial.value, initialPages)),
        ...leb(maxPages),
      ];
      const result = new Uint8Array(at + limits.length + section.length - end);
      result.set(section.subarray(0, at));
      result.set(limits, at);
      result.set(section.subarray(end), at + limits.length);
      return result;
    }
    // Other kinds are never imported by the kernels (functions would need their own parsing).
    throw new Error(`the wasm kernels import an unexpected kind ${kind}`);
  }
  throw new Error("the wasm kernels import no memory");
}

function readLeb(bytes: Uint8Array, at: number): { value: number; next: number } {
  let value = 0, scale = 1, byte: number;
  do {
    byte = bytes[at++];
    value += (byte & 0x7f) * scale;
    scale *= 128;
  } while (byte & 0x80);
  return { value, next: at };
}

function leb(value: number): number[] {
  const out: number[] = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out.push(byte);
  } while (value > 0);
  return out;
}
