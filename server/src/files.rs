//! Shards in the embedded file store: one directory per shard (`<data>/shard-<n>`), opened and
//! recovered with `leasehold-store`, written by a writer task that runs the file operations on
//! tokio's blocking pool.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;

use leasehold::store::{Opened, Store, StoreConfig};
use leasehold::{LandlordConfig, LandlordId, PolicySpec};
use leasehold_store::Dir;

use crate::clock::now_ms;
use crate::coord::CoordSettings;
use crate::shard::{Job, Planner, WriteError, Writer, LL};

/// Carries out a shard's file operations, one job at a time, off the async threads.
pub struct FileWriter {
    dir: Option<Dir>,
}

impl Writer for FileWriter {
    fn write(
        &mut self,
        job: Job,
    ) -> Pin<Box<dyn Future<Output = Result<(), WriteError>> + Send + '_>> {
        Box::pin(async move {
            let Job::Files(ops) = job else {
                return Err(WriteError::Failed("a file store was handed database rows".into()));
            };
            let Some(mut dir) = self.dir.take() else {
                return Err(WriteError::Failed("an earlier write failed".into()));
            };
            let (dir, r) = tokio::task::spawn_blocking(move || {
                let r = dir.apply_all(&ops);
                (dir, r)
            })
            .await
            .map_err(|e| WriteError::Failed(format!("writer thread: {e}")))?;
            r.map_err(|e| WriteError::Failed(e.to_string()))?;
            self.dir = Some(dir);
            Ok(())
        })
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

/// Opens (or creates) shard `id` in `data`: takes the directory's lock, reads the snapshot and
/// the log, replays it, tidies up (a torn tail is cut), and resumes the landlord's time.
/// Blocking: call it from a blocking thread or before serving.
pub fn open_shard(
    data: &Path,
    id: u64,
    policy: &PolicySpec,
    grace: i64,
    limits: leasehold::Limits,
    config: StoreConfig,
    coord: &CoordSettings,
) -> Result<OpenedShard, String> {
    let path = shard_dir(data, id);
    let mut dir = Dir::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let files = dir.read().map_err(|e| format!("{}: {e}", path.display()))?;
    let has = |f: &dyn Fn(&str) -> bool| files.iter().any(|(n, _)| f(n));
    if !has(&|n| n == leasehold::store::SNAPSHOT_FILE) && has(&|n| n.ends_with(".lhj")) {
        // The snapshot holds the shard's cookie seed: without it no log can be replayed.
        return Err(format!(
            "{}: the snapshot is missing but log segments remain: restore the snapshot from a \
             backup (it holds the shard's cookie seed); refusing to start the shard afresh",
            path.display()
        ));
    }
    let Opened { state: ll, store, ops, recovered, created } =
        Store::open(config, &files, Some(now_ms()), |snapshot| match snapshot {
            // Coordination is on before the journal is replayed (replay counts tokens and
            // makes events as the live landlord did).
            Some(bytes) => {
                let mut ll = LL::from_snapshot_bytes(bytes, policy.build()?)?;
                ll.enable_coordination(coord.core())?;
                Ok(ll)
            }
            None => new_landlord(id, policy, grace, limits, coord),
        })
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if ll.id() != LandlordId(id) {
        return Err(format!("{}: holds landlord {}, not shard {id}", path.display(), ll.id().0));
    }
    dir.apply_all(&ops).map_err(|e| format!("{}: {e}", path.display()))?;
    let store: Store = store;
    Ok(OpenedShard {
        ll,
        planner: Planner::Files(store),
        writer: FileWriter { dir: Some(dir) },
        replayed: recovered.replayed,
        torn: recovered.torn.map(|(_, _, why)| why),
        created,
    })
}
