/**
 * `deno task bench:overhead`: per-call overhead of this library on the emulated NPU against a C program
 * (`bench/build/overhead`, from `overhead.c`) driving the same emulated libraries, for the tiny case
 * of each op. C and Deno runs alternate (3 rounds, then 6 more of the cheap launch-only variants,
 * which noise moves most in relative terms); each number is the best round's median of 5 runs of N
 * calls, in microseconds per call (on a shared 2-core machine, other processes only ever add time,
 * mostly to the thread hand-offs: the best round is the signal).
 *
 * Sync: the library's `await device.synchronize()` polls an ACL event on the JS thread for at most 50 µs
 * (`src/ffi/stream_poll.ts`) and only then hands `aclrtSynchronizeStream` to a worker thread, so it
 * never blocks the event loop for longer than that; C "worker" (a helper thread + condvar) is the
 * non-blocking peer, C "blocking" waits on the calling thread, which the library does not do for an
 * unbounded time ("public / blocking" compares the two all the same). "blocking" calls
 * `aclrtSynchronizeStream` on the calling thread in both languages; "enqueue" syncs once after the
 * loop. No C variant checks its arguments: the library's calls also check theirs (after the first call
 * on a gradOutput, a memo's liveness and value checks, `src/ops/call_memo.ts`).
 *
 * The C driver makes issue 4's sequence per call (create 2 aclTensors and 2 aclIntArrays, phase 1,
 * phase 2, sync, destroy them). The library caches those descriptors per view while the storage lives
 * (`src/ffi/descriptors.ts`) and keeps phase 1's executor, made repeatable (`src/ffi/executors.ts`),
 * so its steady-state call is phase 2 only. C "enqueue-cached" keeps the descriptors (phase 1 +
 * phase 2 per call, what the library did before it reused executors); C "enqueue-reused" keeps the
 * executor too (phase 2 per call), the like-for-like row.
 *
 * @module
 */

import type { Device } from "../mod.ts";
import { openEmulatedNpu } from "./emu.ts";
import {
  OPS,
  PIECE_VARIANTS,
  PUBLIC_VARIANTS,
  type TinyProblem,
  tinyProblem,
  type Variant,
} from "./overhead_calls.ts";
import { markdownTable, median } from "./stats.ts";

const ITERATIONS = 10_000;
const ROUNDS = 3;
/** Extra alternating rounds of the launch-only variants (C: enqueue, enqueue-cached). */
const ENQUEUE_ROUNDS = 6;
const C_ENQUEUE_VARIANTS = "enqueue,enqueue-cached,enqueue-reused";
const C_DRIVER = new URL("./build/overhead", import.meta.url).pathname;
/** Issue 19's target: Deno-driven / C-driven <= 1.2x. */
const TARGET = 1.2;

type Samples = Map<string, number[]>;

function record(samples: Samples, key: string, us: number): void {
  samples.set(key, [...samples.get(key) ?? [], us]);
}

/** Runs the C driver: every variant, or the comma-separated `variants`. */
async function runC(samples: Samples, variants?: string): Promise<void> {
  const args = variants === undefined ? [String(ITERATIONS)] : [String(ITERATIONS), variants];
  const output = await new Deno.Command(C_DRIVER, { args, stderr: "inherit" }).output();
  if (!output.success) throw new Error(`${C_DRIVER} failed`);
  for (const line of new TextDecoder().decode(output.stdout).trim().split("\n")) {
    const row = JSON.parse(line) as { op: string; variant: string; us: number };
    record(samples, `c/${row.op}/${row.variant}`, row.us);
  }
}

async function timeVariant(variant: Variant, p: TinyProblem): Promise<number> {
  const { call, end } = variant.make(p);
  for (let i = 0; i < ITERATIONS / 4; i++) {
    const pending = call();
    if (pending) await pending;
  }
  await end();
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const start = performance.now();
    for (let i = 0; i < ITERATIONS; i++) {
      const pending = call();
      if (pending) await pending;
    }
    await end();
    runs.push(((performance.now() - start) * 1000) / ITERATIONS);
  }
  return median(runs);
}

/** Whether a variant is launch-only (no sync per call): cheap, so it gets the extra rounds. */
const launchOnly = (variant: Variant): boolean =>
  variant.peer === "enqueue" || variant.name === "validate";

async function runDeno(device: Device, samples: Samples, onlyLaunch = false): Promise<void> {
  const variants = [...PUBLIC_VARIANTS, ...PIECE_VARIANTS].filter((v) =>
    !onlyLaunch || launchOnly(v)
  );
  for (const op of OPS) {
    const p = tinyProblem(device, op);
    try {
      for (const variant of variants) {
        record(samples, `deno/${op}/${variant.name}`, await timeVariant(variant, p));
      }
    } finally {
      p.grad.dispose();
      p.out.dispose();
    }
  }
}

function us(samples: Samples, key: string): number {
  return Math.min(...samples.get(key) ?? [NaN]);
}

/** The comparisons the verdicts are about: [label, Deno variant, C variant]. */
const VERDICTS: ReadonlyArray<readonly [string, string, string]> = [
  ["op + sync per call, same sync on both sides (blocking / blocking)", "blocking", "blocking"],
  ["op + sync per call, public API vs C helper-thread sync (worker / worker)", "public", "worker"],
  ["op + sync per call, public API vs plain C (public / blocking)", "public", "blocking"],
  ["launch only, sync once after the loop (enqueue / enqueue)", "enqueue", "enqueue"],
  [
    "launch only, C also keeping its descriptors (enqueue / enqueue-cached)",
    "enqueue",
    "enqueue-cached",
  ],
  [
    "launch only, C keeping descriptors and executor as the library does (enqueue / enqueue-reused)",
    "enqueue",
    "enqueue-reused",
  ],
];

function comparisonTable(samples: Samples): { table: string; verdicts: string[] } {
  const rows: string[][] = [["op", "Deno variant", "Deno µs", "C variant", "C µs", "Deno / C"]];
  for (const op of OPS) {
    for (const [, deno, c] of VERDICTS) {
      const d = us(samples, `deno/${op}/${deno}`);
      const base = us(samples, `c/${op}/${c}`);
      rows.push([op, deno, d.toFixed(2), c, base.toFixed(2), `${(d / base).toFixed(2)}x`]);
    }
  }
  const verdicts = VERDICTS.map(([label, deno, c]) => {
    const worst = Math.max(
      ...OPS.map((op) => us(samples, `deno/${op}/${deno}`) / us(samples, `c/${op}/${c}`)),
    );
    return `Deno / C <= ${TARGET}x, ${label}: ${worst <= TARGET ? "PASS" : "FAIL"} (worst op ${
      worst.toFixed(2)
    }x)`;
  });
  return { table: markdownTable(rows), verdicts };
}

const PIECE_ROWS: ReadonlyArray<readonly [string, string]> = [
  ["C: enqueue only", "c/enqueue"],
  ["C, descriptors made once: enqueue only", "c/enqueue-cached"],
  ["C, descriptors and executor made once: enqueue only", "c/enqueue-reused"],
  ["Deno raw FFI, prebuilt args: enqueue only", "deno/raw FFI enqueue"],
  ["Deno raw FFI, descriptors made once: enqueue only", "deno/raw FFI enqueue cached"],
  ["Deno raw FFI, descriptors and executor made once: enqueue only", "deno/raw FFI enqueue reused"],
  [
    "Deno launchAclnn (cached descriptors and executor, no validation): enqueue only",
    "deno/launchAclnn enqueue",
  ],
  ["Deno public op(out): enqueue only", "deno/enqueue"],
  ["Deno resolveUpsample (validation) alone", "deno/validate"],
  ["C: + blocking sync", "c/blocking"],
  ["Deno raw FFI: + blocking sync", "deno/raw FFI"],
  ["Deno launchAclnn: + blocking sync", "deno/launchAclnn"],
  ["Deno public op(out): + blocking sync", "deno/blocking"],
  ["C: + sync on a helper thread", "c/worker"],
  ["Deno public op(out): + await device.synchronize()", "deno/public"],
];

function piecesTable(samples: Samples): string {
  const rows: string[][] = [["µs per call", ...OPS]];
  for (const [label, key] of PIECE_ROWS) {
    const [side, variant] = key.split("/");
    rows.push([label, ...OPS.map((op) => us(samples, `${side}/${op}/${variant}`).toFixed(2))]);
  }
  return markdownTable(rows);
}

async function main(): Promise<void> {
  const device = openEmulatedNpu();
  if (typeof device === "string") {
    console.log(`bench:overhead: ${device}`);
    Deno.exit(1);
  }
  try {
    await Deno.stat(C_DRIVER);
  } catch {
    console.log(`bench:overhead: ${C_DRIVER} is missing; run \`make -s -C bench\` first`);
    Deno.exit(1);
  }
  const samples: Samples = new Map();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      await runC(samples);
      await runDeno(device, samples);
      console.error(`  round ${round + 1}/${ROUNDS} done`);
    }
    for (let round = 0; round < ENQUEUE_ROUNDS; round++) {
      await runC(samples, C_ENQUEUE_VARIANTS);
      await runDeno(device, samples, true);
    }
    console.error(`  ${ENQUEUE_ROUNDS} launch-only rounds done`);
  } finally {
    device.close();
  }
  console.log(
    `per-call overhead, tiny float32 case, emulated NPU (native/build), ${ITERATIONS} calls x 5 ` +
      `runs (median) x ${ROUNDS} alternating rounds (best; launch-only rows: ${
        ROUNDS + ENQUEUE_ROUNDS
      } rounds); µs per call:\n`,
  );
  const { table, verdicts } = comparisonTable(samples);
  console.log(table);
  for (const v of PUBLIC_VARIANTS) console.log(`  ${v.name}: ${v.what}`);
  console.log(`  C worker: aclrtSynchronizeStream on a helper thread, waited for with a condvar`);
  console.log(
    `  C blocking waits on the calling thread for as long as the stream takes; the library's sync ` +
      `blocks the event loop for at most 50 µs, then waits on a worker thread. No C variant checks ` +
      `its arguments; the library's calls do (a memo's rechecks after the first call)`,
  );
  console.log(
    `  C makes issue 4's sequence per call (aclCreateTensor x2, aclCreateIntArray x2, phase 1, ` +
      `phase 2, sync, destroy x4); the library caches each view's descriptors while its storage ` +
      `lives (src/ffi/descriptors.ts) and reuses phase 1's executor (src/ffi/executors.ts), so its ` +
      `calls after the first are phase 2 only (+ sync); C enqueue-cached keeps the descriptors ` +
      `(phase 1 + phase 2), C enqueue-reused the executor too (phase 2: the library's sequence)`,
  );
  console.log(`\nwhere the time goes (µs per call):\n`);
  console.log(piecesTable(samples));
  console.log(
    `  raw FFI: the same FFI calls made straight from Deno with the library's symbol tables and ` +
      `every argument prebuilt (issue 4's sequence, with descriptors made once, or with the ` +
      `executor too); launchAclnn: src/ffi/aclnn_call.ts on a prebuilt call (cached descriptors ` +
      `and executor; no validation, no backend bookkeeping)\n`,
  );
  for (const line of verdicts) console.log(line);
}

if (import.meta.main) await main();
