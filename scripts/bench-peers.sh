#!/usr/bin/env bash
# leasehold-server against what users run instead, in one run on this machine: Debian's
# redis-server (appendfsync always, and everysec) and etcd-server, beside leasehold-server on the
# embedded file store (1 and 4 shards) and on PostgreSQL (4 shards). One load generator for all
# (bench-peers/, closed loop, every reply checked; see its doc comment for what each system is
# sent): grant, renew, and renew_all of 100 leases (Redis: a pipeline of 100 Lua renewals; etcd:
# 100 keep-alives at once) at 1, 16 and 256 requests in flight, p50 and p99; then on a fresh
# instance RSS at 1e5 and BIG leases and the time back to serving after SIGKILL with BIG leases.
# Prints one markdown table; every ratio is "leasehold's best file store against the peer",
# above 1 where leasehold is ahead (throughput: ours / theirs; memory and restart: theirs /
# ours).
#
# Usage: scripts/bench-peers.sh [CELL_SECS [BIG]]   (defaults 3 and 1000000; about 10 minutes)
#   PEERS_SYSTEMS="lh1 lh4 lhpg redis-always redis-everysec etcd" picks systems;
#   PEERS_RELAXED=1 also runs leasehold's file store (1 shard) with --relaxed-renewals;
#   PEERS_OPS="grant renew batch" and PEERS_INFLIGHT="1 16 256" pick cells; BIG=0 skips the
#   memory and restart rows.
# Installs Debian's redis-server, etcd-server and protobuf-compiler (etcd's client crate needs
# protoc) and PostgreSQL if missing; etcd, Redis and PostgreSQL run as a non-root user.
set -euo pipefail
# The book includes what this prints: run under the recorder, which also writes it to
# docs/book/src/generated/bench-peers.md (LEASEHOLD_BOOK_RECORD=0: print only).
[ -n "${LEASEHOLD_BOOK_RECORDING:-}" ] || exec python3 "$(dirname "$0")/lib/book_record.py" bench-peers "$0" "$@"
cd "$(dirname "$0")/.."
CELL=${1:-3}
BIG=${2:-1000000}
SMALL=100000
[ "$BIG" -lt "$SMALL" ] && SMALL=$BIG
OPS=${PEERS_OPS:-"grant renew batch"}
INFLIGHT=${PEERS_INFLIGHT:-"1 16 256"}
SYSTEMS=${PEERS_SYSTEMS:-"lh1 lh4 lhpg redis-always redis-everysec etcd"}
[ "${PEERS_RELAXED:-0}" = 1 ] && SYSTEMS="$SYSTEMS lh1r"

need=()
command -v etcd >/dev/null || need+=(etcd-server)
command -v redis-server >/dev/null || need+=(redis-server)
command -v protoc >/dev/null || need+=(protobuf-compiler)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing Debian's ${need[*]}" >&2
  sudo=(); [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# shellcheck source=lib/pg.sh
source scripts/lib/pg.sh
nice -n 10 cargo build --profile profiling -q -p leasehold-server
(cd bench-peers && nice -n 10 cargo build --release -q)
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
SERVER="$target/profiling/leasehold-server"
LOADGEN="bench-peers/target/release/peers-load"
WORK=$(mktemp -d /tmp/leasehold-bench-peers.XXXXXX)
chmod 755 "$WORK"
AS=()
if [ "$(id -u)" -eq 0 ]; then
  id leasehold >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin leasehold
  AS=(runuser -u leasehold --)
fi
PID=""
PG_UP=""
# The process itself (runuser forks it as a child).
real_pid() { local c; c=$(pgrep -P "$1" 2>/dev/null | head -1); echo "${c:-$1}"; }
stop() {
  if [ -n "$PID" ]; then
    kill -9 "$(real_pid "$PID")" 2>/dev/null || true
    kill -9 "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
  fi
  PID=""
}
trap 'stop; [ -n "$PG_UP" ] && pg_stop; rm -rf "$WORK"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$(real_pid "$PID")/status"; }

# start SYSTEM FRESH: starts it (FRESH=1: on an empty store); sets PID, URL, KIND.
start() {
  local sys=$1 fresh=$2 port dir
  dir="$WORK/$sys"
  if [ "$fresh" = 1 ]; then
    rm -rf "$dir"; mkdir -p "$dir"; chown -R "${AS[*]:+leasehold}" "$dir" 2>/dev/null || true
    [ "$sys" = lhpg ] && pg_sql "DROP TABLE IF EXISTS leasehold_cluster, leasehold_servers, leasehold_shards, leasehold_snapshots, leasehold_journal, leasehold_takeovers"
  fi
  port=$(free_port)
  local lh=(--listen "127.0.0.1:$port" --max-lease-ms 3600000 --max-leases-per-shard 0)
  case $sys in
    lh1) "$SERVER" "${lh[@]}" --data "$dir" --shards 1 >>"$dir.log" 2>&1 & KIND=leasehold ;;
    lh1r) "$SERVER" "${lh[@]}" --data "$dir" --shards 1 --relaxed-renewals >>"$dir.log" 2>&1 & KIND=leasehold ;;
    lh4) "$SERVER" "${lh[@]}" --data "$dir" --shards 4 >>"$dir.log" 2>&1 & KIND=leasehold ;;
    lhpg) "$SERVER" "${lh[@]}" --store "$PG_URL" --shards 4 --ownership-ms 1500 >>"$dir.log" 2>&1 & KIND=leasehold ;;
    redis-always|redis-everysec)
      "${AS[@]}" redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --save '' --appendonly yes \
        --appendfsync "${sys#redis-}" --protected-mode no --daemonize no --loglevel warning >>"$dir.log" 2>&1 &
      KIND=redis ;;
    etcd)
      local peer; peer=$(free_port)
      "${AS[@]}" etcd --name bench --data-dir "$dir/data" \
        --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
        --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
        --initial-cluster "bench=http://127.0.0.1:$peer" --quota-backend-bytes 8589934592 \
        --log-level error >>"$dir.log" 2>&1 &
      KIND=etcd ;;
  esac
  PID=$!
  if [ "$KIND" = redis ]; then URL="127.0.0.1:$port"; else URL="http://127.0.0.1:$port"; fi
}
# Waits until the system answers anything at all (not timed: the probe times serving).
wait_up() {
  for _ in $(seq 1 300); do
    case $KIND in
      leasehold) curl -sf "$URL/readyz" >/dev/null 2>&1 && return 0 ;;
      redis) [ "$(redis-cli -u "redis://$URL" ping 2>/dev/null)" = PONG ] && return 0 ;;
      etcd) curl -sf "$URL/health" >/dev/null 2>&1 && return 0 ;;
    esac
    sleep 0.1
  done
  echo "$1 did not start; its log:" >&2; tail -20 "$WORK/$1.log" >&2; return 1
}
load() { "$LOADGEN" "$@" --system "$KIND" --url "$URL"; }

case " $SYSTEMS " in *" lhpg "*) pg_start; PG_UP=1 ;; esac
RES="$WORK/results.jsonl"
: >"$RES"
HEADER="leasehold-server $(git rev-parse --short HEAD), redis-server $(redis-server --version | awk '{print $3}' | sed 's/v=//'), $(etcd --version | head -1 | sed 's/ Version:/ server/'); $(nproc) cores; load (1, 5, 15 min) before: $(uptime | sed 's/.*load average: //')"
echo "$HEADER" >&2
for sys in $SYSTEMS; do
  start "$sys" 1; wait_up "$sys"
  for op in $OPS; do
    for n in $INFLIGHT; do
      r=$(load cell --op "$op" --inflight "$n" --secs "$CELL" --prefix "c$sys") || { echo "$sys $op $n failed" >&2; exit 1; }
      echo "{\"sys\":\"$sys\",$(echo "${r#\{}")" >>"$RES"
      echo "  $sys $op x$n: $r" >&2
    done
  done
  stop
  [ "$BIG" -gt 0 ] || continue
  # Memory and restart, on a fresh instance.
  start "$sys" 1; wait_up "$sys"; sleep 0.5
  base=$(rss_kb)
  load fill --leases "$SMALL" --inflight 256 --keep "$WORK/keep" --prefix m >&2
  small=$(rss_kb)
  if [ "$BIG" -gt "$SMALL" ]; then
    load fill --leases $((BIG - SMALL)) --inflight 256 --prefix n >&2
  fi
  big=$(rss_kb)
  sleep 1  # Redis everysec: the last second reaches the disk
  stop
  start "$sys" 0
  t=$(load probe --keep "$WORK/keep" --probe-limit 300) || t=-1
  echo "{\"sys\":\"$sys\",\"base_kb\":$base,\"small_kb\":$small,\"big_kb\":$big,\"small\":$SMALL,\"big\":$BIG,\"restart_ms\":$t}" >>"$RES"
  echo "  $sys rss ${base}/${small}/${big} kB, restart ${t} ms" >&2
  stop
done
LOADAVG=$(uptime | sed 's/.*load average: //')
echo
echo "$HEADER"

python3 - "$RES" "$CELL" "$BIG" "$SMALL" "$LOADAVG" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cell, big, small, loadavg = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
names = {"lh1": "file, 1 shard", "lh4": "file, 4 shards", "lh1r": "file 1, relaxed", "lhpg": "PostgreSQL, 4",
         "redis-always": "Redis always", "redis-everysec": "Redis everysec", "etcd": "etcd"}
systems = [s for s in names if any(r["sys"] == s for r in rows)]
cells = {(r["sys"], r["op"], r["inflight"]): r for r in rows if "op" in r}
mem = {r["sys"]: r for r in rows if "base_kb" in r}
files = [s for s in ("lh1", "lh4") if s in systems]
peers = [s for s in ("redis-always", "redis-everysec", "etcd") if s in systems]
def k(v):
    return f"{v / 1000:.1f}k" if v >= 1000 else f"{v:.0f}"
def ms(us):
    return f"{us / 1000:.2f}" if us < 10000 else f"{us / 1000:.0f}"
head = ["cell"] + [names[s] for s in systems]
ratio_cols = [f"file / {names[p]}" for p in peers]
if "lhpg" in systems and files:
    ratio_cols.append("PG / file")
if "lh1r" in systems and "etcd" in systems:
    ratio_cols.append("relaxed / etcd")
print()
print(f"Leases (or requests) per second, p50 / p99 ms; {cell} s cells; 'file' is the better of 1 and 4 shards;"
      f" ratios above 1: leasehold ahead")
print()
print("| " + " | ".join(head + ratio_cols) + " |")
print("|" + "|".join("---" for _ in head + ratio_cols) + "|")
what = {"grant": "grant", "renew": "renew", "batch": "renew_all 100"}
for op in ("grant", "renew", "batch"):
    for n in (1, 16, 256):
        if not any((s, op, n) in cells for s in systems):
            continue
        line = [f"{what[op]}, {n} in flight"]
        for s in systems:
            c = cells.get((s, op, n))
            line.append(f"{k(c['leases_per_s'])} ({ms(c['p50_us'])} / {ms(c['p99_us'])})" if c else "-")
        best = max((cells[(s, op, n)]["leases_per_s"] for s in files if (s, op, n) in cells), default=0)
        for p in peers:
            c = cells.get((p, op, n))
            line.append(f"{best / c['leases_per_s']:.2f}x" if c and c["leases_per_s"] else "-")
        if "lhpg" in systems and files:
            c = cells.get(("lhpg", op, n))
            line.append(f"{c['leases_per_s'] / best:.2f}x" if c and best else "-")
        if "lh1r" in systems and "etcd" in systems:
            a, b = cells.get(("lh1r", op, n)), cells.get(("etcd", op, n))
            line.append(f"{a['leases_per_s'] / b['leases_per_s']:.2f}x" if a and b else "-")
        print("| " + " | ".join(line) + " |")
def memrow(label, f, better_low=True):
    line = [label]
    vals = {}
    for s in systems:
        v = f(mem[s]) if s in mem else None
        vals[s] = v
        line.append("-" if v is None else v[1])
    best = min((vals[s][0] for s in files if vals.get(s) and vals[s][0] > 0), default=None)
    for p in peers:
        v = vals.get(p)
        line.append(f"{v[0] / best:.2f}x" if v and best and v[0] > 0 else "-")
    if "lhpg" in systems and files:
        v = vals.get("lhpg")
        line.append(f"{best / v[0]:.2f}x" if v and best and v[0] > 0 else "-")
    if "lh1r" in systems and "etcd" in systems:
        line.append("-")
    print("| " + " | ".join(line) + " |")
def rss(n, key):
    def f(m):
        kb = m[key]
        per = (kb - m["base_kb"]) * 1024 / n
        return (per, f"{kb / 1024:.0f} MB, {per:.0f} B/lease")
    return f
if not mem:
    small = big = 0
if small:
    memrow(f"RSS at {small:.0e} leases", rss(small, "small_kb"))
if big > small:
    memrow(f"RSS at {big:.0e} leases", rss(big, "big_kb"))
def restart(m):
    t = m["restart_ms"]
    return None if t < 0 else (max(t, 1), f"{t / 1000:.2f} s")
if big:
    memrow(f"back to serving after SIGKILL, {big:.0e} leases", restart)
print()
print(f"Machine load (1, 5, 15 min) at the end: {loadavg}")
EOF
