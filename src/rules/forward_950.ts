/**
 * The Ascend 950's FORWARD kernels as the tilings pick them for the library's NCHW / NCL tensors
 * (`forward_device.ts` asks): ResizeNearestNeighborV2 (and the 2d op's UpsampleNearestExact3d
 * special case) for nearest-exact, ResizeBilinearV2With4d for bilinear. Both op_apis
 * (hicann/ops-cv image/upsample_nearest/op_host/op_api/aclnn_upsample_nearest_exact{1,2}d.cpp,
 * image/upsample_bilinear2d/op_host/op_api/aclnn_upsample_bilinear_2d.cpp, `IsRegBase()`) pass the
 * scales as `static_cast<float>(scales)`; the tilings read the SoC's vector core count
 * (`GetCoreNumAiv`, 2 x `ai_core_cnt`) and UB size. Kernel names are the emulation's
 * (`native/src/opapi/fwd_nearest.c`, `fwd_resize_950.c`).
 *
 * @module
 */

import { alignStep, sizeStep, step950 } from "./forward_axes.ts";
import type { ForwardPlan, ForwardVariant } from "./forward_device.ts";
import { socInfo } from "./generation.ts";
import type { UpsampleParams } from "./ops.ts";

const DEFAULT_SOC_950 = "Ascend950PR_9599";
const UINT32_MAX = 4294967295;
const INT32_MAX = 2147483647;

function plan(
  kernel: string,
  variant: ForwardVariant,
  steps: readonly number[] = [],
  extra: Partial<ForwardPlan> = {},
): ForwardPlan {
  return { kernel, variant, steps, alignCorners: false, fma: false, passOrder: "wh", ...extra };
}

// The AIV core count and UB bytes of a 950 SoC (GetCoreNumAiv: 2 x ai_core_cnt; ub_size).
function vectorInfo(soc: string | undefined): { cores: number; ub: number } {
  const info = socInfo(soc ?? DEFAULT_SOC_950) ?? socInfo(DEFAULT_SOC_950)!;
  return { cores: 2 * info.aiCoreCount, ub: info.ubSize };
}

function fits32(x: number, y: number, dims: readonly number[]): boolean {
  return x < UINT32_MAX && y < UINT32_MAX && dims.every((d) => d <= INT32_MAX);
}

/**
 * GoResizeBilinearV2AiCoreWith4d -> ResizeBilinearV2 arch35 on NCHW
 * (image/resize_bilinear_v2/op_host/arch35/resize_bilinear_v2_tiling_arch35.cpp
 * MatchTilingStrategyAndSetTilingKey; op_kernel/resize_bilinear_v2_apt.cpp): ALL_COPY for equal
 * sizes; NCHW_BROADCAST for a 1x1 image with out H * W * sizeof >= 128 bytes; SIMT_HW when the
 * input has more than one element and out H * W >= cores * 1024 (idx64: 512), else SIMT_NCHW,
 * whose align-corners scenes copy (1x1 image: its value; 1x1 output: the cell (0, 0)).
 *
 * @example
 * ```ts
 * import { bilinearPlan950 } from "./forward_950.ts";
 * const call = { op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 2, 2], outputSize: [3, 3], scales: [0, 0], alignCorners: false } as const;
 * bilinearPlan950(call, undefined, true).kernel; // "ResizeBilinearV2With4d.SIMT_NCHW"
 * ```
 */
export function bilinearPlan950(
  call: UpsampleParams,
  soc: string | undefined,
  fma: boolean,
): ForwardPlan {
  const [n, c, inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  const name = (key: string): string => `ResizeBilinearV2With4d.${key}`;
  if (inH === outH && inW === outW) return plan(name("ALL_COPY"), "copy");
  const bytes = call.dtype === "float32" ? 4 : 2;
  const image1 = inH === 1 && inW === 1;
  if (image1 && outH * outW * bytes >= 128) return plan(name("NCHW_BROADCAST"), "broadcast");
  const align = call.alignCorners;
  const step = (input: number, output: number, scale: number): number =>
    align
      ? (output > 1 ? alignStep(input, output) : sizeStep(input, output))
      : step950(input, output, scale);
  const steps = [step(inH, outH, call.scales[0]), step(inW, outW, call.scales[1])];
  const x = n * c * inH * inW, y = n * c * outH * outW;
  const idx32 = fits32(x, y, [inH, inW, outH, outW]);
  const { cores } = vectorInfo(soc);
  const suffix = idx32 ? "" : "_IDX64";
  const extra = { alignCorners: align, fma };
  if (x !== 1 && outH * outW >= cores * (idx32 ? 1024 : 512)) {
    return plan(name(`SIMT_HW${suffix}`), "simt950-hw", steps, extra);
  }
  const kernel = name(`SIMT_NCHW${suffix}`);
  if (align && (image1 || (outH === 1 && outW === 1))) return plan(kernel, "broadcast");
  return plan(kernel, "simt950", steps, extra);
}

/**
 * ResizeNearestNeighborV2 arch35 as the op_apis call it on NCHW / NCL (1d: (N, C, 1, L), scales
 * {1, scales}; resize_nearest_neighbor_v2_tiling_base.cpp MatchTilingStrategyAndSetTilingKey):
 * GATHER_ALL_HW / GATHER_CUT_H (IsMatchTiling_NCHW_Gather, DoTilingGatherNchw), else SIMT:
 * INPUT_EQ_OUTPUT (a copy, scales ignored), INPUT_EQ_ONE, COMMON (+ _IDX64). The 2d op's special
 * case IsCaseNearestExact3d (aclnn_upsample_nearest_exact2d.cpp) runs UpsampleNearestExact3d
 * (same index rule and step).
 *
 * @example
 * ```ts
 * import { nearestPlan950 } from "./forward_950.ts";
 * const call = { op: "nearestExact1d", dtype: "float32", inputSize: [1, 1, 4], outputSize: [4], scales: [1.2], alignCorners: false } as const;
 * nearestPlan950(call, undefined).kernel; // "ResizeNearestNeighborV2.SIMT_INPUT_EQ_OUTPUT": a copy
 * ```
 */
export function nearestPlan950(call: UpsampleParams, soc: string | undefined): ForwardPlan {
  const oneD = call.op === "nearestExact1d";
  const [n, c] = call.inputSize;
  const inH = oneD ? 1 : call.inputSize[2], inW = call.inputSize[oneD ? 2 : 3];
  const outH = oneD ? 1 : call.outputSize[0], outW = call.outputSize[oneD ? 0 : 1];
  const scaleH = oneD ? 1 : call.scales[0], scaleW = call.scales[oneD ? 0 : 1];
  const sH = step950(inH, outH, scaleH), sW = step950(inW, outW, scaleW);
  const steps = oneD ? [sW] : [sH, sW];
  const ratio = (input: number, output: number): number => Math.fround(output / input);
  if (
    !oneD && n * c === 17 && inH >= 740 && inH <= 750 && ratio(inH, outH) >= 7.5 &&
    ratio(inH, outH) <= 8 && inW >= 740 && inW <= 750 && ratio(inW, outW) >= 6.5 &&
    ratio(inW, outW) <= 7
  ) {
    return plan("UpsampleNearestExact3dNcdhw.SIMD", "gather", steps);
  }
  const name = (key: string): string => `ResizeNearestNeighborV2.${key}`;
  const x = n * c * inH * inW, y = n * c * outH * outW;
  const { cores, ub } = vectorInfo(soc);
  const bytes = call.dtype === "float32" ? 4 : 2;
  const block = 32 / bytes;
  const aligned = (v: number): number => Math.ceil(v / block) * block;
  const noScales = !(Math.fround(scaleH) > 0) && !(Math.fround(scaleW) > 0);
  if (
    outW > inW && outH >= inH && noScales && sH >= 0.25 && sW >= 0.25 && x < UINT32_MAX &&
    y < UINT32_MAX
  ) {
    const need = Math.ceil(n * c / Math.ceil(n * c / cores));
    const least = 4 * aligned(outW) * bytes + 2 * aligned(inW) * bytes + 64;
    if (Math.fround(need / cores) >= Math.fround(0.67) && least <= ub) {
      const all = 2 * inH * aligned(inW) * bytes + 3 * outH * aligned(outW) * bytes +
        aligned(outH) * bytes + aligned(outW) * bytes;
      return plan(name(all <= ub ? "GATHER_ALL_HW" : "GATHER_CUT_H"), "gather", steps);
    }
  }
  const suffix = fits32(x, y, [inH, inW, outH, outW]) ? "" : "_IDX64";
  if (inH === outH && inW === outW) return plan(name(`SIMT_INPUT_EQ_OUTPUT${suffix}`), "copy");
  if (inH === 1 && inW === 1) return plan(name(`SIMT_INPUT_EQ_ONE${suffix}`), "broadcast");
  return plan(name(`SIMT_COMMON${suffix}`), "gather", steps);
}
