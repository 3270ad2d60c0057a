//! Durable handles: a landlord (or any journaled state machine, such as the discovery service)
//! kept in a store (a directory of log segments and a snapshot), recovered when opened, with
//! reply-after-durable as the natural path.
//!
//! The store half is generic ([`Kept`], [`open_dir`], [`open_io`], [`commit`]): a handle whose
//! state is a core [`Journaled`] type with an optional [`Attached`] store gets open, commit,
//! compact and journal sequence numbers from one-line exported functions.
//!
//! Everything about the format (file names, frames, checksums, rotation, compaction, what a torn
//! tail is and what damage is) is the core's (`leasehold::store`, `leasehold::journal`). This
//! file only carries out the core's `FileOp`s: on `std::fs` through `leasehold-store` (a
//! directory), or through the host's own callbacks (`leasehold_store_io`, for flash, a database
//! or an RTOS file API). Callbacks run with no borrow of the landlord's state (see
//! [`crate::handle`]); `leasehold_shared_landlord` is `leasehold_store::Shared` (leader-based
//! group commit) for threaded hosts.

use std::ffi::{c_char, c_void, CString};
use std::io;
use std::path::PathBuf;

use leasehold_core::journal::{Journaled, Recovered};
use leasehold_core::store::{FileOp, Opened, Store, StoreConfig};
use leasehold_core::{Encoding, Expired, Landlord, LandlordConfig, LeaseError, PolicySpec};
use leasehold_store::{Dir, Durable, Shared};

use crate::common::{encoding, give_bytes, leasehold_cookie};
use crate::error::{arg, guard, leasehold_status, null, slice, Fail, Maybe, Out, Res};
use crate::handle::{self, give, give_box, Call, Opaque};
use crate::landlord::{
    leasehold_expired, leasehold_grant, leasehold_landlord, leasehold_landlord_config,
    LandlordState,
};
use crate::policy::leasehold_policy;
use crate::sansio::CEvent;

type LL = Landlord<Vec<u8>>;

// ---------- values ----------

/// What opening a store found (`leasehold_landlord_open_dir`, `_open_io`,
/// `leasehold_shared_landlord_open_dir`, `leasehold_discovery_service_open_dir`, `_open_io`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct leasehold_recovery {
    /// The store was new (nothing to recover): it was created, with a first snapshot.
    pub created: bool,
    /// Journal records replayed on top of the snapshot.
    pub replayed: u64,
    /// Sequence number of the last record recovered: everything up to it is durable, and the
    /// journal goes on from the next one.
    pub last_seq: u64,
    /// A torn tail (the last write, cut short by a crash, never acknowledged) was dropped from
    /// the log.
    pub torn_tail: bool,
    /// Leases held after recovery (for a discovery service: its registrations, each leased).
    pub leases: usize,
}

/// What opening found; `leases` is what the state holds (leases, or registrations).
pub(crate) fn recovery<S: Journaled>(
    r: &Recovered,
    created: bool,
    s: &S,
    leases: usize,
) -> leasehold_recovery {
    leasehold_recovery {
        created,
        replayed: r.replayed,
        last_seq: r.last_seq.max(s.journal_seq()),
        torn_tail: r.torn.is_some(),
        leases,
    }
}

/// Appends `len` bytes of `data` to `file` (creating it if missing). `file` is a NUL-terminated
/// name inside the store (e.g. `"log-00000000000000000001.lhj"`, `"snapshot"`), borrowed for the
/// call. Return 0 once every byte is written (not necessarily durable yet), non-zero on failure.
#[allow(non_camel_case_types)]
pub type leasehold_store_append_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        file: *const c_char,
        data: *const u8,
        len: usize,
    ) -> i32,
>;

/// Makes every byte appended to `file` so far durable (fsync, a flash commit, a database
/// commit): after it returns 0 they survive a crash or a power cut. Non-zero on failure.
#[allow(non_camel_case_types)]
pub type leasehold_store_sync_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, file: *const c_char) -> i32>;

/// Replaces `file` atomically and durably with `len` bytes of `data`: after a crash at any
/// moment the file holds either its old contents or all of the new ones (on a file system:
/// write `<file>.tmp`, sync it, rename it over `file`, sync the directory). Return 0 once the
/// new contents are durable, non-zero on failure.
/// (The same signature as `leasehold_store_append_fn`.)
#[allow(non_camel_case_types)]
pub type leasehold_store_replace_fn = leasehold_store_append_fn;

/// Cuts `file` to its first `len` bytes (dropping a torn tail) and makes that durable. Return 0
/// on success, non-zero on failure.
#[allow(non_camel_case_types)]
pub type leasehold_store_truncate_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, file: *const c_char, len: u64) -> i32>;

/// Deletes `file` (a missing file is success) and makes that durable. Return 0 on success,
/// non-zero on failure. (The same signature as `leasehold_store_sync_fn`.)
#[allow(non_camel_case_types)]
pub type leasehold_store_remove_fn = leasehold_store_sync_fn;

/// A host's own storage for a durable landlord (flash, a database, an RTOS file API): five
/// callbacks that carry out the core's file operations on the named files of one store, in the
/// order given, each completely before the next. Every callback is required and takes
/// `user_data` first. They run on the thread that calls into the landlord, inside
/// `leasehold_landlord_open_io`, `leasehold_landlord_commit` and `leasehold_landlord_compact`,
/// with nothing of the landlord borrowed: a callback may call the landlord (a grant, say: it
/// is journaled for the next commit), but `_commit` or `_compact` from inside one is `BUSY`;
/// freeing the landlord inside one is deferred (README, Callbacks and re-entrancy).
///
/// A callback that returns non-zero fails the call with `LEASEHOLD_STATUS_IO`; from then on
/// every commit of that landlord fails too (what reached the storage is unknown): free it and
/// open the store again, which keeps what was durable and drops a torn tail.
///
/// Names are at most 28 ASCII bytes: `snapshot`, `snapshot.tmp` (only ever removed) and
/// `log-<20 digits>.lhj`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct leasehold_store_io {
    /// Passed to every callback as it is.
    pub user_data: *mut c_void,
    /// Appends bytes to a file.
    pub append: leasehold_store_append_fn,
    /// Makes a file's appended bytes durable.
    pub sync: leasehold_store_sync_fn,
    /// Replaces a file atomically and durably.
    pub replace: leasehold_store_replace_fn,
    /// Cuts a file short, durably.
    pub truncate: leasehold_store_truncate_fn,
    /// Deletes a file, durably.
    pub remove: leasehold_store_remove_fn,
}

/// One file of a store as the host read it, for `leasehold_landlord_open_io`: its name
/// (`name_len` bytes, no NUL needed) and contents (`len` bytes), both borrowed for the call.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct leasehold_store_file {
    /// File name inside the store.
    pub name: *const c_char,
    /// Length of `name` in bytes.
    pub name_len: usize,
    /// The file's bytes.
    pub data: *const u8,
    /// Length of `data`.
    pub len: usize,
}

// ---------- the store behind a handle ----------

/// The host's callbacks, checked complete.
#[derive(Clone, Copy)]
struct HostIo(leasehold_store_io);

// SAFETY: a landlord handle moves between threads only as a whole (README, Threading), and the
// callbacks run on whichever thread calls into it: the host promises they may.
unsafe impl Send for HostIo {}

impl HostIo {
    fn new(io: &leasehold_store_io) -> Res<HostIo> {
        let missing = [
            ("append", io.append.is_none()),
            ("sync", io.sync.is_none()),
            ("replace", io.replace.is_none()),
            ("truncate", io.truncate.is_none()),
            ("remove", io.remove.is_none()),
        ];
        if let Some((name, _)) = missing.iter().find(|(_, m)| *m) {
            return Err(null(&format!("io->{name}")));
        }
        Ok(HostIo(*io))
    }

    /// Carries out one operation through the host's callback (user code: call with nothing
    /// borrowed).
    fn apply(&self, op: &FileOp) -> Result<(), String> {
        let io = &self.0;
        let u = io.user_data;
        let name = |f: &str| CString::new(f).expect("store file names have no NUL");
        let (what, file, rc) = match op {
            FileOp::Append { file, bytes } => {
                let f = name(file);
                let append = io.append.expect("checked at open");
                ("append", file, unsafe { append(u, f.as_ptr(), bytes.as_ptr(), bytes.len()) })
            }
            FileOp::Sync { file } => {
                let f = name(file);
                ("sync", file, unsafe { io.sync.expect("checked at open")(u, f.as_ptr()) })
            }
            FileOp::Replace { file, bytes } => {
                let f = name(file);
                let replace = io.replace.expect("checked at open");
                ("replace", file, unsafe { replace(u, f.as_ptr(), bytes.as_ptr(), bytes.len()) })
            }
            FileOp::Truncate { file, len } => {
                let f = name(file);
                let truncate = io.truncate.expect("checked at open");
                ("truncate", file, unsafe { truncate(u, f.as_ptr(), *len) })
            }
            FileOp::Remove { file } => {
                let f = name(file);
                ("remove", file, unsafe { io.remove.expect("checked at open")(u, f.as_ptr()) })
            }
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("the store's {what} callback returned {rc} for {file}"))
        }
    }

    fn apply_all(&self, ops: &[FileOp]) -> Result<(), String> {
        ops.iter().try_for_each(|op| self.apply(op))
    }
}

enum Io {
    /// A directory on `std::fs`, locked for as long as the landlord lives.
    Dir(Dir),
    /// The host's callbacks.
    Host(HostIo),
}

/// The store of a durable handle.
pub(crate) struct Attached {
    store: Store,
    io: Io,
    /// A commit is carrying out its operations through the host's callbacks (further up this
    /// thread's stack).
    committing: bool,
    /// A write failed: what reached the storage is unknown, so nothing more is acknowledged.
    failed: Option<String>,
}

fn io_fail(message: impl Into<String>) -> Fail {
    Fail::new(leasehold_status::LEASEHOLD_STATUS_IO, message)
}

/// What a commit leaves to do once the landlord's state is no longer borrowed.
enum Job {
    /// Nothing: records up to this one are durable.
    Done(u64),
    /// Carry out `ops` through the host's callbacks; then records up to `durable` are durable.
    Host { io: HostIo, ops: Vec<FileOp>, durable: u64 },
}

impl Attached {
    /// The first half of a commit, with the state borrowed: takes the records written since the
    /// last commit (and a compaction, if due or `force`d) and, for a directory, writes them.
    fn begin<S: Journaled>(&mut self, ll: &mut S, force: bool) -> Res<Job> {
        if let Some(e) = &self.failed {
            return Err(io_fail(format!(
                "the store failed earlier ({e}) and takes no more commits: free the landlord \
                 and open the store again to recover what is durable"
            )));
        }
        if self.committing {
            return Err(Fail::new(
                leasehold_status::LEASEHOLD_STATUS_BUSY,
                "a commit of this landlord is in progress further up this thread's stack (a \
                 store callback called commit or compact); it will not cover this call's records: \
                 commit again once it returns",
            ));
        }
        let mut ops = match self.store.commit(ll) {
            Some(c) => c.ops,
            None => Vec::new(),
        };
        if force || self.store.wants_compaction() {
            ops.extend(self.store.compact(ll));
        }
        let durable = self.store.committed();
        if ops.is_empty() {
            return Ok(Job::Done(durable));
        }
        match &mut self.io {
            Io::Dir(d) => match d.apply_all(&ops) {
                Ok(()) => Ok(Job::Done(durable)),
                Err(e) => {
                    let m = format!("writing the store in {}: {e}", d.path().display());
                    self.failed = Some(m.clone());
                    Err(io_fail(m))
                }
            },
            Io::Host(h) => {
                self.committing = true;
                Ok(Job::Host { io: *h, ops, durable })
            }
        }
    }

    /// The second half of a commit through callbacks, with the state borrowed again.
    fn end(&mut self, result: Result<(), String>) -> Res {
        self.committing = false;
        result.map_err(|e| {
            self.failed = Some(e.clone());
            io_fail(e)
        })
    }

    /// A whole commit of a state no handle holds yet (while opening): the host's callbacks run
    /// here, with nothing of a handle borrowed.
    pub(crate) fn commit_now<S: Journaled>(&mut self, s: &mut S) -> Res<u64> {
        match self.begin(s, false)? {
            Job::Done(d) => Ok(d),
            Job::Host { io, ops, durable } => {
                self.end(io.apply_all(&ops))?;
                Ok(durable)
            }
        }
    }
}

/// The state of a handle that may be kept in a store: the journaled core state, and its
/// store if it has one.
pub(crate) trait Kept {
    /// The core state machine.
    type State: Journaled;
    fn state(&self) -> &Self::State;
    fn parts(&mut self) -> (&mut Self::State, Option<&mut Attached>);
    fn is_durable(&self) -> bool;
}

/// `_commit` and `_compact` of a handle that may be durable: writes, syncs, compacts; returns
/// the last durable record (0 for a handle in memory, which has nothing to write).
///
/// # Safety
/// `p` is NULL or live.
pub(crate) unsafe fn commit<H: Opaque<Inner: Kept>>(p: *mut H, force: bool) -> Res<u64> {
    let call = unsafe { Call::enter(p) }?;
    commit_in(&call, force)
}

/// The body of `_commit` (`force` false) and `_compact` (true): `*out_durable` is the last
/// durable record.
///
/// # Safety
/// `p` is NULL or live; `out_durable` is NULL or writable.
pub(crate) unsafe fn commit_out<H: Opaque<Inner: Kept>>(
    p: *mut H,
    force: bool,
    out_durable: *mut u64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out_durable, "out_durable")?;
        let d = unsafe { commit(p, force) }?;
        unsafe { out.write(d) };
        Ok(())
    })
}

/// [`commit`] inside a call already running on the handle (a driver commits before its
/// callbacks run).
pub(crate) fn commit_in<H: Opaque<Inner: Kept>>(call: &Call<H>, force: bool) -> Res<u64> {
    let job = call.with_mut(|s| {
        let (state, store) = s.parts();
        match store {
            None => Ok(Job::Done(0)),
            Some(a) => a.begin(state, force),
        }
    })?;
    let (io, ops, durable) = match job {
        Job::Done(d) => return Ok(d),
        Job::Host { io, ops, durable } => (io, ops, durable),
    };
    // The host's callbacks run with nothing borrowed.
    let (mut result, mut done) = (Ok(()), 0);
    for op in &ops {
        if call.freed() {
            break;
        }
        if let Err(e) = io.apply(op) {
            result = Err(e);
            break;
        }
        done += 1;
    }
    if call.freed() {
        // Freed inside a callback: the state is gone; say whether the commit got through.
        if done == ops.len() {
            return Ok(durable);
        }
        return Err(Fail::new(
            leasehold_status::LEASEHOLD_STATUS_BUSY,
            format!(
                "the {} was freed inside a store callback: the commit did not complete, and \
                 nothing it covers may be acknowledged",
                H::WHAT
            ),
        ));
    }
    call.with_mut(|s| s.parts().1.expect("a durable handle").end(result))?;
    Ok(durable)
}

/// `_journal_seq`: the last record the handle's state journaled (0 in memory).
///
/// # Safety
/// Pointers are NULL or valid.
pub(crate) unsafe fn journal_seq<H: Opaque<Inner: Kept>>(
    p: *const H,
    out: *mut u64,
) -> leasehold_status {
    unsafe { handle::get(p, out, |s| Ok(s.state().journal_seq())) }
}

/// `_is_durable`: whether the handle is kept in a store.
///
/// # Safety
/// Pointers are NULL or valid.
pub(crate) unsafe fn is_durable<H: Opaque<Inner: Kept>>(
    p: *const H,
    out: *mut bool,
) -> leasehold_status {
    unsafe { handle::get(p, out, |s| Ok(s.is_durable())) }
}

impl Kept for LandlordState {
    type State = LL;
    fn state(&self) -> &LL {
        &self.ll
    }
    fn parts(&mut self) -> (&mut LL, Option<&mut Attached>) {
        (&mut self.ll, self.store.as_deref_mut())
    }
    fn is_durable(&self) -> bool {
        self.store.is_some()
    }
}

// ---------- opening ----------

/// Builds the landlord from the snapshot's bytes, or afresh from the host's configuration.
fn builder(
    config: &LandlordConfig,
    policy: &PolicySpec,
) -> impl FnOnce(Option<&[u8]>) -> leasehold_core::Result<LL> {
    let (config, policy) = (config.clone(), policy.clone());
    move |snapshot| {
        let p = policy.build()?;
        match snapshot {
            Some(bytes) => LL::from_snapshot_bytes(bytes, p),
            None => {
                let mut ll = Landlord::new(config, p);
                ll.enable_journal();
                Ok(ll)
            }
        }
    }
}

/// A path from `len` bytes (any bytes but NUL on Unix; UTF-8 elsewhere).
///
/// # Safety
/// `path` is NULL or points to `len` readable bytes.
unsafe fn path_arg(path: *const c_char, len: usize) -> Res<PathBuf> {
    if path.is_null() {
        return Err(null("path"));
    }
    let b = unsafe { slice(path.cast::<u8>(), len, "path") }?;
    if b.is_empty() || b.contains(&0) {
        return Err(Fail::invalid("path must be non-empty and contain no NUL byte"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(b)))
    }
    #[cfg(not(unix))]
    {
        let s = std::str::from_utf8(b).map_err(|e| {
            Fail::new(
                leasehold_status::LEASEHOLD_STATUS_INVALID_UTF8,
                format!("path is not valid UTF-8: {e}"),
            )
        })?;
        Ok(PathBuf::from(s))
    }
}

/// Damage in a store (or a directory that cannot be read or written) as a failure naming the
/// store.
fn store_error(where_: &str, e: io::Error) -> Fail {
    if e.kind() == io::ErrorKind::InvalidData {
        Fail::new(leasehold_status::LEASEHOLD_STATUS_DECODE, format!("store in {where_}: {e}"))
    } else {
        io_fail(format!("store in {where_}: {e}"))
    }
}

fn decode_error(where_: &str, e: LeaseError) -> Fail {
    let f = Fail::from(&e);
    Fail::new(f.status, format!("store in {where_}: {}", e.detail()))
}

/// A state machine opened from a store, with the store attached and what recovery found.
pub(crate) struct Reopened<S> {
    pub state: S,
    pub store: Box<Attached>,
    pub recovered: Recovered,
    pub created: bool,
}

/// Opens (creating if needed) a store in the directory `path` and recovers the state it holds
/// (`build` makes it from the snapshot's bytes, or afresh), carrying out the tidying recovery
/// needs. Damage is `DECODE` naming the file and offset; a locked or unwritable directory `IO`.
///
/// # Safety
/// `path` is NULL or points to `path_len` bytes.
pub(crate) unsafe fn open_dir<S: Journaled>(
    path: *const c_char,
    path_len: usize,
    config: StoreConfig,
    now: i64,
    build: impl FnOnce(Option<&[u8]>) -> leasehold_core::Result<S>,
) -> Res<Reopened<S>> {
    let path = unsafe { path_arg(path, path_len) }?;
    let where_ = path.display().to_string();
    let mut dir = Dir::open(&path).map_err(|e| store_error(&where_, e))?;
    let files = dir.read().map_err(|e| store_error(&where_, e))?;
    let Opened { state, store, ops, recovered, created } =
        Store::open(config, &files, Some(now), build).map_err(|e| decode_error(&where_, e))?;
    dir.apply_all(&ops).map_err(|e| store_error(&where_, e))?;
    let store = Box::new(Attached { store, io: Io::Dir(dir), committing: false, failed: None });
    Ok(Reopened { state, store, recovered, created })
}

/// Opens a store kept in the host's own storage: `files` as the host read them, `io` for every
/// operation from now on (the tidying recovery needs runs through it before this returns).
///
/// # Safety
/// `io` is NULL or valid with valid callbacks; `files` is NULL or points to `file_count` valid
/// entries.
pub(crate) unsafe fn open_io<S: Journaled>(
    io: *const leasehold_store_io,
    files: *const leasehold_store_file,
    file_count: usize,
    config: StoreConfig,
    now: i64,
    build: impl FnOnce(Option<&[u8]>) -> leasehold_core::Result<S>,
) -> Res<Reopened<S>> {
    let io = HostIo::new(unsafe { arg(io, "io") }?)?;
    let mut contents = Vec::new();
    for (i, f) in unsafe { slice(files, file_count, "files") }?.iter().enumerate() {
        let name = unsafe { slice(f.name.cast::<u8>(), f.name_len, "files[i].name") }
            .map_err(|e| Fail::new(e.status, format!("files[{i}]: {}", e.message)))?;
        let data = unsafe { slice(f.data, f.len, "files[i].data") }
            .map_err(|e| Fail::new(e.status, format!("files[{i}]: {}", e.message)))?;
        // A name that is not UTF-8 is not one of the store's files.
        if let Ok(name) = std::str::from_utf8(name) {
            contents.push((name.to_string(), data.to_vec()));
        }
    }
    let Opened { state, store, ops, recovered, created } =
        Store::open(config, &contents, Some(now), build)
            .map_err(|e| decode_error("the host's storage", e))?;
    drop(contents);
    io.apply_all(&ops).map_err(|e| io_fail(format!("opening the store: {e}")))?;
    let store = Box::new(Attached { store, io: Io::Host(io), committing: false, failed: None });
    Ok(Reopened { state, store, recovered, created })
}

/// Opens a durable landlord kept in the directory `path` (`path_len` bytes, no NUL needed),
/// creating the directory and the store if they do not exist, and recovering what is there:
/// the snapshot, then every log record after it. A torn tail (the last write cut short by a
/// crash: never acknowledged) is dropped; any other damage (a flipped byte, a gap, a damaged
/// snapshot, a missing snapshot once the log no longer starts at record 1) is refused with
/// `LEASEHOLD_STATUS_DECODE` and a message naming the file and byte offset, and the directory
/// is left as it was. A directory another process (or handle) has open is `LEASEHOLD_STATUS_IO`;
/// the lock (file `LOCK`) goes with the landlord, or with the process.
///
/// `config` is used only for a new store (or one rebuilt from a log that starts at record 1):
/// an existing store keeps the id, seed and settings it was created with (its store settings,
/// `leasehold_landlord_config_set_store`, apply every time). `policy` is code, not data: supply
/// it every time. Both are copied. Time spent down does not count: the landlord's clock goes on
/// from the last journaled time, whatever `now` (this process's clock) reads, so every lease
/// keeps the time it had left and none expires before its holder was told.
///
/// **Reply after durable.** Every change is journaled. A host must not send a reply (a grant,
/// renewal or cancel, or an answer such as UNKNOWN_LEASE, which may depend on the time it
/// journaled) before the records behind it are durable: answer the requests that are waiting,
/// call `leasehold_landlord_commit` (one append and one sync for all of them: group commit),
/// then send their replies. `leasehold_landlord_journal_seq` right after a call gives the record
/// its reply depends on, for hosts that release replies one by one. Expired leases handed out
/// by `poll_expired` are journaled too: commit before acting on them.
///
/// `*out_info` (optional: may be NULL) says what was recovered.
///
/// # Safety
/// `path` is NULL or points to `path_len` bytes; `config` and `policy` are NULL or live;
/// `out` is NULL or writable; `out_info` is NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn leasehold_landlord_open_dir(
    path: *const c_char,
    path_len: usize,
    config: *const leasehold_landlord_config,
    policy: *const leasehold_policy,
    now: i64,
    out: *mut *mut leasehold_landlord,
    out_info: *mut leasehold_recovery,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let info = Out::optional(out_info);
        let c = unsafe { arg(config, "config") }?;
        let p = unsafe { arg(policy, "policy") }?;
        p.spec.build()?;
        let o = unsafe { open_dir(path, path_len, c.store, now, builder(&c.inner, &p.spec)) }?;
        give_landlord(o, out, info);
        Ok(())
    })
}

/// Hands an opened durable landlord to C, with what recovery found.
fn give_landlord(
    o: Reopened<LL>,
    out: Out<*mut leasehold_landlord>,
    info: Option<Out<leasehold_recovery>>,
) {
    let r = recovery(&o.recovered, o.created, &o.state, o.state.len());
    give(LandlordState { ll: o.state, store: Some(o.store) }, out);
    if let Some(i) = info {
        unsafe { i.write(r) };
    }
}

/// Opens a durable landlord kept in the host's own storage: `files` (`file_count` of them) are
/// every file of the store as the host read them (names that are not the store's are ignored;
/// none at all for a new store), and `io` (copied) carries out the file operations from now on.
/// Recovery is the same as `leasehold_landlord_open_dir`'s: a torn tail is dropped, damage is
/// `LEASEHOLD_STATUS_DECODE` with a message naming the file and offset; the tidying that
/// recovery needs (cutting the torn tail, removing leftovers, a new store's first snapshot) is
/// carried out through `io` before this returns (a failing callback: `LEASEHOLD_STATUS_IO`). The
/// contents of `files` are copied: free them when this returns. Reply after durable, `config`,
/// `policy`, `now` and `out_info`: as for `leasehold_landlord_open_dir`.
///
/// # Safety
/// `io` is NULL or valid, its callbacks valid functions; `files` is NULL or points to
/// `file_count` valid entries; `config` and `policy` are NULL or live; outputs as for
/// `leasehold_landlord_open_dir`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn leasehold_landlord_open_io(
    io: *const leasehold_store_io,
    files: *const leasehold_store_file,
    file_count: usize,
    config: *const leasehold_landlord_config,
    policy: *const leasehold_policy,
    now: i64,
    out: *mut *mut leasehold_landlord,
    out_info: *mut leasehold_recovery,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let info = Out::optional(out_info);
        let c = unsafe { arg(config, "config") }?;
        let p = unsafe { arg(policy, "policy") }?;
        p.spec.build()?;
        let build = builder(&c.inner, &p.spec);
        let o = unsafe { open_io(io, files, file_count, c.store, now, build) }?;
        give_landlord(o, out, info);
        Ok(())
    })
}

// ---------- reply after durable ----------

/// The sequence number of the last record this landlord journaled: a reply handed out now (by
/// the call just made, whatever its status) depends on every record up to it, and may be sent
/// once `leasehold_landlord_commit` has answered a durable number at least as high. 0 for a
/// landlord in memory (nothing to wait for).
///
/// # Safety
/// `landlord` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_journal_seq(
    landlord: *const leasehold_landlord,
    out: *mut u64,
) -> leasehold_status {
    unsafe { journal_seq(landlord, out) }
}

/// Makes everything this landlord did so far durable: one append of every record journaled
/// since the last commit, one sync (so one commit covers every request answered meanwhile:
/// group commit), and a compaction when the log has outgrown the snapshot. `*out_durable` is
/// the last durable record: every reply whose `leasehold_landlord_journal_seq` is at most that
/// may now be sent. A landlord in memory has nothing to write: OK, `*out_durable` 0.
///
/// A failed write is `LEASEHOLD_STATUS_IO`, and so is every later commit: send none of the
/// replies still waiting, free the landlord and open the store again (it keeps everything that
/// was durable). With `leasehold_landlord_open_io`, the callbacks run inside this call.
///
/// # Safety
/// `landlord` is NULL or live; `out_durable` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_commit(
    landlord: *mut leasehold_landlord,
    out_durable: *mut u64,
) -> leasehold_status {
    unsafe { commit_out(landlord, false, out_durable) }
}

/// Commits (as `leasehold_landlord_commit`), then writes a new snapshot and removes the log it
/// covers, whether or not the log has outgrown the snapshot (commit does that by itself when it
/// has). A landlord in memory: OK, nothing done.
///
/// # Safety
/// `landlord` is NULL or live; `out_durable` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_compact(
    landlord: *mut leasehold_landlord,
    out_durable: *mut u64,
) -> leasehold_status {
    unsafe { commit_out(landlord, true, out_durable) }
}

/// Whether this landlord is kept in a store (opened with `_open_dir` or `_open_io`).
///
/// # Safety
/// `landlord` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_is_durable(
    landlord: *const leasehold_landlord,
    out: *mut bool,
) -> leasehold_status {
    unsafe { is_durable(landlord, out) }
}

// ---------- many threads: group commit ----------

/// A durable landlord for threaded hosts (opaque), from `leasehold_shared_landlord_open_dir`.
/// Unlike every other handle, it may be used from many threads at once (the calls that take it
/// non-`const` change it, under its own lock): each call changes the
/// landlord under a short internal lock and answers the journal record its result depends on
/// (`*out_seq`); `leasehold_shared_landlord_wait_durable` then blocks until that record is
/// durable. The first thread to wait writes and syncs everything journaled so far, outside the
/// landlord's lock, for every thread that arrived meanwhile: one sync covers them all (group
/// commit), and requests go on being answered while it syncs. No user code runs under its
/// locks. Free it with `leasehold_shared_landlord_free` once no other thread uses it.
#[allow(non_camel_case_types)]
pub struct leasehold_shared_landlord {
    inner: Shared<LL>,
}

/// # Safety
/// `p` is NULL or live.
unsafe fn shared<'a>(p: *const leasehold_shared_landlord) -> Res<&'a Shared<LL>> {
    Ok(&unsafe { arg(p, "landlord") }?.inner)
}

/// [`shared`] for the calls that change the landlord (non-`const` in C, though many threads may
/// make them at once: the handle locks inside).
///
/// # Safety
/// `p` is NULL or live.
unsafe fn shared_mut<'a>(p: *mut leasehold_shared_landlord) -> Res<&'a Shared<LL>> {
    unsafe { shared(p.cast_const()) }
}

/// Writes a journal position that every answer has, failed ones included.
fn seq_out(out: Out<u64>, seq: u64) {
    unsafe { out.write(seq) }
}

/// Opens a durable landlord in the directory `path` for many threads: recovery, `config`,
/// `policy`, `now` and `out_info` as for `leasehold_landlord_open_dir`.
///
/// **Reply after durable.** Every answering call (`_handle_bytes`, `_grant`, `_renew`,
/// `_cancel`, `_poll_expired`) writes `*out_seq`, the journal record its answer depends on,
/// whatever its status (an UNKNOWN_LEASE may depend on a record too). A host must not send the
/// answer before `leasehold_shared_landlord_wait_durable(landlord, seq)` has returned OK.
///
/// # Safety
/// As for `leasehold_landlord_open_dir`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn leasehold_shared_landlord_open_dir(
    path: *const c_char,
    path_len: usize,
    config: *const leasehold_landlord_config,
    policy: *const leasehold_policy,
    now: i64,
    out: *mut *mut leasehold_shared_landlord,
    out_info: *mut leasehold_recovery,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let info = Out::optional(out_info);
        let path = unsafe { path_arg(path, path_len) }?;
        let c = unsafe { arg(config, "config") }?;
        let p = unsafe { arg(policy, "policy") }?;
        p.spec.build()?;
        let where_ = path.display().to_string();
        let d = Durable::open(&path, c.store, now, builder(&c.inner, &p.spec))
            .map_err(|e| store_error(&where_, e))?;
        let r = recovery(d.recovered(), d.created(), d.state(), d.state().len());
        give_box(leasehold_shared_landlord { inner: Shared::new(d) }, out);
        if let Some(i) = info {
            unsafe { i.write(r) };
        }
        Ok(())
    })
}

/// Frees a shared landlord (releasing its directory). Records not yet waited for are not
/// written: commit first (`leasehold_shared_landlord_commit`) for a clean shutdown. NULL is
/// ignored. No other thread may be using it.
///
/// # Safety
/// `landlord` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_shared_landlord_free(landlord: *mut leasehold_shared_landlord) {
    unsafe { handle::free_box(landlord) }
}

/// Answers one encoded request (as `leasehold_landlord_handle_bytes`): the reply goes to
/// `*out_reply` / `*out_reply_len` (free with `leasehold_bytes_free`), and `*out_seq` is the
/// record it depends on: send it only after `leasehold_shared_landlord_wait_durable(landlord,
/// *out_seq)` returned OK.
///
/// # Safety
/// `landlord` is NULL or live; `request` is NULL or points to `len` bytes; outputs writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn leasehold_shared_landlord_handle_bytes(
    landlord: *mut leasehold_shared_landlord,
    request: *const u8,
    len: usize,
    encoding_: i32,
    now: i64,
    out_reply: *mut *mut u8,
    out_reply_len: *mut usize,
    out_seq: *mut u64,
) -> leasehold_status {
    guard(|| {
        let d = Out::new(out_reply, "out_reply")?;
        let n = Out::new(out_reply_len, "out_reply_len")?;
        let seq = Out::new(out_seq, "out_seq")?;
        let enc: Encoding = encoding(encoding_)?;
        let b = unsafe { slice(request, len, "request") }?;
        let sh = unsafe { shared_mut(landlord) }?;
        let (reply, s) = sh.with(|ll| ll.handle_bytes(b, enc, now));
        unsafe { give_bytes(reply, d, n) };
        seq_out(seq, s);
        Ok(())
    })
}

/// Grants a lease (as `leasehold_landlord_grant`); `*out_seq`, written whatever the status, is
/// the record the answer depends on (see `leasehold_shared_landlord_open_dir`).
///
/// # Safety
/// `landlord` is NULL or live; `resource` is NULL or points to `resource_len` bytes; outputs
/// are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_shared_landlord_grant(
    landlord: *mut leasehold_shared_landlord,
    resource: *const u8,
    resource_len: usize,
    requested: i64,
    now: i64,
    out: *mut leasehold_grant,
    out_seq: *mut u64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let seq = Out::new(out_seq, "out_seq")?;
        let r = unsafe { slice(resource, resource_len, "resource") }?;
        let sh = unsafe { shared_mut(landlord) }?;
        let (g, s) = sh.with(|ll| ll.grant(r.to_vec(), requested, now));
        seq_out(seq, s);
        let g = g?;
        unsafe {
            out.write(leasehold_grant {
                cookie: g.cookie.into(),
                duration: g.duration,
                expiration: g.expiration,
            })
        };
        Ok(())
    })
}

/// Renews a lease (as `leasehold_landlord_renew`); `*out_seq`, written whatever the status, is
/// the record the answer depends on.
///
/// # Safety
/// `landlord` is NULL or live; outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_shared_landlord_renew(
    landlord: *mut leasehold_shared_landlord,
    cookie: leasehold_cookie,
    requested: i64,
    now: i64,
    out_granted: *mut i64,
    out_seq: *mut u64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out_granted, "out_granted")?;
        let seq = Out::new(out_seq, "out_seq")?;
        let sh = unsafe { shared_mut(landlord) }?;
        let (d, s) = sh.with(|ll| ll.renew(cookie.into(), requested, now));
        seq_out(seq, s);
        unsafe { out.write(d?) };
        Ok(())
    })
}

/// Cancels a lease (its resource is dropped); `*out_seq`, written whatever the status, is the
/// record the answer depends on.
///
/// # Safety
/// `landlord` is NULL or live; `out_seq` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_shared_landlord_cancel(
    landlord: *mut leasehold_shared_landlord,
    cookie: leasehold_cookie,
    now: i64,
    out_seq: *mut u64,
) -> leasehold_status {
    guard(|| {
        let seq = Out::new(out_seq, "out_seq")?;
        let sh = unsafe { shared_mut(landlord) }?;
        let (r, s) = sh.with(|ll| ll.cancel(cookie.into(), now));
        seq_out(seq, s);
        r?;
        Ok(())
    })
}

/// Blocks until journal record `seq` is durable. If no other thread is writing, this one
/// writes and syncs everything journaled so far (and compacts when due) for every waiting
/// thread; else it waits for that write. `LEASEHOLD_STATUS_IO` if the store could not write:
/// then no later record will ever be durable in this process (free it and open the store
/// again).
///
/// # Safety
/// `landlord` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_shared_landlord_wait_durable(
    landlord: *mut leasehold_shared_landlord,
    seq: u64,
) -> leasehold_status {
    guard(|| {
        let sh = unsafe { shared_mut(landlord) }?;
        sh.wait_durable(seq).map_err(|e| io_fail(format!("writing the store: {e}")))
    })
}

/// Makes everything journaled so far durable (waits as `_wait_durable` for the last record);
/// `*out_durable` is that record.
///
/// # Safety
/// `landlord` is NULL or live; `out_durable` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_shared_landlord_commit(
    landlord: *mut leasehold_shared_landlord,
    out_durable: *mut u64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out_durable, "out_durable")?;
        let sh = unsafe { shared_mut(landlord) }?;
        let ((), seq) = sh.with(|_| ());
        sh.wait_durable(seq).map_err(|e| io_fail(format!("writing the store: {e}")))?;
        unsafe { out.write(seq) };
        Ok(())
    })
}

/// When to call `leasehold_shared_landlord_handle_timeout` next (as
/// `leasehold_landlord_poll_timeout`).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_shared_landlord_poll_timeout(
    landlord: *const leasehold_shared_landlord,
    out_has: *mut bool,
    out_at: *mut i64,
) -> leasehold_status {
    guard(|| {
        let out = Maybe::new(out_has, "out_has", out_at, "out_at")?;
        let sh = unsafe { shared(landlord) }?;
        unsafe { out.write(sh.read(|ll| ll.poll_timeout())) };
        Ok(())
    })
}

/// Advances expiry to `now` (as `leasehold_landlord_handle_timeout`).
///
/// # Safety
/// `landlord` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_shared_landlord_handle_timeout(
    landlord: *mut leasehold_shared_landlord,
    now: i64,
) -> leasehold_status {
    guard(|| {
        unsafe { shared_mut(landlord) }?.with(|ll| ll.handle_timeout(now));
        Ok(())
    })
}

/// The next expired lease (as `leasehold_landlord_poll_expired`; `out->resource` is the
/// caller's to free); `*out_seq` is the record that hands it out: wait for it before acting
/// on the expiry.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_shared_landlord_poll_expired(
    landlord: *mut leasehold_shared_landlord,
    out: *mut leasehold_expired,
    out_found: *mut bool,
    out_seq: *mut u64,
) -> leasehold_status {
    guard(|| {
        let out = Maybe::new(out_found, "out_found", out, "out")?;
        let seq = Out::new(out_seq, "out_seq")?;
        let sh = unsafe { shared_mut(landlord) }?;
        let (e, s): (Option<Expired<Vec<u8>>>, u64) = sh.with(|ll| ll.poll_expired());
        seq_out(seq, s);
        unsafe { out.write(e.map(leasehold_expired::convert).transpose()?) };
        Ok(())
    })
}

/// Leases held (as `leasehold_landlord_len`).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_shared_landlord_len(
    landlord: *const leasehold_shared_landlord,
    out: *mut usize,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let n = unsafe { shared(landlord) }?.read(|ll| ll.len());
        unsafe { out.write(n) };
        Ok(())
    })
}

/// How many group commits (one write and one sync each) the landlord has carried out since it
/// was opened: with many threads waiting, far fewer than the requests answered.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_shared_landlord_commits(
    landlord: *const leasehold_shared_landlord,
    out: *mut u64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let n = unsafe { shared(landlord) }?.writes();
        unsafe { out.write(n) };
        Ok(())
    })
}
