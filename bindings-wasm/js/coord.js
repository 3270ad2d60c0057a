// Coordinating with leases: the Fence a protected resource checks tokens with, the coordination
// messages, and the lock / elect / observe recipes over fetchTransport (POST /coord). Every rule
// (exclusivity, waiting in line, tokens, watches, when to renew) is the core's: the recipes carry
// messages (their JSON object form, encoded by the core) and keep leases renewed with the core's
// RenewalManager on a RenewalDriver.

import {
  FenceMachine, RenewalManager, __encodeMessage, __decodeMessage, __acquiredLease, encodeRequest, decodeReply,
} from './leasehold_wasm.js';
import { LeaseError, LeaseDeniedError, IndefiniteError, UnknownLeaseError, ErrorCode } from './errors.js';

const codec = (kind) => [(m, e = 'binary') => __encodeMessage(kind, m, e), (b, e = 'binary', l) => __decodeMessage(kind, b, e, l)];
/** Coordination requests (acquire, watch, poll, holders), JSON object form <-> bytes. */
export const [encodeCoordRequest, decodeCoordRequest] = codec('CoordRequest');
/** Coordination replies (acquired, watching, events, holders, error). */
export const [encodeCoordReply, decodeCoordReply] = codec('CoordReply');

/** A Fence refused a token older than the highest it accepted. */
export class FencedError extends LeaseError {
  constructor(token, highest) {
    super(`fenced: token ${token} is older than ${highest}, the highest this resource has accepted`, ErrorCode.LEASE_DENIED);
    this.token = token;
    this.highest = highest;
  }
}

/**
 * The resource's side of fencing tokens (the core's Fence): it accepts an operation only with a
 * token at least the highest it has accepted, and then remembers it. Tokens are numbers (or
 * BigInts beyond 2^53).
 */
export class Fence {
  #m;

  constructor(highest = 0) {
    this.#m = new FenceMachine({ highest });
  }

  /** A fence from `snapshot()` text. */
  static restore(snapshot) {
    const f = new Fence();
    f.#m.free();
    f.#m = FenceMachine.restore(snapshot);
    return f;
  }

  /** The fence as JSON text (`{"highest":"7"}`). */
  snapshot() {
    return this.#m.snapshot();
  }

  /** Accepts `token` (and remembers it), or throws FencedError. */
  check(token) {
    const r = this.#m.handle({ op: 'check', token });
    if (!r.accepted) throw new FencedError(r.token, r.highest);
  }

  /** Whether `token` would be accepted (nothing changes). */
  admits(token) {
    return this.#m.handle({ op: 'admits', token });
  }

  /** The highest token accepted so far. */
  get highest() {
    return this.#m.handle({ op: 'highest' });
  }

  /** Frees the WebAssembly memory now. */
  free() {
    this.#m.free();
  }
}

let ids = 1;
const hex = (b) => Array.from(typeof b === 'string' ? new TextEncoder().encode(b) : b, (x) => x.toString(16).padStart(2, '0')).join('');
const unhex = (h) => Uint8Array.from(h.match(/../g) ?? [], (x) => parseInt(x, 16));
const big = (s) => (BigInt(s) <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(s) : BigInt(s));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Longest a single request asks a server to hold it, ms (a vanished server costs at most this). */
const MOST_HELD = 20_000;

function request(body) {
  return { v: 1, id: String(ids++), body };
}

/** The reply's body if it is `op`; an error reply throws its error. */
function bodyOf(reply, op) {
  const b = reply.body;
  if (b.op === 'error') {
    const Err = { 1: UnknownLeaseError, 2: LeaseDeniedError }[b.code];
    throw Err ? new Err(b.message) : new LeaseError(b.message, b.code);
  }
  if (b.op !== op) throw new LeaseError(`expected ${op}, got ${b.op}`);
  return b;
}

async function call(transport, encoding, body, landlord, wait = 0, onAttempt) {
  const bytes = await transport(encodeCoordRequest(request(body), encoding), landlord, { endpoint: 'coord', wait, onAttempt });
  return decodeCoordReply(bytes instanceof Uint8Array || typeof bytes === 'string' ? bytes : new Uint8Array(bytes), encoding);
}

/**
 * An exclusive resource held (see `lock`): `token`, `resource`, `landlord`, `safeUntil()`,
 * `held`, `release()`; `await using` / `using` release it.
 */
class Lock {
  #driver;
  #lease;
  #released = false;

  constructor(driver, lease, body, landlord) {
    this.#driver = driver;
    this.#lease = lease;
    /** The fencing token: pass it with every operation on the protected resource. */
    this.token = big(body.token);
    /** What is held (a pool's member, if a pool was acquired). */
    this.resource = unhex(body.resource);
    /** The landlord (16 hex digits). */
    this.landlord = landlord;
  }

  /** The lease (as first granted). */
  get lease() {
    return this.#lease;
  }

  /**
   * Until when (the driver's clock, `driver.now()`) the lease is known held: its expiration as
   * last granted, counted from the request's send time plus its wait, less the drift allowed;
   * `undefined` once lost or released.
   */
  safeUntil() {
    if (this.#released) return undefined;
    const l = this.#driver.manager.lease(this.#lease);
    return l === undefined ? undefined : l.expiration;
  }

  /** Whether the lease is known held now. */
  get held() {
    const t = this.safeUntil();
    return t !== undefined && this.#driver.now() < t;
  }

  /** Stops renewing and cancels the lease, waiting for the landlord's answer (the next waiter
   * gets it at once); a lease already gone is not an error. */
  async release() {
    if (this.#released) return;
    this.#released = true;
    try {
      this.#driver.remove(this.#lease);
    } catch {} // not managed any more (lost)
    try {
      const req = encodeRequest({ id: ids++, body: { op: 'cancel', cookie: this.#lease.cookie } }, this.encoding);
      const reply = decodeReply(await this.transport(req, this.landlord), this.encoding);
      if (reply.body.op === 'error' && reply.body.code !== 1) bodyOf(reply, 'cancelled');
    } finally {
      if (this.own) this.#driver.close();
    }
  }

  [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    return this.release();
  }

  [Symbol.dispose ?? Symbol.for('Symbol.dispose')]() {
    this.release();
  }
}

/**
 * Acquires the exclusive resource `name` through `transport` (a `fetchTransport` to
 * leasehold-servers), waiting up to `wait` ms if it is held (first come first served), and keeps
 * its lease (`lease` ms at a time) renewed on `driver` (a RenewalDriver over the same transport;
 * without one, a driver of its own that stops on release). Held by someone else:
 * LeaseDeniedError (the message says until when at most). While no server answers it retries
 * until the wait is over, then rejects with IndefiniteError.
 */
export async function lock(transport, name, { wait = 0, lease = 10_000, holder = '', driver, encoding = 'binary', maxClockDriftPpm = 100 } = {}) {
  if (typeof transport !== 'function') throw new TypeError('lock needs a transport (fetchTransport)');
  const { RenewalDriver } = await import('./api.js');
  const d = driver ?? new RenewalDriver(new RenewalManager({ maxClockDriftPpm }), { transport, encoding });
  const deadline = Date.now() + wait;
  for (;;) {
    const left = Math.max(0, deadline - Date.now());
    const held = Math.min(left, MOST_HELD);
    // The lease counts from when the answered attempt went out: after a failover (an attempt
    // that timed out, perhaps held for the wait) the first attempt's time could leave the lock
    // already over when returned. A transport that does not call onAttempt leaves the first.
    let sentAt = d.now();
    let reply;
    try {
      reply = await call(transport, encoding, { op: 'acquire', resource: hex(name), duration: String(lease), wait: String(held), holder: hex(holder) }, undefined, held, () => { sentAt = d.now(); });
      bodyOf(reply, 'acquired');
    } catch (err) {
      if (err instanceof IndefiniteError && Date.now() < deadline) {
        await sleep(100);
        continue;
      }
      if (err instanceof LeaseDeniedError && Date.now() < deadline) continue;
      if (!driver) d.close();
      throw err;
    }
    const l = __acquiredLease(reply, sentAt, maxClockDriftPpm);
    const out = new Lock(d, l, reply.body, reply.landlord);
    out.own = !driver;
    out.transport = transport;
    out.encoding = encoding;
    d.renewFor(l, Infinity, lease);
    return out;
  }
}

/**
 * Campaigns for `name` with `value` (what observers see): waits in line until this process
 * leads, or `giveUp` ms passed (default: for ever). The leadership is a lock on the name (its
 * token is the leader's fencing token); `release()` resigns and the next candidate leads at once.
 */
export async function elect(transport, name, value, { giveUp, lease = 10_000, driver, encoding = 'binary' } = {}) {
  const start = Date.now();
  for (;;) {
    const left = giveUp === undefined ? 3_600_000 : Math.max(0, giveUp - (Date.now() - start));
    try {
      return await lock(transport, name, { wait: left, lease, holder: value, driver, encoding });
    } catch (err) {
      const retry = err instanceof LeaseDeniedError || err instanceof IndefiniteError;
      if (!retry || (giveUp !== undefined && Date.now() - start >= giveUp)) throw err;
    }
  }
}

const leaderOf = (holders) => (holders.length ? { token: big(holders[0].token), value: unhex(holders[0].holder) } : undefined);

/** Follows an election's leader through a watch on its name (see `observe`). */
class Observer {
  #transport;
  #encoding;
  #name;
  #leaseMs;
  #landlord;
  #cookie;
  #renewed = 0;
  #watching = false;
  /** The number of the last event applied. */
  lastEvent = 0;
  /** The leader as last seen (`undefined`: none): `{token, value}`. */
  leader = undefined;

  constructor(transport, name, leaseMs, encoding) {
    this.#transport = transport;
    this.#name = name;
    this.#leaseMs = leaseMs;
    this.#encoding = encoding;
  }

  async register() {
    const r = await call(this.#transport, this.#encoding, { op: 'watch', resource: hex(this.#name), prefix: false, renewals: false, duration: String(this.#leaseMs), handback: '' });
    const b = bodyOf(r, 'watching');
    this.#landlord = r.landlord;
    this.#cookie = b.cookie;
    this.lastEvent = big(b.sequence);
    this.leader = leaderOf(b.current);
    this.#watching = true;
    this.#renewed = Date.now();
  }

  async #renew() {
    const req = encodeRequest({ id: ids++, body: { op: 'renew', cookie: this.#cookie, duration: this.#leaseMs } }, this.#encoding);
    try {
      const reply = decodeReply(await this.#transport(req, this.#landlord), this.#encoding);
      if (reply.body.op === 'error' && reply.body.code === 1) this.#watching = false;
      else this.#renewed = Date.now();
    } catch (err) {
      if (!(err instanceof IndefiniteError)) throw err;
    }
  }

  #apply(r) {
    const b = r.body;
    if (b.op === 'error' && b.code === 1) {
      this.#watching = false; // the watch ran out: make it again
      return;
    }
    bodyOf(r, 'events');
    if (b.missed) {
      this.lastEvent = big(b.missed.to);
      this.leader = leaderOf(b.current ?? []);
    }
    for (const ev of b.events) {
      this.lastEvent = big(ev.sequence);
      const token = big(ev.token);
      if (ev.kind === 'granted') this.leader = { token, value: unhex(ev.holder) };
      else if ((ev.kind === 'cancelled' || ev.kind === 'expired') && this.leader?.token === token) this.leader = undefined;
    }
  }

  /**
   * Waits up to `timeout` ms for the leader to change; resolves true if it changed (read
   * `leader`). Every event is applied in order; if the watch missed some, the leader is read
   * again from what the landlord holds; a watch that ran out is made again.
   */
  async next(timeout) {
    const deadline = Date.now() + timeout;
    const before = this.leader;
    for (;;) {
      if (!this.#watching) await this.register();
      else if (Date.now() - this.#renewed > this.#leaseMs / 3) {
        await this.#renew();
        continue;
      }
      const wait = Math.min(Math.max(0, deadline - Date.now()), MOST_HELD);
      try {
        this.#apply(await call(this.#transport, this.#encoding, { op: 'poll', cookie: this.#cookie, since: String(this.lastEvent), wait: String(wait), max: 0 }, this.#landlord, wait));
      } catch (err) {
        if (!(err instanceof IndefiniteError)) throw err;
        await sleep(100);
      }
      if (this.leader?.token !== before?.token) return true;
      if (Date.now() >= deadline) return false;
    }
  }

  /** Ends the watch. */
  async close() {
    if (!this.#cookie) return;
    const req = encodeRequest({ id: ids++, body: { op: 'cancel', cookie: this.#cookie } }, this.#encoding);
    await this.#transport(req, this.#landlord).catch(() => {});
  }

  [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    return this.close();
  }
}

/** Follows the leader of election `name` (the holder of any exclusive resource) through a watch
 * whose lease (`lease` ms) it renews as it polls. */
export async function observe(transport, name, { lease = 30_000, encoding = 'binary' } = {}) {
  const o = new Observer(transport, name, lease, encoding);
  await o.register();
  return o;
}
