/**
 * `deno task bench:compare`: PyTorch (CPU, one thread, aten backward ops called directly) against this
 * library's CPU backend (single-threaded WebAssembly SIMD kernels) on the shape suite, alternating
 * calls (large cases) or call batches (tiny), medians after warm-up rounds; then effective bandwidth
 * against a memory copy measured in the same run, and the memory probes. Without PyTorch it says so,
 * reports ours only, and exits 0.
 *
 * @module
 */

import { Device, type DType, type Tensor } from "../mod.ts";
import {
  BENCH_DTYPES,
  type BenchCase,
  bytesMoved,
  CASES,
  makeGrad,
  runCase,
  shapeText,
} from "./cases.ts";
import { memoryReport } from "./memory_report.ts";
import { formatMs, markdownTable, median } from "./stats.ts";
import { TorchPeer } from "./torch_peer.ts";

/**
 * Large cases: one call per side per round, so that the slow phases of this shared VM (they last
 * ~10 calls) fall on both sides; warm-up rounds first (V8 tiers the wasm kernels up meanwhile).
 */
const LARGE = { rounds: 21, warmup: 3, calls: 1 } as const;
/** Tiny cases: one batch of this many calls per round, reported as the mean per call. */
const TINY = { rounds: 7, warmup: 1, calls: 20_000 } as const;

/**
 * "No growth" over the 10 000 tiny calls: at most ~100 bytes per call of native memory (RSS outside
 * V8's reserved heap, which only says how big V8 keeps its young generation) and ~6 of live JS heap.
 */
const GROWTH_NATIVE_LIMIT = 2 ** 20;
const GROWTH_HEAP_LIMIT = 64 * 1024;

/** One row of the comparison. */
interface Row {
  c: BenchCase;
  dtype: DType;
  torchMs: number | null;
  torchNote: string;
  oursMs: number;
  /** Ours writing into a preallocated `out` (no result allocation). */
  oursOutMs: number;
  /** Large cases: the 128 MiB copy's bandwidth, measured in the same alternating rounds. */
  copyGBs: number | null;
}

/** A 128 MiB copy (read + write counted), timed once per round of each large case. */
const COPY_BYTES = 128 * 2 ** 20;
let copyBuffers: { src: Float32Array; dst: Float32Array } | null = null;

function copyOnceMs(): number {
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
 * Our side: `calls` calls of op + `await device.synchronize()`, each allocating its result and
 * disposing it (as PyTorch allocates and frees its own); with `out`, writing into it instead.
 */
async function ours(
  device: Device,
  grad: Tensor,
  c: BenchCase,
  calls: number,
  out?: Tensor,
): Promise<number[]> {
  const once = async (): Promise<void> => {
    const result = runCase(grad, c, out);
    await device.synchronize();
    if (result !== out) result.dispose();
  };
  if (!c.large) {
    const start = performance.now();
    for (let i = 0; i < calls; i++) await once();
    return [(performance.now() - start) / calls];
  }
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const start = performance.now();
    await once();
    times.push(performance.now() - start);
  }
  return times;
}

async function measure(
  device: Device,
  peer: TorchPeer | null,
  c: BenchCase,
  dtype: DType,
): Promise<Row> {
  using grad = makeGrad(device, c, dtype);
  using out = device.zeros(c.inputSize, { dtype });
  let torchNote = peer === null ? "n/a (no PyTorch)" : "";
  if (peer !== null) {
    const failure = await peer.setup(c, dtype);
    if (failure !== null) {
      torchNote = `n/a (${failure.includes("not implemented") ? "no kernel" : failure})`;
    }
  }
  const torchOn = peer !== null && torchNote === "";
  const { rounds, warmup, calls } = c.large ? LARGE : TINY;
  const times = {
    torch: [] as number[],
    ours: [] as number[],
    oursOut: [] as number[],
    copy: [] as number[],
  };
  for (let round = 0; round < warmup + rounds; round++) {
    // Alternate which side goes first, so neither always runs on a cache the other just filled;
    // the copy runs in the same rounds, so its bandwidth sees the same phases of this shared VM.
    const order = round % 2 === 0
      ? ["torch", "ours", "copy", "oursOut"] as const
      : ["oursOut", "copy", "ours", "torch"] as const;
    for (const side of order) {
      let t: number[] = [];
      if (side === "torch" && torchOn && peer !== null) t = await peer.run(calls, !c.large);
      else if (side === "ours") t = await ours(device, grad, c, calls);
      else if (side === "oursOut") t = await ours(device, grad, c, calls, out);
      else if (side === "copy" && c.large) t = [copyOnceMs()];
      if (round >= warmup) times[side].push(...t);
    }
  }
  return {
    c,
    dtype,
    torchMs: torchOn ? median(times.torch) : null,
    torchNote,
    oursMs: median(times.ours),
    oursOutMs: median(times.oursOut),
    copyGBs: c.large ? (2 * COPY_BYTES) / (median(times.copy) * 1e-3) / 1e9 : null,
  };
}

function table(rows: readonly Row[]): string {
  const header = [
    "case",
    "gradOutput -> gradInput",
    "dtype",
    "PyTorch ms",
    "ours ms",
    "PyTorch/ours",
    "ours GB/s",
    "% of copy",
    "ours out= ms",
  ];
  const body = rows.map((r) => {
    const gbs = bytesMoved(r.c, r.dtype) / (r.oursMs * 1e-3) / 1e9;
    return [
      r.c.label,
      shapeText(r.c),
      r.dtype,
      r.torchMs === null ? r.torchNote : formatMs(r.torchMs),
      formatMs(r.oursMs),
      r.torchMs === null ? "n/a" : `${(r.torchMs / r.oursMs).toFixed(2)}x`,
      r.c.large ? gbs.toFixed(2) : "-",
      r.copyGBs !== null ? `${((100 * gbs) / r.copyGBs).toFixed(0)}%` : "-",
      formatMs(r.oursOutMs),
    ];
  });
  return markdownTable([header, ...body]);
}

function targets(rows: readonly Row[]): string[] {
  const lines: string[] = [];
  for (const dtype of ["float32", "bfloat16"] as const) {
    const compared = rows.filter((r) => r.dtype === dtype && r.torchMs !== null);
    const slow = compared.filter((r) => r.torchMs! / r.oursMs < 2);
    lines.push(
      `${dtype} >= 2.0x faster than PyTorch on every shape: ${
        compared.length === 0 ? "n/a" : slow.length === 0 ? "PASS" : "FAIL"
      }` + (slow.length > 0
        ? ` (below: ${
          slow.map((r) => `${r.c.id} ${(r.torchMs! / r.oursMs).toFixed(2)}x`).join(", ")
        })`
        : ""),
    );
  }
  // Per dtype: the float32 copy sets the memory limit; 16-bit rows move half the bytes per element.
  for (const dtype of BENCH_DTYPES) {
    const nearest = rows.filter((r) => r.c.large && r.c.op !== "bilinear2d" && r.dtype === dtype);
    const low = nearest.filter((r) =>
      bytesMoved(r.c, r.dtype) / (r.oursMs * 1e-3) / 1e9 < (r.copyGBs ?? 0) / 2
    );
    lines.push(
      `nearest-exact ${dtype} >= 50% of copy bandwidth on large shapes: ${
        low.length === 0 ? "PASS" : "FAIL"
      }` + (low.length > 0 ? ` (below: ${low.map((r) => r.c.id).join(", ")})` : ""),
    );
  }
  return lines;
}

async function main(): Promise<void> {
  const started = performance.now();
  const { peer, reason, cpu } = await TorchPeer.start();
  console.log(
    `machine: ${cpu}, ${navigator.hardwareConcurrency} CPUs; Deno ${Deno.version.deno} ` +
      `(V8 ${Deno.version.v8}); PyTorch ${peer ? peer.version : "absent"}`,
  );
  if (peer === null) {
    console.log(`PyTorch not available (${reason}): reporting this library only (PyTorch n/a).`);
  }
  const device = Device.open({ backend: "cpu" });
  const rows: Row[] = [];
  try {
    for (const c of CASES) {
      for (const dtype of BENCH_DTYPES) {
        const row = await measure(device, peer, c, dtype);
        rows.push(row);
        console.error(`  measured ${c.id} ${dtype}: ours ${formatMs(row.oursMs)} (ms unless µs)`);
      }
    }
  } finally {
    await peer?.close();
    device.close();
  }
  // The copy was timed in every round of every large case; its range shows how much the VM moved.
  const copies = rows.flatMap((r) => (r.copyGBs === null ? [] : [r.copyGBs]));
  console.log(
    `\nmemory copy (Float32Array.prototype.set, 128 MiB, read + write counted), median per case: ` +
      `${Math.min(...copies).toFixed(2)}-${Math.max(...copies).toFixed(2)} GB/s\n`,
  );
  console.log(table(rows));
  console.log(
    `\nms: median of ${LARGE.rounds} rounds of one call per side, alternating, after ` +
      `${LARGE.warmup} warm-up rounds (tiny: per-call mean of ${TINY.calls} calls per round, ` +
      `${TINY.rounds} rounds); the result is allocated and freed ` +
      `per call on both sides, except "ours out=" (writes into a preallocated tensor); ` +
      `GB/s: (gradOutput + gradInput bytes) / "ours ms"; % of copy: against the copy timed in ` +
      `the same rounds.`,
  );
  const memory = await memoryReport();
  console.log(`\n${memory.lines.join("\n")}\n`);
  for (const line of targets(rows)) console.log(line);
  for (const [backend, ratio] of Object.entries(memory.peakRatio)) {
    console.log(
      `peak RSS <= 1.5x of data + baseline (${backend}): ${ratio <= 1.5 ? "PASS" : "FAIL"}`,
    );
  }
  for (const [backend, g] of Object.entries(memory.growth)) {
    if (backend.startsWith("control")) continue;
    const ok = g.outsideHeap <= GROWTH_NATIVE_LIMIT && g.heap <= GROWTH_HEAP_LIMIT;
    console.log(
      `no growth over 10 000 calls (${backend}; outside the V8 heap <= 1 MiB, heapUsed <= 64 KiB): ` +
        `${ok ? "PASS" : "FAIL"} (RSS ${(g.rss / 1024).toFixed(0)} KiB, of which outside the V8 ` +
        `heap ${(g.outsideHeap / 1024).toFixed(0)} KiB; heapUsed ${
          (g.heap / 1024).toFixed(1)
        } KiB)`,
    );
  }
  console.log(`total time ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

if (import.meta.main) await main();
