// The lease renewal service (Jini `LeaseRenewalService`): the calls of the wasm class
// `RenewalService` (made by `machine_class!`), named from a table (see js/machine.js). Every rule
// is the core's; this file only names the calls and gives leases, events and messages the
// package's forms (Lease objects, Error subclasses, request and reply objects).

import { Lease, RenewalService, encodeRequest, decodeReply } from './leasehold_wasm.js';
import { defineCalls, orUndefined } from './machine.js';
import { lease, leaseIn, camel, eventOut, defineRenewals } from './holder.js';

const registration = (r) => ({ ...r, lease: lease(r.lease) });

defineCalls(RenewalService, {
  createSet: ['leaseDuration'], sets: ['-'], setLease: ['set'], setOf: ['lease'],
  add: ['set', 'lease', 'membershipDuration', 'renewDuration'], remove: ['set', 'lease'], leases: ['set'],
  membership: ['set', 'lease'], setExpirationWarningListener: ['set', 'minWarning', 'handback'],
  setRenewalFailureListener: ['set', 'handback'], clearExpirationWarningListener: ['set'],
  clearRenewalFailureListener: ['set'], unknownEvent: ['-', 'eventId'], registrations: ['set'],
  delivered: ['eventId', 'sequence'],
}, {
  createSet: (r) => ({ set: r.set, lease: lease(r.lease) }), setLease: lease, setOf: orUndefined, add: orUndefined,
  remove: lease, leases: (ls) => ls.map(lease), membership: orUndefined, setExpirationWarningListener: registration,
  setRenewalFailureListener: registration, clearExpirationWarningListener: orUndefined,
  clearRenewalFailureListener: orUndefined, registrations: (rs) => rs.map(registration),
}, { lease: leaseIn });

defineRenewals(RenewalService);
const P = RenewalService.prototype;
const { pollEvent, add, remove } = P;
// The hot calls with a Lease object and whole numbers take the typed doors (`__add`,
// `__remove`: the same core input without the data walk); anything else goes through `handle`.
const whole = (x) => Number.isSafeInteger(x) || x === Infinity;
const setNumber = (s) => Number.isSafeInteger(s) && s >= 0;
Object.defineProperty(P, 'id', { configurable: true, get() { return this.handle({ op: 'id' }); } });
Object.defineProperty(P, 'setPolicy', {
  configurable: true,
  get() {
    const policy = (p) => ({ ...p, kind: camel(p.kind), ...(p.inner ? { inner: policy(p.inner) } : {}) });
    return policy(this.handle({ op: 'set_policy' }));
  },
});
Object.assign(P, {
  add(set, l, membershipDuration, renewDuration, now) {
    if (l instanceof Lease && setNumber(set) && whole(membershipDuration) && whole(renewDuration)) {
      return this.__add(set, l, membershipDuration, renewDuration, now);
    }
    return add.call(this, set, l, membershipDuration, renewDuration, now);
  },
  remove(set, l, now) {
    return l instanceof Lease && setNumber(set) ? this.__remove(set, l, now) : remove.call(this, set, l, now);
  },
  handleRequest(request, now) {
    return decodeReply(this.handleBytes(encodeRequest(request), now));
  },
  /** The next set event for a listener, or undefined (the service's events do not depend on `now`). */
  pollEvent(now = 0) {
    const e = pollEvent.call(this, now);
    return e && { ...e, kind: eventOut(e.kind) };
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
