#!/usr/bin/env bash
# Runs every test of every language. Each part lives in scripts/test-<part>.sh and installs
# what it needs itself, so this works on a fresh machine with only the stock toolchain.
# Usage: scripts/test-all.sh [part ...]
#   parts: rust demo sim vopr c python wasm interop discovery server security coord faults api docs; default: all
set -euo pipefail
cd "$(dirname "$0")/.."
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(rust demo sim vopr c python wasm interop discovery server security coord faults api docs)
failed=()
logs=target/test-logs
mkdir -p "$logs"
for p in "${parts[@]}"; do
  script="scripts/test-$p.sh"
  [ -f "$script" ] || { echo "== $p: no $script, skipped"; continue; }
  echo "================ $p ================"
  start=$(date +%s)
  # (tee in a process substitution: a daemon a part leaves behind cannot hold this loop up)
  if bash "$script" > >(tee "$logs/$p.log") 2>&1; then
    echo "== $p: ok ($(( $(date +%s) - start )) s)"
  else
    echo "== $p: FAILED ($(( $(date +%s) - start )) s)"
    failed+=("$p")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  # the failing lines of each failed part again, so that the end of a long log says what broke
  for p in "${failed[@]}"; do
    echo "---- $p: what failed (whole log: $logs/$p.log)"
    grep -E 'FAIL|panicked|^error|[^0-9][1-9][0-9]* failed|Traceback|AssertionError|^E  ' "$logs/$p.log" | tail -n 30 || true
  done
  echo "FAILED parts: ${failed[*]}"
  exit 1
fi
echo "all parts passed: ${parts[*]}"
