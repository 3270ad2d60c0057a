#!/usr/bin/env bash
# leasehold-server: the crash test on the embedded file store (scripts/test-crash.sh: SIGKILLs
# under load, then damaged files). Failover on PostgreSQL (owners killed and paused under load,
# fencing, a deposed owner's writes refused) is part of the fault suite, scripts/test-faults.sh
# (part `faults` of scripts/test-all.sh), with every other fault it injects.
# The server's own integration tests run in the rust part (cargo test --workspace).
#
# Usage: scripts/test-server.sh [KILLS]   (default 50)
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash scripts/test-crash.sh "${1:-50}"
