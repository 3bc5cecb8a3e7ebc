/**
 * The floor of a Deno-driven call: the same FFI sequence as `overhead.c`, through the library's own
 * symbol tables (`src/ffi/symbols.ts`), with every argument built once up front. Either the issue's
 * full sequence (create x4, phase 1, phase 2, destroy x4), or, `cached`, phase 1 + phase 2 on
 * descriptors created once, or, `reused`, phase 2 only on an executor made once and repeatable (what
 * the library does since it reuses executors, `src/ffi/executors.ts`). Before that, `cached` was the
 * library's sequence, on
 * descriptors created once, as the library does since it caches them (`src/ffi/descriptors.ts`).
 * Whatever the public call costs above this is JavaScript in `src/` (validation, bookkeeping).
 *
 * @module
 */

import type { Tensor } from "../mod.ts";
import type { NpuBuffer } from "../src/ffi/aclnn_call.ts";
import { ACL_SYMBOLS, NNOPBASE_SYMBOLS, OPAPI_SYMBOLS } from "../src/ffi/symbols.ts";
import { tensorInternals } from "../src/tensor/tensor.ts";
import { EMU_DIR } from "./emu.ts";
import { streamOf } from "./npu_probe.ts";
import type { TinyProblem } from "./overhead_calls.ts";

interface Libs {
  acl: Deno.DynamicLibrary<typeof ACL_SYMBOLS>["symbols"];
  nn: Deno.DynamicLibrary<typeof NNOPBASE_SYMBOLS>["symbols"];
  op: Deno.DynamicLibrary<typeof OPAPI_SYMBOLS>["symbols"];
}

let libs: Libs | null = null;

function open(): Libs {
  // Same files as the device's (the loader keeps them open), so dlopen returns the same instances.
  libs ??= {
    acl: Deno.dlopen(`${EMU_DIR}libascendcl.so`, ACL_SYMBOLS).symbols,
    nn: Deno.dlopen(`${EMU_DIR}libnnopbase.so`, NNOPBASE_SYMBOLS).symbols,
    op: Deno.dlopen(`${EMU_DIR}libopapi.so`, OPAPI_SYMBOLS).symbols,
  };
  return libs;
}

function i64(values: readonly number[]): BigInt64Array {
  return BigInt64Array.from(values, (v) => BigInt(v));
}

function address(t: Tensor): bigint {
  return (tensorInternals(t).storage.handle as NpuBuffer).address;
}

/** One problem's prebuilt FFI sequence. */
export class RawSequence {
  readonly #run: () => void;
  readonly #close: () => void;

  /**
   * Builds every argument of `p`'s sequence once; `sync`: end each call with a blocking sync;
   * `cached`: the two aclTensors and two aclIntArrays are made by the first call and kept until
   * `close()`, not made and destroyed by every call.
   */
  constructor(p: TinyProblem, sync: boolean, cached = false, reused = false) {
    const { acl, nn, op } = open();
    const rank = p.inputSize.length;
    const gradDims = i64(p.grad.shape);
    const gradStrides = i64(p.grad.strides);
    const gradStorage = i64([p.grad.shape.reduce((a, b) => a * b, 1)]);
    const outDims = i64(p.inputSize);
    const outStrides = i64(p.out.strides);
    const outStorage = i64([1]);
    const outputSize = i64(p.outputSize);
    const inputSize = i64(p.inputSize);
    const rankN = BigInt(rank);
    const spatialN = BigInt(rank - 2);
    const format = rank === 3 ? 47 : 0;
    const gradAddress = address(p.grad);
    const outAddress = address(p.out);
    const stream = streamOf(p.device);
    const ws = new BigUint64Array(1);
    const ex = new BigUint64Array(1);
    let workspace = 0n;
    let workspaceBytes = 0n;
    const phase1 = p.op === "nearestExact1d"
      ? (g: bigint, os: bigint, is: bigint, o: bigint): number =>
        op.aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize!(g, os, is, 0, o, ws, ex)
      : p.op === "nearestExact2d"
      ? (g: bigint, os: bigint, is: bigint, o: bigint): number =>
        op.aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize!(g, os, is, 0, 0, o, ws, ex)
      : (g: bigint, os: bigint, is: bigint, o: bigint): number =>
        op.aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize!(g, os, is, false, 0, 0, o, ws, ex);
    const phase2 = p.op === "nearestExact1d"
      ? op.aclnnUpsampleNearestExact1dBackward!
      : p.op === "nearestExact2d"
      ? op.aclnnUpsampleNearestExact2dBackward!
      : op.aclnnUpsampleBilinear2dBackwardV2!;
    const slot = new BigUint64Array(1);
    const createGrad = (): bigint =>
      BigInt(nn.aclCreateTensor(
        gradDims,
        rankN,
        0,
        gradStrides,
        0n,
        format,
        gradStorage,
        1n,
        gradAddress,
      ));
    const createOut = (): bigint =>
      BigInt(
        nn.aclCreateTensor(outDims, rankN, 0, outStrides, 0n, format, outStorage, 1n, outAddress),
      );
    const launch = (g: bigint, os: bigint, is: bigint, o: bigint): void => {
      if (phase1(g, os, is, o) !== 0) throw new Error("phase 1 failed");
      const size = ws[0];
      if (size > workspaceBytes) {
        if (workspace !== 0n) acl.aclrtFree(workspace);
        if (acl.aclrtMalloc(slot, size, 0) !== 0) throw new Error("aclrtMalloc failed");
        workspace = slot[0];
        workspaceBytes = size;
      }
      if (phase2(size > 0n ? workspace : 0n, size, ex[0], stream) !== 0) {
        throw new Error("phase 2 failed");
      }
      if (sync && acl.aclrtSynchronizeStream(stream) !== 0) throw new Error("sync failed");
    };
    const destroy = (g: bigint, os: bigint, is: bigint, o: bigint): void => {
      nn.aclDestroyTensor(g);
      nn.aclDestroyTensor(o);
      nn.aclDestroyIntArray(os);
      nn.aclDestroyIntArray(is);
    };
    if (cached || reused) {
      // Made by the first call after construction or close(), destroyed by close() (which the
      // benchmark calls after each timed run, once the stream is idle).
      let g = 0n, o = 0n, os = 0n, is = 0n;
      let executor = 0n, size = 0n;
      this.#run = (): void => {
        if (g === 0n) {
          g = createGrad();
          o = createOut();
          os = BigInt(nn.aclCreateIntArray(outputSize, spatialN));
          is = BigInt(nn.aclCreateIntArray(inputSize, rankN));
        }
        if (!reused) return launch(g, os, is, o);
        if (executor === 0n) {
          if (phase1(g, os, is, o) !== 0) throw new Error("phase 1 failed");
          executor = ex[0];
          size = ws[0];
          if (nn.aclSetAclOpExecutorRepeatable(executor) !== 0) throw new Error("not repeatable");
          if (size > 0n) {
            if (acl.aclrtMalloc(slot, size, 0) !== 0) throw new Error("aclrtMalloc failed");
            workspace = slot[0];
            workspaceBytes = size;
          }
        }
        if (phase2(workspace, size, executor, stream) !== 0) throw new Error("phase 2 failed");
        if (sync && acl.aclrtSynchronizeStream(stream) !== 0) throw new Error("sync failed");
      };
      this.#close = (): void => {
        if (executor !== 0n) nn.aclDestroyAclOpExecutor(executor);
        executor = 0n;
        if (g !== 0n) destroy(g, os, is, o);
        g =
          o =
          os =
          is =
            0n;
        if (workspace !== 0n) acl.aclrtFree(workspace);
        workspace = 0n;
        workspaceBytes = 0n;
      };
      return;
    }
    this.#run = (): void => {
      const g = createGrad();
      const o = createOut();
      const os = BigInt(nn.aclCreateIntArray(outputSize, spatialN));
      const is = BigInt(nn.aclCreateIntArray(inputSize, rankN));
      launch(g, os, is, o);
      destroy(g, os, is, o);
    };
    this.#close = (): void => {
      if (workspace !== 0n) acl.aclrtFree(workspace);
      workspace = 0n;
      workspaceBytes = 0n;
    };
  }

  /** Frees the cached workspace and descriptors (call after a sync). */
  close(): void {
    this.#close();
  }

  /** One call (with its blocking sync when built with `sync`). */
  run(): void {
    this.#run();
  }
}
