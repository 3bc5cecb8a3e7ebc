/**
 * The code of a kernel worker thread, as source text: `node:worker_threads` runs it with
 * `eval: true`, so the package needs no file of its own at run time (a JSR install works with no
 * read permission) and no permission beyond the caller's.
 *
 * A worker instantiates the kernels on the device's shared memory with a stack of its own, then
 * waits on its sequence word. A job (see pool.ts) is a kernel export and its arguments in the
 * control block; the planes are cut into chunks that workers take in turn from a shared counter.
 * The calling thread wakes worker 0 only, and worker i wakes workers 2i + 1 and 2i + 2 before it
 * computes: woken by the calling thread, the second of two workers started ~1.2-1.9 ms late
 * (after 20 ms idle; 0.16-0.26 ms woken by the first worker), queued behind the calling thread
 * as it returned to its event loop (measured). The last worker to finish wakes the calling
 * thread's `Atomics.waitAsync`.
 *
 * Between jobs a worker first blocks in `Atomics.wait` for a moment (a loop's next op comes within
 * microseconds, and a blocked thread wakes fastest), then waits with `Atomics.waitAsync`, and it
 * lets its event loop turn at least every few milliseconds even when busy: V8 finishes moving the
 * kernels from its baseline compiler to optimised code through tasks on every isolate that uses
 * the module, so a worker that never returns to its event loop kept the kernels ~1.6x slower, in
 * the workers and on the calling thread (measured).
 *
 * @module
 */

/** Int32 slots of the control block shared by the calling thread and the workers. */
export const CONTROL = {
  /** Workers still running the current job. */
  pending: 0,
  /** Next chunk to take. */
  nextChunk: 1,
  /** Set to 1 when a kernel threw in a worker. */
  failed: 2,
  /** Chunks in the job. */
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
  /** Arguments, in the export's order: dtype, out, grad, planes, ... */
  args: 16,
  /** Worker i's sequence word is at `sequence + 16 i` (a cache line each). */
  sequence: 48,
  /** Words per worker slot. */
  slot: 16,
} as const;

/** Int32 words of a control block for `workers` workers. */
export function controlWords(workers: number): number {
  return CONTROL.sequence + CONTROL.slot * workers;
}

/** The exports a job can run, by index. */
export const KERNEL_EXPORTS = ["nearest_backward", "bilinear_backward", "bilinear_down2"] as const;

/** How long an idle worker blocks before it waits with its event loop running, ms. */
const BLOCK_MS = 20;
/** A busy worker lets its event loop turn at least this often, ms. */
const TURN_MS = 5;

/** A sequence word of -1 tells the worker to leave its loop. */
export const QUIT = -1;

/**
 * The worker's source. `workerData`: `{ module, memory, control, index, stackTop }`.
 *
 * @example
 * ```ts ignore
 * new Worker(WORKER_SOURCE, { eval: true, workerData });
 * ```
 */
export const WORKER_SOURCE: string = `"use strict";
(() => {
const { workerData } = require("node:worker_threads");
const C = ${JSON.stringify(CONTROL)};
const NAMES = ${JSON.stringify(KERNEL_EXPORTS)};
const memory = workerData.memory;
const wasm = new WebAssembly.Instance(workerData.module, { env: { memory } }).exports;
wasm.__stack_pointer.value = workerData.stackTop;
const kernels = NAMES.map((name) => wasm[name]);
const control = new Int32Array(workerData.control);
const sequence = C.sequence + C.slot * workerData.index;
const args = [];
// Keeps this worker's event loop alive while it waits asynchronously (the worker is unref'ed, so
// the process does not wait for it).
const keepAlive = setInterval(() => {}, 1 << 30);
const channel = new MessageChannel();
let resume = null;
channel.port1.onmessage = () => resume();
// One turn of the event loop (a macrotask), much shorter than a timer.
const turn = () => new Promise((resolve) => {
  resume = resolve;
  channel.port2.postMessage(0);
});
(async () => {
  let seen = 0, lastTurn = performance.now();
  for (;;) {
    // A wake-up without a new sequence number is stale: the parent's notify of a job this
    // worker already took (it saw the new number before it slept).
    let next;
    while ((next = Atomics.load(control, sequence)) === seen) {
      if (Atomics.wait(control, sequence, seen, ${BLOCK_MS}) === "timed-out") {
        const wait = Atomics.waitAsync(control, sequence, seen);
        if (wait.async) await wait.value;
        lastTurn = performance.now();
      }
    }
    seen = next;
    if (seen === ${QUIT}) break;
    // Their sequence words are set already: wake them now, then compute.
    for (let child = 2 * workerData.index + 1; child <= 2 * workerData.index + 2; child++) {
      if (child < control[C.used]) Atomics.notify(control, C.sequence + C.slot * child);
    }
    try {
      runJob();
    } catch (error) {
      Atomics.store(control, C.failed, 1);
    }
    if (Atomics.sub(control, C.pending, 1) === 1) Atomics.notify(control, C.pending);
    if (performance.now() - lastTurn > ${TURN_MS}) {
      await turn();
      lastTurn = performance.now();
    }
  }
  clearInterval(keepAlive);
  channel.port1.close();
})();

function runJob() {
  const kernel = kernels[control[C.kernel]];
  const argCount = control[C.argCount];
  args.length = argCount;
  for (let i = 0; i < argCount; i++) args[i] = control[C.args + i];
  const out = args[1] >>> 0, grad = args[2] >>> 0;
  const chunks = control[C.chunks], chunkPlanes = control[C.chunkPlanes];
  const planes = control[C.planes], workArg = control[C.workArg];
  if (workArg >= 0) args[workArg] = (args[workArg] >>> 0) + workerData.index * control[C.workBytes];
  for (;;) {
    const chunk = Atomics.add(control, C.nextChunk, 1);
    if (chunk >= chunks) return;
    const first = chunk * chunkPlanes;
    args[1] = out + first * (control[C.outPlaneBytes] >>> 0);
    args[2] = grad + first * (control[C.gradPlaneBytes] >>> 0);
    args[3] = Math.min(chunkPlanes, planes - first);
    kernel(...args);
  }
}
})();
`;
