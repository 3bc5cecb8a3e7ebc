/**
 * The code of a kernel worker thread. It is not imported at run time: `tools/build_worker.ts`
 * bundles it (with control.ts) into `worker_embedded.ts` as JavaScript source text, which
 * `node:worker_threads` runs with `eval: true`, so the package needs no file of its own at run time
 * (a JSR install works with no read permission) and no permission beyond the caller's.
 *
 * A worker instantiates the kernels on the device's shared memory with a stack of its own, then
 * waits on its state word. A job (see pool.ts) is a kernel export and its arguments in the control
 * block; its planes are cut into chunks of whole four-plane groups and, when there are fewer groups
 * than chunks wanted, each chunk into bands of rows (the kernels' last two arguments): the calling
 * thread and the workers take chunks in turn from a shared counter (`takeChunks`). Every element is
 * computed by one chunk, with the operations of a one-thread call in the same order, so results
 * are the same bits.
 *
 * Asked to join job J (its state word set to J), a worker swaps the word to -J, so the calling
 * thread knows it is inside; if the calling thread swapped it back to idle first (it ran out of
 * chunks before this worker woke), the worker goes back to waiting without reading the job. Worker
 * i wakes workers 2i + 1 and 2i + 2 before it computes.
 *
 * Between jobs a worker blocks in `Atomics.wait` (a blocked thread wakes in tens of µs; an
 * `Atomics.waitAsync` waiter only when its event loop runs, 0.2-1.9 ms measured), in slices of
 * {@link BLOCK_MS} with a turn of its event loop between them, for up to {@link BLOCKED_IDLE_MS};
 * idle longer, it waits asynchronously. It lets its event loop turn at least every few milliseconds
 * even when busy: V8 finishes moving the kernels from its baseline compiler to optimised code
 * through tasks on every isolate that uses the module, so a worker that never returns to its event
 * loop kept the kernels ~1.6x slower, in the workers and on the calling thread (measured).
 *
 * @module
 */

import { workerData as untypedData } from "node:worker_threads";
import {
  BLOCK_MS,
  BLOCKED_IDLE_MS,
  CONTROL,
  IDLE,
  type Kernel,
  KERNEL_EXPORTS,
  QUIT,
  takeChunks,
  TURN_MS,
  type WorkerData,
} from "./control.ts";

const data = untypedData as WorkerData;
const memory = data.memory;
const exports = new WebAssembly.Instance(data.module, { env: { memory } }).exports;
(exports.__stack_pointer as WebAssembly.Global).value = data.stackTop;
const kernels = KERNEL_EXPORTS.map((name) => exports[name] as Kernel);
const control = new Int32Array(data.control);
const state = CONTROL.state + CONTROL.slot * data.index;
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

async function loop(): Promise<void> {
  let lastTurn = performance.now(), idleSince = lastTurn;
  for (;;) {
    const job = Atomics.load(control, state);
    if (job === QUIT) break;
    if (job > 0) {
      // Join, unless the calling thread withdrew the request meanwhile.
      if (Atomics.compareExchange(control, state, job, -job) !== job) continue;
      // Their state words are set already: wake them now, then compute.
      for (let child = 2 * data.index + 1; child <= 2 * data.index + 2; child++) {
        if (child < control[CONTROL.used]) {
          Atomics.notify(control, CONTROL.state + CONTROL.slot * child);
        }
      }
      takeChunks(control, kernels[control[CONTROL.kernel]], args, data.index + 1);
      Atomics.compareExchange(control, state, -job, IDLE);
      idleSince = performance.now();
      if (idleSince - lastTurn > TURN_MS) {
        await turn();
        lastTurn = performance.now();
      }
      continue;
    }
    if (job !== IDLE) {
      // -J: only this worker sets it, and clears it above; nothing else can leave it here.
      Atomics.compareExchange(control, state, job, IDLE);
      continue;
    }
    if (performance.now() - idleSince < BLOCKED_IDLE_MS) {
      if (Atomics.wait(control, state, IDLE, BLOCK_MS) === "timed-out") {
        await turn();
        lastTurn = performance.now();
      }
    } else {
      const wait = Atomics.waitAsync(control, state, IDLE);
      if (wait.async) await wait.value;
      lastTurn = performance.now();
    }
  }
  clearInterval(keepAlive);
  channel.port1.close();
}

loop();
