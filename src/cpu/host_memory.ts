/**
 * Host memory, where the CPU backend's tensors live: `Deno.systemMemoryInfo()`, which needs
 * `--allow-sys` (the README's `--allow-ffi --allow-env --allow-read` do not grant it, and Deno
 * refuses `/proc/meminfo` to anything short of `--allow-all`). Without it, an error naming the flag.
 * The permission is queried, never prompted for.
 *
 * @module
 */

import type { MemoryInfo } from "../backend.ts";

/**
 * Available (allocatable without swapping) and total host memory in bytes.
 *
 * @throws {Deno.errors.NotCapable} without `--allow-sys` (or `--allow-sys=systemMemoryInfo`),
 *   naming the flag
 * @example
 * ```ts ignore
 * import { hostMemoryInfo } from "./host_memory.ts";
 * const { free, total } = hostMemoryInfo();
 * ```
 */
export function hostMemoryInfo(): MemoryInfo {
  if (Deno.permissions.querySync({ name: "sys", kind: "systemMemoryInfo" }).state !== "granted") {
    throw new Deno.errors.NotCapable(
      "memoryInfo(): on the CPU backend, tensors live in host memory, whose size Deno reads only " +
        "with --allow-sys (--allow-ffi --allow-env --allow-read do not grant it)\nfix: run with " +
        "--allow-sys=systemMemoryInfo (or --allow-sys)",
    );
  }
  const { available, total } = Deno.systemMemoryInfo();
  return { free: available, total };
}
