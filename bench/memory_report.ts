/**
 * Runs `rss_probe.ts` in fresh Deno processes and formats what it finds: peak RSS of the largest case
 * against baseline + data, and RSS over 10 000 tiny calls.
 *
 * @module
 */

import type { GrowthReport, PeakReport } from "./rss_probe.ts";
import { formatMiB } from "./stats.ts";

const PROBE = new URL("./rss_probe.ts", import.meta.url).pathname;

/** One probe run: its parsed report, or an error message. */
async function probe(
  mode: "peak" | "growth",
  backend: "cpu" | "npu" | "control",
): Promise<unknown> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-ffi",
      "--allow-env",
      "--allow-read",
      "--v8-flags=--expose-gc",
      PROBE,
      mode,
      backend,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout).trim().split("\n").at(-1) ?? "";
  if (!output.success || !text.startsWith("{")) {
    return { error: new TextDecoder().decode(output.stderr).trim().split("\n")[0] };
  }
  return JSON.parse(text);
}

/** What grew over the 10 000 measured calls, in bytes. */
export interface Growth {
  /** Resident set. */
  rss: number;
  /** Resident set minus V8's reserved heap (`heapTotal`): native memory. */
  outsideHeap: number;
  /** V8 `heapUsed`: live JS objects. */
  heap: number;
}

/** Memory findings, for the summary of targets. */
export interface MemoryFindings {
  /** Printable lines. */
  lines: string[];
  /** Peak over the loop / (baseline + data), per backend. */
  peakRatio: Record<string, number>;
  /** Growth (bytes) over the 10 000 measured calls, per backend (and the control). */
  growth: Record<string, Growth>;
}

function peakLines(r: PeakReport, findings: MemoryFindings): void {
  const expected = r.baseline + r.data;
  const ratio = r.peak / expected;
  findings.peakRatio[r.backend] = ratio;
  findings.lines.push(
    `peak RSS, ${r.backend}, ${r.caseId} float32: baseline ${formatMiB(r.baseline)} + data ` +
      `(gradOutput + gradInput) ${formatMiB(r.data)} = ${formatMiB(expected)}; first call ` +
      `${formatMiB(r.first)} (${(r.first / expected).toFixed(2)}x); ${r.calls} calls in a row ` +
      `${formatMiB(r.peak)} (${ratio.toFixed(2)}x); just after device.tensor(values) ` +
      `${formatMiB(r.afterCreate)}; getrusage max ${formatMiB(r.maxrss)}`,
  );
}

function growthLines(r: GrowthReport, findings: MemoryFindings): void {
  const rss = r.samples.at(-1)! - r.samples[0];
  const reserved = r.total.at(-1)! - r.total[0];
  const heap = r.heap.at(-1)! - r.heap[0];
  findings.growth[r.backend] = { rss, outsideHeap: rss - reserved, heap };
  const mib = (b: number): string => (b / 2 ** 20).toFixed(2);
  const kib = (b: number): string => `${b >= 0 ? "+" : ""}${(b / 1024).toFixed(0)} KiB`;
  findings.lines.push(
    `RSS over ${r.calls} tiny calls after warm-up, ${r.backend}: ${
      r.samples.map(mib).join(" -> ")
    } MiB every 2 000 calls (${kib(rss)}; V8 heap reserved ${kib(reserved)}, so ${
      kib(rss - reserved)
    } outside the V8 heap); V8 heapUsed ${kib(heap)}; after ${r.extendedCalls} calls ` +
      `${mib(r.extendedRss)} MiB (V8 heap reserved ${kib(r.extendedTotal - r.total[0])})` +
      (r.live ? `; emulator live: ${r.live.before} -> ${r.live.after}` : ""),
  );
}

const PROBES = [
  ["peak", "cpu"],
  ["peak", "npu"],
  ["growth", "cpu"],
  ["growth", "npu"],
  ["growth", "control"],
] as const;

/**
 * Runs the probes one after another: peak (CPU, emulated NPU), growth (CPU, emulated NPU, and the
 * same loop without the library as a control).
 */
export async function memoryReport(): Promise<MemoryFindings> {
  const findings: MemoryFindings = { lines: [], peakRatio: {}, growth: {} };
  for (const [mode, backend] of PROBES) {
    const report = await probe(mode, backend) as PeakReport | GrowthReport | { error: string };
    if ("error" in report) findings.lines.push(`${mode} ${backend}: ${report.error}`);
    else if (report.kind === "peak") peakLines(report, findings);
    else growthLines(report, findings);
  }
  return findings;
}
