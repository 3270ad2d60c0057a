# Shared install steps for scripts that use the built bindings (source it; needs $ROOT and
# $TARGET, the repository and the cargo target dir). Each function installs only what is missing
# or stale, so the scripts can call them in any order on a fresh machine.

# The venv with the Python binding installed from ./bindings-python (the same venv as
# scripts/test-python.sh). Sets PY_VENV.
leasehold_python_venv() {
  PY_VENV=${LEASEHOLD_PY_VENV:-$TARGET/py-venv}
  if [ ! -x "$PY_VENV/bin/python" ]; then
    echo "== creating venv $PY_VENV"
    "${PYTHON:-python3}" -m venv "$PY_VENV"
  fi
  # The build backend runs `maturin` from PATH.
  PATH="$PY_VENV/bin:$PATH" pip install -q "maturin>=1.9.4,<2"
  echo "== building and installing bindings-python (release)"
  PATH="$PY_VENV/bin:$PATH" CARGO_TARGET_DIR=$TARGET \
    pip install -q --no-build-isolation --no-deps --force-reinstall "$ROOT/bindings-python"
}

# The npm package built by bindings-wasm/build.sh, packed and installed into the directory $1
# (which gets a package.json), so that `import 'leasehold'` works for modules copied there.
leasehold_node_app() {
  local app=$1 tarball
  CARGO_TARGET_DIR=$TARGET bash "$ROOT/bindings-wasm/build.sh"
  mkdir -p "$app"
  (cd "$ROOT/bindings-wasm/pkg" && npm pack --silent --pack-destination "$app" >/dev/null)
  tarball=$(ls "$app"/leasehold-*.tgz)
  printf '{ "name": "leasehold-app", "private": true, "type": "module" }\n' > "$app/package.json"
  (cd "$app" && npm install --silent --no-audit --no-fund --offline "$tarball")
}

# libleasehold (debug build, .so and .a) under $TARGET/debug.
leasehold_c_lib() {
  CARGO_TARGET_DIR=$TARGET cargo build -q -p leasehold-c
}
