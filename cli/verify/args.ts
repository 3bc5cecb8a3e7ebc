/**
 * The command line of `deno task verify` (`node:util` parseArgs, strict): `--cases N`, `--seed S`,
 * `--lib-dir DIR`, `--device-id I`, `--dtype float32|float16|bfloat16|all`, `--soc NAME`,
 * `--cube-order pytorch|ascending|auto`, `--no-repeat`, `--help`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { UsageError } from "../usage.ts";

export { UsageError };
import { type DType, DTYPES, isDType } from "../../src/tensor/dtype.ts";

/** Parsed command line of `deno task verify`. */
export interface VerifyOptions {
  /** Seeded configurations to run (verify adds its fixed deterministic ones). */
  readonly cases: number;
  /** Seed of the configurations and gradients. */
  readonly seed: number;
  /** CANN library folder (the library's search list when omitted). */
  readonly libDir?: string;
  /** NPU index (`--device-id`; undefined when not given: NPU 0, not asked for by index). */
  readonly deviceId?: number;
  /** Element types drawn from. */
  readonly dtypes: readonly DType[];
  /**
   * `--soc NAME`: the SoC whose reference the results are checked against, instead of the one the
   * runtime reports (`aclrtGetSocName`).
   */
  readonly soc?: string;
  /**
   * `--cube-order`: how the reference reads the order inside Atlas A2/A3's Cube matmuls
   * (`Device.open`'s `cubeOrder`): `"ascending"` compares those kernels bit for bit, `"pytorch"`
   * within the bound, `"auto"` (default) runs doctor's Cube-order probe first and takes the reading
   * the device follows (the bound when it follows neither). Other families run no Cube kernel.
   */
  readonly cubeOrder: "pytorch" | "ascending" | "auto";
  /**
   * Whether each configuration run in deterministic mode is run a second time and must give the
   * same bits (default true, where the runtime has deterministic mode; `--no-repeat`: false).
   */
  readonly repeat: boolean;
  /**
   * `--adjoint`: run the adjoint check instead (`<F(x), g> = <x, B(g)>` for seeded pairs of each
   * forward op and its backward on the NPU, within the bound of their rounding; no model).
   */
  readonly adjoint: boolean;
  /** `--help`: print {@linkcode HELP} and run nothing. */
  readonly help: boolean;
}

/** The usage lines. */
export const USAGE: string =
  `usage: deno task verify [--cases N] [--seed S] [--lib-dir DIR] [--device-id I]
                        [--dtype float32|float16|bfloat16|all] [--soc NAME]
                        [--cube-order pytorch|ascending|auto] [--no-repeat] [--adjoint] [--help]`;

/** The `--help` text: usage, flags, exit codes. */
export const HELP: string = `verify: checks an Ascend NPU's upsampling backward results against the
device reference (the CPU backend computing what the Ascend kernels compute): bit for bit where the
reference reproduces the kernel's bits, within the documented bound elsewhere. The configurations
follow what the NPU's family and CANN run.

${USAGE}
  (published: deno run -A jsr:@aclnn/upsample/verify [flags])

flags:
  --cases N        seeded configurations to run (default 100), plus three fixed bilinear ones in
                   deterministic mode
  --seed S         seed of the configurations and gradients (default 1)
  --lib-dir DIR    the CANN library folder to use alone (default: the library's search list)
  --device-id I    the NPU to verify (default 0)
  --dtype T        float32, float16, bfloat16 or all (default all)
  --soc NAME       check against the reference of this SoC (e.g. Ascend910B3, Ascend950PR_9599)
                   instead of the SoC the runtime reports (aclrtGetSocName)
  --cube-order O   Atlas A2/A3: how the reference reads the order inside the Cube matmuls of
                   UpsampleNearestExact2dGrad and UpsampleBilinear2dGrad, which the hardware leaves
                   open: ascending (the source's W pass then H pass, each output's terms in
                   ascending order) compares them bit for bit, pytorch within the bound, auto
                   (default) runs doctor's Cube-order probe first and takes the reading the device
                   follows, the bound when it follows neither (said in the report)
  --no-repeat      skip the repeatability check: by default, where the runtime has deterministic
                   mode, every configuration run in it (every fifth seeded one and the three
                   bilinear calls that reach the deterministic route) runs twice and must give the
                   same bits (on the host emulation with two different atomic-order seeds)
  --adjoint        instead, the adjoint check, which needs no model: for seeded pairs x, g each
                   forward op F and its backward B on the NPU must satisfy <F(x), g> = <x, B(g)>
                   within the bound of their float32 (or 16-bit) rounding; a pair outside it is
                   a FAILURE unless the device's own forward and backward differ by construction
                   there (a DEVICE FACT line names why); the worst ratio per op and dtype
  --help           print this text and exit

permissions: --allow-ffi --allow-env --allow-read

exit status:
  0  every result as the reference's (bits where exact, bound elsewhere), every repeat the same
  1  MISMATCH (a result off the reference), ERROR (a runtime failure), REPEAT MISMATCH (two runs)
  2  bad arguments, or no usable NPU`;

function soc(text: string | undefined): string | undefined {
  if (text !== undefined && text.trim() === "") {
    throw new UsageError(`verify: --soc must be a SoC name (e.g. Ascend950PR_9599), got ""`);
  }
  return text;
}

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
        "device-id": { type: "string" },
        dtype: { type: "string", default: "all" },
        soc: { type: "string" },
        "cube-order": { type: "string", default: "auto" },
        "no-repeat": { type: "boolean", default: false },
        adjoint: { type: "boolean", default: false },
        help: { type: "boolean", default: false },
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
  const cubeOrder = values["cube-order"];
  if (cubeOrder !== "pytorch" && cubeOrder !== "ascending" && cubeOrder !== "auto") {
    throw new UsageError(
      `verify: --cube-order must be pytorch, ascending or auto, got "${cubeOrder}"`,
    );
  }
  return {
    cases: integerFlag("cases", values.cases, 1),
    seed: integerFlag("seed", values.seed, 0),
    libDir,
    deviceId: values["device-id"] === undefined
      ? undefined
      : integerFlag("device-id", values["device-id"], 0),
    dtypes: dtype === "all" ? DTYPES : [dtype],
    ...(values.soc === undefined ? {} : { soc: soc(values.soc) }),
    cubeOrder,
    repeat: !values["no-repeat"],
    adjoint: values.adjoint,
    help: values.help,
  };
}
