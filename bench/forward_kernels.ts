/**
 * The forward kernels (src/cpu/pytorch/forward/) against PyTorch 1.13's forward ops, in one run on this
 * machine: `torch.ops.aten._upsample_nearest_exact{1,2}d` / `upsample_bilinear2d` (explicit sizes)
 * in a Python child at 1 and at 2 threads, against the WebAssembly kernels on the calling thread
 * and on two worker threads (the plane-split plan, forced). Each side allocates its result per call.
 * Rounds alternate one call per side (the order reversed every other round) after warm-up rounds;
 * times are medians, ratios the median of the per-round ratios (PyTorch's time / ours: > 1 means
 * faster than PyTorch).
 *
 *     deno run --allow-read --allow-run --allow-env bench/forward_kernels.ts [--rounds 15]
 *
 * Needs `/usr/bin/python3` with torch (or `BENCH_PYTHON`); without it, reports this library only.
 *
 * @module
 */

import type { StorageView } from "../src/backend.ts";
import { CpuBuffer } from "../src/cpu/buffer.ts";
import {
  launchWasmForward,
  prepareWasmForward,
  type WasmForwardCall,
} from "../src/cpu/wasm/launch_forward.ts";
import { KernelScheduler } from "../src/cpu/threads/scheduler.ts";
import { WasmKernels } from "../src/cpu/wasm/instance.ts";
import type { UpsampleOp } from "../src/rules/ops.ts";
import type { DType } from "../src/tensor/dtype.ts";
import { contiguousStrides } from "../src/tensor/layout.ts";

const PYTHON = Deno.env.get("BENCH_PYTHON") ?? "/usr/bin/python3";
const argRounds = Deno.args.indexOf("--rounds");
const ROUNDS = argRounds >= 0 ? Number(Deno.args[argRounds + 1]) : 15;
const WARMUP = 3;

const PEER = `
import json, sys, time
try:
    import torch
except Exception as e:
    print(json.dumps({"ok": False, "reason": str(e)})); sys.stdout.flush(); sys.exit(0)
torch.set_num_threads(int(sys.argv[1]))
print(json.dumps({"ok": True, "torch": torch.__version__, "threads": torch.get_num_threads()})); sys.stdout.flush()
DT = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
fn = None
for line in sys.stdin:
    req = json.loads(line)
    if req["cmd"] == "setup":
        x = torch.randn(req["inputSize"]).to(DT[req["dtype"]])
        size, op = req["outputSize"], req["op"]
        if op == "nearestExact1d":
            fn = lambda: torch.ops.aten._upsample_nearest_exact1d(x, size, None)
        elif op == "nearestExact2d":
            fn = lambda: torch.ops.aten._upsample_nearest_exact2d(x, size, None, None)
        else:
            ac = req["alignCorners"]
            fn = lambda: torch.ops.aten.upsample_bilinear2d(x, size, ac, None, None)
        try:
            fn(); print(json.dumps({"ok": True}))
        except RuntimeError as e:
            print(json.dumps({"ok": False, "reason": str(e).splitlines()[0]}))
    elif req["cmd"] == "run":
        t = time.perf_counter(); y = fn(); del y
        print(json.dumps({"ok": True, "ms": (time.perf_counter() - t) * 1e3}))
    else:
        break
    sys.stdout.flush()
`;

class Peer {
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #lines: AsyncIterator<string>;
  readonly #child: Deno.ChildProcess;
  version = "";

  private constructor(child: Deno.ChildProcess) {
    this.#child = child;
    this.#writer = child.stdin.getWriter();
    this.#lines = lines(child.stdout.pipeThrough(new TextDecoderStream()));
  }

  static async start(threads: number): Promise<Peer | string> {
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(PYTHON, {
        args: ["-c", PEER, String(threads)],
        stdin: "piped",
        stdout: "piped",
        stderr: "null",
      }).spawn();
    } catch (error) {
      return `cannot run ${PYTHON}: ${error}`;
    }
    const peer = new Peer(child);
    const hello = await peer.#read();
    if (!hello.ok) return `no torch: ${hello.reason}`;
    peer.version = hello.torch as string;
    return peer;
  }

  async #read(): Promise<Record<string, unknown>> {
    const next = await this.#lines.next();
    if (next.done) throw new Error("the PyTorch peer stopped");
    return JSON.parse(next.value);
  }

  async request(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    await this.#writer.write(new TextEncoder().encode(JSON.stringify(body) + "\n"));
    return await this.#read();
  }

  async close(): Promise<void> {
    await this.#writer.write(new TextEncoder().encode('{"cmd": "quit"}\n'));
    await this.#writer.close();
    await this.#child.status;
  }
}

async function* lines(stream: ReadableStream<string>): AsyncGenerator<string> {
  let pending = "";
  for await (const chunk of stream) {
    pending += chunk;
    let at: number;
    while ((at = pending.indexOf("\n")) >= 0) {
      yield pending.slice(0, at);
      pending = pending.slice(at + 1);
    }
  }
}

interface Case {
  name: string;
  op: UpsampleOp;
  dtype: DType;
  inputSize: number[];
  outputSize: number[];
  alignCorners: boolean;
}

const CASES: Case[] = [
  ["bilinear x2", "bilinear2d", "float32", [8, 64, 64, 64], [128, 128], false],
  ["bilinear x2 ac", "bilinear2d", "float32", [8, 64, 64, 64], [128, 128], true],
  ["bilinear x0.5", "bilinear2d", "float32", [8, 64, 128, 128], [64, 64], false],
  ["bilinear s=1.7", "bilinear2d", "float32", [8, 64, 64, 64], [108, 108], false],
  ["bilinear x2 C=1", "bilinear2d", "float32", [512, 1, 64, 64], [128, 128], false],
  ["bilinear x2", "bilinear2d", "bfloat16", [8, 64, 64, 64], [128, 128], false],
  ["bilinear x0.5", "bilinear2d", "bfloat16", [8, 64, 128, 128], [64, 64], false],
  ["bilinear x2", "bilinear2d", "float16", [8, 64, 64, 64], [128, 128], false],
  ["nearest x2", "nearestExact2d", "float32", [8, 64, 64, 64], [128, 128], false],
  ["nearest s=1.7", "nearestExact2d", "float32", [8, 64, 64, 64], [108, 108], false],
  ["nearest x0.5", "nearestExact2d", "float32", [8, 64, 128, 128], [64, 64], false],
  ["nearest 1d x2", "nearestExact1d", "float32", [8, 64, 4096], [8192], false],
  ["nearest x2", "nearestExact2d", "bfloat16", [8, 64, 64, 64], [128, 128], false],
].map(([name, op, dtype, inputSize, outputSize, alignCorners]) => ({
  name,
  op,
  dtype,
  inputSize,
  outputSize,
  alignCorners,
} as Case));

function tensor(kernels: WasmKernels, dtype: DType, shape: number[]): StorageView<CpuBuffer> {
  const n = shape.reduce((a, b) => a * b, 1);
  const handle = CpuBuffer.inHeap(kernels.heap, dtype, n);
  if (handle === null) throw new Error("the wasm heap is full");
  return { handle, dtype, storageLength: n, shape, strides: contiguousStrides(shape), offset: 0 };
}

function fill(view: StorageView<CpuBuffer>): void {
  const data = view.handle.view();
  for (let i = 0; i < data.length; i++) {
    const v = (Math.random() - 0.5) * 4;
    if (data instanceof Float32Array) data[i] = v;
    else {data[i] = view.dtype === "bfloat16"
        ? 0x3f80 + (i * 7919) % 0x7f
        : 0x3c00 + (i * 7919) % 0x3ff;}
  }
}

/** One call of ours: result allocated, computed, freed (as PyTorch's). */
async function ours(
  kernels: WasmKernels,
  scheduler: KernelScheduler | null,
  c: Case,
  input: StorageView<CpuBuffer>,
): Promise<number> {
  const start = performance.now();
  const out = tensor(kernels, c.dtype, [c.inputSize[0], c.inputSize[1], ...c.outputSize]);
  const call: WasmForwardCall = { ...c, scales: c.outputSize.map(() => 0), input, out };
  if (scheduler === null) {
    if (!launchWasmForward(kernels, call)) throw new Error(`${c.name}: not eligible`);
  } else {
    const ready = prepareWasmForward(kernels, call, 2);
    if (ready === null) throw new Error(`${c.name}: no scratch`);
    await scheduler.run(ready);
  }
  out.handle.release();
  return performance.now() - start;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

const one = new WasmKernels();
const shared = new WasmKernels(2 ** 32, true);
const scheduler = KernelScheduler.create(shared, 2, true)!;
const peers: (Peer | string)[] = [await Peer.start(1), await Peer.start(2)];
const version = peers.find((p): p is Peer => typeof p !== "string")?.version ?? "none";
console.log(
  `forward kernels vs PyTorch ${version} (ratio = PyTorch ms / ours ms, > 1: faster than PyTorch); ` +
    `${ROUNDS} rounds after ${WARMUP}, medians; ${navigator.hardwareConcurrency} CPUs`,
);
console.log(
  "case                       dtype     torch1 ms  ours1 ms  ratio1 | torch2 ms  ours2 ms  ratio2",
);
for (const c of CASES) {
  const cells: string[] = [];
  for (const [k, kernels] of [[0, one], [1, shared]] as const) {
    const input = tensor(kernels, c.dtype, c.inputSize);
    fill(input);
    const peer = peers[k];
    let torchOk = typeof peer !== "string";
    if (typeof peer !== "string") {
      const setup = await peer.request({ cmd: "setup", ...c });
      torchOk = setup.ok === true;
    }
    const t: number[] = [], o: number[] = [], ratios: number[] = [];
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      let tm = NaN, om: number;
      const runTorch = async (): Promise<void> => {
        if (torchOk) tm = (await (peer as Peer).request({ cmd: "run" })).ms as number;
      };
      if (round % 2 === 0) {
        await runTorch();
        om = await ours(kernels, k === 0 ? null : scheduler, c, input);
      } else {
        om = await ours(kernels, k === 0 ? null : scheduler, c, input);
        await runTorch();
      }
      if (round < WARMUP) continue;
      t.push(tm);
      o.push(om);
      ratios.push(tm / om);
    }
    input.handle.release();
    cells.push(
      torchOk
        ? `${median(t).toFixed(2).padStart(9)} ${median(o).toFixed(2).padStart(9)} ${
          median(ratios).toFixed(2).padStart(6)
        }x`
        : `${"refused".padStart(9)} ${median(o).toFixed(2).padStart(9)} ${"-".padStart(7)}`,
    );
  }
  console.log(`${c.name.padEnd(26)} ${c.dtype.padEnd(9)} ${cells.join(" | ")}`);
}
scheduler.close();
for (const peer of peers) if (typeof peer !== "string") await peer.close();
