// `leasehold/tabs`: leader election and named leases among the tabs of one origin.
//
// A landlord (the core Landlord, capacity one lease per name) runs in a SharedWorker; each tab is a
// holder that obtains a lease with the wire protocol over a MessagePort and keeps it with the core
// RenewalManager under RenewalDriver. The leader of a name is the holder of its lease and may act
// until `leaderUntil`, which the renewal manager counts from the send time of its last renewal.
// Where SharedWorker is missing, one tab (chosen with Web Locks) runs the landlord and the others
// reach it over a BroadcastChannel; its state is kept in localStorage so the next landlord tab
// takes over without losing a lease. No rule of leasing is written here: grants, renewals,
// cancels, expiry and every time computation are the core's.

import {
  ANY,
  FOREVER,
  IndefiniteError,
  LeaseDeniedError,
  RenewalDriver,
  RenewalManager,
} from './browser.js';
import { TabsHost, LOCK_PREFIX, MAX_LEASE_MS, DEFAULT_LEASE_MS, monotonicNow } from './tabs-host.js';

export { MAX_LEASE_MS, DEFAULT_LEASE_MS };

/** The clock of `leaderUntil` and of every time this module hands out (integer ms, monotonic). */
export const now = monotonicNow;

const NEVER = new Promise(() => {});
const WORKER_NAME = 'leasehold-tabs';

let settings = { mode: 'auto', workerUrl: undefined, requestTimeoutMs: 10_000 };
let shared = null;

/**
 * Sets how tabs reach their landlord, before the first `electLeader`/`acquireLease`:
 * `mode` 'auto' (SharedWorker where there is one, else the fallback), 'sharedworker' or
 * 'fallback'; `workerUrl`: where tabs-worker.js is served (default: beside this file).
 */
export function configure(options = {}) {
  if (shared) throw new Error('leasehold/tabs: configure() must come before the first election or lease');
  const { mode = 'auto', workerUrl, requestTimeoutMs = 10_000 } = options;
  if (!['auto', 'sharedworker', 'fallback'].includes(mode)) throw new RangeError(`unknown mode ${mode}`);
  settings = { mode, workerUrl, requestTimeoutMs };
}

/** An event of this module; the fields depend on the type (see tabs.d.ts). */
export class TabsEvent extends Event {
  constructor(type, fields = {}) {
    super(type);
    Object.assign(this, fields);
  }
}

function randomId() {
  const b = new Uint8Array(6);
  crypto.getRandomValues(b);
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
}

function abortError(signal) {
  return signal?.reason ?? new DOMException('aborted', 'AbortError');
}

/** Resolves after `ms`, or at once when `signal` aborts (then rejects). */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortError(signal));
      return;
    }
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, Math.max(0, ms));
    const onAbort = () => {
      clearTimeout(t);
      reject(abortError(signal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function checkLeaseMs(leaseMs) {
  if (!Number.isSafeInteger(leaseMs) || leaseMs <= 0 || leaseMs > MAX_LEASE_MS) {
    throw new RangeError(`leaseMs must be an integer from 1 to ${MAX_LEASE_MS}, got ${leaseMs}`);
  }
  return leaseMs;
}

function supportsFallback() {
  try {
    return typeof BroadcastChannel === 'function' && !!navigator.locks && typeof localStorage !== 'undefined' && !!localStorage;
  } catch {
    return false;
  }
}

/** Which transport this page uses: 'sharedworker' or 'fallback'. */
export function tabsMode() {
  if (settings.mode !== 'auto') return settings.mode;
  if (typeof SharedWorker === 'function') return 'sharedworker';
  if (supportsFallback()) return 'fallback';
  throw new DOMException('leasehold/tabs needs SharedWorker, or Web Locks + BroadcastChannel + localStorage', 'NotSupportedError');
}

/**
 * This tab's link to its landlord: request/reply over the port, watches, wake-ups, and the
 * worker's (or landlord tab's) comings and goings. One per page.
 */
class Connection extends EventTarget {
  tab = randomId();
  mode = tabsMode();
  instance = undefined;
  #post = null;
  #worker = null;
  #pending = new Map();
  #n = 0;
  #watchers = new Map(); // name -> Set<fn(message)>
  #leaders = new Map(); // name -> leader info or null
  #holders = new Set(); // live TabLeases
  #wakeAt = undefined;
  #spentWake = undefined;
  #ready;
  #readyResolve;
  #goneAt = undefined;
  #longestSeen = 0;
  #frozen = false;
  #hidden = false; // after pagehide
  #channel = null;
  #host = null;

  constructor() {
    super();
    this.#ready = new Promise((resolve) => (this.#readyResolve = resolve));
    this.#start();
    if (typeof document === 'undefined') return; // not a page: no lifecycle events
    addEventListener('pagehide', () => this.#pagehide());
    addEventListener('pageshow', (e) => {
      if (!e.persisted) return;
      this.#hidden = false;
      this.#reconnect();
      this.dispatchEvent(new Event('resume'));
    });
    document.addEventListener('freeze', () => {
      this.#frozen = true;
      this.dispatchEvent(new TabsEvent('freeze', { cause: 'freeze' }));
    });
    document.addEventListener('resume', () => {
      this.#frozen = false;
      this.tick();
      this.dispatchEvent(new Event('resume'));
    });
    document.addEventListener('visibilitychange', () => this.tick());
  }

  get ready() {
    return this.#ready;
  }

  /** True while the page is frozen or being unloaded: no campaign may start then. */
  get frozen() {
    return this.#frozen || this.#hidden;
  }

  async #start() {
    // The tab's own lock, held for its life: the landlord asks for it and is granted it only when
    // this tab is gone (closed, crashed, navigated away), and then cancels the tab's leases.
    await new Promise((resolve) => {
      const held = navigator.locks?.request(`${LOCK_PREFIX}:tab:${this.tab}`, () => {
        resolve();
        return NEVER;
      });
      if (held) held.catch(resolve);
      else resolve();
    });
    if (this.mode === 'sharedworker') this.#connectWorker();
    else this.#connectFallback();
  }

  #connectWorker() {
    const url = settings.workerUrl ?? new URL('./tabs-worker.js', import.meta.url);
    const worker = new SharedWorker(url, { type: 'module', name: WORKER_NAME });
    this.#worker = worker;
    const port = worker.port;
    port.onmessage = (m) => this.#receive(m.data);
    worker.onerror = (e) => this.dispatchEvent(new TabsEvent('error', { error: e }));
    this.#post = (msg) => port.postMessage(msg);
    port.start();
    this.#hello();
  }

  #connectFallback() {
    const channel = new BroadcastChannel(LOCK_PREFIX);
    this.#channel = channel;
    channel.onmessage = (m) => {
      const d = m.data;
      if (d?.to === this.tab) this.#receive(d.m);
      else if (d?.to === '*' && d.m?.t === 'host' && d.m.instance !== this.instance) {
        // A new landlord tab: whatever was sent to the old one is lost (the managers retry).
        this.#failPending('leasehold/tabs: the landlord tab changed');
        this.#hello();
      }
    };
    this.#post = (msg) => channel.postMessage({ to: 'host', from: this.tab, m: msg });
    // Every tab queues for the landlord lock; the one holding it runs the landlord.
    navigator.locks.request(`${LOCK_PREFIX}:landlord`, () => this.#runHost()).catch(() => {});
    this.#hello();
  }

  #runHost() {
    const key = `${LOCK_PREFIX}:state`;
    const store = {
      load() {
        try {
          const s = localStorage.getItem(key);
          return s ? JSON.parse(s) : undefined;
        } catch {
          return undefined;
        }
      },
      save(state) {
        localStorage.setItem(key, JSON.stringify(state));
      },
    };
    const host = new TabsHost({ store });
    this.#host = host;
    const channel = new BroadcastChannel(LOCK_PREFIX);
    const clients = new Map();
    const client = (id) => {
      let c = clients.get(id);
      if (!c) {
        c = { id, post: (m) => channel.postMessage({ to: id, m }) };
        clients.set(id, c);
      }
      return c;
    };
    channel.onmessage = (m) => {
      const d = m.data;
      if (d?.to === 'host' && typeof d.from === 'string') host.receive(client(d.from), d.m);
    };
    channel.postMessage({ to: '*', m: { t: 'host', instance: host.instance } });
    this.dispatchEvent(new TabsEvent('landlord', { instance: host.instance }));
    return NEVER;
  }

  /** True when this tab runs the landlord (fallback mode only). */
  get isLandlord() {
    return this.#host !== null;
  }

  #hello() {
    this.#post?.({ t: 'hello', tab: this.tab });
    for (const name of this.#watchers.keys()) this.#post?.({ t: 'watch', name });
    this.#wakeAt = undefined;
    this.updateWake();
  }

  #receive(msg) {
    switch (msg?.t) {
      case 'welcome': {
        const first = this.instance === undefined;
        if (msg.instance === this.instance) break;
        this.instance = msg.instance;
        if (this.mode === 'sharedworker' && navigator.locks) {
          const instance = msg.instance;
          navigator.locks
            .request(`${LOCK_PREFIX}:worker:${instance}`, () => this.#workerGone(instance))
            .catch(() => {});
        }
        this.#readyResolve();
        if (!first) this.dispatchEvent(new TabsEvent('reconnect', { instance: msg.instance }));
        break;
      }
      case 'rep':
      case 'logrep': {
        const p = this.#pending.get(msg.n);
        if (!p) break;
        this.#pending.delete(msg.n);
        clearTimeout(p.timer);
        p.resolve(msg);
        break;
      }
      case 'state':
      case 'lease': {
        const here = now();
        const localOf = (t) => (typeof t === 'number' ? here + (t - msg.now) : undefined);
        if (msg.t === 'state') {
          const l = msg.leader;
          this.#leaders.set(msg.name, l ? { ...l, until: localOf(l.until), self: l.tab === this.tab } : null);
        } else {
          const ev = msg.ev;
          if (ev.type === 'granted' || ev.type === 'renewed') {
            this.#longestSeen = Math.max(this.#longestSeen, (ev.until ?? 0) - ev.at);
            this.#leaders.set(msg.name, { tab: ev.tab, label: ev.label, lease: ev.lease, until: localOf(ev.until), self: ev.tab === this.tab });
          } else if (ev.type === 'cancelled' || ev.type === 'expired') {
            const cur = this.#leaders.get(msg.name);
            if (!cur || cur.lease === ev.lease) this.#leaders.set(msg.name, null);
          }
        }
        for (const fn of this.#watchers.get(msg.name) ?? []) fn(msg, localOf);
        break;
      }
      case 'wake':
        // That wake-up is spent: ask again, even for the same deadline if it is still ahead.
        this.#spentWake = this.#wakeAt;
        this.#wakeAt = undefined;
        this.tick();
        break;
      case 'fatal':
        this.dispatchEvent(new TabsEvent('error', { error: new Error(msg.message) }));
        break;
      default:
        break;
    }
  }

  /** Sends one wire request; resolves to the reply bytes, or rejects (indefinite) on time-out. */
  request(body, landlord, label) {
    if (!this.#post) return Promise.reject(new IndefiniteError('leasehold/tabs: not connected'));
    const n = ++this.#n;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(n);
        reject(new IndefiniteError(`leasehold/tabs: no reply within ${settings.requestTimeoutMs} ms`));
      }, settings.requestTimeoutMs);
      this.#pending.set(n, { resolve: (m) => resolve(m.body), reject, timer });
      this.#post({ t: 'req', n, landlord, label, body });
    });
  }

  /** The landlord's log (every grant, renewal, cancel and expiry, times on its clock). */
  async log(name) {
    await this.#ready;
    if (!this.#post) throw new IndefiniteError('leasehold/tabs: not connected');
    const n = ++this.#n;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(n);
        reject(new IndefiniteError('leasehold/tabs: no reply to a log request'));
      }, settings.requestTimeoutMs);
      this.#pending.set(n, { resolve, reject, timer });
      this.#post({ t: 'log', n, name });
    });
  }

  /** Calls `fn(message, toLocal)` for every 'state' and 'lease' message about `name`. */
  watch(name, fn) {
    let set = this.#watchers.get(name);
    if (!set) {
      set = new Set();
      this.#watchers.set(name, set);
      this.#post?.({ t: 'watch', name });
    }
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0) {
        this.#watchers.delete(name);
        this.#post?.({ t: 'unwatch', name });
      }
    };
  }

  /** Who holds `name`, as the landlord last said (`until` converted to this tab's clock). */
  leader(name) {
    return this.#leaders.get(name) ?? null;
  }

  register(holder) {
    this.#holders.add(holder);
    this.updateWake();
  }

  unregister(holder) {
    this.#holders.delete(holder);
    this.updateWake();
  }

  /** Brings every holder up to date with the core (after a wake-up, a thaw, a visibility change). */
  tick() {
    for (const h of [...this.#holders]) h._tick();
    this.updateWake();
  }

  /**
   * Asks the landlord side to post a wake-up at the earliest deadline of this tab's renewal
   * managers: worker timers and messages are not throttled like a hidden page's timers.
   */
  updateWake() {
    let due;
    for (const h of this.#holders) {
      const t = h._deadline();
      if (t !== undefined && (due === undefined || t < due)) due = t;
    }
    if (due === this.#wakeAt) return;
    if (due !== undefined && due === this.#spentWake && due <= now()) return; // never a wake-up loop
    this.#wakeAt = due;
    this.#post?.({ t: 'wake', in: due === undefined ? undefined : Math.max(0, due - now()) });
  }

  /** Resolves once no lease granted by a landlord that has gone can still be held. */
  async quiet(leaseMs, signal) {
    if (this.#goneAt === undefined) return;
    const until = this.#goneAt + Math.max(leaseMs, this.#longestSeen);
    if (now() < until) await sleep(until - now(), signal);
  }

  #workerGone(instance) {
    if (instance !== this.instance) return;
    this.#goneAt = now();
    this.#post = null;
    this.#failPending('leasehold/tabs: the worker is gone');
    for (const name of this.#leaders.keys()) this.#leaders.set(name, null);
    for (const h of [...this.#holders]) h._lose('workerGone', 'the SharedWorker is gone');
    this.dispatchEvent(new TabsEvent('workergone', { instance }));
    this.#reconnect('workerGone');
  }

  #failPending(message) {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) {
      clearTimeout(p.timer);
      p.reject(new IndefiniteError(message));
    }
  }

  #reconnect() {
    if (this.mode === 'sharedworker') {
      this.#worker?.port.close();
      this.#connectWorker();
    } else {
      this.#hello();
    }
  }

  #pagehide() {
    this.#hidden = true;
    this.dispatchEvent(new TabsEvent('freeze', { cause: 'pagehide' })); // campaigns stop
    for (const h of [...this.#holders]) h.release('pagehide');
    this.#post?.({ t: 'bye' });
  }
}

function connection() {
  shared ??= new Connection();
  return shared;
}

/** This tab's id, as other tabs see it in `leader.tab`. */
export function tabId() {
  return connection().tab;
}

/**
 * One named lease held by this tab, renewed by the core RenewalManager until it is released or
 * lost. Events: 'renewed' ({until}), 'lost' ({reason, cause, error, until}).
 */
export class TabLease extends EventTarget {
  #conn;
  #name;
  #leaseMs;
  #label;
  #driver;
  #lease = null;
  #state = 'new'; // new | held | lost
  #lost = null;

  /** @internal Use acquireLease(). */
  constructor(conn, name, leaseMs, label, renewal) {
    super();
    this.#conn = conn;
    this.#name = name;
    this.#leaseMs = leaseMs;
    this.#label = label;
    const manager = new RenewalManager({ renewDivisor: 2, initialRtt: 50, minRto: 50, maxRetryInterval: 1_000, ...renewal });
    this.#driver = new RenewalDriver(manager, {
      transport: (body, landlord) => {
        const p = conn.request(body, landlord, label);
        p.then(
          () => queueMicrotask(() => conn.updateWake()),
          () => queueMicrotask(() => conn.updateWake()),
        );
        return p;
      },
      now,
      onEvent: (e) => this.#event(e),
    });
  }

  get name() {
    return this.#name;
  }

  get leaseMs() {
    return this.#leaseMs;
  }

  /** 'held' or 'lost'. */
  get state() {
    return this.#state;
  }

  /** Why it was lost: {reason, cause, error, until}, or null. */
  get lostBecause() {
    return this.#lost;
  }

  /**
   * Whether this tab still holds the lease: the renewal manager is first brought to `now()`, so a
   * lease whose time ran out (the tab was frozen, its timers throttled) reads false and 'lost' has
   * fired.
   */
  get held() {
    this._tick();
    return this.#state === 'held';
  }

  /** Until when this tab may act on the lease (on `now()`'s clock), or undefined once lost. */
  get until() {
    if (this.#state !== 'held') return undefined;
    return this.#driver.manager.lease(this.#lease)?.expiration;
  }

  /** @internal One grant attempt; resolves true if granted and still valid. */
  async _grant() {
    const lease = await this.#driver.grant(this.#name, this.#leaseMs);
    this.#lease = lease;
    this.#state = 'held';
    this.#conn.register(this);
    this.#driver.renewFor(lease, FOREVER, this.#leaseMs);
    this._tick(); // a reply that came late (a frozen tab) may carry a lease already over
    this.#conn.updateWake();
    return this.#state === 'held';
  }

  /** @internal */
  _tick() {
    if (this.#state !== 'held' || this.#driver.closed) return;
    this.#driver.manager.handleTimeout(now());
    this.#driver.pump();
  }

  /** @internal */
  _deadline() {
    return this.#state === 'held' ? this.#driver.manager.pollTimeout() : undefined;
  }

  #event(e) {
    if (this.#state !== 'held') return;
    if (e.type === 'renewed') {
      this.dispatchEvent(new TabsEvent('renewed', { name: this.#name, until: e.lease.expiration }));
    } else if (e.type === 'renewalFailed') {
      const definite = e.error && e.error.isDefinite;
      this.#finish(definite ? 'renewalFailed' : 'expired', definite ? e.error.message : 'no renewal before the lease ran out', e.error, e.lease.expiration);
    } else if (e.type === 'desiredExpirationReached') {
      this.#finish('expired', 'desired expiration reached', undefined, e.lease.expiration);
    }
  }

  #finish(reason, cause, error, until) {
    if (this.#state === 'lost') return;
    this.#state = 'lost';
    this.#lost = { reason, cause, error, until };
    this.#driver.close();
    this.#conn.unregister(this);
    this.dispatchEvent(new TabsEvent('lost', { name: this.#name, reason, cause, error, until }));
  }

  /** @internal The landlord is gone: the lease is dropped without a message. */
  _lose(reason, cause) {
    if (this.#state !== 'held') return;
    let until;
    try {
      until = this.#driver.manager.remove(this.#lease).expiration;
    } catch {
      until = undefined;
    }
    this.#finish(reason, cause, undefined, until);
  }

  /** @internal Drops a lease obtained after its acquirer gave up. */
  _abandon() {
    if (this.#state === 'held') this.release('aborted');
    else this.#driver.close();
  }

  /** Cancels the lease at the landlord (so another tab may take it at once) and stops renewing. */
  release(cause = 'released') {
    if (this.#state !== 'held') return;
    let until;
    try {
      until = this.#driver.manager.lease(this.#lease)?.expiration;
      this.#driver.cancel(this.#lease); // sends the cancel now, synchronously
    } catch {
      // not managed any more: the lease ran out in the same tick
    }
    this.#finish('cancelled', cause, undefined, until);
  }

  [Symbol.dispose ?? Symbol.for('Symbol.dispose')]() {
    this.release('disposed');
  }
}

/**
 * Resolves once a watch of `name` says the lease is free (cancelled, expired, nobody holds it) or
 * `fallbackMs` passed (a safety net; notifications are the normal path).
 */
function vacancy(conn, name, fallbackMs, signal) {
  return new Promise((resolve, reject) => {
    let timer;
    const done = () => {
      clearTimeout(timer);
      stop();
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    const onAbort = () => {
      clearTimeout(timer);
      stop();
      reject(abortError(signal));
    };
    const arm = (ms) => {
      clearTimeout(timer);
      timer = setTimeout(done, Math.max(0, ms));
    };
    const stop = conn.watch(name, (msg, toLocal) => {
      if (msg.t === 'state' && !msg.leader) done();
      else if (msg.t === 'state') arm(toLocal(msg.leader.until) - now() + 1);
      else if (msg.ev.type === 'cancelled' || msg.ev.type === 'expired') done();
      else if (msg.ev.type === 'granted' || msg.ev.type === 'renewed') arm(toLocal(msg.ev.until) - now() + 1);
    });
    const l = conn.leader(name);
    if (l === null) arm(fallbackMs);
    else arm(Math.max(1, (l.until ?? now() + fallbackMs) - now() + 1));
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Obtains the lease on `name` for this tab: at most one tab holds a name at a time. With
 * `wait: true` (the default) it waits until the lease is free; with `wait: false` it rejects with
 * LeaseDeniedError when another tab holds it. Resolves to a TabLease, renewed until released or lost.
 */
export async function acquireLease(name, { leaseMs = DEFAULT_LEASE_MS, wait = true, signal, label, renewal } = {}) {
  if (typeof name !== 'string' || name === '') throw new TypeError('a lease name must be a non-empty string');
  checkLeaseMs(leaseMs);
  const conn = connection();
  await conn.ready;
  let lease = new TabLease(conn, name, leaseMs, label, renewal);
  for (;;) {
    if (signal?.aborted) {
      lease._abandon();
      throw abortError(signal);
    }
    let ok = false;
    try {
      await conn.quiet(leaseMs, signal);
      ok = await lease._grant();
    } catch (err) {
      if (wait && (err instanceof LeaseDeniedError || err instanceof IndefiniteError)) {
        try {
          await vacancy(conn, name, leaseMs, signal);
        } catch (abort) {
          lease._abandon();
          throw abort;
        }
        continue;
      }
      lease._abandon();
      throw err;
    }
    if (signal?.aborted) {
      lease._abandon();
      throw abortError(signal);
    }
    if (ok) return lease;
    if (!wait) throw new LeaseDeniedError(`the lease on ${name} ran out before its grant arrived`);
    lease = new TabLease(conn, name, leaseMs, label, renewal); // that one is spent
  }
}

/**
 * Elects one leader among the tabs that call `electLeader(name)`: this tab campaigns (waits for
 * the lease on `name`), leads while it holds it, and campaigns again when it loses it. Events:
 * 'leader' ({until}), 'lost' ({reason, cause, error, until}), 'renewed' ({until}), 'change'
 * ({leader}: who leads, as the landlord reports).
 */
export class LeaderElection extends EventTarget {
  #conn;
  #name;
  #options;
  #lease = null;
  #campaigning = false;
  #attempt = null; // AbortController of the running acquisition
  #gen = 0; // campaign loop generation: only the latest loop acts
  #closed = false;
  #unwatch;
  #onFreeze;
  #onResume;

  constructor(name, { leaseMs = DEFAULT_LEASE_MS, label, resignOnFreeze = true, renewal, signal } = {}) {
    super();
    if (typeof name !== 'string' || name === '') throw new TypeError('an election name must be a non-empty string');
    checkLeaseMs(leaseMs);
    this.#name = name;
    this.#options = { leaseMs, label, renewal, resignOnFreeze };
    this.#conn = connection();
    let lastSeq = 0;
    let lastLease;
    this.#unwatch = this.#conn.watch(name, (msg, toLocal) => {
      const records = msg.t === 'state' ? msg.recent : [msg.ev];
      for (const r of records) {
        if (r.seq <= lastSeq) continue;
        lastSeq = r.seq;
        const record = { ...r, at: toLocal(r.at), until: toLocal(r.until), self: r.tab === this.#conn.tab };
        this.dispatchEvent(new TabsEvent('record', { name, record }));
      }
      const leader = this.leader;
      if (leader?.lease !== lastLease) {
        lastLease = leader?.lease;
        this.dispatchEvent(new TabsEvent('change', { name, leader }));
      }
    });
    this.#onFreeze = (e) => {
      this.#attempt?.abort();
      if (this.#options.resignOnFreeze || e.cause === 'pagehide') this.#lease?.release(e.cause);
    };
    this.#onResume = () => {
      if (this.#campaigning && !this.#lease) this.#campaign();
    };
    this.#conn.addEventListener('freeze', this.#onFreeze);
    this.#conn.addEventListener('resume', this.#onResume);
    signal?.addEventListener('abort', () => this.close(), { once: true });
    this.campaign();
  }

  get name() {
    return this.#name;
  }

  get leaseMs() {
    return this.#options.leaseMs;
  }

  /** This tab's id (what `leader.tab` says when this tab leads). */
  get tabId() {
    return this.#conn.tab;
  }

  /** 'sharedworker' or 'fallback'. */
  get mode() {
    return this.#conn.mode;
  }

  /** Whether this tab leads now (the renewal manager is first brought to `now()`). */
  get isLeader() {
    return this.#lease?.held ?? false;
  }

  /** Until when this tab may act as leader (on `now()`'s clock), or undefined. */
  get leaderUntil() {
    return this.isLeader ? this.#lease.until : undefined;
  }

  /** Who leads, as the landlord last reported: {tab, label, lease, until, self} or null. */
  get leader() {
    return this.#conn.leader(this.#name);
  }

  /** Whether this tab is campaigning (trying to lead, or leading). */
  get campaigning() {
    return this.#campaigning;
  }

  /** Starts (or resumes) campaigning. */
  campaign() {
    if (this.#closed || this.#campaigning) return;
    this.#campaigning = true;
    this.#campaign();
  }

  /** Starts a campaign loop; a loop started earlier stops (its attempt is aborted). */
  #campaign() {
    const gen = ++this.#gen;
    this.#attempt?.abort();
    this.#loop(gen);
  }

  async #loop(gen) {
    const current = () => gen === this.#gen && this.#campaigning && !this.#closed;
    while (current() && !this.#lease) {
      if (this.#conn.frozen) return; // resumes on 'resume'
      const attempt = new AbortController();
      this.#attempt = attempt;
      let lease;
      try {
        lease = await acquireLease(this.#name, { ...this.#options, wait: true, signal: attempt.signal });
      } catch (err) {
        if (attempt.signal.aborted || !current()) return;
        this.dispatchEvent(new TabsEvent('error', { error: err }));
        await sleep(this.#options.leaseMs, attempt.signal).catch(() => {});
        continue;
      } finally {
        if (this.#attempt === attempt) this.#attempt = null;
      }
      if (!current() || this.#conn.frozen || this.#lease) {
        lease.release('resigned');
        return;
      }
      this.#lease = lease;
      lease.addEventListener('renewed', (e) => this.dispatchEvent(new TabsEvent('renewed', { name: this.#name, until: e.until })));
      lease.addEventListener(
        'lost',
        (e) => {
          this.#lease = null;
          this.dispatchEvent(new TabsEvent('lost', { name: this.#name, reason: e.reason, cause: e.cause, error: e.error, until: e.until }));
          if (this.#campaigning && !this.#closed) queueMicrotask(() => this.#campaign());
        },
        { once: true },
      );
      this.dispatchEvent(new TabsEvent('leader', { name: this.#name, until: lease.until }));
      return;
    }
  }

  /** Resolves when this tab leads (at once if it does); rejects if `signal` aborts. */
  whenLeader(signal) {
    if (this.isLeader) return Promise.resolve({ until: this.leaderUntil });
    return new Promise((resolve, reject) => {
      const onLeader = (e) => {
        signal?.removeEventListener('abort', onAbort);
        resolve({ until: e.until });
      };
      const onAbort = () => {
        this.removeEventListener('leader', onLeader);
        reject(abortError(signal));
      };
      this.addEventListener('leader', onLeader, { once: true });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Stops leading (the lease is cancelled, so another tab takes over at once) and campaigning. */
  resign() {
    this.#campaigning = false;
    this.#attempt?.abort();
    this.#lease?.release('resigned');
  }

  /** Resigns and stops watching; the election cannot be used again. */
  close() {
    if (this.#closed) return;
    this.resign();
    this.#closed = true;
    this.#unwatch();
    this.#conn.removeEventListener('freeze', this.#onFreeze);
    this.#conn.removeEventListener('resume', this.#onResume);
  }

  /** The landlord's log for this name: every grant, renewal, cancel and expiry (its clock). */
  history() {
    return this.#conn.log(this.#name);
  }

  [Symbol.dispose ?? Symbol.for('Symbol.dispose')]() {
    this.close();
  }
}

/** Starts a LeaderElection on `name` (see LeaderElection). */
export function electLeader(name, options) {
  return new LeaderElection(name, options);
}

/** The landlord's log for every name (or one), with its clock: `{now, entries, stats, instance}`. */
export function landlordLog(name) {
  return connection().log(name);
}

/** The connection's events ('workergone', 'reconnect', 'landlord', 'error'), for diagnostics. */
export function connectionEvents() {
  return connection();
}

export { ANY, FOREVER };
