#!/usr/bin/env bash
# Durable landlords against in-memory ones (issue 14): requests in flight, snapshot size and
# speed, bytes on disk, recovery time at 1e6 leases. Prints markdown tables.
# Usage: scripts/bench-durable.sh [--leases N] [--secs S] [--no-inflight]
set -euo pipefail
# The book includes what this prints: run under the recorder, which also writes it to
# docs/book/src/generated/bench-durable.md (LEASEHOLD_BOOK_RECORD=0: print only).
[ -n "${LEASEHOLD_BOOK_RECORDING:-}" ] || exec python3 "$(dirname "$0")/lib/book_record.py" bench-durable "$0" "$@"
cd "$(dirname "$0")/.."
cargo build -q --profile profiling -p leasehold-store --example bench_durable
exec "${CARGO_TARGET_DIR:-target}/profiling/examples/bench_durable" "$@"
