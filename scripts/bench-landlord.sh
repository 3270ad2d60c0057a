#!/usr/bin/env bash
# Landlord benchmark: grant / renew / cancel / expire and bytes per lease at N = 1e3, 1e5, 1e6
# live leases, against a hand-written foldhash HashMap + BinaryHeap landlord (the floor), a bare
# foldhash map, the same two with SipHash, and HashMap + tokio
# DelayQueue, printed as one table. Takes a few minutes on 2 cores.
# Usage: scripts/bench-landlord.sh [--1e7]   (--1e7 adds N = 1e7: several GB of RAM, ~5 more minutes)
set -euo pipefail
# The book includes what this prints: run under the recorder, which also writes it to
# docs/book/src/generated/bench-landlord.md (LEASEHOLD_BOOK_RECORD=0: print only).
[ -n "${LEASEHOLD_BOOK_RECORDING:-}" ] || exec python3 "$(dirname "$0")/lib/book_record.py" bench-landlord "$0" "$@"
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--1e7" ]; then
  export LEASEHOLD_BENCH_1E7=1
fi
cargo bench -p leasehold --bench landlord
