// The embedded file store on node:fs: a directory of log segments and one snapshot, written
// exactly as the core asks (the same bytes as the Rust, Python and C stores), with every
// operation carried out completely before the commit that asked for it counts as durable.
// Node only (the package's node entry exports it).

import { promises as fsp, unlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StoreLockedError, applyOps } from './store.js';

// Lock files: LOCK.<generation>; the highest generation is the lock, if its process lives.
const LOCK_RE = /^LOCK\.(\d{1,15})$/;
const WIN = process.platform === 'win32';

// Opens `path`, runs `f` on it, fsyncs it and closes it.
async function withFile(path, flags, f) {
  const fh = await fsp.open(path, flags);
  try {
    await f(fh);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function writeAll(fh, bytes) {
  let at = 0;
  while (at < bytes.length) {
    const { bytesWritten } = await fh.write(bytes, at, bytes.length - at);
    at += bytesWritten;
  }
}

// The start time of process `pid` in clock ticks since boot (Linux), to tell a live owner from
// a new process that got the same pid; undefined where /proc is not there.
async function startTime(pid) {
  try {
    const stat = await fsp.readFile(`/proc/${pid}/stat`, 'utf8');
    // Field 22, counted after the command name (which is in parentheses and may hold spaces).
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

async function ownerAlive(info) {
  if (!info || typeof info.pid !== 'number') return true; // unreadable: assume someone holds it
  if (info.host !== hostname()) return true; // another machine: no way to tell
  try {
    process.kill(info.pid, 0);
  } catch (e) {
    if (e.code === 'ESRCH') return false;
  }
  if (info.start === undefined) return true;
  const now = await startTime(info.pid);
  return now === undefined || now === info.start;
}

/**
 * A store's directory on disk (Node). `FileStore.open(dir)` creates it if needed and takes its
 * lock; `read()` gives every file; `apply(ops)` carries out the core's file operations:
 *
 * - `append`: `write` to the file opened for appending (created if missing);
 * - `sync`: `fdatasync` the file, and `fsync` the directory if the file is new (so that its
 *   name survives a crash, not only its bytes);
 * - `replace`: write `<file>.tmp`, `fsync` it, rename it over the file, `fsync` the directory;
 * - `truncate`: cut the file, `fsync` it;
 * - `remove`: unlink the file (missing is fine), `fsync` the directory.
 *
 * The lock is a file `LOCK.<n>` holding this process's pid, host and start time: a second
 * `FileStore.open` of the directory (from any Node process, or this one) throws
 * `StoreLockedError` while its owner lives; a lock left by a dead process (SIGKILL) is taken
 * over. Node has no `flock`, so this lock does not exclude a Rust, Python or C process using
 * the same directory (they lock the file `LOCK` with `flock`).
 */
export class FileStore {
  #dir;
  #handles = new Map();
  #fresh = new Set();
  #lockFile = null;
  #onExit = null;
  #closed = false;

  constructor(dir) {
    this.#dir = dir;
  }

  /** The directory. */
  get path() {
    return this.#dir;
  }

  get name() {
    return this.#dir;
  }

  /** Opens (creating) the store directory `dir` and takes its lock. */
  static async open(dir, { lock = true } = {}) {
    if (typeof dir !== 'string' && !(dir instanceof URL)) throw new TypeError('FileStore.open needs a directory path');
    const path = resolvePath(dir instanceof URL ? fileURLToPath(dir) : dir);
    await fsp.mkdir(path, { recursive: true });
    const store = new FileStore(path);
    if (lock) await store.#lock();
    return store;
  }

  async #lock() {
    const me = { pid: process.pid, host: hostname(), start: await startTime(process.pid) };
    for (let attempt = 0; attempt < 50; attempt++) {
      const gens = await this.#lockGenerations();
      const top = gens.length ? gens[gens.length - 1] : 0;
      if (top > 0) {
        let info;
        try {
          info = JSON.parse(await fsp.readFile(join(this.#dir, `LOCK.${top}`), 'utf8'));
        } catch (e) {
          if (e.code === 'ENOENT') continue; // taken over and tidied meanwhile: look again
          info = undefined;
        }
        if (await ownerAlive(info)) {
          throw new StoreLockedError(
            `${this.#dir} is in use by process ${info?.pid ?? '?'} on ${info?.host ?? '?'} ` +
            `(lock file LOCK.${top}; remove it only if that process is gone)`,
          );
        }
      }
      // Our lock: written whole to a file of our own, then linked to the next generation's
      // name, which fails if another process got there first.
      const mine = top + 1;
      const tmp = join(this.#dir, `.lock-${process.pid}-${Math.random().toString(16).slice(2)}`);
      await fsp.writeFile(tmp, JSON.stringify(me));
      let linked = false;
      try {
        await fsp.link(tmp, join(this.#dir, `LOCK.${mine}`));
        linked = true;
      } catch (e) {
        if (e.code !== 'EEXIST') throw e;
      } finally {
        await fsp.unlink(tmp).catch(() => {});
      }
      if (!linked) continue;
      // A process that read the directory long ago may have re-created a lower generation
      // after the tidying below: whoever holds the highest one holds the lock.
      const after = await this.#lockGenerations();
      if (after[after.length - 1] !== mine) {
        await fsp.unlink(join(this.#dir, `LOCK.${mine}`)).catch(() => {});
        continue;
      }
      for (const g of after) if (g < mine) await fsp.unlink(join(this.#dir, `LOCK.${g}`)).catch(() => {});
      this.#lockFile = join(this.#dir, `LOCK.${mine}`);
      const file = this.#lockFile;
      this.#onExit = () => {
        try {
          unlinkSync(file);
        } catch {}
      };
      process.once('exit', this.#onExit);
      return;
    }
    throw new StoreLockedError(`${this.#dir}: could not take the lock (other processes keep taking it)`);
  }

  async #lockGenerations() {
    const names = await fsp.readdir(this.#dir);
    return names.map((n) => LOCK_RE.exec(n)).filter(Boolean).map((m) => Number(m[1])).sort((a, b) => a - b);
  }

  /** Every file of the store (not the lock), `[name, Uint8Array]`. */
  async read() {
    const out = [];
    for (const entry of await fsp.readdir(this.#dir, { withFileTypes: true })) {
      if (!entry.isFile() || entry.name.startsWith('LOCK') || entry.name.startsWith('.lock-')) continue;
      const bytes = await fsp.readFile(join(this.#dir, entry.name));
      out.push([entry.name, new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)]);
    }
    return out;
  }

  async #handle(file) {
    let h = this.#handles.get(file);
    if (h) return h;
    const path = join(this.#dir, file);
    try {
      h = await fsp.open(path, 'ax');
      this.#fresh.add(file); // its directory entry needs a sync too
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      h = await fsp.open(path, 'a');
    }
    this.#handles.set(file, h);
    return h;
  }

  async #drop(file) {
    const h = this.#handles.get(file);
    if (h) {
      this.#handles.delete(file);
      await h.close();
    }
  }

  async #syncDir() {
    if (!WIN) await withFile(this.#dir, 'r', () => {}); // Windows cannot fsync a directory
  }

  /** Carries out file operations in order, each completely; rejects at the first failure. */
  async apply(ops) {
    if (this.#closed) throw new Error(`FileStore ${this.#dir} is closed`);
    const path = (file) => join(this.#dir, file);
    await applyOps(ops, {
      append: async ({ file, bytes }) => writeAll(await this.#handle(file), bytes),
      sync: async ({ file }) => {
        await (await this.#handle(file)).datasync();
        if (this.#fresh.delete(file)) await this.#syncDir();
      },
      replace: async ({ file, bytes }) => {
        await this.#drop(file);
        await withFile(path(`${file}.tmp`), 'w', async (fh) => writeAll(fh, bytes));
        await fsp.rename(path(`${file}.tmp`), path(file));
        this.#fresh.delete(file);
        await this.#syncDir();
      },
      truncate: async ({ file, len }) => {
        await this.#drop(file);
        await withFile(path(file), 'r+', (fh) => fh.truncate(len));
      },
      remove: async ({ file }) => {
        await this.#drop(file);
        this.#fresh.delete(file);
        await fsp.unlink(path(file)).catch((e) => { if (e.code !== 'ENOENT') throw e; });
        await this.#syncDir();
      },
    });
  }

  /** Closes the files and lets go of the lock. */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    for (const file of [...this.#handles.keys()]) await this.#drop(file);
    if (this.#lockFile) {
      await fsp.unlink(this.#lockFile).catch(() => {});
      process.removeListener('exit', this.#onExit);
      this.#lockFile = null;
    }
  }
}
