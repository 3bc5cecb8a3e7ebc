/**
 * Element types and exact round-to-nearest-even conversions between JavaScript numbers and the
 * storage formats of float32, float16 and bfloat16 host buffers.
 *
 * float32 values live in a `Float32Array`; float16 and bfloat16 values live in a `Uint16Array`
 * as raw bit patterns.
 *
 * @module
 */

/** The element types the library supports. */
export type DType = "float32" | "float16" | "bfloat16";

/**
 * All supported dtypes, in a fixed order.
 *
 * @example
 * ```ts
 * import { DTYPES } from "@aclnn/upsample";
 * for (const dtype of DTYPES) console.log(dtype); // float32, float16, bfloat16
 * ```
 */
export const DTYPES: readonly DType[] = Object.freeze(["float32", "float16", "bfloat16"] as const);

/** Host storage of a tensor: float32 values, or float16/bfloat16 bit patterns. */
export type HostArray = Float32Array | Uint16Array;

/**
 * Whether `value` names a supported dtype.
 *
 * @example
 * ```ts
 * import { isDType } from "./dtype.ts";
 * isDType("float16"); // true
 * isDType("float64"); // false
 * ```
 */
export function isDType(value: unknown): value is DType {
  return value === "float32" || value === "float16" || value === "bfloat16";
}

// Other spellings of the three dtypes (PyTorch's, NumPy's, CANN's, short forms), lower case.
const ALIASES: Readonly<Record<string, DType>> = {
  fp32: "float32",
  f32: "float32",
  float: "float32",
  single: "float32",
  "torch.float": "float32",
  "torch.float32": "float32",
  acl_float: "float32",
  fp16: "float16",
  f16: "float16",
  half: "float16",
  "torch.half": "float16",
  "torch.float16": "float16",
  acl_float16: "float16",
  bf16: "bfloat16",
  bfloat: "bfloat16",
  "torch.bfloat16": "bfloat16",
  acl_bf16: "bfloat16",
};

/**
 * The dtype `value` most likely meant (`"fp16"`, `"half"`, `"Float16"`, `"torch.float16"` all
 * mean `"float16"`), or undefined when it names none of them.
 *
 * @example
 * ```ts
 * import { dtypeSuggestion } from "./dtype.ts";
 * dtypeSuggestion("bf16"); // "bfloat16"
 * dtypeSuggestion("int8"); // undefined
 * ```
 */
export function dtypeSuggestion(value: unknown): DType | undefined {
  if (typeof value !== "string") return undefined;
  const key = value.trim().toLowerCase();
  return isDType(key) ? key : ALIASES[key];
}

/**
 * The error for a `dtype` that is not one of {@link DTYPES}: names the argument, the value and the
 * allowed values, with a "did you mean" for a known other spelling.
 *
 * @example
 * ```ts
 * import { dtypeError } from "./dtype.ts";
 * dtypeError("dtype", "fp16").message;
 * // 'dtype must be one of float32, float16, bfloat16, got "fp16" (did you mean "float16"?)'
 * ```
 */
export function dtypeError(what: string, value: unknown): TypeError {
  const suggestion = dtypeSuggestion(value);
  const shown = typeof value === "string" ? `"${value}"` : String(value);
  const hint = suggestion === undefined ? "" : ` (did you mean "${suggestion}"?)`;
  return new TypeError(`${what} must be one of ${DTYPES.join(", ")}, got ${shown}${hint}`);
}

/**
 * Size in bytes of one element of `dtype`.
 *
 * @example
 * ```ts
 * import { dtypeByteSize } from "./dtype.ts";
 * dtypeByteSize("bfloat16"); // 2
 * ```
 */
export function dtypeByteSize(dtype: DType): 2 | 4 {
  return dtype === "float32" ? 4 : 2;
}

const QUIET_NAN_F16 = 0x7e00;
const QUIET_NAN_BF16 = 0x7fc0;

// Scratch views for bit casts, created on first use (importing this module has no side effects).
let scratchF32: Float32Array | undefined;
let scratchU32: Uint32Array | undefined;
let scratchF16: Float16Array | undefined;
let scratchU16: Uint16Array | undefined;

function f32Scratch(): Float32Array {
  if (scratchF32 === undefined) {
    scratchF32 = new Float32Array(1);
    scratchU32 = new Uint32Array(scratchF32.buffer);
  }
  return scratchF32;
}

function f16Scratch(): Float16Array {
  if (scratchF16 === undefined) {
    scratchF16 = new Float16Array(1);
    scratchU16 = new Uint16Array(scratchF16.buffer);
  }
  return scratchF16;
}

/**
 * float16 bit pattern of `x`, rounded to nearest even once, straight from the float64 value.
 * NaN becomes the quiet NaN 0x7e00; infinities, subnormals and -0 are kept; overflow gives inf.
 *
 * @example
 * ```ts
 * import { float16BitsFromNumber } from "./dtype.ts";
 * float16BitsFromNumber(1); // 0x3c00
 * float16BitsFromNumber(65520); // 0x7c00 (inf)
 * ```
 */
export function float16BitsFromNumber(x: number): number {
  if (x !== x) return QUIET_NAN_F16;
  const f = f16Scratch();
  f[0] = x; // ToFloat16: roundTiesToEven from the exact double
  return scratchU16![0];
}

/**
 * float16 bit pattern of a value that is already a float32 (the kernels' final rounding).
 * Identical to {@link float16BitsFromNumber}: one rounding from a float32 value is exact RNE.
 *
 * @example
 * ```ts
 * import { float16BitsFromFloat32 } from "./dtype.ts";
 * float16BitsFromFloat32(Math.fround(0.1)); // 0x2e66
 * ```
 */
export function float16BitsFromFloat32(x: number): number {
  return float16BitsFromNumber(x);
}

/**
 * The number a float16 bit pattern encodes (exact).
 *
 * @example
 * ```ts
 * import { float16BitsToNumber } from "./dtype.ts";
 * float16BitsToNumber(0x3c00); // 1
 * float16BitsToNumber(0x0001); // 2 ** -24
 * ```
 */
export function float16BitsToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant === 0 ? sign * Infinity : NaN;
  return sign * (0x400 + mant) * 2 ** (exp - 25);
}

/**
 * bfloat16 bit pattern of `x`, rounded to nearest even once, straight from the float64 value
 * (no double rounding through float32). NaN becomes the quiet NaN 0x7fc0; infinities,
 * subnormals and -0 are kept; overflow gives inf.
 *
 * @example
 * ```ts
 * import { bfloat16BitsFromNumber } from "./dtype.ts";
 * bfloat16BitsFromNumber(1); // 0x3f80
 * bfloat16BitsFromNumber(1 + 2 ** -8 + 2 ** -40); // 0x3f81 (above the tie: rounds up)
 * ```
 */
export function bfloat16BitsFromNumber(x: number): number {
  if (x !== x) return QUIET_NAN_BF16;
  const f32 = f32Scratch();
  const f = Math.fround(x);
  f32[0] = f;
  let u = scratchU32![0];
  if (f !== x) {
    // Round to odd in float32 (truncate toward zero, set the sticky bit), then RNE to 16 bits:
    // with 16 extra bits this is the correctly rounded result of the original double.
    if (Math.abs(f) > Math.abs(x)) u = u - 1;
    u = (u | 1) >>> 0;
  }
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/**
 * bfloat16 bit pattern of a value that is already a float32 (the classic bit trick, RNE).
 * NaN becomes 0x7fc0. Faster than {@link bfloat16BitsFromNumber}; only exact for float32 inputs.
 *
 * @example
 * ```ts
 * import { bfloat16BitsFromFloat32 } from "./dtype.ts";
 * bfloat16BitsFromFloat32(Math.fround(1 + 2 ** -8)); // 0x3f80 (tie to even)
 * ```
 */
export function bfloat16BitsFromFloat32(x: number): number {
  if (x !== x) return QUIET_NAN_BF16;
  const f32 = f32Scratch();
  f32[0] = x;
  const u = scratchU32![0];
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/**
 * The number a bfloat16 bit pattern encodes (exact).
 *
 * @example
 * ```ts
 * import { bfloat16BitsToNumber } from "./dtype.ts";
 * bfloat16BitsToNumber(0x3f80); // 1
 * ```
 */
export function bfloat16BitsToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 7) & 0xff;
  const mant = bits & 0x7f;
  if (exp === 0) return sign * mant * 2 ** -133;
  if (exp === 0xff) return mant === 0 ? sign * Infinity : NaN;
  return sign * (0x80 + mant) * 2 ** (exp - 134);
}

/**
 * `x` rounded (RNE, once) to the nearest value representable in `dtype`, as a number.
 *
 * @example
 * ```ts
 * import { roundToDType } from "./dtype.ts";
 * roundToDType("float16", 0.1); // 0.0999755859375
 * roundToDType("float32", 0.1) === Math.fround(0.1); // true
 * ```
 */
export function roundToDType(dtype: DType, x: number): number {
  if (dtype === "float32") return Math.fround(x);
  if (dtype === "float16") return Math.f16round(x);
  return bfloat16BitsToNumber(bfloat16BitsFromNumber(x));
}

/**
 * A zero-filled host buffer for `length` elements of `dtype`.
 *
 * @example
 * ```ts
 * import { allocateHost } from "./dtype.ts";
 * allocateHost("float16", 4); // Uint16Array(4)
 * ```
 */
export function allocateHost(dtype: DType, length: number): HostArray {
  if (!Number.isSafeInteger(length) || length < 0) {
    throw new RangeError(`length must be a non-negative integer, got ${length}`);
  }
  return dtype === "float32" ? new Float32Array(length) : new Uint16Array(length);
}

function checkHost(dtype: DType, array: HostArray, name: string): void {
  const ok = dtype === "float32" ? array instanceof Float32Array : array instanceof Uint16Array;
  if (!ok) {
    const want = dtype === "float32" ? "Float32Array" : "Uint16Array";
    throw new TypeError(`${name} must be a ${want} for dtype ${dtype}`);
  }
}

/**
 * Writes `values` into `target` (element i to index i), each rounded once to nearest even.
 *
 * @example
 * ```ts
 * import { allocateHost, encodeInto } from "./dtype.ts";
 * const bits = allocateHost("bfloat16", 2);
 * encodeInto("bfloat16", [1, -0], bits); // bits = [0x3f80, 0x8000]
 * ```
 */
export function encodeInto(dtype: DType, values: ArrayLike<number>, target: HostArray): void {
  checkHost(dtype, target, "target");
  const n = values.length;
  if (target.length < n) {
    throw new RangeError(`target holds ${target.length} elements, ${n} needed`);
  }
  if (dtype === "float32") {
    (target as Float32Array).set(values);
  } else if (dtype === "float16") {
    new Float16Array(target.buffer, target.byteOffset, n).set(values);
    // Canonicalise NaNs (the engine may keep a sign or payload).
    for (let i = 0; i < n; i++) {
      if ((target[i] & 0x7fff) > 0x7c00) target[i] = QUIET_NAN_F16;
    }
  } else if (values instanceof Float32Array) {
    const u32 = new Uint32Array(values.buffer, values.byteOffset, n);
    for (let i = 0; i < n; i++) {
      const u = u32[i];
      target[i] = (u & 0x7fffffff) > 0x7f800000
        ? QUIET_NAN_BF16
        : (u + 0x7fff + ((u >>> 16) & 1)) >>> 16;
    }
  } else {
    for (let i = 0; i < n; i++) target[i] = bfloat16BitsFromNumber(values[i]);
  }
}

/**
 * Widens `source` (values or bit patterns of `dtype`) into `target` as float32, exactly.
 *
 * @example
 * ```ts
 * import { decodeInto } from "./dtype.ts";
 * const out = new Float32Array(2);
 * decodeInto("float16", new Uint16Array([0x3c00, 0xc000]), out); // out = [1, -2]
 * ```
 */
export function decodeInto(dtype: DType, source: HostArray, target: Float32Array): void {
  checkHost(dtype, source, "source");
  const n = source.length;
  if (target.length < n) {
    throw new RangeError(`target holds ${target.length} elements, ${n} needed`);
  }
  if (dtype === "float32") {
    target.set(source as Float32Array);
  } else if (dtype === "float16") {
    target.set(new Float16Array(source.buffer, source.byteOffset, n));
  } else {
    const u32 = new Uint32Array(target.buffer, target.byteOffset, n);
    for (let i = 0; i < n; i++) u32[i] = source[i] << 16;
  }
}
