/**
 * One aclnn two-phase call: describe the views with `aclCreateTensor`, phase 1 for the workspace size and
 * executor, workspace from the device cache, phase 2 on the stream; every aclnn object is destroyed on
 * every path.
 *
 * @module
 */

import type { StorageView, UpsampleCall, UpsampleOp, UpsampleParams } from "../backend.ts";
import type { CannLibraries } from "./loader.ts";
import type { CannRuntime } from "./runtime.ts";
import { MissingSymbolError } from "./status.ts";
import { ACL_DTYPE, ACL_FORMAT } from "./symbols.ts";

/** A device buffer: its address and size in bytes (address 0n for an empty buffer). */
export interface NpuBuffer {
  /** Device address. */
  readonly address: bigint;
  /** Size in bytes. */
  readonly bytes: number;
}

/** What a launch needs from its device. */
export interface LaunchTarget {
  /** The runtime (status checks, scratch out-parameters). */
  readonly runtime: CannRuntime;
  /** The device stream. */
  readonly stream: bigint;
  /** Returns a workspace of at least `bytes` (cached, grow-only). */
  workspace(bytes: bigint): bigint;
}

const PHASE1_NAMES: Readonly<Record<UpsampleOp, string>> = {
  nearestExact1d: "aclnnUpsampleNearestExact1dBackward",
  nearestExact2d: "aclnnUpsampleNearestExact2dBackward",
  bilinear2d: "aclnnUpsampleBilinear2dBackward",
};

type AclnnFn = (...args: unknown[]) => number;

/** The two entry points of an op (symbol names; the functions are looked up in the table). */
interface OpSymbols {
  /** Phase-2 API name, e.g. `aclnnUpsampleBilinear2dBackwardV2`. */
  readonly name: string;
  /** Phase-1 API name (`...GetWorkspaceSize`). */
  readonly phase1Name: string;
}

// Names resolved once per library and op: building them per call makes V8 deoptimize the keyed loads.
const resolved = new WeakMap<CannLibraries, Map<UpsampleOp, OpSymbols>>();

function opSymbols(libs: CannLibraries, op: UpsampleOp): OpSymbols {
  let perLib = resolved.get(libs);
  if (perLib === undefined) resolved.set(libs, perLib = new Map());
  let symbols = perLib.get(op);
  if (symbols === undefined) {
    const ops = libs.opapi as unknown as Record<string, AclnnFn | null>;
    const v2 = `${PHASE1_NAMES[op]}V2`;
    const name = op === "bilinear2d" && ops[`${v2}GetWorkspaceSize`] && ops[v2]
      ? v2
      : PHASE1_NAMES[op];
    symbols = { name, phase1Name: `${name}GetWorkspaceSize` };
    perLib.set(op, symbols);
  }
  return symbols;
}

function opFunction(libs: CannLibraries, symbol: string): AclnnFn | null {
  return (libs.opapi as unknown as Record<string, AclnnFn | null>)[symbol] ?? null;
}

/** The API name an op is launched through: V2 for bilinear when the library has it. */
export function opApiName(libs: CannLibraries, op: UpsampleOp): string {
  return opSymbols(libs, op).name;
}

/**
 * Throws when the loaded CANN cannot run these parameters: a missing operator symbol
 * (`MissingSymbolError`), or what bilinear V1 would silently get wrong (bfloat16, explicit scales that
 * disagree with the sizes: V1 derives its scales from the sizes).
 *
 * @example
 * ```ts ignore
 * checkOpSupported(libs, { op: "bilinear2d", dtype: "bfloat16", ... }); // TypeError with V1 only
 * ```
 */
export function checkOpSupported(libs: CannLibraries, params: UpsampleParams): void {
  const { name, phase1Name } = opSymbols(libs, params.op);
  for (const symbol of [phase1Name, name]) {
    if (opFunction(libs, symbol) === null) throw new MissingSymbolError(symbol, libs.opapiPath);
  }
  if (params.op !== "bilinear2d" || name.endsWith("V2")) return;
  if (params.dtype === "bfloat16") {
    throw new TypeError(
      `upsampleBilinear2dBackward: this CANN only has aclnnUpsampleBilinear2dBackward (V1), which ` +
        `does not support bfloat16; use float32 or float16, or a CANN with the V2 operator`,
    );
  }
  if (params.alignCorners) return;
  params.scales.forEach((scale, i) => {
    const input = params.inputSize[2 + i];
    const output = params.outputSize[i];
    if (
      scale > 0 && Math.fround(1 / scale) !== Math.fround(Math.fround(input) / Math.fround(output))
    ) {
      const key = i === 0 ? "scalesH" : "scalesW";
      throw new RangeError(
        `upsampleBilinear2dBackward: ${key} ${scale} differs from outputSize/inputSize ` +
          `(${output}/${input}), and this CANN only has the V1 operator, which ignores scales; ` +
          `omit ${key} or use a CANN with aclnnUpsampleBilinear2dBackwardV2`,
      );
    }
  });
}

/** Reused buffers for the descriptors (aclCreateTensor and aclCreateIntArray copy their inputs). */
const dimsScratch = new BigInt64Array(8);
const stridesScratch = new BigInt64Array(8);
const storageScratch = new BigInt64Array(1);
// 32-bit views of the same memory: writing halves avoids allocating a BigInt per element.
const dims32 = new Uint32Array(dimsScratch.buffer);
const strides32 = new Uint32Array(stridesScratch.buffer);
const storage32 = new Uint32Array(storageScratch.buffer);
const SMALL = Array.from({ length: 9 }, (_, i) => BigInt(i));
const FORMAT_BY_RANK: Readonly<Record<number, number>> = {
  3: ACL_FORMAT.NCL,
  4: ACL_FORMAT.NCHW,
  5: ACL_FORMAT.NCDHW,
};

// Stores a non-negative safe integer as int64 (little-endian halves).
function putInt64(target: Uint32Array, index: number, value: number): void {
  target[2 * index] = value >>> 0;
  target[2 * index + 1] = Math.floor(value / 4294967296);
}

function createTensor(libs: CannLibraries, view: StorageView<NpuBuffer>): bigint {
  const rank = view.shape.length;
  for (let d = 0; d < rank; d++) {
    putInt64(dims32, d, view.shape[d]);
    putInt64(strides32, d, view.strides[d]);
  }
  putInt64(storage32, 0, view.storageLength);
  return libs.nnopbase.aclCreateTensor(
    dimsScratch,
    SMALL[rank],
    ACL_DTYPE[view.dtype],
    stridesScratch,
    BigInt(view.offset),
    FORMAT_BY_RANK[rank] ?? ACL_FORMAT.ND,
    storageScratch,
    1n,
    view.handle.address,
  );
}

function createIntArray(libs: CannLibraries, values: readonly number[]): bigint {
  for (let i = 0; i < values.length; i++) putInt64(dims32, i, values[i]);
  return libs.nnopbase.aclCreateIntArray(dimsScratch, SMALL[values.length]);
}

/**
 * Runs both phases of an op on the device stream. aclTensor/aclIntArray handles are destroyed before
 * returning, on success and on every error; the executor is consumed by phase 2, or destroyed here when
 * phase 2 is never reached.
 *
 * @throws {AclError} with the failing API's status and the runtime's message
 */
export function launchAclnn(target: LaunchTarget, call: UpsampleCall<NpuBuffer>): void {
  const { runtime, stream } = target;
  const { libs } = runtime;
  const { name, phase1Name } = opSymbols(libs, call.op);
  // Both exist: checkOpSupported ran before anything was allocated.
  const phase1 = opFunction(libs, phase1Name)!;
  const phase2 = opFunction(libs, name)!;
  const { nnopbase } = libs;
  let grad = 0n, out = 0n, outputSize = 0n, inputSize = 0n;
  try {
    grad = createTensor(libs, call.gradOutput);
    out = createTensor(libs, call.out);
    outputSize = createIntArray(libs, call.outputSize);
    inputSize = createIntArray(libs, call.inputSize);
    if (grad === 0n || out === 0n || outputSize === 0n || inputSize === 0n) {
      throw runtime.error(561000, "aclCreateTensor/aclCreateIntArray");
    }
    const wsOut = runtime.out64;
    const exOut = runtime.outExecutor;
    wsOut[0] = 0n;
    exOut[0] = 0n;
    const status = call.op === "bilinear2d"
      ? phase1(
        grad,
        outputSize,
        inputSize,
        call.alignCorners,
        call.scales[0],
        call.scales[1],
        out,
        wsOut,
        exOut,
      )
      : call.op === "nearestExact2d"
      ? phase1(grad, outputSize, inputSize, call.scales[0], call.scales[1], out, wsOut, exOut)
      : phase1(grad, outputSize, inputSize, call.scales[0], out, wsOut, exOut);
    runtime.check(status, phase1Name);
    const executor = exOut[0];
    const workspaceSize = wsOut[0];
    let workspace = 0n;
    try {
      if (workspaceSize > 0n) workspace = target.workspace(workspaceSize);
    } catch (error) {
      // Phase 2 will not run: free the executor through the documented repeatable path.
      nnopbase.aclSetAclOpExecutorRepeatable(executor);
      nnopbase.aclDestroyAclOpExecutor(executor);
      throw error;
    }
    runtime.check(phase2(workspace, workspaceSize, executor, stream), name);
  } finally {
    if (grad !== 0n) nnopbase.aclDestroyTensor(grad);
    if (out !== 0n) nnopbase.aclDestroyTensor(out);
    if (outputSize !== 0n) nnopbase.aclDestroyIntArray(outputSize);
    if (inputSize !== 0n) nnopbase.aclDestroyIntArray(inputSize);
  }
}
