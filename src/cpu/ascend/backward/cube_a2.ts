/**
 * A2/A3's Cube-matmul backward kernels (UpsampleBilinear2dGrad, UpsampleNearestExact2dGrad) in one
 * reading of the order the hardware leaves open: the two passes of the source (`hicann/ops-cv`
 * `image/upsample_bilinear2d_grad/op_kernel/upsample_bilinear2d_grad_kernel.h` Process,
 * `image/upsample_nearest_exact2d_grad/op_kernel/upsample_nearest_exact2d_grad_kernel.h` Process,
 * wDirectionExpansion, hDirectionExpansion): a W pass (each gradient row times the `outW x inW`
 * weight matrix) into a float32 intermediate, then an H pass (the `inH x outH` matrix times each
 * plane); a pass whose kernel scale is within 1e-6 of 1 is skipped (FloatEqual). Inside each matmul
 * the reading sums every output's terms in ascending gradient index from +0, each product and sum
 * rounded to float32, a zero weight next to the last cell included (`0 * inf = NaN`), as the host
 * emulation does (`native/src/opapi/kernels.c` emu_two_pass). The device's order inside a Cube
 * matmul is not documented: the reference takes this reading only when the target asks for it
 * (`AscendTarget.cubeOrder: "ascending"`).
 *
 * @module
 */

import { a2LinearTable, a2NearestScale, a2NearestStarts } from "../../../rules/ascend_a2.ts";
import type { UpsampleParams } from "../../../rules/ops.ts";
import type { BilinearBackwardArgs } from "../../types.ts";
import { runOnPlanes } from "./planes.ts";

const f = Math.fround;
const SKIP_EPSILON = f(1e-6); // FloatEqual

/** One dimension's matrix as taps: gradient index `o` adds `w0[o] * g` to `i0[o]`, `w1[o] * g` to `i1[o]` (-1: none). */
export interface CubeTaps {
  /** First cell per gradient index (-1: none). */
  readonly i0: Int32Array;
  /** Second cell (-1: none). */
  readonly i1: Int32Array;
  /** Weight towards `i0`. */
  readonly w0: Float32Array;
  /** Weight towards `i1`. */
  readonly w1: Float32Array;
  /** The pass is skipped (its kernel scale within 1e-6 of 1; the sizes are then equal). */
  readonly skip: boolean;
}

function skips(s: number): boolean {
  return Math.abs(f(s - 1)) < SKIP_EPSILON;
}

// UpsampleBilinear2dGrad's kernel scale (upsample_bilinear2d_grad_tiling.cpp compute_scale_value).
function bilinearKernelScale(
  inSize: number,
  outSize: number,
  align: boolean,
  scale: number,
): number {
  const given = scale > 0 ? f(1 / scale) : 0;
  if (!align && given > 0) return given;
  if (align) return outSize > 1 ? f(f(inSize - 1) / f(outSize - 1)) : 0;
  return f(f(inSize) / f(outSize));
}

/**
 * The taps of one dimension of a call's Cube kernel: bilinear weights `1 - lambda`, `lambda`
 * (the last cell weight 1 and a zero weight beside it), or nearest-exact's 0/1 ranges.
 *
 * @example
 * ```ts
 * import { cubeTaps } from "./cube_a2.ts";
 * cubeTaps("nearestExact2d", 2, 4, false, 0).i0; // Int32Array [0, 0, 1, 1]
 * ```
 */
export function cubeTaps(
  op: UpsampleParams["op"],
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scale: number,
): CubeTaps {
  const i0 = new Int32Array(outSize).fill(-1), i1 = new Int32Array(outSize).fill(-1);
  const w0 = new Float32Array(outSize), w1 = new Float32Array(outSize);
  if (op === "bilinear2d") {
    const skip = skips(bilinearKernelScale(inSize, outSize, alignCorners, scale));
    const t = a2LinearTable(inSize, outSize, alignCorners, scale);
    return { i0: t.i0, i1: t.i1, w0: t.l0, w1: t.l1, skip };
  }
  const skip = skips(a2NearestScale(inSize, outSize, scale));
  const starts = a2NearestStarts(inSize, outSize, scale);
  for (let i = 0; i < inSize; i++) {
    for (let o = starts[i]; o < starts[i + 1]; o++) {
      i0[o] = i;
      w0[o] = 1;
    }
  }
  return { i0, i1, w0, w1, skip };
}

/**
 * The two passes on `planes` contiguous float32 gradient planes (`outH x outW`), giving the float32
 * result planes (`inH x inW`).
 *
 * @example
 * ```ts
 * import { cubeTaps, cubeTwoPass } from "./cube_a2.ts";
 * const th = cubeTaps("nearestExact2d", 1, 1, false, 0), tw = cubeTaps("nearestExact2d", 2, 4, false, 0);
 * cubeTwoPass(new Float32Array([1, 2, 3, 4]), 1, 1, 2, 1, 4, th, tw); // Float32Array [3, 7]
 * ```
 */
export function cubeTwoPass(
  grad: Float32Array,
  planes: number,
  inH: number,
  inW: number,
  outH: number,
  outW: number,
  th: CubeTaps,
  tw: CubeTaps,
): Float32Array {
  const runW = !tw.skip, runH = !th.skip || tw.skip;
  const result = new Float32Array(planes * inH * inW);
  const plane = new Float32Array(outH * inW);
  const add = (acc: Float32Array, at: number, w: number, v: number): void => {
    acc[at] = f(acc[at] + f(w * v));
  };
  for (let p = 0; p < planes; p++) {
    const g = grad.subarray(p * outH * outW, (p + 1) * outH * outW);
    const out = result.subarray(p * inH * inW, (p + 1) * inH * inW);
    // W pass (wDirectionExpansion): each gradient row times the outW x inW matrix.
    const source = runW ? plane.fill(0) : g;
    if (runW) {
      for (let oh = 0; oh < outH; oh++) {
        const row = plane.subarray(oh * inW, (oh + 1) * inW);
        for (let ow = 0; ow < outW; ow++) {
          const v = g[oh * outW + ow];
          if (tw.i0[ow] >= 0) add(row, tw.i0[ow], tw.w0[ow], v);
          if (tw.i1[ow] >= 0) add(row, tw.i1[ow], tw.w1[ow], v);
        }
      }
    }
    if (!runH) { // H skipped (equal heights): the W pass wrote the result
      out.set(plane.subarray(0, inH * inW));
      continue;
    }
    // H pass (hDirectionExpansion): the inH x outH matrix times the plane.
    for (let oh = 0; oh < outH; oh++) {
      const a = th.i0[oh], b = th.i1[oh];
      if (a < 0 && b < 0) continue;
      for (let x = 0; x < inW; x++) {
        const v = source[oh * inW + x];
        if (a >= 0) add(out, a * inW + x, th.w0[oh], v);
        if (b >= 0) add(out, b * inW + x, th.w1[oh], v);
      }
    }
  }
  return result;
}

/**
 * Runs a call's Cube kernel on host views (any strides, any dtype: 16-bit widened exactly, the
 * float32 result rounded once, as the op_api's casts around the kernel do). A 1d call is the 2d
 * kernel on `(N, C, 1, L)` with `scale_h = 1` (its H pass skipped).
 *
 * @example
 * ```ts
 * import { runCubeCpu } from "./cube_a2.ts";
 * const gradOutput = { data: new Float32Array([1, 2, 3, 4]), dtype: "float32", strides: [4, 4, 1], offset: 0 } as const;
 * const out = { data: new Float32Array(2), dtype: "float32", strides: [2, 2, 1], offset: 0 } as const;
 * runCubeCpu({ gradOutput, out, inputSize: [1, 1, 2], outputSize: [4], scales: [0], alignCorners: false }, "nearestExact1d");
 * // out.data: [3, 7]
 * ```
 */
export function runCubeCpu(args: BilinearBackwardArgs, op: UpsampleParams["op"]): void {
  const one = op === "nearestExact1d";
  const [n, c] = args.inputSize;
  const inH = one ? 1 : args.inputSize[2], inW = args.inputSize[one ? 2 : 3];
  const outH = one ? 1 : args.outputSize[0], outW = args.outputSize[one ? 0 : 1];
  const view = (v: BilinearBackwardArgs["out"]) =>
    one ? { ...v, strides: [v.strides[0], v.strides[1], 0, v.strides[2]] } : v;
  const args2d = {
    ...args,
    gradOutput: view(args.gradOutput),
    out: view(args.out),
    inputSize: [n, c, inH, inW],
    outputSize: [outH, outW],
  };
  // The taps are built only for a nonempty result (runOnPlanes skips the kernel otherwise).
  runOnPlanes(args2d, { inH, inW, outH, outW }, (grad, planes) => {
    const th = one
      ? {
        i0: Int32Array.of(0),
        i1: Int32Array.of(-1),
        w0: Float32Array.of(1),
        w1: Float32Array.of(0),
        skip: true,
      }
      : cubeTaps(op, inH, outH, args.alignCorners, args.scales[0]);
    const tw = cubeTaps(op, inW, outW, args.alignCorners, args.scales[one ? 0 : 1]);
    return cubeTwoPass(grad, planes, inH, inW, outH, outW, th, tw);
  });
}
