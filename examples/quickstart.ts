/**
 * Quickstart: a training step's pair (the bilinear forward op, a loss gradient, its backward), then
 * the three backward ops on a small gradient; prints the backend, the shapes and a few values. Uses the NPU when CANN loads (`ACLNN_LIB_DIR` may point at a CANN `lib64` folder or at the
 * host emulation in `native/build`), else the CPU backend.
 *
 *     deno task demo
 *     ACLNN_LIB_DIR=native/build deno task demo
 *
 * @module
 */

import {
  Device,
  upsampleBilinear2d,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../mod.ts";

const fmt = (values: Float32Array, count = 8): string =>
  [...values.slice(0, count)].map((v) => v.toFixed(4)).join(", ") +
  (values.length > count ? ", ..." : "");

using device = Device.open();
console.log(`backend: ${device.backend}, device: ${device.name}`);
// Why there is no NPU (every place searched, and the fix); `deno task doctor` tells more.
if (device.fallbackReason) console.log(`no NPU: ${device.fallbackReason}`);

// A training step's pair: y = interpolate(x, size=[8, 10], mode="bilinear"), the loss
// 0.5 * sum((y - target)^2), its gradient dL/dy = y - target, and dL/dx from the backward op.
const xValues = Array.from({ length: 2 * 3 * 4 * 5 }, (_, i) => Math.cos(i * 0.3));
using x = device.tensor(xValues, [2, 3, 4, 5]);
using y = upsampleBilinear2d(x, { outputSize: [8, 10] });
const yValues = await y.toFloat32Array();
const target = 0.25;
using dLdy = device.tensor(yValues.map((v) => v - target), [2, 3, 8, 10]);
using dLdx = upsampleBilinear2dBackward(dLdy, { outputSize: [8, 10], inputSize: [2, 3, 4, 5] });
const loss = yValues.reduce((sum, v) => sum + 0.5 * (v - target) ** 2, 0);
console.log(`training step: x [${x.shape}] -> y [${y.shape}], loss ${loss.toFixed(4)}`);
console.log(`  dL/dx ${fmt(await dLdx.toFloat32Array())}`);

// A forward op upsampled [2, 3, 4, 5] to [2, 3, 8, 10]; this is the gradient flowing back.
const gradValues = Array.from({ length: 2 * 3 * 8 * 10 }, (_, i) => Math.sin(i) * 0.5);
using grad = device.tensor(gradValues, [2, 3, 8, 10]);

using nearest = upsampleNearestExact2dBackward(grad, {
  outputSize: [8, 10],
  inputSize: [2, 3, 4, 5],
});
console.log(`nearest-exact 2d: [${grad.shape}] -> [${nearest.shape}]`);
console.log(`  ${fmt(await nearest.toFloat32Array())}`);

using bilinear = upsampleBilinear2dBackward(grad, {
  outputSize: [8, 10],
  inputSize: [2, 3, 4, 5],
  alignCorners: false,
  scalesH: 2,
  scalesW: 2,
});
console.log(`bilinear 2d (scale 2): [${grad.shape}] -> [${bilinear.shape}]`);
console.log(`  ${fmt(await bilinear.toFloat32Array())}`);

using grad1d = device.tensor(gradValues.slice(0, 2 * 3 * 17), [2, 3, 17], { dtype: "bfloat16" });
using nearest1d = upsampleNearestExact1dBackward(grad1d, {
  outputSize: [17],
  inputSize: [2, 3, 10],
  deterministic: true,
});
console.log(`nearest-exact 1d bfloat16: [${grad1d.shape}] -> [${nearest1d.shape}]`);
console.log(`  ${fmt(await nearest1d.toFloat32Array())}`);
