/**
 * Runs a forward call on the WebAssembly kernels (`src/cpu/wasm/forward_nearest.c`,
 * `forward_bilinear.c`) when its tensors allow it: both contiguous blocks of the kernels' heap. As
 * the backward's `src/cpu/wasm/launch_backward.ts`, the tables come from the rules (the same as the
 * TypeScript kernels', {@link forwardLinearTable}) and are written into the kernels' scratch block
 * once per shape; a prepared call is a {@link PreparedCall}, so the worker-thread plan
 * (`KernelScheduler.run`) runs it as any other, cut into planes and bands of output rows (the same
 * bits at any thread count).
 *
 * @module
 */

import type { StorageView, UpsampleOp } from "../../backend.ts";
import { cachedTable, nearestTables, type TableRule } from "../../rules/tables.ts";
import type { DType } from "../../tensor/dtype.ts";
import { isContiguous } from "../../tensor/layout.ts";
import type { CpuBuffer } from "../buffer.ts";
import type { WasmKernels } from "./instance.ts";
import {
  address,
  align16,
  DTYPE_CODE,
  placePlan,
  type PreparedCall,
  runPrepared,
  tableLayout,
} from "./prepared.ts";
import { bilinearArith, forwardLinearTable, isChannelsLast } from "../pytorch/forward/tables.ts";

/**
 * A forward call on the CPU backend's storage (`ForwardCall<CpuBuffer>` of src/backend.ts fits).
 *
 * @example
 * ```ts ignore
 * const call: WasmForwardCall = {
 *   op: "bilinear2d", dtype: "float32", input, out, inputSize: [1, 3, 8, 8],
 *   outputSize: [16, 16], scales: [0, 0], alignCorners: false,
 * };
 * ```
 */
export interface WasmForwardCall {
  /** Which op. */
  readonly op: UpsampleOp;
  /** Element type of `input` and `out`. */
  readonly dtype: DType;
  /** The input, shape `inputSize`. */
  readonly input: StorageView<CpuBuffer>;
  /** The result, shape `[N, C, ...outputSize]`; fully overwritten. */
  readonly out: StorageView<CpuBuffer>;
  /** `[N, C, L]` or `[N, C, H, W]`. */
  readonly inputSize: readonly number[];
  /** `[L]` or `[H, W]`. */
  readonly outputSize: readonly number[];
  /** Scale factors per spatial dimension; 0: from the sizes. */
  readonly scales: readonly number[];
  /** Bilinear only. */
  readonly alignCorners: boolean;
  /** Whose tables (default `"pytorch"`). */
  readonly rule?: TableRule;
}

/** bilinear_forward's modes (forward_bilinear.c). */
const MODE_F32 = 0, MODE_BF16 = 1, MODE_TAIL_F32 = 2, MODE_TAIL_BF16 = 3;

interface Plan {
  readonly key: string;
  /** What the plan was built for, compared before a key is built (a loop repeats one call). */
  readonly call: {
    readonly op: string;
    readonly dtype: string;
    readonly rule: string;
    readonly alignCorners: boolean;
    readonly sizes: readonly number[];
  };
  readonly tables: readonly (Int32Array | Float32Array)[];
  readonly offsets: readonly number[];
  readonly workOffset: number;
  readonly workBytes: number;
  readonly mode: number;
  /** nearest_forward's column pattern: 1 ow, 2 ow / 2, 3 2 ow + 1, 0 any other. */
  readonly pattern: number;
}

const plans = new Map<string, Plan>();

/** The column map's pattern for nearest_forward (PATTERN_* of forward_nearest.c). */
function columnPattern(index: Int32Array, inW: number): number {
  const outW = index.length;
  const all = (f: (ow: number) => number): boolean => {
    for (let ow = 0; ow < outW; ow++) if (index[ow] !== f(ow)) return false;
    return true;
  };
  if (outW === inW && all((ow) => ow)) return 1;
  if (all((ow) => ow >> 1)) return 2;
  if (2 * outW <= inW && all((ow) => 2 * ow + 1)) return 3;
  return 0;
}

/**
 * The shuffle groups of nearest_forward (gather_group_t of forward_nearest.c): per 16 bytes of
 * output (16 / size columns, from column `out`), the input column a load starts at and the byte
 * masks of the 16 bytes there (kind 1) or of the 32 bytes (kind 2: the first vector's mask, then
 * the second's, 0x80 where the other holds the byte), or kind 0 when the inputs do not fit in a row
 * that long. Groups at columns 0, per, ... and, when outW % per != 0 (and outW >= per), one ending
 * at outW (overlapping the one before). A load starts early rather than pass the row's end. 12
 * int32 per group.
 */
function gatherGroups(index: Int32Array, inW: number, size: number): Int32Array {
  const per = 16 / size, outW = index.length, full = Math.floor(outW / per);
  const count = full + (full > 0 && outW % per !== 0 ? 1 : 0);
  const groups = new Int32Array(12 * count);
  const bytes = new Uint8Array(groups.buffer);
  for (let g = 0; g < count; g++) {
    const out = g < full ? g * per : outW - per;
    let lo = Infinity, hi = -Infinity;
    for (let j = 0; j < per; j++) {
      lo = Math.min(lo, index[out + j]);
      hi = Math.max(hi, index[out + j]);
    }
    const one = Math.min(lo, inW - per), two = Math.min(lo, inW - 2 * per);
    const kind = one >= 0 && hi - one < per ? 1 : two >= 0 && hi - two < 2 * per ? 2 : 0;
    const start = kind === 1 ? one : kind === 2 ? two : 0;
    groups[12 * g] = start * size;
    groups[12 * g + 1] = out * size;
    groups[12 * g + 2] = kind;
    if (kind === 0) continue;
    for (let j = 0; j < per; j++) {
      for (let b = 0; b < size; b++) {
        const byte = (index[out + j] - start) * size + b;
        bytes[48 * g + 16 + j * size + b] = byte < 16 ? byte : 0x80;
        if (kind === 2) bytes[48 * g + 32 + j * size + b] = byte >= 16 ? byte - 16 : 0x80;
      }
    }
  }
  for (let g = count - 1; g >= 0; g--) {
    if (groups[12 * g + 2] === 1) {
      groups[12 * g + 3] = 1 + (g + 1 < count ? groups[12 * g + 15] : 0);
    }
  }
  return groups;
}

/**
 * weight_class of forward_bilinear.c: 1 a power of two or zero, 2 more than 8 significant bits,
 * else 0.
 */
function weightClass(w: number): number {
  const bits = new Uint32Array(new Float32Array([w]).buffer)[0];
  if ((bits & 0x7f800000) === 0x7f800000) return 0;
  if ((bits & 0x007fffff) === 0) return 1;
  return (bits & 0xffff) !== 0 ? 2 : 0;
}

/**
 * The groups of bilinear_forward's gather4: per four output columns, the first input column and the
 * byte masks selecting columns i0 and i1 from the 16 bytes there (kind 1) or the 32 bytes (kind 2:
 * masks of the first vector, then of the second, 0x80 where the other vector holds the byte), kind
 * 3 for the even and odd columns of the 32 bytes (an exact 2x downscale), or kind 0 when they do
 * not fit (or the loads would pass the row's end); and the class of the group's l0 (weight_class of
 * forward_bilinear.c, one for the four; 0 when they differ). 20 int32 per group.
 */
function lerpGroups(i0: Int32Array, i1: Int32Array, l0: Float32Array, inW: number): Int32Array {
  const count = Math.floor(i0.length / 4);
  const groups = new Int32Array(20 * count);
  const bytes = new Uint8Array(groups.buffer);
  for (let g = 0; g < count; g++) {
    let start = Infinity, end = -Infinity;
    const classes = new Set<number>();
    for (let j = 0; j < 4; j++) {
      start = Math.min(start, i0[4 * g + j], i1[4 * g + j]);
      end = Math.max(end, i0[4 * g + j], i1[4 * g + j]);
      classes.add(weightClass(l0[4 * g + j]));
    }
    // One class for the four lanes; mixed groups take the general fma4 (class 0).
    groups[20 * g + 2] = classes.size === 1 ? [...classes][0] : 0;
    let down2 = start + 8 <= inW;
    for (let j = 0; j < 4; j++) {
      if (i0[4 * g + j] !== start + 2 * j || i1[4 * g + j] !== start + 2 * j + 1) down2 = false;
    }
    const kind = down2
      ? 3
      : end - start < 4 && start + 4 <= inW
      ? 1
      : end - start < 8 && start + 8 <= inW
      ? 2
      : 0;
    groups[20 * g] = start;
    groups[20 * g + 1] = kind;
    if (kind === 0 || kind === 3) continue;
    for (let j = 0; j < 4; j++) {
      for (let b = 0; b < 4; b++) {
        for (const [m, column] of [[0, i0[4 * g + j]], [1, i1[4 * g + j]]]) {
          const byte = 4 * (column - start) + b;
          bytes[80 * g + 16 + 16 * m + 4 * j + b] = byte < 16 ? byte : 0x80;
          if (kind === 2) bytes[80 * g + 48 + 16 * m + 4 * j + b] = byte >= 16 ? byte - 16 : 0x80;
        }
      }
    }
  }
  return groups;
}

function buildPlan(kernels: WasmKernels, call: WasmForwardCall, key: string): Plan {
  const { inputSize, outputSize, scales } = call;
  const rule = call.rule ?? "pytorch";
  const twoD = inputSize.length === 4;
  const inH = twoD ? inputSize[2] : 1, inW = inputSize[inputSize.length - 1];
  const outH = twoD ? outputSize[0] : 1, outW = outputSize[outputSize.length - 1];
  let tables: (Int32Array | Float32Array)[];
  let work = 0, mode = -1, pattern = 0;
  if (call.op === "bilinear2d") {
    const arith = bilinearArith(call.dtype, rule);
    const ac = call.alignCorners;
    const th = forwardLinearTable(inH, outH, ac, scales[0], arith, rule, 0);
    const tw = forwardLinearTable(inW, outW, ac, scales[1], arith, rule, 1);
    tables = [
      th.i0,
      th.i1,
      th.l0,
      th.l1,
      tw.i0,
      tw.i1,
      tw.l0,
      tw.l1,
      lerpGroups(tw.i0, tw.i1, tw.l0, inW),
    ];
    const tail = rule === "pytorch" && inputSize[1] === 1;
    mode = arith === "bfloat16"
      ? (tail ? MODE_TAIL_BF16 : MODE_BF16)
      : (tail ? MODE_TAIL_F32 : MODE_F32);
    work = kernels.exports.bilinear_forward_scratch_bytes(inW, outW);
  } else {
    const hIdx = twoD ? nearestTables(inH, outH, scales[0], rule).index : Int32Array.of(0);
    const wIdx = nearestTables(inW, outW, scales[scales.length - 1], rule).index;
    tables = [hIdx, wIdx, gatherGroups(wIdx, inW, call.dtype === "float32" ? 4 : 2)];
    pattern = columnPattern(wIdx, inW);
  }
  const { offsets, workOffset } = tableLayout(tables);
  const planned = {
    op: call.op,
    dtype: call.dtype,
    rule,
    alignCorners: call.alignCorners,
    sizes: [...inputSize, ...outputSize, ...scales],
  };
  return {
    key,
    call: planned,
    tables,
    offsets,
    workOffset,
    workBytes: align16(work),
    mode,
    pattern,
  };
}

/**
 * Whether `call` can run on the wasm kernels: input and out contiguous blocks of `kernels`' heap,
 * and not one of the layouts only the TypeScript kernels reproduce (bilinear on a contiguous input
 * PyTorch also sees as channels-last with C > 1: H = W = 1).
 *
 * @example
 * ```ts ignore
 * if (!wasmForwardEligible(kernels, call)) bilinear2dForwardCpu(args);
 * ```
 */
export function wasmForwardEligible(kernels: WasmKernels, call: WasmForwardCall): boolean {
  const { input, out } = call;
  if (input.handle.heap !== kernels.heap || out.handle.heap !== kernels.heap) return false;
  if (!isContiguous(input) || !isContiguous(out)) return false;
  if (call.op !== "bilinear2d" || (call.rule ?? "pytorch") !== "pytorch") return true;
  return call.inputSize[1] === 1 || !isChannelsLast(call.inputSize, input.strides);
}

const prepared: PreparedCall = {
  kernel: "nearest_forward",
  args: [],
  planes: 0,
  outPlaneBytes: 0,
  gradPlaneBytes: 0,
  workArg: -1,
  workBytes: 0,
  elements: 0,
  rows: 0,
  bandable: true,
};

// The call's plan, cached or built. Apart from prepareWasmForward, which runs on every call: a
// closure there makes V8 allocate a context for what it captures on each call, taken or not.
function planOf(kernels: WasmKernels, call: WasmForwardCall, rule: string): Plan {
  const { inputSize, outputSize, scales } = call;
  const key = `fwd:${rule}:${call.op}:${call.dtype}:${inputSize[1] === 1}:` +
    `${inputSize.join(",")}:${outputSize.join(",")}:${scales.join(",")}:${call.alignCorners}`;
  return cachedTable(plans, key, () => buildPlan(kernels, call, key));
}

// Whether `plan` (the kernels' last one, maybe a backward plan) was built for this call.
function plannedFor(plan: Plan, call: WasmForwardCall, rule: string): boolean {
  const p = plan.call;
  if (p.op !== call.op || p.dtype !== call.dtype || p.rule !== rule) return false;
  if (p.alignCorners !== call.alignCorners) return false;
  const { inputSize, outputSize, scales } = call;
  const sizes = p.sizes;
  if (sizes.length !== inputSize.length + outputSize.length + scales.length) return false;
  // List by list, not over an array of the lists (a new array per call).
  const k = sameFrom(sizes, 0, inputSize);
  const m = k < 0 ? -1 : sameFrom(sizes, k, outputSize);
  return m >= 0 && sameFrom(sizes, m, scales) >= 0;
}

// Whether `sizes` holds `list` from index `k`: the index after it, or -1.
function sameFrom(sizes: readonly number[], k: number, list: readonly number[]): number {
  for (let i = 0; i < list.length; i++) if (sizes[k + i] !== list[i]) return -1;
  return k + list.length;
}

/**
 * Looks up the plan of an eligible `call` (see {@link wasmForwardEligible}), writes its tables into
 * the scratch block (unless already there) with work space for `slots` threads, and returns the
 * kernel call (a shared record, valid until the next call), or null when the scratch space cannot
 * be had. `gradPlaneBytes` of the record is the input's plane (the workers step the third argument
 * by it), `rows` the output rows.
 *
 * @example
 * ```ts ignore
 * const ready = prepareWasmForward(kernels, call, 2);
 * if (ready !== null) await scheduler.run(ready);
 * ```
 */
export function prepareWasmForward(
  kernels: WasmKernels,
  call: WasmForwardCall,
  slots: number,
): PreparedCall | null {
  const { inputSize, outputSize } = call;
  const rule = call.rule ?? "pytorch";
  let plan = kernels.plan as Plan | null;
  if (plan === null || plan.call === undefined || !plannedFor(plan, call, rule)) {
    plan = planOf(kernels, call, rule);
  }
  const base = placePlan(kernels, plan, slots);
  if (base < 0) return null;
  const twoD = inputSize.length === 4;
  const inH = twoD ? inputSize[2] : 1, inW = inputSize[inputSize.length - 1];
  const outH = twoD ? outputSize[0] : 1, outW = outputSize[outputSize.length - 1];
  const size = call.dtype === "float32" ? 4 : 2;
  // Written by index: `length = 0` and push would drop and regrow the array's store every call.
  const at = plan.offsets, args = prepared.args;
  let n = 0;
  args[n++] = DTYPE_CODE[call.dtype];
  args[n++] = address(call.out);
  args[n++] = address(call.input);
  args[n++] = inputSize[0] * inputSize[1];
  if (call.op === "bilinear2d") {
    prepared.kernel = "bilinear_forward";
    args[n++] = plan.mode;
    args[n++] = inH;
    args[n++] = inW;
    args[n++] = outH;
    args[n++] = outW;
    for (let i = 0; i < 9; i++) args[n++] = base + at[i];
    prepared.workArg = n;
    args[n++] = base + plan.workOffset;
  } else {
    prepared.kernel = "nearest_forward";
    args[n++] = inH;
    args[n++] = inW;
    args[n++] = outH;
    args[n++] = outW;
    for (let i = 0; i < 3; i++) args[n++] = base + at[i];
    args[n++] = plan.pattern;
    prepared.workArg = -1;
  }
  args[n++] = 0;
  args[n++] = outH;
  args.length = n;
  prepared.planes = args[3];
  prepared.outPlaneBytes = outH * outW * size;
  prepared.gradPlaneBytes = inH * inW * size;
  prepared.elements = args[3] * (inH * inW + outH * outW);
  prepared.workBytes = plan.workBytes;
  prepared.rows = outH;
  prepared.bandable = true;
  return prepared;
}

/**
 * Runs a forward `call` on the wasm kernels on the calling thread and returns true, or returns
 * false (having done nothing) when it is not eligible ({@link wasmForwardEligible}) or the scratch
 * space cannot be had. `slots`: work space kept for that many threads (so that the scratch block
 * does not move between calls run here and calls run by workers).
 *
 * @example
 * ```ts ignore
 * if (!launchWasmForward(kernels, call)) nearestExact2dForwardCpu(args);
 * ```
 */
export function launchWasmForward(
  kernels: WasmKernels,
  call: WasmForwardCall,
  slots = 1,
): boolean {
  if (!wasmForwardEligible(kernels, call)) return false;
  if (call.inputSize[0] * call.inputSize[1] === 0) return true;
  const ready = prepareWasmForward(kernels, call, slots);
  if (ready === null) return false;
  runPrepared(kernels, ready);
  return true;
}
