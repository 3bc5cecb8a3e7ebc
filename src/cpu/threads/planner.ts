/**
 * How many worker threads a kernel call gets (0: it runs on the calling thread), decided per call
 * from what it costs and what this machine has given so far.
 *
 * The model. A call of class k (kernel and path, dtype) moving B bytes (gradOutput + result) costs
 * t1 = B * c_k on the calling thread, where c_k is the class's time per byte on one thread. On w
 * workers it costs tw = h + t1 / (1 + (w - 1) g_k), where h is the fixed cost of a hand-off (waking
 * the workers and the calling thread, ~0.1 ms here) and g_k the gain of each further worker: ~1
 * for a compute-bound kernel on idle cores, ~0 for one bound by memory bandwidth or on two logical
 * CPUs of one physical core. A call goes to the w (2 .. max) with the lowest tw when that is below
 * {@link MARGIN} t1, else it runs on the calling thread; w is also bounded by the chunks the call
 * can be cut into.
 *
 * The model only decides until a call's own shape (class, bytes, chunks) has been timed on both
 * plans: from then on the shape goes to the workers only when the median of its worker runs is
 * below {@link MARGIN} times the median of its calling-thread runs (a training loop repeats its
 * shapes, and shapes of one class differ in ns per byte, so a class average misjudged some).
 *
 * The calibration is the calls themselves: every large call is timed (two `performance.now()`),
 * a call on the calling thread gives c_k, a call on w workers gives g_k = (t1 / (tw - h) - 1) /
 * (w - 1); each is the median of the class's last {@link WINDOW} observations, so one slow phase of
 * a shared VM does not flip the plan. Until a class has observations, the one-thread cost is a prior
 * measured on a 2-vCPU AMD EPYC VM (`bench:compare`) and the workers' gain is assumed to be 0: the
 * default never bets on workers this machine has not shown to pay (on that VM the second vCPU gave
 * a SIMD loop 1.01x and a copy 1.40x in one idle run, 1.77x and 1.30x in another). Nothing runs
 * before the first call or blocks it. A class tries its other plan on its second call (so the
 * workers are measured early) and then now and then ({@link EXPLORE_EARLY}, later
 * {@link EXPLORE_LATE}), so a machine that becomes idle or busy changes the plan.
 *
 * @module
 */

import type { KERNEL_EXPORTS } from "./control.ts";

/** What the planner needs to know about a call (a subset of `PreparedCall`). */
export interface CallShape {
  /** The kernel export. */
  readonly kernel: typeof KERNEL_EXPORTS[number];
  /** Arguments: dtype code first; nearest's wFactor at index 9. */
  readonly args: readonly number[];
  readonly planes: number;
  readonly outPlaneBytes: number;
  readonly gradPlaneBytes: number;
}

/** A worker plan must be predicted this much faster than the calling thread to be taken. */
export const MARGIN = 0.9;
/** Observations kept per class and plan (the median decides). */
export const WINDOW = 7;
/** Fixed cost of handing a call to the workers and getting it back, ms (measured ~0.05-0.25). */
export const HANDOFF_MS = 0.1;
/** A class tries its other plan every this many calls while young, then every EXPLORE_LATE. */
export const EXPLORE_EARLY = 16;
export const EXPLORE_LATE = 64;
/** Calls of a class after which it explores at the late rate. */
const YOUNG_CALLS = 64;
/** Calls predicted shorter than this on one thread never try the workers (ms). */
const EXPLORE_MIN_MS = 0.15;

// nearest with a width factor of 1 or 2, nearest otherwise, bilinear, down2; the forward ops:
// nearest-exact, bilinear.
const KINDS = 6;
/** Prior ns per byte moved, one thread, [kind][dtype: float32, float16, bfloat16]. */
const PRIOR_NS_PER_BYTE = [
  [0.07, 0.16, 0.11],
  [0.13, 0.55, 0.24],
  [0.3, 0.55, 0.5],
  [0.095, 0.45, 0.34],
  [0.08, 0.1, 0.1],
  [0.3, 0.5, 0.3],
];
/** Gain of each further worker before one was measured: none (see the module doc). */
const PRIOR_GAIN = 0;
/** The call of a class that first tries the other plan. */
const FIRST_EXPLORE = 2;

/** The plan of one call, as {@link Planner.choose} returns it. */
export interface Choice {
  /** Workers (0: the calling thread). */
  workers: number;
  /** The class's predicted one-thread time of this call, ms. */
  t1Ms: number;
  /** The class's index (for {@link Planner.record}). */
  cls: number;
  /** The call's shape key (for {@link Planner.record}). */
  shape: string;
}

/** Shapes remembered per planner; the table is emptied when it is full. */
const SHAPES = 64;

class Window {
  readonly #values: number[] = [];
  #next = 0;
  push(x: number): void {
    if (this.#values.length < WINDOW) this.#values.push(x);
    else this.#values[this.#next] = x;
    this.#next = (this.#next + 1) % WINDOW;
  }
  get size(): number {
    return this.#values.length;
  }
  median(fallback: number): number {
    const n = this.#values.length;
    if (n === 0) return fallback;
    const sorted = [...this.#values].sort((a, b) => a - b);
    return n % 2 === 1 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }
}

interface ClassState {
  readonly prior: number;
  readonly nsPerByte: Window;
  readonly gain: Window;
  calls: number;
}

/** One shape's own times, ms, on the calling thread and on the workers. */
interface ShapeState {
  readonly here: Window;
  readonly workers: Window;
  calls: number;
}

/**
 * The per-process (per-device) planner of a CPU backend with `maxWorkers` workers.
 *
 * @example
 * ```ts
 * import { Planner } from "./planner.ts";
 * const planner = new Planner(2);
 * const call = {
 *   kernel: "bilinear_backward" as const,
 *   args: [0],
 *   planes: 512,
 *   outPlaneBytes: 16384,
 *   gradPlaneBytes: 65536,
 * };
 * const choice = planner.choose(call, 512);
 * planner.record(choice, 5.1, 512 * 81920); // it took 5.1 ms; it moved that many bytes
 * ```
 */
export class Planner {
  /** The most workers a call may get. */
  readonly maxWorkers: number;
  readonly #classes: ClassState[] = [];
  readonly #shapes = new Map<string, ShapeState>();
  readonly #choice: Choice = { workers: 0, t1Ms: 0, cls: 0, shape: "" };

  constructor(maxWorkers: number) {
    this.maxWorkers = maxWorkers;
    for (let kind = 0; kind < KINDS; kind++) {
      for (let dtype = 0; dtype < 3; dtype++) {
        this.#classes.push({
          prior: PRIOR_NS_PER_BYTE[kind][dtype],
          nsPerByte: new Window(),
          gain: new Window(),
          calls: 0,
        });
      }
    }
  }

  /**
   * The plan of a call that can be cut into `chunks` pieces: workers (0 = calling thread), with
   * the predicted one-thread time. Returns a shared record, valid until the next call.
   */
  choose(call: CallShape, chunks: number): Choice {
    const kind = call.kernel === "bilinear_forward"
      ? 5
      : call.kernel === "nearest_forward"
      ? 4
      : call.kernel === "bilinear_down2"
      ? 3
      : call.kernel === "bilinear_backward"
      ? 2
      : call.args[9] === 1 || call.args[9] === 2
      ? 0
      : 1;
    const cls = kind * 3 + call.args[0];
    const state = this.#classes[cls];
    const bytes = call.planes * (call.outPlaneBytes + call.gradPlaneBytes);
    const t1 = (bytes * state.nsPerByte.median(state.prior)) / 1e6;
    const gain = state.gain.median(PRIOR_GAIN);
    let best = 0, bestMs = MARGIN * t1;
    const most = Math.min(this.maxWorkers, chunks);
    for (let w = 2; w <= most; w++) {
      const ms = HANDOFF_MS + t1 / (1 + (w - 1) * Math.max(0, gain));
      if (ms < bestMs) {
        best = w;
        bestMs = ms;
      }
    }
    const key = `${cls}:${bytes}:${most}`;
    const shape = this.#shape(key);
    if (most >= 2 && shape.here.size > 0 && shape.workers.size > 0) {
      // Both plans timed on this very shape: they decide, not the model.
      const faster = shape.workers.median(Infinity) < MARGIN * shape.here.median(0);
      best = faster ? Math.max(best, 2) : 0;
    }
    // Now and then the other plan, so that both stay measured.
    const period = shape.calls < YOUNG_CALLS ? EXPLORE_EARLY : EXPLORE_LATE;
    shape.calls++;
    state.calls++;
    const explore = shape.calls === FIRST_EXPLORE || shape.calls % period === 0;
    if (explore && most >= 2 && t1 >= EXPLORE_MIN_MS) {
      best = best === 0 ? most : 0;
    }
    const choice = this.#choice;
    choice.workers = best;
    choice.t1Ms = t1;
    choice.cls = cls;
    choice.shape = key;
    return choice;
  }

  /** Records how long a call planned by `choice` took, ms (bytes: what it moved). */
  record(choice: Readonly<Choice>, ms: number, bytes: number): void {
    const state = this.#classes[choice.cls];
    const shape = this.#shapes.get(choice.shape);
    if (shape !== undefined) (choice.workers === 0 ? shape.here : shape.workers).push(ms);
    if (choice.workers === 0) {
      state.nsPerByte.push((ms * 1e6) / bytes);
    } else if (choice.workers >= 2) {
      const speedup = choice.t1Ms / Math.max(ms - HANDOFF_MS, 1e-3);
      state.gain.push(Math.min(1, Math.max(-1, (speedup - 1) / (choice.workers - 1))));
    }
  }

  #shape(key: string): ShapeState {
    let shape = this.#shapes.get(key);
    if (shape === undefined) {
      if (this.#shapes.size >= SHAPES) this.#shapes.clear();
      shape = { here: new Window(), workers: new Window(), calls: 0 };
      this.#shapes.set(key, shape);
    }
    return shape;
  }

  /** The class's current one-thread ns per byte and per-worker gain (for reports and tests). */
  estimate(cls: number): { nsPerByte: number; gain: number; observed: number } {
    const state = this.#classes[cls];
    return {
      nsPerByte: state.nsPerByte.median(state.prior),
      gain: state.gain.median(PRIOR_GAIN),
      observed: state.nsPerByte.size + state.gain.size,
    };
  }
}
