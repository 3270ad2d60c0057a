//! The embedded file store for JavaScript hosts, generic over any [`Journaled`] state machine.
//!
//! Every decision (file names, frames, checksums, when to sync, rotate and compact, what a torn
//! tail is and what damage is) is the core's [`leasehold::store::Store`]; this module only
//! converts: a directory's files from JavaScript into the core, [`FileOp`]s out to JavaScript
//! (where a host carries them out with `node:fs`, IndexedDB, ...), and the core's
//! [`leasehold::journal::Gate`] that holds replies until their records are durable.
//!
//! A journaled class exposes itself with an `__openStore` that calls [`open`] with its own
//! `build`, an `impl` [`Kept`], and [`store_hooks!`] (`landlord/store.rs`, `machine.rs`).

use js_sys::Array;
use leasehold::journal::{Gate, Journaled};
use leasehold::store::{FileOp, Opened, Store, StoreConfig, SNAPSHOT_FILE};
use leasehold::LeaseError;
use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::convert::*;
use crate::data::{from_js, to_js};

/// Every file of a store's directory, from JavaScript: an array of `[name, Uint8Array]` (or
/// `{name, bytes}`) pairs.
fn files_in(files: &JsValue) -> Result<Vec<(String, Vec<u8>)>, JsValue> {
    let mut out = Vec::new();
    for (i, item) in array_items(files, "store files")?.iter().enumerate() {
        let (name, bytes) = if is_array(item) {
            let a: &Array = item.unchecked_ref();
            (a.get(0), a.get(1))
        } else if item.is_object() {
            (get(item, "name")?, get(item, "bytes")?)
        } else {
            return Err(type_error(format!("store file {i} must be [name, Uint8Array]")));
        };
        let name = name
            .as_string()
            .ok_or_else(|| type_error(format!("store file {i}: the name must be a string")))?;
        out.push((name, bytes_in(&bytes, "a store file's bytes")?));
    }
    Ok(out)
}

/// The data forms handed to the package's JavaScript (`store.js`): the answer of an opening
/// (typed as `Recovery` in `js/api.d.ts`), of a commit, and the store's counters.
#[derive(Serialize)]
struct Recovery<'a> {
    created: bool,
    replayed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    torn: Option<&'a str>,
    journal_seq: u64,
}
#[derive(Serialize)]
struct Commit {
    ops: Vec<FileOp>,
    durable: u64,
}
#[derive(Serialize)]
struct Stats {
    log_bytes: u64,
    snapshot_bytes: u64,
    committed: u64,
}

/// A journaled state machine's store: the core's bookkeeping of its directory.
pub use leasehold::store::Store as Durability;

/// Opens a store from its directory's files (`[[name, bytes], ...]`, settings `{segmentBytes?,
/// minCompactBytes?}`) and resumes the state at `now` (time spent down does not count; see
/// [`Store::open`]). Log segments without their snapshot are refused unless `seed_given`: the
/// snapshot holds the cookie secret the log's cookies come from. Gives the state, its store, and
/// `{ops, recovery}`'s two values (carry out `ops` before the first commit).
pub fn open<S: Journaled>(
    files: &JsValue,
    config: &JsValue,
    now: &JsValue,
    seed_given: bool,
    build: impl FnOnce(Option<&[u8]>) -> leasehold::Result<S>,
) -> Result<(S, Durability, JsValue, JsValue), JsValue> {
    let config: StoreConfig =
        if config.is_undefined() { StoreConfig::default() } else { from_js(config)? };
    if config.segment_bytes == 0 {
        return Err(range_error("segmentBytes must be at least 1"));
    }
    let now = now_in(now)?;
    let files = files_in(files)?;
    let has = |f: &dyn Fn(&str) -> bool| files.iter().any(|(n, _)| f(n));
    if !seed_given
        && !has(&|n| n == SNAPSHOT_FILE)
        && has(&|n| n.starts_with("log-") && n.ends_with(".lhj"))
    {
        return Err(lease_error(&LeaseError::Decode(
            "the store's snapshot is missing but log segments remain: the snapshot holds the \
             cookie secret, so the log cannot be replayed without it (restore the snapshot from \
             a backup, or give the original seed)"
                .into(),
        )));
    }
    let Opened { state, store, ops, recovered: r, created } =
        js(Store::open(config, &files, Some(now), build))?;
    let torn = r.torn.as_ref().map(|t| t.2.as_str());
    let recovery =
        to_js(&Recovery { created, replayed: r.replayed, torn, journal_seq: r.last_seq })?;
    Ok((state, store, to_js(&ops)?, recovery))
}

/// `{value, ops, recovery}`: what a class's `__openStore` gives (`store.js`'s `openKept`).
pub fn opened(value: JsValue, ops: JsValue, recovery: JsValue) -> JsValue {
    let o = obj();
    set(&o, &"value".into(), &value);
    set(&o, &"ops".into(), &ops);
    set(&o, &"recovery".into(), &recovery);
    o.into()
}

/// A class that may be kept in a store: how [`store_hooks!`] reaches its state and its store.
pub trait Kept {
    /// The journaled state.
    type State: Journaled;
    /// Calls `f` with the state and its store (None: not kept in one); `BusyError` if borrowed.
    fn kept<T>(
        &self,
        f: impl FnOnce(&mut Self::State, Option<&mut Durability>) -> T,
    ) -> Result<T, JsValue>;
}

fn not_durable() -> JsValue {
    type_error("not kept in a store (open it from one: LandlordDriver.open, DiscoveryDriver.open)")
}

/// Everything written since the last commit as one append and one sync, then a compaction if
/// the log has outgrown the snapshot (`compact`: whatever its size): `{ops, durable}`, the file
/// operations and the last record durable once they are carried out.
pub fn commit<K: Kept>(k: &K, compact: bool) -> Result<JsValue, JsValue> {
    let commit = k.kept(|s, d| {
        let d = d.ok_or_else(not_durable)?;
        let mut ops = d.commit(s).map(|c| c.ops).unwrap_or_default();
        if compact || d.wants_compaction() {
            ops.extend(d.compact(s));
        }
        Ok::<_, JsValue>(Commit { ops, durable: d.committed() })
    })??;
    to_js(&commit)
}

/// `{logBytes, snapshotBytes, committed}` of the store.
pub fn stats<K: Kept>(k: &K) -> Result<JsValue, JsValue> {
    let stats = k.kept(|_, d| {
        d.map(|d| Stats {
            log_bytes: d.log_bytes(),
            snapshot_bytes: d.snapshot_bytes(),
            committed: d.committed(),
        })
    })?;
    to_js(&stats.ok_or_else(not_durable)?)
}

/// The store hooks of a class (`impl Kept`) that the package's `StoreWriter` calls: `durable`,
/// `journalSeq`, `__commit`, `__compact`, `__storeStats`.
macro_rules! store_hooks {
    ($js:ident) => {
        #[wasm_bindgen::prelude::wasm_bindgen]
        impl $js {
            /// Whether it is kept in a store.
            #[wasm_bindgen(getter)]
            pub fn durable(&self) -> Result<bool, wasm_bindgen::JsValue> {
                $crate::store::Kept::kept(self, |_, d| d.is_some())
            }
            /// The last journal record written (what anything handed out now depends on; 0
            /// without a journal).
            #[wasm_bindgen(getter, js_name = journalSeq)]
            pub fn journal_seq(&self) -> Result<f64, wasm_bindgen::JsValue> {
                $crate::store::Kept::kept(self, |s, _| {
                    leasehold::journal::Journaled::journal_seq(s) as f64
                })
            }
            /// The records since the last commit as file operations: `{ops, durable}`.
            #[wasm_bindgen(js_name = __commit, skip_typescript)]
            pub fn commit(&self) -> Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue> {
                $crate::store::commit(self, false)
            }
            /// As `__commit`, then a new snapshot.
            #[wasm_bindgen(js_name = __compact, skip_typescript)]
            pub fn compact(&self) -> Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue> {
                $crate::store::commit(self, true)
            }
            /// `{logBytes, snapshotBytes, committed}` of its store.
            #[wasm_bindgen(js_name = __storeStats, skip_typescript)]
            pub fn store_stats(&self) -> Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue> {
                $crate::store::stats(self)
            }
        }
    };
}
pub(crate) use store_hooks;

/// Holds values (a reply's resolver, an expired lease) until the journal record each depends
/// on is durable: the core's `journal::Gate`. `push(seq, value)` with the journal's sequence
/// number read right after the call that made the value; `release(durable)` hands back, in
/// order, every value that may now leave.
#[wasm_bindgen]
pub struct JournalGate {
    gate: std::cell::RefCell<(Gate<JsValue>, u64)>,
}

impl Default for JournalGate {
    fn default() -> Self {
        JournalGate::new()
    }
}

#[wasm_bindgen]
impl JournalGate {
    /// An empty gate; nothing is durable yet.
    #[wasm_bindgen(constructor)]
    pub fn new() -> JournalGate {
        JournalGate { gate: std::cell::RefCell::new((Gate::new(), 0)) }
    }

    /// Holds `value` until record `seq` is durable. Values leave in the order they were
    /// pushed: one pushed with a lower `seq` than an earlier one waits for that one.
    pub fn push(&self, seq: f64, value: JsValue) -> Result<(), JsValue> {
        let seq = seq_in(seq)?;
        let mut g = self.gate.try_borrow_mut().map_err(|_| busy_error("JournalGate"))?;
        let (gate, last) = &mut *g;
        *last = (*last).max(seq);
        gate.push(*last, value);
        Ok(())
    }

    /// Records are durable up to `durable`: the values that may leave now, in order.
    pub fn release(&self, durable: f64) -> Result<Array, JsValue> {
        let durable = seq_in(durable)?;
        let out: Vec<JsValue> = self
            .gate
            .try_borrow_mut()
            .map_err(|_| busy_error("JournalGate"))?
            .0
            .release(durable)
            .collect();
        Ok(out.into_iter().collect())
    }

    /// The highest record confirmed durable so far.
    #[wasm_bindgen(getter)]
    pub fn durable(&self) -> f64 {
        self.gate.try_borrow().map(|g| g.0.durable() as f64).unwrap_or(f64::NAN)
    }

    /// Values still waiting.
    #[wasm_bindgen(getter)]
    pub fn waiting(&self) -> usize {
        self.gate.try_borrow().map(|g| g.0.len()).unwrap_or(0)
    }
}

fn seq_in(x: f64) -> Result<u64, JsValue> {
    if x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x <= MAX_SAFE {
        Ok(x as u64)
    } else {
        Err(range_error(format!("a journal sequence number must be a safe integer >= 0, got {x}")))
    }
}
