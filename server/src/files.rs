//! Shards in the embedded file store: one directory per shard (`<data>/shard-<n>`), opened and
//! recovered with `leasehold-store`, written by a writer thread of its own (one per shard).
//!
//! # When a write fails
//!
//! A failed append or sync (`ENOSPC`, `EIO`, `EFBIG`, ...) ends the shard's actor: nothing
//! waiting for that write is acknowledged, and the actor's in-memory state (which may be ahead
//! of the disk) is dropped with it. The shard is then *failed* and `supervise` retries it
//! with a growing backoff (250 ms to 8 s) by reopening the directory from disk, exactly as a
//! restart would, and then rewriting it: a new snapshot of what was read (written to a new
//! file, synced, renamed, directory synced) replaces the log. The rewrite is what makes a
//! failed `fsync` safe: after one, Linux may have dropped the dirty pages or marked them clean
//! while the page cache still shows them, so what a reread finds may not be on the disk; only
//! data written and synced again through a new file is known to be. Records that were read
//! back but never acknowledged become durable that way, which is allowed (a crash after a
//! sync and before the reply does the same). Only when the rewrite has succeeded does the
//! shard serve again.
//!
//! # The durable tip
//!
//! After every write the writer records the last durable record in a small `tip` file (16
//! bytes, checksummed), with a plain write and no second `fsync`. Opening a shard whose log
//! ends before its tip refuses it (records that were acknowledged are missing: a deleted or
//! truncated last frame or segment) and quarantines it. Because the tip is never synced, it
//! is a lower bound of what was durable: after a process crash (the page cache survives) it is
//! exact, but after a power loss or kernel crash it may lag by the last few commits, and a
//! loss of those would go unseen. Detecting that too would take a second `fsync` per commit.

use std::fs::{File, OpenOptions};
use std::future::Future;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use leasehold::store::{Opened, Store, StoreConfig};
use leasehold::{LandlordConfig, LandlordId, PolicySpec};
use leasehold_store::Dir;

use crate::clock::now_ms;
use crate::coord::CoordSettings;
use crate::health::ShardState;
use crate::metrics::ErrorKind;
use crate::quarantine;
use crate::shard::{self, Job, Planner, WriteError, Writer, LL};
use crate::App;

/// The file that records a shard's last durable record (see the module docs).
pub const TIP_FILE: &str = "tip";
const TIP_MAGIC: &[u8; 4] = b"LHT1";

/// The bytes of a tip file recording `seq`.
pub fn tip_bytes(seq: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..4].copy_from_slice(TIP_MAGIC);
    b[4..12].copy_from_slice(&seq.to_le_bytes());
    let crc = leasehold::journal::crc(&b[..12]);
    b[12..].copy_from_slice(&crc.to_le_bytes());
    b
}

/// The record a tip file's bytes name; `None` if they are not a valid tip (a torn write of
/// it: the tip is then unknown, and nothing is checked against it).
pub fn read_tip(bytes: &[u8]) -> Option<u64> {
    if bytes.len() != 16 || &bytes[..4] != TIP_MAGIC {
        return None;
    }
    let crc = u32::from_le_bytes(bytes[12..16].try_into().ok()?);
    (leasehold::journal::crc(&bytes[..12]) == crc)
        .then(|| u64::from_le_bytes(bytes[4..12].try_into().expect("8 bytes")))
}

/// Records `seq` as the shard's durable tip (in place, not synced).
pub(crate) fn write_tip(file: &File, seq: u64) -> std::io::Result<()> {
    file.write_all_at(&tip_bytes(seq), 0)
}

pub(crate) fn open_tip(dir: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).write(true).truncate(false).open(dir.join(TIP_FILE))
}

/// Carries out a shard's file operations, one job at a time, off the async threads.
pub struct FileWriter {
    dir: Option<Dir>,
    tip: Option<File>,
}

impl FileWriter {
    /// A writer of the opened directory `dir`, recording the durable tip in `tip`.
    pub(crate) fn new(dir: Dir, tip: File) -> FileWriter {
        FileWriter { dir: Some(dir), tip: Some(tip) }
    }
}

impl Writer for FileWriter {
    fn write(
        &mut self,
        job: Job,
    ) -> Pin<Box<dyn Future<Output = Result<(), WriteError>> + Send + '_>> {
        Box::pin(async move {
            let Job::Files { ops, durable } = job else {
                return Err(WriteError::Failed("a file store was handed database rows".into()));
            };
            // After a failure the directory (and its lock) is gone: the shard is reopened from
            // disk, never written again from this actor's state.
            let Some(mut dir) = self.dir.take() else {
                return Err(WriteError::Failed("an earlier write failed".into()));
            };
            // On the writer's own thread (`blocking`): the I/O runs here, inline.
            dir.apply_all(&ops).map_err(|e| WriteError::Failed(e.to_string()))?;
            if let Some(t) = &self.tip {
                // Not synced, and not fatal: the tip is a lower bound (module docs).
                if let Err(e) = write_tip(t, durable) {
                    tracing::warn!(dir = %dir.path().display(), error = %e, "could not record the durable tip");
                }
            }
            self.dir = Some(dir);
            Ok(())
        })
    }

    fn blocking(&self) -> bool {
        true
    }
}

/// The directory of shard `id` under `data`.
pub fn shard_dir(data: &Path, id: u64) -> PathBuf {
    data.join(format!("shard-{id}"))
}

/// A fresh 32-byte cookie seed from the operating system.
pub fn fresh_seed() -> [u8; 32] {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).expect("the operating system's random source");
    seed
}

/// A new journaled landlord for shard `id`.
pub fn new_landlord(
    id: u64,
    policy: &PolicySpec,
    grace: i64,
    limits: leasehold::Limits,
    coord: &CoordSettings,
) -> leasehold::Result<LL> {
    let mut config = LandlordConfig::new(LandlordId(id), fresh_seed()).with_grace(grace);
    config.limits = limits;
    let mut ll = LL::new(config, policy.build()?);
    ll.enable_journal();
    ll.enable_coordination(coord.core())?;
    Ok(ll)
}

/// The file in a data directory that records how many shards it was made with.
pub const SHARDS_FILE: &str = "shards";

/// Refuses a data directory made with another number of shards: resources would move to other
/// landlords, where an exclusive resource could be granted twice (one lease in its old shard,
/// one in its new) and fencing tokens could go back (each landlord counts its own). Records
/// the number in a new directory (or one made before the number was recorded).
pub fn check_shard_count(data: &Path, shards: u64) -> Result<(), String> {
    let path = data.join(SHARDS_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(n) if n == shards => Ok(()),
            Ok(n) => Err(format!(
                "{} was made with {n} shards, not {shards}: changing the number of shards moves \
                 resources to other landlords (an exclusive resource could be granted twice, a \
                 fencing token could go back); start with --shards {n}",
                data.display()
            )),
            Err(_) => Err(format!("{}: not a number of shards: {text:?}", path.display())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::write(&path, format!("{shards}\n"))
                .map_err(|e| format!("{}: {e}", path.display()))
        }
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// What opening a shard's directory found.
pub struct OpenedShard {
    /// The landlord, recovered and resumed.
    pub ll: LL,
    /// Its store's bookkeeping.
    pub planner: Planner,
    /// Its writer.
    pub writer: FileWriter,
    /// Journal records replayed on top of the snapshot.
    pub replayed: u64,
    /// A torn tail that was cut, if any.
    pub torn: Option<String>,
    /// Whether the directory was new.
    pub created: bool,
}

/// Why a shard's directory could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// Its stored state is refused (damage, missing records, a foreign landlord): the shard
    /// must be quarantined, not retried.
    Damaged(String),
    /// Another process (or a writer of this one not yet gone) holds its lock.
    Busy(String),
    /// An I/O error that may pass (no space, a read error): retry.
    Io(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Damaged(m) | OpenError::Busy(m) | OpenError::Io(m) => f.write_str(m),
        }
    }
}

/// A shard's directory as [`open_dir`] opened it: locked, its state restored, its log
/// tidied.
pub(crate) struct OpenedDir<S> {
    pub path: PathBuf,
    pub dir: Dir,
    pub state: S,
    pub store: Store,
    pub recovered: leasehold::journal::Recovered,
    pub created: bool,
    /// The last record the log held.
    pub last: u64,
}

/// Opens (or creates) shard `id`'s directory in `data`, for a landlord, a renewal service or
/// the discovery service: takes the directory's lock, reads it, refuses log segments without
/// the snapshot (which holds `seed`; `afresh`: what would start afresh), opens the store
/// (`build`: the state of the snapshot, or a new state), refuses a state that is not shard
/// `id`'s (`foreign`: why, if so) and a log that ends before the durable tip, and tidies up
/// (a torn tail is cut).
#[allow(clippy::too_many_arguments)] // the shard, and what differs between its kinds
pub(crate) fn open_dir<S: leasehold::journal::Journaled>(
    data: &Path,
    id: u64,
    config: StoreConfig,
    seed: &str,
    afresh: &str,
    build: impl FnOnce(Option<&[u8]>) -> leasehold::Result<S>,
    foreign: impl FnOnce(&S) -> Option<String>,
) -> Result<OpenedDir<S>, OpenError> {
    let path = shard_dir(data, id);
    let io = |e: std::io::Error| OpenError::Io(format!("{}: {e}", path.display()));
    let mut dir = Dir::open(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            OpenError::Busy(format!("{}: {e}", path.display()))
        } else {
            io(e)
        }
    })?;
    let files = dir.read().map_err(io)?;
    let damaged = |m: String| OpenError::Damaged(format!("{}: {m}", path.display()));
    let has = |f: &dyn Fn(&str) -> bool| files.iter().any(|(n, _)| f(n));
    if !has(&|n| n == leasehold::store::SNAPSHOT_FILE) && has(&|n| n.ends_with(".lhj")) {
        // The snapshot holds the seed: without it no log can be replayed.
        return Err(damaged(format!(
            "the snapshot is missing but log segments remain: restore the snapshot from a \
             backup (it holds {seed}); refusing to start {afresh}"
        )));
    }
    let tip = files.iter().find(|(n, _)| n == TIP_FILE).and_then(|(_, b)| read_tip(b));
    let Opened { state, store, ops, recovered, created } =
        Store::open(config, &files, Some(now_ms()), build).map_err(|e| damaged(e.to_string()))?;
    if let Some(why) = foreign(&state) {
        return Err(damaged(why));
    }
    let last = store.committed();
    if let Some(tip) = tip.filter(|&t| t > last) {
        return Err(damaged(format!(
            "records {}..={tip} are missing: the log ends at record {last}, but record {tip} was \
             durable (the tip file); a deleted or truncated log",
            last + 1
        )));
    }
    dir.apply_all(&ops).map_err(io)?;
    Ok(OpenedDir { path, dir, state, store, recovered, created, last })
}

/// Opens (or creates) shard `id` in `data`: takes the directory's lock, reads the snapshot and
/// the log, replays it, checks it against the durable tip, tidies up (a torn tail is cut), and
/// resumes the landlord's time. With `rewrite`, it then writes a new snapshot of what it read
/// and drops the log (after a failed write: see the module docs). Blocking: call it from a
/// blocking thread or before serving.
#[allow(clippy::too_many_arguments)]
pub fn open_shard(
    data: &Path,
    id: u64,
    policy: &PolicySpec,
    grace: i64,
    limits: leasehold::Limits,
    config: StoreConfig,
    coord: &CoordSettings,
    rewrite: bool,
) -> Result<OpenedShard, OpenError> {
    // Coordination is on before the journal is replayed (replay counts tokens and makes
    // events as the live landlord did).
    let build = |snapshot: Option<&[u8]>| match snapshot {
        Some(bytes) => {
            let mut ll = LL::from_snapshot_bytes(bytes, policy.build()?)?;
            ll.enable_coordination(coord.core())?;
            Ok(ll)
        }
        None => new_landlord(id, policy, grace, limits, coord),
    };
    let foreign = |ll: &LL| {
        (ll.id() != LandlordId(id)).then(|| format!("holds landlord {}, not shard {id}", ll.id().0))
    };
    let (seed, afresh) = ("the shard's cookie seed", "the shard afresh");
    let OpenedDir { path, mut dir, state: mut ll, mut store, recovered, created, last } =
        open_dir(data, id, config, seed, afresh, build, foreign)?;
    let io = |e: std::io::Error| OpenError::Io(format!("{}: {e}", path.display()));
    if rewrite {
        let ops = store.compact(&mut ll);
        dir.apply_all(&ops).map_err(io)?;
    }
    // Records the recovery itself wrote (relaxed renewals: the `apply` record that extends
    // reserved leases) are durable before the shard serves, and before the tip names them.
    if ll.journal_seq() > store.committed() {
        if let Some(c) = store.commit(&mut ll) {
            dir.apply_all(&c.ops).map_err(io)?;
        }
        ll.set_durable(store.committed());
    }
    let last = last.max(store.committed());
    let tip = open_tip(&path).map_err(io)?;
    write_tip(&tip, ll.journal_seq().max(last)).map_err(io)?;
    Ok(OpenedShard {
        ll,
        planner: Planner::Files(store),
        writer: FileWriter { dir: Some(dir), tip: Some(tip) },
        replayed: recovered.replayed,
        torn: recovered.torn.map(|(_, _, why)| why),
        created,
    })
}

/// The file in a data directory that records how many renewal-service shards it has.
pub const RENEWAL_SHARDS_FILE: &str = "renewal-shards";

/// Refuses fewer renewal-service shards than a data directory was made with (their sets would
/// be dropped in silence); records a new number (more shards add services, moving nothing).
pub fn check_renewal_count(data: &Path, renewal_shards: u64) -> Result<(), String> {
    let path = data.join(RENEWAL_SHARDS_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(n) if n > renewal_shards => Err(format!(
                "{} has {n} renewal-service shards, not {renewal_shards}: fewer would drop \
                 the renewal sets of the others; start with --renewal-shards {n} or more",
                data.display()
            )),
            Ok(n) if n == renewal_shards => Ok(()),
            Ok(_) => std::fs::write(&path, format!("{renewal_shards}\n"))
                .map_err(|e| format!("{}: {e}", path.display())),
            Err(_) => Err(format!("{}: not a number of shards: {text:?}", path.display())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if renewal_shards == 0 {
                return Ok(());
            }
            std::fs::write(&path, format!("{renewal_shards}\n"))
                .map_err(|e| format!("{}: {e}", path.display()))
        }
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// What opening a renewal-service shard's directory found.
pub struct OpenedRenewal {
    /// The service, recovered and resumed.
    pub svc: leasehold::service::RenewalService,
    /// Its store's bookkeeping.
    pub planner: Planner,
    /// Its writer.
    pub writer: FileWriter,
    /// Journal records replayed on top of the snapshot.
    pub replayed: u64,
    /// A torn tail that was cut, if any.
    pub torn: Option<String>,
    /// Whether the directory was new.
    pub created: bool,
}

/// Opens (or creates) renewal-service shard `id` in `data`, as [`open_shard`] opens a
/// landlord's: the lock, the snapshot and the log, the durable tip, a torn tail cut, the
/// service resumed at the server's clock (set leases do not count the time down; client
/// leases and memberships are absolute, on the epoch clock). With `rewrite`, a new snapshot
/// replaces the log (after a failed write).
pub fn open_renewal(
    data: &Path,
    id: u64,
    set_policy: &PolicySpec,
    config: StoreConfig,
    rewrite: bool,
) -> Result<OpenedRenewal, OpenError> {
    use leasehold::service::RenewalService;
    let build = |snapshot: Option<&[u8]>| match snapshot {
        Some(bytes) => RenewalService::from_snapshot_bytes(bytes),
        None => new_renewal_service(id, set_policy),
    };
    let foreign = |svc: &RenewalService| {
        let held = svc.id().0;
        (held != id).then(|| format!("holds renewal service {held}, not shard {id}"))
    };
    let (seed, afresh) = ("the set leases' cookie seed", "the shard afresh");
    let OpenedDir { path, mut dir, state: mut svc, mut store, recovered, created, last } =
        open_dir(data, id, config, seed, afresh, build, foreign)?;
    let io = |e: std::io::Error| OpenError::Io(format!("{}: {e}", path.display()));
    if rewrite {
        let ops = store.compact(&mut svc);
        dir.apply_all(&ops).map_err(io)?;
    }
    let tip = open_tip(&path).map_err(io)?;
    write_tip(&tip, svc.journal_seq().max(last)).map_err(io)?;
    Ok(OpenedRenewal {
        svc,
        planner: Planner::Files(store),
        writer: FileWriter { dir: Some(dir), tip: Some(tip) },
        replayed: recovered.replayed,
        torn: recovered.torn.map(|(_, _, why)| why),
        created,
    })
}

/// A new renewal service for shard `id`, with a journal (file store and PostgreSQL alike).
pub fn new_renewal_service(
    id: u64,
    set_policy: &PolicySpec,
) -> leasehold::Result<leasehold::service::RenewalService> {
    use leasehold::service::{RenewalService, RenewalServiceConfig};
    let mut c = RenewalServiceConfig::new(LandlordId(id), fresh_seed());
    c.set_policy = set_policy.clone();
    // Renew client leases at half their grant (the core's default is an eighth): a restart
    // or a takeover of the service shorter than half a grant then loses none of them. Kept in
    // the snapshot: the setting of a service is the one it was made with.
    c.manager.renew_divisor = 2;
    let mut svc = RenewalService::new(c)?;
    svc.enable_journal();
    Ok(svc)
}

/// Opens renewal shard `id` on a blocking thread and serves it (see [`open_and_serve`]).
async fn open_and_serve_renewal(
    app: &Arc<App>,
    data: &Path,
    id: u64,
    rewrite: bool,
) -> Result<(), OpenError> {
    let (dir, c) = (data.to_path_buf(), app.config.clone());
    let opened = tokio::task::spawn_blocking(move || {
        open_renewal(&dir, id, &c.set_policy, c.store_config, rewrite)
    })
    .await
    .map_err(|e| OpenError::Io(format!("opening thread: {e}")))?;
    match opened {
        Ok(o) => {
            tracing::info!(
                shard = id,
                sets = o.svc.sets().len(),
                client_leases = o.svc.manager().len(),
                replayed = o.replayed,
                created = o.created,
                rewritten = rewrite,
                torn = o.torn.as_deref().unwrap_or("none"),
                "renewal shard opened"
            );
            let h = crate::renewal::spawn(
                id,
                o.svc,
                o.planner,
                o.writer,
                app.shard_stats(id),
                &app.config,
                App::on_end_renewal(Arc::downgrade(app)),
            );
            app.insert_renewal(h);
            Ok(())
        }
        Err(OpenError::Damaged(why)) => {
            quarantine_shard(app, data, id, why);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Opens shard `id` on a blocking thread and serves it; a damaged one is quarantined, one
/// that failed for a passing reason is retried later. `Err` only for a busy directory at
/// start (another server runs on it).
async fn open_and_serve(
    app: &Arc<App>,
    data: &Path,
    id: u64,
    rewrite: bool,
) -> Result<(), OpenError> {
    if app.is_renewal(id) {
        return open_and_serve_renewal(app, data, id, rewrite).await;
    }
    let (dir, c) = (data.to_path_buf(), app.config.clone());
    let opened = tokio::task::spawn_blocking(move || {
        open_shard(&dir, id, &c.policy, c.grace_ms, c.limits, c.store_config, &c.coord, rewrite)
    })
    .await
    .map_err(|e| OpenError::Io(format!("opening thread: {e}")))?;
    match opened {
        Ok(mut opened) => {
            opened.ll.set_relaxed_renewals(app.config.relaxed_renewals);
            tracing::info!(
                shard = id,
                leases = opened.ll.len(),
                replayed = opened.replayed,
                created = opened.created,
                rewritten = rewrite,
                torn = opened.torn.as_deref().unwrap_or("none"),
                "shard opened"
            );
            let h = shard::spawn(
                id,
                opened.ll,
                opened.planner,
                opened.writer,
                app.shard_stats(id),
                app.coord_metrics.clone(),
                App::on_end(Arc::downgrade(app)),
            );
            app.insert(h);
            Ok(())
        }
        Err(OpenError::Damaged(why)) => {
            quarantine_shard(app, data, id, why);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Marks shard `id` quarantined on disk (so that a restart, and the operator, see it), logs
/// it at ERROR and counts it.
pub(crate) fn quarantine_shard(app: &App, data: &Path, id: u64, why: String) {
    tracing::error!(
        shard = id,
        reason = %why,
        "shard quarantined: its stored state is refused; nothing of it is served until an \
         operator repairs or restores it and releases it (leasehold-server quarantine inspect \
         --data DIR --shard N)"
    );
    if let Err(e) = quarantine::mark_files(data, id, &why, &app.config.name) {
        tracing::error!(shard = id, error = %e, "could not write the quarantine marker");
    }
    app.set_quarantined(id, why);
}

/// Opens every shard at start. A shard already marked quarantined stays so; a damaged one
/// is quarantined; one that fails for a passing reason (no space, I/O) is retried by
/// [`supervise`]. A directory in use by another process stops the server.
pub(crate) async fn open_all(app: &Arc<App>, data: &Path) -> Result<(), String> {
    std::fs::create_dir_all(data).map_err(|e| format!("{}: {e}", data.display()))?;
    check_shard_count(data, app.config.shards)?;
    check_renewal_count(data, app.config.renewal_shards)?;
    for id in 1..=app.config.shards + app.config.renewal_shards {
        if let Some(q) = quarantine::files_marker(data, id) {
            tracing::error!(shard = id, reason = %q.reason, "shard is quarantined (marker found); not served");
            app.set_quarantined(id, q.reason);
            continue;
        }
        match open_and_serve(app, data, id, false).await {
            Ok(()) => {}
            Err(OpenError::Busy(m)) => return Err(m),
            Err(e) => {
                app.set_failed(id, ErrorKind::Open, e.to_string());
            }
        }
    }
    Ok(())
}

/// Heals failed shards without a restart: reopens each from disk when its backoff is due
/// (see the module docs), and takes a quarantined shard back once an operator has released
/// it (its marker is gone). Runs until the app is dropped.
pub(crate) async fn supervise(app: Weak<App>, data: PathBuf) {
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let Some(app) = app.upgrade() else { return };
        let now = Instant::now();
        for id in 1..=app.total_shards() {
            let Some(l) = app.local(id) else { continue };
            match l.state {
                ShardState::Failed if l.retry_at <= now => {
                    if let Some(q) = quarantine::files_marker(&data, id) {
                        app.set_quarantined(id, q.reason);
                        continue;
                    }
                    app.set_taking_over(id, format!("reopening after: {}", l.why));
                    match open_and_serve(&app, &data, id, true).await {
                        Ok(()) => {
                            if app.shard(id).is_some() || app.renewal(id).is_some() {
                                tracing::info!(
                                    shard = id,
                                    failures = l.failures,
                                    "shard served again"
                                );
                            }
                        }
                        Err(e) => {
                            // Keep the original reason visible while retrying.
                            let why = format!(
                                "{} (reopen: {e})",
                                l.why.split(" (reopen: ").next().unwrap_or("")
                            );
                            app.set_failed(id, ErrorKind::Open, why);
                        }
                    }
                }
                ShardState::Quarantined if quarantine::files_marker(&data, id).is_none() => {
                    tracing::warn!(
                        shard = id,
                        "quarantine released by an operator: opening the shard"
                    );
                    app.set_taking_over(id, "released from quarantine".to_string());
                    if let Err(e) = open_and_serve(&app, &data, id, false).await {
                        app.set_failed(id, ErrorKind::Open, e.to_string());
                    }
                }
                _ => {}
            }
        }
    }
}
