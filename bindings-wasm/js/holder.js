// What a renewal part on the generic layer (the renewal service; see js/service.js) needs in the
// package's forms: leases as Lease objects, renewal requests and replies in their object form,
// errors as Error subclasses. The RenewalManager stays a typed wasm class (src/holder.rs): its
// calls are the holder's hot path, and through `handle` they cost 30 to 250 times more
// (bench/manager.mjs; docs/bindings.md, "Phase B in JavaScript").

import { Lease, RenewalManager, encodeReply, decodeRequest } from './leasehold_wasm.js';
import { makeError } from './errors.js';
import { defineCalls, orUndefined } from './machine.js';

/** A lease from its data form (undefined for none). */
export const lease = (l) => (l == null ? undefined : new Lease(l.landlord, l.cookie, l.expiration));
/** A Lease object as data (anything else as given, for the core to check). */
export const leaseIn = (l) => (l instanceof Lease ? { landlord: l.landlord, cookie: l.cookie, expiration: l.expiration } : l);
/** `renewal_failed` as `renewalFailed`. */
export const camel = (s) => s.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
/** An event's `type`, `lease` and `error` in the package's forms. */
export function eventOut({ type, lease: l, error, ...rest }) {
  const e = { type: camel(type), ...rest };
  if (l) e.lease = lease(l);
  if (error) e.error = makeError('lease', error.code, error.message);
  return e;
}

/**
 * The loop both share: renewal requests out, replies and transport failures in, through
 * `handle` (`names`: which of them; the RenewalManager keeps its typed pollTransmit and handleReply).
 */
export function defineRenewals(Class, names = ['pollTransmit', 'handleReply', 'handleFailure']) {
  const { pollTransmit } = Class.prototype;
  const calls = {
    /** The next renewal request for a landlord, `{landlord, request}`, or undefined. */
    pollTransmit(now) {
      const t = pollTransmit.call(this, now);
      return t && { landlord: t.landlord, request: decodeRequest(t.request) };
    },
    /** A landlord's reply (object form), received at `now`. */
    handleReply(reply, now) {
      this.handle({ op: 'reply', message: encodeReply(reply), encoding: 'binary' }, now);
    },
    /** Request `id` failed in transport (indefinite unless `error` carries a definite `code`). */
    handleFailure(id, error, now) {
      const read = (key) => { try { return error?.[key]; } catch { return undefined; } }; // defensive: a throwing getter is absent
      const m = read('message');
      const message = typeof m === 'string' ? m : typeof error === 'string' ? error : 'transport failure';
      const code = read('code');
      this.handle({ op: 'failure', id, code: Number.isInteger(code) ? code : undefined, message }, now);
    },
  };
  for (const name of names) Class.prototype[name] = calls[name];
}

// The RenewalManager's calls off the hot path go through `handle` (the core's `ManagerInput`);
// renewFor, remove, lease and the renewal loop stay typed methods of the wasm class.
defineCalls(RenewalManager, {
  renewUntil: ['lease', 'desiredExpiration', 'renewDuration'], cancel: ['lease'], expiration: ['-', 'lease'],
  setExpiration: ['lease', 'desiredExpiration'], renewDuration: ['-', 'lease'], nextRenewal: ['-', 'lease'],
  rtt: ['-', 'landlord'], leases: ['-'],
}, { nextRenewal: orUndefined, rtt: orUndefined, leases: (ls) => ls.map(lease) }, { lease: leaseIn });
for (const op of ['stats', 'config']) Object.defineProperty(RenewalManager.prototype, op, { configurable: true, get() { return this.handle({ op }); } });
defineRenewals(RenewalManager, ['handleFailure']);
