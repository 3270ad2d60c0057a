#!/usr/bin/env bash
# Bench of leasehold-server on loopback (prints tables; numbers depend on the machine):
#  1. renewals/s with batching through 1, 2 and 3 servers sharing one PostgreSQL (and one
#     server on the embedded file store, for comparison), with PostgreSQL round trips and
#     renewals per store write (one write = one group commit);
#  2. takeover time over repeated SIGKILLs of a shard's owner (p50 and max).
# The renewal rate is read from the servers' /metrics over a window after warm-up.
# Usage: scripts/bench-server.sh [WINDOW_S [KILLS]]   (default 10 and 10)
set -euo pipefail
# The book includes what this prints: run under the recorder, which also writes it to
# docs/book/src/generated/bench-server.md (LEASEHOLD_BOOK_RECORD=0: print only).
[ -n "${LEASEHOLD_BOOK_RECORDING:-}" ] || exec python3 "$(dirname "$0")/lib/book_record.py" bench-server "$0" "$@"
cd "$(dirname "$0")/.."
WINDOW=${1:-10}
KILLS=${2:-10}
SHARDS=6
# shellcheck source=lib/pg.sh
source scripts/lib/pg.sh
nice -n 10 cargo build --profile profiling -q -p leasehold-server
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
BIN="$target/profiling"
WORK=$(mktemp -d /tmp/leasehold-bench.XXXXXX)
declare -a PIDS PORTS URLS
LOAD=""
stop_all() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && { kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; } || true; done
  PIDS=()
  [ -n "$LOAD" ] && { kill "$LOAD" 2>/dev/null; wait "$LOAD" 2>/dev/null; } || true
  LOAD=""
}
trap 'stop_all; pg_stop; rm -rf "$WORK"' EXIT
pg_start
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
sum_metric() { # metric, over the first $2 servers
  local s=0 v i
  for ((i = 0; i < $2; i++)); do
    v=$(curl -sf --max-time 2 "${URLS[$i]}/metrics" | awk -v m="$1" '$1 ~ "^"m"({|$)" {s+=$2} END {print s+0}') || v=0
    s=$(python3 -c "print($s + ${v:-0})")
  done
  echo "$s"
}
start() { # $1 index, $2 store args...
  local i=$1; shift
  "$BIN/leasehold-server" "$@" --shards $SHARDS --listen "127.0.0.1:${PORTS[$i]}" --name "bench-$i" \
    --ownership-ms 1500 >>"$WORK/server-$i.log" 2>&1 &
  PIDS[$i]=$!
}
for i in 0 1 2; do PORTS[$i]=$(free_port); URLS[$i]="http://127.0.0.1:${PORTS[$i]}"; done

HOLDERS=8
LEASES=400
LEASE_MS=1000
measure() { # $1 label, $2 servers
  local n=$2 servers r0 r1 c0 c1 t0 t1 rate
  servers=$(IFS=,; echo "${URLS[*]:0:$n}")
  "$BIN/leasehold-load" --servers "$servers" --probe $SHARDS --timeout-ms 300 >/dev/null
  "$BIN/leasehold-load" --servers "$servers" --holders $HOLDERS --leases $LEASES --lease-ms $LEASE_MS \
    --run-ms $(( (WINDOW + 25) * 1000 )) --cancel 0 --abandon 0 --timeout-ms 3000 --encoding binary \
    >"$WORK/load-$1.out" 2>&1 &
  LOAD=$!
  # Warm-up: grants, then renewals settle into their rhythm.
  sleep 15
  r0=$(sum_metric leasehold_renewals_total "$n"); c0=$(sum_metric leasehold_commits_total "$n")
  t0=$(sum_metric leasehold_pg_round_trips_total "$n")
  sleep "$WINDOW"
  r1=$(sum_metric leasehold_renewals_total "$n"); c1=$(sum_metric leasehold_commits_total "$n")
  t1=$(sum_metric leasehold_pg_round_trips_total "$n")
  python3 - "$1" "$n" "$r0" "$r1" "$c0" "$c1" "$t0" "$t1" "$WINDOW" <<'EOF'
import sys
label, n = sys.argv[1], int(sys.argv[2])
r0, r1, c0, c1, t0, t1, w = map(float, sys.argv[3:])
rate, commits = (r1 - r0) / w, (c1 - c0) / w
trips = f"{(t1 - t0) / max(c1 - c0, 1):.2f}" if t1 > t0 else "-"
print(f"| {label:<22} | {n} | {rate:>10.0f} | {commits:>9.0f} | {(r1 - r0) / max(c1 - c0, 1):>14.1f} | {trips:>18} |")
EOF
  stop_all
}

echo
echo "Renewals with batching: $HOLDERS holder threads x $LEASES leases of $LEASE_MS ms (renew_all per landlord), $SHARDS shards, binary encoding, ${WINDOW} s window"
echo
echo "| store                  | servers | renewals/s | writes/s | renewals/write | PG round trips/write |"
echo "|------------------------|---------|------------|----------|----------------|----------------------|"
start 0 --data "$WORK/files"
measure "embedded file store" 1
for n in 1 2 3; do
  pg_sql "DROP TABLE IF EXISTS leasehold_cluster, leasehold_servers, leasehold_shards, leasehold_snapshots, leasehold_journal, leasehold_takeovers"
  for ((i = 0; i < n; i++)); do start $i --store "$PG_URL"; done
  measure "PostgreSQL" "$n"
done

echo
echo "Takeover: SIGKILL the owner of a random shard, time until every shard answers again (ownership lease 1500 ms, renewed every 500 ms)"
pg_sql "DROP TABLE IF EXISTS leasehold_cluster, leasehold_servers, leasehold_shards, leasehold_snapshots, leasehold_journal, leasehold_takeovers"
for i in 0 1 2; do start $i --store "$PG_URL"; done
SERVERS=$(IFS=,; echo "${URLS[*]}")
"$BIN/leasehold-load" --servers "$SERVERS" --probe $SHARDS --timeout-ms 300 >/dev/null
"$BIN/leasehold-load" --servers "$SERVERS" --holders 4 --leases 100 --lease-ms 8000 --run-ms $(( KILLS * 6000 + 5000 )) \
  --timeout-ms 1000 >"$WORK/load-takeover.out" 2>&1 &
LOAD=$!
sleep 3
times=()
for _ in $(seq 1 "$KILLS"); do
  url=$(pg_sql "SELECT owner_url FROM leasehold_shards WHERE lease_until > now() ORDER BY random() LIMIT 1")
  for i in 0 1 2; do [ "${URLS[$i]}" = "$url" ] && v=$i; done
  kill -9 "${PIDS[$v]}"; wait "${PIDS[$v]}" 2>/dev/null || true
  times+=("$("$BIN/leasehold-load" --servers "$SERVERS" --probe $SHARDS --timeout-ms 300)")
  start "$v" --store "$PG_URL"
  sleep 3
done
wait "$LOAD" || true; LOAD=""
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
echo
echo "| kills | takeover p50 | takeover max | all (ms) |"
echo "|-------|--------------|--------------|----------|"
echo "| ${#times[@]} | $(echo "$sorted" | sed -n "$(( (${#times[@]} + 1) / 2 ))p") ms | $(echo "$sorted" | tail -1) ms | $(echo "$sorted" | tr '\n' ' ')|"
echo
tail -2 "$WORK/load-takeover.out"
