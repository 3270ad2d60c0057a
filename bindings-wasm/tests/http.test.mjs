// A real loopback HTTP test: a landlord in a Node http server on 127.0.0.1, holders renewing
// with fetch through RenewalDriver, one holder stopped and its lease expiring at the landlord,
// one lease cancelled. Short leases (1 s), so it takes a few seconds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import {
  Landlord, LandlordDriver, RenewalManager, RenewalDriver, fetchTransport, Policy, FOREVER,
  LeaseDeniedError,
} from 'leasehold';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function startLandlord() {
  const landlord = new Landlord({ id: 0x77, policy: Policy.capacity(4, Policy.bounded(1000, 1000)) });
  const expired = [];
  const driver = new LandlordDriver(landlord, {
    onExpired: (e) => expired.push({ ...e, holder: new TextDecoder().decode(e.resource), at: Date.now() }),
  });
  let requests = 0;
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    requests++;
    const reply = driver.serve(new Uint8Array(Buffer.concat(chunks)));
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(reply);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}/lease`;
  return {
    landlord, driver, expired, url, requests: () => requests,
    close: () => new Promise((r) => { driver.close(); server.closeAllConnections(); server.close(r); }),
  };
}

test('holders renew over HTTP; a stopped holder\'s lease expires; a cancel is honoured', async () => {
  const ll = await startLandlord();
  const events = { h1: [], h2: [], h3: [] };
  const holders = {};
  const leases = {};
  for (const name of ['h1', 'h2', 'h3']) {
    holders[name] = new RenewalDriver(new RenewalManager({ initialRtt: 20, minRto: 20 }), {
      transport: fetchTransport(ll.url),
      onEvent: (e) => events[name].push(e),
    });
    leases[name] = await holders[name].grant(name, 1000);
    assert.ok(leases[name].expiration <= Date.now() + 1000, 'counted from the send time');
    holders[name].renewFor(leases[name], FOREVER, 1000);
  }
  assert.equal(ll.landlord.size, 3);

  // capacity 4: a fourth grant works, a fifth is denied by the landlord's policy
  const extra = await holders.h1.grant('extra', 100);
  await assert.rejects(holders.h1.grant('denied', 100), LeaseDeniedError);

  await sleep(2500);
  const renewedBeforeStop = events.h2.filter((e) => e.type === 'renewed').length;
  assert.ok(renewedBeforeStop >= 2, `h2 renewed ${renewedBeforeStop} times in 2.5 s`);
  const stoppedAt = Date.now();
  holders.h2.close(); // h2 stops: no more renewals
  assert.ok(holders.h2.closed);

  await sleep(1800);
  const h2exp = ll.expired.find((e) => e.holder === 'h2');
  assert.ok(h2exp, 'h2\'s lease expired at the landlord');
  assert.equal(h2exp.cookie, leases.h2.cookie);
  assert.ok(h2exp.at - stoppedAt <= 1600, `expired ${h2exp.at - stoppedAt} ms after the stop`);
  assert.ok(ll.expired.some((e) => e.holder === 'extra'), 'the unrenewed extra lease expired too');
  assert.equal(ll.landlord.has(leases.h2.cookie, Date.now()), false);
  for (const name of ['h1', 'h3']) {
    assert.ok(ll.landlord.has(leases[name].cookie, Date.now()), `${name} still holds its lease`);
    assert.ok(events[name].filter((e) => e.type === 'renewed').length >= 5, `${name} kept renewing`);
    assert.ok(!events[name].some((e) => e.type === 'renewalFailed'));
    assert.ok(holders[name].manager.lease(leases[name]).expiration > Date.now());
  }

  holders.h3.cancel(leases.h3);
  await sleep(200);
  assert.equal(ll.landlord.has(leases.h3.cookie, Date.now()), false, 'cancelled at the landlord');
  assert.equal(holders.h3.manager.size, 0);
  assert.equal(holders.h3.manager.stats.leasesCancelled, 1);

  for (const h of Object.values(holders)) h.close();
  await ll.close();
  void extra;
});

test('a holder whose landlord is gone reports the lease as failed when it runs out', async () => {
  const ll = await startLandlord();
  const events = [];
  const d = new RenewalDriver(new RenewalManager({ initialRtt: 20, minRto: 20, maxRetryInterval: 100 }), {
    transport: fetchTransport(ll.url),
    onEvent: (e) => events.push(e),
  });
  const lease = await d.grant('lonely', 800);
  d.renewFor(lease, FOREVER, 800);
  await ll.close(); // the server goes away: every renewal now fails indefinitely
  await sleep(1500);
  const failed = events.find((e) => e.type === 'renewalFailed');
  assert.ok(failed, 'renewalFailed reported');
  assert.equal(failed.lease.cookie, lease.cookie);
  assert.ok(failed.error === undefined || failed.error.isDefinite === false || failed.error.code === 6);
  d.close();
});
