#!/usr/bin/env bash
# Python binding benchmarks, one table each:
#  1. landlord ops/s from Python: the native binding against a hand-written dict + heapq landlord
#     and cachetools.TTLCache, single calls, list-of-tuples batches and binary wire batches, at 1e5
#     and 1e6 leases (bindings-python/bench/bench_landlord.py);
#  2. renewals over loopback HTTP to leasehold.http.serve_threaded, keep-alive vs a connection per
#     request (bindings-python/bench/bench_http.py).
# Usage: scripts/bench-python.sh [--sizes 100000,1000000] [--batch 1000] [--http-only | --no-http]
set -euo pipefail
# The book includes what this prints: run under the recorder, which also writes it to
# docs/book/src/generated/bench-python.md (LEASEHOLD_BOOK_RECORD=0: print only).
[ -n "${LEASEHOLD_BOOK_RECORDING:-}" ] || exec python3 "$(dirname "$0")/lib/book_record.py" bench-python "$0" "$@"
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="${LEASEHOLD_PY_VENV:-$target/py-venv}"
[ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
export PATH="$venv/bin:$PATH"
pip install -q "maturin>=1.9.4,<2" "cachetools>=5,<7"
pip install -q --no-build-isolation --no-deps --force-reinstall "$root/bindings-python"
cd "$(mktemp -d)"
http=1 landlord=1 args=()
for a in "$@"; do
  case "$a" in
    --http-only) landlord=0 ;;
    --no-http) http=0 ;;
    *) args+=("$a") ;;
  esac
done
if [ "$landlord" = 1 ]; then python "$root/bindings-python/bench/bench_landlord.py" ${args[@]+"${args[@]}"}; echo; fi
if [ "$http" = 1 ]; then python "$root/bindings-python/bench/bench_http.py"; fi
