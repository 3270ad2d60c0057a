// No user code runs while the binding holds a borrow (issue 13, finding 1): getters, proxies,
// error objects, transports and event handlers that call back into the same object work, throw
// their own error, or end cleanly; they never hang, panic or poison the object.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Landlord, LeaseMap, RenewalManager, RenewalService, LandlordDriver, RenewalDriver, Policy,
  grantRequest, leaseFromReply, encodeReply, decodeRequest, UnknownLeaseError, FOREVER,
} from 'leasehold';

const seed = (b) => new Uint8Array(32).fill(b);
const landlord = (policy = Policy.fixed(1000)) => new Landlord({ id: 7, seed: seed(1), policy });

// After a re-entrant episode the object must still answer every kind of call, and be freeable.
function healthy(ll, now = 0) {
  const g = ll.grant('after', 500, now);
  assert.equal(ll.renew(g.cookie, 500, now + 1), 500);
  assert.equal(ll.cancel(g.cookie, now + 2), 'after');
  assert.equal(typeof ll.size, 'number');
}

test('renewAll: item getters that call the same landlord (read and write) work', () => {
  const ll = landlord();
  const a = ll.grant('a', 1000, 0).cookie;
  const b = ll.grant('b', 1000, 0).cookie;
  const seen = [];
  const item = {
    get cookie() {
      seen.push(ll.size); // read
      ll.grant('from-getter', 1000, 1); // write
      return a;
    },
    get duration() {
      seen.push(ll.renew(b, 800, 1)); // another write, on another lease
      return 900;
    },
  };
  const out = ll.renewAll([item, [b, 700]], 2);
  assert.deepEqual(out.map((o) => o.ok), [true, true]);
  assert.deepEqual(seen, [2, 800]);
  assert.equal(ll.size, 3);
  healthy(ll, 3);
});

test('cancelAll and renewAll: a proxy array whose traps call back in, then throw', () => {
  const ll = landlord();
  const cookies = [ll.grant('x', 1000, 0).cookie, ll.grant('y', 1000, 0).cookie];
  const trapped = new Proxy(cookies, {
    get(target, key, recv) {
      if (key === 'length') ll.has(cookies[0], 1);
      return Reflect.get(target, key, recv);
    },
  });
  const res = ll.cancelAll(trapped, 1);
  assert.deepEqual(res.map((r) => r.value), ['x', 'y']);
  // a trap that throws: its own error comes out, and nothing is left borrowed
  const boom = new Proxy([], { get() { throw new SyntaxError('boom from a trap'); } });
  assert.throws(() => ll.renewAll(boom, 2), /boom from a trap/);
  assert.throws(() => ll.cancelAll(boom, 2), /boom from a trap/);
  const revocable = Proxy.revocable([], {});
  revocable.revoke();
  assert.throws(() => ll.cancelAll(revocable.proxy, 2), TypeError);
  healthy(ll, 3);
  ll.free(); // freeing works: no borrow was leaked by the errors above
  assert.throws(() => ll.size);
});

test('handleRequest: request getters that call the same landlord work', () => {
  const ll = landlord();
  const c = ll.grant('r', 1000, 0).cookie;
  const request = {
    id: 5,
    get body() {
      ll.renew(c, 1000, 1);
      return { op: 'cancel', get cookie() { assert.equal(ll.size, 1); return c; } };
    },
  };
  const reply = ll.handleRequest(request, 2);
  assert.equal(reply.body.op, 'cancelled');
  assert.equal(ll.size, 0);
  healthy(ll, 3);
});

test('free() from inside a call: the call completes, then the landlord is gone', () => {
  const ll = landlord();
  const c = ll.grant('r', 1000, 0).cookie;
  const item = { get cookie() { ll.free(); return c; }, duration: 300 };
  const out = ll.renewAll([item], 1);
  assert.equal(out[0].ok, true);
  assert.equal(out[0].value, 300);
  assert.throws(() => ll.size, /null pointer|ptr/);
  ll.free(); // a second free is harmless
});

test('LeaseMap.applyRenewAll: reply getters that use the same map work', () => {
  const ll = landlord(Policy.bounded(10_000, 5000));
  const lease = leaseFromReply(ll.handleRequest(grantRequest(1, 'r', 5000), 0), 0);
  const map = new LeaseMap();
  map.set(lease, 5000);
  const real = ll.handleRequest(map.renewAllRequest(2), 10);
  const reply = {
    get id() { assert.equal(map.size, 1); return real.id; },
    get landlord() { assert.ok(map.has(lease)); return real.landlord; },
    body: real.body,
  };
  map.applyRenewAll(reply, 10);
  assert.equal(map.get(lease).lease.expiration, 5010);
});

test('RenewalManager: handleReply getters and handleFailure error getters that call the manager work', () => {
  const ll = landlord(Policy.bounded(10_000, 10_000));
  const lease = leaseFromReply(ll.handleRequest(grantRequest(1, 'r', 10_000), 0), 0);
  const m = new RenewalManager({ initialRtt: 10, minRto: 10 });
  m.renewFor(lease, 60_000, 10_000, 0);
  m.handleTimeout(9000);
  const t = m.pollTransmit(9000);
  assert.ok(t);
  const real = ll.handleRequest(t.request, 9001);
  const reply = {
    get id() { assert.equal(m.size, 1); m.pollTimeout(); return real.id; },
    landlord: real.landlord,
    get body() { assert.ok(m.lease(lease)); return real.body; },
  };
  m.handleReply(reply, 9002);
  assert.ok(m.lease(lease).expiration > 18_000, 'renewed from the reply');
  // an error object whose getters call back into the manager
  m.handleTimeout(18_000);
  const t2 = m.pollTransmit(18_000);
  assert.ok(t2);
  const err = { get message() { m.handleTimeout(18_001); return 'link down'; }, get code() { return m.size === 1 ? undefined : 0; } };
  m.handleFailure(t2.request.id, err, 18_002);
  assert.equal(m.stats.indefiniteFailures, 1);
  // a getter that throws: its error comes out, the manager keeps working
  const bad = { get message() { throw new EvalError('getter failed'); } };
  assert.doesNotThrow(() => m.handleFailure(t2.request.id, bad, 18_003)); // failure_in reads defensively
  const hostile = { get id() { throw new EvalError('id getter'); }, landlord: real.landlord, body: real.body };
  assert.throws(() => m.handleReply(hostile, 18_004), /id getter/);
  assert.equal(m.size, 1);
  m.free();
});

test('RenewalService: request getters, handleFailure getters and the set handle work', () => {
  const svc = new RenewalService({ id: 9, seed: seed(3) });
  const { set, lease } = svc.createSet(60_000, 0);
  const request = {
    id: 3,
    get body() {
      assert.deepEqual(svc.sets(), [set]);
      return { op: 'renew', cookie: lease.cookie, get duration() { svc.setLease(set, 1); return 30_000; } };
    },
  };
  assert.equal(svc.handleRequest(request, 1).body.op, 'renewed');
  const err = { get message() { svc.pollTimeout(); return 'down'; } };
  svc.handleFailure(77, err, 2); // unknown request id: ignored, but the getter ran with nothing borrowed
  assert.equal(svc.setLease(set, 2).cookie, lease.cookie);
});

test('LandlordDriver: onExpired may grant, cancel, close the driver or free the landlord', async () => {
  let now = 0;
  const ll = landlord(Policy.bounded(10_000, 10));
  const seen = [];
  const errors = [];
  let driver;
  const other = ll.grant('other', 1000, 0).cookie;
  driver = new LandlordDriver(ll, {
    now: () => now,
    onError: (e) => errors.push(e),
    onExpired: (e) => {
      seen.push(e.resource);
      if (seen.length === 1) driver.grant('from-handler', 10); // re-entrant grant
      if (seen.length === 2) assert.equal(ll.cancel(other, now), 'other');
      if (seen.length === 3) ll.free(); // the loop must stop cleanly
    },
  });
  driver.grant('a', 10);
  driver.grant('b', 10);
  driver.grant('c', 10);
  now = 100;
  driver.update();
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual([...seen].sort(), ['a', 'b', 'c']);
  assert.deepEqual(errors, []);
  assert.equal(driver.closed, true, 'a freed landlord closes its driver');
});

test('RenewalDriver: a transport and onEvent that call back in, and free the manager, end cleanly', async () => {
  let now = 0;
  const ll = landlord(Policy.bounded(1000, 1000));
  const m = new RenewalManager({ initialRtt: 1, minRto: 1 });
  const errors = [];
  const events = [];
  let driver;
  const transport = async (body) => {
    assert.equal(typeof m.size, 'number'); // the manager answers from inside its own pump
    driver.pump(); // re-entrant pump
    return ll.handleBytes(body, now);
  };
  driver = new RenewalDriver(m, {
    transport,
    now: () => now,
    onError: (e) => errors.push(e),
    onEvent: (e) => {
      events.push(e.type);
      if (e.type === 'desiredExpirationReached') {
        driver.renewFor(e.lease, 10, 1000); // re-entrant call into the manager
        m.free(); // then free it: the driver must stop, not throw
      }
    },
  });
  const lease = await driver.grant('r', 1000);
  driver.renewFor(lease, 1500, 1000);
  for (let t = 0; t <= 5000 && !driver.closed; t += 50) {
    now = t;
    if (!driver.closed) m.handleTimeout(now);
    driver.pump();
    await new Promise((r) => setImmediate(r));
  }
  assert.ok(events.includes('desiredExpirationReached'), events.join());
  assert.equal(driver.closed, true);
  assert.deepEqual(errors, []);
  // late replies to a freed manager are ignored
  await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(errors, []);
});

test('a renewal driver whose transport throws synchronously reports an indefinite failure', async () => {
  const m = new RenewalManager({ initialRtt: 1, minRto: 1, attempts: 2 });
  const ll = landlord(Policy.bounded(1000, 1000));
  const lease = leaseFromReply(ll.handleRequest(grantRequest(1, 'r', 1000), 0), 0);
  let now = 0;
  let calls = 0;
  const driver = new RenewalDriver(m, {
    now: () => now,
    transport: () => {
      calls++;
      m.pollTimeout(); // re-entrant read, then a synchronous throw
      throw new Error('no route');
    },
  });
  driver.renewFor(lease, FOREVER, 1000);
  now = 900;
  m.handleTimeout(now);
  driver.pump();
  await new Promise((r) => setImmediate(r));
  assert.ok(calls >= 1);
  assert.ok(m.stats.indefiniteFailures >= 1);
  driver.close();
});

test('decodeRequest and encodeReply are not tied to any object: getters may do anything', () => {
  const ll = landlord();
  const reply = { id: 1, get landlord() { ll.grant('x', 10, 0); return ll.id; }, body: { op: 'cancelled' } };
  const bytes = encodeReply(reply);
  assert.ok(bytes.length > 0);
  assert.equal(ll.size, 1);
  assert.throws(() => decodeRequest(new Uint8Array([1, 2, 3])));
  assert.throws(() => ll.cancel('00'.repeat(16), 0), UnknownLeaseError);
});
