/**
 * Test helpers: element-wise comparison, the lanes every public-API suite runs on (`lanes.ts`), the host
 * emulation's test-only controls, and building non-contiguous views.
 *
 * @module
 */

import { AssertionError } from "node:assert/strict";
import { Device, type DType, type Tensor } from "../../mod.ts";
import { cpuTuning } from "../../src/cpu/backend.ts";
import { bfloat16BitsFromNumber, bfloat16BitsToNumber } from "../../src/tensor/dtype.ts";
import { emulationDir } from "../../tools/emu_dir.ts";
import { type BackendCase, processLanes } from "./lanes.ts";
import { seededRandom } from "../../cli/verify/cases.ts";
import { type AscendGeneration, generationOfSoc } from "../../src/rules/generation.ts";

/**
 * Folder of the host emulation build for the platform the tests run on (`deno task build:native`;
 * `native/build/aarch64/` for an aarch64 Deno under qemu, see tools/emu_dir.ts). Tests take every
 * emulation path from here and the variant constants, never from a literal `native/build/`.
 */
export const EMU_DIR: string = emulationDir();
/** Variant without the bilinear V2 symbols. */
export const EMU_NO_V2_DIR: string = `${EMU_DIR}no-v2/`;
/** Variant without the nearest-exact 1d symbols. */
export const EMU_NO_1D_DIR: string = `${EMU_DIR}no-1d/`;
/**
 * Variant runtime of an older CANN: its libascendcl lacks `aclrtCtxSetSysParamOpt`,
 * `aclrtCtxGetSysParamOpt`, `aclrtGetSocName` and `aclGetRecentErrMsg`; everything else forwards to
 * the one emulated runtime of the process (shared state and counters).
 */
export const EMU_OLD_RUNTIME_DIR: string = `${EMU_DIR}old-runtime/`;
/** Variant whose nearest-exact maps outputs to inputs like PyTorch's CPU kernel, not the device. */
export const EMU_TORCH_MAP_DIR: string = `${EMU_DIR}torch-map/`;
/** Variant with a libopapi.so lacking the upsample symbols and a libopapi_cv.so holding them. */
export const EMU_SPLIT_DIR: string = `${EMU_DIR}split/`;

export type { BackendCase, LaneLabel } from "./lanes.ts";

/**
 * The lanes every public-API suite runs on (`tests/support/lanes.ts`): the CPU backend (wasm kernels, and
 * TypeScript kernels only), the emulated NPU (explicit `libDir`: {@link EMU_DIR}) and `npu`, the CANN the
 * library's own search finds. A lane that cannot run here is listed with its reason (`ignore`); suites
 * register tests with `lane.test(...)`, which ignores them there; the reason is printed once.
 */
export const BACKENDS: readonly BackendCase[] = processLanes(EMU_DIR);

/** The lanes of {@link BACKENDS} that run in this process. */
export const RUNNING_BACKENDS: readonly BackendCase[] = BACKENDS.filter((lane) => !lane.ignore);

/**
 * The emulated-NPU lane, the only one where {@link emu} applies: tests that need the emulation (its
 * controls, variants, second device) register with `EMULATED_LANE.test(...)`.
 */
export const EMULATED_LANE: BackendCase = BACKENDS.find((lane) => lane.emulated)!;

const CONTROLS = {
  aclemuLiveAllocations: { parameters: [], result: "i64" },
  aclemuLiveBytes: { parameters: [], result: "i64" },
  aclemuLiveObjects: { parameters: [], result: "i64" },
  aclemuLiveStreams: { parameters: [], result: "i64" },
  aclemuFailAllocation: { parameters: ["i64"], result: "void" },
  aclemuFailNextLaunch: { parameters: ["i32"], result: "void" },
  aclemuFailNextSync: { parameters: ["i32"], result: "void" },
  aclemuFailNextCopy: { parameters: ["i32"], result: "void" },
  aclemuSetStreamDelayUs: { parameters: ["i64"], result: "void" },
  aclemuLaunchCount: { parameters: [], result: "i64" },
  aclemuLastLaunchDeterministic: { parameters: [], result: "i32" },
  aclemuResetFaults: { parameters: [], result: "void" },
  // Device memory capacity per device in bytes (> 0 overrides ACLEMU_DEVICE_MEMORY, <= 0 restores it).
  aclemuSetDeviceMemory: { parameters: ["i64"], result: "void" },
  aclemuDeviceMemory: { parameters: [], result: "i64" },
  // Frees of device memory a stream task references that the host has not observed complete.
  aclemuReferencedFrees: { parameters: [], result: "i64" },
  // What the last referenced free hit (C string, "" when none).
  aclemuLastReferencedFree: { parameters: [], result: "pointer" },
  aclemuPendingTasks: { parameters: [], result: "i64" },
  // ACL's init reference count, and the aclFinalize calls that tore ACL down.
  aclemuInitRefCount: { parameters: [], result: "i64" },
  aclemuFinalizeCount: { parameters: [], result: "i64" },
  aclemuLiveEvents: { parameters: [], result: "i64" },
  aclemuFailNextEvent: { parameters: ["i32"], result: "void" },
  // Kernel counters and the Ascend 950 controls (native/include/aclemu.h); optional, so a build
  // without them still loads (null then).
  aclemuLastKernel: { parameters: [], result: "pointer", optional: true },
  aclemuKernelLaunches: { parameters: ["buffer"], result: "i64", optional: true },
  aclemuSetAtomicSeed: { parameters: ["u64"], result: "void", optional: true },
  aclemuAtomicSeed: { parameters: [], result: "u64", optional: true },
  aclemuSetFmaContraction: { parameters: ["i32"], result: "void", optional: true },
  aclemuFmaContraction: { parameters: [], result: "i32", optional: true },
  // The emulated SoC's NpuArch and the TBE ResizeBilinearV2Grad's contraction switch.
  aclemuNpuArch: { parameters: [], result: "i32", optional: true },
  aclemuSetTbeFma: { parameters: ["i32"], result: "void", optional: true },
  aclemuTbeFma: { parameters: [], result: "i32", optional: true },
} as const satisfies Deno.ForeignLibraryInterface;

let controls: Deno.DynamicLibrary<typeof CONTROLS>["symbols"] | null = null;

/**
 * The emulation's test-only controls (the same loaded library the NPU backend uses).
 *
 * @throws {Error} when the emulated lane cannot run in this process (it would load the emulation
 *   next to another CANN runtime)
 */
export function emu(): Deno.DynamicLibrary<typeof CONTROLS>["symbols"] {
  if (EMULATED_LANE.ignore !== undefined) {
    throw new Error(`the emulation is not loadable here: ${EMULATED_LANE.ignore}`);
  }
  controls ??= Deno.dlopen(`${EMU_DIR}libascendcl.so`, CONTROLS).symbols;
  return controls;
}

/** What the emulation's last referenced free hit (`""` when none): for assertion messages. */
export function lastReferencedFree(): string {
  const pointer = emu().aclemuLastReferencedFree();
  return pointer === null ? "" : Deno.UnsafePointerView.getCString(pointer);
}

/** A control the emulation build must have (the 950 controls are bound optionally). */
function required<T>(symbol: T | null, name: string): T {
  if (symbol === null) {
    throw new Error(`the emulation build lacks ${name} (rebuild: deno task build:native)`);
  }
  return symbol;
}

/** The kernel the emulation's last op launch enqueued (`""` when none since the last reset). */
export function emuLastKernel(): string {
  const pointer = required(emu().aclemuLastKernel, "aclemuLastKernel")();
  return pointer === null ? "" : Deno.UnsafePointerView.getCString(pointer);
}

/** Launches of the kernel `name` (as {@link emuLastKernel} names it) since the last reset. */
export function emuKernelLaunches(name: string): number {
  const launches = required(emu().aclemuKernelLaunches, "aclemuKernelLaunches");
  return Number(launches(new TextEncoder().encode(`${name}\0`)));
}

/** Seeds the order of the emulated 950's atomic additions (restarts its per-launch sequence). */
export function emuSetAtomicSeed(seed: bigint): void {
  required(emu().aclemuSetAtomicSeed, "aclemuSetAtomicSeed")(seed);
}

/** The emulated 950's FMA contraction: 1 contracts, 0 does not, < 0 restores the default. */
export function emuSetFmaContraction(on: number): void {
  required(emu().aclemuSetFmaContraction, "aclemuSetFmaContraction")(on);
}

/** Whether the emulated 950 contracts `a * b + c` into one FMA now. */
export function emuFmaContraction(): boolean {
  return required(emu().aclemuFmaContraction, "aclemuFmaContraction")() === 1;
}

let emulatedSocName: string | null | undefined;

/**
 * The SoC the emulation reports in this process (`ACLEMU_SOC`, read once per process; default
 * `Ascend910B3`), from the emulated device's name; `null` when the emulated lane cannot run here.
 */
export function emulatedSoc(): string | null {
  if (emulatedSocName !== undefined) return emulatedSocName;
  if (EMULATED_LANE.ignore !== undefined) return (emulatedSocName = null);
  using device = EMULATED_LANE.open();
  return (emulatedSocName = device.name.split(" ")[0]);
}

/** The kernel generation of the emulated SoC (CANN's platform table; `"a2"` assumed); null: no emulation. */
export function emulatedGeneration(): AscendGeneration | null {
  const soc = emulatedSoc();
  return soc === null ? null : generationOfSoc(soc).generation;
}

/** The emulated SoC's NpuArch, as the emulation's own table has it. */
export function emuNpuArch(): number {
  return required(emu().aclemuNpuArch, "aclemuNpuArch")();
}

/** The emulated TBE ResizeBilinearV2Grad's contraction: 1 fused, 0 not, < 0 restores the default. */
export function emuSetTbeFma(on: number): void {
  required(emu().aclemuSetTbeFma, "aclemuSetTbeFma")(on);
}

/**
 * The SoC the emulation is set to report: `ACLEMU_SOC` (the emulation reads it once per process),
 * default `Ascend910B3` (native/src/ascendcl/runtime.c). Taken from the environment, not from a
 * device, so that tests of the name a device reports have an expectation of their own.
 */
export function configuredEmulationSoc(): string {
  return Deno.env.get("ACLEMU_SOC") ?? "Ascend910B3";
}

/**
 * Options for `EMULATED_LANE.test` of a test that asserts an Atlas A2/A3-only fact (A2 kernel
 * routing, A2 workspace sizes, an A2-only variant of the emulation): ignored when the emulation runs
 * as an Ascend 950, with `reason` (the A2 rule) in its name; registered as is otherwise.
 */
export function a2OnlyTest(name: string, reason: string): { name: string; ignore: boolean } {
  const on950 = emulatedGeneration() === "950";
  return {
    name: on950 ? `${name} [A2/A3 only, not run on the Ascend 950: ${reason}]` : name,
    ignore: on950,
  };
}

/** Live device allocations and aclnn objects of the emulation. */
export function emuLive(): { allocations: bigint; objects: bigint } {
  return { allocations: emu().aclemuLiveAllocations(), objects: emu().aclemuLiveObjects() };
}

/** Units in the last place between two float32 values (0 for equal, Infinity across NaN/sign). */
export function ulpDistance(a: number, b: number): number {
  if (Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b))) return 0;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return Infinity;
  const f = new Float32Array([a, b]);
  const i = new Int32Array(f.buffer);
  const key = (x: number): number => (x < 0 ? -2147483648 - x : x);
  return Math.abs(key(i[0]) - key(i[1]));
}

/** Throws unless the arrays hold the same values (`Object.is`, NaN equal to NaN). */
export function assertBitEqual(actual: Float32Array, expected: Float32Array, what: string): void {
  if (actual.length !== expected.length) {
    throw new AssertionError({ message: `${what}: length ${actual.length} != ${expected.length}` });
  }
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i], e = expected[i];
    if (!(Object.is(a, e) || (Number.isNaN(a) && Number.isNaN(e)))) {
      throw new AssertionError({ message: `${what}: element ${i}: got ${a}, expected ${e}` });
    }
  }
}

/**
 * Element-wise closeness: within `ulps` float32 ulps, or `|a - e| <= atol + rtol * |e|`; NaN matches NaN,
 * infinities must match exactly.
 */
export function assertClose(
  actual: Float32Array,
  expected: ArrayLike<number>,
  what: string,
  { ulps = 4, rtol = 0, atol = 0 }: { ulps?: number; rtol?: number; atol?: number } = {},
): void {
  if (actual.length !== expected.length) {
    throw new AssertionError({ message: `${what}: length ${actual.length} != ${expected.length}` });
  }
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i], e = expected[i];
    if (ulpDistance(a, e) <= ulps) continue;
    if (Number.isFinite(a) && Number.isFinite(e) && Math.abs(a - e) <= atol + rtol * Math.abs(e)) {
      continue;
    }
    throw new AssertionError({
      message: `${what}: element ${i}: got ${a}, expected ${e} (${ulpDistance(a, e)} ulp)`,
    });
  }
}

/** Rounds float32 values to a dtype (RNE) and back, as the op's result in that dtype must be. */
export function roundTo(dtype: DType, values: Float32Array): Float32Array {
  if (dtype === "float32") return values;
  if (dtype === "float16") return Float32Array.from(new Float16Array(values));
  return values.map((v) => bfloat16BitsToNumber(bfloat16BitsFromNumber(v)));
}

/** Layouts a gradient can be presented in. */
export type ViewLayout = "contiguous" | "channelsLast" | "transposed" | "offset";

/**
 * Creates a tensor holding `values` (logical row-major) whose storage is laid out as `layout` says:
 * channels-last (C innermost), last two dims swapped, or a slice at a non-zero offset.
 */
export function makeView(
  device: Device,
  values: ArrayLike<number>,
  shape: readonly number[],
  dtype: DType,
  layout: ViewLayout,
): Tensor {
  const rank = shape.length;
  if (layout === "contiguous") return device.tensor(values, shape, { dtype });
  if (layout === "offset") {
    const plane = shape.slice(1).reduce((a, b) => a * b, 1);
    const padded = new Float32Array(values.length + plane).fill(-7);
    padded.set(Array.from(values), plane);
    using storage = device.tensor(padded, [shape[0] + 1, ...shape.slice(1)], { dtype });
    return storage.slice(0, 1);
  }
  // Storage dim i holds logical dim perm[i].
  const perm = layout === "channelsLast"
    ? [0, ...Array.from({ length: rank - 2 }, (_, i) => i + 2), 1]
    : [...Array.from({ length: rank - 2 }, (_, i) => i), rank - 1, rank - 2];
  const storageShape = perm.map((d) => shape[d]);
  const logicalStrides = new Array<number>(rank);
  for (let d = rank - 1, s = 1; d >= 0; d--) {
    logicalStrides[d] = s;
    s *= shape[d];
  }
  const storageValues = new Float32Array(values.length);
  const index = new Array<number>(rank).fill(0);
  for (let k = 0; k < storageValues.length; k++) {
    let source = 0;
    for (let i = 0; i < rank; i++) source += index[i] * logicalStrides[perm[i]];
    storageValues[k] = values[source];
    for (let i = rank - 1; i >= 0; i--) {
      if (++index[i] < storageShape[i]) break;
      index[i] = 0;
    }
  }
  const inverse = new Array<number>(rank);
  perm.forEach((d, i) => (inverse[d] = i));
  using storage = device.tensor(storageValues, storageShape, { dtype });
  return storage.permute(...inverse);
}

/** A seeded PRNG (mulberry32) for reproducible generated tests: the one `deno task verify` draws from. */
export const rng: (seed: number) => () => number = seededRandom;

/** One change to a call's options (or its tensors) that the op must reject. */
export type CallChange = [
  what: string,
  change: (options: Record<string, unknown>, source: Tensor, out: Tensor) => void,
];

/**
 * Checks the memo of repeated calls (src/ops/call_memo.ts): for each change, a call repeated three
 * times then changed throws exactly what the same change throws on a first call. `source` makes a
 * fresh tensor, `out` a fresh result; `options(out)` are the call's options.
 */
export function assertRepeatsFailAsFirstCalls(
  op: (source: Tensor, options: never) => unknown,
  source: () => Tensor,
  out: () => Tensor,
  options: (out: Tensor) => Record<string, unknown>,
  changes: readonly CallChange[],
): void {
  const errorOf = (run: () => unknown): Error | null => {
    try {
      run();
      return null;
    } catch (error) {
      return error as Error;
    }
  };
  const changed = (change: CallChange[1], repeats: number): Error | null => {
    const x = source(), result = out();
    try {
      for (let i = 0; i < repeats; i++) op(x, options(result) as never);
      const o = options(result);
      change(o, x, result);
      return errorOf(() => op(x, o as never));
    } finally {
      x.dispose();
      result.dispose();
    }
  };
  for (const [what, change] of changes) {
    const expected = changed(change, 0); // never used before: the full checks
    const error = changed(change, 3);
    if (expected === null) throw new AssertionError({ message: `${what}: the change is an error` });
    if (error === null) {
      throw new AssertionError({ message: `${what}: no error after repeated calls` });
    }
    if (error.constructor !== expected.constructor || error.message !== expected.message) {
      throw new AssertionError({
        message: `${what}: ${error.constructor.name}: ${error.message} after repeated calls, ` +
          `${expected.constructor.name}: ${expected.message} on a first call`,
      });
    }
  }
}

/**
 * A CPU device with `threads` threads whose thread threshold is `minParallel` elements (default 0:
 * every call sent to the workers).
 */
export function openThreaded(
  threads: number,
  numerics: "pytorch" | "device" = "pytorch",
  minParallel = 0,
): Device {
  const saved = cpuTuning.minParallelElements;
  cpuTuning.minParallelElements = minParallel;
  try {
    return Device.open({ backend: "cpu", threads, numerics });
  } finally {
    cpuTuning.minParallelElements = saved;
  }
}
