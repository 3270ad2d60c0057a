#!/usr/bin/env bash
# The book's reference pages, generated from what defines them (scripts/lib/book_reference.py):
# the HTTP API from the OpenAPI document a running leasehold-server serves, the metrics from its
# /metrics, the command lines from every --help of `leasehold` and `leasehold-server`, the error
# codes from core/tests/vectors/errors.json, the dashboard's panels and the alerting rules from
# deploy/, the configuration keys from server/src/config.rs.
#   scripts/book-reference.sh          writes docs/book/src/generated/ref-*.md
#   scripts/book-reference.sh --check  writes them to a temporary directory and fails if they
#                                      differ from the files in the book (test-docs.sh runs it)
# It builds the two binaries (debug) and starts one server on a free loopback port with a
# temporary data directory, which it stops on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
case "$TARGET" in /*) ;; *) TARGET=$ROOT/$TARGET ;; esac
check=0
[ "${1:-}" = "--check" ] && check=1

WORK=$(mktemp -d /tmp/leasehold-bookref.XXXXXX)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# With the features of `cargo test --workspace` (--workspace --tests), which built these already
# in CI (the rust part): with -p, tokio, hyper, axum and the server were built again.
nice -n 10 cargo build --quiet --locked --workspace --tests --bin leasehold-server --bin leasehold
BIN=$TARGET/debug

# Every --help, the subcommands found in each help's "Commands:" list; a fixed width so the text
# does not depend on the terminal.
export COLUMNS=100
mkdir -p "$WORK/in/help"
helps() { # words...: saves `words --help`, then recurses into its subcommands
  local words="$*" text sub
  text=$(PATH="$BIN:$PATH" "$@" --help)
  printf '%s\n' "$text" > "$WORK/in/help/$words.txt"
  for sub in $(printf '%s\n' "$text" | awk '/^Commands:/{on=1; next} on && /^  [^ ]/{print $1; next} on{exit}'); do
    [ "$sub" = help ] || helps "$@" "$sub"
  done
}
helps leasehold
helps leasehold-server

# One server, for its OpenAPI document and the names of its metrics, started with the example
# settings file of deploy/ (which the book shows), so that a key the server refuses fails here;
# the flags put it on a free loopback port and a temporary directory.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# With the lookup discovery service (unicast announcements on a free UDP port) and a renewal
# service shard, so that their metrics are listed too, with their labels.
udp=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
RUST_LOG=warn "$BIN/leasehold-server" --config deploy/server.example.toml --data "$WORK/data" --shards 2 --renewal-shards 1 \
  --listen "127.0.0.1:$port" --advertise "http://127.0.0.1:$port" --name book-reference \
  --discovery-port "$udp" --discovery-announce unicast \
  >"$WORK/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sSf "http://127.0.0.1:$port/openapi.json" > "$WORK/in/openapi.json" \
  || { echo "the server did not start with deploy/server.example.toml:"; cat "$WORK/server.log"; exit 1; }
curl -sSf "http://127.0.0.1:$port/metrics" > "$WORK/in/metrics.txt"
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=

# The alerting rules are YAML: Debian's python3-yaml where it is missing.
if ! python3 -c 'import yaml' 2>/dev/null; then
  echo "installing Debian's python3-yaml"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-yaml >/dev/null
fi

GEN=$ROOT/docs/book/src/generated
if [ $check = 0 ]; then
  python3 scripts/lib/book_reference.py "$WORK/in" "$GEN"
  exit 0
fi
python3 scripts/lib/book_reference.py "$WORK/in" "$WORK/out" >/dev/null
status=0
for f in "$WORK"/out/*.md; do
  name=$(basename "$f")
  if ! diff -u "$GEN/$name" "$f" > "$WORK/diff" 2>&1; then
    echo "docs/book/src/generated/$name differs from what the code says now:"
    head -40 "$WORK/diff"
    status=1
  else
    echo "  ok    generated/$name matches the code"
  fi
done
for f in "$GEN"/ref-*.md; do
  [ -f "$WORK/out/$(basename "$f")" ] || { echo "generated/$(basename "$f"): no longer generated"; status=1; }
done
[ $status = 0 ] || echo "run scripts/book-reference.sh to write the reference pages again"
exit $status
