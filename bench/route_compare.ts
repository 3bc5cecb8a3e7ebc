/**
 * The deterministic route of bilinear backward against the single launch it replaces, on the
 * emulated NPU of this process's SoC (`ACLEMU_SOC`, read once per process; default an A2/A3) and
 * on the CPU device reference of the same SoC: launches, bytes the kernels move, device memory
 * held, and the median time per call of each, in one run.
 *
 *     deno task bench:route                        # A2/A3 (Ascend910B3)
 *     ACLEMU_SOC=Ascend910A deno task bench:route  # the Atlas training series
 *
 * @module
 */

import { Device, upsampleBilinear2dBackward } from "../mod.ts";
import { generationOfSoc } from "../src/rules/generation.ts";
import { deterministicRoute } from "../src/rules/route.ts";
import { EMU_DIR } from "./emu.ts";
import { formatMiB, formatMs, markdownTable, median } from "./stats.ts";

interface Shape {
  readonly name: string;
  readonly grad: readonly [number, number, number, number];
  readonly image: readonly [number, number];
}

const SHAPES: readonly Shape[] = [
  { name: "2x8 128x128 -> 64x64", grad: [2, 8, 128, 128], image: [64, 64] },
  { name: "1x16 256x256 -> 128x128", grad: [1, 16, 256, 256], image: [128, 128] },
  { name: "1x4 60x1200 -> 100x1000", grad: [1, 4, 60, 1200], image: [100, 1000] },
];
const RUNS = 7;

const soc = Deno.env.get("ACLEMU_SOC") || "Ascend910B3";
const generation = generationOfSoc(soc).generation;
if (generation === "950") {
  console.log("the Ascend 950 switches its own kernels: no route to compare");
  Deno.exit(0);
}

async function time(device: Device, shape: Shape, deterministic: boolean): Promise<number> {
  const [n, c, outH, outW] = shape.grad;
  const values = Float32Array.from({ length: n * c * outH * outW }, (_, i) => Math.sin(i));
  using grad = device.tensor(values, shape.grad);
  using out = device.zeros([n, c, ...shape.image]);
  const options = {
    outputSize: [outH, outW],
    inputSize: [n, c, ...shape.image],
    // A2/A3's V2 runs its own kernel unless it falls back: a scale on H alone makes it.
    scalesH: generation === "a2" ? outH / shape.image[0] : undefined,
    deterministic,
    out,
  };
  upsampleBilinear2dBackward(grad, options); // warm-up: executors, tables
  await device.synchronize();
  const times: number[] = [];
  for (let k = 0; k < RUNS; k++) {
    const start = performance.now();
    upsampleBilinear2dBackward(grad, options);
    await device.synchronize();
    times.push(performance.now() - start);
  }
  return median(times);
}

using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
using cpu = Device.open({ backend: "cpu", numerics: "device", soc });
const rows: string[][] = [[
  "call",
  "launches 1 / route",
  "bytes moved 1 / route",
  "held by route",
  "emulation ms 1 / route",
  "CPU reference ms 1 / route",
]];
for (const shape of SHAPES) {
  const [n, c, outH, outW] = shape.grad;
  const [inH, inW] = shape.image;
  const call = {
    op: "bilinear2d" as const,
    dtype: "float32" as const,
    inputSize: [n, c, inH, inW],
    outputSize: [outH, outW],
    scales: [0, 0],
    alignCorners: false,
  };
  const { route } = deterministicRoute(call, generation, false);
  if (route === null) continue;
  const single = 4 * n * c * (outH * outW + inH * inW);
  const cells: string[] = [
    shape.name,
    `1 / ${route.kernels.length}`,
    `${formatMiB(single)} / ${formatMiB(route.bytesMoved)}`,
    formatMiB(route.intermediateBytes),
  ];
  for (const device of [npu, cpu]) {
    const one = await time(device, shape, false);
    const routed = await time(device, shape, true);
    cells.push(`${formatMs(one)} / ${formatMs(routed)} (x${(routed / one).toFixed(2)})`);
  }
  rows.push(cells);
}
console.log(`${soc} (${generation}), float32, median of ${RUNS} calls each, this machine:\n`);
console.log(markdownTable(rows));
