/**
 * Numerics of the CPU backend: PyTorch's CPU kernels (default) or an Ascend generation's kernels,
 * reached by rewriting a call's table rule and scales (the kernels stay the same).
 *
 * @module
 */

import { type BilinearApi, bilinearRoute, checkAscendEmpty } from "./ascend_a2.ts";
import {
  kernelName5hd,
  orderDependent5hd,
  tbe5hdSpec,
  type TilingMode5hd,
  tilingMode5hd,
} from "./ascend_5hd.ts";
import { bilinearRoute950 } from "./ascend950_route.ts";
import type { AscendGeneration } from "./generation.ts";
import { checkFamilySupports } from "./family.ts";
import type { UpsampleParams } from "./ops.ts";
import {
  bilinearRule950,
  linearTable,
  nearestRule950,
  nearestTables,
  type TableRule,
} from "./tables.ts";

/** Whose results a device computes: PyTorch's CPU kernels', or the Ascend device's kernels'. */
export type Numerics = "pytorch" | "device";

/** Which Ascend kernels a device reference reproduces. */
export interface AscendTarget {
  /** The generation (`generation.ts`). */
  readonly generation: AscendGeneration;
  /** The bilinear aclnn API the device runs (V2 on current CANN). */
  readonly bilinearApi: BilinearApi;
  /**
   * Whether the kernels' scalar `a * b + c` coordinate arithmetic is contracted into fused
   * multiply-adds (the source does not say; the reference defaults to contracted): the 950's
   * kernels, and A2/A3's forward Cube kernel UpsampleBilinear2d (its centre). A2/A3's backward
   * kernels run on vector instructions, which round each step.
   */
  readonly fma: boolean;
  /**
   * A2/A3, 910, 310P: whether the TBE kernel ResizeBilinearV2Grad contracts its coordinate
   * `scale * (d + 0.5) - 0.5` into one fused multiply-add and its vector multiply-add (vaxpy)
   * rounds once (the source does not say; default false: each step rounds). Ignored on the 950.
   */
  readonly tbeFma?: boolean;
  /**
   * A2/A3's Cube-matmul kernels (UpsampleBilinear2dGrad, UpsampleNearestExact2dGrad; the forward
   * UpsampleBilinear2d): the order inside each matmul, which the hardware leaves open. `"pytorch"`
   * (default): the backward reference sums in PyTorch's order, within the bound of the device.
   * `"ascending"`: the source's W pass then H pass, each output's terms in ascending gradient index
   * from +0 (the host emulation's reading, `src/cpu/ascend/backward/cube_a2.ts`): then the reference
   * is that reading's bits (`exactness.ts`).
   */
  readonly cubeOrder?: "pytorch" | "ascending";
  /**
   * The SoC name (`aclrtGetSocName`), where a kernel choice depends on more than the generation
   * (the 950's forward kernels read its vector core count); unset: the generation's default SoC.
   */
  readonly soc?: string;
}

/** The target of a device reference opened without options: Atlas A2/A3, bilinear V2. */
export const DEFAULT_ASCEND_TARGET: AscendTarget = Object.freeze({
  generation: "a2",
  bilinearApi: "v2",
  fma: true,
  tbeFma: false,
});

/** What the rewrite reads and writes of a call: its parameters, mode and table rule. */
type RuledCall = UpsampleParams & { readonly deterministic: boolean; readonly rule?: TableRule };

/**
 * `call` as `target`'s kernels compute it, as a rule and scales for the shared CPU kernels.
 * A2/A3: nearest-exact with A2's index rule; bilinear with the V2 op's own kernel and scales when
 * it routes there, else PyTorch's table from the sizes alone (ResizeBilinearV2Grad and V1 derive
 * both scales from the sizes, see `bilinearRoute`). 950: nearest-exact with the 950 rule;
 * bilinear with the table of the ResizeBilinearV2Grad kernel the tiling picks for the call's
 * sizes, scales, dtype and `deterministic` (`bilinearRoute950`), the scales as given.
 *
 * @throws {RangeError} for a 950 bilinear call routed to an NHWC-only kernel (never: the library
 * tags tensors NCHW)
 * @example
 * ```ts
 * import { ascendCall } from "./numerics.ts";
 * const call = {
 *   op: "bilinear2d",
 *   dtype: "float32",
 *   inputSize: [1, 1, 4, 4],
 *   outputSize: [8, 8],
 *   scales: [2, 0],
 *   alignCorners: false,
 *   deterministic: false,
 *   rule: "pytorch",
 * } as const;
 * ascendCall(call, { generation: "a2", bilinearApi: "v2", fma: true }); // { ...call, scales: [0, 0] }
 * ascendCall(call, { generation: "950", bilinearApi: "v2", fma: true }).rule; // "ascend950-determine-scales-fma"
 * ```
 */
export function ascendCall<C extends RuledCall>(call: C, target: AscendTarget): C {
  const { rule, scales } = ascendPlan(call, target);
  return { ...call, rule, scales };
}

/** How a target's kernels compute one call, as {@link ascendPlan} gives it. */
export interface AscendPlan {
  /** The table rule the shared CPU kernels run on. */
  readonly rule: TableRule;
  /** The scales they use (A2's size-derived routes drop the given ones). */
  readonly scales: readonly number[];
  /** A 950 gather kernel (DETERMINE, DETERMINE_SCALES): weights from running coordinates. */
  readonly gather: boolean;
  /** The device adds each term into the result in its dtype, in an unspecified order. */
  readonly atomic: boolean;
  /**
   * The kernel the device runs, as the emulation names it (`aclemuLastKernel`): e.g.
   * `"UpsampleBilinear2dGrad"`, `"ResizeBilinearV2Grad5HD.MODE6"`, `"ViewCopy"`; `""` when nothing
   * is launched (empty tensors).
   */
  readonly kernel: string;
  /**
   * Whether that kernel adds in an order nothing fixes although the call asked for deterministic
   * mode (it ignores the flag): the TBE ResizeBilinearV2Grad's atomic modes. Always false for a
   * kernel the flag switches (the 950's scatter becomes a gather).
   */
  readonly orderDependent: boolean;
}

/**
 * The rule, scales and way of summing of `call` on `target`'s kernels: what {@link ascendCall}
 * rewrites a call with and what the comparison bound (`bound.ts`) allows for.
 *
 * @throws {RangeError} for a 950 bilinear call routed to an NHWC-only kernel (never: the library
 * tags tensors NCHW)
 * @example
 * ```ts
 * import { ascendPlan } from "./numerics.ts";
 * const call = {
 *   op: "bilinear2d",
 *   dtype: "float16",
 *   inputSize: [1, 1, 8, 8],
 *   outputSize: [4, 4],
 *   scales: [0, 0],
 *   alignCorners: false,
 *   deterministic: false,
 * } as const;
 * ascendPlan(call, { generation: "950", bilinearApi: "v2", fma: true }).atomic; // true: SIMT scatter
 * ```
 */
export function ascendPlan(
  call: UpsampleParams & { readonly deterministic: boolean },
  target: AscendTarget,
): AscendPlan {
  const { scales, inputSize, outputSize } = call;
  const empty = inputSize[0] * inputSize[1] === 0 || outputSize.some((s) => s === 0);
  const sameSizes = outputSize.every((size, d) => size === inputSize[2 + d]);
  const named = (kernel: string): string => empty ? "" : kernel;
  const generation = target.generation;
  if (generation === "950") {
    if (call.op !== "bilinear2d") {
      const kernel = named(nearestKernel950(call, sameSizes));
      return {
        rule: nearestRule950(target.fma),
        scales,
        gather: false,
        atomic: false,
        kernel,
        orderDependent: false,
      };
    }
    const route = bilinearRoute950(call, {
      api: target.bilinearApi,
      deterministic: call.deterministic,
    });
    if (route.kernel === "point-copy" || route.kernel === "c-parallel") {
      throw new RangeError(`the 950's ${route.kernel} kernel runs on NHWC tensors only`);
    }
    const gather = route.kernel === "determine" || route.kernel === "determine-scales";
    const rule = bilinearRule950(route.kernel, target.fma);
    // V1 copies equal sizes in its op_api, before any kernel.
    const v1Copy = target.bilinearApi === "v1" && sameSizes;
    const kernel = named(v1Copy ? "ViewCopy" : KERNEL_NAMES_950[route.kernel]);
    return { rule, scales, gather, atomic: route.atomic, kernel, orderDependent: false };
  }
  const fixedOrder = (kernel: string): AscendPlan => ({
    rule: "ascend-a2",
    scales,
    gather: false,
    atomic: false,
    kernel: named(kernel),
    orderDependent: false,
  });
  if (call.op !== "bilinear2d") return fixedOrder("UpsampleNearestExact2dGrad");
  // 910/310P: V2 launches nothing for equal sizes, so the library runs V1 there, a copy.
  const api = generation === "a2" ? target.bilinearApi : "v1";
  if (api === "v1" && sameSizes) {
    return { ...plan5hd(scales, 0, target), kernel: named("ViewCopy") };
  }
  const route = bilinearRoute(call, api);
  if (route.kernel === "kernel") return fixedOrder("UpsampleBilinear2dGrad");
  const mode = tilingMode5hd(inputSize.slice(2), outputSize, tbe5hdSpec(generation));
  return {
    ...plan5hd(route.scales, mode, target),
    kernel: named(kernelName5hd(mode)),
    orderDependent: !empty && orderDependent5hd(mode, inputSize[2], outputSize[0]),
  };
}

// The emulation's names of the 950's NCHW ResizeBilinearV2Grad kernels (32-bit indices).
const KERNEL_NAMES_950: Readonly<Record<string, string>> = {
  "all-copy": "ResizeBilinearV2Grad.ALL_COPY",
  simt: "ResizeBilinearV2Grad.SIMT_NCHW",
  determine: "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE",
  "determine-scales": "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE_SCALES",
};

// The 950's nearest-exact: a byte copy when no dimension is resized and no scale given, else SIMT.
function nearestKernel950(call: UpsampleParams, sameSizes: boolean): string {
  const copy = sameSizes && call.scales.every((scale) => scale === 0);
  return copy ? "UpsampleNearestExact2dGrad.DATA_COPY" : "UpsampleNearestExact2dGrad.SIMT";
}

// The TBE ResizeBilinearV2Grad: PyTorch's tables from the sizes, or the contracted coordinates
// (mode 5 computes W's on the vector unit, never contracted).
function plan5hd(scales: readonly number[], mode: TilingMode5hd, target: AscendTarget): AscendPlan {
  const rule: TableRule = !target.tbeFma
    ? "pytorch"
    : mode === 5
    ? "ascend-5hd-fma-h"
    : "ascend-5hd-fma";
  return { rule, scales, gather: false, atomic: false, kernel: "", orderDependent: false };
}

/**
 * What `target`'s device does with calls the library accepts but the device treats specially;
 * throws a `RangeError` naming the rule where the device reports an error or computes nothing
 * defined. On the 910 and 310P first what the family does not run at all (`checkFamilySupports`).
 * Every generation: the 1d op rejects N or C = 0 with 161002 (its parameter checks run
 * before its empty-tensor shortcut, op_api aclnn_upsample_nearest_exact1d_backward.cpp; the 950
 * path of that file is the same). A2 only: a pass its kernels skip although the sizes differ.
 * The 950 has no such skip and no scale checks on bilinear (docs/device-semantics.md).
 *
 * @throws {RangeError} for a 1d call with N or C = 0, or (A2) a pass the device skips although its
 * sizes differ
 * @example
 * ```ts
 * import { checkAscendRules, DEFAULT_ASCEND_TARGET } from "./numerics.ts";
 * const call = { op: "nearestExact1d", dtype: "float32", inputSize: [0, 2, 4], outputSize: [8], scales: [0], alignCorners: false } as const;
 * try { checkAscendRules(call, DEFAULT_ASCEND_TARGET); } catch (e) { console.log((e as Error).message); }
 * ```
 */
export function checkAscendRules(call: UpsampleParams, target: AscendTarget): void {
  const { op, inputSize, outputSize, scales } = call;
  checkFamilySupports(call, target.generation);
  checkAscendEmpty(call);
  if (inputSize[0] * inputSize[1] === 0) return;
  const spatial = outputSize.length;
  if (target.generation === "950") {
    if (op === "bilinear2d") return;
    const rule = nearestRule950(target.fma);
    for (let d = 0; d < spatial; d++) {
      nearestTables(inputSize[2 + d], outputSize[d], scales[d], rule);
    }
    return;
  }
  if (op === "bilinear2d") {
    const plan = ascendPlan({ ...call, deterministic: false }, target);
    // The TBE kernel's mode-6 column loss is the launch plan's (support.ts launchPlanOf): avoided,
    // refused or allowed as the deviceDefects option says.
    if (plan.kernel.startsWith("ResizeBilinearV2Grad5HD")) return;
    if (target.generation !== "a2") return;
    const route = bilinearRoute(call, target.bilinearApi);
    for (let d = 0; d < 2; d++) {
      linearTable(inputSize[2 + d], outputSize[d], call.alignCorners, route.scales[d], "ascend-a2");
    }
    return;
  }
  for (let d = 0; d < spatial; d++) {
    nearestTables(inputSize[2 + d], outputSize[d], scales[d], "ascend-a2");
  }
}
