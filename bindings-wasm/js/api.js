// The public API of the `leasehold` package: the WebAssembly classes (Lease, Landlord, ...),
// the error classes, the constants, and the drivers that run the sans-I/O objects on setTimeout.
// No leasing rule lives here: every decision is made by the Rust core.

import * as wasm from './leasehold_wasm.js';
import { makeError } from './errors.js';
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
