//! The lease renewal service (Jini `LeaseRenewalService`): its class on the generic layer
//! (`machine_class!`: every call as data, timer, renewals out, set events out, snapshot), and
//! the `GapTracker` of event receivers. Every rule is the core's `leasehold::service`;
//! `js/service.js` names the calls.

use std::cell::{RefCell, RefMut};

use leasehold::service::RenewalService as CoreService;
use wasm_bindgen::prelude::*;

use crate::convert::*;
use crate::machine::machine_class;
use crate::wire::{error_reply, id_in, id_out};

machine_class!(RenewalService, CoreService, "RenewalService", plain);

#[wasm_bindgen]
impl RenewalService {
    /// Decodes, answers and encodes a request about set leases. A message over
    /// `limits.maxMessageBytes` is refused before it is copied into WebAssembly memory.
    #[wasm_bindgen(js_name = handleBytes)]
    pub fn handle_bytes(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] bytes: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Encoding | undefined")] encoding: JsValue,
    ) -> Result<Vec<u8>, JsValue> {
        let enc = encoding_in(&encoding)?;
        let now = now_in(&now)?;
        let (id, max) = {
            let s = self.b()?;
            (s.id(), s.config().landlord.limits.max_message_bytes)
        };
        Ok(match wire_in(&bytes, max, "request")? {
            Ok(b) => self.b()?.handle_bytes(&b, enc, now),
            Err(e) => error_reply(id, &e, enc),
        })
    }
}

/// The receiving side of events: the last sequence number seen per event id, and gap detection.
/// `observe` answers `{kind: "first" | "inOrder" | "stale"}` or `{kind: "gap", missed}` (up to
/// `missed` events may have been lost: resynchronise with the sender).
#[wasm_bindgen]
pub struct GapTracker {
    inner: RefCell<leasehold::GapTracker>,
}

impl GapTracker {
    fn b(&self) -> Result<RefMut<'_, leasehold::GapTracker>, JsValue> {
        self.inner.try_borrow_mut().map_err(|_| busy_error("GapTracker"))
    }
}

#[wasm_bindgen]
impl GapTracker {
    /// An empty tracker.
    #[wasm_bindgen(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> GapTracker {
        GapTracker { inner: RefCell::new(leasehold::GapTracker::new()) }
    }

    /// Expects the events of `eventId` after `sequence` (from its EventRegistration).
    pub fn expect(
        &self,
        #[wasm_bindgen(js_name = eventId, unchecked_param_type = "number")] event_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] sequence: JsValue,
    ) -> Result<(), JsValue> {
        self.b()?.expect(id_in(&event_id)?, id_in(&sequence)?);
        Ok(())
    }

    /// Classifies an event of `eventId` with `sequence` (and remembers it unless stale).
    #[wasm_bindgen(
        unchecked_return_type = "{kind: \"first\" | \"inOrder\" | \"stale\"} | {kind: \"gap\", missed: number}"
    )]
    pub fn observe(
        &self,
        #[wasm_bindgen(js_name = eventId, unchecked_param_type = "number")] event_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] sequence: JsValue,
    ) -> Result<JsValue, JsValue> {
        let d = self.b()?.observe(id_in(&event_id)?, id_in(&sequence)?);
        let o = obj();
        let kind = match d {
            leasehold::Delivery::First => "first",
            leasehold::Delivery::InOrder => "inOrder",
            leasehold::Delivery::Stale => "stale",
            leasehold::Delivery::Gap { missed } => {
                set(&o, &"missed".into(), &id_out(missed));
                "gap"
            }
        };
        set(&o, &"kind".into(), &kind.into());
        Ok(o.into())
    }

    /// The last sequence number seen for `eventId`, or undefined.
    #[wasm_bindgen(unchecked_return_type = "number | undefined")]
    pub fn last(
        &self,
        #[wasm_bindgen(js_name = eventId, unchecked_param_type = "number")] event_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        Ok(self.b()?.last(id_in(&event_id)?).map(id_out).unwrap_or(JsValue::UNDEFINED))
    }

    /// Forgets `eventId`.
    pub fn forget(
        &self,
        #[wasm_bindgen(js_name = eventId, unchecked_param_type = "number")] event_id: JsValue,
    ) -> Result<(), JsValue> {
        self.b()?.forget(id_in(&event_id)?);
        Ok(())
    }
}
