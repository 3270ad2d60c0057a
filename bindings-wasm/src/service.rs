//! The lease renewal service (Jini `LeaseRenewalService`): its class on the generic layer
//! (`machine_class!`: every call as data, timer, renewals out, set events out, snapshot), and
//! the `GapTracker` of event receivers. Every rule is the core's `leasehold::service`;
//! `js/service.js` names the calls.

use std::cell::{RefCell, RefMut};

use leasehold::machine::Machine;
use leasehold::service::machine::{ServiceInput, ServiceOutput};
use leasehold::service::{RenewalService as CoreService, SetId};
use wasm_bindgen::prelude::*;

use crate::convert::*;
use crate::lease::Lease;
use crate::machine::{machine_class, now_or_none};
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

/// A whole JavaScript number (checked in `js/service.js`: a safe integer, or `Infinity` for
/// FOREVER) as the core's integer.
fn whole(x: f64) -> i64 {
    if x == f64::INFINITY {
        i64::MAX
    } else {
        x as i64
    }
}

/// A `Lease` object as the core reads its data form (which carries no serial format).
fn lease_data(l: &Lease) -> leasehold::Lease {
    leasehold::Lease::new(l.inner.landlord(), l.inner.cookie(), l.inner.expiration())
}

/// The typed doors of the hot calls: `add` and `remove` with a `Lease` object and whole numbers
/// build the same `ServiceInput` the data form reads and go through the same
/// `Machine::handle`, without writing and reading the input as data (`js/service.js` takes
/// them only for such arguments; anything else goes through `handle` and its checks).
#[wasm_bindgen]
impl RenewalService {
    #[wasm_bindgen(js_name = __add, skip_typescript)]
    pub fn add_typed(
        &self,
        set: f64,
        lease: &Lease,
        membership: f64,
        renew: f64,
        now: JsValue,
    ) -> Result<(), JsValue> {
        let input = ServiceInput::Add {
            set: SetId(whole(set) as u64),
            lease: lease_data(lease),
            membership_duration: whole(membership),
            renew_duration: whole(renew),
        };
        let now = now_or_none(&now)?;
        js(self.b()?.handle(input, now)).map(|_| ())
    }

    #[wasm_bindgen(js_name = __remove, skip_typescript)]
    pub fn remove_typed(&self, set: f64, lease: &Lease, now: JsValue) -> Result<JsValue, JsValue> {
        let input =
            ServiceInput::Remove { set: SetId(whole(set) as u64), lease: lease_data(lease) };
        let now = now_or_none(&now)?;
        let out = js(self.b()?.handle(input, now))?;
        Ok(match out {
            ServiceOutput::Lease(Some(l)) => Lease::wrap(l).into(),
            ServiceOutput::Lease(None) => JsValue::UNDEFINED,
            other => crate::data::to_js(&other)?,
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
