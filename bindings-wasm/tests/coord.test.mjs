// Coordination (issue 25) through the installed package: the Fence and the coordination messages
// against the shared vectors (core/tests/vectors/coord.json), the lock / elect / observe recipes
// over fetchTransport against a real leasehold-server (LEASEHOLD_SERVER_BIN, else
// target/debug/leasehold-server), and the types under tsc --strict.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createRequire } from 'node:module';
import {
  Fence, FencedError, lock, elect, observe, fetchTransport, encodeCoordRequest, decodeCoordRequest,
  encodeCoordReply, decodeCoordReply, LeaseDeniedError, IndefiniteError, DecodeError,
} from 'leasehold';

const root = process.env.LEASEHOLD_ROOT;
const vectors = JSON.parse(readFileSync(join(root, 'core/tests/vectors/coord.json'), 'utf8'));
const big = (s) => (BigInt(s) <= 2n ** 53n - 1n ? Number(s) : BigInt(s));
const hex = (b) => Buffer.from(b).toString('hex');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('fence vectors: the same decisions as every runtime', () => {
  assert.equal(vectors.fence.length, 6);
  for (const c of vectors.fence) {
    const f = new Fence(big(c.highest));
    const token = big(c.token);
    assert.equal(f.admits(token), c.accepted, c.name);
    if (c.accepted) f.check(token);
    else {
      assert.throws(() => f.check(token), (e) => e instanceof FencedError && e.token === token && e.highest === big(c.highest));
    }
    assert.equal(f.highest, big(c.highest_after), c.name);
    assert.equal(Fence.restore(f.snapshot()).highest, f.highest, c.name);
    f.free();
  }
});

test('coordination messages: every vector encodes to the shared bytes and text and decodes back', () => {
  const kinds = [[vectors.requests, encodeCoordRequest, decodeCoordRequest], [vectors.replies, encodeCoordReply, decodeCoordReply]];
  for (const [cases, enc, dec] of kinds) {
    for (const c of cases) {
      const obj = dec(c.json, 'json');
      assert.deepEqual(obj, JSON.parse(c.json), c.name);
      assert.equal(enc(obj, 'json'), c.json, c.name);
      assert.equal(hex(enc(obj, 'binary')), c.hex, c.name);
      assert.deepEqual(dec(new Uint8Array(Buffer.from(c.hex, 'hex')), 'binary'), obj, c.name);
    }
  }
  const refused = vectors.decode.filter((d) => !('message' in d) && !('limits' in d));
  assert.ok(refused.length > 0);
  for (const d of refused) {
    const dec = d.kind === 'request' ? decodeCoordRequest : decodeCoordReply;
    const data = d.text != null ? d.text : new Uint8Array(Buffer.from(d.hex, 'hex'));
    assert.throws(() => dec(data, d.encoding), DecodeError, d.name);
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
  dir = mkdtempSync(join(tmpdir(), 'leasehold-coord-js-'));
  server = spawn(serverBin(), ['--data', dir, '--listen', '127.0.0.1:0', '--shards', '2', '--exclusive-prefix', 'locks/', '--exclusive-prefix', 'elect/'], {
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

test('lock: denied with a reason, waits in line, tokens grow, kept renewed, fenced', async () => {
  const t = fetchTransport(url);
  const a = await lock(t, 'locks/db', { lease: 600 });
  assert.ok(a.held);
  assert.deepEqual(a.resource, new TextEncoder().encode('locks/db'));
  const first = a.safeUntil();
  await sleep(1200);
  assert.ok(a.held, 'renewed past its first lease');
  assert.ok(a.safeUntil() > first);
  await assert.rejects(lock(t, 'locks/db'), (e) => e instanceof LeaseDeniedError && /free in at most/.test(e.message));
  const waiting = lock(fetchTransport([url]), 'locks/db', { wait: 10_000, holder: 'b' });
  await sleep(300);
  await a.release();
  const b = await waiting;
  assert.ok(b.token > a.token);
  const fence = new Fence();
  fence.check(b.token);
  assert.throws(() => fence.check(a.token), FencedError);
  await b.release();
});

test('elect and observe: one leader, observers follow it in order', async () => {
  const t = fetchTransport(url);
  const o = await observe(t, 'elect/db');
  assert.equal(o.leader, undefined);
  const a = await elect(t, 'elect/db', 'node-a', { giveUp: 5000 });
  assert.ok(await o.next(5000));
  assert.deepEqual(o.leader, { token: a.token, value: new TextEncoder().encode('node-a') });
  const campaigning = elect(fetchTransport(url), 'elect/db', 'node-b');
  await sleep(300);
  await a.release();
  const b = await campaigning;
  const seen = [];
  const deadline = Date.now() + 10_000;
  while ((seen.length === 0 || seen.at(-1) === undefined) && Date.now() < deadline) {
    if (await o.next(5000)) seen.push(o.leader);
  }
  assert.equal(seen.at(-1).token, b.token);
  assert.deepEqual(seen.at(-1).value, new TextEncoder().encode('node-b'));
  assert.ok(b.token > a.token);
  await b.release();
  await o.close();
});

test('a lock taken after a failover counts from the answered attempt', async () => {
  // The first server accepts connections and never answers: its attempt (300 ms plus the 2 s the
  // acquire may be held) outlasts the 1 s lease, which counted from it would be over on return.
  const { createServer } = await import('node:net');
  const open = [];
  const silent = createServer((sock) => open.push(sock));
  await new Promise((r) => silent.listen(0, '127.0.0.1', r));
  try {
    const t0 = Date.now();
    const a = await lock(fetchTransport([`http://127.0.0.1:${silent.address().port}`, url], { timeout: 300 }), 'locks/failover', { wait: 2000, lease: 1000 });
    assert.ok(Date.now() - t0 >= 2000, 'no failover');
    assert.ok(a.held, 'not known held when returned');
    await sleep(600);
    assert.ok(a.held, 'lost before its first renewal');
    await a.release();
  } finally {
    for (const s of open) s.destroy();
    silent.close();
  }
});

test('no server answering is indefinite', async () => {
  await assert.rejects(lock(fetchTransport('http://127.0.0.1:9', { timeout: 100 }), 'locks/x', { wait: 300 }), IndefiniteError);
});

test('the coordination types check under tsc --strict', () => {
  const program = `
import { Fence, FencedError, lock, elect, observe, fetchTransport, encodeCoordRequest, decodeCoordReply,
  type Lock, type Leader, type CoordReply, type Token } from 'leasehold';
const f = new Fence(7);
f.check(8);
const ok: boolean = f.admits(9n);
const h: Token = f.highest;
const bytes = encodeCoordRequest({ v: 1, id: '1', body: { op: 'holders', resource: '', prefix: true } });
const r: CoordReply = decodeCoordReply(bytes);
if (r.body.op === 'acquired') { const t: string = r.body.token; void t; }
async function main(): Promise<void> {
  const t = fetchTransport(['http://127.0.0.1:7420']);
  const l: Lock = await lock(t, 'locks/db', { wait: 5000, lease: 10_000, holder: 'me' });
  const until: number | undefined = l.safeUntil();
  const tok: Token = l.token;
  await l.release();
  const leadership = await elect(t, 'elect/x', 'me', { giveUp: 1000 });
  const o = await observe(t, 'elect/x');
  if (await o.next(1000)) { const who: Leader | undefined = o.leader; void who; }
  await o.close();
  await leadership.release();
  try { f.check(1); } catch (e) { if (e instanceof FencedError) { const hi: Token = e.highest; void hi; } }
  void [until, tok];
}
void [ok, h, main];
`;
  const require = createRequire(join(process.cwd(), 'package.json'));
  const tsc = require.resolve('typescript/bin/tsc');
  const d = mkdtempSync(join(process.cwd(), 'ts-coord-'));
  writeFileSync(join(d, 'use.ts'), program);
  writeFileSync(join(d, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], skipLibCheck: false },
    files: ['use.ts'],
  }));
  execFileSync(process.execPath, [tsc, '-p', d], { stdio: 'inherit' });
});
