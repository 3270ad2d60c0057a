//! `Lease`: the holder's view of a lease, with its serial formats.

use leasehold::serial::{LEASE_BINARY_LEN, LEASE_JSON_MAX};
use leasehold::{Lease as CoreLease, LeaseError, SerialFormat};
use wasm_bindgen::prelude::*;

use crate::convert::*;

/// A lease as its holder sees it: its landlord, its cookie and when it expires on the holder's
/// clock. Two leases are `equals` when they have the same landlord and cookie.
#[wasm_bindgen]
#[derive(Clone, Copy)]
pub struct Lease {
    pub(crate) inner: CoreLease,
}

impl Lease {
    pub(crate) fn wrap(inner: CoreLease) -> Lease {
        Lease { inner }
    }
}

/// A serial format from JavaScript: 1 (DURATION), 2 (ABSOLUTE), or "duration"/"absolute".
pub fn format_in(v: &JsValue) -> Result<SerialFormat, JsValue> {
    if let Some(s) = v.as_string() {
        return match s.as_str() {
            "duration" => Ok(SerialFormat::Duration),
            "absolute" => Ok(SerialFormat::Absolute),
            _ => Err(range_error(format!(
                "serial format must be DURATION (1), ABSOLUTE (2), \"duration\" or \"absolute\", got {s:?}"
            ))),
        };
    }
    match v.as_f64() {
        Some(1.0) => Ok(SerialFormat::Duration),
        Some(2.0) => Ok(SerialFormat::Absolute),
        Some(x) => {
            Err(range_error(format!("serial format must be DURATION (1) or ABSOLUTE (2), got {x}")))
        }
        None => Err(type_error("serial format must be DURATION (1) or ABSOLUTE (2)")),
    }
}

#[wasm_bindgen]
impl Lease {
    /// A lease of `landlord` (16 hex digits or an integer) with `cookie` (32 hex digits),
    /// expiring at `expiration` ms on the holder's clock (`Infinity` = FOREVER). DURATION format.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "string | number | bigint")] landlord: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] cookie: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] expiration: JsValue,
    ) -> Result<Lease, JsValue> {
        Ok(Lease::wrap(CoreLease::new(
            landlord_in(&landlord)?,
            cookie_in(&cookie)?,
            ms_in(&expiration, "expiration")?,
        )))
    }

    /// The lease granted `granted` ms by a reply to a request the holder sent at `sentAt`
    /// (the holder counts from the send time, so it never outlives the landlord's view).
    #[wasm_bindgen(js_name = fromGrant)]
    pub fn from_grant(
        #[wasm_bindgen(unchecked_param_type = "string | number | bigint")] landlord: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] cookie: JsValue,
        #[wasm_bindgen(js_name = sentAt, unchecked_param_type = "number")] sent_at: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] granted: JsValue,
    ) -> Result<Lease, JsValue> {
        Ok(Lease::wrap(CoreLease::from_grant(
            landlord_in(&landlord)?,
            cookie_in(&cookie)?,
            now_in(&sent_at)?,
            ms_in(&granted, "granted duration")?,
        )))
    }

    /// The landlord's id, 16 hex digits.
    #[wasm_bindgen(getter)]
    pub fn landlord(&self) -> String {
        self.inner.landlord().to_string()
    }

    /// The landlord's key for this lease, 32 hex digits.
    #[wasm_bindgen(getter)]
    pub fn cookie(&self) -> String {
        self.inner.cookie().to_string()
    }

    /// When the lease expires on the holder's clock, in ms (`Infinity` = FOREVER).
    #[wasm_bindgen(getter, unchecked_return_type = "number")]
    pub fn expiration(&self) -> JsValue {
        ms_out(self.inner.expiration())
    }

    /// Sets the local expiration (after a renewal).
    #[wasm_bindgen(setter)]
    pub fn set_expiration(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "number")] expiration: JsValue,
    ) -> Result<(), JsValue> {
        self.inner.set_expiration(ms_in(&expiration, "expiration")?);
        Ok(())
    }

    /// How the lease is written out: 1 (DURATION) or 2 (ABSOLUTE).
    #[wasm_bindgen(getter, js_name = serialFormat)]
    pub fn serial_format(&self) -> u8 {
        self.inner.serial_format() as u8
    }

    /// Chooses how the lease is written out: DURATION (1) or ABSOLUTE (2).
    #[wasm_bindgen(setter, js_name = serialFormat)]
    pub fn set_serial_format(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "number | \"duration\" | \"absolute\"")]
        format: JsValue,
    ) -> Result<(), JsValue> {
        self.inner.set_serial_format(format_in(&format)?);
        Ok(())
    }

    /// Time left at `now`, in ms (negative once expired; `Infinity` for FOREVER).
    #[wasm_bindgen(unchecked_return_type = "number")]
    pub fn remaining(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        Ok(ms_out(self.inner.remaining(now_in(&now)?)))
    }

    /// Whether the lease has expired at `now` on the holder's clock.
    #[wasm_bindgen(js_name = isExpired)]
    pub fn is_expired(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<bool, JsValue> {
        Ok(self.inner.is_expired(now_in(&now)?))
    }

    /// Jini `canBatch`: true exactly when both leases belong to the same landlord.
    #[wasm_bindgen(js_name = canBatch)]
    pub fn can_batch(&self, other: &Lease) -> bool {
        self.inner.can_batch(&other.inner)
    }

    /// Same landlord and same cookie (whatever the expirations).
    pub fn equals(&self, other: &Lease) -> bool {
        self.inner == other.inner
    }

    /// A copy of this lease.
    #[wasm_bindgen(js_name = clone)]
    pub fn clone_js(&self) -> Lease {
        *self
    }

    /// The canonical JSON text, written at `now` (DURATION stores the time left at `now`).
    #[wasm_bindgen(js_name = toJson)]
    pub fn to_json(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<String, JsValue> {
        Ok(self.inner.to_json(now_in(&now)?))
    }

    /// Reads the canonical JSON text at the reader's `now`.
    #[wasm_bindgen(js_name = fromJson)]
    pub fn from_json(
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Lease, JsValue> {
        let now = now_in(&now)?;
        // Refuse an oversized text before it is copied into wasm memory.
        if let Some(s) = text.dyn_ref::<js_sys::JsString>() {
            let units = s.length() as usize;
            if units > LEASE_JSON_MAX {
                return Err(lease_error(&LeaseError::Decode(format!(
                    "lease JSON is at least {units} bytes, more than the {LEASE_JSON_MAX} allowed"
                ))));
            }
        }
        let text = text.as_string().ok_or_else(|| type_error("lease JSON must be a string"))?;
        Ok(Lease::wrap(js(CoreLease::from_json(&text, now))?))
    }

    /// The compact binary form (36 bytes), written at `now`.
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Vec<u8>, JsValue> {
        Ok(self.inner.to_bytes(now_in(&now)?))
    }

    /// Reads the compact binary form at the reader's `now`.
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Lease, JsValue> {
        let now = now_in(&now)?;
        // Refuse a wrong length before the bytes are copied into wasm memory (core's message).
        if let Some((len, _)) =
            input_len(&bytes).filter(|&(len, _)| len != LEASE_BINARY_LEN && !bytes.is_string())
        {
            return Err(lease_error(&LeaseError::Decode(format!(
                "a binary lease is {LEASE_BINARY_LEN} bytes, got {len}"
            ))));
        }
        let bytes = bytes_in(&bytes, "lease bytes")?;
        Ok(Lease::wrap(js(CoreLease::from_bytes(&bytes, now))?))
    }

    /// A short description, for logs.
    #[wasm_bindgen(js_name = toString)]
    pub fn to_string_js(&self) -> String {
        format!(
            "Lease(landlord {}, cookie {}, expires {})",
            self.inner.landlord(),
            self.inner.cookie(),
            leasehold::time::describe(self.inner.expiration()).replace(" ms", "")
        )
    }
}
