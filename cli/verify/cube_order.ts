/**
 * verify's `--cube-order`: which reading of the order inside Atlas A2/A3's Cube matmuls the device
 * reference takes (`Device.open`'s `cubeOrder`). `"ascending"` makes the reference give the
 * Cube kernels' bits in that reading (UpsampleNearestExact2dGrad, UpsampleBilinear2dGrad: compared
 * bit for bit), `"pytorch"` keeps PyTorch's order (compared within the bound); `"auto"` runs
 * doctor's Cube-order probe (`cli/doctor/cube_order.ts`) on the NPU and takes the reading it
 * follows, the bound when it follows neither or the probe cannot run.
 *
 * @module
 */

import type { Device } from "../../src/device.ts";
import { type AscendGeneration, FAMILY_NAMES } from "../../src/rules/generation.ts";
import { type CubeOrder, probeCubeOrder } from "../doctor/cube_order.ts";

/** What {@link chooseCubeOrder} decided. */
export interface CubeOrderChoice {
  /** The reference's `cubeOrder` (undefined: a family without Cube kernels). */
  readonly cubeOrder: CubeOrder | undefined;
  /** The report line saying what was chosen and why (null: nothing to say). */
  readonly line: string | null;
}

const KERNELS = "A2/A3's Cube kernels (UpsampleNearestExact2dGrad, UpsampleBilinear2dGrad)";

/**
 * The reference's Cube order for `--cube-order flag` on `npu`, whose reference follows
 * `generation`'s rules (of `soc`, `verify --soc`, when given).
 *
 * @throws {RangeError} for `pytorch` or `ascending` with a reference of a family without Cube
 * kernels
 * @example
 * ```ts ignore
 * const { cubeOrder, line } = await chooseCubeOrder(npu, "auto", "a2", undefined);
 * ```
 */
export async function chooseCubeOrder(
  npu: Device,
  flag: CubeOrder | "auto",
  generation: AscendGeneration,
  soc: string | undefined,
): Promise<CubeOrderChoice> {
  if (generation !== "a2") {
    if (flag === "auto") return { cubeOrder: undefined, line: null };
    throw new RangeError(
      `verify --cube-order ${flag}: the reference follows the ${FAMILY_NAMES[generation]} rules, ` +
        `which run no Cube kernel (the flag applies to Atlas A2/A3)`,
    );
  }
  const compared = (order: CubeOrder): string =>
    order === "ascending"
      ? `${KERNELS} compared bit for bit with the reading "ascending" (W pass then H pass, each ` +
        `output's terms in ascending order)`
      : `${KERNELS} compared within the bound (the reference sums in PyTorch's order)`;
  if (flag !== "auto") {
    return { cubeOrder: flag, line: `Cube order: --cube-order ${flag}: ${compared(flag)}` };
  }
  try {
    const probe = await probeCubeOrder(npu, soc);
    if (probe.follows === "ascending") {
      return {
        cubeOrder: "ascending",
        line: `Cube order: auto: doctor's Cube-order probe finds this device follows ` +
          `"ascending": ${compared("ascending")} (--cube-order pytorch: within the bound)`,
      };
    }
    const off = probe.calls.find((c) => c.ascending > 0)!;
    return {
      cubeOrder: "pytorch",
      line: `Cube order: auto: doctor's Cube-order probe finds this device follows ` +
        `${probe.follows === "pytorch" ? `"pytorch"` : "neither reading"} (${off.what}: ` +
        `${off.ascending} of ${off.elements} elements differ from "ascending"): ` +
        compared("pytorch"),
    };
  } catch (error) {
    const why = error instanceof Error ? error.message.split("\n")[0] : String(error);
    return {
      cubeOrder: "pytorch",
      line: `Cube order: auto: doctor's Cube-order probe could not run (${why}): ` +
        compared("pytorch"),
    };
  }
}
