/**
 * UNSAFE probes into the library's internals for the overhead measurements only (`overhead.ts`): the
 * emulated NPU's backend and stream, and a blocking stream sync on the JS thread. Everything else in
 * `bench/` uses the public API.
 *
 * @module
 */

import type { Device } from "../mod.ts";
import { deviceInternals } from "../src/device.ts";
import type { NpuBackend } from "../src/ffi/npu_backend.ts";
import { EMU_DIR } from "./emu.ts";

const SYNC_SYMBOLS = {
  aclrtSynchronizeStream: { parameters: ["usize"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;
let syncLib: Deno.DynamicLibrary<typeof SYNC_SYMBOLS>["symbols"] | null = null;

/** UNSAFE probe (library internals): the NPU backend of an emulated-NPU device. */
export function npuBackendOf(device: Device): NpuBackend {
  return deviceInternals(device).backend() as unknown as NpuBackend;
}

/** UNSAFE probe: the device's stream handle. */
export function streamOf(device: Device): bigint {
  return npuBackendOf(device).stream;
}

/**
 * A blocking `aclrtSynchronizeStream` on the JS thread, through the same loaded `libascendcl.so` —
 * how the C driver syncs. (The library's own `device.synchronize()` runs it on a worker thread.)
 */
export function blockingSync(stream: bigint): void {
  syncLib ??= Deno.dlopen(`${EMU_DIR}libascendcl.so`, SYNC_SYMBOLS).symbols;
  const status = syncLib.aclrtSynchronizeStream(stream);
  if (status !== 0) throw new Error(`aclrtSynchronizeStream -> ${status}`);
}
