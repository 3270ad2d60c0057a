#!/usr/bin/env bash
# Interop of the four runtimes over real loopback HTTP. A landlord in each of Rust, Python, Node
# and C grants a lease and writes it in DURATION form (canonical JSON and binary); the lease then
# passes through a holder in each of Rust, Node, Python and C, which reads both forms at its own
# clock (epoch ms), renews the lease by an HTTP POST to the landlord (binary or JSON wire
# encoding, alternating), and writes it out for the next holder. examples/interop/run.py checks
# every hop: both forms read to `now + time left`, rewriting at the same now gives the same bytes,
# the renewal is granted as asked, the holder's new expiration is never later than the
# landlord's and trails it by at most the request's round trip.
# Builds what it needs (scripts/lib/bindings.sh). Ends with "interop: N passed, M failed".
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
case "$TARGET" in /*) ;; *) TARGET=$ROOT/$TARGET ;; esac
export CARGO_TARGET_DIR=$TARGET
cd "$ROOT"
# shellcheck source=lib/bindings.sh
. scripts/lib/bindings.sh

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== Rust: interop program and libleasehold"
# With the features of `cargo test --workspace` (--workspace --tests; the rust part built the test
# targets already), so that the core and the examples are not built again with other features.
cargo build -q --workspace --tests --bin interop
leasehold_c_lib
echo "== C landlord and holder"
for p in landlord holder; do
  gcc -std=c99 -Wall -Wextra -Werror -g -O1 -Iinclude "examples/interop/$p.c" -o "$work/$p-c" \
    -L"$TARGET/debug" -lleasehold -Wl,-rpath,"$TARGET/debug"
done
# The C programs run under valgrind when it is there (scripts/test-c.sh installs it): any
# memory error or leak makes the program exit 99, which fails its check.
vg=""
if command -v valgrind >/dev/null; then
  vg="valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 "
fi
echo "== Python binding"
leasehold_python_venv
echo "== Node package"
leasehold_node_app "$work/node"
cp examples/interop/*.mjs "$work/node/"

q() { printf '%q' "$1"; }
py=$(q "$PY_VENV/bin/python")
echo "== interop"
# Each holder has 60 s and each landlord answers at once; the whole run takes seconds.
timeout 600 "$PY_VENV/bin/python" examples/interop/run.py --work "$work" \
  --landlord "rust=$(q "$TARGET/debug/interop") landlord" \
  --landlord "python=$py $(q "$ROOT/examples/interop/landlord.py")" \
  --landlord "node=node $(q "$work/node/landlord.mjs")" \
  --landlord "c=$vg$(q "$work/landlord-c")" \
  --holder "rust=$(q "$TARGET/debug/interop") holder" \
  --holder "node=node $(q "$work/node/holder.mjs")" \
  --holder "python=$py $(q "$ROOT/examples/interop/holder.py")" \
  --holder "c=$vg$(q "$work/holder-c")"
