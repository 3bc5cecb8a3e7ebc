/**
 * What the default thread plan gains over one thread on every large case of the suite (backward and
 * forward, float32 unless `--all-dtypes`), both sides writing into a preallocated result, one call
 * per side per round, alternating, with a 128 MiB copy at one thread timed in the same rounds; and
 * `bench/cores.c` (SIMD loop, copy) first, so the host's own scaling is stated in the same run. A
 * short run (the default 9 rounds: ~1 minute), for iterating on the plan; `bench:compare` is the
 * full comparison.
 *
 *     deno run --allow-ffi --allow-env --allow-read --allow-run bench/scaling.ts \
 *       [rounds] [backward|forward] [--force] [--all-dtypes]
 *
 * `--force`: every large call shared by all threads (the mechanism without the plan).
 *
 * @module
 */

import { Device, type DType, type Tensor } from "../mod.ts";
import type { CpuBackend } from "../src/cpu/backend.ts";
import { cpuTuning } from "../src/cpu/backend.ts";
import { deviceInternals } from "../src/device.ts";
import {
  type BenchCase,
  bytesMoved,
  caseDtypes,
  CASES,
  FORWARD_CASES,
  makeGrad,
  resultShape,
  runCase,
} from "./cases.ts";
import { COPY_BYTES, copyOnceMs, coreScaling } from "./cores_probe.ts";
import { median } from "./stats.ts";

const args = Deno.args;
const rounds = Number(args.find((a) => /^\d+$/.test(a)) ?? 9);
const only = args.includes("backward") ? "backward" : args.includes("forward") ? "forward" : null;
const force = args.includes("--force");
const allDtypes = args.includes("--all-dtypes");

async function timed(device: Device, grad: Tensor, c: BenchCase, out: Tensor): Promise<number> {
  const start = performance.now();
  runCase(grad, c, out);
  await device.synchronize();
  return performance.now() - start;
}

const threads = navigator.hardwareConcurrency;
const host = await coreScaling(threads);
console.log(
  `host: ${threads} CPUs; cores.c on ${threads} threads: SIMD ${host?.simd}x, copy ${host?.copy}x` +
    ` (wake after 20 ms idle ${host?.wakeUs} µs)`,
);
const saved = cpuTuning.minParallelElements;
if (force) cpuTuning.minParallelElements = 0;
const one = Device.open({ backend: "cpu", threads: 1 });
const all = Device.open({ backend: "cpu" });
cpuTuning.minParallelElements = saved;
const backend = deviceInternals(all).backend() as unknown as CpuBackend;
const cases = [
  ...(only !== "forward" ? CASES : []),
  ...(only !== "backward" ? FORWARD_CASES : []),
].filter((c) => c.large);
for (const c of cases) {
  for (const dtype of caseDtypes(c) as DType[]) {
    if (!allDtypes && dtype !== "float32") continue;
    using g1 = makeGrad(one, c, dtype), gN = makeGrad(all, c, dtype);
    using o1 = one.zeros(resultShape(c), { dtype }), oN = all.zeros(resultShape(c), { dtype });
    const t1: number[] = [], tN: number[] = [], copies: number[] = [];
    const plans = new Map<number, number>();
    for (let r = 0; r < rounds + 3; r++) {
      const a = r % 2 === 0 ? await timed(one, g1, c, o1) : 0;
      const b = await timed(all, gN, c, oN);
      const w = backend.lastWorkers;
      const a2 = r % 2 === 1 ? await timed(one, g1, c, o1) : a;
      const k = copyOnceMs();
      if (r < 3) continue;
      t1.push(a2);
      tN.push(b);
      copies.push(k);
      plans.set(w, (plans.get(w) ?? 0) + 1);
    }
    const ratio = median(t1.map((x, i) => x / tN[i]));
    const gbs = bytesMoved(c, dtype) / (median(tN) * 1e-3) / 1e9;
    const copyGbs = (2 * COPY_BYTES) / (median(copies) * 1e-3) / 1e9;
    // The copy at the default's thread count: the one-thread copy times cores.c's copy scaling.
    const copyAll = copyGbs * Math.max(1, host?.copy ?? 1);
    const planText = [...plans].map(([w, n]) => `${w === 0 ? 1 : w}t:${n}`).join(" ");
    console.log(
      `${(c.forward ? "" : "bwd ") + c.label} ${dtype}: 1t ${median(t1).toFixed(2)} ms, ` +
        `${threads}t ${median(tN).toFixed(2)} ms, scaling ${ratio.toFixed(2)}x; ` +
        `${gbs.toFixed(1)} GB/s = ${(100 * gbs / copyAll).toFixed(0)} % of the ${threads}-thread ` +
        `copy (${copyAll.toFixed(1)} GB/s); plan ${planText}`,
    );
  }
}
one.close();
all.close();
