/**
 * PyTorch's forward CPU kernels (internal building blocks): PyTorch's `interpolate(mode="nearest-exact")`
 * on 3-D and 4-D input and `interpolate(mode="bilinear", align_corners=...)` on 4-D input, with
 * PyTorch 1.13's CPU results bit for bit (measured against its aten ops:
 * `tools/gen_forward_fixtures.py`, `tests/fixtures/forward/`):
 *
 * - TypeScript kernels, any strides (channels-last included), any dtype:
 *   {@link nearestExact1dForwardCpu}, {@link nearestExact2dForwardCpu}, {@link bilinear2dForwardCpu};
 * - the WebAssembly SIMD path for contiguous tensors (`src/cpu/wasm/launch_forward.ts`), the same
 *   bits.
 *
 * ## The rules (docs/semantics.md's notation: `fl32`, `bf` = round to bfloat16, nearest even)
 *
 * **nearest-exact**: output `o` of a dimension copies input
 * `min(floor(fl32(fl32(o + 0.5) * s)), in - 1)`, `s` as in the backward (`nearestTables(...).index`),
 * bits and all (NaN payloads, -0), whatever the layout.
 *
 * **bilinear, float32** (tables: {@link forwardLinearTable}): the scale as in the backward, but the
 * source coordinate in double (`d = s (o + 0.5) - 0.5`, at least 0, or `s o`), `l1 = fl32(d - i0)`,
 * `l0 = fl32(1 - l1)`. PyTorch's kernel depends on the input's layout ({@link isChannelsLast}):
 * generic (W first, `t = fma(a, lw0, fl32(b lw1))` per input row, then
 * `fma(t0, lh0, fl32(t1 lh1))`: GCC fused the first product of `t0 * w0 + t1 * w1` on the AVX2
 * build) or channels-last (`w00 = fl32(lh0 lw0)`, ...; channels below `C - C % 8`:
 * `fma(i00, w00, fma(i01, w01, fma(i11, w11, fl32(i10 w10))))`; the others
 * `((i00 w00 + i01 w01) + i10 w10) + i11 w11` in double, rounded once).
 *
 * **16-bit dtypes.** 1.13 refuses float16 in every forward kernel ("not implemented for 'Half'")
 * and bfloat16 in nearest-exact: those give the float32 result of the widened input, rounded once
 * to nearest even (for nearest-exact, the input's bits). bfloat16 bilinear is 1.13's own: its
 * tables in bfloat16 arithmetic (scale `bf(bf(in) / bf(out))`, coordinate in float32, weights
 * `bf`), and it **accumulates in bfloat16** in the generic kernel (every product and sum rounded:
 * `bf(bf(a lw0) + bf(b lw1))`, then `bf(bf(t0 lh0) + bf(t1 lh1))`) but **in float32** in the
 * channels-last one (weights `bf(lh lw)`, exact products, channels below `C - C % 16` summed
 * `i00 w00 + (i01 w01 + (i11 w11 + i10 w10))`, the others left to right, rounded once).
 *
 * @example
 * ```ts
 * import { bilinear2dForwardCpu } from "./mod.ts";
 * const out = new Float32Array(3);
 * bilinear2dForwardCpu({
 *   input: { data: Float32Array.of(0, 4), dtype: "float32", strides: [2, 2, 2, 1], offset: 0 },
 *   out: { data: out, dtype: "float32", strides: [3, 3, 3, 1], offset: 0 },
 *   inputSize: [1, 1, 1, 2],
 *   outputSize: [1, 3],
 *   scales: [0, 0],
 *   alignCorners: true,
 * });
 * // out = [0, 2, 4]
 * ```
 *
 * @module
 */

export type { UpsampleForwardArgs } from "../../types.ts";
export { nearestExact1dForwardCpu, nearestExact2dForwardCpu } from "./nearest.ts";
export { bilinear2dForwardCpu } from "./bilinear.ts";
export {
  bf16Round,
  type BilinearArith,
  bilinearArith,
  forwardLinearTable,
  isChannelsLast,
} from "./tables.ts";
