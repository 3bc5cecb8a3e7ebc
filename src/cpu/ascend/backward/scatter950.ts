/**
 * The Ascend 950's atomic SIMT scatter of ResizeBilinearV2Grad (SIMT_NCHW; `hicann/ops-cv`
 * `image/resize_bilinear_v2_grad/op_kernel/arch35/resize_bilinear_v2_grad_simt.h` Process,
 * InitOutput, SimtCompute): the result zeroed, then one thread per gradient element adds its four
 * terms `T((wx * wy) * g)` (rounded to the result's dtype) atomically in the result's dtype, each
 * add rounded there, in the order 00, 01, 10, 11. Between threads the source fixes no order: the
 * reference visits the elements in the permutation the host emulation draws for a launch seed
 * (`native/src/opapi/resize_scatter_950.c`, Fisher-Yates with splitmix64), by default the first
 * atomic launch after `aclemuSetAtomicSeed(0)` (`REFERENCE_LAUNCH_SEED`). Where no cell takes more
 * than two nonzero terms every order gives these bits (`exactness.ts`).
 *
 * @module
 */

import { scatterTaps950 } from "../../../rules/ascend950_scatter.ts";
import { bilinearRoute950 } from "../../../rules/ascend950_route.ts";
import type { AscendTarget } from "../../../rules/numerics.ts";
import type { UpsampleParams } from "../../../rules/ops.ts";
import { type DType, roundToDType } from "../../../tensor/dtype.ts";
import type { BilinearBackwardArgs } from "../../types.ts";
import { launchPermutation, REFERENCE_LAUNCH_SEED } from "./tbe_flush.ts";
import { type PlaneSizes, planeSizesOf, runOnPlanes } from "./planes.ts";

const f = Math.fround;

/** One scatter launch. */
export interface Scatter950Launch extends PlaneSizes {
  /** `[scaleH, scaleW]` of the tiling (SetScales(false)). */
  readonly scales: readonly number[];
  /** Align-corners coordinates (else half-pixel centres). */
  readonly alignCorners: boolean;
  /** Whether the coordinate's multiply-add is fused. */
  readonly fma: boolean;
  /** The result's dtype: every term and add rounds to it. */
  readonly dtype: DType;
  /** The launch's order (default {@link REFERENCE_LAUNCH_SEED}). */
  readonly seed?: bigint;
}

/**
 * The scatter on `planes` contiguous float32 gradient planes, giving the result planes (values of
 * the result's dtype, as float32).
 *
 * @example
 * ```ts
 * import { scatter950 } from "./scatter950.ts";
 * const launch = { inH: 1, inW: 2, outH: 1, outW: 1, scales: [1, 2], alignCorners: false, fma: true, dtype: "float32" } as const;
 * scatter950(new Float32Array([3]), 1, launch); // Float32Array [1.5, 1.5]
 * ```
 */
export function scatter950(
  grad: Float32Array,
  planes: number,
  launch: Scatter950Launch,
): Float32Array {
  const { inH, inW, outH, outW, dtype } = launch;
  const half = !launch.alignCorners;
  const ty = scatterTaps950(outH, inH, launch.scales[0], half, launch.fma);
  const tx = scatterTaps950(outW, inW, launch.scales[1], half, launch.fma);
  const result = new Float32Array(planes * inH * inW);
  const plane = outH * outW;
  const order = launchPermutation(planes * plane, launch.seed ?? REFERENCE_LAUNCH_SEED);
  for (const e of order) {
    const p = Math.floor(e / plane), h = Math.floor((e % plane) / outW), w = e % outW;
    const v = grad[e];
    const base = p * inH * inW;
    // The four taps in the kernel's order: (lo, lo), (lo, hi), (hi, lo), (hi, hi).
    const rowLo = base + ty.lo[h] * inW, rowHi = base + ty.hi[h] * inW;
    addTerm(result, rowLo + tx.lo[w], tx.wLo[w], ty.wLo[h], v, dtype);
    addTerm(result, rowLo + tx.hi[w], tx.wHi[w], ty.wLo[h], v, dtype);
    addTerm(result, rowHi + tx.lo[w], tx.wLo[w], ty.wHi[h], v, dtype);
    addTerm(result, rowHi + tx.hi[w], tx.wHi[w], ty.wHi[h], v, dtype);
  }
  return result;
}

// One atomic add: the term `(wx * wy) * v` rounded to the result's dtype, added in that dtype.
function addTerm(
  result: Float32Array,
  at: number,
  wx: number,
  wy: number,
  v: number,
  dtype: DType,
): void {
  const term = roundToDType(dtype, f(f(wx * wy) * v));
  result[at] = roundToDType(dtype, f(result[at] + term));
}

/**
 * The scatter launch of a 950 bilinear call, or null when the tiling picks another kernel.
 *
 * @example
 * ```ts
 * import { scatter950LaunchOf } from "./scatter950.ts";
 * const call = { op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 8, 8], outputSize: [4, 4], scales: [0, 0], alignCorners: false, deterministic: false } as const;
 * scatter950LaunchOf(call, { generation: "950", bilinearApi: "v2", fma: true })?.scales; // [2, 2]
 * ```
 */
export function scatter950LaunchOf(
  call: UpsampleParams & { readonly deterministic: boolean },
  target: AscendTarget,
): Scatter950Launch | null {
  const route = bilinearRoute950(call, {
    api: target.bilinearApi,
    deterministic: call.deterministic,
  });
  if (route.kernel !== "simt") return null;
  return {
    ...planeSizesOf(call),
    scales: route.scales,
    alignCorners: call.alignCorners,
    fma: target.fma,
    dtype: call.dtype,
  };
}

/**
 * Runs a scatter launch for a bilinear call on host views (any strides, any dtype).
 *
 * @example
 * ```ts
 * import { runScatter950Cpu } from "./scatter950.ts";
 * const gradOutput = { data: Float32Array.of(3), dtype: "float32", strides: [1, 1, 1, 1], offset: 0 } as const;
 * const out = { data: new Float32Array(2), dtype: "float32", strides: [2, 2, 2, 1], offset: 0 } as const;
 * const args = { gradOutput, out, inputSize: [1, 1, 1, 2], outputSize: [1, 1], scales: [0, 0], alignCorners: false };
 * runScatter950Cpu(args, { inH: 1, inW: 2, outH: 1, outW: 1, scales: [1, 2], alignCorners: false, fma: true, dtype: "float32" });
 * ```
 */
export function runScatter950Cpu(args: BilinearBackwardArgs, launch: Scatter950Launch): void {
  runOnPlanes(args, launch, (grad, planes) => scatter950(grad, planes, launch));
}
