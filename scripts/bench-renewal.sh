#!/usr/bin/env bash
# Renewal manager benchmark: manager cost per managed lease per round (1e5 leases), requests per
# round with and without batching, and the virtual-time network's speed. Prints tables.
# Usage: scripts/bench-renewal.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -p leasehold --bench renewal -- "$@"
