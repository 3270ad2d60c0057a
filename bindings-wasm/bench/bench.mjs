// One benchmark run in a fresh process: `node --expose-gc bench.mjs <impl> <n> <mode>`
//   impl: wasm (leasehold's Landlord under its LandlordDriver) | js (PureJsLandlord)
//   mode: speed (grant, renew, cancel n leases; ops/s) | memory (bytes held for n leases)
// Prints one JSON line. scripts/bench-wasm.sh runs every combination and prints the table.
import { PureJsLandlord } from './purejs-landlord.mjs';

const [impl, nArg, mode] = process.argv.slice(2);
const n = Number(nArg);
const pkg = process.env.LEASEHOLD_PKG;
const policy = { kind: 'bounded', max: 600_000, default: 300_000 };

async function make() {
  if (impl === 'js') {
    const ll = new PureJsLandlord(policy);
    return { ll, grant: (r, d) => ll.grant(r, d), renew: (c, d) => ll.renew(c, d), cancel: (c) => ll.cancel(c), close: () => ll.close(), wasmBytes: () => 0 };
  }
  const lh = await import(pkg);
  const driver = new lh.LandlordDriver(new lh.Landlord({ id: 1, policy }));
  return {
    ll: driver.landlord,
    grant: (r, d) => driver.grant(r, d),
    renew: (c, d) => driver.renew(c, d),
    cancel: (c) => driver.cancel(c),
    close: () => driver.close(),
    wasmBytes: () => lh.wasmMemoryBytes(),
  };
}

function gc() {
  for (let i = 0; i < 4; i++) global.gc();
}

const b = await make();
// Warm up the code paths (and the module) before measuring.
{
  const w = [];
  for (let i = 0; i < 2000; i++) w.push(b.grant(i, -1).cookie);
  for (const c of w) b.renew(c, 300_000);
  for (const c of w) b.cancel(c);
}

if (mode === 'memory') {
  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const wasm0 = b.wasmBytes();
  const rss0 = process.memoryUsage().rss;
  for (let i = 0; i < n; i++) b.grant(i, -1); // the holder keeps nothing: landlord state only
  gc();
  const heap = process.memoryUsage().heapUsed - heap0;
  const wasm = b.wasmBytes() - wasm0;
  const rss = process.memoryUsage().rss - rss0;
  if (b.ll.size !== n) throw new Error(`expected ${n} leases, have ${b.ll.size}`);
  console.log(JSON.stringify({ impl, n, mode, heapBytes: heap, wasmBytes: wasm, totalBytes: heap + wasm, rssBytes: rss }));
} else {
  const cookies = new Array(n);
  let t = performance.now();
  for (let i = 0; i < n; i++) cookies[i] = b.grant(i, -1).cookie;
  const grant = n / ((performance.now() - t) / 1000);
  t = performance.now();
  for (let i = 0; i < n; i++) b.renew(cookies[i], 300_000);
  const renew = n / ((performance.now() - t) / 1000);
  t = performance.now();
  for (let i = 0; i < n; i++) b.cancel(cookies[i]);
  const cancel = n / ((performance.now() - t) / 1000);
  if (b.ll.size !== 0) throw new Error('leases left after cancel');
  const all = 3 / (1 / grant + 1 / renew + 1 / cancel); // total ops / total time
  console.log(JSON.stringify({ impl, n, mode, grant, renew, cancel, all }));
}
b.close();
