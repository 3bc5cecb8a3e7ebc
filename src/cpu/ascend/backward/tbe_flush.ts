/**
 * The atomic flushes of the TBE kernel ResizeBilinearV2Grad's tiling modes 5 and 6 (CANN 8.1.RC1
 * toolkit copy `leideng/CANN-8.1.RC1`, `opp/built-in/op_impl/ai_core/tbe/impl/dynamic/
 * resize_bilinear_v2_grad.py`, `normal_small` / `normal_big`: `set_atomic_add(1)` around each
 * partial row's `data_move` to the result) and the order they reach the result in.
 *
 * Each core's flushes reach the result in its program order; between cores the source fixes no
 * order. The reference adds them in one order a device can produce: the interleaving the host
 * emulation (`native/src/opapi/tbe5hd_flush.c`, `emu_tbe5hd_merge_flushes`) draws from a launch's
 * seed, so that the emulation reproduces it under a named seed ({@link REFERENCE_LAUNCH_SEED}).
 * Where no cell takes three or more nonzero partials from two or more cores the order cannot
 * change a bit (`0 + a + b = 0 + b + a`), and any seed gives the same result.
 *
 * @module
 */

const MASK = (1n << 64n) - 1n;
const GOLDEN = 0x9e3779b97f4a7c15n;
// The emulation's per-plane seed: launch seed ^ (plane * this), 64-bit (tbe5hd.c emu_tbe5hd_run).
const PLANE_MIX = 0xd1b54a32d192ed03n;

// splitmix64's finaliser (kernel_controls.c mix64).
function mix64(x: bigint): bigint {
  x = (x ^ (x >> 30n)) * 0xbf58476d1ce4e5b9n & MASK;
  x = (x ^ (x >> 27n)) * 0x94d049bb133111ebn & MASK;
  return x ^ (x >> 31n);
}

/**
 * The seed the emulation gives launch `index` of the sequence `aclemuSetAtomicSeed(base)` (or
 * `ACLEMU_ATOMIC_SEED=base`) starts: `mix64(base ^ mix64(index + golden))`
 * (`aclemu_atomic_seed_take`, native/src/ascendcl/kernel_controls.c).
 *
 * @example
 * ```ts
 * import { launchSeed } from "./tbe_flush.ts";
 * launchSeed(0n, 0) === launchSeed(0n, 0); // true
 * ```
 */
export function launchSeed(base: bigint, index: number): bigint {
  return mix64((base ^ mix64((BigInt(index) + GOLDEN) & MASK)) & MASK);
}

/**
 * The launch seed of the reference's order: the first atomic launch after
 * `aclemuSetAtomicSeed(0)` (equivalently `ACLEMU_ATOMIC_SEED=0` in a fresh process).
 */
export const REFERENCE_LAUNCH_SEED: bigint = launchSeed(0n, 0);

/** One partial row a core adds atomically: `values` onto row `row` from column `col`. */
export interface Flush {
  /** Image row. */
  readonly row: number;
  /** First image column. */
  readonly col: number;
  /** The partial sums (a copy of the unified-buffer row, clipped to the image row). */
  readonly values: Float32Array;
}

/**
 * Records `n` cells of `data` as a flush of one core onto `(row, col)`, clipped to the row's
 * `inW` cells: cells past the row only ever hold +0, which changes no sum.
 *
 * @example
 * ```ts
 * import { pushFlush, type Flush } from "./tbe_flush.ts";
 * const list: Flush[] = [];
 * pushFlush(list, 0, 2, 4, new Float32Array([1, 2, 3, 4]), 5); // keeps 3 cells
 * ```
 */
export function pushFlush(
  list: Flush[],
  row: number,
  col: number,
  n: number,
  data: Float32Array,
  inW: number,
): void {
  const end = Math.min(col + n, inW);
  if (end <= col) return;
  list.push({ row, col, values: data.slice(0, end - col) });
}

/**
 * Adds every core's flushes into `out` (a zeroed plane of rows of `inW` cells) in the interleaving
 * the emulation draws for plane `plane` of a launch with seed `seed`: each step takes the next flush
 * of a core picked with probability proportional to its remaining flushes (`next64(state) %
 * remaining`, state starting at `seed ^ plane * 0xd1b54a32d192ed03`). Each add rounds to float32.
 *
 * @example
 * ```ts
 * import { mergeFlushes } from "./tbe_flush.ts";
 * const out = new Float32Array(2);
 * mergeFlushes([[{ row: 0, col: 0, values: Float32Array.of(1, 2) }]], out, 2, 0n, 0);
 * // out: [1, 2]
 * ```
 */
export function mergeFlushes(
  cores: readonly (readonly Flush[])[],
  out: Float32Array,
  inW: number,
  seed: bigint,
  plane: number,
): void {
  const next = cores.map(() => 0);
  let remaining = cores.reduce((sum, list) => sum + list.length, 0);
  let state = (seed ^ (BigInt(plane) * PLANE_MIX & MASK)) & MASK;
  while (remaining > 0) {
    state = (state + GOLDEN) & MASK;
    let pick = Number(mix64(state) % BigInt(remaining));
    let k = 0;
    for (; k < cores.length; k++) {
      const left = cores[k].length - next[k];
      if (pick < left) break;
      pick -= left;
    }
    const { row, col, values } = cores[k][next[k]++];
    const o = row * inW + col;
    for (let i = 0; i < values.length; i++) out[o + i] = Math.fround(out[o + i] + values[i]);
    remaining--;
  }
}

/**
 * The permutation of `[0, count)` the emulation draws for an atomic launch with seed `seed`
 * (Fisher-Yates from the last index down, `j = next64(state) % (i + 1)`, state from `seed`;
 * `native/src/opapi/resize_scatter_950.c` permutation): the order the Ascend 950's SIMT scatter
 * visits its gradient elements in.
 *
 * @example
 * ```ts
 * import { launchPermutation } from "./tbe_flush.ts";
 * launchPermutation(4, 0n).slice().sort(); // Uint32Array [0, 1, 2, 3]
 * ```
 */
export function launchPermutation(count: number, seed: bigint): Uint32Array {
  const perm = new Uint32Array(count);
  for (let i = 0; i < count; i++) perm[i] = i;
  let state = seed & MASK;
  for (let i = count - 1; i > 0; i--) {
    state = (state + GOLDEN) & MASK;
    const j = Number(mix64(state) % BigInt(i + 1));
    const t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  return perm;
}
