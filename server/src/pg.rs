//! Shards in PostgreSQL, shared by several servers.
//!
//! # Tables
//!
//! ```text
//! leasehold_cluster   (id = 1, shards)                          how many shards the cluster has
//! leasehold_servers   (name, url, alive_until)                   servers alive (for a fair share)
//! leasehold_shards    (shard, epoch, owner, owner_url, lease_until)   one ownership lease a shard
//! leasehold_snapshots (shard, seq, epoch, bytes)                 the shard's latest snapshot
//! leasehold_journal   (shard, first_seq, last_seq, epoch, frame) journal frames after it
//! leasehold_takeovers (shard, epoch, owner, base_seq, at)        history of acquisitions
//! ```
//!
//! # Ownership and fencing
//!
//! A server owns a shard through its row in `leasehold_shards`: it holds the row's current
//! `epoch` (the fencing token) and renews `lease_until` on the database's clock (`now()`);
//! nobody else's clock is ever compared. A server takes a shard whose `lease_until` has passed
//! by raising its epoch in the same `UPDATE`, then restores the shard from the snapshot and
//! the journal rows and resumes it (time spent down does not count).
//!
//! Every write of an owner is one statement that locks the shard's row `FOR SHARE` and checks
//! that its epoch is still the row's: a frame append, a snapshot (which drops the frames it
//! covers), or a bare fence check (for replies that wrote nothing). A takeover's `UPDATE`
//! needs the row exclusively, so it waits for writes under way, and every write after it sees
//! the new epoch and is refused: an owner that was paused or cut off can never write after it
//! has been replaced, and it answers nothing it has not confirmed with the database.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::TokioExecutor;
use leasehold::Encoding;
use tokio_postgres::{Client, NoTls, Statement};

use crate::clock::now_ms;
use crate::http::{content_type, FORWARDED};
use crate::shard::{self, Job, Planner, WriteError, Writer, LL};
use crate::App;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS leasehold_cluster (
    id int PRIMARY KEY CHECK (id = 1),
    shards bigint NOT NULL CHECK (shards > 0));
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

/// Appends a frame if (and only if) `$2` is still the shard's epoch.
const APPEND: &str = "
WITH owner AS (SELECT 1 FROM leasehold_shards WHERE shard = $1 AND epoch = $2 FOR SHARE)
INSERT INTO leasehold_journal (shard, first_seq, last_seq, epoch, frame)
SELECT $1, $3, $4, $2, $5 FROM owner";

/// Replaces the snapshot and drops the frames it covers, if `$2` is still the shard's epoch.
const SNAPSHOT: &str = "
WITH owner AS (SELECT 1 FROM leasehold_shards WHERE shard = $1 AND epoch = $2 FOR SHARE),
snap AS (
    INSERT INTO leasehold_snapshots (shard, seq, epoch, bytes)
    SELECT $1, $3, $2, $4 FROM owner
    ON CONFLICT (shard) DO UPDATE SET seq = EXCLUDED.seq, epoch = EXCLUDED.epoch, bytes = EXCLUDED.bytes
    RETURNING 1),
dropped AS (
    DELETE FROM leasehold_journal
    WHERE shard = $1 AND last_seq <= $3 AND EXISTS (SELECT 1 FROM snap))
SELECT count(*) FROM snap";

/// Whether `$2` is still the shard's epoch.
const FENCE: &str = "SELECT 1 FROM leasehold_shards WHERE shard = $1 AND epoch = $2";

/// One connection with its statements prepared (one round trip per write).
struct Conn {
    client: Client,
    append: Statement,
    snapshot: Statement,
    fence: Statement,
}

async fn connect(url: &str) -> Result<Client, String> {
    let (client, connection) =
        tokio_postgres::connect(url, NoTls).await.map_err(|e| format!("PostgreSQL: {e}"))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "PostgreSQL connection ended");
        }
    });
    Ok(client)
}

impl Conn {
    async fn open(url: &str) -> Result<Conn, String> {
        let client = connect(url).await?;
        let prep = |sql: &'static str| {
            let c = &client;
            async move { c.prepare(sql).await.map_err(|e| format!("prepare: {e}")) }
        };
        let append = prep(APPEND).await?;
        let snapshot = prep(SNAPSHOT).await?;
        let fence = prep(FENCE).await?;
        Ok(Conn { client, append, snapshot, fence })
    }
}

/// Writes one shard's frames and snapshots, fenced by its epoch.
pub struct PgWriter {
    conn: Arc<Conn>,
    shard: i64,
    epoch: i64,
    app: Weak<App>,
}

impl PgWriter {
    fn trip(&self) {
        if let Some(app) = self.app.upgrade() {
            app.stats.pg_round_trips.fetch_add(1, Relaxed);
        }
    }
}

fn refused(e: tokio_postgres::Error) -> WriteError {
    // Another owner already wrote this record number: we are not the owner any more.
    if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) {
        WriteError::Fenced
    } else {
        WriteError::Failed(e.to_string())
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
            let c = &self.conn;
            self.trip();
            if let Some((bytes, seq)) = snapshot {
                // The snapshot includes every record of the frame too.
                let row = c
                    .client
                    .query_one(&c.snapshot, &[&self.shard, &self.epoch, &(seq as i64), &bytes])
                    .await
                    .map_err(refused)?;
                let n: i64 = row.get(0);
                return if n == 1 { Ok(()) } else { Err(WriteError::Fenced) };
            }
            if let Some((bytes, first, last)) = frame {
                let n = c
                    .client
                    .execute(
                        &c.append,
                        &[&self.shard, &self.epoch, &(first as i64), &(last as i64), &bytes],
                    )
                    .await
                    .map_err(refused)?;
                return if n == 1 { Ok(()) } else { Err(WriteError::Fenced) };
            }
            let rows = c
                .client
                .query(&c.fence, &[&self.shard, &self.epoch])
                .await
                .map_err(|e| WriteError::Failed(e.to_string()))?;
            if rows.len() == 1 {
                Ok(())
            } else {
                Err(WriteError::Fenced)
            }
        })
    }
}

/// What the cluster knows of one shard this server owns.
struct Owned {
    epoch: i64,
}

struct State {
    owned: BTreeMap<u64, Owned>,
    /// Shards whose actor ended (fenced or failed): to re-acquire (with a new epoch) if the
    /// row is still ours, or to forget.
    lost: BTreeSet<u64>,
    /// Owner URL of every shard with a live ownership lease, as of the last tick.
    owners: BTreeMap<u64, String>,
}

/// This server's part in a cluster of servers sharing one PostgreSQL.
pub struct Cluster {
    app: Weak<App>,
    url: String,
    /// The name in ownership rows: unique to this process (a restarted server is a new owner).
    instance: String,
    conns: Vec<Arc<Conn>>,
    control: Mutex<Option<Arc<Client>>>,
    state: Mutex<State>,
    http: HttpClient<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
    stop: tokio::sync::watch::Sender<bool>,
    ticker: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// Connections for shard writes (statements are pipelined on each).
const WRITE_CONNS: usize = 4;

impl Cluster {
    /// Connects, creates the tables if needed, registers this server, and starts the
    /// ownership loop (renew what it owns, take lapsed shards up to a fair share, forward).
    pub async fn start(app: Arc<App>, url: &str) -> Result<Arc<Cluster>, String> {
        let mut control = connect(url).await?;
        let tx = control.transaction().await.map_err(|e| e.to_string())?;
        tx.execute("SELECT pg_advisory_xact_lock(7420)", &[]).await.map_err(|e| e.to_string())?;
        tx.batch_execute(SCHEMA).await.map_err(|e| format!("schema: {e}"))?;
        tx.execute(
            "INSERT INTO leasehold_cluster (id, shards) VALUES (1, $1) ON CONFLICT DO NOTHING",
            &[&(app.config.shards as i64)],
        )
        .await
        .map_err(|e| e.to_string())?;
        let shards: i64 = tx
            .query_one("SELECT shards FROM leasehold_cluster WHERE id = 1", &[])
            .await
            .map_err(|e| e.to_string())?
            .get(0);
        tx.execute(
            "INSERT INTO leasehold_shards (shard) SELECT generate_series(1, $1::bigint) ON CONFLICT DO NOTHING",
            &[&shards],
        )
        .await
        .map_err(|e| e.to_string())?;
        tx.commit().await.map_err(|e| e.to_string())?;
        if shards as u64 != app.config.shards {
            tracing::info!(
                cluster = shards,
                flag = app.config.shards,
                "the cluster's shard count wins"
            );
        }
        app.shard_count.store(shards as u64, Relaxed);
        let mut conns = Vec::new();
        for _ in 0..WRITE_CONNS {
            conns.push(Arc::new(Conn::open(url).await?));
        }
        let mut suffix = [0u8; 4];
        getrandom::fill(&mut suffix).map_err(|e| e.to_string())?;
        let instance = format!("{}#{:08x}", app.config.name, u32::from_le_bytes(suffix));
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let cluster = Arc::new(Cluster {
            app: Arc::downgrade(&app),
            url: url.to_string(),
            instance,
            conns,
            control: Mutex::new(Some(Arc::new(control))),
            state: Mutex::new(State {
                owned: BTreeMap::new(),
                lost: BTreeSet::new(),
                owners: BTreeMap::new(),
            }),
            http: HttpClient::builder(TokioExecutor::new()).build_http(),
            stop,
            ticker: Mutex::new(None),
        });
        tracing::info!(instance = %cluster.instance, shards, "joined the cluster");
        let c = cluster.clone();
        let task = tokio::spawn(async move { c.ownership_loop(stop_rx).await });
        *cluster.ticker.lock().unwrap() = Some(task);
        Ok(cluster)
    }

    fn ttl(&self) -> Duration {
        Duration::from_millis(self.app.upgrade().map_or(3000, |a| a.config.ownership_ms))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Told by the app when a shard's actor ended.
    pub fn shard_ended(&self, id: u64) {
        let mut s = self.lock();
        if s.owned.remove(&id).is_some() {
            s.lost.insert(id);
        }
    }

    async fn control(&self) -> Result<Arc<Client>, String> {
        let cur = self.control.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(c) = cur {
            if !c.is_closed() {
                return Ok(c);
            }
        }
        let c = Arc::new(connect(&self.url).await?);
        *self.control.lock().unwrap_or_else(|p| p.into_inner()) = Some(c.clone());
        Ok(c)
    }

    async fn ownership_loop(self: Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
        let period = self.ttl() / 3;
        let mut first = true;
        loop {
            if let Err(e) = self.tick(first).await {
                tracing::warn!(error = %e, "ownership round failed");
            }
            first = false;
            tokio::select! {
                _ = tokio::time::sleep(period) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// One round: heartbeat, renew owned shards, learn owners, take lapsed shards up to a fair
    /// share, give one away if above it.
    async fn tick(&self, first: bool) -> Result<(), String> {
        let Some(app) = self.app.upgrade() else { return Ok(()) };
        let db = self.control().await?;
        let ttl_ms = self.ttl().as_millis() as f64;
        let e = |e: tokio_postgres::Error| e.to_string();
        db.execute(
            "INSERT INTO leasehold_servers (name, url, alive_until)
             VALUES ($1, $2, now() + make_interval(secs => $3::float8 / 1000))
             ON CONFLICT (name) DO UPDATE SET url = EXCLUDED.url, alive_until = EXCLUDED.alive_until",
            &[&self.instance, &app.config.advertise, &ttl_ms],
        )
        .await
        .map_err(e)?;
        // Renew every shard still ours; any missing is lost (another server took it).
        let rows = db
            .query(
                "UPDATE leasehold_shards SET lease_until = now() + make_interval(secs => $2::float8 / 1000)
                 WHERE owner = $1 RETURNING shard, epoch",
                &[&self.instance, &ttl_ms],
            )
            .await
            .map_err(e)?;
        let renewed: BTreeMap<u64, i64> =
            rows.iter().map(|r| (r.get::<_, i64>(0) as u64, r.get(1))).collect();
        let gone: Vec<u64> = {
            let s = self.lock();
            s.owned
                .iter()
                .filter(|(id, o)| renewed.get(id) != Some(&o.epoch))
                .map(|(id, _)| *id)
                .collect()
        };
        for id in gone {
            tracing::warn!(shard = id, "ownership lost to another server");
            self.lock().owned.remove(&id);
            if let Some(h) = app.remove(id) {
                h.stop().await;
            }
        }
        let owners = db
            .query(
                "SELECT shard, owner_url FROM leasehold_shards WHERE lease_until > now() AND owner_url IS NOT NULL",
                &[],
            )
            .await
            .map_err(e)?;
        let live: i64 = db
            .query_one("SELECT count(*) FROM leasehold_servers WHERE alive_until > now()", &[])
            .await
            .map_err(e)?
            .get(0);
        {
            let mut s = self.lock();
            s.owners = owners.iter().map(|r| (r.get::<_, i64>(0) as u64, r.get(1))).collect();
        }
        if first {
            // Let servers started together see each other before anyone takes shards.
            return Ok(());
        }
        let shards = app.shard_count();
        let fair = shards.div_ceil(live.max(1) as u64);
        let (owned, lost): (u64, Vec<i64>) = {
            let mut s = self.lock();
            let lost = std::mem::take(&mut s.lost).into_iter().map(|x| x as i64).collect();
            (s.owned.len() as u64, lost)
        };
        let want = fair.saturating_sub(owned) as i64;
        if want > 0 || !lost.is_empty() {
            let rows = db
                .query(
                    "UPDATE leasehold_shards s
                     SET epoch = s.epoch + 1, owner = $1, owner_url = $2,
                         lease_until = now() + make_interval(secs => $3::float8 / 1000)
                     WHERE s.shard IN (
                         SELECT shard FROM leasehold_shards
                         WHERE lease_until < now() OR (owner = $1 AND shard = ANY($5::bigint[]))
                         ORDER BY (owner = $1 AND shard = ANY($5::bigint[])) DESC, shard
                         LIMIT greatest($4::bigint, cardinality($5::bigint[]))
                         FOR UPDATE SKIP LOCKED)
                     RETURNING s.shard, s.epoch",
                    &[&self.instance, &app.config.advertise, &ttl_ms, &want, &lost],
                )
                .await
                .map_err(e)?;
            for r in rows {
                let (id, epoch): (i64, i64) = (r.get(0), r.get(1));
                let started = Instant::now();
                match self.take(&app, &db, id as u64, epoch).await {
                    Ok(info) => tracing::info!(
                        shard = id,
                        epoch,
                        leases = info.0,
                        replayed = info.1,
                        ms = started.elapsed().as_millis() as u64,
                        "shard acquired"
                    ),
                    Err(err) => {
                        tracing::error!(shard = id, epoch, error = %err, "could not restore shard");
                        // Let it lapse so that someone (maybe us) tries again.
                        let _ = db
                            .execute(
                                "UPDATE leasehold_shards SET lease_until = '-infinity' WHERE shard = $1 AND epoch = $2",
                                &[&id, &epoch],
                            )
                            .await;
                    }
                }
            }
        } else if owned > fair {
            // Above a fair share (a server joined): hand one shard over cleanly.
            let pick = self.lock().owned.iter().next_back().map(|(id, o)| (*id, o.epoch));
            if let Some((id, epoch)) = pick {
                self.give_up(&app, &db, id, epoch).await?;
                tracing::info!(shard = id, fair, "shard handed over (rebalance)");
            }
        }
        Ok(())
    }

    /// Restores an acquired shard and starts serving it. Returns (leases, records replayed).
    async fn take(
        &self,
        app: &Arc<App>,
        db: &Client,
        id: u64,
        epoch: i64,
    ) -> Result<(usize, u64), String> {
        let e = |e: tokio_postgres::Error| e.to_string();
        let snap = db
            .query_opt(
                "SELECT seq, bytes FROM leasehold_snapshots WHERE shard = $1",
                &[&(id as i64)],
            )
            .await
            .map_err(e)?;
        let conn = self.conns[(id as usize) % self.conns.len()].clone();
        let writer =
            PgWriter { conn: conn.clone(), shard: id as i64, epoch, app: Arc::downgrade(app) };
        let c = &app.config;
        let min_compact = c.store_config.min_compact_bytes;
        let (ll, planner, replayed): (LL, Planner, u64) = match snap {
            Some(row) => {
                let seq: i64 = row.get(0);
                let bytes: Vec<u8> = row.get(1);
                let frames = db
                    .query(
                        "SELECT frame FROM leasehold_journal WHERE shard = $1 AND last_seq > $2 ORDER BY first_seq",
                        &[&(id as i64), &seq],
                    )
                    .await
                    .map_err(e)?;
                let mut log = Vec::new();
                for f in &frames {
                    log.extend_from_slice(f.get::<_, &[u8]>(0));
                }
                // Coordination is turned on before the journal is replayed, so that replay
                // counts tokens and makes events exactly as the live landlord did.
                let mut ll =
                    LL::from_snapshot_bytes(&bytes, c.policy.build().map_err(|e| e.to_string())?)
                        .map_err(|e| format!("restore: {e}"))?;
                ll.enable_coordination(c.coord.core()).map_err(|e| format!("restore: {e}"))?;
                let rec = ll.replay_segments(&[&log]).map_err(|e| format!("restore: {e}"))?;
                ll.resume(now_ms());
                if let Some((_, _, why)) = rec.torn {
                    return Err(format!("journal rows are damaged: {why}"));
                }
                let planner = Planner::Rows {
                    log_bytes: log.len() as u64,
                    snapshot_bytes: bytes.len() as u64,
                    min_compact_bytes: min_compact,
                };
                (ll, planner, rec.replayed)
            }
            None => {
                let n: i64 = db
                    .query_one(
                        "SELECT count(*) FROM leasehold_journal WHERE shard = $1",
                        &[&(id as i64)],
                    )
                    .await
                    .map_err(e)?
                    .get(0);
                if n > 0 {
                    return Err("journal rows without a snapshot".into());
                }
                // A new shard: its first snapshot (with its cookie seed) is written before
                // anything is granted, so every later frame replays onto it.
                let mut ll =
                    crate::files::new_landlord(id, &c.policy, c.grace_ms, c.limits, &c.coord)
                        .map_err(|e| e.to_string())?;
                ll.resume(now_ms());
                let mut bytes = Vec::new();
                let seq = ll.snapshot_bytes(&mut bytes);
                let mut w = PgWriter {
                    conn: conn.clone(),
                    shard: id as i64,
                    epoch,
                    app: Arc::downgrade(app),
                };
                w.write(Job::Rows { frame: None, snapshot: Some((bytes.clone(), seq)) })
                    .await
                    .map_err(|e| format!("first snapshot: {e:?}"))?;
                let planner = Planner::Rows {
                    log_bytes: 0,
                    snapshot_bytes: bytes.len() as u64,
                    min_compact_bytes: min_compact,
                };
                (ll, planner, 0)
            }
        };
        let base = ll.journal_seq() as i64;
        db.execute(
            "INSERT INTO leasehold_takeovers (shard, epoch, owner, base_seq) VALUES ($1, $2, $3, $4)
             ON CONFLICT DO NOTHING",
            &[&(id as i64), &epoch, &self.instance, &base],
        )
        .await
        .map_err(e)?;
        let leases = ll.len();
        self.lock().owned.insert(id, Owned { epoch });
        let h = shard::spawn(
            id,
            ll,
            planner,
            writer,
            app.coord_metrics.clone(),
            App::on_end(Arc::downgrade(app)),
        );
        app.insert(h);
        Ok((leases, replayed))
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
        if let Some(h) = app.remove(id) {
            h.stop().await;
        }
        db.execute(
            "UPDATE leasehold_shards SET owner = NULL, owner_url = NULL, lease_until = '-infinity'
             WHERE shard = $1 AND epoch = $2",
            &[&(id as i64), &epoch],
        )
        .await
        .map_err(|e| e.to_string())?;
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
        let Ok(db) = self.control().await else { return };
        let owned: Vec<(u64, i64)> =
            self.lock().owned.iter().map(|(id, o)| (*id, o.epoch)).collect();
        for (id, epoch) in owned {
            if let Err(e) = self.give_up(&app, &db, id, epoch).await {
                tracing::warn!(shard = id, error = %e, "could not hand over");
            }
        }
        let _ =
            db.execute("DELETE FROM leasehold_servers WHERE name = $1", &[&self.instance]).await;
    }

    /// Forwards a request to the owner of `shard`; `None` if no other server owns it now.
    pub async fn forward(
        &self,
        path: &str,
        shard: u64,
        landlord: Option<u64>,
        enc: Encoding,
        body: Bytes,
        timeout: Duration,
    ) -> Option<Response> {
        let app = self.app.upgrade()?;
        let owner = self.lock().owners.get(&shard).cloned()?;
        if owner == app.config.advertise {
            return None;
        }
        let uri = format!("{owner}{path}?landlord={}", landlord.unwrap_or(shard));
        let req = hyper::Request::post(uri)
            .header(header::CONTENT_TYPE, content_type(enc))
            .header(FORWARDED, "1")
            .body(Full::new(body))
            .ok()?;
        let resp = tokio::time::timeout(timeout, self.http.request(req)).await.ok()?.ok()?;
        let status = resp.status();
        let ct = resp.headers().get(header::CONTENT_TYPE).cloned();
        let owner_hdr = resp.headers().get(crate::http::OWNER).cloned();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            return None;
        }
        let bytes = tokio::time::timeout(Duration::from_secs(5), resp.into_body().collect())
            .await
            .ok()?
            .ok()?
            .to_bytes();
        let mut r = (status, bytes).into_response();
        if let Some(ct) = ct {
            r.headers_mut().insert(header::CONTENT_TYPE, ct);
        }
        let hint = owner_hdr.unwrap_or_else(|| {
            HeaderValue::from_str(&owner).unwrap_or(HeaderValue::from_static(""))
        });
        r.headers_mut().insert(crate::http::OWNER, hint);
        Some(r)
    }
}
