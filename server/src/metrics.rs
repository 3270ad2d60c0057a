//! Counters and gauges, rendered in the Prometheus text format at `/metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use crate::health::{ClockReport, ShardState};

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
    /// Renewal replies (single or batch) sent before their records were durable (relaxed
    /// renewals).
    pub early: AtomicU64,
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
    /// Stamp ([`stamp_us`]) of the last durable write of this shard here (or of the moment it
    /// was opened or taken over); 0: never served here.
    pub last_durable_us: AtomicU64,
    /// Store errors, by [`ErrorKind`].
    pub store_errors: [AtomicU64; ErrorKind::ALL.len()],
    /// Store writes by duration: `write_buckets[i]` counts writes of at most
    /// [`WRITE_BUCKETS`]`[i]` seconds (the last slot: longer ones).
    pub write_buckets: [AtomicU64; WRITE_BUCKETS.len() + 1],
    /// A renewal-service shard's own counters (zero for other shards).
    pub service: ServiceStats,
}

/// What a renewal-service shard counts besides [`ShardStats`]: its sets, the renewals it
/// sends for its client leases (the core renewal manager's counts, kept in the shard's state,
/// so they survive a restart or a takeover), and its events.
#[derive(Debug, Default)]
pub struct ServiceStats {
    /// Sets held.
    pub sets: AtomicU64,
    /// Renewal requests sent to client leases' landlords (one per batch).
    pub renew_requests: AtomicU64,
    /// Cancel requests sent (a set's leases cancelled with it).
    pub cancel_requests: AtomicU64,
    /// Client leases renewed (each lease of a batch counts).
    pub leases_renewed: AtomicU64,
    /// Client leases given up: a definite failure (the landlord answered unknown or denied)
    /// or indefinite ones until the lease would expire; each a renewal-failure event.
    pub definite_failures: AtomicU64,
    /// Indefinite per-lease failures (no landlord answered): retried.
    pub indefinite_failures: AtomicU64,
    /// Requests that got no answer within their time-out.
    pub timeouts: AtomicU64,
    /// Events handed to delivery.
    pub events_queued: AtomicU64,
    /// Events a listener took (2xx).
    pub events_delivered: AtomicU64,
    /// Events dropped: retried for as long as allowed, without a listener URL, or to a URL
    /// the allow-list refuses.
    pub events_dropped: AtomicU64,
    /// Registrations ended because their listener answered 404 or 410.
    pub listeners_gone: AtomicU64,
}

impl ServiceStats {
    /// Takes the service's gauges and the renewal manager's counts (after each batch).
    pub fn observe(&self, sets: usize, m: &leasehold::holder::RenewalStats) {
        self.sets.store(sets as u64, Relaxed);
        self.renew_requests.store(m.renew_requests, Relaxed);
        self.cancel_requests.store(m.cancel_requests, Relaxed);
        self.leases_renewed.store(m.leases_renewed, Relaxed);
        self.definite_failures.store(m.failures, Relaxed);
        self.indefinite_failures.store(m.indefinite_failures, Relaxed);
        self.timeouts.store(m.timeouts, Relaxed);
    }
}

/// Upper bounds (seconds) of the store write latency histogram's buckets.
pub const WRITE_BUCKETS: [f64; 14] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// What went wrong with a shard's store (the `kind` label of `leasehold_store_errors_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A write failed (I/O error, lost connection, time-out): nothing it carried was
    /// acknowledged.
    Write,
    /// A write was refused because another server owns the shard now (fencing).
    Fenced,
    /// Opening, reopening or restoring the shard failed for a reason that may pass (I/O,
    /// connection); it is retried.
    Open,
    /// The stored state was refused (damage, missing records): the shard is quarantined.
    Damaged,
}

impl ErrorKind {
    /// Every kind, in label order.
    pub const ALL: [ErrorKind; 4] =
        [ErrorKind::Write, ErrorKind::Fenced, ErrorKind::Open, ErrorKind::Damaged];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            ErrorKind::Write => "write",
            ErrorKind::Fenced => "fenced",
            ErrorKind::Open => "open",
            ErrorKind::Damaged => "damaged",
        }
    }
}

impl ShardStats {
    /// Counts one store error of `kind`.
    pub fn error(&self, kind: ErrorKind) {
        self.store_errors[kind as usize].fetch_add(1, Relaxed);
    }

    /// Counts one durable write that took `us` microseconds.
    pub fn wrote(&self, us: u64) {
        self.commits.fetch_add(1, Relaxed);
        self.commit_us.fetch_add(us, Relaxed);
        let secs = us as f64 / 1e6;
        let i = WRITE_BUCKETS.iter().position(|&b| secs <= b).unwrap_or(WRITE_BUCKETS.len());
        self.write_buckets[i].fetch_add(1, Relaxed);
        self.last_durable_us.store(stamp_us(), Relaxed);
    }

    /// Resets what describes one actor's life (leases held, journal positions) for a new actor
    /// of the same shard; counters carry on.
    pub fn restart(&self, live: u64, seq: u64) {
        self.live.store(live, Relaxed);
        self.journal_seq.store(seq, Relaxed);
        self.durable_seq.store(seq, Relaxed);
        self.waiting_since_us.store(0, Relaxed);
        self.last_durable_us.store(stamp_us(), Relaxed);
    }
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
    /// Forwards that timed out (the owner did not answer in time).
    pub forward_timeouts: AtomicU64,
    /// Connection attempts to PostgreSQL (after the first join).
    pub pg_connects: AtomicU64,
    /// Connection attempts to PostgreSQL that failed.
    pub pg_connect_failures: AtomicU64,
    /// The wait before the next connection attempt, ms (0 while connecting works).
    pub pg_reconnect_wait_ms: AtomicU64,
    /// Requests refused for their identity: no or a wrong credential, an operation or
    /// prefix not granted, a full quota (docs/security.md).
    pub refused: AtomicU64,
}

fn metric(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// One shard as `/metrics` shows it.
pub struct ShardMetrics {
    /// Its number.
    pub id: u64,
    /// Its state as seen from this server.
    pub state: ShardState,
    /// Its counters, if it was ever served here.
    pub stats: Option<Arc<ShardStats>>,
    /// Whether it is a renewal-service shard.
    pub renewal: bool,
}

/// The PostgreSQL mode's health, for `/metrics`.
pub struct PgMetrics {
    /// Whether the last ownership round reached the database.
    pub db_connected: bool,
    /// The clock guard's last measurement.
    pub clock: ClockReport,
}

/// Renders every metric.
pub fn render(shards: &[ShardMetrics], server: &ServerStats, pg: Option<&PgMetrics>) -> String {
    let mut out = String::with_capacity(8192);
    let now_us = stamp_us();
    type Get = fn(&ShardStats, u64) -> f64;
    // Gauges describe a shard served here; counters carry on across its actors.
    let gauges: [(&str, &str, Get); 5] = [
        ("leasehold_live_leases", "Leases held.", |s, _| s.live.load(Relaxed) as f64),
        ("leasehold_journal_lag_records", "Journal records written but not yet durable.", |s, _| {
            s.journal_seq.load(Relaxed).saturating_sub(s.durable_seq.load(Relaxed)) as f64
        }),
        (
            "leasehold_journal_lag_seconds",
            "How long the oldest reply waiting for the store has waited (at most).",
            |s, now| match s.waiting_since_us.load(Relaxed) {
                0 => 0.0,
                t => now.saturating_sub(t) as f64 / 1e6,
            },
        ),
        ("leasehold_journal_durable_seq", "Last durable journal record.", |s, _| {
            s.durable_seq.load(Relaxed) as f64
        }),
        (
            "leasehold_last_durable_write_age_seconds",
            "Seconds since the shard's last durable write here (or since it was opened or taken over).",
            |s, now| match s.last_durable_us.load(Relaxed) {
                0 => 0.0,
                t => now.saturating_sub(t) as f64 / 1e6,
            },
        ),
    ];
    let served: Vec<(u64, &ShardStats)> = shards
        .iter()
        .filter(|s| s.state == ShardState::Served)
        .filter_map(|s| s.stats.as_deref().map(|st| (s.id, st)))
        .collect();
    let known: Vec<(u64, &ShardStats)> =
        shards.iter().filter_map(|s| s.stats.as_deref().map(|st| (s.id, st))).collect();
    for (name, help, get) in gauges {
        metric(&mut out, name, "gauge", help);
        for (id, s) in &served {
            let _ = writeln!(out, "{name}{{shard=\"{id}\"}} {}", get(s, now_us));
        }
    }
    let counters: [(&str, &str, Get); 9] = [
        ("leasehold_grants_total", "Leases granted.", |s, _| s.grants.load(Relaxed) as f64),
        ("leasehold_renewals_total", "Leases renewed.", |s, _| s.renewals.load(Relaxed) as f64),
        (
            "leasehold_early_replies_total",
            "Renewal replies sent before their records were durable (relaxed renewals).",
            |s, _| s.early.load(Relaxed) as f64,
        ),
        ("leasehold_cancels_total", "Leases cancelled.", |s, _| s.cancels.load(Relaxed) as f64),
        ("leasehold_expiries_total", "Leases expired.", |s, _| s.expiries.load(Relaxed) as f64),
        ("leasehold_requests_total", "Requests answered.", |s, _| s.requests.load(Relaxed) as f64),
        ("leasehold_commits_total", "Store writes (syncs or transactions).", |s, _| {
            s.commits.load(Relaxed) as f64
        }),
        ("leasehold_commit_seconds_total", "Time spent in store writes.", |s, _| {
            s.commit_us.load(Relaxed) as f64 / 1e6
        }),
        ("leasehold_snapshots_total", "Snapshots written (compactions).", |s, _| {
            s.snapshots.load(Relaxed) as f64
        }),
    ];
    for (name, help, get) in counters {
        metric(&mut out, name, "counter", help);
        for (id, s) in &known {
            let _ = writeln!(out, "{name}{{shard=\"{id}\"}} {}", get(s, now_us));
        }
    }
    let name = "leasehold_store_errors_total";
    metric(&mut out, name, "counter", "Store errors by kind (write, fenced, open, damaged).");
    for (id, s) in &known {
        for k in ErrorKind::ALL {
            let v = s.store_errors[k as usize].load(Relaxed);
            let _ = writeln!(out, "{name}{{shard=\"{id}\",kind=\"{}\"}} {v}", k.label());
        }
    }
    let name = "leasehold_store_write_seconds";
    metric(
        &mut out,
        name,
        "histogram",
        "Duration of durable store writes (one sync or one statement).",
    );
    for (id, s) in &known {
        let mut cum = 0;
        for (i, b) in WRITE_BUCKETS.iter().enumerate() {
            cum += s.write_buckets[i].load(Relaxed);
            let _ = writeln!(out, "{name}_bucket{{shard=\"{id}\",le=\"{b}\"}} {cum}");
        }
        cum += s.write_buckets[WRITE_BUCKETS.len()].load(Relaxed);
        let _ = writeln!(out, "{name}_bucket{{shard=\"{id}\",le=\"+Inf\"}} {cum}");
        let sum = s.commit_us.load(Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum{{shard=\"{id}\"}} {sum}");
        let _ = writeln!(out, "{name}_count{{shard=\"{id}\"}} {}", s.commits.load(Relaxed));
    }
    render_renewal(&mut out, shards);
    let name = "leasehold_shard_state";
    metric(
        &mut out,
        name,
        "gauge",
        "1 for the shard's current state as seen from this server (served, taking_over, failed, quarantined, elsewhere, unowned).",
    );
    for s in shards {
        for st in ShardState::ALL {
            let v = u8::from(s.state == st);
            let _ = writeln!(out, "{name}{{shard=\"{}\",state=\"{}\"}} {v}", s.id, st.label());
        }
    }
    metric(&mut out, "leasehold_shards_owned", "gauge", "Shards this server serves.");
    let _ = writeln!(out, "leasehold_shards_owned {}", served.len());
    let quarantined = shards.iter().filter(|s| s.state == ShardState::Quarantined).count();
    metric(
        &mut out,
        "leasehold_quarantined_shards",
        "gauge",
        "Shards quarantined (stored state refused).",
    );
    let _ = writeln!(out, "leasehold_quarantined_shards {quarantined}");
    if let Some(pg) = pg {
        let c = &pg.clock;
        let gauges: [(&str, &str, f64); 6] = [
            (
                "leasehold_db_connected",
                "1 if the last ownership round reached PostgreSQL.",
                f64::from(u8::from(pg.db_connected)),
            ),
            (
                "leasehold_clock_offset_ms",
                "This host's clock minus the database's, in ms (last measurement).",
                c.offset_ms.unwrap_or(f64::NAN),
            ),
            (
                "leasehold_clock_rate_ppm",
                "How much faster the server's clock runs than the database's, in parts per million.",
                c.rate_ppm.unwrap_or(f64::NAN),
            ),
            (
                "leasehold_clock_ok",
                "1 while the clock guard lets this server serve.",
                f64::from(u8::from(c.ok)),
            ),
            ("leasehold_clock_bound_ms", "The clock guard's offset bound, in ms.", c.bound_ms),
            (
                "leasehold_pg_reconnect_wait_ms",
                "The wait before the next connection attempt to PostgreSQL, in ms (0 while connecting works).",
                server.pg_reconnect_wait_ms.load(Relaxed) as f64,
            ),
        ];
        for (name, help, v) in gauges {
            metric(&mut out, name, "gauge", help);
            let _ = writeln!(out, "{name} {v}");
        }
    }
    let server_counters: [(&str, &str, &AtomicU64); 10] = [
        (
            "leasehold_refused_total",
            "Requests refused for their identity (credential, permission, prefix, quota).",
            &server.refused,
        ),
        (
            "leasehold_forwarded_total",
            "Requests forwarded to their shard's owner.",
            &server.forwarded,
        ),
        ("leasehold_unavailable_total", "Requests answered 503.", &server.unavailable),
        (
            "leasehold_forward_timeouts_total",
            "Forwards that failed because the owner did not answer in time.",
            &server.forward_timeouts,
        ),
        ("leasehold_fenced_writes_total", "Store writes refused by fencing.", &server.fenced),
        ("leasehold_shards_acquired_total", "Shards acquired or taken over.", &server.acquired),
        ("leasehold_shards_released_total", "Shards lost or given up.", &server.released),
        ("leasehold_pg_round_trips_total", "Round trips to PostgreSQL.", &server.pg_round_trips),
        (
            "leasehold_pg_connects_total",
            "Connection attempts to PostgreSQL (paced by a backoff after failures).",
            &server.pg_connects,
        ),
        (
            "leasehold_pg_connect_failures_total",
            "Connection attempts to PostgreSQL that failed.",
            &server.pg_connect_failures,
        ),
    ];
    for (name, help, v) in server_counters {
        metric(&mut out, name, "counter", help);
        let _ = writeln!(out, "{name} {}", v.load(Relaxed));
    }
    out
}

/// The renewal-service shards' own metrics (`docs/renewal-service.md`, "Metrics"). The sets
/// gauge is shown for shards served here; counters for every renewal shard ever served here.
fn render_renewal(out: &mut String, shards: &[ShardMetrics]) {
    let known: Vec<(u64, &ServiceStats, bool)> = shards
        .iter()
        .filter(|s| s.renewal)
        .filter_map(|s| {
            s.stats.as_deref().map(|st| (s.id, &st.service, s.state == ShardState::Served))
        })
        .collect();
    let name = "leasehold_renewal_sets";
    metric(out, name, "gauge", "Renewal sets held by a renewal-service shard.");
    for (id, s, served) in &known {
        if *served {
            let _ = writeln!(out, "{name}{{shard=\"{id}\"}} {}", s.sets.load(Relaxed));
        }
    }
    let name = "leasehold_renewal_requests_total";
    metric(
        out,
        name,
        "counter",
        "Requests a renewal-service shard sent to client leases' landlords, by kind (renew, cancel).",
    );
    for (id, s, _) in &known {
        let _ = writeln!(
            out,
            "{name}{{shard=\"{id}\",kind=\"renew\"}} {}",
            s.renew_requests.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "{name}{{shard=\"{id}\",kind=\"cancel\"}} {}",
            s.cancel_requests.load(Relaxed)
        );
    }
    let name = "leasehold_renewal_leases_renewed_total";
    metric(
        out,
        name,
        "counter",
        "Client leases a renewal-service shard renewed with their landlords.",
    );
    for (id, s, _) in &known {
        let _ = writeln!(out, "{name}{{shard=\"{id}\"}} {}", s.leases_renewed.load(Relaxed));
    }
    let name = "leasehold_renewal_failures_total";
    metric(
        out,
        name,
        "counter",
        "Renewal failures of client leases, by kind: definite (the lease was given up: a definite error, or indefinite ones until it would expire), indefinite (no landlord answered; retried), timeout (no answer in time).",
    );
    for (id, s, _) in &known {
        for (kind, v) in [
            ("definite", &s.definite_failures),
            ("indefinite", &s.indefinite_failures),
            ("timeout", &s.timeouts),
        ] {
            let _ = writeln!(out, "{name}{{shard=\"{id}\",kind=\"{kind}\"}} {}", v.load(Relaxed));
        }
    }
    let name = "leasehold_renewal_events_total";
    metric(
        out,
        name,
        "counter",
        "Events of renewal sets, by outcome: queued (handed to delivery), delivered (a listener took it), dropped (not taken in time, no listener URL, or a URL the allow-list refuses), gone (the listener answered 404 or 410: its registration ended).",
    );
    for (id, s, _) in &known {
        for (outcome, v) in [
            ("queued", &s.events_queued),
            ("delivered", &s.events_delivered),
            ("dropped", &s.events_dropped),
            ("gone", &s.listeners_gone),
        ] {
            let _ =
                writeln!(out, "{name}{{shard=\"{id}\",outcome=\"{outcome}\"}} {}", v.load(Relaxed));
        }
    }
}
