//! Shards in PostgreSQL, shared by several servers.
//!
//! # Tables
//!
//! ```text
//! leasehold_cluster   (id = 1, shards)                          how many shards the cluster has
//! leasehold_servers   (name, url, alive_until)                   servers alive (for a fair share)
//! leasehold_shards    (shard, epoch, owner, owner_url, lease_until,   one ownership lease a shard,
//!                      durable_seq, status, serving,             the last durable record, a failure,
//!                                                                whether its owner serves it yet,
//!                      quarantine, quarantined_at, quarantined_by)    and a quarantine mark
//! leasehold_snapshots (shard, seq, epoch, bytes)                 the shard's latest snapshot
//! leasehold_journal   (shard, first_seq, last_seq, epoch, frame) journal frames after it
//! leasehold_takeovers (shard, epoch, owner, base_seq, at)        history of acquisitions
//! ```
//!
//! # Kinds of shards
//!
//! Landlord shards are `1..=shards`, renewal-service shards follow them
//! (`leasehold_cluster.renewal_shards`), and the discovery shard has its own row at its id
//! (`--discovery-id`, far above them). A server takes only the shards it knows how to run: the
//! numbered ones it read at join, and the discovery shard if it runs the service with that id;
//! a rebalance never hands the discovery shard over (a server that joined may not run it).
//!
//! # Ownership and fencing
//!
//! A server owns a shard through its row in `leasehold_shards`: it holds the row's current
//! `epoch` (the fencing token) and renews `lease_until` on the database's clock (`now()`);
//! nobody else's clock is ever compared. A server takes a shard whose `lease_until` has passed
//! by raising its epoch in the same `UPDATE`, then restores the shard from the snapshot and
//! the journal rows and resumes it (time spent down does not count).
//!
//! Every write of an owner is one statement that locks the shard's row and checks that its
//! epoch is still the row's: a frame append or a snapshot (each of which also records the
//! last durable record in the row's `durable_seq`, in the same statement), or a bare fence
//! check (for replies that wrote nothing). A takeover's `UPDATE` needs the row exclusively,
//! so it waits for writes under way, and every write after it sees the new epoch and is
//! refused: an owner that was paused or cut off can never write after it has been replaced,
//! and it answers nothing it has not confirmed with the database.
//!
//! # Nothing acknowledged vanishes unseen
//!
//! A takeover that restores fewer records than the row's `durable_seq` (a deleted last row),
//! or meets a damaged frame, a gap, a snapshot that does not load, or rows without a snapshot,
//! refuses the shard and quarantines it (the row's `quarantine` columns; see
//! [`crate::quarantine`]): it is logged at ERROR, counted, named in every server's readiness,
//! and no server takes it until an operator releases it.
//!
//! # Healing
//!
//! - Connections are re-made: the ownership loop's control connection at its next round
//!   (with the database's address list tried in order, so a multi-host URL with
//!   `target_session_attrs=read-write` follows a promoted standby), each write connection
//!   before the next write that finds it closed (statements are prepared again). Every
//!   statement has a time-out (`--db-timeout-ms`); a connection whose statement timed out is
//!   dropped. Connection attempts are paced for the whole server (`Reconnect`: 50 ms
//!   doubling to 1 s, with jitter, after a failure), so a database in crash recovery sees no
//!   storm of attempts.
//! - A taken shard counts as served for the other servers' readiness only once its owner
//!   has restored it and says so in its row (`serving`, set after the restore and at every
//!   round), not while it is being restored.
//! - A write that fails leaves its outcome unknown: nothing it carried is acknowledged, the
//!   shard's actor ends, and the owner takes the shard back (a new epoch, restored from the
//!   database) after a backoff (250 ms doubling to 8 s), at once when the database answers
//!   again after an outage. While it waits, the row's `status` says why, for every server's
//!   readiness.
//! - The clock guard ([`crate::guard`]) samples the database's clock on every round; while it
//!   is not satisfied the server owns nothing (it hands its shards back) and does not count
//!   as alive for the fair share.
//! - A forward to an owner that does not answer within `--forward-timeout-ms` gets a 503
//!   with `Retry-After: 1` at once, and that owner is skipped for a moment.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::TokioExecutor;
use leasehold::journal::Journaled;
use leasehold::Encoding;
use tokio_postgres::{Client, NoTls, Statement};

use crate::clock::now_ms;
use crate::guard::{Guard, Sample, Verdict};
use crate::health::{ClockReport, DbReport, ShardReport, ShardState};
use crate::http::{content_type, FORWARDED};
use crate::metrics::ErrorKind;
use crate::shard::{self, Ended, Job, Planner, WriteError, Writer, LL};
use crate::App;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS leasehold_cluster (
    id int PRIMARY KEY CHECK (id = 1),
    shards bigint NOT NULL CHECK (shards > 0));
ALTER TABLE leasehold_cluster ADD COLUMN IF NOT EXISTS renewal_shards bigint NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS leasehold_servers (
    name text PRIMARY KEY,
    url text NOT NULL,
    alive_until timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS leasehold_shards (
    shard bigint PRIMARY KEY,
    epoch bigint NOT NULL DEFAULT 0,
    owner text,
    owner_url text,
    lease_until timestamptz NOT NULL DEFAULT '-infinity');
ALTER TABLE leasehold_shards ADD COLUMN IF NOT EXISTS durable_seq bigint NOT NULL DEFAULT 0;
ALTER TABLE leasehold_shards ADD COLUMN IF NOT EXISTS status text;
ALTER TABLE leasehold_shards ADD COLUMN IF NOT EXISTS quarantine text;
ALTER TABLE leasehold_shards ADD COLUMN IF NOT EXISTS quarantined_at timestamptz;
ALTER TABLE leasehold_shards ADD COLUMN IF NOT EXISTS quarantined_by text;
ALTER TABLE leasehold_shards ADD COLUMN IF NOT EXISTS clock_local float8;
ALTER TABLE leasehold_shards ADD COLUMN IF NOT EXISTS clock_db timestamptz;
ALTER TABLE leasehold_shards ADD COLUMN IF NOT EXISTS serving boolean NOT NULL DEFAULT false;
CREATE TABLE IF NOT EXISTS leasehold_snapshots (
    shard bigint PRIMARY KEY,
    seq bigint NOT NULL,
    epoch bigint NOT NULL,
    bytes bytea NOT NULL);
CREATE TABLE IF NOT EXISTS leasehold_journal (
    shard bigint NOT NULL,
    first_seq bigint NOT NULL,
    last_seq bigint NOT NULL,
    epoch bigint NOT NULL,
    frame bytea NOT NULL,
    PRIMARY KEY (shard, first_seq));
CREATE TABLE IF NOT EXISTS leasehold_takeovers (
    shard bigint NOT NULL,
    epoch bigint NOT NULL,
    owner text NOT NULL,
    base_seq bigint NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (shard, epoch));
";

/// The clock check of every write: how far the writer's lease clock (`$mono`, ms, read just
/// before sending) has run ahead of the database's clock since this owner took the shard
/// (`clock_local`, `clock_db`, set by the takeover). NULL (no baseline) passes.
macro_rules! drift {
    ($mono:literal) => {
        concat!(
            "((",
            $mono,
            "::float8 - clock_local) - extract(epoch FROM clock_timestamp() - clock_db) * 1000)"
        )
    };
}

/// Appends a frame and records its last record as durable, if (and only if) `$2` is still
/// the shard's epoch (the `UPDATE` locks the row; a takeover waits for it, or is seen) and the
/// writer's lease clock has not run more than `$7` ms ahead of the database's since it took
/// the shard (`$6`: its lease clock now).
const APPEND: &str = concat!(
    "WITH owner AS (
    UPDATE leasehold_shards SET durable_seq = $4
    WHERE shard = $1 AND epoch = $2 AND (clock_local IS NULL OR ",
    drift!("$6"),
    " <= $7::float8)
    RETURNING 1)
INSERT INTO leasehold_journal (shard, first_seq, last_seq, epoch, frame)
SELECT $1, $3, $4, $2, $5 FROM owner"
);

/// Replaces the snapshot, drops the frames it covers and records its last record as
/// durable, on the same conditions as [`APPEND`] (`$5`: lease clock, `$6`: bound).
const SNAPSHOT: &str = concat!(
    "WITH owner AS (
    UPDATE leasehold_shards SET durable_seq = $3
    WHERE shard = $1 AND epoch = $2 AND (clock_local IS NULL OR ",
    drift!("$5"),
    " <= $6::float8)
    RETURNING 1),
snap AS (
    INSERT INTO leasehold_snapshots (shard, seq, epoch, bytes)
    SELECT $1, $3, $2, $4 FROM owner
    ON CONFLICT (shard) DO UPDATE SET seq = EXCLUDED.seq, epoch = EXCLUDED.epoch, bytes = EXCLUDED.bytes
    RETURNING 1),
dropped AS (
    DELETE FROM leasehold_journal
    WHERE shard = $1 AND last_seq <= $3 AND EXISTS (SELECT 1 FROM snap))
SELECT count(*) FROM snap"
);

/// The shard's epoch, and how far the lease clock `$2` has run ahead of the database's since
/// the owner took the shard (0 without a baseline).
const FENCE: &str =
    concat!("SELECT epoch, coalesce(", drift!("$2"), ", 0) FROM leasehold_shards WHERE shard = $1");

/// The database's URL as a connection configuration: a connect time-out of 3 s per host
/// unless the URL sets one, and an application name.
fn pg_config(url: &str) -> Result<(tokio_postgres::Config, crate::tls::PgTlsMode), String> {
    let (plain, tls) = crate::tls::pg_url_tls(url).map_err(|e| format!("--store: {e}"))?;
    let mut config: tokio_postgres::Config =
        plain.parse().map_err(|e| format!("--store {url:?}: {e}"))?;
    config.ssl_mode(match tls.mode.as_str() {
        "disable" => tokio_postgres::config::SslMode::Disable,
        "prefer" => tokio_postgres::config::SslMode::Prefer,
        _ => tokio_postgres::config::SslMode::Require,
    });
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(3));
    }
    if config.get_application_name().is_none() {
        config.application_name("leasehold-server");
    }
    Ok((config, tls))
}

/// Checks that `url` parses as a PostgreSQL URL (a typo is an error at start, not a retry).
pub fn check_url(url: &str) -> Result<(), String> {
    pg_config(url).map(|_| ())
}

/// Opens a connection (trying the URL's hosts in order).
pub(crate) async fn connect(url: &str) -> Result<Client, String> {
    let (config, tls) = pg_config(url)?;
    // TLS as the URL's sslmode says (libpq's names; sslrootcert for the verify modes).
    if tls.mode == "disable" {
        let (client, connection) =
            config.connect(NoTls).await.map_err(|e| format!("PostgreSQL: {}", e.text()))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "PostgreSQL connection ended");
            }
        });
        return Ok(client);
    }
    let connector = crate::tls::PgTls::new(&tls)?;
    let (client, connection) =
        config.connect(connector).await.map_err(|e| format!("PostgreSQL: {}", e.text()))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "PostgreSQL connection ended");
        }
    });
    Ok(client)
}

/// An error as one line, with its causes (tokio-postgres says only "db error" and keeps the
/// server's message in the source).
pub(crate) trait ErrorText {
    /// The text.
    fn text(&self) -> String;
}

impl ErrorText for String {
    fn text(&self) -> String {
        self.clone()
    }
}

impl ErrorText for tokio_postgres::Error {
    fn text(&self) -> String {
        let mut out = self.to_string();
        let mut src = std::error::Error::source(self);
        while let Some(e) = src {
            out.push_str(": ");
            out.push_str(&e.to_string());
            src = e.source();
        }
        out
    }
}

/// Runs `f` with a time-out; the error says what timed out.
async fn within<T, E: ErrorText>(
    limit: Duration,
    what: &str,
    f: impl Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r.map_err(|e| e.text()),
        Err(_) => Err(format!("{what} timed out after {} ms", limit.as_millis())),
    }
}

/// The wait before the next connection attempt after `failures` failed ones in a row: 50 ms
/// doubling up to 1 s, within ±10 % (jitter, so that servers that lost the database together
/// do not all knock at once when it comes back).
pub(crate) fn reconnect_backoff(failures: u32) -> Duration {
    let base = 50u64.saturating_mul(1 << failures.saturating_sub(1).min(5)).min(1_000);
    let mut r = [0u8; 2];
    let _ = getrandom::fill(&mut r);
    let jitter = u64::from(u16::from_le_bytes(r)) * base / 5 / 65_536;
    Duration::from_millis(base - base / 10 + jitter)
}

/// Paces every connection attempt of one server to PostgreSQL (the ownership loop's control
/// connection and the write connections alike): after a failed attempt, no new one starts
/// until its backoff ([`reconnect_backoff`]) has passed; callers meanwhile fail at once with
/// the last error. A database in crash recovery (which refuses connections with "the
/// database system is starting up") then sees a few attempts a second from each server, not
/// a storm. Attempts and failures are counted (`leasehold_pg_connects_total`,
/// `leasehold_pg_connect_failures_total`); the log says when connecting starts failing and
/// when it works again (each attempt only at DEBUG).
pub(crate) struct Reconnect {
    app: Weak<App>,
    pace: Mutex<Pace>,
}

struct Pace {
    /// Failed attempts in a row.
    failures: u32,
    /// No attempt before this (while `failures > 0`).
    next_at: Instant,
    /// When the first failure of this run was.
    since: Instant,
    /// The last attempt's error.
    last: String,
}

impl Reconnect {
    fn new(app: Weak<App>) -> Reconnect {
        let now = Instant::now();
        Reconnect {
            app,
            pace: Mutex::new(Pace { failures: 0, next_at: now, since: now, last: String::new() }),
        }
    }

    fn pace(&self) -> std::sync::MutexGuard<'_, Pace> {
        self.pace.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How long until the next attempt may start (zero when connecting works).
    fn remaining(&self) -> Duration {
        let p = self.pace();
        if p.failures == 0 {
            return Duration::ZERO;
        }
        p.next_at.saturating_duration_since(Instant::now())
    }

    /// Runs `open` (a connection attempt) if the backoff allows one now; otherwise fails at
    /// once with the last attempt's error.
    async fn attempt<T>(&self, open: impl Future<Output = Result<T, String>>) -> Result<T, String> {
        {
            let mut p = self.pace();
            let now = Instant::now();
            if p.failures > 0 {
                if now < p.next_at {
                    return Err(format!(
                        "{} (next connection attempt in {} ms)",
                        p.last,
                        (p.next_at - now).as_millis()
                    ));
                }
                // Taken: other callers wait for this attempt's outcome at the same pace.
                p.next_at = now + reconnect_backoff(p.failures);
            }
        }
        let stats = self.app.upgrade();
        if let Some(a) = &stats {
            a.stats.pg_connects.fetch_add(1, Relaxed);
        }
        let r = open.await;
        let mut p = self.pace();
        match &r {
            Ok(_) => {
                if p.failures > 0 {
                    tracing::warn!(
                        failed_attempts = p.failures,
                        ms = p.since.elapsed().as_millis() as u64,
                        "connected to PostgreSQL again"
                    );
                }
                p.failures = 0;
                if let Some(a) = &stats {
                    a.stats.pg_reconnect_wait_ms.store(0, Relaxed);
                }
            }
            Err(e) => {
                let now = Instant::now();
                if let Some(a) = &stats {
                    a.stats.pg_connect_failures.fetch_add(1, Relaxed);
                }
                if p.failures == 0 {
                    p.since = now;
                    tracing::warn!(
                        error = %e,
                        "cannot connect to PostgreSQL; retrying with backoff (50 ms doubling to 1 s)"
                    );
                } else {
                    tracing::debug!(error = %e, failures = p.failures + 1, "PostgreSQL connection attempt failed");
                }
                p.failures = p.failures.saturating_add(1);
                let wait = reconnect_backoff(p.failures);
                p.next_at = now + wait;
                p.last = e.clone();
                if let Some(a) = &stats {
                    a.stats.pg_reconnect_wait_ms.store(wait.as_millis() as u64, Relaxed);
                }
            }
        }
        r
    }
}

/// One connection with its statements prepared (one round trip per write).
struct Conn {
    client: Client,
    append: Statement,
    snapshot: Statement,
    fence: Statement,
}

impl Conn {
    async fn open(url: &str) -> Result<Conn, String> {
        let client = connect(url).await?;
        let prep = |sql: &'static str| {
            let c = &client;
            async move { c.prepare(sql).await.map_err(|e| format!("prepare: {}", e.text())) }
        };
        let append = prep(APPEND).await?;
        let snapshot = prep(SNAPSHOT).await?;
        let fence = prep(FENCE).await?;
        Ok(Conn { client, append, snapshot, fence })
    }
}

/// Connections for shard writes (statements are pipelined on each), each re-made (and its
/// statements prepared again) when found closed.
struct Pool {
    url: String,
    timeout: Duration,
    slots: Vec<tokio::sync::Mutex<Option<Arc<Conn>>>>,
    /// Paces connection attempts (shared with the control connection).
    reconnect: Reconnect,
}

impl Pool {
    async fn get(&self, i: usize) -> Result<Arc<Conn>, String> {
        let mut slot = self.slots[i % self.slots.len()].lock().await;
        if let Some(c) = slot.as_ref().filter(|c| !c.client.is_closed()) {
            return Ok(c.clone());
        }
        *slot = None;
        let open = within(self.timeout, "connecting", Conn::open(&self.url));
        let c = Arc::new(self.reconnect.attempt(open).await?);
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Drops `conn` from its slot (a statement on it timed out: its state is unknown).
    async fn discard(&self, i: usize, conn: &Arc<Conn>) {
        let mut slot = self.slots[i % self.slots.len()].lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            *slot = None;
        }
    }
}

/// Writes one shard's frames and snapshots, fenced by its epoch.
pub struct PgWriter {
    pool: Arc<Pool>,
    shard: i64,
    epoch: i64,
    app: Weak<App>,
    /// How far the lease clock may run ahead of the database's since the takeover, ms.
    drift_bound: f64,
}

impl PgWriter {
    fn trip(&self) {
        if let Some(app) = self.app.upgrade() {
            app.stats.pg_round_trips.fetch_add(1, Relaxed);
        }
    }

    async fn run(
        &self,
        frame: Option<(Vec<u8>, u64, u64)>,
        snapshot: Option<(Vec<u8>, u64)>,
    ) -> Result<(), WriteError> {
        let slot = self.shard as usize;
        let snapshot_or_frame = snapshot.is_some() || frame.is_some();
        let c = self.pool.get(slot).await.map_err(WriteError::Failed)?;
        let limit = self.pool.timeout;
        self.trip();
        let bound = self.drift_bound;
        let r = tokio::time::timeout(limit, async {
            let mono = crate::clock::mono_ms();
            let done = if let Some((bytes, seq)) = snapshot {
                // The snapshot includes every record of the frame too.
                let row = c
                    .client
                    .query_one(
                        &c.snapshot,
                        &[&self.shard, &self.epoch, &(seq as i64), &bytes, &mono, &bound],
                    )
                    .await
                    .map_err(refused)?;
                row.get::<_, i64>(0) == 1
            } else if let Some((bytes, first, last)) = frame {
                let n = c
                    .client
                    .execute(
                        &c.append,
                        &[
                            &self.shard,
                            &self.epoch,
                            &(first as i64),
                            &(last as i64),
                            &bytes,
                            &mono,
                            &bound,
                        ],
                    )
                    .await
                    .map_err(refused)?;
                n == 1
            } else {
                false
            };
            if done {
                return Ok(());
            }
            // A bare fence check, or a write that was refused: fenced, or a clock fault?
            let row = c
                .client
                .query_opt(&c.fence, &[&self.shard, &crate::clock::mono_ms()])
                .await
                .map_err(|e| WriteError::Failed(e.text()))?;
            let Some(row) = row else { return Err(WriteError::Fenced) };
            let (epoch, drift): (i64, f64) = (row.get(0), row.get(1));
            if epoch != self.epoch {
                return Err(WriteError::Fenced);
            }
            if drift > bound {
                let why = format!(
                    "refused: this server's lease clock ran {drift:.0} ms ahead of the database's \
                     since it took the shard (bound {bound:.0} ms)"
                );
                if let Some(cluster) = self.app.upgrade().and_then(|a| a.cluster()) {
                    cluster.clock_fault(&why);
                }
                return Err(WriteError::Failed(why));
            }
            if snapshot_or_frame {
                // Refused although the epoch and the clock are fine now: treat as unknown.
                return Err(WriteError::Failed("the write was refused; not acknowledged".into()));
            }
            Ok(())
        })
        .await;
        match r {
            Ok(r) => r,
            Err(_) => {
                self.pool.discard(slot, &c).await;
                Err(WriteError::Failed(format!(
                    "no answer from PostgreSQL within {} ms",
                    limit.as_millis()
                )))
            }
        }
    }
}

fn refused(e: tokio_postgres::Error) -> WriteError {
    // Another owner already wrote this record number: we are not the owner any more.
    if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) {
        WriteError::Fenced
    } else {
        WriteError::Failed(e.text())
    }
}

impl Writer for PgWriter {
    fn write(
        &mut self,
        job: Job,
    ) -> Pin<Box<dyn Future<Output = Result<(), WriteError>> + Send + '_>> {
        Box::pin(async move {
            let Job::Rows { frame, snapshot } = job else {
                return Err(WriteError::Failed("PostgreSQL was handed file operations".into()));
            };
            self.run(frame, snapshot).await
        })
    }
}

/// One shard's row as the last ownership round saw it.
#[derive(Debug, Clone)]
struct RowView {
    epoch: i64,
    owner: Option<String>,
    owner_url: Option<String>,
    live: bool,
    status: Option<String>,
    quarantine: Option<String>,
    /// Whether its owner says it serves it (it has restored it and answers for it): a live
    /// owner that is still restoring a shard does not count as serving it.
    serving: bool,
}

fn row_view(r: &tokio_postgres::Row) -> (u64, RowView) {
    (
        r.get::<_, i64>(0) as u64,
        RowView {
            epoch: r.get(1),
            owner: r.get(2),
            owner_url: r.get(3),
            live: r.get(4),
            status: r.get(5),
            quarantine: r.get(6),
            serving: r.get(7),
        },
    )
}

struct State {
    /// Shards this server owns and serves, with their epochs.
    owned: BTreeMap<u64, i64>,
    /// Every shard's row, as of the last round.
    view: BTreeMap<u64, RowView>,
    /// Owners that did not answer a forward, until when they are skipped.
    suspects: BTreeMap<String, Instant>,
}

/// The database as the ownership loop last found it.
struct Db {
    connected: bool,
    error: Option<String>,
}

/// Why a takeover did not end with the shard served.
enum TakeError {
    /// The database failed (or timed out): try again.
    Transient(String),
    /// The stored state is refused: quarantine.
    Damaged(String),
}

/// A shard without a snapshot must have nothing else stored either: its first snapshot holds
/// `seed` (what every later journal frame replays onto), so journal rows or a durable record
/// without one mean the stored state is damaged.
async fn no_state_yet(
    db: &Client,
    long: Duration,
    id: u64,
    durable: u64,
    seed: &str,
) -> Result<(), TakeError> {
    let n: i64 = within(
        long,
        "counting journal rows",
        db.query_one("SELECT count(*) FROM leasehold_journal WHERE shard = $1", &[&(id as i64)]),
    )
    .await
    .map_err(TakeError::Transient)?
    .get(0);
    if n > 0 {
        return Err(TakeError::Damaged(format!(
            "{n} journal rows but no snapshot (it holds {seed})"
        )));
    }
    if durable > 0 {
        return Err(TakeError::Damaged(format!(
            "no snapshot and no journal rows, but record {durable} was durable"
        )));
    }
    Ok(())
}

/// A shard's state as a take restored it: with its write planner, the journal records
/// replayed onto its snapshot, whether it was created new, and its last record.
struct Restored<S> {
    state: S,
    planner: Planner,
    replayed: u64,
    created: bool,
    last: u64,
}

/// What a take has read before it restores the shard's state: the shard, the last record
/// that was durable, the snapshot row (if any), and how the state will be written.
struct Taking<'a> {
    db: &'a Client,
    /// How long reading the journal may take.
    long: Duration,
    id: u64,
    durable: u64,
    snap: Option<tokio_postgres::Row>,
    writer: &'a PgWriter,
    min_compact_bytes: u64,
}

/// Restores a shard's state for a take (`t`). From its snapshot row (seq, bytes) and the
/// journal rows after it: `recover` makes the state of the snapshot's bytes and the journal's
/// (a torn tail is refused here), and `check` says whether it is this shard's. With no
/// snapshot row (and nothing else stored, see [`no_state_yet`], which names `seed`): `create`
/// makes a new state, which is resumed and its first snapshot written before anything else,
/// so that every later frame replays onto it. Either way, a journal that ends before the
/// record that was durable is refused.
async fn restore<S: Journaled>(
    t: Taking<'_>,
    seed: &str,
    recover: impl FnOnce(&[u8], &[u8]) -> Result<(S, leasehold::journal::Recovered), TakeError>,
    check: impl FnOnce(&S) -> Result<(), TakeError>,
    create: impl FnOnce() -> Result<S, TakeError>,
) -> Result<Restored<S>, TakeError> {
    let Taking { db, long, id, durable, snap, writer, min_compact_bytes } = t;
    let (state, planner, replayed, created) = match snap {
        None => {
            no_state_yet(db, long, id, durable, seed).await?;
            let mut state = create()?;
            state.resume(now_ms());
            let mut bytes = Vec::new();
            let seq = state.snapshot_bytes(&mut bytes);
            let snapshot_bytes = bytes.len() as u64;
            writer
                .run(None, Some((bytes, seq)))
                .await
                .map_err(|e| TakeError::Transient(format!("first snapshot: {e:?}")))?;
            (state, Planner::Rows { log_bytes: 0, snapshot_bytes, min_compact_bytes }, 0, true)
        }
        Some(row) => {
            let seq: i64 = row.get(0);
            let bytes: Vec<u8> = row.get(1);
            let frames = within(long, "reading the journal", db.query(
                "SELECT frame FROM leasehold_journal WHERE shard = $1 AND last_seq > $2 ORDER BY first_seq",
                &[&(id as i64), &seq],
            ))
            .await
            .map_err(TakeError::Transient)?;
            let mut log = Vec::new();
            for f in &frames {
                log.extend_from_slice(f.get::<_, &[u8]>(0));
            }
            let (state, rec) = recover(&bytes, &log)?;
            if let Some((_, _, why)) = rec.torn {
                return Err(TakeError::Damaged(format!("journal rows are damaged: {why}")));
            }
            check(&state)?;
            let planner = Planner::Rows {
                log_bytes: log.len() as u64,
                snapshot_bytes: bytes.len() as u64,
                min_compact_bytes,
            };
            (state, planner, rec.replayed, false)
        }
    };
    let last = state.journal_seq();
    if last < durable {
        return Err(TakeError::Damaged(format!(
            "records {}..={durable} are missing: the journal ends at record {last}, but record \
             {durable} was durable (a deleted journal row)",
            last + 1
        )));
    }
    Ok(Restored { state, planner, replayed, created, last })
}

/// A restore's refusal of the stored state.
fn restore_refused(e: leasehold::LeaseError) -> TakeError {
    TakeError::Damaged(format!("restore refused: {e}"))
}

/// Refuses a restored service that holds another id than shard `id` (`what`: the kind).
fn check_id(held: leasehold::LandlordId, id: u64, what: &str) -> Result<(), TakeError> {
    if held != leasehold::LandlordId(id) {
        return Err(TakeError::Damaged(format!("holds {what} {}, not shard {id}", held.0)));
    }
    Ok(())
}

/// This server's part in a cluster of servers sharing one PostgreSQL.
pub struct Cluster {
    app: Weak<App>,
    url: String,
    /// The name in ownership rows: unique to this process (a restarted server is a new owner).
    instance: String,
    pool: Arc<Pool>,
    control: tokio::sync::Mutex<Option<Client>>,
    state: Mutex<State>,
    db: Mutex<Db>,
    guard: Mutex<Guard>,
    http: HttpClient<crate::tls::PeerConnector, Full<Bytes>>,
    stop: tokio::sync::watch::Sender<bool>,
    ticker: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// Connections for shard writes.
const WRITE_CONNS: usize = 4;

impl Cluster {
    /// Connects, creates (or upgrades) the tables, registers this server, and starts the
    /// ownership loop (renew what it owns, take lapsed shards up to a fair share, forward).
    /// Fails only if the database cannot be reached at start.
    pub async fn start(app: Arc<App>, url: &str) -> Result<Arc<Cluster>, String> {
        let limit = Duration::from_millis(app.config.db_timeout_ms);
        let mut control = within(limit * 3, "connecting to PostgreSQL", connect(url)).await?;
        let shards = within(limit * 3, "creating the tables", async {
            let tx = control.transaction().await.map_err(|e| e.text())?;
            tx.execute("SELECT pg_advisory_xact_lock(7420)", &[])
                .await
                .map_err(|e| e.text())?;
            tx.batch_execute(SCHEMA).await.map_err(|e| format!("schema: {}", e.text()))?;
            tx.execute(
                "INSERT INTO leasehold_cluster (id, shards) VALUES (1, $1) ON CONFLICT DO NOTHING",
                &[&(app.config.shards as i64)],
            )
            .await
            .map_err(|e| e.text())?;
            // Renewal-service shards follow the landlords (ids shards+1..): the cluster has
            // as many as any server asked for (fewer would drop the sets of the others).
            let row = tx
                .query_one(
                    "UPDATE leasehold_cluster SET renewal_shards = greatest(renewal_shards, $1)
                     WHERE id = 1 RETURNING shards, renewal_shards",
                    &[&(app.config.renewal_shards as i64)],
                )
                .await
                .map_err(|e| e.text())?;
            let (shards, renewal): (i64, i64) = (row.get(0), row.get(1));
            tx.execute(
                "INSERT INTO leasehold_shards (shard) SELECT generate_series(1, $1::bigint) ON CONFLICT DO NOTHING",
                &[&(shards + renewal)],
            )
            .await
            .map_err(|e| e.text())?;
            // The discovery shard (--discovery-port): its own row, at its id, kept outside
            // the numbering of the others (checked here against the cluster's numbers,
            // which may be larger than this server's flags).
            if let Some(id) = app.discovery_id() {
                if id <= (shards + renewal) as u64 {
                    return Err(format!(
                        "--discovery-id {id} is one of the cluster's landlord and renewal-service                          shards (1 to {}): give an id above them",
                        shards + renewal
                    ));
                }
                tx.execute(
                    "INSERT INTO leasehold_shards (shard) VALUES ($1) ON CONFLICT DO NOTHING",
                    &[&(id as i64)],
                )
                .await
                .map_err(|e| e.text())?;
            }
            tx.commit().await.map_err(|e| e.text())?;
            Ok::<(i64, i64), String>((shards, renewal))
        })
        .await?;
        let (shards, renewal) = shards;
        if shards as u64 != app.config.shards {
            tracing::info!(
                cluster = shards,
                flag = app.config.shards,
                "the cluster's shard count wins"
            );
        }
        if renewal as u64 != app.config.renewal_shards {
            tracing::info!(
                cluster = renewal,
                flag = app.config.renewal_shards,
                "the cluster's renewal-service shard count wins"
            );
        }
        app.shard_count.store(shards as u64, Relaxed);
        app.renewal_count.store(renewal as u64, Relaxed);
        let pool = Arc::new(Pool {
            url: url.to_string(),
            timeout: limit,
            slots: (0..WRITE_CONNS).map(|_| tokio::sync::Mutex::new(None)).collect(),
            reconnect: Reconnect::new(Arc::downgrade(&app)),
        });
        let mut suffix = [0u8; 4];
        getrandom::fill(&mut suffix).map_err(|e| e.to_string())?;
        let instance = format!("{}#{:08x}", app.config.name, u32::from_le_bytes(suffix));
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let c = &app.config;
        let cluster = Arc::new(Cluster {
            app: Arc::downgrade(&app),
            url: url.to_string(),
            instance,
            pool,
            control: tokio::sync::Mutex::new(Some(control)),
            state: Mutex::new(State {
                owned: BTreeMap::new(),
                view: BTreeMap::new(),
                suspects: BTreeMap::new(),
            }),
            db: Mutex::new(Db { connected: true, error: None }),
            guard: Mutex::new(Guard::new(
                c.max_clock_offset_ms as f64,
                c.max_clock_rate_ppm as f64,
            )),
            http: HttpClient::builder(TokioExecutor::new())
                .build(crate::tls::peer_connector(&app.config.security)?),
            stop,
            ticker: Mutex::new(None),
        });
        tracing::info!(instance = %cluster.instance, shards, renewal_shards = renewal, "joined the cluster");
        let c = cluster.clone();
        let task = tokio::spawn(async move { c.ownership_loop(stop_rx).await });
        *cluster.ticker.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
        Ok(cluster)
    }

    fn ttl(&self) -> Duration {
        Duration::from_millis(self.app.upgrade().map_or(3000, |a| a.config.ownership_ms))
    }

    fn limit(&self) -> Duration {
        self.pool.timeout
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Told by the app when a shard's actor ended (a failed one is already recorded as failed
    /// there, and is taken back by the ownership loop).
    pub fn shard_ended(&self, id: u64, ended: &Ended) {
        self.lock().owned.remove(&id);
        if matches!(ended, Ended::Fenced) {
            if let Some(app) = self.app.upgrade() {
                app.clear_local(id);
            }
        }
    }

    /// The database as `/readyz` shows it.
    pub fn db_report(&self) -> DbReport {
        let db = self.db.lock().unwrap_or_else(|p| p.into_inner());
        DbReport { connected: db.connected, error: db.error.clone() }
    }

    /// The clock guard as `/readyz` shows it.
    pub fn clock_report(&self) -> ClockReport {
        self.guard.lock().unwrap_or_else(|p| p.into_inner()).report()
    }

    /// A write found this server's lease clock too far ahead of the database's: the guard
    /// trips at once (the next round hands every shard back).
    pub(crate) fn clock_fault(&self, why: &str) {
        let mut g = self.guard.lock().unwrap_or_else(|p| p.into_inner());
        if g.fault(why) {
            tracing::error!(
                reason = why,
                "clock guard: a write found this server's clock beyond its bound; it hands its \
                 shards back and serves nothing until the clock is back within bound"
            );
        }
    }

    fn clock_ok(&self) -> bool {
        self.guard.lock().unwrap_or_else(|p| p.into_inner()).ok()
    }

    /// Every shard as this server sees it (its own actors, its failures, and the rows as of
    /// the last ownership round).
    pub fn shard_reports(&self) -> Vec<ShardReport> {
        let Some(app) = self.app.upgrade() else { return Vec::new() };
        let me = app.config.advertise.clone();
        let s = self.lock();
        let now = Instant::now();
        app.all_ids()
            .into_iter()
            .map(|id| {
                let row = s.view.get(&id);
                let report = |state, owner: Option<String>, why: Option<String>, ok| ShardReport {
                    shard: id,
                    state,
                    owner,
                    epoch: row.map(|r| r.epoch),
                    why,
                    ok,
                };
                if let (true, Some(&epoch)) = (app.serves(id), s.owned.get(&id)) {
                    let mut r = report(ShardState::Served, Some(me.clone()), None, true);
                    r.epoch = Some(epoch);
                    return r;
                }
                if let Some(l) = app.local(id) {
                    let owner = (l.state != ShardState::Quarantined).then(|| me.clone());
                    return report(l.state, owner, Some(l.why), false);
                }
                let Some(row) = row else {
                    return report(ShardState::Unowned, None, Some("not seen yet".into()), false);
                };
                if let Some(q) = &row.quarantine {
                    return report(ShardState::Quarantined, None, Some(q.clone()), false);
                }
                if !row.live {
                    let why = "no live owner: taken at the next ownership round".to_string();
                    return report(ShardState::Unowned, None, Some(why), false);
                }
                if row.owner.as_deref() == Some(self.instance.as_str()) {
                    let why = "owned here, not served yet".to_string();
                    return report(ShardState::TakingOver, Some(me.clone()), Some(why), false);
                }
                if let Some(st) = &row.status {
                    return report(
                        ShardState::Failed,
                        row.owner_url.clone(),
                        Some(st.clone()),
                        false,
                    );
                }
                if !row.serving {
                    // Taken, but its owner has not said it serves it yet (it is restoring it):
                    // requests for it would get 503 from the owner.
                    let why = "its owner is restoring it (not serving it yet)".to_string();
                    return report(ShardState::TakingOver, row.owner_url.clone(), Some(why), false);
                }
                match &row.owner_url {
                    Some(url) if s.suspects.get(url).is_some_and(|&t| t > now) => report(
                        ShardState::Elsewhere,
                        Some(url.clone()),
                        Some("its owner did not answer a forward in time".into()),
                        false,
                    ),
                    Some(url) => report(ShardState::Elsewhere, Some(url.clone()), None, true),
                    None => report(ShardState::Unowned, None, Some("owner unknown".into()), false),
                }
            })
            .collect()
    }

    /// The control connection, made again if it was lost. Returns whether it was re-made.
    async fn control(&self) -> Result<tokio::sync::MutexGuard<'_, Option<Client>>, String> {
        let mut c = self.control.lock().await;
        if c.as_ref().is_some_and(|c| !c.is_closed()) {
            return Ok(c);
        }
        *c = None;
        let open = within(self.limit(), "connecting", connect(&self.url));
        *c = Some(self.pool.reconnect.attempt(open).await?);
        Ok(c)
    }

    async fn ownership_loop(self: Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
        let period = self.ttl() / 3;
        let mut first = true;
        loop {
            let r = self.tick(first).await;
            let back = {
                let mut db = self.db.lock().unwrap_or_else(|p| p.into_inner());
                match &r {
                    Ok(()) => {
                        let back = !db.connected;
                        if back {
                            tracing::warn!("PostgreSQL answers again");
                        }
                        db.connected = true;
                        db.error = None;
                        back
                    }
                    Err(e) => {
                        if db.connected {
                            tracing::error!(error = %e, "PostgreSQL does not answer: shards are not served until it does");
                        }
                        db.connected = false;
                        db.error = Some(e.clone());
                        false
                    }
                }
            };
            if r.is_err() {
                // Whatever state the control connection is in, make a new one next time.
                *self.control.lock().await = None;
            }
            if r.is_ok() {
                first = false;
            }
            if back {
                // The store answers again: take failed shards back now, not after their backoff.
                if let Some(app) = self.app.upgrade() {
                    app.retry_failed_now();
                }
            }
            let mut next =
                self.next_retry().map_or(period, |d| d.clamp(Duration::from_millis(20), period));
            if r.is_err() {
                // No round before the next connection attempt may start.
                next = next.max(self.pool.reconnect.remaining()).min(period);
            }
            tokio::select! {
                _ = tokio::time::sleep(if back { Duration::ZERO } else { next }) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// The time until the next failed shard of ours is due, if any.
    fn next_retry(&self) -> Option<Duration> {
        let app = self.app.upgrade()?;
        let now = Instant::now();
        app.all_ids()
            .into_iter()
            .filter_map(|id| app.local(id))
            .filter(|l| l.state == ShardState::Failed)
            .map(|l| l.retry_at.saturating_duration_since(now))
            .min()
    }

    /// Measures the database's clock against ours and updates the guard.
    async fn sample_clock(&self, db: &Client) -> Result<(), String> {
        let wall =
            || SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64() * 1e3;
        let mono = || crate::clock::mono_ms();
        // The round trip is measured on the lease clock itself, from before the first reading
        // to after the last, so that any delay (a busy runtime, a descheduled thread) counts
        // in the uncertainty.
        let m0 = mono();
        let w0 = wall();
        let row = within(
            self.limit(),
            "reading the database's clock",
            db.query_one("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8", &[]),
        )
        .await?;
        let w1 = wall();
        let m1 = mono();
        let sample = Sample {
            mono_ms: (m0 + m1) / 2.0,
            wall_ms: (w0 + w1) / 2.0,
            db_ms: row.get(0),
            rtt_ms: m1 - m0,
        };
        let mut g = self.guard.lock().unwrap_or_else(|p| p.into_inner());
        match g.observe(sample) {
            Some(Verdict::Beyond) => tracing::error!(
                reason = g.why().unwrap_or(""),
                "clock guard: this server's clock is beyond its bound; it hands its shards back and \
                 serves nothing until the clock is back within bound"
            ),
            Some(Verdict::Within) => {
                tracing::warn!(report = ?g.report(), "clock guard: the clock is within bound; serving")
            }
            _ => {}
        }
        Ok(())
    }

    /// One round: clock sample, heartbeat, renew owned shards, learn every row, publish
    /// failures, take lapsed shards up to a fair share (and our failed ones back), give one
    /// away if above it.
    async fn tick(&self, first: bool) -> Result<(), String> {
        let Some(app) = self.app.upgrade() else { return Ok(()) };
        let guard = self.control().await?;
        let db = guard.as_ref().expect("connected");
        let ttl_ms = self.ttl().as_millis() as f64;
        let limit = self.limit();
        self.sample_clock(db).await?;
        let clock_ok = self.clock_ok();
        if !clock_ok {
            return self.stand_down(&app, db).await;
        }
        within(limit, "heartbeat", db.execute(
            "INSERT INTO leasehold_servers (name, url, alive_until)
             VALUES ($1, $2, now() + make_interval(secs => $3::float8 / 1000))
             ON CONFLICT (name) DO UPDATE SET url = EXCLUDED.url, alive_until = EXCLUDED.alive_until",
            &[&self.instance, &app.config.advertise, &ttl_ms],
        ))
        .await?;
        // Renew every shard still ours (served, or failed and waiting to be taken back); any
        // missing is lost (another server took it). The row says which of them this server
        // really serves now (other servers count a shard as served only then).
        let serving: Vec<i64> = {
            let s = self.lock();
            s.owned.keys().filter(|id| app.serves(**id)).map(|id| *id as i64).collect()
        };
        let rows = within(limit, "renewing", db.query(
            "UPDATE leasehold_shards SET lease_until = now() + make_interval(secs => $2::float8 / 1000),
                 serving = (shard = ANY($3::bigint[]))
             WHERE owner = $1 RETURNING shard, epoch",
            &[&self.instance, &ttl_ms, &serving],
        ))
        .await?;
        let renewed: BTreeMap<u64, i64> =
            rows.iter().map(|r| (r.get::<_, i64>(0) as u64, r.get(1))).collect();
        let gone: Vec<u64> = {
            let s = self.lock();
            s.owned.iter().filter(|(id, e)| renewed.get(id) != Some(e)).map(|(id, _)| *id).collect()
        };
        for id in gone {
            tracing::warn!(shard = id, "ownership lost to another server");
            self.lock().owned.remove(&id);
            app.stop_shard(id).await;
        }
        // Failed shards of ours: say why in the row (every server's readiness shows it), or
        // forget them if they are not ours any more.
        let mut due = Vec::new();
        for id in app.all_ids() {
            let Some(l) = app.local(id) else { continue };
            if l.state != ShardState::Failed {
                continue;
            }
            if !renewed.contains_key(&id) {
                app.clear_local(id);
                continue;
            }
            within(
                limit,
                "publishing a failure",
                db.execute(
                    "UPDATE leasehold_shards SET status = $3, serving = false
                 WHERE shard = $1 AND owner = $2 AND (status IS DISTINCT FROM $3 OR serving)",
                    &[&(id as i64), &self.instance, &l.why],
                ),
            )
            .await?;
            if l.retry_at <= Instant::now() {
                due.push(id as i64);
            }
        }
        let rows = within(limit, "reading the shards", db.query(
            "SELECT shard, epoch, owner, owner_url, lease_until > now(), status, quarantine, serving
             FROM leasehold_shards",
            &[],
        ))
        .await?;
        let live: i64 = within(
            limit,
            "counting servers",
            db.query_one("SELECT count(*) FROM leasehold_servers WHERE alive_until > now()", &[]),
        )
        .await?
        .get(0);
        let view: BTreeMap<u64, RowView> = rows.iter().map(row_view).collect();
        // The shards this server could run (a discovery row of a service it does not run, or
        // of an id no longer in use, is not part of its share).
        let (total, discovery) = (app.total_shards(), app.discovery_id());
        let open = view
            .iter()
            .filter(|(id, r)| r.quarantine.is_none() && (**id <= total || Some(**id) == discovery))
            .count() as u64;
        self.set_view(view);
        if first {
            // Let servers started together see each other before anyone takes shards.
            return Ok(());
        }
        let fair = open.div_ceil(live.max(1) as u64);
        // Served or failed, ours all the same.
        let owned = renewed.len() as u64;
        let want = fair.saturating_sub(owned) as i64;
        if want > 0 || !due.is_empty() {
            let rows = within(
                limit,
                "taking shards",
                db.query(
                    "UPDATE leasehold_shards s
                 SET epoch = s.epoch + 1, owner = $1, owner_url = $2, status = NULL, serving = false,
                     lease_until = now() + make_interval(secs => $3::float8 / 1000),
                     clock_local = NULL, clock_db = NULL
                 WHERE s.shard IN (
                     SELECT shard FROM leasehold_shards
                     WHERE quarantine IS NULL
                       AND (shard <= $6::bigint OR shard = $7::bigint)
                       AND (lease_until < now() OR (owner = $1 AND shard = ANY($5::bigint[])))
                     ORDER BY coalesce(owner = $1 AND shard = ANY($5::bigint[]), false) DESC, shard
                     LIMIT greatest($4::bigint, cardinality($5::bigint[]))
                     FOR UPDATE SKIP LOCKED)
                 RETURNING s.shard, s.epoch, s.durable_seq",
                    &[
                        &self.instance,
                        &app.config.advertise,
                        &ttl_ms,
                        &want,
                        &due,
                        &(app.total_shards() as i64),
                        // A discovery shard only by a server that runs the service (-1: none).
                        &app.discovery_id().map_or(-1, |d| d as i64),
                    ],
                ),
            )
            .await?;
            let mut broken: Option<String> = None;
            for r in rows {
                let (id, epoch, durable): (i64, i64, i64) = (r.get(0), r.get(1), r.get(2));
                let id = id as u64;
                if let Some(why) = &broken {
                    // Ours now, but the database failed on an earlier one: retry it later.
                    app.set_failed(id, ErrorKind::Open, format!("restore failed: {why}"));
                    continue;
                }
                let started = Instant::now();
                app.set_taking_over(id, format!("restoring (epoch {epoch})"));
                match self.take(&app, db, id, epoch, durable as u64).await {
                    Ok((leases, replayed)) => tracing::info!(
                        shard = id,
                        epoch,
                        leases,
                        replayed,
                        ms = started.elapsed().as_millis() as u64,
                        "shard acquired"
                    ),
                    Err(TakeError::Damaged(why)) => {
                        if let Err(e) = self.quarantine(&app, db, id, epoch, why).await {
                            broken = Some(e);
                        }
                    }
                    Err(TakeError::Transient(why)) => {
                        app.set_failed(id, ErrorKind::Open, format!("restore failed: {why}"));
                        broken = Some(why);
                    }
                }
            }
            if let Some(why) = broken {
                return Err(why);
            }
        } else if owned > fair {
            // Above a fair share (a server joined): hand one shard over cleanly. Never the
            // discovery shard: the server that joined may not run the service (then nobody
            // would take it back), and above a fair share this server owns another.
            let discovery = app.discovery_id();
            let pick = self
                .lock()
                .owned
                .iter()
                .rev()
                .find(|(id, _)| Some(**id) != discovery)
                .map(|(id, e)| (*id, *e));
            if let Some((id, epoch)) = pick {
                self.give_up(&app, db, id, epoch).await?;
                tracing::info!(shard = id, fair, "shard handed over (rebalance)");
            }
        }
        Ok(())
    }

    fn set_view(&self, view: BTreeMap<u64, RowView>) {
        let mut s = self.lock();
        // An owner that no longer owns anything, or whose hold has run out, is worth
        // forwarding to again.
        let now = Instant::now();
        s.suspects.retain(|u, t| {
            *t > now && view.values().any(|r| r.live && r.owner_url.as_deref() == Some(u.as_str()))
        });
        s.view = view;
    }

    /// The clock guard is not satisfied: serve nothing. Stops every shard (after writing what
    /// it answered), lets every row this server owns lapse at once (served or failed), and
    /// leaves the live servers, so that the others take the shards.
    async fn stand_down(&self, app: &Arc<App>, db: &Client) -> Result<(), String> {
        let limit = self.limit();
        let owned: Vec<u64> = std::mem::take(&mut self.lock().owned).into_keys().collect();
        for id in &owned {
            tracing::error!(shard = id, "clock guard: handing the shard back");
            app.stop_shard(*id).await;
        }
        for id in app.all_ids() {
            if app.local(id).is_some_and(|l| l.state == ShardState::Failed) {
                app.clear_local(id);
            }
        }
        within(limit, "handing over", db.execute(
            "UPDATE leasehold_shards SET owner = NULL, owner_url = NULL, status = NULL, serving = false, lease_until = '-infinity'
             WHERE owner = $1",
            &[&self.instance],
        ))
        .await?;
        within(
            limit,
            "leaving",
            db.execute("DELETE FROM leasehold_servers WHERE name = $1", &[&self.instance]),
        )
        .await?;
        let rows = within(limit, "reading the shards", db.query(
            "SELECT shard, epoch, owner, owner_url, lease_until > now(), status, quarantine, serving
             FROM leasehold_shards",
            &[],
        ))
        .await?;
        self.set_view(rows.iter().map(row_view).collect());
        Ok(())
    }

    /// Marks shard `id` quarantined in its row (so that no server takes it), logs it at
    /// ERROR, counts it.
    async fn quarantine(
        &self,
        app: &Arc<App>,
        db: &Client,
        id: u64,
        epoch: i64,
        why: String,
    ) -> Result<(), String> {
        tracing::error!(
            shard = id,
            epoch,
            reason = %why,
            "shard quarantined: its stored state is refused; no server serves it until an \
             operator repairs or restores it and releases it (leasehold-server quarantine \
             inspect --store URL --shard N)"
        );
        app.set_quarantined(id, why.clone());
        within(self.limit(), "quarantining", db.execute(
            "UPDATE leasehold_shards SET quarantine = $3, quarantined_at = now(), quarantined_by = $4,
                 owner = NULL, owner_url = NULL, status = NULL, serving = false,
                 lease_until = '-infinity'
             WHERE shard = $1 AND epoch = $2",
            &[&(id as i64), &epoch, &why, &self.instance],
        ))
        .await?;
        // The row says it now, for every server; this server's view follows at the next round.
        app.clear_local(id);
        if let Some(r) = self.lock().view.get_mut(&id) {
            r.quarantine = Some(why);
            r.live = false;
        }
        Ok(())
    }

    /// Restores an acquired shard and starts serving it: a landlord's, the renewal service's
    /// or the discovery service's. Returns (leases, client leases or registrations, records
    /// replayed).
    async fn take(
        &self,
        app: &Arc<App>,
        db: &Client,
        id: u64,
        epoch: i64,
        durable: u64,
    ) -> Result<(usize, u64), TakeError> {
        let transient = TakeError::Transient;
        let damaged = TakeError::Damaged;
        // Reading a long journal may take longer than one statement usually does.
        let long = self.limit() * 10;
        let snap = within(
            long,
            "reading the snapshot",
            db.query_opt(
                "SELECT seq, bytes FROM leasehold_snapshots WHERE shard = $1",
                &[&(id as i64)],
            ),
        )
        .await
        .map_err(transient)?;
        let writer = PgWriter {
            pool: self.pool.clone(),
            shard: id as i64,
            epoch,
            app: Arc::downgrade(app),
            drift_bound: app.config.max_clock_offset_ms as f64,
        };
        let c = &app.config;
        let min_compact_bytes = c.store_config.min_compact_bytes;
        let t = Taking { db, long, id, durable, snap, writer: &writer, min_compact_bytes };
        if app.is_renewal(id) {
            // The renewal service, as a landlord: the snapshot and the journal rows after it,
            // replayed exactly, then resumed (set leases do not count the time down; client
            // leases are absolute, so renewals that fell due meanwhile go out at once).
            use leasehold::service::RenewalService;
            let recover = |bytes: &[u8], log: &[u8]| {
                RenewalService::recover(bytes, &[log], now_ms()).map_err(restore_refused)
            };
            let check = |svc: &RenewalService| check_id(svc.id(), id, "renewal service");
            // A new service: its first snapshot (with its cookie seed) before anything.
            let create = || {
                crate::files::new_renewal_service(id, &c.set_policy)
                    .map_err(|e| transient(e.to_string()))
            };
            let seed = "the set leases' cookie seed";
            let Restored { state: svc, planner, replayed, last, .. } =
                restore(t, seed, recover, check, create).await?;
            let leases = svc.manager().len();
            self.serve(db, id, epoch, last, || {
                let on_end = App::on_end_renewal(Arc::downgrade(app));
                let stats = app.shard_stats(id);
                let h = crate::renewal::spawn(id, svc, planner, writer, stats, c, on_end);
                app.insert_renewal(h);
                Ok(())
            })
            .await?;
            return Ok((leases, replayed));
        }
        if app.discovery_id() == Some(id) {
            // The discovery service, as the renewal service, and given the settings in force.
            use leasehold::discovery::DiscoveryService;
            let Some(settings) = app.discovery.as_ref().map(|d| d.settings.clone()) else {
                return Err(transient("this server runs no discovery service".into()));
            };
            let recover = |bytes: &[u8], log: &[u8]| {
                DiscoveryService::recover(bytes, &[log], now_ms()).map_err(restore_refused)
            };
            let check = |svc: &DiscoveryService| check_id(svc.id(), id, "discovery service");
            // A new service: its first snapshot (with its cookie seed) before anything.
            let create =
                || crate::discovery::new_service(&settings).map_err(|e| transient(e.to_string()));
            let seed = "the registration cookies' seed";
            let Restored { state: mut svc, planner, replayed, created, last } =
                restore(t, seed, recover, check, create).await?;
            // The settings in force now (policy, schedules), journaled if they changed:
            // written by the actor's first write, before anything it answers.
            crate::discovery::reconfigure(&mut svc, &settings)
                .map_err(|e| damaged(format!("settings refused: {e}")))?;
            let registrations = svc.registrations().len();
            let rec = crate::discovery::Recovered {
                records: replayed,
                registrations: registrations as u64,
                torn_tail: None,
                created,
            };
            self.serve(db, id, epoch, last, || {
                crate::discovery::serve_taken(app, svc, planner, writer, rec)
            })
            .await?;
            return Ok((registrations, replayed));
        }
        // Coordination is turned on before the journal is replayed, so that replay counts
        // tokens and makes events exactly as the live landlord did.
        let recover = |bytes: &[u8], log: &[u8]| {
            let policy = c.policy.build().map_err(|e| transient(e.to_string()))?;
            let replay = || -> leasehold::Result<(LL, leasehold::journal::Recovered)> {
                let mut ll = LL::from_snapshot_bytes(bytes, policy)?;
                ll.enable_coordination(c.coord.core())?;
                let rec = ll.replay_segments(&[log])?;
                ll.resume_durable(now_ms());
                Ok((ll, rec))
            };
            replay().map_err(restore_refused)
        };
        // A new shard: its first snapshot (with its cookie seed) is written before anything is
        // granted.
        let create = || {
            crate::files::new_landlord(id, &c.policy, c.grace_ms, c.limits, &c.coord)
                .map_err(|e| transient(e.to_string()))
        };
        let seed = "the cookie seed";
        let Restored { state: ll, planner, replayed, last, .. } =
            restore(t, seed, recover, |_| Ok(()), create).await?;
        let leases = ll.len();
        self.serve(db, id, epoch, last, || {
            let (stats, metrics) = (app.shard_stats(id), app.coord_metrics.clone());
            let on_end = App::on_end(Arc::downgrade(app));
            app.insert(shard::spawn(id, ll, planner, writer, stats, metrics, on_end));
            Ok(())
        })
        .await?;
        Ok((leases, replayed))
    }

    /// Records the takeover of shard `id` (its journal ending at record `last`), starts serving
    /// it (`start`), and says so in the row.
    async fn serve(
        &self,
        db: &Client,
        id: u64,
        epoch: i64,
        last: u64,
        start: impl FnOnce() -> Result<(), String>,
    ) -> Result<(), TakeError> {
        self.took(db, id, epoch, last).await.map_err(TakeError::Transient)?;
        self.lock().owned.insert(id, epoch);
        start().map_err(TakeError::Transient)?;
        self.mark_serving(db, id, epoch).await;
        Ok(())
    }

    /// Records a takeover: its history row, and the clock baseline every write of this owner
    /// is checked against (the lease clock read just before this uncontended statement, and
    /// the database's clock as it runs).
    async fn took(&self, db: &Client, id: u64, epoch: i64, last: u64) -> Result<(), String> {
        within(self.limit(), "recording the takeover", db.execute(
            "INSERT INTO leasehold_takeovers (shard, epoch, owner, base_seq) VALUES ($1, $2, $3, $4)
             ON CONFLICT DO NOTHING",
            &[&(id as i64), &epoch, &self.instance, &(last as i64)],
        ))
        .await?;
        within(
            self.limit(),
            "recording the clock baseline",
            db.execute(
                "UPDATE leasehold_shards SET clock_local = $3, clock_db = clock_timestamp()
             WHERE shard = $1 AND epoch = $2",
                &[&(id as i64), &epoch, &crate::clock::mono_ms()],
            ),
        )
        .await?;
        Ok(())
    }

    /// Says in the row that this server serves shard `id` now (for the other servers'
    /// readiness); if this fails, the next round's renewal says it.
    async fn mark_serving(&self, db: &Client, id: u64, epoch: i64) {
        if let Err(e) = within(
            self.limit(),
            "marking the shard served",
            db.execute(
                "UPDATE leasehold_shards SET serving = true WHERE shard = $1 AND epoch = $2",
                &[&(id as i64), &epoch],
            ),
        )
        .await
        {
            tracing::debug!(shard = id, error = %e, "could not mark the shard served yet");
        }
    }

    /// Stops serving a shard (after writing what it answered) and lets its ownership lapse at
    /// once, so that another server takes it.
    async fn give_up(
        &self,
        app: &Arc<App>,
        db: &Client,
        id: u64,
        epoch: i64,
    ) -> Result<(), String> {
        self.lock().owned.remove(&id);
        app.stop_shard(id).await;
        within(self.limit(), "handing over", db.execute(
            "UPDATE leasehold_shards SET owner = NULL, owner_url = NULL, status = NULL, serving = false, lease_until = '-infinity'
             WHERE shard = $1 AND epoch = $2",
            &[&(id as i64), &epoch],
        ))
        .await?;
        Ok(())
    }

    /// Stops every shard, gives up every ownership lease and leaves the cluster.
    pub async fn shutdown(&self) {
        let _ = self.stop.send(true);
        let task = self.ticker.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = task {
            let _ = t.await;
        }
        let Some(app) = self.app.upgrade() else { return };
        let owned: Vec<(u64, i64)> = self.lock().owned.iter().map(|(a, b)| (*a, *b)).collect();
        let Ok(guard) = self.control().await else {
            for h in app.handles() {
                h.stop().await;
            }
            for h in app.renewal_handles() {
                h.stop().await;
            }
            return;
        };
        let db = guard.as_ref().expect("connected");
        for (id, epoch) in owned {
            if let Err(e) = self.give_up(&app, db, id, epoch).await {
                tracing::warn!(shard = id, error = %e, "could not hand over");
            }
        }
        let _ = within(
            self.limit(),
            "leaving",
            db.execute("DELETE FROM leasehold_servers WHERE name = $1", &[&self.instance]),
        )
        .await;
    }

    /// The URL of the server that owns `shard`, as this server last read it (`None`: unowned or
    /// not known yet). For the admin endpoints' forwarding ([`crate::admin`]).
    pub fn owner_url(&self, shard: u64) -> Option<String> {
        self.lock().view.get(&shard).filter(|r| r.live).and_then(|r| r.owner_url.clone())
    }

    fn unavailable(&self, msg: String) -> Response {
        let mut r = (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            msg + "\n",
        )
            .into_response();
        r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        r
    }

    /// Forwards a request to the owner of `shard`; `None` if no other server owns it now. An
    /// owner that does not answer within `--forward-timeout-ms` gets a 503 with `Retry-After`,
    /// and is skipped (503 at once) until the next ownership round shows a change, or for at
    /// least a second. `extra` (already percent-encoded `name=value` pairs) is added to the
    /// query, which the forwarding proof covers (a forwarded register's listener).
    #[allow(clippy::too_many_arguments)] // what a forward carries, each distinct
    pub async fn forward(
        &self,
        path: &str,
        shard: u64,
        landlord: Option<u64>,
        enc: Encoding,
        body: Bytes,
        identity: Option<&str>,
        held: Duration,
        extra: Option<String>,
    ) -> Option<Response> {
        let app = self.app.upgrade()?;
        let (owner, suspect) = {
            let s = self.lock();
            let row = s.view.get(&shard).filter(|r| r.live && r.quarantine.is_none())?;
            let owner = row.owner_url.clone()?;
            let suspect = s.suspects.get(&owner).is_some_and(|&t| t > Instant::now());
            (owner, suspect)
        };
        if owner == app.config.advertise {
            return None;
        }
        // A request the owner may hold (an acquire that waits, a long poll) gets that long on
        // top of the forward time-out.
        let limit = Duration::from_millis(app.config.forward_timeout_ms) + held;
        if suspect {
            return Some(self.unavailable(format!(
                "shard {shard}'s owner {owner} did not answer in time lately; try again shortly"
            )));
        }
        let mut query = format!("landlord={}", leasehold::LandlordId(landlord.unwrap_or(shard)));
        if let Some(extra) = extra {
            query.push('&');
            query.push_str(&extra);
        }
        // Proof that a server sent it, with the identity of the client that spoke.
        let proof = app.auth.sign(identity, &query, &body).unwrap_or_else(|| "1".into());
        let uri = format!("{owner}{path}?{query}");
        let req = hyper::Request::post(uri)
            .header(header::CONTENT_TYPE, content_type(enc))
            .header(FORWARDED, proof)
            .body(Full::new(body))
            .ok()?;
        let started = Instant::now();
        let mark = |why: &str| {
            app.stats.forward_timeouts.fetch_add(1, Relaxed);
            let hold = self.ttl().max(Duration::from_secs(1));
            self.lock().suspects.insert(owner.clone(), Instant::now() + hold);
            tracing::warn!(shard, owner = %owner, why, "forward failed; skipping that owner for a moment");
        };
        let resp =
            match tokio::time::timeout(limit, self.http.request(req)).await {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => {
                    mark(&e.to_string());
                    return Some(self.unavailable(format!(
                        "shard {shard}'s owner {owner} cannot be reached: {e}"
                    )));
                }
                Err(_) => {
                    mark("timed out");
                    return Some(self.unavailable(format!(
                        "shard {shard}'s owner {owner} did not answer within {} ms",
                        limit.as_millis()
                    )));
                }
            };
        let status = resp.status();
        let ct = resp.headers().get(header::CONTENT_TYPE).cloned();
        let owner_hdr = resp.headers().get(crate::http::OWNER).cloned();
        let left = limit.saturating_sub(started.elapsed()).max(Duration::from_millis(50));
        let bytes = match tokio::time::timeout(left, resp.into_body().collect()).await {
            Ok(Ok(b)) => b.to_bytes(),
            _ => {
                mark("timed out");
                return Some(self.unavailable(format!(
                    "shard {shard}'s owner {owner} did not answer within {} ms",
                    limit.as_millis()
                )));
            }
        };
        let mut r = (status, bytes).into_response();
        if let Some(ct) = ct {
            r.headers_mut().insert(header::CONTENT_TYPE, ct);
        }
        if status == StatusCode::SERVICE_UNAVAILABLE {
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        let hint = owner_hdr.unwrap_or_else(|| {
            HeaderValue::from_str(&owner).unwrap_or(HeaderValue::from_static(""))
        });
        r.headers_mut().insert(crate::http::OWNER, hint);
        Some(r)
    }
}
