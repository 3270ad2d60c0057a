//! Counters and gauges, rendered in the Prometheus text format at `/metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// What one shard counts. Written by the shard's actor, read by `/metrics`.
#[derive(Debug, Default)]
pub struct ShardStats {
    /// Leases held.
    pub live: AtomicU64,
    /// Leases granted (acknowledged to holders).
    pub grants: AtomicU64,
    /// Leases renewed (each lease of a batch counts).
    pub renewals: AtomicU64,
    /// Leases cancelled.
    pub cancels: AtomicU64,
    /// Leases expired.
    pub expiries: AtomicU64,
    /// Requests answered.
    pub requests: AtomicU64,
    /// Last journal record written.
    pub journal_seq: AtomicU64,
    /// Last journal record durable.
    pub durable_seq: AtomicU64,
    /// Writes to the store (each one sync or one database transaction).
    pub commits: AtomicU64,
    /// Microseconds spent in those writes.
    pub commit_us: AtomicU64,
    /// Snapshots written (compactions).
    pub snapshots: AtomicU64,
    /// Microseconds since the server started at which the oldest reply still waiting for the
    /// store began waiting (at most; 0: none waits).
    pub waiting_since_us: AtomicU64,
}

/// When the process started, for the microsecond stamps above.
pub fn started() -> Instant {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *START.get_or_init(Instant::now)
}

/// Microseconds since [`started`] (at least 1, so 0 can mean "none").
pub fn stamp_us() -> u64 {
    (started().elapsed().as_micros() as u64).max(1)
}

/// Server-wide counters.
#[derive(Debug, Default)]
pub struct ServerStats {
    /// Requests forwarded to the owner of their shard.
    pub forwarded: AtomicU64,
    /// Requests answered 503 (shard unavailable here and no owner known).
    pub unavailable: AtomicU64,
    /// Store writes the database refused because this server's epoch was no longer the
    /// shard's (fencing).
    pub fenced: AtomicU64,
    /// Shards taken over (or first acquired).
    pub acquired: AtomicU64,
    /// Shards lost or given up.
    pub released: AtomicU64,
    /// Round trips to PostgreSQL.
    pub pg_round_trips: AtomicU64,
}

fn metric(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Renders every metric.
pub fn render(shards: &[(u64, std::sync::Arc<ShardStats>)], server: &ServerStats) -> String {
    let mut out = String::with_capacity(4096);
    let now_us = stamp_us();
    type Get = fn(&ShardStats, u64) -> f64;
    let per_shard: [(&str, &str, &str, Get); 12] = [
        ("leasehold_live_leases", "gauge", "Leases held.", |s, _| s.live.load(Relaxed) as f64),
        ("leasehold_grants_total", "counter", "Leases granted.", |s, _| {
            s.grants.load(Relaxed) as f64
        }),
        ("leasehold_renewals_total", "counter", "Leases renewed.", |s, _| {
            s.renewals.load(Relaxed) as f64
        }),
        ("leasehold_cancels_total", "counter", "Leases cancelled.", |s, _| {
            s.cancels.load(Relaxed) as f64
        }),
        ("leasehold_expiries_total", "counter", "Leases expired.", |s, _| {
            s.expiries.load(Relaxed) as f64
        }),
        ("leasehold_requests_total", "counter", "Requests answered.", |s, _| {
            s.requests.load(Relaxed) as f64
        }),
        (
            "leasehold_journal_lag_records",
            "gauge",
            "Journal records written but not yet durable.",
            |s, _| s.journal_seq.load(Relaxed).saturating_sub(s.durable_seq.load(Relaxed)) as f64,
        ),
        (
            "leasehold_journal_lag_seconds",
            "gauge",
            "How long the oldest reply waiting for the store has waited (at most).",
            |s, now| match s.waiting_since_us.load(Relaxed) {
                0 => 0.0,
                t => now.saturating_sub(t) as f64 / 1e6,
            },
        ),
        ("leasehold_journal_durable_seq", "gauge", "Last durable journal record.", |s, _| {
            s.durable_seq.load(Relaxed) as f64
        }),
        ("leasehold_commits_total", "counter", "Store writes (syncs or transactions).", |s, _| {
            s.commits.load(Relaxed) as f64
        }),
        ("leasehold_commit_seconds_total", "counter", "Time spent in store writes.", |s, _| {
            s.commit_us.load(Relaxed) as f64 / 1e6
        }),
        ("leasehold_snapshots_total", "counter", "Snapshots written (compactions).", |s, _| {
            s.snapshots.load(Relaxed) as f64
        }),
    ];
    for (name, kind, help, get) in per_shard {
        metric(&mut out, name, kind, help);
        for (id, s) in shards {
            let _ = writeln!(out, "{name}{{shard=\"{id}\"}} {}", get(s, now_us));
        }
    }
    metric(&mut out, "leasehold_shards_owned", "gauge", "Shards this server serves.");
    let _ = writeln!(out, "leasehold_shards_owned {}", shards.len());
    let server_counters: [(&str, &str, &AtomicU64); 6] = [
        (
            "leasehold_forwarded_total",
            "Requests forwarded to their shard's owner.",
            &server.forwarded,
        ),
        ("leasehold_unavailable_total", "Requests answered 503.", &server.unavailable),
        ("leasehold_fenced_writes_total", "Store writes refused by fencing.", &server.fenced),
        ("leasehold_shards_acquired_total", "Shards acquired or taken over.", &server.acquired),
        ("leasehold_shards_released_total", "Shards lost or given up.", &server.released),
        ("leasehold_pg_round_trips_total", "Round trips to PostgreSQL.", &server.pg_round_trips),
    ];
    for (name, help, v) in server_counters {
        metric(&mut out, name, "counter", help);
        let _ = writeln!(out, "{name} {}", v.load(Relaxed));
    }
    out
}
