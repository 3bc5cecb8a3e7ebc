/**
 * How many threads a kernel call is shared by (1: the calling thread alone), decided per call from
 * what calls of its shape took on this machine.
 *
 * The threads. A shared call is cut into chunks (`cutCall`); the calling thread and the workers
 * take them from one counter, so each does what it can: a worker the host wakes late or slows takes
 * fewer chunks, one that never gets a CPU takes none, and the calling thread, which needs no waking,
 * does the rest. So a shared call costs about its one-thread time when the workers give nothing,
 * plus the hand-off (a store and a futex wake per worker, a few µs), and less by up to the thread
 * count when the host gives that much. What it can cost more: a worker preempted in the middle of a
 * chunk (a busy host) makes the calling thread wait for that chunk; two threads on one physical core,
 * or on a saturated memory bus, can each run slower than one alone.
 *
 * The rule. A call's shape is its class (kernel path and dtype), bytes moved and the threads it can
 * use (at most its chunks). Every shared or single call is timed (two `performance.now()`), and
 * each shape keeps the last {@link WINDOW} times of each plan:
 * - once both plans have been timed on the shape, it is shared when the median of its shared times
 *   is below the median of its single times (the measured speed-up `single / shared` > 1);
 * - before that, the shape follows its class: shared when the median of the speed-ups the class's
 *   other shapes measured is at least 1, or, for a class not yet measured, by default (the prior
 *   speed-up {@link PRIOR_SPEEDUP}: see above why sharing is the safe bet);
 * - a shape runs its other plan on its second call, then {@link EXPLORE_EARLY} calls later; each
 *   such run slower than the plan's median doubles the gap to the next, up to
 *   {@link EXPLORE_LATE} calls; one faster drops that plan's older times, runs again on the next
 *   call (until the plan turns) and the gap starts over. So both medians stay current, a host
 *   that becomes busy (or idle) moves the plan within about half a window of calls (4 of
 *   {@link WINDOW}), and where the other plan keeps losing it costs few calls: a losing run also
 *   slows the call after it (a shared call leaves half its output in the other core's cache), and
 *   on this VM one such run in 8 calls of 0.2-0.5 ms cost 3-9 %.
 * - a shape's first call is not timed: it runs cold, and which plan it ran would be judged by it
 *   (the first shared call of bilinear forward x2 on a device took 12.7 ms where the next took
 *   2.2-2.4, its first kernel run on that module; nearest-exact s=1.7 3.0 ms where alone took 1.4).
 *   Timed, it made the first shape of each class run alone for its next 8 calls, which are all of a
 *   short run (bench/scaling.ts: bilinear x2 forward 0.93x one thread, the host's SIMD loop 1.94x);
 * - nor is the call that starts a worker (KernelScheduler.run): starting an isolate took ~10 ms,
 *   which says nothing of what sharing costs.
 *
 * Nothing is measured before the first call, and nothing blocks it: the calls are the probe. On an
 * idle host that scales, the plan shares every large call from the first; on a host where sharing
 * loses (a busy host, SMT siblings, memory-bound kernels on a narrow bus), the shapes measured to
 * lose run on the calling thread after their first few calls; a busy phase longer than about half a
 * window moves a shape to the calling thread, and the first exploration after it ends (at most
 * {@link EXPLORE_LATE} calls later) brings sharing back within a few calls.
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

/** Times kept per shape and plan, and speed-ups per class (the median decides). */
export const WINDOW = 7;
/** Calls between a shape's runs of its other plan: at first, and at most (see the rule above). */
export const EXPLORE_EARLY = 8;
export const EXPLORE_LATE = 128;
/** The speed-up assumed for a class before any of its shapes was timed both ways. */
export const PRIOR_SPEEDUP = 1.5;
/** The call of a shape that first runs the other plan. */
const FIRST_EXPLORE = 2;
/** Shapes remembered per planner; the table is emptied when it is full. */
const SHAPES = 64;

// nearest with a width factor of 1 or 2, nearest otherwise, bilinear, down2; the forward ops:
// nearest-exact, bilinear.
const KINDS = 6;

/** The plan of one call, as {@link Planner.choose} returns it. */
export interface Choice {
  /** Threads sharing the call, the calling thread included (1: the calling thread alone). */
  threads: number;
  /** The class's index. */
  cls: number;
  /** The call's shape key (for {@link Planner.record}). */
  shape: string;
  /** Whether this call runs the shape's other plan, to time it. */
  explore: boolean;
  /** Whether this is the shape's first call, whose time {@link Planner.record} ignores. */
  first: boolean;
}

/**
 * The last {@link WINDOW} values and their median.
 *
 * @example
 * ```ts
 * import { Window } from "./planner.ts";
 * const times = new Window();
 * times.push(3.1);
 * times.push(2.9);
 * times.median(Infinity); // 3
 * ```
 */
export class Window {
  readonly #values: number[] = [];
  #next = 0;

  /** Adds a value, dropping the oldest beyond {@link WINDOW}. */
  push(x: number): void {
    if (this.#values.length < WINDOW) this.#values.push(x);
    else this.#values[this.#next] = x;
    this.#next = (this.#next + 1) % WINDOW;
  }

  /** Drops every value. */
  clear(): void {
    this.#values.length = 0;
    this.#next = 0;
  }

  /** Values held. */
  get size(): number {
    return this.#values.length;
  }

  /** The median, or `fallback` when empty. */
  median(fallback: number): number {
    const n = this.#values.length;
    if (n === 0) return fallback;
    const sorted = [...this.#values].sort((a, b) => a - b);
    return n % 2 === 1 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }
}

/** One shape's own times, ms, alone and shared. */
interface ShapeState {
  readonly single: Window;
  readonly shared: Window;
  calls: number;
  /** The call that next runs the other plan, and the calls to the one after it if it loses. */
  next: number;
  gap: number;
}

/**
 * The class of a call: its kernel path times dtype (3 dtypes).
 *
 * @example
 * ```ts
 * import { callClass } from "./planner.ts";
 * const call = { kernel: "bilinear_backward" as const, args: [0], planes: 4, outPlaneBytes: 64, gradPlaneBytes: 256 };
 * callClass(call); // 6: bilinear, float32
 * ```
 */
export function callClass(call: CallShape): number {
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
  return kind * 3 + call.args[0];
}

/**
 * The per-device planner of a CPU backend with `maxThreads` threads (the calling thread and
 * `maxThreads - 1` workers).
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
 * const choice = planner.choose(call, 8); // shared by 2 threads: the default before any timing
 * planner.record(choice, 5.1); // it took 5.1 ms
 * ```
 */
export class Planner {
  /** The most threads a call may be shared by. */
  readonly maxThreads: number;
  readonly #speedups: Window[] = [];
  readonly #shapes = new Map<string, ShapeState>();
  readonly #choice: Choice = { threads: 1, cls: 0, shape: "", explore: false, first: false };

  constructor(maxThreads: number) {
    this.maxThreads = maxThreads;
    for (let cls = 0; cls < KINDS * 3; cls++) this.#speedups.push(new Window());
  }

  /**
   * The plan of a call that can be cut into `chunks` pieces. Returns a shared record, valid until
   * the next call.
   */
  choose(call: CallShape, chunks: number): Choice {
    const cls = callClass(call);
    const most = Math.min(this.maxThreads, chunks);
    const bytes = call.planes * (call.outPlaneBytes + call.gradPlaneBytes);
    const key = `${cls}:${bytes}:${most}`;
    const shape = this.#shape(key);
    let share: boolean;
    if (shape.single.size > 0 && shape.shared.size > 0) {
      share = shape.shared.median(Infinity) < shape.single.median(0);
    } else share = this.#speedups[cls].median(PRIOR_SPEEDUP) >= 1;
    shape.calls++;
    // Until its time is recorded (see record), an exploration stays due.
    const explore = most >= 2 && shape.calls >= shape.next;
    if (explore) share = !share;
    const choice = this.#choice;
    choice.threads = share && most >= 2 ? most : 1;
    choice.cls = cls;
    choice.shape = key;
    choice.explore = explore;
    choice.first = shape.calls === 1;
    return choice;
  }

  /** Records how long a call planned by `choice` took, ms. */
  record(choice: Readonly<Choice>, ms: number): void {
    const shape = this.#shapes.get(choice.shape);
    if (shape === undefined || choice.first) return;
    const own = choice.threads > 1 ? shape.shared : shape.single;
    const other = choice.threads > 1 ? shape.single : shape.shared;
    const faster = choice.explore && other.size > 0 && ms < other.median(0);
    // Faster than the plan's median: the host may have changed, and this plan's older times (up to
    // EXPLORE_LATE calls apart) say what it was; from now on they are this one and the next.
    if (faster) own.clear();
    own.push(ms);
    if (choice.explore) {
      // Faster: look again at once, until the plan turns, so a few calls (not a few explorations)
      // move it. Slower: later each time.
      const turned = faster && own.median(Infinity) < other.median(0);
      shape.next = shape.calls + (turned ? EXPLORE_EARLY : faster ? 1 : shape.gap);
      shape.gap = faster ? EXPLORE_EARLY : Math.min(EXPLORE_LATE, 2 * shape.gap);
    }
    if (shape.single.size > 0 && shape.shared.size > 0) {
      this.#speedups[choice.cls].push(shape.single.median(0) / shape.shared.median(Infinity));
    }
  }

  #shape(key: string): ShapeState {
    let shape = this.#shapes.get(key);
    if (shape === undefined) {
      if (this.#shapes.size >= SHAPES) this.#shapes.clear();
      shape = {
        single: new Window(),
        shared: new Window(),
        calls: 0,
        next: FIRST_EXPLORE,
        gap: EXPLORE_EARLY,
      };
      this.#shapes.set(key, shape);
    }
    return shape;
  }

  /**
   * A class's measured speed-up from sharing (median of its shapes' `single / shared`; the prior
   * when none was measured) and how many were recorded (for reports and tests).
   */
  estimate(cls: number): { speedup: number; observed: number } {
    const window = this.#speedups[cls];
    return { speedup: window.median(PRIOR_SPEEDUP), observed: window.size };
  }
}
