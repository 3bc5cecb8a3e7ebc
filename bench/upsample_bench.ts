/**
 * `deno task bench`: every op x dtype of the shape suite (`cases.ts`: the backward ops' `CASES`,
 * then the forward ops' `FORWARD_CASES`, in every dtype of the library) on the CPU backend (baseline: the
 * WebAssembly SIMD kernels at the default thread count), the same at one thread, the same backend
 * with its TypeScript kernels only, the emulated NPU and the real one (the lanes of `tests/support/lanes.ts`:
 * `npu` is the CANN the library's own search finds, ignored with the reason printed where there is
 * none), one `deno bench` group per case and dtype. Kernel time measured on the device:
 * `device_time_bench.ts`.
 *
 * Measured per iteration: the op through the public API (validation, result allocation, launch),
 * `await device.synchronize()` (the NPU backend waits for its stream on a worker thread) and
 * `dispose()` of the result. Building the input tensor is outside the measured region (large cases:
 * `start()`/`end()` around the op; tiny cases: the iteration is the op alone, its input cached,
 * since Deno ignores `start()`/`end()` in iterations under ~10 µs and warns).
 *
 * @module
 */

import { Device, type DType, type Tensor } from "../mod.ts";
import {
  BENCH_DTYPES,
  type BenchCase,
  CASES,
  FORWARD_CASES,
  gradShape,
  makeGrad,
  runCase,
  sourceShape,
} from "./cases.ts";
import { processLanes } from "../tests/support/lanes.ts";
import { EMU_DIR } from "./emu.ts";

/** Iterations of the large cases (tens of ms each): enough for a stable mean, a few minutes in all. */
const LARGE = { n: 15, warmup: 3 } as const;

// The lanes (cpu, cpu-typescript, npu-emulated, npu), plus the CPU at one thread after "cpu".
const devices = processLanes(EMU_DIR).flatMap((lane) => {
  const entry = {
    label: lane.label as string,
    device: lane.ignore === undefined ? lane.open() : null,
  };
  if (lane.label !== "cpu") return [entry];
  return [entry, { label: "cpu-1-thread", device: Device.open({ backend: "cpu", threads: 1 }) }];
});

/** The gradient tensor in use per device; replaced (and the old one disposed) when the case changes. */
const current = new Map<Device, { key: string; grad: Tensor }>();

function gradFor(device: Device, c: BenchCase, dtype: DType): Tensor {
  const key = `${c.id}/${dtype}`;
  const have = current.get(device);
  if (have?.key === key) return have.grad;
  have?.grad.dispose();
  const grad = makeGrad(device, c, dtype);
  current.set(device, { key, grad });
  return grad;
}

function register(c: BenchCase, dtype: DType, label: string, device: Device | null): void {
  Deno.bench({
    name: label,
    group: `${c.label} [${(c.forward ? sourceShape(c) : gradShape(c)).join(",")}] ${dtype}`,
    baseline: label === "cpu",
    ignore: device === null,
    ...(c.large ? LARGE : {}),
    async fn(b: Deno.BenchContext): Promise<void> {
      const d = device as Device;
      const grad = gradFor(d, c, dtype);
      if (c.large) b.start();
      const result = runCase(grad, c);
      await d.synchronize();
      result.dispose();
      if (c.large) b.end();
    },
  });
}

// Every dtype the library runs, the forward ops included (PyTorch's missing kernels do not matter here).
for (const c of [...CASES, ...FORWARD_CASES]) {
  for (const dtype of BENCH_DTYPES) {
    for (const { label, device } of devices) register(c, dtype, label, device);
  }
}
