/**
 * `deno task bench:compare`: PyTorch (CPU, aten ops called directly) against this library's CPU
 * backend (WebAssembly SIMD kernels), each at one thread and at one thread per core (PyTorch) / its
 * default (ours), on the shape suite (the backward ops, then the forward ops: `FORWARD_CASES`,
 * against `_upsample_nearest_exact{1,2}d` / `upsample_bilinear2d`, what `interpolate` dispatches
 * to), each side timed two ways in the same alternating rounds:
 * - compute: both write into a result allocated once (PyTorch's out= overloads, ours with `out`);
 *   the PASS/FAIL lines judge this;
 * - allocating: each call allocates its result (PyTorch's functional op; ours without `out`). The
 *   two ratios differ where PyTorch's result is over 32 MB: glibc serves it with fresh pages on
 *   every call (its largest mmap threshold), and the kernel faults them in, 4 KiB at a time, while
 *   ours reuses the blocks of its WebAssembly memory. Both are printed side by side with the reason.
 * Then scaling per case, effective bandwidth against a memory copy timed in the same rounds, the
 * memory probes and the targets. Without PyTorch it says so, reports ours only, and exits 0.
 *
 *     deno task bench:compare [--only backward|forward] [--rounds N]
 *
 * `--only` measures one of the two suites (the memory probes run with the backward); `--rounds`
 * (default 21) shortens a run on a busy machine.
 *
 * @module
 */

import process from "node:process";
import { Device, type DType, type Tensor } from "../mod.ts";
import { dtypeByteSize } from "../src/tensor/dtype.ts";
import type { CpuBackend } from "../src/cpu/backend.ts";
import { deviceInternals } from "../src/device.ts";
import {
  type BenchCase,
  caseDtypes,
  CASES,
  FORWARD_CASES,
  makeGrad,
  numel,
  resultShape,
  runCase,
  sourceShape,
} from "./cases.ts";
import {
  allocationNotes,
  allocationTable,
  computeTable,
  machineText,
  type Row,
  targets,
} from "./compare_report.ts";
import { COPY_BYTES, copyOnceMs, coreScaling, HostBursts, memoryFloor } from "./cores_probe.ts";
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
  /** Plain C threads timed in the same rounds (large cases). */
  host: HostBursts | null;
}

/**
 * Our side: `calls` calls of op + `await device.synchronize()`; allocating (`out` undefined): each
 * call allocates its result and disposes it (as PyTorch's functional op allocates and frees its
 * own); compute: each writes into `out`.
 */
async function ours(
  device: Device,
  grad: Tensor,
  c: BenchCase,
  calls: number,
  out?: Tensor,
): Promise<number[]> {
  const plans = out !== undefined ? planCounts.get(device) : undefined;
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
  const cpu = out !== undefined ? cpuTimes.get(device) : undefined;
  if (!c.large) {
    const start = performance.now();
    const used0 = process.cpuUsage();
    for (let i = 0; i < calls; i++) await once();
    const used = process.cpuUsage(used0);
    cpu?.push((used.user + used.system) / 1000 / calls);
    return [(performance.now() - start) / calls];
  }
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const start = performance.now();
    const used0 = process.cpuUsage();
    await once();
    times.push(performance.now() - start);
    const used = process.cpuUsage(used0);
    cpu?.push((used.user + used.system) / 1000);
  }
  return times;
}

/**
 * CPU time of the process per compute call (all its threads; tiny cases: per batch / calls), per
 * device, for the current case: the work a call costs whatever the machine's load, so (one-thread
 * CPU ms) / (default CPU ms) says how much extra work the threads add.
 */
const cpuTimes = new Map<Device, number[]>();

/** How many compute calls of the default device's current case ran on how many threads (0: alone). */
const planCounts = new Map<Device, Map<number, number>>();

/** "2 threads" or "calling thread", with the share of calls when the plan varied. */
function planText(counts: ReadonlyMap<number, number>): string {
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const name = (w: number): string => (w === 0 ? "calling thread" : `${w} threads`);
  const sorted = [...counts].sort((a, b) => b[1] - a[1]);
  if (sorted.length === 1) return name(sorted[0][0]);
  return sorted.map(([w, n]) => `${name(w)} ${((100 * n) / total).toFixed(0)}%`).join(", ");
}

/** The sides timed in each round: PyTorch and ours, one thread and default, compute and allocating. */
const SIDES = [
  "torchOneOut",
  "oursOneOut",
  "hostOne",
  "torchOneAlloc",
  "oursOneAlloc",
  "copy",
  "floor",
  "torchAllOut",
  "oursAllOut",
  "hostAll",
  "torchAllAlloc",
  "oursAllAlloc",
] as const;
type Side = typeof SIDES[number];

async function measure(sides: Sides, c: BenchCase, dtype: DType, rounds: number): Promise<Row> {
  using gradOne = makeGrad(sides.one, c, dtype);
  using gradAll = makeGrad(sides.all, c, dtype);
  using outOne = sides.one.zeros(resultShape(c), { dtype });
  using outAll = sides.all.zeros(resultShape(c), { dtype });
  let torchNote = sides.torchOne === null ? "n/a (no PyTorch)" : "";
  for (const peer of [sides.torchOne, sides.torchAll]) {
    const failure = peer === null || torchNote !== "" ? null : await peer.setup(c, dtype);
    if (failure !== null) {
      torchNote = `n/a (${failure.includes("not implemented") ? "no kernel" : failure})`;
    }
  }
  const torchOn = torchNote === "";
  const { warmup, calls } = c.large ? LARGE : TINY;
  const size = dtypeByteSize(dtype);
  const floor = c.large
    ? await memoryFloor(numel(sourceShape(c)) * size, numel(resultShape(c)) * size)
    : null;
  cpuTimes.set(sides.one, []);
  cpuTimes.set(sides.all, []);
  const plans = new Map<number, number>();
  planCounts.set(sides.all, plans);
  const times = Object.fromEntries(SIDES.map((side) => [side, [] as number[]])) as Record<
    Side,
    number[]
  >;
  // The host's bursts do about the work of our one-thread call (its first time), at least 0.5 ms.
  let burstMs = 0;
  for (let round = 0; round < warmup + rounds; round++) {
    // A new order every round, so no side always follows the same one: with the order only
    // reversed, our two-thread calls always came right after a two-thread call (PyTorch's or the C
    // threads'), our one-thread calls after a one-thread one, and PyTorch's two-thread calls after
    // one-thread work: ours alone on the default device ran 0.86x the one-thread device's speed
    // (bilinear x0.5 backward) where both after the same peer ran alike. The copy runs in the
    // same rounds, so its bandwidth sees the same phases of this shared VM.
    const order = shuffled(SIDES, round);
    for (const side of order) {
      let t: number[] = [];
      const torch = side.startsWith("torchOne") ? sides.torchOne : sides.torchAll;
      const out = side.endsWith("Out");
      if (side.startsWith("torch")) {
        if (torchOn) t = await torch!.run(calls, !c.large, out);
      } else if (side.startsWith("host")) {
        if (c.large && sides.host !== null && burstMs > 0) {
          t = [
            await sides.host.burst(side === "hostOne" ? 1 : navigator.hardwareConcurrency, burstMs),
          ];
        }
      } else if (side.startsWith("oursOne")) {
        t = await ours(sides.one, gradOne, c, calls, out ? outOne : undefined);
        if (burstMs === 0 && out) burstMs = Math.max(0.5, t[0]);
      } else if (side.startsWith("oursAll")) {
        t = await ours(sides.all, gradAll, c, calls, out ? outAll : undefined);
      } else if (side === "floor") {
        if (floor !== null) t = [floor()];
      } else if (c.large) t = [copyOnceMs()];
      if (round >= warmup) times[side].push(...t);
      else {
        cpuTimes.forEach((list) => (list.length = 0));
        plans.clear();
      }
    }
  }
  const med = (side: Side): number | null => (times[side].length > 0 ? median(times[side]) : null);
  const paired = (a: Side, b: Side): number | null =>
    times[a].length > 0 && times[b].length > 0 ? pairedRatio(times[a], times[b]) : null;
  return {
    c,
    dtype,
    torchNote,
    ms: {
      torchOneOut: med("torchOneOut"),
      torchOneAlloc: med("torchOneAlloc"),
      torchAllOut: med("torchAllOut"),
      torchAllAlloc: med("torchAllAlloc"),
      oursOneOut: med("oursOneOut")!,
      oursOneAlloc: med("oursOneAlloc")!,
      oursAllOut: med("oursAllOut")!,
      oursAllAlloc: med("oursAllAlloc")!,
    },
    oursOneCpuMs: median(cpuTimes.get(sides.one)!),
    oursAllCpuMs: median(cpuTimes.get(sides.all)!),
    copyGBs: c.large ? (2 * COPY_BYTES) / (median(times.copy) * 1e-3) / 1e9 : null,
    floorMs: med("floor"),
    plan: planText(plans),
    paired: {
      computeOne: paired("torchOneOut", "oursOneOut"),
      computeAll: paired("torchAllOut", "oursAllOut"),
      allocOne: paired("torchOneAlloc", "oursOneAlloc"),
      allocAll: paired("torchAllAlloc", "oursAllAlloc"),
      oursScaling: paired("oursOneOut", "oursAllOut")!,
      oursAllocScaling: paired("oursOneAlloc", "oursAllAlloc")!,
      torchScaling: paired("torchOneOut", "torchAllOut"),
      hostScaling: paired("hostOne", "hostAll"),
      cpuScaling: pairedRatio(cpuTimes.get(sides.one)!, cpuTimes.get(sides.all)!),
    },
  };
}

/** `items` in an order drawn from `seed` (Fisher-Yates on a 32-bit LCG): the same every run. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = (seed * 2654435761 + 12345) >>> 0;
  for (let i = out.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** The median of a[i] / b[i]. */
function pairedRatio(a: readonly number[], b: readonly number[]): number {
  return median(a.map((x, i) => x / b[i]));
}

/** The value of `--name value` or `--name=value`, if given. */
function flag(name: string): string | undefined {
  const at = Deno.args.indexOf(`--${name}`);
  if (at >= 0) return Deno.args[at + 1];
  return Deno.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

/** Which suites to measure: `--only backward` or `--only forward` (default both). */
function suites(): { backward: boolean; forward: boolean } {
  const only = flag("only");
  if (only === undefined) return { backward: true, forward: true };
  if (only !== "backward" && only !== "forward") {
    throw new TypeError(`--only must be "backward" or "forward", got ${JSON.stringify(only)}`);
  }
  return { backward: only === "backward", forward: only === "forward" };
}

async function main(): Promise<void> {
  const started = performance.now();
  const which = suites();
  const rounds = Number(flag("rounds") ?? LARGE.rounds);
  if (!Number.isInteger(rounds) || rounds < 1) {
    throw new TypeError(`--rounds must be a positive integer, got ${flag("rounds")}`);
  }
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
  // Before the cases: what N threads of plain C gain here.
  const machine = await coreScaling(threads);
  console.log(machineText(machine));
  const sides: Sides = {
    one: Device.open({ backend: "cpu", threads: 1 }),
    all: Device.open({ backend: "cpu" }),
    torchOne: one.peer,
    torchAll: all.peer,
    host: HostBursts.start(threads),
  };
  const rows: Row[] = [];
  const cases = [...(which.backward ? CASES : []), ...(which.forward ? FORWARD_CASES : [])];
  try {
    for (const c of cases) {
      for (const dtype of caseDtypes(c)) {
        const row = await measure(sides, c, dtype, rounds);
        rows.push(row);
        console.error(
          `  measured ${c.id} ${dtype}: ours ${formatMs(row.ms.oursOneOut)} (1t), ` +
            `${formatMs(row.ms.oursAllOut)} (${threads}t) (ms unless µs, into out)`,
        );
      }
    }
  } finally {
    await one.peer?.close();
    await all.peer?.close();
    await sides.host?.close();
    sides.one.close();
    sides.all.close();
  }
  // The copy was timed in every round of every large case; its range shows how much the VM moved.
  const copies = rows.flatMap((r) => (r.copyGBs === null ? [] : [r.copyGBs]));
  console.log(
    `\nmemory copy (Float32Array.prototype.set, 128 MiB, read + write counted, one thread), ` +
      `median per case: ${Math.min(...copies).toFixed(2)}-${
        Math.max(...copies).toFixed(2)
      } GB/s; ` +
      `at ${threads} threads: x ${machine?.copy.toFixed(2) ?? "n/a"} (bench/cores.c)\n`,
  );
  const backwardRows = rows.filter((r) => !r.c.forward);
  const forwardRows = rows.filter((r) => r.c.forward);
  for (
    const [name, part] of [["Backward ops", backwardRows], ["Forward ops", forwardRows]] as const
  ) {
    if (part.length === 0) continue;
    console.log(
      `\n${name}${
        name === "Forward ops" ? FORWARD_NOTE : ""
      }, compute (both sides write into a preallocated result):\n`,
    );
    console.log(computeTable(part, threads, machine));
    console.log(
      `\n${name}, compute against allocating (each side allocates its result per call):\n`,
    );
    console.log(allocationTable(part, threads));
    for (const line of allocationNotes(part)) console.log(line);
  }
  console.log(
    `\nms: median of ${rounds} rounds of one call per side, alternating (a new order every ` +
      `round, the same every run), after ${LARGE.warmup} warm-up rounds (tiny: per-call mean of ${TINY.calls} ` +
      `calls per round); compute: PyTorch's out= overload (torch.ops.aten.<op>.out / ` +
      `<op>_backward.grad_input) and ours with \`out\`, both into a result allocated once; ` +
      `allocating: PyTorch's functional op and ours without \`out\` (the result freed per call); ` +
      `1t: one thread each; ${threads}t: PyTorch at ${threads} threads, ours at its default ` +
      `(${threads} threads); ratios: PyTorch/ours (> 1: ours faster) and scaling (1t / ${threads}t), ` +
      `each the median of the per-round ratios; GB/s: (operand + result bytes) / time; % of copy: ` +
      `against the copy timed in the same rounds (one thread), at ${threads}t times the copy's ` +
      `own scaling (bench/cores.c); CPU ms: process CPU time per compute call (all threads).`,
  );
  const memory = which.backward ? await memoryReport() : null;
  if (memory !== null) console.log(`\n${memory.lines.join("\n")}\n`);
  console.log();
  for (const line of targets(rows, threads, machine)) console.log(line);
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
  console.log(
    `total time ${((performance.now() - started) / 1000).toFixed(0)} s; load average after: ` +
      `${await loadAverage()}`,
  );
}

/** What the forward rows leave out. */
const FORWARD_NOTE = ` (PyTorch: aten _upsample_nearest_exact{1,2}d / upsample_bilinear2d, ` +
  `explicit sizes and scales; 1.13 has no float16 forward kernel and no bfloat16 nearest-exact, ` +
  `so those dtypes are not measured)`;

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
