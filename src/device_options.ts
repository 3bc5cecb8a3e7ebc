/**
 * The options of {@link Device.open} and of new tensors, and their checks: every bad option is a
 * `TypeError` or `RangeError` naming the option, the value and the rule, before anything is opened.
 *
 * @module
 */

import type { Numerics } from "./rules/numerics.ts";
import { type AscendTarget, DEFAULT_ASCEND_TARGET } from "./rules/numerics.ts";
import { generationOfSoc } from "./rules/generation.ts";
import { type DType, dtypeError, isDType } from "./tensor/dtype.ts";
import { numel } from "./tensor/layout.ts";
import { checkWarningsOption, type WarningsOption } from "./warnings.ts";
import { DEVICE_DEFECTS, type DeviceDefects } from "./rules/arrangement.ts";

/** Options of {@link Device.open}. */
export interface DeviceOpenOptions {
  /**
   * `"npu"` requires CANN (or the host emulation); `"cpu"` is the CPU backend; `"auto"` (default)
   * takes the NPU when CANN loads and a device exists, else the CPU.
   */
  backend?: "auto" | "npu" | "cpu";
  /** NPU index (default 0). */
  deviceId?: number;
  /** Folder holding `libascendcl.so`, `libnnopbase.so` and `libopapi.so` (overrides the search list). */
  libDir?: string;
  /** Initial deterministic mode (default false). */
  deterministic?: boolean;
  /**
   * Kernels of the CPU backend: `"auto"` (default) keeps CPU tensors in WebAssembly memory and runs
   * the wasm SIMD kernels on contiguous tensors (TypeScript ones otherwise); `"typescript"` uses plain
   * typed arrays and the TypeScript kernels only. Both give the same bits.
   */
  cpuKernels?: "auto" | "typescript";
  /**
   * Threads of the CPU backend's wasm kernels (default: the machine's cores,
   * `navigator.hardwareConcurrency`): an upper bound. With more than one, a large op is shared by
   * the calling thread and `threads - 1` worker threads over a shared memory, or runs on the calling
   * thread alone where calls of its shape were measured faster so on this machine; either way it
   * usually returns done (when a worker is still finishing its last piece, the op returns and a
   * result read or `synchronize()` awaits it). Small ops always run on the calling thread. `1`:
   * every op runs inside the call. Results are the same bits whatever the count and the plan.
   */
  threads?: number;
  /**
   * Whose results the device computes. `"pytorch"` (the CPU backend's default): PyTorch's CPU
   * kernels. `"device"`: what the Ascend kernels compute (their index rules and scale routing, see
   * docs/device-semantics.md; A2/A3 unless `soc` names an Ascend 950); the CPU backend then serves
   * as a reference for an NPU, and an NPU always computes this. `"pytorch"` with `backend: "npu"`
   * is a TypeError; with `"auto"` it opens the CPU backend, the only one that computes it.
   */
  numerics?: Numerics;
  /**
   * With `backend: "cpu"` and `numerics: "device"`: the SoC whose kernels the device reference
   * reproduces, as `aclrtGetSocName` names it and CANN's platform table lists it
   * (`"Ascend910B3"`, `"Ascend910_9392"`: Atlas A2/A3; `"Ascend950PR_9599"`: Ascend 950;
   * `"Ascend910A"`, `"Ascend910B"`: Atlas training series; `"Ascend310P3"`: Atlas inference
   * series). Default: the A2/A3 rules. An NPU reads its own SoC ({@link Device.soc}).
   */
  soc?: string;
  /**
   * With an Ascend 950 `soc`: whether the reference contracts the kernels' `a * b + c` coordinate
   * arithmetic into fused multiply-adds (default true; CANN's source does not say, and e.g.
   * 1d nearest-exact 6 -> 1 sends the gradient to input 2 with contraction, 3 without).
   */
  ascendFma?: boolean;
  /**
   * With an A2/A3, 910 or 310P `soc` (or none): whether the reference takes the TBE kernel
   * ResizeBilinearV2Grad's coordinate `scale * (d + 0.5) - 0.5` as one fused multiply-add and its
   * vector multiply-adds as rounding once (default false: every step rounds; the source does not
   * say, `deno task doctor` probes it on an NPU).
   */
  tbeFma?: boolean;
  /**
   * With an Atlas A2/A3 `soc` (or none): the order inside the Cube matmuls of the kernels
   * UpsampleNearestExact2dGrad, UpsampleBilinear2dGrad (V2's own kernel) and the forward
   * UpsampleBilinear2d, which the hardware leaves open. `"pytorch"` (default): the backward sums in
   * PyTorch's order, and the device is within the documented bound of it. `"ascending"`: the
   * source's W pass then H pass, each output's terms in ascending order from +0 (the host
   * emulation's reading; `deno task doctor` probes whether a device follows it): then the
   * reference gives those calls' bits.
   */
  cubeOrder?: "pytorch" | "ascending";
  /**
   * When deterministic mode is on (the `deterministic` option, `setDeterministic` or per call) and a
   * call's kernel adds in an order nothing fixes (it ignores the flag), warn once on stderr and run
   * it instead of throwing `NondeterministicKernelError` (default false; PyTorch's `warn_only`).
   */
  deterministicWarnOnly?: boolean;
  /**
   * What this device does with the library's warnings (default: the process default,
   * `setDefaultWarnings`, else one stderr line per warning): `"warn"`, `"ignore"`, `"error"` (throw
   * an `UpsampleWarning`), a function receiving each, or an object with one of these per kind
   * (`CPU_FALLBACK`, `ADJOINT_GAP`, `DETERMINISTIC_WARN_ONLY`, `DEVICE_DEFECT`). Naming
   * `ADJOINT_GAP` asks to hear a gap on every call that meets one, not only where the device ran
   * both directions (docs/semantics.md, "Warnings").
   */
  warnings?: WarningsOption;
  /**
   * What to do where CANN's source says the kernel a call runs loses terms (the TBE kernel
   * ResizeBilinearV2Grad's tiling mode 6 drops the gradient columns that jump onto the last image
   * column at a window multiple; docs/device-semantics.md). `"avoid"` (default): run an
   * arrangement of launches that avoids the loss (the call transposed, or the deterministic
   * route's passes), or throw `DeviceDefectError` where none exists; `"refuse"`: always throw it;
   * `"allow"`: run the kernel and return its result without those terms (a `DEVICE_DEFECT`
   * warning). The CPU device reference (`numerics: "device"`) does the same.
   */
  deviceDefects?: DeviceDefects;
}

/** Options of {@link Device.tensor} and {@link Device.zeros}. */
export interface TensorOptions {
  /** Element type (default `"float32"`). Numbers are rounded to it, to nearest even. */
  dtype?: DType;
}

const OPEN_KEYS = new Set([
  "backend",
  "deviceId",
  "libDir",
  "deterministic",
  "cpuKernels",
  "threads",
  "numerics",
  "soc",
  "ascendFma",
  "tbeFma",
  "cubeOrder",
  "deterministicWarnOnly",
  "warnings",
  "deviceDefects",
]);
/** Upper bound of the `threads` option. */
const MAX_THREADS = 1024;

/** {@link DeviceOpenOptions} checked, with every default filled in. */
export interface ResolvedOpenOptions {
  /** The backend asked for. */
  readonly backend: "auto" | "npu" | "cpu";
  /** NPU index. */
  readonly deviceId: number;
  /** Folder of the CANN libraries, or undefined for the search. */
  readonly libDir: string | undefined;
  /** Initial deterministic mode. */
  readonly deterministic: boolean;
  /** Kernels of the CPU backend. */
  readonly cpuKernels: "auto" | "typescript";
  /** Threads of the CPU backend. */
  readonly threads: number;
  /** Whose results the device computes (undefined: the backend's default). */
  readonly numerics: Numerics | undefined;
  /** The Ascend kernels a CPU device reference reproduces. */
  readonly ascend: AscendTarget;
  /** Warn once instead of throwing for an order-dependent kernel in deterministic mode. */
  readonly deterministicWarnOnly: boolean;
  /** The `warnings` option, checked and copied (undefined: the process default). */
  readonly warnings: WarningsOption | undefined;
  /** Where a kernel loses terms: avoid (default), refuse or allow. */
  readonly deviceDefects: DeviceDefects;
}

/**
 * Checks {@link Device.open}'s options and fills in the defaults.
 *
 * @throws {TypeError | RangeError} naming the option, the value and the rule
 * @example
 * ```ts ignore
 * resolveOpenOptions({ backend: "cpu", threads: 1 }).numerics; // undefined: PyTorch's on the CPU
 * ```
 */
export function resolveOpenOptions(options: DeviceOpenOptions): ResolvedOpenOptions {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`Device.open options must be an object, got ${String(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!OPEN_KEYS.has(key)) {
      throw new TypeError(
        `Device.open: unknown option "${key}" (allowed: ${[...OPEN_KEYS].join(", ")})`,
      );
    }
  }
  const { backend = "auto", deviceId = 0, libDir, deterministic = false } = options;
  const { cpuKernels = "auto", threads = navigator.hardwareConcurrency || 1 } = options;
  const { numerics } = options;
  if (backend !== "auto" && backend !== "npu" && backend !== "cpu") {
    throw new TypeError(
      `Device.open backend must be "auto", "npu" or "cpu", got ${String(backend)}`,
    );
  }
  if (!Number.isSafeInteger(deviceId) || deviceId < 0) {
    throw new RangeError(`Device.open deviceId must be an integer >= 0, got ${String(deviceId)}`);
  }
  if (libDir !== undefined && typeof libDir !== "string") {
    throw new TypeError(`Device.open libDir must be a string path, got ${String(libDir)}`);
  }
  if (typeof deterministic !== "boolean") {
    throw new TypeError(
      `Device.open deterministic must be a boolean, got ${String(deterministic)}`,
    );
  }
  if (cpuKernels !== "auto" && cpuKernels !== "typescript") {
    throw new TypeError(
      `Device.open cpuKernels must be "auto" or "typescript", got ${String(cpuKernels)}`,
    );
  }
  if (!Number.isSafeInteger(threads) || threads < 1 || threads > MAX_THREADS) {
    throw new RangeError(
      `Device.open threads must be an integer from 1 to ${MAX_THREADS}, got ${String(threads)}`,
    );
  }
  if (numerics !== undefined && numerics !== "pytorch" && numerics !== "device") {
    throw new TypeError(
      `Device.open numerics must be "pytorch" or "device", got ${String(numerics)}`,
    );
  }
  if (backend === "npu" && numerics === "pytorch") {
    throw new TypeError(
      `Device.open: numerics "pytorch" is not available with backend "npu": an NPU computes what ` +
        `its kernels compute (numerics "device"); open backend "cpu" for PyTorch's results`,
    );
  }
  const { deterministicWarnOnly = false } = options;
  if (typeof deterministicWarnOnly !== "boolean") {
    throw new TypeError(
      `Device.open deterministicWarnOnly must be a boolean, got ${String(deterministicWarnOnly)}`,
    );
  }
  const warnings = checkWarningsOption(options.warnings, "Device.open warnings");
  const { deviceDefects = "avoid" } = options;
  if (!DEVICE_DEFECTS.includes(deviceDefects)) {
    throw new TypeError(
      `Device.open deviceDefects must be "avoid", "refuse" or "allow", got ${
        String(deviceDefects)
      }`,
    );
  }
  const ascend = ascendTarget(options, backend);
  return {
    backend,
    deviceId,
    libDir,
    deterministic,
    cpuKernels,
    threads,
    numerics,
    ascend,
    deterministicWarnOnly,
    warnings,
    deviceDefects,
  };
}

/** The dtype of {@link TensorOptions}, checked (default `"float32"`). */
export function checkDType(options: TensorOptions): DType {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`tensor options must be an object, got ${String(options)}`);
  }
  const dtype = options.dtype ?? "float32";
  if (!isDType(dtype)) {
    throw dtypeError("dtype", dtype);
  }
  return dtype;
}

/** The element count of a new tensor's `shape`, checked (`what` names the call in messages). */
export function checkShape(shape: readonly number[], what: string): number {
  if (!Array.isArray(shape)) {
    throw new TypeError(`${what}: shape must be an array of sizes, got ${String(shape)}`);
  }
  for (const size of shape) {
    if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0) {
      throw new RangeError(
        `${what}: shape sizes must be integers >= 0, got [${shape.join(", ")}]`,
      );
    }
  }
  return numel(shape, `${what}: shape`);
}

// The Ascend target of a device reference from the `soc`, `ascendFma`, `tbeFma` and `cubeOrder`
// options.
function ascendTarget(options: DeviceOpenOptions, backend: string): AscendTarget {
  const { soc, ascendFma, tbeFma, cubeOrder } = options;
  const given = (["soc", "ascendFma", "tbeFma", "cubeOrder"] as const).filter((k) =>
    options[k] !== undefined
  );
  if (given.length === 0) return DEFAULT_ASCEND_TARGET;
  const key = given[0];
  const raw = options[key];
  const value = key === "soc" || typeof raw === "string" ? JSON.stringify(raw) : String(raw);
  if (backend !== "cpu" || options.numerics !== "device") {
    throw new TypeError(
      `Device.open: ${key} ${value} chooses the kernels the CPU device reference reproduces, so it ` +
        `needs backend "cpu" and numerics "device" (got backend ${JSON.stringify(backend)}, ` +
        `numerics ${JSON.stringify(options.numerics ?? "pytorch")}); an NPU reads its own SoC`,
    );
  }
  if (soc !== undefined && typeof soc !== "string") {
    throw new TypeError(`Device.open soc must be a SoC name string, got ${String(soc)}`);
  }
  for (const flag of ["ascendFma", "tbeFma"] as const) {
    const given = options[flag];
    if (given !== undefined && typeof given !== "boolean") {
      throw new TypeError(`Device.open ${flag} must be a boolean, got ${String(given)}`);
    }
  }
  const { generation, known, unsupported } = generationOfSoc(soc ?? null);
  if (unsupported !== undefined) {
    throw new RangeError(`Device.open soc ${JSON.stringify(soc)}: ${unsupported}`);
  }
  if (soc !== undefined && !known) {
    throw new RangeError(
      `Device.open soc ${JSON.stringify(soc)} is not in CANN's platform table as the library ` +
        `knows it (e.g. Ascend910B3, Ascend910_9392, Ascend950PR_9599, Ascend910A, Ascend310P3; ` +
        `the names aclrtGetSocName answers)`,
    );
  }
  if (cubeOrder !== undefined && cubeOrder !== "pytorch" && cubeOrder !== "ascending") {
    throw new TypeError(
      `Device.open cubeOrder must be "pytorch" or "ascending", got ${String(cubeOrder)}`,
    );
  }
  const socText = soc === undefined ? "unset (the A2/A3 rules)" : JSON.stringify(soc);
  if (ascendFma !== undefined && generation !== "950" && generation !== "a2") {
    throw new TypeError(
      `Device.open ascendFma ${ascendFma} applies to the Ascend 950 rules and Atlas A2/A3's ` +
        `forward Cube kernel only, got soc ${socText}: there tbeFma sets the TBE kernel's ` +
        `contraction`,
    );
  }
  if (tbeFma !== undefined && generation === "950") {
    throw new TypeError(
      `Device.open tbeFma ${tbeFma} applies to the TBE ResizeBilinearV2Grad of Atlas A2/A3, 910 ` +
        `and 310P, got soc ${socText}: the 950 runs its own kernels (ascendFma)`,
    );
  }
  if (cubeOrder !== undefined && generation !== "a2") {
    throw new TypeError(
      `Device.open cubeOrder ${JSON.stringify(cubeOrder)} applies to the Cube-matmul kernels of ` +
        `Atlas A2/A3 only, got soc ${socText}: the other families run no Cube kernel`,
    );
  }
  return {
    generation,
    bilinearApi: "v2",
    fma: ascendFma ?? true,
    tbeFma: tbeFma ?? false,
    ...(cubeOrder === undefined ? {} : { cubeOrder }),
    ...(soc === undefined ? {} : { soc }),
  };
}
