/**
 * doctor's kernel-generation checks: which family the runtime's SoC belongs to (CANN's platform
 * table) and why, per op whether the family runs it and whether its kernel keeps deterministic
 * mode's word, what deterministic mode runs for a representative call of each op
 * (`deterministic.ts`), and which contraction rule the device follows, probed with a call whose answer
 * differs: on an Ascend 950 nearest-exact 1d, L 6 -> 1 (input 2 when `i * scale - 0.5` is one fused
 * multiply-add, 3 when the product is rounded first); elsewhere the TBE ResizeBilinearV2Grad's
 * `scale * (d + 0.5) - 0.5` (`probeTbeFma`; docs/device-semantics.md); on Atlas A2/A3 which
 * reading of the order inside a Cube matmul the device follows (`cube_order.ts`); and on the TBE
 * families whether the kernel's tiling mode 6 drops the columns its source says it drops
 * (`column_loss.ts`).
 *
 * @module
 */

import type { Device } from "../../src/device.ts";
import { runParams } from "../../src/ops/run_params.ts";
import { upsampleBilinear2d } from "../../src/ops/forward.ts";
import {
  type AscendGeneration,
  FAMILY_NAMES,
  generationOfSoc,
} from "../../src/rules/generation.ts";
import { columnLossCheck } from "./column_loss.ts";
import { cubeOrderCheck } from "./cube_order.ts";
import { deterministicChecks, npuDeterministicHost } from "./deterministic.ts";
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
 * Runs the TBE ResizeBilinearV2Grad contraction probe on `device` (A2/A3, 910, 310P): bilinear,
 * image 1 x 3, gradient 1 x 19 with a single 1 at column 9 (A2/A3: `scalesH` 1 alone, so V2 falls
 * back to that kernel). `fl(3/19) * 9.5 - 0.5` is 1 with the product rounded first, just below 1 as
 * one fused multiply-add: the gradient lands on input 1 alone, or on inputs 0 (weight 2^-24) and 1.
 *
 * @example
 * ```ts ignore
 * const { contracted } = await probeTbeFma(npu); // false on a device that rounds each step
 * ```
 */
export async function probeTbeFma(device: Device): Promise<FmaProbe> {
  const values = new Float32Array(19);
  values[9] = 1;
  using grad = device.tensor(values, [1, 1, 1, 19]);
  using result = runParams(grad, {
    op: "bilinear2d",
    inputSize: [1, 1, 1, 3],
    outputSize: [1, 19],
    scales: [1, 0],
    alignCorners: false,
  });
  const [c0, c1, c2] = await result.toFloat32Array();
  const contracted = c0 === 0 && c1 === 1 && c2 === 0
    ? false
    : c0 > 0 && c0 < 1e-6 && c1 > 0.999 && c2 === 0
    ? true
    : undefined;
  return { cell: contracted === undefined ? -1 : contracted ? 0 : 1, contracted };
}

/** Per op, what a family runs and whether its kernel keeps deterministic mode's word. */
function opChecks(generation: AscendGeneration): Check[] {
  const info = (title: string): Check => ({ status: "info", title });
  if (generation === "950") {
    return [
      info(
        "nearest-exact 1d/2d: supported; deterministic flag: no kernel change (one SIMT gather " +
          "per result element, a fixed order either way)",
      ),
      info(
        "bilinear: supported; deterministic flag: changes the kernel of calls that enlarge no " +
          "dimension (off: ResizeBilinearV2Grad's atomic scatter, whose sums depend on the order " +
          "of the additions and accumulate in the dtype; on: a gather in float32); calls that " +
          "enlarge a dimension or mix dtypes always gather; equal sizes are a copy",
      ),
    ];
  }
  const tbe = "the TBE kernel ResizeBilinearV2Grad (NC1HWC0, float32) never reads the flag: its " +
    "tiling modes 0-4 add in a fixed order, modes 5 and 6 (" +
    (generation === "a2" ? "mode 6 here: no L1" : "large planes") +
    ") add the partial rows of several cores with atomic adds in an order nothing fixes, so with " +
    "deterministic mode on the library runs those calls as the deterministic route (two launches " +
    "of the kernel, each with the image height unchanged, which fixes the sums) and refuses the " +
    "few no route covers (deterministicWarnOnly: a warning)";
  if (generation === "a2") {
    return [
      info(
        "nearest-exact 1d/2d: supported; deterministic flag: no kernel change (Cube matmul " +
          "passes, a fixed order either way)",
      ),
      info(
        "bilinear: supported; V2's own kernel UpsampleBilinear2dGrad (equal sizes, or both " +
          "scales or none that fit): a fixed order; V1 and V2's fallback (one scale, scales that " +
          `do not fit): ${tbe}`,
      ),
    ];
  }
  return [
    {
      status: "info",
      title: "nearest-exact 1d/2d: not supported on this family (no UpsampleNearestExact2dGrad " +
        "kernel ships for it; the library refuses the call before the device)",
    },
    info(
      "bilinear: supported for float32 and float16 (bfloat16 only with equal sizes); equal " +
        `sizes run V1's copy (V2 launches nothing there); every other call: ${tbe}`,
    ),
  ];
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
  const generation = target.generation;
  const name = FAMILY_NAMES[generation];
  const checks: Check[] = [
    target.known ? { status: "ok", title: `kernel generation: ${name}: ${target.reason}` } : {
      status: "warn",
      title: `kernel generation: ${name} assumed: ${target.reason}`,
      fix: "if this SoC runs other kernels, results may differ from the device reference; " +
        "deno task verify --soc <name> checks against a named SoC's rules",
    },
    ...opChecks(generation),
    ...deterministicChecks(generation, npuDeterministicHost(npu)),
  ];
  const a950 = generation === "950";
  const what = a950 ? "FMA probe (nearest-exact 1d, 6 -> 1)" : "TBE FMA probe (bilinear 3 <- 19)";
  try {
    const probe = a950 ? await probeFma(npu) : await probeTbeFma(npu);
    const option = a950 ? "ascendFma" : "tbeFma";
    checks.push(
      probe.contracted === undefined
        ? {
          status: "fail",
          title: `${what}: the gradient landed on ${
            probe.cell < 0 ? "no input either rule explains" : `input ${probe.cell}`
          }`,
          fix: `report it: the device computes something the ${name} rules do not model`,
        }
        : {
          status: "ok",
          title: `${what}: ${a950 ? `input ${probe.cell}: ` : ""}this device ` +
            (probe.contracted
              ? `contracts a * b + c into one FMA (device reference: ${option}: true)`
              : `rounds the product before the sum (device reference: ${option}: false)`),
        },
    );
  } catch (error) {
    checks.push(checkFromError("warn", what, error, "see the error above"));
  }
  if (generation === "a2") checks.push(await cubeCheck(npu), await cubeOrderCheck(npu));
  if (generation !== "950") checks.push(await columnLossCheck(npu, generation));
  return checks;
}

/**
 * Runs the A2/A3 forward Cube kernel's contraction probe on `device`: bilinear forward 1 x 2 -> 1 x 6
 * with both scales given (1 and 3, so the op routes to UpsampleBilinear2d) on input `[1, 1e8]`.
 * Output 1's centre `fl(1/3) * 1.5 - 0.5` is 0 with the product rounded first and 2^-25 as one
 * fused multiply-add: it reads 1 exactly, or 1 + 2^-25 * 1e8 = 2.49.
 *
 * @example
 * ```ts ignore
 * const { contracted } = await probeCubeFma(npu); // true on a device whose compiler contracts
 * ```
 */
export async function probeCubeFma(device: Device): Promise<FmaProbe> {
  using x = device.tensor([1, 1e8], [1, 1, 1, 2]);
  using y = upsampleBilinear2d(x, { outputSize: [1, 6], scalesH: 1, scalesW: 3 });
  const value = (await y.toFloat32Array())[1];
  const contracted = value === 1 ? false : Math.abs(value - 2.4901161) < 1e-6 ? true : undefined;
  return { cell: 1, contracted };
}

async function cubeCheck(npu: Device): Promise<Check> {
  const what = "Cube FMA probe (bilinear forward 2 -> 6, scale 3)";
  try {
    const probe = await probeCubeFma(npu);
    if (probe.contracted === undefined) {
      return {
        status: "fail",
        title: `${what}: output 1 is neither 1 nor 2.49`,
        fix: "report it: the device computes something the Atlas A2/A3 rules do not model",
      };
    }
    return {
      status: "ok",
      title: `${what}: this device ` +
        (probe.contracted
          ? "contracts the centre into one FMA (device reference: ascendFma: true)"
          : "rounds the product before the sum (device reference: ascendFma: false)"),
    };
  } catch (error) {
    return checkFromError("warn", what, error, "see the error above");
  }
}
