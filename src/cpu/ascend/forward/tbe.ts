/**
 * The TBE kernel ResizeBilinearV2 (NC1HWC0) that bilinear FORWARD runs on the Atlas training (910)
 * and inference (310P) series and on Atlas A2/A3 off the Cube route, bit for bit on one float32
 * plane. Source: the CANN 8.1.RC1 toolkit (GitHub `leideng/CANN-8.1.RC1`,
 * `Ascend/ascend-toolkit/8.1.RC1/opp/built-in/op_impl/ai_core/tbe/impl/dynamic/resize_bilinear_v2.py`),
 * every step a rounded float32 vector instruction unless said otherwise; the coordinates are
 * `tbeAxis` of `src/rules/forward_axes.ts`. The kernel reads float16 images widened to float32
 * (vconv) except in vbi float16, and the op_api casts bfloat16 to float32 around it: the caller
 * rounds the float32 result once to the dtype.
 *
 * @module
 */

import { fmaF32 } from "../../../rules/float32.ts";
import { type TbeAxis, tbeAxis } from "../../../rules/forward_axes.ts";
import type { ForwardPlan } from "../../../rules/forward_device.ts";
import { float16BitsFromNumber, float16BitsToNumber } from "../../../tensor/dtype.ts";

const f = Math.fround;
const h = Math.f16round;

/**
 * `a * b + c` computed exactly and rounded once to float16 (nearest, ties to even), `a`, `b`, `c`
 * float16 values: the vbi instruction's fused step in float16 when the TBE contraction is on. The
 * product is exact in double; a double sum that lands on a float16 midpoint is settled by the sign
 * of the sum's rounding error (TwoSum), as `fmaF32` does for float32.
 *
 * @example
 * ```ts
 * import { fmaF16 } from "./tbe.ts";
 * fmaF16(1 + 2 ** -10, 1 + 2 ** -10, -(1 + 2 ** -9)); // 2 ** -20; rounded twice it is 0
 * ```
 */
export function fmaF16(a: number, b: number, c: number): number {
  const p = a * b;
  const s = p + c;
  const bb = s - p;
  const err = (p - (s - bb)) + (c - bb);
  const r = h(s);
  if (err === 0 || r === s || !Number.isFinite(s)) return r;
  if (!Number.isFinite(r)) {
    // s is the midpoint 65520 between 65504 and the first overflowing value: the error decides.
    return Math.abs(s) === 65520 && err * s < 0 ? Math.sign(s) * 65504 : r;
  }
  const other = neighbour16(r, s > r);
  if ((r + other) / 2 !== s) return r;
  return err > 0 ? Math.max(r, other) : Math.min(r, other);
}

// The float16 neighbour of the float16 value x towards +Infinity (up) or -Infinity.
function neighbour16(x: number, up: boolean): number {
  if (x === 0) return up ? 2 ** -24 : -(2 ** -24);
  const bits = float16BitsFromNumber(x);
  return float16BitsToNumber(bits + ((x > 0) === up ? 1 : -1));
}

/** One plane's computation: `plane` is `inH x inW` float32 values, `result` gets `outH x outW`. */
export type PlaneKernel = (plane: Float32Array, result: Float32Array) => void;

/**
 * The per-plane routine of a TBE plan (`tbe-l1`, `tbe-nc`, `tbe-vbi32`, `tbe-vbi16`), its
 * coordinates computed once:
 *
 * - **L1** (`_function_resize_with_l1_default`): per output row the two image rows blend first,
 *   `B' = fl32(fl32(fl32(B - T) * yl) + T)` (vsub, vmuls, vadd) with `yl = fl32(srcH - top)`: this
 *   mode's H `calcu_out_in_idx` gets no `max_idx_ub`, so `yl` is not clamped (invisible for finite
 *   values: where `src > in - 1` the bottom row is the top row); then
 *   `fl32(fl32(fl32(R' - L') * xl) + L')` (vsub, vmul, vadd) with `xl = fl32(min(srcW, in - 1) - left)`.
 *   At the last column the device reads the next element of its buffer at weight `xl = 0`; taken
 *   as the left column itself (as the emulation does: the same value for finite data).
 * - **NC** (`_function_reisze_with_nc_process`, tiling key 100110): the same lerps with
 *   `yl = fl32(min(srcH, in - 1) - top)`; where the right column is the left one the W step is
 *   `L' * 1.0`.
 * - **vbi float32** (`_function_default_vbi_fp32`, A2/A3): weights `fl32((1 - xl)(1 - yl))`,
 *   `fl32(xl (1 - yl))`, `fl32((1 - xl) yl)`, `fl32(xl yl)` (vmuls; both lerps clamped), then the vbi
 *   instruction over top-left, top-right, bottom-left, bottom-right: `acc = fl32(TL w00)`, then
 *   `acc += v w` per tap, each product and sum rounded, or one fused rounding per tap with `fma`
 *   (the source does not say: the plan's `fma`, `tbeFma`).
 * - **vbi float16** (`_function_default_vbi_fp16`, 310P float16 images): the same weights rounded
 *   to float16 (vconv), the vbi products and sums in float16.
 *
 * @throws {RangeError} for a plan of another variant
 * @example
 * ```ts
 * import { tbePlaneKernel } from "./tbe.ts";
 * const plan = { kernel: "ResizeBilinearV2_5HD.L1", variant: "tbe-l1", steps: [1, 0.5], alignCorners: false, fma: false, passOrder: "wh" } as const;
 * const result = new Float32Array(4);
 * tbePlaneKernel(plan, 1, 2, 1, 4)(Float32Array.of(1, 3), result); // result = [1, 1.5, 2.5, 3]
 * ```
 */
export function tbePlaneKernel(
  plan: ForwardPlan,
  inH: number,
  inW: number,
  outH: number,
  outW: number,
): PlaneKernel {
  const [sH, sW] = plan.steps;
  const align = plan.alignCorners;
  const variant = plan.variant;
  if (
    variant !== "tbe-l1" && variant !== "tbe-nc" && variant !== "tbe-vbi32" &&
    variant !== "tbe-vbi16"
  ) {
    throw new RangeError(`tbePlaneKernel: not a TBE plan (${variant})`);
  }
  const H = tbeAxis(inH, outH, sH, align, variant !== "tbe-l1");
  const W = tbeAxis(inW, outW, sW, align, true);
  if (variant === "tbe-l1" || variant === "tbe-nc") {
    return (plane, result) => lerp(plane, result, H, W, inW, variant === "tbe-nc");
  }
  return (plane, result) => vbi(plane, result, H, W, inW, variant === "tbe-vbi16", plan.fma);
}

function lerp(
  plane: Float32Array,
  result: Float32Array,
  H: TbeAxis,
  W: TbeAxis,
  inW: number,
  nc: boolean,
): void {
  const outH = H.lo.length, outW = W.lo.length;
  for (let oh = 0; oh < outH; oh++) {
    const top = H.lo[oh] * inW, bottom = H.hi[oh] * inW, yl = H.weight[oh];
    for (let ow = 0; ow < outW; ow++) {
      const left = W.lo[ow], right = W.hi[ow];
      const tl = plane[top + left], bl = plane[bottom + left];
      const l = f(f(f(bl - tl) * yl) + tl);
      if (nc && right === left) {
        result[oh * outW + ow] = f(l * 1);
        continue;
      }
      const tr = plane[top + right], br = plane[bottom + right];
      const r = f(f(f(br - tr) * yl) + tr);
      result[oh * outW + ow] = f(f(f(r - l) * W.weight[ow]) + l);
    }
  }
}

function vbi(
  plane: Float32Array,
  result: Float32Array,
  H: TbeAxis,
  W: TbeAxis,
  inW: number,
  half: boolean,
  fma: boolean,
): void {
  const outH = H.lo.length, outW = W.lo.length;
  const round = half ? h : f;
  for (let oh = 0; oh < outH; oh++) {
    const top = H.lo[oh] * inW, bottom = H.hi[oh] * inW;
    const yl = H.weight[oh], yl1 = f(1 - yl);
    for (let ow = 0; ow < outW; ow++) {
      const left = W.lo[ow], right = W.hi[ow];
      const xl = W.weight[ow], xl1 = f(1 - xl);
      const w00 = round(f(xl1 * yl1)), w10 = round(f(xl * yl1));
      const w01 = round(f(xl1 * yl)), w11 = round(f(xl * yl));
      let acc = round(plane[top + left] * w00);
      if (half) {
        acc = fma ? fmaF16(plane[top + right], w10, acc) : h(acc + h(plane[top + right] * w10));
        acc = fma ? fmaF16(plane[bottom + left], w01, acc) : h(acc + h(plane[bottom + left] * w01));
        acc = fma
          ? fmaF16(plane[bottom + right], w11, acc)
          : h(acc + h(plane[bottom + right] * w11));
      } else {
        acc = fma ? fmaF32(plane[top + right], w10, acc) : f(acc + f(plane[top + right] * w10));
        acc = fma ? fmaF32(plane[bottom + left], w01, acc) : f(acc + f(plane[bottom + left] * w01));
        acc = fma
          ? fmaF32(plane[bottom + right], w11, acc)
          : f(acc + f(plane[bottom + right] * w11));
      }
      result[oh * outW + ow] = acc;
    }
  }
}
