#!/usr/bin/env bash
# Rust: formatting, lints, and every unit, property, integration and doc test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
# leasehold-server's tests start, restart, kill and promote a PostgreSQL of their own (Debian's;
# as the `leasehold` user when run as root) and fake a server's clock with libfaketime: install
# them when missing.
missing=()
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql)
ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1 || missing+=(faketime)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian's ${missing[*]} (for leasehold-server's tests)"
  sudo_=(); [ "$(id -u)" -eq 0 ] || sudo_=(sudo)
  "${sudo_[@]}" apt-get update -qq
  "${sudo_[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --all-targets
# The book's pages are doc tests of leasehold-book; some hold against running servers, so
# scripts/test-docs.sh runs them with servers started.
cargo test --workspace --doc --exclude leasehold-book
