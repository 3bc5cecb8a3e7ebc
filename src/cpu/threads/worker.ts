/**
 * The code of a kernel worker thread. It is not imported at run time: `tools/build_worker.ts`
 * bundles it (with control.ts) into `worker_embedded.ts` as JavaScript source text, which
 * `node:worker_threads` runs with `eval: true`, so the package needs no file of its own at run time
 * (a JSR install works with no read permission) and no permission beyond the caller's.
 *
 * A worker instantiates the kernels on the device's shared memory with a stack of its own, then
 * waits on its sequence word. A job (see pool.ts) is a kernel export and its arguments in the
 * control block; its planes are cut into chunks of whole four-plane groups and, when there are
 * fewer groups than workers, each chunk into bands of rows (the kernels' last two arguments): the
 * workers take chunks in turn from a shared counter. Every element is computed by one chunk, with
 * the operations of a one-thread call in the same order, so results are the same bits.
 *
 * The calling thread wakes worker 0 only, and worker i wakes workers 2i + 1 and 2i + 2 before it
 * computes: woken by the calling thread, the second of two workers started ~1.2-1.9 ms late (after
 * 20 ms idle; 0.16-0.26 ms woken by the first worker), queued behind the calling thread as it
 * returned to its event loop (measured). The last worker to finish wakes the calling thread's
 * `Atomics.waitAsync`.
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

import { workerData as untypedData } from "node:worker_threads";
import { BLOCK_MS, CONTROL, KERNEL_EXPORTS, QUIT, TURN_MS, type WorkerData } from "./control.ts";

type Kernel = (...args: number[]) => void;

const data = untypedData as WorkerData;
const memory = data.memory;
const exports = new WebAssembly.Instance(data.module, { env: { memory } }).exports;
(exports.__stack_pointer as WebAssembly.Global).value = data.stackTop;
const kernels = KERNEL_EXPORTS.map((name) => exports[name] as Kernel);
const control = new Int32Array(data.control);
const sequence = CONTROL.sequence + CONTROL.slot * data.index;
const args: number[] = [];
// Keeps this worker's event loop alive while it waits asynchronously (the worker is unref'ed, so
// the process does not wait for it).
const keepAlive = setInterval(() => {}, 1 << 30);
const channel = new MessageChannel();
let resume: () => void = () => {};
channel.port1.onmessage = (): void => resume();

/** One turn of the event loop (a macrotask), much shorter than a timer. */
function turn(): Promise<void> {
  return new Promise((resolve) => {
    resume = resolve;
    channel.port2.postMessage(0);
  });
}

/** Takes chunks of the current job until none is left. */
function runJob(): void {
  const kernel = kernels[control[CONTROL.kernel]];
  const argCount = control[CONTROL.argCount];
  args.length = argCount;
  for (let i = 0; i < argCount; i++) args[i] = control[CONTROL.args + i];
  const out = args[1] >>> 0, grad = args[2] >>> 0;
  const chunks = control[CONTROL.chunks], chunkPlanes = control[CONTROL.chunkPlanes];
  const planes = control[CONTROL.planes], workArg = control[CONTROL.workArg];
  const rows = control[CONTROL.rows], bands = control[CONTROL.bands];
  const outPlane = control[CONTROL.outPlaneBytes] >>> 0;
  const gradPlane = control[CONTROL.gradPlaneBytes] >>> 0;
  if (workArg >= 0) {
    args[workArg] = (args[workArg] >>> 0) + data.index * control[CONTROL.workBytes];
  }
  for (;;) {
    const chunk = Atomics.add(control, CONTROL.nextChunk, 1);
    if (chunk >= chunks) return;
    const band = chunk % bands, first = ((chunk - band) / bands) * chunkPlanes;
    args[1] = out + first * outPlane;
    args[2] = grad + first * gradPlane;
    args[3] = Math.min(chunkPlanes, planes - first);
    args[argCount - 2] = Math.floor((band * rows) / bands);
    args[argCount - 1] = Math.floor(((band + 1) * rows) / bands);
    kernel(...args);
  }
}

async function loop(): Promise<void> {
  let seen = 0, lastTurn = performance.now();
  for (;;) {
    // A wake-up without a new sequence number is stale: the parent's notify of a job this worker
    // already took (it saw the new number before it slept).
    let next: number;
    while ((next = Atomics.load(control, sequence)) === seen) {
      if (Atomics.wait(control, sequence, seen, BLOCK_MS) === "timed-out") {
        const wait = Atomics.waitAsync(control, sequence, seen);
        if (wait.async) await wait.value;
        lastTurn = performance.now();
      }
    }
    seen = next;
    if (seen === QUIT) break;
    // Their sequence words are set already: wake them now, then compute.
    for (let child = 2 * data.index + 1; child <= 2 * data.index + 2; child++) {
      if (child < control[CONTROL.used]) {
        Atomics.notify(control, CONTROL.sequence + CONTROL.slot * child);
      }
    }
    try {
      runJob();
    } catch {
      Atomics.store(control, CONTROL.failed, 1);
    }
    if (Atomics.sub(control, CONTROL.pending, 1) === 1) Atomics.notify(control, CONTROL.pending);
    if (performance.now() - lastTurn > TURN_MS) {
      await turn();
      lastTurn = performance.now();
    }
  }
  clearInterval(keepAlive);
  channel.port1.close();
}

loop();
