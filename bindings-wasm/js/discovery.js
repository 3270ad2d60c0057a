// DiscoveryDriver: runs a DiscoveryService (the lookup discovery service of the Rust core) on
// timers and Promises. Every rule (what to discover, discard, retry, when leases end) is the
// core's; the driver only moves things: announcements and unicast results in, probes and events
// out to the host's callbacks, and (for a durable service) nothing out before it is on disk.

import {
  DiscoveryService, Lease, __encodeMessage, __decodeMessage, encodeRequest, decodeReply,
} from './leasehold_wasm.js';
import { DeadlineTimer } from './timer.js';
import { defineCalls, orUndefined } from './machine.js';
import { StoreWriter, closeWriter, openKept } from './store.js';
import { __resolveStore, __checkClock, __alive } from './api.js';

const OPEN = Symbol('DiscoveryDriver.open');

/** `null` as groups: every group (Jini's `ALL_GROUPS`). */
export const ALL_GROUPS = null;
/** `[]` as groups: no group (Jini's `NO_GROUPS`). */
export const NO_GROUPS = Object.freeze([]);

const text = new TextDecoder();
const lease = (l) => new Lease(l.landlord, l.cookie, l.expiration);
const big = (s) => (BigInt(s) <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(s) : BigInt(s));

// The service's calls: each is `handle({op, ...}, now)` on the core (see js/machine.js).
defineCalls(DiscoveryService, {
  registrations: ['-'], discovered: ['-'], registrationOf: ['cookie'], listener: ['-', 'registration'],
  lease: ['registration'], eventRegistration: ['registration'], registrars: ['registration'],
  groups: ['registration'], locators: ['registration'], discard: ['registration', 'registrar'],
  addGroups: ['registration', 'groups'], setGroups: ['registration', 'groups'], removeGroups: ['registration', 'groups'],
  addLocators: ['registration', 'locators'], setLocators: ['registration', 'locators'],
  removeLocators: ['registration', 'locators'], setListener: ['registration', 'listener'],
  handleAnnouncement: ['=announcement', 'announcement'], handleDatagram: ['=datagram', 'datagram'],
  registrarUnreachable: ['=unreachable', 'registrar'], delivered: ['eventId', 'sequence'],
}, {
  lease, eventRegistration: (r) => ({ ...r, lease: lease(r.lease) }), registrationOf: orUndefined, listener: orUndefined,
});
Object.defineProperty(DiscoveryService.prototype, 'id', { get() { return this.handle({ op: 'id' }); } });
Object.assign(DiscoveryService.prototype, {
  register(groups, locators, handback, leaseDuration, now) {
    const r = this.handle({ op: 'register', groups, locators, handback, leaseDuration }, now);
    return { registration: r.id, lease: lease(r.lease), eventRegistration: { ...r.event, lease: lease(r.event.lease) } };
  },
  unicastFound(request, found, now) {
    if (found instanceof Uint8Array) return this.handle({ op: 'unicast_datagram', request, datagram: found }, now);
    return this.handle({ op: 'unicast_found', request, found }, now);
  },
  unicastFailed(request, now, reason) {
    return this.handle({ op: 'unicast_failed', request, reason }, now);
  },
  deliveryFailed(eventId, sequence, failure, now) {
    const f = typeof failure === 'string' ? { kind: failure } : failure;
    const kind = String(f?.kind).replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    const message = kind === 'unknown_event' ? undefined : (f.message ?? '');
    return this.handle({ op: 'delivery_failed', eventId, sequence, failure: { kind, message } }, now);
  },
  handleEventReply(message, now, encoding = 'binary') {
    return this.handle({ op: 'serve', protocol: 'event_reply', message, encoding }, now);
  },
  handleBytes(message, now, encoding = 'binary') {
    return this.handle({ op: 'serve', protocol: 'lease', message, encoding }, now);
  },
  handleDiscoveryBytes(message, now, encoding = 'binary', listener = undefined) {
    return this.handle({ op: 'serve', protocol: 'discovery', message, encoding, listener }, now);
  },
  handleRequest(request, now) {
    return decodeReply(this.handleBytes(encodeRequest(request), now));
  },
});

// The discovery messages in their JSON object form (as the shared vectors write them).
const codec = (kind) => [(m, e) => __encodeMessage(kind, m, e), (b, e, l) => __decodeMessage(kind, b, e, l)];
export const [encodeDiscoveryRequest, decodeDiscoveryRequest] = codec('DiscoveryRequest');
export const [encodeDiscoveryReply, decodeDiscoveryReply] = codec('DiscoveryReply');
export const [encodeDiscoveryEvent, decodeDiscoveryEvent] = codec('DiscoveryEvent');
export const [encodeEventReply, decodeEventReply] = codec('EventReply');

/** An event message a listener received, in the camelCase form `pollEvent` gives (without `listener`). */
export function discoveryEventFromBytes(bytes, encoding, limits) {
  const m = decodeDiscoveryEvent(bytes, encoding, limits);
  const handback = new Uint8Array((m.handback.match(/../g) ?? []).map((h) => parseInt(h, 16)));
  const source = { service: m.source.service, object: big(m.source.object) };
  return { eventId: big(m.event_id), source, sequence: big(m.sequence), handback, discarded: m.discarded, registrars: m.registrars };
}

/**
 * Drives a `DiscoveryService`: `handleTimeout` at the deadlines it asks for, unicast probes to
 * `probe(locator)` and events to `deliver(event, listener)`, each reported back to the service.
 *
 * - `deliver(event, listener)`: sends one event to the registration's listener (`listener`:
 *   the text stored with `setListener`, e.g. a URL). Resolve with nothing (received) or with a
 *   `DeliveryFailure` (`{kind: "unknownEvent"}` cancels the registration); a rejection is an
 *   indefinite failure, retried until the registration's lease ends.
 * - `probe(locator)`: unicast discovery of `"host:port"`. Resolve with the announcement
 *   datagram read there (a `Uint8Array`) or `{registrar, groups}`; reject if it failed.
 *
 * Every method resolves with the service's answer (or rejects with its `Error` subclass); for a
 * durable driver (`DiscoveryDriver.open`) only once the records behind it are on disk, and no
 * event or probe leaves before that either. The callbacks never run inside a service call.
 */
export class DiscoveryDriver {
  #service;
  #writer;
  #now;
  #timer;
  #deliver;
  #probe;
  #onError;
  #recovery;
  #closing = null;
  #inFlight = 0;

  constructor(service, { now = Date.now, deliver, probe, onError, keepAlive = false } = {}, token, host, recovery) {
    if (!(service instanceof DiscoveryService)) throw new TypeError('DiscoveryDriver drives a DiscoveryService');
    if (service.durable && token !== OPEN) throw new TypeError('a durable service is driven by the driver DiscoveryDriver.open made');
    if (typeof deliver !== 'function') throw new TypeError('DiscoveryDriver needs deliver(event, listener) => Promise');
    this.#service = service;
    this.#now = __checkClock(now);
    this.#deliver = deliver;
    this.#probe = probe ?? ((locator) => Promise.reject(new Error(`no probe: cannot reach ${locator}`)));
    this.#onError = onError ?? ((e) => queueMicrotask(() => { throw e; }));
    this.#recovery = recovery;
    this.#writer = token === OPEN ? new StoreWriter(service, host, { onError: (e) => this.#onError(e) }) : null;
    this.#timer = new DeadlineTimer(() => this.#tick(), this.#now, keepAlive);
    this.#tick();
  }

  /**
   * Opens (or creates) a durable discovery service in `store` (a directory in Node, an
   * IndexedDB name in browsers, or a store object) and drives it. `service`: the
   * `DiscoveryServiceOptions` (a new store takes them all; an existing one keeps its id and
   * seed, which must match, and takes the rest). Registrations, their sets, registrars, event
   * ids and sequence numbers survive a crash; an event not yet acknowledged is delivered again
   * with the same sequence number.
   */
  static async open({ store, service, segmentBytes, minCompactBytes, now = Date.now, ...options } = {}) {
    __checkClock(now);
    const host = await __resolveStore(store);
    return openKept(host, (files) => DiscoveryService.__openStore(files, service, { segmentBytes, minCompactBytes }, now()),
      (svc, recovery) => new DiscoveryDriver(svc, { now, ...options }, OPEN, host, recovery));
  }

  /** The service driven. */
  get service() {
    return this.#service;
  }

  /** What opening the store found (`{created, replayed, torn?, journalSeq}`), for a durable driver. */
  get recovery() {
    return this.#recovery;
  }

  /** Deliveries and probes under way. */
  get inFlight() {
    return this.#inFlight;
  }

  get closed() {
    return this.#closing !== null;
  }

  /** The driver's clock, ms. */
  now() {
    return this.#now();
  }

  /**
   * Runs `f(service, now)` and resolves with its result once it may leave (at once, or once
   * durable), then lets the driver see what it changed. The named methods below use it.
   */
  async run(f) {
    if (this.closed) throw new Error('the DiscoveryDriver is closed');
    let result;
    let error;
    let failed = false;
    try {
      result = f(this.#service, this.#now());
    } catch (err) {
      failed = true;
      error = err;
    }
    this.#pump();
    if (this.#writer) await this.#writer.durable();
    if (failed) throw error;
    return result;
  }

  /** Registers (see `DiscoveryService.register`); `listener` (optional) is stored with it for `deliver`. */
  register(groups, locators, handback, leaseDuration, listener) {
    return this.run((s, now) => {
      const r = s.register(groups, locators, handback, leaseDuration, now);
      if (listener !== undefined) s.setListener(r.registration, listener, now);
      return r;
    });
  }

  /** Answers an encoded discovery request (what `POST /discovery` received); resolves with the reply bytes. */
  serveDiscovery(bytes, encoding = 'binary') {
    return this.run((s, now) => s.handleDiscoveryBytes(bytes, now, encoding));
  }

  /** Answers an encoded lease request about a registration lease (renew, cancel). */
  serve(bytes, encoding = 'binary') {
    return this.run((s, now) => s.handleBytes(bytes, now, encoding));
  }

  /** A received announcement: the datagram (`Uint8Array`) or an `Announcement`. */
  announce(announcement) {
    return this.run((s, now) => (announcement instanceof Uint8Array
      ? s.handleDatagram(announcement, now) : s.handleAnnouncement(announcement, now)));
  }

  /** The host found `registrar` unreachable (a passive discard). */
  unreachable(registrar) {
    return this.run((s, now) => s.registrarUnreachable(registrar, now));
  }

  /** Re-arms the timer after the service was changed directly. */
  update() {
    this.#pump();
  }

  /** Resolves once everything recorded so far is durable (at once without a store). */
  sync() {
    return this.#writer ? this.#writer.durable() : Promise.resolve();
  }

  // Advances the service, then hands out what is due: probes and events leave only once the
  // records behind them are durable.
  #tick() {
    const s = this.#service;
    if (this.closed || !__alive(s)) return;
    try {
      s.handleTimeout(this.#now());
    } catch (err) {
      this.#onError(err);
    }
    this.#pump();
  }

  #pump() {
    const s = this.#service;
    if (this.closed) return;
    if (!__alive(s)) {
      this.#timer.close();
      return;
    }
    const out = [];
    try {
      const now = this.#now();
      let t;
      while ((t = s.pollTransmit(now)) !== undefined) {
        const probe = t;
        out.push(() => this.#runProbe(probe));
      }
      let e;
      while ((e = s.pollEvent(now)) !== undefined) {
        const ev = e;
        out.push(() => this.#runDelivery(ev, text.decode(ev.listener)));
      }
      const d = s.pollTimeout();
      this.#timer.arm(d);
    } catch (err) {
      this.#onError(err);
    }
    if (out.length === 0) {
      this.#writer?.kick();
      return;
    }
    const go = () => { for (const f of out) f(); };
    if (this.#writer) this.#writer.after(go);
    else queueMicrotask(go);
  }

  async #runProbe(t) {
    if (this.closed) return;
    this.#inFlight++;
    let found;
    let failure;
    try {
      found = await this.#probe(t.locator);
    } catch (err) {
      failure = String(err?.message ?? err);
    }
    this.#inFlight--;
    if (this.closed || !__alive(this.#service)) return;
    try {
      if (failure === undefined) this.#service.unicastFound(t.id, found, this.#now());
      else this.#service.unicastFailed(t.id, this.#now(), failure);
    } catch (err) {
      // A garbled answer counts as a failed probe.
      this.#service.unicastFailed(t.id, this.#now(), String(err?.message ?? err));
    }
    this.#pump();
  }

  async #runDelivery(e, listener) {
    if (this.closed) return;
    this.#inFlight++;
    let failure;
    try {
      failure = (await this.#deliver(e, listener)) ?? undefined;
    } catch (err) {
      failure = { kind: 'indefinite', message: String(err?.message ?? err) };
    }
    this.#inFlight--;
    if (this.closed || !__alive(this.#service)) return;
    try {
      if (failure === undefined) this.#service.delivered(e.eventId, e.sequence, this.#now());
      else this.#service.deliveryFailed(e.eventId, e.sequence, failure, this.#now());
    } catch (err) {
      this.#onError(err);
    }
    this.#pump();
  }

  /** Stops the timer; a durable driver writes what is pending and closes its store. */
  close() {
    if (this.#closing) return this.#closing;
    this.#timer.close();
    this.#closing = this.#writer ? closeWriter(this.#writer) : Promise.resolve();
    return this.#closing;
  }

  [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    return this.close();
  }
}
