// Crash test with real processes: a durable Node landlord (crash-landlord.mjs: LandlordDriver.open
// on a directory, node:fs) under load from Node holders over loopback HTTP (holders.mjs: the
// core's RenewalManager through fetchTransport), killed with SIGKILL at random moments and
// restarted on the same directory. The holders check every promise and the counts are printed:
// acknowledged grants and renewals honoured until their promised time (no early expiry),
// leases renewed to the end still held, acknowledged cancels staying cancelled, expired leases
// never coming back. LEASEHOLD_CRASH_KILLS sets the number of kills (default 12).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runHolders, violations, describe } from './holders.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const KILLS = Number(process.env.LEASEHOLD_CRASH_KILLS ?? 12);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function startLandlord(dir, port) {
  const proc = spawn(process.execPath, [join(here, 'crash-landlord.mjs'), dir, String(port)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((r) => proc.on('exit', r));
  const up = new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    let recovered;
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/^recovered (.*)$/m);
      if (m) recovered = JSON.parse(m[1]);
      if (/^url /m.test(out)) resolve(recovered);
    });
    proc.stderr.on('data', (d) => { err += d; });
    proc.on('exit', (code) => reject(new Error(`landlord exited (${code}) before serving: ${err}`)));
  });
  return { proc, exited, up };
}

test(`crash: a durable Node landlord killed with SIGKILL ${KILLS} times under load keeps every promise`, { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-node-crash-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/lease`;
  let ll = startLandlord(dir, port);
  await ll.up;
  const runMs = KILLS * 800 + 8000;
  const messages = [];
  const holders = runHolders({
    // Renew with half the lease left (as the failover test's holders): a restart under a loaded
    // machine (up to ~1 s) must not outlast what a lease has left when its renewal is sent.
    servers: [url], holders: 4, leases: 40, leaseMs: 3000, runMs, timeoutMs: 500, renewDivisor: 2,
    log: (m) => messages.push(m),
  });
  const restartMs = [];
  let torn = 0;
  let replayed = 0;
  const started = Date.now();
  try {
    for (let k = 0; k < KILLS; k++) {
      await sleep(300 + Math.floor(Math.random() * 900));
      ll.proc.kill('SIGKILL');
      await ll.exited;
      const t0 = Date.now();
      ll = startLandlord(dir, port);
      const rec = await ll.up;
      restartMs.push(Date.now() - t0);
      if (rec?.torn) torn++;
      replayed += rec?.replayed ?? 0;
    }
    const c = await holders;
    const files = readdirSync(dir).map((n) => `${n} ${statSync(join(dir, n)).size}`);
    restartMs.sort((a, b) => a - b);
    console.log(`# crash (node landlord): ${KILLS} SIGKILLs in ${Math.round((Date.now() - started) / 1000)} s; ` +
      `restart to serving: p50 ${restartMs[restartMs.length >> 1]} ms, max ${restartMs.at(-1)} ms; ` +
      `torn tails cut ${torn}; records replayed ${replayed}; directory: ${files.join(', ')}`);
    for (const line of describe(c)) console.log(`# ${line}`);
    for (const m of messages.slice(0, 20)) console.log(`# holder: ${m}`);
    console.log(`# crash counts: grants acknowledged ${c.grants_acked}, renewals acknowledged ${c.renewals_acked}, ` +
      `cancels acknowledged ${c.cancels_acked}, kept leases checked ${c.kept_checked}; violations: early expiries ` +
      `${c.early_expiries}, acknowledged leases lost ${c.lost}, cancelled back ${c.cancel_came_back}, expired back ${c.expiry_came_back}`);
    assert.equal(violations(c), 0, 'no promise broken');
    assert.ok(c.grants_acked > 100, `grants acknowledged: ${c.grants_acked}`);
    assert.ok(c.kept_checked > 50, `kept leases checked: ${c.kept_checked}`);
    assert.ok(c.cancels_acked > 0, 'cancels were acknowledged');
    assert.ok(c.renewals_acked > c.grants_acked, 'renewals were acknowledged');
  } finally {
    ll.proc.kill('SIGKILL');
    await ll.exited;
    rmSync(dir, { recursive: true, force: true });
  }
});
