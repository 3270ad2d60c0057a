#!/usr/bin/env bash
# Builds the npm package `leasehold` into bindings-wasm/pkg/:
#   cargo build for wasm32-unknown-unknown, then the wasm-bindgen CLI (exactly the version of the
#   wasm-bindgen crate in Cargo.lock, installed into ~/.cache/leasehold-tools if missing), then the JS
#   entries, types and package.json. Usage: bindings-wasm/build.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
case "$CARGO_TARGET_DIR" in /*) ;; *) CARGO_TARGET_DIR=$root/$CARGO_TARGET_DIR ;; esac

rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
  || rustup target add wasm32-unknown-unknown

# The CLI must match the crate exactly, or the glue and the module disagree.
v=$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/version = |"/, ""); print; exit }' "$root/Cargo.lock")
[ -n "$v" ] || { echo "build.sh: wasm-bindgen not found in Cargo.lock" >&2; exit 1; }
# Kept outside the clone, by version: a fresh clone on the same machine does not compile it again.
tools=${LEASEHOLD_TOOL_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/leasehold-tools}/wasm-bindgen-$v
if command -v wasm-bindgen >/dev/null && [ "$(wasm-bindgen --version)" = "wasm-bindgen $v" ]; then
  wb=wasm-bindgen
elif [ -x "$tools/bin/wasm-bindgen" ]; then
  wb=$tools/bin/wasm-bindgen
else
  echo "build.sh: installing wasm-bindgen-cli $v into $tools"
  cargo install wasm-bindgen-cli --version "$v" --locked --root "$tools"
  wb=$tools/bin/wasm-bindgen
fi

# Small, fast module: no debug info, one codegen unit, LTO (only affects this target's build).
CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_LTO=true CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
  cargo build -p leasehold-wasm --target wasm32-unknown-unknown --release --locked

pkg=$here/pkg
rm -rf "$pkg"
"$wb" --target web --out-dir "$pkg" --out-name leasehold_wasm \
  "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/leasehold_wasm.wasm"
# Trailing parameters typed "X | undefined" are optional in TypeScript.
sed -i 's/\([A-Za-z_][A-Za-z0-9_]*\): \([^:,()]*\) | undefined\([,)]\)/\1?: \2\3/g' "$pkg/leasehold_wasm.d.ts"
cp "$here"/js/*.js "$here"/js/*.d.ts "$pkg"/
cp "$here/README.md" "$pkg/README.md"
version=$(awk -F'"' '/^version = / { print $2; exit }' "$root/Cargo.toml")
sed "s/@VERSION@/$version/" "$here/package.template.json" > "$pkg/package.json"
echo "build.sh: wrote $pkg ($(du -sh "$pkg/leasehold_wasm_bg.wasm" | cut -f1) wasm, wasm-bindgen $v)"
