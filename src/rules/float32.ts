/**
 * float32 arithmetic helpers for the device rules: a correctly rounded fused multiply-add, for
 * kernels whose compiler may contract `a * b + c` into one instruction (one rounding instead of
 * two).
 *
 * @module
 */

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** The float32 neighbour of the float32 value `x` towards `+Infinity` (`up`) or `-Infinity`. */
function neighbour(x: number, up: boolean): number {
  if (x === 0) return up ? 2 ** -149 : -(2 ** -149);
  F32[0] = x;
  // Away from zero: one more in the bit pattern; towards zero: one less.
  U32[0] += (x > 0) === up ? 1 : -1;
  return F32[0];
}

/**
 * `fma(a, b, c)` in float32: `a * b + c` computed exactly and rounded once to float32 (nearest,
 * ties to even), as a fused multiply-add instruction does. `a`, `b` and `c` must be float32 values.
 * The product of two float32 values is exact in double; the sum's rounding error is recovered
 * exactly (TwoSum) to settle the one case where rounding the double sum to float32 would round
 * twice: a double sum exactly halfway between two float32 values.
 *
 * @example
 * ```ts
 * import { fmaF32 } from "./float32.ts";
 * const s = Math.fround(1 / 6);
 * Math.fround(Math.fround(3 * s) - 0.5); // 0: the product rounds to 0.5 first
 * fmaF32(3, s, -0.5); // 1.4901161e-8: one rounding
 * ```
 */
export function fmaF32(a: number, b: number, c: number): number {
  const p = a * b; // exact: 24 + 24 significant bits
  const s = p + c;
  const bb = s - p;
  const err = (p - (s - bb)) + (c - bb); // s + err === p + c exactly
  const r = Math.fround(s);
  if (err === 0 || r === s || !Number.isFinite(s)) return r;
  const other = neighbour(r, s > r);
  if ((r + other) / 2 !== s) return r; // not a tie: s and the exact sum round alike
  const hi = Math.max(r, other), lo = Math.min(r, other);
  return err > 0 ? hi : lo;
}

/**
 * `a * b + c` in float32 as the kernel computes it: fused (`fma`, one rounding) or not (two).
 *
 * @example
 * ```ts
 * import { mulAddF32 } from "./float32.ts";
 * mulAddF32(3, Math.fround(1 / 6), -0.5, false); // 0
 * mulAddF32(3, Math.fround(1 / 6), -0.5, true) > 0; // true
 * ```
 */
export function mulAddF32(a: number, b: number, c: number, fma: boolean): number {
  return fma ? fmaF32(a, b, c) : Math.fround(Math.fround(a * b) + c);
}
