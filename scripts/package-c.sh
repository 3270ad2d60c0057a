#!/usr/bin/env bash
# Packages libleasehold for installation: target/package/libleasehold-VERSION/ with lib/
# (libleasehold.so, libleasehold.a), include/leasehold.h and lib/pkgconfig/libleasehold.pc
# (prefix set by PREFIX, default /usr/local). Built with the release profile, which carries no
# debug info; the static archive also bundles objects of Rust's prebuilt standard library,
# which do, so it is stripped of them (strip --strip-debug). Prints the sizes and checks that
# nothing shipped has debug info left.  Usage: scripts/package-c.sh [PREFIX]
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${1:-/usr/local}
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
cargo build -q --release -p leasehold-c
out=$target/package/libleasehold-$VERSION
rm -rf "$out"
mkdir -p "$out/lib/pkgconfig" "$out/include"
cp "$target/release/libleasehold.so" "$target/release/libleasehold.a" "$out/lib/"
cp include/leasehold.h "$out/include/"
strip --strip-debug "$out/lib/libleasehold.a"
sed -e "s|@PREFIX@|$PREFIX|" -e "s|@INCLUDEDIR@|$PREFIX/include|" -e "s|@LIBDIR@|$PREFIX/lib|" \
    -e "s|@VERSION@|$VERSION|" examples/c/libleasehold.pc.in > "$out/lib/pkgconfig/libleasehold.pc"
python3 scripts/lib/no_debug_info.py "$out/lib/libleasehold.so" "$out/lib/libleasehold.a"
echo "packaged: $out"
