/**
 * Bilinear 2d backward with PyTorch >= 2.0 CPU semantics in float32: coordinates and weights in
 * float32, a scatter per output pixel in row-major order with the four updates 00, 01, 10, 11,
 * each `acc = fl32(acc + fl32(fl32(lh * lw) * g))`, into a float32 plane rounded once at the end.
 *
 * @module
 */

import { cachedTable, linearIndexTable, type LinearTable } from "./scale.ts";
import { RowReader, RowWriter, scratchBuffer } from "./strided.ts";
import type { BilinearBackwardArgs } from "./types.ts";

const tables = new Map<string, LinearTable>();

function tableFor(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scale: number,
): LinearTable {
  return cachedTable(
    tables,
    `${inSize}:${outSize}:${alignCorners}:${scale}`,
    () => linearIndexTable(inSize, outSize, alignCorners, scale),
  );
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
  const th = tableFor(inH, outH, alignCorners, scales[0]);
  const tw = tableFor(inW, outW, alignCorners, scales[1]);
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
  for (let ni = 0; ni < n; ni++) {
    for (let ci = 0; ci < c; ci++) {
      const gPlane = gradOutput.offset + ni * gs[0] + ci * gs[1];
      const oPlane = out.offset + ni * os[0] + ci * os[1];
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
