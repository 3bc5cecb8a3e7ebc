/**
 * `deno run bench/threshold.ts`: where handing a call to the worker threads starts to pay. For
 * growing plane counts of three kernels, times a call (op + `await synchronize()`) run on the
 * calling thread against the same call on the workers (same shared-memory device settings,
 * alternating, median of 41 rounds), and prints the elements moved (gradOutput + result) per call
 * with the ratio. `cpuTuning.minParallelElements` in `src/cpu/backend.ts` is set from this table.
 *
 * @module
 */

import {
  Device,
  type DType,
  upsampleBilinear2dBackward,
  upsampleNearestExact2dBackward,
} from "../mod.ts";
import { cpuTuning } from "../src/cpu/backend.ts";
import { formatMs, markdownTable, median } from "./stats.ts";

const ROUNDS = 41;
const WARMUP = 5;

function open(minParallel: number): Device {
  const saved = cpuTuning.minParallelElements;
  cpuTuning.minParallelElements = minParallel;
  try {
    return Device.open({ backend: "cpu" });
  } finally {
    cpuTuning.minParallelElements = saved;
  }
}

const KERNELS = [
  { label: "nearest-exact x2", dtype: "float32", scale: 2, bilinear: false },
  { label: "nearest-exact s=1.7", dtype: "bfloat16", scale: 1.7, bilinear: false },
  { label: "bilinear x2", dtype: "float32", scale: 2, bilinear: true },
] as const;

async function main(): Promise<void> {
  const here = open(Infinity), workers = open(0);
  const rows: string[][] = [];
  try {
    for (const kernel of KERNELS) {
      for (const planes of [4, 16, 64, 128, 256, 512, 1024, 2048]) {
        const inputSize = [1, planes, 16, 16];
        const outputSize = [Math.floor(16 * kernel.scale), Math.floor(16 * kernel.scale)];
        const length = planes * outputSize[0] * outputSize[1];
        const values = Float32Array.from({ length }, (_, i) => (i % 17) - 8);
        const dtype: DType = kernel.dtype;
        const options = { inputSize, outputSize, scalesH: kernel.scale, scalesW: kernel.scale };
        const times = { here: [] as number[], workers: [] as number[] };
        const grads = {
          here: here.tensor(values, [1, planes, ...outputSize], { dtype }),
          workers: workers.tensor(values, [1, planes, ...outputSize], { dtype }),
        };
        for (let round = 0; round < WARMUP + ROUNDS; round++) {
          for (
            const side of round % 2 === 0
              ? ["here", "workers"] as const
              : ["workers", "here"] as const
          ) {
            const device = side === "here" ? here : workers;
            const start = performance.now();
            const result = kernel.bilinear
              ? upsampleBilinear2dBackward(grads[side], options)
              : upsampleNearestExact2dBackward(grads[side], options);
            await device.synchronize();
            const ms = performance.now() - start;
            result.dispose();
            if (round >= WARMUP) times[side].push(ms);
          }
        }
        grads.here.dispose();
        grads.workers.dispose();
        const a = median(times.here), b = median(times.workers);
        rows.push([
          kernel.label,
          dtype,
          String(planes),
          String(length + planes * 256),
          formatMs(a),
          formatMs(b),
          `${(a / b).toFixed(2)}x`,
        ]);
      }
    }
  } finally {
    here.close();
    workers.close();
  }
  console.log(
    markdownTable([
      [
        "kernel",
        "dtype",
        "planes",
        "elements moved",
        "calling thread ms",
        "workers ms",
        "speed-up",
      ],
      ...rows,
    ]),
  );
  console.log(`\ncurrent threshold: ${cpuTuning.minParallelElements} elements`);
}

if (import.meta.main) await main();
