# Throw-away PostgreSQL clusters, for scripts/bench-server.sh and test-faults.sh.
# Installs Debian's postgresql when missing, runs it as a non-root user (created if needed) in
# a temporary directory.
#
# One cluster on loopback: pg_start (PG_OPTS: more postgres -c settings, e.g. ssl=on); then PG_URL (a fresh database), PG_DIR, PG_PORT,
# pg_sql "SQL"; pg_stop (call it from a trap) stops it and removes the directory. Or in a network
# namespace (scripts/lib/nemesis.sh): set PG_NETNS, PG_HOST (its address there), PG_PORT and
# PG_HBA_NET (the clients' network) before pg_start; pg_sql then goes through the Unix socket.
#
# A primary with a synchronous streaming standby (production's topology): pg_ha_start; see
# its comment below.

pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$d" ] && echo "$d"
}

pg_install() {
  if [ -z "$(pg_bin)" ]; then
    echo "installing Debian's postgresql"
    if [ "$(id -u)" -eq 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    else
      sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
  fi
}

# PG_AS: the command prefix that runs a program as the cluster's owner (PostgreSQL refuses to
# run as root: as root, a system user of our own, created if needed).
pg_owner() {
  PG_AS=()
  if [ "$(id -u)" -eq 0 ]; then
    id leasehold >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin leasehold
    PG_AS=(runuser -u leasehold --)
  fi
}

pg_start() {
  pg_install
  local bin
  bin=$(pg_bin)
  PG_DIR=$(mktemp -d /tmp/leasehold-pg.XXXXXX)
  local host=${PG_HOST:-127.0.0.1} run=()
  [ -n "${PG_NETNS:-}" ] && run=(ip netns exec "$PG_NETNS")
  [ -n "${PG_NETNS:-}" ] && [ -n "${PG_PORT:-}" ] \
    || PG_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  pg_owner
  local as=("${PG_AS[@]}")
  if [ "$(id -u)" -eq 0 ]; then chown leasehold "$PG_DIR"; fi
  "${as[@]}" "$bin/initdb" -D "$PG_DIR/data" -A trust -U leasehold >"$PG_DIR/initdb.log" 2>&1
  [ -n "${PG_HBA_NET:-}" ] && echo "host all all $PG_HBA_NET trust" >>"$PG_DIR/data/pg_hba.conf"
  # Loopback only (or the namespace's address); fsync stays on (durability is what is tested).
  "${run[@]}" "${as[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/pg.log" -w \
    -o "-h $host -p $PG_PORT -k $PG_DIR -c max_connections=200 ${PG_OPTS:-}" start >/dev/null
  PG_URL="postgres://leasehold@$host:$PG_PORT/leasehold_test"
  PG_SQL_HOST=$host
  [ -n "${PG_NETNS:-}" ] && PG_SQL_HOST=$PG_DIR
  "$bin/psql" -h "$PG_SQL_HOST" -p "$PG_PORT" -U leasehold -d postgres -qc "CREATE DATABASE leasehold_test"
  PG_BIN=$bin
}

pg_sql() {
  PGOPTIONS="-c client_min_messages=warning" "$PG_BIN/psql" -h "${PG_SQL_HOST:-127.0.0.1}" -p "$PG_PORT" -U leasehold -d leasehold_test -qAtc "$1"
}

pg_stop() {
  if [ -n "${PG_DIR:-}" ] && [ -d "$PG_DIR/data" ]; then
    "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
  fi
}

# ---- A primary and a synchronous streaming standby -------------------------------------------
# pg_ha_start starts node 1 (the primary) and node 2 (a standby made with `pg_basebackup -R`,
# streaming, named in the primary's synchronous_standby_names with synchronous_commit on: a
# commit returns only once the standby has it, so promoting the standby loses no committed
# transaction). Set before calling:
#   PG_HOST1, PG_HOST2   addresses the nodes listen on (default 127.0.0.1 both)
#   PG_PORT1, PG_PORT2   their ports (default: free loopback ports)
#   PG_NETNS1, PG_NETNS2 network namespaces to run them in (default: none)
#   PG_HBA_NET           the clients' network for pg_hba.conf (default 127.0.0.1/32)
# After it: PG_HA_DIR, PG_HA_URL (a fresh database, both hosts,
# target_session_attrs=read-write: clients follow a promotion), PG_PRIMARY (1), PG_BIN, and
#   pg_node_sql N "SQL"       SQL on node N over its Unix socket (any namespace)
#   pg_ha_sql "SQL"           SQL on the current primary (PG_PRIMARY)
#   pg_node_ctl N ARGS...     pg_ctl on node N, as the owner, in its namespace
#   pg_node_start N           starts node N again (after a stop or a kill)
#   pg_node_pid N             its postmaster's pid (empty when it is not running)
#   pg_node_ready N [S]       waits up to S seconds (default 30) until node N accepts queries
#   pg_ha_promote             promotes node 2 (PG_PRIMARY=2)
#   pg_ha_stop                stops both and removes PG_HA_DIR (call it from a trap)

pg_node_run() { # N CMD...: runs CMD as the cluster's owner in node N's namespace
  local n=$1 ns
  shift
  ns=$([ "$n" = 1 ] && echo "${PG_NETNS1:-}" || echo "${PG_NETNS2:-}")
  if [ -n "$ns" ]; then
    ip netns exec "$ns" "${PG_AS[@]}" "$@"
  else
    "${PG_AS[@]}" "$@"
  fi
}

pg_node_opts() { # N: the server options of node N (address, port, its own socket directory)
  local n=$1
  if [ "$n" = 1 ]; then
    echo "-h $PG_HOST1 -p $PG_PORT1 -k $PG_HA_DIR/sock1"
  else
    echo "-h $PG_HOST2 -p $PG_PORT2 -k $PG_HA_DIR/sock2"
  fi
}

pg_node_port() { [ "$1" = 1 ] && echo "$PG_PORT1" || echo "$PG_PORT2"; }

pg_node_sql() { # N SQL
  PGOPTIONS="-c client_min_messages=warning" PGCONNECT_TIMEOUT=5 "$PG_BIN/psql" -h "$PG_HA_DIR/sock$1" \
    -p "$(pg_node_port "$1")" -U leasehold -d "${3:-leasehold_test}" -qAtc "$2"
}

pg_ha_sql() { pg_node_sql "$PG_PRIMARY" "$1"; }

pg_node_ctl() { # N ARGS...
  local n=$1
  shift
  pg_node_run "$n" "$PG_BIN/pg_ctl" -D "$PG_HA_DIR/data$n" "$@"
}

pg_node_start() { # N
  # -w: returns once the node accepts connections (a primary after crash recovery).
  pg_node_ctl "$1" -l "$PG_HA_DIR/pg$1.log" -w -t 60 -o "$(pg_node_opts "$1")" start >/dev/null
}

pg_node_pid() { # N
  local f="$PG_HA_DIR/data$1/postmaster.pid" pid
  [ -f "$f" ] || return 0
  pid=$(head -1 "$f" 2>/dev/null)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
}

pg_node_ready() { # N [SECONDS]
  local i
  for i in $(seq 1 $(( ${2:-30} * 10 ))); do
    if pg_node_sql "$1" "SELECT 1" leasehold_test >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  echo "PostgreSQL node $1 did not accept queries within ${2:-30} s" >&2
  return 1
}

pg_ha_start() {
  pg_install
  pg_owner
  PG_BIN=$(pg_bin)
  local free='import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
  PG_HOST1=${PG_HOST1:-127.0.0.1}
  PG_HOST2=${PG_HOST2:-127.0.0.1}
  PG_PORT1=${PG_PORT1:-$(python3 -c "$free")}
  PG_PORT2=${PG_PORT2:-$(python3 -c "$free")}
  PG_HA_DIR=$(mktemp -d /tmp/leasehold-pgha.XXXXXX)
  mkdir -p "$PG_HA_DIR/sock1" "$PG_HA_DIR/sock2"
  if [ "$(id -u)" -eq 0 ]; then chown -R leasehold "$PG_HA_DIR"; fi
  pg_node_run 1 "$PG_BIN/initdb" -D "$PG_HA_DIR/data1" -A trust -U leasehold >"$PG_HA_DIR/initdb.log" 2>&1
  # fsync stays on (durability is what is tested). Commits wait for the standby once it is
  # named in synchronous_standby_names (below, when it streams: before, they would hang).
  cat >>"$PG_HA_DIR/data1/postgresql.conf" <<CONF
max_connections = 200
wal_level = replica
max_wal_senders = 5
hot_standby = on
synchronous_commit = on
wal_keep_size = '256MB'
# Crash recovery syncs the data directory's file system once instead of fsyncing each file
# (seconds less of recovery after a kill on a loaded machine).
recovery_init_sync_method = syncfs
CONF
  {
    echo "host all all ${PG_HBA_NET:-127.0.0.1/32} trust"
    echo "host replication all ${PG_HBA_NET:-127.0.0.1/32} trust"
  } >>"$PG_HA_DIR/data1/pg_hba.conf"
  pg_node_start 1
  pg_node_sql 1 "CREATE DATABASE leasehold_test" postgres
  # The standby: a base backup with its recovery settings (-R), streaming from node 1 under the
  # name the primary waits for. It waits for no standby of its own, so that once promoted
  # (with no standby left) its commits go on. It reconnects to a primary that came back within
  # half a second (wal_retrieve_retry_interval; PostgreSQL's default is 5 s), since every
  # commit on the primary waits for it.
  pg_node_run 2 "$PG_BIN/pg_basebackup" -h "$PG_HA_DIR/sock1" -p "$PG_PORT1" -U leasehold \
    -D "$PG_HA_DIR/data2" -R -X stream -c fast >"$PG_HA_DIR/basebackup.log" 2>&1
  cat >>"$PG_HA_DIR/data2/postgresql.auto.conf" <<CONF
primary_conninfo = 'host=$PG_HOST1 port=$PG_PORT1 user=leasehold application_name=standby2'
synchronous_standby_names = ''
wal_retrieve_retry_interval = '500ms'
CONF
  pg_node_start 2
  pg_node_sql 1 "ALTER SYSTEM SET synchronous_standby_names = 'standby2'" postgres
  pg_node_sql 1 "SELECT pg_reload_conf()" postgres >/dev/null
  local i state=""
  for i in $(seq 1 300); do
    state=$(pg_node_sql 1 "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby2'" postgres 2>/dev/null || true)
    [ "$state" = sync ] && break
    sleep 0.1
  done
  if [ "$state" != sync ]; then
    echo "the standby is not synchronous (state: ${state:-none}); its log:" >&2
    tail -20 "$PG_HA_DIR/pg2.log" >&2
    return 1
  fi
  PG_PRIMARY=1
  PG_HA_URL="postgres://leasehold@$PG_HOST1:$PG_PORT1,$PG_HOST2:$PG_PORT2/leasehold_test?target_session_attrs=read-write"
}

pg_ha_promote() {
  pg_node_ctl 2 -w promote >/dev/null
  PG_PRIMARY=2
}

pg_ha_stop() {
  if [ -n "${PG_HA_DIR:-}" ] && [ -d "$PG_HA_DIR" ]; then
    local n
    for n in 1 2; do
      [ -d "$PG_HA_DIR/data$n" ] && pg_node_ctl "$n" -m immediate stop >/dev/null 2>&1 || true
    done
    rm -rf "$PG_HA_DIR"
  fi
}
