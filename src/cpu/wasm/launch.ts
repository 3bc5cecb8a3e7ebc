/**
 * Runs an op call on the WebAssembly kernels when its tensors allow it: both in the kernels' heap,
 * both contiguous. Index tables come from `../scale.ts` (the same as the TypeScript kernels') and
 * are written into a scratch block in front of the kernels' work space, once per shape: a plan
 * records them, and a call on the shape of the previous call reuses tables already in place.
 *
 * @module
 */

import type { StorageView, UpsampleCall, UpsampleOp } from "../../backend.ts";
import { isContiguous } from "../../tensor/layout.ts";
import type { CpuBuffer } from "../buffer.ts";
import {
  cachedTable,
  linearIndexTable,
  longestRange,
  nearestExactIndexTable,
  rangeStarts,
  uniformFactor,
} from "../scale.ts";
import type { WasmKernels } from "./instance.ts";

const DTYPE_CODE = { float32: 0, float16: 1, bfloat16: 2 } as const;

/** What a kernel call needs besides the tensors: sizes, tables and scratch layout. */
interface Plan {
  readonly op: UpsampleOp;
  readonly inH: number;
  readonly inW: number;
  readonly outH: number;
  readonly outW: number;
  readonly scaleH: number;
  readonly scaleW: number;
  readonly alignCorners: boolean;
  /** Tables, each written at `offsets[i]` bytes from the scratch base. */
  readonly tables: readonly (Int32Array | Float32Array)[];
  readonly offsets: readonly number[];
  /** Where the work space starts, in bytes from the scratch base (after the tables). */
  readonly workOffset: number;
  /** Bytes of tables and work space. */
  readonly bytes: number;
  /** Nearest only: k when input w owns exactly outputs [k w, k w + k), else 0. */
  readonly wFactor: number;
  /** Nearest only: the longest output range of an input along w. */
  readonly maxRange: number;
  /** Bilinear only: output pixel (oh, ow) reads rows 2 oh, 2 oh + 1 and columns 2 ow, 2 ow + 1. */
  readonly down2: boolean;
}

// Whether a linear table maps output o to inputs 2 o and 2 o + 1 over an input twice as long.
function halves(t: { i0: Int32Array; i1: Int32Array }, inSize: number): boolean {
  if (inSize !== 2 * t.i0.length) return false;
  for (let o = 0; o < t.i0.length; o++) {
    if (t.i0[o] !== 2 * o || t.i1[o] !== 2 * o + 1) return false;
  }
  return true;
}

const plans = new Map<string, Plan>();

// Each table starts on a 16-byte boundary.
function align16(bytes: number): number {
  return Math.ceil(bytes / 16) * 16;
}

function buildPlan(
  kernels: WasmKernels,
  op: UpsampleOp,
  inH: number,
  inW: number,
  outH: number,
  outW: number,
  scaleH: number,
  scaleW: number,
  alignCorners: boolean,
): Plan {
  const tables: (Int32Array | Float32Array)[] = [];
  let wFactor = 0, maxRange = 0, down2 = false, work: number;
  if (op === "bilinear2d") {
    const th = linearIndexTable(inH, outH, alignCorners, scaleH);
    const tw = linearIndexTable(inW, outW, alignCorners, scaleW);
    tables.push(th.i0, th.i1, th.l0, th.l1, tw.i0, tw.i1, tw.l0, tw.l1);
    down2 = halves(th, inH) && halves(tw, inW);
    work = down2 ? 0 : kernels.exports.bilinear_scratch_bytes(inH, inW, outH, outW);
  } else {
    const hStarts = rangeStarts(nearestExactIndexTable(inH, outH, scaleH), inH);
    const wStarts = rangeStarts(nearestExactIndexTable(inW, outW, scaleW), inW);
    maxRange = longestRange(wStarts);
    wFactor = uniformFactor(wStarts);
    tables.push(hStarts, wStarts);
    work = kernels.exports.nearest_scratch_bytes(inW, outW);
  }
  const offsets: number[] = [];
  let bytes = 0;
  for (const table of tables) {
    offsets.push(bytes);
    bytes += align16(table.byteLength);
  }
  return {
    op,
    inH,
    inW,
    outH,
    outW,
    scaleH,
    scaleW,
    alignCorners,
    tables,
    offsets,
    workOffset: bytes,
    bytes: bytes + work,
    wFactor,
    maxRange,
    down2,
  };
}

/** Byte address of a view's first element. */
function address(view: StorageView<CpuBuffer>): number {
  return view.handle.ptr + view.offset * (view.dtype === "float32" ? 4 : 2);
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
  if (gradOutput.handle.heap !== kernels.heap || out.handle.heap !== kernels.heap) return false;
  if (!isContiguous(gradOutput) || !isContiguous(out)) return false;
  const planes = inputSize[0] * inputSize[1];
  if (planes === 0) return true;
  // 1d runs as 2d with one row.
  const twoD = inputSize.length === 4;
  const inH = twoD ? inputSize[2] : 1, inW = inputSize[inputSize.length - 1];
  const outH = twoD ? outputSize[0] : 1, outW = outputSize[outputSize.length - 1];
  const scaleH = twoD ? scales[0] : 0, scaleW = scales[scales.length - 1];
  const alignCorners = call.op === "bilinear2d" && call.alignCorners;
  let plan = kernels.plan as Plan | null;
  if (
    plan === null || plan.op !== call.op || plan.inH !== inH || plan.inW !== inW ||
    plan.outH !== outH || plan.outW !== outW || !Object.is(plan.scaleH, scaleH) ||
    !Object.is(plan.scaleW, scaleW) || plan.alignCorners !== alignCorners
  ) {
    const key = `${call.op}:${inH}:${inW}:${outH}:${outW}:${scaleH}:${scaleW}:${alignCorners}`;
    plan = cachedTable(
      plans,
      key,
      () => buildPlan(kernels, call.op, inH, inW, outH, outW, scaleH, scaleW, alignCorners),
    );
  }
  const base = kernels.scratch(plan.bytes);
  if (base < 0) return false;
  // Tables are already in place when the previous call had this plan and the same scratch block.
  if (kernels.plan !== plan || kernels.planBase !== base) {
    const i32 = kernels.i32, f32 = kernels.f32;
    for (let i = 0; i < plan.tables.length; i++) {
      const table = plan.tables[i];
      // Element index, not `>> 2`: addresses may pass 2^31 in a 4 GiB memory.
      (table instanceof Int32Array ? i32 : f32).set(table, (base + plan.offsets[i]) / 4);
    }
    kernels.plan = plan;
    kernels.planBase = base;
  }
  const dtype = DTYPE_CODE[call.dtype];
  const at = plan.offsets, work = base + plan.workOffset;
  const outPtr = address(out), gradPtr = address(gradOutput);
  if (plan.down2) {
    kernels.exports.bilinear_down2(
      dtype,
      outPtr,
      gradPtr,
      planes,
      outH,
      outW,
      base + at[2],
      base + at[3],
      base + at[6],
      base + at[7],
    );
  } else if (call.op === "bilinear2d") {
    kernels.exports.bilinear_backward(
      dtype,
      outPtr,
      gradPtr,
      planes,
      inH,
      inW,
      outH,
      outW,
      base + at[0],
      base + at[1],
      base + at[2],
      base + at[3],
      base + at[4],
      base + at[5],
      base + at[6],
      base + at[7],
      work,
    );
  } else {
    kernels.exports.nearest_backward(
      dtype,
      outPtr,
      gradPtr,
      planes,
      inH,
      inW,
      outW,
      base + at[0],
      base + at[1],
      plan.wFactor,
      plan.maxRange,
      work,
    );
  }
  return true;
}
