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
import {
  launchWasmForward,
  prepareWasmForward,
  wasmForwardEligible,
} from "./wasm/launch_forward.ts";
import {
  bilinear2dBackwardCpu,
  nearestExact1dBackwardCpu,
  nearestExact2dBackwardCpu,
} from "./pytorch/backward/mod.ts";
import type { BilinearBackwardArgs, StridedArray } from "./types.ts";
import type { WasmKernels } from "./wasm/instance.ts";
import {
  launchWasm,
  type PreparedCall,
  prepareWasm,
  wasmEligible,
} from "./wasm/launch_backward.ts";

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
 * The kernel call of an eligible `call` for `slots` threads (null when the scratch space cannot
 * be had).
 *
 * @example
 * ```ts ignore
 * const ready = prepare(kernels, call, 2);
 * ```
 */
export function prepare(kernels: WasmKernels, call: AnyCall, slots: number): PreparedCall | null {
  return isForward(call)
    ? prepareWasmForward(kernels, call, slots)
    : prepareWasm(kernels, call, slots);
}

/**
 * Runs `call` on the calling thread: the WebAssembly kernels when they take it, else the
 * TypeScript ones (the same bits).
 *
 * @example
 * ```ts ignore
 * launchHere(kernels, call, 1);
 * ```
 */
export function launchHere(kernels: WasmKernels | null, call: AnyCall, threads: number): void {
  if (isForward(call)) {
    if (kernels !== null && launchWasmForward(kernels, call, threads)) return;
    const args = forwardArgs(call);
    if (call.op === "nearestExact1d") nearestExact1dForwardCpu(args);
    else if (call.op === "nearestExact2d") nearestExact2dForwardCpu(args);
    else bilinear2dForwardCpu(args);
    return;
  }
  if (kernels !== null && launchWasm(kernels, call, threads)) return;
  // Views are taken after launchWasm, which may have grown the memory.
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
