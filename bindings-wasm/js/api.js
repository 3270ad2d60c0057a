// The public API of the `leasehold` package: the WebAssembly classes (Lease, Landlord, ...),
// the error classes, the constants, and the drivers that run the sans-I/O objects on setTimeout.
// No leasing rule lives here: every decision is made by the Rust core.

import * as wasm from './leasehold_wasm.js';
import { makeError, IndefiniteError, UnknownLeaseError, ArgumentTypeError, InvalidArgumentError } from './errors.js';
import { DeadlineTimer } from './timer.js';
import { StoreWriter, checkHost, closeWriter, openKept } from './store.js';

export { MemoryStore, IndexedDbStore, StoreWriter, StoreLockedError, StoreFailedError } from './store.js';

export {
  ErrorCode,
  LeaseError,
  UnknownLeaseError,
  LeaseDeniedError,
  LeaseMapError,
  DecodeError,
  IndefiniteError,
  ReentrantCallError,
  InvalidArgumentError,
  ArgumentTypeError,
} from './errors.js';

export const {
  Lease,
  Landlord,
  LeaseMap,
  RenewalManager,
  RenewalService,
  GapTracker,
  grantRequest,
  leaseFromReply,
  encodeRequest,
  decodeRequest,
  encodeReply,
  decodeReply,
  errorFromWire,
  wasmMemoryBytes,
  coreVersion,
  JournalGate,
  DiscoveryService,
  encodeAnnouncement,
  decodeAnnouncement,
} = wasm;

export {
  Fence, FencedError, lock, elect, observe, encodeCoordRequest, decodeCoordRequest, encodeCoordReply, decodeCoordReply,
} from './coord.js';

export {
  DiscoveryDriver, ALL_GROUPS, NO_GROUPS, encodeDiscoveryRequest, decodeDiscoveryRequest, encodeDiscoveryReply,
  decodeDiscoveryReply, encodeDiscoveryEvent, decodeDiscoveryEvent, encodeEventReply, decodeEventReply,
  discoveryEventFromBytes,
} from './discovery.js';
export { RenewalSet } from './service.js';
export {
  RemoteSet, encodeSetRequest, decodeSetRequest, encodeSetReply, decodeSetReply, encodeSetEvent, decodeSetEvent,
} from './renewal.js';

/** `Lease.FOREVER`: a lease or duration that never ends. `Infinity` here (i64::MAX in core). */
export const FOREVER = Infinity;
/** `Lease.ANY`: lets the landlord choose the duration. */
export const ANY = -1;
/** Serial format that stores the time left (read back against the reader's clock). */
export const DURATION = 1;
/** Serial format that stores the expiration itself (epoch ms; needs synchronised clocks). */
export const ABSOLUTE = 2;

/** Builders for policy descriptions (plain objects; `new Landlord({policy})` takes either). */
export const Policy = Object.freeze({
  fixed: (duration) => ({ kind: 'fixed', duration }),
  bounded: (max, defaultDuration) => ({ kind: 'bounded', max, default: defaultDuration }),
  capacity: (maxLeases, inner) => ({ kind: 'capacity', maxLeases, inner }),
  resourceAware: (capacity, max, min) => ({ kind: 'resourceAware', capacity, max, min }),
  adaptive: (options) => ({ kind: 'adaptive', ...options }),
});

// Cookies as words: a cookie is a 128-bit number, written as 32 hex digits; the word API
// carries it as four unsigned 32-bit words, least significant first (a Uint32Array of 4 per
// lease), which cross into WebAssembly as plain numbers: no string is made or parsed per call.

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const COOKIE_RE = /^[0-9a-fA-F]{32}$/;

// Hex digit values by character code (-1 for anything else), for parsing cookies in JavaScript.
const HEXVAL = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) {
  HEXVAL['0123456789abcdef'.charCodeAt(i)] = i;
  HEXVAL['0123456789ABCDEF'.charCodeAt(i)] = i;
}

// The eight hex digits of `s` from `at` as an unsigned 32-bit number, or -1.
function word8(s, at) {
  let w = 0;
  for (let i = at; i < at + 8; i++) {
    const c = s.charCodeAt(i);
    const v = c < 128 ? HEXVAL[c] : -1;
    if (v < 0) return -1;
    w = (w << 4) | v;
  }
  return w >>> 0;
}

// 32 hex digits made in one flat string: two ASCII digits per byte from a table, then one
// TextDecoder call (about twice as fast as concatenating two-character strings, and no garbage).
const PAIRS = new Uint16Array(256);
for (let i = 0; i < 256; i++) PAIRS[i] = HEX[i].charCodeAt(0) | (HEX[i].charCodeAt(1) << 8);
const hexChars = new Uint8Array(32);
const hexPairs = new Uint16Array(hexChars.buffer);
const latin1 = new TextDecoder('latin1');

function hexOfWords(w0, w1, w2, w3) {
  const p = hexPairs;
  p[0] = PAIRS[w3 >>> 24]; p[1] = PAIRS[(w3 >>> 16) & 255]; p[2] = PAIRS[(w3 >>> 8) & 255]; p[3] = PAIRS[w3 & 255];
  p[4] = PAIRS[w2 >>> 24]; p[5] = PAIRS[(w2 >>> 16) & 255]; p[6] = PAIRS[(w2 >>> 8) & 255]; p[7] = PAIRS[w2 & 255];
  p[8] = PAIRS[w1 >>> 24]; p[9] = PAIRS[(w1 >>> 16) & 255]; p[10] = PAIRS[(w1 >>> 8) & 255]; p[11] = PAIRS[w1 & 255];
  p[12] = PAIRS[w0 >>> 24]; p[13] = PAIRS[(w0 >>> 16) & 255]; p[14] = PAIRS[(w0 >>> 8) & 255]; p[15] = PAIRS[w0 & 255];
  return latin1.decode(hexChars);
}

function checkWords(words, offset, what) {
  if (!(words instanceof Uint32Array)) throw new ArgumentTypeError(`${what} must be a Uint32Array (4 words per cookie)`);
  if (!Number.isInteger(offset) || offset < 0 || offset + 4 > words.length) {
    throw new InvalidArgumentError(`${what}: offset ${offset} leaves no 4 words in an array of ${words.length}`);
  }
}

/** The cookie in `words[offset..offset+4]` (least significant word first) as 32 hex digits. */
export function cookieFromWords(words, offset = 0) {
  checkWords(words, offset, 'cookieFromWords words');
  return hexOfWords(words[offset], words[offset + 1], words[offset + 2], words[offset + 3]);
}

/** Writes a cookie (32 hex digits) as four words into `out[offset..offset+4]`; returns `out`. */
export function cookieToWords(cookie, out = new Uint32Array(4), offset = 0) {
  if (typeof cookie !== 'string') throw new ArgumentTypeError('a cookie must be a string of 32 hex digits');
  if (!COOKIE_RE.test(cookie)) throw new InvalidArgumentError(`cookie must be 32 hex digits, got ${JSON.stringify(cookie.slice(0, 40))}`);
  checkWords(out, offset, 'cookieToWords out');
  out[offset + 3] = parseInt(cookie.slice(0, 8), 16);
  out[offset + 2] = parseInt(cookie.slice(8, 16), 16);
  out[offset + 1] = parseInt(cookie.slice(16, 24), 16);
  out[offset] = parseInt(cookie.slice(24, 32), 16);
  return out;
}

/** Objects still usable: `free()` has not been called on them. */
function alive(o) {
  return o.__wbg_ptr !== 0;
}

// Leases per call of a batch: bounds the WebAssembly memory a batch borrows (16 bytes of cookie
// and 8 of result per lease), so one huge batch does not grow the module's memory for ever.
const CHUNK = 8192;

let installed = false;
// How this runtime opens a store named by a string: a directory (Node), an IndexedDB database
// (browsers). Set by the package entry.
let openNamedStore = null;
/** Called once by the package entry after the WebAssembly module is instantiated. */
export function __install(exports, platform = {}) {
  if (installed) return;
  installed = true;
  openNamedStore = platform.openStore ?? null;
  wasm.__setErrorFactory(makeError);
  // `free()` while one of the object's own methods is running (from a getter, a callback): the
  // object goes once that call returns, instead of wasm-bindgen's "attempted to take ownership
  // of Rust value while it was borrowed" (which also leaked it).
  if (exports) {
    for (const [C, name] of [[Landlord, 'landlord'], [Lease, 'lease'], [LeaseMap, 'leasemap'],
      [RenewalManager, 'renewalmanager'], [RenewalService, 'renewalservice'], [GapTracker, 'gaptracker'], [DiscoveryService, 'discoveryservice']]) {
      const release = exports[`__wbg_${name}_free`];
      if (typeof release !== 'function') continue;
      C.prototype.free = function free() {
        const ptr = this.__destroy_into_raw();
        if (ptr !== 0) release(ptr, 1);
      };
    }
  }
  Landlord.prototype[Symbol.iterator] = function () {
    return this.entries()[Symbol.iterator]();
  };
  // The word API. The scratch words are a view of the module's memory, made again when the
  // memory grows (which detaches the old view).
  const memory = wasm.__memory();
  const scratchPtr = wasm.__scratchPtr();
  let scratch = new Uint32Array(memory.buffer, scratchPtr, 8);
  const words = () => (scratch.byteLength !== 0 ? scratch : (scratch = new Uint32Array(memory.buffer, scratchPtr, 8)));
  const fail = (ll) => {
    const e = ll.__takeError();
    if (e !== undefined) throw e;
  };
  // Fast paths: arguments of the right JavaScript types go to methods taking plain numbers and
  // strings; anything else goes to the checked methods, which convert or explain the error.
  const L = Landlord.prototype;
  const checkedGrant = L.grant;
  const checkedRenew = L.renew;
  const checkedCancel = L.cancel;
  L.grant = function grant(resource, duration, now) {
    if (typeof duration !== 'number' || typeof now !== 'number') return checkedGrant.call(this, resource, duration, now);
    let d = this.__grantW(resource, duration, now);
    if (d !== d) fail(this);
    const w = words();
    const cookie = hexOfWords(w[0], w[1], w[2], w[3]);
    let e = this.__lastGrantExpiration();
    if (d !== d || e !== e) [d, e] = this.__lastGrantExact();
    return { cookie, duration: d, expiration: e };
  };
  // A string cookie is parsed here into its four words (cheaper than copying the string into
  // wasm memory); anything that is not 32 hex digits goes to the checked method for its error.
  L.renew = function renew(cookie, duration, now) {
    if (typeof cookie !== 'string' || cookie.length !== 32 || typeof duration !== 'number' || typeof now !== 'number') {
      return checkedRenew.call(this, cookie, duration, now);
    }
    const w3 = word8(cookie, 0), w2 = word8(cookie, 8), w1 = word8(cookie, 16), w0 = word8(cookie, 24);
    if (w3 === -1 || w2 === -1 || w1 === -1 || w0 === -1) return checkedRenew.call(this, cookie, duration, now);
    const d = this.__renewW(w0, w1, w2, w3, duration, now);
    if (d === d) return d;
    fail(this);
    return this.__lastRenewExact();
  };
  L.cancel = function cancel(cookie, now) {
    if (typeof cookie !== 'string' || cookie.length !== 32 || typeof now !== 'number') return checkedCancel.call(this, cookie, now);
    const w3 = word8(cookie, 0), w2 = word8(cookie, 8), w1 = word8(cookie, 16), w0 = word8(cookie, 24);
    if (w3 === -1 || w2 === -1 || w1 === -1 || w0 === -1) return checkedCancel.call(this, cookie, now);
    const r = this.__cancelW(w0, w1, w2, w3, now);
    if (words()[4] !== 0) {
      fail(this);
      throw new UnknownLeaseError(); // not reached: a failed cancel always leaves its error
    }
    return r;
  };

  L.grantWords = function grantWords(resource, duration, now, out, offset = 0) {
    checkWords(out, offset, 'grantWords out');
    if (typeof duration !== 'number' || typeof now !== 'number') {
      const g = checkedGrant.call(this, resource, duration, now);
      cookieToWords(g.cookie, out, offset);
      return g.duration;
    }
    let d = this.__grantW(resource, duration, now);
    if (d !== d) {
      fail(this);
      d = this.__lastGrantExact()[0];
    }
    const w = words();
    out[offset] = w[0];
    out[offset + 1] = w[1];
    out[offset + 2] = w[2];
    out[offset + 3] = w[3];
    return d;
  };
  L.renewWords = function renewWords(cookie, offset, duration, now) {
    checkWords(cookie, offset, 'renewWords cookie');
    if (typeof duration !== 'number' || typeof now !== 'number') {
      return checkedRenew.call(this, cookieFromWords(cookie, offset), duration, now);
    }
    const d = this.__renewW(cookie[offset], cookie[offset + 1], cookie[offset + 2], cookie[offset + 3], duration, now);
    if (d === d) return d;
    fail(this);
    return this.__lastRenewExact();
  };
  L.cancelWords = function cancelWords(cookie, offset, now) {
    checkWords(cookie, offset, 'cancelWords cookie');
    if (typeof now !== 'number') return checkedCancel.call(this, cookieFromWords(cookie, offset), now);
    const r = this.__cancelW(cookie[offset], cookie[offset + 1], cookie[offset + 2], cookie[offset + 3], now);
    if (words()[4] !== 0) {
      fail(this);
      throw new UnknownLeaseError(); // not reached: a failed cancel always leaves its error
    }
    return r;
  };
  const one = new Float64Array(1);
  const durationsFor = (duration, i, j, what) => {
    if (typeof duration === 'number') {
      one[0] = duration;
      return one;
    }
    if (!(duration instanceof Float64Array)) throw new ArgumentTypeError(`${what} duration must be a number or a Float64Array`);
    return duration.subarray(i, j);
  };
  L.grantBatch = function grantBatch(resources, duration, now, cookies, durations) {
    if (!Array.isArray(resources)) throw new ArgumentTypeError('grantBatch resources must be an array');
    const n = resources.length;
    cookies ??= new Uint32Array(4 * n);
    durations ??= new Float64Array(n);
    if (!(cookies instanceof Uint32Array) || cookies.length < 4 * n) throw new ArgumentTypeError('grantBatch cookies must be a Uint32Array of 4 words per resource');
    if (!(durations instanceof Float64Array) || durations.length < n) throw new ArgumentTypeError('grantBatch durations must be a Float64Array of one per resource');
    if (typeof duration !== 'number' && (!(duration instanceof Float64Array) || duration.length < n)) {
      throw new ArgumentTypeError('grantBatch duration must be a number or a Float64Array of one per resource');
    }
    let failed = 0;
    for (let i = 0; i < n; i += CHUNK) {
      const j = Math.min(n, i + CHUNK);
      failed += this.__grantBatch(resources.slice(i, j), durationsFor(duration, i, j, 'grantBatch'), now,
        cookies.subarray(4 * i, 4 * j), durations.subarray(i, j));
    }
    return { cookies, durations, failed };
  };
  L.renewBatch = function renewBatch(cookies, duration, now, out) {
    if (!(cookies instanceof Uint32Array) || cookies.length % 4 !== 0) throw new ArgumentTypeError('renewBatch cookies must be a Uint32Array of 4 words per lease');
    const n = cookies.length / 4;
    out ??= new Float64Array(n);
    if (!(out instanceof Float64Array) || out.length < n) throw new ArgumentTypeError('renewBatch out must be a Float64Array of one per lease');
    if (typeof duration !== 'number' && (!(duration instanceof Float64Array) || duration.length < n)) {
      throw new ArgumentTypeError('renewBatch duration must be a number or a Float64Array of one per lease');
    }
    for (let i = 0; i < n; i += CHUNK) {
      const j = Math.min(n, i + CHUNK);
      this.__renewBatch(cookies.subarray(4 * i, 4 * j), durationsFor(duration, i, j, 'renewBatch'), now, out.subarray(i, j));
    }
    return out;
  };
  L.cancelBatch = function cancelBatch(cookies, now, out) {
    if (!(cookies instanceof Uint32Array) || cookies.length % 4 !== 0) throw new ArgumentTypeError('cancelBatch cookies must be a Uint32Array of 4 words per lease');
    const n = cookies.length / 4;
    out ??= new Float64Array(n);
    if (!(out instanceof Float64Array) || out.length < n) throw new ArgumentTypeError('cancelBatch out must be a Float64Array of one per lease');
    let resources = [];
    for (let i = 0; i < n; i += CHUNK) {
      const j = Math.min(n, i + CHUNK);
      const r = this.__cancelBatch(cookies.subarray(4 * i, 4 * j), now, out.subarray(i, j));
      resources = i === 0 ? r : resources.concat(r);
    }
    return resources;
  };
}

function defaultNow() {
  return Date.now();
}

function checkClock(now) {
  if (typeof now !== 'function') throw new TypeError('options.now must be a function returning ms');
  return now;
}

/**
 * Runs a landlord's expiry on setTimeout: sweeps expired leases when they are due and hands each
 * one (`{cookie, expiration, resource}`) to `onExpired`. Serve transport requests with `serve`,
 * or call `landlord` methods yourself and then `update()` so the timer sees new deadlines.
 * `close()` (or `using`) stops it; its timer never keeps Node alive (unless `keepAlive`).
 */
export class LandlordDriver {
  #landlord;
  #now;
  #timer;
  #onExpired;
  #onError;

  constructor(landlord, { now = defaultNow, onExpired, onError, keepAlive = false, store } = {}) {
    if (!(landlord instanceof Landlord)) throw new TypeError('LandlordDriver needs a Landlord');
    if (store !== undefined) throw new TypeError('a durable landlord comes from its store: use `await LandlordDriver.open({store, landlord: {id, policy}})`');
    if (landlord.durable) throw new TypeError('a durable landlord is driven by the driver that opened it (LandlordDriver.open)');
    this.#landlord = landlord;
    this.#now = checkClock(now);
    this.#onExpired = onExpired ?? (() => {});
    this.#onError = onError ?? ((e) => queueMicrotask(() => { throw e; }));
    this.#timer = new DeadlineTimer(() => this.#tick(), this.#now, keepAlive);
    this.update();
  }

  /**
   * Opens a durable landlord from its store and drives it: every reply, grant, renewal and
   * cancel resolves only once the records behind it are durable (group commit: one write and
   * one sync for everything that arrived meanwhile). See `DurableLandlordDriver`.
   *
   * `store`: a directory (Node) or an IndexedDB database name (browsers), or a store object
   * (`FileStore`, `IndexedDbStore`, `MemoryStore`, or one of yours with `read()` and
   * `apply(ops)`); the driver closes it when it closes. `landlord`: the options of
   * `new Landlord(...)`; the id and policy are needed every time (the policy is code, not
   * data), the rest only when the store is new (afterwards the store's own are used).
   * Opening replays the store (a torn tail is dropped and cut; damage throws `DecodeError`) and
   * resumes the landlord's clock where it stopped: time spent down does not count.
   */
  static async open({ store, landlord, segmentBytes, minCompactBytes, now = defaultNow, ...options } = {}) {
    checkClock(now);
    const host = await resolveStore(store);
    return openKept(host, (files) => Landlord.__openStore(files, landlord, { segmentBytes, minCompactBytes }, now()),
      (ll, recovery) => new DurableLandlordDriver(OPEN, ll, host, recovery, { now, ...options }));
  }

  /** The landlord driven. */
  get landlord() {
    return this.#landlord;
  }

  /** The driver's clock, ms. */
  now() {
    return this.#now();
  }

  /** Re-arms the timer after the landlord was changed directly. */
  update() {
    if (this.#timer.closed) return;
    if (!alive(this.#landlord)) {
      this.close(); // the landlord was freed: nothing left to drive
      return;
    }
    const t = this.#landlord.__pollTimeoutMs();
    this.#timer.arm(t === t ? t : undefined);
  }

  /** Answers one encoded request (what a transport received) and returns the encoded reply. */
  serve(bytes, encoding = 'binary') {
    const reply = this.#landlord.handleBytes(bytes, this.#now(), encoding);
    this.update();
    return reply;
  }

  /** Grants a lease at the driver's clock; see `Landlord.grant`. */
  grant(resource, duration) {
    const g = this.#landlord.grant(resource, duration, this.#now());
    this.update();
    return g;
  }

  /** Renews a lease at the driver's clock; see `Landlord.renew`. */
  renew(cookie, duration) {
    const d = this.#landlord.renew(cookie, duration, this.#now());
    this.update();
    return d;
  }

  /** Cancels a lease at the driver's clock; see `Landlord.cancel`. (A cancel never makes a
   * deadline earlier, so the timer needs no re-arming: at worst it wakes once for nothing.) */
  cancel(cookie) {
    return this.#landlord.cancel(cookie, this.#now());
  }

  // Each expired lease is taken out of the landlord before `onExpired` sees it, so the handler
  // runs with nothing borrowed: it may grant, renew, cancel, close the driver or free the
  // landlord (the loop then stops).
  #tick() {
    const ll = this.#landlord;
    try {
      if (!alive(ll)) return;
      ll.handleTimeout(this.#now());
      let e;
      while (!this.closed && alive(ll) && (e = ll.pollExpired()) !== undefined) {
        try {
          this.#onExpired(e);
        } catch (err) {
          this.#onError(err);
        }
      }
    } catch (err) {
      this.#onError(err); // a clock that throws, say: reported, and the timer is re-armed
    } finally {
      this.update();
    }
  }

  /** Stops the timer. The landlord stays usable. */
  close() {
    this.#timer.close();
  }

  get closed() {
    return this.#timer.closed;
  }

  [Symbol.dispose ?? Symbol.for('Symbol.dispose')]() {
    this.close();
  }
}

const OPEN = Symbol('LandlordDriver.open');

// For the other drivers of this package (discovery.js): the same store names, clocks and checks.
export { resolveStore as __resolveStore, checkClock as __checkClock, alive as __alive };

async function resolveStore(store) {
  if (typeof store === 'string' || store instanceof URL) {
    if (!openNamedStore) throw new TypeError('this runtime has no default store: pass a store object');
    return openNamedStore(store);
  }
  if (store === undefined || store === null) {
    throw new TypeError('LandlordDriver.open needs a store: a directory (Node), an IndexedDB name (browsers), or a store object (MemoryStore keeps nothing)');
  }
  return checkHost(store);
}

/**
 * A durable landlord and its driver (made by `LandlordDriver.open`): expiry on setTimeout like
 * `LandlordDriver`, and every answer released only once the journal records behind it are
 * durable. `serve(bytes)` resolves with the reply; `grant`, `renew`, `cancel` resolve with
 * their results (or reject with the landlord's error) at the same point. Expired leases reach
 * `onExpired` once their sweep is durable (after a crash before that, the restarted landlord
 * expires them again: at least once).
 *
 * If the store cannot write, every pending and later answer rejects with `StoreFailedError`
 * (also given to `onError`): reply 503 to the holder and restart; reopening recovers.
 */
export class DurableLandlordDriver {
  #landlord;
  #writer;
  #now;
  #timer;
  #onExpired;
  #onError;
  #recovery;
  #closing = null;

  constructor(token, landlord, host, recovery, { now = defaultNow, onExpired, onError, keepAlive = false } = {}) {
    if (token !== OPEN) throw new TypeError('open a durable landlord with `await LandlordDriver.open({store, landlord})`');
    this.#landlord = landlord;
    this.#recovery = recovery;
    this.#now = checkClock(now);
    this.#onExpired = onExpired ?? (() => {});
    this.#onError = onError ?? ((e) => queueMicrotask(() => { throw e; }));
    this.#writer = new StoreWriter(landlord, host, { onError: (e) => this.#onError(e) });
    this.#timer = new DeadlineTimer(() => this.#tick(), this.#now, keepAlive);
    this.update();
  }

  /** The landlord driven (kept in the store: resources are bytes). */
  get landlord() {
    return this.#landlord;
  }

  /** The store it is kept in. */
  get store() {
    return this.#writer.host;
  }

  /** What opening the store found: `{created, replayed, torn?, journalSeq}`. */
  get recovery() {
    return this.#recovery;
  }

  /** Sizes and counts: `{logBytes, snapshotBytes, committed, writes}` (writes: rounds of group commit). */
  get stats() {
    return { ...this.#landlord.__storeStats(), writes: this.#writer.writes };
  }

  /** The error that stopped the store, if one did. */
  get failed() {
    return this.#writer.failed;
  }

  get closed() {
    return this.#closing !== null;
  }

  /** The driver's clock, ms. */
  now() {
    return this.#now();
  }

  /** After changing the landlord directly: re-arms the timer and schedules a commit. */
  update() {
    if (this.closed) return;
    if (!alive(this.#landlord)) {
      this.#onError(new TypeError('the landlord of a DurableLandlordDriver was freed'));
      this.#timer.close();
      return;
    }
    const t = this.#landlord.__pollTimeoutMs();
    this.#timer.arm(t === t ? t : undefined);
    this.#writer.kick();
  }

  /** Resolves once everything the landlord recorded so far is durable. */
  sync() {
    if (this.closed) return this.#closing;
    return this.#writer.durable();
  }

  /** Writes a new snapshot now and drops the log it covers (this also happens by itself). */
  compact() {
    if (this.closed) return Promise.reject(new Error('the driver is closed'));
    return this.#writer.compact();
  }

  // Runs `f` now (at the driver's clock); its result, or its error, once durable.
  async #answer(f) {
    if (this.closed) throw new Error('the driver is closed');
    let result;
    let error;
    let failed = false;
    try {
      result = f(this.#now());
    } catch (err) {
      failed = true;
      error = err;
    }
    this.update();
    await this.#writer.durable();
    if (failed) throw error;
    return result;
  }

  /** Answers one encoded request; resolves with the encoded reply once it may leave. */
  serve(bytes, encoding = 'binary') {
    return this.#answer((now) => this.#landlord.handleBytes(bytes, now, encoding));
  }

  /** Answers one request in object form; resolves with the reply object once it may leave. */
  handleRequest(request) {
    return this.#answer((now) => this.#landlord.handleRequest(request, now));
  }

  /** Grants a lease (resource: a string or Uint8Array); resolves with it once durable. */
  grant(resource, duration) {
    return this.#answer((now) => this.#landlord.grant(resource, duration, now));
  }

  /** Renews a lease; resolves with the granted duration once durable. */
  renew(cookie, duration) {
    return this.#answer((now) => this.#landlord.renew(cookie, duration, now));
  }

  /** Cancels a lease; resolves with its resource once durable. */
  cancel(cookie) {
    return this.#answer((now) => this.#landlord.cancel(cookie, now));
  }

  #tick() {
    const ll = this.#landlord;
    try {
      if (!alive(ll)) return;
      ll.handleTimeout(this.#now());
      const expired = [];
      let e;
      while (alive(ll) && (e = ll.pollExpired()) !== undefined) expired.push(e);
      if (expired.length) {
        this.#writer.after(() => {
          for (const x of expired) {
            try {
              this.#onExpired(x);
            } catch (err) {
              this.#onError(err);
            }
          }
        });
      }
    } catch (err) {
      this.#onError(err);
    } finally {
      this.update();
    }
  }

  /**
   * Stops the timer, writes what is pending, closes the store (and lets go of its lock). The
   * landlord stays readable; answers asked for after this reject.
   */
  close() {
    if (this.#closing) return this.#closing;
    this.#timer.close();
    this.#closing = closeWriter(this.#writer);
    return this.#closing;
  }

  [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    return this.close();
  }
}

function asBytes(x) {
  if (x instanceof Uint8Array || typeof x === 'string') return x;
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  throw new TypeError('a transport must resolve to a Uint8Array, ArrayBuffer or string');
}

// A server's lease endpoint: a URL with a path is used as it is; a bare origin gets `/lease`
// (what leasehold-server serves). A relative URL (`/lease` in a page) is the page's.
function leaseEndpoint(u) {
  const url = new URL(String(u), globalThis.location?.href);
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/lease';
  return url;
}

function timeoutSignal(ms) {
  if (typeof AbortSignal.timeout === 'function') return { signal: AbortSignal.timeout(ms), clear() {} };
  const c = new AbortController();
  const t = setTimeout(() => c.abort(new DOMException('timed out', 'TimeoutError')), ms);
  return { signal: c.signal, clear: () => clearTimeout(t) };
}

/** The query naming a landlord: its id as the wire writes it, 16 hex digits (landlord 16 is
 * `landlord=0000000000000010`); leasehold-server refuses any other form with a 400. */
export function landlordQuery(landlord) {
  let hex;
  if (typeof landlord === 'string') hex = landlord;
  else if (typeof landlord === 'bigint' || Number.isSafeInteger(landlord)) hex = BigInt(landlord).toString(16).padStart(16, '0');
  if (typeof hex !== 'string' || !/^[0-9a-fA-F]{16}$/.test(hex)) {
    throw new RangeError(`a landlord id is 16 hex digits, got ${String(landlord)}`);
  }
  return `landlord=${hex.toLowerCase()}`;
}

/**
 * A transport over HTTP `fetch` to one server or a cluster of `leasehold-server`s (a URL or a
 * list of them; a bare origin like `http://a:7420` means its `/lease`). Grants go to the
 * endpoint as it is; renewals and cancels add `?landlord=<16 hex digits>`, the landlord as the
 * wire writes it, so that any server can route them. An answer that carries a wire reply (the
 * request's content type and a body that decodes) is the landlord's definite answer, whatever
 * its status: a 404 (unknown lease) or a 409 (denied) is returned, never retried elsewhere.
 * Within one send it tries the servers in turn, starting with the one that answered last (or
 * the owner a server named in `X-Leasehold-Owner` for that landlord), moving on after a network
 * error, a time-out (`timeout` ms per attempt, default 1000), an HTTP 5xx (503: the shard is
 * moving) or an answer without a wire reply (a proxy's error page); redirects (307/308) are
 * followed with the same body. Only when every server failed does the send reject, with an
 * `IndefiniteError` (the manager retries until the lease would expire): a transport failure is
 * never reported as definite.
 *
 * Security (leasehold-server's `--tokens`, `--tls-*`): `token` is sent as
 * `Authorization: Bearer <token>`; `https://` URLs use the platform's TLS. A browser checks the
 * server against its own CAs and presents the client certificates the user installed; in
 * Node, pass `dispatcher`, an undici `Agent` made with
 * `{ connect: { ca, cert, key } }` (a CA bundle and a client certificate), which goes to each
 * `fetch` call. A refusal for the identity (401, 403) or its quota (409) carries a wire reply:
 * a definite answer, not a reason to try another server.
 */
export function fetchTransport(urls, { fetch: f = globalThis.fetch, headers = {}, encoding = 'binary', timeout = 1000, token, dispatcher } = {}) {
  if (typeof f !== 'function') throw new TypeError('fetchTransport needs fetch');
  if (token !== undefined && (typeof token !== 'string' || /[\r\n]/.test(token) || token === '')) {
    throw new TypeError('token must be a non-empty string without line breaks');
  }
  const auth = token === undefined ? {} : { authorization: `Bearer ${token}` };
  const list = (Array.isArray(urls) ? urls : [urls]).map(leaseEndpoint);
  if (list.length === 0) throw new TypeError('fetchTransport needs at least one URL');
  if (!(Number.isFinite(timeout) && timeout > 0)) throw new RangeError('timeout must be a positive number of ms');
  const type = encoding === 'json' ? 'application/json' : 'application/octet-stream';
  let current = 0;
  const owners = new Map(); // landlord (16 hex digits) -> index of the server that owns it
  const indexOf = (origin) => list.findIndex((u) => u.origin === origin);
  // `endpoint: 'coord'` sends a coordination message to `/coord` beside the lease endpoint (its
  // reply is a CoordReply), `endpoint: 'renewal'` a renewal set message to `/renewal` (a SetReply,
  // JSON: js/renewal.js); `wait` ms (how long a server may hold it: an acquire that waits, a
  // long poll) add to the attempt's time-out. `onAttempt` is called just before each server is
  // tried: a lease the reply grants counts from the last call (after a failover, not the first).
  return async (body, landlord, { endpoint = 'lease', wait = 0, onAttempt } = {}) => {
    const query = landlord === undefined || landlord === null ? '' : landlordQuery(landlord);
    const kind = endpoint === 'renewal' ? 'SetReply' : 'CoordReply';
    const isReply = endpoint === 'lease' ? (b) => decodeReply(b, encoding) : (b) => wasm.__decodeMessage(kind, b, encoding);
    const first = owners.get(landlord) ?? current;
    const failures = [];
    for (let k = 0; k < list.length; k++) {
      const i = (first + k) % list.length;
      const url = new URL(list[i]);
      if (endpoint !== 'lease') url.pathname = url.pathname.replace(/\/[^/]*$/, `/${endpoint}`);
      if (query) url.search = url.search ? `${url.search}&${query}` : query;
      const t = timeoutSignal(timeout + wait);
      onAttempt?.();
      try {
        const res = await f(url, {
          method: 'POST', body, redirect: 'follow', signal: t.signal,
          headers: { 'content-type': type, ...auth, ...headers },
          ...(dispatcher === undefined ? {} : { dispatcher }),
        });
        let reply;
        if (res.status === 200) {
          reply = new Uint8Array(await res.arrayBuffer());
        } else if (res.status >= 400 && res.status < 500 && (res.headers.get('content-type') ?? '').toLowerCase().startsWith(type)) {
          // leasehold-server's error statuses carry the landlord's reply: a definite answer,
          // if it is one (a proxy's page is not).
          const bytes = new Uint8Array(await res.arrayBuffer());
          try {
            isReply(bytes);
            reply = bytes;
          } catch {
            failures.push(`${url.origin}: HTTP ${res.status} without a wire reply`);
            continue;
          }
        }
        if (reply !== undefined) {
          current = i;
          if (query) {
            const owner = res.headers.get('x-leasehold-owner');
            let o = -1;
            try {
              o = owner ? indexOf(new URL(owner).origin) : -1;
            } catch {}
            owners.set(landlord, o >= 0 ? o : i);
          }
          return reply;
        }
        await res.arrayBuffer().catch(() => {});
        failures.push(`${url.origin}: HTTP ${res.status}`);
        continue;
      } catch (err) {
        // A network error (TypeError), a time-out or an abort: try the next server.
        failures.push(`${url.origin}: ${err?.name === 'TimeoutError' || err?.name === 'AbortError' ? `no answer in ${timeout} ms` : (err?.cause?.code ?? err?.message ?? err)}`);
      } finally {
        t.clear();
      }
    }
    throw new IndefiniteError(`every server failed (${failures.join('; ')})`);
  };
}

/**
 * Runs a RenewalManager (or a RenewalService, which has the same loop) on setTimeout with a Promise-returning transport
 * `(body: Uint8Array | string, landlord: string) => Promise<Uint8Array | ArrayBuffer | string>`
 * (fetch, WebSocket, postMessage, ...). Sends what the manager hands out when it asks, feeds
 * replies and failures back, and delivers events to `onEvent`. `close()` (or `using`) stops it;
 * its timer never keeps Node alive (unless `keepAlive`).
 */
export class RenewalDriver {
  #manager;
  #transport;
  #encoding;
  #now;
  #timer;
  #onEvent;
  #onError;
  #grantId = 2 ** 52; // grant requests get ids of their own, far above the manager's

  constructor(manager, { transport, encoding = 'binary', now = defaultNow, onEvent, onError, keepAlive = false } = {}) {
    if (!(manager instanceof RenewalManager || manager instanceof RenewalService)) {
      throw new TypeError('RenewalDriver needs a RenewalManager or a RenewalService');
    }
    if (typeof transport !== 'function') throw new TypeError('RenewalDriver needs a transport function returning a Promise');
    if (encoding !== 'binary' && encoding !== 'json') throw new RangeError('encoding must be "binary" or "json"');
    this.#manager = manager;
    this.#transport = transport;
    this.#encoding = encoding;
    this.#now = checkClock(now);
    this.#onEvent = onEvent ?? (() => {});
    this.#onError = onError ?? ((e) => queueMicrotask(() => { throw e; }));
    this.#timer = new DeadlineTimer(() => this.#tick(), this.#now, keepAlive);
    this.pump();
  }

  /** The manager driven. */
  get manager() {
    return this.#manager;
  }

  get closed() {
    return this.#timer.closed;
  }

  /** The driver's clock, ms. */
  now() {
    return this.#now();
  }

  /**
   * Asks `landlord` (through the transport) for a lease on `resource` for `duration` ms and
   * resolves to the Lease, counted from the send time. Rejects with the landlord's error.
   */
  async grant(resource, duration, landlord = undefined) {
    const id = this.#grantId++;
    const request = grantRequest(id, resource, duration);
    const sentAt = this.#now();
    const reply = decodeReply(asBytes(await this.#transport(encodeRequest(request, this.#encoding), landlord)), this.#encoding);
    return leaseFromReply(reply, sentAt, this.#manager.config?.maxClockDriftPpm ?? 0);
  }

  /** Renews `lease` until `duration` ms from now, asking for `renewDuration` each time. */
  renewFor(lease, duration, renewDuration) {
    this.#manager.renewFor(lease, duration, renewDuration, this.#now());
    this.pump();
  }

  /** Renews `lease` until `desiredExpiration`, asking for `renewDuration` each time. */
  renewUntil(lease, desiredExpiration, renewDuration) {
    this.#manager.renewUntil(lease, desiredExpiration, renewDuration, this.#now());
    this.pump();
  }

  /** Stops renewing `lease` and cancels it at its landlord. */
  cancel(lease) {
    this.#manager.cancel(lease, this.#now());
    this.pump();
  }

  /** Stops renewing `lease` without cancelling it; returns the manager's copy. */
  remove(lease) {
    const l = this.#manager.remove(lease);
    this.pump();
    return l;
  }

  /** Sends what is due, delivers events and re-arms the timer (after direct manager calls). */
  // The transport and `onEvent` run between calls into the manager, never inside one: they may
  // call the driver or the manager again (renew, cancel, pump, close, free).
  pump() {
    if (this.closed) return;
    const m = this.#manager;
    if (!alive(m)) {
      this.close(); // the manager was freed: nothing left to drive
      return;
    }
    const now = this.#now();
    let t;
    while (!this.closed && alive(m) && (t = m.pollTransmit(now)) !== undefined) this.#send(t);
    let e;
    while (alive(m) && (e = m.pollEvent()) !== undefined) {
      try {
        this.#onEvent(e);
      } catch (err) {
        this.#onError(err);
      }
    }
    if (this.closed) return;
    if (!alive(m)) this.close();
    else this.#timer.arm(m.pollTimeout());
  }

  #send({ landlord, request }) {
    let sent;
    try {
      sent = Promise.resolve(this.#transport(encodeRequest(request, this.#encoding), landlord));
    } catch (err) {
      sent = Promise.reject(err);
    }
    sent.then(
      (bytes) => {
        if (this.closed || !alive(this.#manager)) return;
        let reply;
        try {
          reply = decodeReply(asBytes(bytes), this.#encoding);
        } catch (err) {
          this.#manager.handleFailure(request.id, err, this.#now());
          this.pump();
          return;
        }
        this.#manager.handleReply(reply, this.#now());
        this.pump();
      },
      (err) => {
        if (this.closed || !alive(this.#manager)) return;
        this.#manager.handleFailure(request.id, err, this.#now());
        this.pump();
      },
    );
  }

  #tick() {
    if (alive(this.#manager)) this.#manager.handleTimeout(this.#now());
    this.pump();
  }

  /** Stops the driver: no timer is left, late replies are ignored. The manager stays usable. */
  close() {
    this.#timer.close();
  }

  [Symbol.dispose ?? Symbol.for('Symbol.dispose')]() {
    this.close();
  }
}
