//! One JavaScript class per sans-I/O part, written once over the core's
//! [`leasehold::machine::Machine`]: `machine_class!(It, CoreType, "It")` makes the
//! `#[wasm_bindgen]` class with `constructor(options)`, `restore`, `snapshot`,
//! `handle(input, now)` (every call of the part, as data), the timer, `pollTransmit`,
//! `pollEvent`, and the store hooks the package's `StoreWriter` uses (`__openStore`, `durable`,
//! `journalSeq`, `__commit`, `__compact`, `__storeStats`). `js/machine.js`'s `defineCalls`
//! then names the calls on its prototype.
//!
//! No JavaScript runs while the state is borrowed: arguments are converted before the borrow,
//! answers after it; a call that finds it borrowed throws `BusyError`.

use leasehold::machine::{Machine, Stored};
use wasm_bindgen::prelude::*;

use crate::convert::now_in;
use crate::data::from_js;
use crate::landlord::random_seed;
use crate::store::{self, Durability};

/// `now` from JavaScript; `undefined` is "no new time" (the part's time stays where it was).
pub fn now_or_none(v: &JsValue) -> Result<i64, JsValue> {
    if v.is_undefined() {
        Ok(i64::MIN)
    } else {
        now_in(v)
    }
}

/// A new part from its options (data); the seed from `crypto.getRandomValues` unless given.
pub fn create<M: Machine>(options: &JsValue) -> Result<M, JsValue> {
    crate::convert::js(M::create(from_js(options)?, random_seed()?))
}

/// A part rebuilt from `snapshot()` text at `now`.
pub fn restore<M: Machine>(
    options: &JsValue,
    snapshot: &JsValue,
    now: &JsValue,
) -> Result<M, JsValue> {
    let text = snapshot
        .as_string()
        .ok_or_else(|| crate::convert::type_error("snapshot must be a string"))?;
    crate::convert::js(M::restore(from_js(options)?, &text, now_in(now)?))
}

/// Opens a part's store from its directory's files (see `crate::store::open`).
pub fn open<M: Stored>(
    files: &JsValue,
    options: &JsValue,
    config: &JsValue,
    now: &JsValue,
) -> Result<(M, Durability, JsValue, JsValue), JsValue> {
    let seed_given = js_sys::Reflect::has(options, &"seed".into()).unwrap_or(false);
    let (fresh, again) = (from_js::<M::Options>(options)?, from_js::<M::Options>(options)?);
    let seed = random_seed()?;
    let (mut state, durability, ops, recovery) =
        store::open(files, config, now, seed_given, |snapshot| {
            M::from_store(snapshot, fresh, seed)
        })?;
    crate::convert::js(state.reconfigure(again))?;
    Ok((state, durability, ops, recovery))
}

/// The class of a part: see the module docs.
macro_rules! machine_class {
    ($js:ident, $t:ty, $name:literal) => {
        $crate::machine::machine_class!($js, $t, $name, plain);

        impl $crate::store::Kept for $js {
            type State = $t;
            fn kept<T>(
                &self,
                f: impl FnOnce(&mut $t, Option<&mut $crate::store::Durability>) -> T,
            ) -> Result<T, wasm_bindgen::JsValue> {
                let busy = || $crate::convert::busy_error($name);
                let mut d = self.durability.try_borrow_mut().map_err(|_| busy())?;
                Ok(f(&mut *self.b()?, d.as_mut()))
            }
        }
        $crate::store::store_hooks!($js);

        #[wasm_bindgen::prelude::wasm_bindgen]
        impl $js {
            /// Opens the part's store from its files: `{value, ops, recovery}` (carry out `ops`).
            #[wasm_bindgen(js_name = __openStore, skip_typescript)]
            pub fn open_store(
                files: wasm_bindgen::JsValue,
                options: wasm_bindgen::JsValue,
                config: wasm_bindgen::JsValue,
                now: wasm_bindgen::JsValue,
            ) -> Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue> {
                let (state, d, ops, recovery) =
                    $crate::machine::open::<$t>(&files, &options, &config, &now)?;
                Ok($crate::store::opened($js::wrap(state, Some(d)).into(), ops, recovery))
            }
        }
    };
    ($js:ident, $t:ty, $name:literal, plain) => {
        #[doc = concat!("The `", $name, "` part (see `js/machine.js` for the calls it names).")]
        #[wasm_bindgen::prelude::wasm_bindgen]
        pub struct $js {
            inner: std::cell::RefCell<$t>,
            #[allow(dead_code)] // read only by the store methods, which a plain part has not
            durability: std::cell::RefCell<Option<$crate::store::Durability>>,
        }

        impl $js {
            fn b(&self) -> Result<std::cell::RefMut<'_, $t>, wasm_bindgen::JsValue> {
                self.inner.try_borrow_mut().map_err(|_| $crate::convert::busy_error($name))
            }
            fn wrap(inner: $t, durability: Option<$crate::store::Durability>) -> $js {
                $js { inner: inner.into(), durability: durability.into() }
            }
        }

        #[wasm_bindgen::prelude::wasm_bindgen]
        impl $js {
            /// A new part from its options (data, camelCase keys).
            #[wasm_bindgen(constructor)]
            pub fn new(options: wasm_bindgen::JsValue) -> Result<$js, wasm_bindgen::JsValue> {
                Ok($js::wrap($crate::machine::create(&options)?, None))
            }
            /// Rebuilds a part from `snapshot()` text at `now` with its options.
            pub fn restore(
                options: wasm_bindgen::JsValue,
                #[wasm_bindgen(unchecked_param_type = "string")] snapshot: wasm_bindgen::JsValue,
                #[wasm_bindgen(unchecked_param_type = "number")] now: wasm_bindgen::JsValue,
            ) -> Result<$js, wasm_bindgen::JsValue> {
                Ok($js::wrap($crate::machine::restore(&options, &snapshot, &now)?, None))
            }
            /// Everything it holds, as JSON text (holds secrets: keep it like a key).
            pub fn snapshot(
                &self,
                #[wasm_bindgen(unchecked_param_type = "number | undefined")]
                now: wasm_bindgen::JsValue,
            ) -> Result<String, wasm_bindgen::JsValue> {
                let now = $crate::machine::now_or_none(&now)?;
                Ok(leasehold::machine::Machine::snapshot(&mut *self.b()?, now))
            }
            /// Carries out one call (`{op, ...}`, data) and returns its answer (data).
            pub fn handle(
                &self,
                input: wasm_bindgen::JsValue,
                #[wasm_bindgen(unchecked_param_type = "number | undefined")]
                now: wasm_bindgen::JsValue,
            ) -> Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue> {
                let input = $crate::data::from_js(&input)?;
                let now = $crate::machine::now_or_none(&now)?;
                let out = $crate::convert::js(leasehold::machine::Machine::handle(
                    &mut *self.b()?,
                    input,
                    now,
                ))?;
                $crate::data::to_js(&out)
            }
            /// When to call `handleTimeout` next, or undefined.
            #[wasm_bindgen(js_name = pollTimeout, unchecked_return_type = "number | undefined")]
            pub fn poll_timeout(&self) -> Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue> {
                let t = leasehold::machine::Machine::poll_timeout(&*self.b()?);
                Ok(t.map($crate::convert::ms_out).unwrap_or(wasm_bindgen::JsValue::UNDEFINED))
            }
            /// Advances the part to `now`.
            #[wasm_bindgen(js_name = handleTimeout)]
            pub fn handle_timeout(
                &self,
                #[wasm_bindgen(unchecked_param_type = "number")] now: wasm_bindgen::JsValue,
            ) -> Result<(), wasm_bindgen::JsValue> {
                let now = $crate::convert::now_in(&now)?;
                leasehold::machine::Machine::handle_timeout(&mut *self.b()?, now);
                Ok(())
            }
            /// The next thing to send (data), or undefined.
            #[wasm_bindgen(js_name = pollTransmit)]
            pub fn poll_transmit(
                &self,
                #[wasm_bindgen(unchecked_param_type = "number")] now: wasm_bindgen::JsValue,
            ) -> Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue> {
                let now = $crate::convert::now_in(&now)?;
                let t = leasehold::machine::Machine::poll_transmit(&mut *self.b()?, now);
                t.map(|t| $crate::data::to_js(&t)).unwrap_or(Ok(wasm_bindgen::JsValue::UNDEFINED))
            }
            /// The next event to deliver (data), or undefined.
            #[wasm_bindgen(js_name = pollEvent)]
            pub fn poll_event(
                &self,
                #[wasm_bindgen(unchecked_param_type = "number")] now: wasm_bindgen::JsValue,
            ) -> Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue> {
                let now = $crate::convert::now_in(&now)?;
                let e = leasehold::machine::Machine::poll_event(&mut *self.b()?, now);
                e.map(|e| $crate::data::to_js(&e)).unwrap_or(Ok(wasm_bindgen::JsValue::UNDEFINED))
            }
        }
    };
}
pub(crate) use machine_class;
