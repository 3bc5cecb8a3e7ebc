/**
 * The order of a CPU device's work: a task runs at once when nothing is pending, else after every
 * task queued before it. A task that returns a promise (a job on the worker threads) holds the
 * queue until that promise settles.
 *
 * @module
 */

/** A unit of work; a returned promise must never reject. */
export type Task = () => Promise<void> | void;

/**
 * A FIFO of tasks on the calling thread.
 *
 * @example
 * ```ts
 * import { TaskQueue } from "./task_queue.ts";
 * const queue = new TaskQueue();
 * const order: number[] = [];
 * queue.run(() => new Promise((resolve) => setTimeout(resolve, 1)).then(() => { order.push(1); }));
 * queue.run(() => { order.push(2); }); // after the first, though it could run at once
 * ```
 */
export class TaskQueue {
  #tasks: Task[] = [];
  #busy = false;
  readonly #next = (): void => this.#drain();

  /** Whether a task is in flight (then later tasks wait in the queue). */
  get busy(): boolean {
    return this.#busy;
  }

  /** Runs `task` now when the queue is idle, else queues it. */
  run(task: Task): void {
    if (this.#busy) this.#tasks.push(task);
    else this.hold(task());
  }

  /** Holds the queue until `pending` settles (what a task run by the caller returned). */
  hold(pending: Promise<void> | void): void {
    if (pending === undefined) return;
    this.#busy = true;
    pending.then(this.#next);
  }

  /** Removes and returns the queued tasks (the one in flight, if any, still holds the queue). */
  clear(): Task[] {
    const tasks = this.#tasks;
    this.#tasks = [];
    return tasks;
  }

  #drain(): void {
    this.#busy = false;
    while (this.#tasks.length > 0) {
      const pending = this.#tasks.shift()!();
      if (pending !== undefined) return this.hold(pending);
    }
  }
}
