/**
 * Comparing an NPU result with the device reference (the CPU backend with `numerics: "device"`):
 * every element must lie within a bound derived from the terms the device sums into it, which is
 * far smaller than any single term, so the index mapping is checked exactly (for gradients bounded
 * away from 0) while the device's own summation order and rounding are allowed.
 *
 * The bound (`src/rules/bound.ts`) of an element (docs/device-semantics.md, "Comparing with the device"), with
 * `u = 2^-24`, `m` the number of gradient terms that may reach it and `S` the sum of their |g|:
 * - nearest-exact: `2 m u S` (two float32 summations of the same `m` terms, any order);
 * - bilinear: `(2 (m + 2) u + δH + δW) S`, `δ = 4 u (inSize + 1)` per dimension for the weights
 *   (the kernel's coordinate arithmetic may round otherwise, e.g. fused multiply-add);
 *   terms whose coordinate lies within that of a cell boundary count for both cells;
 * - float16/bfloat16: plus one ulp of the dtype at the result's magnitude (each side rounds its
 *   float32 sum once, half an ulp each).
 *
 * @module
 */

import type { BilinearApi } from "../../src/rules/ascend_a2.ts";
import type { BoundOptions, DeviceProblem } from "../../src/rules/bound.ts";
import { generationOfSoc, type SocGeneration } from "../../src/rules/generation.ts";
import { Device, deviceInternals } from "../../src/device.ts";
import { opApiName } from "../../src/ffi/aclnn_call.ts";
import { NpuBackend } from "../../src/ffi/npu_backend.ts";
import { runParams } from "../../src/ops/run_params.ts";

export {
  type BoundOptions,
  compareWithDevice,
  deviceBounds,
  type DeviceComparison,
  type DeviceMismatch,
  type DeviceProblem,
} from "../../src/rules/bound.ts";

/** Options of {@link deviceReference}. */
export interface DeviceCompareOptions extends BoundOptions {
  /**
   * A CPU device to compute on (`numerics: "device"`, of the SoC whose rules apply); by default
   * one is opened and closed per call.
   */
  readonly device?: Device;
  /** The SoC whose rules the device opened here follows (`Device.open`'s `soc`; default A2/A3). */
  readonly soc?: string;
}

/** The device reference an NPU's results are checked against, as {@link referenceOf} picks it. */
export interface ReferenceChoice {
  /** The SoC whose rules apply: the override, else the one the NPU reports (null: none). */
  readonly soc: string | null;
  /** Its generation, whether the name is known, and why. */
  readonly target: SocGeneration;
  /**
   * Options for {@link deviceReference} and `compareWithDevice` (with the NPU's deterministic
   * mode): the bilinear API the reference follows (the 950's V1 runs V2's kernels, with the
   * scales), the generation, and `soc` when the name is one `Device.open` takes.
   */
  readonly options: DeviceCompareOptions;
}

/**
 * The reference for results of `npu`: the rules of `soc` (an override, e.g. `verify --soc`) or of the
 * SoC the runtime reports (`aclrtGetSocName`); an unknown name is taken as A2/A3, with the reason.
 *
 * @example
 * ```ts
 * import { Device } from "../../src/device.ts";
 * import { referenceOf } from "./compare.ts";
 * using cpu = Device.open({ backend: "cpu" });
 * referenceOf(cpu, "Ascend950PR_9599").target.generation; // "950"
 * ```
 */
export function referenceOf(npu: Device, soc?: string): ReferenceChoice {
  const name = soc ?? npu.soc ?? null;
  const target = generationOfSoc(name);
  const { generation, known } = target;
  const bilinearApi = generation === "950" ? "v2" : bilinearApiOf(npu);
  const options: DeviceCompareOptions = {
    bilinearApi,
    generation,
    deterministic: npu.deterministic,
    ...(known && name !== null ? { soc: name } : {}),
  };
  return { soc: name, target, options };
}

/**
 * Which bilinear API `device` runs: `"v1"` on an NPU whose CANN lacks
 * `aclnnUpsampleBilinear2dBackwardV2`, else `"v2"` (the CPU device reference follows V2).
 *
 * @example
 * ```ts
 * import { Device } from "../../src/device.ts";
 * import { bilinearApiOf } from "./compare.ts";
 * using cpu = Device.open({ backend: "cpu" });
 * bilinearApiOf(cpu); // "v2"
 * ```
 */
export function bilinearApiOf(device: Device): BilinearApi {
  const backend = deviceInternals(device).backend();
  if (!(backend instanceof NpuBackend)) return "v2";
  return opApiName(backend.runtime.libs, "bilinear2d").endsWith("V2") ? "v2" : "v1";
}

/**
 * The device reference's result for `problem` and `gradOutput` (row-major float32 values, already
 * representable in `problem.dtype`), computed on a CPU device with `numerics: "device"` (opened
 * and closed here; `"v1"` bilinear runs as V1 does, from the sizes alone), in deterministic mode
 * when `options.deterministic` says so (the 950's gathers; elsewhere the deterministic route of
 * calls whose single launch adds in a free order).
 *
 * @throws {RangeError} where the device rejects the call or leaves its result undefined
 * @example
 * ```ts
 * import { deviceReference } from "./compare.ts";
 * const problem = { op: "nearestExact1d", dtype: "float32", inputSize: [1, 1, 2], outputSize: [41], scales: [0], alignCorners: false } as const;
 * await deviceReference(problem, new Float32Array(41).fill(1)); // Float32Array [20, 21]
 * ```
 */
export async function deviceReference(
  problem: DeviceProblem,
  gradOutput: Float32Array,
  options: DeviceCompareOptions = {},
): Promise<Float32Array> {
  // V1 runs ResizeBilinearV2Grad from the sizes wherever they differ (a copy where they do not);
  // on the 950 it runs V2's kernels with the scales.
  const v1 = problem.op === "bilinear2d" && options.bilinearApi === "v1" &&
    options.generation !== "950";
  const numerics = "device";
  const given = options.device;
  if (given !== undefined && (given.backend !== "cpu" || given.numerics !== numerics)) {
    throw new TypeError(
      `deviceReference: options.device must be a CPU device with numerics "${numerics}", got ` +
        `${given.backend} with numerics "${given.numerics}"`,
    );
  }
  const soc = numerics === "device" ? options.soc : undefined;
  using opened = given === undefined
    ? Device.open({ backend: "cpu", numerics, threads: 1, ...(soc === undefined ? {} : { soc }) })
    : undefined;
  const device = given ?? opened!;
  const { op, dtype, inputSize, outputSize, alignCorners } = problem;
  const scales = v1 ? v1Scales(problem, options.generation ?? "a2") : problem.scales;
  using grad = device.tensor(gradOutput, [inputSize[0], inputSize[1], ...outputSize], { dtype });
  // Deterministic mode picks the kernel on the 950 and the deterministic route elsewhere.
  using result = runParams(grad, { op, inputSize, outputSize, scales, alignCorners }, {
    deterministic: options.deterministic ?? false,
  });
  return await result.toFloat32Array();
}

/**
 * Scales that make the V2 device reference run what V1 runs for a bilinear call: V1 derives both
 * scales from the sizes (image/resize_bilinear_v2_grad/op_api/aclnn_upsample_bilinear_2d_backward.cpp:
 * a copy with equal sizes, else ResizeBilinearV2Grad). On A2/A3 V2 runs that same kernel from the
 * sizes when a scale is given on one dimension only (`bilinearRoute`: both must fit), so the
 * reference gets a fitting H scale alone; equal sizes and the 910/310P (whose V2 ignores scales)
 * get none.
 *
 * @example
 * ```ts
 * import { v1Scales } from "./compare.ts";
 * v1Scales({ inputSize: [1, 1, 4, 4], outputSize: [8, 6] }, "a2"); // [2.125, 0]
 * v1Scales({ inputSize: [1, 1, 4, 4], outputSize: [4, 4] }, "a2"); // [0, 0]
 * ```
 */
export function v1Scales(
  problem: Pick<DeviceProblem, "inputSize" | "outputSize">,
  generation: SocGeneration["generation"],
): readonly number[] {
  const [, , inH, inW] = problem.inputSize;
  const [outH, outW] = problem.outputSize;
  if (generation !== "a2" || (inH === outH && inW === outW)) return [0, 0];
  // floor(inH * (outH + 0.5) / inH) = outH: the validation's rule holds, the route's pair fails.
  return [(outH + 0.5) / inH, 0];
}
