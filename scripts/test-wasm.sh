#!/usr/bin/env bash
# WebAssembly binding: builds the npm package, packs it, installs the tarball into an empty
# directory and runs `node --test` there against the installed package: unit tests, the shared
# vectors, hostile input, a loopback HTTP test, and in headless Chromium the browser example and
# leader election among tabs (leasehold/tabs, tests/tabs.test.mjs: failover times printed).
# Installs what it needs itself (wasm32 target and wasm-bindgen-cli via build.sh, Debian's
# chromium via apt-get, playwright-core via npm). Exits non-zero if any test fails. First checks
# that js/generated.d.ts is what the core's Rust types give (bindings-wasm/tests/ts_types.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# The TypeScript declarations of the core's data forms (js/generated.d.ts) match the Rust types.
cargo test -p leasehold-wasm --test ts_types --quiet
bash bindings-wasm/build.sh
python3 scripts/lib/no_debug_info.py bindings-wasm/pkg/leasehold_wasm_bg.wasm

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd bindings-wasm/pkg && npm pack --silent --pack-destination "$work" >/dev/null)
tarball=$(ls "$work"/leasehold-*.tgz)
echo "test-wasm: packed $(basename "$tarball") ($(du -h "$tarball" | cut -f1))"

# Headless browser: Debian's chromium only (never a downloaded browser build).
if [ ! -x /usr/bin/chromium ]; then
  echo "test-wasm: installing Debian's chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
fi

app=$work/app
mkdir -p "$app"
cd "$app"
printf '{ "name": "leasehold-test", "private": true, "type": "module" }\n' > package.json
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
npm install --silent --no-audit --no-fund "$tarball" playwright-core@1.65.1 typescript@5.9.3 @types/node@20.19.43 undici@6.22.0
cp "$root"/bindings-wasm/tests/*.mjs .

export LEASEHOLD_ROOT=$root
export LEASEHOLD_ARTIFACTS=${LEASEHOLD_ARTIFACTS:-$root/target/wasm-test}
mkdir -p "$LEASEHOLD_ARTIFACTS"
echo "== the README's JavaScript quickstart, as written, against the installed package"
python3 "$root/scripts/lib/readme_block.py" js "$root/README.md" > readme_quickstart.mjs
node readme_quickstart.mjs
echo "== tsc --strict on the README's JS quickstart (checkJs), the default lib of ES2022, no esnext.disposable"
cat > tsconfig.readme.json <<'EOF'
{ "compilerOptions": { "strict": true, "noEmit": true, "allowJs": true, "checkJs": true, "target": "es2022",
    "module": "nodenext", "moduleResolution": "nodenext", "types": ["node"], "skipLibCheck": false },
  "files": ["readme_quickstart.mjs"] }
EOF
node node_modules/typescript/bin/tsc -p tsconfig.readme.json
echo "   ok: no error"
node --test --test-reporter=tap ./*.test.mjs
