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

run="$(mktemp -d)"
trap 'rm -rf "$run"' EXIT
echo "== building the wheel (release: no debug info) and installing it"
pip wheel -q --no-build-isolation --no-deps -w "$run/dist" "$root/bindings-python"
wheel=$(ls "$run"/dist/leasehold_py-*.whl)
echo "   $(basename "$wheel")"
python3 "$root/scripts/lib/no_debug_info.py" "$wheel"
pip install -q --no-deps --force-reinstall "$wheel"
# The distribution is `leasehold-py` (PyPI's `leasehold` is another project); the import is `leasehold`.
pip show -q leasehold-py >/dev/null
cd "$run"
python -c "import leasehold, sys; assert '$root/bindings-python' not in leasehold.__file__, leasehold.__file__; print('== testing', leasehold.__file__)"

echo "== mypy --strict (package stubs, examples, tests) and stubtest (stubs match the native module)"
MYPYPATH= mypy --strict --no-incremental --cache-dir /dev/null -p leasehold
python -m mypy.stubtest leasehold._native --allowlist "$root/bindings-python/stubtest-allowlist.txt"
mypy --strict --no-incremental --cache-dir /dev/null "$root/examples/python" "$root/bindings-python/tests"

echo "== the README's Python quickstart, as written"
python "$root/scripts/lib/readme_block.py" python "$root/README.md" > "$run/readme_quickstart.py"
python "$run/readme_quickstart.py"

echo "== pytest"
LEASEHOLD_ROOT="$root" python -m pytest -p no:cacheprovider -c "$root/bindings-python/pyproject.toml" \
  --rootdir "$root/bindings-python" "$root/bindings-python/tests" "$@"
