// The lease renewal service (Jini `LeaseRenewalService`): the calls of the wasm class
// `RenewalService` (made by `machine_class!`), named from a table (see js/machine.js). Every rule
// is the core's; this file only names the calls and gives leases, events and messages the
// package's forms (Lease objects, Error subclasses, request and reply objects).

import { RenewalService, Lease, encodeRequest, decodeRequest, encodeReply, decodeReply } from './leasehold_wasm.js';
import { defineCalls, orUndefined } from './machine.js';
import { makeError } from './errors.js';

const lease = (l) => (l == null ? undefined : new Lease(l.landlord, l.cookie, l.expiration));
const registration = (r) => ({ ...r, lease: lease(r.lease) });
const camel = (s) => s.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
const leaseIn = (l) => (l instanceof Lease ? { landlord: l.landlord, cookie: l.cookie, expiration: l.expiration } : l);

defineCalls(RenewalService, {
  createSet: ['leaseDuration'], sets: ['-'], setLease: ['set'], setOf: ['lease'],
  add: ['set', 'lease', 'membershipDuration', 'renewDuration'], remove: ['set', 'lease'], leases: ['set'],
  membership: ['set', 'lease'], setExpirationWarningListener: ['set', 'minWarning', 'handback'],
  setRenewalFailureListener: ['set', 'handback'], clearExpirationWarningListener: ['set'],
  clearRenewalFailureListener: ['set'], unknownEvent: ['-', 'eventId'], registrations: ['set'],
}, {
  createSet: (r) => ({ set: r.set, lease: lease(r.lease) }), setLease: lease, setOf: orUndefined, add: orUndefined,
  remove: lease, leases: (ls) => ls.map(lease), membership: orUndefined, setExpirationWarningListener: registration,
  setRenewalFailureListener: registration, clearExpirationWarningListener: orUndefined,
  clearRenewalFailureListener: orUndefined, registrations: (rs) => rs.map(registration),
}, { lease: leaseIn });

const P = RenewalService.prototype;
const { pollTransmit, pollEvent } = P;
Object.defineProperty(P, 'id', { configurable: true, get() { return this.handle({ op: 'id' }); } });
Object.defineProperty(P, 'setPolicy', {
  configurable: true,
  get() {
    const policy = (p) => ({ ...p, kind: camel(p.kind), ...(p.inner ? { inner: policy(p.inner) } : {}) });
    return policy(this.handle({ op: 'set_policy' }));
  },
});
Object.assign(P, {
  handleRequest(request, now) {
    return decodeReply(this.handleBytes(encodeRequest(request), now));
  },
  handleReply(reply, now) {
    this.handle({ op: 'reply', message: encodeReply(reply), encoding: 'binary' }, now);
  },
  handleFailure(id, error, now) {
    const message = typeof error?.message === 'string' ? error.message : typeof error === 'string' ? error : 'transport failure';
    const code = Number.isInteger(error?.code) ? error.code : undefined;
    this.handle({ op: 'failure', id, code, message }, now);
  },
  /** The next renewal request for a client lease's landlord, `{landlord, request}`, or undefined. */
  pollTransmit(now) {
    const t = pollTransmit.call(this, now);
    return t && { landlord: t.landlord, request: decodeRequest(t.request) };
  },
  /** The next set event for a listener, or undefined (the service's events do not depend on `now`). */
  pollEvent(now = 0) {
    const e = pollEvent.call(this, now);
    if (e === undefined) return e;
    const { type, lease: l, error, ...rest } = e.kind;
    const kind = { type: camel(type), ...rest };
    if (l) kind.lease = lease(l);
    if (error) kind.error = makeError('lease', error.code, error.message);
    return { ...e, kind };
  },
  set(id) {
    return new RenewalSet(this, id);
  },
});

/**
 * A handle on one set of a RenewalService (Jini `LeaseRenewalSet`): the same calls with the set
 * filled in. Get one with `service.set(id)`.
 */
export class RenewalSet {
  #service;
  #id;
  constructor(service, id) {
    if (!(service instanceof RenewalService)) throw new TypeError('RenewalSet needs a RenewalService');
    this.#service = service;
    this.#id = id;
  }
  get id() {
    return this.#id;
  }
  get service() {
    return this.#service;
  }
  /** The set's own lease at `now`, or undefined once the set is gone. */
  lease(now) {
    return this.#service.setLease(this.#id, now);
  }
  renewFor(lease, membershipDuration, renewDuration, now) {
    return this.#service.add(this.#id, lease, membershipDuration, renewDuration, now);
  }
}
for (const name of ['remove', 'leases', 'membership', 'setExpirationWarningListener', 'setRenewalFailureListener',
  'clearExpirationWarningListener', 'clearRenewalFailureListener', 'registrations']) {
  RenewalSet.prototype[name] = function (...args) {
    return this.service[name](this.id, ...args);
  };
}
