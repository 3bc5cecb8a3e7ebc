/**
 * `verify`: checks an Ascend NPU's upsampling backward results against the library's device
 * reference. Seeded random configurations of what the NPU's family runs (the three ops, or bilinear
 * alone on the 910 and 310P) run on the NPU (real CANN, or the host emulation); each result must
 * equal the reference bit for bit where the reference reproduces the kernel's bits, and elsewhere
 * map indices exactly as the Ascend kernels do and keep every element within the documented bound.
 * It reports how many configurations it checked, skipped, and compared each way, per kernel. Where
 * the device differs from PyTorch's semantics is reported too — expected on Ascend hardware, never
 * a failure.
 *
 * ```sh
 * deno run -A jsr:@aclnn/upsample/verify --cases 200 --seed 7
 * deno task verify --lib-dir /usr/local/Ascend/ascend-toolkit/latest/lib64
 * deno task verify --help
 * ```
 *
 * Where the runtime has deterministic mode, each configuration run in it is run twice and must give
 * the same bits (`--no-repeat` skips that).
 *
 * Exit status: 0 all match, 1 a result off the reference (bits where it is exact, the bound
 * elsewhere; or a configuration the runtime failed, printed as ERROR, or a deterministic one whose
 * two runs differ, printed as REPEAT MISMATCH), 2 bad arguments or no usable NPU.
 *
 * Importing this module runs nothing; it runs when it is the main module.
 *
 * @module
 */

import { Device } from "../../src/device.ts";
import { HELP, parseVerifyArgs } from "./args.ts";
import { parseCommand } from "../usage.ts";
import { verifyDevice } from "./verify.ts";
import { verifyAdjoint } from "./adjoint.ts";

/**
 * The command: parses `args`, opens the NPU (with `--lib-dir`/`--device-id`), verifies it, and
 * returns the exit status (0 within bounds and repeatable, 1 a mismatch or a repeat mismatch, 2 bad
 * arguments or no NPU). `--help` prints the usage and returns 0.
 *
 * @param args The command-line arguments, without the program name.
 * @returns The exit status.
 * @example
 * ```ts ignore
 * import { main } from "@aclnn/upsample/verify";
 * Deno.exit(await main(["--cases", "50"]));
 * ```
 */
export async function main(args: readonly string[]): Promise<number> {
  const options = parseCommand(args, parseVerifyArgs, HELP);
  if (typeof options === "number") return options;
  using npu = Device.open({
    libDir: options.libDir,
    deviceId: options.deviceId,
    // The NPU's absence is verify's own error, said once with the reason; the adjoint gaps its
    // draws meet on purpose are device facts it reports itself.
    warnings: { CPU_FALLBACK: "ignore", ADJOINT_GAP: "ignore" },
  });
  if (npu.backend !== "npu") {
    console.error(
      `verify: no usable NPU (Device.open picked the CPU backend): ${npu.fallbackReason}`,
    );
    return 2;
  }
  if (options.adjoint) {
    const adjoint = await verifyAdjoint(npu, options, console.log);
    return adjoint.failures === 0 ? 0 : 1;
  }
  console.log(`verifying ${npu.name} against the device reference (seed ${options.seed})`);
  const summary = await verifyDevice(npu, options, console.log);
  return summary.failures === 0 && summary.repeatMismatches === 0 ? 0 : 1;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
