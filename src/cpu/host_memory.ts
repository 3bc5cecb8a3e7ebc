/**
 * Host memory, where the CPU backend's tensors live, read with the permissions a user already
 * grants: `/proc/meminfo` under `--allow-read` (Linux), else `Deno.systemMemoryInfo()` under
 * `--allow-sys`; without either, an error naming both. Permissions are queried, never prompted.
 *
 * @module
 */

import type { MemoryInfo } from "../backend.ts";

const MEMINFO = "/proc/meminfo";

function granted(descriptor: Deno.PermissionDescriptor): boolean {
  return Deno.permissions.querySync(descriptor).state === "granted";
}

// "MemTotal:  16318000 kB" -> bytes, or undefined when the line is absent.
function field(text: string, name: string): number | undefined {
  const match = text.match(new RegExp(`^${name}:\\s+(\\d+) kB$`, "m"));
  return match ? Number(match[1]) * 1024 : undefined;
}

function fromProc(): MemoryInfo | undefined {
  let text: string;
  try {
    text = Deno.readTextFileSync(MEMINFO);
  } catch {
    return undefined; // not Linux, or not readable after all
  }
  const total = field(text, "MemTotal");
  const available = field(text, "MemAvailable") ?? field(text, "MemFree");
  return total === undefined || available === undefined ? undefined : { free: available, total };
}

/**
 * Available and total host memory in bytes.
 *
 * @throws {Deno.errors.NotCapable} with neither `--allow-read` (for `/proc/meminfo`) nor
 *   `--allow-sys` (for `systemMemoryInfo`), naming both flags
 * @example
 * ```ts ignore
 * import { hostMemoryInfo } from "./host_memory.ts";
 * const { free, total } = hostMemoryInfo();
 * ```
 */
export function hostMemoryInfo(): MemoryInfo {
  if (Deno.build.os === "linux" && granted({ name: "read", path: MEMINFO })) {
    const info = fromProc();
    if (info) return info;
  }
  if (granted({ name: "sys", kind: "systemMemoryInfo" })) {
    const { available, total } = Deno.systemMemoryInfo();
    return { free: available, total };
  }
  const read = Deno.build.os === "linux" ? `--allow-read (for ${MEMINFO}) or ` : "";
  throw new Deno.errors.NotCapable(
    `memoryInfo(): the CPU backend's tensors live in host memory, which needs ${read}` +
      "--allow-sys=systemMemoryInfo to read\nfix: run with " +
      (read ? `--allow-read=${MEMINFO} (or --allow-read) or ` : "") +
      "--allow-sys=systemMemoryInfo",
  );
}
