#!/usr/bin/env bash
# The renewal service's cost (issue 26): leases one renewal-service shard keeps alive per core,
# and the service's CPU per lease per renewal. A landlord server and a renewal server (release
# builds, file store, this machine's disk); N leases handed to renewal sets with renewal
# duration R ms, then W seconds measured (scripts/lib/bench_renewal_service.py). Prints a table.
# Usage: scripts/bench-renewal-service.sh [N] [R_MS] [W_S]   (default 10000 4000 20)
set -euo pipefail
cd "$(dirname "$0")/.."
nice -n 10 cargo build --release -q -p leasehold-server
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 scripts/lib/bench_renewal_service.py "$target/release/leasehold-server" "${1:-10000}" "${2:-4000}" "${3:-20}"
