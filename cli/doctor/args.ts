/**
 * The command line of `deno task doctor` (`node:util` parseArgs, strict): `--npu`, `--lib-dir DIR`,
 * `--device-id I`, `--help`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { UsageError } from "../usage.ts";

export { UsageError };

/** Parsed command line of `deno task doctor`. */
export interface DoctorArgs {
  /** A CANN folder, searched alone (as `Device.open({ libDir })` does). */
  readonly libDir?: string;
  /** The NPU to check (default 0). */
  readonly deviceId?: number;
  /** `--npu`: an NPU is asked for, so its absence fails (as `--lib-dir` and `--device-id` do). */
  readonly npu: boolean;
  /** `--help`: print {@linkcode HELP} and run nothing. */
  readonly help: boolean;
}

/** The usage line. */
export const USAGE: string =
  "usage: deno task doctor [--npu] [--lib-dir DIR] [--device-id I] [--help]";

/** The `--help` text: usage, flags, exit codes. */
export const HELP: string =
  `doctor: what this host offers the library — CANN search, runtime, features,
the backend Device.open() picks and why, and a short checked run of each op.

${USAGE}
  (published: deno run -A jsr:@aclnn/upsample/doctor [flags])

flags:
  --npu            an NPU is required: its absence is a failure (exit 1)
  --lib-dir DIR    a CANN folder, searched alone (as Device.open({ libDir }) does); asks for an NPU
  --device-id I    the NPU to check (default 0); asks for an NPU
  --help           print this text and exit

Without --npu, --lib-dir, --device-id, ACLNN_LIB_DIR or ASCEND_HOME_PATH, a host without a usable
NPU is reported as information: the CPU backend serves, and the exit status is 0.

permissions: --allow-ffi --allow-env --allow-read

exit status:
  0  nothing failed (a CPU-only host included, unless an NPU was asked for)
  1  a check failed, or an NPU was asked for and is not usable
  2  bad arguments`;

/**
 * Parses the command line.
 *
 * @throws {UsageError} on an unknown flag, a positional argument or a bad value
 * @example
 * ```ts
 * import { parseDoctorArgs } from "./args.ts";
 * parseDoctorArgs(["--device-id", "1"]).deviceId; // 1
 * ```
 */
export function parseDoctorArgs(args: readonly string[]): DoctorArgs {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: {
        "lib-dir": { type: "string" },
        "device-id": { type: "string" },
        npu: { type: "boolean", default: false },
        help: { type: "boolean", default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new UsageError(`doctor: ${(error as Error).message}\n${USAGE}`);
  }
  const id = values["device-id"];
  if (id !== undefined && !/^\d+$/.test(id)) {
    throw new UsageError(`doctor: --device-id must be an integer >= 0, got "${id}"\n${USAGE}`);
  }
  const libDir = values["lib-dir"];
  if (libDir !== undefined && libDir.trim() === "") {
    throw new UsageError(`doctor: --lib-dir must be a folder, got an empty string\n${USAGE}`);
  }
  return {
    libDir,
    deviceId: id === undefined ? undefined : Number(id),
    npu: values.npu,
    help: values.help,
  };
}
