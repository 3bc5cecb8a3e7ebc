/**
 * The seeded random mix of op calls the Ascend 950 tests run through the library (emulation and CPU
 * reference) and compare with the independent model: shrinking, enlarging and equal sizes, scales on
 * one, both or no dimensions whose reciprocal is or is not the size ratio, every dtype, deterministic
 * on and off, bilinear V1 and V2, align_corners; gradients of |g| in [0.5, 1].
 *
 * @module
 */

import type { DType } from "../../mod.ts";
import { type Arch35Call, roundTo } from "./ascend950_model.ts";

/** An op of the mix. */
export type Op = "nearestExact1d" | "nearestExact2d" | "bilinear2d";

/** One call of the mix. */
export interface MixCall {
  op: Op;
  inputSize: number[];
  outputSize: number[];
  scales: number[];
  alignCorners: boolean;
  dtype: DType;
  deterministic: boolean;
  api: "v1" | "v2";
}

/** A gradient of |g| in [0.5, 1] with random signs, in the dtype (rounded by the model's own rounding). */
export function gradient(next: () => number, count: number, dtype: DType): Float32Array {
  return Float32Array.from(
    { length: count },
    () => roundTo(dtype, (next() < 0.5 ? -1 : 1) * (0.5 + next() / 2)),
  );
}

/** One spatial dimension: shrinking, enlarging or equal, with a scale or none. */
function dimension(
  next: () => number,
  op: Op,
): { inSize: number; outSize: number; scale: number } {
  const mode = next();
  const inSize = 1 + Math.floor(next() * 9);
  const outSize = mode < 0.4
    ? 1 + Math.floor(next() * inSize) // shrinking (or equal when it draws inSize)
    : mode < 0.85
    ? inSize + 1 + Math.floor(next() * 11) // enlarging
    : inSize; // equal
  const kind = next();
  let scale = 0;
  // The library takes a scale only when outputSize == floor(inputSize * scale) (PyTorch's rule).
  if (kind < 0.35) scale = outSize / inSize; // 1/scale is the size ratio
  else if (kind < 0.7) scale = (outSize + 0.05 + next() * 0.9) / inSize; // it is not
  // nearest-exact: at most 50x (the op_api's limit).
  if (op !== "bilinear2d" && scale > 0 && 1 / scale < 0.02) scale = 0;
  return { inSize, outSize, scale };
}

/** Draws one call. */
export function randomCall(next: () => number): MixCall {
  const op = (["nearestExact1d", "nearestExact2d", "bilinear2d"] as const)[Math.floor(next() * 3)];
  const api = op === "bilinear2d" && next() < 0.3 ? "v1" : "v2";
  const alignCorners = op === "bilinear2d" && next() < 0.3;
  // V1 on the 950 takes the scales and bfloat16 too (it runs ResizeBilinearV2Grad with them; the
  // binding's refusals of both are A2/A3 rules).
  const dtypes: DType[] = ["float32", "float16", "bfloat16"];
  const dtype = dtypes[Math.floor(next() * dtypes.length)];
  const dims = Array.from(
    { length: op === "nearestExact1d" ? 1 : 2 },
    () => dimension(next, op),
  );
  // Scales on one dimension, both, or none (as drawn): drop one now and then.
  if (dims.length === 2 && next() < 0.25) dims[Math.floor(next() * 2)].scale = 0;
  // Equal sizes on every dimension (copies, or a gather with a scale) now and then.
  if (next() < 0.12) { for (const d of dims) d.outSize = d.inSize; }
  for (const d of dims) {
    if (d.scale > 0 && Math.floor(d.inSize * d.scale) !== d.outSize) d.scale = 0;
  }
  return {
    op,
    inputSize: [
      1 + Math.floor(next() * 2),
      1 + Math.floor(next() * 3),
      ...dims.map((d) => d.inSize),
    ],
    outputSize: dims.map((d) => d.outSize),
    scales: dims.map((d) => d.scale),
    alignCorners,
    dtype,
    deterministic: next() < 0.5,
    api,
  };
}

/** The model's view of a call, with the FMA setting of the device. */
export function arch35Call(call: MixCall, fma: boolean): Arch35Call {
  return {
    op: call.op,
    inputSize: call.inputSize,
    outputSize: call.outputSize,
    scales: call.scales,
    alignCorners: call.alignCorners,
    bilinearApi: call.api,
    gradDtype: call.dtype,
    deterministic: call.deterministic,
    fma,
  };
}

/** A call in words, for messages. */
export function describe(call: MixCall): string {
  return `${call.op} ${call.api} ${call.dtype} inputSize [${call.inputSize}] outputSize ` +
    `[${call.outputSize}] scales [${call.scales}] alignCorners ${call.alignCorners} ` +
    `deterministic ${call.deterministic}`;
}
