#!/usr/bin/env bash
# The crash test of scripts/test-crash.sh, longer: 500 SIGKILLs by default (about 8 minutes).
# Usage: scripts/soak-crash.sh [KILLS]
set -euo pipefail
exec bash "$(dirname "$0")/test-crash.sh" "${1:-500}"
