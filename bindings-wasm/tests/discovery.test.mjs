// The lookup discovery service through the package: the shared discovery vectors (the same file
// the Rust, C and Python tests read), the event semantics of LD.3 and LD.4 on virtual time, the
// DiscoveryDriver with Promises, and a durable service on real files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DiscoveryService, DiscoveryDriver, ALL_GROUPS, NO_GROUPS, FOREVER, ANY, ErrorCode,
  encodeDiscoveryRequest, decodeDiscoveryRequest, encodeDiscoveryReply, decodeDiscoveryReply,
  encodeDiscoveryEvent, decodeDiscoveryEvent, encodeEventReply, decodeEventReply,
  encodeAnnouncement, decodeAnnouncement, discoveryEventFromBytes, encodeRequest, decodeReply,
  LeaseError, UnknownLeaseError, InvalidArgumentError, ArgumentTypeError, DecodeError, Lease,
} from 'leasehold';

const vectors = JSON.parse(readFileSync(join(process.env.LEASEHOLD_ROOT, 'core/tests/vectors/discovery.json'), 'utf8'));
const hex = (b) => Buffer.from(b).toString('hex');
const unhex = (s) => new Uint8Array(Buffer.from(s, 'hex'));
const big = (s) => (BigInt(s) <= 2n ** 53n - 1n ? Number(s) : BigInt(s));
const limitsOf = (l) => l && { maxMessageBytes: l.max_message_bytes, maxBatch: l.max_batch, maxResourceBytes: l.max_resource_bytes };
const codecs = {
  request: [encodeDiscoveryRequest, decodeDiscoveryRequest],
  reply: [encodeDiscoveryReply, decodeDiscoveryReply],
  event: [encodeDiscoveryEvent, decodeDiscoveryEvent],
  event_reply: [encodeEventReply, decodeEventReply],
};

test('discovery vectors: every message encodes to the shared bytes and text and decodes back', () => {
  let n = 0;
  for (const [set, kind] of [['requests', 'request'], ['replies', 'reply'], ['events', 'event'], ['event_replies', 'event_reply']]) {
    const [encode, decode] = codecs[kind];
    for (const v of vectors[set]) {
      assert.equal(hex(encode(v.message, 'binary')), v.hex, `${v.name}: binary`);
      assert.equal(encode(v.message, 'json'), v.json, `${v.name}: json`);
      assert.deepEqual(decode(unhex(v.hex), 'binary'), v.message, `${v.name}: decode binary`);
      assert.deepEqual(decode(v.json, 'json'), v.message, `${v.name}: decode json`);
      n++;
    }
  }
  // An event in the camelCase form a listener works with.
  const e = discoveryEventFromBytes(unhex(vectors.events[1].hex));
  assert.equal(e.discarded, true);
  assert.equal(e.sequence, 9007199254740993n);
  assert.deepEqual(e.registrars, [{ id: '11112222333344445555666677778888', groups: [], locators: ['10.0.0.5:4160'] }]);
  assert.equal(n, vectors.requests.length + vectors.replies.length + vectors.events.length + vectors.event_replies.length);
});

test('discovery vectors: announcement datagrams', () => {
  for (const v of vectors.announcements) {
    const a = v.announcement;
    const want = { registrar: a.registrar, groups: a.groups, locator: a.locator, sequence: big(a.sequence), ttl: Number(a.ttl) };
    assert.deepEqual(decodeAnnouncement(unhex(v.hex)), want, v.name);
    assert.equal(hex(encodeAnnouncement(want)), v.hex, v.name);
  }
  assert.equal(vectors.announcement_max_bytes, 1200);
});

test('discovery vectors: what must decode does, what must not is refused with its code', () => {
  let refused = 0;
  for (const v of vectors.decode) {
    const input = v.encoding === 'json' ? v.text : unhex(v.hex);
    const run = () => (v.kind === 'announcement'
      ? decodeAnnouncement(unhex(v.hex))
      : codecs[v.kind][1](input, v.encoding, limitsOf(v.limits)));
    if ('error_code' in v) {
      assert.throws(run, (e) => e instanceof LeaseError && e.code === v.error_code, `${v.name}: ${v.note}`);
      refused++;
    } else if (v.kind === 'announcement') {
      const a = v.announcement;
      assert.deepEqual(run(), { registrar: a.registrar, groups: a.groups, locator: a.locator, sequence: big(a.sequence), ttl: Number(a.ttl) }, v.name);
    } else {
      assert.deepEqual(run(), v.message, `${v.name}: ${v.note}`);
    }
  }
  assert.ok(refused > 40);
});

// ---------------------------------------------------------------------------------------------
// LD.3 / LD.4 on virtual time

const R1 = '00000000000000000000000000000001';
const R2 = '00000000000000000000000000000002';
const seed = new Uint8Array(32).fill(7);
const service = (o = {}) => new DiscoveryService({ id: 0x1d5, seed, ...o });
const ann = (registrar, groups, sequence, port = 4160, ttl = 3_000) => ({ registrar, groups, locator: `10.0.0.${registrar.at(-1)}:${port}`, sequence, ttl });

// Hands out every due event, reports each delivered, and returns them per registration.
function drain(svc, now) {
  const out = [];
  let e;
  while ((e = svc.pollEvent(now)) !== undefined) {
    out.push(e);
    assert.equal(svc.delivered(e.eventId, e.sequence, now), true);
  }
  return out;
}
const about = (events, reg) => events.filter((e) => e.source.object === reg);
const ids = (e) => e.registrars.map((r) => r.id);

test('LD.3: one discovered event per registrar until it is discarded; sequence numbers grow by one', () => {
  const svc = service();
  const g = svc.register(['printers', 'lab'], [], 'mine', 60_000, 0);
  assert.ok(g.lease instanceof Lease);
  assert.equal(g.lease.landlord, svc.id);
  assert.equal(g.eventRegistration.source.service, svc.id);
  svc.handleAnnouncement(ann(R1, ['printers'], 1), 10);
  svc.handleAnnouncement(ann(R1, ['printers'], 2), 20); // heard again: nothing new
  svc.handleDatagram(encodeAnnouncement(ann(R2, ['lab'], 1)), 30);
  const ev = drain(svc, 40);
  assert.deepEqual(ev.map((e) => [e.discarded, ids(e)]), [[false, [R1]], [false, [R2]]]);
  assert.equal(ev[0].sequence, g.eventRegistration.sequence + 1);
  assert.equal(ev[1].sequence, ev[0].sequence + 1);
  assert.equal(new TextDecoder().decode(ev[0].handback), 'mine');
  assert.equal(ev[0].eventId, g.eventRegistration.eventId);
  svc.handleAnnouncement(ann(R1, ['printers'], 3), 50);
  assert.deepEqual(drain(svc, 60), []);
  assert.deepEqual(svc.registrars(g.registration, 60).map((r) => r.id), [R1, R2]);
  // A second registration is told at once about what the service already knows.
  const all = svc.register(ALL_GROUPS, [], new Uint8Array(), ANY, 70);
  const first = drain(svc, 70);
  assert.equal(first.length, 1);
  assert.deepEqual(ids(first[0]), [R1, R2]);
  assert.equal(svc.groups(all.registration, 70), null);
  assert.notEqual(all.eventRegistration.eventId, g.eventRegistration.eventId);
});

test('LD.3: passive discards reach registrations that wanted the registrar by group, never by locator only', () => {
  const svc = service();
  const byGroup = svc.register(['printers'], [], 'g', 60_000, 0).registration;
  const byLocator = svc.register(NO_GROUPS, ['10.0.0.1:4160'], 'l', 60_000, 0).registration;
  const t = svc.pollTransmit(0);
  assert.deepEqual({ locator: t.locator }, { locator: '10.0.0.1:4160' });
  assert.equal(svc.unicastFound(t.id, encodeAnnouncement(ann(R1, ['printers'], 1)), 5), true);
  svc.handleAnnouncement(ann(R1, ['printers'], 1, 4160, 1_000), 10);
  let ev = drain(svc, 10);
  assert.deepEqual(about(ev, byGroup).map((e) => [e.discarded, ids(e)]), [[false, [R1]]]);
  assert.deepEqual(about(ev, byLocator).map((e) => [e.discarded, ids(e)]), [[false, [R1]]]);
  // Its announcements stop: after its ttl it is unreachable.
  const due = svc.pollTimeout();
  assert.ok(due !== undefined && due <= 1_010 + 1);
  svc.handleTimeout(1_100);
  ev = drain(svc, 1_100);
  assert.deepEqual(about(ev, byGroup).map((e) => [e.discarded, ids(e)]), [[true, [R1]]]);
  assert.deepEqual(about(ev, byLocator), []);
  assert.deepEqual(svc.registrars(byLocator, 1_100).map((r) => r.id), [R1]);
  assert.deepEqual(svc.registrars(byGroup, 1_100), []);
  // It comes back: discovered again by group; the locator registration never lost it.
  svc.handleAnnouncement(ann(R1, ['printers'], 2), 1_200);
  ev = drain(svc, 1_200);
  assert.deepEqual(about(ev, byGroup).map((e) => [e.discarded, ids(e)]), [[false, [R1]]]);
  assert.deepEqual(about(ev, byLocator), []);
  // Reported unreachable by the host: the same passive discard.
  assert.equal(svc.registrarUnreachable(R1, 1_300), true);
  ev = drain(svc, 1_300);
  assert.deepEqual(about(ev, byGroup).map((e) => e.discarded), [true]);
  assert.deepEqual(about(ev, byLocator), []);
  assert.equal(svc.registrarUnreachable(R2, 1_300), false);
});

test('LD.3: an active discard sends a discarded event and makes the registrar eligible again', () => {
  const svc = service();
  const r = svc.register(['lab'], [], 'x', 60_000, 0).registration;
  svc.handleAnnouncement(ann(R2, ['lab'], 1), 0);
  drain(svc, 0);
  svc.discard(r, R2, 10);
  let ev = drain(svc, 10);
  assert.deepEqual(ev.map((e) => [e.discarded, ids(e)]), [[true, [R2]]]);
  assert.deepEqual(svc.registrars(r, 10), []);
  svc.handleAnnouncement(ann(R2, ['lab'], 2), 20);
  ev = drain(svc, 20);
  assert.deepEqual(ev.map((e) => [e.discarded, ids(e)]), [[false, [R2]]]);
  assert.throws(() => svc.discard(r, 'zz', 30), (e) => e instanceof LeaseError || e instanceof TypeError);
});

test('LD.4.1.1: group and locator changes discover and discard', () => {
  const svc = service();
  svc.handleAnnouncement(ann(R1, ['printers'], 1, 4160, 60_000), 0);
  svc.handleAnnouncement(ann(R2, ['lab'], 1, 4161, 60_000), 0);
  const r = svc.register(['printers'], [], 'x', 60_000, 0).registration;
  let ev = drain(svc, 0);
  assert.deepEqual(ev.map((e) => [e.discarded, ids(e)]), [[false, [R1]]]);
  svc.addGroups(r, ['lab'], 10);
  ev = drain(svc, 10);
  assert.deepEqual(ev.map((e) => [e.discarded, ids(e)]), [[false, [R2]]]);
  assert.deepEqual(svc.groups(r, 10), ['lab', 'printers']);
  svc.removeGroups(r, ['printers'], 20);
  ev = drain(svc, 20);
  assert.deepEqual(ev.map((e) => [e.discarded, ids(e)]), [[true, [R1]]]);
  svc.setGroups(r, NO_GROUPS, 30);
  ev = drain(svc, 30);
  assert.deepEqual(ev.map((e) => [e.discarded, ids(e)]), [[true, [R2]]]);
  // By locator: R1 is known at 10.0.0.1:4160, so adding the locator discovers it at once;
  // removing it discards it.
  svc.addLocators(r, ['10.0.0.1:4160'], 40);
  ev = drain(svc, 40);
  assert.deepEqual(ev.map((e) => [e.discarded, ids(e)]), [[false, [R1]]]);
  assert.deepEqual(svc.locators(r, 40), ['10.0.0.1:4160']);
  svc.setLocators(r, [], 50);
  ev = drain(svc, 50);
  assert.deepEqual(ev.map((e) => [e.discarded, ids(e)]), [[true, [R1]]]);
  svc.setGroups(r, ALL_GROUPS, 60);
  ev = drain(svc, 60);
  assert.deepEqual(ev.map((e) => [e.discarded, ids(e)]), [[false, [R1, R2]]]);
  const seqs = ev.concat().map((e) => e.sequence);
  assert.ok(seqs.every((s, i) => i === 0 || s > seqs[i - 1]));
});

test('LD.2: an expired or cancelled registration answers every method with UnknownLeaseError', () => {
  const svc = service();
  const a = svc.register(['lab'], [], 'x', 1_000, 0);
  const b = svc.register(['lab'], [], 'y', 60_000, 0);
  svc.handleTimeout(1_001);
  for (const f of [
    () => svc.registrars(a.registration, 1_001), () => svc.groups(a.registration, 1_001),
    () => svc.locators(a.registration, 1_001), () => svc.addGroups(a.registration, ['x'], 1_001),
    () => svc.setLocators(a.registration, [], 1_001), () => svc.discard(a.registration, R1, 1_001),
    () => svc.lease(a.registration, 1_001), () => svc.eventRegistration(a.registration, 1_001),
  ]) assert.throws(f, UnknownLeaseError);
  // Cancelled over the lease protocol, with its cookie.
  const lease = svc.lease(b.registration, 1_001);
  const reply = decodeReply(svc.handleBytes(encodeRequest({ id: 1, body: { op: 'cancel', cookie: lease.cookie } }), 1_002));
  assert.equal(reply.body.op, 'cancelled');
  assert.throws(() => svc.registrars(b.registration, 1_003), UnknownLeaseError);
  assert.deepEqual(svc.registrations(), []);
  // Arguments are checked before anything changes, with the package's error classes.
  assert.throws(() => svc.register(['a'], [], 'x', 0, 0), InvalidArgumentError);
  assert.throws(() => svc.register(undefined, [], 'x', 1, 0), ArgumentTypeError);
  assert.throws(() => svc.register(['a'], ['no port'], 'x', 1, 0), InvalidArgumentError);
  assert.throws(() => svc.handleDatagram(new Uint8Array([1, 2, 3]), 0), DecodeError);
});

test('LD.3: failing delivery is retried until the lease ends; unknown-event cancels the registration', () => {
  const svc = service({ eventRetry: [100, 200], deliveryTimeout: 1_000 });
  const r = svc.register(['lab'], [], 'x', 2_000, 0).registration;
  svc.handleAnnouncement(ann(R2, ['lab'], 1, 4160, 60_000), 0);
  let e = svc.pollEvent(0);
  const seq = e.sequence;
  assert.equal(svc.deliveryFailed(e.eventId, e.sequence, { kind: 'indefinite', message: 'refused' }, 0), true);
  assert.equal(svc.pollEvent(50), undefined); // not before the retry
  e = svc.pollEvent(100);
  assert.equal(e.sequence, seq); // the same event, the same number
  // An event handed out and never reported counts as failed after deliveryTimeout.
  svc.handleTimeout(1_100);
  e = svc.pollEvent(1_400);
  assert.equal(e.sequence, seq);
  // The lease ends: no more attempts, the registration is gone.
  svc.handleTimeout(2_001);
  assert.equal(svc.pollEvent(5_000), undefined);
  assert.throws(() => svc.registrars(r, 5_000), UnknownLeaseError);

  const svc2 = service();
  const r2 = svc2.register(['lab'], [], 'x', 60_000, 0).registration;
  svc2.handleAnnouncement(ann(R2, ['lab'], 1), 0);
  const e2 = svc2.pollEvent(0);
  // The listener's encoded reply, as it would answer the POST.
  const answer = encodeEventReply({ v: 1, event_id: String(e2.eventId), sequence: String(e2.sequence), body: { op: 'unknown_event' } }, 'json');
  assert.equal(svc2.handleEventReply(answer, 10, 'json'), true);
  assert.throws(() => svc2.registrars(r2, 10), UnknownLeaseError);
});

test('DiscoveryService: snapshot and exact restore keep registrations, registrars and sequence numbers', () => {
  const svc = service();
  const g = svc.register(['printers'], ['10.0.0.2:4161'], 'x', 60_000, 0);
  svc.handleAnnouncement(ann(R1, ['printers'], 1, 4160, 60_000), 0);
  const before = drain(svc, 0);
  const text = svc.snapshot();
  const back = DiscoveryService.restore({ id: 0x1d5, restoreJump: 0 }, text, 100);
  assert.deepEqual(back.registrations(), svc.registrations());
  assert.deepEqual(back.registrars(g.registration, 100), svc.registrars(g.registration, 100));
  assert.equal(back.lease(g.registration, 100).cookie, g.lease.cookie);
  back.discard(g.registration, R1, 200);
  const [e] = drain(back, 200);
  assert.equal(e.sequence, before.at(-1).sequence + 1);
  assert.throws(() => DiscoveryService.restore({ id: 1 }, text, 0), InvalidArgumentError);
  back.free();
  svc.free();
});

test('DiscoveryDriver: events and probes through Promises, callbacks outside the service, discovery over the wire', async () => {
  const svc = service({ unicastRetry: [20] });
  const delivered = [];
  const probed = [];
  let reentered = null;
  let failOnce = true;
  const driver = new DiscoveryDriver(svc, {
    deliver: async (event, listener) => {
      try {
        svc.registrations(); // a call back into the service from the callback works
      } catch (e) {
        reentered = e;
      }
      if (failOnce) {
        failOnce = false;
        throw new Error('listener down');
      }
      delivered.push({ listener, discarded: event.discarded, ids: ids(event), sequence: event.sequence });
    },
    probe: async (locator) => {
      probed.push(locator);
      if (probed.length === 1) throw new Error('refused');
      return encodeAnnouncement({ registrar: R1, groups: ['printers'], locator, sequence: 1, ttl: 60_000 });
    },
  });
  const g = await driver.register(['printers'], [], 'g', 60_000, 'http://listener/g');
  assert.equal(svc.listener(g.registration).length, 'http://listener/g'.length);
  // Registration over the wire, as the lds serves it.
  const reply = decodeDiscoveryReply(await driver.serveDiscovery(encodeDiscoveryRequest({
    v: 1, id: '9', body: { op: 'register', groups: [], locators: ['10.0.0.1:4160'], handback: '6c', duration: '60000' },
  })));
  assert.equal(reply.body.op, 'registered');
  assert.equal(reply.id, '9');
  const l = svc.registrationOf(reply.body.cookie, driver.now());
  await driver.run((s, now) => s.setListener(l, 'http://listener/l', now));
  await driver.announce(encodeAnnouncement(ann(R2, ['printers'], 1, 4161, 60_000)));
  const until = async (f, ms = 5_000) => {
    const end = Date.now() + ms;
    while (!f()) {
      if (Date.now() > end) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  await until(() => delivered.some((d) => d.listener === 'http://listener/l'));
  await until(() => delivered.filter((d) => d.listener === 'http://listener/g').length >= 2);
  assert.equal(reentered, null);
  assert.ok(probed.length >= 2, 'the failed probe was retried');
  assert.deepEqual(delivered.find((d) => d.listener === 'http://listener/l').ids, [R1]);
  assert.deepEqual(svc.registrars(g.registration, driver.now()).map((r) => r.id).sort(), [R1, R2]);
  assert.equal(await driver.unreachable(R2), true);
  await until(() => delivered.some((d) => d.discarded));
  assert.deepEqual(delivered.filter((d) => d.discarded).map((d) => [d.listener, d.ids]), [['http://listener/g', [R2]]]);
  await driver.close();
  svc.free();
});

test('DiscoveryDriver.open: a durable service in a directory keeps registrations and sequence numbers', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-lds-'));
  try {
    const events = [];
    const deliver = async (e, listener) => { events.push({ listener, seq: e.sequence, discarded: e.discarded }); };
    const options = { id: 0x1d5, seed, restoreJump: 0 };
    let d = await DiscoveryDriver.open({ store: dir, service: options, deliver });
    assert.equal(d.recovery.created, true);
    assert.equal(d.service.durable, true);
    const g = await d.register(['lab'], [], 'x', FOREVER, 'L');
    await d.announce(ann(R2, ['lab'], 1, 4160, 600_000));
    while (events.length < 1) await new Promise((r) => setTimeout(r, 5));
    await d.sync();
    await d.close();
    d.service.free();
    d = await DiscoveryDriver.open({ store: dir, service: options, deliver });
    assert.equal(d.recovery.created, false);
    assert.ok(d.recovery.replayed > 0);
    assert.deepEqual(d.service.registrations(), [g.registration]);
    assert.equal(d.service.lease(g.registration, d.now()).cookie, g.lease.cookie);
    assert.deepEqual(d.service.registrars(g.registration, d.now()).map((r) => r.id), [R2]);
    await d.run((s, now) => s.discard(g.registration, R2, now));
    while (events.length < 2) await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(events.map((e) => [e.listener, e.discarded]), [['L', false], ['L', true]]);
    assert.equal(events[1].seq, events[0].seq + 1);
    await d.close();
    d.service.free();
    // Another id than the store's is refused.
    await assert.rejects(DiscoveryDriver.open({ store: dir, service: { ...options, id: 2 }, deliver }), InvalidArgumentError);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('ErrorCode is shared: unknown lease is 1 and invalid argument 4 (as in the vectors)', () => {
  assert.equal(ErrorCode.UNKNOWN_LEASE, 1);
  assert.equal(ErrorCode.INVALID_ARGUMENT, 4);
});
