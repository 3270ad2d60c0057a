#!/usr/bin/env bash
# Deterministic simulation (examples/vopr) and model checking (examples/modelcheck) of leasehold.
# Builds both in release, runs 10,000 simulator seeds (VOPR_SEEDS to change) with every fault
# and every check enabled, the replay test, and the stateright model check of the holder/landlord
# protocol. Prints their summary lines and "vopr part: P passed, F failed"; exits non-zero if a
# seed fails or a property is violated. A failing seed prints its trace; replay it with
#   cargo run --release -p leasehold-examples --bin vopr -- --seed S
set -uo pipefail
cd "$(dirname "$0")/.."
seeds="${VOPR_SEEDS:-10000}"
target="${CARGO_TARGET_DIR:-target}"
cargo build --release --quiet -p leasehold-examples --bin vopr --bin modelcheck \
  || { echo "vopr part: build failed"; exit 1; }
passed=0
failed=0
step() { # label, command...
  local label="$1"; shift
  local start=$SECONDS
  if "$@"; then
    passed=$((passed + 1)); echo "  ok: $label ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1)); echo "  FAILED: $label ($((SECONDS - start)) s)"
  fi
}

echo "== simulator: $seeds seeds"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
step "vopr --seeds $seeds" bash -c "'$target/release/vopr' --seeds '$seeds' --trace 40 >'$out' 2>&1"
# Failing seeds print their world and last steps; keep the log short in CI.
grep -E '^seed [0-9]+ (FAILED|HANGS)' "$out" | head -20
n_fail="$(grep -cE '^seed [0-9]+ FAILED' "$out")"
if [ "$n_fail" -gt 0 ]; then
  first="$(grep -nE '^seed [0-9]+ FAILED' "$out" | head -1 | cut -d: -f1)"
  echo "-- the first failing seed in full:"
  sed -n "${first},/^  replay: /p" "$out"
fi
grep -E '^(failing seeds|failures by check|vopr summary|vopr:)' "$out" | cut -c1-2000

echo "== replay: a seed prints the same trace byte for byte"
step "cargo test --test vopr" cargo test --release --quiet -p leasehold-examples --test vopr

echo "== model check (stateright)"
step "modelcheck --ci" "$target/release/modelcheck" --ci

echo "vopr part: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
