#!/usr/bin/env bash
# Per-call cost of renewing a lease through the C binding against the same call in Rust.
# Same workload on both sides: a landlord (Bounded 60 s / 30 s) holding LEASES leases, renewed
# round-robin CALLS times per run; the best of ROUNDS x RUNS runs is reported.
# Usage: [ROUNDS=3] scripts/bench-c.sh [LEASES] [CALLS] [RUNS]   (defaults 10000 1000000 5)
set -euo pipefail
# The book includes what this prints: run under the recorder, which also writes it to
# docs/book/src/generated/bench-c.md (LEASEHOLD_BOOK_RECORD=0: print only).
[ -n "${LEASEHOLD_BOOK_RECORDING:-}" ] || exec python3 "$(dirname "$0")/lib/book_record.py" bench-c "$0" "$@"
cd "$(dirname "$0")/.."
LEASES=${1:-10000}
CALLS=${2:-1000000}
RUNS=${3:-5}
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
export CARGO_TARGET_DIR=$TARGET
LIBDIR=$TARGET/profiling
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

cargo build -q --profile profiling -p leasehold-c
gcc -std=c99 -O2 -Wall -Wextra -Werror -Iinclude bindings-c/bench/renew_bench.c -o "$WORK/renew_so" \
  -L"$LIBDIR" -lleasehold -Wl,-rpath,"$LIBDIR"
gcc -std=c99 -O2 -Wall -Wextra -Werror -Iinclude bindings-c/bench/renew_bench.c -o "$WORK/renew_a" \
  "$LIBDIR/libleasehold.a" -lpthread -ldl -lm
gcc -std=c99 -O2 -Wall -Wextra -Werror -Iinclude bindings-c/bench/discovery_bench.c -o "$WORK/discovery" \
  -L"$LIBDIR" -lleasehold -Wl,-rpath,"$LIBDIR"

# Build the Rust side once, then alternate the three programs for ROUNDS rounds and keep each
# one's best: on a shared machine, load drifts, and alternating exposes all three to it alike.
cargo bench -q -p leasehold-c --bench renew --no-run 2>/dev/null
ROUNDS=${ROUNDS:-3}
min() { awk -v a="$1" -v b="$2" 'BEGIN {print (a == "" || b < a) ? b : a}'; }
rust=""; c_so=""; c_a=""
for _ in $(seq "$ROUNDS"); do
  r=$(cargo bench -q -p leasehold-c --bench renew -- "$LEASES" "$CALLS" "$RUNS" | awk '/^rust_renew_ns/ {print $2}')
  s=$("$WORK/renew_so" "$LEASES" "$CALLS" "$RUNS" | awk '/^c_renew_ns/ {print $2}')
  a=$("$WORK/renew_a" "$LEASES" "$CALLS" "$RUNS" | awk '/^c_renew_ns/ {print $2}')
  rust=$(min "$rust" "$r"); c_so=$(min "$c_so" "$s"); c_a=$(min "$c_a" "$a")
done

# Instructions per call, which machine load cannot disturb: callgrind counts every instruction
# of a run with N1 and with N2 calls (one run each); the difference over N2 - N1 calls leaves
# out the setup (granting the leases). Skipped without valgrind.
ir_per_call() { # program args...
  local n1=100000 n2=300000 i1 i2
  i1=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" "$LEASES" $n1 1 2>&1 | awk '/Collected :/ {print $NF}')
  i2=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" "$LEASES" $n2 1 2>&1 | awk '/Collected :/ {print $NF}')
  awk -v a="$i1" -v b="$i2" -v n=$((n2 - n1)) 'BEGIN {printf "%.1f", (b - a) / n}'
}
RUST_EXE=$(cargo bench -p leasehold-c --bench renew --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -n1)
if command -v valgrind >/dev/null 2>&1 && [ -n "$RUST_EXE" ]; then
  ir_rust=$(ir_per_call "$RUST_EXE"); ir_so=$(ir_per_call "$WORK/renew_so"); ir_a=$(ir_per_call "$WORK/renew_a")
else
  ir_rust=0; ir_so=0; ir_a=0
fi

echo
echo "renew, $LEASES leases, $CALLS calls per run, best of $ROUNDS x $RUNS runs ($(nproc) cores, $(uname -m))"
printf '| %-46s | %10s | %9s | %14s | %9s |\n' "call" "ns/call" "vs Rust" "instr./call" "vs Rust"
printf '|%s|%s|%s|%s|%s|\n' "------------------------------------------------" "------------" "-----------" "----------------" "-----------"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2fx", a / b; else printf "n/a"}'; }
row() { printf '| %-46s | %10.1f | %9s | %14.1f | %9s |\n' "$1" "$2" "$(ratio "$2" "$rust")" "$3" "$(ratio "$3" "$ir_rust")"; }
row "Rust: Landlord::renew" "$rust" "$ir_rust"
row "C: leasehold_landlord_renew (libleasehold.so)" "$c_so" "$ir_so"
row "C: leasehold_landlord_renew (libleasehold.a)" "$c_a" "$ir_a"
echo "(ns/call: wall clock, best run, disturbed by other load; instr./call: callgrind, exact)"

# The discovery service through the machine interface (JSON in, JSON out): best of ROUNDS runs.
echo
echo "discovery service through leasehold_machine_handle, 20000 calls each, best of $ROUNDS runs"
printf '| %-46s | %10s |\n' "call" "ns/call"
printf '|%s|%s|\n' "------------------------------------------------" "------------"
best_reg=""; best_groups=""; best_events=""
for _ in $(seq "$ROUNDS"); do
  out=$("$WORK/discovery" 20000)
  best_reg=$(min "$best_reg" "$(echo "$out" | awk '/^register/ {print $2}')")
  best_groups=$(min "$best_groups" "$(echo "$out" | awk '/^groups/ {print $2}')")
  best_events=$(min "$best_events" "$(echo "$out" | awk '/^events/ {print $2}')")
done
printf '| %-46s | %10.0f |\n' "register" "$best_reg" "a registration's groups" "$best_groups" \
  "announcement, poll_event, delivered (mixed)" "$best_events"
