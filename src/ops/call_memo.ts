/**
 * The fast path of a repeated op call: the validated form of the last call made on each gradOutput
 * tensor, and a check that a new call has exactly the same arguments, so that it can skip
 * {@link resolveUpsample}'s checks (and, with `out`, reuse the backend call object, which lets the NPU
 * binding go straight to phase 2).
 *
 * What may differ between two calls with the same arguments is checked again on every call: both
 * tensors' liveness (`disposed`: disposed, storage freed, device closed), the options object's own
 * keys (unknown keys), every value read from it (sizes element by element, scales, alignCorners,
 * deterministic and the device's default for it, `out`'s identity), in the order the full check reads
 * them. Everything else the full check looked at is fixed for a tensor (its device, dtype, shape,
 * strides, offset and storage never change), so equal inputs give the same answer. Anything that
 * does not match goes through the full check, which throws the same errors as before.
 *
 * Lifetime: a memo is kept in a `WeakMap` keyed by the gradOutput tensor and holds `out` in a
 * `WeakSet`, so neither tensor is kept alive by it; the NPU call object it may hold refers to the
 * buffers' handles (address and size), never to their storage.
 *
 * @module
 */

import type { UpsampleCall, UpsampleOp } from "../backend.ts";
import { type DeviceInternals, deviceInternals } from "../device.ts";
import { OP_SPECS } from "../rules/ops.ts";
import type { Tensor } from "../tensor/tensor.ts";
import type { ResolvedUpsample } from "./validate.ts";

/** The last validated call on one gradOutput tensor. Internal to the ops. */
export interface CallMemo {
  /** The op it was made for. */
  readonly op: UpsampleOp;
  /** The validated call, with `out: null` (the out tensor is held weakly, below). */
  readonly resolved: ResolvedUpsample;
  /** The out tensor given (a set of one, held weakly), or null when the op allocated its result. */
  readonly out: WeakSet<Tensor> | null;
  /** The backend call object to launch again (NPU with `out` only), else null. */
  readonly call: UpsampleCall<unknown> | null;
  /** The op's option keys (`OP_SPECS[op].keys`). */
  readonly keys: ReadonlySet<string>;
  /** The device's internals (backend, allocator). */
  readonly internals: DeviceInternals;
}

/** The options the ops read (`OP_SPECS` keys), as named properties. */
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

const memos = new WeakMap<object, CallMemo>();
const hasOwnProperty = Object.prototype.hasOwnProperty;

/**
 * The memo of an earlier call whose every argument equals this one's and whose tensors are still
 * live, or null (then the full check must run).
 *
 * @example
 * ```ts ignore
 * const memo = recall("nearestExact2d", grad, options);
 * if (memo === null) resolveUpsample("nearestExact2d", grad, options);
 * ```
 */
export function recall(op: UpsampleOp, gradOutput: unknown, options: unknown): CallMemo | null {
  if (typeof gradOutput !== "object" || gradOutput === null) return null;
  const memo = memos.get(gradOutput);
  if (memo === undefined || memo.op !== op) return null;
  const resolved = memo.resolved;
  const grad = resolved.gradOutput; // === gradOutput: the key
  if (grad.disposed) return null;
  if (typeof options !== "object" || options === null || Array.isArray(options)) return null;
  const opts = options as Options;
  const keys = memo.keys;
  for (const key in opts) {
    if (!keys.has(key) && hasOwnProperty.call(opts, key)) return null; // known keys: no own-check
  }
  if (!sameSizes(opts.outputSize, resolved.outputSize)) return null;
  if (!sameSizes(opts.inputSize, resolved.inputSize)) return null;
  // Named loads (the option keys of OP_SPECS), not keyed ones: they stay fast in a loop.
  const scales = resolved.scales;
  if (scales.length === 1) {
    if ((opts.scales ?? 0) !== scales[0]) return null;
  } else if ((opts.scalesH ?? 0) !== scales[0] || (opts.scalesW ?? 0) !== scales[1]) return null;
  if ((opts.alignCorners ?? false) !== resolved.alignCorners) return null;
  if ((opts.deterministic ?? grad.device.deterministic) !== resolved.deterministic) return null;
  const out = opts.out;
  if (out === undefined || out === null) return memo.out === null ? memo : null;
  // WeakSet.has, not WeakRef.deref: a deref also pins the target until the job ends (~3x slower).
  if (memo.out === null || !memo.out.has(out as Tensor) || (out as Tensor).disposed) return null;
  return memo;
}

/**
 * Keeps the validated form of a call on its gradOutput tensor (replacing the previous one), with the
 * backend call object to reuse when given.
 *
 * @example
 * ```ts ignore
 * remember(resolved, call);
 * ```
 */
export function remember(resolved: ResolvedUpsample, call: UpsampleCall<unknown> | null): void {
  const out = resolved.out;
  memos.set(resolved.gradOutput, {
    op: resolved.op,
    resolved: out === null ? resolved : { ...resolved, out: null },
    out: out === null ? null : new WeakSet([out]),
    call,
    keys: OP_SPECS[resolved.op].keys,
    internals: deviceInternals(resolved.device),
  });
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
