/**
 * Bilinear 2d backward with PyTorch >= 2.0 CPU semantics in float32: coordinates and weights in
 * float32, a scatter per output pixel in row-major order with the four updates 00, 01, 10, 11,
 * each `acc = fl32(acc + fl32(fl32(lh * lw) * g))`, into a float32 plane rounded once at the end.
 *
 * @module
 */

import type { LinearTable } from "../../../rules/pytorch.ts";
import { dimensionRule, linearTable } from "../../../rules/tables.ts";
import { RowReader, RowWriter, scratchBuffer } from "../../strided.ts";
import type { BilinearBackwardArgs } from "../../types.ts";

/**
 * One output row `oh` of four channels at once (plane `k` at `planeBase + k * planeStride`, its
 * gradient row at `rowBase + k * gradStride`): the indices and corner weights are loaded once per
 * pixel; each plane gets its four updates in the usual 00, 01, 10, 11 order.
 */
function scatterRowQuad(
  plane: Float32Array,
  planeBase: number,
  planeStride: number,
  grad: Float32Array,
  rowBase: number,
  gradStride: number,
  step: number,
  oh: number,
  th: LinearTable,
  tw: LinearTable,
  inW: number,
): void {
  const wi0 = tw.i0, wi1 = tw.i1, wl0 = tw.l0, wl1 = tw.l1;
  const lh0 = th.l0[oh], lh1 = th.l1[oh];
  const r0 = planeBase + th.i0[oh] * inW, r1 = planeBase + th.i1[oh] * inW;
  const outW = wi0.length;
  for (let ow = 0, g0 = rowBase; ow < outW; ow++, g0 += step) {
    const w0 = wi0[ow], w1 = wi1[ow], lw0 = wl0[ow], lw1 = wl1[ow];
    const k00 = Math.fround(lh0 * lw0), k01 = Math.fround(lh0 * lw1);
    const k10 = Math.fround(lh1 * lw0), k11 = Math.fround(lh1 * lw1);
    const a = r0 + w0, b = r0 + w1, c = r1 + w0, d = r1 + w1;
    // Unrolled by hand: V8 does not unroll the four channels itself.
    // Float32Array stores round the double sum once: acc = fl32(acc + term).
    let v = grad[g0];
    plane[a] += Math.fround(k00 * v);
    plane[b] += Math.fround(k01 * v);
    plane[c] += Math.fround(k10 * v);
    plane[d] += Math.fround(k11 * v);
    v = grad[g0 + gradStride];
    plane[a + planeStride] += Math.fround(k00 * v);
    plane[b + planeStride] += Math.fround(k01 * v);
    plane[c + planeStride] += Math.fround(k10 * v);
    plane[d + planeStride] += Math.fround(k11 * v);
    v = grad[g0 + 2 * gradStride];
    plane[a + 2 * planeStride] += Math.fround(k00 * v);
    plane[b + 2 * planeStride] += Math.fround(k01 * v);
    plane[c + 2 * planeStride] += Math.fround(k10 * v);
    plane[d + 2 * planeStride] += Math.fround(k11 * v);
    v = grad[g0 + 3 * gradStride];
    plane[a + 3 * planeStride] += Math.fround(k00 * v);
    plane[b + 3 * planeStride] += Math.fround(k01 * v);
    plane[c + 3 * planeStride] += Math.fround(k10 * v);
    plane[d + 3 * planeStride] += Math.fround(k11 * v);
  }
}

/**
 * Backward of `upsample_bilinear2d`: writes into `out` ([N, C, H_in, W_in]) the gradient of the
 * input. `scales` are `[scalesH, scalesW]` (0 = from the sizes; ignored with `alignCorners`).
 * A dimension whose input and output sizes are equal is the identity, as on PyTorch CPU.
 *
 * @example
 * ```ts
 * import { bilinear2dBackwardCpu } from "./bilinear.ts";
 * const out = new Float32Array(2);
 * bilinear2dBackwardCpu({
 *   gradOutput: { data: Float32Array.of(1, 1, 1, 1), dtype: "float32", strides: [4, 4, 4, 1], offset: 0 },
 *   out: { data: out, dtype: "float32", strides: [2, 2, 2, 1], offset: 0 },
 *   inputSize: [1, 1, 1, 2],
 *   outputSize: [1, 4],
 *   scales: [0, 0],
 *   alignCorners: false,
 * });
 * // out = [2, 2]
 * ```
 */
export function bilinear2dBackwardCpu(args: BilinearBackwardArgs): void {
  const { gradOutput, out, inputSize, outputSize, scales, alignCorners } = args;
  if (inputSize.length !== 4 || outputSize.length !== 2 || scales.length !== 2) {
    throw new RangeError("expected a 2d problem: inputSize [N, C, H, W], outputSize [H, W]");
  }
  if (gradOutput.strides.length !== 4 || out.strides.length !== 4) {
    throw new RangeError("gradOutput and out need 4 strides");
  }
  if (gradOutput.dtype !== out.dtype) {
    throw new TypeError(`gradOutput is ${gradOutput.dtype} but out is ${out.dtype}`);
  }
  const [n, c, inH, inW] = inputSize;
  const [outH, outW] = outputSize;
  if (n === 0 || c === 0) return;
  const rule = args.rule ?? "pytorch";
  const th = linearTable(inH, outH, alignCorners, scales[0], dimensionRule(rule, 0));
  const tw = linearTable(inW, outW, alignCorners, scales[1], dimensionRule(rule, 1));
  const hi0 = th.i0, hi1 = th.i1, hl0 = th.l0, hl1 = th.l1;
  const wi0 = tw.i0, wi1 = tw.i1, wl0 = tw.l0, wl1 = tw.l1;
  const gs = gradOutput.strides;
  const os = out.strides;
  const reader = new RowReader(gradOutput, outW, 0);
  const planeSize = inH * inW;
  // A float32 out whose planes are contiguous is accumulated in place; otherwise in a scratch plane.
  const direct = out.dtype === "float32" && (os[3] === 1 || inW === 1) &&
    (os[2] === inW || inH === 1);
  const writer = direct ? undefined : new RowWriter(out, inW);
  const plane = direct ? (out.data as Float32Array) : scratchBuffer(1, planeSize);
  // Float32 rows read in place and planes accumulated in place: four channels share each pixel's
  // indices and corner weights (same per-plane order, so the same bits).
  const quad = direct && reader.zeroCopy;
  for (let ni = 0; ni < n; ni++) {
    for (let ci = 0; ci < c; ci++) {
      const gPlane = gradOutput.offset + ni * gs[0] + ci * gs[1];
      const oPlane = out.offset + ni * os[0] + ci * os[1];
      if (quad && ci + 4 <= c) {
        for (let k = 0; k < 4; k++) {
          plane.fill(0, oPlane + k * os[1], oPlane + k * os[1] + planeSize);
        }
        const grad = gradOutput.data as Float32Array;
        for (let oh = 0; oh < outH; oh++) {
          scatterRowQuad(
            plane,
            oPlane,
            os[1],
            grad,
            gPlane + oh * gs[2],
            gs[1],
            gs[3],
            oh,
            th,
            tw,
            inW,
          );
        }
        ci += 3;
        continue;
      }
      const pb = direct ? oPlane : 0;
      plane.fill(0, pb, pb + planeSize);
      for (let oh = 0; oh < outH; oh++) {
        const src = reader.row(gPlane + oh * gs[2]);
        const base = reader.base;
        const r0 = pb + hi0[oh] * inW;
        const r1 = pb + hi1[oh] * inW;
        const lh0 = hl0[oh];
        const lh1 = hl1[oh];
        for (let ow = 0; ow < outW; ow++) {
          const g = src[base + ow];
          const w0 = wi0[ow];
          const w1 = wi1[ow];
          const lw0 = wl0[ow];
          const lw1 = wl1[ow];
          // Float32Array stores round the double sum once: acc = fl32(acc + term).
          plane[r0 + w0] += Math.fround(Math.fround(lh0 * lw0) * g);
          plane[r0 + w1] += Math.fround(Math.fround(lh0 * lw1) * g);
          plane[r1 + w0] += Math.fround(Math.fround(lh1 * lw0) * g);
          plane[r1 + w1] += Math.fround(Math.fround(lh1 * lw1) * g);
        }
      }
      if (writer !== undefined) {
        for (let ih = 0; ih < inH; ih++) writer.write(oPlane + ih * os[2], plane, ih * inW);
      }
    }
  }
}
