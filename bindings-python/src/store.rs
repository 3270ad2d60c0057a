//! Durable landlords: a landlord kept in a directory (log segments and a snapshot), recovered
//! when opened, answering only once what it answers is durable.
//!
//! The format and every decision about it (frames, checksums, file names, rotation,
//! compaction, torn tail vs damage) are the core's; `leasehold-store` carries out its file
//! operations on `std::fs` and adds group commit for threads (`Shared`): each call changes the
//! landlord under a short lock, then waits until the record it depends on is durable; the first
//! waiter writes and syncs everything journaled so far, for every thread that arrived
//! meanwhile. All of it runs detached from the interpreter (no Python code runs, other Python
//! threads do), and a durable landlord holds only bytes, so nothing it drops can run user code.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use leasehold::journal::Durable as DurableResource;
use leasehold::store::StoreConfig;
use leasehold::{Landlord, LandlordConfig, LeaseError, PolicySpec};
use leasehold_store::{Durable, Shared};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::to_py;
use crate::landlord::Res;

type LL = Landlord<Res>;

impl DurableResource for Res {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Res::Bytes(b) => out.extend_from_slice(b),
            // Never reached: a durable landlord is only ever given bytes (`Landlord.open`
            // converts at the boundary, and refuses anything else), and a landlord in memory
            // has no journal, so it never encodes.
            Res::Obj(_) => {}
        }
    }
    fn decode(bytes: &[u8]) -> leasehold::Result<Self> {
        Ok(Res::Bytes(bytes.to_vec()))
    }
}

/// What opening a store found.
#[derive(Debug, Clone)]
pub struct Recovery {
    created: bool,
    replayed: u64,
    last_seq: u64,
    torn_tail: Option<String>,
    leases: usize,
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
        d.set_item("leases", self.leases)?;
        Ok(d)
    }
}

/// A landlord in a store, shared by threads.
pub struct Store {
    shared: Shared<LL>,
    path: PathBuf,
    recovery: Recovery,
    /// The highest record known durable.
    durable: AtomicU64,
}

/// How `Landlord.open` configures a new store.
pub struct OpenArgs {
    pub path: PathBuf,
    pub config: LandlordConfig,
    pub policy: PolicySpec,
    pub store: StoreConfig,
    pub now: i64,
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

impl Store {
    /// Opens (creating if needed) and recovers the store, detached from the interpreter.
    pub fn open(py: Python<'_>, args: OpenArgs) -> PyResult<Store> {
        let OpenArgs { path, config, policy, store, now } = args;
        let p = path.clone();
        // Time spent down does not count: the store resumes the landlord at `now`.
        let opened = py.detach(move || {
            Durable::open(&p, store, now, |snapshot| {
                let built = policy.build()?;
                match snapshot {
                    Some(bytes) => LL::from_snapshot_bytes(bytes, built),
                    None => {
                        let mut ll = Landlord::new(config, built);
                        ll.enable_journal();
                        Ok(ll)
                    }
                }
            })
        });
        let d = opened.map_err(|e| store_error(py, &path, &e))?;
        let r = d.recovered();
        let recovery = Recovery {
            created: d.created(),
            replayed: r.replayed,
            last_seq: r.last_seq.max(d.state().journal_seq()),
            torn_tail: r.torn.as_ref().map(|t| t.2.clone()),
            leases: d.state().len(),
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

    /// Runs `f` on the landlord (detached); returns its result and the record it depends on.
    pub fn with<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut LL) -> T + Send) -> (T, u64) {
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
    /// of every call that answers a holder.
    pub fn answer<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut LL) -> T + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let (t, seq) = self.shared.with(f);
            self.wait_detached(seq).map(|()| t)
        })
        .map_err(|e| store_error(py, &self.path, &e))
    }

    /// Makes everything journaled so far durable; returns the last durable record.
    pub fn commit(&self, py: Python<'_>) -> PyResult<u64> {
        self.answer(py, |l| l.journal_seq())
    }
}
