//! A discovery service in the embedded store: its part of the generic `crate::store` (the
//! JavaScript side, `DiscoveryDriver.open`, carries out the file operations with the same
//! hosts and `StoreWriter` as a durable landlord).

use leasehold::discovery::DiscoveryService as CoreService;
use wasm_bindgen::prelude::*;

use super::{config_from, DiscoveryService};
use crate::convert::*;
use crate::store::{self, commit_out, files_in, store_config_in, OpenedJs};

#[wasm_bindgen]
impl DiscoveryService {
    /// Opens a discovery service's store from the files of its directory: builds it from the
    /// snapshot (or afresh from `options`), replays the log, resumes at `now`, and applies
    /// `options`' settings (policy, schedules; the id must be the store's). Returns
    /// `{service, ops, recovery}`: carry out `ops` first.
    #[wasm_bindgen(js_name = __openStore, skip_typescript)]
    pub fn open_store(
        files: JsValue,
        options: JsValue,
        config: JsValue,
        now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let (c, seed_given) = config_from(&options)?;
        let store_config = store_config_in(&config)?;
        let now = now_in(&now)?;
        let files = files_in(&files)?;
        let fresh = c.clone();
        let opened =
            store::open(store_config, &files, now, seed_given, |snapshot| match snapshot {
                Some(bytes) => CoreService::from_snapshot_bytes(bytes),
                None => {
                    let mut s = CoreService::new(fresh)?;
                    s.enable_journal();
                    Ok(s)
                }
            });
        drop(files);
        let OpenedJs { mut state, durability, ops, recovery } = js(opened)?;
        js(state.reconfigure(c))?;
        let service = DiscoveryService::wrap(state, Some(durability));
        let o = obj();
        set(&o, &"service".into(), &service.into());
        set(&o, &"ops".into(), &ops);
        set(&o, &"recovery".into(), &recovery);
        Ok(o.into())
    }

    /// Whether the service is kept in a store (opened with `DiscoveryDriver.open`).
    #[wasm_bindgen(getter)]
    pub fn durable(&self) -> bool {
        self.durability.try_borrow().map(|d| d.is_some()).unwrap_or(true)
    }

    /// Sequence number of the last journal record written (0 without a journal). Anything
    /// handed out now (a reply, an event, a probe) depends on every record up to it.
    #[wasm_bindgen(getter, js_name = journalSeq)]
    pub fn journal_seq(&self) -> Result<f64, JsValue> {
        Ok(self.b()?.journal_seq() as f64)
    }

    /// The records written since the last commit as file operations, and the record durable
    /// once they are carried out: `{ops, durable}`.
    #[wasm_bindgen(js_name = __commit, skip_typescript)]
    pub fn commit(&self) -> Result<JsValue, JsValue> {
        self.commit_with(false)
    }

    /// Like `__commit`, then a new snapshot.
    #[wasm_bindgen(js_name = __compact, skip_typescript)]
    pub fn compact(&self) -> Result<JsValue, JsValue> {
        self.commit_with(true)
    }

    /// `{logBytes, snapshotBytes, committed}` of the service's store.
    #[wasm_bindgen(js_name = __storeStats, skip_typescript)]
    pub fn store_stats(&self) -> Result<JsValue, JsValue> {
        let d = self.durability.try_borrow().map_err(|_| busy_error("DiscoveryService"))?;
        Ok(d.as_ref().ok_or_else(not_durable)?.stats())
    }
}

impl DiscoveryService {
    fn commit_with(&self, compact: bool) -> Result<JsValue, JsValue> {
        let (ops, durable) = {
            let mut d =
                self.durability.try_borrow_mut().map_err(|_| busy_error("DiscoveryService"))?;
            let d = d.as_mut().ok_or_else(not_durable)?;
            let mut s = self.b()?;
            if compact {
                d.compact(&mut *s)
            } else {
                d.commit(&mut *s)
            }
        };
        Ok(commit_out(ops, durable))
    }
}

fn not_durable() -> JsValue {
    type_error("this discovery service is not kept in a store (open one with DiscoveryDriver.open)")
}
