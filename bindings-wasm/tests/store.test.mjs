// Durable landlords on real files (FileStore, node:fs): the shared store vector written by the
// core, reopening, a truncated last record, a flipped byte, a missing snapshot, the lock, group
// commit and reply-after-durable, a failing disk, expiry and compaction. (Real crashes:
// crash.test.mjs. IndexedDB in Chromium: store-browser.test.mjs.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  LandlordDriver, Landlord, FileStore, MemoryStore, Policy, ANY, DecodeError, StoreLockedError, StoreFailedError,
  ArgumentTypeError, ErrorCode, encodeRequest, decodeReply,
} from 'leasehold';

const root = process.env.LEASEHOLD_ROOT;
const vector = JSON.parse(readFileSync(join(root, 'core/tests/vectors/store.json'), 'utf8'));
const hex = (b) => Buffer.from(b).toString('hex');
const unhex = (h) => new Uint8Array(Buffer.from(h, 'hex'));
const utf8 = (s) => new TextEncoder().encode(s);
const tick = () => new Promise((r) => setImmediate(r));
const POLICY = Policy.bounded(60_000, 30_000);

function tempDir(name) {
  return mkdtempSync(join(tmpdir(), `leasehold-${name}-`));
}

function writeFiles(dir, files) {
  for (const f of files) writeFileSync(join(dir, f.name), unhex(f.hex));
}

function listing(dir) {
  return Object.fromEntries(readdirSync(dir).filter((n) => !n.startsWith('LOCK')).map((n) => [n, hex(readFileSync(join(dir, n)))]));
}

/** A virtual clock the drivers read. */
function clock(t = 1_000_000) {
  const c = () => c.t;
  c.t = t;
  return c;
}

function openAt(dir, now, extra = {}) {
  return LandlordDriver.open({ store: dir, landlord: { id: 7, policy: POLICY }, now, ...extra });
}

test('the shared store vector (written by the core, torn tail) opens on real files', async () => {
  const dir = tempDir('vector');
  try {
    writeFiles(dir, vector.files);
    const last = vector.files.filter((f) => f.name.startsWith('log-')).map((f) => f.name).sort().at(-1);
    const before = statSync(join(dir, last)).size;
    const readNow = Number(vector.read_now);
    const p = vector.landlord.policy;
    const d = await LandlordDriver.open({
      store: dir,
      landlord: { id: vector.landlord.id, policy: Policy.bounded(Number(p.max), Number(p.default)) },
      segmentBytes: vector.store.segment_bytes,
      now: () => readNow,
    });
    const { expect } = vector;
    assert.equal(Boolean(d.recovery.torn), expect.torn, `torn: ${d.recovery.torn}`);
    assert.equal(d.recovery.created, false);
    assert.equal(d.recovery.journalSeq, Number(expect.journal_seq));
    assert.equal(d.landlord.journalSeq, Number(expect.journal_seq));
    assert.ok(statSync(join(dir, last)).size < before, 'the torn tail was cut from the file');
    const slot = (c) => parseInt(c.slice(24), 16);
    const got = d.landlord.entries().sort((a, b) => slot(a.cookie) - slot(b.cookie));
    assert.deepEqual(
      got.map((e) => ({ cookie: e.cookie, expiration: String(e.expiration), resource: hex(e.resource) })),
      expect.leases,
    );
    assert.equal(d.landlord.pollExpired(), undefined);
    assert.equal(Number(expect.expired_waiting), 0);
    const n = expect.next_grant;
    assert.equal(Number(n.now), readNow);
    const g = await d.grant(unhex(n.resource), Number(n.duration));
    assert.deepEqual(
      { cookie: g.cookie, duration: String(g.duration), expiration: String(g.expiration) },
      { cookie: n.cookie, duration: n.duration, expiration: n.expiration },
    );
    await d.close();
    // Reopened: no torn tail any more, and the grant is there.
    const again = await LandlordDriver.open({
      store: dir, landlord: { id: vector.landlord.id, policy: Policy.bounded(60_000, 1000) }, now: () => readNow,
    });
    assert.equal(again.recovery.torn, undefined);
    assert.equal(again.landlord.size, expect.leases.length + 1);
    assert.equal(hex(again.landlord.get(n.cookie, readNow).resource), n.resource);
    await again.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the damaged copies of the store vector are refused with DecodeError, and left as they were', async () => {
  for (const damaged of vector.damaged) {
    const dir = tempDir('damaged');
    try {
      writeFiles(dir, damaged.files);
      const before = listing(dir);
      const err = await LandlordDriver.open({
        store: dir, landlord: { id: vector.landlord.id, policy: Policy.bounded(60_000, 1000) }, now: () => 5000,
      }).then(() => undefined, (e) => e);
      assert.ok(err instanceof DecodeError, `${damaged.name}: ${err}`);
      assert.equal(err.code, damaged.error_code);
      assert.deepEqual(listing(dir), before, `${damaged.name}: nothing written`);
      // and the lock was let go
      const s = await FileStore.open(dir);
      await s.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

test('reopening keeps every acknowledged grant, renewal and cancel; time spent down does not count', async () => {
  const dir = tempDir('reopen');
  const now = clock();
  try {
    let d = await openAt(dir, now);
    assert.equal(d.recovery.created, true);
    const grants = await Promise.all(Array.from({ length: 300 }, (_, i) => d.grant(`r${i}`, 10_000 + i)));
    now.t += 1000;
    const renewed = await Promise.all(grants.slice(0, 100).map((g) => d.renew(g.cookie, 20_000)));
    assert.ok(renewed.every((x) => x === 20_000));
    const cancelled = await Promise.all(grants.slice(100, 150).map((g) => d.cancel(g.cookie)));
    assert.deepEqual(cancelled.map((r) => new TextDecoder().decode(r)), grants.slice(100, 150).map((_, i) => `r${100 + i}`));
    const expected = new Map(d.landlord.entries().map((e) => [e.cookie, e.expiration]));
    assert.equal(expected.size, 250);
    const seq = d.landlord.journalSeq;
    await d.close();
    assert.ok(d.closed);
    await assert.rejects(d.grant('late', 1), /closed/);

    now.t += 3_600_000; // an hour down
    d = await openAt(dir, now);
    assert.equal(d.recovery.created, false);
    assert.equal(d.recovery.journalSeq, seq);
    assert.equal(d.landlord.size, 250);
    for (const e of d.landlord.entries()) {
      assert.equal(e.expiration, expected.get(e.cookie) + 3_600_000, 'the same time left as before the stop');
    }
    for (const g of grants.slice(100, 150)) assert.equal(d.landlord.has(g.cookie, now.t), false);
    // renewals and cancels after a restart are journaled on from there
    await d.renew(grants[0].cookie, 5000);
    await d.cancel(grants[1].cookie);
    await d.close();
    d = await openAt(dir, now);
    assert.equal(d.landlord.size, 249);
    assert.equal(d.landlord.get(grants[0].cookie, now.t).expiration, now.t + 5000);
    await d.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a truncated last record is dropped (and cut), the rest kept; writing goes on after it', async () => {
  const dir = tempDir('torn');
  const now = clock();
  try {
    let d = await openAt(dir, now);
    const first = await Promise.all(Array.from({ length: 20 }, (_, i) => d.grant(`a${i}`, 60_000)));
    const last = await d.grant('the last one', 60_000); // a commit of its own: the last frame
    await d.close();
    const seg = readdirSync(dir).filter((n) => n.startsWith('log-')).sort().at(-1);
    const size = statSync(join(dir, seg)).size;
    truncateSync(join(dir, seg), size - 5);
    d = await openAt(dir, now);
    assert.match(d.recovery.torn ?? '', /torn tail/);
    assert.equal(d.landlord.size, 20);
    for (const g of first) assert.ok(d.landlord.has(g.cookie, now.t));
    assert.equal(d.landlord.has(last.cookie, now.t), false);
    const cut = statSync(join(dir, seg)).size;
    assert.ok(cut < size - 5, `cut to the last whole frame (${cut} of ${size - 5} bytes)`);
    const more = await d.grant('after the cut', 60_000);
    await d.close();
    d = await openAt(dir, now);
    assert.equal(d.recovery.torn, undefined);
    assert.equal(d.landlord.size, 21);
    assert.ok(d.landlord.has(more.cookie, now.t));
    await d.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a flipped byte in the middle of the log is refused with DecodeError naming where', async () => {
  const dir = tempDir('flip');
  const now = clock();
  try {
    const d = await openAt(dir, now);
    for (let i = 0; i < 5; i++) await d.grant(`x${i}`, 60_000); // five frames
    await d.close();
    const seg = readdirSync(dir).filter((n) => n.startsWith('log-')).sort().at(-1);
    const bytes = readFileSync(join(dir, seg));
    bytes[Math.floor(bytes.length / 3)] ^= 0x10;
    writeFileSync(join(dir, seg), bytes);
    const before = listing(dir);
    const err = await openAt(dir, now).then(() => undefined, (e) => e);
    assert.ok(err instanceof DecodeError, String(err));
    assert.equal(err.code, ErrorCode.DECODE);
    assert.match(err.message, /byte \d+/);
    assert.deepEqual(listing(dir), before);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a missing snapshot: refused once the log no longer starts at 1; without the seed even if it does', async () => {
  const dir = tempDir('nosnap');
  const now = clock();
  const seed = new Uint8Array(32).fill(9);
  try {
    let d = await openAt(dir, now, { landlord: { id: 7, policy: POLICY, seed } });
    const g = await d.grant('kept', 60_000);
    await d.close();
    unlinkSync(join(dir, 'snapshot'));
    // The log starts at record 1 here: it replays onto a landlord made from the same seed ...
    let err = await openAt(dir, now).then(() => undefined, (e) => e);
    assert.ok(err instanceof DecodeError && /snapshot is missing/.test(err.message), String(err));
    d = await openAt(dir, now, { landlord: { id: 7, policy: POLICY, seed } });
    assert.ok(d.landlord.has(g.cookie, now.t));
    // ... and once compacted, the log starts later: a lost snapshot is refused whatever is given.
    for (let i = 0; i < 3; i++) await d.grant(`more${i}`, 60_000);
    await d.compact();
    await d.grant('after the snapshot', 60_000);
    await d.close();
    unlinkSync(join(dir, 'snapshot'));
    err = await openAt(dir, now, { landlord: { id: 7, policy: POLICY, seed } }).then(() => undefined, (e) => e);
    assert.ok(err instanceof DecodeError, String(err));
    assert.match(err.message, /snapshot is missing|records before it are lost/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a store holds one landlord: another id is refused', async () => {
  const dir = tempDir('id');
  try {
    await (await openAt(dir, clock())).close();
    await assert.rejects(LandlordDriver.open({ store: dir, landlord: { id: 8, policy: POLICY } }), /holds landlord 0000000000000007/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the lock keeps a second opener out, in this process and in another; a killed owner\'s lock is taken over', async () => {
  const dir = tempDir('lock');
  try {
    const d = await openAt(dir, clock());
    await assert.rejects(openAt(dir, clock()), StoreLockedError);
    await assert.rejects(FileStore.open(dir), (e) => e instanceof StoreLockedError && e.code === 'ELOCKED' && /in use by process \d+/.test(e.message));
    await d.close();
    // Another process holds it: refused; once that process is killed with SIGKILL, taken over.
    const child = spawn(process.execPath, ['--input-type=module', '-e', `
      import { FileStore } from 'leasehold';
      await FileStore.open(${JSON.stringify(dir)});
      console.log('locked');
      setInterval(() => {}, 1000);
    `], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise((r) => child.stdout.once('data', r));
    await assert.rejects(FileStore.open(dir), StoreLockedError);
    const exited = new Promise((r) => child.on('exit', r));
    child.kill('SIGKILL');
    await exited;
    const s = await FileStore.open(dir);
    const locks = readdirSync(dir).filter((n) => n.startsWith('LOCK'));
    assert.equal(locks.length, 1, `one lock file left: ${locks}`);
    await s.close();
    assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith('LOCK')), [], 'close removes the lock');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A FileStore whose operations are slow and counted, to watch group commit. */
async function watched(dir, delay = 5) {
  const fs = await FileStore.open(dir);
  const w = {
    batches: 0,
    syncs: 0,
    read: () => fs.read(),
    close: () => fs.close(),
    async apply(ops) {
      await new Promise((r) => setTimeout(r, delay));
      await fs.apply(ops);
      w.syncs += ops.filter((o) => o.op === 'sync').length;
      w.batches++;
    },
  };
  return w;
}

test('group commit: many requests at once share one sync; no answer leaves before its record is durable', async () => {
  const dir = tempDir('group');
  try {
    const host = await watched(dir, 20);
    const d = await LandlordDriver.open({ store: host, landlord: { id: 7, policy: POLICY } });
    const n = 500;
    const early = [];
    const pending = [];
    for (let i = 0; i < n; i++) {
      const before = host.batches;
      const body = encodeRequest({ id: i + 1, body: { op: 'grant', resource: utf8(`g${i}`), duration: 30_000 } });
      pending.push(d.serve(body).then((reply) => {
        if (host.batches <= before) early.push(i);
        return decodeReply(reply);
      }));
      if (i % 100 === 99) await tick(); // requests arriving over several macrotasks
    }
    const replies = await Promise.all(pending);
    assert.ok(replies.every((r) => r.body.op === 'granted'));
    assert.deepEqual(early, [], 'no reply before the batch holding its record was written and synced');
    assert.ok(host.syncs <= 10, `${n} grants took ${host.syncs} syncs`);
    console.log(`# group commit: ${n} grants in ${host.syncs} syncs (${host.batches} batches)`);
    // Answers that change nothing still wait for what they may depend on.
    const g = replies[0].body.cookie;
    const before = host.batches;
    await d.renew(g, 1000);
    assert.ok(host.batches > before);
    await d.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a store that cannot write: every waiting and later answer rejects with StoreFailedError', async () => {
  const errors = [];
  let fail = false;
  const mem = new MemoryStore();
  const host = {
    read: () => mem.read(),
    apply: async (ops) => {
      if (fail) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      return mem.apply(ops);
    },
  };
  const d = await LandlordDriver.open({ store: host, landlord: { id: 7, policy: POLICY }, onError: (e) => errors.push(e) });
  await d.grant('ok', 1000);
  fail = true;
  const results = await Promise.allSettled([d.grant('a', 1000), d.grant('b', 1000), d.serve(encodeRequest({ id: 1, body: { op: 'grant', resource: 'c', duration: 5 } }))]);
  for (const r of results) {
    assert.equal(r.status, 'rejected');
    assert.ok(r.reason instanceof StoreFailedError, String(r.reason));
    assert.equal(r.reason.code, ErrorCode.INDEFINITE);
    assert.match(r.reason.message, /ENOSPC/);
  }
  fail = false;
  await assert.rejects(d.grant('later', 1000), StoreFailedError);
  assert.equal(errors.length, 1);
  assert.ok(d.failed instanceof StoreFailedError);
  await d.close();
  // What was acknowledged is in the store; what failed is not acknowledged.
  const again = await LandlordDriver.open({ store: MemoryStore.from(mem.files()), landlord: { id: 7, policy: POLICY } });
  assert.ok(again.landlord.entries().some((e) => new TextDecoder().decode(e.resource) === 'ok'));
  await again.close();
});

test('expiry: swept leases reach onExpired once durable, and stay gone after a restart', async () => {
  const dir = tempDir('expiry');
  const now = clock();
  const expired = [];
  try {
    // (The drivers' timers run on real time, armed for the virtual deadline: after the clock
    // jumps, a timer armed earlier may still take up to its delay, 1 s at most here.)
    let d = await openAt(dir, now, { onExpired: (e) => expired.push(new TextDecoder().decode(e.resource)) });
    await d.grant('short', 500);
    await d.grant('long', 60_000);
    now.t += 1000;
    d.update();
    for (let i = 0; i < 300 && expired.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(expired, ['short']);
    await d.close();
    d = await openAt(dir, now, { onExpired: (e) => expired.push(new TextDecoder().decode(e.resource)) });
    assert.equal(d.landlord.size, 1);
    now.t += 120_000;
    d.update();
    for (let i = 0; i < 300 && expired.length === 1; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(expired, ['short', 'long']);
    await d.close();
    d = await openAt(dir, now);
    assert.equal(d.landlord.size, 0);
    await d.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('compaction: the log is folded into a new snapshot and old segments go; nothing is lost', async () => {
  const dir = tempDir('compact');
  const now = clock();
  try {
    let d = await openAt(dir, now, { segmentBytes: 2048, minCompactBytes: 8192 });
    const live = new Map();
    for (let round = 0; round < 40; round++) {
      const gs = await Promise.all(Array.from({ length: 25 }, (_, i) => d.grant(`r${round}-${i}`, 600_000)));
      for (const g of gs) live.set(g.cookie, g);
      const gone = gs.slice(0, 10);
      await Promise.all(gone.map((g) => d.cancel(g.cookie)));
      for (const g of gone) live.delete(g.cookie);
      now.t += 10;
    }
    const files = readdirSync(dir);
    const st = d.stats;
    assert.ok(st.snapshotBytes > 167, `a snapshot with leases was written (${st.snapshotBytes} bytes)`);
    assert.ok(st.logBytes <= Math.max(8192, st.snapshotBytes) + 2048, `the log was compacted (${st.logBytes} bytes)`);
    assert.ok(files.filter((n) => n.startsWith('log-')).length < 10, `old segments removed: ${files}`);
    await d.close();
    d = await openAt(dir, now);
    assert.equal(d.landlord.size, live.size);
    for (const c of live.keys()) assert.ok(d.landlord.has(c, now.t));
    await d.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a durable landlord keeps resources as bytes: strings as UTF-8, other values refused', async () => {
  const d = await LandlordDriver.open({ store: new MemoryStore(), landlord: { id: 7, policy: POLICY } });
  assert.equal(d.landlord.durable, true);
  const g = await d.grant('printer ✓', ANY);
  assert.deepEqual(d.landlord.get(g.cookie, d.now()).resource, utf8('printer ✓'));
  await assert.rejects(d.grant({ a: 1 }, 1000), ArgumentTypeError);
  assert.throws(() => d.landlord.grant(42, 1000, d.now()), ArgumentTypeError);
  const words = new Uint32Array(4);
  assert.throws(() => d.landlord.grantWords([1], 1000, d.now(), words), ArgumentTypeError);
  const b = d.landlord.grantBatch(['x', utf8('y'), {}], 1000, d.now());
  assert.equal(b.failed, 1);
  assert.equal(b.durations[2], -ErrorCode.INVALID_ARGUMENT);
  await d.sync();
  // A plain driver will not drive a durable landlord (its journal would never be written).
  assert.throws(() => new LandlordDriver(d.landlord), /driven by the driver that opened it/);
  assert.throws(() => new LandlordDriver(new Landlord({ id: 1, policy: POLICY }), { store: 'x' }), /LandlordDriver.open/);
  await d.close();
  await assert.rejects(LandlordDriver.open({ landlord: { id: 7, policy: POLICY } }), /needs a store/);
});
