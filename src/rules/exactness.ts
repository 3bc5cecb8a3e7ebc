/**
 * Where the CPU device reference (`numerics: "device"`) gives the Ascend device's bits: per call,
 * the kernel the device runs and whether the reference reproduces its result bit for bit
 * (`"exact"`) or only within the comparison bound of `bound.ts` (`"bounded"`). A call is exact only
 * where the tests show the reference equal to the emulation (`native/`) bit for bit; see
 * docs/device-semantics.md, "Where the reference is exact".
 *
 * @module
 */

import {
  atomicOrderFree5hd,
  linear5hdTable,
  losesColumns5hd,
  tbe5hdCores,
  tbe5hdSpec,
  tilingMode5hd,
} from "./ascend_5hd.ts";
import { ascendPlan, type AscendTarget } from "./numerics.ts";
import { bilinearRoute950 } from "./ascend950_route.ts";
import { mostTerms950, scatterTaps950 } from "./ascend950_scatter.ts";
import { forwardPlan, type ForwardVariant } from "./forward_device.ts";
import { deterministicRoute } from "./route.ts";
import type { UpsampleParams } from "./ops.ts";

/** Whether the reference gives the device's bits (`"exact"`) or lies within the bound (`"bounded"`). */
export type Exactness = "exact" | "bounded";

/** The verdict on one call: exactness, the kernel the device runs, and why. */
export interface ExactnessVerdict {
  /** Exact (bit for bit) or bounded (within `bound.ts`'s bound). */
  readonly exactness: Exactness;
  /** The kernel, as the emulation names it (`aclemuLastKernel`); `""` when nothing is launched. */
  readonly kernel: string;
  /** Why, in a sentence. */
  readonly reason: string;
}

/** A call as {@link referenceExactness} reads it. */
export type ExactnessCall = UpsampleParams & {
  readonly deterministic: boolean;
  readonly direction?: "backward" | "forward";
};

// Kernels that copy bits (or launch nothing): exact.
const COPIES = new Set([
  "",
  "ViewCopy",
  "UpsampleNearestExact2dGrad.DATA_COPY",
  "ResizeBilinearV2Grad.ALL_COPY",
  "ResizeBilinearV2Grad5HD.MODE0",
]);

// Kernels whose every sum has an order the source fixes and that the reference follows (the 950's
// gathers, src/cpu/ascend/backward/gather950.ts; the nearest-exact SIMT gather, a sum per cell in
// gradient order), with the target's contraction choice.
const FIXED_ORDER_950: Readonly<Record<string, string>> = {
  "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE":
    "the 950's DETERMINE gather: one thread per result cell sums its gradient positions in a fixed order (resize_bilinear_v2_grad_simt_determine.h), which the reference follows",
  "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE_SCALES":
    "the 950's DETERMINE_SCALES gather: one thread per result cell sums in a fixed order (resize_bilinear_v2_grad_simt_determine_scales.h), which the reference follows",
  "UpsampleNearestExact2dGrad.SIMT":
    "the 950's nearest-exact SIMT gather: one thread per result cell sums its gradient window in index order, as the reference does",
};

const CUBE =
  "the order of the sums inside a Cube matmul is open in hardware (the emulation fixes one reading, the reference sums in PyTorch's order): within the bound";

/**
 * Whether the CPU device reference gives `target`'s device bits for `call` (backward, the
 * default, or forward op), with the contraction choices of `target` (`fma`, `tbeFma`) taken as the
 * device's. Exact: copies; the TBE kernel ResizeBilinearV2Grad (modes 0-4, and 5-6 where no
 * order of its cores' atomic adds can change a bit, `atomicOrderFree5hd`); the deterministic route;
 * the 950's gathers and nearest-exact SIMT kernel; the forward ops' TBE, SIMT and copy kernels.
 * Bounded: A2/A3's Cube-matmul kernels (UpsampleBilinear2dGrad, UpsampleNearestExact2dGrad, the
 * forward UpsampleBilinear2d), the TBE kernel's order-dependent calls and column-loss calls, and the
 * 950's atomic SIMT scatter. Throws what `ascendPlan` / `forwardPlan` throw for a call the family
 * does not run.
 *
 * @example
 * ```ts
 * import { referenceExactness } from "./exactness.ts";
 * const call = {
 *   op: "bilinear2d",
 *   dtype: "float32",
 *   inputSize: [1, 1, 4, 4],
 *   outputSize: [4, 4],
 *   scales: [0, 0],
 *   alignCorners: false,
 *   deterministic: false,
 * } as const;
 * referenceExactness(call, { generation: "910", bilinearApi: "v2", fma: true }).exactness; // "exact"
 * ```
 */
export function referenceExactness(call: ExactnessCall, target: AscendTarget): ExactnessVerdict {
  if (call.direction === "forward") return forwardVerdict(call, target);
  const plan = ascendPlan(call, target);
  const kernel = plan.kernel;
  if (COPIES.has(kernel)) return exact(kernel, "a bit copy, or nothing launched");
  if (target.generation === "950") {
    const why = FIXED_ORDER_950[kernel];
    if (why !== undefined) return exact(kernel, why);
    return scatterVerdict(call, target, kernel);
  }
  if (kernel.startsWith("ResizeBilinearV2Grad5HD")) {
    return tbeVerdict(call, target.generation, target, kernel);
  }
  if (target.cubeOrder === "ascending") {
    return exact(
      kernel,
      "A2/A3's Cube kernel in the reading cubeOrder \"ascending\" names (W pass then H pass, each output's terms in ascending order; cube_a2.ts), which the reference computes",
    );
  }
  return bounded(kernel, CUBE);
}

// The 950's SIMT scatter: exact where no cell takes more than two nonzero terms (0 + a + b in any
// order), bounded elsewhere (the reference's order: the emulation's under aclemuSetAtomicSeed(0)).
function scatterVerdict(
  call: ExactnessCall,
  target: AscendTarget,
  kernel: string,
): ExactnessVerdict {
  const route = bilinearRoute950(call, {
    api: target.bilinearApi,
    deterministic: call.deterministic,
  });
  const [, , inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  const half = !call.alignCorners;
  const most = mostTerms950(scatterTaps950(outH, inH, route.scales[0], half, target.fma), inH) *
    mostTerms950(scatterTaps950(outW, inW, route.scales[1], half, target.fma), inW);
  if (most <= 2) {
    return exact(
      kernel,
      "the 950's SIMT scatter with at most two nonzero terms a cell: every order of its atomic adds gives the same bits (scatter950.ts)",
    );
  }
  return bounded(
    kernel,
    "the 950's SIMT scatter adds three or more terms into a cell atomically in an order nothing fixes: the reference's order is the emulation's under aclemuSetAtomicSeed(0), within the bound for any other",
  );
}

function exact(kernel: string, reason: string): ExactnessVerdict {
  return { exactness: "exact", kernel, reason };
}

function bounded(kernel: string, reason: string): ExactnessVerdict {
  return { exactness: "bounded", kernel, reason };
}

// The TBE kernel: exact wherever the cores' atomic order cannot change a bit, and on the
// deterministic route (H-unchanged passes, src/cpu/ascend/backward/tbe_pass.ts).
function tbeVerdict(
  call: ExactnessCall,
  generation: "a2" | "910" | "310p",
  target: AscendTarget,
  kernel: string,
): ExactnessVerdict {
  const spec = tbe5hdSpec(generation);
  const [, , inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  const fma = target.tbeFma ?? false;
  const mode = tilingMode5hd([inH, inW], [outH, outW], spec);
  const wTable = linear5hdTable(inW, outW, call.alignCorners, fma);
  if (mode === 6 && losesColumns5hd(wTable.i0, inW, spec)) {
    return bounded(
      kernel,
      "tiling mode 6 drops gradient columns here (losesColumns5hd): the call runs as another arrangement or is refused (support.ts)",
    );
  }
  const hTable = linear5hdTable(inH, outH, call.alignCorners, fma);
  // Without a SoC the core count is unknown: every row is taken as its own core's (conservative).
  const cores = target.soc === undefined
    ? Number.MAX_SAFE_INTEGER
    : tbe5hdCores(generation, target.soc);
  if (atomicOrderFree5hd(mode, hTable, inW, spec, cores)) {
    return exact(
      kernel,
      mode === 5 || mode === 6
        ? "the TBE kernel's own arithmetic and order (tbe_kernel.ts); each image row takes its nonzero partial rows from one core or at most two, so no order of the atomic adds changes a bit"
        : "the TBE kernel's own arithmetic and order (tbe_kernel.ts); no atomic order matters",
    );
  }
  if (call.deterministic && deterministicRoute(call, generation, fma).route !== null) {
    return exact(
      kernel,
      "deterministic mode runs the route: H-unchanged TBE passes, whose atomic order cannot matter (route.ts)",
    );
  }
  return bounded(
    kernel,
    "the TBE kernel's cores add three or more partial rows into one image row in an order nothing fixes: the reference adds them in the order the emulation draws under aclemuSetAtomicSeed(0) (tbe_flush.ts), within the bound for any other",
  );
}

// The forward kernels: no atomic order anywhere; the Cube matmul's order is open in hardware.
const FORWARD_EXACT: ReadonlySet<ForwardVariant> = new Set([
  "none",
  "copy",
  "broadcast",
  "gather",
  "gather-add-zero",
  "tbe-l1",
  "tbe-nc",
  "tbe-vbi32",
  "tbe-vbi16",
  "simt950",
  "simt950-hw",
]);

function forwardVerdict(call: ExactnessCall, target: AscendTarget): ExactnessVerdict {
  const plan = forwardPlan(call, target);
  if (FORWARD_EXACT.has(plan.variant) || target.cubeOrder === "ascending") {
    return exact(
      plan.kernel,
      `the forward ${plan.variant} kernel: no atomic adds, its arithmetic and order as the reference computes them`,
    );
  }
  return bounded(
    plan.kernel,
    "the forward Cube kernel's matmul order is open in hardware; the reference reproduces the emulation's reading (two float32 passes), which a device may not follow",
  );
}
