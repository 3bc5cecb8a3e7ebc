/**
 * The machine's own multi-thread scaling (`bench/cores.c`, built by `make -C bench`): how much
 * faster N threads run a SIMD loop, a latency-bound chain and a memory copy than one thread. On
 * a machine whose logical CPUs share physical cores, SIMD kernels cannot scale past the `simd`
 * figure, whatever their threading.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { LineChannel } from "./line_channel.ts";

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

/**
 * `bench/build/cores serve`: plain C threads, blocked between requests as this library's workers
 * are, timed in the same rounds as the cases. A burst's scaling there is what the host gave threads
 * at that point of the rounds (after a peer's call, after an idle gap), which `cores.c`'s sustained
 * loops do not show.
 *
 * @example
 * ```ts ignore
 * const host = HostBursts.start(2);
 * const one = await host?.burst(1, 5), two = await host?.burst(2, 5);
 * ```
 */
export class HostBursts {
  readonly #channel: LineChannel;

  private constructor(child: Deno.ChildProcess) {
    this.#channel = new LineChannel(child);
  }

  /** Starts the server with `threads` threads (built by the probe above); null if it cannot. */
  static start(threads: number): HostBursts | null {
    const bench = fileURLToPath(new URL(".", import.meta.url));
    try {
      const child = new Deno.Command(`${bench}/build/cores`, {
        args: ["serve", String(threads)],
        stdin: "piped",
        stdout: "piped",
      }).spawn();
      return new HostBursts(child);
    } catch (error) {
      console.error(`bench/cores.c serve could not run: ${(error as Error).message}`);
      return null;
    }
  }

  /** Wall ms of a SIMD burst of about `ms` ms of one thread's work, shared by `threads` threads. */
  async burst(threads: number, ms: number): Promise<number> {
    await this.#channel.send(`${threads} ${ms}`);
    const line = await this.#channel.readLine();
    if (line === null) throw new Error("bench/cores serve exited");
    return Number(line);
  }

  /** Stops the server. */
  async close(): Promise<void> {
    await this.#channel.close();
  }
}

/**
 * The memory floor of a case (bench/floor.c): a function timing one pass of plain WebAssembly SIMD
 * loops that read `readBytes` and write `writeBytes` (ms), on buffers of its own, touched first; or
 * null (with the reason on stderr) when clang 19 cannot build it.
 *
 * @example
 * ```ts ignore
 * const floor = await memoryFloor(8 << 20, 32 << 20);
 * const ms = floor?.();
 * ```
 */
export async function memoryFloor(
  readBytes: number,
  writeBytes: number,
): Promise<(() => number) | null> {
  const module = await (floorModule ??= compileFloor());
  if (module === null) return null;
  const round = (n: number): number => Math.ceil(n / 64) * 64;
  const read = round(readBytes), write = round(writeBytes);
  const pages = Math.ceil((read + write) / 65536) + 1;
  const memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
  const instance = await WebAssembly.instantiate(module, { env: { memory } });
  const move = instance.exports.floor_move as (
    d: number,
    s: number,
    r: number,
    w: number,
  ) => number;
  new Uint8Array(memory.buffer).fill(1); // every page touched
  const dst = 0, src = write;
  move(dst, src, read, write);
  return (): number => {
    const start = performance.now();
    move(dst, src, read, write);
    return performance.now() - start;
  };
}

let floorModule: Promise<WebAssembly.Module | null> | undefined;

/** bench/floor.c built and compiled once; null (said once on stderr) without clang 19. */
async function compileFloor(): Promise<WebAssembly.Module | null> {
  const bench = fileURLToPath(new URL(".", import.meta.url));
  try {
    const make = await new Deno.Command("make", { args: ["-s", "-C", bench, "build/floor.wasm"] })
      .output();
    if (!make.success) throw new Error(new TextDecoder().decode(make.stderr).trim());
    return await WebAssembly.compile(await Deno.readFile(`${bench}/build/floor.wasm`));
  } catch (error) {
    console.error(`bench/floor.c could not be built: ${(error as Error).message.split("\n")[0]}`);
    return null;
  }
}
