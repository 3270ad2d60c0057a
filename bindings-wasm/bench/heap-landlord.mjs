// What a JavaScript developer who cares about speed writes instead of the package: a Map of
// leases keyed by unguessable cookies (32 hex characters from crypto.getRandomValues, drawn from
// a pooled buffer) and one binary min-heap of deadlines with lazy deletion. A cancel only marks
// the entry; a renewal that extends a lease only rewrites its expiration, and the heap re-files
// the lease when its old deadline comes up (a renewal that shortens it files a new node). Same
// policy as the benchmark's landlord (bounded: ANY gets the default, anything else at most max)
// and the same rules: a lease is honoured up to and including its expiration.

const POOL = 4096;
// Two ASCII hex digits per byte value, as one 16-bit unit (little-endian: first digit first).
const PAIRS = new Uint16Array(256);
for (let i = 0; i < 256; i++) {
  const h = i.toString(16).padStart(2, '0');
  PAIRS[i] = h.charCodeAt(0) | (h.charCodeAt(1) << 8);
}

/**
 * Unguessable cookies: 16 bytes of crypto.getRandomValues (pooled 4 KiB at a time) as 32 hex
 * characters, made in one flat string (a table lookup per byte and one TextDecoder call, the
 * fastest portable way measured; concatenating 16 two-character strings was about twice as slow).
 */
export class HexCookies {
  #pool = new Uint8Array(POOL);
  #at = POOL;
  #chars = new Uint8Array(32);
  #pairs = new Uint16Array(this.#chars.buffer);
  #decoder = new TextDecoder('latin1');

  next() {
    if (this.#at + 16 > POOL) {
      crypto.getRandomValues(this.#pool);
      this.#at = 0;
    }
    const p = this.#pool;
    const at = this.#at;
    this.#at += 16;
    const pairs = this.#pairs;
    for (let i = 0; i < 16; i++) pairs[i] = PAIRS[p[at + i]];
    return this.#decoder.decode(this.#chars);
  }
}

export class HeapLandlord {
  #leases = new Map(); // cookie -> entry {resource, expiration, filed}
  #keys = []; // heap: deadline of each node
  #nodes = []; // heap: entry of each node
  #cookies = new HexCookies();
  #max;
  #default;

  constructor({ max, default: def }) {
    this.#max = max;
    this.#default = def;
  }

  get size() {
    return this.#leases.size;
  }

  #duration(requested) {
    if (requested === -1) return this.#default;
    if (!(requested >= 0)) throw new RangeError('bad duration');
    return Math.min(requested, this.#max);
  }

  #push(key, entry) {
    const keys = this.#keys;
    const nodes = this.#nodes;
    let i = keys.length;
    keys.push(key);
    nodes.push(entry);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (keys[parent] <= key) break;
      keys[i] = keys[parent];
      nodes[i] = nodes[parent];
      i = parent;
    }
    keys[i] = key;
    nodes[i] = entry;
  }

  #pop() {
    const keys = this.#keys;
    const nodes = this.#nodes;
    const top = nodes[0];
    const lastKey = keys.pop();
    const lastNode = nodes.pop();
    const n = keys.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && keys[c + 1] < keys[c]) c++;
        if (keys[c] >= lastKey) break;
        keys[i] = keys[c];
        nodes[i] = nodes[c];
        i = c;
      }
      keys[i] = lastKey;
      nodes[i] = lastNode;
    }
    return top;
  }

  grant(resource, requested, now) {
    const duration = this.#duration(requested);
    const cookie = this.#cookies.next();
    const expiration = now + duration;
    const entry = { cookie, resource, expiration, filed: expiration };
    this.#leases.set(cookie, entry);
    this.#push(expiration, entry);
    return { cookie, duration, expiration };
  }

  renew(cookie, requested, now) {
    const entry = this.#leases.get(cookie);
    if (entry === undefined || entry.expiration < now) throw new Error('unknown lease');
    const duration = this.#duration(requested);
    const expiration = now + duration;
    entry.expiration = expiration;
    if (expiration < entry.filed) {
      entry.filed = expiration; // shortened: file a new node, the old one goes stale
      this.#push(expiration, entry);
    }
    return duration;
  }

  cancel(cookie, now) {
    const entry = this.#leases.get(cookie);
    if (entry === undefined || entry.expiration < now) throw new Error('unknown lease');
    this.#leases.delete(cookie);
    entry.filed = -1; // lazy deletion: its heap node is skipped when it comes up
    return entry.resource;
  }

  /** Removes the leases past expiration at `now`; calls `onExpired(cookie, resource)` for each. */
  expire(now, onExpired) {
    const keys = this.#keys;
    while (keys.length > 0 && keys[0] < now) {
      const key = keys[0];
      const entry = this.#pop();
      if (entry.filed !== key) continue; // cancelled, or a stale node of a shortened lease
      if (entry.expiration >= now) {
        entry.filed = entry.expiration; // extended by a renewal: re-file at the new deadline
        this.#push(entry.expiration, entry);
        continue;
      }
      this.#leases.delete(entry.cookie);
      entry.filed = -1;
      onExpired(entry.cookie, entry.resource);
    }
  }
}
