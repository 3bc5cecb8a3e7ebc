/**
 * The fast path of a repeated op call: the validated form of the last call made on each gradOutput
 * tensor (backward ops) or input tensor (forward ops), and a check that a new call has exactly the
 * same arguments, so that it can skip `resolveUpsample`'s or `resolveForward`'s checks. With `out`,
 * the backend call object is reused as well: the NPU binding goes straight to phase 2 (backward),
 * the CPU backend runs the kernel call it prepared for that object (src/cpu/dispatch.ts).
 *
 * What may differ between two calls with the same arguments is checked again on every call: both
 * tensors' liveness (`disposed`: disposed, storage freed, device closed), the options object's own
 * keys (unknown keys), every value read from it (sizes element by element, scales, alignCorners,
 * deterministic and the device's default for it, `out`'s identity), in the order the full check reads
 * them. Everything else the full check looked at is fixed for a tensor (its device, dtype, shape,
 * strides, offset and storage never change), so equal inputs give the same answer. Anything that
 * does not match goes through the full check, which throws the same errors as before.
 *
 * Lifetime: a memo is kept in a `WeakMap` keyed by its tensor and holds `out` in a `WeakSet`, so
 * neither tensor is kept alive by it. The call object it may hold refers to the buffers' handles
 * (an NPU address and size, a CPU block of the WebAssembly memory: `Backend.keepsCall`), never to
 * storage that would stay alive through them.
 *
 * @module
 */

import type { ForwardCall, UpsampleCall, UpsampleOp } from "../backend.ts";
import { type DeviceInternals, deviceInternals } from "../device.ts";
import { FORWARD_OP_SPECS, OP_SPECS } from "../rules/ops.ts";
import type { Tensor } from "../tensor/tensor.ts";
import type { ResolvedForward } from "./forward_validate.ts";
import type { ResolvedUpsample } from "./validate.ts";

/** A validated call of either kind. */
type Resolved = ResolvedUpsample | ResolvedForward;

/**
 * The last validated call on one tensor (a backward op's gradOutput, a forward op's input).
 * Internal to the ops.
 */
export interface CallMemo<R extends Resolved, C> {
  /** The op it was made for. */
  readonly op: UpsampleOp;
  /** The validated call, with `out: null` (the out tensor is held weakly, below). */
  readonly resolved: R;
  /** The out tensor given (a set of one, held weakly), or null when the op allocated its result. */
  readonly out: WeakSet<Tensor> | null;
  /** The backend call object to launch again (with `out`, when the backend keeps it), else null. */
  readonly call: C | null;
  /** The op's option keys (`OP_SPECS[op].keys` or `FORWARD_OP_SPECS[op].keys`). */
  readonly keys: ReadonlySet<string>;
  /** The device's internals (backend, allocator). */
  readonly internals: DeviceInternals;
}

/** The memo of a backward op. */
export type BackwardMemo = CallMemo<ResolvedUpsample, UpsampleCall<unknown>>;
/** The memo of a forward op. */
export type ForwardMemo = CallMemo<ResolvedForward, ForwardCall<unknown>>;

/** The options the ops read (`OP_SPECS` and `FORWARD_OP_SPECS` keys), as named properties. */
interface Options {
  readonly outputSize?: unknown;
  readonly inputSize?: unknown;
  readonly scales?: unknown;
  readonly scalesH?: unknown;
  readonly scalesW?: unknown;
  readonly alignCorners?: unknown;
  readonly deterministic?: unknown;
  readonly out?: unknown;
}

const backwardMemos = new WeakMap<object, BackwardMemo>();
const forwardMemos = new WeakMap<object, ForwardMemo>();
const hasOwnProperty = Object.prototype.hasOwnProperty;

/**
 * The memo of an earlier backward call whose every argument equals this one's and whose tensors are
 * still live, or null (then the full check must run).
 *
 * @example
 * ```ts ignore
 * const memo = recall("nearestExact2d", grad, options);
 * if (memo === null) resolveUpsample("nearestExact2d", grad, options);
 * ```
 */
export function recall(op: UpsampleOp, gradOutput: unknown, options: unknown): BackwardMemo | null {
  if (typeof gradOutput !== "object" || gradOutput === null) return null;
  const memo = backwardMemos.get(gradOutput);
  return memo !== undefined && matches(memo, op, gradOutput as Tensor, options, true) ? memo : null;
}

/**
 * {@link recall} for a forward call on `input`.
 *
 * @example
 * ```ts ignore
 * const memo = recallForward("bilinear2d", x, options);
 * if (memo === null) resolveForward("bilinear2d", x, options);
 * ```
 */
export function recallForward(
  op: UpsampleOp,
  input: unknown,
  options: unknown,
): ForwardMemo | null {
  if (typeof input !== "object" || input === null) return null;
  const memo = forwardMemos.get(input);
  return memo !== undefined && matches(memo, op, input as Tensor, options, false) ? memo : null;
}

// Whether a call of `op` on `tensor` (the memo's key) with `options` repeats the memo's call.
function matches<R extends Resolved, C>(
  memo: CallMemo<R, C>,
  op: UpsampleOp,
  tensor: Tensor,
  options: unknown,
  backward: boolean,
): boolean {
  if (memo.op !== op || tensor.disposed) return false;
  if (typeof options !== "object" || options === null || Array.isArray(options)) return false;
  const resolved = memo.resolved;
  const opts = options as Options;
  const keys = memo.keys;
  for (const key in opts) {
    if (!keys.has(key) && hasOwnProperty.call(opts, key)) return false; // known keys: no own-check
  }
  if (!sameSizes(opts.outputSize, resolved.outputSize)) return false;
  if (backward && !sameSizes(opts.inputSize, resolved.inputSize)) return false;
  // Named loads (the option keys of OP_SPECS), not keyed ones: they stay fast in a loop.
  const scales = resolved.scales;
  if (scales.length === 1) {
    if ((opts.scales ?? 0) !== scales[0]) return false;
  } else if ((opts.scalesH ?? 0) !== scales[0] || (opts.scalesW ?? 0) !== scales[1]) return false;
  if ((opts.alignCorners ?? false) !== resolved.alignCorners) return false;
  if ((opts.deterministic ?? tensor.device.deterministic) !== resolved.deterministic) return false;
  const out = opts.out;
  if (out === undefined || out === null) return memo.out === null;
  // WeakSet.has, not WeakRef.deref: a deref also pins the target until the job ends (~3x slower).
  return memo.out !== null && memo.out.has(out as Tensor) && !(out as Tensor).disposed;
}

/**
 * Keeps the validated form of a backward call on its gradOutput tensor (replacing the previous
 * one), with the backend call object to reuse when given.
 *
 * @example
 * ```ts ignore
 * remember(resolved, call);
 * ```
 */
export function remember(resolved: ResolvedUpsample, call: UpsampleCall<unknown> | null): void {
  backwardMemos.set(resolved.gradOutput, memoOf(resolved, call, OP_SPECS[resolved.op].keys));
}

/**
 * {@link remember} for a forward call, kept on its input tensor.
 *
 * @example
 * ```ts ignore
 * rememberForward(resolved, call);
 * ```
 */
export function rememberForward(
  resolved: ResolvedForward,
  call: ForwardCall<unknown> | null,
): void {
  forwardMemos.set(resolved.input, memoOf(resolved, call, FORWARD_OP_SPECS[resolved.op].keys));
}

function memoOf<R extends Resolved, C>(
  resolved: R,
  call: C | null,
  keys: ReadonlySet<string>,
): CallMemo<R, C> {
  const out = resolved.out;
  return {
    op: resolved.op,
    resolved: out === null ? resolved : { ...resolved, out: null },
    out: out === null ? null : new WeakSet([out]),
    call,
    keys,
    internals: deviceInternals(resolved.device),
  };
}

// Whether `value` is an array of exactly these (validated) sizes.
function sameSizes(value: unknown, sizes: readonly number[]): boolean {
  if (!Array.isArray(value)) return false;
  const length = sizes.length;
  if (value.length !== length) return false;
  for (let i = 0; i < length; i++) {
    if (value[i] !== sizes[i]) return false;
  }
  return true;
}
