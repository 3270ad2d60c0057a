//! What survives a crash, and how a crashed host comes back.
//!
//! The durability contract: a crash loses only what was not durable, and a host replies only
//! after the change behind the reply is durable.
//!
//! Landlords and the discovery service keep a journal through the real durability path: a
//! [`Disk`] holds a `store::MemDir` (a directory in memory that loses unsynced bytes in a
//! crash, or keeps a torn part of them) and the `store::Store` that decides what goes into it.
//! The host commits (one append and one sync of every record written meanwhile: group commit),
//! compacts when the store wants it, and releases a reply only once the records behind it are
//! synced ([`leasehold::journal::Gate`]). The disk carries out its file operations one at a
//! time, each taking a little (virtual) time, so a crash can come at any moment: between an
//! append and its sync, between the new snapshot and the removal of the segments it covers.
//! After a crash, the host reads the directory back with `Store::open` and resumes.
//!
//! The renewal service has no journal here: its host commits a snapshot
//! ([`ServiceStore`]) and releases what it held at each commit.

use std::collections::VecDeque;

use leasehold::journal::{Journaled, Recovered};
use leasehold::service::{RenewalService, RenewalServiceConfig, ServiceSnapshot};
use leasehold::store::{FileOp, MemDir, Store, StoreConfig};
use leasehold::{Millis, Result};
use rand_chacha::ChaCha12Rng;

use crate::nodes::{range, unit, Meta};

/// When a crash strikes a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashAt {
    /// Whenever it happens to be: the disk may be idle or busy.
    Now,
    /// Right after the disk caught up with everything written (a commit at the crash moment).
    AfterCommit,
    /// In the middle of a commit (or of the compaction after it): some of its file operations
    /// done, the rest never.
    MidWrite,
}

/// How a simulated disk behaves.
#[derive(Debug, Clone, Copy)]
pub struct DiskConfig {
    /// The store's rotation and compaction thresholds (small, so that both happen).
    pub store: StoreConfig,
    /// Longest time an append, truncate or remove takes (ms).
    pub op_ms: Millis,
    /// Longest time a sync or an atomic replace takes (ms).
    pub sync_ms: Millis,
}

/// What a disk did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// Commits (an append and a sync each).
    pub commits: u64,
    /// Compactions (a new snapshot and the removal of the segments it covers).
    pub compactions: u64,
    /// Crashes that struck while file operations were still queued (mid-commit or
    /// mid-compaction).
    pub crashes_mid_write: u64,
    /// Crashes that kept a torn part of an unsynced append.
    pub torn_tails: u64,
    /// Crashes that kept a whole unsynced append.
    pub unsynced_kept: u64,
}

struct Queued {
    op: FileOp,
    /// Records up to this one are durable once the operation is done.
    durable: Option<u64>,
}

/// A store's directory in memory, its queue of file operations, and what is durable.
pub struct Disk {
    /// The directory.
    pub dir: MemDir,
    store: Option<Store>,
    queue: VecDeque<Queued>,
    /// When the operation at the head of the queue completes (the host's local clock).
    head_done: Option<Millis>,
    syncs_queued: usize,
    durable: u64,
    cfg: DiskConfig,
    rng: ChaCha12Rng,
    /// What it did.
    pub stats: DiskStats,
}

impl Disk {
    /// An empty directory.
    pub fn new(cfg: DiskConfig, rng: ChaCha12Rng) -> Disk {
        Disk {
            dir: MemDir::new(),
            store: None,
            queue: VecDeque::new(),
            head_done: None,
            syncs_queued: 0,
            durable: 0,
            cfg,
            rng,
            stats: DiskStats::default(),
        }
    }

    /// Opens the store in the directory (after a crash, or the first time), as a host does:
    /// `Store::open` on every file, the state machine built by `build`, the log replayed; no
    /// resume (the caller resumes, so it can see the recovered time first). The tidying
    /// operations are queued (`at_once`: carried out now, for a new store).
    pub fn open<S: Journaled>(
        &mut self,
        now: Millis,
        at_once: bool,
        build: impl FnOnce(Option<&[u8]>) -> Result<S>,
    ) -> Result<(S, Recovered)> {
        let files = self.dir.files();
        let opened = Store::open(self.cfg.store, &files, None, build)?;
        self.store = Some(opened.store);
        self.queue.clear();
        self.head_done = None;
        self.syncs_queued = 0;
        // Whatever was read back is on disk: a crash loses nothing of it any more.
        self.durable = opened.state.journal_seq();
        if at_once {
            self.dir.apply_all(&opened.ops);
        } else {
            for op in opened.ops {
                self.push(op, None, now);
            }
        }
        Ok((opened.state, opened.recovered))
    }

    /// `Store::open` on other files (a damaged copy of the directory), changing nothing here;
    /// what replay recovered, if it did.
    pub fn open_copy<S: Journaled>(
        &self,
        files: &[(String, Vec<u8>)],
        build: impl FnOnce(Option<&[u8]>) -> Result<S>,
    ) -> Result<Recovered> {
        Store::open(self.cfg.store, files, None, build).map(|o| o.recovered)
    }

    /// Records up to this one are durable.
    pub fn durable(&self) -> u64 {
        self.durable
    }

    /// Whether `state` has records no commit has taken yet.
    pub fn pending<S: Journaled>(&self, state: &S) -> bool {
        self.store.as_ref().is_some_and(|s| state.journal_seq() > s.committed())
    }

    /// Whether a commit is under way (its sync not done yet): the next one waits for it.
    pub fn committing(&self) -> bool {
        self.syncs_queued > 0
    }

    fn latency(&mut self, op: &FileOp) -> Millis {
        let max = match op {
            FileOp::Sync { .. } | FileOp::Replace { .. } => self.cfg.sync_ms,
            _ => self.cfg.op_ms,
        };
        range(&mut self.rng, 0, max.max(0))
    }

    fn push(&mut self, op: FileOp, durable: Option<u64>, now: Millis) {
        if matches!(op, FileOp::Sync { .. }) {
            self.syncs_queued += 1;
        }
        if self.head_done.is_none() {
            self.head_done = Some(now + self.latency(&op));
        }
        self.queue.push_back(Queued { op, durable });
    }

    /// Starts a commit of every record `state` wrote since the last one (one append, one sync),
    /// then a compaction if the store wants one. False if there was nothing to commit.
    pub fn commit<S: Journaled>(&mut self, state: &mut S, now: Millis) -> bool {
        let Some(store) = self.store.as_mut() else { return false };
        let Some(c) = store.commit(state) else { return false };
        self.stats.commits += 1;
        let n = c.ops.len();
        for (i, op) in c.ops.into_iter().enumerate() {
            let d = (i + 1 == n).then_some(c.durable);
            self.push(op, d, now);
        }
        let store = self.store.as_mut().expect("open");
        if store.wants_compaction() {
            self.stats.compactions += 1;
            let ops = store.compact(state);
            // The new snapshot holds every record written so far: durable once it is in place.
            let seq = state.journal_seq();
            for op in ops {
                let d = matches!(op, FileOp::Replace { .. }).then_some(seq);
                self.push(op, d, now);
            }
        }
        true
    }

    /// When the next file operation completes, if one is under way.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.head_done
    }

    /// Completes the file operations due by `now`; true if more records became durable.
    pub fn handle_timeout(&mut self, now: Millis) -> bool {
        let before = self.durable;
        while let Some(t) = self.head_done.filter(|&t| t <= now) {
            self.complete_head();
            // The disk works without a pause: the next operation starts when this one ends.
            self.head_done = match self.queue.front() {
                Some(q) => {
                    let op = q.op.clone();
                    Some(t + self.latency(&op))
                }
                None => None,
            };
        }
        self.durable > before
    }

    fn complete_head(&mut self) {
        let Some(q) = self.queue.pop_front() else { return };
        if matches!(q.op, FileOp::Sync { .. }) {
            self.syncs_queued -= 1;
        }
        self.dir.apply(&q.op);
        if let Some(d) = q.durable {
            self.durable = self.durable.max(d);
        }
    }

    /// Carries out every queued operation now (a crash right after the disk caught up).
    pub fn flush(&mut self) {
        while !self.queue.is_empty() {
            self.complete_head();
        }
        self.head_done = None;
    }

    /// Starts a commit if none is under way, then carries out some of the queued operations
    /// but not all (the crash that follows strikes in the middle).
    pub fn part_way<S: Journaled>(&mut self, state: &mut S, now: Millis) {
        if !self.committing() {
            self.commit(state, now);
        }
        let n = self.queue.len();
        if n >= 2 {
            for _ in 0..range(&mut self.rng, 1, n as i64 - 1) {
                self.complete_head();
            }
        }
    }

    /// The host clock stepped: the disk's timer is monotonic, so it keeps its distance.
    pub fn clock_stepped(&mut self, delta: Millis) {
        if let Some(t) = &mut self.head_done {
            *t = t.saturating_add(delta);
        }
    }

    /// A crash: queued operations never happen; each file loses what was not synced, except a
    /// part of it that the crash may keep (none, all, or a torn part).
    pub fn crash(&mut self) {
        if !self.queue.is_empty() {
            self.stats.crashes_mid_write += 1;
        }
        self.queue.clear();
        self.head_done = None;
        self.syncs_queued = 0;
        self.store = None;
        let rng = &mut self.rng;
        let stats = &mut self.stats;
        self.dir.crash(|_, unsynced| {
            if unsynced == 0 {
                return 0;
            }
            let x = unit(rng);
            if x < 0.4 {
                0
            } else if x < 0.7 {
                stats.unsynced_kept += 1;
                unsynced
            } else if unsynced > 1 {
                stats.torn_tails += 1;
                range(rng, 1, unsynced as i64 - 1) as usize
            } else {
                0
            }
        });
    }
}

/// The durable side of a renewal-service host (a snapshot per commit, until the service's
/// journal lands on main).
pub trait ServiceStore {
    /// Makes the service's current state durable.
    fn commit(&mut self, service: &RenewalService, meta: &Meta, now: Millis);
    /// Rebuilds the service after a crash, at local time `now`.
    fn recover(&self, config: RenewalServiceConfig, now: Millis) -> Result<(RenewalService, Meta)>;
    /// The latest snapshot, for negative tests.
    fn snapshot(&self) -> &ServiceSnapshot;
}

/// Durable = the latest service snapshot.
pub struct ServiceSnapshotStore {
    snapshot: ServiceSnapshot,
    meta: Meta,
}

impl ServiceSnapshotStore {
    /// A store whose first commit is `service` as it is now.
    pub fn new(service: &RenewalService, meta: &Meta, now: Millis) -> ServiceSnapshotStore {
        ServiceSnapshotStore { snapshot: service.snapshot(now), meta: meta.clone() }
    }
}

impl ServiceStore for ServiceSnapshotStore {
    fn commit(&mut self, service: &RenewalService, meta: &Meta, now: Millis) {
        self.snapshot = service.snapshot(now);
        self.meta.clone_from(meta);
    }

    fn recover(&self, config: RenewalServiceConfig, now: Millis) -> Result<(RenewalService, Meta)> {
        let svc = RenewalService::restore(config, self.snapshot.clone(), now)?;
        Ok((svc, self.meta.clone()))
    }

    fn snapshot(&self) -> &ServiceSnapshot {
        &self.snapshot
    }
}
