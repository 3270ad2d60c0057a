# A nemesis for fault tests on one machine (source it; scripts/test-faults.sh uses it): a private
# network of Linux network namespaces, packet filters that cut it, a timeline of what was done,
# and the helpers that break and mend processes, disks and clocks.
#
# Network: nem_net_up creates a hub namespace holding a bridge, and one namespace per node,
# each linked to the bridge by a veth pair and given 10.<a>.<b>.<n>/24 (the hub itself is .254
# and runs the clients). Nothing is added to the machine's own namespace, so ports need not be
# free there, and other users of the machine see nothing. nem_cut drops every packet between a
# node and the addresses given (nftables in the node's namespace: a silent drop, as a real
# partition, not a refusal); nem_heal removes the node's rules. Needs root (CAP_NET_ADMIN and
# CAP_SYS_ADMIN): nem_require_root says so and fails otherwise.
#
# Timeline: nem_mark appends {"at": <ms since the epoch>, "fault", "event", ...} to
# $NEM_TIMELINE (JSON lines), which the checker reads beside the holders' histories.

NEM_NS=()        # every namespace made, for nem_net_down
NEM_MOUNTS=()    # every tmpfs mounted, for nem_net_down

nem_require_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "this suite needs root (network namespaces, packet filters, a tmpfs mount); running as uid $(id -u)" >&2
    return 1
  fi
}

# Debian packages the nemesis needs: iproute2 (ip), nftables (nft), libfaketime, util-linux.
nem_install() {
  local missing=()
  command -v ip >/dev/null || missing+=(iproute2)
  command -v nft >/dev/null || missing+=(nftables)
  [ -e "$(nem_faketime_lib 2>/dev/null)" ] || missing+=(libfaketime faketime)
  command -v runuser >/dev/null || missing+=(util-linux)
  command -v curl >/dev/null || missing+=(curl)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

nem_now_ms() { date +%s%3N; }

nem_mark() { # FAULT EVENT [KEY=VALUE ...] (values that are integers stay numbers; at=MS sets the time)
  local fault=$1 event=$2 at
  shift 2
  at=$(nem_now_ms)
  python3 - "$NEM_TIMELINE" "$at" "$fault" "$event" "$@" <<'PY'
import json, sys
path, at, fault, event, *kv = sys.argv[1:]
rec = {"at": int(at), "fault": fault, "event": event}
for item in kv:  # (an at=MS given wins over now)
    k, _, v = item.partition("=")
    try:
        rec[k] = int(v)
    except ValueError:
        rec[k] = v
with open(path, "a") as f:
    f.write(json.dumps(rec) + "\n")
PY
}

# ---- the network -------------------------------------------------------------------------------
# nem_net_up PREFIX NET NODE... : NET is the first three octets (e.g. 10.77.0); node i (from 1)
# gets NET.(10+i)... unless NEM_ADDR_<node> is set. Sets NEM_HUB (the hub namespace's name),
# NEM_HUB_IP and, for each node, NEM_IP_<node> and NEM_NS_<node>.
nem_net_up() {
  local prefix=$1 net=$2 i=0 node ns ip
  shift 2
  NEM_HUB="$prefix-hub"
  NEM_HUB_IP="$net.254"
  ip netns add "$NEM_HUB"
  NEM_NS+=("$NEM_HUB")
  ip -n "$NEM_HUB" link set lo up
  ip -n "$NEM_HUB" link add br0 type bridge
  ip -n "$NEM_HUB" addr add "$NEM_HUB_IP/24" dev br0
  ip -n "$NEM_HUB" link set br0 up
  for node in "$@"; do
    i=$((i + 1))
    ns="$prefix-$node"
    local addr_var="NEM_ADDR_$node"
    ip="${!addr_var:-$net.$((10 + i))}"
    ip netns add "$ns"
    NEM_NS+=("$ns")
    ip -n "$ns" link set lo up
    ip -n "$NEM_HUB" link add "v-$node" type veth peer name eth0 netns "$ns"
    ip -n "$NEM_HUB" link set "v-$node" master br0
    ip -n "$NEM_HUB" link set "v-$node" up
    ip -n "$ns" addr add "$ip/24" dev eth0
    ip -n "$ns" link set eth0 up
    printf -v "NEM_IP_$node" '%s' "$ip"
    printf -v "NEM_NS_$node" '%s' "$ns"
  done
  # The bridge forwards at once (no learning delay) once its ports are up.
  sleep 0.2
}

nem_net_down() {
  local m ns
  for m in "${NEM_MOUNTS[@]:-}"; do
    [ -n "$m" ] && umount -l "$m" 2>/dev/null || true
  done
  for ns in "${NEM_NS[@]:-}"; do
    [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null || true
  done
  NEM_NS=()
  NEM_MOUNTS=()
}

nem_ns() { # NODE : the namespace of a node ("hub" for the hub)
  if [ "$1" = hub ]; then echo "$NEM_HUB"; else local v="NEM_NS_$1"; echo "${!v}"; fi
}

# nem_in NODE CMD... : runs CMD in the node's namespace. For a process to be signalled later,
# start it as `ip netns exec "$(nem_ns NODE)" CMD... &` instead: ip execs CMD, so $! is its pid
# (a function run in the background is a subshell with a pid of its own).
nem_in() {
  local ns
  ns=$(nem_ns "$1")
  shift
  ip netns exec "$ns" "$@"
}

# nem_cut NODE ADDR... : drops every packet between NODE and each ADDR, both ways.
nem_cut() {
  local node=$1 v="NEM_NS_$1" addrs
  shift
  addrs=$(IFS=,; echo "$*")
  ip netns exec "${!v}" nft -f - <<NFT
table inet nemesis {
  chain out { type filter hook output priority 0; ip daddr { $addrs } drop; }
  chain in { type filter hook input priority 0; ip saddr { $addrs } drop; }
}
NFT
}

nem_heal() { # NODE : removes the node's filters
  local v="NEM_NS_$1"
  ip netns exec "${!v}" nft delete table inet nemesis 2>/dev/null || true
}

# ---- disks -------------------------------------------------------------------------------------
nem_tmpfs() { # DIR SIZE : a small tmpfs at DIR (unmounted by nem_net_down)
  mkdir -p "$1"
  mount -t tmpfs -o "size=$2" tmpfs "$1"
  NEM_MOUNTS+=("$1")
}

nem_fill() { # FILE : writes zeros to FILE until the file system is full
  dd if=/dev/zero of="$1" bs=64k status=none 2>/dev/null || true
  sync
}

# ---- files -------------------------------------------------------------------------------------
nem_flip_byte() { # FILE OFFSET
  python3 - "$1" "$2" <<'PY'
import sys
p, at = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[at] ^= 0x40; open(p, "wb").write(b)
PY
}

# ---- clocks ------------------------------------------------------------------------------------
nem_faketime_lib() {
  local f
  for f in /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 /usr/lib/*/faketime/libfaketimeMT.so.1; do
    [ -e "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}

# nem_faketime SPEC CMD... : runs CMD under libfaketime (e.g. SPEC "+3s", or "+0 x1.5": the
# clock runs 1.5 times as fast from the start of the process), every clock faked, monotonic too.
nem_faketime() {
  local spec=$1
  shift
  LD_PRELOAD=$(nem_faketime_lib) FAKETIME="$spec" FAKETIME_NO_CACHE=1 "$@"
}

# ---- servers -----------------------------------------------------------------------------------
# nem_http NODE URL [CURL ARGS] : prints the status code and body of a GET from NODE's namespace
nem_get() {
  local node=$1 url=$2
  shift 2
  nem_in "$node" curl -s --max-time 2 -o - -w '\n%{http_code}' "$@" "$url" 2>/dev/null || printf '\n000'
}

nem_status() { # NODE URL : the HTTP status of a GET (000 when nothing answered)
  nem_in "$1" curl -s --max-time 2 -o /dev/null -w '%{http_code}' "$2" 2>/dev/null || true
}
