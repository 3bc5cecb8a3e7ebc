/**
 * How the CPU backend hands one call to its kernels: which WebAssembly path a call may take, the
 * TypeScript kernels' arguments over the buffers as they are now, and the run on the calling
 * thread (the backend's scheduler decides when workers take a call instead).
 *
 * @module
 */

import type { ForwardCall, StorageView, UpsampleCall } from "../backend.ts";
import type { CpuBuffer } from "./buffer.ts";
import {
  bilinear2dForwardCpu,
  nearestExact1dForwardCpu,
  nearestExact2dForwardCpu,
  type UpsampleForwardArgs,
} from "./pytorch/forward/mod.ts";
import { prepareWasmForward, wasmForwardEligible } from "./wasm/launch_forward.ts";
import {
  bilinear2dBackwardCpu,
  nearestExact1dBackwardCpu,
  nearestExact2dBackwardCpu,
} from "./pytorch/backward/mod.ts";
import type { BilinearBackwardArgs, StridedArray } from "./types.ts";
import type { WasmKernels } from "./wasm/instance.ts";
import { prepareWasm, wasmEligible } from "./wasm/launch_backward.ts";
import { type PreparedCall, runPrepared } from "./wasm/prepared.ts";

/** A backward or a forward call on the CPU backend's storage. */
export type AnyCall = UpsampleCall<CpuBuffer> | ForwardCall<CpuBuffer>;

/**
 * Whether `call` is a forward one (it has an `input`, not a `gradOutput`).
 *
 * @example
 * ```ts ignore
 * isForward(call); // true for upsampleBilinear2d's call
 * ```
 */
export function isForward(call: AnyCall): call is ForwardCall<CpuBuffer> {
  return (call as { input?: unknown }).input !== undefined;
}

/**
 * Whether the WebAssembly kernels can take `call` (contiguous views in their memory).
 *
 * @example
 * ```ts ignore
 * eligible(kernels, call);
 * ```
 */
export function eligible(kernels: WasmKernels, call: AnyCall): boolean {
  return isForward(call) ? wasmForwardEligible(kernels, call) : wasmEligible(kernels, call);
}

/**
 * A kernel call prepared for one call object, and the plan whose tables it reads. While that plan is
 * the kernels' `plan`, its tables are where they were written: placing a plan sets it, and a scratch
 * block that moves clears it (WasmKernels.scratch). The slots never change (a backend passes its
 * threads).
 */
interface Kept {
  readonly ready: PreparedCall | null;
  readonly plan: unknown;
}

const OFFERED: Kept = { ready: null, plan: null };

// Call objects the ops launch again for repeated calls with `out` (keepCall), and what was prepared
// for them.
const kept = new WeakMap<AnyCall, Kept>();

/**
 * Notes that `call` (launched) will be launched again for each repeat of its arguments, so that
 * {@link prepare} keeps what it prepares for it; false when its buffers are host arrays (the
 * object would keep them alive, and the WebAssembly kernels do not take them).
 *
 * @example
 * ```ts ignore
 * if (keepCall(call)) memo.call = call;
 * ```
 */
export function keepCall(call: AnyCall): boolean {
  const source = isForward(call) ? call.input : call.gradOutput;
  if (source.handle.heap === null || call.out.handle.heap === null) return false;
  if (!kept.has(call)) kept.set(call, OFFERED);
  return true;
}

/**
 * The kernel call of `call` for `slots` threads, or null when the WebAssembly kernels cannot take
 * it (not eligible, or the scratch space cannot be had). A kept call object (see {@link keepCall})
 * gets its own record, prepared once and returned again while its plan's tables are in place (see
 * Kept); any other call the shared record, valid until the next call. Neither may be changed.
 *
 * @example
 * ```ts ignore
 * const ready = prepare(kernels, call, 2);
 * ```
 */
export function prepare(kernels: WasmKernels, call: AnyCall, slots: number): PreparedCall | null {
  const mine = kept.get(call);
  if (mine !== undefined && mine.ready !== null && mine.plan === kernels.plan) return mine.ready;
  if (!eligible(kernels, call)) return null;
  const ready = isForward(call)
    ? prepareWasmForward(kernels, call, slots)
    : prepareWasm(kernels, call, slots);
  if (ready === null || mine === undefined) return ready;
  const own = { ...ready, args: ready.args.slice() };
  kept.set(call, { ready: own, plan: kernels.plan });
  return own;
}

/**
 * Runs `call` on the calling thread: `ready` (its kernel call from {@link prepare}) when the
 * WebAssembly kernels take it, else (null) the TypeScript kernels (the same bits).
 *
 * @example
 * ```ts ignore
 * runHere(kernels, call, prepare(kernels, call, 1));
 * ```
 */
export function runHere(
  kernels: WasmKernels | null,
  call: AnyCall,
  ready: PreparedCall | null,
): void {
  if (ready !== null) return runPrepared(kernels!, ready);
  if (isForward(call)) {
    const args = forwardArgs(call);
    if (call.op === "nearestExact1d") nearestExact1dForwardCpu(args);
    else if (call.op === "nearestExact2d") nearestExact2dForwardCpu(args);
    else bilinear2dForwardCpu(args);
    return;
  }
  // Views are taken now: prepare may have grown the memory.
  const args = kernelArgs(call);
  if (call.op === "nearestExact1d") nearestExact1dBackwardCpu(args);
  else if (call.op === "nearestExact2d") nearestExact2dBackwardCpu(args);
  else bilinear2dBackwardCpu(args);
}

/**
 * The forward kernels' arguments: the call's views over the buffers as they are now.
 *
 * @example
 * ```ts ignore
 * bilinear2dForwardCpu(forwardArgs(call));
 * ```
 */
export function forwardArgs(call: ForwardCall<CpuBuffer>): UpsampleForwardArgs {
  return {
    input: strided(call.input),
    out: strided(call.out),
    inputSize: call.inputSize,
    outputSize: call.outputSize,
    scales: call.scales,
    alignCorners: call.alignCorners,
    rule: call.rule,
  };
}

/**
 * The backward kernels' arguments: the call's views over the buffers as they are now.
 *
 * @example
 * ```ts ignore
 * bilinear2dBackwardCpu(kernelArgs(call));
 * ```
 */
export function kernelArgs(call: UpsampleCall<CpuBuffer>): BilinearBackwardArgs {
  return {
    gradOutput: strided(call.gradOutput),
    out: strided(call.out),
    inputSize: call.inputSize,
    outputSize: call.outputSize,
    scales: call.scales,
    rule: call.rule,
    alignCorners: call.alignCorners,
  };
}

function strided(view: StorageView<CpuBuffer>): StridedArray {
  return {
    data: view.handle.view(),
    dtype: view.dtype,
    strides: view.strides,
    offset: view.offset,
  };
}
