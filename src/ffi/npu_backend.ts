/**
 * The NPU backend: one device, one context, one stream; device memory through `aclrtMalloc`; ops through
 * aclnn; reads and syncs poll the stream for at most ~50 µs (`stream_poll.ts`), then await it on a
 * worker thread, so the event loop is never blocked for longer.
 *
 * @module
 */

import type {
  Backend,
  ForwardCall,
  MemoryInfo,
  TensorLimit,
  UpsampleCall,
  UpsampleParams,
} from "../backend.ts";
import { type AscendGeneration, generationOfSoc, type SocGeneration } from "../rules/generation.ts";
import { allocateHost, type DType, dtypeByteSize, type HostArray } from "../tensor/dtype.ts";
import { forgetLaunches, launchAclnn, launchForwardAclnn, type NpuBuffer } from "./aclnn_call.ts";
import { DescriptorCache } from "./descriptors.ts";
import { launchRoute, launchTransposed, type RouteTarget } from "./route_launch.ts";
import type { DeviceDefects } from "../rules/arrangement.ts";
import { NpuRules } from "./npu_rules.ts";
import type { CannRuntime } from "./runtime.ts";
import { AclError, DeviceMemoryError } from "./status.ts";
import { StreamPoll } from "./stream_poll.ts";
import { WarningChannel } from "../warnings.ts";
import { MALLOC_HUGE_FIRST, MEM_ATTR_HBM, MEMCPY_KIND, OPT_DETERMINISTIC } from "./symbols.ts";

export type { NpuBuffer } from "./aclnn_call.ts";

const ACL_ERROR_RT_CONTEXT_NULL = 107002;
// aclrtCtxGetSysParamOpt on a context where the option was never set (RT `rt_error_codes.h`): "not set"
// means the documented default, off.
const ACL_ERROR_RT_SYSPARAMOPT_NOT_SET = 107021;
// What a failed aclrtMalloc answers when memory ran out (RT `rt_error_codes.h`, `acl_base.h`).
const OUT_OF_MEMORY = new Set([207001, 207018, 200000]);
// aclCreateTensor/aclCreateIntArray return NULL, not a status: report them as aclnn's inner error.
const ACLNN_ERR_INNER = 561000;
// Deferred frees above this many bytes force a sync, so dropping results in a loop cannot grow memory.
const MAX_DEFERRED_BYTES = 256 * 2 ** 20;
// The last ACL_OPT_DETERMINISTIC this process set, and through which runtime and context (see
// #applyDeterministic); null until the first set.
let lastDeterministic: { runtime: CannRuntime; context: bigint; on: boolean } | null = null;

/**
 * A backend over one NPU. Storage handles are {@link NpuBuffer}s.
 *
 * @example
 * ```ts ignore
 * import { openNpuBackend } from "./npu_open.ts";
 * const backend = openNpuBackend({ deviceId: 0 });
 * const buffer = backend.allocate("float32", 16);
 * backend.free(buffer);
 * backend.close();
 * ```
 */
export class NpuBackend implements Backend<NpuBuffer>, RouteTarget {
  /** Always `"npu"`. */
  readonly kind = "npu" as const;
  #tensorLimit: TensorLimit | undefined;
  #workspace: NpuBuffer = { address: 0n, bytes: 0 };
  #workspaceBytes = 0n;
  // Buffers dropped while queued work may still use them, with the enqueue count at that moment.
  #deferred: Array<{ buffer: NpuBuffer; after: number }> = [];
  #deferredBytes = 0;
  #enqueued = 0; // launches so far
  #completed = 0; // launches known finished (by a completed sync)
  #syncing: Promise<void> | null = null;
  readonly #poll = new StreamPoll();
  #closed = false;
  // The family's rules before a launch (made on first use: the libraries' table is fixed by then).
  #rulesCache: NpuRules | null = null;
  /** Part of the launch target: aclTensor/aclIntArray descriptors of the views ops have used. */
  readonly descriptors: DescriptorCache;
  /** The kernel generation of {@link soc} (A2/A3 assumed, `known: false`, when unrecognised). */
  readonly socGeneration: SocGeneration;

  /** Internal: use `openNpuBackend` (npu_open.ts). */
  constructor(
    /** The process-wide runtime of the loaded CANN. */
    readonly runtime: CannRuntime,
    /** The NPU index. */
    readonly deviceId: number,
    /** UNSAFE: the device's ACL context handle. */
    readonly context: bigint,
    /** UNSAFE: the device's stream handle. */
    readonly stream: bigint,
    /** SoC name and index. */
    readonly name: string,
    /** The SoC name `aclrtGetSocName` answered (null: the runtime lacks it or answered NULL). */
    readonly soc: string | null = null,
    /** Warn once instead of throwing for an order-dependent kernel in deterministic mode. */
    readonly deterministicWarnOnly = false,
    /** Where this NPU's warnings go. */
    readonly warnings: WarningChannel = new WarningChannel(),
    /** Where the vendor's source says a kernel loses terms: avoid, refuse or allow (`deviceDefects`). */
    readonly deviceDefects: DeviceDefects = "avoid",
  ) {
    this.socGeneration = generationOfSoc(soc);
    this.descriptors = new DescriptorCache(
      runtime.libs.nnopbase,
      (api) => runtime.error(ACLNN_ERR_INNER, api),
    );
  }

  get #rules(): NpuRules {
    return this.#rulesCache ??= new NpuRules(
      this.runtime.libs,
      this.generation,
      this.soc,
      this.deterministicWarnOnly,
      this.warnings,
      this.deviceDefects,
    );
  }

  /** The kernel generation of {@link soc} (part of the launch target). */
  get generation(): AscendGeneration {
    return this.socGeneration.generation;
  }

  /** Allocates device memory (32-byte aligned by the runtime); empty buffers take none. */
  allocate(dtype: DType, length: number): NpuBuffer {
    const bytes = length * dtypeByteSize(dtype);
    return bytes === 0 ? { address: 0n, bytes: 0 } : this.#malloc(bytes);
  }

  /**
   * Destroys the buffer's cached descriptors, then frees it now when the stream is idle, else after the
   * next sync (queued work may still use it; the descriptors were only needed to enqueue it).
   */
  free(buffer: NpuBuffer): void {
    if (buffer.address === 0n) return;
    this.descriptors.forget(buffer);
    if (this.#enqueued === this.#completed) {
      this.#release(buffer);
      return;
    }
    this.#deferred.push({ buffer, after: this.#enqueued });
    this.#deferredBytes += buffer.bytes;
    if (this.#deferredBytes > MAX_DEFERRED_BYTES) this.#syncBlocking();
  }

  /** Host-to-device copy (synchronous; fresh storage is never in use by queued work). */
  upload(buffer: NpuBuffer, data: HostArray): void {
    this.runtime.activate(this.context);
    const count = BigInt(data.byteLength);
    const status = this.runtime.libs.acl.aclrtMemcpyToDevice(
      buffer.address,
      BigInt(buffer.bytes),
      data,
      count,
      MEMCPY_KIND.hostToDevice,
    );
    this.runtime.check(status, "aclrtMemcpy");
  }

  /** Awaits the stream, then copies `length` elements from `start` to the host. */
  async download(
    buffer: NpuBuffer,
    dtype: DType,
    start: number,
    length: number,
  ): Promise<HostArray> {
    while (this.#enqueued > this.#completed) await this.synchronize();
    if (this.#closed) throw new TypeError("toFloat32Array: the device was closed during the read");
    const host = allocateHost(dtype, length);
    const size = dtypeByteSize(dtype);
    this.runtime.activate(this.context);
    const status = this.runtime.libs.acl.aclrtMemcpyToHost(
      host,
      BigInt(host.byteLength),
      buffer.address + BigInt(start * size),
      BigInt(length * size),
      MEMCPY_KIND.deviceToHost,
    );
    this.runtime.check(status, "aclrtMemcpy");
    return host;
  }

  /** The checks of a backward call before anything is allocated (`NpuRules.checkBackward`). */
  checkSupported(params: UpsampleParams & { readonly deterministic: boolean }): void {
    const memory = (): MemoryInfo | null =>
      this.runtime.libs.acl.aclrtGetMemInfo === null ? null : this.memoryInfo();
    this.#rules.checkBackward(params, memory, this.name);
  }

  /** Enqueues the op on the device stream. */
  launch(call: UpsampleCall<NpuBuffer>): void {
    if (call.inputSize[0] * call.inputSize[1] === 0) return; // empty result: nothing to compute
    this.runtime.activate(this.context);
    this.#applyDeterministic(call.deterministic);
    // The deterministic route or an arrangement avoiding a kernel's column loss (launchPlanOf).
    const plan = this.#rules.planOf(call);
    if (plan?.kind === "route") return launchRoute(this, call, plan.route); // marks itself enqueued
    if (plan?.kind === "transposed") return launchTransposed(this, call);
    launchAclnn(this, call);
    this.markEnqueued();
  }

  /**
   * Part of the route target: counts queued work. Only launches that reached the stream need a sync
   * before their buffers are freed. One onto an idle stream also records the poll event, so a sync
   * right after it needs no record of its own.
   */
  markEnqueued(): void {
    if (this.#enqueued++ === this.#completed) {
      this.#poll.mark(this.runtime, this.stream, this.#enqueued);
    }
  }

  /** The checks of a forward call before anything is allocated (`NpuRules.checkForward`). */
  checkForwardSupported(params: UpsampleParams & { readonly deterministic: boolean }): void {
    this.#rules.checkForward(params);
  }

  /** Enqueues the forward op on the device stream. */
  launchForward(call: ForwardCall<NpuBuffer>): void {
    if (call.inputSize[0] * call.inputSize[1] === 0) return; // empty result: nothing to compute
    this.runtime.activate(this.context);
    this.#applyDeterministic(call.deterministic);
    launchForwardAclnn(this, call);
    this.markEnqueued();
  }

  /** Always: a call object holds buffer handles (device addresses and sizes), never host storage. */
  keepsCall(_call: UpsampleCall<NpuBuffer> | ForwardCall<NpuBuffer>): boolean {
    return true;
  }

  /** Sets `ACL_OPT_DETERMINISTIC` on the device context when it changes. */
  setDeterministic(on: boolean): void {
    this.runtime.activate(this.context);
    this.#applyDeterministic(on);
  }

  /**
   * Reads `ACL_OPT_DETERMINISTIC` back from the runtime (`aclrtCtxGetSysParamOpt`). A context where it
   * was never set answers 107021 (ACL_ERROR_RT_SYSPARAMOPT_NOT_SET): the default, off.
   *
   * @throws {MissingSymbolError} on a runtime without `aclrtCtxGetSysParamOpt`
   */
  readDeterministic(): boolean {
    const get = this.runtime.require("aclrtCtxGetSysParamOpt");
    this.runtime.activate(this.context);
    const value = new BigInt64Array(1);
    const status = get(OPT_DETERMINISTIC, value);
    if (status === ACL_ERROR_RT_SYSPARAMOPT_NOT_SET) return false;
    this.runtime.check(status, "aclrtCtxGetSysParamOpt");
    return value[0] !== 0n;
  }

  /** One tensor takes at most the device's memory in total (`aclrtGetMemInfo`, asked once). */
  get tensorLimit(): TensorLimit {
    if (this.#tensorLimit === undefined) {
      let bytes = Infinity; // a runtime without the query, or failing it: aclrtMalloc tells
      try {
        if (this.runtime.libs.acl.aclrtGetMemInfo !== null) bytes = this.memoryInfo().total;
      } catch {
        // as without the query
      }
      this.#tensorLimit = { bytes, source: `the memory of ${this.name} (aclrtGetMemInfo)` };
    }
    return this.#tensorLimit;
  }

  /**
   * Free and total device memory in bytes (`aclrtGetMemInfo` on HBM, which the runtime maps to DDR on
   * chips without HBM).
   *
   * @throws {MissingSymbolError} on a runtime without `aclrtGetMemInfo`
   */
  memoryInfo(): MemoryInfo {
    const getMemInfo = this.runtime.require("aclrtGetMemInfo");
    this.runtime.activate(this.context);
    const free = new BigUint64Array(1);
    const total = new BigUint64Array(1);
    this.runtime.check(getMemInfo(MEM_ATTR_HBM, free, total), "aclrtGetMemInfo");
    return { free: Number(free[0]), total: Number(total[0]) };
  }

  /** Part of the launch target: a workspace of at least `bytes`, grown (never shrunk) on demand. */
  workspace(bytes: bigint): bigint {
    if (bytes > this.#workspaceBytes) { // a bigint kept alongside: no BigInt made per call
      const grown = this.#malloc(Number(bytes));
      this.free(this.#workspace);
      this.#workspace = grown;
      this.#workspaceBytes = BigInt(grown.bytes);
    }
    return this.#workspace.address;
  }

  /**
   * Waits for the stream, then frees deferred buffers: on the JS thread when the stream finishes within
   * a short bounded spin (`stream_poll.ts`, at most ~50 µs), else on a worker thread.
   */
  synchronize(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#syncing) return this.#syncing.then(() => this.synchronize());
    if (this.#enqueued === this.#completed) return Promise.resolve();
    const target = this.#enqueued;
    const { acl } = this.runtime.libs;
    try {
      this.runtime.activate(this.context);
      if (this.#poll.reached(this.runtime, this.stream, target)) {
        // Drained up to the event: returns at once, with the stream's status.
        this.#settle(target, acl.aclrtSynchronizeStream(this.stream));
        return Promise.resolve();
      }
    } catch (error) {
      return Promise.reject(error);
    }
    const done = (status: number): void => {
      this.#syncing = null;
      if (!this.#closed) this.#settle(target, status); // else close() synchronized and freed all
    };
    this.#syncing = acl.aclrtSynchronizeStreamNonblocking(this.stream).then(done, (error) => {
      this.#syncing = null;
      throw error;
    });
    return this.#syncing;
  }

  /**
   * Synchronizes, destroys the cached descriptors, frees the workspace and every deferred buffer,
   * destroys the stream, resets the device.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const { acl } = this.runtime.libs;
    this.runtime.activate(this.context);
    acl.aclrtSynchronizeStream(this.stream);
    this.#completed = this.#enqueued;
    this.#poll.dispose(this.runtime);
    forgetLaunches(this);
    this.descriptors.clear(); // normally empty: the device freed its buffers before closing the backend
    this.#flushDeferred();
    if (this.#workspace.address !== 0n) this.#release(this.#workspace);
    const teardown = (): void => {
      acl.aclrtDestroyStream(this.stream);
      acl.aclrtResetDevice(this.deviceId);
      this.runtime.forget(this.context);
      // A later context may get this one's handle: its option starts unset, whatever this one had.
      if (lastDeterministic?.context === this.context) lastDeterministic = null;
      this.runtime.release();
    };
    // A worker thread may still be inside aclrtSynchronizeStream on this stream: destroy it after.
    if (this.#syncing) this.#syncing.then(teardown, teardown);
    else teardown();
  }

  // Out of memory: buffers whose free waits for queued work are released (a sync) and the allocation
  // tried once more; then a DeviceMemoryError with the bytes requested and free.
  #malloc(bytes: number): NpuBuffer {
    this.runtime.activate(this.context);
    const slot = this.runtime.out64;
    const { acl } = this.runtime.libs;
    let status = acl.aclrtMalloc(slot, BigInt(bytes), MALLOC_HUGE_FIRST);
    if (OUT_OF_MEMORY.has(status) && this.#deferred.length > 0) {
      this.#syncBlocking();
      status = acl.aclrtMalloc(slot, BigInt(bytes), MALLOC_HUGE_FIRST);
    }
    if (status === 0) return { address: slot[0], bytes };
    if (!OUT_OF_MEMORY.has(status)) throw this.runtime.error(status, "aclrtMalloc");
    const detail = this.runtime.recentMessage();
    let memory = { free: -1, total: -1 };
    if (this.runtime.libs.acl.aclrtGetMemInfo !== null) {
      try {
        memory = this.memoryInfo();
      } catch {
        // the failure being reported is the allocation; free memory stays "unknown"
      }
    }
    throw new DeviceMemoryError(status, "aclrtMalloc", detail, bytes, memory.free, memory.total);
  }

  #release(buffer: NpuBuffer): void {
    this.runtime.activate(this.context);
    this.runtime.check(this.runtime.libs.acl.aclrtFree(buffer.address), "aclrtFree");
  }

  // A runtime without the system-parameter pair has no deterministic switch: off is its only mode (the
  // documented default), on is a MissingSymbolError naming the symbol and the CANN that has it.
  // The set is skipped only when this process's last one was the same value from this runtime and
  // context: rtCtxSetSysParamOpt also stores the value process-wide, and aclnn's phase 1 (where the
  // 950 tiling picks its kernel) reads that process-wide value (hicann/runtime
  // src/runtime/api/api_c.cc rtCtxSetSysParamOpt, rtGetSysParamOpt; hicann/opbase
  // src/nnopbase/composite_op/aclnn_engine/op_executor.cpp GetDeterministicLevelFromRt), so another
  // device's set, on any context, makes the cached value stale.
  #applyDeterministic(on: boolean): void {
    const last = lastDeterministic;
    if (last?.runtime === this.runtime && last.context === this.context && last.on === on) return;
    const set = this.runtime.libs.acl.aclrtCtxSetSysParamOpt;
    if (set === null && !on) {
      lastDeterministic = { runtime: this.runtime, context: this.context, on };
      return;
    }
    const status = this.runtime.require("aclrtCtxSetSysParamOpt")(OPT_DETERMINISTIC, on ? 1n : 0n);
    this.runtime.check(status, "aclrtCtxSetSysParamOpt");
    lastDeterministic = { runtime: this.runtime, context: this.context, on };
  }

  // A runtime that wants a context on the waiting thread (a worker's sync) answers 107002: sync again
  // here, where the context is current. Then what a finished sync does.
  #settle(target: number, status: number): void {
    if (status === ACL_ERROR_RT_CONTEXT_NULL) {
      this.runtime.activate(this.context);
      status = this.runtime.libs.acl.aclrtSynchronizeStream(this.stream);
    }
    this.#afterSync(target, status);
  }

  #syncBlocking(): void {
    this.runtime.activate(this.context);
    const target = this.#enqueued;
    this.#afterSync(target, this.runtime.libs.acl.aclrtSynchronizeStream(this.stream));
  }

  // Work up to `target` has finished (even when the sync reports an earlier failure).
  #afterSync(target: number, status: number): void {
    this.#completed = Math.max(this.#completed, target);
    this.#flushDeferred();
    if (status === 0) return;
    const error = this.runtime.error(status, "aclrtSynchronizeStream");
    if (error.detail !== "") throw error;
    // The runtime keeps its message on the thread that failed: the worker that waited.
    throw new AclError(
      status,
      "aclrtSynchronizeStream",
      "queued work failed (the runtime's message stays on the worker thread that waited)",
    );
  }

  #flushDeferred(): void {
    const keep: Array<{ buffer: NpuBuffer; after: number }> = [];
    for (const entry of this.#deferred) {
      if (entry.after <= this.#completed) this.#release(entry.buffer);
      else keep.push(entry);
    }
    this.#deferred = keep;
    this.#deferredBytes = keep.reduce((sum, entry) => sum + entry.buffer.bytes, 0);
  }
}
