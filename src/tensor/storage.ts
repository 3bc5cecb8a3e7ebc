/**
 * Reference-counted backend storage shared by a tensor and its views.
 *
 * @module
 */

import type { Backend } from "../backend.ts";
import type { DType } from "./dtype.ts";

/** Bookkeeping a device keeps for the storages it owns. */
export interface StorageOwner {
  /** The backend that allocated the storage. */
  readonly storageBackend: Backend<unknown>;
  /** Called once when a storage is freed, so the owner stops tracking it. */
  forget(storage: Storage): void;
}

/**
 * One backend allocation. Tensors and views retain it; the last release frees it. A device close frees it
 * whatever the count, after which every tensor on it reports itself disposed.
 */
export class Storage {
  #refs = 0;
  #released = false;
  /** Previous storage in the owner's {@link StorageList}. */
  prev: Storage | null = null;
  /** Next storage in the owner's {@link StorageList}. */
  next: Storage | null = null;

  /**
   * Wraps a fresh allocation; the caller retains it for each tensor it creates.
   *
   * @example
   * ```ts ignore
   * const storage = new Storage(owner, backend.allocate("float32", 4), "float32", 4);
   * ```
   */
  constructor(
    /** The device that owns it. */
    readonly owner: StorageOwner,
    /** The backend's handle (a host typed array, or a device address). */
    readonly handle: unknown,
    /** Element type. */
    readonly dtype: DType,
    /** Element count. */
    readonly length: number,
  ) {}

  /** Whether the storage has been freed. */
  get released(): boolean {
    return this.#released;
  }

  /** Adds a reference. */
  retain(): void {
    this.#refs++;
  }

  /** Drops a reference; frees the storage when none is left. */
  release(): void {
    if (this.#released) return;
    if (--this.#refs <= 0) this.free();
  }

  /** Frees the storage now, whatever the count (device close). Idempotent. */
  free(): void {
    if (this.#released) return;
    this.#released = true;
    this.owner.forget(this);
    this.owner.storageBackend.free(this.handle);
  }
}

/**
 * The live storages of a device, as an intrusive doubly linked list: adding and removing cost a
 * few field writes (a `Set` costs more than the rest of a small op's bookkeeping).
 *
 * @example
 * ```ts ignore
 * const list = new StorageList();
 * list.add(storage);
 * list.remove(storage);
 * list.freeAll();
 * ```
 */
export class StorageList {
  #head: Storage | null = null;
  #size = 0;

  /** Number of storages in the list. */
  get size(): number {
    return this.#size;
  }

  /** Adds a storage that is in no list. */
  add(storage: Storage): void {
    storage.prev = null;
    storage.next = this.#head;
    if (this.#head !== null) this.#head.prev = storage;
    this.#head = storage;
    this.#size++;
  }

  /** Removes a storage of this list. */
  remove(storage: Storage): void {
    if (storage.prev !== null) storage.prev.next = storage.next;
    else if (this.#head === storage) this.#head = storage.next;
    else return; // not in this list
    if (storage.next !== null) storage.next.prev = storage.prev;
    storage.prev = storage.next = null;
    this.#size--;
  }

  /** Frees every storage (each removes itself through its owner's `forget`). */
  freeAll(): void {
    while (this.#head !== null) {
      const head = this.#head;
      head.free();
      // A storage whose owner forgot to remove it must not stall the loop.
      if (this.#head === head) this.remove(head);
    }
  }
}
