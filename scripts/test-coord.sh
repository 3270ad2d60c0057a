#!/usr/bin/env bash
# Coordination under faults, with real processes: three leasehold-servers on one PostgreSQL
# (Debian's, a throw-away cluster on loopback run as a non-root user), holders contending for one
# lock (leasehold-contend: the Rust Lock recipe) and writing to a register in PostgreSQL fenced
# by the lock's token (UPDATE ... WHERE token <= $1), some of them careless (they write without
# checking their lease: only the fence protects the register), and watchers following the lock.
# Faults, each round: the owner of the lock's shard SIGKILLed (and restarted), the owner
# SIGSTOPped until its shard is taken over (then SIGCONT), and a holder SIGSTOPped while it holds
# the lock, past its lease (then SIGCONT: it comes back believing in its lock).
#
# Checks (all must hold): 0 writes accepted out of token order; 0 tokens whose writes came from
# two holders; every token acquired by one holder only; every watcher sees every grant and every
# end of the lock's leases once, in order, numbers without a gap, never two holders at once, and
# the same history as the other watcher; every acquisition seen by the watchers. Prints the
# counts, how many stale writes the fence refused, and the takeover times.
#
# Usage: scripts/test-coord.sh [ROUNDS]   (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SHARDS=4
OWNERSHIP_MS=1500
LEASE_MS=2000

# shellcheck source=lib/pg.sh
source scripts/lib/pg.sh
nice -n 10 cargo build --release -q -p leasehold-server
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
BIN="$target/release"
WORK=$(mktemp -d /tmp/leasehold-coord.XXXXXX)
declare -a PIDS PORTS URLS
declare -A CPID
cleanup() {
  for p in "${PIDS[@]:-}" "${CPID[@]:-}"; do
    [ -n "$p" ] && { kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; } || true
  done
  pg_stop
  rm -rf "$WORK"
}
trap cleanup EXIT
pg_start
echo "PostgreSQL on 127.0.0.1:$PG_PORT"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for i in 0 1 2; do
  PORTS[$i]=$(free_port)
  URLS[$i]="http://127.0.0.1:${PORTS[$i]}"
done
SERVERS=$(IFS=,; echo "${URLS[*]}")
start() { # $1: index
  "$BIN/leasehold-server" --store "$PG_URL" --shards $SHARDS --listen "127.0.0.1:${PORTS[$1]}" \
    --name "server-$1" --ownership-ms $OWNERSHIP_MS --max-lease-ms 60000 --exclusive-prefix locks/ \
    >>"$WORK/server-$1.log" 2>&1 &
  PIDS[$1]=$!
}
index_of_url() {
  for i in 0 1 2; do [ "${URLS[$i]}" = "$1" ] && { echo "$i"; return; }; done
  echo "unknown owner $1" >&2; return 1
}
probe() { "$BIN/leasehold-load" --servers "$SERVERS" --probe $SHARDS --timeout-ms 300 --probe-limit-ms 30000; }

for i in 0 1 2; do start $i; done
ms=$(probe)
echo "three servers up; every shard served after $ms ms"
"$BIN/leasehold-contend" --setup --pg "$PG_URL" --log /dev/null

RUN_MS=$(( (ROUNDS * 22 + 8) * 1000 ))
contend() { # name, role, extra args...
  local name=$1 role=$2; shift 2
  "$BIN/leasehold-contend" --role "$role" --name "$name" --servers "$SERVERS" --pg "$PG_URL" \
    --lease-ms $LEASE_MS --run-ms $RUN_MS --log "$WORK/$name.jsonl" "$@" 2>>"$WORK/$name.err" &
  CPID[$name]=$!
}
contend w1 watcher
contend w2 watcher
sleep 1
for n in 1 2 3 4; do contend "h$n" holder; done
for n in 5 6; do contend "h$n" holder --careless; done

landlord=$(python3 -c "
import json,sys
for l in open('$WORK/w1.jsonl'):
    d=json.loads(l)
    if 'watching' in d: print(d['landlord']); break")
echo "the lock lives in shard $landlord"
owner() { pg_sql "SELECT owner_url FROM leasehold_shards WHERE shard = $landlord AND lease_until > now()"; }
writer() { pg_sql "SELECT coalesce(writer, '') FROM fenced_register WHERE id = 1"; }

takeovers=()
sleep 3
for r in $(seq 1 "$ROUNDS"); do
  # The lock's shard owner, killed.
  victim=$(index_of_url "$(owner)")
  kill -9 "${PIDS[$victim]}"
  ms=$(probe); takeovers+=("$ms")
  wait "${PIDS[$victim]}" 2>/dev/null || true
  start "$victim"
  echo "round $r: SIGKILL server-$victim (owned shard $landlord): every shard served again after $ms ms"
  sleep 2
  # The owner paused past its ownership: taken over, then woken (its writes must be refused).
  victim=$(index_of_url "$(owner)")
  kill -STOP "${PIDS[$victim]}"
  ms=$(probe); takeovers+=("$ms")
  kill -CONT "${PIDS[$victim]}"
  echo "round $r: SIGSTOP server-$victim, taken over after $ms ms, SIGCONT"
  sleep 2
  # A holder paused while it holds the lock (a careless one if one holds it within 8 s).
  pick=""
  for _ in $(seq 1 80); do
    w=$(writer)
    case "$w" in h5|h6) pick=$w; break ;; esac
    sleep 0.1
  done
  [ -n "$pick" ] || pick=$(writer)
  if [ -n "$pick" ]; then
    kill -STOP "${CPID[$pick]}"
    sleep $(( LEASE_MS * 2 / 1000 + 1 ))
    kill -CONT "${CPID[$pick]}"
    echo "round $r: SIGSTOP holder $pick (it held the lock) for $(( LEASE_MS * 2 / 1000 + 1 )) s, SIGCONT"
  fi
  sleep 4
done
for name in "${!CPID[@]}"; do wait "${CPID[$name]}" || echo "$name exited $?"; done
CPID=()

out_of_order=$(pg_sql "SELECT count(*) FROM (SELECT token, max(token) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before FROM fenced_log) x WHERE token < before")
shared_tokens=$(pg_sql "SELECT count(*) FROM (SELECT token FROM fenced_log GROUP BY token HAVING count(DISTINCT writer) > 1) x")
accepted=$(pg_sql "SELECT count(*) FROM fenced_log")
refused=$(pg_sql "SELECT count(*) FROM fenced_refused")
sorted=$(printf '%s\n' "${takeovers[@]}" | sort -n)
n=${#takeovers[@]}
p50=$(echo "$sorted" | sed -n "$(( (n + 1) / 2 ))p")
max=$(echo "$sorted" | tail -1)
python3 - "$WORK" "$out_of_order" "$shared_tokens" "$accepted" "$refused" "$p50" "$max" "$n" <<'EOF'
import glob, json, os, sys
work = sys.argv[1]
out_of_order, shared, accepted, refused, p50, mx, n = map(int, sys.argv[2:])
def lines(name):
    return [json.loads(l) for l in open(os.path.join(work, name + ".jsonl")) if l.strip()]
bad = []
# Holders: every token acquired by one holder, once.
owner = {}
acquired = 0
writes = {"ok": 0, "refused": 0, "error": 0}
for f in sorted(glob.glob(os.path.join(work, "h*.jsonl"))):
    name = os.path.basename(f)[:-6]
    for d in lines(name):
        if "acquired" in d:
            acquired += 1
            t = d["acquired"]
            if t in owner:
                bad.append(f"token {t} acquired by {owner[t]} and {name}")
            owner[t] = name
        if "write" in d:
            writes["ok" if d.get("ok") else ("refused" if "ok" in d else "error")] += 1
# Watchers: events numbered without a gap, grants and ends once and in order, one holder at a
# time, every acquisition seen, the same history for both.
histories = {}
for w in ("w1", "w2"):
    ls = lines(w)
    last, live, granted, ended, hist = 0, set(), set(), set(), []
    for d in ls:
        if "missed" in d:
            bad.append(f"{w} missed events {d['missed']}")
        if "watch_lost" in d:
            bad.append(f"{w} lost its watch")
        if "event" not in d:
            continue
        if d["event"] != last + 1:
            bad.append(f"{w}: event {d['event']} after {last}")
        last = d["event"]
        t, k = d["token"], d["kind"]
        hist.append((k, t))
        if k == "granted":
            if t in granted:
                bad.append(f"{w}: token {t} granted twice")
            granted.add(t)
            live.add(t)
            if len(live) > 1:
                bad.append(f"{w}: two holders at once: {sorted(live)}")
        elif k in ("cancelled", "expired"):
            if t in ended:
                bad.append(f"{w}: token {t} ended twice")
            ended.add(t)
            if t not in live and t in granted:
                bad.append(f"{w}: token {t} ended before it was granted")
            live.discard(t)
    if not any("done" in d for d in ls):
        bad.append(f"{w} did not finish")
    missing = [t for t in owner if t not in granted and t > min(granted or {0})]
    if missing:
        bad.append(f"{w} never saw the grant of tokens {missing[:10]}")
    if live:
        bad.append(f"{w}: tokens never ended: {sorted(live)}")
    histories[w] = hist
    print(f"watcher {w}: {last} events, {len(granted)} grants, {len(ended)} ends")
h1, h2 = histories["w1"], histories["w2"]
common = max(min((t for _, t in h1), default=0), min((t for _, t in h2), default=0))
a = [x for x in h1 if x[1] >= common]
b = [x for x in h2 if x[1] >= common]
if a != b:
    bad.append("the two watchers saw different histories")
print(f"coord counts: acquisitions {acquired}, writes accepted {writes['ok']} (register log {accepted}), "
      f"stale writes refused by the fence {writes['refused']} (register {refused}), write errors {writes['error']}")
print(f"coord violations: writes accepted out of token order {out_of_order}, tokens written by two holders {shared}, "
      f"watcher and holder problems {len(bad)}")
for b_ in bad[:20]:
    print("  " + b_)
print(f"takeovers ({n}): p50 {p50} ms, max {mx} ms")
ok = out_of_order == 0 and shared == 0 and not bad and acquired > 0 and accepted > 0 and refused > 0
if refused == 0:
    print("no stale write was attempted: the fence was never tested (a paused holder should have come back)")
print(f"coord: {1 if ok else 0} passed, {0 if ok else 1} failed")
sys.exit(0 if ok else 1)
EOF
