// Per-call cost of the holder side (RenewalManager and RenewalService), through the public API
// only, so the same script runs on any build of the package: `node manager.mjs [pkg]` (default:
// the built package, bindings-wasm/pkg/node.js). Prints one table row per call: microseconds per
// call, best of 5 rounds (the machine is shared). Virtual time; no sleeping.
import { fileURLToPath } from 'node:url';

const pkg = process.argv[2] ?? fileURLToPath(new URL('../pkg/node.js', import.meta.url));
const { Landlord, Policy, RenewalManager, RenewalService, grantRequest, leaseFromReply } = await import(pkg);

const N = 2000;
const seed = new Uint8Array(32).fill(3);
const ll = new Landlord({ id: 5, seed, policy: Policy.fixed(60_000) });
const leases = [];
for (let i = 0; i < N; i++) leases.push(leaseFromReply(ll.handleRequest(grantRequest(i + 1, `r${i}`, 60_000), 0), 0));

function best(fn) {
  let min = Infinity;
  for (let round = 0; round < 5; round++) {
    const t0 = process.hrtime.bigint();
    const calls = fn();
    min = Math.min(min, Number(process.hrtime.bigint() - t0) / 1000 / calls);
  }
  return min;
}

const rows = [];
rows.push(['RenewalManager renewFor + remove', best(() => {
  const m = new RenewalManager({ maxBatch: 1 });
  for (const l of leases) m.renewFor(l, 600_000, 60_000, 0);
  for (const l of leases) m.remove(l);
  m.free();
  return 2 * N;
})]);
const m = new RenewalManager({ maxBatch: 1 });
for (const l of leases) m.renewFor(l, 600_000, 60_000, 0);
rows.push(['RenewalManager lease(l)', best(() => {
  for (const l of leases) m.lease(l);
  return N;
})]);
rows.push(['RenewalManager pollTransmit + handleReply + pollEvent', best(() => {
  // every lease falls due once per round: one request each (maxBatch 1), answered by the landlord
  let calls = 0;
  const due = m.pollTimeout();
  m.handleTimeout(due);
  for (let t = m.pollTransmit(due); t; t = m.pollTransmit(due)) {
    m.handleReply(ll.handleRequest(t.request, due), due);
    while (m.pollEvent()) calls += 0;
    calls++;
  }
  return Math.max(calls, 1);
})]);
const svc = new RenewalService({ id: 9, seed });
const { set } = svc.createSet(3_600_000, 0);
rows.push(['RenewalService add + remove', best(() => {
  for (const l of leases) svc.add(set, l, 600_000, 60_000, 0);
  for (const l of leases) svc.remove(set, l, 0);
  return 2 * N;
})]);

console.log(`node ${process.version}; ${pkg}; µs per call, best of 5 rounds, ${N} leases`);
console.log('| call | µs |');
console.log('|---|---:|');
for (const [name, us] of rows) console.log(`| ${name} | ${us.toFixed(2)} |`);
