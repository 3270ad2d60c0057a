//! Liveness and readiness: what `GET /livez`, `GET /readyz` (and `GET /healthz`) answer.
//!
//! - `/livez` is 200 while the process's runtime answers; it touches neither the store nor
//!   the database (a liveness probe that fails restarts the process, which cures nothing a
//!   database outage causes).
//! - `/readyz` is 200 only when this server can serve every shard of the cluster correctly,
//!   503 otherwise; its body ([`Readiness`], JSON) names every shard's state and why it is
//!   not served. With the file store every shard must be served here. With PostgreSQL the
//!   database must answer, the clock guard must be satisfied, and every shard must be served
//!   here or by a live owner this server can forward to (none unowned, failed or
//!   quarantined): a server that has just started is 503 until that holds.
//! - `/healthz` (kept for old scripts) has `/readyz`'s status with a line of text.

use serde::Serialize;

/// A shard's state, as seen from one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardState {
    /// Served here.
    Served,
    /// Being restored here (taken over, or reopened after a failure).
    TakingOver,
    /// Its store failed; retried with backoff (here, or by its owner).
    Failed,
    /// Its stored state was refused; nobody serves it until an operator repairs and
    /// releases it (`leasehold-server quarantine ...`).
    Quarantined,
    /// Served by another live server, which this one forwards to.
    Elsewhere,
    /// Nobody owns it now (its ownership lease lapsed); a server takes it at its next round.
    Unowned,
}

impl ShardState {
    /// Every state, in the order `/metrics` lists them.
    pub const ALL: [ShardState; 6] = [
        ShardState::Served,
        ShardState::TakingOver,
        ShardState::Failed,
        ShardState::Quarantined,
        ShardState::Elsewhere,
        ShardState::Unowned,
    ];

    /// The name used in `/readyz` and as the `state` label in `/metrics`.
    pub fn label(self) -> &'static str {
        match self {
            ShardState::Served => "served",
            ShardState::TakingOver => "taking_over",
            ShardState::Failed => "failed",
            ShardState::Quarantined => "quarantined",
            ShardState::Elsewhere => "elsewhere",
            ShardState::Unowned => "unowned",
        }
    }
}

/// One shard in `/readyz`.
#[derive(Debug, Clone, Serialize)]
pub struct ShardReport {
    /// Its number (landlord id).
    pub shard: u64,
    /// Its state.
    pub state: ShardState,
    /// The URL of the server that owns it, if any.
    pub owner: Option<String>,
    /// The owner's fencing epoch (PostgreSQL), if owned.
    pub epoch: Option<i64>,
    /// Why it is not served, if it is not.
    pub why: Option<String>,
    /// Whether it counts as served for this server's readiness.
    #[serde(skip)]
    pub ok: bool,
}

/// The database as `/readyz` shows it (PostgreSQL mode).
#[derive(Debug, Clone, Serialize)]
pub struct DbReport {
    /// Whether the last ownership round reached the database.
    pub connected: bool,
    /// The last error, while not connected.
    pub error: Option<String>,
}

/// The clock guard as `/readyz` shows it (PostgreSQL mode).
#[derive(Debug, Clone, Serialize)]
pub struct ClockReport {
    /// This host's clock minus the database's, in ms (last measurement), if measured.
    pub offset_ms: Option<f64>,
    /// How much faster the server's lease clock runs than the database's, in parts per
    /// million, if measured (over the longest window kept).
    pub rate_ppm: Option<f64>,
    /// The bound on the offset (`--max-clock-offset-ms`).
    pub bound_ms: f64,
    /// The bound on the rate (`--max-clock-rate-ppm`).
    pub rate_bound_ppm: f64,
    /// The measurement's uncertainty: half the round trip of the best recent sample, in ms.
    pub uncertainty_ms: Option<f64>,
    /// Whether the guard lets this server serve.
    pub ok: bool,
    /// Why not, if not.
    pub why: Option<String>,
}

/// The body of `/readyz`.
#[derive(Debug, Clone, Serialize)]
pub struct Readiness {
    /// Whether this server can serve every shard of the cluster correctly now.
    pub ready: bool,
    /// This server's name.
    pub server: String,
    /// `files` or `postgres`.
    pub store: &'static str,
    /// The database (PostgreSQL mode only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database: Option<DbReport>,
    /// The clock guard (PostgreSQL mode only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockReport>,
    /// Every shard of the cluster.
    pub shards: Vec<ShardReport>,
    /// The shards not served (here or by a live owner this server forwards to).
    pub unserved: Vec<u64>,
}

impl Readiness {
    /// Builds the report from its parts and decides `ready`.
    pub fn new(
        server: String,
        store: &'static str,
        database: Option<DbReport>,
        clock: Option<ClockReport>,
        shards: Vec<ShardReport>,
    ) -> Readiness {
        let unserved: Vec<u64> = shards.iter().filter(|s| !s.ok).map(|s| s.shard).collect();
        let ready = unserved.is_empty()
            && database.as_ref().is_none_or(|d| d.connected)
            && clock.as_ref().is_none_or(|c| c.ok);
        Readiness { ready, server, store, database, clock, shards, unserved }
    }

    /// One line for `/healthz` and logs.
    pub fn summary(&self) -> String {
        if self.ready {
            let n = self.shards.iter().filter(|s| s.state == ShardState::Served).count();
            return format!("ok: {n} shards served");
        }
        let mut parts = Vec::new();
        if let Some(d) = &self.database {
            if !d.connected {
                parts.push(format!(
                    "database unreachable: {}",
                    d.error.as_deref().unwrap_or("not connected yet")
                ));
            }
        }
        if let Some(c) = &self.clock {
            if !c.ok {
                parts.push(format!("clock: {}", c.why.as_deref().unwrap_or("not measured yet")));
            }
        }
        for s in self.shards.iter().filter(|s| !s.ok) {
            parts.push(format!(
                "shard {} {}{}",
                s.shard,
                s.state.label(),
                s.why.as_ref().map(|w| format!(" ({w})")).unwrap_or_default()
            ));
        }
        format!("not ready: {}", parts.join("; "))
    }
}
