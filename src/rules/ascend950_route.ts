/**
 * Which ResizeBilinearV2Grad kernel the Ascend 950 (arch35) runs for a bilinear call, and the
 * float32 scale it uses: the routing of the tiling (`SetTilingKey`, `IsMatchSimtDetermine`,
 * `SetSimtTilingKey`, `SetScales` in
 * image/resize_bilinear_v2_grad/op_host/arch35/resize_bilinear_v2_grad_tiling_arch35.cpp of CANN's
 * public `hicann/ops-cv`) and of the op_api files' RegBase branches. The kernels' tables are in
 * `ascend950_bilinear.ts`. In the tiling, "Src" is the result y (the library's `inputSize`) and
 * "Des" the gradient (`outputSize`); here `inSize` / `outSize` are the library's.
 *
 * @module
 */

import type { DType } from "../tensor/dtype.ts";
import type { BilinearApi } from "./ascend_a2.ts";
import type { UpsampleParams } from "./ops.ts";

/**
 * The NCHW kernels of ResizeBilinearV2Grad on the 950 (op_kernel/arch35/*.h): `"all-copy"`
 * (equal sizes: a copy), `"simt"` (a scatter with atomic adds into the result,
 * resize_bilinear_v2_grad_simt.h), `"determine"` (a gather whose source coordinate steps by a
 * running float sum, resize_bilinear_v2_grad_simt_determine.h) and `"determine-scales"` (a gather
 * with coordinates computed per output, resize_bilinear_v2_grad_simt_determine_scales.h).
 */
export type Bilinear950Kernel = "all-copy" | "simt" | "determine" | "determine-scales";

/** Every kernel the tiling may pick, the NHWC-only ones included (the C emulation's business). */
export type Bilinear950Route = Bilinear950Kernel | "point-copy" | "c-parallel";

/** What decides the 950's bilinear kernel besides the call's sizes, scales and alignCorners. */
export interface Bilinear950Options {
  /** The aclnn API: V2 (`aclnnUpsampleBilinear2dBackwardV2`) or V1 (default `"v2"`). */
  readonly api?: BilinearApi;
  /** Whether the context is deterministic (the tiling reads `GetDeterministic()`). */
  readonly deterministic: boolean;
  /** dtype of gradOutput (default: the call's `dtype`). */
  readonly gradDtype?: DType;
  /** dtype of the result (default: the call's `dtype`; V1 accepts float32 grads with 16-bit out). */
  readonly outDtype?: DType;
  /** Storage format (default `"NCHW"`: the library always tags tensors NCHW). */
  readonly format?: "NCHW" | "NHWC";
}

/** The kernel the 950 runs for a bilinear call, and the float32 scales (source per output) it uses. */
export interface Bilinear950Choice {
  /** The kernel. */
  readonly kernel: Bilinear950Route;
  /** `[scaleH, scaleW]` as the kernel receives them (tiling `SetScales`). */
  readonly scales: readonly number[];
  /** Whether the kernel adds into the result with atomics (order of additions unspecified). */
  readonly atomic: boolean;
}

const BYTES: Readonly<Record<DType, number>> = { float32: 4, float16: 2, bfloat16: 2 };
const MIN_C_BYTES = 128; // MIN_C_SIZE in resize_bilinear_v2_grad_tiling_arch35.cpp
const FLT_EPSILON = Math.fround(1e-6); // FLT_EPSILON there: 1e-6, not C's FLT_EPSILON

/**
 * The float32 scale (source per output) the tiling gives a kernel along one dimension (`SetScales`
 * in image/resize_bilinear_v2_grad/op_host/arch35/resize_bilinear_v2_grad_tiling_arch35.cpp):
 * with alignCorners `fl32(in - 1) / fl32(out - 1)`, or when `out <= 1` (or, for the gather
 * kernels, `in <= 1`) 0 for the scatter and `fl32(in) / fl32(out)` for the gathers; otherwise
 * `1.0f / fl32(scales)` when given (the op_api passes `(float)scales`; A2 uses
 * `(float)(1.0 / scales)`), else `fl32(in) / fl32(out)`.
 *
 * @example
 * ```ts
 * import { scale950 } from "./ascend950_route.ts";
 * scale950(7, 11, false, 1.7, true) === Math.fround(1 / Math.fround(1.7)); // true
 * scale950(4, 1, true, 0, false); // 0
 * ```
 */
export function scale950(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scales: number,
  gather: boolean,
): number {
  const ratio = Math.fround(Math.fround(inSize) / Math.fround(outSize));
  if (alignCorners) {
    if (gather) {
      return inSize > 1 && outSize > 1
        ? Math.fround(Math.fround(inSize - 1) / Math.fround(outSize - 1))
        : ratio;
    }
    return outSize > 1 ? Math.fround(Math.fround(inSize - 1) / Math.fround(outSize - 1)) : 0;
  }
  const given = Math.fround(scales);
  return given > 0 ? Math.fround(1 / given) : ratio;
}

/**
 * Which ResizeBilinearV2Grad kernel the 950 runs for a call, following the op_api and the tiling's
 * `SetTilingKey` (resize_bilinear_v2_grad_tiling_arch35.cpp), in order:
 * 1. `"all-copy"`: equal sizes and equal dtypes, scales and alignCorners ignored (V1 copies in its
 *    op_api instead, image/resize_bilinear_v2_grad/op_api/aclnn_upsample_bilinear_2d_backward.cpp);
 * 2. `"point-copy"`: NHWC, same dtypes, `C` of at least 128 bytes, integer ratios, no scales;
 * 3. a gather when `IsMatchSimtDetermine`: deterministic, or grads and result of different dtypes
 *    (V1 only), or neither align_corners nor half_pixel_centers (never: both op_apis pass
 *    `half_pixel_centers = !alignCorners`) — `"determine"` with alignCorners or when both scales
 *    are within 1e-6 of `fl32(in) / fl32(out)`, else `"determine-scales"`;
 * 4. `"c-parallel"` (atomic): NHWC with `C` of at least 128 bytes;
 * 5. the same gathers when a dimension is upsampled (its scatter scale in (0, 1));
 * 6. otherwise `"simt"`, atomic adds straight into the result in its dtype.
 * Both APIs reach it on the 950 (`IsRegBase()` in image/upsample_bilinear2d_grad/op_host/op_api/
 * aclnn_upsample_bilinear_2d_backward_v2.cpp and the V1 file) with the scales as given: no scale
 * check, no fallback.
 *
 * @example
 * ```ts
 * import { bilinearRoute950 } from "./ascend950_route.ts";
 * const call = { dtype: "float32", inputSize: [1, 1, 7, 7], outputSize: [11, 11], scales: [1.7, 0], alignCorners: false } as const;
 * bilinearRoute950(call, { deterministic: false }).kernel; // "determine-scales"
 * ```
 */
export function bilinearRoute950(
  call: Pick<UpsampleParams, "dtype" | "inputSize" | "outputSize" | "scales" | "alignCorners">,
  options: Bilinear950Options,
): Bilinear950Choice {
  const { inputSize, outputSize, scales, alignCorners } = call;
  const gradDtype = options.gradDtype ?? call.dtype, outDtype = options.outDtype ?? call.dtype;
  const nhwc = options.format === "NHWC";
  const inH = inputSize[2], inW = inputSize[3], outH = outputSize[0], outW = outputSize[1];
  const sameDtype = gradDtype === outDtype;
  const scaled = (gather: boolean): number[] => [
    scale950(inH, outH, alignCorners, scales[0], gather),
    scale950(inW, outW, alignCorners, scales[1], gather),
  ];
  if (inH === outH && inW === outW && sameDtype) {
    return { kernel: "all-copy", scales: scaled(options.deterministic), atomic: false };
  }
  const channels = inputSize[1];
  const wideC = nhwc && channels * BYTES[gradDtype] >= MIN_C_BYTES &&
    channels * BYTES[outDtype] >= MIN_C_BYTES;
  if (sameDtype && wideC && pointCopies(call)) {
    return { kernel: "point-copy", scales: scaled(false), atomic: false };
  }
  const gatherKernel = (s: number[]): Bilinear950Kernel => {
    if (alignCorners) return "determine";
    const fits = (input: number, output: number, scale: number): boolean =>
      Math.abs(Math.fround(Math.fround(Math.fround(input) / Math.fround(output)) - scale)) <
        FLT_EPSILON;
    return fits(inH, outH, s[0]) && fits(inW, outW, s[1]) ? "determine" : "determine-scales";
  };
  if (options.deterministic || !sameDtype) {
    const s = scaled(true);
    return { kernel: gatherKernel(s), scales: s, atomic: false };
  }
  if (wideC) return { kernel: "c-parallel", scales: scaled(false), atomic: true };
  const scatter = scaled(false);
  if (scatter.some((s) => s > 0 && s < 1)) {
    // The key is chosen with the scatter's scales, then SetScales(true) runs.
    return { kernel: gatherKernel(scatter), scales: scaled(true), atomic: false };
  }
  return { kernel: "simt", scales: scatter, atomic: true };
}

// IsMatchPointCopy (tiling): integer ratios (odd ones with half pixel centers), no scales.
function pointCopies(
  call: Pick<UpsampleParams, "inputSize" | "outputSize" | "scales" | "alignCorners">,
): boolean {
  const [, , inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  if (call.alignCorners) {
    return (outH === 1 && outW === 1) ||
      (outH > 1 && outW > 1 && (inH - 1) % (outH - 1) === 0 && (inW - 1) % (outW - 1) === 0);
  }
  if (Math.fround(call.scales[0]) > 0 || Math.fround(call.scales[1]) > 0) return false;
  if (inH % outH !== 0 || inW % outW !== 0) return false;
  return (inH / outH) % 2 === 1 && (inW / outW) % 2 === 1; // half_pixel_centers = !alignCorners
}
