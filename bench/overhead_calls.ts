/**
 * The per-call overhead variants measured from Deno by `overhead.ts`, on the emulated NPU, for the tiny
 * case of each op (`[1, 1, 2]` -> `[1, 1, 1]`, `[1, 1, 2, 2]` -> `[1, 1, 1, 1]`), gradient already
 * on the device and `out` preallocated. The C driver (`overhead.c`) makes the issue's sequence per
 * call: 2 tensors, 2 int arrays, phase 1, phase 2, sync, 4 destroys. The library caches the
 * aclTensor/aclIntArray descriptors of a view while its storage lives (`src/ffi/descriptors.ts`) and
 * reuses phase 1's executor (`src/ffi/executors.ts`), so after the first call its sequence is phase 2,
 * sync; the "reused" variants (C and raw FFI) make that sequence too, the "cached" ones phase 1 +
 * phase 2 on descriptors made once.
 *
 * The internals used here (`tensorInternals`, `launchAclnn`, the symbol tables) are read-only probes
 * of where the time goes; `PUBLIC_VARIANTS` call the library through its public API only (plus a
 * blocking sync of the stream in `blocking`).
 *
 * @module
 */

import {
  type Device,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../mod.ts";
import type { UpsampleCall, UpsampleOp } from "../src/backend.ts";
import { launchAclnn, type NpuBuffer } from "../src/ffi/aclnn_call.ts";
import { resolveUpsample } from "../src/ops/validate.ts";
import { tensorInternals } from "../src/tensor/tensor.ts";
import { blockingSync, npuBackendOf, streamOf } from "./npu_probe.ts";
import { RawSequence } from "./raw_ffi.ts";

/** The three ops, by their C driver names. */
export const OPS: readonly UpsampleOp[] = ["nearestExact1d", "nearestExact2d", "bilinear2d"];

/** One op's tiny problem on a device. */
export interface TinyProblem {
  readonly op: UpsampleOp;
  readonly device: Device;
  readonly grad: Tensor;
  readonly out: Tensor;
  readonly outputSize: readonly number[];
  readonly inputSize: readonly number[];
}

/** Creates the tiny problem of `op` (float32) on `device`. */
export function tinyProblem(device: Device, op: UpsampleOp): TinyProblem {
  const oneD = op === "nearestExact1d";
  const outputSize = oneD ? [2] : [2, 2];
  const inputSize = oneD ? [1, 1, 1] : [1, 1, 1, 1];
  const grad = device.tensor(oneD ? [1, 2] : [1, 2, 3, 4], [1, 1, ...outputSize]);
  const out = device.zeros(inputSize);
  return { op, device, grad, out, outputSize, inputSize };
}

/** The public op call with `out` (no sync). */
export function publicCall(p: TinyProblem): void {
  const options = { outputSize: p.outputSize, inputSize: p.inputSize, out: p.out };
  if (p.op === "nearestExact1d") upsampleNearestExact1dBackward(p.grad, options);
  else if (p.op === "nearestExact2d") upsampleNearestExact2dBackward(p.grad, options);
  else upsampleBilinear2dBackward(p.grad, options);
}

/** A variant: one call (possibly async) and how it is described. */
export interface Variant {
  /** Short name, matching the C driver's variant where one exists. */
  readonly name: string;
  /** What one call does. */
  readonly what: string;
  /** The C variant it is compared with, if any. */
  readonly peer?: "blocking" | "worker" | "enqueue";
  /** Builds the per-call function for a problem (setup outside the timing). */
  make(p: TinyProblem): { call: () => void | Promise<void>; end: () => Promise<void> };
}

/** The public-API variants, compared with the C driver. */
export const PUBLIC_VARIANTS: readonly Variant[] = [
  {
    name: "public",
    what: "op(out) + await device.synchronize() (the library's sync: an ACL event polled on the " +
      "JS thread for at most 50 µs, then a worker thread)",
    peer: "worker",
    make: (p) => ({
      call: async () => {
        publicCall(p);
        await p.device.synchronize();
      },
      end: () => p.device.synchronize(),
    }),
  },
  {
    name: "blocking",
    what: "op(out) + aclrtSynchronizeStream on the JS thread (as C does)",
    peer: "blocking",
    make: (p) => {
      const stream = streamOf(p.device);
      return {
        call: () => {
          publicCall(p);
          blockingSync(stream);
        },
        end: () => p.device.synchronize(),
      };
    },
  },
  {
    name: "enqueue",
    what: "op(out) only; one device.synchronize() after the loop (timed)",
    peer: "enqueue",
    make: (p) => ({ call: () => publicCall(p), end: () => p.device.synchronize() }),
  },
];

/**
 * A raw-FFI variant (see `raw_ffi.ts`); `cached`: descriptors made once; `reused`: the executor too,
 * as the library does.
 */
function rawVariant(sync: boolean, cached = false, reused = false): Variant {
  return {
    name: `raw FFI${sync ? "" : " enqueue"}${reused ? " reused" : cached ? " cached" : ""}`,
    what: `the same FFI calls from Deno with prebuilt args (src/ffi/symbols.ts tables), ${
      sync ? "blocking sync" : "no sync"
    }${reused ? ", descriptors and executor made once" : cached ? ", descriptors made once" : ""}`,
    peer: sync ? "blocking" : "enqueue",
    make: (p) => {
      const raw = new RawSequence(p, sync, cached, reused);
      const stream = streamOf(p.device);
      return {
        call: () => raw.run(),
        end: () => {
          // These launches bypass the backend's bookkeeping: sync the stream itself, then free.
          blockingSync(stream);
          raw.close();
          return Promise.resolve();
        },
      };
    },
  };
}

/** `launchAclnn` (src/ffi/aclnn_call.ts) on a prebuilt call: the binding without validation. */
function launchVariant(sync: boolean): Variant {
  return {
    name: sync ? "launchAclnn" : "launchAclnn enqueue",
    what: `src/ffi/aclnn_call.ts launchAclnn with a prebuilt call, ${
      sync ? "blocking sync" : "no sync"
    }`,
    peer: sync ? "blocking" : "enqueue",
    make: (p) => {
      const backend = npuBackendOf(p.device);
      const call = prebuiltCall(p);
      const stream = backend.stream;
      return {
        call: sync
          ? () => {
            launchAclnn(backend, call);
            blockingSync(stream);
          }
          : () => launchAclnn(backend, call),
        end: () => {
          blockingSync(stream); // launches bypass the backend's bookkeeping: sync the stream itself
          return Promise.resolve();
        },
      };
    },
  };
}

/** Pieces of the public call, to see where the time goes. */
export const PIECE_VARIANTS: readonly Variant[] = [
  rawVariant(false),
  rawVariant(false, true),
  rawVariant(false, false, true),
  launchVariant(false),
  rawVariant(true),
  launchVariant(true),
  {
    name: "validate",
    what: "resolveUpsample only (argument checks; no FFI)",
    make: (p) => {
      const options = { outputSize: p.outputSize, inputSize: p.inputSize, out: p.out };
      return {
        call: () => void resolveUpsample(p.op, p.grad, options),
        end: () => Promise.resolve(),
      };
    },
  },
];

function prebuiltCall(p: TinyProblem): UpsampleCall<NpuBuffer> {
  const view = (t: Tensor): UpsampleCall<NpuBuffer>["out"] => {
    const { storage, layout } = tensorInternals(t);
    return {
      handle: storage.handle as NpuBuffer,
      dtype: storage.dtype,
      storageLength: storage.length,
      ...layout,
    };
  };
  return {
    op: p.op,
    dtype: "float32",
    inputSize: p.inputSize,
    outputSize: p.outputSize,
    scales: p.op === "nearestExact1d" ? [0] : [0, 0],
    alignCorners: false,
    gradOutput: view(p.grad),
    out: view(p.out),
    deterministic: false,
  };
}
