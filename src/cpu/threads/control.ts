/**
 * The control block shared by the calling thread (pool.ts) and the kernel workers (worker.ts): one
 * `Int32Array` on a `SharedArrayBuffer`, its slots, and the worker's timing constants. Imported by
 * both; the worker's copy is inlined into its embedded source by `tools/build_worker.ts`.
 *
 * @module
 */

/**
 * Int32 slots of the control block.
 *
 * @example
 * ```ts
 * import { CONTROL, controlWords } from "./control.ts";
 * const control = new Int32Array(new SharedArrayBuffer(4 * controlWords(2)));
 * control[CONTROL.chunks] = 8;
 * ```
 */
export const CONTROL = {
  /** Chunks finished (by any thread); the job is done when it reaches `chunks`. */
  done: 0,
  /** Next chunk to take. */
  nextChunk: 1,
  /** Set to 1 when a kernel threw in a worker. */
  failed: 2,
  /** Chunks in the job: `ceil(planes / chunkPlanes) * bands`. */
  chunks: 3,
  /** Planes per chunk (the last chunk may have fewer). */
  chunkPlanes: 4,
  /** Planes in the job. */
  planes: 5,
  /** Which export: an index of {@link KERNEL_EXPORTS}. */
  kernel: 6,
  /** Arguments of the export. */
  argCount: 7,
  /** Bytes per plane of `out` and of `gradOutput`. */
  outPlaneBytes: 8,
  gradPlaneBytes: 9,
  /** Bytes of work space per thread, and the index of the work argument (-1: none). */
  workBytes: 10,
  workArg: 11,
  /** Workers asked to take part in the job (0 .. used - 1; the calling thread too). */
  used: 12,
  /** Rows of a plane the kernel's last two arguments (row0, row1) range over. */
  rows: 13,
  /** Bands of rows each chunk of planes is cut into (1: whole planes). */
  bands: 14,
  /** Arguments, in the export's order: dtype, out, grad, planes, ..., row0, row1. */
  args: 16,
  /**
   * Worker i's state word is at `state + 16 i` (a cache line each): {@link IDLE}, a job number J
   * > 0 (asked to join job J), -J (inside job J) or {@link QUIT}.
   */
  state: 48,
  /** Words per worker slot. */
  slot: 16,
} as const;

/**
 * Int32 words of a control block for `workers` workers.
 *
 * @example
 * ```ts
 * import { controlWords } from "./control.ts";
 * controlWords(2); // 80
 * ```
 */
export function controlWords(workers: number): number {
  return CONTROL.state + CONTROL.slot * workers;
}

/**
 * The exports a job can run, by index.
 *
 * @example
 * ```ts
 * import { KERNEL_EXPORTS } from "./control.ts";
 * KERNEL_EXPORTS.indexOf("bilinear_backward"); // 1
 * ```
 */
export const KERNEL_EXPORTS = [
  "nearest_backward",
  "bilinear_backward",
  "bilinear_down2",
  "nearest_forward",
  "bilinear_forward",
] as const;

/**
 * An idle worker blocks in `Atomics.wait` for slices of this long, turning its event loop between
 * them (ms), ...
 */
export const BLOCK_MS = 20;
/**
 * ... for up to this long idle; then it waits with `Atomics.waitAsync` (a blocked thread wakes
 * in tens of µs, an async waiter only when its event loop runs: ~0.2-1.9 ms measured), so a
 * process that stopped computing does not wake 50 times a second for long (ms).
 */
export const BLOCKED_IDLE_MS = 1000;
/** A busy worker lets its event loop turn at least this often, ms. */
export const TURN_MS = 5;

/** A worker's state word when it has no job (see {@link CONTROL}.state). */
export const IDLE = 0;
/** A state word of INT32_MIN tells the worker to leave its loop (never -J: job numbers < 2^30). */
export const QUIT = -0x80000000;
/** Job numbers wrap below this (1 .. JOB_LIMIT - 1), so -J never meets {@link QUIT}. */
export const JOB_LIMIT = 0x40000000;

/** What the pool hands a worker (`workerData`). */
export interface WorkerData {
  /** The compiled kernels (the shared-memory variant). */
  readonly module: WebAssembly.Module;
  /** The device's shared memory. */
  readonly memory: WebAssembly.Memory;
  /** The control block's buffer. */
  readonly control: SharedArrayBuffer;
  /** This worker's index (0 .. size - 1). */
  readonly index: number;
  /** Top of this worker's shadow stack in the shared memory. */
  readonly stackTop: number;
}

/** A kernel export, called with its arguments. */
export type Kernel = (...args: number[]) => void;

/**
 * Takes chunks of the job in `control` until none is left, running them with `kernel` (the calling
 * thread's or a worker's instance); `thread` picks the work space (0: the calling thread). Counts
 * each chunk done, and wakes the calling thread with the last; a kernel that throws marks the job
 * failed. Returns the chunks this thread ran.
 *
 * @example
 * ```ts ignore
 * const ran = takeChunks(control, exports.nearest_backward, [], 0);
 * ```
 */
export function takeChunks(
  control: Int32Array<SharedArrayBuffer>,
  kernel: Kernel,
  args: number[],
  thread: number,
): number {
  const argCount = control[CONTROL.argCount];
  args.length = argCount;
  for (let i = 0; i < argCount; i++) args[i] = control[CONTROL.args + i];
  const out = args[1] >>> 0, grad = args[2] >>> 0;
  const chunks = control[CONTROL.chunks], chunkPlanes = control[CONTROL.chunkPlanes];
  const planes = control[CONTROL.planes], workArg = control[CONTROL.workArg];
  const rows = control[CONTROL.rows], bands = control[CONTROL.bands];
  const outPlane = control[CONTROL.outPlaneBytes] >>> 0;
  const gradPlane = control[CONTROL.gradPlaneBytes] >>> 0;
  if (workArg >= 0) args[workArg] = (args[workArg] >>> 0) + thread * control[CONTROL.workBytes];
  let ran = 0;
  for (;;) {
    const chunk = Atomics.add(control, CONTROL.nextChunk, 1);
    if (chunk >= chunks) return ran;
    const band = chunk % bands, first = ((chunk - band) / bands) * chunkPlanes;
    args[1] = out + first * outPlane;
    args[2] = grad + first * gradPlane;
    args[3] = Math.min(chunkPlanes, planes - first);
    args[argCount - 2] = Math.floor((band * rows) / bands);
    args[argCount - 1] = Math.floor(((band + 1) * rows) / bands);
    try {
      kernel(...args);
    } catch {
      Atomics.store(control, CONTROL.failed, 1);
    }
    ran++;
    if (Atomics.add(control, CONTROL.done, 1) === chunks - 1) Atomics.notify(control, CONTROL.done);
  }
}
