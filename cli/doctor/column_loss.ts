/**
 * doctor's column-loss probe: whether the device's TBE kernel ResizeBilinearV2Grad (A2/A3's V2
 * fallback and V1, the 910, the 310P) drops the gradient columns its tiling mode 6 never writes, as
 * the kernel's source says (`resize_bilinear_v2_grad.py` `big_in_loop`, CANN 8.1.RC1
 * `opp/built-in/op_impl/ai_core/tbe/impl/dynamic/`; `losesColumns5hd` in src/rules/ascend_5hd.ts).
 * It runs one such call as its native single launch (a device opened with `deviceDefects: "allow"`,
 * which bypasses the library's avoidance) and compares the result with the two readings: the lossy
 * one (those columns' terms missing) and the exact one. The call keeps the image height (2 rows from
 * 2), so its result is the same bits whatever order the cores add in.
 *
 * @module
 */

import { Device, deviceInternals } from "../../src/device.ts";
import { NpuBackend } from "../../src/ffi/npu_backend.ts";
import { lostColumns5hd } from "../../src/rules/arrangement.ts";
import { tbe5hdSpec } from "../../src/rules/ascend_5hd.ts";
import type { AscendGeneration } from "../../src/rules/generation.ts";
import { linearIndexTable } from "../../src/rules/pytorch.ts";
import { upsampleBilinear2dBackward } from "../../src/ops/upsample.ts";
import { type Check, checkFromError } from "./report.ts";

/** Which reading the device follows, with what the probe ran and read. */
export interface ColumnLossProbe {
  /** `"lossy"`: the columns' terms are missing; `"exact"`: they are there; `"neither"`. */
  readonly reading: "lossy" | "exact" | "neither";
  /** The image `[H, W]` of the probe call (the gradient is `[2, 2]`, align corners). */
  readonly inputHW: readonly [number, number];
  /** The gradient columns the source says are lost. */
  readonly lostColumns: readonly number[];
  /** The last image column as the device wrote it, one value per row. */
  readonly lastColumn: readonly number[];
}

/**
 * The probe's call on a generation that runs the TBE kernel: image `[2, 2U + 1]` (U the kernel's
 * window, `tensor_c / 2 - 1`), gradient `[2, 2]`, align corners: gradient column 1 jumps from
 * image column 0 onto the last one, `2U`, a multiple of the window.
 *
 * @example
 * ```ts
 * import { columnLossCall } from "./column_loss.ts";
 * columnLossCall("a2").inputHW; // [2, 1535]
 * ```
 */
export function columnLossCall(
  generation: Exclude<AscendGeneration, "950">,
): { inputHW: [number, number]; lostColumns: number[] } {
  const spec = tbe5hdSpec(generation);
  const inW = spec.tensorC - 1;
  const table = linearIndexTable(inW, 2, true, 0);
  return { inputHW: [2, inW], lostColumns: lostColumns5hd(table.i0, inW, spec) };
}

/**
 * Runs the probe through `device`, which must run the native single launch (`deviceDefects:
 * "allow"`); A2/A3 with V2: `scalesH` 1 alone, so V2 falls back to the TBE kernel.
 *
 * @example
 * ```ts ignore
 * using allow = Device.open({ backend: "npu", deviceDefects: "allow" });
 * (await probeColumnLoss(allow, "a2")).reading; // "lossy" on the emulation
 * ```
 */
export async function probeColumnLoss(
  device: Device,
  generation: Exclude<AscendGeneration, "950">,
): Promise<ColumnLossProbe> {
  const { inputHW, lostColumns } = columnLossCall(generation);
  const [inH, inW] = inputHW;
  // Row r of the gradient: [a, b]; align corners sends column 0 to image column 0, column 1 to
  // the last one, each with weight 1, and keeps the rows.
  const gradient = [1, 2, 4, 8];
  using grad = device.tensor(gradient, [1, 1, 2, 2]);
  using result = upsampleBilinear2dBackward(grad, {
    inputSize: [1, 1, inH, inW],
    outputSize: [2, 2],
    alignCorners: true,
    scalesH: 1,
    scalesW: 0,
  });
  const values = await result.toFloat32Array();
  const column = (c: number): number[] => [values[c], values[inW + c]];
  const lastColumn = column(inW - 1);
  const exact = [gradient[1], gradient[3]];
  const first = column(0).every((v, r) => v === gradient[2 * r]);
  const reading = !first
    ? "neither"
    : lastColumn.every((v, r) => v === exact[r])
    ? "exact"
    : lostColumns.includes(1) && lastColumn.every((v) => v === 0)
    ? "lossy"
    : "neither";
  return { reading, inputHW, lostColumns, lastColumn };
}

/**
 * The probe as a doctor check on an NPU device of a TBE generation: opens the same NPU with
 * `deviceDefects: "allow"` for the one call.
 *
 * @example
 * ```ts ignore
 * console.log((await columnLossCheck(npu, "a2")).title);
 * ```
 */
export async function columnLossCheck(
  npu: Device,
  generation: Exclude<AscendGeneration, "950">,
): Promise<Check> {
  const { inputHW } = columnLossCall(generation);
  const what = `TBE column-loss probe (bilinear [2, ${inputHW[1]}] <- [2, 2], alignCorners, ` +
    `the native single launch)`;
  try {
    const backend = deviceInternals(npu).backend();
    if (!(backend instanceof NpuBackend)) throw new TypeError(`${npu.name} is not an NPU`);
    using allow = Device.open({
      backend: "npu",
      libDir: backend.runtime.libs.dir,
      deviceId: backend.deviceId,
      deviceDefects: "allow",
      warnings: "ignore",
    });
    const probe = await probeColumnLoss(allow, generation);
    const source = "resize_bilinear_v2_grad.py big_in_loop, losesColumns5hd";
    if (probe.reading === "neither") {
      return {
        status: "fail",
        title: `${what}: the last image column reads [${probe.lastColumn.join(", ")}], neither ` +
          `the lossy reading nor the exact one`,
        fix: "report it: the device computes something the TBE kernel's rules do not model",
      };
    }
    return {
      status: "ok",
      title: `${what}: this device follows the ${probe.reading} reading: ` +
        (probe.reading === "lossy"
          ? `gradient column ${probe.lostColumns.join(", ")} never reaches image column ` +
            `${inputHW[1] - 1} (${source}); the library avoids such calls by default ` +
            `(deviceDefects "avoid": the call transposed, or the route's passes)`
          : `every column arrives, although the source (${source}) says the kernel drops them; ` +
            `the library's avoidance (deviceDefects "avoid") gives the same result, and ` +
            `deviceDefects "allow" runs the native launch`),
    };
  } catch (error) {
    return checkFromError("warn", what, error, "see the error above");
  }
}
