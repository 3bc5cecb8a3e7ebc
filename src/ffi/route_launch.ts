/**
 * The deterministic route of bilinear backward on the device (`rules/route.ts`): aclnnCast to
 * float32 for 16-bit dtypes, the W pass into a float32 intermediate T, the H pass from T into the
 * result, both seen with H and W swapped (strided views: the operator's own Contiguous and
 * ViewCopy move the data), aclnnCast back. Both passes go through V1, which runs the TBE kernel
 * ResizeBilinearV2Grad whenever the sizes differ. The intermediates are device buffers the call
 * allocates and frees (after the queued launches that use them).
 *
 * @module
 */

import type { MemoryInfo, StorageView, UpsampleCall } from "../backend.ts";
import type { DeterministicRoute, RoutePass } from "../rules/route.ts";
import type { DType } from "../tensor/dtype.ts";
import { launchAclnn, type LaunchTarget, type NpuBuffer } from "./aclnn_call.ts";
import { ACL_DTYPE } from "./symbols.ts";

/** The aclnn API the route's passes launch through (V1: the TBE kernel for every pass). */
export const ROUTE_PASS_API = "aclnnUpsampleBilinear2dBackward";

/** What the route needs from its device beyond a launch target. */
export interface RouteTarget extends LaunchTarget {
  /** Allocates device memory. */
  allocate(dtype: DType, length: number): NpuBuffer;
  /** Frees a buffer once the work queued so far no longer needs it. */
  free(buffer: NpuBuffer): void;
  /** Counts the route as queued work (once, after its first launch reached the stream). */
  markEnqueued(): void;
}

/**
 * The aclnn APIs the route needs that the loaded CANN lacks: the first missing one, or null.
 *
 * @example
 * ```ts ignore
 * missingRouteApi(libs, route); // "aclnnCast" on a CANN without it, for a float16 call
 * ```
 */
export function missingRouteApi(
  libs: LaunchTarget["runtime"]["libs"],
  route: Pick<DeterministicRoute, "cast">,
): string | null {
  const ops = libs.opapi;
  if (
    !ops.aclnnUpsampleBilinear2dBackwardGetWorkspaceSize || !ops.aclnnUpsampleBilinear2dBackward
  ) {
    return ROUTE_PASS_API;
  }
  return route.cast && libs.cast === null ? "aclnnCast" : null;
}

/**
 * Throws a `RangeError` naming the bytes when the route's float32 intermediates do not fit in the
 * device's free memory: refused before anything is allocated (the result is checked as any
 * tensor is).
 *
 * @throws {RangeError} with the bytes needed, free and total
 * @example
 * ```ts ignore
 * checkRouteMemory(route, backend.memoryInfo(), backend.name);
 * ```
 */
export function checkRouteMemory(
  route: DeterministicRoute,
  memory: MemoryInfo,
  deviceName: string,
): void {
  const needed = route.intermediateBytes;
  if (needed <= memory.free) return;
  throw new RangeError(
    `upsampleBilinear2dBackward: the deterministic route needs ${needed} bytes of device memory ` +
      `for its float32 intermediates, but ${memory.free} of ${memory.total} are free on ` +
      `${deviceName} (aclrtGetMemInfo); free tensors, make the call smaller, or turn ` +
      `deterministic mode off for it`,
  );
}

/**
 * Enqueues the route of `call`. A failure frees what the route allocated (after what it queued)
 * and leaves `out` as it was unless the failing launch was the one writing it.
 *
 * @throws {AclError} from the failing API
 * @example
 * ```ts ignore
 * launchRoute(backend, call, route);
 * ```
 */
export function launchRoute(
  target: RouteTarget,
  call: UpsampleCall<NpuBuffer>,
  route: DeterministicRoute,
): void {
  const [n, c, inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  const owned: NpuBuffer[] = [];
  let queued = false;
  const queue = (): void => {
    if (queued) return;
    queued = true;
    target.markEnqueued();
  };
  const float32 = (shape: readonly number[]): StorageView<NpuBuffer> => {
    const length = shape.reduce((a, b) => a * b, 1);
    const buffer = target.allocate("float32", length);
    owned.push(buffer);
    const strides = [shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3], 1];
    return { handle: buffer, dtype: "float32", storageLength: length, shape, strides, offset: 0 };
  };
  try {
    let grad = call.gradOutput;
    if (route.cast) {
      const grad32 = float32([n, c, outH, outW]);
      launchCast(target, grad, grad32);
      queue();
      grad = grad32;
    }
    let [h, w] = [outH, outW]; // the logical sizes of what the next pass reads
    route.passes.forEach((pass, i) => {
      // Each pass writes T ([Ho, Wi] after the W pass, [Hi, Wo] after the H pass), the last one
      // the result (its float32 copy for 16-bit dtypes).
      if (pass.axis === "w") w = pass.inCols;
      else h = pass.inCols;
      const last = i === route.passes.length - 1;
      const dest = !last
        ? float32([n, c, h, w])
        : route.cast
        ? float32([n, c, inH, inW])
        : call.out;
      const [source, result] = pass.axis === "w" ? [grad, dest] : [swapped(grad), swapped(dest)];
      launchAclnn(target, passCall(call, pass, source, result), ROUTE_PASS_API);
      queue();
      if (last && route.cast) launchCast(target, dest, call.out);
      grad = dest;
    });
  } finally {
    for (const buffer of owned) target.free(buffer);
  }
}

/**
 * Enqueues the call transposed (`rules/arrangement.ts`): one launch of V1 on gradOutput and `out`
 * seen with H and W swapped, `[Wo, Ho] -> [Wi, Hi]`, scales from the sizes (the TBE kernel's own
 * rule whatever the API); the operator's Contiguous and ViewCopy move the data.
 *
 * @throws {AclError} from the failing API
 * @example
 * ```ts ignore
 * launchTransposed(backend, call);
 * ```
 */
export function launchTransposed(target: RouteTarget, call: UpsampleCall<NpuBuffer>): void {
  launchAclnn(target, transposedCall(call), ROUTE_PASS_API);
  target.markEnqueued();
}

/**
 * A call with H and W swapped: its sizes, and its views through swapped strides (same storage).
 *
 * @example
 * ```ts ignore
 * transposedCall(call).inputSize; // [N, C, Wi, Hi]
 * ```
 */
export function transposedCall<H>(call: UpsampleCall<H>): UpsampleCall<H> {
  const [n, c, inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  return {
    ...call,
    inputSize: [n, c, inW, inH],
    outputSize: [outW, outH],
    scales: [0, 0],
    gradOutput: swapped(call.gradOutput),
    out: swapped(call.out),
  };
}

// The view with its last two dimensions swapped.
function swapped<H>(view: StorageView<H>): StorageView<H> {
  const [a, b, h, w] = view.shape;
  const [sa, sb, sh, sw] = view.strides;
  return { ...view, shape: [a, b, w, h], strides: [sa, sb, sw, sh] };
}

function passCall(
  call: UpsampleCall<NpuBuffer>,
  pass: RoutePass,
  gradOutput: StorageView<NpuBuffer>,
  out: StorageView<NpuBuffer>,
): UpsampleCall<NpuBuffer> {
  const [n, c] = call.inputSize;
  return {
    op: "bilinear2d",
    dtype: "float32",
    inputSize: [n, c, pass.rows, pass.inCols],
    outputSize: [pass.rows, pass.outCols],
    scales: [0, 0],
    alignCorners: call.alignCorners,
    gradOutput,
    out,
    deterministic: call.deterministic,
  };
}

// aclnnCast of `source` into `dest` (same shape), one-shot: phase 1, workspace, phase 2.
function launchCast(
  target: LaunchTarget,
  source: StorageView<NpuBuffer>,
  dest: StorageView<NpuBuffer>,
): void {
  const { runtime, descriptors } = target;
  const { libs } = runtime;
  const cast = libs.cast!.symbols; // missingRouteApi refused the route before anything was allocated
  let launched = false;
  try {
    const self = descriptors.view(source).tensor;
    const out = descriptors.view(dest).tensor;
    const wsOut = runtime.out64;
    const exOut = runtime.outExecutor;
    wsOut[0] = 0n;
    exOut[0] = 0n;
    const status = cast.aclnnCastGetWorkspaceSize!(self, ACL_DTYPE[dest.dtype], out, wsOut, exOut);
    runtime.check(status, "aclnnCastGetWorkspaceSize");
    const executor = exOut[0];
    const size = wsOut[0];
    let workspace = 0n;
    try {
      if (size > 0n) workspace = target.workspace(size);
    } catch (error) {
      // Phase 2 never runs: the documented way to free an unused executor.
      libs.nnopbase.aclSetAclOpExecutorRepeatable(executor);
      libs.nnopbase.aclDestroyAclOpExecutor(executor);
      throw error;
    }
    runtime.check(cast.aclnnCast!(workspace, size, executor, target.stream), "aclnnCast");
    launched = true;
  } finally {
    if (launched) descriptors.commit();
    else descriptors.rollback();
  }
}
