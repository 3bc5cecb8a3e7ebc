// Soak: 100 000 op calls (after 60 000 warm-up calls) on each backend, of mixed ops, dtypes,
// layouts and `out` use (small shapes), with tensor churn, sampled correctness checks against
// precomputed results and periodic syncs. Live allocations must return to their warm-up level (and
// to the baseline after cleanup) and RSS must grow less than 5% after warm-up. Memory is sampled
// after a memory-reducing full GC ("last-resort"), which also shrinks V8's young generation:
// otherwise V8 enlarges it in steps over a long run (heapTotal 9 -> 37 MB over a million calls
// while heapUsed stays flat), which is engine heap sizing, not memory held by this library.
//
//   deno task soak          (SOAK_CALLS=<n>, SOAK_WARMUP=<n> to change the counts per backend)

import {
  Device,
  type DType,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../mod.ts";
import type { Backend } from "../src/backend.ts";
import { deviceInternals } from "../src/device.ts";
import { assertMatchesDeviceOp } from "../tests/support/device_model.ts";
import { emu, EMU_DIR, emuLive, makeView, rng, ulpDistance } from "../tests/support/helpers.ts";

const CALLS = Number(Deno.env.get("SOAK_CALLS") ?? 100_000);
// The CPU backend runs first in a cold process: its RSS settles after some 50 000 to 100 000 calls
// (JIT tiers, allocator high-water marks; one step of 1-2 MB), then stays flat.
const WARMUP = Number(Deno.env.get("SOAK_WARMUP") ?? 60_000);
const SAMPLES = 5;
const MAX_RSS_GROWTH = 0.05;
const gc = (globalThis as { gc?: (options?: Record<string, string>) => void }).gc;

interface Entry {
  readonly op: 0 | 1 | 2;
  readonly dtype: DType;
  readonly shape: number[];
  readonly inputSize: number[];
  readonly outputSize: number[];
  readonly alignCorners: boolean;
  readonly values: Float32Array;
  want: Float32Array;
}

const MB = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MB`;
const settle = async (): Promise<void> => {
  for (let i = 0; i < 3; i++) {
    gc?.({ type: "major", execution: "sync", flavor: "last-resort" });
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
};

function entries(): Entry[] {
  const r = rng(0x50a4);
  const list: Entry[] = [];
  for (const op of [0, 1, 2] as const) {
    for (const dtype of ["float32", "float16", "bfloat16"] as const) {
      for (let v = 0; v < 2; v++) {
        const n = 1 + Math.floor(r() * 2), c = 2 + Math.floor(r() * 2);
        const inSp = op === 0 ? [3 + v] : [2 + v, 3 + Math.floor(r() * 3)];
        const outSp = inSp.map((i) => i + 1 + Math.floor(r() * 5));
        const shape = [n, c, ...outSp];
        const count = shape.reduce((a, b) => a * b, 1);
        list.push({
          op,
          dtype,
          shape,
          inputSize: [n, c, ...inSp],
          outputSize: outSp,
          alignCorners: op === 2 && v === 1,
          values: Float32Array.from({ length: count }, () => Math.fround(r() * 4 - 2)),
          want: new Float32Array(0),
        });
      }
    }
  }
  return list;
}

function call(e: Entry, grad: Tensor, out?: Tensor, deterministic?: boolean): Tensor {
  const common = { outputSize: e.outputSize, inputSize: e.inputSize, out, deterministic };
  if (e.op === 0) return upsampleNearestExact1dBackward(grad, common);
  if (e.op === 1) return upsampleNearestExact2dBackward(grad, common);
  return upsampleBilinear2dBackward(grad, { ...common, alignCorners: e.alignCorners });
}

/**
 * Live storages of a device's backend (allocate minus free), for either backend. Only buffers made
 * by `allocate` count: the NPU workspace cache allocates its buffers itself and hands the old one to
 * `free` when it grows (and its initial one is empty, address 0).
 */
function liveCounter(device: Device): { live: number } {
  const backend = deviceInternals(device).backend() as Backend<unknown>;
  const counter = { live: 0 };
  const allocate = backend.allocate.bind(backend);
  const free = backend.free.bind(backend);
  const mine = new WeakSet<object>();
  const empty = (handle: unknown): boolean => (handle as { address?: bigint }).address === 0n;
  backend.allocate = (dtype, length): unknown => {
    const handle = allocate(dtype, length);
    if (!empty(handle)) {
      counter.live++;
      mine.add(handle as object);
    }
    return handle;
  };
  backend.free = (handle): void => {
    if (mine.delete(handle as object)) counter.live--;
    free(handle);
  };
  return counter;
}

interface Figures {
  label: string;
  calls: number;
  seconds: number;
  checks: number;
  liveWarm: number;
  liveEnd: number;
  liveAfterClose: number;
  emuWarm: bigint | null;
  emuEnd: bigint | null;
  emuAfterClose: bigint | null;
  objectsAfterClose: bigint | null;
  warm: Deno.MemoryUsage;
  end: Deno.MemoryUsage;
  samples: Deno.MemoryUsage[];
}

async function soak(label: string, open: () => Device, list: Entry[]): Promise<Figures> {
  const npu = label !== "cpu";
  const emuStart = npu ? emuLive() : null;
  const device = open();
  const counter = liveCounter(device);
  const r = rng(0x50a5);
  const layouts = ["contiguous", "channelsLast", "transposed", "offset"] as const;
  // One gradient per entry (replaced now and then), and one preallocated out per entry.
  const grads = list.map((e, i) => makeView(device, e.values, e.shape, e.dtype, layouts[i % 4]));
  const outs = list.map((e) => device.zeros(e.inputSize, { dtype: e.dtype }));
  let checks = 0;
  let warm: { live: number; emu: bigint | null; memory: Deno.MemoryUsage } | null = null;
  const samples: Deno.MemoryUsage[] = [];
  const started = performance.now();
  let warmAt = started;
  const total = WARMUP + CALLS;
  for (let k = 0; k < total; k++) {
    const i = Math.floor(r() * list.length);
    const e = list[i];
    if (k % 50 === 0) {
      // Churn: a fresh gradient in another layout replaces the old one.
      grads[i].dispose();
      grads[i] = makeView(device, e.values, e.shape, e.dtype, layouts[Math.floor(r() * 4)]);
    }
    const useOut = r() < 0.25;
    const result = call(e, grads[i], useOut ? outs[i] : undefined, r() < 0.1 ? true : undefined);
    if (k % 500 === 0) {
      const got = await result.toFloat32Array();
      if (label !== "cpu") {
        // The NPU computes what the device computes, not the CPU's bits.
        const fn = [
          upsampleNearestExact1dBackward,
          upsampleNearestExact2dBackward,
          upsampleBilinear2dBackward,
        ][e.op];
        await assertMatchesDeviceOp(got, fn, e.values, e.dtype, e, `${label} call ${k}`);
      } else {
        for (let j = 0; j < got.length; j++) {
          const tolerance = e.op === 2 && e.dtype === "float32" ? 4 : 0;
          if (ulpDistance(got[j], e.want[j]) > tolerance) {
            throw new Error(`${label} call ${k}: element ${j} is ${got[j]}, expected ${e.want[j]}`);
          }
        }
      }
      checks++;
    }
    if (!useOut) result.dispose();
    if (k % 2000 === 1999) await device.synchronize();
    if (k + 1 === WARMUP) {
      await device.synchronize();
      await settle();
      warm = {
        live: counter.live,
        emu: npu ? emuLive().allocations : null,
        memory: Deno.memoryUsage(),
      };
      warmAt = performance.now();
    } else if (k >= WARMUP && (k + 1 - WARMUP) % Math.floor(CALLS / SAMPLES) === 0) {
      await device.synchronize();
      await settle();
      samples.push(Deno.memoryUsage());
    }
  }
  await device.synchronize();
  await settle();
  const end = Deno.memoryUsage();
  const seconds = (performance.now() - warmAt) / 1000;
  const figures: Figures = {
    label,
    calls: CALLS,
    seconds: (performance.now() - started) / 1000,
    checks,
    liveWarm: warm!.live,
    liveEnd: counter.live,
    liveAfterClose: NaN,
    emuWarm: warm!.emu,
    emuEnd: npu ? emuLive().allocations : null,
    emuAfterClose: null,
    objectsAfterClose: null,
    warm: warm!.memory,
    end,
    samples,
  };
  console.log(
    `${label}: ${WARMUP} warm-up + ${CALLS} calls in ${figures.seconds.toFixed(1)} s ` +
      `(${Math.round(CALLS / seconds)} calls/s after warm-up), ${checks} results checked`,
  );
  for (const t of [...grads, ...outs]) t.dispose();
  device.close();
  figures.liveAfterClose = counter.live;
  if (npu) {
    const after = emuLive();
    figures.emuAfterClose = after.allocations - emuStart!.allocations;
    figures.objectsAfterClose = after.objects - emuStart!.objects;
  }
  return figures;
}

async function main(): Promise<number> {
  if (typeof gc !== "function") {
    console.error("run with --v8-flags=--expose-gc (deno task soak)");
    return 2;
  }
  const list = entries();
  {
    using cpu = Device.open({ backend: "cpu" });
    for (const e of list) {
      using grad = cpu.tensor(e.values, e.shape, { dtype: e.dtype });
      using result = call(e, grad);
      e.want = await result.toFloat32Array();
    }
  }
  const runs: Array<[string, () => Device]> = [
    ["cpu", () => Device.open({ backend: "cpu" })],
    ["npu-emulated", () => Device.open({ backend: "npu", libDir: EMU_DIR })],
  ];
  const problems: string[] = [];
  for (const [label, open] of runs) {
    emu().aclemuResetFaults();
    const f = await soak(label, open, list);
    const grew = (a: number, b: number): number => (b - a) / a;
    const rssGrowth = grew(f.warm.rss, f.end.rss);
    const heapGrowth = grew(f.warm.heapUsed, f.end.heapUsed);
    const pct = (x: number): string => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(2)}%`;
    console.log(
      `  live storages: ${f.liveWarm} after warm-up, ${f.liveEnd} at the end, ` +
        `${f.liveAfterClose} after cleanup` +
        (f.emuWarm === null ? "" : `; emulated device allocations ${f.emuWarm} -> ${f.emuEnd}, ` +
          `${f.emuAfterClose} left after close, ${f.objectsAfterClose} aclnn objects left`),
    );
    console.log(
      `  after warm-up -> end: RSS ${MB(f.warm.rss)} -> ${MB(f.end.rss)} (${pct(rssGrowth)}); ` +
        `heap used ${MB(f.warm.heapUsed)} -> ${MB(f.end.heapUsed)} (${pct(heapGrowth)}); ` +
        `heap total ${MB(f.warm.heapTotal)} -> ${MB(f.end.heapTotal)}; external ` +
        `${MB(f.warm.external)} -> ${MB(f.end.external)}`,
    );
    console.log(
      `  RSS samples: ${[f.warm, ...f.samples, f.end].map((m) => MB(m.rss)).join(", ")}`,
    );
    if (rssGrowth >= MAX_RSS_GROWTH) {
      problems.push(`${label}: RSS grew ${pct(rssGrowth)} after warm-up`);
    }
    if (heapGrowth >= MAX_RSS_GROWTH) {
      problems.push(`${label}: JS heap in use grew ${pct(heapGrowth)} after warm-up`);
    }
    if (f.liveAfterClose !== 0) problems.push(`${label}: ${f.liveAfterClose} storages never freed`);
    if (f.liveEnd !== f.liveWarm) {
      problems.push(`${label}: live storages ${f.liveWarm} -> ${f.liveEnd}`);
    }
    if (f.emuEnd !== f.emuWarm) {
      problems.push(`${label}: device allocations ${f.emuWarm} -> ${f.emuEnd}`);
    }
    if (f.emuAfterClose !== null && f.emuAfterClose !== 0n) {
      problems.push(`${label}: ${f.emuAfterClose} device allocations left after close`);
    }
    if (f.objectsAfterClose !== null && f.objectsAfterClose !== 0n) {
      problems.push(`${label}: ${f.objectsAfterClose} aclnn objects left after close`);
    }
  }
  if (problems.length > 0) {
    console.error(`soak FAILED:\n  ${problems.join("\n  ")}`);
    return 1;
  }
  console.log("soak passed");
  return 0;
}

Deno.exit(await main());
