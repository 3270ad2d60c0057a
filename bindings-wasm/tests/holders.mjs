// Node holders that keep leases through landlords that crash or fail over, and check every
// promise made to them (the JavaScript counterpart of leasehold-load, with the same counts).
// Each holder is a RenewalDriver (the core's RenewalManager) over fetchTransport(servers): it
// grants its leases, renews most for ever, cancels some (at 40 % of the run) and abandons some
// (at 30 %). Every reply is judged against what each lease was promised: the time the request
// was *sent* plus the duration granted.
//
// - early expiries: "unknown lease" to a request sent before the lease's promised expiration (not
//   counted for a lease this holder is cancelling: a renewal under way may reach it after the cancel);
// - lost: a lease renewed to the end is unknown at the final check;
// - cancelled back: a lease whose cancel was acknowledged is renewable again;
// - expired back: an abandoned lease that a landlord once said was gone is renewable again.
//
// Usage as a program (the package installed next to it):
//   node holders.mjs --servers URL[,URL...] [--holders 4] [--leases 50] [--lease-ms 4000]
//     [--run-ms 10000] [--encoding binary|json] [--timeout-ms 1000] [--renew-divisor N] [--json FILE]
//     [--history FILE] [--name js] [--churn-ms N] [--stop-file FILE]
// Prints `load (node): ...` and `check (node): ...`; exits 1 on any violation.
//
// For the fault suite (scripts/test-faults.sh): --history FILE writes every request as one JSON
// line, in the form `leasehold-load --history` writes (scripts/faults/check.py judges them): the
// holder, op, send and answer times (ms since the Unix epoch), the server that answered, and per
// lease [cookie, landlord, outcome, duration] with outcomes granted, renewed, cancelled or an
// error code's name (unknown_lease, ...), null when no server answered; and the events abandon,
// gave_up and end. --churn-ms N keeps traffic flowing: every N ms each holder grants one more
// lease to keep, and every third time cancels one or abandons one.
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  RenewalManager, RenewalDriver, fetchTransport, encodeRequest, decodeRequest, decodeReply, ErrorCode, FOREVER,
} from 'leasehold';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const UNKNOWN = ErrorCode.UNKNOWN_LEASE;

function newCounts() {
  return {
    grants_acked: 0, grant_failures: 0, renewals_acked: 0, renew_requests: 0, cancels_acked: 0, probes: 0,
    transport_failures: 0, kept_checked: 0, early_expiries: 0, lost: 0, cancel_came_back: 0,
    expiry_came_back: 0, renewal_failures: 0,
  };
}

const expirationAfter = (sent, d) => (d === FOREVER ? Infinity : sent + d);
const CODE_NAMES = Object.fromEntries(Object.entries(ErrorCode).map(([k, v]) => [v, k.toLowerCase()]));
const codeName = (code) => CODE_NAMES[code] ?? 'error';
const landlordNumber = (l) => (l === undefined || l === null ? 0 : Number(typeof l === 'string' ? BigInt(`0x${l}`) : l));
const wallMs = () => performance.timeOrigin + performance.now();

/** The history file: JSON lines, written as they come (appendFileSync: nothing is lost on exit). */
class Recorder {
  constructor(path) {
    this.path = path;
    this.lines = [];
    if (path) writeFileSync(path, '');
  }

  write(record) {
    if (!this.path) return;
    this.lines.push(JSON.stringify(record));
    if (this.lines.length >= 64) this.flush();
  }

  flush() {
    if (!this.path || this.lines.length === 0) return;
    appendFileSync(this.path, `${this.lines.join('\n')}\n`);
    this.lines = [];
  }

  /** One request: its lease items [cookie, landlord, outcome, duration], from the request and its reply. */
  request(h, request, landlord, sent, done, answered, reply, err) {
    if (!this.path) return;
    const q = request.body;
    const l = landlordNumber(landlord);
    let items;
    if (q.op === 'grant') {
      if (!reply) items = [];
      else if (reply.body.op === 'granted') items = [[reply.body.cookie, landlordNumber(reply.landlord), 'granted', reply.body.duration]];
      else items = [['', landlordNumber(reply.landlord), reply.body.op === 'error' ? codeName(reply.body.code) : 'error', null]];
    } else {
      const order = q.op === 'renew' || q.op === 'cancel' ? [q.cookie]
        : q.op === 'renew_all' ? q.items.map((x) => x.cookie) : q.cookies;
      const r = reply?.body;
      items = order.map((c, i) => {
        if (!r) return [c, l, null, null];
        if (r.op === 'renewed') return [c, l, 'renewed', r.duration];
        if (r.op === 'cancelled') return [c, l, 'cancelled', null];
        if (r.op === 'renewed_all' || r.op === 'cancelled_all') {
          const x = r.results[i];
          if (x && 'error' in x) return [c, l, codeName(x.error.code), null];
          return r.op === 'renewed_all' ? [c, l, 'renewed', x.duration] : [c, l, 'cancelled', null];
        }
        return [c, l, r.op === 'error' ? codeName(r.code) : 'error', null];
      });
    }
    const op = request.op ?? q.op;
    const rec = { t: 'req', h, op, sent, done, ok: !err, items };
    if (answered) {
      rec.server = answered.origin;
      if (answered.owner) rec.owner = answered.owner;
    }
    if (err) rec.err = String(err?.message ?? err);
    this.write(rec);
  }

  event(t, h, cookie, why) {
    const rec = { t, h, at: wallMs() };
    if (cookie !== undefined) rec.cookie = cookie;
    if (why !== undefined) rec.why = why;
    this.write(rec);
  }
}

class Holder {
  constructor(h, o, counts, log, rec) {
    this.h = h;
    this.name = `${o.name}-${h}`;
    this.o = o;
    this.c = counts;
    this.log = log;
    this.rec = rec;
    // Each holder starts with another server first, to spread the load.
    const servers = o.servers.slice(h % o.servers.length).concat(o.servers.slice(0, h % o.servers.length));
    // fetch, watched: which server answered each request (its body is the key) with a 200.
    this.answered = new Map();
    const watched = async (url, init) => {
      const res = await globalThis.fetch(url, init);
      if (res.status === 200) this.answered.set(init.body, { origin: new URL(url).origin, owner: res.headers.get('x-leasehold-owner') });
      return res;
    };
    const transport = fetchTransport(servers, { encoding: o.encoding, timeout: o.timeoutMs, fetch: watched });
    // Every request through the transport, written into the history.
    this.transport = async (body, landlord, op) => {
      const sent = wallMs();
      this.answered.delete(body);
      try {
        const bytes = await transport(body, landlord);
        const answered = this.answered.get(body);
        this.answered.delete(body);
        if (this.rec.path) {
          const request = decodeRequest(body, this.o.encoding);
          if (op) request.op = op;
          this.rec.request(this.name, request, landlord, sent, wallMs(), answered, decodeReply(bytes, this.o.encoding));
        }
        return bytes;
      } catch (err) {
        this.answered.delete(body);
        if (this.rec.path) {
          const request = decodeRequest(body, this.o.encoding);
          if (op) request.op = op;
          this.rec.request(this.name, request, landlord, sent, wallMs(), undefined, undefined, err);
        }
        throw err;
      }
    };
    this.tracks = new Map(); // cookie -> {lease, landlord, promised, kind, nextProbe}
    this.probeId = 2 ** 40 + h * 2 ** 32;
    const settings = { minRto: 100, reportRenewals: false };
    if (o.renewDivisor) settings.renewDivisor = o.renewDivisor;
    this.driver = new RenewalDriver(new RenewalManager(settings), {
      transport: (body, landlord) => this.#checked(body, landlord),
      encoding: o.encoding,
      onEvent: (e) => {
        if (e.type !== 'renewalFailed') return;
        this.c.renewal_failures++;
        this.log(`holder ${h}: renewal of ${e.lease.cookie} failed: ${e.error?.message}`);
        this.rec.event('gave_up', this.name, e.lease.cookie, e.error?.message);
        const tr = this.tracks.get(e.lease.cookie);
        if (tr) tr.kind = 'unknown';
      },
    });
  }

  // The transport the manager uses: every reply it gets is judged first.
  async #checked(body, landlord) {
    const sent = Date.now();
    const request = decodeRequest(body, this.o.encoding);
    const op = request.body.op;
    if (op === 'renew' || op === 'renew_all') this.c.renew_requests++;
    let bytes;
    try {
      bytes = await this.transport(body, landlord);
    } catch (err) {
      this.c.transport_failures++;
      throw err;
    }
    this.#judge(request, decodeReply(bytes, this.o.encoding), sent);
    return bytes;
  }

  #judge(request, reply, sent) {
    const q = request.body;
    const r = reply.body;
    if (q.op === 'grant') {
      if (r.op === 'granted') {
        this.c.grants_acked++;
        this.tracks.set(r.cookie, { landlord: reply.landlord, promised: expirationAfter(sent, r.duration), kind: 'kept', nextProbe: 0 });
      } else {
        this.c.grant_failures++;
      }
      return;
    }
    const order = q.op === 'renew' || q.op === 'cancel' ? [q.cookie]
      : q.op === 'renew_all' ? q.items.map((x) => x.cookie) : q.cookies;
    const one = (cookie, outcome) => {
      const tr = this.tracks.get(cookie);
      if (!tr) return;
      if (outcome.renewed !== undefined) {
        this.c.renewals_acked++;
        tr.promised = Math.max(tr.promised, expirationAfter(sent, outcome.renewed));
      } else if (outcome.cancelled) {
        this.c.cancels_acked++;
        tr.kind = 'cancelled';
        tr.nextProbe = sent + 100;
      } else {
        // A lease this holder is cancelling (or cancelled) may be answered unknown early: a
        // renewal the manager had under way when the lease was handed over for cancelling can
        // reach the landlord after the cancel.
        if (outcome.error.code === UNKNOWN && sent < tr.promised && tr.kind !== 'cancelling' && tr.kind !== 'cancelled') {
          this.log(`holder ${this.h}: lease ${cookie} unknown ${tr.promised - sent} ms before its promised expiration`);
          this.c.early_expiries++;
        }
        if (tr.kind === 'cancelling') tr.kind = 'unknown';
      }
    };
    if (r.op === 'renewed') order.forEach((c) => one(c, { renewed: r.duration }));
    else if (r.op === 'cancelled') order.forEach((c) => one(c, { cancelled: true }));
    else if (r.op === 'renewed_all') order.forEach((c, i) => one(c, 'error' in r.results[i] ? { error: r.results[i].error } : { renewed: r.results[i].duration }));
    else if (r.op === 'cancelled_all') order.forEach((c, i) => one(c, 'error' in r.results[i] ? { error: r.results[i].error } : { cancelled: true }));
    else if (r.op === 'error') order.forEach((c) => one(c, { error: r }));
  }

  // A renewal of `duration` sent by hand (not the manager's): the reply, or undefined when no
  // server answered.
  async #probe(cookie, landlord, duration) {
    const body = encodeRequest({ id: ++this.probeId, body: { op: 'renew', cookie, duration } }, this.o.encoding);
    try {
      return decodeReply(await this.transport(body, landlord, duration === 1 ? 'probe' : 'final'), this.o.encoding);
    } catch {
      this.c.transport_failures++;
      return undefined;
    }
  }

  async #cancel(cookie, landlord) {
    for (let i = 0; i < 50; i++) {
      const request = { id: ++this.probeId, body: { op: 'cancel', cookie } };
      const sent = Date.now();
      try {
        const bytes = await this.transport(encodeRequest(request, this.o.encoding), landlord);
        this.#judge(request, decodeReply(bytes, this.o.encoding), sent);
        return;
      } catch {
        this.c.transport_failures++;
        await sleep(100);
      }
    }
  }

  // Grants one lease and keeps it renewed; false when no lease came of it.
  async #grantKept(resource) {
    const { leaseMs } = this.o;
    const lease = await this.driver.grant(resource, leaseMs);
    const tr = this.tracks.get(lease.cookie);
    if (tr) tr.lease = lease;
    this.driver.renewUntil(lease, FOREVER, leaseMs);
    return lease;
  }

  // One kept lease (the one with the earliest promise): cancelled, or abandoned.
  #churnOne(cancelIt) {
    let pick;
    for (const [ck, tr] of this.tracks) {
      if (tr.kind === 'kept' && tr.lease && (!pick || tr.promised < pick[1].promised)) pick = [ck, tr];
    }
    if (!pick) return;
    const [ck, tr] = pick;
    if (!this.driver.remove(tr.lease)) return;
    if (cancelIt) {
      tr.kind = 'cancelling';
      this.#cancel(ck, tr.landlord);
    } else {
      tr.kind = 'abandoned';
      tr.gone = false;
      tr.nextProbe = tr.promised + 50;
      this.rec.event('abandon', this.name, ck);
    }
  }

  async run(start) {
    const { leases, leaseMs, runMs, cancel, abandon, churnMs } = this.o;
    // Grants, all at once; one that gets no answer is asked again (for at most a fifth of the
    // run): a landlord that is down comes back. (A retried grant may leave an extra lease,
    // which expires on its own.)
    const grantBy = start + runMs / 5;
    await Promise.all(Array.from({ length: leases }, async (_, i) => {
      for (;;) {
        try {
          await this.#grantKept(`holder-${this.h}-lease-${i}`);
          return;
        } catch (err) {
          if (err?.isDefinite !== false || Date.now() > grantBy) {
            this.c.grant_failures++;
            return;
          }
          await sleep(100);
        }
      }
    }));
    const cookies = [...this.tracks.keys()].sort();
    const nCancel = Math.floor(cookies.length * cancel);
    const nAbandon = Math.floor(cookies.length * abandon);
    const cancelSet = cookies.slice(0, nCancel);
    const abandonSet = cookies.slice(nCancel, nCancel + nAbandon);
    let abandoned = false;
    let cancelled = false;
    const end = start + runMs;
    let churned = 0;
    let nextChurn = churnMs ? Date.now() + churnMs : Infinity;
    while (Date.now() < end && !(this.o.stopFile && existsSync(this.o.stopFile))) {
      const t = Date.now();
      if (t >= nextChurn) {
        nextChurn = t + churnMs;
        churned++;
        this.#grantKept(`holder-${this.h}-churn-${churned}`).catch(() => { this.c.grant_failures++; });
        if (churned % 3 !== 0) this.#churnOne(churned % 3 === 1);
      }
      if (!abandoned && t >= start + runMs * 0.3) {
        abandoned = true;
        for (const ck of abandonSet) {
          const tr = this.tracks.get(ck);
          if (tr?.kind === 'kept' && tr.lease && this.driver.remove(tr.lease)) {
            tr.kind = 'abandoned';
            tr.gone = false;
            tr.nextProbe = tr.promised + 50;
            this.rec.event('abandon', this.name, ck);
          }
        }
      }
      if (!cancelled && t >= start + runMs * 0.4) {
        // The manager sends a cancel once, best effort; these are sent by hand until a server
        // answers, so that a landlord that is down at that moment does not leave them unknown.
        cancelled = true;
        for (const ck of cancelSet) {
          const tr = this.tracks.get(ck);
          if (tr?.kind === 'kept' && tr.lease && this.driver.remove(tr.lease)) {
            tr.kind = 'cancelling';
            this.#cancel(ck, tr.landlord);
          }
        }
      }
      // Cancelled leases must stay unknown; abandoned ones, once past their promise, may be
      // renewed (for 1 ms) until the landlord says they are gone, then never again.
      // (An abandoned lease not before its promise, which a renewal still under way when it was
      // abandoned may have moved on.)
      const due = [...this.tracks].filter(([, tr]) => (tr.kind === 'cancelled' || tr.kind === 'abandoned') && tr.nextProbe <= t
        && !(tr.kind === 'abandoned' && !tr.gone && t < tr.promised + 50)).slice(0, 64);
      for (const [ck, tr] of due) {
        tr.nextProbe = t + (churnMs && tr.gone ? 3000 : 300);
        this.c.probes++;
        const reply = await this.#probe(ck, tr.landlord, 1);
        if (!reply) continue;
        if (reply.body.op === 'renewed' && tr.kind === 'cancelled') {
          this.log(`holder ${this.h}: cancelled lease ${ck} renewed again`);
          this.c.cancel_came_back++;
        } else if (reply.body.op === 'renewed' && tr.kind === 'abandoned' && tr.gone) {
          this.log(`holder ${this.h}: expired lease ${ck} renewed again`);
          this.c.expiry_came_back++;
        } else if (reply.body.op === 'error' && reply.body.code === UNKNOWN && tr.kind === 'abandoned') {
          tr.gone = true;
        }
      }
      await sleep(50);
    }
    this.driver.close();
    this.rec.event('end', this.name);
    // Final check: every lease kept to the end is held.
    for (const [ck, tr] of this.tracks) {
      if (tr.kind !== 'kept') continue;
      let reply;
      let sent;
      for (let i = 0; i < 50 && !reply; i++) {
        sent = Date.now();
        reply = await this.#probe(ck, tr.landlord, leaseMs);
        if (!reply) await sleep(100);
      }
      this.c.kept_checked++;
      if (reply?.body.op === 'renewed') continue;
      this.c.lost++;
      this.log(`holder ${this.h}: lease ${ck} renewed to the end is ${reply ? `answered ${JSON.stringify(reply.body)}` : 'unanswered'} (${tr.promised - sent} ms before its promise)`);
    }
  }
}

/** Runs the holders; resolves with the counts. */
export async function runHolders({
  servers, holders = 4, leases = 50, leaseMs = 4000, runMs = 10_000, encoding = 'binary', cancel = 0.1,
  abandon = 0.1, timeoutMs = 1000, renewDivisor, log = (m) => console.error(m), history, name = 'js', churnMs = 0,
  stopFile,
}) {
  const counts = newCounts();
  const o = { servers, leases, leaseMs, runMs, encoding, cancel, abandon, timeoutMs, renewDivisor, name, churnMs, stopFile };
  const started = Date.now();
  const stamped = (m) => log(`[${((Date.now() - started) / 1000).toFixed(1)} s] ${m}`);
  const rec = new Recorder(history);
  const flusher = setInterval(() => rec.flush(), 500);
  try {
    await Promise.all(Array.from({ length: holders }, (_, h) => new Holder(h, o, counts, stamped, rec).run(started)));
  } finally {
    clearInterval(flusher);
    rec.flush();
  }
  counts.holders = holders;
  counts.leases = holders * leases;
  counts.seconds = (Date.now() - started) / 1000;
  counts.renewals_per_s = Math.round(counts.renewals_acked / counts.seconds);
  return counts;
}

/** Violations of a promise in `counts` (all must be 0). */
export function violations(c) {
  return c.early_expiries + c.lost + c.cancel_came_back + c.expiry_came_back;
}

/** The two summary lines. */
export function describe(c, who = 'node') {
  return [
    `load (${who}): grants acked ${c.grants_acked}, renewals acked ${c.renewals_acked} (${c.renewals_per_s}/s in ${c.renew_requests} requests), ` +
      `cancels acked ${c.cancels_acked}, probes ${c.probes}, kept leases checked at the end ${c.kept_checked}, transport failures ${c.transport_failures}`,
    `check (${who}): early expiries ${c.early_expiries}, acknowledged leases lost ${c.lost}, cancelled leases back ${c.cancel_came_back}, ` +
      `expired leases back ${c.expiry_came_back}, renewal failures ${c.renewal_failures}`,
  ];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1] : dflt;
  };
  const servers = opt('servers', '').split(',').filter(Boolean);
  if (servers.length === 0) {
    console.error('usage: node holders.mjs --servers URL[,URL...] [--holders N] [--leases N] [--lease-ms MS] [--run-ms MS] [--encoding binary|json] [--timeout-ms MS] [--renew-divisor N] [--json FILE]');
    process.exit(2);
  }
  const c = await runHolders({
    servers,
    holders: Number(opt('holders', 4)),
    leases: Number(opt('leases', 50)),
    leaseMs: Number(opt('lease-ms', 4000)),
    runMs: Number(opt('run-ms', 10_000)),
    encoding: opt('encoding', 'binary'),
    timeoutMs: Number(opt('timeout-ms', 1000)),
    renewDivisor: opt('renew-divisor') ? Number(opt('renew-divisor')) : undefined,
    history: opt('history'),
    name: opt('name', 'js'),
    churnMs: Number(opt('churn-ms', 0)),
    stopFile: opt('stop-file'),
  });
  for (const line of describe(c)) console.log(line);
  const json = opt('json');
  if (json) writeFileSync(json, `${JSON.stringify(c)}\n`);
  process.exit(violations(c) > 0 || c.grants_acked === 0 ? 1 : 0);
}
