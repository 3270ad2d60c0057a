// A Node contender for scripts/test-coord.sh: the built npm package's lock recipe (`lock` on a
// RenewalDriver over fetchTransport) contending for the same lock as the Rust holders
// (leasehold-contend), writing to the same fenced register with the lock's token.
//
// The register is `leasehold-contend --role register` (POST /write?writer=&token=), which runs the
// fenced statement in PostgreSQL (UPDATE ... WHERE token <= $1): the fence is the database's,
// this process only passes its token. It logs JSON lines in the Rust holders' form (acquired,
// write with ok, lost, released, done), which the script's checks read. --careless writes
// without checking that the lease is still held (only the fence protects the register).
//
// Usage (the package installed next to it):
//   node contend.mjs --servers URL,URL --register URL --name js1 --log js1.jsonl [--careless]
//     [--lock locks/register] [--lease-ms 2000] [--writes 5] [--gap-ms 40] [--run-ms 30000]
//     [--stop-file FILE]   (stop after the current turn once FILE exists)
import { existsSync, openSync, writeSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { lock, fetchTransport, RenewalDriver, RenewalManager, LeaseDeniedError, LeaseError } from 'leasehold';

const { values: o } = parseArgs({
  options: {
    servers: { type: 'string' },
    register: { type: 'string' },
    lock: { type: 'string', default: 'locks/register' },
    name: { type: 'string', default: 'js' },
    'lease-ms': { type: 'string', default: '2000' },
    writes: { type: 'string', default: '5' },
    'gap-ms': { type: 'string', default: '40' },
    careless: { type: 'boolean', default: false },
    'run-ms': { type: 'string', default: '30000' },
    log: { type: 'string' },
    'stop-file': { type: 'string' },
  },
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const start = performance.now();
const fd = openSync(o.log, 'w');
// One line per record, written at once (nothing is lost when the process is killed).
const log = (rec) => writeSync(fd, `${JSON.stringify({ at: Math.round(performance.now() - start), ...rec })}\n`);

/** One fenced write through the register: its answer, or an error. */
async function write(token) {
  const url = `${o.register}/write?writer=${encodeURIComponent(o.name)}&token=${token}`;
  try {
    const r = await fetch(url, { method: 'POST', signal: AbortSignal.timeout(5000) });
    return await r.json();
  } catch (e) {
    return { error: String(e) };
  }
}

const transport = fetchTransport(o.servers.split(','), { timeout: 500 });
const driver = new RenewalDriver(new RenewalManager({ maxClockDriftPpm: 100 }), {
  transport,
  // A renewal that failed is the lock's business (held turns false); nothing to throw.
  onError: (e) => log({ driver_error: String(e) }),
});
const lease = Number(o['lease-ms']);
const end = performance.now() + Number(o['run-ms']);
while (performance.now() < end && !(o['stop-file'] && existsSync(o['stop-file']))) {
  let held;
  try {
    held = await lock(transport, o.lock, { wait: 3000, lease, holder: o.name, driver });
  } catch (e) {
    if (e instanceof LeaseDeniedError) continue;
    log({ acquire_failed: String(e) });
    await sleep(100);
    continue;
  }
  const token = Number(held.token);
  const safe = held.safeUntil();
  log({ acquired: token, landlord: held.landlord, safe_ms: safe === undefined ? null : Math.max(0, safe - driver.now()) });
  for (let i = 0; i < Number(o.writes); i++) {
    if (!o.careless && !held.held) {
      log({ lost: token });
      break;
    }
    log({ write: token, ...(await write(token)) });
    await sleep(Number(o['gap-ms']));
  }
  try {
    await held.release();
    log({ released: token });
  } catch (e) {
    if (!(e instanceof LeaseError)) throw e;
    log({ release_failed: token, why: String(e) });
  }
}
driver.close();
log({ done: true });
process.exit(0); // idle keep-alive connections need not hold the process
