/**
 * Which of the two kernel modules runs: the fused one (`f32x4.relaxed_madd` for the multiply-adds
 * PyTorch fuses) or the exact one (the same results by an exact emulation, SIMD128 only).
 *
 * Relaxed SIMD lets `f32x4.relaxed_madd` round once or twice, by host. PyTorch 1.13's CPU kernels
 * round once where its build fuses (docs/semantics.md), so the fused module gives PyTorch's bits
 * only where the instruction is fused. A probe decides once per process: it compiles the fused
 * module (a runtime without relaxed SIMD refuses it: exact path), instantiates it on a small memory
 * and computes `a * b + c` with `a = b = 1 + 2^-23`, `c = -(1 + 2^-22)` in every lane: fused gives
 * `2^-46`, two roundings 0. V8 lowers the instruction to FMA3 (x64, where the CPU has it) or
 * `fmla` (arm64), in its baseline and optimising compilers alike.
 *
 * `ACLNN_UPSAMPLE_WASM_FMA=exact` or `=fused` forces a path (tests run the fixtures on each);
 * forcing `fused` where the probe fails throws.
 *
 * @module
 */

import { KERNELS_FUSED_WASM_BASE64, KERNELS_WASM_BASE64 } from "./kernels_wasm.ts";

/** A kernel module: `fused` (relaxed_madd) or `exact` (the emulation). */
export type FmaPath = "fused" | "exact";

/** The environment variable that forces a path (`exact`, `fused`; anything else: the probe). */
export const FMA_PATH_ENV = "ACLNN_UPSAMPLE_WASM_FMA";

/** The probe's verdict on the fused module. */
export interface FusedProbe {
  /** Whether the fused module validates and its relaxed_madd rounds once. */
  fused: boolean;
  /** Why not, when not. */
  reason: string;
  /** The compiled fused module (private memory) when it validated, for reuse. */
  module: WebAssembly.Module | null;
}

/** The path chosen for this process, with why. */
export interface FmaChoice {
  /** The path. */
  path: FmaPath;
  /** How it was chosen. */
  reason: string;
}

const A = 1 + 2 ** -23;
const C = -(1 + 2 ** -22);
const FUSED_RESULT = 2 ** -46;

let probed: FusedProbe | undefined;
let chosen: FmaChoice | undefined;

/**
 * The bytes of a kernel module.
 *
 * @example
 * ```ts ignore
 * const bytes = kernelModuleBytes("exact");
 * ```
 */
export function kernelModuleBytes(path: FmaPath): Uint8Array<ArrayBuffer> {
  const text = atob(path === "fused" ? KERNELS_FUSED_WASM_BASE64 : KERNELS_WASM_BASE64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

/**
 * Probes the fused module once per process (see the module's comment).
 *
 * @example
 * ```ts
 * import { probeFusedModule } from "./fma_path.ts";
 * const { fused, reason } = probeFusedModule();
 * ```
 */
export function probeFusedModule(): FusedProbe {
  probed ??= probeModuleBytes(kernelModuleBytes("fused"));
  return probed;
}

/**
 * The probe on given module bytes (tests pass bytes that do not validate, as a runtime without
 * relaxed SIMD sees the fused module).
 *
 * @example
 * ```ts
 * import { kernelModuleBytes, probeModuleBytes } from "./fma_path.ts";
 * probeModuleBytes(kernelModuleBytes("fused")).fused; // true where relaxed_madd is fused
 * ```
 */
export function probeModuleBytes(bytes: Uint8Array<ArrayBuffer>): FusedProbe {
  let module: WebAssembly.Module;
  try {
    module = new WebAssembly.Module(bytes);
  } catch (e) {
    return { fused: false, reason: `relaxed SIMD does not validate (${e})`, module: null };
  }
  // Its own small memory (two pages hold the stack and data the module needs).
  const memory = new WebAssembly.Memory({ initial: 2, maximum: 2 });
  const exports = new WebAssembly.Instance(module, { env: { memory } }).exports as {
    relaxed_madd_probe(a: number, b: number, c: number, r: number): void;
    __heap_base: WebAssembly.Global;
  };
  const at = exports.__heap_base.value as number;
  exports.relaxed_madd_probe(A, A, C, at);
  const lanes = Array.from(new Float32Array(memory.buffer, at, 4));
  const fused = lanes.every((x) => x === FUSED_RESULT);
  return {
    fused,
    reason: fused ? "relaxed_madd rounds once" : `relaxed_madd rounds twice (lanes ${lanes})`,
    module,
  };
}

function forcedPath(): string | undefined {
  // Query first: a plain Deno.env.get would prompt on a terminal, which a library must not do.
  if (Deno.permissions.querySync({ name: "env", variable: FMA_PATH_ENV }).state !== "granted") {
    return undefined;
  }
  return Deno.env.get(FMA_PATH_ENV);
}

/**
 * The path this process runs, chosen once: forced by `ACLNN_UPSAMPLE_WASM_FMA`, else `fused` where
 * the probe passes and `exact` elsewhere.
 *
 * @example
 * ```ts
 * import { fmaPath } from "./fma_path.ts";
 * const { path, reason } = fmaPath(); // e.g. "fused", "relaxed_madd rounds once"
 * ```
 */
export function fmaPath(): FmaChoice {
  if (chosen !== undefined) return chosen;
  const forced = forcedPath();
  if (forced === "exact") {
    chosen = { path: "exact", reason: `${FMA_PATH_ENV}=exact` };
  } else if (forced === "fused") {
    const probe = probeFusedModule();
    if (!probe.fused) {
      throw new Error(`${FMA_PATH_ENV}=fused: the host cannot run the fused path: ${probe.reason}`);
    }
    chosen = { path: "fused", reason: `${FMA_PATH_ENV}=fused` };
  } else {
    const probe = probeFusedModule();
    chosen = { path: probe.fused ? "fused" : "exact", reason: probe.reason };
  }
  return chosen;
}
