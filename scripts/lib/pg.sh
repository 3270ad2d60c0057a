# A throw-away PostgreSQL cluster on loopback, for scripts/test-server.sh and bench-server.sh.
# Installs Debian's postgresql when missing, runs it as a non-root user (created if needed) in
# a temporary directory; pg_stop (call it from a trap) stops it and removes the directory.
# After pg_start: PG_URL (a fresh database), PG_DIR, PG_PORT, pg_sql "SQL".

pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$d" ] && echo "$d"
}

pg_start() {
  if [ -z "$(pg_bin)" ]; then
    echo "installing Debian's postgresql"
    if [ "$(id -u)" -eq 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    else
      sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
  fi
  local bin
  bin=$(pg_bin)
  PG_DIR=$(mktemp -d /tmp/leasehold-pg.XXXXXX)
  PG_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  local as=()
  if [ "$(id -u)" -eq 0 ]; then
    # PostgreSQL refuses to run as root: a system user of our own.
    id leasehold >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin leasehold
    chown leasehold "$PG_DIR"
    as=(runuser -u leasehold --)
  fi
  PG_AS=("${as[@]}")
  "${as[@]}" "$bin/initdb" -D "$PG_DIR/data" -A trust -U leasehold >"$PG_DIR/initdb.log" 2>&1
  # Loopback only; fsync stays on (durability is what is tested).
  "${as[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/pg.log" -w \
    -o "-h 127.0.0.1 -p $PG_PORT -k $PG_DIR -c max_connections=200" start >/dev/null
  PG_URL="postgres://leasehold@127.0.0.1:$PG_PORT/leasehold_test"
  "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U leasehold -d postgres -qc "CREATE DATABASE leasehold_test"
  PG_BIN=$bin
}

pg_sql() {
  PGOPTIONS="-c client_min_messages=warning" "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U leasehold -d leasehold_test -qAtc "$1"
}

pg_stop() {
  if [ -n "${PG_DIR:-}" ] && [ -d "$PG_DIR/data" ]; then
    "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
  fi
}
