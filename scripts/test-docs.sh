#!/usr/bin/env bash
# The documentation book (docs/book): builds it and checks it.
#  1. installs mdbook (pinned) into ~/.cache/leasehold-tools if it is missing (linked from target/docs-tools);
#  2. lint: every page is in SUMMARY.md, every code block's info string follows the convention,
#     every table is an include of a file a script writes (or marked as written by hand); the
#     reference pages scripts/book-reference.sh writes from the code are what it writes now;
#  3. builds the book (mdbook) into target/book;
#  4. the API references from the code into target/book/api: rustdoc (broken intra-doc links and
#     every other rustdoc warning fail), TypeDoc from the npm package's .d.ts, pdoc from the
#     installed wheel's docstrings and stubs;
#  5. every link and anchor of the built book resolves (also those into the API references);
#  6. every code block: Rust blocks run as doc tests (crate leasehold-book), Python blocks run
#     against the installed wheel, JS blocks in Node against the installed npm package, TS
#     blocks type-checked with tsc --strict, C blocks compiled against include/leasehold.h and
#     run under valgrind, shell blocks parsed with their paths and packages checked, TOML and
#     JSON parsed; blocks marked `ignore` are fragments;
#  7. screenshots of the main pages in headless Chromium (target/book-screenshots), and from the
#     first page one click reaches each runtime's quickstart.
# Conventions: docs/book/src/contributing.md. Ends with "docs: N passed, M failed".
# Usage: scripts/test-docs.sh [--no-build-bindings]  (that flag uses the wheel and npm package
#   already built in target/, for a quick check of the book's text)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
case "$TARGET" in /*) ;; *) TARGET=$ROOT/$TARGET ;; esac
export CARGO_TARGET_DIR=$TARGET
TOOLS=$TARGET/docs-tools
BOOK_OUT=$TARGET/book
MDBOOK_VERSION=0.5.4
# mdbook is kept outside the clone, by version, so that a fresh clone on the same machine does
# not compile it again (about 2.5 minutes); a machine without that cache builds it as before.
MDBOOK_ROOT=${LEASEHOLD_TOOL_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/leasehold-tools}/mdbook-$MDBOOK_VERSION
TYPEDOC_VERSION=0.28.20
TYPESCRIPT_VERSION=5.9.3
PLAYWRIGHT_VERSION=1.65.1
PDOC_VERSION=16.0.0
PY_VENV=${LEASEHOLD_PY_VENV:-$TARGET/py-venv}
build_bindings=1
[ "${1:-}" = "--no-build-bindings" ] && build_bindings=0
# shellcheck source=lib/bindings.sh
source scripts/lib/bindings.sh

WORK=$(mktemp -d /tmp/leasehold-docs.XXXXXX)
cleanup() { # the server the guides' holders use (step 6), then the work directory
  if [ -f "$WORK/server.pid" ]; then kill "$(cat "$WORK/server.pid")" 2>/dev/null || true; sleep 0.2; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
passed=0
failed=0
failures=()
step() { # name, command...: runs a step, counts it, keeps going
  local name=$1 start rc
  shift
  echo "== $name"
  start=$(date +%s)
  # In a subshell with errexit on, so the first failing command ends the step.
  set +e
  (set -e; "$@")
  rc=$?
  set -e
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1)); echo "ok: $name ($(( $(date +%s) - start )) s)"
  else
    failed=$((failed + 1)); failures+=("$name"); echo "FAILED: $name ($(( $(date +%s) - start )) s)"
  fi
  return 0
}

# 1. mdbook, pinned, from crates.io; a fresh install compiles it in about 2 minutes on 2 cores.
install_mdbook() {
  if [ "$("$MDBOOK_ROOT/bin/mdbook" --version 2>/dev/null)" != "mdbook v$MDBOOK_VERSION" ]; then
    echo "installing mdbook $MDBOOK_VERSION into $MDBOOK_ROOT (no serve/watch: the check only builds)"
    nice -n 10 cargo install --locked --quiet "mdbook@$MDBOOK_VERSION" --no-default-features \
      --features search --root "$MDBOOK_ROOT" --target-dir "$TOOLS/build"
    rm -rf "$TOOLS/build" # the installed binary is all that is kept
  fi
  mkdir -p "$TOOLS/bin"
  ln -sf "$MDBOOK_ROOT/bin/mdbook" "$TOOLS/bin/mdbook"
  "$TOOLS/bin/mdbook" --version
}
# npm tools, pinned, in their own directory under the target dir.
install_node_tools() {
  local dir=$TOOLS/node
  if [ ! -f "$dir/.installed-$TYPEDOC_VERSION-$TYPESCRIPT_VERSION-$PLAYWRIGHT_VERSION" ]; then
    rm -rf "$dir"; mkdir -p "$dir"
    printf '{ "name": "leasehold-docs-tools", "private": true, "type": "module" }\n' > "$dir/package.json"
    (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --silent --no-audit --no-fund \
      "typedoc@$TYPEDOC_VERSION" "typescript@$TYPESCRIPT_VERSION" "playwright-core@$PLAYWRIGHT_VERSION")
    touch "$dir/.installed-$TYPEDOC_VERSION-$TYPESCRIPT_VERSION-$PLAYWRIGHT_VERSION"
  fi
}
step "mdbook $MDBOOK_VERSION" install_mdbook
[ -x "$TOOLS/bin/mdbook" ] || { echo "docs: no mdbook, nothing more to check"; echo "docs: $passed passed, $((failed + 1)) failed"; exit 1; }

# 2. The sources.
step "lint: pages, code blocks' info strings, tables, generated includes" python3 scripts/lib/book_check.py lint
# The reference pages (HTTP API, command lines, metrics, error codes, dashboard) against the code.
step "reference pages match the code (scripts/book-reference.sh --check)" bash scripts/book-reference.sh --check

# 3. The book.
build_book() { rm -rf "$BOOK_OUT"; "$TOOLS/bin/mdbook" build docs/book 2>&1 | grep -v '^ INFO' || true; [ -f "$BOOK_OUT/index.html" ]; }
step "mdbook build -> $BOOK_OUT" build_book

# 4. The API references.
api_rust() {
  # Every rustdoc warning (a broken intra-doc link above all) fails the build.
  RUSTDOCFLAGS="-D warnings" nice -n 10 cargo doc --quiet --no-deps --locked \
    -p leasehold -p leasehold-store -p leasehold-server -p leasehold-client
  mkdir -p "$BOOK_OUT/api"
  rm -rf "$BOOK_OUT/api/rust"; cp -r "$TARGET/doc" "$BOOK_OUT/api/rust"
}
step "API reference: rustdoc (-D warnings)" api_rust

# The bindings as users install them (the same helpers as the other suites).
if [ $build_bindings = 1 ]; then
  step "Python wheel into the venv" leasehold_python_venv
  step "npm package, packed and installed" leasehold_node_app "$WORK/app"
else
  mkdir -p "$WORK/app"
  (cd "$ROOT/bindings-wasm/pkg" && npm pack --silent --pack-destination "$WORK/app" >/dev/null)
  printf '{ "name": "leasehold-app", "private": true, "type": "module" }\n' > "$WORK/app/package.json"
  (cd "$WORK/app" && npm install --silent --no-audit --no-fund --offline "$WORK"/app/leasehold-*.tgz)
fi
step "npm tools (typedoc, typescript, playwright-core)" install_node_tools

api_js() {
  # The package's types as installed, copied out of node_modules (TypeDoc hides what it finds
  # there as "external"), the two entries named as users import them.
  local types=$WORK/types
  rm -rf "$types"; mkdir -p "$types"
  cp "$WORK"/app/node_modules/leasehold/*.d.ts "$types"/
  mv "$types/index.d.ts" "$types/leasehold.d.ts"
  mv "$types/tabs.d.ts" "$types/leasehold-tabs.d.ts"
  cat > "$WORK/typedoc.json" <<EOF
{
  "entryPoints": ["$types/leasehold.d.ts", "$types/leasehold-tabs.d.ts"],
  "out": "$BOOK_OUT/api/js",
  "name": "leasehold (npm)",
  "readme": "none",
  "tsconfig": "$WORK/tsconfig.typedoc.json",
  "treatWarningsAsErrors": true,
  "validation": { "invalidLink": true, "notExported": false },
  "disableSources": true
}
EOF
  printf '{ "compilerOptions": { "strict": true, "target": "es2022", "module": "nodenext", "moduleResolution": "nodenext", "lib": ["esnext", "dom"], "skipLibCheck": false }, "files": ["%s/leasehold.d.ts", "%s/leasehold-tabs.d.ts"] }\n' "$types" "$types" > "$WORK/tsconfig.typedoc.json"
  rm -rf "$BOOK_OUT/api/js"
  "$TOOLS/node/node_modules/.bin/typedoc" --options "$WORK/typedoc.json" --logLevel Warn
  [ -f "$BOOK_OUT/api/js/modules/leasehold.html" ]
}
step "API reference: TypeDoc from the package's .d.ts" api_js

api_python() {
  "$PY_VENV/bin/pip" install -q "pdoc==$PDOC_VERSION"
  rm -rf "$BOOK_OUT/api/python"
  # pdoc warns (and still writes) about what it cannot document: a warning fails the step.
  (cd "$WORK" && "$PY_VENV/bin/python" -m pdoc --no-show-source -o "$BOOK_OUT/api/python" leasehold) \
    2>&1 | tee "$WORK/pdoc.log"
  ! grep -q '^Warn' "$WORK/pdoc.log"
  [ -f "$BOOK_OUT/api/python/leasehold.html" ]
}
step "API reference: pdoc from the wheel's docstrings and stubs" api_python

# 5. Links and anchors.
step "links and anchors of the built book" python3 scripts/lib/book_check.py links "$BOOK_OUT"

# 6. Code blocks. The guides' holders run against a real server: one leasehold-server (built by
#    the reference step) on the file store, on a free loopback port, named in LEASEHOLD_SERVERS
#    after a port where nothing listens, so every holder's failover path runs too.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
start_server() {
  local port dead
  port=$(free_port); dead=$(free_port)
  "$TARGET/debug/leasehold-server" --data "$WORK/server-data" --shards 4 --listen "127.0.0.1:$port" \
    >"$WORK/server.log" 2>&1 &
  echo $! > "$WORK/server.pid" # steps run in a subshell: the pid goes through a file
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -sSf "http://127.0.0.1:$port/readyz" >/dev/null || { cat "$WORK/server.log"; return 1; }
  echo "http://127.0.0.1:$dead,http://127.0.0.1:$port" > "$WORK/servers"
  echo "leasehold-server at http://127.0.0.1:$port (LEASEHOLD_SERVERS lists an unreachable server first)"
}
step "a leasehold-server for the guides' holders" start_server
LEASEHOLD_SERVERS=$(cat "$WORK/servers" 2>/dev/null || echo http://127.0.0.1:7420)
export LEASEHOLD_SERVERS
step "Rust blocks: doc tests of leasehold-book" nice -n 10 cargo test --quiet --locked -p leasehold-book --doc
run_blocks() {
  python3 scripts/lib/book_check.py blocks "$WORK/blocks"
  leasehold_c_lib
  "$PY_VENV/bin/pip" install -q "mypy>=1.8"
  BOOK_PYTHON=$PY_VENV/bin/python BOOK_NODE_APP=$WORK/app BOOK_C_LIBDIR=$TARGET/debug \
    BOOK_TSC=$TOOLS/node/node_modules/.bin/tsc \
    python3 scripts/lib/book_check.py run "$WORK/blocks"
}
step "Python, JS, TS, C, shell, TOML and JSON blocks" run_blocks

# 7. Screenshots and one click to each quickstart, in Debian's chromium.
screenshots() {
  if [ ! -x /usr/bin/chromium ]; then
    echo "installing Debian's chromium"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
  fi
  mkdir -p "$TARGET/book-screenshots"
  TOOLS_NODE=$TOOLS/node node scripts/lib/book_screenshots.mjs "$BOOK_OUT" "$TARGET/book-screenshots"
}
step "screenshots in headless Chromium; one click to each quickstart" screenshots

[ ${#failures[@]} -eq 0 ] || echo "failed steps: ${failures[*]}"
echo "docs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
