#!/usr/bin/env bash
# Coordination under faults, with real processes: three leasehold-servers on one PostgreSQL
# (Debian's, a throw-away cluster run as a non-root user), holders in three runtimes contending
# for one lock and writing to a register in PostgreSQL fenced by the lock's token
# (UPDATE ... WHERE token <= $1), and watchers following the lock. The holders: Rust
# (leasehold-contend, the Rust Lock recipe of leasehold-client: rs1, rs2, rs3c), Python (the
# installed wheel's leasehold.coord.lock on a thread, py1, and alock on asyncio, py2c:
# scripts/coord/contend.py) and JS (the built npm package's lock on Node, js1, js2c:
# scripts/coord/contend.mjs). The Python and JS holders write through `leasehold-contend --role
# register`, which runs the same fenced statement: the fence is PostgreSQL's in every runtime.
# Holders named *c are careless (they write without checking their lease: only the fence
# protects the register).
#
# Faults, each round: the owner of the lock's shard SIGKILLed, restarted with its clock skewed
# (libfaketime, within the clock guard's bounds: +0.3 s, then running 500 ppm fast, then -0.3 s);
# the owner SIGSTOPped until its shard is taken over (then SIGCONT); the owner cut from
# PostgreSQL and from its peers for 5 s (network namespaces and nftables: the nemesis of
# scripts/lib/nemesis.sh), then healed; a holder SIGSTOPped while it holds the lock, past its
# lease (then SIGCONT: it comes back believing in its lock), a careless one of each runtime in
# turn. The whole run, a fourth server whose clock runs 1.5 times too fast (beyond the guard's
# bound) is a member of the cluster: it must never take a shard. Partitions need root (CI runs as
# root); without it, or without network namespaces, the rest runs on loopback and the output
# says that partitions were skipped and why; without libfaketime (installed when root), the same
# for the skews.
#
# Checks (all must hold): 0 writes accepted out of token order; 0 tokens whose writes came from
# two holders; every token acquired by one holder only; every runtime acquired the lock; every
# watcher sees every grant and every end of the lock's leases once, in order, numbers without a
# gap, never two holders at once, and the same history as the other watcher; every acquisition
# seen by the watchers; the fence refused at least one stale write; the fast-clock server took no
# shard. Prints the counts per runtime, how many stale writes the fence refused, the takeover
# times and the faults applied.
#
# Usage: scripts/test-coord.sh [ROUNDS]   (default 3; about 1.5 minutes once built)
#   KEEP=1 keeps the work directory (logs, histories); COORD_LOOPBACK=1 runs on loopback without
#   partitions even as root (the path taken without root).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${1:-3}
SHARDS=4
OWNERSHIP_MS=1500
LEASE_MS=2000
CUT_S=5
# In-bound clock skews of the restarted servers, one per round in turn, and the fast clock of the
# fourth server (libfaketime's FAKETIME).
SKEWS=("+0.3" "+0 x1.0005" "-0.3")
FAST_CLOCK="+0 x1.5"

# shellcheck source=lib/nemesis.sh
source scripts/lib/nemesis.sh
# shellcheck source=lib/pg.sh
source scripts/lib/pg.sh
NETNS=""
NO_NET_WHY=""
if [ -n "${COORD_LOOPBACK:-}" ]; then
  NO_NET_WHY="COORD_LOOPBACK is set"
elif [ "$(id -u)" -ne 0 ]; then
  NO_NET_WHY="not root (uid $(id -u)): network namespaces and nftables need CAP_NET_ADMIN"
else
  nem_install || echo "could not install the nemesis's packages; going on with what is here"
  if ! command -v nft >/dev/null || ! ip netns add "lhc$$-try" 2>/dev/null; then
    NO_NET_WHY="network namespaces or nftables unavailable here (ip netns add failed)"
  else
    ip netns del "lhc$$-try"
    NETNS=1
  fi
fi
FAKETIME_LIB=$(nem_faketime_lib || true)
NO_SKEW_WHY=""
[ -n "$FAKETIME_LIB" ] || NO_SKEW_WHY="libfaketime is not installed (the script installs it when run as root)"
pg_install

echo "== building leasehold-server, the contenders' bindings"
nice -n 10 cargo build --release -q -p leasehold-server
TARGET=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
BIN="$TARGET/release"
WORK=$(mktemp -d /tmp/leasehold-coord.XXXXXX)
chmod 755 "$WORK"
# The bindings as scripts/lib/bindings.sh installs them (the venv of test-python.sh, the packed npm
# package), built at low priority.
nice -n 10 bash -c "ROOT=$ROOT TARGET=$TARGET; source scripts/lib/bindings.sh; leasehold_python_venv" >"$WORK/venv.log" 2>&1 \
  || { cat "$WORK/venv.log"; exit 1; }
nice -n 10 bash -c "ROOT=$ROOT TARGET=$TARGET; source scripts/lib/bindings.sh; leasehold_node_app $WORK/node" >"$WORK/node-build.log" 2>&1 \
  || { cat "$WORK/node-build.log"; exit 1; }
cp scripts/coord/contend.mjs "$WORK/node/"
PY=${LEASEHOLD_PY_VENV:-$TARGET/py-venv}/bin/python

declare -a PIDS URLS
declare -A CPID
REG_PID=""
cleanup() {
  for p in "${PIDS[@]:-}" "${CPID[@]:-}" "$REG_PID"; do
    [ -n "$p" ] && { kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; } || true
  done
  pg_stop
  [ -n "$NETNS" ] && nem_net_down
  if [ -n "${KEEP:-}" ]; then echo "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# node_exec NODE CMD...: execs CMD in NODE's namespace (here, without namespaces); run it with &
# so that $! is CMD's pid. in_node NODE CMD...: the same in the foreground.
node_exec() {
  if [ -n "$NETNS" ]; then exec ip netns exec "$(nem_ns "$1")" "${@:2}"; else exec "${@:2}"; fi
}
in_node() {
  if [ -n "$NETNS" ]; then ip netns exec "$(nem_ns "$1")" "${@:2}"; else "${@:2}"; fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if [ -n "$NETNS" ]; then
  nem_net_up "lhc$$" 10.78.0 pg s0 s1 s2 s3
  PG_NETNS=$NEM_NS_pg PG_HOST=$NEM_IP_pg PG_PORT=5432 PG_HBA_NET=10.78.0.0/24
  for i in 0 1 2 3; do
    v="NEM_IP_s$i"
    URLS[$i]="http://${!v}:7420"
  done
  REGISTER_ADDR=127.0.0.1:7600
  echo "network: namespaces lhc$$-* (PostgreSQL $NEM_IP_pg, servers ${URLS[*]}, clients in the hub)"
else
  for i in 0 1 2 3; do URLS[$i]="http://127.0.0.1:$(free_port)"; done
  REGISTER_ADDR=127.0.0.1:$(free_port)
  echo "network: loopback; PARTITIONS SKIPPED: $NO_NET_WHY"
fi
[ -z "$NO_SKEW_WHY" ] || echo "CLOCK SKEWS SKIPPED: $NO_SKEW_WHY"
pg_start
echo "PostgreSQL on ${PG_HOST:-127.0.0.1}:$PG_PORT"
SERVERS=$(IFS=,; echo "${URLS[*]:0:3}")
start() { # $1: index, $2: a FAKETIME spec (optional)
  local pre=()
  [ -n "${2:-}" ] && [ -n "$FAKETIME_LIB" ] && pre=(env "LD_PRELOAD=$FAKETIME_LIB" "FAKETIME=$2")
  echo "---- start$([ ${#pre[@]} -gt 0 ] && echo " under FAKETIME='$2'") $(date +%T.%3N)" >>"$WORK/server-$1.log"
  node_exec "s$1" "${pre[@]}" "$BIN/leasehold-server" --store "$PG_URL" --shards $SHARDS \
    --listen "${URLS[$1]#http://}" --advertise "${URLS[$1]}" \
    --name "server-$1" --ownership-ms $OWNERSHIP_MS --max-lease-ms 60000 --exclusive-prefix locks/ \
    >>"$WORK/server-$1.log" 2>&1 &
  PIDS[$1]=$!
}
index_of_url() {
  for i in 0 1 2; do [ "${URLS[$i]}" = "$1" ] && { echo "$i"; return; }; done
  echo "unknown owner $1" >&2; return 1
}
probe() { in_node hub "$BIN/leasehold-load" --servers "$SERVERS" --probe $SHARDS --timeout-ms 300 --probe-limit-ms 30000; }

for i in 0 1 2; do start $i; done
ms=$(probe)
echo "three servers up; every shard served after $ms ms"
SKEWED=()
if [ -z "$NO_SKEW_WHY" ]; then
  start 3 "$FAST_CLOCK"
  SKEWED+=("server-3 FAKETIME='$FAST_CLOCK' the whole run (beyond the bound: must take no shard)")
fi
in_node hub "$BIN/leasehold-contend" --setup --pg "$PG_URL"
node_exec hub "$BIN/leasehold-contend" --role register --pg "$PG_URL" --listen "$REGISTER_ADDR" 2>>"$WORK/register.err" &
REG_PID=$!
REGISTER="http://$REGISTER_ADDR"
for _ in $(seq 1 100); do grep -q "register on" "$WORK/register.err" 2>/dev/null && break; sleep 0.1; done

# The contenders run until the faults are over (a stop file: the holders finish their turn and
# exit, then the watchers, which see every last release); RUN_MS only bounds a run gone wrong.
RUN_MS=$(( (ROUNDS * 60 + 60) * 1000 ))
STOP="$WORK/stop-holders"
STOP_W="$WORK/stop-watchers"
common() { # name: the options every contender takes
  local stop=$STOP
  case "$1" in w*) stop=$STOP_W ;; esac
  echo --name "$1" --servers "$SERVERS" --lease-ms $LEASE_MS --run-ms $RUN_MS --log "$WORK/$1.jsonl" --stop-file "$stop"
}
contend() { # name, role, extra args...
  local name=$1 role=$2; shift 2
  # shellcheck disable=SC2046
  node_exec hub "$BIN/leasehold-contend" --role "$role" --pg "$PG_URL" $(common "$name") "$@" 2>>"$WORK/$name.err" &
  CPID[$name]=$!
}
contend_py() { # name, extra args...
  local name=$1; shift
  # shellcheck disable=SC2046
  node_exec hub "$PY" scripts/coord/contend.py --register "$REGISTER" $(common "$name") "$@" 2>>"$WORK/$name.err" &
  CPID[$name]=$!
}
contend_js() { # name, extra args...
  local name=$1; shift
  # shellcheck disable=SC2046
  node_exec hub node "$WORK/node/contend.mjs" --register "$REGISTER" $(common "$name") "$@" 2>>"$WORK/$name.err" &
  CPID[$name]=$!
}
START_S=$(date +%s)
contend w1 watcher
contend w2 watcher
sleep 1
HOLDERS="rs1 rs2 rs3c py1 py2c js1 js2c"
CARELESS=(rs3c py2c js2c)
contend rs1 holder
contend rs2 holder
contend rs3c holder --careless
contend_py py1
contend_py py2c --asyncio --careless
contend_js js1
contend_js js2c --careless

landlord=""
for _ in $(seq 1 100); do
  landlord=$(python3 -c "
import json
for l in open('$WORK/w1.jsonl'):
    d=json.loads(l)
    if 'watching' in d: print(d['landlord']); break" 2>/dev/null || true)
  [ -n "$landlord" ] && break
  sleep 0.1
done
echo "the lock lives in shard $landlord"
owner() { pg_sql "SELECT owner_url FROM leasehold_shards WHERE shard = $landlord AND lease_until > now()"; }
owner_index() { # the index of the lock shard's live owner (waits up to 10 s for one)
  local u
  for _ in $(seq 1 100); do
    u=$(owner)
    [ -n "$u" ] && { index_of_url "$u"; return; }
    sleep 0.1
  done
  echo "no live owner of shard $landlord for 10 s" >&2; return 1
}
writer() { pg_sql "SELECT coalesce(writer, '') FROM fenced_register WHERE id = 1"; }
now_ms() { date +%s%3N; }

takeovers=()
CUTS=()
sleep 3
for r in $(seq 1 "$ROUNDS"); do
  # The lock's shard owner, killed, and restarted with its clock skewed (within the bounds).
  victim=$(owner_index)
  kill -9 "${PIDS[$victim]}"
  { wait "${PIDS[$victim]}"; } 2>/dev/null || true
  ms=$(probe); takeovers+=("$ms")
  skew=""
  if [ -z "$NO_SKEW_WHY" ]; then
    skew=${SKEWS[$(( (r - 1) % ${#SKEWS[@]} ))]}
    SKEWED+=("round $r: server-$victim restarted under FAKETIME='$skew'")
  fi
  start "$victim" "$skew"
  echo "round $r: SIGKILL server-$victim (owned shard $landlord): every shard served again after $ms ms; restarted$([ -n "$skew" ] && echo " under FAKETIME='$skew'")"
  sleep 2
  # The owner paused past its ownership: taken over, then woken (its writes must be refused).
  victim=$(owner_index)
  kill -STOP "${PIDS[$victim]}"
  ms=$(probe); takeovers+=("$ms")
  kill -CONT "${PIDS[$victim]}"
  echo "round $r: SIGSTOP server-$victim, taken over after $ms ms, SIGCONT"
  sleep 2
  # The owner cut from PostgreSQL and from its peers (the clients still reach it), then healed.
  if [ -n "$NETNS" ]; then
    victim=$(owner_index)
    cut=("$NEM_IP_pg")
    for i in 0 1 2 3; do [ "$i" = "$victim" ] || { v="NEM_IP_s$i"; cut+=("${!v}"); }; done
    t0=$(now_ms)
    nem_cut "s$victim" "${cut[@]}"
    ms=$(probe); takeovers+=("$ms")
    left=$(( t0 + CUT_S * 1000 - $(now_ms) ))
    [ $left -gt 0 ] && sleep "$(awk "BEGIN { print $left / 1000 }")"
    nem_heal "s$victim"
    CUTS+=("round $r: server-$victim cut from PostgreSQL and its peers for $(( ($(now_ms) - t0) / 100 ))00 ms, shard taken over after $ms ms")
    echo "round $r: server-$victim cut from PostgreSQL and its peers: every shard served again after $ms ms; healed after $CUT_S s"
    sleep 2
  fi
  # A holder paused while it holds the lock: the careless one of this round's runtime (Rust,
  # Python, JS in turn) if it holds the lock within 8 s, else any careless one within 4 s, else
  # whoever holds it.
  want=${CARELESS[$(( (r - 1) % ${#CARELESS[@]} ))]}
  pick=""
  for i in $(seq 1 120); do
    w=$(writer)
    if [ "$w" = "$want" ]; then pick=$w; break; fi
    case "$w" in *c) [ "$i" -gt 80 ] && { pick=$w; break; } ;; esac
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
sleep 2
touch "$STOP"
for name in $HOLDERS; do wait "${CPID[$name]}" || echo "$name exited $?"; done
sleep 1
touch "$STOP_W"
for name in w1 w2; do wait "${CPID[$name]}" || echo "$name exited $?"; done
CPID=()
echo "contenders ran $(( $(date +%s) - START_S )) s"
fast_shards=0
[ -z "$NO_SKEW_WHY" ] && fast_shards=$(pg_sql "SELECT count(*) FROM leasehold_takeovers WHERE owner LIKE 'server-3#%'")
{
  if [ -n "$NETNS" ]; then printf '%s\n' "${CUTS[@]}"; else echo "partitions skipped: $NO_NET_WHY"; fi
  if [ -z "$NO_SKEW_WHY" ]; then printf '%s\n' "${SKEWED[@]}"; else echo "clock skews skipped: $NO_SKEW_WHY"; fi
} >"$WORK/faults.txt"

out_of_order=$(pg_sql "SELECT count(*) FROM (SELECT token, max(token) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before FROM fenced_log) x WHERE token < before")
shared_tokens=$(pg_sql "SELECT count(*) FROM (SELECT token FROM fenced_log GROUP BY token HAVING count(DISTINCT writer) > 1) x")
accepted=$(pg_sql "SELECT count(*) FROM fenced_log")
refused=$(pg_sql "SELECT count(*) FROM fenced_refused")
sorted=$(printf '%s\n' "${takeovers[@]}" | sort -n)
n=${#takeovers[@]}
p50=$(echo "$sorted" | sed -n "$(( (n + 1) / 2 ))p")
max=$(echo "$sorted" | tail -1)
python3 - "$WORK" "$HOLDERS" "$out_of_order" "$shared_tokens" "$accepted" "$refused" "$p50" "$max" "$n" "$fast_shards" <<'EOF'
import json, os, sys
work, holders = sys.argv[1], sys.argv[2].split()
out_of_order, shared, accepted, refused, p50, mx, n, fast_shards = map(int, sys.argv[3:])
RUNTIMES = {"rs": "Rust", "py": "Python", "js": "JS"}
def lines(name):
    path = os.path.join(work, name + ".jsonl")
    return [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []
bad = []
# Holders: every token acquired by one holder, once; every runtime acquired the lock.
owner = {}
acquired = 0
writes = {"ok": 0, "refused": 0, "error": 0}
per = {rt: {"holders": 0, "acquired": 0, "ok": 0, "refused": 0, "error": 0} for rt in RUNTIMES}
for name in holders:
    rt = per[name[:2]]
    rt["holders"] += 1
    ls = lines(name)
    if not any("done" in d for d in ls):
        bad.append(f"holder {name} did not finish")
    for d in ls:
        if "acquired" in d:
            acquired += 1
            rt["acquired"] += 1
            t = d["acquired"]
            if t in owner:
                bad.append(f"token {t} acquired by {owner[t]} and {name}")
            owner[t] = name
        if "write" in d:
            k = "ok" if d.get("ok") else ("refused" if "ok" in d else "error")
            writes[k] += 1
            rt[k] += 1
for k, rt in per.items():
    if rt["acquired"] == 0:
        bad.append(f"no {RUNTIMES[k]} holder ever acquired the lock")
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
if fast_shards:
    bad.append("a server beyond the clock guard's bound took shards")
for k, rt in per.items():
    print(f"  {RUNTIMES[k]:6} ({rt['holders']} holders): acquisitions {rt['acquired']}, writes accepted {rt['ok']}, "
          f"refused by the fence {rt['refused']}, errors {rt['error']}")
print(f"coord counts: acquisitions {acquired}, writes accepted {writes['ok']} (register log {accepted}), "
      f"stale writes refused by the fence {writes['refused']} (register {refused}), write errors {writes['error']}")
print(f"coord violations: writes accepted out of token order {out_of_order}, tokens written by two holders {shared}, "
      f"watcher and holder problems {len(bad)}")
for b_ in bad[:20]:
    print("  " + b_)
print(f"takeovers ({n}): p50 {p50} ms, max {mx} ms")
print(f"the server whose clock runs 1.5 times too fast took {fast_shards} shards")
print("faults applied:")
for l in open(os.path.join(work, "faults.txt")):
    print("  " + l.rstrip())
ok = out_of_order == 0 and shared == 0 and not bad and acquired > 0 and accepted > 0 and refused > 0
if refused == 0:
    print("no stale write was attempted: the fence was never tested (a paused holder should have come back)")
print(f"coord: {1 if ok else 0} passed, {0 if ok else 1} failed")
sys.exit(0 if ok else 1)
EOF
