//! # leasehold-store
//!
//! The embedded file store of leasehold, for Rust hosts: a directory holding a journaled state
//! machine (a [`Landlord`](leasehold::Landlord), and the services built like it) so that a
//! process that dies, even by `SIGKILL`, loses nothing it acknowledged.
//!
//! All the decisions (file names, frames, checksums, when to sync, rotate, compact, and how to
//! recover) are made by the core's sans-I/O [`leasehold::store`]; this crate only carries out
//! its [`FileOp`]s on `std::fs` ([`Dir`]) and adds the locking a threaded host needs for group
//! commit ([`Shared`]).
//!
//! ```
//! use leasehold::policy::Bounded;
//! use leasehold::{Landlord, LandlordConfig, LandlordId};
//! use leasehold_store::Durable;
//!
//! let dir = std::env::temp_dir().join(format!("leasehold-doc-{}", std::process::id()));
//! let open = |dir: &std::path::Path| {
//!     Durable::open(dir, Default::default(), 0, |snapshot| {
//!         let policy = Bounded::new(60_000, 10_000).unwrap();
//!         match snapshot {
//!             Some(bytes) => Landlord::<Vec<u8>>::from_snapshot_bytes(bytes, policy),
//!             None => {
//!                 let mut ll = Landlord::new(LandlordConfig::new(LandlordId(1), [7; 32]), policy);
//!                 ll.enable_journal();
//!                 Ok(ll)
//!             }
//!         }
//!     })
//! };
//! let mut d = open(&dir).unwrap();
//! let g = d.state_mut().grant(b"printer".to_vec(), 30_000, 0).unwrap();
//! d.commit().unwrap(); // durable now: the grant may be acknowledged
//! drop(d);
//! let again = open(&dir).unwrap();
//! assert!(again.state().get(g.cookie, 0).is_some());
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

use leasehold::journal::{Journaled, Recovered};
use leasehold::store::{FileOp, Opened, Store, StoreConfig};
use leasehold::LeaseError;

pub use leasehold::store::StoreConfig as Config;

/// The name of the lock file that keeps a second process out of a store's directory.
pub const LOCK_FILE: &str = "LOCK";

fn format_error(e: LeaseError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// A store's directory on disk: carries out [`FileOp`]s with `std::fs`, and holds the
/// directory's lock for as long as it lives.
#[derive(Debug)]
pub struct Dir {
    path: PathBuf,
    _lock: File,
    handles: HashMap<String, File>,
}

impl Dir {
    /// Opens a store directory (creating it if needed) and takes its lock: fails with
    /// [`io::ErrorKind::WouldBlock`] if another process (or another `Dir`) holds it.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Dir> {
        let path = path.as_ref().to_path_buf();
        fs::create_dir_all(&path)?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path.join(LOCK_FILE))?;
        lock.try_lock().map_err(|e| match e {
            fs::TryLockError::WouldBlock => io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is in use by another process", path.display()),
            ),
            fs::TryLockError::Error(e) => e,
        })?;
        Ok(Dir { path, _lock: lock, handles: HashMap::new() })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every file of the directory but the lock, read whole.
    pub fn read(&self) -> io::Result<Vec<(String, Vec<u8>)>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(&self.path)? {
            let entry = entry?;
            if !entry.file_type()?.is_file() {
                continue;
            }
            let Ok(name) = entry.file_name().into_string() else { continue };
            if name == LOCK_FILE {
                continue;
            }
            out.push((name, fs::read(entry.path())?));
        }
        Ok(out)
    }

    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.path)?.sync_all()
    }

    fn handle(&mut self, file: &str) -> io::Result<&mut File> {
        if !self.handles.contains_key(file) {
            let f = OpenOptions::new().create(true).append(true).open(self.path.join(file))?;
            self.handles.insert(file.to_string(), f);
        }
        Ok(self.handles.get_mut(file).expect("just inserted"))
    }

    /// Carries out one operation (see [`FileOp`] for what each must do).
    pub fn apply(&mut self, op: &FileOp) -> io::Result<()> {
        match op {
            FileOp::Append { file, bytes } => self.handle(file)?.write_all(bytes),
            FileOp::Sync { file } => self.handle(file)?.sync_data(),
            FileOp::Replace { file, bytes } => {
                self.handles.remove(file);
                let tmp = self.path.join(format!("{file}.tmp"));
                let mut f = File::create(&tmp)?;
                f.write_all(bytes)?;
                f.sync_all()?;
                fs::rename(&tmp, self.path.join(file))?;
                self.sync_dir()
            }
            FileOp::Truncate { file, len } => {
                self.handles.remove(file);
                let f = OpenOptions::new().write(true).open(self.path.join(file))?;
                f.set_len(*len)?;
                f.sync_all()
            }
            FileOp::Remove { file } => {
                self.handles.remove(file);
                match fs::remove_file(self.path.join(file)) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
                self.sync_dir()
            }
        }
    }

    /// Carries out operations in order, stopping at the first error.
    pub fn apply_all<'a>(&mut self, ops: impl IntoIterator<Item = &'a FileOp>) -> io::Result<()> {
        ops.into_iter().try_for_each(|op| self.apply(op))
    }
}

/// A journaled state machine in a directory, for one thread: change it, then [`Durable::commit`]
/// before acknowledging anything. For many threads, see [`Shared`].
#[derive(Debug)]
pub struct Durable<S> {
    state: S,
    store: Store,
    dir: Dir,
    recovered: Recovered,
    created: bool,
}

impl<S: Journaled> Durable<S> {
    /// Opens the store in `path` (creating it): reads every file, builds the state machine from
    /// the snapshot with `build` (`None`: a new store, or a lost snapshot while the log still
    /// starts at record 1), replays the log, truncates a torn tail, tidies up, and resumes the
    /// state machine at `now` on the host's clock (time spent down does not count). Damage is
    /// an [`io::ErrorKind::InvalidData`] error naming what is wrong.
    pub fn open(
        path: impl AsRef<Path>,
        config: StoreConfig,
        now: leasehold::Millis,
        build: impl FnOnce(Option<&[u8]>) -> leasehold::Result<S>,
    ) -> io::Result<Durable<S>> {
        let mut dir = Dir::open(path)?;
        let files = dir.read()?;
        let Opened { state, store, ops, recovered, created } =
            Store::open(config, &files, Some(now), build).map_err(format_error)?;
        dir.apply_all(&ops)?;
        Ok(Durable { state, store, dir, recovered, created })
    }

    /// The state machine.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The state machine, to change it; [`Durable::commit`] before acknowledging the change.
    pub fn state_mut(&mut self) -> &mut S {
        &mut self.state
    }

    /// What recovery found when the store was opened (records replayed, a torn tail dropped).
    pub fn recovered(&self) -> &Recovered {
        &self.recovered
    }

    /// Whether opening created a new store.
    pub fn created(&self) -> bool {
        self.created
    }

    /// The store's bookkeeping (sizes of log and snapshot).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Commits, then writes a new snapshot and drops the log it covers, whether or not the log
    /// has outgrown the snapshot.
    pub fn compact(&mut self) -> io::Result<()> {
        self.commit()?;
        let ops = self.store.compact(&mut self.state);
        self.dir.apply_all(&ops)
    }

    /// Writes and syncs every record written since the last commit (one append, one sync),
    /// compacts the log if it has outgrown the snapshot, and returns the last durable record.
    pub fn commit(&mut self) -> io::Result<u64> {
        if let Some(c) = self.store.commit(&mut self.state) {
            self.dir.apply_all(&c.ops)?;
        }
        if self.store.wants_compaction() {
            let ops = self.store.compact(&mut self.state);
            self.dir.apply_all(&ops)?;
        }
        Ok(self.store.committed())
    }
}

struct Inner<S> {
    state: S,
    store: Store,
}

struct Sync {
    /// Highest record durable.
    durable: u64,
    /// A thread is writing a commit now.
    writing: bool,
    /// A write failed: nothing more is acknowledged (the process should restart and recover).
    failed: Option<String>,
}

/// A journaled state machine in a directory, shared by threads, with group commit: threads
/// change the state under a short lock ([`Shared::with`]), then wait for the record they
/// depend on ([`Shared::wait_durable`]). The first waiter writes and syncs everything written
/// so far, outside the state's lock, for every thread that arrived meanwhile: one sync covers
/// them all.
pub struct Shared<S> {
    inner: Mutex<Inner<S>>,
    dir: Mutex<Dir>,
    sync: Mutex<Sync>,
    done: Condvar,
    recovered: Recovered,
    writes: std::sync::atomic::AtomicU64,
}

impl<S: Journaled> Shared<S> {
    /// Shares an opened store.
    pub fn new(d: Durable<S>) -> Shared<S> {
        let durable = d.store.committed();
        Shared {
            inner: Mutex::new(Inner { state: d.state, store: d.store }),
            dir: Mutex::new(d.dir),
            sync: Mutex::new(Sync { durable, writing: false, failed: None }),
            done: Condvar::new(),
            recovered: d.recovered,
            writes: Default::default(),
        }
    }

    /// What recovery found when the store was opened.
    pub fn recovered(&self) -> &Recovered {
        &self.recovered
    }

    fn lock(&self) -> MutexGuard<'_, Inner<S>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the state under its lock; returns what `f` returned and the journal record
    /// it depends on (pass that to [`Shared::wait_durable`] before acting on the result
    /// outside, e.g. replying).
    pub fn with<T>(&self, f: impl FnOnce(&mut S) -> T) -> (T, u64) {
        let mut inner = self.lock();
        let t = f(&mut inner.state);
        (t, inner.state.journal_seq())
    }

    /// Blocks until record `seq` is durable, writing and syncing it (and everything before it)
    /// if no other thread is. An error means the store could not write: nothing after the last
    /// durable record will ever be acknowledged by this process.
    pub fn wait_durable(&self, seq: u64) -> io::Result<()> {
        let mut s = self.sync.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(e) = &s.failed {
                return Err(io::Error::other(e.clone()));
            }
            if s.durable >= seq {
                return Ok(());
            }
            if s.writing {
                s = self.done.wait(s).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            s.writing = true;
            drop(s);
            let result = self.write();
            s = self.sync.lock().unwrap_or_else(|p| p.into_inner());
            s.writing = false;
            match result {
                Ok(durable) => s.durable = s.durable.max(durable),
                Err(e) => s.failed = Some(e.to_string()),
            }
            self.done.notify_all();
        }
    }

    /// Takes everything written so far (and a compaction, if due) under the state's lock,
    /// then writes it under the directory's lock only.
    fn write(&self) -> io::Result<u64> {
        let (ops, durable) = {
            let mut inner = self.lock();
            let Inner { state, store } = &mut *inner;
            let mut ops = Vec::new();
            if let Some(c) = store.commit(state) {
                ops = c.ops;
            }
            if store.wants_compaction() {
                ops.extend(store.compact(state));
            }
            (ops, store.committed())
        };
        self.dir.lock().unwrap_or_else(|p| p.into_inner()).apply_all(&ops)?;
        self.writes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(durable)
    }

    /// How many group commits (each one write and one sync) were carried out so far.
    pub fn writes(&self) -> u64 {
        self.writes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Reads the state under its lock.
    pub fn read<T>(&self, f: impl FnOnce(&S) -> T) -> T {
        f(&self.lock().state)
    }
}
