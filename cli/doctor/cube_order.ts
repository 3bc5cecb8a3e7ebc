/**
 * The Cube-order probe of an Atlas A2/A3 NPU: which reading of the order inside a Cube matmul the
 * device follows, as the device reference's `cubeOrder` option names them. The kernels
 * UpsampleNearestExact2dGrad, UpsampleBilinear2dGrad (V2's own kernel) and the forward
 * UpsampleBilinear2d multiply by weight matrices on the Cube unit (hicann/ops-cv
 * `image/upsample_nearest_exact2d_grad/op_kernel/upsample_nearest_exact2d_grad_kernel.h`,
 * `image/upsample_bilinear2d_grad/op_kernel/upsample_bilinear2d_grad_kernel.h`,
 * `image/upsample_bilinear2d/op_kernel/upsample_bilinear2d_kernel.h`: a W pass then an H pass);
 * the order of the additions inside a matmul is the hardware's and undocumented.
 *
 * The probe runs three float32 calls on the NPU with fixed full-mantissa values, so that the order
 * of the additions shows in the bits: a nearest-exact 2d backward, a bilinear backward on V2's own
 * kernel (both scales given and fitting; left out on a CANN without V2, whose bilinear runs the TBE
 * kernel) and a bilinear forward with `alignCorners` (coordinates `step * o`, the same with or
 * without fused multiply-adds). It compares the backward results with the CPU device reference
 * opened with `cubeOrder: "pytorch"` and with `"ascending"` (the two readings differ on both), and
 * the forward result with the reference (one reading: two float32 passes). The device follows
 * `"ascending"` when every result equals that reading bit for bit, `"pytorch"` when every backward
 * result equals PyTorch's order, else neither: then the reference stays within the bound.
 *
 * @module
 */

import { Device } from "../../src/device.ts";
import { upsampleBilinear2d } from "../../src/ops/forward.ts";
import { runParams } from "../../src/ops/run_params.ts";
import { generationOfSoc } from "../../src/rules/generation.ts";
import { bilinearApiOf } from "../verify/compare.ts";
import { type Check, checkFromError } from "./report.ts";

/** The readings of the order inside A2/A3's Cube matmuls (`Device.open`'s `cubeOrder`). */
export type CubeOrder = "pytorch" | "ascending";

/** One probe call: what it is and how many of its elements differ from each reading. */
export interface CubeOrderCall {
  /** The call, e.g. `nearest-exact 2d backward [1, 2, 5, 7] <- [11, 16]`. */
  readonly what: string;
  /** Elements of the result. */
  readonly elements: number;
  /** Elements whose bits differ from the `"ascending"` reading. */
  readonly ascending: number;
  /** Elements whose bits differ from the `"pytorch"` reading (null: the forward, one reading). */
  readonly pytorch: number | null;
}

/** What {@link probeCubeOrder} found. */
export interface CubeOrderProbe {
  /** The reading every result follows bit for bit, or undefined: neither. */
  readonly follows: CubeOrder | undefined;
  /** Per call, the elements that differ from each reading. */
  readonly calls: readonly CubeOrderCall[];
}

const GRAD_NEAREST = { inputSize: [1, 2, 5, 7], outputSize: [11, 16] } as const;
const GRAD_BILINEAR = { inputSize: [1, 2, 5, 7], outputSize: [10, 14], scales: [2, 2] } as const;
const FORWARD = { inputSize: [1, 2, 4, 6], outputSize: [10, 15], scale: 2.5 } as const;

// Fixed float32 values in (-1, 1) with full mantissas (a linear congruential sequence).
function probeValues(count: number, seed: number): Float32Array {
  let state = seed >>> 0;
  return Float32Array.from({ length: count }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return Math.fround(state / 2 ** 31 - 1);
  });
}

type Run = (device: Device) => Promise<Float32Array>;

function backward(
  op: "nearestExact2d" | "bilinear2d",
  inputSize: readonly number[],
  outputSize: readonly number[],
  scales: readonly number[],
): Run {
  const values = probeValues(inputSize[0] * inputSize[1] * outputSize[0] * outputSize[1], 29);
  return async (device) => {
    using grad = device.tensor(values, [inputSize[0], inputSize[1], ...outputSize]);
    using result = runParams(grad, { op, inputSize, outputSize, scales, alignCorners: false }, {
      deterministic: false,
    });
    return await result.toFloat32Array();
  };
}

function forward(): Run {
  const { inputSize, outputSize, scale } = FORWARD;
  const values = probeValues(inputSize.reduce((a: number, b) => a * b, 1), 31);
  return async (device) => {
    using x = device.tensor(values, [...inputSize]);
    using y = upsampleBilinear2d(x, {
      outputSize: [...outputSize],
      scalesH: scale,
      scalesW: scale,
      alignCorners: true,
    });
    return await y.toFloat32Array();
  };
}

function differing(a: Float32Array, b: Float32Array): number {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  let count = 0;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) count++;
  return count;
}

/**
 * Runs the probe on `npu` (an Atlas A2/A3 NPU), against the CPU device reference of `soc` (default:
 * the SoC the NPU reports, where `Device.open` knows it).
 *
 * @throws {AclError} when a probe call fails on the NPU
 * @example
 * ```ts ignore
 * const { follows } = await probeCubeOrder(npu); // "ascending" on the host emulation
 * ```
 */
export async function probeCubeOrder(npu: Device, soc?: string): Promise<CubeOrderProbe> {
  const name = soc ?? npu.soc;
  const known = name !== undefined && generationOfSoc(name).known;
  const open = (cubeOrder: CubeOrder): Device =>
    Device.open({
      backend: "cpu",
      numerics: "device",
      threads: 1,
      warnings: "ignore",
      cubeOrder,
      ...(known ? { soc: name } : {}),
    });
  using pytorch = open("pytorch");
  using ascending = open("ascending");
  const [n, b] = [GRAD_NEAREST, GRAD_BILINEAR];
  const runs: Array<[string, Run, boolean]> = [
    [
      `nearest-exact 2d backward [${n.inputSize.join(", ")}] <- [${n.outputSize.join(", ")}]`,
      backward("nearestExact2d", n.inputSize, n.outputSize, [0, 0]),
      true,
    ],
  ];
  if (bilinearApiOf(npu) === "v2") {
    runs.push([
      `bilinear backward [${b.inputSize.join(", ")}] <- [${b.outputSize.join(", ")}], ` +
      `scales ${b.scales.join(", ")} (UpsampleBilinear2dGrad)`,
      backward("bilinear2d", b.inputSize, b.outputSize, b.scales),
      true,
    ]);
  }
  runs.push([
    `bilinear forward [${FORWARD.inputSize.join(", ")}] -> [${FORWARD.outputSize.join(", ")}], ` +
    `scales ${FORWARD.scale}, alignCorners`,
    forward(),
    false,
  ]);
  const calls: CubeOrderCall[] = [];
  for (const [what, run, both] of runs) {
    const device = await run(npu);
    calls.push({
      what,
      elements: device.length,
      ascending: differing(device, await run(ascending)),
      pytorch: both ? differing(device, await run(pytorch)) : null,
    });
  }
  const follows = calls.every((c) => c.ascending === 0)
    ? "ascending"
    : calls.every((c) => c.pytorch === null || c.pytorch === 0)
    ? "pytorch"
    : undefined;
  return { follows, calls };
}

/**
 * The probe's per-call lines: the elements that differ from each reading.
 *
 * @example
 * ```ts
 * import { cubeOrderDetail } from "./cube_order.ts";
 * cubeOrderDetail({ follows: "ascending", calls: [{ what: "x", elements: 4, ascending: 0, pytorch: 2 }] });
 * // ["x: differs from \"ascending\" in 0 of 4 elements, from \"pytorch\" in 2"]
 * ```
 */
export function cubeOrderDetail(probe: CubeOrderProbe): string[] {
  return probe.calls.map((c) =>
    `${c.what}: differs from "ascending" in ${c.ascending} of ${c.elements} elements` +
    (c.pytorch === null ? " (one reading)" : `, from "pytorch" in ${c.pytorch}`)
  );
}

/**
 * doctor's check of the Cube order (Atlas A2/A3): which reading the device follows, the device
 * reference's option and verify's flag that reproduce it, and per call the elements that differ.
 *
 * @example
 * ```ts ignore
 * console.log((await cubeOrderCheck(npu)).title);
 * ```
 */
export async function cubeOrderCheck(npu: Device): Promise<Check> {
  const what = "Cube order probe (A2/A3's Cube matmuls)";
  let probe: CubeOrderProbe;
  try {
    probe = await probeCubeOrder(npu);
  } catch (error) {
    return checkFromError("warn", what, error, "see the error above");
  }
  const detail = cubeOrderDetail(probe);
  if (probe.follows === undefined) {
    return {
      status: "info",
      title: `${what}: this device follows neither reading bit for bit: its Cube kernels ` +
        `(UpsampleNearestExact2dGrad, UpsampleBilinear2dGrad, the forward UpsampleBilinear2d) ` +
        `stay within the device reference's bound (cubeOrder "pytorch", verify --cube-order pytorch)`,
      detail,
    };
  }
  const reading = probe.follows === "ascending"
    ? "W pass then H pass, each output's terms in ascending order"
    : "PyTorch's order of the additions";
  const verify = probe.follows === "ascending"
    ? "deno task verify --cube-order ascending (its default, auto, runs this probe): the Cube " +
      "kernels compared bit for bit"
    : "deno task verify --cube-order pytorch: the Cube kernels compared within the bound";
  return {
    status: "ok",
    title: `${what}: this device follows the reading "${probe.follows}" (${reading}): device ` +
      `reference cubeOrder: "${probe.follows}"; ${verify}`,
    detail,
  };
}
