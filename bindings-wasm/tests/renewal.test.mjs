// A renewal set at a remote renewal service (issue 26) through the installed package: the set
// messages against the shared vectors (core/tests/vectors/renewal.json), RemoteSet over a JSON
// fetchTransport against a real `leasehold-server --renewal-shards 1` (LEASEHOLD_SERVER_BIN, else
// target/debug/leasehold-server) with a listener for its events, and the types under tsc --strict.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createRequire } from 'node:module';
import {
  RemoteSet, fetchTransport, encodeSetRequest, decodeSetRequest, encodeSetReply, decodeSetReply, encodeSetEvent,
  decodeSetEvent, encodeRequest, decodeReply, Lease, DecodeError, UnknownLeaseError, FOREVER,
} from 'leasehold';

const root = process.env.LEASEHOLD_ROOT;
const vectors = JSON.parse(readFileSync(join(root, 'core/tests/vectors/renewal.json'), 'utf8'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('set messages: every vector decodes to its object form and encodes back to its text', () => {
  const kinds = [
    [vectors.requests, encodeSetRequest, decodeSetRequest],
    [vectors.replies, encodeSetReply, decodeSetReply],
    [vectors.events, encodeSetEvent, decodeSetEvent],
  ];
  for (const [cases, enc, dec] of kinds) {
    assert.ok(cases.length > 0);
    for (const c of cases) {
      const obj = dec(c.json);
      assert.deepEqual(obj, c.message, c.name);
      assert.equal(enc(obj), c.json, c.name);
      assert.deepEqual(dec(new TextEncoder().encode(c.json)), obj, c.name);
      const bin = Buffer.from(c.hex, 'hex');
      assert.deepEqual(dec(new Uint8Array(bin), 'binary'), obj, c.name);
      assert.equal(Buffer.from(enc(obj, 'binary')).toString('hex'), c.hex, c.name);
    }
  }
  const decoders = { request: decodeSetRequest, reply: decodeSetReply, event: decodeSetEvent };
  const refused = vectors.decode.filter((d) => 'error_code' in d && !('limits' in d));
  assert.ok(refused.length > 0);
  for (const d of refused) assert.throws(() => decoders[d.kind](d.text), DecodeError, d.name);
  for (const d of vectors.decode_binary.filter((x) => !('limits' in x))) {
    const bytes = new Uint8Array(Buffer.from(d.hex, 'hex'));
    if ('error_code' in d) assert.throws(() => decoders[d.kind](bytes, 'binary'), DecodeError, d.name);
    else assert.deepEqual(decoders[d.kind](bytes, 'binary'), d.decoded, d.name);
  }
});

let server;
let url;
let dir;

function serverBin() {
  if (process.env.LEASEHOLD_SERVER_BIN) return process.env.LEASEHOLD_SERVER_BIN;
  const bin = join(root, 'target/debug/leasehold-server');
  if (!existsSync(bin)) execFileSync('cargo', ['build', '-q', '-p', 'leasehold-server'], { cwd: root, stdio: 'inherit' });
  return bin;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-renewal-js-'));
  server = spawn(serverBin(), ['--data', dir, '--listen', '127.0.0.1:0', '--renewal-shards', '1'], {
    stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, RUST_LOG: 'warn' },
  });
  const line = await new Promise((resolve) => createInterface({ input: server.stdout }).once('line', resolve));
  url = line.trim().split(' ').pop();
  assert.match(url, /^http:\/\//);
});

after(() => {
  server?.kill('SIGKILL');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function grant(t, resource, ms) {
  const sentAt = Date.now();
  const r = decodeReply(await t(encodeRequest({ id: 1, body: { op: 'grant', resource, duration: ms } }, 'json')), 'json');
  assert.equal(r.body.op, 'granted', JSON.stringify(r));
  return Lease.fromGrant(r.landlord, r.body.cookie, sentAt, r.body.duration);
}

test('a lease handed to a remote set is kept past its own duration; a refused one is reported', async () => {
  const events = [];
  const listener = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      events.push(decodeSetEvent(Buffer.concat(chunks)));
      res.writeHead(200).end();
    });
  });
  await new Promise((r) => listener.listen(0, '127.0.0.1', r));
  const listenUrl = `http://127.0.0.1:${listener.address().port}/events`;
  try {
    const t = fetchTransport(url, { encoding: 'json' });
    const s = await RemoteSet.create(t, 60_000);
    assert.equal(s.service, '0000000000000002');
    assert.ok(s.number >= 1 && s.lease.remaining(Date.now()) > 50_000);
    const reg = await s.listen('renewal_failure', listenUrl, { handback: 'js' });
    assert.ok(reg.eventId > 0 && reg.sequence === 0);
    const kept = await grant(t, 'js/kept', 1_500);
    const refused = await grant(t, 'js/refused', 1_500);
    await s.add(kept, [url], { membership: FOREVER, renew: 1_500 });
    await s.add(refused, url, { renew: 1_500 });
    assert.deepEqual(new Set((await s.leases()).map((l) => l.cookie)), new Set([kept.cookie, refused.cookie]));
    // The landlord refuses one (the holder cancels it there): a renewal-failure event.
    const c = decodeReply(await t(encodeRequest({ id: 2, body: { op: 'cancel', cookie: refused.cookie } }, 'json'), kept.landlord), 'json');
    assert.equal(c.body.op, 'cancelled');
    for (let i = 0; i < 300 && events.length === 0; i++) await sleep(50);
    assert.equal(events.length, 1);
    const e = events[0];
    assert.equal(e.service, s.service);
    assert.equal(Buffer.from(e.handback, 'hex').toString(), 'js');
    assert.equal(e.body.kind, 'renewal_failure');
    assert.equal(e.body.lease.cookie, refused.cookie);
    assert.equal(e.body.error.code, 1);
    // The other outlives its own 1.5 s: taken back with time left.
    await sleep(4_000);
    const back = await s.remove(kept, [url]);
    assert.ok(back && back.cookie === kept.cookie && Number(back.remaining) > 0, JSON.stringify(back));
    assert.equal(await s.remove(kept, [url]), undefined);
    // The set's own lease: renewed and cancelled like any lease; then the set is gone.
    assert.equal(await s.renew(30_000), 30_000);
    await s.unlisten('renewal_failure');
    await s.cancel();
    await assert.rejects(s.leases(), UnknownLeaseError);
  } finally {
    listener.close();
  }
});

test('a renewal set needs a transport, and a server that runs the service', async () => {
  assert.throws(() => new RemoteSet(undefined, new Lease(2, '0'.repeat(32), 0), 1), TypeError);
  const plainDir = mkdtempSync(join(tmpdir(), 'leasehold-renewal-js-'));
  const plain = spawn(serverBin(), ['--data', plainDir, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const line = await new Promise((resolve) => createInterface({ input: plain.stdout }).once('line', resolve));
    const t = fetchTransport(line.trim().split(' ').pop(), { encoding: 'json' });
    await assert.rejects(RemoteSet.create(t, 1_000), (e) => e instanceof UnknownLeaseError && /--renewal-shards/.test(e.message));
  } finally {
    plain.kill('SIGKILL');
    rmSync(plainDir, { recursive: true, force: true });
  }
});

test('the renewal set types check under tsc --strict', () => {
  const program = `
import { RemoteSet, fetchTransport, decodeSetEvent, encodeSetRequest, type SetEventMessage, type ClientLease, Lease } from 'leasehold';
const text: string = encodeSetRequest({ v: 1, id: '1', body: { op: 'leases', set: '00' } });
async function main(lease: Lease): Promise<void> {
  const t = fetchTransport(['http://127.0.0.1:7420'], { encoding: 'json' });
  const s = await RemoteSet.create(t, 60_000);
  const service: string = s.service;
  await s.add(lease, ['http://127.0.0.1:7421'], { membership: 3_600_000, renew: 30_000 });
  const all: ClientLease[] = await s.leases();
  const { eventId } = await s.listen('expiration_warning', 'http://me/events', { minWarning: 10_000, handback: 'x' });
  const back: ClientLease | undefined = await s.remove(lease, 'http://127.0.0.1:7421');
  const granted: number = await s.renew(60_000);
  await s.cancel();
  const e: SetEventMessage = decodeSetEvent('{}');
  if (e.body.kind === 'renewal_failure') { const c: string = e.body.lease.cookie; void c; }
  void [service, all, eventId, back, granted];
}
void [text, main];
`;
  const require = createRequire(join(process.cwd(), 'package.json'));
  const tsc = require.resolve('typescript/bin/tsc');
  const d = mkdtempSync(join(process.cwd(), 'ts-renewal-'));
  writeFileSync(join(d, 'use.ts'), program);
  writeFileSync(join(d, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], skipLibCheck: false },
    files: ['use.ts'],
  }));
  execFileSync(process.execPath, [tsc, '-p', d], { stdio: 'inherit' });
});
