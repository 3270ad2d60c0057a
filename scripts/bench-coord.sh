#!/usr/bin/env bash
# Coordination benchmark: leasehold-server against etcd, both started here on loopback, each one
# node with its own durable store (leasehold's embedded file store, fsync on every group commit;
# etcd's WAL, fsync on every commit).
#
# - lock: 1, 16 and 256 contenders acquire and release one lock for SECS seconds (leasehold:
#   POST /coord acquire with a wait, POST /lease cancel; etcd: its v3 JSON gateway's lock and
#   unlock, the server-side form of concurrency.Mutex, each contender with one session lease);
#   acquire+release cycles per second and the latency of one cycle (waiting included);
# - election: the handoff when a leader resigns to a candidate waiting in line, and the time a
#   dead leader (its lease never renewed) takes to be replaced, less its TTL (5 s for both; etcd
#   campaign and resign);
# - watch (leasehold): a watcher long-polls a prefix while 4 writers acquire and cancel leases;
#   events per second and delivery latency (from a cancel's acknowledgment to the watcher).
#
# Prints a table. Usage: scripts/bench-coord.sh [SECS]   (default 5)
# Installs Debian's etcd-server and etcd-client if missing; etcd runs as a non-root user.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-5}
if ! command -v etcd >/dev/null; then
  echo "installing Debian's etcd-server and etcd-client"
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server etcd-client >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server etcd-client >/dev/null
  fi
fi
nice -n 5 cargo build --release -q -p leasehold-server -p leasehold-examples --bin leasehold-bench-coord
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
BIN="$target/release"
WORK=$(mktemp -d /tmp/leasehold-bench-coord.XXXXXX)
LH="" ETCD=""
cleanup() {
  [ -n "$LH" ] && { kill "$LH" 2>/dev/null; wait "$LH" 2>/dev/null; } || true
  [ -n "$ETCD" ] && { kill "$ETCD" 2>/dev/null; wait "$ETCD" 2>/dev/null; } || true
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

LH_PORT=$(free_port)
"$BIN/leasehold-server" --data "$WORK/lh" --listen "127.0.0.1:$LH_PORT" --shards 1 \
  --exclusive-prefix bench/ --max-lease-ms 60000 >"$WORK/lh.out" 2>"$WORK/lh.err" &
LH=$!
C_PORT=$(free_port); P_PORT=$(free_port)
as=()
mkdir -p "$WORK/etcd"
if [ "$(id -u)" -eq 0 ]; then
  id leasehold >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin leasehold
  chown leasehold "$WORK/etcd"
  chmod 755 "$WORK"
  as=(runuser -u leasehold --)
fi
"${as[@]}" etcd --name bench --data-dir "$WORK/etcd/data" \
  --listen-client-urls "http://127.0.0.1:$C_PORT" --advertise-client-urls "http://127.0.0.1:$C_PORT" \
  --listen-peer-urls "http://127.0.0.1:$P_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$P_PORT" \
  --initial-cluster "bench=http://127.0.0.1:$P_PORT" --log-level error >"$WORK/etcd.log" 2>&1 &
ETCD=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$LH_PORT/healthz" >/dev/null 2>&1 && curl -sf "http://127.0.0.1:$C_PORT/health" >/dev/null 2>&1 && break
  sleep 0.1
done
ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$C_PORT" endpoint health >/dev/null
echo "leasehold-server $(git rev-parse --short HEAD) on :$LH_PORT, $(etcd --version | head -1) on :$C_PORT; $(nproc) cores"

run() { "$BIN/leasehold-bench-coord" "$@"; }
: >"$WORK/results.jsonl"
for n in 1 16 256; do
  for sys in leasehold etcd; do
    url="http://127.0.0.1:$LH_PORT"; [ "$sys" = etcd ] && url="http://127.0.0.1:$C_PORT"
    run lock --system "$sys" --url "$url" --contenders "$n" --secs "$SECS" >>"$WORK/results.jsonl"
  done
done
for sys in leasehold etcd; do
  url="http://127.0.0.1:$LH_PORT"; [ "$sys" = etcd ] && url="http://127.0.0.1:$C_PORT"
  run failover --system "$sys" --url "$url" --rounds 3 --ttl 5 >>"$WORK/results.jsonl"
done
run watch --url "http://127.0.0.1:$LH_PORT" --secs "$SECS" --writers 4 >>"$WORK/results.jsonl"

python3 - "$WORK/results.jsonl" "$SECS" <<'EOF'
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
secs = sys.argv[2]
print()
print(f"lock: acquire + release of one lock, {secs} s per row")
print(f"{'contenders':>10} | {'system':<9} | {'cycles/s':>9} | {'cycle p50 ms':>12} | {'cycle p99 ms':>12}")
print("-" * 64)
for r in rs:
    if r["what"] == "lock":
        print(f"{r['contenders']:>10} | {r['system']:<9} | {r['per_sec']:>9.0f} | {r['p50_ms']:>12.2f} | {r['p99_ms']:>12.2f}")
print()
print("election: one leader, one candidate waiting in line, TTL 5 s (3 rounds each)")
print(f"{'system':<9} | {'resign to next leader p50 / max ms':>35} | {'dead leader replaced, past TTL p50 / max ms':>44}")
print("-" * 95)
for r in rs:
    if r["what"] == "failover":
        print(f"{r['system']:<9} | {r['handoff_p50_ms']:>17.1f} / {r['handoff_max_ms']:<15.1f} | {r['detect_p50_ms']:>21.1f} / {r['detect_max_ms']:<20.1f}")
print()
for r in rs:
    if r["what"] == "watch":
        print(f"watch (leasehold, one long-polling watcher, {r['writers']} writers): {r['events_per_sec']:.0f} events/s "
              f"({r['grant_cancel_per_sec']:.0f} grant+cancel/s written), delivery p50 {r['delivery_p50_ms']:.2f} ms, "
              f"p99 {r['delivery_p99_ms']:.2f} ms")
EOF
