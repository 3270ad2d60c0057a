// The embedded store for JavaScript hosts: group commit over any journaled object of the
// package, and the hosts that carry out the core's file operations (memory and IndexedDB here;
// node:fs in node-store.js).
//
// No rule of durability lives here. The core (`leasehold::store`, through the WebAssembly
// module) decides which files exist, what is appended, when to sync, rotate and compact, what a
// torn tail is and what damage is; its `journal::Gate` (`JournalGate`) decides which replies may
// leave. This file moves bytes and calls back.

import { JournalGate } from './leasehold_wasm.js';
import { IndefiniteError } from './errors.js';

/** The store is in use by another process, tab or object (a lock is held). */
export class StoreLockedError extends Error {
  constructor(message, options) {
    super(message, options);
    this.code = 'ELOCKED';
  }
  get name() {
    return 'StoreLockedError';
  }
}

/** A store's write failed: nothing after the last durable record will be acknowledged. */
export class StoreFailedError extends IndefiniteError {
  constructor(message, options) {
    super(message, options);
  }
}

// One macrotask later, to gather every request that arrives meanwhile into one commit.
const macrotask = (() => {
  if (typeof setImmediate === 'function') return (f) => setImmediate(f);
  if (typeof MessageChannel === 'function') {
    const queue = [];
    const ch = new MessageChannel();
    ch.port1.onmessage = () => {
      const run = queue.splice(0);
      for (const f of run) f();
    };
    return (f) => {
      queue.push(f);
      if (queue.length === 1) ch.port2.postMessage(0);
    };
  }
  return (f) => setTimeout(f, 0);
})();

/** Checks that `host` can carry out file operations. */
export function checkHost(host) {
  if (!host || typeof host.read !== 'function' || typeof host.apply !== 'function') {
    throw new TypeError('a store must have read() and apply(ops) (FileStore, IndexedDbStore, MemoryStore, or your own)');
  }
  return host;
}

/**
 * Carries out the core's file operations in order, each completely, with the host's function
 * of each op's name (`append`, `sync`, `replace`, `truncate`, `remove`; see the `FileOp` type):
 * the one dispatcher of every host (MemoryStore, IndexedDbStore, node's FileStore).
 */
export async function applyOps(ops, each) {
  for (const op of ops) {
    const f = Object.hasOwn(each, op.op) ? each[op.op] : undefined;
    if (!f) throw new TypeError(`unknown file operation ${op.op}`);
    await f(op);
  }
}

/**
 * Opens a journaled object from its store: reads the host's files, calls `open(files)` (a
 * class's `__openStore`), carries out the tidying operations it gives, and returns
 * `make(value, recovery)`. On failure frees what was opened and closes the host.
 */
export async function openKept(host, open, make) {
  let value;
  try {
    const opened = open(await host.read());
    value = opened.value;
    await host.apply(opened.ops);
    return make(value, opened.recovery);
  } catch (err) {
    value?.free();
    await host.close?.();
    throw err;
  }
}

/**
 * Group commit for one journaled object (`target`: a Landlord opened from a store; later the
 * renewal and discovery services): `durable()` promises that every record written so far is on
 * stable storage; one write and one sync serve every promise made meanwhile.
 *
 * Each round takes what the object wrote (`target.__commit()`: the core's file operations and
 * the record they make durable), has the host carry it out, and releases what waited for it
 * through the core's gate. Requests that arrive during a round are written by the next one.
 * A failed write stops the writer for good: every waiting and later promise rejects with
 * `StoreFailedError`; reopen the store to recover.
 */
export class StoreWriter {
  #target;
  #host;
  #gate = new JournalGate();
  #scheduled = false;
  #busy = false; // a round is under way
  #io = Promise.resolve(); // the host's operations, one batch after the other, in order
  #failed = null;
  #closed = false;
  #onError;
  /** Batches of operations carried out (each commit: one append and one sync, plus any compaction). */
  writes = 0;

  constructor(target, host, { onError } = {}) {
    this.#target = target;
    this.#host = checkHost(host);
    this.#onError = onError ?? (() => {});
  }

  /** The store's host. */
  get host() {
    return this.#host;
  }

  /** The error that stopped the writer, if one did. */
  get failed() {
    return this.#failed;
  }

  /** The last record known durable. */
  get durableSeq() {
    return this.#gate.durable;
  }

  /** Resolves once every record the object has written so far is durable. */
  durable() {
    if (this.#failed) return Promise.reject(this.#failed);
    const seq = this.#target.journalSeq;
    return new Promise((resolve, reject) => {
      this.#gate.push(seq, { resolve, reject });
      this.kick();
    });
  }

  /** Calls `f` once every record written so far is durable (never, if the store fails). */
  after(f) {
    if (this.#failed) return;
    this.#gate.push(this.#target.journalSeq, { resolve: f, reject: null });
    this.kick();
  }

  /** Schedules a round for the next macrotask, unless one is scheduled or under way. */
  kick() {
    if (this.#scheduled || this.#busy || this.#failed || this.#closed) return;
    this.#scheduled = true;
    macrotask(() => {
      this.#scheduled = false;
      if (!this.#failed && !this.#busy) this.#round();
    });
  }

  // One round of group commit: what the object wrote goes to the host as one batch; the
  // waiters it covers are released; what arrived meanwhile goes in the next round, at once.
  async #round() {
    this.#busy = true;
    try {
      for (;;) {
        const { ops, durable } = this.#target.__commit();
        if (ops.length) await this.#apply(ops);
        this.#release(durable);
        if (this.#target.journalSeq <= durable) break;
      }
    } catch (err) {
      this.#fail(err);
    } finally {
      this.#busy = false;
    }
    if (this.#gate.waiting > 0) this.kick();
  }

  #apply(ops) {
    const run = this.#io.then(() => this.#host.apply(ops));
    this.#io = run.then(() => { this.writes++; }, () => {});
    return run;
  }

  /** Forces a new snapshot now (and drops the log it covers). */
  async compact() {
    if (this.#failed) throw this.#failed;
    const { ops, durable } = this.#target.__compact();
    try {
      await this.#apply(ops);
    } catch (err) {
      this.#fail(err);
      throw this.#failed;
    }
    this.#release(durable);
  }

  /** Resolves when everything written so far is durable (or rejects if the store failed). */
  flush() {
    return this.durable();
  }

  #release(durable) {
    for (const w of this.#gate.release(durable)) this.#call(w.resolve);
  }

  #call(f) {
    try {
      f();
    } catch (err) {
      this.#onError(err);
    }
  }

  #fail(err) {
    if (this.#failed) return;
    this.#failed = new StoreFailedError(
      `the store could not write (${err?.message ?? err}); nothing more is acknowledged: reopen it to recover`,
      { cause: err },
    );
    for (const w of this.#gate.release(Number.MAX_SAFE_INTEGER)) if (w.reject) this.#call(() => w.reject(this.#failed));
    this.#onError(this.#failed);
  }

  /** Writes what is pending, waits for the host's last operation, then takes no more work. */
  async close() {
    if (this.#closed) return;
    try {
      if (!this.#failed) await this.flush();
    } finally {
      this.#closed = true;
      await this.#io;
    }
  }
}

/** Writes what is pending, then closes the writer's store (its lock goes with it). */
export async function closeWriter(writer) {
  try {
    await writer.close();
  } finally {
    await writer.host.close?.();
  }
}

/**
 * A store that keeps its files in memory: for tests, and for hosts with nowhere durable to
 * write. Nothing survives the process (or the page); `files()` and `MemoryStore.from(files)`
 * move a directory's contents in and out.
 */
export class MemoryStore {
  #files = new Map();
  name = 'memory';

  /** A store holding these files (`[[name, Uint8Array], ...]`). */
  static from(files) {
    const s = new MemoryStore();
    for (const [name, bytes] of files) s.#files.set(name, new Uint8Array(bytes));
    return s;
  }

  async read() {
    return this.files();
  }

  /** Every file, `[name, Uint8Array]`, sorted by name. */
  files() {
    return [...this.#files].sort(([a], [b]) => (a < b ? -1 : 1)).map(([n, b]) => [n, b.slice()]);
  }

  apply(ops) {
    const files = this.#files;
    return applyOps(ops, {
      append: ({ file, bytes }) => {
        const old = files.get(file) ?? new Uint8Array(0);
        const next = new Uint8Array(old.length + bytes.length);
        next.set(old);
        next.set(bytes, old.length);
        files.set(file, next);
      },
      sync: () => {},
      replace: ({ file, bytes }) => files.set(file, bytes.slice()),
      truncate: ({ file, len }) => files.has(file) && files.set(file, files.get(file).slice(0, len)),
      remove: ({ file }) => files.delete(file),
    });
  }

  async close() {}
}

// ---------------------------------------------------------------------------------------------
// IndexedDB

const CHUNKS = 'chunks';

function idbRequest(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

const fileRange = (file) => IDBKeyRange.bound([file, 0], [file, Infinity]);

/**
 * A store in an IndexedDB database of this origin (browsers, workers): one object store of
 * chunks keyed `[file, offset]`. Each `apply(ops)` is one IndexedDB transaction with
 * `durability: "strict"`, so a commit is on disk, whole, before it counts as durable (an
 * append and its sync are one transaction: a torn tail cannot happen here). A Web Lock on the
 * database's name keeps a second tab or worker out while the store is open.
 *
 * The origin's storage may still be evicted by the browser under storage pressure unless
 * `navigator.storage.persist()` was granted (`persisted` says whether it was): see the README.
 */
export class IndexedDbStore {
  #db;
  #sizes = new Map();
  #release;
  /** The database's name. */
  name;
  /** Whether the origin's storage is persistent (`navigator.storage.persisted()`), if known. */
  persisted;

  constructor(db, name, release, persisted) {
    this.#db = db;
    this.name = name;
    this.#release = release;
    this.persisted = persisted;
  }

  /**
   * Opens (creating) the database `name` and takes its Web Lock (`lock: false` skips that;
   * without Web Locks, pass it knowingly). Throws `StoreLockedError` if another tab or worker
   * holds it. `persist: true` also asks for persistent storage.
   */
  static async open(name, { lock = true, persist = false, indexedDB: idb = globalThis.indexedDB } = {}) {
    if (typeof name !== 'string' || name === '') throw new TypeError('IndexedDbStore.open needs a database name');
    if (!idb) throw new TypeError('IndexedDB is not available here');
    let release = () => {};
    if (lock) {
      const locks = globalThis.navigator?.locks;
      if (!locks) throw new TypeError('Web Locks are not available here: pass {lock: false} if only one context ever opens this store');
      release = await new Promise((resolve, reject) => {
        locks.request(`leasehold-store:${name}`, { ifAvailable: true }, (held) => {
          if (!held) {
            reject(new StoreLockedError(`IndexedDB store ${name} is in use by another tab or worker`));
            return undefined;
          }
          return new Promise((done) => resolve(done)); // held until release() is called
        }).catch(reject);
      });
    }
    try {
      const req = idb.open(name, 1);
      req.onupgradeneeded = () => req.result.createObjectStore(CHUNKS);
      const db = await idbRequest(req);
      let persisted;
      const storage = globalThis.navigator?.storage;
      if (storage?.persisted) {
        persisted = persist && storage.persist ? await storage.persist() : await storage.persisted();
      }
      return new IndexedDbStore(db, name, release, persisted);
    } catch (err) {
      release();
      throw err;
    }
  }

  /** Every file, `[name, Uint8Array]`, its chunks put back together. */
  async read() {
    const tx = this.#db.transaction(CHUNKS, 'readonly');
    const store = tx.objectStore(CHUNKS);
    const [keys, values] = await Promise.all([idbRequest(store.getAllKeys()), idbRequest(store.getAll())]);
    const parts = new Map();
    keys.forEach(([file, offset], i) => {
      if (!parts.has(file)) parts.set(file, []);
      parts.get(file).push([offset, values[i]]);
    });
    const out = [];
    this.#sizes.clear();
    for (const [file, chunks] of parts) {
      let len = 0;
      for (const [offset, bytes] of chunks) len = Math.max(len, offset + bytes.length);
      const whole = new Uint8Array(len);
      for (const [offset, bytes] of chunks) whole.set(bytes, offset);
      this.#sizes.set(file, len);
      out.push([file, whole]);
    }
    return out;
  }

  /** Carries out `ops` in one transaction; resolves once it is committed with strict durability. */
  async apply(ops) {
    const tx = this.#db.transaction(CHUNKS, 'readwrite', { durability: 'strict' });
    const store = tx.objectStore(CHUNKS);
    const done = new Promise((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
    });
    const sizes = new Map(this.#sizes);
    try {
      await applyOps(ops, {
        append: ({ file, bytes }) => {
          const at = sizes.get(file) ?? 0;
          store.put(bytes.slice(), [file, at]);
          sizes.set(file, at + bytes.length);
        },
        sync: () => {}, // the transaction's commit is the sync
        replace: ({ file, bytes }) => {
          store.delete(fileRange(file));
          store.put(bytes.slice(), [file, 0]);
          sizes.set(file, bytes.length);
        },
        truncate: ({ file, len }) => new Promise((resolve, reject) => {
          const cur = store.openCursor(fileRange(file));
          cur.onerror = () => reject(cur.error);
          cur.onsuccess = () => {
            const c = cur.result;
            if (!c) return resolve(sizes.set(file, Math.min(sizes.get(file) ?? 0, len)));
            const offset = c.key[1];
            if (offset >= len) c.delete();
            else if (offset + c.value.length > len) c.update(c.value.slice(0, len - offset));
            c.continue();
          };
        }),
        remove: ({ file }) => {
          store.delete(fileRange(file));
          sizes.delete(file);
        },
      });
    } catch (err) {
      try {
        tx.abort();
      } catch {}
      done.catch(() => {});
      throw err;
    }
    await done;
    this.#sizes = sizes;
  }

  /** Closes the database and lets go of its lock. */
  async close() {
    this.#db.close();
    this.#release();
  }

  /** Deletes the database `name` (it must not be open). */
  static async destroy(name, { indexedDB: idb = globalThis.indexedDB } = {}) {
    await idbRequest(idb.deleteDatabase(name));
  }
}
