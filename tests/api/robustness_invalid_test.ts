// Generated invalid calls for the three ops, seeded and reproducible (ROBUSTNESS_SEED=<n> to vary):
// every one must throw TypeError or RangeError synchronously, with a message that starts with the
// op name and names the bad argument, before any allocation or launch (the backend's
// allocate/launch are counted on both backends, plus the emulation's live counters and launch count
// on the NPU). What a rejection costs is measured by bench/rejection_bench.ts, not asserted here.

import { forgeries, notArrays } from "../support/hostile.ts";
import assert from "node:assert/strict";
import {
  Device,
  type DType,
  DTYPES,
  Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import type { Backend, UpsampleOp } from "../../src/backend.ts";
import { deviceInternals } from "../../src/device.ts";
import { resolveUpsample } from "../../src/ops/validate.ts";
import {
  BACKENDS,
  emu,
  EMU_DIR,
  EMULATED_LANE,
  emuLive,
  rng,
  RUNNING_BACKENDS,
} from "../support/helpers.ts";

type AnyOp = (gradOutput: unknown, options?: unknown) => Tensor;

interface OpSpec {
  readonly op: UpsampleOp;
  readonly name: string;
  readonly fn: AnyOp;
  readonly spatial: number;
  readonly scaleKeys: readonly string[];
  readonly nearest: boolean;
}

const OPS: readonly OpSpec[] = [
  {
    op: "nearestExact1d",
    name: "upsampleNearestExact1dBackward",
    fn: upsampleNearestExact1dBackward as unknown as AnyOp,
    spatial: 1,
    scaleKeys: ["scales"],
    nearest: true,
  },
  {
    op: "nearestExact2d",
    name: "upsampleNearestExact2dBackward",
    fn: upsampleNearestExact2dBackward as unknown as AnyOp,
    spatial: 2,
    scaleKeys: ["scalesH", "scalesW"],
    nearest: true,
  },
  {
    op: "bilinear2d",
    name: "upsampleBilinear2dBackward",
    fn: upsampleBilinear2dBackward as unknown as AnyOp,
    spatial: 2,
    scaleKeys: ["scalesH", "scalesW"],
    nearest: false,
  },
];

const CLASSES = [
  "rank",
  "size",
  "huge",
  "inconsistent",
  "gradOutputType",
  "scale",
  "scale50x",
  "alignCorners",
  "options",
  "out",
  "disposed",
  "device",
] as const;
type CaseClass = typeof CLASSES[number];

const CASES_PER_CLASS = 500;
const MIN_PER_CLASS = 480;

const SEED = Number(Deno.env.get("ROBUSTNESS_SEED") ?? 0x5eed1);

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
  readonly grad: unknown;
  readonly options: unknown;
  /** Call with one argument (no options object at all). */
  readonly omitOptions?: boolean;
  readonly kind: typeof TypeError | typeof RangeError;
  /** The message must contain one of these (the argument it is about). */
  readonly names: readonly string[];
}

interface Ctx {
  readonly device: Device;
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
const describe = (value: unknown): string => {
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
};

/** A scale with floor(in * s) == out (in double) that the op accepts, or 0 when none was found. */
function validScale(r: () => number, input: number, output: number, nearest: boolean): number {
  for (let attempt = 0; attempt < 4; attempt++) {
    const s = attempt === 0 ? output / input : (output + r()) / input;
    if (Math.floor(input * s) === output && (!nearest || 1 / s >= 0.02)) return s;
  }
  return 0;
}

function makeBase(r: () => number, spec: OpSpec): Base {
  const inSp = Array.from({ length: spec.spatial }, () => int(r, 1, 5));
  const outSp = Array.from({ length: spec.spatial }, () => int(r, 1, 8));
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

const gradShape = (b: Base): number[] => [b.n, b.c, ...b.outSp];
const inputShape = (b: Base): number[] => [b.n, b.c, ...b.inSp];
const baseOptions = (b: Base): Record<string, unknown> => ({
  outputSize: [...b.outSp],
  inputSize: inputShape(b),
  ...b.extra,
});

function zeros(ctx: Ctx, shape: readonly number[], dtype: DType, device = ctx.device): Tensor {
  const tensor = device.zeros(shape, { dtype });
  ctx.track.push(tensor);
  return tensor;
}

/** Elements that are not sizes, with the error they must raise. */
const BAD_ELEMENTS: ReadonlyArray<[unknown, typeof TypeError]> = [
  [-1, RangeError],
  [-7, RangeError],
  [-(2 ** 31), RangeError],
  [0.5, RangeError],
  [1.5, RangeError],
  [2.0000001, RangeError],
  [1e-9, RangeError],
  [7.999999, RangeError],
  [NaN, RangeError],
  [Infinity, RangeError],
  [-Infinity, RangeError],
  ["4", TypeError],
  [4n, TypeError],
  [true, TypeError],
  [null, TypeError],
  [undefined, TypeError],
  [{}, TypeError],
  [[4], TypeError],
  [new Number(4), TypeError],
  [Symbol("4"), TypeError],
  [Object.create(null), TypeError],
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

/**
 * A sparse array of 2^25 holes: printing it element by element into a message takes about a second
 * and builds a 64 MB string (at the maximal length, 2^32 - 1, it takes minutes). The call must not.
 */
const HUGE_SPARSE = new Array(2 ** 25);

type Generator = (ctx: Ctx, b: Base, grad: Tensor) => Case;

const GENERATORS: Readonly<Record<CaseClass, Generator>> = {
  rank(ctx, b): Case {
    const { r } = ctx;
    const rank = b.spec.spatial + 2;
    const variant = int(r, 0, 3);
    if (variant === 0) {
      const k = pick(r, [0, 1, 2, 3, 4, 5, 6].filter((x) => x !== rank));
      const shape = Array.from({ length: k }, () => int(r, 1, 3));
      return {
        what: `gradOutput of rank ${k} ${describe(shape)}`,
        grad: zeros(ctx, shape, b.dtype),
        options: baseOptions(b),
        kind: TypeError,
        names: ["gradOutput"],
      };
    }
    const field = variant === 1 ? "outputSize" : variant === 2 ? "inputSize" : pick(r, [
      "outputSize",
      "inputSize",
    ]);
    const want = field === "outputSize" ? b.spec.spatial : rank;
    let value: unknown;
    if (variant === 3) {
      value = r() < 0.05
        ? HUGE_SPARSE
        : pick(r, notArrays(field === "outputSize" ? b.outSp : b.inSp));
    } else {
      const k = pick(r, [0, 1, 2, 3, 4, 5, 6, 7].filter((x) => x !== want));
      value = Array.from({ length: k }, () => int(r, 1, 8));
    }
    return {
      what: `${field} = ${describe(value)}`,
      grad: zeros(ctx, gradShape(b), b.dtype),
      options: { ...baseOptions(b), [field]: value },
      kind: TypeError,
      names: [field],
    };
  },

  size(ctx, b): Case {
    const { r } = ctx;
    const field = pick(r, ["outputSize", "inputSize"] as const);
    const sizes = field === "outputSize" ? [...b.outSp] : inputShape(b);
    const index = int(r, 0, sizes.length - 1);
    const spatial = field === "outputSize" || index >= 2;
    let value: unknown;
    let kind: typeof TypeError;
    if (spatial && r() < 0.3) {
      [value, kind] = [pick(r, [0, -0]), RangeError];
    } else {
      [value, kind] = pick(r, BAD_ELEMENTS);
    }
    const list: unknown[] = [...sizes];
    list[index] = value;
    return {
      what: `${field}[${index}] = ${describe(value)}`,
      grad: zeros(ctx, gradShape(b), b.dtype),
      options: { ...baseOptions(b), [field]: list },
      kind,
      names: [field],
    };
  },

  huge(ctx, b): Case {
    const { r } = ctx;
    const grad = zeros(ctx, gradShape(b), b.dtype);
    const variant = int(r, 0, 2);
    const field = pick(r, ["outputSize", "inputSize"] as const);
    const sizes = field === "outputSize" ? [...b.outSp] : inputShape(b);
    if (variant === 0) {
      // A single size at or past 2^53.
      const index = int(r, 0, sizes.length - 1);
      sizes[index] = pick(r, [2 ** 53, 2 ** 53 + 2, 2 ** 64, 1e300, Number.MAX_VALUE]);
      return {
        what: `${field}[${index}] = ${sizes[index]}`,
        grad,
        options: { ...baseOptions(b), [field]: sizes },
        kind: RangeError,
        names: [field],
      };
    }
    if (variant === 1 && !(field === "outputSize" && sizes.length < 2)) {
      // Every size a safe integer, their product past 2^53.
      const each = Math.ceil(2 ** (54 / sizes.length)) + int(r, 0, 1000);
      const list = sizes.map(() => each);
      return {
        what: `${field} = ${describe(list)} (product past 2^53)`,
        grad,
        options: { ...baseOptions(b), [field]: list },
        kind: RangeError,
        names: [field],
      };
    }
    // Element counts past 2^31 (below 2^53) that gradOutput cannot match.
    const big = pick(r, [2 ** 31, 2 ** 31 + 1, 2 ** 32, 3e9, 2 ** 40, 2 ** 52]);
    const options = baseOptions(b);
    let what: string;
    if (field === "outputSize") {
      const index = int(r, 0, b.spec.spatial - 1);
      const list = [...b.outSp];
      list[index] = big;
      options.outputSize = list;
      what = `outputSize[${index}] = ${big} against gradOutput ${describe(gradShape(b))}`;
    } else if (r() < 0.5) {
      const list = inputShape(b);
      list[int(r, 0, 1)] = big;
      options.inputSize = list;
      what = `inputSize ${describe(list)} against gradOutput ${describe(gradShape(b))}`;
    } else {
      const list = inputShape(b);
      list[0] = 2 ** 16 + int(r, 0, 5);
      list[1] = 2 ** 16 + int(r, 0, 5);
      options.inputSize = list;
      what = `inputSize N*C past 2^32 ${describe(list)}`;
    }
    for (const key of b.spec.scaleKeys) delete options[key];
    // Past 2^53 in all (2^52 times a size > 2) the element count rule names the list instead.
    return { what, grad, options, kind: RangeError, names: ["gradOutput", field] };
  },

  inconsistent(ctx, b): Case {
    const { r } = ctx;
    const variant = int(r, 0, 2);
    const options = baseOptions(b);
    let grad: Tensor;
    let what: string;
    if (variant === 0) {
      const shape = gradShape(b);
      const d = int(r, 0, shape.length - 1);
      const delta = pick(r, [-3, -2, -1, 1, 2, 3]);
      const changed = shape[d] + delta;
      shape[d] = changed < 0 ? shape[d] + 1 : changed;
      grad = zeros(ctx, shape, b.dtype);
      what = `gradOutput ${describe(shape)} for ${describe(gradShape(b))}`;
    } else if (variant === 1) {
      grad = zeros(ctx, gradShape(b), b.dtype);
      const list = [...b.outSp];
      const d = int(r, 0, list.length - 1);
      list[d] += int(r, 1, 4);
      options.outputSize = list;
      what = `outputSize ${describe(list)} for gradOutput ${describe(gradShape(b))}`;
    } else {
      grad = zeros(ctx, gradShape(b), b.dtype);
      const list = inputShape(b);
      const d = int(r, 0, 1);
      list[d] = r() < 0.3 ? 0 : list[d] + int(r, 1, 4);
      options.inputSize = list;
      what = `inputSize ${describe(list)} for gradOutput ${describe(gradShape(b))}`;
    }
    return { what, grad, options, kind: RangeError, names: ["gradOutput"] };
  },

  gradOutputType(ctx, b): Case {
    const grad = pick(ctx.r, forgeries(gradShape(b), b.dtype));
    return {
      what: `gradOutput = ${describe(grad)}`,
      grad,
      options: baseOptions(b),
      kind: TypeError,
      names: ["gradOutput"],
    };
  },

  scale(ctx, b): Case {
    const { r } = ctx;
    const grad = zeros(ctx, gradShape(b), b.dtype);
    const i = int(r, 0, b.spec.scaleKeys.length - 1);
    const key = b.spec.scaleKeys[i];
    const variant = int(r, 0, 4);
    let value: unknown;
    let kind: typeof TypeError = RangeError;
    const names = [key];
    const options = baseOptions(b);
    if (variant === 0) {
      value = pick(r, [-1, -0.5, -2, -Number.MIN_VALUE, -1e300, -Infinity]);
    } else if (variant === 1) {
      value = pick(r, [NaN, Infinity]);
    } else if (variant === 2) {
      value = pick(r, ["2", 2n, true, false, {}, [2], new Number(2), Symbol("2"), HUGE_SPARSE]);
      kind = TypeError;
    } else if (variant === 3) {
      // Positive and finite, but floor(inputSize * scale) != outputSize.
      const input = b.inSp[i], output = b.outSp[i];
      let s = pick(r, [Number.MIN_VALUE, 1e-300, 1e300, Number.MAX_VALUE]);
      if (r() < 0.7) {
        do s = r() < 0.5 ? (output + 1 + r() * 3) / input : (r() * output) / input; while (
          s <= 0 || Math.floor(input * s) === output
        );
      }
      value = s;
    } else {
      const wrong = b.spec.spatial === 1
        ? pick(r, ["scalesH", "scalesW", "scale", "scaleFactor", "scales_factor"])
        : pick(r, ["scales", "scaleH", "scalesX", "scales_h", "scaleFactor"]);
      options[wrong] = 2;
      return {
        what: `unknown scale option ${wrong}`,
        grad,
        options,
        kind: TypeError,
        names: [`"${wrong}"`],
      };
    }
    options[key] = value;
    return { what: `${key} = ${describe(value)}`, grad, options, kind, names };
  },

  scale50x(ctx, b0): Case {
    const { r } = ctx;
    // Nearest-exact only: the forward op may enlarge a dimension at most 50x.
    const spec = b0.spec.nearest ? b0.spec : OPS[int(r, 0, 1)];
    const inSp = Array.from({ length: spec.spatial }, (_, i) => b0.inSp[i] ?? 2);
    const outSp = Array.from({ length: spec.spatial }, (_, i) => b0.outSp[i] ?? 3);
    const b: Base = { ...b0, spec, inSp, outSp, extra: {} };
    const d = int(r, 0, spec.spatial - 1);
    const key = spec.scaleKeys[d];
    let names: string[];
    let what: string;
    const extra: Record<string, unknown> = {};
    if (r() < 0.5) {
      // Sizes alone: in / out < 0.02.
      b.inSp[d] = int(r, 1, 3);
      b.outSp[d] = 50 * b.inSp[d] + int(r, 1, 30);
      what = `${spec.name} ${b.inSp[d]} -> ${b.outSp[d]} from the sizes`;
      names = ["outputSize", "inputSize"];
    } else {
      // A scale over 50 that matches the sizes (1 / scale < 0.02 even when in / out == 0.02).
      b.inSp[d] = int(r, 1, 2);
      let s: number;
      do s = 50 + (r() < 0.2 ? 1e-9 : r() * 30); while (Math.floor(b.inSp[d] * s) < 1);
      b.outSp[d] = Math.floor(b.inSp[d] * s);
      extra[key] = s;
      what = `${spec.name} ${b.inSp[d]} -> ${b.outSp[d]} with ${key} ${s}`;
      names = [key];
    }
    const grad = zeros(ctx, gradShape(b), b.dtype);
    return { what, spec, grad, options: { ...baseOptions(b), ...extra }, kind: RangeError, names };
  },

  alignCorners(ctx, b): Case {
    const { r } = ctx;
    const grad = zeros(ctx, gradShape(b), b.dtype);
    if (b.spec.nearest) {
      const value = pick(r, [true, false, 1, "yes"]);
      return {
        what: `alignCorners = ${describe(value)} on ${b.spec.name}`,
        grad,
        options: { ...baseOptions(b), alignCorners: value },
        kind: TypeError,
        names: [`"alignCorners"`],
      };
    }
    const value = r() < 0.03 ? HUGE_SPARSE : pick(r, WRONG_BOOLEANS);
    return {
      what: `alignCorners = ${describe(value)}`,
      grad,
      options: { ...baseOptions(b), alignCorners: value },
      kind: TypeError,
      names: ["alignCorners"],
    };
  },

  options(ctx, b): Case {
    const { r } = ctx;
    const grad = zeros(ctx, gradShape(b), b.dtype);
    const variant = int(r, 0, 4);
    if (variant === 0) {
      return {
        what: "no options argument",
        grad,
        options: undefined,
        omitOptions: true,
        kind: TypeError,
        names: ["options"],
      };
    }
    if (variant === 1) {
      const value = pick(r, [
        undefined,
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
        what: `options = ${describe(value)}`,
        grad,
        options: value,
        kind: TypeError,
        names: ["options"],
      };
    }
    if (variant === 2) {
      const key = pick(r, [
        "outputsize",
        "input_size",
        "inputShape",
        "align_corners",
        "out_",
        "deterministc",
        "",
        "size",
        "mode",
      ]);
      return {
        what: `unknown option ${JSON.stringify(key)}`,
        grad,
        options: { ...baseOptions(b), [key]: 1 },
        kind: TypeError,
        names: [`"${key}"`],
      };
    }
    if (variant === 3) {
      const key = pick(r, ["outputSize", "inputSize"]);
      const options = baseOptions(b);
      delete options[key];
      return { what: `options without ${key}`, grad, options, kind: TypeError, names: [key] };
    }
    const value = pick(r, WRONG_BOOLEANS);
    return {
      what: `deterministic = ${describe(value)}`,
      grad,
      options: { ...baseOptions(b), deterministic: value },
      kind: TypeError,
      names: ["deterministic"],
    };
  },

  out(ctx, b, grad): Case {
    const { r } = ctx;
    const variant = int(r, 0, 3);
    const options = baseOptions(b);
    const inShape = inputShape(b);
    if (variant === 0) {
      const value = r() < 0.03 ? HUGE_SPARSE : pick(r, [
        ...forgeries(gradShape(b), b.dtype).filter((v) => v !== undefined && v !== null), // null = not given
        new Float32Array(numel(inShape)),
      ]);
      return {
        what: `out = ${describe(value)}`,
        grad,
        options: { ...options, out: value },
        kind: TypeError,
        names: ["out"],
      };
    }
    if (variant === 1) {
      let shape = [...inShape];
      if (r() < 0.3) {
        shape = r() < 0.5 ? shape.slice(1) : [...shape, 1];
      } else {
        const d = int(r, 0, shape.length - 1);
        shape[d] = shape[d] + pick(r, shape[d] > 1 ? [-1, 1, 2] : [1, 2]);
      }
      const out = zeros(ctx, shape, b.dtype);
      return {
        what: `out ${describe(shape)} for inputSize ${describe(inShape)}`,
        grad,
        options: { ...options, out },
        kind: RangeError,
        names: ["out"],
      };
    }
    if (variant === 2) {
      const dtype = pick(r, DTYPES.filter((t) => t !== b.dtype));
      const out = zeros(ctx, inShape, dtype);
      return {
        what: `out ${dtype} for gradOutput ${b.dtype}`,
        grad,
        options: { ...options, out },
        kind: TypeError,
        names: ["out"],
      };
    }
    // out overlapping gradOutput: views of one storage whose element ranges intersect.
    const last = b.spec.spatial + 1;
    const outLen = b.outSp[b.spec.spatial - 1];
    const inLen = b.inSp[b.spec.spatial - 1];
    const start = int(r, 0, outLen - 1);
    const storageShape = [
      b.n,
      b.c,
      ...b.outSp.slice(0, -1).map((o, i) => Math.max(o, b.inSp[i])),
      Math.max(outLen, start + inLen),
    ];
    const storage = zeros(ctx, storageShape, b.dtype);
    let gradView = storage.slice(last, 0, outLen);
    let outView = storage.slice(last, start, start + inLen);
    ctx.track.push(gradView, outView);
    if (b.spec.spatial === 2) {
      gradView = gradView.slice(2, 0, b.outSp[0]);
      outView = outView.slice(2, 0, b.inSp[0]);
      ctx.track.push(gradView, outView);
    }
    return {
      what: `out ${describe(outView.shape)}+${outView.offset} overlapping gradOutput ` +
        `${describe(gradView.shape)} in storage ${describe(storageShape)}`,
      grad: gradView,
      options: { ...options, out: outView },
      kind: RangeError,
      names: ["out"],
    };
  },

  disposed(ctx, b, grad): Case {
    const { r } = ctx;
    const variant = int(r, 0, 2);
    if (variant === 0) {
      const dead = ctx.device.zeros(gradShape(b), { dtype: b.dtype });
      dead.dispose();
      return {
        what: "disposed gradOutput",
        grad: dead,
        options: baseOptions(b),
        kind: TypeError,
        names: ["gradOutput"],
      };
    }
    if (variant === 1) {
      // A disposed view whose storage is still alive (the base holds it).
      const shape = gradShape(b);
      const base = zeros(ctx, [shape[0] + 1, ...shape.slice(1)], b.dtype);
      const view = base.slice(0, int(r, 0, 1), undefined).slice(0, 0, shape[0]);
      view.dispose();
      return {
        what: "disposed view of a live storage as gradOutput",
        grad: view,
        options: baseOptions(b),
        kind: TypeError,
        names: ["gradOutput"],
      };
    }
    const out = ctx.device.zeros(inputShape(b), { dtype: b.dtype });
    out.dispose();
    return {
      what: "disposed out",
      grad,
      options: { ...baseOptions(b), out },
      kind: TypeError,
      names: ["out"],
    };
  },

  device(ctx, b, grad): Case {
    const { r } = ctx;
    const variant = int(r, 0, 2);
    if (variant === 0) {
      const dead = pick(r, ctx.closed);
      return {
        what: `gradOutput ${dead} of a closed device`,
        grad: dead,
        options: baseOptions(b),
        kind: TypeError,
        names: ["gradOutput"],
      };
    }
    if (variant === 1) {
      const dead = pick(r, ctx.closed);
      return {
        what: `out ${dead} of a closed device`,
        grad,
        options: { ...baseOptions(b), out: dead },
        kind: TypeError,
        names: ["out"],
      };
    }
    const other = pick(r, ctx.others);
    const out = zeros(ctx, inputShape(b), b.dtype, other);
    return {
      what: `out on another device (${other.name})`,
      grad,
      options: { ...baseOptions(b), out },
      kind: TypeError,
      names: ["out"],
    };
  },
};

/** Counts allocate/launch calls of a device's backend (both backends), for the "before any" check. */
function spyBackend(device: Device): { allocations: number; launches: number } {
  const backend = deviceInternals(device).backend() as Backend<unknown>;
  const counts = { allocations: 0, launches: 0 };
  const allocate = backend.allocate.bind(backend);
  const launch = backend.launch.bind(backend);
  Object.assign(backend, {
    allocate: (...args: Parameters<typeof allocate>) => (counts.allocations++, allocate(...args)),
    launch: (...args: Parameters<typeof launch>) => (counts.launches++, launch(...args)),
  });
  return counts;
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
  backend.test(`invalid calls on ${backend.label}: generated, rejected before anything happens`, () => {
    const emulated = backend.emulated;
    using device = backend.open();
    // Devices whose tensors the lane's device must refuse: the CPU and another NPU device (the
    // emulation's second device; on the npu lane another Device over the same NPU; from the CPU lanes
    // the first NPU lane that runs).
    const otherNpu = emulated
      ? () => Device.open({ backend: "npu", deviceId: 1, libDir: EMU_DIR })
      : backend.kind === "npu"
      ? backend.open
      : RUNNING_BACKENDS.find((lane) => lane.kind === "npu")?.open;
    const others = [Device.open({ backend: "cpu" }), ...(otherNpu ? [otherNpu()] : [])];
    const closed = closedTensors();
    const spy = spyBackend(device);
    const r = rng(SEED + (emulated ? 1 : 0));
    const ctx: Ctx = { device, others, closed, track: [], r };
    const counts = Object.fromEntries(CLASSES.map((c) => [c, 0])) as Record<CaseClass, number>;
    const byError = { TypeError: 0, RangeError: 0 };
    const failures = new Map<string, string>();
    try {
      for (let i = 0; i < CASES_PER_CLASS * CLASSES.length; i++) {
        const cls = CLASSES[i % CLASSES.length];
        const spec = pick(r, OPS);
        const b = makeBase(r, spec);
        const grad = zeros(ctx, gradShape(b), b.dtype);
        // The base call is valid: whatever is rejected was made invalid by the one mutation.
        resolveUpsample(spec.op, grad, baseOptions(b));
        const c = GENERATORS[cls](ctx, b, grad);
        const { name, fn } = c.spec ?? spec;
        const label = `seed ${SEED} case ${i} [${cls}] ${name}: ${c.what}`;

        const live = emulated ? emuLive() : null;
        const launches = emulated ? emu().aclemuLaunchCount() : 0n;
        const spied = { ...spy };
        let error: unknown = null;
        try {
          const returned = c.omitOptions ? fn(c.grad) : fn(c.grad, c.options);
          returned.dispose();
        } catch (e) {
          error = e;
        }
        const problem = judge(c, name, error) ??
          (spy.allocations !== spied.allocations || spy.launches !== spied.launches
            ? "the backend allocated or launched"
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
      `  ${backend.label} (seed ${SEED}): ${total} invalid calls, ${byError.TypeError} TypeError, ` +
        `${byError.RangeError} RangeError`,
    );
    for (const cls of CLASSES) {
      console.log(`    ${cls.padEnd(15)} ${String(counts[cls]).padStart(5)} cases`);
    }
    assert.deepEqual([...failures.values()], [], `${failures.size} distinct failures`);
    for (const cls of CLASSES) {
      assert.ok(counts[cls] >= MIN_PER_CLASS, `${cls}: only ${counts[cls]} cases ran`);
    }
  });
}

Deno.test("invalid calls: the generator is reproducible from its seed", () => {
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

Deno.test("invalid calls: the 50x boundaries are CANN's (upscale by 50 and shrink by 50 accepted)", async () => {
  for (const backend of RUNNING_BACKENDS) {
    using device = backend.open();
    using grad50 = device.tensor(Array.from({ length: 50 }, (_, i) => i), [1, 1, 50]);
    for (const scales of [undefined, 50]) {
      using result = upsampleNearestExact1dBackward(grad50, {
        outputSize: [50],
        inputSize: [1, 1, 1],
        scales,
      });
      assert.deepEqual([...await result.toFloat32Array()], [1225]);
    }
    using grad20 = device.zeros([1, 1, 20]);
    using shrink = upsampleNearestExact1dBackward(grad20, {
      outputSize: [20],
      inputSize: [1, 1, 1000],
      scales: 0.02,
    });
    assert.equal((await shrink.toFloat32Array()).length, 1000);
    using grad51 = device.zeros([1, 1, 51, 1]);
    assert.throws(
      () =>
        upsampleNearestExact2dBackward(grad51, { outputSize: [51, 1], inputSize: [1, 1, 1, 1] }),
      /^RangeError: upsampleNearestExact2dBackward: nearest-exact enlarges H at most 50x/,
    );
    // Bilinear has no such limit.
    using big = upsampleBilinear2dBackward(grad51, {
      outputSize: [51, 1],
      inputSize: [1, 1, 1, 1],
    });
    assert.equal((await big.toFloat32Array()).length, 1);
  }
});
