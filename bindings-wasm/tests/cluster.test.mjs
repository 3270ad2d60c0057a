// fetchTransport with a list of servers (docs/server-transports.md), against small Node HTTP
// servers that misbehave on purpose: one refuses connections, one answers 503, one accepts and
// never answers (a paused owner), one redirects, one answers. (Against real leasehold-server
// processes on PostgreSQL, with failover: scripts/test-faults.sh.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import {
  fetchTransport, encodeRequest, decodeReply, Landlord, Policy, IndefiniteError,
  RenewalManager, RenewalDriver, FOREVER,
} from 'leasehold';

/** A server answering POST /lease with `handle(req, body)` -> {status, headers, body}. */
async function server(handle) {
  const seen = [];
  const s = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = new Uint8Array(Buffer.concat(chunks));
    seen.push({ url: req.url, body });
    const out = await handle(req, body);
    if (out === 'hang') return; // accepts, never answers
    res.writeHead(out.status ?? 200, out.headers ?? {}).end(out.body ?? '');
  });
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${s.address().port}`;
  return { origin, seen, close: () => new Promise((r) => { s.closeAllConnections(); s.close(r); }) };
}

async function refusedOrigin() {
  const s = await server(() => ({}));
  await s.close();
  return s.origin; // nothing listens there any more
}

function landlordServer(id, extraHeaders = () => ({})) {
  const ll = new Landlord({ id, policy: Policy.bounded(60_000, 30_000) });
  return server((req, body) => ({
    status: 200,
    headers: { 'content-type': 'application/octet-stream', ...extraHeaders(req) },
    body: ll.handleBytes(body, Date.now()),
  })).then((s) => Object.assign(s, { landlord: ll }));
}

const renew = (cookie) => encodeRequest({ id: 5, body: { op: 'renew', cookie, duration: 1000 } });

test('grants go to /lease as is; renewals and cancels name their landlord as the wire writes it (16 hex digits)', async () => {
  const s = await landlordServer(0x1234);
  try {
    const t = fetchTransport(s.origin); // a bare origin means its /lease
    const g = decodeReply(await t(encodeRequest({ id: 1, body: { op: 'grant', resource: 'r', duration: 1000 } }), undefined));
    assert.equal(g.body.op, 'granted');
    assert.equal(s.seen[0].url, '/lease');
    const r = decodeReply(await t(renew(g.body.cookie), g.landlord));
    assert.equal(r.body.op, 'renewed');
    assert.equal(s.seen[1].url, '/lease?landlord=0000000000001234');
    // A full endpoint URL is kept (its own query too).
    const t2 = fetchTransport(`${s.origin}/lease?x=1`);
    await t2(renew(g.body.cookie), g.landlord);
    assert.equal(s.seen[2].url, '/lease?x=1&landlord=0000000000001234');
  } finally {
    await s.close();
  }
});

test('a send moves on past a refused connection, a 503 and a server that never answers', async () => {
  const good = await landlordServer(7);
  const busy = await server(() => ({ status: 503, headers: { 'retry-after': '1' }, body: 'shard moving' }));
  const paused = await server(() => 'hang');
  const refused = await refusedOrigin();
  try {
    const t = fetchTransport([refused, busy.origin, paused.origin, good.origin], { timeout: 300 });
    const started = Date.now();
    const g = decodeReply(await t(encodeRequest({ id: 1, body: { op: 'grant', resource: 'r', duration: 1000 } })));
    assert.equal(g.body.op, 'granted');
    assert.ok(Date.now() - started >= 300, 'waited out the paused server');
    assert.equal(busy.seen.length, 1);
    assert.equal(paused.seen.length, 1);
    // The next send starts from the server that answered last.
    const before = paused.seen.length;
    assert.equal(decodeReply(await t(renew(g.body.cookie), g.landlord)).body.op, 'renewed');
    assert.equal(paused.seen.length, before);
    assert.equal(good.seen.length, 2);
  } finally {
    await Promise.all([good.close(), busy.close(), paused.close()]);
  }
});

test('every server failing is an IndefiniteError naming each; a 4xx without a wire reply is not an answer', async () => {
  const busy = await server(() => ({ status: 503 }));
  const paused = await server(() => 'hang');
  const refused = await refusedOrigin();
  const tooBig = await server(() => ({ status: 413 }));
  try {
    const t = fetchTransport([refused, busy.origin, paused.origin], { timeout: 200 });
    const err = await t(renew('0'.repeat(32)), '0000000000000001').then(() => undefined, (e) => e);
    assert.ok(err instanceof IndefiniteError, String(err));
    assert.equal(err.isDefinite, false);
    assert.match(err.message, /every server failed/);
    assert.match(err.message, /HTTP 503/);
    assert.match(err.message, /no answer in 200 ms/);
    assert.match(err.message, new RegExp(refused.replace(/[.:/]/g, '.')));
    const t2 = fetchTransport([tooBig.origin, busy.origin]);
    await assert.rejects(t2(renew('0'.repeat(32)), '0000000000000001'), (e) => e instanceof IndefiniteError && /HTTP 413/.test(e.message) && /HTTP 503/.test(e.message));
    assert.equal(busy.seen.length, 2, 'tried after a 4xx that carried no wire reply');
  } finally {
    await Promise.all([busy.close(), paused.close(), tooBig.close()]);
  }
});

test('a 404 or 409 carrying a wire reply is the landlord\'s definite answer, never retried elsewhere', async () => {
  const ll = new Landlord({ id: 5, policy: Policy.bounded(60_000, 30_000) });
  // As leasehold-server answers: the status follows the reply, the reply stays in the body.
  const statusOf = (bytes) => {
    const r = decodeReply(bytes);
    return r.body.op !== 'error' ? 200 : r.body.code === 1 ? 404 : r.body.code === 2 ? 409 : 400;
  };
  const strict = await server((req, body) => {
    const reply = ll.handleBytes(body, Date.now());
    return { status: statusOf(reply), headers: { 'content-type': 'application/octet-stream' }, body: reply };
  });
  const spare = await landlordServer(5);
  try {
    const t = fetchTransport([strict.origin, spare.origin]);
    const r = decodeReply(await t(renew('0'.repeat(32)), '0000000000000005'));
    assert.equal(r.body.op, 'error');
    assert.equal(r.body.code, 1);
    assert.equal(spare.seen.length, 0, 'a definite answer is not sent elsewhere');
    // Through a driver, the manager hears it as definite: the lease is dropped at once.
    const events = [];
    const m = new RenewalManager({ initialRtt: 10, minRto: 10 });
    const d = new RenewalDriver(m, { transport: t, onEvent: (e) => events.push(e) });
    const g = ll.grant('x', 400, Date.now());
    const lease = ll.lease(g.cookie, Date.now());
    ll.cancel(g.cookie, Date.now()); // revoked behind the holder's back
    d.renewFor(lease, FOREVER, 400);
    for (let i = 0; i < 100 && events.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    d.close();
    assert.equal(events[0]?.type, 'renewalFailed');
    assert.equal(events[0].error?.code, 1, 'unknown lease: definite');
    assert.equal(spare.seen.length, 0);
  } finally {
    await Promise.all([strict.close(), spare.close()]);
  }
});

test('X-Leasehold-Owner is remembered per landlord; 307/308 are followed with the same body', async () => {
  const owner = await landlordServer(9);
  // The other server forwards nothing: it redirects to the owner (as a server may).
  const other = await server(() => ({ status: 307, headers: { location: `${owner.origin}/lease` } }));
  const owned = await landlordServer(9, () => ({ 'x-leasehold-owner': owner.origin }));
  try {
    const g = owner.landlord.grant('r', 60_000, Date.now());
    const t = fetchTransport([other.origin, owner.origin]);
    const r = decodeReply(await t(renew(g.cookie), '0000000000000009'));
    assert.equal(r.body.op, 'renewed', 'the redirect was followed');
    assert.equal(owner.seen.length, 1);
    assert.deepEqual(owner.seen[0].body, renew(g.cookie));
    assert.equal(owner.seen[0].url, '/lease?landlord=0000000000000009');
    // A server naming another as the owner: the next send for that landlord goes there first.
    const t2 = fetchTransport([owned.origin, owner.origin]);
    const g2 = owned.landlord.grant('r', 60_000, Date.now());
    await t2(renew(g2.cookie), '0000000000000009');
    assert.equal(owned.seen.length, 1);
    await t2(renew(g.cookie), '0000000000000009');
    assert.equal(owner.seen.length, 2, 'sent to the owner named in the header');
    assert.equal(owned.seen.length, 1);
  } finally {
    await Promise.all([owner.close(), other.close(), owned.close()]);
  }
});

test('a holder keeps its lease while the server it talks to stops answering (RenewalDriver over a list)', async () => {
  const ll = new Landlord({ id: 3, policy: Policy.bounded(2000, 2000) });
  let aDown = false;
  const serve = (body) => ({ status: 200, body: ll.handleBytes(body, Date.now()) });
  const a = await server((req, body) => (aDown ? 'hang' : serve(body)));
  const b = await server((req, body) => serve(body));
  try {
    const events = [];
    const d = new RenewalDriver(new RenewalManager({ initialRtt: 20, minRto: 20 }), {
      transport: fetchTransport([a.origin, b.origin], { timeout: 250 }),
      onEvent: (e) => events.push(e.type),
    });
    const lease = await d.grant('kept', 2000);
    d.renewFor(lease, FOREVER, 2000);
    aDown = true; // a now accepts and never answers: every send must go on to b
    await new Promise((r) => setTimeout(r, 4500));
    assert.ok(ll.has(lease.cookie, Date.now()), 'still held at the landlord');
    assert.ok(!events.includes('renewalFailed'), `events: ${events}`);
    assert.ok(b.seen.length >= 2, `renewed through b (${b.seen.length} requests)`);
    assert.ok(d.manager.lease(lease).expiration > Date.now());
    d.close();
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('fetchTransport checks its arguments', () => {
  assert.throws(() => fetchTransport([]), /at least one URL/);
  assert.throws(() => fetchTransport('http://x', { timeout: 0 }), RangeError);
  assert.throws(() => fetchTransport('not a url'), TypeError);
});
