// What users write by hand: a Map of leases and one setTimeout per lease. The baseline of the
// benchmark (bounded policy: ANY gets the default, anything else at most max).
import { randomUUID } from 'node:crypto';

export class PureJsLandlord {
  #leases = new Map();
  #max;
  #default;
  #onExpired;

  constructor({ max, default: def }, onExpired = () => {}) {
    this.#max = max;
    this.#default = def;
    this.#onExpired = onExpired;
  }

  get size() {
    return this.#leases.size;
  }

  #arm(cookie, entry, duration) {
    entry.timer = setTimeout(() => {
      this.#leases.delete(cookie);
      this.#onExpired(cookie, entry.resource);
    }, duration);
  }

  grant(resource, requested) {
    if (!(requested >= 0 || requested === -1)) throw new RangeError('bad duration');
    const duration = requested === -1 ? this.#default : Math.min(requested, this.#max);
    const cookie = randomUUID();
    const expiration = Date.now() + duration;
    const entry = { resource, expiration, timer: null };
    this.#arm(cookie, entry, duration);
    this.#leases.set(cookie, entry);
    return { cookie, duration, expiration };
  }

  renew(cookie, requested) {
    const entry = this.#leases.get(cookie);
    if (entry === undefined) throw new Error('unknown lease');
    const duration = requested === -1 ? this.#default : Math.min(requested, this.#max);
    clearTimeout(entry.timer);
    entry.expiration = Date.now() + duration;
    this.#arm(cookie, entry, duration);
    return duration;
  }

  cancel(cookie) {
    const entry = this.#leases.get(cookie);
    if (entry === undefined) throw new Error('unknown lease');
    clearTimeout(entry.timer);
    this.#leases.delete(cookie);
    return entry.resource;
  }

  close() {
    for (const e of this.#leases.values()) clearTimeout(e.timer);
    this.#leases.clear();
  }
}
