#!/usr/bin/env bash
# What durability costs the lookup discovery service: journal bytes per registration and per
# refresh announcement, snapshot sizes (binary and JSON), and the time to write a snapshot and
# read it back, for 1000 registrations over 100 registrars (examples/discovery, bin ld-sizes).
# Prints one table. Usage: scripts/bench-discovery.sh
set -euo pipefail
# The book includes what this prints: run under the recorder, which also writes it to
# docs/book/src/generated/bench-discovery.md (LEASEHOLD_BOOK_RECORD=0: print only).
[ -n "${LEASEHOLD_BOOK_RECORDING:-}" ] || exec python3 "$(dirname "$0")/lib/book_record.py" bench-discovery "$0" "$@"
cd "$(dirname "$0")/.."
cargo run --release -q -p leasehold-discovery-run --bin ld-sizes
