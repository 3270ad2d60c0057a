#!/usr/bin/env bash
# The discovery run (seed 003, LD) over real loopback: two registrars announcing over UDP, the
# lookup discovery service (lds) serving clients over HTTP with its registrations in a data
# directory, and clients receiving discovered and discarded events. Registrar 1 and the lds are
# killed with SIGKILL on the way (examples/discovery/run.py says what is checked). Runs twice:
# announcements as the machine allows (multicast on loopback if it works) and forced unicast.
# Ends with "discovery: N passed, M failed" per run.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
case "$TARGET" in /*) ;; *) TARGET=$ROOT/$TARGET ;; esac
export CARGO_TARGET_DIR=$TARGET
cd "$ROOT"
echo "== Rust: registrar, lds, ld-client"
cargo build -q -p leasehold-discovery-run
for mode in auto unicast; do
  echo "== discovery run, announcements: $mode"
  timeout 300 python3 examples/discovery/run.py --bin "$TARGET/debug" --announce "$mode"
done
