/**
 * The Ascend A2/A3 device's index rules as per-dimension tables, next to PyTorch's in `pytorch.ts`:
 * the CPU backend with `numerics: "device"` runs its usual kernels on these tables. Each rule names
 * the file of the public CANN operator source (repository `hicann/ops-cv`) it was read from;
 * docs/device-semantics.md states them in prose.
 *
 * @module
 */

import type { UpsampleParams } from "./ops.ts";
import { identityLinearTable, type LinearTable } from "./pytorch.ts";

/** Which bilinear aclnn API the device runs: V2 (current CANN) or the older V1. */
export type BilinearApi = "v2" | "v1";

// The kernels skip a pass whose float32 scale is within 1e-6 of 1 (FloatEqual in
// image/upsample_nearest_exact2d_grad/op_kernel/upsample_nearest_exact2d_grad_kernel.h and
// image/upsample_bilinear2d_grad/op_host/upsample_bilinear2d_grad_tiling.cpp).
const SKIP_EPSILON = Math.fround(1e-6);

function skipsPass(scale: number): boolean {
  return Math.abs(Math.fround(scale - 1)) < SKIP_EPSILON;
}

/**
 * The float32 scale of the device's nearest-exact for one dimension: `fl32(scales)` when a scale
 * is given, else `fl32(outSize) / fl32(inSize)` — output per input, the reciprocal of PyTorch's.
 * (`compute_scale_value` in image/upsample_nearest_exact2d_grad/op_host/
 * upsample_nearest_exact2d_grad_tiling.h; the op_api casts the double scale to float. The 1d op
 * runs the 2d kernel with H = 1 and scale_h = 1: op_api aclnn_upsample_nearest_exact1d_backward.cpp.)
 *
 * @example
 * ```ts
 * import { a2NearestScale } from "./ascend_a2.ts";
 * a2NearestScale(2, 41, 0); // 20.5
 * a2NearestScale(27, 8, 0.3) === Math.fround(0.3); // true
 * ```
 */
export function a2NearestScale(inSize: number, outSize: number, scales: number): number {
  if (scales > 0) return Math.fround(scales);
  return Math.fround(Math.fround(outSize) / Math.fround(inSize));
}

/**
 * The device's nearest-exact range table of one dimension: input `i` sums the outputs
 * `[starts[i], starts[i + 1])`, `starts[i] = min(ceil(fl32(fl32(i * s) - 0.5)), outSize)`
 * (`calculateIntermediateTensorX/Y` in image/upsample_nearest_exact2d_grad/op_kernel/
 * upsample_nearest_exact2d_grad_kernel.h: ArithProgression, Muls by s, Adds -0.5, Ceil, Mins
 * with the size, all in float32). A pass whose scale is within 1e-6 of 1 is skipped: the
 * identity.
 *
 * @throws {RangeError} when the pass is skipped although the sizes differ (the device's result is
 * then undefined), or when some outputs belong to no input
 * @example
 * ```ts
 * import { a2NearestStarts } from "./ascend_a2.ts";
 * a2NearestStarts(2, 41, 0); // Int32Array [0, 20, 41]: output 20 goes to input 1
 * ```
 */
export function a2NearestStarts(inSize: number, outSize: number, scales: number): Int32Array {
  const s = a2NearestScale(inSize, outSize, scales);
  const starts = new Int32Array(inSize + 1);
  if (skipsPass(s)) {
    checkSkippedPass(inSize, outSize, s);
    for (let i = 0; i <= inSize; i++) starts[i] = i;
    return starts;
  }
  for (let i = 0; i <= inSize; i++) {
    const start = Math.ceil(Math.fround(Math.fround(i * s) - 0.5));
    starts[i] = start < outSize ? start : outSize;
  }
  // Never seen for sizes the library accepts (out = floor(in * scales), ratio <= 50); the kernels
  // would drop those gradients, which the CPU kernels cannot express.
  if (starts[inSize] !== outSize) {
    throw new RangeError(
      `nearest-exact ${inSize} -> ${outSize} (scale ${scales}): the device's ranges end at output ` +
        `${starts[inSize]} and drop the rest; not reproducible by the device reference`,
    );
  }
  return starts;
}

function checkSkippedPass(inSize: number, outSize: number, s: number): void {
  if (inSize !== outSize) {
    throw new RangeError(
      `the device skips a pass whose scale ${s} is within 1e-6 of 1 although its sizes differ ` +
        `(${inSize} -> ${outSize}); its result is undefined there, so the device reference refuses it`,
    );
  }
}

/**
 * The forward index table (output -> input) of a range table that covers every output.
 *
 * @example
 * ```ts
 * import { indexFromStarts } from "./ascend_a2.ts";
 * indexFromStarts(Int32Array.of(0, 1, 3)); // Int32Array [0, 1, 1]
 * ```
 */
export function indexFromStarts(starts: Int32Array): Int32Array {
  const inSize = starts.length - 1;
  const index = new Int32Array(starts[inSize]);
  for (let i = 0; i < inSize; i++) index.fill(i, starts[i], starts[i + 1]);
  return index;
}

/**
 * The device's bilinear table of one dimension as the V2 kernel builds it
 * (image/upsample_bilinear2d_grad/op_kernel/upsample_bilinear2d_grad_kernel.h,
 * `calculateIntermediateTensorX/Y` and `setRadioValueW/H`): scale `s` = `fl32(inSize - 1) /
 * fl32(outSize - 1)` with alignCorners (0 when `outSize == 1`), else `fl32(1 / scales)` when given,
 * else `fl32(inSize) / fl32(outSize)` (`compute_scale_value` in op_host/
 * upsample_bilinear2d_grad_tiling.cpp, scales from op_api aclnn_upsample_bilinear_2d_backward_v2.cpp);
 * centre `fl32(o * s)` (alignCorners) or `max(fl32(fl32(fl32(o + 0.5) * s) - 0.5), 0)`; lower index
 * `floor`, weights `1 - λ` and `λ`; the last input takes weight 1. Equal sizes are the identity
 * only when `s` is within 1e-6 of 1 (the pass is skipped), not whenever the sizes are equal.
 *
 * @throws {RangeError} when the pass is skipped although the sizes differ
 * @example
 * ```ts
 * import { a2LinearTable } from "./ascend_a2.ts";
 * a2LinearTable(3, 3, false, 1.3).i0; // Int32Array [0, 0, 1]: not the identity
 * ```
 */
export function a2LinearTable(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scales: number,
): LinearTable {
  let s: number;
  if (alignCorners) {
    s = outSize > 1 ? Math.fround(Math.fround(inSize - 1) / Math.fround(outSize - 1)) : 0;
  } else if (scales > 0) s = Math.fround(1 / scales);
  else s = Math.fround(Math.fround(inSize) / Math.fround(outSize));
  if (skipsPass(s)) {
    checkSkippedPass(inSize, outSize, s);
    return identityLinearTable(outSize);
  }
  const i0 = new Int32Array(outSize);
  const i1 = new Int32Array(outSize);
  const l0 = new Float32Array(outSize);
  const l1 = new Float32Array(outSize);
  for (let o = 0; o < outSize; o++) {
    let c = alignCorners
      ? Math.fround(o * s)
      : Math.fround(Math.fround(Math.fround(o + 0.5) * s) - 0.5);
    if (c < 0) c = 0;
    const lo = Math.floor(c);
    const lambda = Math.fround(c - lo);
    if (lo >= inSize - 1) {
      i0[o] = i1[o] = inSize - 1;
      l0[o] = 1;
      l1[o] = 0;
    } else {
      i0[o] = lo;
      i1[o] = lo + 1;
      l0[o] = Math.fround(1 - lambda);
      l1[o] = lambda;
    }
  }
  return { i0, i1, l0, l1 };
}

/** How the device computes one bilinear call: which kernel, and the scales it uses. */
export interface BilinearRoute {
  /**
   * `"kernel"`: the V2 op's own kernel (UpsampleBilinear2dGrad), with the scales below;
   * `"sizes"`: ResizeBilinearV2Grad, or V1, which derive both scales from the sizes (and V1 copies
   * when all sizes are equal) — PyTorch's table with the scales dropped.
   */
  readonly kernel: "kernel" | "sizes";
  /** The scales that kernel uses (`[0, 0]` for `"sizes"`). */
  readonly scales: readonly number[];
}

const NO_SCALES: readonly number[] = Object.freeze([0, 0]);

/**
 * Which bilinear kernel the device runs for a call, following the routing of op_api
 * `aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize` (image/upsample_bilinear2d_grad/op_host/
 * op_api/aclnn_upsample_bilinear_2d_backward_v2.cpp, A2/A3 = DAV_2201): its own kernel when input
 * and output sizes are all equal, or when every given scale fits (a scale on either dimension
 * makes BOTH need `out == floor(in * scale)`, so a scale on one dimension alone fails) and both
 * `1 / scale` (or `in / out`) are >= 0.01; otherwise ResizeBilinearV2Grad from the sizes.
 * V1 (image/resize_bilinear_v2_grad/op_api/aclnn_upsample_bilinear_2d_backward.cpp) copies equal
 * sizes and otherwise always runs ResizeBilinearV2Grad: the sizes decide.
 *
 * @example
 * ```ts
 * import { bilinearRoute } from "./ascend_a2.ts";
 * const call = { inputSize: [1, 1, 4, 4], outputSize: [8, 8], scales: [2, 0], alignCorners: false };
 * bilinearRoute(call, "v2"); // { kernel: "sizes", scales: [0, 0] }: one scale only
 * ```
 */
export function bilinearRoute(
  call: Pick<UpsampleParams, "inputSize" | "outputSize" | "scales">,
  api: BilinearApi,
): BilinearRoute {
  const { inputSize, outputSize, scales } = call;
  if (api === "v1") return { kernel: "sizes", scales: NO_SCALES };
  const sameSizes = inputSize[2] === outputSize[0] && inputSize[3] === outputSize[1];
  if (sameSizes) return { kernel: "kernel", scales };
  let scalesFit = true, ratiosFit = true;
  const anyScale = Math.abs(scales[0]) > 1e-9 || Math.abs(scales[1]) > 1e-9;
  for (let d = 0; d < 2; d++) {
    const input = inputSize[2 + d], output = outputSize[d], scale = scales[d];
    if (anyScale && output !== Math.floor(input * scale)) scalesFit = false;
    if ((scale > 0 ? 1 / scale : input / output) < 0.01) ratiosFit = false;
  }
  return scalesFit && ratiosFit
    ? { kernel: "kernel", scales }
    : { kernel: "sizes", scales: NO_SCALES };
}

/**
 * Throws where the device rejects an empty call: the 1d op with N or C = 0 (aclnn status 161002:
 * its parameter checks, which require N > 0 and C > 0, run before its empty-tensor shortcut, in
 * image/upsample_nearest_exact2d_grad/op_host/op_api/aclnn_upsample_nearest_exact1d_backward.cpp).
 * The 2d ops return before any check with nothing launched (op_api
 * aclnn_upsample_nearest_exact2d_backward.cpp; bilinear V2 after checks that ignore N and C).
 * The same on Ascend 950: those op_api files check and return in the same order on RegBase, and
 * bilinear V1 (image/resize_bilinear_v2_grad/op_api/aclnn_upsample_bilinear_2d_backward.cpp)
 * checks only H and W before its empty shortcut.
 *
 * @throws {RangeError} for a 1d call with N or C = 0
 * @example
 * ```ts
 * import { checkAscendEmpty } from "./ascend_a2.ts";
 * checkAscendEmpty({ op: "nearestExact2d", inputSize: [0, 2, 4, 4] }); // fine: an empty result
 * ```
 */
export function checkAscendEmpty(call: Pick<UpsampleParams, "op" | "inputSize">): void {
  const { op, inputSize } = call;
  if (op === "nearestExact1d" && inputSize[0] * inputSize[1] === 0) {
    throw new RangeError(
      `upsampleNearestExact1dBackward: the device rejects N or C = 0 (aclnn status 161002: its ` +
        `checks require N > 0 and C > 0 before the empty-tensor shortcut), got inputSize ` +
        `[${inputSize.join(", ")}]`,
    );
  }
}
