//! A landlord in the embedded store: the landlord's part of `crate::store` (which is generic
//! over any journaled state machine). The JavaScript side (`store.js`, the hosts, and
//! `LandlordDriver.open`) carries out the file operations and releases replies once durable.

use leasehold::Landlord as CoreLandlord;
use wasm_bindgen::prelude::*;

use super::{config_in, Landlord, Resource};
use crate::convert::*;
use crate::store::{self, Durability, Kept};

impl Kept for Landlord {
    type State = CoreLandlord<Resource>;
    fn kept<T>(
        &self,
        f: impl FnOnce(&mut Self::State, Option<&mut Durability>) -> T,
    ) -> Result<T, JsValue> {
        let mut st = self.st()?;
        let st = &mut *st;
        Ok(f(&mut st.inner, st.durability.as_mut()))
    }
}
store::store_hooks!(Landlord);

#[wasm_bindgen]
impl Landlord {
    /// Opens a landlord's store from the files of its directory (`[[name, bytes], ...]`):
    /// builds the landlord from the snapshot (or afresh from `options`, for a new store),
    /// replays the log (a torn tail is dropped; damage is a `DecodeError`), and resumes it at
    /// `now` (time spent down does not count). Returns `{value, ops, recovery}`: carry out
    /// `ops` (tidying up, or the first snapshot of a new store) before anything else.
    #[wasm_bindgen(js_name = __openStore, skip_typescript)]
    pub fn open_store(
        files: JsValue,
        options: JsValue,
        config: JsValue,
        now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let (ll_config, spec, seed_given) = config_in(&options)?;
        let (id, policy) = (ll_config.id, js(spec.build())?);
        let (state, durability, ops, recovery) =
            store::open(&files, &config, &now, seed_given, |snapshot| match snapshot {
                Some(bytes) => CoreLandlord::<Resource>::from_snapshot_bytes(bytes, policy),
                None => {
                    let mut ll = CoreLandlord::new(ll_config, policy);
                    ll.enable_journal();
                    Ok(ll)
                }
            })?;
        if state.id() != id {
            let why = format!("the store holds landlord {}, not landlord {id}", state.id());
            return Err(range_error(why));
        }
        let landlord = Landlord::wrap_with(state, spec, Some(durability)).into();
        Ok(store::opened(landlord, ops, recovery))
    }
}
