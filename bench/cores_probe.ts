/**
 * The machine's own multi-thread scaling (`bench/cores.c`, built by `make -C bench`): how much
 * faster N threads run a SIMD loop, a latency-bound chain and a memory copy than one thread. On
 * a machine whose logical CPUs share physical cores, SIMD kernels cannot scale past the `simd`
 * figure, whatever their threading.
 *
 * @module
 */

import { fileURLToPath } from "node:url";

/** Speed-ups of `threads` threads over one, per kind of loop (median over rounds). */
export interface CoreScaling {
  threads: number;
  simd: number;
  latency: number;
  copy: number;
  /** Median µs from signalling a blocked C thread to its running, after 20 ms idle. */
  wakeUs: number;
}

/**
 * Builds and runs the probe; null (with the reason on stderr) when it cannot be built or run.
 *
 * @example
 * ```ts ignore
 * const scaling = await coreScaling(navigator.hardwareConcurrency);
 * console.log(scaling?.simd);
 * ```
 */
export async function coreScaling(threads: number): Promise<CoreScaling | null> {
  const bench = fileURLToPath(new URL(".", import.meta.url));
  try {
    const make = await new Deno.Command("make", { args: ["-s", "-C", bench, "build/cores"] })
      .output();
    if (!make.success) throw new Error(new TextDecoder().decode(make.stderr).trim());
    const probe = await new Deno.Command(`${bench}/build/cores`, {
      args: [String(threads), "11"],
      stdout: "piped",
    }).output();
    if (!probe.success) throw new Error(`exit code ${probe.code}`);
    const values = new Map<string, number>();
    for (const line of new TextDecoder().decode(probe.stdout).trim().split("\n")) {
      const [name, value] = line.split(" ");
      values.set(name, Number(value));
    }
    const [simd, latency, copy, wakeUs] = ["simd", "latency", "copy", "wake_idle_20ms"].map((k) =>
      values.get(k) ?? NaN
    );
    return { threads, simd, latency, copy, wakeUs };
  } catch (error) {
    console.error(`bench/cores.c could not run: ${(error as Error).message}`);
    return null;
  }
}

/** Bytes of the one-thread copy the benchmarks time beside their cases. */
export const COPY_BYTES = 128 * 2 ** 20;
let copyBuffers: { src: Float32Array; dst: Float32Array } | null = null;

/**
 * One 128 MiB `Float32Array.prototype.set` on this thread, ms (its buffers made and touched on the
 * first call): the memory-copy peer a case's bandwidth is judged against, timed in its rounds.
 *
 * @example
 * ```ts ignore
 * const gbs = (2 * COPY_BYTES) / (copyOnceMs() * 1e-3) / 1e9; // read + write
 * ```
 */
export function copyOnceMs(): number {
  if (copyBuffers === null) {
    copyBuffers = {
      src: new Float32Array(COPY_BYTES / 4).fill(1.5),
      dst: new Float32Array(COPY_BYTES / 4),
    };
    copyBuffers.dst.set(copyBuffers.src); // touch every page first
  }
  const start = performance.now();
  copyBuffers.dst.set(copyBuffers.src);
  return performance.now() - start;
}
