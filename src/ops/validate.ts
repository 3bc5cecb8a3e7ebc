/**
 * Argument checking and size/scale resolution shared by every backend. Everything here runs before any
 * allocation or launch, and every error names the argument, the value and the rule.
 *
 * @module
 */

import { MAX_NEAREST_SCALE, OP_SPECS, type OpSpec, type UpsampleOp } from "../rules/ops.ts";
import type { Device } from "../device.ts";
import type { DType } from "../tensor/dtype.ts";
import { elementCount, storageSpan } from "../tensor/layout.ts";
import { isTensor, type Tensor, tensorInternals } from "../tensor/tensor.ts";

/** A call whose arguments passed every check. */
export interface ResolvedUpsample {
  /** Which op. */
  readonly op: UpsampleOp;
  /** The device of `gradOutput` (and `out`). */
  readonly device: Device;
  /** The incoming gradient. */
  readonly gradOutput: Tensor;
  /** Element type of `gradOutput` (and `out`). */
  readonly dtype: DType;
  /** Where to write, or `null` to allocate a contiguous result. */
  readonly out: Tensor | null;
  /** `[N, C, L]` or `[N, C, H, W]`. */
  readonly inputSize: readonly number[];
  /** `[L]` or `[H, W]`. */
  readonly outputSize: readonly number[];
  /** Scale factor per spatial dimension; 0 = derive from the sizes. */
  readonly scales: readonly number[];
  /** Bilinear only; false for the nearest-exact ops. */
  readonly alignCorners: boolean;
  /** Per-call deterministic mode, or the device's when not given. */
  readonly deterministic: boolean;
}

// Describes a value for a message. Never throws (objects without a usable toString, throwing getters)
// and stays short: only the first elements of an array are shown, however long (or sparse) it is.
const SHOW_ELEMENTS = 8;
export const show = (value: unknown): string => {
  if (Array.isArray(value)) {
    const head = Array.from({ length: Math.min(value.length, SHOW_ELEMENTS) }, (_, i) => value[i]);
    const more = value.length > SHOW_ELEMENTS ? `, ... (${value.length} elements)` : "";
    return `[${head.map(show).join(", ")}${more}]`;
  }
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (Object.is(value, -0)) return "-0";
  if (ArrayBuffer.isView(value)) {
    const length = (value as { length?: number }).length ?? value.byteLength;
    return `${Object.prototype.toString.call(value).slice(8, -1)}(${length})`;
  }
  try {
    const text = String(value);
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  } catch {
    return Object.prototype.toString.call(value);
  }
};

/**
 * Checks the arguments of one op call and resolves them, or throws `TypeError` (wrong kinds, ranks,
 * dtypes, devices, disposed tensors) or `RangeError` (sizes, scales, overlap).
 *
 * @example
 * ```ts
 * import { Device } from "../device.ts";
 * import { resolveUpsample } from "./validate.ts";
 * using device = Device.open({ backend: "cpu" });
 * using grad = device.zeros([1, 1, 4]);
 * resolveUpsample("nearestExact1d", grad, { outputSize: [4], inputSize: [1, 1, 2] }).scales; // [0]
 * ```
 */
export function resolveUpsample(
  op: UpsampleOp,
  gradOutput: unknown,
  options: unknown,
): ResolvedUpsample {
  // Runs on every call: loops instead of array callbacks, and messages (and the arrays they show) are
  // only built when a check fails.
  const spec = OP_SPECS[op];
  const spatial = spec.spatial.length;
  const rank = spatial + 2;

  if (!isTensor(gradOutput)) {
    fail(spec, TypeError, `gradOutput must be a Tensor, got ${typeof gradOutput}`);
  }
  const grad = gradOutput;
  if (grad.disposed) {
    fail(spec, TypeError, `gradOutput (${grad}) was disposed or its device closed`);
  }
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    fail(
      spec,
      TypeError,
      `options must be an object with outputSize and inputSize, got ${show(options)}`,
    );
  }
  const opts = options as Record<string, unknown>;
  checkOptionKeys(spec, opts);

  const outputSize = sizeList(opts.outputSize, "outputSize", spatial, spec);
  const inputSize = sizeList(opts.inputSize, "inputSize", rank, spec);
  let badIn = false, badOut = false;
  for (let i = 0; i < spatial; i++) {
    if (inputSize[2 + i] < 1) badIn = true;
    if (outputSize[i] < 1) badOut = true;
  }
  if (badIn || badOut) {
    const inSpatial = inputSize.slice(2);
    const describe = (sizes: number[]): string =>
      sizes.map((s, i) => `${spec.spatial[i]}: ${s}`).join(", ");
    const which = badOut ? badIn ? "inputSize and outputSize" : "outputSize" : "inputSize";
    fail(
      spec,
      RangeError,
      `${which}: input and output sizes should be greater than 0, but got input ` +
        `(${describe(inSpatial)}) output (${describe(outputSize)})`,
    );
  }

  const gradShape = grad.shape;
  if (gradShape.length !== rank) {
    fail(
      spec,
      TypeError,
      `gradOutput must be ${rank}-D [N, C, ${spec.spatial.join(", ")}], got shape ${
        show(gradShape)
      }`,
    );
  }
  const d = mismatchedDim(gradShape, inputSize[0], inputSize[1], outputSize);
  if (d >= 0) {
    const want = d < 2 ? inputSize[d] : outputSize[d - 2];
    const expected = [inputSize[0], inputSize[1], ...outputSize];
    fail(
      spec,
      RangeError,
      `expected gradOutput to have the same shape as output [N, C, ...outputSize] = ` +
        `${show(expected)}; output.size(${d}) = ${want} but got gradOutput.size(${d}) = ` +
        `${gradShape[d]}`,
    );
  }

  const keys = spec.scaleKeys;
  const first = resolveScale(op, spec, 0, opts[keys[0]], inputSize[2], outputSize[0]);
  // Literals, not push(): a pushed-to empty array reserves room for 17 elements.
  const scales = spatial === 1
    ? [first]
    : [first, resolveScale(op, spec, 1, opts[keys[1]], inputSize[3], outputSize[1])];

  const { alignCorners, deterministic } = resolveFlags(spec, opts, grad.device);

  const out = opts.out === undefined || opts.out === null
    ? null
    : checkOut(spec, opts.out, grad, "gradOutput", inputSize, "inputSize");

  return {
    op,
    device: grad.device,
    gradOutput: grad,
    dtype: grad.dtype,
    out,
    inputSize,
    outputSize,
    scales,
    alignCorners,
    deterministic,
  };
}

/**
 * Throws a `TypeError` for an option key the op does not take.
 *
 * @example
 * ```ts ignore
 * checkOptionKeys(OP_SPECS.bilinear2d, { outputSize: [2, 2], scale: 2 }); // throws: "scale"
 * ```
 */
export function checkOptionKeys(spec: OpSpec, opts: Record<string, unknown>): void {
  // for-in over own keys is Object.keys without the array it allocates on every call (V8 answers
  // hasOwnProperty of the for-in key from its enum cache; Object.hasOwn is not optimized that way).
  for (const key in opts) {
    if (hasOwnProperty.call(opts, key) && !spec.keys.has(key)) {
      fail(spec, TypeError, `unknown option "${key}" (allowed: ${[...spec.keys].join(", ")})`);
    }
  }
}

/**
 * The `alignCorners` (default false) and `deterministic` (default: the device's) options, checked.
 *
 * @example
 * ```ts ignore
 * resolveFlags(spec, { alignCorners: true }, device); // { alignCorners: true, deterministic: false }
 * ```
 */
export function resolveFlags(
  spec: OpSpec,
  opts: Record<string, unknown>,
  device: Device,
): { alignCorners: boolean; deterministic: boolean } {
  const alignCorners = opts.alignCorners ?? false;
  if (typeof alignCorners !== "boolean") {
    fail(spec, TypeError, `alignCorners must be a boolean, got ${show(alignCorners)}`);
  }
  const deterministic = opts.deterministic ?? device.deterministic;
  if (typeof deterministic !== "boolean") {
    fail(spec, TypeError, `deterministic must be a boolean, got ${show(deterministic)}`);
  }
  return { alignCorners, deterministic };
}

/** Throws `Kind` with the op's name before `message`. */
export function fail(spec: OpSpec, Kind: typeof TypeError, message: string): never {
  throw new Kind(`${spec.name}: ${message}`);
}

/**
 * One scale factor: a number, finite, >= 0, consistent with the sizes, within aclnn's nearest-exact
 * limit (the backward ops'; `nearestLimit` false for the forward ops, which have none). Returns it
 * (+0 for "derive from the sizes").
 */
export function resolveScale(
  op: UpsampleOp,
  spec: OpSpec,
  i: number,
  given: unknown,
  input: number,
  output: number,
  nearestLimit = true,
): number {
  const key = spec.scaleKeys[i];
  const value = given ?? 0;
  if (typeof value !== "number") {
    fail(spec, TypeError, `${key} must be a number, got ${show(value)}`);
  }
  const scale = value;
  if (!Number.isFinite(scale) || scale < 0) {
    fail(
      spec,
      RangeError,
      `${key} must be a finite number >= 0 (0 = derive from sizes), got ${scale}`,
    );
  }
  const dim = spec.spatial[i];
  if (scale > 0 && Math.floor(input * scale) !== output) {
    fail(
      spec,
      RangeError,
      `${key} ${scale} does not match the sizes: outputSize ${dim} (${output}) must equal ` +
        `floor(inputSize ${dim} (${input}) * ${key}) = ${Math.floor(input * scale)}`,
    );
  }
  // aclnn requires (scale > 0 ? 1 / scale : in / out) >= 0.02: the forward op may enlarge a
  // dimension at most 50 times (ops-cv aclnn_upsample_nearest_exact*_backward.cpp).
  const ratio = scale > 0 ? 1 / scale : input / output;
  if (nearestLimit && op !== "bilinear2d" && ratio < 1 / MAX_NEAREST_SCALE) {
    fail(
      spec,
      RangeError,
      `nearest-exact enlarges ${dim} at most ${MAX_NEAREST_SCALE}x (aclnn: 1 / scale >= ` +
        `${1 / MAX_NEAREST_SCALE}), got inputSize ${dim} ${input} -> outputSize ${dim} ` +
        `${output}` + (scale > 0 ? ` with ${key} ${scale}` : ""),
    );
  }
  return scale === 0 ? 0 : scale;
}

// The `out` option: a live tensor on `source`'s device, of its dtype, of shape `shape`, not
// overlapping it (`sourceName`: "gradOutput" or "input"; `shapeName` says what `shape` is).
export function checkOut(
  spec: OpSpec,
  value: unknown,
  source: Tensor,
  sourceName: string,
  shape: readonly number[],
  shapeName: string,
): Tensor {
  if (!isTensor(value)) {
    fail(spec, TypeError, `out must be a Tensor, got ${show(value)}`);
  }
  const out = value;
  if (out.disposed) fail(spec, TypeError, `out (${out}) was disposed or its device closed`);
  if (out.device !== source.device) {
    fail(spec, TypeError, `out is on another device (${out.device.name}) than ${sourceName}`);
  }
  if (out.dtype !== source.dtype) {
    fail(spec, TypeError, `out dtype ${out.dtype} must equal ${sourceName} dtype ${source.dtype}`);
  }
  const outShape = out.shape;
  if (
    outShape.length !== shape.length ||
    mismatchedDim(outShape, shape[0], shape[1], shape, 2) >= 0
  ) {
    fail(spec, RangeError, `out shape ${show(outShape)} must equal ${shapeName} ${show(shape)}`);
  }
  if (overlaps(out, source)) {
    fail(
      spec,
      RangeError,
      `out must not share memory with ${sourceName} (their storage ranges overlap)`,
    );
  }
  return out;
}

const hasOwnProperty = Object.prototype.hasOwnProperty;

/**
 * The first dimension where a tensor's shape differs from `[n, c, ...spatial.slice(from)]`, or -1; the
 * shape has as many dimensions as that list (checked by the caller).
 *
 * Tensor shapes are frozen arrays, which V8 reads ~4x slower in a loop than at constant indices: the
 * (1 or 2) spatial dimensions are read unrolled.
 */
export function mismatchedDim(
  shape: readonly number[],
  n: number,
  c: number,
  spatial: readonly number[],
  from = 0,
): number {
  if (shape[0] !== n) return 0;
  if (shape[1] !== c) return 1;
  if (shape[2] !== spatial[from]) return 2;
  if (shape.length > 3 && shape[3] !== spatial[from + 1]) return 3;
  return -1;
}

/** A copy of a size list (each element read once, so what is checked is what is used), or a throw. */
export function sizeList(value: unknown, name: string, length: number, spec: OpSpec): number[] {
  if (!Array.isArray(value)) {
    fail(spec, TypeError, `${name} must be an array of ${length} integers, got ${show(value)}`);
  }
  const list = value as unknown[];
  if (list.length !== length) {
    fail(
      spec,
      TypeError,
      `it is expected ${name} equals to ${length}, but got size ${list.length}`,
    );
  }
  // An exact-size copy (a pushed-to empty array would reserve 17 elements), checked below.
  const sizes = new Array<number>(length);
  for (let i = 0; i < length; i++) {
    const size: unknown = list[i];
    if (typeof size !== "number") {
      fail(spec, TypeError, `${name} must hold integers, got ${show(list)}`);
    }
    if (!Number.isSafeInteger(size) || size < 0) {
      fail(spec, RangeError, `${name} values must be integers >= 0 below 2^53, got ${show(list)}`);
    }
    sizes[i] = size;
  }
  const count = elementCount(sizes);
  if (count > Number.MAX_SAFE_INTEGER) {
    fail(spec, RangeError, `${name} ${show(list)} has ${count} elements, more than 2^53 - 1`);
  }
  return sizes;
}

function overlaps(a: Tensor, b: Tensor): boolean {
  const ia = tensorInternals(a);
  const ib = tensorInternals(b);
  if (ia.storage !== ib.storage) return false;
  const sa = storageSpan(ia.layout);
  const sb = storageSpan(ib.layout);
  return sa !== null && sb !== null && sa.first <= sb.last && sb.first <= sa.last;
}
