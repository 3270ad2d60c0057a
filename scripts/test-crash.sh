#!/usr/bin/env bash
# Crash test with real processes (issue 14, item 5): `leasehold-server --data DIR` under load
# from holders over loopback HTTP (leasehold-load: RenewalManager + the failover client), killed
# with SIGKILL at random moments and restarted on the same directory. The holders check every
# promise and print the counts: grants/renewals acknowledged but not honoured (early expiries),
# leases renewed to the end but lost, acknowledged cancels that came back, expired leases that
# came back. Then damage on the files of a stopped server: a truncated last record (dropped,
# the rest kept), a flipped byte in the middle (refused), a missing snapshot (refused).
#
# Usage: scripts/test-crash.sh [KILLS]   (default 50; scripts/soak-crash.sh runs more)
set -euo pipefail
cd "$(dirname "$0")/.."
KILLS=${1:-50}
nice -n 10 cargo build --release -q -p leasehold-server
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
BIN="$target/release"
WORK=$(mktemp -d /tmp/leasehold-crash.XXXXXX)
SRV=""
cleanup() {
  if [ -n "$SRV" ]; then kill -9 "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; fi
  if [ -n "${LOAD:-}" ]; then kill "$LOAD" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
SHARDS=4

start_server() { # $1: data dir
  "$BIN/leasehold-server" --data "$1" --shards $SHARDS --listen "127.0.0.1:$PORT" \
    --max-lease-ms 60000 >>"$WORK/server.log" 2>&1 &
  SRV=$!
  for _ in $(seq 1 200); do
    if curl -sf "$URL/healthz" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$SRV" 2>/dev/null; then echo "server exited at start:"; tail -5 "$WORK/server.log"; return 1; fi
    sleep 0.02
  done
  echo "server did not come up"; return 1
}
kill_server() {
  kill -9 "$SRV" 2>/dev/null || true
  wait "$SRV" 2>/dev/null || true
  SRV=""
}
metric() { # sum of a metric over shards
  curl -sf "$URL/metrics" | awk -v m="$1" '$1 ~ "^"m"({|$)" {s+=$2} END {print s+0}'
}

start_server "$WORK/data"
# Long enough for every kill at 0.3-1.2 s apart, plus a quiet end.
RUN_MS=$(( KILLS * 800 + 8000 ))
"$BIN/leasehold-load" --servers "$URL" --holders 6 --leases 80 --lease-ms 3000 --run-ms $RUN_MS \
  --encoding binary --timeout-ms 500 --json "$WORK/load.json" >"$WORK/load.out" 2>"$WORK/load.err" &
LOAD=$!
start=$(date +%s)
kills=0
restart_ms_total=0
restart_ms_max=0
while [ $kills -lt "$KILLS" ]; do
  sleep "0.$(( 3 + RANDOM % 9 ))"
  kill_server
  kills=$((kills + 1))
  t0=$(date +%s%N)
  start_server "$WORK/data"
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  restart_ms_total=$((restart_ms_total + ms))
  [ $ms -gt $restart_ms_max ] && restart_ms_max=$ms
done
echo "crash: $kills SIGKILLs in $(( $(date +%s) - start )) s; restart to healthy: mean $((restart_ms_total / kills)) ms, max $restart_ms_max ms"
status=0
wait $LOAD || status=$?
LOAD=""
cat "$WORK/load.out"
if [ -s "$WORK/load.err" ]; then echo "holders said:"; head -20 "$WORK/load.err"; fi
python3 - "$WORK/load.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
bad = c["early_expiries"] + c["lost"] + c["cancel_came_back"] + c["expiry_came_back"]
print(f"crash counts: grants acknowledged {c['grants_acked']}, renewals acknowledged {c['renewals_acked']}, "
      f"cancels acknowledged {c['cancels_acked']}, kept leases checked {c['kept_checked']}, probes {c['probes']}")
print(f"crash violations: early expiries {c['early_expiries']}, acknowledged leases lost {c['lost']}, "
      f"cancelled leases back {c['cancel_came_back']}, expired leases back {c['expiry_came_back']} "
      f"(renewals that failed for good: {c['renewal_failures']})")
sys.exit(1 if bad or c["grants_acked"] == 0 or c["kept_checked"] == 0 else 0)
EOF
[ $status -eq 0 ] || { echo "the holders found violations"; exit 1; }

# Damage, on the files of a stopped server.
live_before=$(metric leasehold_live_leases)
kill -TERM "$SRV"; wait "$SRV" || true; SRV=""
damage_pass=0; damage_fail=0
seg_of() { ls "$1"/shard-1/log-*.lhj | tail -1; }

# 1. A truncated last record: dropped at open, the rest kept.
cp -r "$WORK/data" "$WORK/torn"
seg=$(seg_of "$WORK/torn")
size=$(stat -c %s "$seg")
truncate -s $((size - 3)) "$seg"
if start_server "$WORK/torn" && grep -q "torn tail" "$WORK/server.log"; then
  live_after=$(metric leasehold_live_leases)
  echo "damage: truncated last record: dropped at open; live leases $live_after (before: $live_before)"
  damage_pass=$((damage_pass + 1))
else
  echo "damage: truncated last record: NOT handled"; damage_fail=$((damage_fail + 1))
fi
[ -n "$SRV" ] && { kill -TERM "$SRV"; wait "$SRV" || true; SRV=""; }

# 2. A flipped byte in the middle of the log: refused loudly.
cp -r "$WORK/data" "$WORK/flip"
seg=$(seg_of "$WORK/flip")
size=$(stat -c %s "$seg")
python3 - "$seg" $((size / 2)) <<'EOF'
import sys
p, at = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[at] ^= 0x40; open(p, "wb").write(b)
EOF
if "$BIN/leasehold-server" --data "$WORK/flip" --shards $SHARDS --listen 127.0.0.1:0 >"$WORK/flip.out" 2>&1; then
  echo "damage: flipped byte: ACCEPTED (wrong)"; damage_fail=$((damage_fail + 1))
else
  echo "damage: flipped byte in the middle: refused: $(grep -o 'journal damaged[^;]*' "$WORK/flip.out" | head -1)"
  damage_pass=$((damage_pass + 1))
fi

# 3. A missing snapshot: refused (it holds the shard's cookie seed).
cp -r "$WORK/data" "$WORK/nosnap"
rm "$WORK/nosnap/shard-1/snapshot"
if "$BIN/leasehold-server" --data "$WORK/nosnap" --shards $SHARDS --listen 127.0.0.1:0 >"$WORK/nosnap.out" 2>&1; then
  echo "damage: missing snapshot: ACCEPTED (wrong)"; damage_fail=$((damage_fail + 1))
else
  echo "damage: missing snapshot: refused: $(grep -o 'the snapshot is missing[^:]*' "$WORK/nosnap.out" | head -1)"
  damage_pass=$((damage_pass + 1))
fi
echo "crash: $damage_pass passed, $damage_fail failed"
[ $damage_fail -eq 0 ]
