#!/usr/bin/env bash
# Rust: formatting, lints, and every unit, property, integration and doc test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
# leasehold-server's tests start, restart, kill and promote a PostgreSQL of their own (Debian's;
# as the `leasehold` user when run as root): install it when missing.
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  echo "installing Debian's postgresql (for leasehold-server's tests)"
  sudo_=(); [ "$(id -u)" -eq 0 ] || sudo_=(sudo)
  "${sudo_[@]}" apt-get update -qq
  "${sudo_[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --all-targets
cargo test --workspace --doc
