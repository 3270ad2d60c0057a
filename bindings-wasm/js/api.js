// The public API of the `leasehold` package: the WebAssembly classes (Lease, Landlord, ...),
// the error classes, the constants, and the drivers that run the sans-I/O objects on setTimeout.
// No leasing rule lives here: every decision is made by the Rust core.

import * as wasm from './leasehold_wasm.js';
import { makeError, IndefiniteError } from './errors.js';
import { DeadlineTimer } from './timer.js';

export {
  ErrorCode,
  LeaseError,
  UnknownLeaseError,
  LeaseDeniedError,
  LeaseMapError,
  DecodeError,
  IndefiniteError,
  InvalidArgumentError,
  ArgumentTypeError,
} from './errors.js';

export const {
  Lease,
  Landlord,
  LeaseMap,
  RenewalManager,
  grantRequest,
  leaseFromReply,
  encodeRequest,
  decodeRequest,
  encodeReply,
  decodeReply,
  errorFromWire,
  wasmMemoryBytes,
  coreVersion,
} = wasm;

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

let installed = false;
/** Called once by the package entry after the WebAssembly module is instantiated. */
export function __install() {
  if (installed) return;
  installed = true;
  wasm.__setErrorFactory(makeError);
  Landlord.prototype[Symbol.iterator] = function () {
    return this.entries()[Symbol.iterator]();
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

  constructor(landlord, { now = defaultNow, onExpired, onError, keepAlive = false } = {}) {
    if (!(landlord instanceof Landlord)) throw new TypeError('LandlordDriver needs a Landlord');
    this.#landlord = landlord;
    this.#now = checkClock(now);
    this.#onExpired = onExpired ?? (() => {});
    this.#onError = onError ?? ((e) => queueMicrotask(() => { throw e; }));
    this.#timer = new DeadlineTimer(() => this.#tick(), this.#now, keepAlive);
    this.update();
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
    if (!this.#timer.closed) this.#timer.arm(this.#landlord.pollTimeout());
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

  /** Cancels a lease at the driver's clock; see `Landlord.cancel`. */
  cancel(cookie) {
    const r = this.#landlord.cancel(cookie, this.#now());
    this.update();
    return r;
  }

  #tick() {
    try {
      this.#landlord.handleTimeout(this.#now());
      let e;
      while ((e = this.#landlord.pollExpired()) !== undefined) {
        try {
          this.#onExpired(e);
        } catch (err) {
          this.#onError(err);
        }
      }
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

function asBytes(x) {
  if (x instanceof Uint8Array || typeof x === 'string') return x;
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  throw new TypeError('a transport must resolve to a Uint8Array, ArrayBuffer or string');
}

/**
 * A transport over HTTP `fetch`: POSTs each encoded request to `url` and resolves to the reply
 * body. HTTP errors and network failures reject (indefinite failures: the manager retries).
 */
export function fetchTransport(url, { fetch: f = globalThis.fetch, headers = {}, encoding = 'binary' } = {}) {
  if (typeof f !== 'function') throw new TypeError('fetchTransport needs fetch');
  const type = encoding === 'json' ? 'application/json' : 'application/octet-stream';
  return async (body) => {
    const res = await f(url, { method: 'POST', body, headers: { 'content-type': type, ...headers } });
    if (!res.ok) throw new IndefiniteError(`HTTP ${res.status} from ${url}`);
    return new Uint8Array(await res.arrayBuffer());
  };
}

/**
 * Runs a RenewalManager on setTimeout with a Promise-returning transport
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
    if (!(manager instanceof RenewalManager)) throw new TypeError('RenewalDriver needs a RenewalManager');
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
    return leaseFromReply(reply, sentAt, this.#manager.config.maxClockDriftPpm);
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
  pump() {
    if (this.closed) return;
    const now = this.#now();
    let t;
    while ((t = this.#manager.pollTransmit(now)) !== undefined) this.#send(t);
    let e;
    while ((e = this.#manager.pollEvent()) !== undefined) {
      try {
        this.#onEvent(e);
      } catch (err) {
        this.#onError(err);
      }
    }
    if (!this.closed) this.#timer.arm(this.#manager.pollTimeout());
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
        if (this.closed) return;
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
        if (this.closed) return;
        this.#manager.handleFailure(request.id, err, this.#now());
        this.pump();
      },
    );
  }

  #tick() {
    this.#manager.handleTimeout(this.#now());
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
