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
