// Where the time of one renewal goes (CPU ns per op, best of 3): the package's word API and string
// API against the Map + heap landlord, on the same lease, sequential leases and random leases.
// Usage: node bindings-wasm/bench/bounds.mjs [n]   (after bindings-wasm/build.sh)
import { HeapLandlord } from './heap-landlord.mjs';
const lh = await import(process.env.LEASEHOLD_PKG ?? new URL('../pkg/node.js', import.meta.url).href);
const n = Number(process.argv[2] || 100000); const K = 1_000_000;
let x = 99; const r = () => { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; return x; };
const pick = new Uint32Array(K); for (let i = 0; i < K; i++) pick[i] = r() % n;
const seq = new Uint32Array(K); for (let i = 0; i < K; i++) seq[i] = i % n;
function cpu(label, f) { let best = Infinity; for (let k = 0; k < 3; k++) { const c = process.cpuUsage(); f(); const d = process.cpuUsage(c); best = Math.min(best, (d.user + d.system) * 1000 / K); } console.log(label.padEnd(48), best.toFixed(0).padStart(5), 'ns/op'); }
const ll = new lh.Landlord({ id: 1, policy: { kind: 'bounded', max: 600000, default: 300000 } });
const store = new Uint32Array(4 * n);
for (let i = 0; i < n; i++) ll.grantWords(i, -1, 1000, store, 4 * i);
const hl = new HeapLandlord({ max: 600000, default: 300000 });
const cookies = new Array(n); for (let i = 0; i < n; i++) cookies[i] = hl.grant(i, -1, 1000).cookie;
const strs = new Array(n); for (let i = 0; i < n; i++) strs[i] = lh.cookieFromWords(store, 4 * i);
cpu('a call into wasm (wasmMemoryBytes)', () => { for (let i = 0; i < K; i++) lh.wasmMemoryBytes(); });
cpu('package renewWords, same lease', () => { for (let i = 0; i < K; i++) ll.renewWords(store, 0, 300000, 2000); });
cpu('package renewWords, sequential leases', () => { for (let i = 0; i < K; i++) ll.renewWords(store, 4 * seq[i], 300000, 2000); });
cpu('package renewWords, random leases', () => { for (let i = 0; i < K; i++) ll.renewWords(store, 4 * pick[i], 300000, 2000); });
cpu('package renew (string), random leases', () => { for (let i = 0; i < K; i++) ll.renew(strs[pick[i]], 300000, 2000); });
const words = new Uint32Array(4 * 1024), out = new Float64Array(1024);
cpu('package renewBatch of 1024, random (incl. gather)', () => { for (let i = 0; i < K; i += 1024) { for (let k = 0; k < 1024; k++) { const s = 4 * pick[i + k]; words[4*k] = store[s]; words[4*k+1] = store[s+1]; words[4*k+2] = store[s+2]; words[4*k+3] = store[s+3]; } ll.renewBatch(words, 300000, 2000, out); } });
cpu('Map + heap renew, same lease', () => { for (let i = 0; i < K; i++) hl.renew(cookies[0], 300000, 2000); });
cpu('Map + heap renew, sequential leases', () => { for (let i = 0; i < K; i++) hl.renew(cookies[seq[i]], 300000, 2000); });
cpu('Map + heap renew, random leases', () => { for (let i = 0; i < K; i++) hl.renew(cookies[pick[i]], 300000, 2000); });
