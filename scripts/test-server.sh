#!/usr/bin/env bash
# leasehold-server: the crash test on the embedded store (scripts/test-crash.sh, 50 SIGKILLs),
# then failover on a real PostgreSQL: a throw-away cluster on loopback (Debian's postgresql,
# installed when missing, run as a non-root user in a temporary directory), three servers,
# Rust and Python holders renewing through their failover clients, Node holders through
# fetchTransport over the three URLs (bindings-wasm/tests/holders.mjs), the owner of a shard
# killed with SIGKILL
# under load (repeatedly), and a paused owner (SIGSTOP, takeover, SIGCONT) to prove fencing.
# Prints: acknowledged leases lost, early expiries, writes by a deposed owner accepted (all
# must be 0), fenced writes refused, takeover times.
#
# Usage: scripts/test-server.sh [KILL_ROUNDS [STOP_ROUNDS]]   (default 8 and 3; SKIP_CRASH=1 skips
# the crash test)
# The server's own integration tests run in the rust part (cargo test --workspace).
set -euo pipefail
cd "$(dirname "$0")/.."
KILL_ROUNDS=${1:-8}
STOP_ROUNDS=${2:-3}
SHARDS=6
OWNERSHIP_MS=1500

echo "== crash test on the embedded file store"
[ -n "${SKIP_CRASH:-}" ] || bash scripts/test-crash.sh 50

echo "== failover on PostgreSQL"
# shellcheck source=lib/pg.sh
source scripts/lib/pg.sh
nice -n 10 cargo build --release -q -p leasehold-server
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
BIN="$target/release"
WORK=$(mktemp -d /tmp/leasehold-failover.XXXXXX)
declare -a PIDS PORTS URLS
LOAD=""
PYLOAD=""
cleanup() {
  for p in "${PIDS[@]:-}"; do
    [ -n "$p" ] && { kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; } || true
  done
  [ -n "$LOAD" ] && kill "$LOAD" 2>/dev/null || true
  [ -n "$PYLOAD" ] && kill "$PYLOAD" 2>/dev/null || true
  [ -n "${NODE_LOAD:-}" ] && kill "$NODE_LOAD" 2>/dev/null || true
  pg_stop
  rm -rf "$WORK"
}
trap cleanup EXIT
# Python holders renew through the same servers (the binding's http.Cluster): its venv first.
ROOT=$PWD TARGET=$target
# shellcheck source=lib/bindings.sh
source scripts/lib/bindings.sh
leasehold_python_venv
# Node holders: the npm package built and installed into $WORK/node (scripts/lib/bindings.sh).
leasehold_node_app "$WORK/node" >"$WORK/node-build.log" 2>&1 || { cat "$WORK/node-build.log"; exit 1; }
cp bindings-wasm/tests/holders.mjs "$WORK/node/"
pg_start
echo "PostgreSQL on 127.0.0.1:$PG_PORT ($PG_DIR)"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for i in 0 1 2; do
  PORTS[$i]=$(free_port)
  URLS[$i]="http://127.0.0.1:${PORTS[$i]}"
done
SERVERS=$(IFS=,; echo "${URLS[*]}")

start() { # $1: index
  "$BIN/leasehold-server" --store "$PG_URL" --shards $SHARDS --listen "127.0.0.1:${PORTS[$1]}" \
    --name "server-$1" --ownership-ms $OWNERSHIP_MS --max-lease-ms 60000 \
    >>"$WORK/server-$1.log" 2>&1 &
  PIDS[$1]=$!
}
index_of_url() {
  for i in 0 1 2; do [ "${URLS[$i]}" = "$1" ] && { echo "$i"; return; }; done
  echo "unknown owner $1" >&2; return 1
}
probe() { "$BIN/leasehold-load" --servers "$SERVERS" --probe $SHARDS --timeout-ms 300 --probe-limit-ms 30000; }
fenced_total() {
  local s=0 v
  for i in 0 1 2; do
    v=$(curl -sf --max-time 2 "${URLS[$i]}/metrics" | awk '$1=="leasehold_fenced_writes_total"{print $2}') || v=0
    s=$((s + ${v:-0}))
  done
  echo $s
}

for i in 0 1 2; do start $i; done
ms=$(probe)
echo "three servers up; every shard served after $ms ms"
RUN_MS=$(( (KILL_ROUNDS * 5 + STOP_ROUNDS * 7 + 10) * 1000 ))
# Holders renew with half their lease left (renew_divisor 2). A lease must ride out a takeover
# (about 2 s) plus what a holder thread spends before it gets to that lease: a Rust holder sends
# its renewals one landlord (shard) at a time, and while an owner is dead every attempt may try
# each server (0.5 s each), so one wave can take 6 x 1.5 s. With 10 s leases (5 s left) a
# loaded 2-core machine lost 6 renewals for good that way; 20 s leases leave 10 s, so no holder
# may lose a lease.
"$BIN/leasehold-load" --servers "$SERVERS" --holders 6 --leases 60 --lease-ms 20000 --run-ms $RUN_MS \
  --timeout-ms 500 --renew-divisor 2 --json "$WORK/load.json" >"$WORK/load.out" 2>"$WORK/load.err" &
LOAD=$!
# Like the Rust holders: renew with half the lease left, 20 s leases, 0.5 s per attempt.
"$PY_VENV/bin/python" bindings-python/tests/failover_holders.py --servers "$SERVERS" --holders 2 --leases 20 \
  --lease-ms 20000 --renew-divisor 2 --timeout-ms 500 --run-ms $((RUN_MS - 5000)) --json "$WORK/py.json" \
  >"$WORK/py.out" 2>"$WORK/py.err" &
PYLOAD=$!
# And the Node holders (fetchTransport over the three URLs), with the same renewal settings.
node "$WORK/node/holders.mjs" --servers "$SERVERS" --holders 2 --leases 30 --lease-ms 20000 --renew-divisor 2 \
  --timeout-ms 500 --run-ms $((RUN_MS - 5000)) --json "$WORK/node.json" >"$WORK/node.out" 2>"$WORK/node.err" &
NODE_LOAD=$!
sleep 3
takeovers=()
fenced_seen=0
round() { # $1: signal (KILL or STOP)
  local url victim t0 ms before
  url=$(pg_sql "SELECT owner_url FROM leasehold_shards WHERE lease_until > now() ORDER BY random() LIMIT 1")
  victim=$(index_of_url "$url")
  before=$(fenced_total)
  t0=$(date +%s%N)
  kill -"$1" "${PIDS[$victim]}"
  ms=$(probe)
  takeovers+=("$ms")
  if [ "$1" = KILL ]; then
    wait "${PIDS[$victim]}" 2>/dev/null || true
    echo "round: SIGKILL server-$victim (owned a shard): every shard served again after $ms ms"
    start "$victim"
  else
    kill -CONT "${PIDS[$victim]}"
    # The paused owner wakes up with its old state: its next writes must be refused.
    sleep 2
    local after
    after=$(fenced_total)
    fenced_seen=$((fenced_seen + after - before))
    echo "round: SIGSTOP server-$victim, takeover after $ms ms, SIGCONT: writes refused by fencing since: $((after - before))"
  fi
  sleep 2
}
for _ in $(seq 1 "$KILL_ROUNDS"); do round KILL; done
for _ in $(seq 1 "$STOP_ROUNDS"); do round STOP; done
status=0
wait "$LOAD" || status=$?
LOAD=""
cat "$WORK/load.out"
if [ -s "$WORK/load.err" ]; then echo "holders said:"; head -20 "$WORK/load.err"; fi
py_status=0
wait "$PYLOAD" || py_status=$?
PYLOAD=""
cat "$WORK/py.out"
if [ -s "$WORK/py.err" ]; then echo "python holders said:"; head -20 "$WORK/py.err"; fi
# The Node holders exit 1 on a violation; their counts are judged here like the Rust holders'.
wait "$NODE_LOAD" || true
NODE_LOAD=""
cat "$WORK/node.out"
if [ -s "$WORK/node.err" ]; then echo "node holders said:"; head -20 "$WORK/node.err"; fi
node_status=0
python3 - "$WORK/node.json" <<'EOF' || node_status=1
import json, os, sys
if not os.path.exists(sys.argv[1]):
    print("failover (node holders): no counts written (the holders died)")
    print("failover (node holders): 0 passed, 1 failed")
    sys.exit(1)
c = json.load(open(sys.argv[1]))
print(f"failover (node holders): grants acknowledged {c['grants_acked']}, renewals acknowledged {c['renewals_acked']}, "
      f"cancels acknowledged {c['cancels_acked']}, kept leases checked {c['kept_checked']}; acknowledged leases lost {c['lost']}, "
      f"early expiries {c['early_expiries']}, cancelled back {c['cancel_came_back']}, expired back {c['expiry_came_back']}")
bad = c["lost"] + c["early_expiries"] + c["cancel_came_back"] + c["expiry_came_back"]
ok = bad == 0 and c["grants_acked"] > 0 and c["kept_checked"] > 0
print(f"failover (node holders): {1 if ok else 0} passed, {0 if ok else 1} failed")
sys.exit(0 if ok else 1)
EOF

# What the database holds: no frame or snapshot by an owner after its replacement, and every
# shard's journal a contiguous run of records.
deposed=$(pg_sql "SELECT
  (SELECT count(*) FROM leasehold_journal j JOIN leasehold_takeovers t
     ON t.shard = j.shard AND t.epoch > j.epoch WHERE j.last_seq > t.base_seq)
+ (SELECT count(*) FROM leasehold_snapshots s JOIN leasehold_takeovers t
     ON t.shard = s.shard AND t.epoch > s.epoch WHERE s.seq > t.base_seq)")
gaps=$(pg_sql "SELECT count(*) FROM (SELECT first_seq, lag(last_seq) OVER (PARTITION BY shard ORDER BY first_seq) AS prev
  FROM leasehold_journal) x WHERE prev IS NOT NULL AND first_seq <> prev + 1")
acq=$(pg_sql "SELECT count(*) FROM leasehold_takeovers")
sorted=$(printf '%s\n' "${takeovers[@]}" | sort -n)
n=${#takeovers[@]}
p50=$(echo "$sorted" | sed -n "$(( (n + 1) / 2 ))p")
max=$(echo "$sorted" | tail -1)
python3 - "$WORK/load.json" "$deposed" "$gaps" "$fenced_seen" "$acq" "$p50" "$max" "$n" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
deposed, gaps, fenced, acq, p50, mx, n = map(int, sys.argv[2:])
print(f"failover counts: grants acknowledged {c['grants_acked']}, renewals acknowledged {c['renewals_acked']}, "
      f"cancels acknowledged {c['cancels_acked']}, kept leases checked {c['kept_checked']}, shard acquisitions {acq}")
print(f"failover violations: acknowledged leases lost {c['lost']}, early expiries {c['early_expiries']}, "
      f"cancelled back {c['cancel_came_back']}, expired back {c['expiry_came_back']}, "
      f"writes by a deposed owner accepted {deposed}, journal gaps {gaps}")
print(f"fencing: writes refused after SIGCONT {fenced}; takeover (kill or pause to every shard served), "
      f"{n} rounds: p50 {p50} ms, max {mx} ms; renewals that failed for good {c['renewal_failures']}")
# Holders keep their leases through every failover: a renewal that failed for good is a failure.
bad = (c["lost"] + c["early_expiries"] + c["cancel_came_back"] + c["expiry_came_back"] + deposed + gaps
       + c["renewal_failures"])
ok = bad == 0 and c["grants_acked"] > 0 and c["kept_checked"] > 0
print(f"failover: {1 if ok else 0} passed, {0 if ok else 1} failed")
sys.exit(0 if ok else 1)
EOF
[ $status -eq 0 ] && [ $py_status -eq 0 ] && [ $node_status -eq 0 ]
