/**
 * Drives `torch_bench.py` (PyTorch at a given thread count) as a child process, one JSON line per request, so `compare.ts` can alternate PyTorch and this library call by
 * call.
 *
 * @module
 */

import type { DType } from "../mod.ts";
import type { BenchCase } from "./cases.ts";
import { LineChannel } from "./line_channel.ts";

/** The Python interpreter that has Debian's `python3-torch` (override: `BENCH_PYTHON`). */
export const PYTHON: string = Deno.env.get("BENCH_PYTHON") ?? "/usr/bin/python3";
const SCRIPT = new URL("./torch_bench.py", import.meta.url).pathname;

interface Reply {
  ok: boolean;
  reason?: string;
  torch?: string;
  threads?: number;
  cpu?: string;
  ms?: number[];
}

/** What {@link TorchPeer.start} found. */
export interface PeerStart {
  /** The running peer, or null without PyTorch. */
  peer: TorchPeer | null;
  /** Why there is no peer ("" when there is one). */
  reason: string;
  /** CPU model name. */
  cpu: string;
}

/**
 * The peer's environment: libgomp's threads wait passively between parallel regions, unless the
 * caller set `OMP_WAIT_POLICY`. By default (GOMP_SPINCOUNT 300 000 pause iterations) PyTorch's
 * second thread spins on after each call, on the CPU this library's next call needs: measured
 * here, it ran 5-9 ms inside each of our 6 ms two-thread calls (its `/proc/<pid>/task/<tid>/schedstat`),
 * and our two-thread calls took as long as one thread's. Passive, it ran 0 ms there, and
 * PyTorch's own times were the same (bilinear backward 15.3 / 15.5 ms, nearest forward 3.66 /
 * 3.62 ms at two threads). Both sides then pay a wake-up per call: our workers block too.
 */
function peerEnv(): Record<string, string> {
  return Deno.env.get("OMP_WAIT_POLICY") === undefined ? { OMP_WAIT_POLICY: "PASSIVE" } : {};
}

/** A running `torch_bench.py`. */
export class TorchPeer {
  readonly #channel: LineChannel;
  #version = "";
  /** PyTorch's thread count. */
  threads = 1;

  private constructor(child: Deno.ChildProcess) {
    this.#channel = new LineChannel(child);
  }

  /**
   * Starts PyTorch with `threads` threads. `peer`
   * is null when it is not available (no python3, no torch), with `reason`; `cpu` is the CPU model
   * from `/proc/cpuinfo` (read by Python: Deno needs --allow-all for /proc).
   */
  static async start(threads = 1): Promise<PeerStart> {
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(PYTHON, {
        args: [SCRIPT, String(threads)],
        stdin: "piped",
        stdout: "piped",
        stderr: "inherit",
        env: peerEnv(),
      }).spawn();
    } catch (error) {
      const reason = `cannot run ${PYTHON}: ${(error as Error).message.split("\n")[0]}`;
      return { peer: null, reason, cpu: "unknown" };
    }
    const peer = new TorchPeer(child);
    const hello = await peer.#read();
    const cpu = hello.cpu ?? "unknown";
    if (!hello.ok) {
      await peer.close();
      return { peer: null, reason: hello.reason ?? "torch_bench.py failed to start", cpu };
    }
    peer.#version = `${hello.torch}, ${hello.threads} thread(s)`;
    peer.threads = hello.threads ?? 1;
    return { peer, reason: "", cpu };
  }

  /** PyTorch's version and thread count, e.g. `1.13.0a0, 1 thread(s)`. */
  get version(): string {
    return this.#version;
  }

  /** Prepares a case; returns null when ready, else PyTorch's reason (e.g. no float16 kernel). */
  async setup(c: BenchCase, dtype: DType): Promise<string | null> {
    const reply = await this.#request({ cmd: "setup", case: c, dtype });
    return reply.ok ? null : reply.reason ?? "setup failed";
  }

  /**
   * Runs `calls` calls: per-call ms, or one mean when `batch`; `out`: into a result allocated at
   * setup (the op's out= overload), else each call allocates its result.
   */
  async run(calls: number, batch = false, out = false): Promise<number[]> {
    const reply = await this.#request({ cmd: "run", calls, batch, out });
    if (!reply.ok || !reply.ms) throw new Error(`torch_bench.py: ${reply.reason}`);
    return reply.ms;
  }

  /** Stops the child. */
  async close(): Promise<void> {
    await this.#channel.close(`{"cmd":"quit"}`);
  }

  async #request(body: unknown): Promise<Reply> {
    await this.#channel.send(JSON.stringify(body));
    return await this.#read();
  }

  async #read(): Promise<Reply> {
    const line = await this.#channel.readLine();
    return line === null
      ? { ok: false, reason: "torch_bench.py exited" }
      : JSON.parse(line) as Reply;
  }
}
