//! # leasehold-server
//!
//! A lease server: leasehold's wire protocol over HTTP/1.1 (axum on tokio), many landlords
//! (*shards*) per process, each driven by an actor with group commit, kept in the embedded
//! file store (`--data DIR`, one directory per shard) or in PostgreSQL (`--store
//! postgres://...`, shards shared by several servers, owned through fenced ownership leases).
//!
//! - [`shard`]: the actor of one shard (answer, write one frame, release the replies);
//! - [`files`]: shards in the embedded file store, reopened after a failed write;
//! - [`pg`]: shards in PostgreSQL, ownership, failover, reconnection;
//! - [`guard`]: the clock guard (the server's clock against the database's);
//! - [`quarantine`]: shards whose stored state was refused, and the operator's commands;
//! - [`health`]: liveness and readiness (`/livez`, `/readyz`);
//! - [`http`]: routes, encodings, routing to shards, forwarding;
//! - [`security`], [`listener`], [`tls`], [`auth`]: limits by default, bounded connections,
//!   TLS and mTLS, identities with permissions and quotas (`docs/security.md`);
//! - [`coord`]: coordination over HTTP (acquire with a wait, watches by long polling),
//!   routing that keeps exclusive resources, pools and watched prefixes in one shard;
//! - [`renewal`]: renewal-service shards (seed 003, LR) beside the landlords, `POST /renewal`;
//! - [`discovery`]: the lookup discovery service (seed 003, LD) beside the landlords,
//!   `POST /discovery`, announcements over UDP;
//! - [`outbound`]: their outgoing traffic (renewals to landlords, events to listeners): https
//!   with a CA bundle, a client certificate and token, allow-lists;
#![deny(missing_docs)]

pub mod access;
pub mod admin;
pub mod auth;
pub mod clock;
pub mod config;
pub mod coord;
pub mod discovery;
pub mod files;
pub mod guard;
pub mod health;
pub mod http;
pub mod listener;
pub mod metrics;
pub mod openapi;
pub mod outbound;
pub mod pg;
pub mod quarantine;
pub mod renewal;
pub mod reply;
pub mod security;
pub mod shard;
pub mod tls;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::response::Response;
use leasehold::Encoding;

use crate::config::{Config, StoreKind};
use crate::health::{Readiness, ShardReport, ShardState};
use crate::metrics::{ErrorKind, ServerStats, ShardMetrics, ShardStats};
use crate::shard::{Ended, ShardHandle};

/// What this server knows of a shard it handles itself but does not serve now.
#[derive(Debug, Clone)]
pub(crate) struct Local {
    /// Failed, taking over or quarantined (a served shard is in the routing table instead).
    pub state: ShardState,
    /// Why.
    pub why: String,
    /// Failures in a row (for the backoff).
    pub failures: u32,
    /// When to try again (failed shards).
    pub retry_at: Instant,
}

/// The wait before the `failures`-th retry of a shard: 250 ms doubling up to 8 s, with a
/// fifth of jitter so that servers that failed together do not retry together.
pub(crate) fn backoff(failures: u32) -> Duration {
    let base = 250u64.saturating_mul(1 << failures.saturating_sub(1).min(5)).min(8_000);
    let mut r = [0u8; 2];
    let _ = getrandom::fill(&mut r);
    let jitter = u64::from(u16::from_le_bytes(r)) * base / 5 / 65_536;
    Duration::from_millis(base - base / 10 + jitter)
}

/// A running server's shared state.
pub struct App {
    /// Settings.
    pub config: Config,
    shards: RwLock<BTreeMap<u64, ShardHandle>>,
    renewals: RwLock<BTreeMap<u64, renewal::RenewalHandle>>,
    local: Mutex<BTreeMap<u64, Local>>,
    shard_stats: Mutex<BTreeMap<u64, Arc<ShardStats>>>,
    shard_count: AtomicU64,
    renewal_count: AtomicU64,
    /// Server-wide counters.
    pub stats: ServerStats,
    cluster: Mutex<Option<Arc<pg::Cluster>>>,
    /// Coordination counters.
    pub coord_metrics: Arc<coord::CoordMetrics>,
    /// PostgreSQL mode, before the cluster is joined: why not yet.
    pending_db: Mutex<Option<String>>,
    /// Per shard: failures in a row, and when the last one was.
    streaks: Mutex<BTreeMap<u64, (u32, Instant, String)>>,
    /// Identities, permissions, quotas, forwarded-request proofs.
    pub auth: auth::Auth,
    /// The client listener's TLS configuration (reloaded on SIGHUP).
    pub tls: Option<Arc<tls::Reloadable>>,
    /// Connection counters of the listeners.
    pub conns: Arc<listener::ConnStats>,
    /// The lookup discovery service, with `--discovery-port`.
    pub discovery: Option<Arc<discovery::Discovery>>,
}

impl App {
    fn new(config: Config) -> Result<Arc<App>, String> {
        let shard_count = AtomicU64::new(config.shards);
        let renewal_count = AtomicU64::new(config.renewal_shards);
        let auth = auth::Auth::load(
            config.security.tokens.as_deref(),
            config.security.cluster_secret.as_deref(),
        )?;
        let tls = tls::server_config(&config.security)?.map(|c| Arc::new(tls::Reloadable::new(c)));
        let discovery = config
            .discovery
            .clone()
            .map(|s| Arc::new(discovery::Discovery::new(s, &config.outbound)));
        Ok(Arc::new(App {
            discovery,
            config,
            shards: RwLock::new(BTreeMap::new()),
            renewals: RwLock::new(BTreeMap::new()),
            local: Mutex::new(BTreeMap::new()),
            shard_stats: Mutex::new(BTreeMap::new()),
            shard_count,
            renewal_count,
            stats: ServerStats::default(),
            cluster: Mutex::new(None),
            coord_metrics: Arc::new(coord::CoordMetrics::default()),
            pending_db: Mutex::new(None),
            streaks: Mutex::new(BTreeMap::new()),
            auth,
            tls,
            conns: Arc::new(listener::ConnStats::default()),
        }))
    }

    /// Re-reads the TLS certificate and key and the tokens file (SIGHUP). Open connections
    /// keep what they had; a file that does not load leaves the old settings in force.
    pub fn reload(&self) {
        if let Some(t) = &self.tls {
            match t.reload(&self.config.security) {
                Ok(()) => tracing::info!("TLS certificate reloaded"),
                Err(e) => {
                    tracing::error!(error = %e, "TLS certificate not reloaded: kept the old one")
                }
            }
        }
        if self.auth.enabled() {
            match self.auth.reload() {
                Ok(n) => tracing::info!(identities = n, "tokens file reloaded"),
                Err(e) => tracing::error!(error = %e, "tokens file not reloaded: kept the old one"),
            }
        }
    }

    /// How many shards the cluster has.
    pub fn shard_count(&self) -> u64 {
        self.shard_count.load(Relaxed)
    }

    /// The shard `id`, if this server serves it.
    pub fn shard(&self, id: u64) -> Option<ShardHandle> {
        self.shards.read().unwrap_or_else(|p| p.into_inner()).get(&id).cloned()
    }

    /// How many renewal-service shards the cluster has (with PostgreSQL, the cluster row's
    /// number wins over `--renewal-shards`).
    pub fn renewal_count(&self) -> u64 {
        self.renewal_count.load(Relaxed)
    }

    /// Every shard's id, landlords and renewal services: `1..=` this.
    pub fn total_shards(&self) -> u64 {
        self.shard_count() + self.renewal_count()
    }

    /// The renewal-service shards' ids: after the landlords' (empty without
    /// `--renewal-shards`).
    pub fn renewal_ids(&self) -> std::ops::RangeInclusive<u64> {
        let first = self.shard_count() + 1;
        first..=self.total_shards()
    }

    /// Whether this server serves shard `id` now (a landlord, a renewal service or the
    /// discovery service).
    pub fn serves(&self, id: u64) -> bool {
        self.shard(id).is_some() || self.renewal(id).is_some() || discovery::serves(self, id)
    }

    /// Every shard this server may serve: landlords, renewal services, then the discovery
    /// service's (if it runs one).
    pub(crate) fn all_ids(&self) -> Vec<u64> {
        (1..=self.total_shards()).chain(self.discovery_id()).collect()
    }

    /// The discovery shard's id, if this server runs the discovery service.
    pub fn discovery_id(&self) -> Option<u64> {
        self.discovery.as_ref().map(|d| d.settings.id)
    }

    /// Takes shard `id` (of either kind) out of the routing table and stops it after writing
    /// what it answered. Whether there was one.
    pub(crate) async fn stop_shard(&self, id: u64) -> bool {
        if let Some(h) = self.remove(id) {
            h.stop().await;
            return true;
        }
        let h = self.renewals.write().unwrap_or_else(|p| p.into_inner()).remove(&id);
        match h {
            Some(h) => {
                self.stats.released.fetch_add(1, Relaxed);
                h.stop().await;
                true
            }
            None if self.discovery_id() == Some(id) => discovery::stop(self).await,
            None => false,
        }
    }

    /// Every renewal shard this server serves.
    pub(crate) fn renewal_handles(&self) -> Vec<renewal::RenewalHandle> {
        self.renewals.read().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }

    /// Whether `id` names a renewal-service shard of this cluster.
    pub fn is_renewal(&self, id: u64) -> bool {
        self.renewal_ids().contains(&id)
    }

    /// The renewal-service shard `id`, if this server serves it.
    pub fn renewal(&self, id: u64) -> Option<renewal::RenewalHandle> {
        self.renewals.read().unwrap_or_else(|p| p.into_inner()).get(&id).cloned()
    }

    pub(crate) fn insert_renewal(&self, h: renewal::RenewalHandle) {
        self.clear_local(h.id);
        self.renewals.write().unwrap_or_else(|p| p.into_inner()).insert(h.id, h);
        self.stats.acquired.fetch_add(1, Relaxed);
    }

    /// What a renewal shard's actor does when it ends: out of the routing table; a failed
    /// store is retried (reopened from disk).
    pub(crate) fn on_end_renewal(app: Weak<App>) -> impl FnOnce(u64, Ended) + Send + 'static {
        move |id, ended| {
            let Some(app) = app.upgrade() else { return };
            match &ended {
                Ended::Stopped => tracing::info!(shard = id, "renewal shard stopped"),
                Ended::Fenced => {
                    app.stats.fenced.fetch_add(1, Relaxed);
                    app.shard_stats(id).error(ErrorKind::Fenced);
                    tracing::warn!(shard = id, "renewal shard lost: the store refused a write")
                }
                Ended::Failed(_) => {}
            }
            let mut r = app.renewals.write().unwrap_or_else(|p| p.into_inner());
            if r.get(&id).is_some_and(|h| h.is_closed()) {
                r.remove(&id);
                app.stats.released.fetch_add(1, Relaxed);
            }
            drop(r);
            if let Ended::Failed(e) = &ended {
                app.set_failed(id, ErrorKind::Write, format!("store write failed: {e}"));
            }
            let cluster = app.cluster.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(c) = cluster {
                c.shard_ended(id, &ended);
            }
        }
    }

    /// This server's part in a PostgreSQL cluster, once joined.
    pub(crate) fn cluster(&self) -> Option<Arc<pg::Cluster>> {
        self.cluster.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The counters of shard `id` (kept for the life of the process, across its actors).
    pub fn shard_stats(&self, id: u64) -> Arc<ShardStats> {
        self.shard_stats
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(id)
            .or_insert_with(|| Arc::new(ShardStats::default()))
            .clone()
    }

    fn known_stats(&self, id: u64) -> Option<Arc<ShardStats>> {
        self.shard_stats.lock().unwrap_or_else(|p| p.into_inner()).get(&id).cloned()
    }

    fn handles(&self) -> Vec<ShardHandle> {
        self.shards.read().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }

    fn locals(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Local>> {
        self.local.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What this server knows of shard `id` that it handles but does not serve.
    pub(crate) fn local(&self, id: u64) -> Option<Local> {
        self.locals().get(&id).cloned()
    }

    /// Records that shard `id` is being restored here.
    pub(crate) fn set_taking_over(&self, id: u64, why: impl Into<String>) {
        let mut l = self.locals();
        let failures = l.get(&id).map_or(0, |x| x.failures);
        l.insert(
            id,
            Local {
                state: ShardState::TakingOver,
                why: why.into(),
                failures,
                retry_at: Instant::now(),
            },
        );
    }

    /// Records that shard `id` failed here: logged at ERROR when the reason is new, retried
    /// after a backoff that grows with the failures in a row. Returns the wait.
    pub(crate) fn set_failed(&self, id: u64, kind: ErrorKind, why: String) -> Duration {
        self.shard_stats(id).error(kind);
        let now = Instant::now();
        let (failures, new_reason) = {
            // A shard that fails again within a minute of its last failure (even if it was
            // served in between) keeps backing off; a reason is logged once until it changes.
            let mut st = self.streaks.lock().unwrap_or_else(|p| p.into_inner());
            let e = st.entry(id).or_insert((0, now, String::new()));
            if now.duration_since(e.1) > Duration::from_secs(60) {
                e.0 = 0;
                e.2.clear();
            }
            e.0 += 1;
            e.1 = now;
            let new_reason = e.2 != why;
            e.2 = why.clone();
            (e.0, new_reason)
        };
        let wait = backoff(failures);
        if new_reason {
            tracing::error!(shard = id, error = %why, retry_in_ms = wait.as_millis() as u64, "shard failed");
        }
        let mut l = self.locals();
        l.insert(
            id,
            Local { state: ShardState::Failed, why, failures, retry_at: Instant::now() + wait },
        );
        wait
    }

    /// Records that shard `id` is quarantined (the caller has marked it where every server
    /// sees it, and logged it).
    pub(crate) fn set_quarantined(&self, id: u64, why: String) {
        self.shard_stats(id).error(ErrorKind::Damaged);
        self.locals().insert(
            id,
            Local { state: ShardState::Quarantined, why, failures: 0, retry_at: Instant::now() },
        );
    }

    /// Forgets what was recorded of shard `id` (served again, or no business of this server).
    pub(crate) fn clear_local(&self, id: u64) {
        self.locals().remove(&id);
    }

    /// Makes every failed shard due for a retry now (its store answers again).
    pub(crate) fn retry_failed_now(&self) {
        for l in self.locals().values_mut() {
            if l.state == ShardState::Failed {
                l.retry_at = Instant::now();
            }
        }
    }

    /// Every shard as this server sees it now.
    pub fn shard_reports(&self) -> Vec<ShardReport> {
        let cluster = self.cluster.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(c) = cluster {
            return c.shard_reports();
        }
        if matches!(self.config.store, StoreKind::Postgres(_)) {
            return (1..=self.total_shards())
                .map(|id| ShardReport {
                    shard: id,
                    state: ShardState::Unowned,
                    owner: None,
                    epoch: None,
                    why: Some("not in the cluster yet (the database does not answer)".into()),
                    ok: false,
                })
                .collect();
        }
        let mut served = self
            .shards
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .copied()
            .collect::<Vec<_>>();
        served.extend(self.renewals.read().unwrap_or_else(|p| p.into_inner()).keys().copied());
        let locals = self.locals().clone();
        let discovery = self.discovery.as_ref().map(|d| discovery::report(self, d));
        (1..=self.total_shards())
            .map(|id| {
                if served.contains(&id) {
                    return ShardReport {
                        shard: id,
                        state: ShardState::Served,
                        owner: Some(self.config.advertise.clone()),
                        epoch: None,
                        why: None,
                        ok: true,
                    };
                }
                let (state, why) = match locals.get(&id) {
                    Some(l) => (l.state, l.why.clone()),
                    None => (ShardState::Failed, "not opened yet".to_string()),
                };
                ShardReport {
                    shard: id,
                    state,
                    owner: None,
                    epoch: None,
                    why: Some(why),
                    ok: false,
                }
            })
            .chain(discovery)
            .collect()
    }

    /// Why shard `id` is not served here, for a 503's body: its state and reason as
    /// `/readyz` shows them.
    pub fn unserved_why(&self, id: u64) -> String {
        match self.shard_reports().into_iter().find(|r| r.shard == id) {
            Some(r) => format!(
                "shard {id} is not served here: {}{}",
                r.state.label(),
                r.why.map(|w| format!(" ({w})")).unwrap_or_default()
            ),
            None => format!("shard {id} is not served here"),
        }
    }

    /// What `/readyz` answers.
    pub fn readiness(&self) -> Readiness {
        let cluster = self.cluster.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let (store, database, clock) = match (&cluster, &self.config.store) {
            (Some(c), _) => ("postgres", Some(c.db_report()), Some(c.clock_report())),
            (None, StoreKind::Postgres(_)) => {
                let error = self
                    .pending_db
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone()
                    .or_else(|| Some("connecting".into()));
                let guard = guard::Guard::new(
                    self.config.max_clock_offset_ms as f64,
                    self.config.max_clock_rate_ppm as f64,
                );
                (
                    "postgres",
                    Some(health::DbReport { connected: false, error }),
                    Some(guard.report()),
                )
            }
            (None, StoreKind::Files(_)) => ("files", None, None),
        };
        Readiness::new(self.config.name.clone(), store, database, clock, self.shard_reports())
    }

    /// The `/metrics` text.
    pub fn render_metrics(&self) -> String {
        let shards: Vec<ShardMetrics> = self
            .shard_reports()
            .into_iter()
            .map(|r| ShardMetrics {
                id: r.shard,
                state: r.state,
                stats: self.known_stats(r.shard),
                renewal: self.is_renewal(r.shard),
            })
            .collect();
        let pg = match &self.config.store {
            StoreKind::Postgres(_) => {
                let r = self.readiness();
                Some(metrics::PgMetrics {
                    db_connected: r.database.is_some_and(|d| d.connected),
                    clock: r.clock.expect("postgres mode has a clock report"),
                })
            }
            StoreKind::Files(_) => None,
        };
        let coord: Vec<_> = self
            .handles()
            .iter()
            .map(|h| (h.id, *h.coord_stats.lock().unwrap_or_else(|p| p.into_inner())))
            .collect();
        let mut out = metrics::render(&shards, &self.stats, pg.as_ref());
        self.conns.render(&mut out);
        self.coord_metrics.render(&mut out, &coord);
        if let Some(d) = &self.discovery {
            d.render(&mut out);
        }
        out
    }

    pub(crate) fn insert(&self, h: ShardHandle) {
        self.clear_local(h.id);
        self.shards.write().unwrap_or_else(|p| p.into_inner()).insert(h.id, h);
        self.stats.acquired.fetch_add(1, Relaxed);
    }

    pub(crate) fn remove(&self, id: u64) -> Option<ShardHandle> {
        let h = self.shards.write().unwrap_or_else(|p| p.into_inner()).remove(&id);
        if h.is_some() {
            self.stats.released.fetch_add(1, Relaxed);
        }
        h
    }

    /// What a shard's actor does when it ends: out of the routing table; a failed store is
    /// retried (file store: reopened from disk; PostgreSQL: taken back with a new epoch).
    pub(crate) fn on_end(app: Weak<App>) -> impl FnOnce(u64, Ended) + Send + 'static {
        move |id, ended| {
            let Some(app) = app.upgrade() else { return };
            match &ended {
                Ended::Stopped => tracing::info!(shard = id, "shard stopped"),
                Ended::Fenced => {
                    app.stats.fenced.fetch_add(1, Relaxed);
                    app.shard_stats(id).error(ErrorKind::Fenced);
                    tracing::warn!(shard = id, "shard lost: the store refused a write (fenced)")
                }
                Ended::Failed(_) => {}
            }
            // Only the handle of this actor (a newer one for the same shard stays).
            let mut shards = app.shards.write().unwrap_or_else(|p| p.into_inner());
            if shards.get(&id).is_some_and(|h| h.is_closed()) {
                shards.remove(&id);
                app.stats.released.fetch_add(1, Relaxed);
            }
            drop(shards);
            if let Ended::Failed(e) = &ended {
                app.set_failed(id, ErrorKind::Write, format!("store write failed: {e}"));
            }
            let cluster = app.cluster.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(c) = cluster {
                c.shard_ended(id, &ended);
            }
        }
    }

    /// Forwards a request for a shard this server does not serve to its owner, if one is
    /// known (PostgreSQL mode); `None` if there is nowhere to send it. An owner that does not
    /// answer in time gets a 503 with `Retry-After` at once.
    pub async fn forward(
        &self,
        shard: u64,
        landlord: Option<u64>,
        enc: Encoding,
        body: Bytes,
        identity: Option<&str>,
    ) -> Option<Response> {
        self.forward_to("/lease", shard, landlord, enc, body, identity, std::time::Duration::ZERO)
            .await
    }

    /// Forwards a request for `path` to the owner of `shard` (its landlord: the shard) with
    /// `extra` added to the query (covered by the forwarding proof, as the body is); `None`
    /// if there is nowhere to send it.
    pub async fn forward_query(
        &self,
        path: &str,
        shard: u64,
        enc: Encoding,
        body: Bytes,
        identity: Option<&str>,
        extra: Option<String>,
    ) -> Option<Response> {
        let cluster = self.cluster.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
        let r = cluster
            .forward(path, shard, Some(shard), enc, body, identity, Duration::ZERO, extra)
            .await;
        if r.is_some() {
            self.stats.forwarded.fetch_add(1, Relaxed);
        }
        r
    }

    /// Forwards a request for `path` (`/lease`, `/coord`) to the owner of `shard`, waiting up
    /// to `--forward-timeout-ms` plus `held` (the time the owner may hold the request: an
    /// acquire's wait, a long poll's) for its answer; `None` if there is nowhere to send it.
    #[allow(clippy::too_many_arguments)] // what a forward carries, each distinct
    pub async fn forward_to(
        &self,
        path: &str,
        shard: u64,
        landlord: Option<u64>,
        enc: Encoding,
        body: Bytes,
        identity: Option<&str>,
        held: std::time::Duration,
    ) -> Option<Response> {
        let cluster = self.cluster.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
        let r = cluster.forward(path, shard, landlord, enc, body, identity, held, None).await;
        if r.is_some() {
            self.stats.forwarded.fetch_add(1, Relaxed);
        }
        r
    }
}

/// Runs a server on `listener` until `shutdown` completes; then stops every shard after
/// writing what it answered (and, with PostgreSQL, gives up its ownership leases).
pub async fn run(
    config: Config,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let mut config = config;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let scheme = config.security.scheme();
    if config.listen.port() == 0 && config.advertise == format!("http://{}", config.listen) {
        // Port 0 (tests, scripts): advertise the port actually bound.
        if config.name == config.advertise {
            config.name = format!("{scheme}://{addr}");
        }
        config.advertise = format!("{scheme}://{addr}");
    }
    let app = App::new(config.clone())?;
    match &config.store {
        StoreKind::Files(data) => {
            files::open_all(&app, data).await?;
            discovery::start(&app, Some(data)).await?;
            tokio::spawn(files::supervise(Arc::downgrade(&app), data.clone()));
        }
        StoreKind::Postgres(url) => {
            // Serve (livez, readyz: 503) while the database is not there yet; join the cluster
            // as soon as it answers.
            pg::check_url(url)?;
            // Every server with --discovery-port binds it; only the shard's owner acts on
            // what it hears.
            discovery::start(&app, None).await?;
            let (app2, url) = (app.clone(), url.clone());
            tokio::spawn(async move {
                let mut failures = 0;
                loop {
                    match pg::Cluster::start(app2.clone(), &url).await {
                        Ok(c) => {
                            *app2.cluster.lock().unwrap_or_else(|p| p.into_inner()) = Some(c);
                            *app2.pending_db.lock().unwrap_or_else(|p| p.into_inner()) = None;
                            return;
                        }
                        Err(e) => {
                            failures += 1;
                            let wait = backoff(failures);
                            {
                                let mut last =
                                    app2.pending_db.lock().unwrap_or_else(|p| p.into_inner());
                                if last.as_deref() != Some(e.as_str()) {
                                    tracing::error!(error = %e, retry_in_ms = wait.as_millis() as u64, "cannot join the cluster yet");
                                }
                                *last = Some(e);
                            }
                            tokio::time::sleep(wait).await;
                        }
                    }
                }
            });
        }
    }
    // The operators' listener: metrics and health without a token.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut metrics_addr = None;
    let metrics_task = match config.security.metrics_listen {
        Some(a) => {
            let l = tokio::net::TcpListener::bind(a)
                .await
                .map_err(|e| format!("cannot listen on {a} (--metrics-listen): {e}"))?;
            metrics_addr = Some(l.local_addr().map_err(|e| e.to_string())?);
            let mut rx = stop_rx.clone();
            Some(tokio::spawn(listener::serve(
                l,
                http::operator_router(app.clone()),
                listener::ConnLimits::of(&config.security),
                None,
                app.conns.clone(),
                async move {
                    let _ = rx.wait_for(|s| *s).await;
                },
            )))
        }
        None => None,
    };
    // SIGHUP: reload certificates and tokens.
    let reloader = {
        let app = Arc::downgrade(&app);
        tokio::spawn(async move {
            let Ok(mut hup) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            else {
                return;
            };
            while hup.recv().await.is_some() {
                let Some(app) = app.upgrade() else { return };
                app.reload();
            }
        })
    };
    // One line on stdout for scripts and tests that started us on port 0.
    println!("leasehold-server listening on {scheme}://{addr}");
    if let Some(m) = metrics_addr {
        println!("leasehold-server metrics on http://{m}");
    }
    tracing::info!(
        listen = %addr,
        shards = app.shard_count(),
        store = ?config.store,
        tls = app.tls.is_some(),
        tokens = app.auth.enabled(),
        "serving"
    );
    listener::serve(
        listener,
        http::router(app.clone()),
        listener::ConnLimits::of(&config.security),
        app.tls.clone(),
        app.conns.clone(),
        shutdown,
    )
    .await;
    let _ = stop_tx.send(true);
    if let Some(t) = metrics_task {
        let _ = t.await;
    }
    reloader.abort();
    tracing::info!("shutting down");
    let cluster = app.cluster.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(c) = cluster {
        c.shutdown().await;
    } else {
        for h in app.handles() {
            h.stop().await;
        }
    }
    for h in app.renewal_handles() {
        h.stop().await;
    }
    if let Some(h) = app.discovery.as_ref().and_then(|d| d.handle()) {
        h.stop().await;
    }
    Ok(())
}
