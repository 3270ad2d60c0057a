#!/usr/bin/env bash
# Python binding: builds and installs the wheel into a venv (maturin through pip's build backend),
# then runs pytest against the INSTALLED package from a directory where the source tree is not
# importable, and mypy --strict over the package's stubs, the examples and the tests.
# The venv is cached under the cargo target dir (target/ by default).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="${LEASEHOLD_PY_VENV:-$target/py-venv}"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
  echo "== creating venv $venv"
  "$python" -m venv "$venv"
fi
export PATH="$venv/bin:$PATH"
# Requirements already satisfied do not touch the network.
pip install -q "maturin>=1.9.4,<2" "pytest>=7" "mypy>=1.8"

echo "== building and installing bindings-python (release)"
pip install -q --no-build-isolation --no-deps --force-reinstall "$root/bindings-python"

run="$(mktemp -d)"
trap 'rm -rf "$run"' EXIT
cd "$run"
python -c "import leasehold, sys; assert '$root/bindings-python' not in leasehold.__file__, leasehold.__file__; print('== testing', leasehold.__file__)"

echo "== mypy --strict (package stubs, examples, tests)"
MYPYPATH= mypy --strict --no-incremental --cache-dir /dev/null -p leasehold
mypy --strict --no-incremental --cache-dir /dev/null "$root/examples/python" "$root/bindings-python/tests"

echo "== pytest"
LEASEHOLD_ROOT="$root" python -m pytest -p no:cacheprovider -c "$root/bindings-python/pyproject.toml" \
  --rootdir "$root/bindings-python" "$root/bindings-python/tests" "$@"
