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
  /** Workers still running the current job. */
  pending: 0,
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
  /** Bytes of work space per worker, and the index of the work argument (-1: none). */
  workBytes: 10,
  workArg: 11,
  /** Workers taking part in the job (0 .. used - 1). */
  used: 12,
  /** Rows of a plane the kernel's last two arguments (row0, row1) range over. */
  rows: 13,
  /** Bands of rows each chunk of planes is cut into (1: whole planes). */
  bands: 14,
  /** Arguments, in the export's order: dtype, out, grad, planes, ..., row0, row1. */
  args: 16,
  /** Worker i's sequence word is at `sequence + 16 i` (a cache line each). */
  sequence: 48,
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
  return CONTROL.sequence + CONTROL.slot * workers;
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

/** How long an idle worker blocks before it waits with its event loop running, ms. */
export const BLOCK_MS = 20;
/** A busy worker lets its event loop turn at least this often, ms. */
export const TURN_MS = 5;

/** A sequence word of -1 tells the worker to leave its loop. */
export const QUIT = -1;

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
