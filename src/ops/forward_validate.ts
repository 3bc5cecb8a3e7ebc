/**
 * Argument checking of the forward ops, with the backward's rules where they are the same
 * (`validate.ts`): PyTorch's `upsample_*` ops take the input, the output size and the optional
 * scale factors that `interpolate(size=..., scale_factor=...)` passes down; the result has shape
 * `[N, C, ...outputSize]`.
 *
 * @module
 */

import { FORWARD_OP_SPECS, type UpsampleOp } from "../rules/ops.ts";
import type { Device } from "../device.ts";
import type { DType } from "../tensor/dtype.ts";
import { elementCount } from "../tensor/layout.ts";
import { isTensor, type Tensor } from "../tensor/tensor.ts";
import {
  checkOptionKeys,
  checkOut,
  fail,
  resolveFlags,
  resolveScale,
  show,
  sizeList,
} from "./validate.ts";

/** A forward call whose arguments passed every check. */
export interface ResolvedForward {
  /** Which op. */
  readonly op: UpsampleOp;
  /** The device of `input` (and `out`). */
  readonly device: Device;
  /** The input `x`. */
  readonly input: Tensor;
  /** Element type of `input` (and `out`). */
  readonly dtype: DType;
  /** Where to write, or `null` to allocate a contiguous result. */
  readonly out: Tensor | null;
  /** `input`'s shape: `[N, C, L]` or `[N, C, H, W]`. */
  readonly inputSize: readonly number[];
  /** `[L]` or `[H, W]`: the result's spatial size. */
  readonly outputSize: readonly number[];
  /** The result's shape, `[N, C, ...outputSize]` (made once: repeated calls allocate with it). */
  readonly resultShape: readonly number[];
  /** Scale factor per spatial dimension; 0 = derive from the sizes. */
  readonly scales: readonly number[];
  /** Bilinear only; false for the nearest-exact ops. */
  readonly alignCorners: boolean;
  /** Per-call deterministic mode, or the device's when not given. */
  readonly deterministic: boolean;
}

/**
 * Checks the arguments of one forward call and resolves them, or throws `TypeError` (wrong kinds,
 * ranks, dtypes, devices, disposed tensors) or `RangeError` (sizes, scales, overlap).
 *
 * @example
 * ```ts
 * import { Device } from "../device.ts";
 * import { resolveForward } from "./forward_validate.ts";
 * using device = Device.open({ backend: "cpu" });
 * using x = device.zeros([1, 1, 2]);
 * resolveForward("nearestExact1d", x, { outputSize: [4] }).inputSize; // [1, 1, 2]
 * ```
 */
export function resolveForward(op: UpsampleOp, input: unknown, options: unknown): ResolvedForward {
  const spec = FORWARD_OP_SPECS[op];
  const spatial = spec.spatial.length;
  const rank = spatial + 2;
  if (!isTensor(input)) fail(spec, TypeError, `input must be a Tensor, got ${typeof input}`);
  const x = input;
  if (x.disposed) fail(spec, TypeError, `input (${x}) was disposed or its device closed`);
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    fail(spec, TypeError, `options must be an object with outputSize, got ${show(options)}`);
  }
  const opts = options as Record<string, unknown>;
  checkOptionKeys(spec, opts);
  const shape = x.shape;
  if (shape.length !== rank) {
    fail(
      spec,
      TypeError,
      `input must be ${rank}-D [N, C, ${spec.spatial.join(", ")}], got shape ${show(shape)}`,
    );
  }
  const inputSize = [...shape];
  const outputSize = sizeList(opts.outputSize, "outputSize", spatial, spec);
  const inSpatial = inputSize.slice(2);
  const badIn = inSpatial.some((size) => size < 1);
  const badOut = outputSize.some((size) => size < 1);
  if (badIn || badOut) {
    const describe = (sizes: number[]): string =>
      sizes.map((size, i) => `${spec.spatial[i]}: ${size}`).join(", ");
    const which = badOut ? badIn ? "input and outputSize" : "outputSize" : "input";
    fail(
      spec,
      RangeError,
      `${which}: input and output sizes should be greater than 0, but got input ` +
        `(${describe(inSpatial)}) output (${describe(outputSize)})`,
    );
  }
  const resultShape = [inputSize[0], inputSize[1], ...outputSize];
  const count = elementCount(resultShape);
  if (count > Number.MAX_SAFE_INTEGER) {
    fail(
      spec,
      RangeError,
      `the result [N, C, ...outputSize] = ${show(resultShape)} has ${count} elements, more than ` +
        `2^53 - 1`,
    );
  }
  const keys = spec.scaleKeys;
  const scales = outputSize.map((size, i) =>
    // The forward ops have no enlargement limit (their op_api checks none; PyTorch has none).
    resolveScale(op, spec, i, opts[keys[i]], inputSize[2 + i], size, false)
  );
  const { alignCorners, deterministic } = resolveFlags(spec, opts, x.device);
  const out = opts.out === undefined || opts.out === null
    ? null
    : checkOut(spec, opts.out, x, "input", resultShape, "[N, C, ...outputSize]");
  return {
    op,
    device: x.device,
    input: x,
    dtype: x.dtype,
    out,
    inputSize,
    outputSize,
    resultShape,
    scales,
    alignCorners,
    deterministic,
  };
}
