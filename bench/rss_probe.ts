/**
 * Memory probe, run by `compare.ts` in a fresh Deno process per measurement so nothing else is resident:
 *
 *     deno run --allow-ffi --allow-env --allow-read --v8-flags=--expose-gc bench/rss_probe.ts \
 *       peak|growth cpu|npu|control
 *
 * `peak`: resident set (`Deno.memoryUsage().rss`) while the largest float32 case runs, against the
 * baseline plus the bytes of `gradOutput` + `gradInput`, on the first call and over 20 calls in a row
 * (op, `await device.synchronize()`, `dispose()`, as a training loop would). `growth`: resident set
 * and V8 heap over 10 000 tiny calls after 40 000 warm-up calls (RSS climbs a few MiB over the first
 * ~30 000 calls while V8 tiers up code and sizes its heap). `growth control` runs the same loop
 * without the library (a small typed array and option objects per iteration): Deno's own RSS drift.
 * Prints one JSON line.
 *
 * @module
 */

import type { Device, Tensor } from "../mod.ts";
import { Device as DeviceClass } from "../mod.ts";
import { bytesMoved, CASES, makeGrad, runCase } from "./cases.ts";
import { emuCounters, openEmulatedNpu } from "./emu.ts";

/** Result of `peak`. */
export interface PeakReport {
  kind: "peak";
  backend: string;
  caseId: string;
  /** RSS after opening the device and warming up, before any data (bytes). */
  baseline: number;
  /** Bytes of gradOutput + gradInput. */
  data: number;
  /** RSS after the first call (before its dispose). */
  first: number;
  /** Highest RSS over `calls` calls in a row (sampled after each call, before dispose). */
  peak: number;
  /** Calls in the loop. */
  calls: number;
  /** RSS right after `device.tensor(values)` returned (its temporaries still alive). */
  afterCreate: number;
  /** Process peak from getrusage (includes tensor creation), bytes; 0 when unavailable. */
  maxrss: number;
}

/** Result of `growth`. */
export interface GrowthReport {
  kind: "growth";
  backend: string;
  calls: number;
  /** RSS (after a GC) at the start and after every 2 000 calls, bytes. */
  samples: number[];
  /** V8 heap in use at the same points, bytes. */
  heap: number[];
  /** V8 heap reserved at the same points, bytes. */
  total: number[];
  /** The loop goes on to this many calls in all... */
  extendedCalls: number;
  /** ...after which RSS is this (bytes): a leak would show here ten times larger... */
  extendedRss: number;
  /** ...and V8's reserved heap this. */
  extendedTotal: number;
  /** Emulated NPU live allocations and aclnn objects before and after, when on the NPU. */
  live?: { before: string; after: string };
}

const gc = (globalThis as { gc?: () => void }).gc;

// V8 frees the backing stores of collected ArrayBuffers a little after the GC: collect, let the
// event loop turn, collect again.
async function settledRss(): Promise<number> {
  gc?.();
  await new Promise((resolve) => setTimeout(resolve, 50));
  gc?.();
  return Deno.memoryUsage().rss;
}

function maxRss(): number {
  try {
    const libc = Deno.dlopen("libc.so.6", {
      getrusage: { parameters: ["i32", "buffer"], result: "i32" },
    });
    const usage = new BigInt64Array(18); // struct rusage; ru_maxrss (KiB) follows two timevals
    const status = libc.symbols.getrusage(0, usage);
    libc.close();
    return status === 0 ? Number(usage[4]) * 1024 : 0;
  } catch {
    return 0;
  }
}

const EXTENDED_CALLS = 100_000;
const TINY = CASES.find((c) => c.id === "tiny")!;

async function warm(device: Device, calls: number): Promise<void> {
  using grad = makeGrad(device, TINY, "float32");
  const step = libraryStep(device, grad);
  for (let i = 0; i < calls; i++) await step();
}

async function peak(device: Device, backend: string): Promise<PeakReport> {
  const largest = CASES.reduce((a, b) =>
    bytesMoved(b, "float32") > bytesMoved(a, "float32") ? b : a
  );
  await warm(device, 200);
  const baseline = await settledRss();
  const grad = makeGrad(device, largest, "float32");
  const afterCreate = Deno.memoryUsage().rss;
  await settledRss();
  const calls = 20;
  let top = 0;
  let first = 0;
  for (let i = 0; i < calls; i++) {
    const result = runCase(grad, largest);
    await device.synchronize();
    const rss = Deno.memoryUsage().rss;
    if (i === 0) first = rss;
    top = Math.max(top, rss);
    result.dispose();
  }
  grad.dispose();
  return {
    kind: "peak",
    backend,
    caseId: largest.id,
    baseline,
    data: bytesMoved(largest, "float32"),
    first,
    peak: top,
    calls,
    afterCreate,
    maxrss: maxRss(),
  };
}

/** One iteration of the growth loop. */
type Step = () => Promise<void>;

function libraryStep(device: Device, grad: Tensor): Step {
  return async (): Promise<void> => {
    const result = runCase(grad, TINY);
    await device.synchronize();
    result.dispose();
  };
}

/** The control: what a tiny call does without the library (a small typed array, option objects). */
function controlStep(): Step {
  let sink = 0;
  return async (): Promise<void> => {
    const result = new Float32Array(1);
    const options = { outputSize: [2, 2], inputSize: [1, 1, 1, 1], scales: [0, 0] };
    result[0] = options.outputSize[0] + options.scales.length;
    sink += result[0];
    await Promise.resolve(sink);
  };
}

async function growth(step: Step, backend: string): Promise<GrowthReport> {
  const calls = 10_000;
  const loop = async (count: number): Promise<void> => {
    for (let i = 0; i < count; i++) await step();
  };
  await loop(40_000);
  const live = (): string => {
    const c = emuCounters();
    return `${c.allocations} allocations (${c.bytes} B), ${c.objects} aclnn objects`;
  };
  const before = backend === "npu-emulated" ? live() : "";
  const report: GrowthReport = {
    kind: "growth",
    backend,
    calls,
    samples: [],
    heap: [],
    total: [],
    extendedCalls: EXTENDED_CALLS,
    extendedRss: 0,
    extendedTotal: 0,
  };
  const sample = async (): Promise<void> => {
    report.samples.push(await settledRss());
    report.heap.push(Deno.memoryUsage().heapUsed);
    report.total.push(Deno.memoryUsage().heapTotal);
  };
  await sample();
  for (let done = 0; done < calls; done += 2_000) {
    await loop(2_000);
    await sample();
  }
  await loop(EXTENDED_CALLS - calls);
  report.extendedRss = await settledRss();
  report.extendedTotal = Deno.memoryUsage().heapTotal;
  if (before) report.live = { before, after: live() };
  return report;
}

async function probe(
  mode: string,
  which: string,
): Promise<PeakReport | GrowthReport | { error: string }> {
  if (which === "control") return await growth(controlStep(), "control (no library)");
  const opened = which === "npu" ? openEmulatedNpu() : DeviceClass.open({ backend: "cpu" });
  if (typeof opened === "string") return { error: opened };
  using device = opened;
  const backend = which === "npu" ? "npu-emulated" : "cpu";
  if (mode !== "growth") return await peak(device, backend);
  using grad = makeGrad(device, TINY, "float32");
  return await growth(libraryStep(device, grad), backend);
}

if (import.meta.main) {
  const [mode, which] = Deno.args;
  console.log(JSON.stringify(await probe(mode, which)));
}
