/**
 * Opening one NPU: load CANN, `aclInit` (once per process), `aclrtSetDevice`, a stream, and the
 * {@link NpuBackend} over them.
 *
 * @module
 */

import { loadCann } from "./loader.ts";
import { NpuBackend } from "./npu_backend.ts";
import { CannRuntime } from "./runtime.ts";
import { LibraryLoadError } from "./status.ts";
import { generationOfSoc } from "../rules/generation.ts";
import { UnsupportedSocError } from "../rules/support.ts";
import { WarningChannel } from "../warnings.ts";
import type { DeviceDefects } from "../rules/arrangement.ts";

/** Options of {@link openNpuBackend}. */
export interface NpuOpenOptions {
  /** NPU index. */
  deviceId: number;
  /** Folder of the CANN libraries (first in the search list). */
  libDir?: string;
  /** "auto" mode: no device is a `LibraryLoadError` (so the caller falls back to the CPU). */
  probe?: boolean;
  /** Warn once instead of throwing for an order-dependent kernel in deterministic mode. */
  deterministicWarnOnly?: boolean;
  /** The device's warnings channel (default: one with the process default rules). */
  warnings?: WarningChannel;
  /** Where the vendor's source says a kernel loses terms (default `"avoid"`; Device.open). */
  deviceDefects?: DeviceDefects;
}

/**
 * Loads CANN and opens one NPU: `aclInit` (once per process), `aclrtSetDevice`, a stream.
 *
 * @throws {LibraryLoadError} when CANN is missing (or, with `probe`, has no device)
 * @throws {UnsupportedSocError} when the NPU's SoC runs none of the upsample backward operators
 * @throws {AclError} when the runtime fails
 * @example
 * ```ts ignore
 * import { openNpuBackend } from "./npu_open.ts";
 * const backend = openNpuBackend({ deviceId: 0, libDir: "native/build" });
 * backend.close();
 * ```
 */
export function openNpuBackend(options: NpuOpenOptions): NpuBackend {
  const libs = loadCann(options.libDir);
  const runtime = CannRuntime.of(libs);
  const { acl } = libs;
  runtime.acquire();
  let deviceSet = false;
  try {
    const count = new Uint32Array(1);
    runtime.check(acl.aclrtGetDeviceCount(count), "aclrtGetDeviceCount");
    if (options.deviceId >= count[0]) {
      const message = `deviceId ${options.deviceId} is out of range: CANN in ${libs.dir} reports ` +
        `${count[0]} device(s)`;
      const fix = count[0] === 0
        ? "no NPU is visible: check the driver and the devices with `npu-smi info` (and " +
          "ASCEND_RT_VISIBLE_DEVICES, which hides devices)"
        : `use a deviceId below ${count[0]} (\`npu-smi info\` lists the NPUs)`;
      if (options.probe) {
        throw new LibraryLoadError([], { summary: `no usable NPU: ${message}`, fix });
      }
      throw new RangeError(`Device.open: ${message}; fix: ${fix}`);
    }
    runtime.check(acl.aclrtSetDevice(options.deviceId), "aclrtSetDevice");
    deviceSet = true;
    const slot = new BigUint64Array(1);
    runtime.check(acl.aclrtGetCurrentContext(slot), "aclrtGetCurrentContext");
    const context = slot[0];
    runtime.noteCurrent(context);
    const namePointer = acl.aclrtGetSocName?.() ?? null; // optional: older runtimes lack it
    const socName = namePointer === null ? null : Deno.UnsafePointerView.getCString(namePointer);
    const { unsupported, info } = generationOfSoc(socName);
    if (unsupported !== undefined) {
      throw new UnsupportedSocError(
        socName!,
        info!.npuArch,
        `NPU ${options.deviceId}: ${unsupported}; fix: run on the CPU backend ` +
          `(Device.open({ backend: "cpu" }))`,
      );
    }
    runtime.check(acl.aclrtCreateStream(slot), "aclrtCreateStream");
    return new NpuBackend(
      runtime,
      options.deviceId,
      context,
      slot[0],
      `${socName ?? "Ascend NPU"} #${options.deviceId}${
        libs.emulated ? " (host emulation, not an NPU)" : ""
      }`,
      socName,
      options.deterministicWarnOnly ?? false,
      options.warnings ?? new WarningChannel(),
      options.deviceDefects ?? "avoid",
    );
  } catch (error) {
    if (deviceSet) acl.aclrtResetDevice(options.deviceId);
    runtime.release();
    throw error;
  }
}
