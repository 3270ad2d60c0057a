// The landlord side of `leasehold/tabs`: one core Landlord per lease name (capacity 1, so at most
// one tab holds a name at a time), expired on time by a LandlordDriver, answering the wire requests
// that tabs send. It runs in the SharedWorker (tabs-worker.js) or, where SharedWorker is missing,
// in the tab that the fallback elects with Web Locks (tabs.js).
//
// No leasing rule lives here: the core landlord grants, renews, cancels and expires; this file
// routes bytes, remembers which tab sent which grant (to say who leads) and keeps a log of what
// the landlord did, with times on this context's clock.

import { Landlord, LandlordDriver, Policy, decodeRequest, encodeReply } from './browser.js';

/** The longest lease a tab may ask for (a grant never exceeds what was asked). */
export const MAX_LEASE_MS = 10 * 60_000;
/** The lease granted to a tab that asks for ANY. */
export const DEFAULT_LEASE_MS = 5_000;
/** Lock names (Web Locks) shared by tabs.js, the worker and the fallback. */
export const LOCK_PREFIX = 'leasehold-tabs';

/** A monotonic clock in integer ms, roughly epoch-aligned (performance.timeOrigin + now()). */
export function monotonicNow() {
  return Math.floor(performance.timeOrigin + performance.now());
}

const utf8 = new TextDecoder();
const NO_LANDLORD = '0000000000000000';

function randomLandlordId() {
  const b = new Uint32Array(2);
  do crypto.getRandomValues(b);
  while (b[0] === 0 && b[1] === 0);
  return [...b].map((x) => x.toString(16).padStart(8, '0')).join('');
}

function errorReply(id, code, message, landlord = NO_LANDLORD) {
  return encodeReply({ id, landlord, body: { op: 'error', code, message } });
}

/**
 * Serves leases to tabs. `clients` are objects `{id, post(message)}` the caller creates per
 * connected tab; messages come in through `receive(client, message)`.
 */
export class TabsHost {
  #now;
  #store;
  #names = new Map(); // lease name -> Entry
  #byLandlord = new Map(); // landlord id -> Entry
  #clients = new Map(); // tab id -> client
  #wakes = new Map(); // tab id -> timer
  #log = [];
  #logLimit;
  #seq = 0;
  #stats = { requests: 0, denied: 0 };
  #closed = false;
  /** This host's instance id (changes when the worker restarts). */
  instance = randomLandlordId();

  /**
   * `now`: the clock (ms); `store`: optional `{load(): state | undefined, save(state)}` that keeps
   * every landlord's snapshot (the fallback uses localStorage so that the next landlord tab
   * restores the leases); `logLimit`: events kept for `log` requests.
   */
  constructor({ now = monotonicNow, store, logLimit = 5000 } = {}) {
    this.#now = now;
    this.#store = store;
    this.#logLimit = logLimit;
    const saved = store?.load();
    if (saved) this.#restore(saved);
  }

  /** A tab said hello: remember it, and watch its lock so that its leases go when it does. */
  attach(client) {
    const old = this.#clients.get(client.id);
    this.#clients.set(client.id, client);
    if (!old && typeof navigator !== 'undefined' && navigator.locks) {
      // Granted only once the tab's own lock is released: it closed, crashed or navigated away.
      navigator.locks
        .request(`${LOCK_PREFIX}:tab:${client.id}`, () => this.#tabGone(client.id))
        .catch(() => {});
    }
  }

  /** Handles one message from `client` (see tabs.js for the protocol). */
  receive(client, msg) {
    if (this.#closed || msg === null || typeof msg !== 'object') return;
    switch (msg.t) {
      case 'hello':
        this.attach(client);
        client.post({ t: 'welcome', instance: this.instance, now: this.#now() });
        for (const e of this.#names.values()) if (e.watchers.has(client.id)) this.#sendState(e, client);
        break;
      case 'req':
        this.#request(client, msg);
        break;
      case 'watch': {
        const e = this.#entry(String(msg.name), true);
        e.watchers.add(client.id);
        this.#sendState(e, client);
        break;
      }
      case 'unwatch':
        this.#names.get(String(msg.name))?.watchers.delete(client.id);
        break;
      case 'wake':
        this.#wake(client, msg.in);
        break;
      case 'log':
        client.post({
          t: 'logrep',
          n: msg.n,
          now: this.#now(),
          instance: this.instance,
          stats: { ...this.#stats },
          entries: msg.name === undefined ? this.#log.slice() : this.#log.filter((r) => r.name === msg.name),
        });
        break;
      case 'bye':
        this.#forget(client.id);
        break;
      default:
        break;
    }
  }

  #entry(name, create) {
    let e = this.#names.get(name);
    if (e || !create) return e;
    const landlord = new Landlord({
      id: randomLandlordId(),
      policy: Policy.capacity(1, Policy.bounded(MAX_LEASE_MS, DEFAULT_LEASE_MS)),
    });
    e = this.#adopt(name, landlord, new Map());
    return e;
  }

  #adopt(name, landlord, holders) {
    const e = { name, landlord, holders, watchers: new Set(), driver: null };
    e.driver = new LandlordDriver(landlord, { now: this.#now, onExpired: (x) => this.#expired(e, x) });
    this.#names.set(name, e);
    this.#byLandlord.set(landlord.id, e);
    return e;
  }

  /** Runs the landlord's expiry up to now (the driver's timer may lag; a grant must not). */
  #sweep(e, now) {
    e.landlord.handleTimeout(now);
    let x;
    while ((x = e.landlord.pollExpired()) !== undefined) this.#expired(e, x, now);
  }

  #expired(e, x, now = this.#now()) {
    const h = e.holders.get(x.cookie);
    e.holders.delete(x.cookie);
    this.#record(e, { type: 'expired', at: now, until: x.expiration, holder: h });
    this.#save();
  }

  #request(client, msg) {
    this.#stats.requests++;
    const now = this.#now();
    let q;
    try {
      q = decodeRequest(msg.body);
    } catch (err) {
      client.post({ t: 'rep', n: msg.n, body: errorReply(0, 5, String(err?.message ?? err)) });
      return;
    }
    const e = q.body.op === 'grant' ? this.#entry(utf8.decode(q.body.resource), true) : this.#byLandlord.get(msg.landlord);
    if (!e) {
      client.post({ t: 'rep', n: msg.n, body: errorReply(q.id, 1, `no landlord ${msg.landlord} here (the worker restarted?)`) });
      return;
    }
    this.#sweep(e, now);
    const reply = e.landlord.handleRequest(q, now);
    e.driver.update();
    const who = { tab: client.id, label: typeof msg.label === 'string' ? msg.label.slice(0, 80) : undefined };
    const b = q.body;
    const r = reply.body;
    const until = (cookie) => e.landlord.get(cookie, now)?.expiration;
    if (b.op === 'grant') {
      if (r.op === 'granted') {
        const holder = { ...who, lease: this.#seq + 1 };
        e.holders.set(r.cookie, holder);
        this.#record(e, { type: 'granted', at: now, until: until(r.cookie), holder });
      } else {
        this.#stats.denied++;
      }
    } else if (b.op === 'renew' && r.op === 'renewed') {
      this.#record(e, { type: 'renewed', at: now, until: until(b.cookie), holder: e.holders.get(b.cookie) });
    } else if (b.op === 'renew_all' && r.op === 'renewed_all') {
      b.items.forEach(({ cookie }, i) => {
        if (!('error' in r.results[i])) this.#record(e, { type: 'renewed', at: now, until: until(cookie), holder: e.holders.get(cookie) });
      });
    } else if (b.op === 'cancel' && r.op === 'cancelled') {
      this.#cancelled(e, b.cookie, now, 'holder');
    } else if (b.op === 'cancel_all' && r.op === 'cancelled_all') {
      b.cookies.forEach((c, i) => {
        if (!('error' in r.results[i])) this.#cancelled(e, c, now, 'holder');
      });
    }
    this.#save(); // before the reply: a restored landlord never forgets a lease a tab was told of
    client.post({ t: 'rep', n: msg.n, body: encodeReply(reply) });
  }

  #cancelled(e, cookie, now, cause) {
    const holder = e.holders.get(cookie);
    e.holders.delete(cookie);
    this.#record(e, { type: 'cancelled', at: now, holder, cause });
  }

  /** The tab's lock was released: it is gone, so its leases are cancelled at once (by the core). */
  #tabGone(tab) {
    if (this.#closed) return;
    const now = this.#now();
    for (const e of this.#names.values()) {
      for (const [cookie, h] of [...e.holders]) {
        if (h?.tab !== tab) continue;
        try {
          e.landlord.cancel(cookie, now);
          this.#cancelled(e, cookie, now, 'tabGone');
        } catch {
          // already expired: the sweep reports it
        }
      }
      this.#sweep(e, now);
      e.driver.update();
    }
    this.#save();
    this.#forget(tab);
  }

  #forget(tab) {
    this.#clients.delete(tab);
    clearTimeout(this.#wakes.get(tab));
    this.#wakes.delete(tab);
    for (const e of this.#names.values()) e.watchers.delete(tab);
  }

  #wake(client, delay) {
    clearTimeout(this.#wakes.get(client.id));
    if (typeof delay !== 'number' || !(delay >= 0)) {
      this.#wakes.delete(client.id);
      return;
    }
    const ms = Math.min(2 ** 31 - 1, delay);
    this.#wakes.set(client.id, setTimeout(() => {
      this.#wakes.delete(client.id);
      client.post({ t: 'wake' });
    }, ms));
  }

  #record(e, { type, at, until, holder, cause }) {
    const r = {
      seq: ++this.#seq,
      name: e.name,
      type,
      at,
      until,
      tab: holder?.tab,
      label: holder?.label,
      lease: holder?.lease,
      cause,
    };
    this.#log.push(r);
    if (this.#log.length > this.#logLimit) this.#log.splice(0, this.#log.length - this.#logLimit);
    for (const id of e.watchers) this.#clients.get(id)?.post({ t: 'lease', name: e.name, ev: r, now: at });
  }

  /** Who holds `e` now: `{tab, label, lease, until}` (until on this host's clock) or null. */
  #leader(e, now) {
    for (const [cookie, h] of e.holders) {
      const g = e.landlord.get(cookie, now);
      if (g) return { ...h, until: g.expiration };
    }
    return null;
  }

  #sendState(e, client) {
    const now = this.#now();
    this.#sweep(e, now);
    e.driver.update();
    client.post({
      t: 'state',
      name: e.name,
      now,
      leader: this.#leader(e, now),
      recent: this.#log.filter((r) => r.name === e.name).slice(-200),
    });
  }

  #save() {
    if (!this.#store) return;
    const now = this.#now();
    const names = [];
    for (const e of this.#names.values()) {
      const snap = e.landlord.snapshot(now);
      names.push({
        name: e.name,
        state: snap.state,
        resources: snap.resources.map((x) => (x instanceof Uint8Array ? utf8.decode(x) : String(x))),
        holders: [...e.holders],
      });
    }
    this.#store.save({ version: 1, seq: this.#seq, names, log: this.#log.slice(-500) });
  }

  #restore(saved) {
    if (saved?.version !== 1) return;
    const now = this.#now();
    this.#seq = saved.seq ?? 0;
    this.#log = Array.isArray(saved.log) ? saved.log : [];
    const enc = new TextEncoder();
    for (const n of saved.names ?? []) {
      const landlord = Landlord.restore(
        { state: n.state, resources: n.resources.map((s) => enc.encode(s)) },
        Policy.capacity(1, Policy.bounded(MAX_LEASE_MS, DEFAULT_LEASE_MS)),
        now,
      );
      const e = this.#adopt(n.name, landlord, new Map(n.holders));
      // Holders whose lock is gone while no landlord ran: their leases go now.
      for (const [, h] of e.holders) if (h?.tab) this.attach({ id: h.tab, post: () => {} });
    }
  }

  /** Stops every timer (the host's state stays in its store). */
  close() {
    this.#closed = true;
    for (const e of this.#names.values()) e.driver.close();
    for (const t of this.#wakes.values()) clearTimeout(t);
    this.#wakes.clear();
  }
}
