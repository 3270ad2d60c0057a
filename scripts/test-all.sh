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
for p in "${parts[@]}"; do
  script="scripts/test-$p.sh"
  [ -f "$script" ] || { echo "== $p: no $script, skipped"; continue; }
  echo "================ $p ================"
  start=$(date +%s)
  if bash "$script"; then
    echo "== $p: ok ($(( $(date +%s) - start )) s)"
  else
    echo "== $p: FAILED ($(( $(date +%s) - start )) s)"
    failed+=("$p")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED parts: ${failed[*]}"
  exit 1
fi
echo "all parts passed: ${parts[*]}"
