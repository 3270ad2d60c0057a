//! # leasehold-server
//!
//! A lease server: leasehold's wire protocol over HTTP/1.1 (axum on tokio), many landlords
//! (*shards*) per process, each driven by an actor with group commit, kept in the embedded
//! file store (`--data DIR`, one directory per shard) or in PostgreSQL (`--store
//! postgres://...`, shards shared by several servers, owned through fenced ownership leases).
//!
//! - [`shard`]: the actor of one shard (answer, write one frame, release the replies);
//! - [`files`]: shards in the embedded file store;
//! - [`pg`]: shards in PostgreSQL, ownership and failover;
//! - [`http`]: routes, encodings, routing to shards, forwarding;
//! - [`coord`]: coordination over HTTP (acquire with a wait, watches by long polling),
//!   routing that keeps exclusive resources, pools and watched prefixes in one shard;
#![deny(missing_docs)]

pub mod clock;
pub mod config;
pub mod coord;
pub mod files;
pub mod http;
pub mod metrics;
pub mod pg;
pub mod shard;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock, Weak};

use axum::body::Bytes;
use axum::response::Response;
use leasehold::Encoding;

use crate::config::{Config, StoreKind};
use crate::metrics::ServerStats;
use crate::shard::{Ended, ShardHandle};

/// A running server's shared state.
pub struct App {
    /// Settings.
    pub config: Config,
    shards: RwLock<BTreeMap<u64, ShardHandle>>,
    failed: Mutex<BTreeMap<u64, String>>,
    shard_count: AtomicU64,
    /// Server-wide counters.
    pub stats: ServerStats,
    cluster: Mutex<Option<Arc<pg::Cluster>>>,
    /// Coordination counters.
    pub coord_metrics: Arc<coord::CoordMetrics>,
}

impl App {
    fn new(config: Config) -> Arc<App> {
        let shard_count = AtomicU64::new(config.shards);
        Arc::new(App {
            config,
            shards: RwLock::new(BTreeMap::new()),
            failed: Mutex::new(BTreeMap::new()),
            shard_count,
            stats: ServerStats::default(),
            cluster: Mutex::new(None),
            coord_metrics: Arc::new(coord::CoordMetrics::default()),
        })
    }

    /// How many shards the cluster has.
    pub fn shard_count(&self) -> u64 {
        self.shard_count.load(Relaxed)
    }

    /// The shard `id`, if this server serves it.
    pub fn shard(&self, id: u64) -> Option<ShardHandle> {
        self.shards.read().unwrap_or_else(|p| p.into_inner()).get(&id).cloned()
    }

    /// Shards served, and those whose store failed.
    pub fn health(&self) -> (usize, Vec<u64>) {
        let n = self.shards.read().unwrap_or_else(|p| p.into_inner()).len();
        let failed =
            self.failed.lock().unwrap_or_else(|p| p.into_inner()).keys().copied().collect();
        (n, failed)
    }

    fn handles(&self) -> Vec<ShardHandle> {
        self.shards.read().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }

    /// The `/metrics` text.
    pub fn render_metrics(&self) -> String {
        let handles = self.handles();
        let coord: Vec<_> = handles
            .iter()
            .map(|h| (h.id, *h.coord_stats.lock().unwrap_or_else(|p| p.into_inner())))
            .collect();
        let shards: Vec<_> = handles.into_iter().map(|h| (h.id, h.stats)).collect();
        let mut out = metrics::render(&shards, &self.stats);
        self.coord_metrics.render(&mut out, &coord);
        out
    }

    pub(crate) fn insert(&self, h: ShardHandle) {
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
    /// remembered for `/healthz`.
    pub(crate) fn on_end(app: Weak<App>) -> impl FnOnce(u64, Ended) + Send + 'static {
        move |id, ended| {
            let Some(app) = app.upgrade() else { return };
            match &ended {
                Ended::Stopped => tracing::info!(shard = id, "shard stopped"),
                Ended::Fenced => {
                    app.stats.fenced.fetch_add(1, Relaxed);
                    tracing::warn!(shard = id, "shard lost: the store refused a write (fenced)")
                }
                Ended::Failed(e) => tracing::error!(shard = id, error = %e, "shard's store failed"),
            }
            // Only the handle of this actor (a newer one for the same shard stays).
            let mut shards = app.shards.write().unwrap_or_else(|p| p.into_inner());
            if shards.get(&id).is_some_and(|h| h.is_closed()) {
                shards.remove(&id);
                app.stats.released.fetch_add(1, Relaxed);
            }
            drop(shards);
            if let Ended::Failed(e) = ended {
                if matches!(app.config.store, StoreKind::Files(_)) {
                    app.failed.lock().unwrap_or_else(|p| p.into_inner()).insert(id, e);
                }
            }
            let cluster = app.cluster.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(c) = cluster {
                c.shard_ended(id);
            }
        }
    }

    /// Forwards a request for a shard this server does not serve to its owner, if one is
    /// known (PostgreSQL mode); `None` if there is nowhere to send it.
    pub async fn forward(
        &self,
        shard: u64,
        landlord: Option<u64>,
        enc: Encoding,
        body: Bytes,
    ) -> Option<Response> {
        self.forward_to("/lease", shard, landlord, enc, body, std::time::Duration::from_secs(2))
            .await
    }

    /// Forwards a request for `path` (`/lease`, `/coord`) to the owner of `shard`, waiting up
    /// to `timeout` for its answer to begin; `None` if there is nowhere to send it.
    pub async fn forward_to(
        &self,
        path: &str,
        shard: u64,
        landlord: Option<u64>,
        enc: Encoding,
        body: Bytes,
        timeout: std::time::Duration,
    ) -> Option<Response> {
        let cluster = self.cluster.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
        let r = cluster.forward(path, shard, landlord, enc, body, timeout).await;
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
    let app = App::new(config.clone());
    match &config.store {
        StoreKind::Files(data) => open_files(&app, data).await?,
        StoreKind::Postgres(url) => {
            let cluster = pg::Cluster::start(app.clone(), url).await?;
            *app.cluster.lock().unwrap_or_else(|p| p.into_inner()) = Some(cluster);
        }
    }
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    // One line on stdout for scripts and tests that started us on port 0.
    println!("leasehold-server listening on http://{addr}");
    tracing::info!(
        listen = %addr,
        shards = app.shard_count(),
        store = ?config.store,
        "serving"
    );
    axum::serve(listener, http::router(app.clone()))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|e| e.to_string())?;
    tracing::info!("shutting down");
    let cluster = app.cluster.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(c) = cluster {
        c.shutdown().await;
    } else {
        for h in app.handles() {
            h.stop().await;
        }
    }
    Ok(())
}

async fn open_files(app: &Arc<App>, data: &std::path::Path) -> Result<(), String> {
    std::fs::create_dir_all(data).map_err(|e| format!("{}: {e}", data.display()))?;
    files::check_shard_count(data, app.config.shards)?;
    for id in 1..=app.config.shards {
        let (data, c) = (data.to_path_buf(), app.config.clone());
        let opened = tokio::task::spawn_blocking(move || {
            files::open_shard(&data, id, &c.policy, c.grace_ms, c.limits, c.store_config, &c.coord)
        })
        .await
        .map_err(|e| e.to_string())??;
        tracing::info!(
            shard = id,
            leases = opened.ll.len(),
            replayed = opened.replayed,
            created = opened.created,
            torn = opened.torn.as_deref().unwrap_or("none"),
            "shard opened"
        );
        let h = shard::spawn(
            id,
            opened.ll,
            opened.planner,
            opened.writer,
            app.coord_metrics.clone(),
            App::on_end(Arc::downgrade(app)),
        );
        app.insert(h);
    }
    Ok(())
}
