/**
 * `deno task bench` on the NPU lanes, timed on the device: every case x dtype of `cases.ts` (the
 * backward ops, then the forward ops) on `npu`
 * (the CANN the library's own search finds, as on an Atlas host) and `npu-emulated` (the host
 * emulation), each iteration bracketed by two ACL events on the device's stream (`src/ffi/events.ts`).
 *
 * The `deno bench` rows are the host's view of one op end to end (launch, then wait for the end event).
 * When the run ends, a table adds what only the device knows, per lane, case and dtype (medians):
 * - device ms: `aclrtEventElapsedTime` between the events, the kernel time on the stream;
 * - launch µs: host time to validate, build descriptors and enqueue (the launch overhead);
 * - GB/s: effective bandwidth, bytes an op must move (its operand read once, its result written
 *   once) over the device time.
 *
 * Tiny cases call no `start()`/`end()` (Deno ignores them under ~10 µs per iteration and warns):
 * their rows time the whole iteration, the device ms column the kernel.
 *
 * A lane without an NPU or without ACL events is ignored with the reason printed.
 *
 * @module
 */

import type { Device, DType, Tensor } from "../mod.ts";
import { StreamTimer } from "../src/ffi/events.ts";
import { processLanes } from "../tests/support/lanes.ts";
import {
  BENCH_DTYPES,
  type BenchCase,
  bytesMoved,
  CASES,
  FORWARD_CASES,
  gradShape,
  makeGrad,
  runCase,
  sourceShape,
} from "./cases.ts";
import { EMU_DIR } from "./emu.ts";
import { npuBackendOf } from "./npu_probe.ts";
import { formatMs, markdownTable, median } from "./stats.ts";

/** Iterations of the large cases, as in `upsample_bench.ts`. */
const LARGE = { n: 15, warmup: 3 } as const;

interface Lane {
  label: string;
  device: Device | null;
  timer: StreamTimer | null;
}

const lanes: Lane[] = [];
for (const lane of processLanes(EMU_DIR).filter((lane) => lane.kind === "npu")) {
  if (lane.ignore !== undefined) {
    lanes.push({ label: lane.label, device: null, timer: null });
    continue;
  }
  const device = lane.open();
  try {
    lanes.push({ label: lane.label, device, timer: StreamTimer.create(npuBackendOf(device)) });
  } catch (error) {
    console.warn(`device_time_bench: ${lane.label} ignored: ${(error as Error).message}`);
    device.close();
    lanes.push({ label: lane.label, device: null, timer: null });
  }
}

const samples = new Map<string, { deviceMs: number[]; hostMs: number[] }>();
const grads = new Map<Device, { key: string; grad: Tensor }>();

function gradFor(device: Device, c: BenchCase, dtype: DType): Tensor {
  const key = `${c.id}/${dtype}`;
  const have = grads.get(device);
  if (have?.key === key) return have.grad;
  have?.grad.dispose();
  const grad = makeGrad(device, c, dtype);
  grads.set(device, { key, grad });
  return grad;
}

const ALL_CASES = [...CASES, ...FORWARD_CASES];

for (const c of ALL_CASES) {
  for (const dtype of BENCH_DTYPES) {
    for (const lane of lanes) {
      const key = `${lane.label}\u0000${c.id}\u0000${dtype}`;
      Deno.bench({
        name: `${lane.label} (device-timed)`,
        group: `device ${c.label} [${
          (c.forward ? sourceShape(c) : gradShape(c)).join(",")
        }] ${dtype}`,
        ignore: lane.timer === null,
        ...(c.large ? LARGE : {}),
        async fn(b: Deno.BenchContext): Promise<void> {
          const device = lane.device!;
          const grad = gradFor(device, c, dtype);
          let result: Tensor | null = null;
          if (c.large) b.start();
          const timing = await lane.timer!.time(() => {
            result = runCase(grad, c);
          });
          if (c.large) b.end();
          // Outside the measured region: the backend learns the stream is idle, so the result's memory
          // is freed now rather than deferred into a later launch.
          await device.synchronize();
          (result as Tensor | null)?.dispose();
          let entry = samples.get(key);
          if (entry === undefined) samples.set(key, entry = { deviceMs: [], hostMs: [] });
          entry.deviceMs.push(timing.deviceMs);
          entry.hostMs.push(timing.hostMs);
        },
      });
    }
  }
}

globalThis.addEventListener("unload", () => {
  const rows: string[][] = [["lane", "case", "dtype", "device ms", "launch µs", "GB/s"]];
  for (const c of ALL_CASES) {
    for (const dtype of BENCH_DTYPES) {
      for (const lane of lanes) {
        const entry = samples.get(`${lane.label}\u0000${c.id}\u0000${dtype}`);
        if (entry === undefined) continue;
        const deviceMs = median(entry.deviceMs);
        const gbs = deviceMs > 0 ? bytesMoved(c, dtype) / (deviceMs * 1e6) : Infinity;
        rows.push([
          lane.label,
          c.label,
          dtype,
          formatMs(deviceMs),
          (median(entry.hostMs) * 1000).toFixed(1),
          gbs.toFixed(2),
        ]);
      }
    }
  }
  for (const lane of lanes) {
    lane.timer?.dispose();
    lane.device?.close();
  }
  if (rows.length > 1) {
    console.log(`\nDevice-side timing (ACL events on the stream; medians)\n${markdownTable(rows)}`);
  }
});
