#!/usr/bin/env bash
# Reproduces figures 3, 4 and 5 of Bowers, Mills and Rose, "Self-Adaptive Leasing for Jini"
# (seed 004) with the simulator (examples/sim): writes docs/figures/fig{3,4,5}.{csv,svg} and
# docs/figures/checks.txt (every point next to the paper's analysis) and prints the checks.
# About 22 s of CPU time for the full sweep; with a given seed the output is the same byte for
# byte. Extra arguments go to `sim` before the subcommand (`sim --help` lists them).
# Usage: scripts/reproduce-paper.sh [SIM OPTIONS]
set -euo pipefail
# The book includes what this prints: run under the recorder, which also writes it to
# docs/book/src/generated/paper-checks.md (LEASEHOLD_BOOK_RECORD=0: print only).
[ -n "${LEASEHOLD_BOOK_RECORDING:-}" ] || exec python3 "$(dirname "$0")/lib/book_record.py" paper-checks "$0" "$@"
cd "$(dirname "$0")/.."
cargo build --release -q -p leasehold-examples --bin sim
"${CARGO_TARGET_DIR:-target}/release/sim" --out docs/figures "$@" all | tee docs/figures/checks.txt
