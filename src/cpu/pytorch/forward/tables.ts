/**
 * The per-dimension tables of the forward kernels and the layout rule that picks PyTorch's kernel.
 *
 * nearest-exact reads `nearestTables(in, out, scales, rule).index` (`src/rules/tables.ts`): PyTorch
 * 1.13's forward uses the very index of its backward (`nearest_exact_idx`).
 *
 * Bilinear under the `"pytorch"` rule reproduces PyTorch 1.13's CPU forward
 * (`HelperInterpLinear::compute_indices_weights`, `cpu_upsample_linear_channels_last`), which
 * differs from the backward's tables (`linearIndexTable`, PyTorch >= 2.0) in where it rounds:
 *
 * - float32 (and float16, which 1.13 refuses and the library computes in float32): the scale is
 *   float32 as in the backward, but the source coordinate stays in double
 *   (`acc_type<float>` is double): `d = s * (o + 0.5) - 0.5` (exact product, one rounding),
 *   `max(d, 0)`, or `d = s * o` (exact) with `alignCorners`; `i0 = trunc(d)`,
 *   `l1 = fl32(clamp(d - i0, 0, 1))`, `l0 = fl32(1 - l1)`.
 * - bfloat16: everything in bfloat16 arithmetic (each operation in float32, rounded to bfloat16,
 *   nearest even): the scale `bf(bf(in) / bf(out))` (or `bf(fl32(1 / scales))`, or
 *   `bf(bf(in - 1) / bf(out - 1))`), the coordinate in float32 (`acc_type<BFloat16>`):
 *   `fl32(s * (o + 0.5) - 0.5)` or `fl32(s * o)`, `l1 = bf(clamp(d - i0, 0, 1))`,
 *   `l0 = bf(1 - l1)`.
 *
 * In both, a dimension whose sizes are equal is the identity (`i0 = i1 = o`, `l0 = 1`, `l1 = 0`)
 * whatever the scale. 1.13 does not bound `i0`; the tables bound it by `in - 1` (it only matters
 * for scales outside the `floor(in * scale) == out` contract, where 1.13 reads past the input).
 * Any other rule takes `linearTable(...)` of `src/rules/tables.ts` as it is.
 *
 * @module
 */

import type { LinearTable } from "../../../rules/pytorch.ts";
import { cachedTable, dimensionRule, linearTable, type TableRule } from "../../../rules/tables.ts";
import type { DType } from "../../../tensor/dtype.ts";

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/**
 * `x` (a float32 value) rounded to bfloat16, nearest even, as a number; NaN stays NaN (c10's
 * `round_to_nearest_even` gives the quiet NaN 0x7fc0).
 *
 * @example
 * ```ts
 * import { bf16Round } from "./tables.ts";
 * bf16Round(1 + 2 ** -8); // 1 (a tie: to even)
 * bf16Round(Math.fround(1 / 3)); // 0.333984375
 * ```
 */
export function bf16Round(x: number): number {
  if (x !== x) return NaN;
  F32[0] = x;
  const u = U32[0];
  U32[0] = ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) << 16;
  return F32[0];
}

/**
 * Whether PyTorch sees a 4-D view as channels-last contiguous (`is_contiguous(ChannelsLast)`,
 * c10's `compute_channels_last_contiguous_2d`): strides of C, W, H, N, skipping dimensions of
 * size 1, are 1, C, C W, C W H. A contiguous NCHW view with C = 1, or with H = W = 1, is one too:
 * PyTorch then runs its channels-last bilinear kernel on it. Always false for other ranks.
 *
 * @example
 * ```ts
 * import { isChannelsLast } from "./tables.ts";
 * isChannelsLast([2, 3, 4, 5], [60, 1, 15, 3]); // true
 * isChannelsLast([2, 1, 4, 5], [20, 20, 5, 1]); // true: C = 1
 * isChannelsLast([2, 3, 4, 5], [60, 20, 5, 1]); // false
 * ```
 */
export function isChannelsLast(sizes: readonly number[], strides: readonly number[]): boolean {
  if (sizes.length !== 4 || strides.length !== 4) return false;
  let expected = 1;
  for (const d of [1, 3, 2, 0]) {
    const size = sizes[d];
    if (size !== 1) {
      if (strides[d] !== expected) return false;
      expected *= size;
    }
  }
  return true;
}

/**
 * How the bilinear kernels combine the four inputs of an output (see bilinear.ts).
 *
 * @example
 * ```ts
 * import type { BilinearArith } from "./tables.ts";
 * const arith: BilinearArith = "bfloat16";
 * ```
 */
export type BilinearArith = "float32" | "bfloat16";

/**
 * The arithmetic PyTorch 1.13 runs bilinear in for `dtype` under `rule`: `"bfloat16"` for bfloat16
 * under `"pytorch"` (its native bfloat16 kernels), else `"float32"` (float16, which 1.13 refuses,
 * is computed in float32 and rounded once; device rules run the float32 formula on their tables).
 *
 * @example
 * ```ts
 * import { bilinearArith } from "./tables.ts";
 * bilinearArith("bfloat16", "pytorch"); // "bfloat16"
 * bilinearArith("float16", "pytorch"); // "float32"
 * ```
 */
export function bilinearArith(dtype: DType, rule: TableRule): BilinearArith {
  return dtype === "bfloat16" && rule === "pytorch" ? "bfloat16" : "float32";
}

const forwardCache = new Map<string, LinearTable>();

/**
 * The bilinear forward table of dimension `dimension` (0: H, 1: W) under `rule`, in `arith`
 * (module doc): PyTorch 1.13's for `"pytorch"`, `linearTable` of `src/rules/tables.ts` otherwise.
 *
 * @example
 * ```ts
 * import { forwardLinearTable } from "./tables.ts";
 * const t = forwardLinearTable(7, 11, false, 0, "float32", "pytorch", 1);
 * t.l1[2]; // 0.09090906381607056: fl32(d - 1) of the double d = 1.0909090638...
 * ```
 */
export function forwardLinearTable(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scales: number,
  arith: BilinearArith,
  rule: TableRule,
  dimension: number,
): LinearTable {
  if (rule !== "pytorch") {
    return linearTable(inSize, outSize, alignCorners, scales, dimensionRule(rule, dimension));
  }
  return cachedTable(
    forwardCache,
    `${arith}:${inSize}:${outSize}:${alignCorners}:${scales}`,
    () =>
      arith === "bfloat16"
        ? torchTableBf16(inSize, outSize, alignCorners, scales)
        : torchTableF32(inSize, outSize, alignCorners, scales),
  );
}

function identity(size: number): LinearTable {
  const i0 = new Int32Array(size);
  for (let o = 0; o < size; o++) i0[o] = o;
  return { i0, i1: i0.slice(), l0: new Float32Array(size).fill(1), l1: new Float32Array(size) };
}

// Indices and weights from source coordinates d >= 0, l1 and l0 rounded by `round`.
function fromCoordinates(
  inSize: number,
  coordinate: (o: number) => number,
  outSize: number,
  round: (x: number) => number,
): LinearTable {
  const i0 = new Int32Array(outSize), i1 = new Int32Array(outSize);
  const l0 = new Float32Array(outSize), l1 = new Float32Array(outSize);
  for (let o = 0; o < outSize; o++) {
    const d = coordinate(o);
    const lo = Math.min(Math.trunc(d), inSize - 1);
    const lambda = round(Math.min(Math.max(d - lo, 0), 1));
    i0[o] = lo;
    i1[o] = lo < inSize - 1 ? lo + 1 : lo;
    l1[o] = lambda;
    l0[o] = round(1 - lambda);
  }
  return { i0, i1, l0, l1 };
}

function torchTableF32(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scales: number,
): LinearTable {
  if (inSize === outSize) return identity(outSize);
  let s: number;
  if (alignCorners) {
    s = outSize > 1 ? Math.fround(Math.fround(inSize - 1) / Math.fround(outSize - 1)) : 0;
  } else {
    s = scales > 0
      ? Math.fround(1 / scales)
      : Math.fround(Math.fround(inSize) / Math.fround(outSize));
  }
  // In double: s * o and s * (o + 0.5) are exact (24-bit times at most 33-bit significands).
  const coordinate = alignCorners ? (o: number): number => s * o : (o: number): number => {
    const d = s * (o + 0.5) - 0.5;
    return d < 0 ? 0 : d;
  };
  return fromCoordinates(inSize, coordinate, outSize, Math.fround);
}

function torchTableBf16(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scales: number,
): LinearTable {
  if (inSize === outSize) return identity(outSize);
  const bf = (n: number): number => bf16Round(Math.fround(n));
  let s: number;
  if (alignCorners) {
    s = outSize > 1 ? bf(bf(inSize - 1) / bf(outSize - 1)) : 0;
  } else {
    s = scales > 0 ? bf(1 / scales) : bf(bf(inSize) / bf(outSize));
  }
  const coordinate = alignCorners
    ? (o: number): number => Math.fround(s * o)
    : (o: number): number => {
      const d = Math.fround(s * (o + 0.5) - 0.5);
      return d < 0 ? 0 : d;
    };
  return fromCoordinates(inSize, coordinate, outSize, bf);
}
