/**
 * Layout math for strided views: shape, strides and offset, all in elements.
 *
 * Every function here is pure and validates its arguments, so a bad view is rejected before any memory is
 * touched.
 *
 * @module
 */

/** Shape, strides and storage offset of a view, in elements. */
export interface Layout {
  /** Size of each dimension. */
  readonly shape: readonly number[];
  /** Distance in elements between neighbours along each dimension. */
  readonly strides: readonly number[];
  /** Index of the view's first element in its storage. */
  readonly offset: number;
}

/**
 * Product of the sizes, unchecked (may exceed 2^53 for hostile shapes; see {@link numel}).
 *
 * @example
 * ```ts
 * import { elementCount } from "./layout.ts";
 * elementCount([2, 3, 4]); // 24
 * ```
 */
export function elementCount(shape: readonly number[]): number {
  // An index loop: `for...of` allocates an iterator per call where V8 cannot prove the array plain
  // (frozen shapes and user arrays reach here alike), and this runs on every op call.
  let count = 1;
  for (let i = 0; i < shape.length; i++) count *= shape[i];
  return count;
}

/**
 * Number of elements of a shape, checked against `Number.MAX_SAFE_INTEGER`.
 *
 * @example
 * ```ts
 * import { numel } from "./layout.ts";
 * numel([2, 3, 4]); // 24
 * ```
 */
export function numel(shape: readonly number[], name = "shape"): number {
  const count = elementCount(shape);
  if (count > Number.MAX_SAFE_INTEGER) {
    throw new RangeError(
      `${name} [${shape.join(", ")}] has ${count} elements, more than 2^53 - 1`,
    );
  }
  return count;
}

/**
 * Row-major (C order) strides of a shape.
 *
 * @example
 * ```ts
 * import { contiguousStrides } from "./layout.ts";
 * contiguousStrides([2, 3, 4]); // [12, 4, 1]
 * ```
 */
export function contiguousStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let step = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = step;
    step *= Math.max(shape[d], 1);
  }
  return strides;
}

/**
 * Whether a layout visits its elements in row-major order with no gaps (sizes 0 and 1 ignore their stride).
 *
 * @example
 * ```ts
 * import { isContiguous } from "./layout.ts";
 * isContiguous({ shape: [2, 3], strides: [3, 1], offset: 0 }); // true
 * isContiguous({ shape: [2, 3], strides: [1, 2], offset: 0 }); // false
 * ```
 */
export function isContiguous(layout: Layout): boolean {
  let expected = 1;
  for (let d = layout.shape.length - 1; d >= 0; d--) {
    const size = layout.shape[d];
    if (size === 0) return true;
    if (size !== 1 && layout.strides[d] !== expected) return false;
    expected *= size;
  }
  return true;
}

/**
 * Smallest and largest storage index a layout reaches, or `null` for a view without elements.
 * Strides are never negative in this library, so the minimum is the offset.
 *
 * @example
 * ```ts
 * import { storageSpan } from "./layout.ts";
 * storageSpan({ shape: [2, 2], strides: [4, 1], offset: 1 }); // { first: 1, last: 6 }
 * ```
 */
export function storageSpan(layout: Layout): { first: number; last: number } | null {
  let last = layout.offset;
  for (let d = 0; d < layout.shape.length; d++) {
    const size = layout.shape[d];
    if (size === 0) return null;
    last += (size - 1) * layout.strides[d];
  }
  return { first: layout.offset, last };
}

function checkDim(dim: unknown, rank: number, name: string): number {
  if (typeof dim !== "number" || !Number.isInteger(dim)) {
    throw new TypeError(`${name} must be an integer dimension, got ${String(dim)}`);
  }
  if (dim < -rank || dim >= rank) {
    throw new RangeError(`${name} ${dim} is out of range for a tensor of rank ${rank}`);
  }
  return dim < 0 ? dim + rank : dim;
}

/**
 * Reorders dimensions: the result's dimension `i` is the input's dimension `dims[i]`.
 *
 * @example
 * ```ts
 * import { permuteLayout } from "./layout.ts";
 * permuteLayout({ shape: [2, 3, 4], strides: [12, 4, 1], offset: 0 }, [0, 2, 1]).shape; // [2, 4, 3]
 * ```
 */
export function permuteLayout(layout: Layout, dims: readonly number[]): Layout {
  const rank = layout.shape.length;
  if (!Array.isArray(dims) || dims.length !== rank) {
    throw new TypeError(
      `permute dims must list each of the ${rank} dimensions once, got [${String(dims)}]`,
    );
  }
  const seen = new Set<number>();
  const shape: number[] = [];
  const strides: number[] = [];
  for (const raw of dims) {
    const dim = checkDim(raw, rank, "permute dim");
    if (seen.has(dim)) {
      throw new RangeError(`permute dims must not repeat a dimension, got [${dims.join(", ")}]`);
    }
    seen.add(dim);
    shape.push(layout.shape[dim]);
    strides.push(layout.strides[dim]);
  }
  return { shape, strides, offset: layout.offset };
}

/**
 * Swaps two dimensions.
 *
 * @example
 * ```ts
 * import { transposeLayout } from "./layout.ts";
 * transposeLayout({ shape: [2, 3], strides: [3, 1], offset: 0 }, 0, 1); // shape [3, 2], strides [1, 3]
 * ```
 */
export function transposeLayout(layout: Layout, dim0: number, dim1: number): Layout {
  const rank = layout.shape.length;
  const a = checkDim(dim0, rank, "transpose dim0");
  const b = checkDim(dim1, rank, "transpose dim1");
  const dims = Array.from({ length: rank }, (_, i) => i);
  dims[a] = b;
  dims[b] = a;
  return permuteLayout(layout, dims);
}

/**
 * Narrows one dimension to `start, start + step, ...` below `end`, like Python's `x[start:end:step]`:
 * negative `start`/`end` count from the end and out-of-range bounds are clamped.
 *
 * @example
 * ```ts
 * import { sliceLayout } from "./layout.ts";
 * sliceLayout({ shape: [10], strides: [1], offset: 0 }, 0, 1, 9, 2); // shape [4], strides [2], offset 1
 * ```
 */
export function sliceLayout(
  layout: Layout,
  dim: number,
  start: number,
  end: number = Number.MAX_SAFE_INTEGER,
  step = 1,
): Layout {
  const rank = layout.shape.length;
  const d = checkDim(dim, rank, "slice dim");
  for (const [name, value] of [["start", start], ["end", end], ["step", step]] as const) {
    if (typeof value !== "number" || !Number.isInteger(value)) {
      throw new TypeError(`slice ${name} must be an integer, got ${String(value)}`);
    }
  }
  if (step < 1) throw new RangeError(`slice step must be >= 1, got ${step}`);
  const size = layout.shape[d];
  const clamp = (i: number): number => Math.min(Math.max(i < 0 ? i + size : i, 0), size);
  const from = clamp(start);
  const to = Math.max(clamp(end), from);
  const shape = [...layout.shape];
  const strides = [...layout.strides];
  shape[d] = Math.ceil((to - from) / step);
  strides[d] = layout.strides[d] * step;
  const offset = shape[d] === 0 ? layout.offset : layout.offset + from * layout.strides[d];
  return { shape, strides, offset };
}
