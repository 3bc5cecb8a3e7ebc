// Hostile input for the forward ops (upsampleNearestExact1d, upsampleNearestExact2d,
// upsampleBilinear2d): the backward's fuzz classes (robustness_invalid_test.ts) applied to the
// forward, seeded and reproducible (FORWARD_ROBUSTNESS_SEED=<n> to vary). Every generated call must
// throw TypeError or RangeError synchronously, with the message the rule gives: the op name, the
// argument, the value and the rule (each case asserts its whole message), before anything is
// allocated or launched (the backend's allocate/launch/launchForward are counted; the CPU heap's
// live bytes, and on the emulated NPU its live allocations, aclnn objects and launch count, must not
// move). Then every rule once with its exact message; what must be accepted: the boundaries
// (floor(in * scale), -0 and null), and nearest-exact past 50x, generated (the 50x limit is the
// backward's only: the forward's op_api checks none, nor does PyTorch); and a family's own refusal
// before allocating (the CPU device reference of an Ascend 910, like the NPU, refuses
// nearest-exact).

import { forgeries, notArrays } from "../support/hostile.ts";
import assert from "node:assert/strict";
import {
  Device,
  type DType,
  DTYPES,
  Tensor,
  upsampleBilinear2d,
  upsampleNearestExact1d,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2d,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import type { Backend, UpsampleOp } from "../../src/backend.ts";
import type { CpuBackend } from "../../src/cpu/backend.ts";
import { deviceInternals } from "../../src/device.ts";
import { resolveForward } from "../../src/ops/forward_validate.ts";
import {
  BACKENDS,
  emu,
  EMU_DIR,
  EMULATED_LANE,
  emuLive,
  rng,
  RUNNING_BACKENDS,
} from "../support/helpers.ts";

type AnyOp = (input: unknown, options?: unknown) => Tensor;

interface OpSpec {
  readonly op: UpsampleOp;
  readonly name: string;
  readonly fn: AnyOp;
  readonly dims: readonly string[];
  readonly scaleKeys: readonly string[];
  readonly nearest: boolean;
  /** The option keys the op takes, in the order its message lists them. */
  readonly allowed: string;
}

const OPS: readonly OpSpec[] = [
  {
    op: "nearestExact1d",
    name: "upsampleNearestExact1d",
    fn: upsampleNearestExact1d as unknown as AnyOp,
    dims: ["L"],
    scaleKeys: ["scales"],
    nearest: true,
    allowed: "outputSize, out, deterministic, scales",
  },
  {
    op: "nearestExact2d",
    name: "upsampleNearestExact2d",
    fn: upsampleNearestExact2d as unknown as AnyOp,
    dims: ["H", "W"],
    scaleKeys: ["scalesH", "scalesW"],
    nearest: true,
    allowed: "outputSize, out, deterministic, scalesH, scalesW",
  },
  {
    op: "bilinear2d",
    name: "upsampleBilinear2d",
    fn: upsampleBilinear2d as unknown as AnyOp,
    dims: ["H", "W"],
    scaleKeys: ["scalesH", "scalesW"],
    nearest: false,
    allowed: "outputSize, out, deterministic, scalesH, scalesW, alignCorners",
  },
];

const CLASSES = [
  "rank",
  "size",
  "huge",
  "inconsistent",
  "inputType",
  "scale",
  "alignCorners",
  "options",
  "out",
  "disposed",
  "device",
] as const;
type CaseClass = typeof CLASSES[number];

const CASES_PER_CLASS = 400;
const SEED = Number(Deno.env.get("FORWARD_ROBUSTNESS_SEED") ?? 0xf04a1d);

/** A valid call that one mutation turns invalid. */
interface Base {
  readonly spec: OpSpec;
  readonly dtype: DType;
  readonly n: number;
  readonly c: number;
  readonly inSp: number[];
  readonly outSp: number[];
  readonly extra: Record<string, unknown>;
}

/** One generated invalid call. */
interface Case {
  readonly what: string;
  /** The op to call when it is not the base's. */
  readonly spec?: OpSpec;
  readonly input: unknown;
  readonly options: unknown;
  /** Call with one argument (no options object at all). */
  readonly omitOptions?: boolean;
  readonly kind: typeof TypeError | typeof RangeError;
  /** The message after `<op name>: `, whole: the argument, the value and the rule. */
  readonly message: RegExp;
  /** The argument the message must name (one of). */
  readonly names: readonly string[];
}

interface Ctx {
  readonly device: Device;
  /** Whether the device is an NPU (which tries, and fails, a result larger than its memory). */
  readonly npu: boolean;
  /** Live devices other than `device`. */
  readonly others: readonly Device[];
  /** Tensors whose device was closed. */
  readonly closed: readonly Tensor[];
  /** Tensors made for the current case, disposed after it. */
  readonly track: Tensor[];
  readonly r: () => number;
}

const int = (r: () => number, lo: number, hi: number): number =>
  lo + Math.floor(r() * (hi - lo + 1));
const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const numel = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);
const esc = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/**
 * A value as the library's messages print it (validate.ts's `show`, the documented format): arrays
 * by their first 8 elements, strings quoted, bigints with `n`, -0 as "-0", typed arrays as
 * `Name(length)`, anything else by `String()` cut at 80 characters.
 */
function shown(value: unknown): string {
  if (Array.isArray(value)) {
    const head = Array.from({ length: Math.min(value.length, 8) }, (_, i) => value[i]);
    const more = value.length > 8 ? `, ... (${value.length} elements)` : "";
    return `[${head.map(shown).join(", ")}${more}]`;
  }
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (Object.is(value, -0)) return "-0";
  if (ArrayBuffer.isView(value)) {
    const length = (value as { length?: number }).length ?? value.byteLength;
    return `${Object.prototype.toString.call(value).slice(8, -1)}(${length})`;
  }
  let text: string;
  try {
    text = String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** A regex matching `text` exactly. */
const exactly = (text: string): RegExp => new RegExp(`^${esc(text)}$`);

/** For labels. */
function describe(value: unknown): string {
  try {
    if (typeof value === "bigint") return `${value}n`;
    if (typeof value === "symbol" || typeof value === "function") return String(value);
    if (value instanceof Tensor) return String(value);
    if (Array.isArray(value) && value.length > 16) return `Array(${value.length})`;
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text.length > 80 ? `${text.slice(0, 80)}...` : text;
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** A scale with floor(in * s) == out (in double) that the op accepts, or 0 when none was found. */
function validScale(r: () => number, input: number, output: number, nearest: boolean): number {
  for (let attempt = 0; attempt < 4; attempt++) {
    const s = attempt === 0 ? output / input : (output + r()) / input;
    if (Math.floor(input * s) === output && (!nearest || 1 / s >= 0.02)) return s;
  }
  return 0;
}

function makeBase(r: () => number, spec: OpSpec): Base {
  const inSp = spec.dims.map(() => int(r, 1, 5));
  const outSp = spec.dims.map(() => int(r, 1, 8));
  const extra: Record<string, unknown> = {};
  if (r() < 0.3) {
    spec.scaleKeys.forEach((key, i) => {
      const s = validScale(r, inSp[i], outSp[i], spec.nearest);
      if (s > 0) extra[key] = s;
    });
  }
  if (!spec.nearest && r() < 0.5) extra.alignCorners = r() < 0.5;
  if (r() < 0.2) extra.deterministic = r() < 0.5;
  return { spec, dtype: pick(r, DTYPES), n: int(r, 1, 2), c: int(r, 1, 3), inSp, outSp, extra };
}

const inputShape = (b: Base): number[] => [b.n, b.c, ...b.inSp];
const resultShape = (b: Base): number[] => [b.n, b.c, ...b.outSp];
const baseOptions = (b: Base): Record<string, unknown> => ({
  outputSize: [...b.outSp],
  ...b.extra,
});
const rankText = (spec: OpSpec): string =>
  `${spec.dims.length + 2}-D [N, C, ${spec.dims.join(", ")}]`;

function zeros(ctx: Ctx, shape: readonly number[], dtype: DType, device = ctx.device): Tensor {
  const tensor = device.zeros(shape, { dtype });
  ctx.track.push(tensor);
  return tensor;
}

/** Elements that are not sizes: RangeError for numbers, TypeError for anything else. */
const BAD_ELEMENTS: readonly unknown[] = [
  -1,
  -7,
  -(2 ** 31),
  0.5,
  1.5,
  2.0000001,
  1e-9,
  7.999999,
  NaN,
  Infinity,
  -Infinity,
  "4",
  4n,
  true,
  null,
  undefined,
  {},
  [4],
  new Number(4),
  Symbol("4"),
  Object.create(null),
];

const WRONG_BOOLEANS: readonly unknown[] = [
  0,
  1,
  NaN,
  "true",
  "false",
  "",
  [],
  [true],
  {},
  new Boolean(false),
  1n,
  Symbol("true"),
  () => true,
  Object.create(null),
];

/** A sparse array of 2^25 holes: printing it whole would take a second and 64 MB. */
const HUGE_SPARSE = new Array(2 ** 25);

/** "H: 4, W: 0" for the zero-size rule. */
const sizesText = (spec: OpSpec, sizes: readonly number[]): string =>
  sizes.map((s, i) => `${spec.dims[i]}: ${s}`).join(", ");

type Generator = (ctx: Ctx, b: Base, input: Tensor) => Case;

const GENERATORS: Readonly<Record<CaseClass, Generator>> = {
  rank(ctx, b): Case {
    const { r } = ctx;
    const rank = b.spec.dims.length + 2;
    const variant = int(r, 0, 2);
    if (variant === 0) {
      const k = pick(r, [0, 1, 2, 3, 4, 5, 6].filter((x) => x !== rank));
      const shape = Array.from({ length: k }, () => int(r, 1, 3));
      return {
        what: `input of rank ${k} ${describe(shape)}`,
        input: zeros(ctx, shape, b.dtype),
        options: baseOptions(b),
        kind: TypeError,
        message: exactly(`input must be ${rankText(b.spec)}, got shape ${shown(shape)}`),
        names: ["input"],
      };
    }
    const want = b.spec.dims.length;
    const input = zeros(ctx, inputShape(b), b.dtype);
    if (variant === 1) {
      const k = pick(r, [0, 1, 2, 3, 4, 5, 6, 7].filter((x) => x !== want));
      const value = Array.from({ length: k }, () => int(r, 1, 8));
      return {
        what: `outputSize = ${describe(value)}`,
        input,
        options: { ...baseOptions(b), outputSize: value },
        kind: TypeError,
        message: exactly(`it is expected outputSize equals to ${want}, but got size ${k}`),
        names: ["outputSize"],
      };
    }
    const value = r() < 0.05 ? HUGE_SPARSE : pick(r, notArrays(b.outSp));
    return {
      what: `outputSize = ${describe(value)}`,
      input,
      options: { ...baseOptions(b), outputSize: value },
      kind: TypeError,
      message: value === HUGE_SPARSE
        ? exactly(`it is expected outputSize equals to ${want}, but got size ${2 ** 25}`)
        : exactly(`outputSize must be an array of ${want} integers, got ${shown(value)}`),
      names: ["outputSize"],
    };
  },

  size(ctx, b): Case {
    const { r } = ctx;
    const variant = int(r, 0, 2);
    if (variant === 0) {
      // One element of outputSize that is not a size.
      const list: unknown[] = [...b.outSp];
      const index = int(r, 0, list.length - 1);
      const value = pick(r, BAD_ELEMENTS);
      list[index] = value;
      const number = typeof value === "number";
      return {
        what: `outputSize[${index}] = ${describe(value)}`,
        input: zeros(ctx, inputShape(b), b.dtype),
        options: { ...baseOptions(b), outputSize: list },
        kind: number ? RangeError : TypeError,
        message: exactly(
          number
            ? `outputSize values must be integers >= 0 below 2^53, got ${shown(list)}`
            : `outputSize must hold integers, got ${shown(list)}`,
        ),
        names: ["outputSize"],
      };
    }
    // A zero spatial size: in outputSize (0 or -0), or in the input's shape.
    const outSp = [...b.outSp], inSp = [...b.inSp];
    const index = int(r, 0, outSp.length - 1);
    if (variant === 1) outSp[index] = pick(r, [0, -0]);
    else inSp[index] = 0;
    const input = zeros(ctx, [b.n, b.c, ...inSp], b.dtype);
    const options: Record<string, unknown> = { ...baseOptions(b), outputSize: outSp };
    for (const key of b.spec.scaleKeys) delete options[key];
    return {
      what: `input [${inputShape({ ...b, inSp })}] -> outputSize ${describe(outSp)}`,
      input,
      options,
      kind: RangeError,
      message: exactly(
        `${variant === 1 ? "outputSize" : "input"}: input and output sizes should be greater ` +
          `than 0, but got input (${sizesText(b.spec, inSp)}) output ` +
          `(${sizesText(b.spec, outSp.map((s) => s + 0))})`,
      ),
      names: [variant === 1 ? "outputSize:" : "input:", "input (", "output ("],
    };
  },

  huge(ctx, b): Case {
    const { r } = ctx;
    const input = zeros(ctx, inputShape(b), b.dtype);
    const options = baseOptions(b);
    for (const key of b.spec.scaleKeys) delete options[key];
    // An NPU tries a result larger than its memory (DeviceMemoryError from aclrtMalloc, as for the
    // backward): the result-size variant is the CPU's.
    const variants = [0, ...(b.spec.dims.length === 2 ? [1] : []), ...(ctx.npu ? [] : [2])];
    const variant = pick(r, variants);
    if (variant === 0) {
      // A size at or past 2^53.
      const list = [...b.outSp];
      const index = int(r, 0, list.length - 1);
      list[index] = pick(r, [2 ** 53, 2 ** 53 + 2, 2 ** 64, 1e300, Number.MAX_VALUE]);
      return {
        what: `outputSize = ${describe(list)}`,
        input,
        options: { ...options, outputSize: list },
        kind: RangeError,
        message: exactly(`outputSize values must be integers >= 0 below 2^53, got ${shown(list)}`),
        names: ["outputSize"],
      };
    }
    if (variant === 1) {
      // Every size a safe integer, their product past 2^53.
      const each = Math.ceil(2 ** 27) + int(r, 0, 1000);
      const list = [each, each];
      return {
        what: `outputSize = ${describe(list)} (product past 2^53)`,
        input,
        options: { ...options, outputSize: list },
        kind: RangeError,
        message: exactly(
          `outputSize ${shown(list)} has ${each * each} elements, more than 2^53 - 1`,
        ),
        names: ["outputSize"],
      };
    }
    // A result past the 4 GiB a CPU tensor can take (elements below 2^53; not 2^31 elements: in a
    // 16-bit dtype that is exactly 4 GiB, which the CPU backend accepts and allocates).
    const list = [...b.outSp];
    const index = int(r, 0, list.length - 1);
    list[index] = pick(r, [2 ** 31 + 1, 2 ** 32, 3e9, 2 ** 40]);
    const shape = [b.n, b.c, ...list];
    const bytes = numel(shape) * (b.dtype === "float32" ? 4 : 2);
    return {
      what: `outputSize = ${describe(list)}: a ${bytes}-byte result`,
      input,
      options: { ...options, outputSize: list },
      kind: RangeError,
      message: new RegExp(
        `^${esc(`the result: shape ${shown(shape)} of ${b.dtype} needs ${bytes} bytes (`)}` +
          `[\\d.]+ [KMGTP]iB${
            esc(
              "), more than one tensor can take on this device: 4294967296 bytes (4.00 GiB), " +
                "the CPU backend's WebAssembly memory limit (wasm32)",
            )
          }$`,
      ),
      names: ["the result"],
    };
  },

  inconsistent(ctx, b): Case {
    // A positive, finite scale with floor(in * scale) != out (interpolate's rule).
    const { r } = ctx;
    const i = int(r, 0, b.spec.scaleKeys.length - 1);
    const key = b.spec.scaleKeys[i], dim = b.spec.dims[i];
    const input = b.inSp[i], output = b.outSp[i];
    const variant = int(r, 0, 3);
    let s: number;
    if (variant === 0) {
      s = pick(r, [Number.MIN_VALUE, 1e-300, 1e300, Number.MAX_VALUE]);
    } else if (variant === 1) {
      // Just below out / in, where in * s rounds below out (when it does not: another wrong one).
      s = output / input;
      for (let k = 0; k < 4 && Math.floor(input * s) === output; k++) {
        s = s - Number.EPSILON * s;
      }
      if (Math.floor(input * s) === output) s = (output + 1.5) / input;
    } else {
      do s = r() < 0.5 ? (output + 1 + r() * 3) / input : (r() * output) / input; while (
        s <= 0 || Math.floor(input * s) === output
      );
    }
    return {
      what: `${key} = ${s} for ${input} -> ${output}`,
      input: zeros(ctx, inputShape(b), b.dtype),
      options: { ...baseOptions(b), [key]: s },
      kind: RangeError,
      message: exactly(
        `${key} ${s} does not match the sizes: outputSize ${dim} (${output}) must equal ` +
          `floor(inputSize ${dim} (${input}) * ${key}) = ${Math.floor(input * s)}`,
      ),
      names: [key],
    };
  },

  inputType(ctx, b): Case {
    const input = pick(ctx.r, forgeries(inputShape(b), b.dtype));
    return {
      what: `input = ${describe(input)}`,
      input,
      options: baseOptions(b),
      kind: TypeError,
      message: exactly(`input must be a Tensor, got ${typeof input}`),
      names: ["input"],
    };
  },

  scale(ctx, b): Case {
    const { r } = ctx;
    const input = zeros(ctx, inputShape(b), b.dtype);
    const key = pick(r, b.spec.scaleKeys);
    const variant = int(r, 0, 3);
    const options = baseOptions(b);
    if (variant === 3) {
      const wrong = b.spec.dims.length === 1
        ? pick(r, ["scalesH", "scalesW", "scale", "scaleFactor", "scale_factor"])
        : pick(r, ["scales", "scaleH", "scalesX", "scales_h", "scaleFactor", "scale_factor"]);
      return {
        what: `unknown scale option ${wrong}`,
        input,
        options: { ...options, [wrong]: 2 },
        kind: TypeError,
        message: exactly(`unknown option "${wrong}" (allowed: ${b.spec.allowed})`),
        names: [`"${wrong}"`],
      };
    }
    if (variant === 2) {
      const value = pick(r, [
        "2",
        2n,
        true,
        false,
        {},
        [2],
        new Number(2),
        Symbol("2"),
        HUGE_SPARSE,
      ]);
      return {
        what: `${key} = ${describe(value)}`,
        input,
        options: { ...options, [key]: value },
        kind: TypeError,
        message: exactly(`${key} must be a number, got ${shown(value)}`),
        names: [key],
      };
    }
    const value = variant === 0
      ? pick(r, [-1, -0.5, -2, -Number.MIN_VALUE, -1e300, -Infinity])
      : pick(r, [NaN, Infinity]);
    return {
      what: `${key} = ${value}`,
      input,
      options: { ...options, [key]: value },
      kind: RangeError,
      message: exactly(
        `${key} must be a finite number >= 0 (0 = derive from sizes), got ${value}`,
      ),
      names: [key],
    };
  },

  alignCorners(ctx, b): Case {
    const { r } = ctx;
    const input = zeros(ctx, inputShape(b), b.dtype);
    if (b.spec.nearest) {
      const value = pick(r, [true, false, 1, "yes"]);
      return {
        what: `alignCorners = ${describe(value)} on ${b.spec.name}`,
        input,
        options: { ...baseOptions(b), alignCorners: value },
        kind: TypeError,
        message: exactly(`unknown option "alignCorners" (allowed: ${b.spec.allowed})`),
        names: [`"alignCorners"`],
      };
    }
    const value = r() < 0.03 ? HUGE_SPARSE : pick(r, WRONG_BOOLEANS);
    return {
      what: `alignCorners = ${describe(value)}`,
      input,
      options: { ...baseOptions(b), alignCorners: value },
      kind: TypeError,
      message: exactly(`alignCorners must be a boolean, got ${shown(value)}`),
      names: ["alignCorners"],
    };
  },

  options(ctx, b): Case {
    const { r } = ctx;
    const input = zeros(ctx, inputShape(b), b.dtype);
    const variant = int(r, 0, 4);
    if (variant === 0 || variant === 1) {
      const value = variant === 0 ? undefined : pick(r, [
        null,
        0,
        "outputSize",
        true,
        1n,
        Symbol("options"),
        () => baseOptions(b),
        [],
        [baseOptions(b)],
        HUGE_SPARSE,
      ]);
      return {
        what: variant === 0 ? "no options argument" : `options = ${describe(value)}`,
        input,
        options: value,
        omitOptions: variant === 0,
        kind: TypeError,
        message: exactly(`options must be an object with outputSize, got ${shown(value)}`),
        names: ["options"],
      };
    }
    if (variant === 2) {
      // Typos, the backward's inputSize, interpolate's own keyword names.
      const key = pick(r, [
        "outputsize",
        "inputSize",
        "input_size",
        "align_corners",
        "out_",
        "deterministc",
        "",
        "size",
        "mode",
        "scale_factor",
        "recompute_scale_factor",
        "antialias",
      ]);
      return {
        what: `unknown option ${JSON.stringify(key)}`,
        input,
        options: { ...baseOptions(b), [key]: 1 },
        kind: TypeError,
        message: exactly(`unknown option "${key}" (allowed: ${b.spec.allowed})`),
        names: [`"${key}"`],
      };
    }
    if (variant === 3) {
      const options = baseOptions(b);
      delete options.outputSize;
      return {
        what: "options without outputSize",
        input,
        options,
        kind: TypeError,
        message: exactly(
          `outputSize must be an array of ${b.spec.dims.length} integers, got undefined`,
        ),
        names: ["outputSize"],
      };
    }
    const value = pick(r, WRONG_BOOLEANS);
    return {
      what: `deterministic = ${describe(value)}`,
      input,
      options: { ...baseOptions(b), deterministic: value },
      kind: TypeError,
      message: exactly(`deterministic must be a boolean, got ${shown(value)}`),
      names: ["deterministic"],
    };
  },

  out(ctx, b, input): Case {
    const { r } = ctx;
    const variant = int(r, 0, 3);
    const options = baseOptions(b);
    const shape = resultShape(b);
    if (variant === 0) {
      const value = r() < 0.03 ? HUGE_SPARSE : pick(r, [
        ...forgeries(inputShape(b), b.dtype).filter((v) => v !== undefined && v !== null), // null = not given
        new Float32Array(numel(shape)),
      ]);
      return {
        what: `out = ${describe(value)}`,
        input,
        options: { ...options, out: value },
        kind: TypeError,
        message: exactly(`out must be a Tensor, got ${shown(value)}`),
        names: ["out"],
      };
    }
    if (variant === 1) {
      let wrong = [...shape];
      if (r() < 0.3) {
        wrong = r() < 0.5 ? wrong.slice(1) : [...wrong, 1];
      } else {
        const d = int(r, 0, wrong.length - 1);
        wrong[d] += pick(r, wrong[d] > 1 ? [-1, 1, 2] : [1, 2]);
      }
      return {
        what: `out ${describe(wrong)} for a result ${describe(shape)}`,
        input,
        options: { ...options, out: zeros(ctx, wrong, b.dtype) },
        kind: RangeError,
        message: exactly(
          `out shape ${shown(wrong)} must equal [N, C, ...outputSize] ${shown(shape)}`,
        ),
        names: ["out"],
      };
    }
    if (variant === 2) {
      const dtype = pick(r, DTYPES.filter((t) => t !== b.dtype));
      return {
        what: `out ${dtype} for input ${b.dtype}`,
        input,
        options: { ...options, out: zeros(ctx, shape, dtype) },
        kind: TypeError,
        message: exactly(`out dtype ${dtype} must equal input dtype ${b.dtype}`),
        names: ["out"],
      };
    }
    // out overlapping the input: views of one storage whose element ranges intersect (or the
    // input itself, when the shapes agree).
    const last = b.spec.dims.length + 1;
    const inLen = b.inSp[b.inSp.length - 1], outLen = b.outSp[b.outSp.length - 1];
    const same = b.inSp.every((s, i) => s === b.outSp[i]);
    let inputView: Tensor, outView: Tensor;
    if (same && r() < 0.5) {
      inputView = outView = input;
    } else {
      const start = int(r, 0, inLen - 1);
      const storageShape = [
        b.n,
        b.c,
        ...b.inSp.slice(0, -1).map((s, i) => Math.max(s, b.outSp[i])),
        Math.max(inLen, start + outLen),
      ];
      const storage = zeros(ctx, storageShape, b.dtype);
      inputView = storage.slice(last, 0, inLen);
      outView = storage.slice(last, start, start + outLen);
      ctx.track.push(inputView, outView);
      if (b.spec.dims.length === 2) {
        inputView = inputView.slice(2, 0, b.inSp[0]);
        outView = outView.slice(2, 0, b.outSp[0]);
        ctx.track.push(inputView, outView);
      }
    }
    return {
      what: `out ${describe(outView.shape)}+${outView.offset} overlapping input ` +
        `${describe(inputView.shape)}+${inputView.offset}`,
      input: inputView,
      options: { ...options, out: outView },
      kind: RangeError,
      message: exactly("out must not share memory with input (their storage ranges overlap)"),
      names: ["out"],
    };
  },

  disposed(ctx, b, input): Case {
    const { r } = ctx;
    const variant = int(r, 0, 2);
    if (variant === 2) {
      const out = ctx.device.zeros(resultShape(b), { dtype: b.dtype });
      out.dispose();
      return {
        what: "disposed out",
        input,
        options: { ...baseOptions(b), out },
        kind: TypeError,
        message: exactly(`out (${out}) was disposed or its device closed`),
        names: ["out"],
      };
    }
    let dead: Tensor;
    if (variant === 0) {
      dead = ctx.device.zeros(inputShape(b), { dtype: b.dtype });
    } else {
      // A disposed view whose storage is still alive (the base holds it).
      const shape = inputShape(b);
      const base = zeros(ctx, [shape[0] + 1, ...shape.slice(1)], b.dtype);
      const shifted = base.slice(0, int(r, 0, 1));
      ctx.track.push(shifted);
      dead = shifted.slice(0, 0, shape[0]);
    }
    dead.dispose();
    return {
      what: variant === 0 ? "disposed input" : "disposed view of a live storage as input",
      input: dead,
      options: baseOptions(b),
      kind: TypeError,
      message: exactly(`input (${dead}) was disposed or its device closed`),
      names: ["input"],
    };
  },

  device(ctx, b, input): Case {
    const { r } = ctx;
    const variant = int(r, 0, 2);
    if (variant === 0 || variant === 1) {
      const dead = pick(r, ctx.closed);
      const which = variant === 0 ? "input" : "out";
      return {
        what: `${which} ${dead} of a closed device`,
        input: variant === 0 ? dead : input,
        options: variant === 0 ? baseOptions(b) : { ...baseOptions(b), out: dead },
        kind: TypeError,
        message: exactly(`${which} (${dead}) was disposed or its device closed`),
        names: [which],
      };
    }
    const other = pick(r, ctx.others);
    return {
      what: `out on another device (${other.name})`,
      input,
      options: { ...baseOptions(b), out: zeros(ctx, resultShape(b), b.dtype, other) },
      kind: TypeError,
      message: exactly(`out is on another device (${other.name}) than input`),
      names: ["out"],
    };
  },
};

/** Counts the allocate/launch/launchForward calls of a device's backend (both backends). */
function spyBackend(device: Device): { allocations: number; launches: number } {
  const backend = deviceInternals(device).backend() as Backend<unknown>;
  const counts = { allocations: 0, launches: 0 };
  const allocate = backend.allocate.bind(backend);
  const launch = backend.launch.bind(backend);
  const launchForward = backend.launchForward.bind(backend);
  Object.assign(backend, {
    allocate: (...args: Parameters<typeof allocate>) => (counts.allocations++, allocate(...args)),
    launch: (...args: Parameters<typeof launch>) => (counts.launches++, launch(...args)),
    launchForward: (...args: Parameters<typeof launchForward>) => (
      counts.launches++, launchForward(...args)
    ),
  });
  return counts;
}

/** The CPU heap's live bytes (0 on the NPU and with the TypeScript kernels). */
function heapLive(device: Device): number {
  if (device.backend !== "cpu") return 0;
  return (deviceInternals(device).backend() as unknown as CpuBackend).heapLiveBytes;
}

/** What is wrong with how a case failed, or null when it failed as it must. */
function judge(c: Case, name: string, error: unknown): string | null {
  if (error === null) return "did not throw";
  if (!(error instanceof TypeError || error instanceof RangeError)) {
    return `threw ${describe(String(error))}, not a TypeError or RangeError`;
  }
  const message = error.message;
  if (error.constructor !== c.kind) return `expected ${c.kind.name}, got ${error.name}: ${message}`;
  if (!message.startsWith(`${name}: `)) {
    return `message does not start with the op name: ${JSON.stringify(message)}`;
  }
  if (!c.names.some((n) => message.includes(n))) {
    return `message names none of ${c.names.join(", ")}: ${JSON.stringify(message)}`;
  }
  const rest = message.slice(name.length + 2);
  if (!c.message.test(rest)) {
    return `message ${JSON.stringify(rest)} is not ${c.message}`;
  }
  return null;
}

function closedTensors(): Tensor[] {
  const tensors: Tensor[] = [];
  const opens = RUNNING_BACKENDS.filter((lane) => lane.kind === "npu").map((lane) => lane.open);
  if (EMULATED_LANE.ignore === undefined) {
    opens.push(() => Device.open({ backend: "npu", deviceId: 1, libDir: EMU_DIR }));
  }
  for (const open of [() => Device.open({ backend: "cpu" }), ...opens]) {
    const device = open();
    for (const dtype of DTYPES) {
      tensors.push(device.zeros([1, 1, 4], { dtype }), device.zeros([2, 3, 4, 4], { dtype }));
      tensors.push(device.zeros([1, 2, 3, 5], { dtype }).transpose(2, 3));
    }
    device.close();
  }
  return tensors;
}

for (const backend of BACKENDS) {
  if (backend.kind === "npu" && !backend.emulated) continue; // the CPU and, cheaply, the emulation
  backend.test(`forward invalid calls on ${backend.label}: generated, refused before anything happens, each message whole`, () => {
    const emulated = backend.emulated;
    using device = backend.open();
    const others = [
      Device.open({ backend: "cpu", threads: 1 }),
      ...(emulated ? [Device.open({ backend: "npu", deviceId: 1, libDir: EMU_DIR })] : []),
      ...(backend.kind === "cpu" && EMULATED_LANE.ignore === undefined
        ? [EMULATED_LANE.open()]
        : []),
    ];
    const closed = closedTensors();
    const spy = spyBackend(device);
    const r = rng(SEED + (emulated ? 1 : backend.label === "cpu" ? 0 : 2));
    const ctx: Ctx = { device, npu: backend.kind === "npu", others, closed, track: [], r };
    const counts = Object.fromEntries(CLASSES.map((c) => [c, 0])) as Record<CaseClass, number>;
    const byError = { TypeError: 0, RangeError: 0 };
    const failures = new Map<string, string>();
    try {
      for (let i = 0; i < CASES_PER_CLASS * CLASSES.length; i++) {
        const cls = CLASSES[i % CLASSES.length];
        const spec = pick(r, OPS);
        const b = makeBase(r, spec);
        const input = zeros(ctx, inputShape(b), b.dtype);
        // The base call is valid: whatever is refused was made invalid by the one mutation.
        resolveForward(spec.op, input, baseOptions(b));
        const c = GENERATORS[cls](ctx, b, input);
        const { name, fn } = c.spec ?? spec;
        const label = `seed ${SEED} case ${i} [${cls}] ${name}: ${c.what}`;

        const live = emulated ? emuLive() : null;
        const launches = emulated ? emu().aclemuLaunchCount() : 0n;
        const heap = heapLive(device);
        const spied = { ...spy };
        let error: unknown = null;
        try {
          const returned = c.omitOptions ? fn(c.input) : fn(c.input, c.options);
          returned.dispose();
        } catch (e) {
          error = e;
        }
        const problem = judge(c, name, error) ??
          (spy.allocations !== spied.allocations || spy.launches !== spied.launches
            ? "the backend allocated or launched"
            : heapLive(device) !== heap
            ? `the CPU heap's live bytes moved by ${heapLive(device) - heap}`
            : live && (emuLive().allocations !== live.allocations ||
                emuLive().objects !== live.objects)
            ? "device memory or aclnn objects changed"
            : emulated && emu().aclemuLaunchCount() !== launches
            ? "a launch happened"
            : null);
        if (problem !== null) {
          // One example per class and kind of problem, so a run shows every distinct failure.
          const key = `${cls}: ${problem.replace(/\d+/g, "#").slice(0, 60)}`;
          if (!failures.has(key)) failures.set(key, `${label}: ${problem}`);
        }
        counts[cls]++;
        byError[c.kind.name as keyof typeof byError]++;
        for (const t of ctx.track.splice(0)) t.dispose();
      }
    } finally {
      for (const t of ctx.track.splice(0)) t.dispose();
      for (const other of others) other.close();
    }
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    console.log(
      `  ${backend.label} (seed ${SEED}): ${total} invalid forward calls, ${byError.TypeError} ` +
        `TypeError, ${byError.RangeError} RangeError`,
    );
    assert.deepEqual([...failures.values()], [], `${failures.size} distinct failures`);
    for (const cls of CLASSES) {
      assert.equal(counts[cls], CASES_PER_CLASS, `${cls}: ${counts[cls]} cases ran`);
    }
  });
}

Deno.test("forward invalid calls: the generator is reproducible from its seed", () => {
  const sample = (seed: number): string[] => {
    const r = rng(seed);
    return Array.from({ length: 200 }, () => {
      const b = makeBase(r, pick(r, OPS));
      return JSON.stringify([b.spec.op, b.dtype, b.n, b.c, b.inSp, b.outSp, b.extra]);
    });
  };
  assert.deepEqual(sample(SEED), sample(SEED));
  assert.notDeepEqual(sample(SEED), sample(SEED + 1));
});

/** One rule with its exact message (after the op name). */
interface Rule {
  readonly name: string;
  readonly op: AnyOp;
  readonly input: (d: Device) => unknown;
  readonly options: (d: Device) => unknown;
  readonly error: typeof TypeError;
  readonly message: string;
}

const n1 = OPS[0].fn, n2 = OPS[1].fn, b2 = OPS[2].fn;
const x2 = (d: Device): Tensor => d.zeros([2, 3, 4, 4]);
const x1 = (d: Device): Tensor => d.zeros([2, 3, 4]);
const RULES: readonly Rule[] = [
  {
    name: "input not a tensor",
    op: n2,
    input: () => [1, 2],
    options: () => ({ outputSize: [8, 8] }),
    error: TypeError,
    message: "upsampleNearestExact2d: input must be a Tensor, got object",
  },
  {
    name: "options missing",
    op: b2,
    input: x2,
    options: () => undefined,
    error: TypeError,
    message: "upsampleBilinear2d: options must be an object with outputSize, got undefined",
  },
  {
    name: "the backward's inputSize",
    op: n1,
    input: x1,
    options: () => ({ outputSize: [8], inputSize: [2, 3, 4] }),
    error: TypeError,
    message:
      'upsampleNearestExact1d: unknown option "inputSize" (allowed: outputSize, out, deterministic, scales)',
  },
  {
    name: "input rank",
    op: b2,
    input: x1,
    options: () => ({ outputSize: [8, 8] }),
    error: TypeError,
    message: "upsampleBilinear2d: input must be 4-D [N, C, H, W], got shape [2, 3, 4]",
  },
  {
    name: "1d input rank",
    op: n1,
    input: x2,
    options: () => ({ outputSize: [8] }),
    error: TypeError,
    message: "upsampleNearestExact1d: input must be 3-D [N, C, L], got shape [2, 3, 4, 4]",
  },
  {
    name: "outputSize length",
    op: n2,
    input: x2,
    options: () => ({ outputSize: [8] }),
    error: TypeError,
    message: "upsampleNearestExact2d: it is expected outputSize equals to 2, but got size 1",
  },
  {
    name: "outputSize a typed array",
    op: n2,
    input: x2,
    options: () => ({ outputSize: Int32Array.of(8, 8) }),
    error: TypeError,
    message: "upsampleNearestExact2d: outputSize must be an array of 2 integers, got Int32Array(2)",
  },
  {
    name: "outputSize of strings",
    op: b2,
    input: x2,
    options: () => ({ outputSize: ["8", 8] }),
    error: TypeError,
    message: 'upsampleBilinear2d: outputSize must hold integers, got ["8", 8]',
  },
  {
    name: "fractional outputSize",
    op: b2,
    input: x2,
    options: () => ({ outputSize: [8.5, 8] }),
    error: RangeError,
    message: "upsampleBilinear2d: outputSize values must be integers >= 0 below 2^53, got [8.5, 8]",
  },
  {
    name: "negative outputSize",
    op: n1,
    input: x1,
    options: () => ({ outputSize: [-8] }),
    error: RangeError,
    message: "upsampleNearestExact1d: outputSize values must be integers >= 0 below 2^53, got [-8]",
  },
  {
    name: "zero outputSize",
    op: n2,
    input: x2,
    options: () => ({ outputSize: [0, 8] }),
    error: RangeError,
    message:
      "upsampleNearestExact2d: outputSize: input and output sizes should be greater than 0, but got input (H: 4, W: 4) output (H: 0, W: 8)",
  },
  {
    name: "zero input size",
    op: b2,
    input: (d) => d.zeros([2, 3, 4, 0]),
    options: () => ({ outputSize: [8, 8] }),
    error: RangeError,
    message:
      "upsampleBilinear2d: input: input and output sizes should be greater than 0, but got input (H: 4, W: 0) output (H: 8, W: 8)",
  },
  {
    name: "outputSize product past 2^53",
    op: b2,
    input: x2,
    options: () => ({ outputSize: [2 ** 27, 2 ** 27] }),
    error: RangeError,
    message:
      "upsampleBilinear2d: outputSize [134217728, 134217728] has 18014398509481984 elements, more than 2^53 - 1",
  },
  {
    name: "scale not a number",
    op: n2,
    input: x2,
    options: () => ({ outputSize: [8, 8], scalesW: "2" }),
    error: TypeError,
    message: 'upsampleNearestExact2d: scalesW must be a number, got "2"',
  },
  {
    name: "NaN scale",
    op: b2,
    input: x2,
    options: () => ({ outputSize: [8, 8], scalesH: NaN }),
    error: RangeError,
    message:
      "upsampleBilinear2d: scalesH must be a finite number >= 0 (0 = derive from sizes), got NaN",
  },
  {
    name: "negative scale",
    op: n1,
    input: x1,
    options: () => ({ outputSize: [8], scales: -2 }),
    error: RangeError,
    message:
      "upsampleNearestExact1d: scales must be a finite number >= 0 (0 = derive from sizes), got -2",
  },
  {
    name: "scale inconsistent with floor(in * scale)",
    op: b2,
    input: x2,
    options: () => ({ outputSize: [8, 8], scalesH: 1.7 }),
    error: RangeError,
    message:
      "upsampleBilinear2d: scalesH 1.7 does not match the sizes: outputSize H (8) must equal floor(inputSize H (4) * scalesH) = 6",
  },
  {
    name: "scale just below out / in",
    op: n1,
    input: (d) => d.zeros([1, 1, 3]),
    options: () => ({ outputSize: [7], scales: 2.333333333333333 }),
    error: RangeError,
    message:
      "upsampleNearestExact1d: scales 2.333333333333333 does not match the sizes: outputSize L (7) must equal floor(inputSize L (3) * scales) = 6",
  },
  {
    name: "alignCorners on nearest-exact",
    op: n2,
    input: x2,
    options: () => ({ outputSize: [8, 8], alignCorners: false }),
    error: TypeError,
    message:
      'upsampleNearestExact2d: unknown option "alignCorners" (allowed: outputSize, out, deterministic, scalesH, scalesW)',
  },
  {
    name: "alignCorners not a boolean",
    op: b2,
    input: x2,
    options: () => ({ outputSize: [8, 8], alignCorners: "true" }),
    error: TypeError,
    message: 'upsampleBilinear2d: alignCorners must be a boolean, got "true"',
  },
  {
    name: "deterministic not a boolean",
    op: n1,
    input: x1,
    options: () => ({ outputSize: [8], deterministic: 1 }),
    error: TypeError,
    message: "upsampleNearestExact1d: deterministic must be a boolean, got 1",
  },
  {
    name: "out not a tensor",
    op: n2,
    input: x2,
    options: () => ({ outputSize: [8, 8], out: new Float32Array(384) }),
    error: TypeError,
    message: "upsampleNearestExact2d: out must be a Tensor, got Float32Array(384)",
  },
  {
    name: "out of the input's shape (the backward's rule)",
    op: b2,
    input: x2,
    options: (d) => ({ outputSize: [8, 8], out: d.zeros([2, 3, 4, 4]) }),
    error: RangeError,
    message:
      "upsampleBilinear2d: out shape [2, 3, 4, 4] must equal [N, C, ...outputSize] [2, 3, 8, 8]",
  },
  {
    name: "out dtype",
    op: n1,
    input: x1,
    options: (d) => ({ outputSize: [8], out: d.zeros([2, 3, 8], { dtype: "bfloat16" }) }),
    error: TypeError,
    message: "upsampleNearestExact1d: out dtype bfloat16 must equal input dtype float32",
  },
  {
    name: "out is the input",
    op: b2,
    input: x2,
    options: () => undefined, // replaced below: out = the input itself
    error: RangeError,
    message:
      "upsampleBilinear2d: out must not share memory with input (their storage ranges overlap)",
  },
];

for (const backend of BACKENDS) {
  if (backend.kind === "npu" && !backend.emulated) continue;
  backend.test(`forward rules on ${backend.label}: every rule's exact message, before anything is allocated`, async (t) => {
    using device = backend.open();
    const spy = spyBackend(device);
    for (const rule of RULES) {
      await t.step(rule.name, () => {
        const input = rule.input(device);
        const options = rule.name === "out is the input"
          ? { outputSize: [4, 4], out: input }
          : rule.options(device);
        const before = { ...spy };
        const heap = heapLive(device);
        const live = backend.emulated ? emuLive() : null;
        assert.throws(() => rule.op(input, options), (error: Error) => {
          assert.equal(error.constructor, rule.error, `${rule.name}: ${error}`);
          assert.equal(error.message, rule.message);
          return true;
        });
        assert.deepEqual({ ...spy }, before, `${rule.name}: the backend allocated or launched`);
        assert.equal(heapLive(device), heap, `${rule.name}: the CPU heap moved`);
        if (live) assert.deepEqual(emuLive(), live, `${rule.name}: device memory moved`);
        if (input instanceof Tensor) input.dispose();
        const out = (options as { out?: unknown } | undefined)?.out;
        if (out instanceof Tensor) out.dispose();
      });
    }
  });

  backend.test(`forward rules on ${backend.label}: the boundaries are accepted (floor(in * scale), -0 and null, 1 / 50, bilinear past 50x)`, async () => {
    using device = backend.open();
    using wide = device.zeros([1, 1, 1000]);
    using shrunk = upsampleNearestExact1d(wide, { outputSize: [20], scales: 0.02 });
    assert.deepEqual([...shrunk.shape], [1, 1, 20]);
    // floor(3 * 7 / 3) = 7 (the double product is 7.000000000000001).
    using x3 = device.zeros([1, 1, 3, 3]);
    using y3 = upsampleNearestExact2d(x3, { outputSize: [7, 7], scalesH: 7 / 3, scalesW: 7 / 3 });
    assert.deepEqual([...y3.shape], [1, 1, 7, 7]);
    // -0 and null mean "not given".
    using one = device.tensor([2], [1, 1, 1, 1]);
    using big = upsampleBilinear2d(one, {
      outputSize: [51, 101],
      scalesH: -0,
      out: null as never,
      alignCorners: true,
    });
    assert.equal((await big.toFloat32Array()).every((v) => v === 2), true);
    using nullScale = upsampleNearestExact2d(x3, { outputSize: [5, 5], scalesW: null as never });
    assert.deepEqual([...nullScale.shape], [1, 1, 5, 5]);
  });

  backend.test(`forward rules on ${backend.label}: nearest-exact past 50x is accepted (generated: from the sizes, or a scale past 50), a copy of the input's cells, in the input's order`, async () => {
    using device = backend.open();
    const r = rng(SEED + 5);
    const backwardRefuses =
      /^RangeError: upsampleNearestExact[12]dBackward: nearest-exact enlarges [LHW] at most 50x/;
    for (let i = 0; i < 40; i++) {
      const spec = OPS[i % 2];
      const dims = spec.dims.length;
      const d = int(r, 0, dims - 1);
      const inSp = spec.dims.map(() => int(r, 1, 3));
      const outSp = inSp.map((s) => int(r, 1, 2 * s));
      const options: Record<string, unknown> = {};
      if (r() < 0.5) {
        outSp[d] = 50 * inSp[d] + int(r, 1, 200);
      } else {
        let s: number;
        do s = 50 + (r() < 0.2 ? 1e-9 : r() * 40); while (Math.floor(inSp[d] * s) < 1);
        outSp[d] = Math.floor(inSp[d] * s);
        options[spec.scaleKeys[d]] = s;
      }
      const shape = [1, int(r, 1, 2), ...inSp];
      const values = Array.from({ length: numel(shape) }, (_, k) => k + 1);
      const what = `${spec.name} [${shape}] -> [${outSp}] ${JSON.stringify(options)}`;
      using x = device.tensor(values, shape);
      using y = spec.fn(x, { ...options, outputSize: outSp });
      assert.deepEqual([...y.shape], [...shape.slice(0, 2), ...outSp], what);
      // Each output row of a plane copies cells of the same plane, never going back.
      const got = await y.toFloat32Array();
      const row = outSp[dims - 1], plane = numel(outSp), inPlane = numel(inSp);
      for (let p = 0; p < shape[1]; p++) {
        for (let k = 0; k < plane; k++) {
          const v = got[p * plane + k];
          assert.ok(v > p * inPlane && v <= (p + 1) * inPlane, `${what}: cell ${k} of plane ${p}`);
          if (k % row > 0) assert.ok(v >= got[p * plane + k - 1], `${what}: cell ${k} went back`);
        }
      }
      // The backward keeps its limit.
      using grad = device.zeros(y.shape);
      const backward = dims === 1 ? upsampleNearestExact1dBackward : upsampleNearestExact2dBackward;
      assert.throws(
        () => backward(grad, { ...options, outputSize: outSp, inputSize: shape }),
        backwardRefuses,
        what,
      );
    }
  });
}

Deno.test("forward rules: the CPU device reference of an Ascend 910 refuses nearest-exact before allocating, as the NPU does", () => {
  using device = Device.open({ backend: "cpu", numerics: "device", soc: "Ascend910A", threads: 1 });
  const spy = spyBackend(device);
  for (
    const [fn, shape, outputSize] of [
      [n1, [1, 2, 3], [6]],
      [n2, [1, 2, 3, 3], [6, 6]],
    ] as const
  ) {
    const name = OPS.find((o) => o.fn === fn)!.name;
    using input = device.zeros(shape);
    const before = { ...spy };
    const heap = heapLive(device);
    assert.throws(() => fn(input, { outputSize }), (error) => {
      assert.ok(error instanceof TypeError, String(error));
      assert.match(
        error.message,
        new RegExp(
          `^${name} is not supported on the Atlas training series \\(Ascend 910\\): .*561000 ` +
            `\\(ACLNN_ERR_INNER\\) at launch.* Run it on the CPU backend`,
        ),
      );
      return true;
    });
    assert.deepEqual({ ...spy }, before, `${name}: the backend allocated or launched`);
    assert.equal(heapLive(device), heap, `${name}: the CPU heap moved`);
  }
  // Bilinear runs there.
  using x = device.zeros([1, 2, 3, 3]);
  upsampleBilinear2d(x, { outputSize: [6, 6] }).dispose();
});

EMULATED_LANE.test({
  name: "forward rules on npu-emulated: a result past 2^53 elements is refused naming the op",
  // The forward's validation checks the result's element count, as the backward's does inputSize's.
  fn: () => {
    using device = EMULATED_LANE.open();
    using x = device.zeros([1, 2, 4, 4]);
    const live = emuLive();
    assert.throws(
      () => upsampleBilinear2d(x, { outputSize: [2 ** 26, 2 ** 26] }),
      /^RangeError: upsampleBilinear2d: the result \[N, C, \.\.\.outputSize\] = \[1, 2, 67108864, 67108864\] has 9007199254740992 elements, more than 2\^53 - 1$/,
    );
    assert.deepEqual(emuLive(), live);
  },
});
