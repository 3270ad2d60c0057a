//! A landlord in the embedded store: the landlord's part of `crate::store` (which is generic
//! over any journaled state machine). The JavaScript side (`store.js`, the hosts, and
//! `LandlordDriver.open`) carries out the file operations and releases replies once durable.

use leasehold::Landlord as CoreLandlord;
use wasm_bindgen::prelude::*;

use super::{config_in, Landlord, Resource};
use crate::convert::*;
use crate::store::{self, commit_out, files_in, store_config_in, OpenedJs};

#[wasm_bindgen]
impl Landlord {
    /// Opens a landlord's store from the files of its directory (`[[name, bytes], ...]`):
    /// builds the landlord from the snapshot (or afresh from `options`, for a new store),
    /// replays the log (a torn tail is dropped; damage is a `DecodeError`), and resumes it at
    /// `now` (time spent down does not count). Returns `{landlord, ops, recovery}`: carry out
    /// `ops` (tidying up, or the first snapshot of a new store) before anything else.
    #[wasm_bindgen(js_name = __openStore, skip_typescript)]
    pub fn open_store(
        files: JsValue,
        options: JsValue,
        config: JsValue,
        now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let (ll_config, spec, seed_given) = config_in(&options)?;
        let store_config = store_config_in(&config)?;
        let now = now_in(&now)?;
        let files = files_in(&files)?;
        let id = ll_config.id;
        let policy = js(spec.build())?;
        let opened =
            store::open(store_config, &files, now, seed_given, |snapshot| match snapshot {
                Some(bytes) => CoreLandlord::<Resource>::from_snapshot_bytes(bytes, policy),
                None => {
                    let mut ll = CoreLandlord::new(ll_config, policy);
                    ll.enable_journal();
                    Ok(ll)
                }
            });
        drop(files);
        let OpenedJs { state, durability, ops, recovery } = js(opened)?;
        if state.id() != id {
            return Err(range_error(format!(
                "the store holds landlord {}, not landlord {id}",
                state.id()
            )));
        }
        let landlord = Landlord::wrap_with(state, spec, Some(durability));
        let o = obj();
        set(&o, &"landlord".into(), &landlord.into());
        set(&o, &"ops".into(), &ops);
        set(&o, &"recovery".into(), &recovery);
        Ok(o.into())
    }

    /// Whether this landlord is kept in a store (opened with `LandlordDriver.open`).
    #[wasm_bindgen(getter)]
    pub fn durable(&self) -> bool {
        self.durable
    }

    /// Sequence number of the last journal record written (0 for a landlord without a
    /// journal). A reply handed out now depends on every record up to it.
    #[wasm_bindgen(getter, js_name = journalSeq)]
    pub fn journal_seq(&self) -> Result<f64, JsValue> {
        self.read(|s| s.inner.journal_seq() as f64)
    }

    /// The records written since the last commit, as file operations, and the record durable
    /// once they are carried out: `{ops, durable}` (a compaction is included when due).
    #[wasm_bindgen(js_name = __commit, skip_typescript)]
    pub fn commit(&self) -> Result<JsValue, JsValue> {
        let (ops, durable) = {
            let mut st = self.st()?;
            let st = &mut *st;
            let d = st.durability.as_mut().ok_or_else(not_durable)?;
            d.commit(&mut st.inner)
        };
        Ok(commit_out(ops, durable))
    }

    /// Like `__commit`, then a new snapshot whatever the log's size.
    #[wasm_bindgen(js_name = __compact, skip_typescript)]
    pub fn compact(&self) -> Result<JsValue, JsValue> {
        let (ops, durable) = {
            let mut st = self.st()?;
            let st = &mut *st;
            let d = st.durability.as_mut().ok_or_else(not_durable)?;
            d.compact(&mut st.inner)
        };
        Ok(commit_out(ops, durable))
    }

    /// `{logBytes, snapshotBytes, committed}` of the landlord's store.
    #[wasm_bindgen(js_name = __storeStats, skip_typescript)]
    pub fn store_stats(&self) -> Result<JsValue, JsValue> {
        let st = self.state.try_borrow().map_err(|_| busy_error("Landlord"))?;
        Ok(st.durability.as_ref().ok_or_else(not_durable)?.stats())
    }
}

fn not_durable() -> JsValue {
    type_error("this landlord is not kept in a store (open one with LandlordDriver.open)")
}
