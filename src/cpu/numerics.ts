/**
 * Numerics of the CPU backend: PyTorch's CPU kernels (default) or the Ascend A2/A3 device's rules,
 * reached by rewriting a call's index rule and scales (the kernels stay the same).
 *
 * @module
 */

import type { UpsampleCall, UpsampleParams } from "../backend.ts";
import { type BilinearApi, bilinearRoute } from "./device_rules.ts";

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
export function deviceCall<C extends UpsampleParams & Pick<UpsampleCall<unknown>, "rule">>(
  call: C,
  api: BilinearApi,
): C {
  if (call.op !== "bilinear2d") return { ...call, rule: "device" };
  const route = bilinearRoute(call, api);
  return route.kernel === "kernel"
    ? { ...call, rule: "device" }
    : { ...call, scales: route.scales, rule: "pytorch" };
}
