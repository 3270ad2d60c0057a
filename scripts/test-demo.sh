#!/usr/bin/env bash
# The main demo, quick: a landlord over loopback HTTP, holders that renew, crash, cancel, get
# denied and delegate to a renewal set. The demo checks its own story and exits non-zero if any
# scenario misbehaved; its last line is "demo: N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p leasehold-examples --bin demo
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
demo="$target/release/demo"
# Bad flags get a clear message and exit code 2.
if "$demo" --holders many >/dev/null 2>"$target/demo-err.txt"; then
  echo "demo accepted a bad flag"; exit 1
fi
grep -q "wants a whole number" "$target/demo-err.txt"
"$demo" --run-ms 5000 --lease-ms 1000 --svg "$target/demo-timeline.svg" --quiet
"$demo" --run-ms 4000 --lease-ms 800 --holders 2 --policy adaptive --encoding binary --svg "$target/demo-adaptive.svg" --quiet
# In memory only (no store, no restart); and a store elsewhere with an early restart.
"$demo" --run-ms 4000 --lease-ms 800 --memory --svg "$target/demo-memory.svg" --quiet
"$demo" --run-ms 4000 --lease-ms 800 --data "$target/demo-data-2" --restart-at 1500 --svg "$target/demo-restart.svg" --quiet
