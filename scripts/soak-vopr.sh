#!/usr/bin/env bash
# Soak the simulator: runs as many seeds as you give it, in parallel, and prints the failing ones.
# Usage: scripts/soak-vopr.sh SEEDS [FIRST_SEED] [-- extra vopr flags, e.g. --avoid short-renewals]
#   JOBS=n sets the worker threads (default: all cores).
# Each failing seed is printed with its world, its last steps and the command that replays it;
# the last lines list the failing seeds and "vopr: P passed, F failed".
set -euo pipefail
cd "$(dirname "$0")/.."
seeds="${1:?usage: scripts/soak-vopr.sh SEEDS [FIRST_SEED] [-- vopr flags]}"
shift
first=0
if [ $# -gt 0 ] && [ "$1" != "--" ]; then first="$1"; shift; fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
cargo build --release --quiet -p leasehold-examples --bin vopr
jobs=(); [ -n "${JOBS:-}" ] && jobs=(--jobs "$JOBS")
exec "${CARGO_TARGET_DIR:-target}/release/vopr" --seeds "$seeds" --first-seed "$first" "${jobs[@]}" "$@"
