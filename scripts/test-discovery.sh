#!/usr/bin/env bash
# The discovery run (seed 003, LD) over real loopback: two registrars announcing over UDP, the
# lookup discovery service (leasehold-server --discovery-port) serving clients over HTTP with its
# registrations in the server's file store, and clients of each runtime (Rust: ld-client; Python: client.py on the wheel; Node:
# client.mjs on the npm package) receiving discovered and discarded events. Registrar 1 and the server are
# killed with SIGKILL on the way (examples/discovery/run.py says what is checked). Runs twice:
# announcements as the machine allows (multicast on loopback if it works) and forced unicast.
# Ends with "discovery: N passed, M failed" per run.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
case "$TARGET" in /*) ;; *) TARGET=$ROOT/$TARGET ;; esac
export CARGO_TARGET_DIR=$TARGET
cd "$ROOT"
echo "== Rust: registrar, leasehold-server, ld-client"
# The binaries of both packages with the features of `cargo test --workspace` (--workspace
# --tests; the rust part built the test targets already): with -p, tokio, hyper, axum and the
# server were built again with other features, and target/debug/leasehold-server replaced.
cargo build -q --workspace --tests --bin registrar --bin ld-client --bin ld-sizes \
  --bin leasehold-server --bin leasehold-load --bin leasehold-renew-bench --bin leasehold-contend
# The clients of each runtime (run.py starts two of each and checks them all alike).
CLIENTS=(--client "rust=$TARGET/debug/ld-client")
# shellcheck source=lib/bindings.sh
source scripts/lib/bindings.sh
# The Python client imports the installed wheel: the venv scripts/test-python.sh uses.
leasehold_python_venv
CLIENTS+=(--client "python=$PY_VENV/bin/python $ROOT/examples/discovery/client.py")
# The Node client imports the npm package bindings-wasm/build.sh builds, installed next to it.
WORK=$(mktemp -d /tmp/leasehold-discovery.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
echo "== Node: the npm package installed next to client.mjs"
leasehold_node_app "$WORK/node" >"$WORK/node-build.log" 2>&1 || { cat "$WORK/node-build.log"; exit 1; }
cp examples/discovery/client.mjs "$WORK/node/"
CLIENTS+=(--client "node=node $WORK/node/client.mjs")
for mode in auto unicast; do
  echo "== discovery run, announcements: $mode"
  timeout 300 python3 examples/discovery/run.py --bin "$TARGET/debug" --announce "$mode" "${CLIENTS[@]}"
done
