//! The embedded file store for JavaScript hosts, generic over any [`Journaled`] state machine.
//!
//! Every decision (file names, frames, checksums, when to sync, rotate and compact, what a torn
//! tail is and what damage is) is the core's [`leasehold::store::Store`]; this module only
//! converts: a directory's files from JavaScript into the core, [`FileOp`]s out to JavaScript
//! (where a host carries them out with `node:fs`, IndexedDB, ...), and the core's
//! [`leasehold::journal::Gate`] that holds replies until their records are durable.
//!
//! A journaled type exposes itself with one small file (see `landlord_store.rs`): an
//! `__openStore` that calls [`open`] with its own `build`, and `__commit`/`__compact` that call
//! [`Durability::commit`]/[`Durability::compact`] on its state.

use js_sys::{Array, Uint8Array};
use leasehold::journal::{Gate, Journaled, Recovered};
use leasehold::store::{FileOp, Opened, Store, StoreConfig, SNAPSHOT_FILE};
use leasehold::LeaseError;
use wasm_bindgen::prelude::*;

use crate::convert::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_STORE: &'static str = r#"
/**
 * One file operation of the embedded store, for a host to carry out in order (each completely)
 * before the commit that asked for it counts as durable. File names are inside the store.
 * - append: add `bytes` to the end of `file` (creating it);
 * - sync: flush `file` to stable storage (fdatasync; also the directory if `file` is new);
 * - replace: atomically replace `file` with `bytes` (write `file.tmp`, sync it, rename, sync the directory);
 * - truncate: cut `file` to `len` bytes, then sync it;
 * - remove: delete `file` (missing is fine), then sync the directory.
 */
export type FileOp =
  | { op: "append"; file: string; bytes: Uint8Array }
  | { op: "sync"; file: string }
  | { op: "replace"; file: string; bytes: Uint8Array }
  | { op: "truncate"; file: string; len: number }
  | { op: "remove"; file: string };
/** How a store rotates and compacts (bytes; defaults 64 MiB and 4 MiB). */
export interface StoreConfig { segmentBytes?: number; minCompactBytes?: number; }
/** What opening a store found. */
export interface Recovery {
  /** The directory held no store: a new one was written. */
  created: boolean;
  /** Journal records applied on top of the snapshot. */
  replayed: number;
  /** Why a torn tail was cut (a write cut short by a crash), if one was. */
  torn?: string;
  /** Sequence number of the last record now in the state. */
  journalSeq: number;
}
"#;

/// Every file of a store's directory, from JavaScript: an array of `[name, Uint8Array]` (or
/// `{name, bytes}`) pairs.
pub fn files_in(files: &JsValue) -> Result<Vec<(String, Vec<u8>)>, JsValue> {
    let items = array_items(files, "store files")?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
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

/// The JavaScript form of file operations (see the `FileOp` type).
pub fn ops_out(ops: Vec<FileOp>) -> Array {
    let out = Array::new_with_length(ops.len() as u32);
    for (i, op) in ops.into_iter().enumerate() {
        let o = obj();
        let s = |k: &str, v: &JsValue| set(&o, &k.into(), v);
        match op {
            FileOp::Append { file, bytes } => {
                s("op", &"append".into());
                s("file", &file.into());
                s("bytes", &Uint8Array::from(&bytes[..]).into());
            }
            FileOp::Sync { file } => {
                s("op", &"sync".into());
                s("file", &file.into());
            }
            FileOp::Replace { file, bytes } => {
                s("op", &"replace".into());
                s("file", &file.into());
                s("bytes", &Uint8Array::from(&bytes[..]).into());
            }
            FileOp::Truncate { file, len } => {
                s("op", &"truncate".into());
                s("file", &file.into());
                s("len", &(len as f64).into());
            }
            FileOp::Remove { file } => {
                s("op", &"remove".into());
                s("file", &file.into());
            }
        }
        out.set(i as u32, o.into());
    }
    out
}

/// Store settings from JavaScript: `{segmentBytes?, minCompactBytes?}`.
pub fn store_config_in(v: &JsValue) -> Result<StoreConfig, JsValue> {
    let mut c = StoreConfig::default();
    if v.is_undefined() || v.is_null() {
        return Ok(c);
    }
    for (key, field) in
        [("segmentBytes", &mut c.segment_bytes), ("minCompactBytes", &mut c.min_compact_bytes)]
    {
        let x = get(v, key)?;
        if !x.is_undefined() {
            *field = count_in(&x, key)? as u64;
        }
    }
    if c.segment_bytes == 0 {
        return Err(range_error("segmentBytes must be at least 1"));
    }
    Ok(c)
}

/// Whether the files hold log segments but no snapshot: the snapshot carries the secret that
/// the log's cookies come from, so the state can be rebuilt only from the very same
/// configuration (the host checks that it was given, e.g. an explicit seed).
fn snapshot_missing(files: &[(String, Vec<u8>)]) -> bool {
    !files.iter().any(|(n, _)| n == SNAPSHOT_FILE)
        && files.iter().any(|(n, _)| n.starts_with("log-") && n.ends_with(".lhj"))
}

/// A journaled state machine's store: the core's bookkeeping of its directory.
#[derive(Debug)]
pub struct Durability {
    store: Store,
}

/// What [`open`] gives: the state, its store, and the JavaScript parts of the answer.
pub struct OpenedJs<S> {
    /// The state machine, with every durable record replayed, resumed at the host's `now`.
    pub state: S,
    /// Its store.
    pub durability: Durability,
    /// The file operations that tidy the directory up (carry them out before the first commit).
    pub ops: Array,
    /// `{created, replayed, torn?, journalSeq}`.
    pub recovery: JsValue,
}

/// Opens a store from its directory's files and resumes the state at `now` (time spent down
/// does not count; see [`Store::open`]). Log segments without their snapshot are refused unless
/// `seed_given`: the snapshot holds the cookie secret the log's cookies come from.
pub fn open<S: Journaled>(
    config: StoreConfig,
    files: &[(String, Vec<u8>)],
    now: leasehold::Millis,
    seed_given: bool,
    build: impl FnOnce(Option<&[u8]>) -> leasehold::Result<S>,
) -> Result<OpenedJs<S>, LeaseError> {
    if snapshot_missing(files) && !seed_given {
        return Err(LeaseError::Decode(
            "the store's snapshot is missing but log segments remain: the snapshot holds the \
             cookie secret, so the log cannot be replayed without it (restore the snapshot from \
             a backup, or give the original seed)"
                .into(),
        ));
    }
    let Opened { state, store, ops, recovered, created } =
        Store::open(config, files, Some(now), build)?;
    let recovery = recovery_out(&recovered, created);
    Ok(OpenedJs { state, durability: Durability { store }, ops: ops_out(ops), recovery })
}

fn recovery_out(r: &Recovered, created: bool) -> JsValue {
    let o = obj();
    set(&o, &"created".into(), &created.into());
    set(&o, &"replayed".into(), &(r.replayed as f64).into());
    if let Some((_, _, why)) = &r.torn {
        set(&o, &"torn".into(), &why.as_str().into());
    }
    set(&o, &"journalSeq".into(), &(r.last_seq as f64).into());
    o.into()
}

impl Durability {
    /// Everything written since the last commit as one append and one sync, then a compaction
    /// if the log has outgrown the snapshot; and the last record durable once the operations
    /// are carried out. (Conversion to JavaScript is left to the caller, after it has let go of
    /// its state.)
    pub fn commit<S: Journaled>(&mut self, state: &mut S) -> (Vec<FileOp>, u64) {
        let mut ops = Vec::new();
        if let Some(c) = self.store.commit(state) {
            ops = c.ops;
        }
        if self.store.wants_compaction() {
            ops.extend(self.store.compact(state));
        }
        (ops, self.store.committed())
    }

    /// A commit, then a new snapshot whether or not the log has outgrown the old one.
    pub fn compact<S: Journaled>(&mut self, state: &mut S) -> (Vec<FileOp>, u64) {
        let mut ops = Vec::new();
        if let Some(c) = self.store.commit(state) {
            ops = c.ops;
        }
        ops.extend(self.store.compact(state));
        (ops, self.store.committed())
    }

    /// `{logBytes, snapshotBytes, committed}` of the store.
    pub fn stats(&self) -> JsValue {
        let o = obj();
        set(&o, &"logBytes".into(), &(self.store.log_bytes() as f64).into());
        set(&o, &"snapshotBytes".into(), &(self.store.snapshot_bytes() as f64).into());
        set(&o, &"committed".into(), &(self.store.committed() as f64).into());
        o.into()
    }
}

/// The `{ops, durable}` answer of a commit.
pub fn commit_out(ops: Vec<FileOp>, durable: u64) -> JsValue {
    let o = obj();
    set(&o, &"ops".into(), &ops_out(ops));
    set(&o, &"durable".into(), &(durable as f64).into());
    o.into()
}

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
