// Durable landlords in a browser: IndexedDbStore in headless Chromium (Debian's /usr/bin/chromium
// through playwright-core), on the installed package's browser entry. The shared store vector
// written into IndexedDB opens exactly as on files (its torn tail cut chunk by chunk); the damaged
// copies are refused; a second tab cannot open a store in use; and a landlord granting and
// cancelling in a page keeps everything it acknowledged when the whole browser is killed with
// SIGKILL and started again on the same profile, several times.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = process.env.LEASEHOLD_ROOT;
const pkgDir = dirname(fileURLToPath(import.meta.resolve('leasehold')));
const vector = JSON.parse(readFileSync(join(root, 'core/tests/vectors/store.json'), 'utf8'));
const KILLS = Number(process.env.LEASEHOLD_BROWSER_KILLS ?? 3);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const PAGE = `<!doctype html><meta charset="utf-8"><title>store</title>
<script type="module">import * as lh from '/pkg/browser.js'; window.lh = lh; window.ready = true;</script>`;
const TYPES = { '.js': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };

let server;
let origin;
const profile = mkdtempSync(join(tmpdir(), 'leasehold-idb-'));

before(async () => {
  server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
      return;
    }
    const full = normalize(join(pkgDir, url.pathname.replace(/^\/pkg\//, '')));
    if (!url.pathname.startsWith('/pkg/') || !full.startsWith(pkgDir)) {
      res.writeHead(404).end();
      return;
    }
    try {
      const data = await readFile(full);
      res.writeHead(200, { 'content-type': TYPES[extname(full)] ?? 'application/octet-stream' }).end(data);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${server.address().port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
});

/** Chromium on `profile`, in its own process group so that it can be killed whole. */
async function launch() {
  const proc = spawn('/usr/bin/chromium', [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--remote-debugging-port=0', `--user-data-dir=${profile}`, 'about:blank',
  ], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  const exited = new Promise((r) => proc.on('exit', r));
  const endpoint = await new Promise((resolve, reject) => {
    let err = '';
    const t = setTimeout(() => reject(new Error(`chromium did not start: ${err}`)), 30_000);
    proc.stderr.on('data', (d) => {
      err += d;
      const m = err.match(/DevTools listening on (ws:\/\/\S+)/);
      if (m) {
        clearTimeout(t);
        resolve(m[1]);
      }
    });
    proc.on('exit', () => reject(new Error(`chromium exited: ${err}`)));
  });
  const browser = await chromium.connectOverCDP(endpoint);
  const context = browser.contexts()[0];
  return {
    browser,
    async page() {
      const p = await context.newPage();
      p.on('pageerror', (e) => console.log(`# page error: ${e}`));
      await p.goto(`${origin}/`);
      await p.waitForFunction(() => window.ready === true);
      return p;
    },
    /** SIGKILL to Chromium and every process it started. */
    async kill() {
      process.kill(-proc.pid, 'SIGKILL');
      await exited;
      await browser.close().catch(() => {});
    },
    async close() {
      await browser.newBrowserCDPSession().then((s) => s.send('Browser.close')).catch(() => {});
      const t = setTimeout(() => process.kill(-proc.pid, 'SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
      await browser.close().catch(() => {});
    },
  };
}

test('IndexedDB: the store vector opens as on files; its damaged copies are refused; one tab per store', { timeout: 120_000 }, async () => {
  const chrome = await launch();
  try {
    const page = await chrome.page();
    const got = await page.evaluate(async (v) => {
      const { lh } = window;
      const unhex = (h) => new Uint8Array(h.match(/../g)?.map((x) => parseInt(x, 16)) ?? []);
      const hex = (b) => [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
      const policy = lh.Policy.bounded(Number(v.landlord.policy.max), Number(v.landlord.policy.default));
      const readNow = Number(v.read_now);
      // The directory's files, as they are, into a database of their own.
      async function load(name, files) {
        await lh.IndexedDbStore.destroy(name);
        const s = await lh.IndexedDbStore.open(name);
        await s.apply(files.map((f) => ({ op: 'replace', file: f.name, bytes: unhex(f.hex) })));
        await s.close();
      }
      await load('vector', v.files);
      const d = await lh.LandlordDriver.open({
        store: 'vector', landlord: { id: v.landlord.id, policy }, segmentBytes: v.store.segment_bytes, now: () => readNow,
      });
      // A second opener (the tab's own, here) is kept out while the first holds it.
      const locked = await lh.IndexedDbStore.open('vector').then(() => 'opened', (e) => `${e.name}: ${e.message}`);
      const slot = (c) => parseInt(c.slice(24), 16);
      const leases = d.landlord.entries().sort((a, b) => slot(a.cookie) - slot(b.cookie))
        .map((e) => ({ cookie: e.cookie, expiration: String(e.expiration), resource: hex(e.resource) }));
      const journalSeq = d.landlord.journalSeq;
      const n = v.expect.next_grant;
      const g = await d.grant(unhex(n.resource), Number(n.duration));
      const out = { recovery: d.recovery, journalSeq, leases, locked,
        next: { cookie: g.cookie, duration: String(g.duration), expiration: String(g.expiration) } };
      await d.close();
      // Reopened: the torn tail is gone from the database, the grant is there.
      const again = await lh.LandlordDriver.open({ store: 'vector', landlord: { id: v.landlord.id, policy }, now: () => readNow });
      out.again = { torn: again.recovery.torn ?? null, size: again.landlord.size, has: again.landlord.has(n.cookie, readNow) };
      await again.close();
      out.damaged = [];
      for (const dmg of v.damaged) {
        await load(`damaged-${dmg.name}`, dmg.files);
        const e = await lh.LandlordDriver.open({ store: `damaged-${dmg.name}`, landlord: { id: v.landlord.id, policy }, now: () => readNow })
          .then(() => undefined, (err) => err);
        out.damaged.push({ name: dmg.name, error: e?.name, code: e?.code, decode: e instanceof lh.DecodeError });
      }
      return out;
    }, vector);
    const { expect } = vector;
    assert.equal(Boolean(got.recovery.torn), expect.torn);
    assert.equal(got.journalSeq, Number(expect.journal_seq));
    assert.deepEqual(got.leases, expect.leases);
    assert.deepEqual(got.next, {
      cookie: expect.next_grant.cookie, duration: expect.next_grant.duration, expiration: expect.next_grant.expiration,
    });
    assert.match(got.locked, /^StoreLockedError: IndexedDB store vector is in use/);
    assert.deepEqual(got.again, { torn: null, size: expect.leases.length + 1, has: true });
    for (const d of got.damaged) {
      assert.ok(d.decode, `${d.name}: ${d.error}`);
      assert.equal(d.code, vector.damaged.find((x) => x.name === d.name).error_code);
    }
    // Another tab: the store is free again (the first closed it), and is locked by the one open.
    const a = await chrome.page();
    const b = await chrome.page();
    await a.evaluate(async () => { window.s = await window.lh.IndexedDbStore.open('shared'); });
    const other = await b.evaluate(() => window.lh.IndexedDbStore.open('shared').then(() => 'opened', (e) => e.name));
    assert.equal(other, 'StoreLockedError');
    await a.close(); // closing the tab lets go of its lock (the browser does so shortly after)
    const tries = await b.evaluate(async () => {
      for (let i = 0; i < 100; i++) {
        try {
          const s = await window.lh.IndexedDbStore.open('shared');
          await s.close();
          return i;
        } catch (e) {
          if (e.name !== 'StoreLockedError') throw e;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      return -1;
    });
    assert.ok(tries >= 0, 'the lock of the closed tab was let go within 5 s');
  } finally {
    await chrome.close();
  }
});

test(`IndexedDB: a landlord in a page keeps every acknowledged grant and cancel through ${KILLS} SIGKILLs of the browser`, { timeout: 180_000 }, async () => {
  const granted = new Map(); // cookie -> resource, acknowledged in the page
  const cancelled = new Set(); // acknowledged cancels
  const cancelling = new Set(); // cancels asked for (such a lease may be gone, acknowledged or not)
  let recovered = [];
  for (let round = 0; round <= KILLS; round++) {
    const chrome = await launch();
    try {
      const page = await chrome.page();
      await page.exposeFunction('acked', (kind, list) => {
        for (const [cookie, resource] of list) {
          if (kind === 'grant') granted.set(cookie, resource);
          else if (kind === 'cancelling') cancelling.add(cookie);
          else cancelled.add(cookie);
        }
      });
      // Open the store; report what is there (checked below against what was acknowledged).
      const state = await page.evaluate(async () => {
        const { lh } = window;
        const d = await lh.LandlordDriver.open({ store: 'crash', landlord: { id: 0x1d8, policy: lh.Policy.bounded(3_600_000, 3_600_000) } });
        window.driver = d;
        return { recovery: d.recovery, entries: d.landlord.entries().map((e) => [e.cookie, new TextDecoder().decode(e.resource)]) };
      });
      const held = new Map(state.entries);
      let missing = 0;
      for (const [cookie, resource] of granted) {
        if (cancelling.has(cookie)) continue;
        if (held.get(cookie) !== resource) missing++;
      }
      const back = [...cancelled].filter((c) => held.has(c)).length;
      recovered.push({ round, held: held.size, acked: granted.size, cancels: cancelled.size, missing, back, replayed: state.recovery.replayed });
      assert.equal(missing, 0, `round ${round}: acknowledged grants missing after the kill`);
      assert.equal(back, 0, `round ${round}: acknowledged cancels came back`);
      if (round === KILLS) {
        await chrome.close(); // the last round only checks: a browser left open keeps the test file alive
        break;
      }
      // Load: batches of grants, and cancels of half of each batch, each reported once acknowledged.
      await page.evaluate((round) => {
        const d = window.driver;
        let i = 0;
        (async () => {
          for (;;) {
            const names = Array.from({ length: 20 }, () => `r${round}-${i++}`);
            const gs = await Promise.all(names.map((n) => d.grant(n, 3_600_000)));
            window.acked('grant', gs.map((g, k) => [g.cookie, names[k]]));
            const gone = gs.filter((_, k) => k % 2 === 0);
            await window.acked('cancelling', gone.map((g) => [g.cookie])); // known before they are sent
            await Promise.all(gone.map((g) => d.cancel(g.cookie)));
            window.acked('cancel', gone.map((g) => [g.cookie]));
          }
        })();
      }, round);
      await sleep(700 + Math.floor(Math.random() * 800));
      await chrome.kill();
    } catch (err) {
      await chrome.kill().catch(() => {});
      throw err;
    }
  }
  const last = recovered.at(-1);
  console.log(`# browser crash (IndexedDB, Chromium): ${KILLS} SIGKILLs of the whole browser; grants acknowledged ${granted.size}, ` +
    `cancels acknowledged ${cancelled.size}; after each restart: acknowledged grants missing ${recovered.reduce((s, r) => s + r.missing, 0)}, ` +
    `cancels back ${recovered.reduce((s, r) => s + r.back, 0)}; leases held at the end ${last.held}`);
  assert.ok(granted.size > 100, `grants acknowledged: ${granted.size}`);
  assert.ok(cancelled.size > 50, `cancels acknowledged: ${cancelled.size}`);
});
