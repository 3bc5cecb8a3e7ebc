/**
 * A kernel call made ready, shared by both launchers (`launch_backward.ts`, `launch_forward.ts`)
 * and the worker threads: the record of the export and its arguments, the layout and placement of a
 * plan's tables in the kernels' scratch block, and the call of the export on the calling thread.
 *
 * @module
 */

import type { StorageView } from "../../backend.ts";
import type { CpuBuffer } from "../buffer.ts";
import type { WasmKernels } from "./instance.ts";
import type { KERNEL_EXPORTS } from "../threads/control.ts";

/** The kernels' dtype argument. */
export const DTYPE_CODE = { float32: 0, float16: 1, bfloat16: 2 } as const;

/**
 * `bytes` rounded up to a multiple of 16: where each table and each thread's work space starts.
 *
 * @example
 * ```ts ignore
 * align16(284); // 288
 * ```
 */
export function align16(bytes: number): number {
  return Math.ceil(bytes / 16) * 16;
}

/** Bytes of a cache line: the gap kept between data one thread reads and data another writes. */
export const LINE_BYTES = 64;

/**
 * Byte offsets of `tables` in a kernel's scratch block (16-byte aligned) and where the work space
 * starts: a cache line past the last table, so the calling thread's writes to its work space never
 * take from the workers the line of a table they read on every row (measured: nearest-exact
 * backward at scale 1.7 gained nothing from two threads with the line shared, its chunks running
 * 1.6-2.7x slower on each; two processes or two devices ran at full speed each).
 *
 * @example
 * ```ts ignore
 * tableLayout([new Int32Array(71)]); // { offsets: [0], workOffset: 352 }
 * ```
 */
export function tableLayout(
  tables: readonly (Int32Array | Float32Array)[],
): { offsets: number[]; workOffset: number } {
  const offsets: number[] = [];
  let bytes = 0;
  for (const table of tables) {
    offsets.push(bytes);
    bytes += align16(table.byteLength);
  }
  return { offsets, workOffset: bytes + LINE_BYTES };
}

/** Byte address of a view's first element. */
export function address(view: StorageView<CpuBuffer>): number {
  return view.handle.ptr + view.offset * (view.dtype === "float32" ? 4 : 2);
}

/**
 * A call ready for the kernels: the export and its arguments (dtype, out, grad, planes, ...), and
 * how it splits into planes. One record per launcher (launch_backward.ts, launch_forward.ts),
 * rewritten by each call it prepares.
 */
export interface PreparedCall {
  /** Which export runs (the forward ops' are prepared by src/cpu/wasm/launch_forward.ts). */
  kernel: typeof KERNEL_EXPORTS[number];
  /** Its arguments; pointers are unsigned byte addresses. */
  readonly args: number[];
  /** Planes of the call (`args[3]`). */
  planes: number;
  /** Bytes per plane of `out` and of `gradOutput`. */
  outPlaneBytes: number;
  gradPlaneBytes: number;
  /** Index of the work-space argument, or -1; each further worker's work space follows. */
  workArg: number;
  workBytes: number;
  /** Elements of both tensors (what the backend's thread threshold counts). */
  elements: number;
  /** Rows the last two arguments (row0, row1) range over; whether bands of them are exact. */
  rows: number;
  bandable: boolean;
}

/** What {@link placePlan} reads of a kernel's plan: its tables and the space after them. */
export interface PlacedTables {
  /** Tables, each written at `offsets[i]` bytes from the scratch base. */
  readonly tables: readonly (Int32Array | Float32Array)[];
  /** Their byte offsets. */
  readonly offsets: readonly number[];
  /** Where the work space starts, in bytes from the scratch base (after the tables). */
  readonly workOffset: number;
  /** Work-space bytes per thread. */
  readonly workBytes: number;
}

/**
 * Writes `plan`'s tables into the kernels' scratch block with work space for `slots` threads,
 * unless the previous call left the same plan in the same block, and returns the block's base
 * address (or -1 when the block cannot be had).
 *
 * @example
 * ```ts ignore
 * const base = placePlan(kernels, plan, 2);
 * ```
 */
export function placePlan(kernels: WasmKernels, plan: PlacedTables, slots: number): number {
  const base = kernels.scratch(plan.workOffset + slots * plan.workBytes);
  if (base < 0 || (kernels.plan === plan && kernels.planBase === base)) return base;
  const i32 = kernels.i32, f32 = kernels.f32;
  for (let i = 0; i < plan.tables.length; i++) {
    const table = plan.tables[i];
    // Element index, not `>> 2`: addresses may pass 2^31 in a 4 GiB memory.
    (table instanceof Int32Array ? i32 : f32).set(table, (base + plan.offsets[i]) / 4);
  }
  kernels.plan = plan;
  kernels.planBase = base;
  return base;
}

/**
 * Runs a prepared call on the calling thread, whole.
 *
 * @example
 * ```ts ignore
 * runPrepared(kernels, prepareWasm(kernels, call, 1)!);
 * ```
 */
export function runPrepared(kernels: WasmKernels, ready: PreparedCall): void {
  const a = ready.args, e = kernels.exports;
  if (ready.kernel === "bilinear_down2") {
    e.bilinear_down2(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]);
  } else if (ready.kernel === "bilinear_backward") {
    e.bilinear_backward(
      a[0],
      a[1],
      a[2],
      a[3],
      a[4],
      a[5],
      a[6],
      a[7],
      a[8],
      a[9],
      a[10],
      a[11],
      a[12],
      a[13],
      a[14],
      a[15],
      a[16],
      a[17],
      a[18],
    );
  } else if (ready.kernel === "bilinear_forward") {
    e.bilinear_forward(
      a[0],
      a[1],
      a[2],
      a[3],
      a[4],
      a[5],
      a[6],
      a[7],
      a[8],
      a[9],
      a[10],
      a[11],
      a[12],
      a[13],
      a[14],
      a[15],
      a[16],
      a[17],
      a[18],
      a[19],
      a[20],
    );
  } else if (ready.kernel === "nearest_forward") {
    e.nearest_forward(
      a[0],
      a[1],
      a[2],
      a[3],
      a[4],
      a[5],
      a[6],
      a[7],
      a[8],
      a[9],
      a[10],
      a[11],
      a[12],
      a[13],
    );
  } else {
    e.nearest_backward(
      a[0],
      a[1],
      a[2],
      a[3],
      a[4],
      a[5],
      a[6],
      a[7],
      a[8],
      a[9],
      a[10],
      a[11],
      a[12],
      a[13],
    );
  }
}
