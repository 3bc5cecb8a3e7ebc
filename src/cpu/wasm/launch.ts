/**
 * Runs an op call on the WebAssembly kernels when its tensors allow it: both in the kernels' heap,
 * both contiguous. Index tables come from `../scale.ts` (the same as the TypeScript kernels') and
 * are written into a scratch block next to the kernels' work space.
 *
 * @module
 */

import type { StorageView, UpsampleCall } from "../../backend.ts";
import { isContiguous } from "../../tensor/layout.ts";
import type { CpuBuffer } from "../buffer.ts";
import {
  cachedTable,
  linearIndexTable,
  type LinearTable,
  nearestExactIndexTable,
  rangeStarts,
} from "../scale.ts";
import type { WasmKernels } from "./instance.ts";

const DTYPE_CODE = { float32: 0, float16: 1, bfloat16: 2 } as const;

/** Output ranges of each input index along one dimension, and their shape. */
interface NearestDim {
  starts: Int32Array;
  /** k when input i owns exactly outputs [k i, k i + k), else 0. */
  factor: number;
  maxRange: number;
}

const nearestDims = new Map<string, NearestDim>();
const linearDims = new Map<string, LinearTable>();

function nearestDim(inSize: number, outSize: number, scale: number): NearestDim {
  return cachedTable(nearestDims, `${inSize}:${outSize}:${scale}`, () => {
    const starts = rangeStarts(nearestExactIndexTable(inSize, outSize, scale), inSize);
    let maxRange = 0;
    for (let i = 0; i < inSize; i++) maxRange = Math.max(maxRange, starts[i + 1] - starts[i]);
    const k = starts[1] - starts[0];
    let factor = k;
    for (let i = 0; i <= inSize && factor > 0; i++) if (starts[i] !== i * k) factor = 0;
    return { starts, factor, maxRange };
  });
}

function linearDim(
  inSize: number,
  outSize: number,
  alignCorners: boolean,
  scale: number,
): LinearTable {
  return cachedTable(
    linearDims,
    `${inSize}:${outSize}:${alignCorners}:${scale}`,
    () => linearIndexTable(inSize, outSize, alignCorners, scale),
  );
}

/** Byte address of a view's first element. */
function address(view: StorageView<CpuBuffer>): number {
  return view.handle.ptr + view.offset * (view.dtype === "float32" ? 4 : 2);
}

// Each table starts on a 16-byte boundary.
function align16(bytes: number): number {
  return Math.ceil(bytes / 16) * 16;
}

/**
 * Runs `call` on the wasm kernels and returns true, or returns false (having done nothing) when its
 * tensors are not both contiguous blocks of `kernels`' heap or the scratch space cannot be had.
 *
 * @example
 * ```ts ignore
 * if (!launchWasm(kernels, call)) runTypeScriptKernels(call);
 * ```
 */
export function launchWasm(kernels: WasmKernels, call: UpsampleCall<CpuBuffer>): boolean {
  const { gradOutput, out, inputSize, outputSize, scales } = call;
  const heap = kernels.heap;
  if (gradOutput.handle.heap !== heap || out.handle.heap !== heap) return false;
  if (!isContiguous(gradOutput) || !isContiguous(out)) return false;
  const planes = inputSize[0] * inputSize[1];
  if (planes === 0) return true;
  const twoD = inputSize.length === 4;
  const inH = twoD ? inputSize[2] : 1, inW = inputSize[inputSize.length - 1];
  const outH = twoD ? outputSize[0] : 1, outW = outputSize[outputSize.length - 1];
  const dtype = DTYPE_CODE[call.dtype];
  if (call.op === "bilinear2d") {
    const th = linearDim(inH, outH, call.alignCorners, scales[0]);
    const tw = linearDim(inW, outW, call.alignCorners, scales[1]);
    const hBytes = align16(outH * 4), wBytes = align16(outW * 4);
    const tables = 4 * hBytes + 4 * wBytes;
    const work = kernels.exports.bilinear_scratch_bytes(inH, inW, outH, outW);
    const base = kernels.scratch(tables + work);
    if (base < 0) return false;
    const i32 = kernels.i32, f32 = kernels.f32;
    const h = base, w = base + 4 * hBytes;
    i32.set(th.i0, h >> 2);
    i32.set(th.i1, (h + hBytes) >> 2);
    f32.set(th.l0, (h + 2 * hBytes) >> 2);
    f32.set(th.l1, (h + 3 * hBytes) >> 2);
    i32.set(tw.i0, w >> 2);
    i32.set(tw.i1, (w + wBytes) >> 2);
    f32.set(tw.l0, (w + 2 * wBytes) >> 2);
    f32.set(tw.l1, (w + 3 * wBytes) >> 2);
    kernels.exports.bilinear_backward(
      dtype,
      address(out),
      address(gradOutput),
      planes,
      inH,
      inW,
      outH,
      outW,
      h,
      h + hBytes,
      h + 2 * hBytes,
      h + 3 * hBytes,
      w,
      w + wBytes,
      w + 2 * wBytes,
      w + 3 * wBytes,
      base + tables,
    );
    return true;
  }
  const h = nearestDim(inH, outH, twoD ? scales[0] : 0);
  const w = nearestDim(inW, outW, scales[scales.length - 1]);
  const hBytes = align16((inH + 1) * 4), wBytes = align16((inW + 1) * 4);
  const work = kernels.exports.nearest_scratch_bytes(inW, outW);
  const base = kernels.scratch(hBytes + wBytes + work);
  if (base < 0) return false;
  const i32 = kernels.i32;
  i32.set(h.starts, base >> 2);
  i32.set(w.starts, (base + hBytes) >> 2);
  kernels.exports.nearest_backward(
    dtype,
    address(out),
    address(gradOutput),
    planes,
    inH,
    inW,
    outW,
    base,
    base + hBytes,
    w.factor,
    w.maxRange,
    base + hBytes + wBytes,
  );
  return true;
}
