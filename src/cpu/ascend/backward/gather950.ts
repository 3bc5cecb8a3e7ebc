/**
 * The Ascend 950's deterministic SIMT gathers of ResizeBilinearV2Grad (DETERMINE,
 * DETERMINE_SCALES) as the kernels compute them: one thread per result cell sums the gradient
 * positions whose forward sample lands within one cell of it into a float32 accumulator starting at
 * 0, gradient rows outer and columns inner, both ascending, and the sum is cast once to the result's
 * dtype. Written from `hicann/ops-cv` `image/resize_bilinear_v2_grad/op_kernel/arch35/`:
 * `resize_bilinear_v2_grad_simt_determine.h` (SimtCompute) and
 * `resize_bilinear_v2_grad_simt_determine_scales.h` (SimtScalesCompute, CalcSourceIndex,
 * CalcInternalPoint, CalcHBoundaryPoint, CalcWBoundaryPoint, CalcCornerPoint); the scales are the
 * tiling's SetScales(true) (`rules/ascend950_route.ts`). Where the source leaves `a * b + c` to the
 * compiler (the start coordinates, CalcSourceIndex, `acc += a * b * c`) it is fused or not as the
 * target's `fma` says. No atomics: every order is fixed, so the result is the device's bit for bit.
 *
 * @module
 */

import { bilinearRoute950 } from "../../../rules/ascend950_route.ts";
import { mulAddF32 } from "../../../rules/float32.ts";
import type { AscendTarget } from "../../../rules/numerics.ts";
import type { UpsampleParams } from "../../../rules/ops.ts";
import type { BilinearBackwardArgs } from "../../types.ts";
import { type PlaneSizes, planeSizesOf, runOnPlanes } from "./planes.ts";

const f = Math.fround;

/** One gather launch: sizes, the kernel and its tiling's scales. */
export interface Gather950Launch extends PlaneSizes {
  /** DETERMINE (running coordinate sums) or DETERMINE_SCALES (coordinates recomputed). */
  readonly kernel: "determine" | "determine-scales";
  /** `[scaleH, scaleW]`: SetScales(true), gradient cells per image cell. */
  readonly scales: readonly number[];
  /** Align corners (else half-pixel centres). */
  readonly alignCorners: boolean;
  /** Whether the compiler fuses the kernels' multiply-adds. */
  readonly fma: boolean;
}

// One dimension as the kernels read it.
interface Axis {
  readonly len: number; // image cells
  readonly grad: number; // gradient cells
  readonly s: number;
  readonly inv: number;
}

/**
 * The gather on `planes` contiguous float32 gradient planes (`outH x outW` each), giving the
 * float32 result planes (`inH x inW` each) before the cast to the result's dtype.
 *
 * @example
 * ```ts
 * import { gather950 } from "./gather950.ts";
 * const launch = { inH: 1, inW: 2, outH: 1, outW: 4, kernel: "determine", scales: [1, 0.5], alignCorners: false, fma: true } as const;
 * gather950(new Float32Array([1, 1, 1, 1]), 1, launch); // Float32Array [2, 2]
 * ```
 */
export function gather950(
  grad: Float32Array,
  planes: number,
  launch: Gather950Launch,
): Float32Array {
  const { inH, inW, outH, outW, fma } = launch;
  const half = !launch.alignCorners;
  const off = half ? 0.5 : 0;
  const axis = (len: number, gradLen: number, s: number): Axis => ({
    len,
    grad: gradLen,
    s,
    inv: f(1 / s),
  });
  const ay = axis(inH, outH, launch.scales[0]), ax = axis(inW, outW, launch.scales[1]);
  // SimtCompute's preamble: the first gradient index and its coordinate, per image index.
  const starts = (a: Axis): { first: Int32Array; coord: Float32Array } => {
    const first = new Int32Array(a.len), coord = new Float32Array(a.len);
    for (let i = 0; i < a.len; i++) {
      const x = Math.ceil(mulAddF32(f(f(i - 1) + off), a.inv, -off, fma));
      first[i] = Number.isNaN(x) ? 0 : Math.max(Math.min(x, 2 ** 31 - 1), 0);
      coord[i] = mulAddF32(f(first[i] + off), a.s, -off, fma);
    }
    return { first, coord };
  };
  const sy = starts(ay), sx = starts(ax);
  // CalcSourceIndex: the coordinate of gradient index i (DETERMINE_SCALES recomputes it).
  const source = (a: Axis, i: number): number =>
    half ? mulAddF32(a.s, f(f(i) + 0.5), -0.5, fma) : f(a.s * i);
  const clamp = (v: number, len: number): number => Math.max(0, Math.min(v, f(len - 1)));
  const result = new Float32Array(planes * inH * inW);
  const scales = launch.kernel === "determine-scales";
  for (let p = 0; p < planes; p++) {
    const g = grad.subarray(p * outH * outW, (p + 1) * outH * outW);
    for (let h = 0; h < inH; h++) {
      const edgeY = scales && (h === 0 || h === inH - 1);
      for (let w = 0; w < inW; w++) {
        const edgeX = scales && (w === 0 || w === inW - 1);
        let acc = 0, outY = sy.coord[h];
        for (let inY = sy.first[h]; (edgeY || outY < h + 1) && inY < outH;) {
          let outX = sx.coord[w];
          const cy = clamp(outY, inH);
          const yl = f(1 - Math.abs(f(cy - h)));
          for (let inX = sx.first[w]; (edgeX || outX < w + 1) && inX < outW;) {
            const gv = g[inY * outW + inX];
            const cx = clamp(outX, inW);
            const xl = f(1 - Math.abs(f(cx - w)));
            if (!edgeY && !edgeX) acc = mulAddF32(f(gv * yl), xl, acc, fma); // CalcInternalPoint
            else acc = edgeTerms(acc, gv, cy, cx, yl, xl, h, w, edgeY, edgeX, inH, inW, fma);
            inX++;
            outX = scales ? source(ax, inX) : f(outX + ax.s);
          }
          inY++;
          outY = scales ? source(ay, inY) : f(outY + ay.s);
        }
        result[(p * inH + h) * inW + w] = acc;
      }
    }
  }
  return result;
}

// DETERMINE_SCALES on an edge row or column: a term counts where its floor index (or the next)
// is the cell, with that side's weight (CalcWBoundaryPoint, CalcHBoundaryPoint, CalcCornerPoint).
function edgeTerms(
  acc: number,
  g: number,
  cy: number,
  cx: number,
  yl: number,
  xl: number,
  h: number,
  w: number,
  edgeY: boolean,
  edgeX: boolean,
  inH: number,
  inW: number,
  fma: boolean,
): number {
  const yt = Math.min(Math.floor(cy), inH - 1), xt = Math.min(Math.floor(cx), inW - 1);
  const lepy = [yl, f(cy - yt)], lepx = [xl, f(cx - xt)];
  if (!edgeY) {
    for (let j = 0; j < 2; j++) if (xt + j === w) acc = mulAddF32(f(g * lepx[j]), yl, acc, fma);
    return acc;
  }
  if (!edgeX) {
    for (let i = 0; i < 2; i++) if (yt + i === h) acc = mulAddF32(f(g * lepy[i]), xl, acc, fma);
    return acc;
  }
  for (let i = 0; i < 2; i++) {
    for (let j = 0; j < 2; j++) {
      if (yt + i === h && xt + j === w) acc = mulAddF32(f(g * lepx[j]), lepy[i], acc, fma);
    }
  }
  return acc;
}

/**
 * The gather launch of a 950 bilinear call, or null when the tiling picks another kernel.
 *
 * @example
 * ```ts
 * import { gather950LaunchOf } from "./gather950.ts";
 * const call = { op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 4, 4], outputSize: [8, 8], scales: [0, 0], alignCorners: false, deterministic: true } as const;
 * gather950LaunchOf(call, { generation: "950", bilinearApi: "v2", fma: true })?.kernel; // "determine"
 * ```
 */
export function gather950LaunchOf(
  call: UpsampleParams & { readonly deterministic: boolean },
  target: AscendTarget,
): Gather950Launch | null {
  const route = bilinearRoute950(call, {
    api: target.bilinearApi,
    deterministic: call.deterministic,
  });
  if (route.kernel !== "determine" && route.kernel !== "determine-scales") return null;
  return {
    ...planeSizesOf(call),
    kernel: route.kernel,
    scales: route.scales,
    alignCorners: call.alignCorners,
    fma: target.fma,
  };
}

/**
 * Runs a gather launch for a bilinear call on host views (any strides, any dtype): gradOutput
 * widened to float32, the float32 sums rounded once to out's dtype.
 *
 * @example
 * ```ts
 * import { runGather950Cpu } from "./gather950.ts";
 * const gradOutput = { data: new Float32Array(4).fill(1), dtype: "float32", strides: [4, 4, 4, 1], offset: 0 } as const;
 * const out = { data: new Float32Array(2), dtype: "float32", strides: [2, 2, 2, 1], offset: 0 } as const;
 * const args = { gradOutput, out, inputSize: [1, 1, 1, 2], outputSize: [1, 4], scales: [0, 0], alignCorners: false };
 * runGather950Cpu(args, { inH: 1, inW: 2, outH: 1, outW: 4, kernel: "determine", scales: [1, 2], alignCorners: false, fma: true });
 * ```
 */
export function runGather950Cpu(args: BilinearBackwardArgs, launch: Gather950Launch): void {
  runOnPlanes(args, launch, (grad, planes) => gather950(grad, planes, launch));
}
