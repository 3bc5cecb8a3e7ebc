/**
 * `deno task bench:compare`: PyTorch (CPU, aten backward ops called directly) against this
 * library's CPU backend (WebAssembly SIMD kernels), each at one thread and at one thread per core
 * (PyTorch) / its default (ours), on the shape suite, alternating calls (large cases) or call
 * batches (tiny), medians after warm-up rounds; scaling per case; then effective bandwidth against
 * a memory copy measured in the same run, and the memory probes. Then the forward ops
 * (`FORWARD_CASES`: `upsampleNearestExact{1,2}d`, `upsampleBilinear2d` against PyTorch's
 * `_upsample_nearest_exact{1,2}d` / `upsample_bilinear2d`, the ops `interpolate` dispatches to),
 * measured the same way in the same run, in a table of their own. Without PyTorch it says so,
 * reports ours only, and exits 0.
 *
 *     deno task bench:compare [--only backward|forward]
 *
 * `--only` measures one of the two suites (the memory probes run with the backward).
 *
 * @module
 */

import process from "node:process";
import { Device, type DType, type Tensor } from "../mod.ts";
import type { CpuBackend } from "../src/cpu/backend.ts";
import { deviceInternals } from "../src/device.ts";
import {
  type BenchCase,
  caseDtypes,
  CASES,
  FORWARD_CASES,
  makeGrad,
  resultShape,
  runCase,
} from "./cases.ts";
import {
  forwardTargets,
  machineText,
  type Row,
  summaryTable,
  table,
  targets,
} from "./compare_report.ts";
import { coreScaling } from "./cores_probe.ts";
import { memoryReport } from "./memory_report.ts";
import { formatMs, median } from "./stats.ts";
import { TorchPeer } from "./torch_peer.ts";

/**
 * Large cases: one call per side per round, so that the slow phases of this shared VM (they last
 * ~10 calls) fall on both sides; warm-up rounds first (V8 tiers the wasm kernels up meanwhile).
 */
const LARGE = { rounds: 21, warmup: 3, calls: 1 } as const;
/** Tiny cases: one batch of this many calls per round, reported as the mean per call. */
const TINY = { rounds: 21, warmup: 3, calls: 2_000 } as const;

/**
 * "No growth" over the 10 000 tiny calls: at most ~100 bytes per call of native memory (RSS outside
 * V8's reserved heap, which only says how big V8 keeps its young generation) and ~6 of live JS heap.
 */
const GROWTH_NATIVE_LIMIT = 2 ** 20;
const GROWTH_HEAP_LIMIT = 64 * 1024;

/** The two sides at one thread and at their default (library) / one per core (PyTorch). */
interface Sides {
  one: Device;
  all: Device;
  torchOne: TorchPeer | null;
  torchAll: TorchPeer | null;
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
  const plans = out === undefined ? planCounts.get(device) : undefined;
  const backend = plans ? (deviceInternals(device).backend() as unknown as CpuBackend) : null;
  const once = async (): Promise<void> => {
    const result = runCase(grad, c, out);
    if (backend !== null) {
      // Small calls never reach the planner: the calling thread.
      const workers = c.large ? backend.lastWorkers : 0;
      plans!.set(workers, (plans!.get(workers) ?? 0) + 1);
    }
    await device.synchronize();
    if (result !== out) result.dispose();
  };
  if (!c.large) {
    const start = performance.now();
    const cpu = process.cpuUsage();
    for (let i = 0; i < calls; i++) await once();
    const used = process.cpuUsage(cpu);
    cpuTimes.get(device)?.push((used.user + used.system) / 1000 / calls);
    return [(performance.now() - start) / calls];
  }
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const start = performance.now();
    const cpu = process.cpuUsage();
    await once();
    times.push(performance.now() - start);
    const used = process.cpuUsage(cpu);
    cpuTimes.get(device)?.push((used.user + used.system) / 1000);
  }
  return times;
}

/**
 * CPU time of the process per call (all its threads; tiny cases: per batch / calls), per device,
 * for the current case: the work a call costs whatever the machine's load, so (one-thread CPU ms) /
 * (default CPU ms) says how much extra work the threads add, which bounds their speed-up on idle
 * cores, and compares tiny calls where wall times are noisy.
 */
const cpuTimes = new Map<Device, number[]>();

/** How many calls of the default device's current case ran on how many workers (0: here). */
const planCounts = new Map<Device, Map<number, number>>();

/** "2 workers" or "calling thread", with the share of calls when the plan varied. */
function planText(counts: ReadonlyMap<number, number>): string {
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const name = (w: number): string => (w === 0 ? "calling thread" : `${w} workers`);
  const sorted = [...counts].sort((a, b) => b[1] - a[1]);
  if (sorted.length === 1) return name(sorted[0][0]);
  return sorted.map(([w, n]) => `${name(w)} ${((100 * n) / total).toFixed(0)}%`).join(", ");
}

async function measure(sides: Sides, c: BenchCase, dtype: DType): Promise<Row> {
  using gradOne = makeGrad(sides.one, c, dtype);
  using gradAll = makeGrad(sides.all, c, dtype);
  using out = sides.all.zeros(resultShape(c), { dtype });
  let torchNote = sides.torchOne === null ? "n/a (no PyTorch)" : "";
  for (const peer of [sides.torchOne, sides.torchAll]) {
    const failure = peer === null || torchNote !== "" ? null : await peer.setup(c, dtype);
    if (failure !== null) {
      torchNote = `n/a (${failure.includes("not implemented") ? "no kernel" : failure})`;
    }
  }
  const torchOn = torchNote === "";
  const { rounds, warmup, calls } = c.large ? LARGE : TINY;
  cpuTimes.set(sides.one, []);
  cpuTimes.set(sides.all, []);
  const plans = new Map<number, number>();
  planCounts.set(sides.all, plans);
  const sideNames = ["torchOne", "oursOne", "copy", "torchAll", "oursAll", "oursOut"] as const;
  const times: Record<typeof sideNames[number], number[]> = {
    torchOne: [],
    torchAll: [],
    oursOne: [],
    oursAll: [],
    oursOut: [],
    copy: [],
  };
  for (let round = 0; round < warmup + rounds; round++) {
    // Alternate the order, so no side always runs on a cache another just filled; the copy runs in
    // the same rounds, so its bandwidth sees the same phases of this shared VM.
    const order = round % 2 === 0 ? sideNames : [...sideNames].reverse();
    for (const side of order) {
      let t: number[] = [];
      if (side === "torchOne" && torchOn) t = await sides.torchOne!.run(calls, !c.large);
      else if (side === "torchAll" && torchOn) t = await sides.torchAll!.run(calls, !c.large);
      else if (side === "oursOne") t = await ours(sides.one, gradOne, c, calls);
      else if (side === "oursAll") t = await ours(sides.all, gradAll, c, calls);
      else if (side === "oursOut") t = await ours(sides.all, gradAll, c, calls, out);
      else if (side === "copy" && c.large) t = [copyOnceMs()];
      if (round >= warmup) times[side].push(...t);
      else {
        cpuTimes.forEach((list) => (list.length = 0));
        plans.clear();
      }
    }
  }
  const cpuOne = cpuTimes.get(sides.one)!, cpuAll = cpuTimes.get(sides.all)!;
  return {
    c,
    dtype,
    torchOneMs: torchOn ? median(times.torchOne) : null,
    torchAllMs: torchOn ? median(times.torchAll) : null,
    torchNote,
    oursOneMs: median(times.oursOne),
    oursAllMs: median(times.oursAll),
    oursOutMs: median(times.oursOut),
    oursOneCpuMs: median(cpuOne),
    oursAllCpuMs: median(cpuAll),
    copyGBs: c.large ? (2 * COPY_BYTES) / (median(times.copy) * 1e-3) / 1e9 : null,
    plan: planText(plans),
    paired: {
      torchOverOursOne: torchOn ? pairedRatio(times.torchOne, times.oursOne) : null,
      torchOverOursAll: torchOn ? pairedRatio(times.torchAll, times.oursAll) : null,
      oursScaling: pairedRatio(times.oursOne, times.oursAll),
      torchScaling: torchOn ? pairedRatio(times.torchOne, times.torchAll) : null,
    },
  };
}

/** The median of a[i] / b[i]. */
function pairedRatio(a: readonly number[], b: readonly number[]): number {
  return median(a.map((x, i) => x / b[i]));
}

/** Which suites to measure: `--only backward` or `--only forward` (default both). */
function suites(): { backward: boolean; forward: boolean } {
  const at = Deno.args.indexOf("--only");
  const only = at >= 0 ? Deno.args[at + 1] : Deno.args.find((a) => a.startsWith("--only="))
    ?.slice(7);
  if (only === undefined) return { backward: true, forward: true };
  if (only !== "backward" && only !== "forward") {
    throw new TypeError(`--only must be "backward" or "forward", got ${JSON.stringify(only)}`);
  }
  return { backward: only === "backward", forward: only === "forward" };
}

async function main(): Promise<void> {
  const started = performance.now();
  const which = suites();
  const threads = navigator.hardwareConcurrency;
  const one = await TorchPeer.start(1);
  // One thread per core is upstream PyTorch's default (Debian's build starts at one thread).
  const all = one.peer === null ? one : await TorchPeer.start(threads);
  console.log(
    `machine: ${one.cpu}, ${threads} CPUs; Deno ${Deno.version.deno} (V8 ${Deno.version.v8}); ` +
      `PyTorch ${one.peer ? `${one.peer.version} and ${all.peer?.version}` : "absent"}; ` +
      `load average before: ${await loadAverage()}`,
  );
  if (one.peer === null) {
    console.log(
      `PyTorch not available (${one.reason}): reporting this library only (PyTorch n/a).`,
    );
  }
  // Before the cases, on an idle machine: what N threads of plain C gain here.
  const machine = await coreScaling(threads);
  console.log(machineText(machine));
  const sides: Sides = {
    one: Device.open({ backend: "cpu", threads: 1 }),
    all: Device.open({ backend: "cpu" }),
    torchOne: one.peer,
    torchAll: all.peer,
  };
  const rows: Row[] = [];
  const cases = [...(which.backward ? CASES : []), ...(which.forward ? FORWARD_CASES : [])];
  try {
    for (const c of cases) {
      for (const dtype of caseDtypes(c)) {
        const row = await measure(sides, c, dtype);
        rows.push(row);
        console.error(
          `  measured ${c.id} ${dtype}: ours ${formatMs(row.oursOneMs)} (1t), ` +
            `${formatMs(row.oursAllMs)} (${threads}t) (ms unless µs)`,
        );
      }
    }
  } finally {
    await one.peer?.close();
    await all.peer?.close();
    sides.one.close();
    sides.all.close();
  }
  // The copy was timed in every round of every large case; its range shows how much the VM moved.
  const copies = rows.flatMap((r) => (r.copyGBs === null ? [] : [r.copyGBs]));
  console.log(
    `\nmemory copy (Float32Array.prototype.set, 128 MiB, read + write counted), median per case: ` +
      `${Math.min(...copies).toFixed(2)}-${Math.max(...copies).toFixed(2)} GB/s\n`,
  );
  const backwardRows = rows.filter((r) => !r.c.forward);
  const forwardRows = rows.filter((r) => r.c.forward);
  if (backwardRows.length > 0) {
    console.log(table(backwardRows, threads));
    console.log();
    console.log(summaryTable(backwardRows, threads));
  }
  if (forwardRows.length > 0) {
    console.log(
      `\nForward ops (PyTorch: aten _upsample_nearest_exact{1,2}d / upsample_bilinear2d, ` +
        `explicit sizes and scales; 1.13 has no float16 forward kernel and no bfloat16 ` +
        `nearest-exact, so those dtypes are not measured):\n`,
    );
    console.log(table(forwardRows, threads));
    console.log();
    console.log(summaryTable(forwardRows, threads));
  }
  console.log(
    `\nms: median of ${LARGE.rounds} rounds of one call per side, alternating, after ` +
      `${LARGE.warmup} warm-up rounds (tiny: per-call mean of ${TINY.calls} calls per round, ` +
      `${TINY.rounds} rounds); the result is allocated and freed ` +
      `per call on both sides, except "out=" (writes into a preallocated tensor); 1t: one ` +
      `thread each; ${threads}t: PyTorch at ${threads} threads, ours at its default ` +
      `(${threads} threads); ratios (PyTorch/ours, scaling = 1t / ${threads}t): the median of the ` +
      `per-round ratios of the two sides' times; CPU ms: process CPU time per call ` +
      `(all threads; includes the out= calls at ${threads}t), the work whatever the load; GB/s: (gradOutput + gradInput ` +
      `bytes; forward: input + output bytes) / "ours ${threads}t ms"; % of copy: against the ` +
      `copy timed in the same rounds.`,
  );
  const memory = which.backward ? await memoryReport() : null;
  if (memory !== null) console.log(`\n${memory.lines.join("\n")}\n`);
  if (backwardRows.length > 0) {
    for (const line of targets(backwardRows, threads, machine)) console.log(line);
  }
  for (const [backend, ratio] of Object.entries(memory?.peakRatio ?? {})) {
    console.log(
      `peak RSS <= 1.5x of data + baseline (${backend}): ${ratio <= 1.5 ? "PASS" : "FAIL"}`,
    );
  }
  for (const [backend, g] of Object.entries(memory?.growth ?? {})) {
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
  if (forwardRows.length > 0) {
    console.log();
    for (const line of forwardTargets(forwardRows, threads)) console.log(line);
  }
  console.log(
    `total time ${((performance.now() - started) / 1000).toFixed(0)} s; load average after: ` +
      `${await loadAverage()}`,
  );
}

/** The 1, 5 and 15 minute load averages (`/proc/loadavg`, read by a child: Deno needs --allow-all). */
async function loadAverage(): Promise<string> {
  try {
    const output = await new Deno.Command("cat", { args: ["/proc/loadavg"], stdout: "piped" })
      .output();
    return new TextDecoder().decode(output.stdout).split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}

if (import.meta.main) await main();
