//! Durable state machines: a journaled part of the core (a landlord, a discovery service) kept
//! in a directory (log segments and a snapshot), recovered when opened, answering only once what
//! it answers is durable. Written once for every such part: [`Store`] (the directory, group
//! commit), [`Backend`] (in memory under the binding's lock, or in a store) and
//! `durable_methods!` (the Python methods every durable part shares: `durable`, `data_dir`,
//! `recovery`, `journal_seq`, `durable_seq`, `commits`, `wait_durable`, `commit`).
//!
//! The format and every decision about it (frames, checksums, file names, rotation,
//! compaction, torn tail vs damage) are the core's; `leasehold-store` carries out its file
//! operations on `std::fs` and adds group commit for threads (`Shared`): each call changes the
//! state under a short lock, then waits until the record it depends on is durable; the first
//! waiter writes and syncs everything journaled so far, for every thread that arrived
//! meanwhile. All of it runs detached from the interpreter (no Python code runs, other Python
//! threads do), and a durable part holds only bytes, so nothing it drops can run user code.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use leasehold::journal::Journaled;
use leasehold::store::StoreConfig;
use leasehold::LeaseError;
use leasehold_store::{Durable, Shared};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::u64_arg;
use crate::errors::to_py;
use crate::guard::Guarded;

/// What opening a store found.
#[derive(Debug, Clone)]
pub struct Recovery {
    created: bool,
    replayed: u64,
    last_seq: u64,
    torn_tail: Option<String>,
    /// What the state holds, by name (`leases`, `registrations`) and count.
    holds: (&'static str, usize),
}

impl Recovery {
    /// As a dict for Python.
    pub fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("created", self.created)?;
        d.set_item("replayed", self.replayed)?;
        d.set_item("last_seq", self.last_seq)?;
        d.set_item("torn_tail", self.torn_tail.is_some())?;
        d.set_item("torn_reason", self.torn_tail.clone())?;
        d.set_item(self.holds.0, self.holds.1)?;
        Ok(d)
    }
}

/// A journaled state machine in a store, shared by threads.
pub struct Store<S> {
    shared: Shared<S>,
    path: PathBuf,
    recovery: Recovery,
    /// The highest record known durable.
    durable: AtomicU64,
}

/// How to open a store: where, its settings, the host's `now`, and what the state holds (for
/// [`Recovery`]).
pub struct OpenArgs<S> {
    pub path: PathBuf,
    pub store: StoreConfig,
    pub now: i64,
    /// Name and count of what the state holds, reported in `recovery`.
    pub holds: (&'static str, fn(&S) -> usize),
}

/// The error for a store that cannot be opened, read or written: `DecodeError` for damage,
/// `StoreError` (an `OSError`) for the rest.
fn store_error(py: Python<'_>, path: &std::path::Path, e: &io::Error) -> PyErr {
    let text = e.to_string();
    // Damage comes from the core as a decode error already: say "decode error" once.
    let text = text.strip_prefix("decode error: ").unwrap_or(&text);
    let message = format!("store in {}: {text}", path.display());
    if e.kind() == io::ErrorKind::InvalidData {
        return to_py(py, &LeaseError::Decode(message));
    }
    let make = || -> PyResult<PyErr> {
        let cls = py.import("leasehold._errors")?.getattr("StoreError")?;
        Ok(PyErr::from_value(cls.call1((message.clone(), e.raw_os_error()))?))
    };
    make().unwrap_or_else(|err| err)
}

/// A `data_dir` argument: a str or an `os.PathLike`.
pub fn path_arg(data_dir: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    data_dir.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "data_dir must be a str or os.PathLike, got {}",
            crate::convert::type_name(data_dir)
        ))
    })
}

/// The store settings shared by every `open`: `segment_bytes`, `min_compact_bytes`.
pub fn store_config(
    segment_bytes: Option<&Bound<'_, PyAny>>,
    min_compact_bytes: Option<&Bound<'_, PyAny>>,
) -> PyResult<StoreConfig> {
    let mut store = StoreConfig::default();
    if let Some(b) = segment_bytes {
        store.segment_bytes = u64_arg(b, "segment_bytes")?;
    }
    if let Some(b) = min_compact_bytes {
        store.min_compact_bytes = u64_arg(b, "min_compact_bytes")?;
    }
    Ok(store)
}

impl<S: Journaled + Send> Store<S> {
    /// Opens (creating if needed) and recovers the store, detached from the interpreter:
    /// `build` makes the state from the snapshot (`None`: a new store). Time spent down does
    /// not count: the store resumes the state machine at `now`.
    pub fn open(
        py: Python<'_>,
        args: OpenArgs<S>,
        build: impl FnOnce(Option<&[u8]>) -> leasehold::Result<S> + Send,
    ) -> PyResult<Store<S>> {
        let OpenArgs { path, store, now, holds } = args;
        let p = path.clone();
        let opened = py.detach(move || Durable::open(&p, store, now, build));
        let d = opened.map_err(|e| store_error(py, &path, &e))?;
        let r = d.recovered();
        let recovery = Recovery {
            created: d.created(),
            replayed: r.replayed,
            last_seq: r.last_seq.max(d.state().journal_seq()),
            torn_tail: r.torn.as_ref().map(|t| t.2.clone()),
            holds: (holds.0, (holds.1)(d.state())),
        };
        let durable = AtomicU64::new(recovery.last_seq);
        Ok(Store { shared: Shared::new(d), path, recovery, durable })
    }

    /// The directory.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// What opening found.
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// How many group commits (one write and one sync each) were made.
    pub fn commits(&self) -> u64 {
        self.shared.writes()
    }

    /// The highest record known durable.
    pub fn durable_seq(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    /// Runs `f` on the state (detached); returns its result and the record it depends on.
    pub fn with<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut S) -> T + Send) -> (T, u64) {
        py.detach(|| self.shared.with(f))
    }

    fn wait_detached(&self, seq: u64) -> io::Result<()> {
        if self.durable_seq() >= seq {
            return Ok(());
        }
        self.shared.wait_durable(seq)?;
        self.durable.fetch_max(seq, Ordering::AcqRel);
        Ok(())
    }

    /// Blocks (detached) until record `seq` is durable, syncing if no other thread is.
    pub fn wait(&self, py: Python<'_>, seq: u64) -> PyResult<()> {
        py.detach(|| self.wait_detached(seq)).map_err(|e| store_error(py, &self.path, &e))
    }

    /// Runs `f` and returns its result once the records behind it are durable: the natural path
    /// of every call whose result leaves the process (a reply, an event, an expiry).
    pub fn answer<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut S) -> T + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let (t, seq) = self.shared.with(f);
            self.wait_detached(seq).map(|()| t)
        })
        .map_err(|e| store_error(py, &self.path, &e))
    }

    /// Makes everything journaled so far durable; returns the last durable record.
    pub fn commit(&self, py: Python<'_>) -> PyResult<u64> {
        self.answer(py, |s| s.journal_seq())
    }
}

/// Where a part's state lives.
#[allow(clippy::large_enum_variant)] // in memory is the common case: no extra indirection for it
pub enum Backend<S> {
    /// In memory, under the binding's lock.
    Memory(Guarded<S>),
    /// In a store on disk (`open`).
    Durable(Box<Store<S>>),
}

impl<S: Journaled + Send> Backend<S> {
    /// Runs `f` on the state; `f` must not touch Python (see `guard`). In a store it runs
    /// detached, and nothing waits for the disk: use it for calls whose result leaves nothing.
    #[inline]
    pub fn with<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut S) -> T + Send) -> PyResult<T> {
        match self {
            Backend::Memory(g) => g.with(py, f),
            Backend::Durable(d) => Ok(d.with(py, f).0),
        }
    }

    /// As [`Backend::with`], for calls whose result leaves the process (answers a holder, is
    /// delivered, is sent): in a store it returns only once the records behind the result are
    /// durable (group commit). `long` runs an in-memory state detached too (big batches: other
    /// threads run meanwhile).
    #[inline]
    pub fn answer<T: Send>(
        &self,
        py: Python<'_>,
        long: bool,
        f: impl FnOnce(&mut S) -> T + Send,
    ) -> PyResult<T> {
        match self {
            Backend::Memory(g) if long => g.with_detached(py, f),
            Backend::Memory(g) => g.with(py, f),
            Backend::Durable(d) => d.answer(py, f),
        }
    }

    /// `f`'s result and the journal record it depends on (0 in memory), without waiting: for
    /// hosts that wait for the disk elsewhere (`wait_durable`; the asyncio drivers sync off
    /// their loop).
    pub fn take<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut S) -> T + Send,
    ) -> PyResult<(T, u64)> {
        match self {
            Backend::Memory(g) => Ok((g.with(py, f)?, 0)),
            Backend::Durable(d) => Ok(d.with(py, f)),
        }
    }

    /// The store, when the state is kept in one.
    #[inline]
    pub fn store(&self) -> Option<&Store<S>> {
        match self {
            Backend::Memory(_) => None,
            Backend::Durable(d) => Some(d),
        }
    }
}

/// A pyclass whose state is a journaled part of the core, in memory or in a store.
pub trait Stored {
    /// The core type.
    type State: Journaled + Send;
    /// Where it lives.
    fn backend(&self) -> &Backend<Self::State>;
}

/// The Python methods of a durable part (`$cls: Stored`), written once.
macro_rules! durable_methods {
    ($cls:ty) => {
        #[pyo3::pymethods]
        impl $cls {
            /// Whether this is kept in a store (`open`).
            #[getter]
            fn durable(&self) -> bool {
                $crate::store::Stored::backend(self).store().is_some()
            }

            /// The directory of the store, or None in memory.
            #[getter]
            fn data_dir(&self) -> Option<String> {
                $crate::store::Stored::backend(self)
                    .store()
                    .map(|s| s.path().to_string_lossy().into_owned())
            }

            /// What opening the store found: `created`, `replayed` (records), `last_seq`,
            /// `torn_tail` (and `torn_reason`), and how many things it holds; None in memory.
            #[getter]
            fn recovery<'py>(
                &self,
                py: Python<'py>,
            ) -> PyResult<Option<Bound<'py, pyo3::types::PyDict>>> {
                $crate::store::Stored::backend(self)
                    .store()
                    .map(|s| s.recovery().to_dict(py))
                    .transpose()
            }

            /// The last journal record written (0 in memory): an answer given now depends on it.
            #[getter]
            fn journal_seq(&self, py: Python<'_>) -> PyResult<u64> {
                let b = $crate::store::Stored::backend(self);
                match b.store() {
                    None => Ok(0),
                    Some(_) => b.with(py, |s| leasehold::journal::Journaled::journal_seq(s)),
                }
            }

            /// The last journal record known durable (0 in memory).
            #[getter]
            fn durable_seq(&self) -> u64 {
                $crate::store::Stored::backend(self).store().map_or(0, |s| s.durable_seq())
            }

            /// How many group commits (one write and one sync each) were made.
            #[getter]
            fn commits(&self) -> u64 {
                $crate::store::Stored::backend(self).store().map_or(0, |s| s.commits())
            }

            /// Blocks, with the GIL released, until journal record `seq` is durable (syncing it
            /// and everything before it if no other thread is). Raises `StoreError` if the store
            /// could not write: nothing after the last durable record is ever acknowledged then
            /// (open the store again, in a new process, to go on).
            fn wait_durable(&self, py: Python<'_>, seq: &Bound<'_, PyAny>) -> PyResult<()> {
                let seq = $crate::convert::u64_arg(seq, "seq")?;
                match $crate::store::Stored::backend(self).store() {
                    None => Ok(()),
                    Some(s) => s.wait(py, seq),
                }
            }

            /// Makes everything journaled so far durable (GIL released); returns the last
            /// durable record (0 in memory).
            fn commit(&self, py: Python<'_>) -> PyResult<u64> {
                match $crate::store::Stored::backend(self).store() {
                    None => Ok(0),
                    Some(s) => s.commit(py),
                }
            }
        }
    };
}
pub(crate) use durable_methods;
