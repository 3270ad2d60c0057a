//! Durable handles: a landlord (or any journaled state machine, such as the discovery service)
//! kept in a store (a directory of log segments and a snapshot), recovered when opened, with
//! reply-after-durable as the natural path.
//!
//! The store half is generic ([`Kept`], [`Source`], [`commit`]): a handle whose
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
use leasehold_core::{Encoding, Landlord, LandlordConfig, LeaseError, PolicySpec};
use leasehold_store::{Dir, Durable, Shared};

use crate::common::{encoding, give_bytes, leasehold_cookie};
use crate::error::{arg, guard, leasehold_status, null, slice, Fail, Maybe, Out, Res};
use crate::handle::{self, give, give_box, Call, Opaque};
use crate::landlord::{
    leasehold_expired, leasehold_grant, leasehold_landlord, leasehold_landlord_config,
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

/// A host's own storage for a durable handle (flash, a database, an RTOS file API; README,
/// "Your own storage"): five required callbacks, `user_data` first, that carry out the core's
/// file operations on the named files of one store (at most 28 ASCII bytes: `snapshot`,
/// `snapshot.tmp`, `log-<20 digits>.lhj`) in order, each completely before the next. They run
/// on the calling thread inside `_open_io`, `_commit` and `_compact` with nothing of the handle
/// borrowed (a callback may grant; `_commit` from inside one is `BUSY`; freeing inside one is
/// deferred). A non-zero return fails the call with `LEASEHOLD_STATUS_IO` and every later
/// commit too: free the handle and open the store again.
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
pub(crate) struct HostIo(leasehold_store_io);

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
        let (io, u) = (&self.0, self.0.user_data);
        let (FileOp::Append { file, .. }
        | FileOp::Sync { file }
        | FileOp::Replace { file, .. }
        | FileOp::Truncate { file, .. }
        | FileOp::Remove { file }) = op;
        let name = CString::new(file.as_str()).expect("store file names have no NUL");
        let (f, ok) = (name.as_ptr(), "checked at open");
        // SAFETY: the host promised valid callbacks (`leasehold_store_io`); `f` lives to the end.
        let (what, rc) = unsafe {
            match op {
                FileOp::Append { bytes: b, .. } => {
                    ("append", io.append.expect(ok)(u, f, b.as_ptr(), b.len()))
                }
                FileOp::Sync { .. } => ("sync", io.sync.expect(ok)(u, f)),
                FileOp::Replace { bytes: b, .. } => {
                    ("replace", io.replace.expect(ok)(u, f, b.as_ptr(), b.len()))
                }
                FileOp::Truncate { len, .. } => ("truncate", io.truncate.expect(ok)(u, f, *len)),
                FileOp::Remove { .. } => ("remove", io.remove.expect(ok)(u, f)),
            }
        };
        match rc {
            0 => Ok(()),
            rc => Err(format!("the store's {what} callback returned {rc} for {file}")),
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

/// What a commit leaves to do once the handle's state is no longer borrowed: operations for
/// the host's callbacks (a directory's are written at once).
type Job = Option<(HostIo, Vec<FileOp>)>;

impl Attached {
    /// The first half of a commit, with the state borrowed: takes the records written since the
    /// last commit (and a compaction, if due or `force`d) and, for a directory, writes them.
    fn begin<S: Journaled>(&mut self, ll: &mut S, force: bool) -> Res<(u64, Job)> {
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
            return Ok((durable, None));
        }
        match &mut self.io {
            Io::Dir(d) => match d.apply_all(&ops) {
                Ok(()) => Ok((durable, None)),
                Err(e) => {
                    let m = format!("writing the store in {}: {e}", d.path().display());
                    self.failed = Some(m.clone());
                    Err(io_fail(m))
                }
            },
            Io::Host(h) => {
                self.committing = true;
                Ok((durable, Some((*h, ops))))
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
        let (durable, job) = self.begin(s, false)?;
        if let Some((io, ops)) = job {
            self.end(io.apply_all(&ops))?;
        }
        Ok(durable)
    }
}

/// The state of a handle that may be kept in a store: the journaled core state (which the
/// handle derefs to), and its store if it has one.
pub(crate) struct Kept<S> {
    pub(crate) state: S,
    pub(crate) store: Option<Box<Attached>>,
}

impl<S> Kept<S> {
    pub(crate) fn memory(state: S) -> Kept<S> {
        Kept { state, store: None }
    }
}

impl<S> std::ops::Deref for Kept<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.state
    }
}

impl<S> std::ops::DerefMut for Kept<S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.state
    }
}

/// The body of `_commit` (`force` false) and `_compact` (true) of a handle that may be
/// durable: writes, syncs, compacts; `*out_durable` is the last durable record (0 for a handle
/// in memory, which has nothing to write).
///
/// # Safety
/// `p` is NULL or live; `out_durable` is NULL or writable.
pub(crate) unsafe fn commit_out<S: Journaled, H: Opaque<Inner = Kept<S>>>(
    p: *mut H,
    force: bool,
    out_durable: *mut u64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out_durable, "out_durable")?;
        let call = unsafe { Call::enter(p) }?;
        let (durable, job) = call.with_mut(|s| match s.store.as_deref_mut() {
            None => Ok((0, None)),
            Some(a) => a.begin(&mut s.state, force),
        })?;
        if let Some((io, ops)) = job {
            // The host's callbacks run with nothing borrowed: one may free the handle.
            let (mut result, mut done) = (Ok(()), 0);
            while done < ops.len() && !call.freed() && result.is_ok() {
                result = io.apply(&ops[done]);
                done += usize::from(result.is_ok());
            }
            if !call.freed() {
                call.with_mut(|s| s.store.as_mut().expect("a durable handle").end(result))?;
            } else if done < ops.len() {
                return Err(Fail::new(
                    leasehold_status::LEASEHOLD_STATUS_BUSY,
                    format!(
                        "the {} was freed inside a store callback: the commit did not complete, \
                         and nothing it covers may be acknowledged",
                        H::WHAT
                    ),
                ));
            }
        }
        unsafe { out.write(durable) };
        Ok(())
    })
}

/// `_journal_seq`: the last record the handle's state journaled (0 in memory).
///
/// # Safety
/// Pointers are NULL or valid.
pub(crate) unsafe fn journal_seq<S: Journaled, H: Opaque<Inner = Kept<S>>>(
    p: *const H,
    out: *mut u64,
) -> leasehold_status {
    unsafe { handle::get(p, out, |s| Ok(s.state.journal_seq())) }
}

/// `_is_durable`: whether the handle is kept in a store.
///
/// # Safety
/// Pointers are NULL or valid.
pub(crate) unsafe fn is_durable<S, H: Opaque<Inner = Kept<S>>>(
    p: *const H,
    out: *mut bool,
) -> leasehold_status {
    unsafe { handle::get(p, out, |s| Ok(s.store.is_some())) }
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

/// Where a durable handle's store is: a directory (locked, named for messages), or the host's
/// own storage with the files the host read.
pub(crate) enum Source {
    Dir(Dir, String),
    Host(HostIo, Vec<(String, Vec<u8>)>),
}

impl Source {
    /// The directory `path` (`path_len` bytes), created if needed and locked.
    ///
    /// # Safety
    /// `path` is NULL or points to `path_len` bytes.
    pub(crate) unsafe fn dir(path: *const c_char, path_len: usize) -> Res<Source> {
        let path = unsafe { path_arg(path, path_len) }?;
        let where_ = path.display().to_string();
        Ok(Source::Dir(Dir::open(&path).map_err(|e| store_error(&where_, e))?, where_))
    }

    /// The host's storage: `io` for every operation, `files` as the host read them (copied).
    ///
    /// # Safety
    /// `io` is NULL or valid with valid callbacks; `files` is NULL or points to `file_count`
    /// valid entries.
    pub(crate) unsafe fn host(
        io: *const leasehold_store_io,
        files: *const leasehold_store_file,
        file_count: usize,
    ) -> Res<Source> {
        let io = HostIo::new(unsafe { arg(io, "io") }?)?;
        let mut contents = Vec::new();
        for (i, f) in unsafe { slice(files, file_count, "files") }?.iter().enumerate() {
            let at = |e: Fail| Fail::new(e.status, format!("files[{i}]: {}", e.message));
            let name =
                unsafe { slice(f.name.cast::<u8>(), f.name_len, "files[i].name") }.map_err(at)?;
            let data = unsafe { slice(f.data, f.len, "files[i].data") }.map_err(at)?;
            // A name that is not UTF-8 is not one of the store's files.
            if let Ok(name) = std::str::from_utf8(name) {
                contents.push((name.to_string(), data.to_vec()));
            }
        }
        Ok(Source::Host(io, contents))
    }

    /// Recovers the state the store holds (`build` makes it from the snapshot's bytes, or
    /// afresh) and carries out the tidying recovery needs. Damage is `DECODE` naming the file
    /// and offset; a directory that cannot be read or written, or a failing callback, `IO`.
    pub(crate) fn open<S: Journaled>(
        self,
        config: StoreConfig,
        now: i64,
        build: impl FnOnce(Option<&[u8]>) -> leasehold_core::Result<S>,
    ) -> Res<Reopened<S>> {
        let (io, o) = match self {
            Source::Dir(mut dir, w) => {
                let files = dir.read().map_err(|e| store_error(&w, e))?;
                let o = Store::open(config, &files, Some(now), build)
                    .map_err(|e| decode_error(&w, e))?;
                dir.apply_all(&o.ops).map_err(|e| store_error(&w, e))?;
                (Io::Dir(dir), o)
            }
            Source::Host(h, files) => {
                let o = Store::open(config, &files, Some(now), build)
                    .map_err(|e| decode_error("the host's storage", e))?;
                drop(files);
                h.apply_all(&o.ops).map_err(|e| io_fail(format!("opening the store: {e}")))?;
                (Io::Host(h), o)
            }
        };
        let Opened { state, store, recovered, created, .. } = o;
        let store = Box::new(Attached { store, io, committing: false, failed: None });
        Ok(Reopened { state, store, recovered, created })
    }
}

/// The body of `leasehold_landlord_open_dir` and `_open_io`: the store `src` names, with what
/// recovery found in `*out_info` (optional).
///
/// # Safety
/// As the callers'.
unsafe fn open_landlord(
    out: *mut *mut leasehold_landlord,
    out_info: *mut leasehold_recovery,
    src: impl FnOnce() -> Res<Source>,
    (config, policy): (*const leasehold_landlord_config, *const leasehold_policy),
    now: i64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let c = unsafe { arg(config, "config") }?;
        let p = unsafe { arg(policy, "policy") }?;
        p.spec.build()?;
        let o = src()?.open(c.store, now, builder(&c.inner, &p.spec))?;
        let r = recovery(&o.recovered, o.created, &o.state, o.state.len());
        give(Kept { state: o.state, store: Some(o.store) }, out);
        unsafe { Out::put(out_info, r) };
        Ok(())
    })
}

/// Opens a durable landlord kept in the directory `path` (`path_len` bytes, no NUL needed),
/// creating the directory and the store if needed, else recovering the snapshot and every log
/// record after it (README, "Durability"): a torn tail is dropped; other damage is
/// `LEASEHOLD_STATUS_DECODE` naming the file and byte offset, the directory left as it was; a
/// directory another handle or process holds (file `LOCK`) is `LEASEHOLD_STATUS_IO`. `config`
/// counts only for a new store (its store settings every time); `policy` is code: give it every
/// time; both are copied. Time spent down does not count. `*out_info` (optional) says what was
/// recovered.
///
/// **Reply after durable**: send no reply (an error such as UNKNOWN_LEASE included) and act on
/// no expiry before the records behind it are durable: answer what is waiting,
/// `leasehold_landlord_commit`, then send.
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
    unsafe { open_landlord(out, out_info, || Source::dir(path, path_len), (config, policy), now) }
}

/// Opens a durable landlord kept in the host's own storage (README, "Your own storage"):
/// `files` (`file_count`, copied) are every file of the store as the host read them (none for
/// a new store; other names are ignored), `io` (copied) carries out every file operation from
/// now on, the tidying recovery needs included, before this returns (a failing callback:
/// `LEASEHOLD_STATUS_IO`). The rest as `leasehold_landlord_open_dir`.
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
    let src = || unsafe { Source::host(io, files, file_count) };
    unsafe { open_landlord(out, out_info, src, (config, policy), now) }
}

// ---------- reply after durable ----------

/// The last record this landlord journaled: a reply handed out now (whatever its status) may be
/// sent once `leasehold_landlord_commit` answered a durable number at least as high. 0 in
/// memory.
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

/// Makes everything journaled so far durable: one append, one sync (group commit), and a
/// compaction when the log has outgrown the snapshot; `*out_durable` is the last durable record.
/// A failed write is `LEASEHOLD_STATUS_IO`, and so is every later commit: send none of the
/// replies waiting, free the landlord, open the store again. `_open_io`'s callbacks run inside
/// this call. In memory: OK, `*out_durable` 0.
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

/// Commits, then writes a new snapshot and removes the log it covers (commit does that by itself
/// when the log has outgrown the snapshot). In memory: OK, nothing done.
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

/// A durable landlord for threaded hosts (opaque), from `leasehold_shared_landlord_open_dir`:
/// the one handle many threads may use at once (README, "Threads"). Each call changes the
/// landlord under a short internal lock and writes `*out_seq`, the record its answer depends
/// on, whatever its status; `leasehold_shared_landlord_wait_durable` blocks until that record
/// is durable, one sync serving every thread waiting (group commit). No user code runs under
/// its locks. Free it with `leasehold_shared_landlord_free` once no other thread uses it.
#[allow(non_camel_case_types)]
pub struct leasehold_shared_landlord {
    inner: Shared<LL>,
}

/// # Safety
/// `p` is NULL or live.
unsafe fn shared<'a>(p: *const leasehold_shared_landlord) -> Res<&'a Shared<LL>> {
    Ok(&unsafe { arg(p, "landlord") }?.inner)
}

/// One answering call: `f` under the landlord's lock, `*out_seq` the record its answer depends
/// on (written whatever the answer).
///
/// # Safety
/// `p` is NULL or live; `out_seq` is NULL or writable.
unsafe fn answer<T>(
    p: *mut leasehold_shared_landlord,
    out_seq: *mut u64,
    f: impl FnOnce(&mut LL) -> T,
) -> Res<T> {
    let seq = Out::new(out_seq, "out_seq")?;
    let (t, s) = unsafe { shared(p) }?.with(f);
    unsafe { seq.write(s) };
    Ok(t)
}

/// Blocks until record `seq` is durable.
fn wait(sh: &Shared<LL>, seq: u64) -> Res {
    sh.wait_durable(seq).map_err(|e| io_fail(format!("writing the store: {e}")))
}

/// Opens a durable landlord in the directory `path` for many threads: recovery, `config`,
/// `policy`, `now` and `out_info` as for `leasehold_landlord_open_dir`. Send no answer before
/// `leasehold_shared_landlord_wait_durable(landlord, *out_seq)` returned OK.
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
        let path = unsafe { path_arg(path, path_len) }?;
        let c = unsafe { arg(config, "config") }?;
        let p = unsafe { arg(policy, "policy") }?;
        p.spec.build()?;
        let where_ = path.display().to_string();
        let d = Durable::open(&path, c.store, now, builder(&c.inner, &p.spec))
            .map_err(|e| store_error(&where_, e))?;
        let r = recovery(d.recovered(), d.created(), d.state(), d.state().len());
        give_box(leasehold_shared_landlord { inner: Shared::new(d) }, out);
        unsafe { Out::put(out_info, r) };
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

/// Answers one encoded request (as `leasehold_landlord_handle_bytes`; the reply is freed with
/// `leasehold_bytes_free`); send it once `*out_seq` is durable.
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
        let (d, n) = (Out::new(out_reply, "out_reply")?, Out::new(out_reply_len, "out_reply_len")?);
        let enc: Encoding = encoding(encoding_)?;
        let b = unsafe { slice(request, len, "request") }?;
        let reply = unsafe { answer(landlord, out_seq, |ll| ll.handle_bytes(b, enc, now)) }?;
        unsafe { give_bytes(reply, d, n) };
        Ok(())
    })
}

/// Grants a lease (as `leasehold_landlord_grant`); `*out_seq` as for `_handle_bytes`.
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
        let r = unsafe { slice(resource, resource_len, "resource") }?;
        let g = unsafe { answer(landlord, out_seq, |ll| ll.grant(r.to_vec(), requested, now)) }?;
        unsafe { out.write(g?.into()) };
        Ok(())
    })
}

/// Renews a lease (as `leasehold_landlord_renew`); `*out_seq` as for `_handle_bytes`.
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
        let d = unsafe { answer(landlord, out_seq, |ll| ll.renew(cookie.into(), requested, now)) }?;
        unsafe { out.write(d?) };
        Ok(())
    })
}

/// Cancels a lease (its resource is dropped); `*out_seq` as for `_handle_bytes`.
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
        unsafe { answer(landlord, out_seq, |ll| ll.cancel(cookie.into(), now)) }??;
        Ok(())
    })
}

/// Blocks until journal record `seq` is durable: the first thread to wait writes and syncs
/// everything journaled so far (compacting when due) for every thread waiting; the others wait
/// for that write. `LEASEHOLD_STATUS_IO` if the store could not write: then no later record
/// will ever be durable in this process (free it and open the store again).
///
/// # Safety
/// `landlord` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn leasehold_shared_landlord_wait_durable(
    landlord: *mut leasehold_shared_landlord,
    seq: u64,
) -> leasehold_status {
    guard(|| wait(unsafe { shared(landlord) }?, seq))
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
        let sh = unsafe { shared(landlord) }?;
        let ((), seq) = sh.with(|_| ());
        wait(sh, seq)?;
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
        unsafe { out.write(shared(landlord)?.read(|ll| ll.poll_timeout())) };
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
    guard(|| unsafe { shared(landlord) }.map(|sh| sh.with(|ll| ll.handle_timeout(now)).0))
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
        let e = unsafe { answer(landlord, out_seq, |ll| ll.poll_expired()) }?;
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
        unsafe { out.write(shared(landlord)?.read(|ll| ll.len())) };
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
        unsafe { out.write(shared(landlord)?.writes()) };
        Ok(())
    })
}
