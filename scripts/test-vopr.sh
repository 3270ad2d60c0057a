#!/usr/bin/env bash
# Deterministic simulation (examples/vopr) and model checking (examples/modelcheck) of leasehold.
# Builds both in release and runs, with every fault and every check enabled, 4,000 simulator seeds:
# seeds 0..2000 every time (a fixed regression window) and 2,000 more from a window that moves with
# the commit (first seed 2000 + (first 8 hex digits of `git rev-parse HEAD` mod 1,000,000) * 2000),
# so that each CI run explores seeds no earlier run did; then the replay test and the stateright
# model check of the holder/landlord protocol. The exact command replaying the moving window is
# printed. VOPR_SEEDS=N runs seeds 0..N instead of both windows (the long run:
# VOPR_SEEDS=10000 scripts/test-vopr.sh, about 8 min on 2 cores; scripts/soak-vopr.sh for more).
# Prints their summary lines and "vopr part: P passed, F failed"; exits non-zero if a seed fails
# or a property is violated. A failing seed prints its trace; replay it with
#   cargo run --release -p leasehold-examples --bin vopr -- --seed S
set -uo pipefail
cd "$(dirname "$0")/.."
window=2000
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

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
if [ -n "${VOPR_SEEDS:-}" ]; then
  echo "== simulator: $VOPR_SEEDS seeds (VOPR_SEEDS)"
  step "vopr --seeds $VOPR_SEEDS" bash -c "'$target/release/vopr' --seeds '$VOPR_SEEDS' --trace 40 >'$out' 2>&1"
else
  head="$(git rev-parse HEAD 2>/dev/null || echo 00000000)"
  moving=$(( window + (16#${head:0:8} % 1000000) * window ))
  echo "== simulator: seeds 0..$window (fixed) and $moving..$((moving + window)) (moved by commit ${head:0:12})"
  echo "   replay this run's moving window: cargo run --release -p leasehold-examples --bin vopr -- --seeds $window --first-seed $moving"
  step "vopr --seeds $window" bash -c "'$target/release/vopr' --seeds $window --trace 40 >'$out' 2>&1"
  step "vopr --seeds $window --first-seed $moving" \
    bash -c "'$target/release/vopr' --seeds $window --first-seed $moving --trace 40 >>'$out' 2>&1"
fi
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
