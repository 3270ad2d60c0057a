// Unit tests of the `leasehold` package, run against the package installed from its tarball.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as lh from 'leasehold';
import {
  Landlord,
  Lease,
  LandlordDriver,
  FOREVER,
  ANY,
  DURATION,
  ABSOLUTE,
  Policy,
  ErrorCode,
  LeaseError,
  UnknownLeaseError,
  LeaseDeniedError,
  InvalidArgumentError,
  ArgumentTypeError,
  DecodeError,
  encodeRequest,
  decodeRequest,
  encodeReply,
  decodeReply,
  errorFromWire,
} from 'leasehold';

const seed = new Uint8Array(32).fill(7);
const mk = (policy = Policy.bounded(60_000, 30_000), extra = {}) =>
  new Landlord({ id: 1, seed, policy, ...extra });

test('package exports the documented API', () => {
  for (const name of [
    'Lease', 'Landlord', 'LandlordDriver', 'FOREVER', 'ANY', 'DURATION', 'ABSOLUTE', 'Policy',
    'ErrorCode', 'LeaseError', 'UnknownLeaseError', 'LeaseDeniedError', 'LeaseMapError',
    'DecodeError', 'IndefiniteError', 'InvalidArgumentError', 'ArgumentTypeError',
    'encodeRequest', 'decodeRequest', 'encodeReply', 'decodeReply', 'errorFromWire',
  ]) {
    assert.ok(name in lh, `missing export ${name}`);
  }
  assert.equal(FOREVER, Infinity);
  assert.equal(ANY, -1);
  assert.equal(DURATION, 1);
  assert.equal(ABSOLUTE, 2);
  assert.equal(typeof lh.coreVersion(), 'string');
});

test('grant, renew, cancel with a bounded policy', () => {
  const ll = mk();
  assert.equal(ll.id, '0000000000000001');
  const g = ll.grant({ name: 'printer' }, ANY, 1000);
  assert.match(g.cookie, /^[0-9a-f]{32}$/);
  assert.equal(g.duration, 30_000);
  assert.equal(g.expiration, 31_000);
  assert.equal(ll.size, 1);
  assert.equal(ll.renew(g.cookie, 100_000, 2000), 60_000);
  assert.deepEqual(ll.get(g.cookie, 2000), { expiration: 62_000, resource: { name: 'printer' } });
  assert.ok(ll.has(g.cookie, 2000));
  const lease = ll.lease(g.cookie, 2000);
  assert.ok(lease instanceof Lease);
  assert.equal(lease.cookie, g.cookie);
  assert.equal(lease.landlord, ll.id);
  assert.deepEqual(ll.cancel(g.cookie, 3000), { name: 'printer' });
  assert.equal(ll.size, 0);
  assert.throws(() => ll.renew(g.cookie, 10, 3000), UnknownLeaseError);
  assert.equal(ll.get(g.cookie, 3000), undefined);
});

test('FOREVER round-trips exactly through grant, renew, get and the serial forms', () => {
  const ll = mk(Policy.fixed(FOREVER));
  const g = ll.grant('r', FOREVER, 5);
  assert.equal(g.duration, FOREVER);
  assert.equal(g.expiration, FOREVER);
  assert.equal(ll.renew(g.cookie, FOREVER, 10), FOREVER);
  assert.equal(ll.pollTimeout(), undefined);
  const lease = ll.lease(g.cookie, 10);
  assert.equal(lease.expiration, FOREVER);
  assert.equal(lease.remaining(1e12), FOREVER);
  assert.equal(lease.isExpired(8e15), false);
  const again = Lease.fromJson(lease.toJson(10), 999);
  assert.equal(again.expiration, FOREVER);
  assert.ok(lease.toJson(10).includes('"duration":"9223372036854775807"'));
  assert.equal(Lease.fromBytes(lease.toBytes(10), 77).expiration, FOREVER);
  assert.deepEqual(ll.policy, { kind: 'fixed', duration: Infinity });
});

test('every built-in policy can be built and decides', () => {
  const fixed = mk(Policy.fixed(5000));
  assert.equal(fixed.grant('a', 10_000, 0).duration, 5000);
  assert.equal(fixed.grant('a', 100, 0).duration, 100);

  const cap = mk(Policy.capacity(2, Policy.fixed(1000)));
  cap.grant(1, ANY, 0);
  cap.grant(2, ANY, 0);
  const denied = (() => {
    try {
      cap.grant(3, ANY, 0);
    } catch (e) {
      return e;
    }
  })();
  assert.ok(denied instanceof LeaseDeniedError);
  assert.ok(denied instanceof LeaseError);
  assert.equal(denied.code, ErrorCode.LEASE_DENIED);
  assert.equal(denied.name, 'LeaseDeniedError');
  assert.match(denied.message, /capacity/);
  assert.equal(cap.size, 2, 'a denied grant leaves the landlord as it was');

  const ra = mk(Policy.resourceAware(10, 10_000, 1000));
  assert.equal(ra.grant('x', ANY, 0).duration, 10_000);
  assert.ok(ra.grant('y', ANY, 0).duration < 10_000);

  const ad = mk(Policy.adaptive({ renewalsPerSecond: 1, min: 1000, max: 3000 }));
  assert.equal(ad.grant('h1', ANY, 0).duration, 1000);
  assert.equal(ad.grant('h2', ANY, 0).duration, 2000);
  assert.equal(ad.grant('h3', ANY, 0).duration, 3000);
  assert.throws(() => ad.grant('h4', ANY, 0), LeaseDeniedError);
  assert.equal(ad.policy.kind, 'adaptive');

  const bw = mk(Policy.adaptive({ bytesPerSecond: 100, requestSize: 50, grantSize: 50, min: 500, max: 60_000 }));
  assert.equal(bw.grant('h', ANY, 0).duration, 1000);
});

test('bad policy settings are InvalidArgumentError (RangeError) from the core', () => {
  assert.throws(() => mk(Policy.fixed(0)), InvalidArgumentError);
  assert.throws(() => mk(Policy.fixed(0)), RangeError);
  assert.throws(() => mk(Policy.bounded(10, 20)), /default 20 is more than max 10/);
  assert.throws(() => mk({ kind: 'nope' }), /unknown policy kind/);
  assert.throws(() => mk({}), ArgumentTypeError);
  assert.throws(() => new Landlord({ id: 1, policy: Policy.fixed(1) , seed: new Uint8Array(3) }), /seed must be 32 bytes/);
  assert.throws(() => new Landlord(), TypeError);
});

test('numbers: NaN, fractions, negatives, unsafe values and wrong types are refused clearly', () => {
  const ll = mk();
  const cases = [
    [NaN, RangeError, /NaN/],
    [1.5, RangeError, /whole number/],
    [-5, RangeError, /negative and not ANY/],
    [2 ** 53, RangeError, /MAX_SAFE_INTEGER/],
    [-Infinity, RangeError, /-Infinity/],
    ['10', TypeError, /number of milliseconds, got the string "10"/],
    [undefined, TypeError, /got undefined/],
    [null, TypeError, /got null/],
    [2n ** 70n, RangeError, /bigint does not fit in 64 signed bits/],
    [{}, TypeError, /got an object/],
  ];
  for (const [v, cls, re] of cases) {
    assert.throws(() => ll.grant('r', v, 0), (e) => e instanceof cls && re.test(e.message) && e.code === 4, String(v));
  }
  assert.throws(() => ll.grant('r', 10, 0.5), RangeError);
  assert.throws(() => ll.renew('xyz', 10, 0), /cookie must be 32 hex digits/);
  assert.throws(() => ll.renew(42, 10, 0), ArgumentTypeError);
  assert.equal(ll.size, 0, 'refused calls change nothing');
  // ANY is the only negative duration accepted; exact bigints are accepted too
  assert.equal(ll.grant('r', -1, 0).duration, 30_000);
  assert.equal(ll.grant('r', 10n, 0).duration, 10);
  // a result past the safe range comes back as an exact bigint, and goes back in as one
  const far = mk(Policy.fixed(FOREVER)).grant('far', 2 ** 53 - 1, 2 ** 53 - 1);
  assert.equal(far.expiration, 2n ** 54n - 2n);
  const l = new Lease(1, 'ab'.repeat(16), far.expiration);
  assert.equal(l.expiration, 2n ** 54n - 2n);
});

test('renewAll and cancelAll give one outcome per lease, failures included', () => {
  const ll = mk();
  const a = ll.grant('a', 1000, 0).cookie;
  const b = ll.grant('b', 1000, 0).cookie;
  const ghost = '0'.repeat(31) + '1';
  const r = ll.renewAll([[a, 5000], [ghost, 5000], [b, 100_000]], 10);
  assert.equal(r.length, 3);
  assert.deepEqual(r[0], { ok: true, value: 5000 });
  assert.equal(r[1].ok, false);
  assert.ok(r[1].error instanceof UnknownLeaseError);
  assert.deepEqual(r[2], { ok: true, value: 60_000 });
  const c = ll.cancelAll([a, ghost, b], 20);
  assert.deepEqual(c.map((x) => x.ok), [true, false, true]);
  assert.equal(c[0].value, 'a');
  assert.equal(c[2].value, 'b');
  assert.equal(ll.size, 0);
  assert.throws(() => ll.renewAll('nope', 0), TypeError);
  assert.throws(() => ll.renewAll([[a]], 0), TypeError);
  assert.deepEqual(ll.renewAll([{ cookie: a, duration: 5 }], 30).map((x) => x.ok), [false]);
});

test('expiry: pollTimeout, handleTimeout, pollExpired, grace', () => {
  const ll = mk(Policy.fixed(10_000), { grace: 500 });
  assert.equal(ll.grace, 500);
  const g = ll.grant('short', 1000, 0);
  ll.grant('long', 5000, 0);
  const due = ll.pollTimeout();
  assert.ok(due > 0 && due <= 1501, `wake-up ${due} no later than the first deadline`);
  ll.handleTimeout(1500);
  assert.equal(ll.pollExpired(), undefined);
  assert.ok(ll.has(g.cookie, 1400), 'honoured during grace');
  ll.handleTimeout(1501);
  const e = ll.pollExpired();
  assert.deepEqual(e, { cookie: g.cookie, expiration: 1000, resource: 'short' });
  assert.equal(ll.pollExpired(), undefined);
  assert.equal(ll.size, 1);
  assert.equal([...ll].length, 1);
  assert.equal(ll.entries()[0].resource, 'long');
});

test('lease serial forms: DURATION follows the reader clock, ABSOLUTE does not', () => {
  const l = new Lease('00000000000000ff', 'ab'.repeat(16), 10_000);
  assert.equal(l.serialFormat, DURATION);
  const j = l.toJson(4000);
  assert.equal(j, `{"v":1,"format":"duration","landlord":"00000000000000ff","cookie":"${'ab'.repeat(16)}","duration":"6000"}`);
  const read = Lease.fromJson(j, 100_000);
  assert.equal(read.expiration, 106_000);
  assert.ok(read.equals(l));
  assert.ok(read.canBatch(new Lease(255, '00'.repeat(16), 0)));
  assert.ok(!read.canBatch(new Lease(254, '00'.repeat(16), 0)));
  l.serialFormat = ABSOLUTE;
  const b = l.toBytes(4000);
  assert.ok(b instanceof Uint8Array);
  assert.equal(b.length, 36);
  assert.equal(Lease.fromBytes(b, 1).expiration, 10_000);
  assert.equal(Lease.fromBytes(b, 1).serialFormat, ABSOLUTE);
  l.serialFormat = 'duration';
  assert.equal(l.serialFormat, DURATION);
  assert.throws(() => { l.serialFormat = 3; }, RangeError);
  l.expiration = 50;
  assert.equal(l.expiration, 50);
  assert.equal(l.remaining(60), -10);
  assert.ok(l.isExpired(50));
  const fg = Lease.fromGrant(1, 'cd'.repeat(16), 1000, 5000);
  assert.equal(fg.expiration, 6000);
  assert.match(String(fg), /Lease\(landlord 0000000000000001/);
});

test('decode errors are DecodeError with code 5', () => {
  assert.throws(() => Lease.fromBytes(new Uint8Array(35), 0), (e) => e instanceof DecodeError && e.code === 5 && /36 bytes/.test(e.message));
  assert.throws(() => Lease.fromJson('{"v":2}', 0), DecodeError);
  assert.throws(() => Lease.fromJson('x'.repeat(5000), 0), /more than the 1024 allowed/);
  assert.throws(() => decodeRequest(new Uint8Array([0x4c, 1, 0x10]), 'binary'), DecodeError);
});

test('wire protocol: object form, both encodings, handleRequest and handleBytes', () => {
  const ll = mk();
  const reqs = [
    { id: 1, body: { op: 'grant', resource: new Uint8Array([1, 2, 3]), duration: ANY } },
    { id: 2, body: { op: 'renew', cookie: 'ab'.repeat(16), duration: FOREVER } },
    { id: 3, body: { op: 'cancel', cookie: 'ab'.repeat(16) } },
    { id: 4, body: { op: 'renew_all', items: [{ cookie: 'ab'.repeat(16), duration: 5 }, { cookie: 'cd'.repeat(16), duration: FOREVER }] } },
    { id: 2 ** 53 - 1, body: { op: 'cancel_all', cookies: ['ab'.repeat(16)] } },
  ];
  for (const enc of ['binary', 'json']) {
    for (const r of reqs) {
      const bytes = encodeRequest(r, enc);
      assert.equal(typeof bytes, enc === 'json' ? 'string' : 'object');
      assert.deepEqual(decodeRequest(bytes, enc), r);
    }
  }
  const big = decodeRequest(encodeRequest({ id: 2n ** 64n - 1n, body: { op: 'cancel', cookie: '00'.repeat(16) } }));
  assert.equal(big.id, 2n ** 64n - 1n);

  const granted = ll.handleRequest(reqs[0], 0);
  assert.equal(granted.id, 1);
  assert.equal(granted.landlord, ll.id);
  assert.equal(granted.body.op, 'granted');
  assert.equal(granted.body.duration, 30_000);
  assert.deepEqual(ll.get(granted.body.cookie, 0).resource, new Uint8Array([1, 2, 3]));

  const unknown = ll.handleRequest({ id: 9, body: { op: 'renew', cookie: '11'.repeat(16), duration: 5 } }, 0);
  assert.deepEqual(unknown.body, { op: 'error', code: 1, message: '' });
  assert.ok(errorFromWire(unknown.body) instanceof UnknownLeaseError);

  for (const enc of ['binary', 'json']) {
    const reply = decodeReply(ll.handleBytes(encodeRequest({ id: 7, body: { op: 'renew_all', items: [[granted.body.cookie, 1000], ['11'.repeat(16), 5]] } }, enc), 10, enc), enc);
    assert.equal(reply.id, 7);
    assert.deepEqual(reply.body.results[0], { duration: 1000 });
    assert.deepEqual(reply.body.results[1], { error: { code: 1, message: '' } });
    assert.deepEqual(decodeReply(encodeReply(reply, enc), enc), reply);
  }
  // garbage gets an error reply with id 0, never a throw
  const bad = decodeReply(ll.handleBytes(new Uint8Array([1, 2, 3]), 0));
  assert.equal(bad.id, 0);
  assert.equal(bad.body.code, ErrorCode.DECODE);
});

test('LandlordDriver expires leases on setTimeout and close() stops it', async () => {
  const ll = mk(Policy.fixed(60_000));
  const expired = [];
  const done = new Promise((resolve) => {
    const d = new LandlordDriver(ll, {
      keepAlive: true, // the test waits on nothing else
      now: () => Date.now(),
      onExpired: (e) => {
        expired.push(e);
        if (expired.length === 2) resolve(d);
      },
    });
    d.grant('a', 30);
    d.grant('b', 60);
    d.grant('c', 60_000);
  });
  const d = await done;
  assert.deepEqual(expired.map((e) => e.resource), ['a', 'b']);
  assert.equal(ll.size, 1);
  d.close();
  assert.ok(d.closed);
  d[Symbol.dispose]();
});

test('after close() no timer of the library keeps Node alive', async () => {
  const { spawn } = await import('node:child_process');
  const script = `
    import { Landlord, LandlordDriver, RenewalManager, RenewalDriver, Lease, Policy, FOREVER } from 'leasehold';
    const ll = new Landlord({ id: 1, policy: Policy.fixed(3_600_000) });
    const d = new LandlordDriver(ll, { keepAlive: true });
    d.grant('x', 3_600_000);
    const m = new RenewalManager();
    const r = new RenewalDriver(m, { keepAlive: true, transport: () => new Promise(() => {}) });
    r.renewFor(new Lease(1, 'ab'.repeat(16), Date.now() + 3_600_000), FOREVER, 3_600_000);
    d.close();
    r.close();
  `;
  const start = Date.now();
  const code = await new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' });
    const t = setTimeout(() => { p.kill(); reject(new Error('node stayed alive after close()')); }, 10_000);
    p.on('exit', (c) => { clearTimeout(t); resolve(c); });
  });
  assert.equal(code, 0);
  assert.ok(Date.now() - start < 10_000);
});
