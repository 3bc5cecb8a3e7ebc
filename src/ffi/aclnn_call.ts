/**
 * One aclnn two-phase call: the views' descriptors from the device's cache (`descriptors.ts`), phase 1
 * for the workspace size and executor, workspace from the device cache, phase 2 on the stream; a failed
 * call destroys whatever aclnn object it created.
 *
 * @module
 */

import type { AscendGeneration } from "../rules/generation.ts";
import type { ForwardCall, UpsampleCall, UpsampleOp, UpsampleParams } from "../backend.ts";
import type { DescriptorCache, ViewDescriptor } from "./descriptors.ts";
import { ReusedExecutor } from "./executors.ts";
import type { CannLibraries } from "./loader.ts";
import type { CannRuntime } from "./runtime.ts";
import { MissingSymbolError } from "./status.ts";

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
  /** The device's aclTensor/aclIntArray descriptors. */
  readonly descriptors: DescriptorCache;
  /** Returns a workspace of at least `bytes` (cached, grow-only). */
  workspace(bytes: bigint): bigint;
  /** The device's kernel generation (default `"a2"`). */
  readonly generation?: AscendGeneration;
}

const PHASE1_NAMES: Readonly<Record<UpsampleOp, string>> = {
  nearestExact1d: "aclnnUpsampleNearestExact1dBackward",
  nearestExact2d: "aclnnUpsampleNearestExact2dBackward",
  bilinear2d: "aclnnUpsampleBilinear2dBackward",
};

type AclnnFn = (...args: unknown[]) => number;

/**
 * The two entry points of an op (symbol names; the functions are looked up in the table at each call,
 * so a wrapped table entry, as the tests use to watch calls, is always the one called).
 */
interface OpSymbols {
  /** Phase-2 API name, e.g. `aclnnUpsampleBilinear2dBackwardV2`. */
  readonly name: string;
  /** Phase-1 API name (`...GetWorkspaceSize`). */
  readonly phase1Name: string;
  /** The first of the two the library lacks, or null (a loaded library's table never changes). */
  readonly missing: string | null;
}

// Names resolved once per library and op: building them per call makes V8 deoptimize the keyed loads.
const resolved = new WeakMap<CannLibraries, Map<UpsampleOp, OpSymbols>>();
// The last library asked about (a process nearly always has one): skips the WeakMap on every call.
let lastLibs: CannLibraries | null = null;
let lastTable: Map<UpsampleOp, OpSymbols> | null = null;

// And the last answer (a loop asks about one op): skips the Map too.
let lastOp: UpsampleOp | null = null;
let lastSymbols: OpSymbols | null = null;

function opSymbols(libs: CannLibraries, op: UpsampleOp): OpSymbols {
  if (op === lastOp && libs === lastLibs) return lastSymbols!;
  let perLib = libs === lastLibs ? lastTable! : resolved.get(libs);
  if (perLib === undefined) resolved.set(libs, perLib = new Map());
  lastLibs = libs;
  lastTable = perLib;
  let symbols = perLib.get(op);
  if (symbols === undefined) {
    const ops = libs.opapi as unknown as Record<string, AclnnFn | null>;
    const v2 = `${PHASE1_NAMES[op]}V2`;
    const name = op === "bilinear2d" && ops[`${v2}GetWorkspaceSize`] && ops[v2]
      ? v2
      : PHASE1_NAMES[op];
    symbols = symbolsOf(libs, name);
    perLib.set(op, symbols);
  }
  lastOp = op;
  lastSymbols = symbols;
  return symbols;
}

// The two entry points of the API `name`, and the first the library lacks.
function symbolsOf(libs: CannLibraries, name: string): OpSymbols {
  const phase1Name = `${name}GetWorkspaceSize`;
  const missing = opFunction(libs, phase1Name) === null
    ? phase1Name
    : opFunction(libs, name) === null
    ? name
    : null;
  return { name, phase1Name, missing };
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
 * (`MissingSymbolError`), or what bilinear V1 would silently get wrong on Atlas A2/A3 (bfloat16,
 * explicit scales that disagree with the sizes: V1 derives its scales from the sizes there). On
 * Ascend 950 (`generation` `"950"`) V1 runs the same ResizeBilinearV2Grad as V2, with the scales and
 * bfloat16 (image/resize_bilinear_v2_grad/op_api/aclnn_upsample_bilinear_2d_backward.cpp, `IsRegBase()`).
 *
 * @example
 * ```ts ignore
 * checkOpSupported(libs, { op: "bilinear2d", dtype: "bfloat16", ... }); // TypeError with V1 only
 * ```
 */
export function checkOpSupported(
  libs: CannLibraries,
  params: UpsampleParams,
  generation: AscendGeneration = "a2",
): void {
  const { name, missing } = opSymbols(libs, params.op);
  if (missing !== null) throw new MissingSymbolError(missing, libs.opapiPath);
  // V1's limits below are A2/A3's: the 950 runs V1 with scales and bfloat16, and on the 910/310P
  // V2 ignores scales too and bfloat16 is refused before (family.ts).
  if (params.op !== "bilinear2d" || name.endsWith("V2") || generation !== "a2") return;
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

/**
 * Runs an op on the device stream. The aclTensor/aclIntArray descriptors come from the target's
 * {@link DescriptorCache} (created on first use of a view, kept while its buffer lives), and so does the
 * repeatable executor of phase 1 (`executors.ts`): a call with the same views and parameters as an
 * earlier one runs phase 2 only. Whatever this call created is destroyed again when it fails, and an
 * executor whose phase 2 failed is not kept. `api` names the API to launch through (e.g. V1 for
 * the passes of the deterministic route); by default the op's own (V2 for bilinear when present).
 *
 * @throws {AclError} with the failing API's status and the runtime's message
 * @example
 * ```ts ignore
 * launchAclnn(backend, call); // enqueued on backend.stream
 * ```
 */
export function launchAclnn(
  target: LaunchTarget,
  call: UpsampleCall<NpuBuffer>,
  api?: string,
): void {
  // The same call object as the last launch on this target, its executor still kept: phase 2 only.
  // (A kept executor's views are alive and unchanged, and the call, which was checked against them,
  // is the same object: nothing to look up again.)
  const last = lastReused;
  if (call === lastCall && target === lastTarget && last!.executor !== 0n) {
    return runReused(target, lastGrad!, last!);
  }
  const { descriptors } = target;
  let launched = false;
  try {
    const gradView = descriptors.view(call.gradOutput);
    const outView = descriptors.view(call.out);
    checkSizes(call, gradView.shape, outView.shape);
    const { op, scales, alignCorners, deterministic } = call;
    const scale0 = scales[0];
    const scale1 = scales.length > 1 ? scales[1] : 0;
    const symbols = api !== undefined
      ? symbolsOf(target.runtime.libs, api)
      : v1ForSameSizes(target, call)
      ? v1Symbols(target.runtime.libs)
      : opSymbols(target.runtime.libs, op);
    const kept = descriptors.executorFor(
      gradView,
      outView,
      op,
      scale0,
      scale1,
      alignCorners,
      deterministic,
    );
    // A kept executor of the same views through another API (a route's V1 pass) is not this call's.
    const reused = kept !== null && kept.api === symbols.name
      ? kept
      : prepare(target, call, symbols, gradView, outView, scale0, scale1);
    forgetLaunches(target);
    if (reused !== null) {
      runReused(target, gradView, reused);
      lastTarget = target;
      lastCall = call;
      lastGrad = gradView;
      lastReused = reused;
    }
    launched = true;
  } finally {
    if (launched) descriptors.commit();
    else descriptors.rollback();
  }
}

// The last call launched with a kept executor (one slot for the process: a loop repeats one call).
let lastTarget: LaunchTarget | null = null;
let lastCall: UpsampleCall<NpuBuffer> | null = null;
let lastGrad: ViewDescriptor | null = null;
let lastReused: ReusedExecutor | null = null;

/**
 * Forgets the last launch when it went through `target` (a closing backend calls this, so that nothing
 * of it is kept alive).
 *
 * @example
 * ```ts ignore
 * forgetLaunches(backend);
 * ```
 */
export function forgetLaunches(target: LaunchTarget): void {
  if (lastTarget !== target) return;
  lastTarget = null;
  lastCall = null;
  lastGrad = null;
  lastReused = null;
}

/** The aclnn API of each forward op (hicann/ops-cv; cann-abi prototypes in symbols.ts). */
export const FORWARD_APIS: Readonly<Record<UpsampleOp, string>> = {
  nearestExact1d: "aclnnUpsampleNearestExact1d",
  nearestExact2d: "aclnnUpsampleNearestExact2d",
  bilinear2d: "aclnnUpsampleBilinear2d",
};

/**
 * The forward op's entry point the loaded CANN lacks, or null.
 *
 * @example
 * ```ts ignore
 * missingForwardApi(libs, "bilinear2d"); // null on a CANN with aclnnUpsampleBilinear2d
 * ```
 */
export function missingForwardApi(libs: CannLibraries, op: UpsampleOp): string | null {
  return symbolsOf(libs, FORWARD_APIS[op]).missing;
}

/**
 * Runs a forward op on the device stream, with the descriptors and repeatable executors of the
 * target's cache as {@link launchAclnn} does.
 *
 * @throws {AclError} with the failing API's status and the runtime's message
 * @example
 * ```ts ignore
 * launchForwardAclnn(backend, call); // enqueued on backend.stream
 * ```
 */
export function launchForwardAclnn(target: LaunchTarget, call: ForwardCall<NpuBuffer>): void {
  const { descriptors } = target;
  let launched = false;
  try {
    const inputView = descriptors.view(call.input);
    const outView = descriptors.view(call.out);
    const { op, scales, alignCorners, deterministic } = call;
    const scale0 = scales[0];
    const scale1 = scales.length > 1 ? scales[1] : 0;
    const symbols = symbolsOf(target.runtime.libs, FORWARD_APIS[op]);
    const kept = descriptors.executorFor(
      inputView,
      outView,
      op,
      scale0,
      scale1,
      alignCorners,
      deterministic,
    );
    const reused = kept !== null && kept.api === symbols.name
      ? kept
      : prepare(target, call, symbols, inputView, outView, scale0, scale1, true);
    forgetLaunches(target);
    if (reused !== null) runReused(target, inputView, reused);
    launched = true;
  } finally {
    if (launched) descriptors.commit();
    else descriptors.rollback();
  }
}

// Phase 2 of a kept executor; one whose phase 2 or workspace failed is destroyed, not kept.
function runReused(
  target: LaunchTarget,
  gradView: ViewDescriptor,
  reused: ReusedExecutor,
): void {
  const { runtime } = target;
  const name = reused.api;
  const size = reused.workspaceSize;
  let ok = false;
  try {
    const workspace = size > 0n ? target.workspace(size) : 0n;
    const status = opFunction(runtime.libs, name)!(workspace, size, reused.executor, target.stream);
    runtime.check(status, name);
    ok = true;
  } finally {
    if (!ok) target.descriptors.dropExecutor(gradView, reused);
  }
}

// Phase 1, then the executor made repeatable and kept (returned, for runReused), or, when the runtime
// will not make it repeatable, launched once here (null).
// `forward`: the forward op, `(self, outputSize, ...)` with outputSize `out`'s spatial shape; else
// the backward, `(gradOutput, outputSize, inputSize, ...)`.
function prepare(
  target: LaunchTarget,
  call: UpsampleParams & { readonly deterministic: boolean },
  symbols: OpSymbols,
  gradView: ViewDescriptor,
  outView: ViewDescriptor,
  scale0: number,
  scale1: number,
  forward = false,
): ReusedExecutor | null {
  const { runtime, descriptors } = target;
  const { libs } = runtime;
  // Both exist: checkOpSupported ran before anything was allocated.
  const phase1 = opFunction(libs, symbols.phase1Name)!;
  const grad = gradView.tensor;
  const out = outView.tensor;
  const wsOut = runtime.out64;
  const exOut = runtime.outExecutor;
  wsOut[0] = 0n;
  exOut[0] = 0n;
  let status: number;
  if (forward) {
    const outputSize = descriptors.spatialSizes(outView);
    status = call.op === "bilinear2d"
      ? phase1(grad, outputSize, call.alignCorners, scale0, scale1, out, wsOut, exOut)
      : call.op === "nearestExact2d"
      ? phase1(grad, outputSize, scale0, scale1, out, wsOut, exOut)
      : phase1(grad, outputSize, scale0, out, wsOut, exOut);
  } else {
    // Validated: outputSize is gradOutput's spatial shape and inputSize is out's shape.
    const outputSize = descriptors.spatialSizes(gradView);
    const inputSize = descriptors.fullSizes(outView);
    status = call.op === "bilinear2d"
      ? phase1(grad, outputSize, inputSize, call.alignCorners, scale0, scale1, out, wsOut, exOut)
      : call.op === "nearestExact2d"
      ? phase1(grad, outputSize, inputSize, scale0, scale1, out, wsOut, exOut)
      : phase1(grad, outputSize, inputSize, scale0, out, wsOut, exOut);
  }
  runtime.check(status, symbols.phase1Name);
  const executor = exOut[0];
  const workspaceSize = wsOut[0];
  if (libs.nnopbase.aclSetAclOpExecutorRepeatable(executor) === 0) {
    const reused = new ReusedExecutor(
      call.op,
      symbols.name,
      outView,
      scale0,
      scale1,
      call.alignCorners,
      call.deterministic,
      executor,
      workspaceSize,
    );
    descriptors.keepExecutor(gradView, reused);
    return reused;
  }
  // One-shot: phase 2 consumes it. A failed workspace means phase 2 never runs: the documented way to
  // free an unused executor is to make it repeatable and destroy it.
  let workspace = 0n;
  try {
    if (workspaceSize > 0n) workspace = target.workspace(workspaceSize);
  } catch (error) {
    libs.nnopbase.aclSetAclOpExecutorRepeatable(executor);
    libs.nnopbase.aclDestroyAclOpExecutor(executor);
    throw error;
  }
  const phase2 = opFunction(libs, symbols.name)!;
  runtime.check(phase2(workspace, workspaceSize, executor, target.stream), symbols.name);
  return null;
}

// On the 910 and 310P, V2 launches nothing when the sizes are equal (aclnn_upsample_bilinear_2d_
// backward_v2.cpp: its ResizeBilinearV2Grad branch needs different sizes, its own kernel DAV_2201),
// leaving out as it was; V1 copies gradOutput there (aclnn_upsample_bilinear_2d_backward.cpp).
function v1ForSameSizes(target: LaunchTarget, call: UpsampleCall<NpuBuffer>): boolean {
  const generation = target.generation;
  if (call.op !== "bilinear2d" || (generation !== "910" && generation !== "310p")) return false;
  return call.inputSize[2] === call.outputSize[0] && call.inputSize[3] === call.outputSize[1];
}

function v1Symbols(libs: CannLibraries): OpSymbols {
  const symbols = symbolsOf(libs, PHASE1_NAMES.bilinear2d);
  if (symbols.missing !== null) throw new MissingSymbolError(symbols.missing, libs.opapiPath);
  return symbols;
}

// The cached int arrays are the views' own sizes: refuse a call whose sizes say otherwise (only an
// internal caller that skipped validation could make one). Compares the descriptors' plain copies of
// the shapes: V8 reads a Tensor's frozen shape arrays in a loop several times slower.
function checkSizes(
  call: UpsampleCall<NpuBuffer>,
  gradShape: readonly number[],
  outShape: readonly number[],
): void {
  const { outputSize, inputSize } = call;
  let same = gradShape.length === outputSize.length + 2 && outShape.length === inputSize.length;
  for (let i = 0; same && i < outputSize.length; i++) same = gradShape[i + 2] === outputSize[i];
  for (let i = 0; same && i < inputSize.length; i++) same = outShape[i] === inputSize[i];
  if (!same) {
    throw new TypeError(
      `launchAclnn: outputSize [${outputSize}] / inputSize [${inputSize}] disagree with the ` +
        `gradOutput shape [${gradShape}] / out shape [${outShape}]`,
    );
  }
}
