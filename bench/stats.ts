/**
 * Small measurement helpers: medians, a memory-copy bandwidth reference, number formatting.
 *
 * @module
 */

/** Median of a non-empty list (mean of the two middle values for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError("median of an empty list");
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Memory-copy bandwidth of this process in GB/s, counted like the ops' effective bandwidth (bytes
 * read + bytes written): median of `reps` runs of `Float32Array.prototype.set` copying `bytes`
 * between two buffers much larger than the caches.
 */
export function copyBandwidthGBs(bytes = 128 * 2 ** 20, reps = 9): number {
  const src = new Float32Array(bytes / 4).fill(1.5);
  const dst = new Float32Array(bytes / 4);
  dst.set(src); // touch every page of both buffers first
  const times: number[] = [];
  for (let r = 0; r < reps; r++) {
    const start = performance.now();
    dst.set(src);
    times.push(performance.now() - start);
  }
  return (2 * bytes) / (median(times) * 1e-3) / 1e9;
}

/** Milliseconds with 3 significant digits (µs below 0.1 ms). */
export function formatMs(ms: number): string {
  if (ms < 0.1) return `${(ms * 1000).toPrecision(3)} µs`;
  return ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0);
}

/** Bytes as MiB with one decimal. */
export function formatMiB(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

/** Renders a Markdown table (first row is the header) with padded columns. */
export function markdownTable(rows: readonly (readonly string[])[]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  const line = (row: readonly string[]): string =>
    `| ${row.map((cell, i) => cell.padEnd(widths[i])).join(" | ")} |`;
  const rule = `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`;
  return [line(rows[0]), rule, ...rows.slice(1).map(line)].join("\n");
}
