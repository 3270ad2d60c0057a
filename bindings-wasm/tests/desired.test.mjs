// The desired-expiration-reached event carries the desired expiration and never arrives before
// it (issue 13, finding 7), whatever the round-trip time, in virtual time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Landlord, RenewalManager, Policy, grantRequest, leaseFromReply } from 'leasehold';

// Drives a manager against a landlord by hand: replies arrive `rtt` ms after their request.
// Returns the events with the time they were polled at.
function run(m, ll, rtt, until) {
  const events = [];
  const inFlight = []; // [deliverAt, request]
  let now = 0;
  for (let steps = 0; steps < 100_000 && now <= until; steps++) {
    const t = m.pollTimeout();
    const next = Math.min(t ?? Infinity, inFlight.length ? inFlight[0][0] : Infinity);
    if (next === Infinity) break;
    now = Math.max(now, next);
    while (inFlight.length && inFlight[0][0] <= now) {
      const [, request] = inFlight.shift();
      m.handleReply(ll.handleRequest(request, now - Math.floor(rtt / 2)), now);
    }
    m.handleTimeout(now);
    let tx;
    while ((tx = m.pollTransmit(now)) !== undefined) inFlight.push([now + rtt, tx.request]);
    let e;
    while ((e = m.pollEvent()) !== undefined) events.push({ ...e, at: now });
  }
  return events;
}

for (const rtt of [0, 1, 7, 40, 333]) {
  test(`desiredExpirationReached carries desiredExpiration and comes no earlier (rtt ${rtt} ms)`, () => {
    const ll = new Landlord({ id: 4, seed: new Uint8Array(32).fill(4), policy: Policy.bounded(10_000, 10_000) });
    const m = new RenewalManager({ initialRtt: Math.max(1, rtt), minRto: 10 });
    const desired = [25_000, 60_001, 33_333];
    const leases = desired.map((d, i) => {
      const lease = leaseFromReply(ll.handleRequest(grantRequest(i + 1, `r${i}`, 10_000), 0), 0);
      m.renewUntil(lease, d, 10_000, 0);
      return lease;
    });
    const events = run(m, ll, rtt, 120_000);
    const reached = events.filter((e) => e.type === 'desiredExpirationReached');
    assert.equal(reached.length, leases.length, JSON.stringify(events.map((e) => e.type)));
    for (const e of reached) {
      const i = leases.findIndex((l) => l.equals(e.lease));
      assert.ok(i >= 0);
      assert.equal(typeof e.desiredExpiration, 'number');
      assert.equal(e.desiredExpiration, desired[i]);
      assert.ok(e.at >= e.desiredExpiration, `event at ${e.at} before desired ${e.desiredExpiration}`);
    }
    assert.equal(events.filter((e) => e.type === 'renewalFailed').length, 0);
    assert.equal(m.size, 0);
  });
}
