/**
 * The emulated NPU for benchmarks: the C host emulation of CANN built by `make -s -C native` into
 * `native/build/`, opened through the public API.
 *
 * @module
 */

import { Device } from "../mod.ts";
import { emulationDir } from "../tools/emu_dir.ts";

/** Folder of the host emulation build for the platform this runs on. */
export const EMU_DIR: string = emulationDir();

/** Opens the emulated NPU, or returns the reason it cannot be opened (build missing, no --allow-ffi). */
export function openEmulatedNpu(): Device | string {
  try {
    return Device.open({ backend: "npu", libDir: EMU_DIR });
  } catch (error) {
    return `emulated NPU unavailable (${(error as Error).message.split("\n")[0]}); ` +
      `run \`make -s -C native\` first`;
  }
}

const CONTROLS = {
  aclemuLiveAllocations: { parameters: [], result: "i64" },
  aclemuLiveBytes: { parameters: [], result: "i64" },
  aclemuLiveObjects: { parameters: [], result: "i64" },
} as const satisfies Deno.ForeignLibraryInterface;

/** Live-object counters of the emulation (the same loaded `libascendcl.so` the device uses). */
export interface EmuCounters {
  /** Device allocations not yet freed. */
  allocations: bigint;
  /** Bytes of those allocations. */
  bytes: bigint;
  /** Live aclTensor + aclIntArray + aclOpExecutor objects. */
  objects: bigint;
}

let controls: Deno.DynamicLibrary<typeof CONTROLS>["symbols"] | null = null;

/** Reads the emulation's live counters (open the emulated device first). */
export function emuCounters(): EmuCounters {
  controls ??= Deno.dlopen(`${EMU_DIR}libascendcl.so`, CONTROLS).symbols;
  return {
    allocations: controls.aclemuLiveAllocations(),
    bytes: controls.aclemuLiveBytes(),
    objects: controls.aclemuLiveObjects(),
  };
}
