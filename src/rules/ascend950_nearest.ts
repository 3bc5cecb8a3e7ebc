/**
 * The Ascend 950 (arch35) nearest-exact rule as per-dimension range tables, consumed by the same
 * CPU kernels as PyTorch's and the A2/A3 rule. Paths are in CANN's public operator source
 * (`hicann/ops-cv`); docs/device-semantics.md ("Ascend 950") states the rules in prose.
 *
 * What the 950 kernel computes (image/upsample_nearest_exact2d_grad/op_kernel/arch35/
 * upsample_nearest_exact2d_grad_simt_base.h, `ComputeOrig`, `ComputeForSplitNchw/Hw/Chw`): one
 * SIMT thread per result element gathers its output range, rows then columns ascending, into a
 * float32 accumulator starting at 0, and casts once to the dtype: float16/bfloat16 are read
 * natively (the op_api casts to float32 only when not RegBase:
 * op_host/op_api/aclnn_upsample_nearest_exact2d_backward.cpp, `IsRegBase`). That is exactly the
 * order and rounding of the CPU gather (`src/cpu/pytorch/backward/nearest_exact.ts`), so this rule is bit-exact
 * once the ranges match; the ranges are the A2 rule's without its 1e-6 pass skip.
 *
 * @module
 */

import { mulAddF32 } from "./float32.ts";

/**
 * The float32 scale of the 950 kernel for one dimension: `fl32(scales)` when given, else
 * `fl32(outSize) / fl32(inSize)`, output per input (`ComputeScales` in
 * image/upsample_nearest_exact2d_grad/op_host/upsample_nearest_exact2d_grad_tiling_arch35.cpp:
 * `inH / outH` of the op, whose "input" is gradOutput; the op_api passes `(float)scales`, and the
 * 1d op_api passes `scale_h = 1` for its single row).
 *
 * @example
 * ```ts
 * import { nearestScale950 } from "./ascend950_nearest.ts";
 * nearestScale950(6, 1, 0) === Math.fround(1 / 6); // true
 * ```
 */
export function nearestScale950(inSize: number, outSize: number, scales: number): number {
  if (scales > 0) return Math.fround(scales);
  return Math.fround(Math.fround(outSize) / Math.fround(inSize));
}

/**
 * Whether the 950 runs its byte copy (`isDataCopy` in `CalTilingData`,
 * upsample_nearest_exact2d_grad_tiling_arch35.cpp): every spatial size equal and every float32
 * scale within 1e-8 of 1 (`EPSILON = 1e-8f`; only `1.0f` itself is that close). The gather with
 * scale 1 gives the same values, except that a copy keeps `-0` (the gather's `0 + (-0)` is `+0`)
 * and NaN payloads; the CPU kernels compute the gather, so those two differ in sign and payload
 * only.
 *
 * @example
 * ```ts
 * import { nearestCopies950 } from "./ascend950_nearest.ts";
 * nearestCopies950([1, 1, 4, 4], [4, 4], [0, 0]); // true
 * nearestCopies950([1, 1, 4, 4], [4, 4], [1.0000001, 0]); // false: a gather with that scale
 * ```
 */
export function nearestCopies950(
  inputSize: readonly number[],
  outputSize: readonly number[],
  scales: readonly number[],
): boolean {
  const spatial = outputSize.length;
  for (let d = 0; d < spatial; d++) {
    const input = inputSize[inputSize.length - spatial + d];
    if (input !== outputSize[d]) return false;
    const s = nearestScale950(input, outputSize[d], scales[d]);
    if (Math.abs(Math.fround(s - 1)) > Math.fround(1e-8)) return false;
  }
  return true;
}

/**
 * The 950's nearest-exact range table of one dimension: input `i` gathers the outputs
 * `[starts[i], starts[i + 1])`, `starts[i] = min(ceil(fl32(i) * s - 0.5), outSize)` in float32
 * (`ComputeOrig<isExact = true>` in op_kernel/arch35/upsample_nearest_exact2d_grad_simt_base.h:
 * `ceilf(static_cast<float>(idx) * scale - 0.5f)`, then `min(orig, limit)`). Whether the compiler
 * contracts `idx * scale - 0.5f` into one fused multiply-add is not stated in the source: `fma`
 * selects it (one rounding) or not (the product rounded first, as A2's separate Muls and Adds).
 * With `fma`, 1d 6 -> 1 sends the only gradient to input 2 (`3 * fl32(1/6) - 0.5` is
 * `1.49e-8 > 0`), without it to input 3 (the product rounds to `0.5`). There is no pass skip (A2
 * skips a scale within 1e-6 of 1): every scale is computed.
 *
 * @throws {RangeError} when the ranges end before `outSize` (some gradients are read by no
 * input; never for sizes the library accepts, `out = floor(in * scales)`)
 * @example
 * ```ts
 * import { nearestStarts950 } from "./ascend950_nearest.ts";
 * nearestStarts950(6, 1, 0, false); // Int32Array [0, 0, 0, 0, 1, 1, 1]: output 0 -> input 3
 * nearestStarts950(6, 1, 0, true); // Int32Array [0, 0, 0, 1, 1, 1, 1]: output 0 -> input 2
 * ```
 */
export function nearestStarts950(
  inSize: number,
  outSize: number,
  scales: number,
  fma: boolean,
): Int32Array {
  const s = nearestScale950(inSize, outSize, scales);
  const starts = new Int32Array(inSize + 1);
  for (let i = 0; i <= inSize; i++) {
    // ceilf of a value in (-1, 0] is -0, which the unsigned index type turns into 0.
    const start = Math.max(0, Math.ceil(mulAddF32(Math.fround(i), s, -0.5, fma)));
    starts[i] = start < outSize ? start : outSize;
  }
  if (starts[inSize] !== outSize) {
    throw new RangeError(
      `nearest-exact ${inSize} -> ${outSize} (scale ${scales}): the Ascend 950 ranges end at ` +
        `output ${
          starts[inSize]
        } and never read the rest; not reproducible by the device reference`,
    );
  }
  return starts;
}
