// The package's TypeScript types compile (strict) for a program using the whole API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

const program = `
import {
  Landlord, Lease, LeaseMap, RenewalManager, RenewalService, RenewalSet, LandlordDriver, RenewalDriver,
  fetchTransport, Policy, FOREVER, ANY, DURATION, ErrorCode, LeaseError, LeaseMapError, UnknownLeaseError,
  encodeRequest, decodeReply, grantRequest, leaseFromReply, type Grant, type Reply, type SetEvent, landlordQuery,
  type RenewalEvent, IndefiniteError, ReentrantCallError, cookieFromWords, cookieToWords,
  FileStore, MemoryStore, IndexedDbStore, StoreLockedError, StoreFailedError, DurableLandlordDriver,
  type StoreHost, type FileOp, type Recovery,
  DiscoveryService, DiscoveryDriver, ALL_GROUPS, NO_GROUPS, encodeDiscoveryRequest, decodeDiscoveryReply,
  discoveryEventFromBytes, encodeEventReply, encodeAnnouncement, decodeAnnouncement,
  type DiscoveryEvent, type Registrar, type DeliveryFailure, type Announcement,
} from 'leasehold';

const ll = new Landlord({ id: 1, policy: Policy.capacity(10, Policy.bounded(60_000, 30_000)) });
const g: Grant = ll.grant('r', ANY, 0);
const d: number = ll.renew(g.cookie, FOREVER, 1);
for (const e of ll) { const c: string = e.cookie; void c; }
const lease: Lease = ll.lease(g.cookie, 1)!;
const s: string = lease.toJson(2);
lease.serialFormat = DURATION;
const map = new LeaseMap();
map.set(lease, 1000);
const reply: Reply = ll.handleRequest(map.renewAllRequest(1), 3);
try { map.applyRenewAll(reply, 3); } catch (e) { if (e instanceof LeaseMapError) { const f: LeaseError = e.failures[0].error; void f; } }
const m = new RenewalManager({ initialRtt: 10 });
m.renewFor(lease, 10_000, 1000, 3);
const t = m.pollTransmit(3);
if (t) { const bytes = encodeRequest(t.request); void bytes; }
const lr: Lease = leaseFromReply(decodeReply(ll.handleBytes(encodeRequest(grantRequest(9, 'x', 5)) as Uint8Array, 4)), 4);
const svc = new RenewalService({ id: 2 });
const { set } = svc.createSet(ANY, 0);
const rs: RenewalSet = svc.set(set);
rs.renewFor(lr, FOREVER, 1000, 0);
const ev: SetEvent | undefined = svc.pollEvent();
using driver = new LandlordDriver(ll, { onExpired: (e) => console.log(e.cookie) });
const rd = new RenewalDriver(m, {
  transport: fetchTransport('http://127.0.0.1:1/'),
  // onEvent's event is a union on its type: each branch has its own fields.
  onEvent: (e) => {
    if (e.type === 'renewalFailed') { const de: number = e.desiredExpiration; const c: number | undefined = e.error?.code; void [de, c]; }
    else if (e.type === 'renewed') { const l: Lease = e.lease; void l; }
  },
});
rd.close();
const sd = new RenewalDriver(svc, { transport: fetchTransport(['http://a:1']), onEvent: (e: SetEvent) => void e.kind.type });
sd.close();
const lq: string = landlordQuery(16n);
const code: number = ErrorCode.UNKNOWN_LEASE;
const u = new UnknownLeaseError();
const re: IndefiniteError = new ReentrantCallError('busy');
const re2: RenewalEvent | undefined = m.pollEvent();
if (re2 && re2.type === 'desiredExpirationReached') { const de: number = re2.desiredExpiration; const dl: Lease = re2.lease; void [de, dl]; }
if (re2 && re2.type === 'renewalFailed') { const de: number = re2.desiredExpiration; void de; }
const words = new Uint32Array(8);
const gd: number = ll.grantWords('w', ANY, 5, words, 4);
const rdur: number = ll.renewWords(words, 4, 1000, 6);
const res: unknown = ll.cancelWords(words, 4, 7);
const hexCookie: string = cookieFromWords(cookieToWords(g.cookie), 0);
const gb: { cookies: Uint32Array; durations: Float64Array; failed: number } = ll.grantBatch(['a', 'b'], 1000, 8);
const rb: Float64Array = ll.renewBatch(gb.cookies, new Float64Array([1, 2]), 9);
const cb: unknown[] = ll.cancelBatch(gb.cookies, 10, new Float64Array(2));
void [d, s, ev, driver, code, u, re, gd, rdur, res, hexCookie, rb, cb, lq];

async function durable(): Promise<void> {
  const dd: DurableLandlordDriver = await LandlordDriver.open({
    store: './data', landlord: { id: 3, policy: Policy.bounded(60_000, 30_000) }, segmentBytes: 1 << 20,
    onExpired: (e) => console.log(e.cookie), onError: (e) => console.error(e),
  });
  const rec: Recovery = dd.recovery;
  const reply: Uint8Array = await dd.serve(new Uint8Array(0));
  const gr: Grant = await dd.grant('printer', ANY);
  const rn: number = await dd.renew(gr.cookie, 1000);
  const back: Uint8Array = await dd.cancel(gr.cookie);
  await dd.sync();
  await dd.compact();
  const st: number = dd.stats.logBytes + dd.stats.writes;
  await using again = await LandlordDriver.open({ store: new MemoryStore(), landlord: { id: 4, policy: Policy.fixed(1000) } });
  const fs: StoreHost = await FileStore.open('./x');
  const idb: StoreHost = await IndexedDbStore.open('x', { persist: true });
  const ops: FileOp[] = [{ op: 'append', file: 'a', bytes: new Uint8Array(1) }, { op: 'truncate', file: 'a', len: 0 }];
  await fs.apply(ops);
  const locked: Error = new StoreLockedError('x');
  const failed: IndefiniteError = new StoreFailedError('x');
  const cluster = fetchTransport(['http://a:7420', new URL('http://b:7420')], { timeout: 500 });
  void [rec, reply, rn, back, st, again, idb, locked, failed, cluster];
  await dd.close();
}
void durable;

// The lookup discovery service and its driver.
const lds = new DiscoveryService({ id: 7, leasePolicy: Policy.bounded(60_000, 60_000), eventRetry: [100] });
const reg = lds.register(ALL_GROUPS, ['h:1'], 'x', ANY, 0);
const regLease: Lease = reg.lease;
lds.setGroups(reg.registration, [...NO_GROUPS], 1);
const a: Announcement = { registrar: '00000000000000000000000000000001', groups: ['g'], locator: 'h:1', sequence: 1, ttl: 1000 };
lds.handleDatagram(encodeAnnouncement(a), 2);
const back2: Announcement = decodeAnnouncement(encodeAnnouncement(a));
const ldRegistrars: Registrar[] = lds.registrars(reg.registration, 3);
const ldEvent: DiscoveryEvent | undefined = lds.pollEvent(3);
if (ldEvent) lds.deliveryFailed(ldEvent.eventId, ldEvent.sequence, { kind: 'indefinite', message: 'down' }, 4);
lds.unicastFailed(1, 5);
const req = encodeDiscoveryRequest({ v: 1, id: '1', body: { op: 'get_registrars', cookie: regLease.cookie } }, 'json');
const er = encodeEventReply({ v: 1, event_id: '1', sequence: '2', body: { op: 'received' } });
async function discovery() {
  const d = await DiscoveryDriver.open({
    store: new MemoryStore(), service: { id: 7 },
    deliver: async (e: DiscoveryEvent, listener: string | undefined): Promise<void | DeliveryFailure> => (listener ? undefined : { kind: 'unknownEvent' }),
    probe: async (locator: string) => ({ registrar: locator, groups: [] }),
  });
  const r = await d.register(['g'], [], new Uint8Array(0), 60_000, 'http://x/events');
  const bytes: Uint8Array = await d.serveDiscovery(req, 'json');
  const reply = decodeDiscoveryReply(bytes, 'json');
  const e2: DiscoveryEvent = discoveryEventFromBytes(new Uint8Array(0));
  void [r, reply, e2, er, back2, ldRegistrars];
  await d.close();
}
void discovery;
`;

test('the .d.ts files type-check a program using the API (tsc --strict, default lib: no esnext.disposable)', () => {
  const require = createRequire(join(process.cwd(), 'package.json'));
  let tsc;
  try {
    tsc = require.resolve('typescript/bin/tsc');
  } catch {
    assert.fail('typescript is not installed next to the tests');
  }
  const dir = mkdtempSync(join(process.cwd(), 'ts-'));
  writeFileSync(join(dir, 'use.ts'), program);
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext',
      skipLibCheck: false, types: [],
    },
    files: ['use.ts'],
  }));
  execFileSync(process.execPath, [tsc, '-p', dir], { stdio: 'inherit' });
});
