/**
 * The command line of `deno task verify` (`node:util` parseArgs, strict): `--cases N`, `--seed S`,
 * `--lib-dir DIR`, `--device-id I`, `--dtype float32|float16|bfloat16|all`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { type DType, DTYPES, isDType } from "../tensor/dtype.ts";

/** Parsed command line of `deno task verify`. */
export interface VerifyOptions {
  /** Configurations to run. */
  readonly cases: number;
  /** Seed of the configurations and gradients. */
  readonly seed: number;
  /** CANN library folder (the library's search list when omitted). */
  readonly libDir?: string;
  /** NPU index. */
  readonly deviceId: number;
  /** Element types drawn from. */
  readonly dtypes: readonly DType[];
}

/** A bad command line: the message names the flag, the value and the rule. */
export class UsageError extends Error {
  /** Builds the error. */
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** One-line usage text. */
export const USAGE: string =
  `usage: deno task verify [--cases N] [--seed S] [--lib-dir DIR] [--device-id I]
                        [--dtype float32|float16|bfloat16|all]`;

function integerFlag(name: string, text: string, min: number): number {
  const value = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(value) || value < min) {
    throw new UsageError(`verify: --${name} must be an integer >= ${min}, got "${text}"`);
  }
  return value;
}

/**
 * Parses the command line.
 *
 * @throws {UsageError} on an unknown flag or a bad value
 * @example
 * ```ts
 * import { parseVerifyArgs } from "./args.ts";
 * parseVerifyArgs(["--cases", "20", "--dtype", "float16"]).cases; // 20
 * ```
 */
export function parseVerifyArgs(args: readonly string[]): VerifyOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: {
        cases: { type: "string", default: "100" },
        seed: { type: "string", default: "1" },
        "lib-dir": { type: "string" },
        "device-id": { type: "string", default: "0" },
        dtype: { type: "string", default: "all" },
      },
    }));
  } catch (error) {
    throw new UsageError(`verify: ${(error as Error).message}\n${USAGE}`);
  }
  const dtype = values.dtype;
  if (dtype !== "all" && !isDType(dtype)) {
    throw new UsageError(
      `verify: --dtype must be one of ${DTYPES.join(", ")} or all, got "${dtype}"`,
    );
  }
  const libDir = values["lib-dir"];
  if (libDir !== undefined && libDir.trim() === "") {
    throw new UsageError(`verify: --lib-dir must be a folder, got an empty string`);
  }
  return {
    cases: integerFlag("cases", values.cases, 1),
    seed: integerFlag("seed", values.seed, 0),
    libDir,
    deviceId: integerFlag("device-id", values["device-id"], 0),
    dtypes: dtype === "all" ? DTYPES : [dtype],
  };
}
