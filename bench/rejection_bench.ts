/**
 * `deno bench bench/rejection_bench.ts`: what a rejected call costs, per backend, next to a valid tiny
 * call (launch and synchronize; the baseline of each group). Validation runs before anything is
 * allocated, so a rejection costs the same whatever the sizes (2^53 elements included): a few
 * microseconds, more than a whole tiny call on the CPU backend and less than one on the emulated NPU.
 * `tests/api/robustness_invalid_test.ts` checks that rejections allocate and launch nothing and leaves
 * their speed to this benchmark.
 *
 * @module
 */

import { Device, upsampleBilinear2dBackward, upsampleNearestExact2dBackward } from "../mod.ts";
import { openEmulatedNpu } from "./emu.ts";

const npuOrReason = openEmulatedNpu();
const devices: [string, Device | null][] = [
  ["cpu", Device.open({ backend: "cpu" })],
  ["npu-emulated", typeof npuOrReason === "string" ? null : npuOrReason],
];
if (typeof npuOrReason === "string") console.warn(`rejection_bench: ${npuOrReason}`);

/** Calls `fn`, which must throw `kind`; anything else fails the bench. */
function rejects(kind: ErrorConstructor, fn: () => { dispose(): void }): void {
  try {
    fn().dispose();
  } catch (error) {
    if (error instanceof kind) return;
    throw error;
  }
  throw new Error(`expected a ${kind.name}`);
}

for (const [label, device] of devices) {
  const grad = device?.zeros([1, 2, 8, 8]);
  const disposed = device?.zeros([1, 2, 8, 8]);
  disposed?.dispose();
  const inputSize = [1, 2, 4, 4];
  const group = `rejected calls, ${label}`;
  const cases: [string, () => void | Promise<void>][] = [
    ["valid tiny call", async () => {
      using _result = upsampleNearestExact2dBackward(grad!, { outputSize: [8, 8], inputSize });
      await device!.synchronize();
    }],
    [
      "inputSize past 2^53 elements",
      () =>
        rejects(RangeError, () =>
          upsampleNearestExact2dBackward(grad!, {
            outputSize: [8, 8],
            inputSize: [1, 2, 2 ** 27, 2 ** 27],
          })),
    ],
    [
      "outputSize against gradOutput",
      () =>
        rejects(
          RangeError,
          () => upsampleNearestExact2dBackward(grad!, { outputSize: [8, 9], inputSize }),
        ),
    ],
    [
      "NaN scalesH",
      () =>
        rejects(
          RangeError,
          () => upsampleBilinear2dBackward(grad!, { outputSize: [8, 8], inputSize, scalesH: NaN }),
        ),
    ],
    [
      "disposed gradOutput",
      () =>
        rejects(
          TypeError,
          () => upsampleNearestExact2dBackward(disposed!, { outputSize: [8, 8], inputSize }),
        ),
    ],
  ];
  for (const [name, fn] of cases) {
    Deno.bench({ name, group, baseline: name === "valid tiny call", ignore: device === null, fn });
  }
}
