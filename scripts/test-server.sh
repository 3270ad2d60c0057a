#!/usr/bin/env bash
# leasehold-server: the renewal service's real-process run on PostgreSQL (issue 26: 1,000 leases
# held at two other clusters kept alive through SIGKILLs of the renewal shard's owner and of the
# landlords' owners and a PostgreSQL restart, checked from the landlords' side; about 70 s), the
# discovery service's run on PostgreSQL (registrations through a SIGKILL of the discovery
# shard's owner: cookies, leases, registrars and event numbering kept; forwarding with
# identities; about 10 s), then the crash test on the embedded file store (scripts/test-crash.sh: SIGKILLs under load, then
# damaged files). Failover on PostgreSQL (owners killed and paused under load, fencing, a deposed
# owner's writes refused) is part of the fault suite, scripts/test-faults.sh (part `faults` of
# scripts/test-all.sh), with every other fault it injects.
# The server's own integration tests run in the rust part (cargo test --workspace).
#
# Usage: scripts/test-server.sh [KILLS]   (default 50)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/pg.sh
pg_install
echo "== renewal service: 1,000 leases through SIGKILLs and a PostgreSQL restart (server/tests/renewal_pg.rs)"
# --workspace, not -p leasehold-server: the features of the whole workspace, as the rust part's
# `cargo test --workspace --all-targets` built these test binaries, so nothing is rebuilt (with -p,
# tokio, hyper, axum and the server were built a second time). Only the named test target runs.
nice -n 10 cargo test --locked -q --workspace --test renewal_pg -- \
  --ignored --nocapture the_renewal_service_survives_kills_and_a_postgresql_restart
echo "== discovery service: registrations through a SIGKILL of the discovery shard's owner (server/tests/discovery_pg.rs)"
nice -n 10 cargo test --locked -q --workspace --test discovery_pg -- --nocapture
exec bash scripts/test-crash.sh "${1:-50}"
