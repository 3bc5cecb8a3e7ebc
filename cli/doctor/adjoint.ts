/**
 * doctor's adjoint line: one seeded pair per op the device runs both ways, `<F(x), g>` against
 * `<x, B(g)>` within the bound of the two kernels' rounding (cli/verify/adjoint.ts). It needs no
 * model; `deno task verify --adjoint` runs many pairs and names the device facts.
 *
 * @module
 */

import type { Device } from "../../src/device.ts";
import type { UpsampleParams } from "../../src/rules/ops.ts";
import { adjointPair } from "../verify/adjoint.ts";
import { type Check, checkFromError } from "./report.ts";

// Sizes away from nearest-exact's ties, so that a family's forward and backward agree by
// construction and the identity must hold on every device.
const PAIRS: readonly UpsampleParams[] = [
  {
    op: "nearestExact1d",
    dtype: "float32",
    inputSize: [2, 3, 16],
    outputSize: [32],
    scales: [0],
    alignCorners: false,
  },
  {
    op: "nearestExact2d",
    dtype: "float32",
    inputSize: [2, 3, 8, 8],
    outputSize: [16, 16],
    scales: [0, 0],
    alignCorners: false,
  },
  {
    op: "bilinear2d",
    dtype: "float32",
    inputSize: [2, 3, 8, 8],
    outputSize: [16, 12],
    scales: [0, 0],
    alignCorners: false,
  },
];

/**
 * The adjoint line per op on `device`: ok within the bound, a failure outside it, info where the
 * family does not run the op.
 *
 * @example
 * ```ts ignore
 * for (const check of await adjointChecks(npu)) console.log(check.title);
 * ```
 */
export async function adjointChecks(device: Device): Promise<Check[]> {
  const checks: Check[] = [];
  for (const [k, call] of PAIRS.entries()) {
    const title =
      `adjoint ${call.op} [${call.inputSize}] <-> [${call.outputSize}] on ${device.name}`;
    try {
      const r = await adjointPair(device, device, call, 17 + k);
      const ratio = `|<F(x), g> - <x, B(g)>| = ${r.ratio.toFixed(3)} of its rounding bound`;
      checks.push(
        r.ratio <= 1 ? { status: "ok", title: `${title}: ${ratio}` } : {
          status: "fail",
          title: `${title}: ${ratio}: the forward and backward kernels disagree`,
          fix: "run `deno task verify --adjoint` for the cases and report them with the SoC",
        },
      );
    } catch (error) {
      if (error instanceof TypeError) {
        checks.push({ status: "info", title: `${title}: not run: ${error.message}` });
      } else {
        checks.push(checkFromError("fail", title, error, "run `deno task verify --adjoint`"));
      }
    }
  }
  return checks;
}
