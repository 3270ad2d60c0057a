#!/usr/bin/env bash
# Python binding benchmark: landlord ops/s from Python, native binding against a pure-Python
# landlord (dict + heapq), single and batched calls, at 1e5 and 1e6 leases. Prints a table.
# Usage: scripts/bench-python.sh [--sizes 100000,1000000] [--batch 1000]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="${LEASEHOLD_PY_VENV:-$target/py-venv}"
[ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
export PATH="$venv/bin:$PATH"
pip install -q "maturin>=1.9.4,<2"
pip install -q --no-build-isolation --no-deps --force-reinstall "$root/bindings-python"
cd "$(mktemp -d)"
python "$root/bindings-python/bench/bench_landlord.py" "$@"
