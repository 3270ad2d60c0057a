#!/usr/bin/env bash
# Per-call cost of renewing a lease through the C binding against the same call in Rust.
# Same workload on both sides: a landlord (Bounded 60 s / 30 s) holding LEASES leases, renewed
# round-robin CALLS times per run; the best of RUNS runs is reported.
# Usage: scripts/bench-c.sh [LEASES] [CALLS] [RUNS]   (defaults 10000 1000000 5)
set -euo pipefail
cd "$(dirname "$0")/.."
LEASES=${1:-10000}
CALLS=${2:-1000000}
RUNS=${3:-5}
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
export CARGO_TARGET_DIR=$TARGET
LIBDIR=$TARGET/release
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

cargo build -q --release -p leasehold-c
gcc -std=c99 -O2 -Wall -Wextra -Werror -Iinclude bindings-c/bench/renew_bench.c -o "$WORK/renew_so" \
  -L"$LIBDIR" -lleasehold -Wl,-rpath,"$LIBDIR"
gcc -std=c99 -O2 -Wall -Wextra -Werror -Iinclude bindings-c/bench/renew_bench.c -o "$WORK/renew_a" \
  "$LIBDIR/libleasehold.a" -lpthread -ldl -lm

rust=$(cargo bench -q -p leasehold-c --bench renew -- "$LEASES" "$CALLS" "$RUNS" | awk '/^rust_renew_ns/ {print $2}')
c_so=$("$WORK/renew_so" "$LEASES" "$CALLS" "$RUNS" | awk '/^c_renew_ns/ {print $2}')
c_a=$("$WORK/renew_a" "$LEASES" "$CALLS" "$RUNS" | awk '/^c_renew_ns/ {print $2}')

echo
echo "renew, $LEASES leases, $CALLS calls per run, best of $RUNS runs ($(nproc) cores, $(uname -m))"
printf '| %-46s | %10s | %12s |\n' "call" "ns/call" "vs Rust"
printf '|%s|%s|%s|\n' "------------------------------------------------" "------------" "--------------"
row() { printf '| %-46s | %10.1f | %11.2fx |\n' "$1" "$2" "$(awk -v a="$2" -v b="$rust" 'BEGIN {print a / b}')"; }
row "Rust: Landlord::renew" "$rust"
row "C: leasehold_landlord_renew (libleasehold.so)" "$c_so"
row "C: leasehold_landlord_renew (libleasehold.a)" "$c_a"
