/**
 * Runs an op call on the WebAssembly kernels when its tensors allow it: both in the kernels' heap,
 * both contiguous. Index tables come from `src/rules/` (the same as the TypeScript kernels') and
 * are written into a scratch block in front of the kernels' work space, once per shape: a plan
 * records them, and a call on the shape of the previous call reuses tables already in place.
 *
 * @module
 */

import type { UpsampleCall, UpsampleOp } from "../../backend.ts";
import { isContiguous } from "../../tensor/layout.ts";
import type { CpuBuffer } from "../buffer.ts";
import { longestRange, uniformFactor } from "../../rules/pytorch.ts";
import {
  cachedTable,
  dimensionRule,
  linearTable,
  nearestTables,
  type TableRule,
} from "../../rules/tables.ts";
import type { WasmKernels } from "./instance.ts";
import {
  address,
  align16,
  DTYPE_CODE,
  placePlan,
  type PreparedCall,
  tableLayout,
} from "./prepared.ts";

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
  readonly rule: TableRule;
  /** Tables, each written at `offsets[i]` bytes from the scratch base. */
  readonly tables: readonly (Int32Array | Float32Array)[];
  readonly offsets: readonly number[];
  /** Where the work space starts, in bytes from the scratch base (after the tables). */
  readonly workOffset: number;
  /** Bytes of work space per thread (16-byte multiple). */
  readonly workBytes: number;
  /** Nearest only: k when input w owns exactly outputs [k w, k w + k), else 0. */
  readonly wFactor: number;
  /** Nearest only: the longest output range of an input along w. */
  readonly maxRange: number;
  /** Bilinear only: output pixel (oh, ow) reads rows 2 oh, 2 oh + 1 and columns 2 ow, 2 ow + 1. */
  readonly down2: boolean;
  /** Rows the kernel's (row0, row1) range over: input rows, or output rows for down2. */
  readonly rows: number;
  /** Whether bands of rows give the same bits as whole planes (see bilinear.c). */
  readonly bandable: boolean;
}

// Whether a linear table maps output o to inputs 2 o and 2 o + 1 over an input twice as long.
function halves(t: { i0: Int32Array; i1: Int32Array }, inSize: number): boolean {
  if (inSize !== 2 * t.i0.length) return false;
  for (let o = 0; o < t.i0.length; o++) {
    if (t.i0[o] !== 2 * o || t.i1[o] !== 2 * o + 1) return false;
  }
  return true;
}

// Whether bands of input rows are exact for bilinear: h0 never decreases and h1 is h0 or h0 + 1.
function bandsExact(i0: Int32Array, i1: Int32Array): boolean {
  for (let o = 0; o < i0.length; o++) {
    if ((o > 0 && i0[o] < i0[o - 1]) || i1[o] - i0[o] < 0 || i1[o] - i0[o] > 1) return false;
  }
  return true;
}

const plans = new Map<string, Plan>();

// The plan of these sizes, cached or built. Apart from prepareWasm, which runs on every call: a
// closure there makes V8 allocate a context for what it captures on each call, taken or not.
function planOf(
  kernels: WasmKernels,
  op: UpsampleOp,
  inH: number,
  inW: number,
  outH: number,
  outW: number,
  scaleH: number,
  scaleW: number,
  alignCorners: boolean,
  rule: TableRule,
): Plan {
  const key = `${rule}:${op}:${inH}:${inW}:${outH}:${outW}:${scaleH}:${scaleW}:${alignCorners}`;
  return cachedTable(plans, key, (): Plan => {
    const tables: (Int32Array | Float32Array)[] = [];
    let wFactor = 0, maxRange = 0, down2 = false, bandable = true, work: number;
    if (op === "bilinear2d") {
      const th = linearTable(inH, outH, alignCorners, scaleH, dimensionRule(rule, 0));
      const tw = linearTable(inW, outW, alignCorners, scaleW, dimensionRule(rule, 1));
      tables.push(th.i0, th.i1, th.l0, th.l1, tw.i0, tw.i1, tw.l0, tw.l1);
      down2 = halves(th, inH) && halves(tw, inW);
      bandable = down2 || bandsExact(th.i0, th.i1);
      work = down2 ? 0 : kernels.exports.bilinear_scratch_bytes(inH, inW, outH, outW);
    } else {
      const hStarts = nearestTables(inH, outH, scaleH, rule).starts;
      const wStarts = nearestTables(inW, outW, scaleW, rule).starts;
      maxRange = longestRange(wStarts);
      wFactor = uniformFactor(wStarts);
      tables.push(hStarts, wStarts);
      work = kernels.exports.nearest_scratch_bytes(inW, outW);
    }
    const { offsets, workOffset } = tableLayout(tables);
    return {
      op,
      inH,
      inW,
      outH,
      outW,
      scaleH,
      scaleW,
      alignCorners,
      rule,
      tables,
      offsets,
      workOffset,
      workBytes: align16(work),
      wFactor,
      maxRange,
      down2,
      rows: down2 ? outH : inH,
      bandable,
    };
  });
}

const prepared: PreparedCall = {
  kernel: "nearest_backward",
  args: [],
  planes: 0,
  outPlaneBytes: 0,
  gradPlaneBytes: 0,
  workArg: -1,
  workBytes: 0,
  elements: 0,
  rows: 0,
  bandable: false,
};

/**
 * Whether `call` can run on the wasm kernels: both tensors contiguous blocks of `kernels`' heap.
 *
 * @example
 * ```ts ignore
 * if (wasmEligible(kernels, call)) runPrepared(kernels, prepareWasm(kernels, call, 1)!);
 * ```
 */
export function wasmEligible(kernels: WasmKernels, call: UpsampleCall<CpuBuffer>): boolean {
  const { gradOutput, out } = call;
  return gradOutput.handle.heap === kernels.heap && out.handle.heap === kernels.heap &&
    isContiguous(gradOutput) && isContiguous(out);
}

/**
 * Looks up the plan of an eligible `call`, writes its tables into the scratch block (unless already
 * there) with work space for `slots` threads, and returns the kernel call (a shared record, valid
 * until the next call), or null when the scratch space cannot be had.
 *
 * @example
 * ```ts ignore
 * const ready = prepareWasm(kernels, call, 1);
 * if (ready !== null) runPrepared(kernels, ready);
 * ```
 */
export function prepareWasm(
  kernels: WasmKernels,
  call: UpsampleCall<CpuBuffer>,
  slots: number,
): PreparedCall | null {
  const { inputSize, outputSize, scales } = call;
  // 1d runs as 2d with one row.
  const twoD = inputSize.length === 4;
  const inH = twoD ? inputSize[2] : 1, inW = inputSize[inputSize.length - 1];
  const outH = twoD ? outputSize[0] : 1, outW = outputSize[outputSize.length - 1];
  const scaleH = twoD ? scales[0] : 0, scaleW = scales[scales.length - 1];
  const alignCorners = call.op === "bilinear2d" && call.alignCorners;
  const rule = call.rule ?? "pytorch";
  let plan = kernels.plan as Plan | null;
  if (
    plan === null || plan.op !== call.op || plan.inH !== inH || plan.inW !== inW ||
    plan.outH !== outH || plan.outW !== outW || !Object.is(plan.scaleH, scaleH) ||
    !Object.is(plan.scaleW, scaleW) || plan.alignCorners !== alignCorners ||
    plan.rule !== rule
  ) {
    plan = planOf(kernels, call.op, inH, inW, outH, outW, scaleH, scaleW, alignCorners, rule);
  }
  const base = placePlan(kernels, plan, slots);
  if (base < 0) return null;
  // Written by index: `length = 0` and push would drop and regrow the array's store every call.
  const at = plan.offsets, work = base + plan.workOffset, args = prepared.args;
  const size = call.dtype === "float32" ? 4 : 2;
  let n = 0;
  args[n++] = DTYPE_CODE[call.dtype];
  args[n++] = address(call.out);
  args[n++] = address(call.gradOutput);
  args[n++] = inputSize[0] * inputSize[1];
  prepared.planes = args[3];
  prepared.outPlaneBytes = inH * inW * size;
  prepared.gradPlaneBytes = outH * outW * size;
  prepared.elements = args[3] * (inH * inW + outH * outW);
  prepared.workBytes = plan.workBytes;
  if (plan.down2) {
    prepared.kernel = "bilinear_down2";
    args[n++] = outH;
    args[n++] = outW;
    args[n++] = base + at[2];
    args[n++] = base + at[3];
    args[n++] = base + at[6];
    args[n++] = base + at[7];
    prepared.workArg = -1;
  } else if (call.op === "bilinear2d") {
    prepared.kernel = "bilinear_backward";
    args[n++] = inH;
    args[n++] = inW;
    args[n++] = outH;
    args[n++] = outW;
    for (let i = 0; i < 8; i++) args[n++] = base + at[i];
    prepared.workArg = n;
    args[n++] = work;
  } else {
    prepared.kernel = "nearest_backward";
    args[n++] = inH;
    args[n++] = inW;
    args[n++] = outW;
    args[n++] = base + at[0];
    args[n++] = base + at[1];
    args[n++] = plan.wFactor;
    args[n++] = plan.maxRange;
    prepared.workArg = n;
    args[n++] = work;
  }
  // The whole planes: row0, row1.
  args[n++] = 0;
  args[n++] = plan.rows;
  args.length = n;
  prepared.rows = plan.rows;
  prepared.bandable = plan.bandable;
  return prepared;
}
