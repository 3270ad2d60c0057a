#!/usr/bin/env bash
# The fault suite (issue 21): a nemesis in the manner of Jepsen against leasehold-server.
#
# A private network of namespaces on this machine (scripts/lib/nemesis.sh): PostgreSQL as a
# primary with a synchronous streaming standby (scripts/lib/pg.sh), three leasehold-servers on
# it configured with both hosts, a fourth started for the clock faults, and a file-store server
# whose --data is a small tmpfs. Holders in Rust (leasehold-load), Python
# (bindings-python/tests/failover_holders.py) and JS (bindings-wasm/tests/holders.mjs) renew,
# grant, cancel and abandon leases through the servers the whole time and record every request
# and its outcome. One fault at a time, each followed by a heal and by measurements; then
# scripts/faults/check.py judges the histories against the timeline and prints one row per
# fault (outage seen by holders, time to ready, failed sends, lost/early/back counts).
#
# Faults, each the regression test of a finding of issue 21 [n]:
#   start          three servers start: /readyz 503 until every shard answers through it [4]
#   pg-restart     pg_ctl restart -m fast of the primary [1]
#   pg-kill        SIGKILL of the primary's postmaster, started again 5 s later [1]
#   server-kill    SIGKILL of the server owning most shards; restarted: not ready until served [6][4]
#   server-stop    SIGSTOP of the server owning most shards for 9 s while two others are up [6]
#   cut-db         a server cut from both PostgreSQL hosts (nftables drop) for 8 s
#   cut-peers      a server cut from the other servers for 8 s
#   clock-offset   a fourth server whose clock is 3 s ahead (libfaketime): never ready [5]
#   clock-rate     a fourth server whose clock runs 1.5 times too fast: never ready, 0 early [5]
#   disk-full      the file-store server's tmpfs filled until writes fail, then freed [2]
#   damage-file    a flipped byte in a file-store frame: quarantined, repaired, released [3]
#   damage-flip    a flipped byte in a PostgreSQL journal row [3]
#   damage-middle  a deleted middle journal row [3]
#   damage-last    a deleted last journal row (an acknowledged frame) [3]
#   promote        the primary killed under load, the synchronous standby promoted
# Checks after each: 0 acknowledged leases lost, 0 early expiries, 0 cancelled or expired leases
# back, every shard served again within its bound with no server restart but the one the fault
# killed, damaged shards quarantined on every server and never served until repaired.
#
# Needs root (network namespaces, nftables, a tmpfs mount: CI runs as root); installs Debian's
# postgresql, nftables and libfaketime when missing. About 10 minutes on 2 cores.
# Usage: scripts/test-faults.sh      (KEEP=1 keeps the work directory and prints where it is)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SUITE_START=$(date +%s)
# shellcheck source=lib/nemesis.sh
source scripts/lib/nemesis.sh
# shellcheck source=lib/pg.sh
source scripts/lib/pg.sh
nem_require_root
nem_install
pg_install

SHARDS=6
FILE_SHARDS=4
OWNERSHIP_MS=2000
ROUND_MS=$((OWNERSHIP_MS / 3))
DB_TIMEOUT_MS=$((2 * OWNERSHIP_MS)) # the server's default --db-timeout-ms
# Holders ask for 40 s leases and renew with half left: 20 s to ride out a fault. The longest
# outage in the schedule is PostgreSQL's: killed, started 5 s later, then its crash recovery
# (4-5 s on a quiet 2-core machine, 9.5-10 s at load 15-20, most of it syncing the data
# directory: recovery_init_sync_method is syncfs), then the servers' reconnect pace (1 s at most).
LEASE_MS=40000
# Rounds of the transient faults (PostgreSQL restart and kill, server kill and pause, cuts):
# about 85 s each.
ROUNDS=${ROUNDS:-4}
MAX_OFFSET_MS=500
# Bounds, from the server's design (docs/server-operations.md) plus SLACK_MS for restoring a
# shard and for this script's own measurement (probes every 20-50 ms, 300 ms time-outs):
# - a shard whose owner died, paused or lost the database is taken over within its ownership
#   lease plus one ownership round;
# - after PostgreSQL answers again, or an operator releases a quarantined shard, within a round
#   (bounded here like a takeover);
# - a file-store shard whose writes failed is reopened after its backoff (250 ms doubling to
#   8 s, +10 % jitter at most: 8.8 s) plus the supervisor's 100 ms period.
SLACK_MS=1500
TAKEOVER_LIMIT_MS=$((OWNERSHIP_MS + ROUND_MS + SLACK_MS))
DB_BACK_LIMIT_MS=$((DB_TIMEOUT_MS + 2 * ROUND_MS + SLACK_MS))
# After PostgreSQL comes back, a server's next connection attempt may be a paced wait away (50 ms
# doubling to 1 s, +10 % jitter): that much on top of a takeover.
RECONNECT_MS=1100
PG_BACK_LIMIT_MS=$((TAKEOVER_LIMIT_MS + RECONNECT_MS))
FILE_HEAL_LIMIT_MS=$((8800 + 100 + SLACK_MS))

echo "== building leasehold-server, the holders' bindings"
nice -n 10 cargo build --release -q -p leasehold-server
TARGET=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
BIN="$TARGET/release"
WORK=$(mktemp -d /tmp/leasehold-faults.XXXXXX)
chmod 755 "$WORK"
# shellcheck source=lib/bindings.sh
source scripts/lib/bindings.sh
leasehold_python_venv >"$WORK/venv.log" 2>&1 || { cat "$WORK/venv.log"; exit 1; }
leasehold_node_app "$WORK/node" >"$WORK/node-build.log" 2>&1 || { cat "$WORK/node-build.log"; exit 1; }
cp bindings-wasm/tests/holders.mjs "$WORK/node/"
PY="$PY_VENV/bin/python"
PROBE=("$PY" "$ROOT/scripts/faults/probe.py")

NEM_TIMELINE="$WORK/timeline.jsonl"
: >"$NEM_TIMELINE"
declare -a PIDS URLS STARTED
HOLDERS=()
FPID=""
STATUS=0
cleanup() {
  local p
  for p in "${PIDS[@]:-}" "$FPID" "${HOLDERS[@]:-}"; do
    [ -n "$p" ] && { kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; } || true
  done
  [ -n "${PG_HA_DIR:-}" ] && cp "$PG_HA_DIR"/pg*.log "$WORK/" 2>/dev/null
  pg_ha_stop
  nem_net_down
  if [ -n "${KEEP:-}" ]; then
    echo "work directory kept: $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the network and PostgreSQL ----------------------------------------------------------------
NET=10.77.0
PREFIX="lhf$$"
nem_net_up "$PREFIX" "$NET" pg1 pg2 s0 s1 s2 s3
PG_HOST1=$NEM_IP_pg1 PG_HOST2=$NEM_IP_pg2 PG_PORT1=5432 PG_PORT2=5432
PG_NETNS1=$NEM_NS_pg1 PG_NETNS2=$NEM_NS_pg2 PG_HBA_NET="$NET.0/24"
echo "== PostgreSQL: primary $PG_HOST1, synchronous standby $PG_HOST2 (namespaces $PREFIX-*)"
pg_ha_start
pg_owner
DB_URL=$PG_HA_URL
for i in 0 1 2 3; do
  v="NEM_IP_s$i"
  URLS[$i]="http://${!v}:7420"
done
CLUSTER="${URLS[0]},${URLS[1]},${URLS[2]}"
FILE_URL="http://127.0.0.1:7500"
FILE_DATA="$WORK/disk/data"

now_ms() { date +%s%3N; }
sleep_until() { # MS since the epoch
  local left=$(($1 - $(now_ms)))
  [ $left -gt 0 ] && sleep "$(awk "BEGIN { print $left / 1000 }")"
  return 0
}
# Waits until the primary accepts a transaction that writes (with a synchronous standby, its
# commit waits for the standby): the moment PostgreSQL is back for the servers.
pg_writable() {
  local i
  for i in $(seq 1 300); do
    pg_ha_sql "SELECT txid_current()" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "   PostgreSQL took no write for 30 s"
}
log_of() { echo "$WORK/server-$1.log"; }

start_server() { # I [FAKETIME SPEC]: server I in its namespace, on the cluster's database
  local i=$1 spec=${2:-} pre=()
  [ -n "$spec" ] && pre=(env "LD_PRELOAD=$(nem_faketime_lib)" "FAKETIME=$spec")
  echo "---- start$([ -n "$spec" ] && echo " under FAKETIME='$spec'") $(date +%T.%3N)" >>"$(log_of "$i")"
  STARTED[$i]=$(now_ms)
  ip netns exec "$(nem_ns "s$i")" "${pre[@]}" "$BIN/leasehold-server" --store "$DB_URL" --shards $SHARDS \
    --listen "${URLS[$i]#http://}" --advertise "${URLS[$i]}" --name "server-$i" \
    --ownership-ms $OWNERSHIP_MS --max-lease-ms 60000 --max-clock-offset-ms $MAX_OFFSET_MS \
    >>"$(log_of "$i")" 2>&1 &
  PIDS[$i]=$!
}

start_file_server() {
  echo "---- start $(date +%T.%3N)" >>"$(log_of f)"
  ip netns exec "$NEM_HUB" "$BIN/leasehold-server" --data "$FILE_DATA" --shards $FILE_SHARDS --listen 127.0.0.1:7500 \
    --max-lease-ms 60000 --name file-server >>"$(log_of f)" 2>&1 &
  FPID=$!
}

stop_server() { # I SIGNAL: signals server I and waits for it
  kill -"$2" "${PIDS[$1]}" 2>/dev/null || true
  wait "${PIDS[$1]}" 2>/dev/null || true
  PIDS[$1]=""
}

probe() { nem_in hub "${PROBE[@]}" "$@"; }
jget() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {}, {"d": d}))' "$1"; }

# check FAULT NAME OK DETAIL: one of the nemesis's own checks, into the timeline (and printed)
check() {
  nem_mark "$1" check "name=$2" "ok=$3" "detail=$4"
  if [ "$3" = 1 ]; then echo "   ok: $2: $4"; else echo "   FAILED: $2: $4"; fi
}

# measure_served FAULT LIMIT_MS URLS...: from now, how long until every shard answers through
# these servers; marks it.
measure_served() {
  local fault=$1 limit=$2 n=$SHARDS urls ms
  shift 2
  [ "$1" = "$FILE_URL" ] && n=$FILE_SHARDS
  urls=$(IFS=,; echo "$*")
  ms=$(nem_in hub "$BIN/leasehold-load" --servers "$urls" --probe $n --timeout-ms 300 \
    --probe-limit-ms $((limit + 10000)) 2>/dev/null) || ms=-1
  nem_mark "$fault" served "ms=${ms:--1}" "limit_ms=$limit"
  echo "   every shard served after ${ms:--1} ms (bound $limit ms)"
}

# measure_ready FAULT LIMIT_MS URLS...: from now, how long until every one of these servers
# answers /readyz 200; marks it.
measure_ready() {
  local fault=$1 limit=$2 ms out
  shift 2
  out=$(probe ready "$@" --limit-ms $((limit + 10000)))
  ms=$(jget 'd["ms"]' <<<"$out") || ms=-1
  nem_mark "$fault" ready "ms=$ms" "limit_ms=$limit"
  echo "   every server ready after $ms ms (bound $limit ms)"
  if [ "$ms" = -1 ] || [ "$ms" -gt "$limit" ]; then
    echo "   not ready, as each said last: $(jget 'd["why"]' <<<"$out" | cut -c1-1500)"
  fi
}

# measure FAULT LIMIT_MS URLS...: both, at once, from now.
measure() {
  measure_served "$@" &
  local sp=$!
  measure_ready "$@"
  wait $sp || true
}

# The server owning most shards (its index).
busiest() {
  local url i
  url=$(pg_ha_sql "SELECT owner_url FROM leasehold_shards WHERE lease_until > now() AND owner_url IS NOT NULL
                   GROUP BY owner_url ORDER BY count(*) DESC, owner_url LIMIT 1")
  for i in 0 1 2; do [ "${URLS[$i]}" = "$url" ] && { echo "$i"; return; }; done
  echo 0
}

# No server was restarted but the one the fault killed: every other pid still runs.
check_no_restart() { # FAULT [INDEX killed]
  local i bad=""
  for i in 0 1 2; do
    [ "$i" = "${2:-}" ] && continue
    if [ -z "${PIDS[$i]}" ] || ! kill -0 "${PIDS[$i]}" 2>/dev/null; then bad="$bad server-$i"; fi
  done
  if [ -z "$bad" ]; then check "$1" no-restart 1 "every other server ran on (same process)"; else check "$1" no-restart 0 "not running:$bad"; fi
}

# first_ready FAULT I: server I just started: /readyz must be 503 until every shard answers
# through it (finding 4).
first_ready() {
  local out
  out=$(probe first-ready "${URLS[$2]}" --shards $SHARDS --limit-ms $((TAKEOVER_LIMIT_MS + 10000)) --since "${STARTED[$2]}")
  local ms served early statuses
  ms=$(jget 'd["ms"]' <<<"$out")
  served=$(jget 'd["served"]' <<<"$out")
  early=$(jget 'd["healthz_early"]' <<<"$out")
  statuses=$(jget 'd["statuses"]' <<<"$out")
  if [ "$ms" != -1 ] && [ "$served" = True ] && [ "$early" = 0 ]; then
    check "$1" "not-ready-until-served-s$2" 1 "server-$2 ready $ms ms after its start, every shard answered through it then (readyz polls $statuses, ready withdrawn by a change meanwhile: $(jget 'd["changed"]' <<<"$out"))"
  else
    check "$1" "not-ready-until-served-s$2" 0 "server-$2: ready $ms ms after its start, every shard served then: $served, /healthz 200 while not ready: $early; unanswered: $(jget 'd["unserved"]' <<<"$out"); /readyz had said of them: $(jget 'd["body"]' <<<"$out")"
  fi
}

# ---- start: three servers, not ready until served [4] ------------------------------------------
echo "== start: three servers on PostgreSQL (ownership lease $OWNERSHIP_MS ms)"
nem_mark start start group=pg
for i in 0 1 2; do start_server "$i"; done
fr=()
for i in 0 1 2; do
  first_ready start "$i" &
  fr+=($!)
done
wait "${fr[@]}"
measure start $TAKEOVER_LIMIT_MS "${URLS[@]:0:3}"
nem_mark start end

# ---- the file-store server on a small tmpfs, and the holders -----------------------------------
nem_tmpfs "$WORK/disk" 24m
start_file_server
probe ready "$FILE_URL" --limit-ms 20000 >/dev/null
STOP="$WORK/stop-holders"
RUN_MS=1800000
echo "== holders: Rust, Python and JS on the cluster and on the file-store server"
hold() { # NAME GROUP PROGRAM ARGS...
  local name=$1 group=$2
  shift 2
  ip netns exec "$NEM_HUB" "$@" --history "$WORK/h-$group-$name.jsonl" --name "$name" --stop-file "$STOP" \
    --lease-ms $LEASE_MS --renew-divisor 2 --timeout-ms 500 --run-ms $RUN_MS \
    --json "$WORK/c-$group-$name.json" >"$WORK/out-$group-$name.txt" 2>"$WORK/err-$group-$name.txt" &
  HOLDERS+=($!)
}
hold rs pg "$BIN/leasehold-load" --servers "$CLUSTER" --holders 4 --leases 40 --churn-ms 1000
hold py pg "$PY" bindings-python/tests/failover_holders.py --servers "$CLUSTER" --holders 2 --leases 15 --churn-ms 1500
hold js pg node "$WORK/node/holders.mjs" --servers "$CLUSTER" --holders 2 --leases 20 --churn-ms 1000
hold rs files "$BIN/leasehold-load" --servers "$FILE_URL" --holders 2 --leases 20 --churn-ms 1000
hold py files "$PY" bindings-python/tests/failover_holders.py --servers "$FILE_URL" --holders 1 --leases 10 --churn-ms 1500
hold js files node "$WORK/node/holders.mjs" --servers "$FILE_URL" --holders 1 --leases 10 --churn-ms 1500
sleep 8

settle() { sleep "${1:-3}"; }

# ---- transient faults, in rounds: PostgreSQL restarted and killed [1], a server killed and one
# paused [6], [4], partitions. Round 1's faults are named plainly, later rounds' get "#N".
transient_round() { # N
  local R=""
  [ "$1" -gt 1 ] && R="#$1"
  # ---- PostgreSQL restarted, killed [1] ----------------------------------------------------------
  echo "== pg-restart$R: pg_ctl restart -m fast of the primary"
  nem_mark pg-restart$R start group=pg
  t0=$(now_ms)
  pg_node_ctl 1 -m fast -w -t 60 -o "$(pg_node_opts 1)" -l "$PG_HA_DIR/pg1.log" restart >/dev/null
  t1=$(now_ms)
  pg_writable
  echo "   PostgreSQL accepted connections after $((t1 - t0)) ms, a synchronous commit after $(( $(now_ms) - t0 )) ms"
  nem_mark pg-restart$R heal
  measure pg-restart$R $PG_BACK_LIMIT_MS "${URLS[@]:0:3}"
  check_no_restart pg-restart$R
  settle
  nem_mark pg-restart$R end

  echo "== pg-kill$R: SIGKILL of the primary's postmaster, started 5 s later"
  nem_mark pg-kill$R start group=pg
  kill -9 "$(pg_node_pid 1)"
  t0=$(now_ms)
  # While it is down, no server may say it is ready.
  (
    sleep 3
    down_ready=""
    for i in 0 1 2; do
      s=$(probe readyz "${URLS[$i]}" | jget 'd["status"]')
      [ "$s" = 200 ] && down_ready="$down_ready server-$i"
    done
    if [ -z "$down_ready" ]; then check pg-kill$R not-ready-while-db-down 1 "every server's /readyz was 503 with the database down"
    else check pg-kill$R not-ready-while-db-down 0 "/readyz 200 with the database down on$down_ready"; fi
  ) &
  cp=$!
  sleep_until $((t0 + 5000))
  t0=$(now_ms)
  pg_node_start 1
  t1=$(now_ms)
  wait $cp
  pg_writable
  echo "   PostgreSQL started: connections after $((t1 - t0)) ms, a synchronous commit after $(( $(now_ms) - t0 )) ms"
  nem_mark pg-kill$R heal
  measure pg-kill$R $PG_BACK_LIMIT_MS "${URLS[@]:0:3}"
  check_no_restart pg-kill$R
  settle
  nem_mark pg-kill$R end

  # ---- a server killed, and one paused [6], [4] --------------------------------------------------
  echo "== server-kill$R: SIGKILL of the server owning most shards, then restarted"
  v=$(busiest)
  nem_mark server-kill$R start group=pg victim="server-$v"
  stop_server "$v" KILL
  others=()
  for i in 0 1 2; do [ "$i" = "$v" ] || others+=("${URLS[$i]}"); done
  measure server-kill$R $TAKEOVER_LIMIT_MS "${others[@]}"
  start_server "$v"
  first_ready server-kill$R "$v"
  check_no_restart server-kill$R "$v"
  settle
  nem_mark server-kill$R end

  echo "== server-stop$R: SIGSTOP of the server owning most shards for 9 s, two others up"
  v=$(busiest)
  nem_mark server-stop$R start group=pg victim="server-$v"
  fenced_before=$(probe metric "${URLS[$v]}" leasehold_store_errors_total | jget 'sum(x for k, x in d["values"].items() if "fenced" in k)')
  t0=$(now_ms)
  kill -STOP "${PIDS[$v]}"
  others=()
  for i in 0 1 2; do [ "$i" = "$v" ] || others+=("${URLS[$i]}"); done
  measure server-stop$R $TAKEOVER_LIMIT_MS "${others[@]}"
  sleep_until $((t0 + 9000))
  kill -CONT "${PIDS[$v]}"
  nem_mark server-stop$R heal
  out=$(probe ready "${URLS[@]:0:3}" --limit-ms $((TAKEOVER_LIMIT_MS + 10000)))
  ms=$(jget 'd["ms"]' <<<"$out")
  if [ "$ms" != -1 ] && [ "$ms" -le $TAKEOVER_LIMIT_MS ]; then check server-stop$R woken-ready 1 "the paused server ready again $ms ms after SIGCONT"
  else check server-stop$R woken-ready 0 "the paused server not ready within $TAKEOVER_LIMIT_MS ms of SIGCONT ($ms)"; fi
  fenced_after=$(probe metric "${URLS[$v]}" leasehold_store_errors_total | jget 'sum(x for k, x in d["values"].items() if "fenced" in k)')
  echo "   writes refused by fencing after SIGCONT: $(python3 -c "print(int($fenced_after - $fenced_before))")"
  check_no_restart server-stop$R
  settle
  nem_mark server-stop$R end

  # ---- partitions ---------------------------------------------------------------------------------
  echo "== cut-db$R: a server cut from both PostgreSQL hosts for 8 s"
  v=$(busiest)
  nem_mark cut-db$R start group=pg victim="server-$v"
  nem_cut "s$v" "$NEM_IP_pg1" "$NEM_IP_pg2"
  t0=$(now_ms)
  others=()
  for i in 0 1 2; do [ "$i" = "$v" ] || others+=("${URLS[$i]}"); done
  measure_served cut-db$R $TAKEOVER_LIMIT_MS "${URLS[@]:0:3}"
  out=$(probe not-ready "${URLS[$v]}" --limit-ms $((DB_BACK_LIMIT_MS + 5000)))
  ms=$(jget 'd["ms"]' <<<"$out")
  if [ "$ms" != -1 ] && [ $(( $(now_ms) - t0 )) -le $((DB_BACK_LIMIT_MS + 1000)) ]; then check cut-db$R cut-not-ready 1 "the cut server said not ready $(( $(now_ms) - t0 )) ms after the cut"
  else check cut-db$R cut-not-ready 0 "the cut server still ready $(( $(now_ms) - t0 )) ms after the cut"; fi
  sleep_until $((t0 + 8000))
  nem_heal "s$v"
  nem_mark cut-db$R heal
  measure_ready cut-db$R $DB_BACK_LIMIT_MS "${URLS[@]:0:3}"
  check_no_restart cut-db$R
  settle
  nem_mark cut-db$R end

  echo "== cut-peers$R: a server cut from the other servers for 8 s"
  v=$(busiest)
  nem_mark cut-peers$R start group=pg victim="server-$v"
  peers=()
  for i in 0 1 2; do [ "$i" = "$v" ] || { w="NEM_IP_s$i"; peers+=("${!w}"); }; done
  nem_cut "s$v" "${peers[@]}"
  t0=$(now_ms)
  sleep 2
  # Every shard must still answer, through some server, while the cut lasts.
  s_ms=$(nem_in hub "$BIN/leasehold-load" --servers "$CLUSTER" --probe $SHARDS --timeout-ms 300 --probe-limit-ms 5000 2>/dev/null || echo -1)
  if [ "$s_ms" != -1 ]; then check cut-peers$R served-during-cut 1 "every shard answered within $s_ms ms during the cut"
  else check cut-peers$R served-during-cut 0 "some shard unanswered for 5 s during the cut"; fi
  sleep_until $((t0 + 8000))
  nem_heal "s$v"
  nem_mark cut-peers$R heal
  measure cut-peers$R $TAKEOVER_LIMIT_MS "${URLS[@]:0:3}"
  check_no_restart cut-peers$R
  settle
  nem_mark cut-peers$R end
}
for round in $(seq 1 "$ROUNDS"); do transient_round "$round"; done

# ---- a server joins under load and leaves [4] --------------------------------------------------
echo "== join-leave: a fourth server joins (not ready until every shard answers through it), then SIGTERM"
nem_mark join-leave start group=pg victim=server-3
start_server 3
first_ready join-leave 3
measure_ready join-leave $TAKEOVER_LIMIT_MS "${URLS[@]}"
sleep 4
owned=$(pg_ha_sql "SELECT count(*) FROM leasehold_shards WHERE owner LIKE 'server-3#%' AND lease_until > now()")
echo "   server-3 owns $owned shards after rebalancing"
stop_server 3 TERM
nem_mark join-leave heal
measure join-leave $TAKEOVER_LIMIT_MS "${URLS[@]:0:3}"
check_no_restart join-leave
settle
nem_mark join-leave end

# ---- clocks [5] ---------------------------------------------------------------------------------
clock_fault() { # FAULT SPEC SECONDS
  local fault=$1 spec=$2 secs=$3 out ms took
  echo "== $fault: a fourth server under FAKETIME='$spec' for $secs s"
  nem_mark "$fault" start group=pg victim=server-3
  start_server 3 "$spec"
  out=$(probe first-ready "${URLS[3]}" --shards $SHARDS --limit-ms $((secs * 1000)))
  ms=$(jget 'd["ms"]' <<<"$out")
  out=$(probe readyz "${URLS[3]}")
  if [ "$ms" = -1 ]; then
    check "$fault" never-ready 1 "server-3 not ready for $secs s; its clock: $(jget 'd["body"].get("clock") if isinstance(d["body"], dict) else d["body"]' <<<"$out")"
  else
    check "$fault" never-ready 0 "server-3 ready after $ms ms with FAKETIME='$spec'; now: $(jget 'd["body"].get("clock") if isinstance(d["body"], dict) else d["body"]' <<<"$out")"
  fi
  took=$(pg_ha_sql "SELECT count(*) FROM leasehold_takeovers WHERE owner LIKE 'server-3#%' AND at > now() - make_interval(secs => $secs + 2)")
  if [ "$took" = 0 ]; then check "$fault" took-no-shard 1 "server-3 acquired no shard"
  else check "$fault" took-no-shard 0 "server-3 acquired $took shards"; fi
  if grep -q "ERROR" "$(log_of 3)"; then check "$fault" error-logged 1 "$(grep -m1 ERROR "$(log_of 3)" | cut -c1-160)"
  else check "$fault" error-logged 0 "no ERROR line in server-3's log"; fi
  stop_server 3 TERM
  measure "$fault" $TAKEOVER_LIMIT_MS "${URLS[@]:0:3}"
  check_no_restart "$fault"
  nem_mark "$fault" end
}
clock_fault clock-offset "+3s" 8
clock_fault clock-rate "+0 x1.5" 12

# ---- disk full [2] ------------------------------------------------------------------------------
echo "== disk-full: the file-store server's tmpfs filled until writes fail, then freed"
nem_mark disk-full start group=files
nem_fill "$WORK/disk/filler"
# Grants with each poll: only a write finds the disk full, and the holders' renewals alone did
# not need a new page within 10 s on a loaded machine (the check failed once so).
out=$(probe not-ready "$FILE_URL" --limit-ms 10000 --grants 4)
ms=$(jget 'd["ms"]' <<<"$out")
if [ "$ms" != -1 ]; then check disk-full not-ready-while-full 1 "not ready $ms ms after the disk filled: $(jget 'd["body"].get("unserved") if isinstance(d["body"], dict) else d["body"]' <<<"$out") (probe grants by status: $(jget 'd["grants"]' <<<"$out"))"
else check disk-full not-ready-while-full 0 "still ready 10 s after the disk filled (probe grants by status: $(jget 'd["grants"]' <<<"$out"))"; fi
sleep 3
rm -f "$WORK/disk/filler"
nem_mark disk-full heal
measure disk-full $FILE_HEAL_LIMIT_MS "$FILE_URL"
if kill -0 "$FPID" 2>/dev/null; then check disk-full no-restart 1 "the file-store server ran on"; else check disk-full no-restart 0 "the file-store server exited"; fi
settle
nem_mark disk-full end

# ---- damaged stores [3] -------------------------------------------------------------------------
quarantine() { nem_in hub "$BIN/leasehold-server" quarantine "$@"; }

# quarantined_everywhere FAULT K URL...: waits until shard K is quarantined in every server's
# /readyz and /metrics, and answers no request; marks when.
quarantined_everywhere() {
  local fault=$1 k=$2
  shift 2
  local t0 url out st seen=0 deadline
  t0=$(now_ms)
  deadline=$((t0 + TAKEOVER_LIMIT_MS + 10000))
  while [ "$(now_ms)" -lt $deadline ]; do
    seen=0
    for url in "$@"; do
      st=$(probe readyz "$url" | jget 'next((s["state"] for s in d["body"]["shards"] if s["shard"] == '"$k"'), None) if isinstance(d["body"], dict) else None' 2>/dev/null || echo none)
      [ "$st" = quarantined ] && seen=$((seen + 1))
    done
    [ $seen -eq $# ] && break
    sleep 0.1
  done
  nem_mark "$fault" quarantined "landlord=$k" "group=$([ "$fault" = damage-file ] && echo files || echo pg)"
  if [ $seen -eq $# ]; then check "$fault" quarantined-everywhere 1 "shard $k quarantined in /readyz of all $# servers after $(( $(now_ms) - t0 )) ms"
  else check "$fault" quarantined-everywhere 0 "shard $k quarantined on $seen of $# servers after $(( $(now_ms) - t0 )) ms"; fi
  local m q bad=""
  for url in "$@"; do
    m=$(probe metric "$url" leasehold_shard_state | jget 'd["values"].get("{shard=\"'"$k"'\",state=\"quarantined\"}", 0)')
    q=$(probe metric "$url" leasehold_quarantined_shards | jget 'sum(d["values"].values())')
    [ "${m%.*}" = 1 ] && [ "${q%.*}" -ge 1 ] || bad="$bad $url(state $m, quarantined $q)"
    out=$(probe shard "$url" "$k")
    [ "$(jget 'd["status"]' <<<"$out")" = 503 ] || bad="$bad $url(shard $k answered $(jget 'd' <<<"$out"))"
  done
  if [ -z "$bad" ]; then check "$fault" quarantine-in-metrics 1 "leasehold_shard_state quarantined and leasehold_quarantined_shards on every server; requests for shard $k 503"
  else check "$fault" quarantine-in-metrics 0 "$bad"; fi
}

# repair FAULT K STORE-FLAGS...: inspect, repair (truncate at the damage), release; marks repaired.
repair() {
  local fault=$1 k=$2
  shift 2
  local released
  quarantine inspect "$@" --shard "$k" >"$WORK/$fault-inspect.txt" 2>&1 || true
  # The shard may answer from the moment the release begins.
  if quarantine repair "$@" --shard "$k" --truncate-at-damage >"$WORK/$fault-repair.txt" 2>&1 \
    && released=$(now_ms) && quarantine release "$@" --shard "$k" >"$WORK/$fault-release.txt" 2>&1; then
    check "$fault" repaired 1 "$(tr '\n' ' ' <"$WORK/$fault-repair.txt" | cut -c1-200)"
  else
    check "$fault" repaired 0 "$(cat "$WORK/$fault-repair.txt" "$WORK/$fault-release.txt" 2>/dev/null | tr '\n' ' ' | cut -c1-300)"
  fi
  nem_mark "$fault" repaired "landlord=$k" "group=$([ "$fault" = damage-file ] && echo files || echo pg)" "at=${released:-$(now_ms)}"
}

echo "== damage-file: a flipped byte in a file-store frame"
nem_mark damage-file start group=files
kill -9 "$FPID"; wait "$FPID" 2>/dev/null || true
# The shard with the largest log segment; a byte in its middle (a frame with frames after it).
seg=$(ls -S "$FILE_DATA"/shard-*/log-*.lhj | head -1)
k=$(basename "$(dirname "$seg")"); k=${k#shard-}
nem_mark damage-file damage "landlord=$k" group=files
size=$(stat -c %s "$seg")
nem_flip_byte "$seg" $((size / 2))
echo "   flipped byte $((size / 2)) of $(basename "$seg") ($size bytes) of shard $k"
start_file_server
quarantined_everywhere damage-file "$k" "$FILE_URL"
if grep -q "ERROR.*quarantin" "$(log_of f)"; then check damage-file error-logged 1 "$(grep -m1 'ERROR.*quarantin' "$(log_of f)" | cut -c1-160)"
else check damage-file error-logged 0 "no ERROR line about the quarantine"; fi
repair damage-file "$k" --data "$FILE_DATA"
measure damage-file $TAKEOVER_LIMIT_MS "$FILE_URL"
settle
nem_mark damage-file end

# pg_damage FAULT HOW: damages a journal row of a shard with at least three, forces a takeover
# (SIGKILL of its owner, restarted), and checks the quarantine and the repair.
pg_damage() {
  local fault=$1 how=$2 k="" owner v rows row i
  echo "== $fault: $how"
  nem_mark "$fault" start group=pg
  for i in $(seq 1 50); do
    k=$(pg_ha_sql "SELECT j.shard FROM leasehold_journal j JOIN leasehold_shards s USING (shard)
                   WHERE s.lease_until > now() AND s.quarantine IS NULL
                   GROUP BY j.shard HAVING count(*) >= 3 ORDER BY count(*) DESC, random() LIMIT 1")
    [ -n "$k" ] && break
    sleep 0.2
  done
  if [ -z "$k" ]; then check "$fault" damaged 0 "no shard with three journal rows"; nem_mark "$fault" end; return; fi
  owner=$(pg_ha_sql "SELECT owner_url FROM leasehold_shards WHERE shard = $k")
  v=0
  for i in 0 1 2; do [ "${URLS[$i]}" = "$owner" ] && v=$i; done
  if [ "$how" = "a deleted last journal row" ]; then
    # The owner first, so that the deleted row stays the last.
    stop_server "$v" KILL
    row=$(pg_ha_sql "SELECT max(first_seq) FROM leasehold_journal WHERE shard = $k")
    pg_ha_sql "DELETE FROM leasehold_journal WHERE shard = $k AND first_seq = $row"
  else
    rows=$(pg_ha_sql "SELECT count(*) FROM leasehold_journal WHERE shard = $k")
    row=$(pg_ha_sql "SELECT first_seq FROM leasehold_journal WHERE shard = $k ORDER BY first_seq OFFSET $((rows / 2)) LIMIT 1")
    if [ "$how" = "a flipped byte in a journal row" ]; then
      pg_ha_sql "UPDATE leasehold_journal SET frame = set_byte(frame, length(frame) / 2, get_byte(frame, length(frame) / 2) # 64)
                 WHERE shard = $k AND first_seq = $row"
    else
      pg_ha_sql "DELETE FROM leasehold_journal WHERE shard = $k AND first_seq = $row"
    fi
    stop_server "$v" KILL
  fi
  nem_mark "$fault" damage "landlord=$k" group=pg
  echo "   shard $k (journal row from record $row), owner server-$v killed"
  others=()
  for i in 0 1 2; do [ "$i" = "$v" ] || others+=("${URLS[$i]}"); done
  quarantined_everywhere "$fault" "$k" "${others[@]}"
  start_server "$v"
  sleep 2
  quarantined_everywhere "$fault" "$k" "${URLS[$v]}"
  if grep -q "ERROR.*quarantin" "$WORK"/server-[012].log; then check "$fault" error-logged 1 "$(grep -h 'ERROR.*quarantin' "$WORK"/server-[012].log | tail -1 | cut -c1-200)"
  else check "$fault" error-logged 0 "no ERROR line about the quarantine"; fi
  repair "$fault" "$k" --store "$DB_URL"
  measure "$fault" $TAKEOVER_LIMIT_MS "${URLS[@]:0:3}"
  check_no_restart "$fault" "$v"
  settle
  nem_mark "$fault" end
}
pg_damage damage-flip "a flipped byte in a journal row"
pg_damage damage-middle "a deleted middle journal row"
pg_damage damage-last "a deleted last journal row"

# ---- production topology: the primary killed, the synchronous standby promoted -------------------
echo "== promote: SIGKILL of the primary under load, pg_ctl promote of the synchronous standby"
nem_mark promote start group=pg
kill -9 "$(pg_node_pid 1)"
t0=$(now_ms)
pg_ha_promote
pg_writable
echo "   the standby promoted, a commit after $(( $(now_ms) - t0 )) ms"
nem_mark promote heal
measure promote $TAKEOVER_LIMIT_MS "${URLS[@]:0:3}"
check_no_restart promote
settle 5
nem_mark promote end

# ---- the end: holders stop and check every lease they kept ---------------------------------------
echo "== final: the holders stop renewing and check every lease they kept"
nem_mark final start group=pg
touch "$STOP"
for p in "${HOLDERS[@]}"; do wait "$p" || true; done
HOLDERS=()
for f in "$WORK"/out-*.txt; do sed "s/^/   $(basename "$f" .txt): /" "$f"; done
# The database: no frame or snapshot of a deposed owner after its successor's takeover, and a
# contiguous journal for every shard not damaged on purpose.
deposed=$(pg_ha_sql "SELECT
  (SELECT count(*) FROM leasehold_journal j JOIN leasehold_takeovers t
     ON t.shard = j.shard AND t.epoch > j.epoch WHERE j.last_seq > t.base_seq)
+ (SELECT count(*) FROM leasehold_snapshots s JOIN leasehold_takeovers t
     ON t.shard = s.shard AND t.epoch > s.epoch WHERE s.seq > t.base_seq)")
if [ "$deposed" = 0 ]; then check final deposed-writes 1 "no write of a deposed owner was accepted"
else check final deposed-writes 0 "$deposed writes of a deposed owner accepted"; fi
gaps=$(pg_ha_sql "SELECT count(*) FROM (SELECT first_seq, lag(last_seq) OVER (PARTITION BY shard ORDER BY first_seq) AS prev
  FROM leasehold_journal) x WHERE prev IS NOT NULL AND first_seq <> prev + 1")
if [ "$gaps" = 0 ]; then check final journal-gaps 1 "every shard's journal is a contiguous run of records"
else check final journal-gaps 0 "$gaps gaps in the journal"; fi
takeovers=$(pg_ha_sql "SELECT count(*) FROM leasehold_takeovers")
echo "   shard acquisitions in the run: $takeovers"
nem_mark final end

echo
echo "== the checker (scripts/faults/check.py)"
hist=()
for f in "$WORK"/h-*.jsonl; do
  g=$(basename "$f" .jsonl); g=${g#h-}; g=${g%%-*}
  hist+=(--history "$g:$f")
done
python3 scripts/faults/check.py --timeline "$NEM_TIMELINE" "${hist[@]}" --json "$WORK/table.json" || STATUS=1
echo "fault suite: $(( $(date +%s) - SUITE_START )) s"
if [ $STATUS -ne 0 ]; then
  for f in "$WORK"/server-*.log; do
    echo "---- last ERROR/WARN lines of $(basename "$f")"
    grep -E "ERROR|WARN" "$f" | tail -5 || true
  done
fi
exit $STATUS
