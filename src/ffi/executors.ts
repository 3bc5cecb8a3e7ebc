/**
 * Reused aclnn executors: phase 1 of an op runs once per (op, gradOutput view, out view, scales,
 * alignCorners, deterministic); its executor is made repeatable and later calls with the same key run
 * phase 2 only.
 *
 * Why reuse is allowed: `aclSetAclOpExecutorRepeatable` (OB
 * `docs/zh/nnopbase/aclnn/aclSetAclOpExecutorRepeatable.md`, `aclnnStatus
 * aclSetAclOpExecutorRepeatable(aclOpExecutor *executor)`) lets phase 2 run an executor any number of
 * times until `aclDestroyAclOpExecutor`; device addresses need refreshing only when they change
 * (`aclSetInputTensorAddr.md`), and a key here includes both views, whose buffers' addresses never
 * change. Its constraints hold for these ops (CV `aclnn_upsample_nearest_exact{1,2}d_backward.cpp`,
 * `aclnn_upsample_bilinear_2d_backward_v2.cpp`): AI Core kernels only, no host-to-device or
 * device-to-device copy, intermediates from the executor's workspace, and the final ViewCopy goes from
 * a workspace tensor to `out` (never source == destination). A runtime that refuses the call leaves the
 * executor one-shot: it is launched once and not kept.
 *
 * Lifetime: an executor belongs to its gradOutput view's descriptor and is destroyed before either
 * view's aclTensor (it may point at them), when either view is dropped, when it is evicted (more than
 * {@link MAX_EXECUTORS_PER_VIEW} per gradOutput view), and when a phase 2 on it fails.
 *
 * @module
 */

import type { UpsampleOp } from "../backend.ts";
import type { ViewDescriptor } from "./descriptors.ts";

/**
 * Executors kept per gradOutput view: a view is normally read by one op with one out; a few more
 * cover alternating outs or parameters without letting them pile up.
 */
export const MAX_EXECUTORS_PER_VIEW = 4;

/**
 * A repeatable executor and the key it was made for. Internal to the NPU backend.
 *
 * @example
 * ```ts ignore
 * const reused = cache.executorFor(gradView, outView, "bilinear2d", 0, 0, false, false);
 * if (reused !== null) phase2(workspace, reused.workspaceSize, reused.executor, stream);
 * ```
 */
export class ReusedExecutor {
  /**
   * Internal: made by `launchAclnn` after a successful phase 1.
   *
   * @example
   * ```ts ignore
   * new ReusedExecutor("nearestExact2d", name, outView, 0, 0, false, false, executor, workspaceSize);
   * ```
   */
  constructor(
    /** The op. */
    readonly op: UpsampleOp,
    /** Its phase-2 API name (e.g. `aclnnUpsampleBilinear2dBackwardV2`). */
    readonly api: string,
    /** The out view's descriptor (the gradOutput view's descriptor holds this executor). */
    readonly out: ViewDescriptor,
    /** First scale (0 when unused). */
    readonly scale0: number,
    /** Second scale (0 when unused). */
    readonly scale1: number,
    /** alignCorners (false for nearest-exact). */
    readonly alignCorners: boolean,
    /** The deterministic mode phase 1 ran under. */
    readonly deterministic: boolean,
    /** UNSAFE: the `aclOpExecutor*` (0n once destroyed). */
    public executor: bigint,
    /** Workspace bytes phase 1 asked for. */
    readonly workspaceSize: bigint,
  ) {}

  /** Whether this executor was made for these parameters. */
  matches(
    op: UpsampleOp,
    out: ViewDescriptor,
    scale0: number,
    scale1: number,
    alignCorners: boolean,
    deterministic: boolean,
  ): boolean {
    return this.out === out && this.op === op && this.scale0 === scale0 &&
      this.scale1 === scale1 && this.alignCorners === alignCorners &&
      this.deterministic === deterministic;
  }
}
