/**
 * Numerics of the CPU backend: PyTorch's CPU kernels (default) or the Ascend device's rules, reached
 * by rewriting a call's table rule and scales (the kernels stay the same).
 *
 * @module
 */

import { type BilinearApi, bilinearRoute, checkDeviceEmpty } from "./ascend_a2.ts";
import type { UpsampleParams } from "./ops.ts";
import { linearTable, nearestTables, type TableRule } from "./tables.ts";

/** Whose results a device computes: PyTorch's CPU kernels', or the Ascend device's kernels'. */
export type Numerics = "pytorch" | "device";

/**
 * `call` as the device computes it: nearest-exact with the device's index rule; bilinear with the
 * device's kernel and scales when it routes there, else PyTorch's table from the sizes alone
 * (ResizeBilinearV2Grad and V1 derive both scales from the sizes, see `bilinearRoute`).
 *
 * @example
 * ```ts
 * import { deviceCall } from "./numerics.ts";
 * const call = {
 *   op: "bilinear2d",
 *   dtype: "float32",
 *   inputSize: [1, 1, 4, 4],
 *   outputSize: [8, 8],
 *   scales: [2, 0],
 *   alignCorners: false,
 * } as const;
 * deviceCall(call, "v2"); // { ...call, scales: [0, 0], rule: "pytorch" }
 * ```
 */
export function deviceCall<C extends UpsampleParams & { readonly rule?: TableRule }>(
  call: C,
  api: BilinearApi,
): C {
  if (call.op !== "bilinear2d") return { ...call, rule: "ascend-a2" };
  const route = bilinearRoute(call, api);
  return route.kernel === "kernel"
    ? { ...call, rule: "ascend-a2" }
    : { ...call, scales: route.scales, rule: "pytorch" };
}

/**
 * What the device does with calls the library accepts but the device treats specially; throws a
 * `RangeError` naming the rule where the device reports an error or computes nothing defined.
 * The 1d op rejects N or C = 0 with 161002: its parameter checks (which need N, C > 0) run before
 * its empty-tensor shortcut (op_api aclnn_upsample_nearest_exact1d_backward.cpp); the 2d ops
 * return before any check, with nothing launched (an empty result has nothing to write).
 *
 * @throws {RangeError} for a 1d call with N or C = 0, or a pass the device skips although its
 * sizes differ
 * @example
 * ```ts
 * import { checkDeviceRules } from "./numerics.ts";
 * const call = { op: "nearestExact1d", inputSize: [0, 2, 4], outputSize: [8], scales: [0], alignCorners: false } as const;
 * try { checkDeviceRules(call, "v2"); } catch (e) { console.log((e as Error).message); }
 * ```
 */
export function checkDeviceRules(
  call: Pick<UpsampleParams, "op" | "inputSize" | "outputSize" | "scales" | "alignCorners">,
  api: BilinearApi,
): void {
  const { op, inputSize, outputSize, scales } = call;
  checkDeviceEmpty(call);
  if (inputSize[0] * inputSize[1] === 0) return;
  const spatial = outputSize.length;
  if (op === "bilinear2d") {
    const route = bilinearRoute(call, api);
    if (route.kernel === "sizes") return;
    for (let d = 0; d < 2; d++) {
      linearTable(inputSize[2 + d], outputSize[d], call.alignCorners, route.scales[d], "ascend-a2");
    }
    return;
  }
  for (let d = 0; d < spatial; d++) {
    nearestTables(inputSize[2 + d], outputSize[d], scales[d], "ascend-a2");
  }
}
