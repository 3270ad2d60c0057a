// Holder side, renewal service, events and snapshots, in virtual time (no real waiting): the
// sans-I/O objects are driven by hand, the way the drivers drive them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Landlord, Lease, LeaseMap, RenewalManager, RenewalService, RenewalSet, GapTracker, Policy, FOREVER, ANY,
  LeaseMapError, UnknownLeaseError, InvalidArgumentError, DecodeError, grantRequest, leaseFromReply,
  encodeRequest, decodeReply,
} from 'leasehold';

const seed = (n) => new Uint8Array(32).fill(n);
const landlord = (policy = Policy.bounded(60_000, 60_000)) => new Landlord({ id: 1, seed: seed(1), policy });

function grantLease(ll, name, duration, now) {
  const reply = ll.handleRequest(grantRequest(1, name, duration), now);
  return leaseFromReply(reply, now);
}

// Runs `holder` (a RenewalManager or RenewalService) against `ll` in virtual time up to `until`.
function run(holder, ll, from, until, onEvent = () => {}) {
  let now = from;
  for (let i = 0; i < 100_000; i++) {
    const t = [holder.pollTimeout(), ll.pollTimeout()].filter((x) => x !== undefined).reduce((a, b) => Math.min(a, b), Infinity);
    if (t > until) break;
    now = Math.max(now, t);
    holder.handleTimeout(now);
    ll.handleTimeout(now);
    while (ll.pollExpired() !== undefined);
    let tx;
    while ((tx = holder.pollTransmit(now)) !== undefined) {
      // through the encoded wire, both ways, as a transport would; the reply comes 5 ms later
      // (and the clock goes on from there: a host clock never runs backwards here)
      const reply = decodeReply(ll.handleBytes(encodeRequest(tx.request), now));
      now += 5;
      holder.handleReply(reply, now);
    }
    let e;
    while ((e = holder.pollEvent()) !== undefined) onEvent(e, now);
  }
  return until;
}

test('grant over the wire counts from the send time; errors come back as errors', () => {
  const ll = landlord();
  const lease = grantLease(ll, 'printer', 30_000, 1000);
  assert.equal(lease.expiration, 31_000);
  assert.equal(lease.landlord, ll.id);
  const denied = landlord(Policy.capacity(0, Policy.fixed(10)));
  assert.throws(() => leaseFromReply(denied.handleRequest(grantRequest(2, 'x', 5), 0), 0), /capacity/);
  assert.throws(() => grantRequest(1, 'x', NaN), RangeError);
});

test('LeaseMap: renewAll batches one landlord, failures are removed and reported per lease', () => {
  const ll = landlord();
  const [a, b, c] = ['a', 'b', 'c'].map((r) => grantLease(ll, r, 10_000, 0));
  const map = new LeaseMap();
  for (const l of [a, b, c]) map.set(l, 20_000);
  assert.equal(map.size, 3);
  assert.equal(map.landlord, ll.id);
  const other = new Lease(2, 'ab'.repeat(16), 5);
  assert.equal(map.canContainKey(other), false);
  assert.throws(() => map.set(other, 10), InvalidArgumentError);
  ll.cancel(b.cookie, 100);
  const req = map.renewAllRequest(7);
  assert.equal(req.body.op, 'renew_all');
  assert.equal(req.body.items.length, 3);
  const reply = ll.handleRequest(req, 1000);
  let err;
  try {
    map.applyRenewAll(reply, 1000);
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof LeaseMapError, String(err));
  assert.equal(err.code, 3);
  assert.deepEqual(err.failures.map((f) => f.cookie), [b.cookie]);
  assert.ok(err.errors.get(b.cookie) instanceof UnknownLeaseError);
  assert.equal(map.size, 2);
  assert.equal(map.has(b), false);
  assert.equal(map.get(a).lease.expiration, 21_000);
  assert.equal(map.get(a).duration, 20_000);
  assert.deepEqual(map.entries().length, 2);
  map.applyCancelAll(ll.handleRequest(map.cancelAllRequest(8), 2000));
  assert.equal(ll.size, 0);
});

test('RenewalManager keeps a lease alive for its desired time, then reports it reached', () => {
  const ll = landlord(Policy.bounded(10_000, 10_000));
  const m = new RenewalManager({ initialRtt: 10, minRto: 10 });
  const lease = grantLease(ll, 'svc', 10_000, 0);
  m.renewFor(lease, 60_000, 10_000, 0);
  assert.equal(m.size, 1);
  assert.equal(m.expiration(lease), 60_000);
  assert.equal(m.renewDuration(lease), 10_000);
  assert.ok(m.nextRenewal(lease) > 0);
  const events = [];
  run(m, ll, 0, 59_000, (e, now) => events.push({ type: e.type, now }));
  assert.ok(ll.has(lease.cookie, 59_000), 'still held at the landlord');
  assert.ok(events.filter((e) => e.type === 'renewed').length >= 5);
  assert.ok(m.stats.requestsSent >= 5);
  assert.equal(m.rtt(ll.id).samples > 0, true);
  run(m, ll, 59_000, 80_000, (e, now) => events.push({ type: e.type, now }));
  assert.ok(events.some((e) => e.type === 'desiredExpirationReached'));
  assert.equal(m.size, 0);
  assert.throws(() => m.renewFor(lease, 10, ANY, 0), InvalidArgumentError, 'ANY only with FOREVER');
  assert.throws(() => new RenewalManager({ renewDivisor: 1 }), /renew_divisor/);
});

test('RenewalManager reports a failure when the landlord forgets the lease', () => {
  const ll = landlord(Policy.bounded(10_000, 10_000));
  const m = new RenewalManager({ initialRtt: 10, minRto: 10 });
  const lease = grantLease(ll, 'svc', 10_000, 0);
  m.renewUntil(lease, FOREVER, 10_000, 0);
  ll.cancel(lease.cookie, 1);
  const events = [];
  run(m, ll, 0, 30_000, (e) => events.push(e));
  const f = events.find((e) => e.type === 'renewalFailed');
  assert.ok(f);
  assert.ok(f.error instanceof UnknownLeaseError);
  assert.equal(f.lease.cookie, lease.cookie);
  assert.equal(f.desiredExpiration, FOREVER);
});

test('RenewalService: leased sets, renewals, expiration-warning and renewal-failure events', () => {
  const ll = landlord(Policy.bounded(10_000, 10_000));
  const svc = new RenewalService({ id: 99, seed: seed(2), manager: { initialRtt: 10, minRto: 10 } });
  assert.equal(svc.id, '0000000000000063');
  const { set: setId, lease: setLease } = svc.createSet(30_000, 0);
  assert.equal(setLease.expiration, 30_000);
  const set = svc.set(setId);
  assert.ok(set instanceof RenewalSet);
  const client = grantLease(ll, 'client', 10_000, 0);
  const doomed = grantLease(ll, 'doomed', 10_000, 0);
  set.renewFor(client, FOREVER, 10_000, 0);
  set.renewFor(doomed, FOREVER, 10_000, 0);
  assert.equal(set.leases(0).length, 2);
  assert.deepEqual(set.membership(client, 0), { expiration: FOREVER, renewDuration: 10_000 });
  const warnReg = set.setExpirationWarningListener(5_000, 'warn-me', 0);
  const failReg = set.setRenewalFailureListener(new Uint8Array([1, 2]), 0);
  assert.notEqual(warnReg.eventId, failReg.eventId);
  assert.equal(warnReg.source.service, svc.id);
  assert.equal(set.registrations(0).length, 2);
  ll.cancel(doomed.cookie, 1);
  const events = [];
  run(svc, ll, 0, 26_000, (e) => events.push(e));
  const warn = events.find((e) => e.kind.type === 'expirationWarning');
  assert.ok(warn, 'expiration warning sent');
  assert.equal(new TextDecoder().decode(warn.handback), 'warn-me');
  assert.equal(warn.kind.expiration, 30_000);
  assert.ok(warn.sequence > warnReg.sequence);
  const tracker = new GapTracker();
  tracker.expect(warnReg.eventId, warnReg.sequence);
  assert.deepEqual(tracker.observe(warn.eventId, warn.sequence), { kind: 'inOrder' });
  assert.deepEqual(tracker.observe(warn.eventId, warn.sequence), { kind: 'stale' });
  assert.deepEqual(tracker.observe(warn.eventId, warn.sequence + 3), { kind: 'gap', missed: 2 });
  assert.equal(tracker.last(warn.eventId), warn.sequence + 3);
  const fail = events.find((e) => e.kind.type === 'renewalFailure');
  assert.ok(fail, 'renewal failure sent');
  assert.equal(fail.kind.lease.cookie, doomed.cookie);
  assert.ok(fail.kind.error instanceof UnknownLeaseError);
  assert.deepEqual([...fail.handback], [1, 2]);
  // delivered: reported once, so that a restart does not hand it out again
  assert.equal(svc.delivered(fail.eventId, fail.sequence, 26_000), true);
  assert.equal(svc.delivered(fail.eventId, fail.sequence, 26_000), false);
  assert.ok(ll.has(client.cookie, 26_000), 'the service kept the client lease alive');
  assert.deepEqual(set.leases(26_000).map((l) => l.cookie), [client.cookie]);

  // the set's lease is renewed over the wire like any other
  const r = svc.handleRequest({ id: 5, body: { op: 'renew', cookie: setLease.cookie, duration: 60_000 } }, 26_000);
  assert.deepEqual(r.body, { op: 'renewed', duration: 60_000 });

  // snapshot and restore keep the sets and memberships
  const text = svc.snapshot(26_000);
  assert.equal(typeof text, 'string');
  const again = RenewalService.restore({ id: 99, manager: { initialRtt: 10, minRto: 10 } }, text, 26_000);
  assert.deepEqual(again.sets(), [setId]);
  assert.equal(again.leases(setId, 26_000)[0].cookie, client.cookie);
  assert.throws(() => RenewalService.restore({ id: 99 }, '{"nope":1}', 0), DecodeError);

  // when the set's lease ends, so does the set
  svc.handleRequest({ id: 6, body: { op: 'cancel', cookie: setLease.cookie } }, 27_000);
  assert.equal(set.lease(27_000), undefined);
  assert.throws(() => set.leases(27_000), UnknownLeaseError);
});

test('Landlord snapshot/restore: every lease keeps its cookie, resource and time left', () => {
  const ll = landlord(Policy.bounded(60_000, 60_000));
  const a = ll.grant({ name: 'a', n: [1, 2] }, 10_000, 1000);
  const b = ll.grant('b', 60_000, 1000);
  const snap = ll.snapshot(5000);
  assert.equal(typeof snap.state, 'string');
  assert.equal(snap.resources.length, 2);
  const back = Landlord.restore(JSON.parse(JSON.stringify(snap)), Policy.bounded(60_000, 60_000), 100_000);
  assert.equal(back.size, 2);
  assert.equal(back.id, ll.id);
  assert.deepEqual(back.get(a.cookie, 100_000), { expiration: 106_000, resource: { name: 'a', n: [1, 2] } });
  assert.equal(back.get(b.cookie, 100_000).expiration, 156_000);
  const c = back.grant('c', 1000, 100_000);
  assert.ok(![a.cookie, b.cookie].includes(c.cookie), 'no cookie is issued twice');
  assert.throws(() => Landlord.restore({ state: '{}', resources: [] }, Policy.fixed(1), 0), DecodeError);
  assert.throws(() => Landlord.restore({ state: snap.state, resources: [] }, Policy.fixed(1), 0), DecodeError);
});
