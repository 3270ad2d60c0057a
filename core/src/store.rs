//! The embedded file store, without the files: a directory of log segments and one snapshot,
//! for any [`Journaled`] state machine. The core decides which files exist, what goes into them,
//! when to sync, when to rotate a segment and when to compact; the host only carries out the
//! [`FileOp`]s it is handed, in order (Rust, Python, Node and C hosts each do that in a few
//! lines of their runtime's file API).
//!
//! # The directory
//!
//! - `snapshot`: the latest binary snapshot ([`crate::journal`] container), replaced atomically
//!   (written to `snapshot.tmp`, synced, renamed over `snapshot`, directory synced);
//! - `log-<first record, 20 digits>.lhj`: log segments, each a run of journal frames; the
//!   highest-numbered one is appended to, and a new one starts when it reaches
//!   [`StoreConfig::segment_bytes`].
//!
//! # Life of a store
//!
//! 1. The host reads every file of the directory and calls [`Store::open`], which builds the
//!    state machine from the snapshot (or afresh, for a new store), replays the segments, and
//!    returns the file operations that tidy up: truncate a torn tail, remove a half-written
//!    `snapshot.tmp` and segments the snapshot covers, and, for a new store, write its first
//!    snapshot.
//! 2. After handling requests, the host calls [`Store::commit`]: one append of every record
//!    written meanwhile, then a sync. When both are done, records up to [`Commit::durable`] are
//!    durable and the replies waiting for them may leave ([`crate::journal::Gate`]): one sync
//!    per commit, however many requests it covers (group commit).
//! 3. When [`Store::wants_compaction`] (the log has outgrown the snapshot), the host calls
//!    [`Store::compact`]: a new snapshot replaces the old and the segments it covers go.
//!
//! A missing snapshot is survivable only while the log still starts at record 1 (the state is
//! then rebuilt from the host's configuration and the whole log); otherwise [`Store::open`]
//! refuses, as it refuses a damaged snapshot or damage anywhere in the log but a torn tail.

use crate::error::{LeaseError, Result};
use crate::journal::{read_snapshot, scan, Journaled, Recovered};

/// Name of the snapshot file.
pub const SNAPSHOT_FILE: &str = "snapshot";
/// Name of the snapshot being written (removed if found at open).
pub const SNAPSHOT_TMP: &str = "snapshot.tmp";

/// The name of the log segment whose first record is `first_seq`.
pub fn segment_name(first_seq: u64) -> String {
    format!("log-{first_seq:020}.lhj")
}

fn segment_seq(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("log-")?.strip_suffix(".lhj")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// One file operation for the host to carry out. Carry them out in order, each completely,
/// before reporting a commit durable. Its data form is tagged `op` (`{"op": "append", "file",
/// "bytes"}`), as the JavaScript hosts take it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum FileOp {
    /// Append `bytes` to `file` (creating it if missing).
    Append {
        /// File name inside the store's directory.
        file: String,
        /// What to append.
        #[serde(with = "crate::machine::bytes")]
        #[cfg_attr(feature = "ts", ts(type = "Uint8Array"))]
        bytes: Vec<u8>,
    },
    /// Flush `file` to stable storage (fsync / fdatasync).
    Sync {
        /// File name.
        file: String,
    },
    /// Replace `file` atomically with `bytes`: write them to `<file>.tmp`, sync it, rename it
    /// over `file`, then sync the directory.
    Replace {
        /// File name.
        file: String,
        /// Its new contents.
        #[serde(with = "crate::machine::bytes")]
        #[cfg_attr(feature = "ts", ts(type = "Uint8Array"))]
        bytes: Vec<u8>,
    },
    /// Cut `file` to `len` bytes (a torn tail), then sync it.
    Truncate {
        /// File name.
        file: String,
        /// Length to keep.
        len: u64,
    },
    /// Delete `file` (missing is fine), then sync the directory.
    Remove {
        /// File name.
        file: String,
    },
}

/// How a store rotates and compacts (data form: both optional, unknown names refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct StoreConfig {
    /// A segment that reaches this size is closed and a new one started. Default 64 MiB.
    #[cfg_attr(feature = "ts", ts(type = "number", optional))]
    pub segment_bytes: u64,
    /// The log is compacted once it is larger than both this and the snapshot. Default 4 MiB.
    #[cfg_attr(feature = "ts", ts(type = "number", optional))]
    pub min_compact_bytes: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig { segment_bytes: 64 << 20, min_compact_bytes: 4 << 20 }
    }
}

/// What one [`Store::commit`] asks of the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// An append and a sync (preceded by nothing else: a segment is started by its first
    /// append).
    pub ops: Vec<FileOp>,
    /// Records up to this one are durable once the operations are done.
    pub durable: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Segment {
    name: String,
    first: u64,
    bytes: u64,
}

/// The store's view of its directory: which segment is appended to, how big the log and the
/// snapshot are. Holds no file handles and does no I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    config: StoreConfig,
    segments: Vec<Segment>,
    snapshot_bytes: u64,
    committed: u64,
}

/// The result of [`Store::open`].
#[derive(Debug)]
pub struct Opened<S> {
    /// The state machine, with every durable record replayed.
    pub state: S,
    /// The store.
    pub store: Store,
    /// What tidying the directory takes (carry these out before the first commit).
    pub ops: Vec<FileOp>,
    /// What replay found.
    pub recovered: Recovered,
    /// Whether the directory held no store yet.
    pub created: bool,
}

impl Store {
    /// Opens a store from the contents of its directory (`files`: every file's name and
    /// bytes; names that are not the store's are left alone). `build` makes the state machine
    /// from the snapshot's bytes, or afresh from the host's configuration when there is no
    /// snapshot (a new store, or a lost snapshot while the log still starts at record 1).
    /// Once the log is replayed, the state machine resumes at `now` on the host's clock: time
    /// spent down does not count. (`None` leaves it where the log left it, on the clock the
    /// log was written with: for tests that compare states exactly.)
    pub fn open<S: Journaled>(
        config: StoreConfig,
        files: &[(String, Vec<u8>)],
        now: Option<crate::time::Millis>,
        build: impl FnOnce(Option<&[u8]>) -> Result<S>,
    ) -> Result<Opened<S>> {
        let mut ops = Vec::new();
        let mut snapshot = None;
        let mut segments: Vec<(u64, &String, &Vec<u8>)> = Vec::new();
        for (name, bytes) in files {
            if name == SNAPSHOT_FILE {
                snapshot = Some(bytes);
            } else if name == SNAPSHOT_TMP {
                ops.push(FileOp::Remove { file: name.clone() });
            } else if let Some(seq) = segment_seq(name) {
                segments.push((seq, name, bytes));
            }
        }
        segments.sort();
        let snapshot_seq = match snapshot {
            Some(b) => read_snapshot(b)?.seq,
            None => 0,
        };
        let created = snapshot.is_none() && segments.is_empty();
        if snapshot.is_none() && !segments.is_empty() {
            let first = scan(segments[0].2, None)?.frames.first().map(|f| f.seq);
            if matches!(first, Some(s) if s != 1) {
                return Err(LeaseError::Decode(format!(
                    "the store's snapshot is missing and its log starts at record {}: \
                     records before it are lost",
                    first.unwrap_or(0)
                )));
            }
        }
        let mut state = build(snapshot.map(|b| b.as_slice()))?;
        // Segments the snapshot covers wholly (a compaction that did not get to remove them)
        // are not needed: remove them. A segment whose frames cannot be read is kept, for
        // replay to judge (a torn tail, or damage to refuse).
        let mut live = Vec::with_capacity(segments.len());
        for &(first, name, bytes) in &segments {
            let covered = match scan(bytes, None) {
                Ok(s) => {
                    s.torn.is_none()
                        && s.last_seq().map_or(first <= snapshot_seq, |l| l <= snapshot_seq)
                }
                Err(_) => false,
            };
            if covered && snapshot.is_some() {
                ops.push(FileOp::Remove { file: name.clone() });
            } else {
                live.push((first, name, bytes));
            }
        }
        let slices: Vec<&[u8]> = live.iter().map(|&(_, _, b)| b.as_slice()).collect();
        let recovered = state.replay_segments(&slices)?;
        if let Some(now) = now {
            state.resume(now);
        }
        let mut store = Store {
            config,
            segments: live
                .iter()
                .map(|&(first, name, b)| Segment {
                    name: name.clone(),
                    first,
                    bytes: b.len() as u64,
                })
                .collect(),
            snapshot_bytes: snapshot.map_or(0, |b| b.len() as u64),
            committed: recovered.last_seq.max(snapshot_seq),
        };
        if let Some((i, len, _)) = &recovered.torn {
            let seg = &mut store.segments[*i];
            seg.bytes = *len as u64;
            ops.push(FileOp::Truncate { file: seg.name.clone(), len: *len as u64 });
        }
        if created {
            ops.extend(store.compact(&mut state));
        }
        Ok(Opened { state, store, ops, recovered, created })
    }

    /// The store's settings.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// The last record handed to the host in a commit (durable once the host has carried
    /// that commit out).
    pub fn committed(&self) -> u64 {
        self.committed
    }

    /// Bytes of log kept (all segments).
    pub fn log_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.bytes).sum()
    }

    /// Bytes of the current snapshot.
    pub fn snapshot_bytes(&self) -> u64 {
        self.snapshot_bytes
    }

    /// The records the state machine wrote since the last commit, as one append (to a new
    /// segment if the current one is full) and a sync; `None` if there are none.
    pub fn commit<S: Journaled>(&mut self, state: &mut S) -> Option<Commit> {
        let mut bytes = Vec::new();
        let range = state.take_journal(&mut bytes)?;
        let rotate = match self.segments.last() {
            None => true,
            Some(s) => s.bytes > 0 && s.bytes + bytes.len() as u64 > self.config.segment_bytes,
        };
        if rotate {
            let name = segment_name(range.start);
            self.segments.push(Segment { name, first: range.start, bytes: 0 });
        }
        let seg = self.segments.last_mut().expect("a segment");
        seg.bytes += bytes.len() as u64;
        let file = seg.name.clone();
        self.committed = range.end - 1;
        Some(Commit {
            ops: vec![FileOp::Append { file: file.clone(), bytes }, FileOp::Sync { file }],
            durable: range.end - 1,
        })
    }

    /// Whether the log has outgrown the snapshot (and [`StoreConfig::min_compact_bytes`]).
    pub fn wants_compaction(&self) -> bool {
        let log = self.log_bytes();
        log > self.config.min_compact_bytes && log > self.snapshot_bytes
    }

    /// A new snapshot of `state`, replacing the old, and the removal of every segment it
    /// covers. Commit first: records not yet committed are in the snapshot too, and the next
    /// commit starts a new segment after them.
    pub fn compact<S: Journaled>(&mut self, state: &mut S) -> Vec<FileOp> {
        let mut bytes = Vec::new();
        state.snapshot_bytes(&mut bytes);
        self.snapshot_bytes = bytes.len() as u64;
        let mut ops = vec![FileOp::Replace { file: SNAPSHOT_FILE.into(), bytes }];
        for s in self.segments.drain(..) {
            ops.push(FileOp::Remove { file: s.name });
        }
        ops
    }
}

/// A directory in memory that carries out [`FileOp`]s and can crash: what was appended but
/// not synced may be lost, or kept in part (a torn write). For simulations and tests of
/// recovery; real hosts use files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemDir {
    /// Each file's bytes and how many of them are synced.
    files: std::collections::BTreeMap<String, (Vec<u8>, usize)>,
}

impl MemDir {
    /// An empty directory.
    pub fn new() -> MemDir {
        MemDir::default()
    }

    /// Carries out one operation.
    pub fn apply(&mut self, op: &FileOp) {
        match op {
            FileOp::Append { file, bytes } => {
                self.files.entry(file.clone()).or_default().0.extend_from_slice(bytes)
            }
            FileOp::Sync { file } => {
                if let Some((data, synced)) = self.files.get_mut(file) {
                    *synced = data.len();
                }
            }
            FileOp::Replace { file, bytes } => {
                self.files.insert(file.clone(), (bytes.clone(), bytes.len()));
            }
            FileOp::Truncate { file, len } => {
                if let Some((data, synced)) = self.files.get_mut(file) {
                    data.truncate(*len as usize);
                    *synced = data.len();
                }
            }
            FileOp::Remove { file } => {
                self.files.remove(file);
            }
        }
    }

    /// Carries out operations in order.
    pub fn apply_all<'a>(&mut self, ops: impl IntoIterator<Item = &'a FileOp>) {
        for op in ops {
            self.apply(op);
        }
    }

    /// A crash: every file loses what was not synced, except that `keep(file, unsynced)` bytes
    /// of it survive (a torn write; return 0 to lose it all).
    pub fn crash(&mut self, mut keep: impl FnMut(&str, usize) -> usize) {
        for (name, (data, synced)) in self.files.iter_mut() {
            let unsynced = data.len() - *synced;
            let kept = keep(name, unsynced).min(unsynced);
            data.truncate(*synced + kept);
            *synced = data.len();
        }
    }

    /// Every file's name and bytes, as a host would read the directory.
    pub fn files(&self) -> Vec<(String, Vec<u8>)> {
        self.files.iter().map(|(n, (d, _))| (n.clone(), d.clone())).collect()
    }

    /// One file's bytes, if it exists.
    pub fn get(&self, file: &str) -> Option<&[u8]> {
        self.files.get(file).map(|(d, _)| d.as_slice())
    }

    /// Replaces one file's bytes (to damage it on purpose, in tests).
    pub fn set(&mut self, file: &str, bytes: Vec<u8>) {
        let len = bytes.len();
        self.files.insert(file.to_string(), (bytes, len));
    }

    /// Removes a file (to lose it on purpose, in tests).
    pub fn remove(&mut self, file: &str) {
        self.files.remove(file);
    }
}
