// Renewal sets at a remote lease renewal service (leasehold-server --renewal-shards N, POST
// /renewal; Jini's LR, seed 003): hand leases to a set before going away, take them back,
// register listeners for the set's events, keep the set itself alive.
//
// Thin by design: the set messages are the core's (leasehold::service::wire), encoded and
// checked by the core, and carried by a fetchTransport with `encoding: 'json'` (failover between
// the service's servers, the owner hint, the line between a definite answer and an indefinite
// failure). A set's own lease is a lease like any other, renewed and cancelled with the ordinary
// renew / cancel messages at the service.

import { __encodeMessage, __decodeMessage, encodeRequest, decodeReply, Lease } from './leasehold_wasm.js';
import { LeaseError, LeaseDeniedError, UnknownLeaseError, InvalidArgumentError, DecodeError } from './errors.js';

// JSON by default (what the service's /renewal and its listeners speak unless told otherwise);
// decode takes (data, limits) as before, or (data, encoding, limits).
const codec = (kind) => [
  (m, e = 'json') => __encodeMessage(kind, m, e),
  (b, e, l) => (typeof e === 'string' ? __decodeMessage(kind, b, e, l) : __decodeMessage(kind, b, 'json', e)),
];
/** Set requests (create_set, add, remove, leases, listen, unlisten), JSON object form <-> JSON text or binary. */
export const [encodeSetRequest, decodeSetRequest] = codec('SetRequest');
/** Set replies (set_created, done, removed, leases, registered, error). */
export const [encodeSetReply, decodeSetReply] = codec('SetReply');
/** The events a renewal service POSTs to a listener (expiration_warning, renewal_failure). */
export const [encodeSetEvent, decodeSetEvent] = codec('SetEvent');

const FOREVER_MS = '9223372036854775807';
let ids = 1;
const hex = (b) => Array.from(typeof b === 'string' ? new TextEncoder().encode(b) : b, (x) => x.toString(16).padStart(2, '0')).join('');
const ms = (d) => (d === Infinity ? FOREVER_MS : String(Math.trunc(d)));
const request = (body) => ({ v: 1, id: String(ids++), body });
const asText = (b) => (typeof b === 'string' ? b : new TextDecoder().decode(b instanceof Uint8Array ? b : new Uint8Array(b)));

function needJson(transport) {
  if (typeof transport !== 'function') throw new TypeError('a renewal set needs a transport (fetchTransport(urls, { encoding: "json" }))');
}

/** The reply's body if it is `op`; an error reply throws its error (with the service's words). */
function bodyOf(reply, op) {
  const b = reply.body;
  if (b.op === 'error') {
    const Err = { 1: UnknownLeaseError, 2: LeaseDeniedError, 4: InvalidArgumentError, 5: DecodeError }[b.code];
    throw Err ? new Err(b.message) : new LeaseError(b.message, b.code);
  }
  if (b.op !== op) throw new LeaseError(`expected ${op}, got ${b.op}`);
  return b;
}

async function call(transport, body, landlord) {
  return decodeSetReply(asText(await transport(encodeSetRequest(request(body)), landlord, { endpoint: 'renewal' })));
}

function leaseReply(bytes, op) {
  const r = decodeReply(typeof bytes === 'string' ? bytes : asText(bytes), 'json');
  if (r.body.op === 'error') bodyOf(r, op);
  if (r.body.op !== op) throw new LeaseError(`expected ${op}, got ${r.body.op}`);
  return r.body;
}

const urlList = (urls) => (Array.isArray(urls) ? [...urls] : [urls]).map(String);
const after = (now, d) => (d === Infinity ? Infinity : now + d);
const durationOf = (s) => (s === FOREVER_MS ? Infinity : Number(s));

/**
 * A renewal set at a remote renewal service. Make one with `RemoteSet.create(transport,
 * duration)`, or from a kept `lease` and `number` with `new RemoteSet(transport, lease, number)`.
 * `transport` is a `fetchTransport(urls, { encoding: 'json' })` to the service's servers. Times
 * (`now`) are on the clock of the caller's leases (`Date.now()` by default, the drivers'); the
 * service is told how long a lease has left, never an absolute time.
 */
export class RemoteSet {
  #transport;

  constructor(transport, lease, number) {
    needJson(transport);
    if (!(lease instanceof Lease)) throw new TypeError('a RemoteSet needs its Lease');
    this.#transport = transport;
    /** The set's own lease (landlord: the renewal service; expiration on the caller's clock). */
    this.lease = lease;
    /** The set's number (the `set` of its events). */
    this.number = Number(number);
  }

  /**
   * Creates a set leased for at most `duration` ms (positive, Infinity for FOREVER, or -1 for
   * ANY); its lease counts from `now` (the time the request is sent).
   */
  static async create(transport, duration, { now = Date.now() } = {}) {
    needJson(transport);
    const r = await call(transport, { op: 'create_set', duration: ms(duration) });
    const b = bodyOf(r, 'set_created');
    return new RemoteSet(transport, new Lease(r.landlord, b.cookie, after(now, durationOf(b.duration))), b.set);
  }

  /** The renewal service (16 hex digits) that holds the set. */
  get service() {
    return this.lease.landlord;
  }

  async #ask(body, op) {
    return bodyOf(await call(this.#transport, { ...body, set: this.lease.cookie }, this.service), op);
  }

  /**
   * Hands `lease` to the set: renewed with its landlord (reached at `landlordUrls`, the servers
   * of its cluster) until `membership` ms from now (Infinity: until removed), asking for `renew`
   * ms each time. Adding a lease the set holds updates its membership.
   */
  async add(lease, landlordUrls, { membership = Infinity, renew = 60_000, now = Date.now() } = {}) {
    const remaining = lease.expiration === Infinity ? FOREVER_MS : String(lease.remaining(now));
    const client = { landlord: lease.landlord, cookie: lease.cookie, remaining, urls: urlList(landlordUrls) };
    await this.#ask({ op: 'add', lease: client, membership: ms(membership), renew: ms(renew) }, 'done');
  }

  /**
   * Takes `lease` back (it is not cancelled): the lease as the service last renewed it
   * (`remaining` ms as the reply was written), or `undefined` if the set did not hold it.
   */
  async remove(lease, landlordUrls) {
    const b = await this.#ask({ op: 'remove', landlord: lease.landlord, cookie: lease.cookie, urls: urlList(landlordUrls) }, 'removed');
    return b.lease;
  }

  /** The set's leases with their memberships (wire form: hex ids, decimal strings). */
  async leases() {
    return (await this.#ask({ op: 'leases' }, 'leases')).leases;
  }

  /**
   * Registers `url` for the set's `event` ('expiration_warning', `minWarning` ms before the set's
   * lease expires; 'renewal_failure'): `{ eventId, sequence }`. Events are POSTed to `url` as
   * JSON (`decodeSetEvent`); answer 2xx, or 404/410 to end the registration.
   */
  async listen(event, url, { handback = new Uint8Array(0), minWarning = 0 } = {}) {
    const b = await this.#ask({ op: 'listen', event, min_warning: ms(minWarning), url: String(url), handback: hex(handback) }, 'registered');
    return { eventId: Number(b.event_id), sequence: Number(b.sequence) };
  }

  /** Ends the set's registration for `event`. */
  async unlisten(event) {
    await this.#ask({ op: 'unlisten', event }, 'done');
  }

  /** Renews the set's own lease for `duration` ms (a lease like any other): the duration granted. */
  async renew(duration, { now = Date.now() } = {}) {
    const req = encodeRequest({ id: ids++, body: { op: 'renew', cookie: this.lease.cookie, duration: duration === Infinity ? Infinity : duration } }, 'json');
    const b = leaseReply(await this.#transport(req, this.service), 'renewed');
    const granted = b.duration === Infinity ? Infinity : Number(b.duration);
    this.lease.expiration = after(now, granted);
    return granted;
  }

  /** Cancels the set's lease: the set is destroyed, its leases are no longer renewed (not cancelled). */
  async cancel() {
    const req = encodeRequest({ id: ids++, body: { op: 'cancel', cookie: this.lease.cookie } }, 'json');
    leaseReply(await this.#transport(req, this.service), 'cancelled');
  }
}
