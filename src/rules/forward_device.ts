/**
 * Which kernel each Ascend family runs for a FORWARD call (`interpolate`'s ops:
 * aclnnUpsampleNearestExact1d/2d, aclnnUpsampleBilinear2d) and with which arithmetic, read from
 * the vendor's public source (`hicann/ops-cv` paths unless said otherwise; the TBE ResizeBilinearV2
 * from the CANN 8.1.RC1 toolkit, GitHub `leideng/CANN-8.1.RC1`,
 * `Ascend/ascend-toolkit/8.1.RC1/opp/built-in/op_impl/ai_core/tbe/impl/dynamic/resize_bilinear_v2.py`,
 * and its tiling `ops/built-in/op_tiling/resize_bilinear_v2.cc`, public copy in GitHub
 * `dengguojie/vue-element-admin`). The per-dimension rules are in `forward_axes.ts`; the CPU device
 * reference computes a plan with `src/cpu/ascend/forward/reference.ts`. Kernel names are the emulation's
 * (`native/src/opapi/fwd_*.c`, `aclemuLastKernel`).
 *
 * Per family (NpuArch: `generation.ts`):
 *
 * - **A2/A3** nearest-exact: UpsampleNearest on an NHWC transpose, a bit copy through the exact
 *   index with `fl32(1.0 / scales)` (double division) or `fl32(in) / fl32(out)`, 1 for equal sizes
 *   of the 2d op. Bilinear: the Cube kernel UpsampleBilinear2d when the scales fit
 *   ({@link bilinearCubeRoute}), else the TBE ResizeBilinearV2 from the sizes (vbi float32).
 * - **950**: ResizeNearestNeighborV2 (exact index, step `1.0f / fl32(scales)`, equal sizes a copy
 *   whatever the scales) and ResizeBilinearV2With4d (copies, broadcast, SIMT with the scales).
 * - **910**: no nearest-exact (no binary); bilinear the TBE kernel (L1 lerps, or NC).
 * - **310P**: nearest-exact adds each value to a zeroed buffer (`0 + x`: -0 becomes +0), float16
 *   and float32 only; bilinear the TBE kernel (vbi float16 for float16, else L1; or NC).
 *
 * @module
 */

import { bilinearPlan950, nearestPlan950 } from "./forward_950.ts";
import { cubeAttribute, cubeStep, floatEqualOne, nearestStepA2, tbeStep } from "./forward_axes.ts";
import { type AscendGeneration, FAMILY_NAMES } from "./generation.ts";
import type { AscendTarget } from "./numerics.ts";
import { FORWARD_OP_SPECS, type UpsampleParams } from "./ops.ts";

/**
 * How a forward kernel computes its result (the CPU device reference has one routine per variant):
 *
 * - `"none"`: nothing is launched (an empty 2d call); `out` keeps what it held.
 * - `"copy"`: a bit copy of the equal-size input (ViewCopy, ResizeBilinearV2_5HD.NO_BILINEAR,
 *   ResizeBilinearV2With4d.ALL_COPY, ResizeNearestNeighborV2.SIMT_INPUT_EQ_OUTPUT).
 * - `"broadcast"`: every output cell a bit copy of the plane's cell (0, 0).
 * - `"gather"`: the nearest-exact index per dimension ({@link ForwardPlan.steps}), bits copied.
 * - `"gather-add-zero"`: the same index, the value written as `0 + x` in the dtype (310P).
 * - `"cube"`: the A2/A3 Cube kernel's two float32 passes.
 * - `"tbe-l1"`, `"tbe-nc"`: the TBE kernel's lerps; `"tbe-vbi32"`, `"tbe-vbi16"`: its weighted sums
 *   (float32, or float16 accumulation).
 * - `"simt950"`, `"simt950-hw"`: the 950 SIMT bilinear kernels (SIMT_HW: no clamp at 0).
 */
export type ForwardVariant =
  | "none"
  | "copy"
  | "broadcast"
  | "gather"
  | "gather-add-zero"
  | "cube"
  | "tbe-l1"
  | "tbe-nc"
  | "tbe-vbi32"
  | "tbe-vbi16"
  | "simt950"
  | "simt950-hw";

/** The kernel a family's device runs for one forward call, and how it computes. */
export interface ForwardPlan {
  /** The kernel, as the emulation names it (`aclemuLastKernel`); `""` when nothing is launched. */
  readonly kernel: string;
  /** The arithmetic ({@link ForwardVariant}). */
  readonly variant: ForwardVariant;
  /**
   * Per spatial dimension (`[L]` or `[H, W]`) the float32 step (input cells per output cell) the
   * kernel computes its coordinates with; `[]` for the copies.
   */
  readonly steps: readonly number[];
  /** Align-corners coordinates (`o * step`) instead of half-pixel ones (bilinear only). */
  readonly alignCorners: boolean;
  /**
   * Whether the multiply-adds the source leaves to the compiler are fused: the Cube centre and the
   * 950 SIMT coordinate and sums (`target.fma`), the vbi instruction (`target.tbeFma`).
   */
  readonly fma: boolean;
  /** `"cube"` only: W pass first (UpsampleBilinear2dNcdhw) or H pass first (its `.HWNC` transpose). */
  readonly passOrder: "wh" | "hw";
}

/** A device reference's target with, optionally, the SoC (the 950 tilings read its core count). */
export interface ForwardTarget extends AscendTarget {
  /** `aclrtGetSocName`'s answer; default for the 950 `Ascend950PR_9599` (72 vector cores). */
  readonly soc?: string;
}

/** What a family cannot run: the class of error the reference throws, and why. */
interface Refusal {
  readonly type: boolean;
  readonly message: string;
}

function isEmpty(call: UpsampleParams): boolean {
  return call.inputSize.some((s) => s === 0) || call.outputSize.some((s) => s === 0);
}

function refusalOf(call: UpsampleParams, generation: AscendGeneration): Refusal | null {
  const { op, inputSize, dtype } = call;
  const name = FORWARD_OP_SPECS[op].name;
  const family = FAMILY_NAMES[generation];
  if (op === "nearestExact1d" && isEmpty(call)) {
    // aclnn_upsample_nearest_exact1d.cpp CheckParams: CheckInputElement (N, C, L, out L > 0)
    // runs before the empty-tensor shortcut.
    return {
      type: false,
      message: `${name}: the device rejects N, C, L or the output L = 0 (aclnn status 161002, ` +
        `ACLNN_ERR_PARAM_INVALID: CheckInputElement runs before the empty-tensor shortcut, ` +
        `image/upsample_nearest/op_host/op_api/aclnn_upsample_nearest_exact1d.cpp), got input ` +
        `[${inputSize.join(", ")}]`,
    };
  }
  if (op === "bilinear2d") {
    if (call.scales.some((s) => s < 0)) {
      return {
        type: false,
        message: `${name}: scales cannot be negative (aclnn status 161002: CheckScalesValid, ` +
          `image/upsample_bilinear2d/op_host/op_api/aclnn_upsample_bilinear_2d.cpp)`,
      };
    }
    if (generation === "a2" && !isEmpty(call)) return cubeSkipRefusal(call, name);
    return null;
  }
  // nearest-exact 2d: an empty self or out returns success before any check.
  if (isEmpty(call)) return null;
  const launch = "561000 (ACLNN_ERR_INNER) at launch";
  const how =
    "phase 1 succeeds (the l0op UpsampleNearestExact2d ignores ADD_TO_LAUNCHER_LIST_AICORE's " +
    "status) and opbase's OpKernel::Run finds no binary";
  if (generation === "910") {
    return {
      type: true,
      message: `${name} is not supported on the ${family}: its kernel UpsampleNearest ships ` +
        `configs for ascend910b, ascend910_93, ascend310p and Kirin SoCs (kirinx90, kirin9030) only ` +
        `(image/upsample_nearest/op_host/upsample_nearest_def.cpp), so the device answers ` +
        `${launch}: ${how}. Run it on the CPU backend (Device.open({ backend: "cpu" }))`,
    };
  }
  if (generation === "310p" && dtype === "bfloat16") {
    return {
      type: true,
      message: `${name}: dtype bfloat16 is not supported on the ${family}: the ascend310p ` +
        `config of UpsampleNearest takes float16 and float32 only ` +
        `(image/upsample_nearest/op_host/upsample_nearest_def.cpp, config310p), so the device ` +
        `answers ${launch}: ${how}. Use float16 or float32`,
    };
  }
  return null;
}

// The Cube kernel skips a pass whose step is within 1e-6 of 1 (FloatEqual; the W pass when its step
// is, the H pass when its step is and the W pass ran): on a dimension whose sizes differ the device
// then reads or writes with the other pass's addressing (op_kernel/upsample_bilinear2d_kernel.h
// ExpansionW / ExpansionH).
function cubeSkipRefusal(call: UpsampleParams, name: string): Refusal | null {
  const cube = cubePlan(call);
  if (cube === null || cube.variant !== "cube") return null;
  const [inH, inW] = call.inputSize.slice(2);
  const [outH, outW] = call.outputSize;
  const first = cube.passOrder === "wh" ? 1 : 0;
  const second = 1 - first;
  const sizes = [[inH, outH], [inW, outW]];
  const skipsFirst = floatEqualOne(cube.steps[first]);
  const skipsSecond = floatEqualOne(cube.steps[second]) && !skipsFirst;
  const bad = (d: number): boolean => sizes[d][0] !== sizes[d][1];
  const dim = skipsFirst && bad(first) ? first : skipsSecond && bad(second) ? second : -1;
  if (dim < 0) return null;
  return {
    type: false,
    message: `${name}: the device fails with 507015 (ACL_ERROR_RT_AICORE_EXCEPTION) or gives an ` +
      `undefined result: the Cube kernel UpsampleBilinear2d skips the ${
        dim === 0 ? "H" : "W"
      } pass because its step ` +
      `${cube.steps[dim]} is within 1e-6 of 1 (FloatEqual), although its sizes differ ` +
      `(${sizes[dim][0]} -> ${
        sizes[dim][1]
      }): the other pass then reads or writes with the wrong ` +
      `addressing (image/upsample_bilinear2d/op_kernel/upsample_bilinear2d_kernel.h ` +
      `ExpansionW/ExpansionH); the device reference refuses it`,
  };
}

/**
 * What `generation`'s device cannot run of a forward call, with the status the op returns, or null:
 * the 1d nearest-exact op with N, C or a size 0 (161002, every family: its parameter checks come
 * before the empty shortcut); nearest-exact on the 910 (no UpsampleNearest binary) and bfloat16
 * nearest-exact on the 310P (its binary takes float16 and float32): phase 1 succeeds and the launch
 * answers 561000 (an empty 2d call succeeds before any of this); bilinear with a negative scale
 * (161002); A2/A3 bilinear on the Cube route where a pass is skipped although its sizes differ
 * (507015 or an undefined result).
 *
 * @example
 * ```ts
 * import { forwardRefusal } from "./forward_device.ts";
 * const call = { op: "nearestExact2d", dtype: "float32", inputSize: [1, 1, 2, 2], outputSize: [4, 4], scales: [0, 0], alignCorners: false } as const;
 * forwardRefusal(call, "910"); // "561000 (ACLNN_ERR_INNER) at launch: upsampleNearestExact2d is not supported ..."
 * forwardRefusal(call, "a2"); // null
 * ```
 */
export function forwardRefusal(call: UpsampleParams, generation: AscendGeneration): string | null {
  return refusalOf(call, generation)?.message ?? null;
}

/**
 * Whether Atlas A2/A3 route a bilinear forward call to the Cube kernel UpsampleBilinear2d
 * (image/upsample_bilinear2d/op_host/op_api/aclnn_upsample_bilinear_2d.cpp l.417-420, DAV_2201):
 * `CheckBilinear2dScales` (not both scales within 1e-9 of 2 unless bfloat16; both `|scale| >= 1e-12`;
 * both within 1e-9 of 1 with sizes that differ only for bfloat16, whose scales are then taken as 0;
 * `fl32(GetBilinearScales) <= 50` on both: 1 for equal sizes, `(in - 1) / (out - 1)` (0 for out 1)
 * with align corners, else `1.0 / scale`, in double) and `CheckScalesAndShapeValid`
 * (`(int64)(in * scale) == out` on both). Otherwise the TBE ResizeBilinearV2 runs, from the sizes.
 *
 * @example
 * ```ts
 * import { bilinearCubeRoute } from "./forward_device.ts";
 * const call = { op: "bilinear2d", dtype: "float32", inputSize: [1, 1, 4, 4], outputSize: [6, 8], scales: [1.5, 2], alignCorners: false } as const;
 * bilinearCubeRoute(call); // true
 * bilinearCubeRoute({ ...call, outputSize: [8, 8], scales: [2, 2] }); // false: both 2 (not bfloat16)
 * bilinearCubeRoute({ ...call, inputSize: [1, 1, 100, 100], outputSize: [1, 1], scales: [0.01, 0.01] }); // false: 1 / 0.01 > 50
 * ```
 */
export function bilinearCubeRoute(call: UpsampleParams): boolean {
  const [inH, inW] = call.inputSize.slice(2);
  const [outH, outW] = call.outputSize;
  const [sH, sW] = call.scales;
  const bf16 = call.dtype === "bfloat16";
  if (Math.abs(sW - 2) < 1e-9 && Math.abs(sH - 2) < 1e-9 && !bf16) return false;
  if (Math.abs(sH) < 1e-12 || Math.abs(sW) < 1e-12) return false;
  let h1 = sH, w1 = sW;
  if (Math.abs(sH - 1) < 1e-9 && Math.abs(sW - 1) < 1e-9 && (outH !== inH || outW !== inW)) {
    if (!bf16) return false;
    h1 = w1 = 0;
  }
  const real = (input: number, output: number, scale: number): number => {
    if (output === input) return 1;
    if (call.alignCorners) return output > 1 ? (input - 1) / (output - 1) : 0;
    return scale > 0 ? 1.0 / scale : input / output;
  };
  if (!(Math.fround(real(inH, outH, h1)) <= 50 && Math.fround(real(inW, outW, w1)) <= 50)) {
    return false;
  }
  return Math.trunc(inH * sH) === outH && Math.trunc(inW * sW) === outW;
}

function plan(
  kernel: string,
  variant: ForwardVariant,
  steps: readonly number[] = [],
  extra: Partial<ForwardPlan> = {},
): ForwardPlan {
  return { kernel, variant, steps, alignCorners: false, fma: false, passOrder: "wh", ...extra };
}

// GoUpsampleBilinear2DAICORE (aclnn_upsample_bilinear_2d.cpp): equal H and W return self (the
// closing ViewCopy); W == 1 and H != 1 run the kernel on the H/W transpose with the scales swapped
// (.HWNC: the kernel's first pass is then along H); else the kernel. Null off the Cube route.
function cubePlan(call: UpsampleParams, fma = false): ForwardPlan | null {
  if (!bilinearCubeRoute(call)) return null;
  const [inH, inW] = call.inputSize.slice(2);
  const [outH, outW] = call.outputSize;
  if (inH === outH && inW === outW) return plan("ViewCopy", "copy");
  const hwnc = inW === 1 && inH !== 1;
  // The l0op's attribute in the kernel's (H, W) order, mapped back to ours.
  const kernelScales = hwnc ? [call.scales[1], call.scales[0]] : call.scales;
  const attr = cubeAttribute(kernelScales, inH !== outH || inW !== outW);
  const [attrH, attrW] = hwnc ? [attr[1], attr[0]] : attr;
  const align = call.alignCorners;
  const steps = [cubeStep(inH, outH, align, attrH), cubeStep(inW, outW, align, attrW)];
  const kernel = hwnc ? "UpsampleBilinear2dNcdhw.HWNC" : "UpsampleBilinear2dNcdhw";
  return plan(kernel, "cube", steps, { alignCorners: align, fma, passOrder: hwnc ? "hw" : "wh" });
}

// GoResizeBilinearV2AICORE: the TBE kernel on NC1HWC0 (bfloat16 cast to float32 around it), sizes
// only; tiling GetResizeBilinearV2Tiling (resize_bilinear_v2.cc): 999999 for equal sizes or a 1x1
// image, 100110 when H, W in and out are all < 64 and N * C1 >= 32 (C1 = ceil(C / 16)), else 100000:
// resize_bilinear_v2.py `_tiling_compute_default` picks vbi float32 where `tik.vcopy` and
// `tik.vbi` float32 exist (A2/A3), vbi float16 for float16 images where only `tik.vbi` float16
// exists (310P), else the L1 lerps (910; 310P float32/bfloat16 images).
function tbePlan(call: UpsampleParams, generation: AscendGeneration, tbeFma: boolean): ForwardPlan {
  const [n, c, inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  const name = (mode: string): string => `ResizeBilinearV2_5HD.${mode}`;
  if (inH === outH && inW === outW) return plan(name("NO_BILINEAR"), "copy");
  if (inH === 1 && inW === 1) return plan(name("NO_BILINEAR"), "broadcast");
  const align = call.alignCorners;
  const steps = [tbeStep(inH, outH, align), tbeStep(inW, outW, align)];
  const extra = { alignCorners: align };
  const small = inH < 64 && outH < 64 && inW < 64 && outW < 64;
  if (small && n * Math.ceil(c / 16) >= 32) return plan(name("NC"), "tbe-nc", steps, extra);
  if (generation === "a2") {
    return plan(name("VBI_FP32"), "tbe-vbi32", steps, { ...extra, fma: tbeFma });
  }
  if (generation === "310p" && call.dtype === "float16") {
    return plan(name("VBI_FP16"), "tbe-vbi16", steps, { ...extra, fma: tbeFma });
  }
  return plan(name("L1"), "tbe-l1", steps, extra);
}

// UpsampleNearest on A2/A3 (op_kernel/upsample_nearest.h: DataCopy / Gather) and the 310P
// (upsample_nearest_310p.h CalcTensorsC: Duplicate(dst, 0); Add(dst, dst, src): `0 + x`).
// Tiling key (upsample_nearest_tiling.cpp GetTilingKey, NHWC): C * outW < 8192 && C * inW < 8192 &&
// inH > 1: SMALL_CW; C < 8192 && inW < 8192 && step W < 2: SMALL_C; else COMMON.
function planNearestA2(call: UpsampleParams, generation: AscendGeneration): ForwardPlan {
  const oneD = call.op === "nearestExact1d";
  const c = call.inputSize[1];
  const inH = oneD ? 1 : call.inputSize[2];
  const inW = call.inputSize[oneD ? 2 : 3];
  const outW = call.outputSize[oneD ? 0 : 1];
  const sW = nearestStepA2(inW, outW, call.scales[oneD ? 0 : 1], !oneD);
  const steps = oneD ? [sW] : [nearestStepA2(inH, call.outputSize[0], call.scales[0], true), sW];
  if (generation === "310p") return plan("UpsampleNearestExact2d.310P", "gather-add-zero", steps);
  const big = 8192;
  const key = c * outW < big && c * inW < big && inH > 1
    ? "SMALL_CW"
    : c < big && inW < big && sW < 2
    ? "SMALL_C"
    : "COMMON";
  return plan(`UpsampleNearestExact2d.${key}`, "gather", steps);
}

/**
 * The kernel `target`'s device runs for a forward call and how it computes (`kernel` is the
 * emulation's name, `aclemuLastKernel`). Nearest-exact: A2/A3 UpsampleNearestExact2d.* (bit copy),
 * 310P .310P (`0 + x`), 950 ResizeNearestNeighborV2.* / UpsampleNearestExact3dNcdhw.SIMD. Bilinear:
 * A2/A3 ViewCopy / UpsampleBilinear2dNcdhw(.HWNC) on the Cube route ({@link bilinearCubeRoute}),
 * else, and on the 910 and 310P, ResizeBilinearV2_5HD.*; 950 ResizeBilinearV2With4d.*. An empty
 * call launches nothing (`kernel` `""`).
 *
 * @throws {TypeError} for what the family does not run (nearest-exact on the 910, bfloat16
 * nearest-exact on the 310P: {@link forwardRefusal})
 * @throws {RangeError} for the other refusals (the 1d op with N or C = 0, a negative bilinear
 * scale, an A2/A3 Cube pass skipped although its sizes differ)
 * @example
 * ```ts
 * import { forwardPlan } from "./forward_device.ts";
 * const call = { op: "bilinear2d", dtype: "float16", inputSize: [1, 1, 4, 4], outputSize: [8, 8], scales: [0, 0], alignCorners: false } as const;
 * forwardPlan(call, { generation: "a2", bilinearApi: "v2", fma: true }).kernel; // "ResizeBilinearV2_5HD.VBI_FP32"
 * forwardPlan(call, { generation: "310p", bilinearApi: "v2", fma: true }).variant; // "tbe-vbi16"
 * ```
 */
export function forwardPlan(call: UpsampleParams, target: ForwardTarget): ForwardPlan {
  const generation = target.generation;
  const refusal = refusalOf(call, generation);
  if (refusal !== null) {
    throw refusal.type ? new TypeError(refusal.message) : new RangeError(refusal.message);
  }
  if (isEmpty(call)) return plan("", "none");
  if (call.op !== "bilinear2d") {
    return generation === "950"
      ? nearestPlan950(call, target.soc)
      : planNearestA2(call, generation);
  }
  if (generation === "950") return bilinearPlan950(call, target.soc, target.fma);
  if (generation === "a2") {
    const cube = cubePlan(call, target.fma);
    if (cube !== null) return cube;
  }
  return tbePlan(call, generation, target.tbeFma ?? false);
}
