//! Coordination in JavaScript: the `FenceMachine` class (the core's `Fence` driven as data over
//! the `Machine` trait: `handle({op, ...})`) and, in `data.rs`'s dispatcher, the coordination
//! messages. `js/coord.js` names the calls (`Fence`) and carries the recipes over
//! `fetchTransport`; nothing here decides anything.

use std::cell::RefCell;

use leasehold::coord::Fence;
use leasehold::machine::Machine;
use wasm_bindgen::prelude::*;

use crate::convert::{busy_error, js};
use crate::data::{from_js, to_js};

/// The native fence (see `Fence` in `js/coord.js` for the class users call).
#[wasm_bindgen(skip_typescript)]
pub struct FenceMachine {
    inner: RefCell<Fence>,
}

#[wasm_bindgen]
impl FenceMachine {
    /// A fence with its settings (`{highest}`, data).
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<FenceMachine, JsValue> {
        let options = if options.is_undefined() || options.is_null() {
            Default::default()
        } else {
            from_js(&options)?
        };
        let f = js(<Fence as Machine>::create(options, [0; 32]))?;
        Ok(FenceMachine { inner: RefCell::new(f) })
    }

    /// A fence from `snapshot()` text.
    pub fn restore(snapshot: &str) -> Result<FenceMachine, JsValue> {
        let f = js(<Fence as Machine>::restore(Default::default(), snapshot, 0))?;
        Ok(FenceMachine { inner: RefCell::new(f) })
    }

    /// The fence as JSON text.
    pub fn snapshot(&self) -> Result<String, JsValue> {
        let mut f = self.inner.try_borrow_mut().map_err(|_| busy_error("Fence"))?;
        Ok(Machine::snapshot(&mut *f, 0))
    }

    /// Carries out one call (`{op: "check", token}`, `{op: "admits", token}`,
    /// `{op: "highest"}`) and returns its answer (data).
    pub fn handle(&self, input: JsValue) -> Result<JsValue, JsValue> {
        let input = from_js(&input)?;
        let out = {
            let mut f = self.inner.try_borrow_mut().map_err(|_| busy_error("Fence"))?;
            js(f.handle(input, 0))?
        };
        to_js(&out)
    }
}

/// The holder's lease of an `acquired` reply (its JSON object form): counted from `sent_at` (the
/// driver's clock when the request left) plus the time it waited, less the drift allowed
/// (the core's `Acquired::lease`). Throws the reply's error if it is one.
#[wasm_bindgen(js_name = __acquiredLease, skip_typescript)]
pub fn acquired_lease(
    reply: JsValue,
    sent_at: JsValue,
    max_drift_ppm: u32,
) -> Result<crate::lease::Lease, JsValue> {
    let text = js_sys::JSON::stringify(&reply)
        .map_err(|_| crate::convert::type_error("a CoordReply must be its JSON object form"))?;
    let limits = leasehold::Limits::default();
    let r = js(leasehold::coord::CoordReply::decode(
        String::from(text).as_bytes(),
        leasehold::Encoding::Json,
        &limits,
    ))?;
    let a = js(r.acquired())?;
    let sent = crate::convert::ms_in(&sent_at, "sentAt")?;
    Ok(crate::lease::Lease::wrap(a.lease(r.landlord, sent, max_drift_ppm)))
}
