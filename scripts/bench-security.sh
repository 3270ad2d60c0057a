#!/usr/bin/env bash
# What TLS and tokens cost: renewals per second through one leasehold-server (embedded file
# store, 1 shard) at 1, 16 and 256 requests in flight, over plain HTTP and over TLS (rustls,
# ECDSA P-256) with a bearer token checked on every request. Client and server share the
# machine; each row is the median of RUNS runs of SECONDS.
#
# Usage: scripts/bench-security.sh [SECONDS] [RUNS]   (default 5 3)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_=${1:-5}
RUNS=${2:-3}
# The release build (as scripts/test-security.sh uses): no profiler reads this one.
nice -n 10 cargo build --release -q -p leasehold-server
BIN=$PWD/target/release
T=$(mktemp -d /tmp/leasehold-bench-sec.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && { kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; } || true; done
  rm -rf "$T"
}
trap cleanup EXIT
bash scripts/lib/mkcerts.sh "$T/c"
"$BIN/leasehold-server" token add --file "$T/tokens.toml" --name bench --ops grant,renew --prefix bench/ >"$T/token"
start() { # start NAME ARGS...: sets URL
  local name=$1; shift
  "$BIN/leasehold-server" --listen 127.0.0.1:0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
  PIDS+=("$!")
  for _ in $(seq 100); do grep -q "listening on" "$T/$name.out" 2>/dev/null && break; sleep 0.1; done
  URL=$(grep "listening on" "$T/$name.out" | awk '{print $NF}')
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
start plain --data "$T/d-plain"; plain=$URL
start secure --data "$T/d-secure" --tls-cert "$T/c/server.pem" --tls-key "$T/c/server.key" --tokens "$T/tokens.toml"; secure=$URL
echo "Renewals per second, one server (file store, 1 shard), single renewals, ${SECONDS_} s x ${RUNS} runs (median)"
echo
echo "| in flight | plain HTTP | TLS + token | TLS + token vs plain |"
echo "|-----------|------------|-------------|----------------------|"
for n in 1 16 256; do
  p=$(for _ in $(seq "$RUNS"); do "$BIN/leasehold-renew-bench" --server "$plain" --inflight "$n" --seconds "$SECONDS_" | sed 's/.*per_s=//'; done | median)
  s=$(for _ in $(seq "$RUNS"); do "$BIN/leasehold-renew-bench" --server "$secure" --inflight "$n" --seconds "$SECONDS_" --ca "$T/c/ca.pem" --token "$(cat "$T/token")" | sed 's/.*per_s=//'; done | median)
  printf '| %9s | %10s | %11s | %19s%% |\n' "$n" "$p" "$s" "$(awk -v p="$p" -v s="$s" 'BEGIN { printf "%+.1f", (s - p) * 100 / p }')"
done
