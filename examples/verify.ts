/**
 * NPU-vs-CPU verification: runs random configurations of the three ops on the NPU (real CANN, or the host
 * emulation via `ACLNN_LIB_DIR=native/build`) and on the CPU backend, and reports the largest difference.
 * Exits 1 when a float32 nearest-exact result is not bit-identical or a bilinear one is off by more than
 * 4 ulp. Run it on an NPU host after `source set_env.sh`:
 *
 *     deno run --allow-ffi --allow-env --allow-read examples/verify.ts --cases 200 --seed 1
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  Device,
  type DType,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../mod.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: { cases: { type: "string", default: "100" }, seed: { type: "string", default: "1" } },
});

let state = Number(args.seed) >>> 0;
const random = (): number => {
  state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
  return state / 2 ** 32;
};
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];

function ulps(a: number, b: number): number {
  if (Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b))) return 0;
  const i = new Int32Array(new Float32Array([a, b]).buffer);
  const key = (x: number): number => (x < 0 ? -2147483648 - x : x);
  return Math.abs(key(i[0]) - key(i[1]));
}

using npu = Device.open({ backend: "npu" });
using cpu = Device.open({ backend: "cpu" });
console.log(`verifying ${npu.name} against the CPU backend`);

let worst = 0;
let failures = 0;
for (let k = 0; k < Number(args.cases); k++) {
  const op = pick(["nearestExact1d", "nearestExact2d", "bilinear2d"] as const);
  const dtype: DType = pick(["float32", "float32", "float16", "bfloat16"] as const);
  const spatial = op === "nearestExact1d" ? 1 : 2;
  const inputSize = [1 + Math.floor(random() * 3), 1 + Math.floor(random() * 4)];
  const outputSize: number[] = [];
  const scales: number[] = [];
  for (let d = 0; d < spatial; d++) {
    const size = 1 + Math.floor(random() * 40);
    const scale = random() < 0.5 ? 0 : pick([0.5, 0.6, 1.3, 1.7, 2, 2.5]);
    inputSize.push(size);
    outputSize.push(
      scale > 0 ? Math.max(1, Math.floor(size * scale)) : 1 + Math.floor(random() * 40),
    );
    scales.push(scale > 0 && Math.floor(size * scale) >= 1 ? scale : 0);
  }
  const alignCorners = random() < 0.5;
  const gradShape = [inputSize[0], inputSize[1], ...outputSize];
  const count = gradShape.reduce((a, b) => a * b, 1);
  const values = Float32Array.from({ length: count }, () => random() * 4 - 2);
  const run = (device: Device): Tensor => {
    using grad = device.tensor(values, gradShape, { dtype });
    if (op === "nearestExact1d") {
      return upsampleNearestExact1dBackward(grad, { outputSize, inputSize, scales: scales[0] });
    }
    const options = { outputSize, inputSize, scalesH: scales[0], scalesW: scales[1] };
    return op === "nearestExact2d"
      ? upsampleNearestExact2dBackward(grad, options)
      : upsampleBilinear2dBackward(grad, { ...options, alignCorners });
  };
  let a: Float32Array, b: Float32Array;
  try {
    using onNpu = run(npu);
    using onCpu = run(cpu);
    [a, b] = [await onNpu.toFloat32Array(), await onCpu.toFloat32Array()];
  } catch (error) {
    if (error instanceof RangeError) continue; // a configuration the rules reject (e.g. > 50x)
    throw error;
  }
  let caseWorst = 0;
  for (let i = 0; i < a.length; i++) caseWorst = Math.max(caseWorst, ulps(a[i], b[i]));
  worst = Math.max(worst, caseWorst);
  const allowed = dtype === "float32" ? (op === "bilinear2d" ? 4 : 0) : 1;
  if (caseWorst > allowed) {
    failures++;
    console.log(
      `MISMATCH ${op} ${dtype} grad [${gradShape}] -> [${inputSize}] scales [${scales}]: ` +
        `${caseWorst} ulp`,
    );
  }
}
console.log(`${args.cases} cases, worst difference ${worst} ulp, ${failures} mismatches`);
if (failures > 0) Deno.exit(1);
