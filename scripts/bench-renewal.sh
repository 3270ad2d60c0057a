#!/usr/bin/env bash
# Renewal manager benchmark: manager cost per managed lease per round (1e5 leases), requests per
# round with and without batching, and the virtual-time network's speed. Prints tables.
# Usage: scripts/bench-renewal.sh [--quick]
set -euo pipefail
# The book includes what this prints: run under the recorder, which also writes it to
# docs/book/src/generated/bench-renewal.md (LEASEHOLD_BOOK_RECORD=0: print only).
[ -n "${LEASEHOLD_BOOK_RECORDING:-}" ] || exec python3 "$(dirname "$0")/lib/book_record.py" bench-renewal "$0" "$@"
cd "$(dirname "$0")/.."
cargo bench -p leasehold --bench renewal -- "$@"
