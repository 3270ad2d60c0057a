#!/usr/bin/env bash
# Benchmark of the npm package against a pure-JS landlord (Map + one setTimeout per lease), same
# run, same machine: grant/renew/cancel throughput and memory held, at 1e5 and 1e6 leases.
# Each measurement runs in a fresh Node process. Usage: scripts/bench-wasm.sh [n ...]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
[ -f bindings-wasm/pkg/node.js ] && [ -z "${REBUILD:-}" ] || bash bindings-wasm/build.sh
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100000 1000000)
export LEASEHOLD_PKG=$root/bindings-wasm/pkg/node.js
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for n in "${sizes[@]}"; do
  for impl in js wasm; do
    for mode in speed memory; do
      node --expose-gc --max-old-space-size=8192 bindings-wasm/bench/bench.mjs "$impl" "$n" "$mode" >> "$out"
    done
  done
done
node --input-type=module - "$out" <<'JS'
import { readFileSync } from 'node:fs';
const rows = readFileSync(process.argv[2], 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const get = (impl, n, mode) => rows.find((r) => r.impl === impl && r.n === n && r.mode === mode);
const k = (x) => (x / 1e3).toFixed(0).padStart(7) + 'k';
const mb = (x) => (x / 2 ** 20).toFixed(1).padStart(8);
console.log(`node ${process.version}, ${process.arch}; ops/s (k = thousand), memory held by the landlord (MiB)`);
console.log('| leases | impl | grant/s | renew/s | cancel/s | all ops/s | JS heap | wasm mem | total | B/lease |');
console.log('|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const n of [...new Set(rows.map((r) => r.n))]) {
  for (const impl of ['js', 'wasm']) {
    const s = get(impl, n, 'speed'), m = get(impl, n, 'memory');
    console.log(`| ${n} | ${impl === 'js' ? 'pure JS (Map+setTimeout)' : 'leasehold wasm + driver'} | ${k(s.grant)} | ${k(s.renew)} | ${k(s.cancel)} | ${k(s.all)} | ${mb(m.heapBytes)} | ${mb(m.wasmBytes)} | ${mb(m.totalBytes)} | ${(m.totalBytes / n).toFixed(0)} |`);
  }
  const sj = get('js', n, 'speed'), sw = get('wasm', n, 'speed');
  const mj = get('js', n, 'memory'), mw = get('wasm', n, 'memory');
  console.log(`| ${n} | **ratio** | ${(sw.grant / sj.grant).toFixed(2)}x | ${(sw.renew / sj.renew).toFixed(2)}x | ${(sw.cancel / sj.cancel).toFixed(2)}x | **${(sw.all / sj.all).toFixed(2)}x faster** | | | **${(mj.totalBytes / mw.totalBytes).toFixed(2)}x less** | |`);
}
JS
