/**
 * `doctor`: what this host offers the library — the folders searched for CANN and the libraries
 * found, the CANN runtime (version, SoC, devices, memory), `ASCEND_OPP_PATH`, the optional features,
 * the backend `Device.open()` picks and why, and a short run of each op checked against a reference.
 * Every warning and failure carries its fix.
 *
 * ```sh
 * deno run -A jsr:@aclnn/upsample/doctor
 * deno task doctor --lib-dir /usr/local/Ascend/ascend-toolkit/latest/lib64 --device-id 1
 * deno task doctor --help
 * ```
 *
 * Exit status: 0 nothing failed, 1 a check failed, 2 bad arguments.
 *
 * Importing this module runs nothing; it runs when it is the main module.
 *
 * @module
 */

import { runDoctor } from "./doctor.ts";
import { HELP, parseDoctorArgs } from "./args.ts";
import { parseCommand } from "../usage.ts";
import { exitCodeOf, formatReport } from "./report.ts";

/**
 * The command: parses `args`, runs every check, prints the report and returns the exit status
 * (0 nothing failed, 1 a check failed, 2 bad arguments). `--help` prints the usage and returns 0.
 *
 * @param args The command-line arguments, without the program name.
 * @returns The exit status.
 * @example
 * ```ts ignore
 * import { main } from "@aclnn/upsample/doctor";
 * Deno.exit(await main(["--device-id", "1"]));
 * ```
 */
export async function main(args: readonly string[]): Promise<number> {
  const options = parseCommand(args, parseDoctorArgs, HELP);
  if (typeof options === "number") return options;
  const checks = await runDoctor(options);
  console.log(formatReport(checks));
  return exitCodeOf(checks);
}

if (import.meta.main) Deno.exit(await main(Deno.args));
