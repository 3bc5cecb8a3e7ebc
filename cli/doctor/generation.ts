/**
 * doctor's kernel-generation checks: which reference generation the runtime's SoC selects (and why),
 * per op whether the deterministic flag changes the kernel on that generation, and on an Ascend 950
 * which FMA-contraction rule the device follows, probed with a one-element call whose answer differs
 * (nearest-exact 1d, L 6 -> 1: the gradient lands on input 2 when `i * scale - 0.5` is one fused
 * multiply-add, on input 3 when the product is rounded first; docs/device-semantics.md).
 *
 * @module
 */

import type { Device } from "../../src/device.ts";
import { runParams } from "../../src/ops/run_params.ts";
import { generationOfSoc } from "../../src/rules/generation.ts";
import { type Check, checkFromError } from "./report.ts";

/** What the FMA probe found: the input the gradient landed on, and the rule that explains it. */
export interface FmaProbe {
  /** Index of the input cell that received the gradient (-1: none or several). */
  readonly cell: number;
  /** `true`: contracted (FMA), `false`: product rounded first, `undefined`: neither rule. */
  readonly contracted: boolean | undefined;
}

/**
 * Runs the one-element FMA probe on `device`: nearest-exact 1d, input length 6, a single gradient
 * value 1.
 *
 * @example
 * ```ts ignore
 * const { contracted } = await probeFma(npu); // true on a device that contracts
 * ```
 */
export async function probeFma(device: Device): Promise<FmaProbe> {
  using grad = device.tensor([1], [1, 1, 1]);
  using result = runParams(grad, {
    op: "nearestExact1d",
    inputSize: [1, 1, 6],
    outputSize: [1],
    scales: [0],
    alignCorners: false,
  });
  const values = await result.toFloat32Array();
  const hit = [...values.keys()].filter((i) => values[i] !== 0);
  const cell = hit.length === 1 && values[hit[0]] === 1 ? hit[0] : -1;
  return { cell, contracted: cell === 2 ? true : cell === 3 ? false : undefined };
}

/**
 * The generation checks of one NPU device (see the module text).
 *
 * @example
 * ```ts ignore
 * for (const check of await generationChecks(npu)) console.log(check.title);
 * ```
 */
export async function generationChecks(npu: Device): Promise<Check[]> {
  const soc = npu.soc ?? null;
  const target = generationOfSoc(soc);
  const a950 = target.generation === "950";
  const name = a950 ? "Ascend 950 (arch35)" : "Ascend A2/A3";
  const checks: Check[] = [
    target.known ? { status: "ok", title: `kernel generation: ${name}: ${target.reason}` } : {
      status: "warn",
      title: `kernel generation: ${name} assumed: ${target.reason}`,
      fix: "if this SoC runs other kernels, results may differ from the device reference; " +
        "deno task verify --soc <name> checks against a named SoC's rules",
    },
    {
      status: "info",
      title: `deterministic flag on this SoC, nearest-exact 1d/2d: no kernel change (${
        a950 ? "one SIMT gather per result element" : "Cube matmul passes"
      }, a fixed order either way)`,
    },
    a950
      ? {
        status: "info",
        title:
          "deterministic flag on this SoC, bilinear: changes the kernel of calls that enlarge " +
          "no dimension (off: ResizeBilinearV2Grad's atomic scatter, whose sums depend on the " +
          "order of the additions and accumulate in the dtype; on: a gather in float32); calls " +
          "that enlarge a dimension or mix dtypes always gather, equal sizes are a copy",
      }
      : {
        status: "info",
        title: "deterministic flag on this SoC, bilinear: no change in public code " +
          "(UpsampleBilinear2dGrad does not read it); the built-in fallback ResizeBilinearV2Grad " +
          "(V1, and V2 calls whose scales its kernel refuses) is not public, so whether its " +
          "results repeat run to run is unknown",
      },
  ];
  if (!a950) return checks;
  try {
    const probe = await probeFma(npu);
    checks.push(
      probe.contracted === undefined
        ? {
          status: "fail",
          title: `FMA probe (nearest-exact 1d, 6 -> 1): the gradient landed on ${
            probe.cell < 0 ? "no single input" : `input ${probe.cell}`
          }; neither rule (2: contracted, 3: not) explains it`,
          fix: "report it: the device computes something the 950 rules do not model",
        }
        : {
          status: "ok",
          title: `FMA probe (nearest-exact 1d, 6 -> 1): input ${probe.cell}: this device ` +
            (probe.contracted
              ? "contracts a * b + c into one FMA (the device reference's default, ascendFma: true)"
              : "rounds the product before the sum (device reference: ascendFma: false)"),
        },
    );
  } catch (error) {
    checks.push(checkFromError("warn", "FMA probe", error, "see the error above"));
  }
  return checks;
}
