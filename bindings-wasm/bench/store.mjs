// Per-call cost of the embedded store's binding (a durable landlord on a MemoryStore), through
// the public API and the hooks StoreWriter calls, so the same script runs on any build of the
// package: `node store.mjs [pkg]` (default: bindings-wasm/pkg/node.js). Microseconds per call
// (per lease for the opening), best of 5 rounds.
import { fileURLToPath } from 'node:url';

const pkg = process.argv[2] ?? fileURLToPath(new URL('../pkg/node.js', import.meta.url));
const { LandlordDriver, MemoryStore, Policy } = await import(pkg);

const seed = new Uint8Array(32).fill(3);
let t = 1_000;
const open = (store) => LandlordDriver.open({ store, landlord: { id: 5, seed, policy: Policy.fixed(600_000) }, now: () => t });

async function best(fn) {
  let min = Infinity;
  for (let round = 0; round < 5; round++) {
    const t0 = process.hrtime.bigint();
    const calls = await fn();
    min = Math.min(min, Number(process.hrtime.bigint() - t0) / 1000 / calls);
  }
  return min;
}

const rows = [];
const mem = new MemoryStore();
const d = await open(mem);
rows.push(['driver grant, 100 per group commit', await best(async () => {
  for (let r = 0; r < 20; r++) await Promise.all(Array.from({ length: 100 }, (_, i) => d.grant(`r${r}-${i}`, 60_000)));
  return 2000;
})]);
const ll = d.landlord;
rows.push(['grant + __commit + journalSeq (one record a commit)', await best(() => {
  for (let i = 0; i < 2000; i++) {
    ll.grant(`x${i}`, 60_000, t);
    if (ll.__commit().durable < ll.journalSeq) throw new Error('not durable');
  }
  return 2000;
})]);
rows.push(['__storeStats', await best(() => {
  for (let i = 0; i < 2000; i++) ll.__storeStats();
  return 2000;
})]);
await d.close();
const files = mem.files();
rows.push([`open a store of ${d.landlord.size ?? '?'} leases (per lease)`, await best(async () => {
  const again = await open(MemoryStore.from(files));
  const n = again.landlord.size;
  await again.close();
  return n;
})]);
for (const [name, us] of rows) console.log(`| ${name} | ${us.toFixed(2)} |`);
