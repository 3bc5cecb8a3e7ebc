/**
 * The report of `bench/compare.ts`: a row per case and dtype, the compute and allocation tables,
 * why their ratios differ, and the target verdicts (PASS/FAIL lines, judged on compute).
 *
 * @module
 */

import type { DType } from "../mod.ts";
import { type BenchCase, bytesMoved, numel, resultShape, shapeText } from "./cases.ts";
import type { CoreScaling } from "./cores_probe.ts";
import { formatMs, markdownTable } from "./stats.ts";

/** Median ms of each side: PyTorch and ours, one thread and default, compute and allocating. */
export interface SideTimes {
  torchOneOut: number | null;
  torchOneAlloc: number | null;
  torchAllOut: number | null;
  torchAllAlloc: number | null;
  oursOneOut: number;
  oursOneAlloc: number;
  oursAllOut: number;
  oursAllAlloc: number;
}

/** One row of the comparison. */
export interface Row {
  c: BenchCase;
  dtype: DType;
  /** Why PyTorch has no times ("" when it has). */
  torchNote: string;
  ms: SideTimes;
  /** Process CPU ms per compute call of ours at one thread and at the default. */
  oursOneCpuMs: number;
  oursAllCpuMs: number;
  /** Large cases: the 128 MiB copy's bandwidth (one thread), measured in the same rounds. */
  copyGBs: number | null;
  /**
   * Large cases: the memory floor, ms: the case's bytes read and written by plain WebAssembly SIMD
   * loops (bench/floor.c, one thread), timed in the same rounds; null without clang 19.
   */
  floorMs: number | null;
  /** What the default device's planner chose for the compute calls. */
  plan: string;
  /**
   * Ratios of two sides' times taken round by round, then the median: a slow phase of the VM
   * that falls on one round slows both sides of that round's ratio. PyTorch / ours (> 1: ours
   * faster), compute and allocating; scaling: one thread / default.
   */
  paired: {
    computeOne: number | null;
    computeAll: number | null;
    allocOne: number | null;
    allocAll: number | null;
    oursScaling: number;
    oursAllocScaling: number;
    torchScaling: number | null;
    /** Plain C threads' burst of the same work, timed in the same rounds (cores.c serve). */
    hostScaling: number | null;
    /** Process CPU time per compute call, one thread / default (< 1: the default costs more). */
    cpuScaling: number;
  };
}

/** The per-call time of a tiny call today (issue 30's baseline), µs: forward, backward. */
export const TINY_US = { forward: 1.4, backward: 1.15 } as const;
/** The bar: PyTorch's compute time over ours. */
const SPEED = 2.0;
/** The memory-bound bar: this share of the copy bandwidth at the same thread count. */
const COPY_SHARE = 0.85;
/** The scaling bar on a host whose own copy and SIMD loop scale at least {@link HOST_SCALES}. */
const SCALING = 1.7;
const HOST_SCALES = 1.8;
/** glibc's largest mmap threshold: a larger block is mapped fresh on every malloc. */
const MMAP_MAX_BYTES = 32 * 2 ** 20;

/** GB/s of a call taking `ms`. */
function gbs(r: Row, ms: number | null): number | null {
  return ms === null ? null : bytesMoved(r.c, r.dtype) / (ms * 1e-3) / 1e9;
}

/** The copy bandwidth at one thread or at `threads` (the one-thread copy times cores.c's scaling). */
function copyAt(r: Row, one: boolean, machine: CoreScaling | null): number | null {
  if (r.copyGBs === null) return null;
  return one ? r.copyGBs : r.copyGBs * Math.max(1, machine?.copy ?? 1);
}

/** Share of the copy bandwidth of a side, 0..1, or null. */
function copyShare(
  r: Row,
  ms: number | null,
  one: boolean,
  machine: CoreScaling | null,
): number | null {
  const copy = copyAt(r, one, machine), rate = gbs(r, ms);
  return copy === null || rate === null ? null : rate / copy;
}

/**
 * Our speed as a share of the memory floor's (0..1, or null): at `threads`, the one-thread floor
 * scaled as cores.c's copy.
 */
function floorShare(r: Row, ms: number, one: boolean, machine: CoreScaling | null): number | null {
  if (r.floorMs === null) return null;
  return r.floorMs / (one ? 1 : Math.max(1, machine?.copy ?? 1)) / ms;
}

/** A duration with its unit (ms, or µs below 0.1 ms). */
function msUnit(ms: number): string {
  const text = formatMs(ms);
  return text.endsWith("µs") ? text : `${text} ms`;
}

function ratioText(x: number | null): string {
  return x === null ? "n/a" : `${x.toFixed(2)}x`;
}

function percent(x: number | null): string {
  return x === null ? "-" : `${(100 * x).toFixed(0)}%`;
}

function msText(ms: number | null, note: string): string {
  return ms === null ? note : formatMs(ms);
}

/** Bytes of the op's result. */
function resultBytes(r: Row): number {
  return numel(resultShape(r.c)) * (r.dtype === "float32" ? 4 : 2);
}

/** The compute table of one suite: both sides into a preallocated result. */
export function computeTable(
  rows: readonly Row[],
  threads: number,
  machine: CoreScaling | null,
): string {
  const n = `${threads}t`;
  const header = [
    "case",
    rows.every((r) => r.c.forward) ? "input -> output" : "gradOutput -> gradInput",
    "dtype",
    "PyTorch 1t ms",
    "ours 1t ms",
    "PyTorch/ours 1t",
    `PyTorch ${n} ms`,
    `ours ${n} ms`,
    `PyTorch/ours ${n}`,
    "ours scaling",
    "PyTorch scaling",
    "C threads scaling",
    `% of copy 1t: ours (PyTorch)`,
    `% of copy ${n}: ours (PyTorch)`,
    `% of floor 1t / ${n}`,
    `ours CPU ms 1t / ${n}`,
    `plan at ${n}`,
  ];
  const body = rows.map((r) => [
    r.c.label,
    shapeText(r.c),
    r.dtype,
    msText(r.ms.torchOneOut, r.torchNote),
    formatMs(r.ms.oursOneOut),
    ratioText(r.paired.computeOne),
    msText(r.ms.torchAllOut, r.torchNote),
    formatMs(r.ms.oursAllOut),
    ratioText(r.paired.computeAll),
    ratioText(r.paired.oursScaling),
    ratioText(r.paired.torchScaling),
    ratioText(r.paired.hostScaling),
    r.c.large
      ? `${percent(copyShare(r, r.ms.oursOneOut, true, machine))} (${
        percent(copyShare(r, r.ms.torchOneOut, true, machine))
      })`
      : "-",
    r.c.large
      ? `${percent(copyShare(r, r.ms.oursAllOut, false, machine))} (${
        percent(copyShare(r, r.ms.torchAllOut, false, machine))
      })`
      : "-",
    r.c.large
      ? `${percent(floorShare(r, r.ms.oursOneOut, true, machine))} / ${
        percent(floorShare(r, r.ms.oursAllOut, false, machine))
      }`
      : "-",
    `${formatMs(r.oursOneCpuMs)} / ${formatMs(r.oursAllCpuMs)}`,
    r.plan,
  ]);
  return markdownTable([header, ...body]);
}

/** The two ratios side by side, and what allocating costs each side per call. */
export function allocationTable(rows: readonly Row[], threads: number): string {
  const n = `${threads}t`;
  const header = [
    "case",
    "dtype",
    "result MB",
    "PyTorch/ours 1t: compute",
    "allocating",
    `PyTorch/ours ${n}: compute`,
    "allocating",
    "PyTorch 1t ms: out= / allocating",
    "ours 1t ms: out / allocating",
    `ours scaling allocating`,
  ];
  const body = rows.map((r) => [
    r.c.label,
    r.dtype,
    (resultBytes(r) / 1e6).toFixed(1),
    ratioText(r.paired.computeOne),
    ratioText(r.paired.allocOne),
    ratioText(r.paired.computeAll),
    ratioText(r.paired.allocAll),
    r.ms.torchOneOut === null
      ? r.torchNote
      : `${formatMs(r.ms.torchOneOut)} / ${formatMs(r.ms.torchOneAlloc!)}`,
    `${formatMs(r.ms.oursOneOut)} / ${formatMs(r.ms.oursOneAlloc)}`,
    ratioText(r.paired.oursAllocScaling),
  ]);
  return markdownTable([header, ...body]);
}

/** Why the allocating ratio differs from the compute ratio, per case where it does by > 1.25x. */
export function allocationNotes(rows: readonly Row[]): string[] {
  const lines: string[] = [];
  for (const r of rows) {
    const { computeOne, allocOne } = r.paired;
    if (computeOne === null || allocOne === null || allocOne < 1.25 * computeOne) continue;
    const bytes = resultBytes(r);
    const torchExtra = r.ms.torchOneAlloc! - r.ms.torchOneOut!;
    const oursExtra = r.ms.oursOneAlloc - r.ms.oursOneOut;
    const why = bytes >= MMAP_MAX_BYTES
      ? `its ${(bytes / 2 ** 20).toFixed(1)} MiB result is 32 MiB or more (glibc's largest mmap ` +
        `threshold), so glibc maps fresh pages for it on every call and the kernel faults them in, one per 4 KiB`
      : `allocating and freeing its result costs it that much here`;
    lines.push(
      `  ${r.c.id} ${r.dtype}: ${allocOne.toFixed(2)}x allocating against ${
        computeOne.toFixed(2)
      }x compute (1t): PyTorch takes ${msUnit(torchExtra)} more per call when it allocates: ` +
        `${why}; ours ${msUnit(Math.max(0, oursExtra))} (it reuses the blocks of its WebAssembly ` +
        `memory).`,
    );
  }
  if (lines.length > 0) {
    lines.unshift(
      "\nWhere the ratios differ (the allocating ratio includes each side's cost of a fresh result; " +
        "a real advantage of reused memory, but not kernel speed, and it depends on the host's " +
        "page-fault cost):",
    );
  }
  return lines;
}

/** What the machine's own loops gain from all threads (bench/cores.c): the ceiling of scaling. */
export function machineText(machine: CoreScaling | null): string {
  if (machine === null) return "this machine's own scaling: n/a (bench/cores.c did not run)";
  return `this machine's own scaling at ${machine.threads} threads (bench/cores.c): SIMD loop ` +
    `${machine.simd.toFixed(2)}x, scalar chain ${machine.latency.toFixed(2)}x, memory copy ` +
    `${machine.copy.toFixed(2)}x; a thread blocked for 20 ms wakes in ${
      machine.wakeUs.toFixed(0)
    } µs`;
}

function verdict(what: string, failures: string[]): string {
  return `${what}: ${failures.length === 0 ? "PASS" : `FAIL (below: ${failures.join(", ")})`}`;
}

/** A row's compute against PyTorch at one thread or the defaults: ratio or share of the copy. */
function speedFailure(r: Row, one: boolean, machine: CoreScaling | null): string | null {
  const ratio = one ? r.paired.computeOne : r.paired.computeAll;
  if (ratio === null || ratio >= SPEED) return null;
  const ours = one ? r.ms.oursOneOut : r.ms.oursAllOut;
  const share = copyShare(r, ours, one, machine);
  if (share !== null && share >= COPY_SHARE) return null;
  const floor = floorShare(r, ours, one, machine);
  if (floor !== null && floor >= COPY_SHARE) return null;
  const torchShare = copyShare(r, one ? r.ms.torchOneOut : r.ms.torchAllOut, one, machine);
  return `${r.c.id} ${ratio.toFixed(2)}x, ${percent(share)} of copy (PyTorch ${
    percent(torchShare)
  }), ${percent(floor)} of the floor`;
}

/**
 * One PASS/FAIL line per target, judged on compute (both sides into a preallocated result): speed
 * against PyTorch per suite and dtype, scaling, the default against one thread, tiny calls, and
 * float16 against bfloat16.
 */
export function targets(
  rows: readonly Row[],
  threads: number,
  machine: CoreScaling | null,
): string[] {
  const lines: string[] = [];
  const suites = [["backward", rows.filter((r) => !r.c.forward)], [
    "forward",
    rows.filter((r) => r.c.forward),
  ]] as const;
  for (const [suite, part] of suites) {
    if (part.length === 0) continue;
    for (const dtype of ["float32", "bfloat16"] as const) {
      const compared = part.filter((r) =>
        r.dtype === dtype && r.c.large && r.ms.torchOneOut !== null
      );
      if (compared.length === 0) {
        lines.push(`${suite} ${dtype} compute >= ${SPEED}x PyTorch: n/a (no PyTorch or no kernel)`);
        continue;
      }
      for (const one of [true, false]) {
        const where = one ? "both at 1 thread" : `both at their defaults (${threads} threads)`;
        lines.push(
          verdict(
            `${suite} ${dtype} compute >= ${SPEED}x PyTorch, or >= ${
              100 * COPY_SHARE
            }% of copy (or of the memory floor) where memory-bound, ${where}`,
            compared.flatMap((r) => speedFailure(r, one, machine) ?? []),
          ),
        );
      }
    }
  }
  const large = rows.filter((r) => r.c.large);
  const hostScales = machine !== null && machine.copy >= HOST_SCALES && machine.simd >= HOST_SCALES;
  const scalingFailures = large.flatMap((r) => {
    const share = copyShare(r, r.ms.oursAllOut, false, machine);
    return r.paired.oursScaling >= SCALING || (share !== null && share >= COPY_SHARE) ? [] : [
      `${r.c.id} ${r.dtype} ${r.paired.oursScaling.toFixed(2)}x (${percent(share)} of copy, ` +
      `C threads ${ratioText(r.paired.hostScaling)})`,
    ];
  });
  lines.push(
    hostScales
      ? verdict(
        `large cases at the default >= ${SCALING}x one thread, or >= ${
          100 * COPY_SHARE
        }% of the ${threads}-thread copy (compute)`,
        scalingFailures,
      )
      : `large cases at the default >= ${SCALING}x one thread: n/a (this host's copy and SIMD loop ` +
        `scale below ${HOST_SCALES}x; ${scalingFailures.length} case(s) below)`,
  );
  lines[lines.length - 1] += `; ${machineText(machine)}`;
  lines.push(
    verdict(
      "every case at the default >= 0.97x its threads: 1 speed (compute, paired)",
      rows.filter((r) => r.paired.oursScaling < 0.97).map((r) =>
        `${r.c.id} ${r.dtype} ${r.paired.oursScaling.toFixed(2)}x` +
        (r.c.large ? ` (C threads ${ratioText(r.paired.hostScaling)})` : "")
      ),
    ),
  );
  const tiny = rows.filter((r) => !r.c.large);
  lines.push(
    verdict(
      `tiny calls (allocating, + synchronize) at the default within 10 % of ${TINY_US.forward} µs ` +
        `forward / ${TINY_US.backward} µs backward`,
      tiny.flatMap((r) => {
        const bar = r.c.forward ? TINY_US.forward : TINY_US.backward;
        const us = 1000 * r.ms.oursAllAlloc;
        return us > 1.1 * bar ? [`${r.c.id} ${r.dtype} ${us.toFixed(2)} µs`] : [];
      }),
    ),
  );
  lines.push(
    verdict(
      "tiny calls at the default within 10 % of one thread (wall time, CPU time; paired)",
      tiny.flatMap((r) => [
        ...(r.paired.oursAllocScaling < 1 / 1.1
          ? [`${r.c.id} ${r.dtype} ${(1 / r.paired.oursAllocScaling).toFixed(2)}x the time`]
          : []),
        ...(r.paired.cpuScaling < 1 / 1.1
          ? [`${r.c.id} ${r.dtype} ${(1 / r.paired.cpuScaling).toFixed(2)}x the CPU time`]
          : []),
      ]),
    ),
  );
  // float16 against bfloat16 on the same nearest-exact case, both at the default.
  const f16 = large.filter((r) => r.c.op !== "bilinear2d" && r.dtype === "float16");
  if (f16.length > 0) {
    lines.push(
      verdict(
        "nearest-exact float16 >= the bfloat16 GB/s of the same case (default threads, compute)",
        f16.flatMap((r) => {
          const bf = rows.find((b) => b.c === r.c && b.dtype === "bfloat16");
          const a = gbs(r, r.ms.oursAllOut)!, b = bf ? gbs(bf, bf.ms.oursAllOut)! : 0;
          return bf && a < b ? [`${r.c.id} ${a.toFixed(2)} < ${b.toFixed(2)} GB/s`] : [];
        }),
      ),
    );
  }
  return lines;
}
