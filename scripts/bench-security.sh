#!/usr/bin/env bash
# What TLS and tokens cost: renewals per second through one leasehold-server (embedded file
# store, 1 shard) at 1, 16 and 256 requests in flight, over plain HTTP and over TLS (rustls,
# ECDSA P-256) with a bearer token checked on every request. Client and server share the
# machine; each row is the median of RUNS runs of SECONDS, timed over open connections (the
# bench opens one per slot, TLS handshake included, before its clock starts: a long-lived
# client's steady state). Beside the rate, the server's own CPU time per renewal (user +
# system, from /proc, fsync threads included; the handshakes too, as it spans the whole bench
# process): the rate on a shared 2-core machine also moves with the client's TLS and with
# anything else running, the server's CPU per renewal much less.
#
# Over TLS two clients: HTTP/1.1 (the client's default: one connection, one TLS session, per
# request in flight) and HTTP/2 (`TlsOptions::http2`, `--http2`: one connection carries every
# request in flight, offered by ALPN; what a client with many requests in flight should use).
#
# Usage: scripts/bench-security.sh [SECONDS] [RUNS]   (default 5 3)
set -euo pipefail
# The book includes what this prints (docs/book/src/generated/bench-security.md).
[ -n "${LEASEHOLD_BOOK_RECORDING:-}" ] || exec python3 "$(dirname "$0")/lib/book_record.py" bench-security "$0" "$@"
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
start() { # start NAME ARGS...: sets URL and PID
  local name=$1; shift
  "$BIN/leasehold-server" --listen 127.0.0.1:0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
  PID=$!
  PIDS+=("$PID")
  for _ in $(seq 100); do grep -q "listening on" "$T/$name.out" 2>/dev/null && break; sleep 0.1; done
  URL=$(grep "listening on" "$T/$name.out" | awk '{print $NF}')
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
# one PID ARGS...: one run of the bench against the server PID; prints "RATE CPU_US_PER_RENEWAL"
one() {
  local pid=$1 t0 t1 out; shift
  t0=$(ticks "$pid")
  out=$("$BIN/leasehold-renew-bench" "$@" --seconds "$SECONDS_")
  t1=$(ticks "$pid")
  awk -v o="$out" -v t="$((t1 - t0))" -v hz="$HZ" 'BEGIN {
    split(o, f, /[ =]/); for (i = 1; i in f; i += 2) v[f[i]] = f[i + 1]
    printf "%d %.1f\n", v["per_s"], t * 1e6 / hz / v["renewals"] }'
}
start plain --data "$T/d-plain"; plain=$URL; plain_pid=$PID
start secure --data "$T/d-secure" --tls-cert "$T/c/server.pem" --tls-key "$T/c/server.key" --tokens "$T/tokens.toml"; secure=$URL; secure_pid=$PID
echo "Renewals per second and the server's CPU time per renewal, one server (file store, 1 shard), single renewals, ${SECONDS_} s x ${RUNS} runs (median)"
echo
echo "| in flight | plain HTTP/1.1 | TLS + token, HTTP/1.1 | vs plain | TLS + token, HTTP/2 | vs plain | server CPU per renewal: plain | TLS, HTTP/1.1 | TLS, HTTP/2 |"
echo "|-----------|----------------|-----------------------|----------|---------------------|----------|-------------------------------|---------------|-------------|"
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", (b - a) * 100 / a }'; }
for n in 1 16 256; do
  : >"$T/p"; : >"$T/s"; : >"$T/s2"
  for _ in $(seq "$RUNS"); do
    one "$plain_pid" --server "$plain" --inflight "$n" >>"$T/p"
    one "$secure_pid" --server "$secure" --inflight "$n" --ca "$T/c/ca.pem" --token "$(cat "$T/token")" >>"$T/s"
    one "$secure_pid" --server "$secure" --inflight "$n" --ca "$T/c/ca.pem" --token "$(cat "$T/token")" --http2 >>"$T/s2"
  done
  p=$(awk '{print $1}' "$T/p" | median); s=$(awk '{print $1}' "$T/s" | median); s2=$(awk '{print $1}' "$T/s2" | median)
  pc=$(awk '{print $2}' "$T/p" | median); sc=$(awk '{print $2}' "$T/s" | median); sc2=$(awk '{print $2}' "$T/s2" | median)
  printf '| %9s | %14s | %21s | %8s | %19s | %8s | %26s µs | %10s µs | %8s µs |\n' "$n" "$p" "$s" "$(pct "$p" "$s")" "$s2" "$(pct "$p" "$s2")" "$pc" "$sc" "$sc2"
done
echo
echo "Target (issue 22): TLS + token at most 15% slower than plain at 256 in flight."
