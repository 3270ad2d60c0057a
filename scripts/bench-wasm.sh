#!/usr/bin/env bash
# Benchmark of the npm package against what a JavaScript developer would use instead, in one run
# on one machine: a pure-JS landlord (Map + binary heap with lazy deletion, 32-hex cookies from
# crypto.getRandomValues), npm's @isaacs/ttlcache, and the old baseline (Map + one setTimeout per
# lease). Grant, renew, cancel and a mix (ops/s), and the memory held (JS heap + wasm memory), at
# 1e4, 1e5 and 1e6 leases. Each cell runs in a fresh Node process; speed cells run REPS times
# (default 3), interleaved, and the best of each is kept (the machine is shared).
# Usage: scripts/bench-wasm.sh [n ...]     (REPS=1 for a quick look, REBUILD=1 to rebuild)
set -euo pipefail
# The book includes what this prints: run under the recorder, which also writes it to
# docs/book/src/generated/bench-wasm.md (LEASEHOLD_BOOK_RECORD=0: print only).
[ -n "${LEASEHOLD_BOOK_RECORDING:-}" ] || exec python3 "$(dirname "$0")/lib/book_record.py" bench-wasm "$0" "$@"
cd "$(dirname "$0")/.."
root=$PWD
[ -f bindings-wasm/pkg/node.js ] && [ -z "${REBUILD:-}" ] || bash bindings-wasm/build.sh
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 1000000)
reps=${REPS:-3}

# @isaacs/ttlcache from the npm registry, pinned, into the target dir (not the package).
deps=$root/target/bench-wasm-deps
if [ ! -f "$deps/node_modules/@isaacs/ttlcache/package.json" ]; then
  mkdir -p "$deps"
  printf '{ "private": true }\n' > "$deps/package.json"
  (cd "$deps" && npm install --silent --no-audit --no-fund @isaacs/ttlcache@2.1.5 >/dev/null)
fi
export TTLCACHE_PKG=$deps/node_modules/@isaacs/ttlcache/dist/esm/index.js
export LEASEHOLD_PKG=$root/bindings-wasm/pkg/node.js

out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() { node --expose-gc --max-old-space-size=8192 bindings-wasm/bench/bench.mjs "$@" >> "$out"; }
for n in "${sizes[@]}"; do
  for impl in heap ttl timers wasm; do run "$impl" "$n" memory; done
  for ((r = 0; r < reps; r++)); do
    for impl in heap ttl timers wasm words batch; do run "$impl" "$n" speed; done
  done
done
node --input-type=module - "$out" "$reps" <<'JS'
import { readFileSync } from 'node:fs';
const rows = readFileSync(process.argv[2], 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const reps = process.argv[3];
const best = (impl, n) => {
  const rs = rows.filter((r) => r.impl === impl && r.n === n && r.mode === 'speed');
  const b = {};
  for (const k of ['grant', 'renew', 'cancel', 'mix']) b[k] = Math.max(...rs.map((r) => r[k]));
  return b;
};
const mem = (impl, n) => rows.find((r) => r.impl === impl && r.n === n && r.mode === 'memory');
const k = (x) => (x >= 1e6 ? (x / 1e6).toFixed(2) + 'M' : (x / 1e3).toFixed(0) + 'k');
const mb = (x) => (x / 2 ** 20).toFixed(1);
const x = (a, b) => (a / b).toFixed(1) + 'x';
const names = {
  heap: 'pure JS: Map + binary heap',
  ttl: '@isaacs/ttlcache 2.1.5',
  timers: 'pure JS: Map + setTimeout (old baseline)',
  wasm: 'leasehold, string cookies',
  words: 'leasehold, word cookies (grantWords, ...)',
  batch: 'leasehold, word batches of 1024',
};
console.log(`node ${process.version}, ${process.arch}; ops/s (best of ${reps}); memory held for n leases (MiB, JS heap + wasm memory, after GC)`);
console.log('| leases | implementation | grant/s | renew/s | cancel/s | mix ops/s | memory MiB | B/lease |');
console.log('|---:|---|---:|---:|---:|---:|---:|---:|');
for (const n of [...new Set(rows.map((r) => r.n))]) {
  for (const impl of ['heap', 'ttl', 'timers', 'wasm', 'words', 'batch']) {
    const s = best(impl, n);
    const m = mem(impl === 'words' || impl === 'batch' ? 'wasm' : impl, n);
    const memCells = impl === 'words' || impl === 'batch' ? '(same) | |' : `${mb(m.totalBytes)} | ${(m.totalBytes / n).toFixed(0)} |`;
    console.log(`| ${n} | ${names[impl]} | ${k(s.grant)} | ${k(s.renew)} | ${k(s.cancel)} | ${k(s.mix)} | ${memCells}`);
  }
  const h = best('heap', n), t = best('ttl', n);
  const mw = mem('wasm', n).totalBytes;
  for (const impl of ['words', 'batch']) {
    const s = best(impl, n);
    const r = (key) => `${x(s[key], h[key])} / ${x(s[key], t[key])}`;
    console.log(`| ${n} | **${impl} vs heap / ttlcache** | ${r('grant')} | ${r('renew')} | ${r('cancel')} | ${r('mix')} | ${x(mem('heap', n).totalBytes, mw)} / ${x(mem('ttl', n).totalBytes, mw)} less | |`);
  }
}
JS
