//! The holder side: `LeaseMap`, `RenewalManager` and the grant helpers.

use std::cell::{RefCell, RefMut};

use js_sys::Array;
use leasehold::holder::{self, LeaseMap as CoreLeaseMap, RenewalManager as CoreManager};
use wasm_bindgen::prelude::*;

use crate::convert::*;
use crate::data::{from_js, to_js};
use crate::lease::Lease;
use crate::wire::{id_in, reply_in, request_out};

/// Leases of one landlord, each with the duration to renew it for, renewed or cancelled in one
/// message (Jini `LeaseMap`). Failed leases are removed and reported in a `LeaseMapError`.
#[wasm_bindgen]
pub struct LeaseMap {
    inner: RefCell<CoreLeaseMap>,
}

impl LeaseMap {
    /// The map's state; arguments are converted before this is taken, and no JavaScript runs
    /// while it is held (see `Landlord`).
    fn b(&self) -> Result<RefMut<'_, CoreLeaseMap>, JsValue> {
        self.inner.try_borrow_mut().map_err(|_| busy_error("LeaseMap"))
    }
}

fn entry_out(lease: &leasehold::Lease, duration: i64) -> JsValue {
    let o = obj();
    set(&o, &"lease".into(), &Lease::wrap(*lease).into());
    set(&o, &"duration".into(), &ms_out(duration));
    o.into()
}

#[wasm_bindgen]
impl LeaseMap {
    /// An empty map, bound to the landlord of the first lease inserted, or to `landlord`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "string | number | bigint | undefined")]
        landlord: JsValue,
    ) -> Result<LeaseMap, JsValue> {
        Ok(LeaseMap {
            inner: RefCell::new(if landlord.is_undefined() {
                CoreLeaseMap::new()
            } else {
                CoreLeaseMap::for_landlord(landlord_in(&landlord)?)
            }),
        })
    }

    /// The landlord whose leases this map holds (16 hex digits), once known.
    #[wasm_bindgen(getter)]
    pub fn landlord(&self) -> Result<Option<String>, JsValue> {
        Ok(self.b()?.landlord().map(|l| l.to_string()))
    }

    /// Jini `canContainKey`: whether `lease` can batch with the leases of this map.
    #[wasm_bindgen(js_name = canContainKey)]
    pub fn can_contain_key(&self, lease: &Lease) -> Result<bool, JsValue> {
        Ok(self.b()?.can_contain_key(&lease.inner))
    }

    /// Adds (or replaces) `lease`, to be renewed for `duration` ms.
    pub fn set(
        &self,
        lease: &Lease,
        #[wasm_bindgen(unchecked_param_type = "number")] duration: JsValue,
    ) -> Result<(), JsValue> {
        js(self.b()?.insert(lease.inner, ms_in(&duration, "duration")?))
    }

    /// Removes `lease`; returns `{lease, duration}` or undefined.
    #[wasm_bindgen(unchecked_return_type = "{lease: Lease, duration: number} | undefined")]
    pub fn delete(&self, lease: &Lease) -> Result<JsValue, JsValue> {
        Ok(self.b()?.remove(&lease.inner).map_or(JsValue::UNDEFINED, |(l, d)| entry_out(&l, d)))
    }

    /// `{lease, duration}` of `lease` (the map's copy, with its current expiration), or undefined.
    #[wasm_bindgen(unchecked_return_type = "{lease: Lease, duration: number} | undefined")]
    pub fn get(&self, lease: &Lease) -> Result<JsValue, JsValue> {
        Ok(self.b()?.get(&lease.inner).map_or(JsValue::UNDEFINED, |(l, d)| entry_out(&l, d)))
    }

    /// Whether `lease` is in the map.
    pub fn has(&self, lease: &Lease) -> Result<bool, JsValue> {
        Ok(self.b()?.contains(&lease.inner))
    }

    /// Number of leases.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> Result<usize, JsValue> {
        Ok(self.b()?.len())
    }

    /// `[{lease, duration}, ...]` in cookie order.
    #[wasm_bindgen(unchecked_return_type = "Array<{lease: Lease, duration: number}>")]
    pub fn entries(&self) -> Result<Array, JsValue> {
        Ok(self.b()?.iter().map(|(l, d)| entry_out(l, d)).collect())
    }

    /// One request (object form) renewing every lease (Jini `renewAll`); send it, then give
    /// the reply to `applyRenewAll` with the time it was sent.
    #[wasm_bindgen(js_name = renewAllRequest, unchecked_return_type = "Request")]
    pub fn renew_all_request(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | bigint")] id: JsValue,
    ) -> Result<JsValue, JsValue> {
        Ok(request_out(&self.b()?.renew_all_request(id_in(&id)?)))
    }

    /// One request cancelling every lease (Jini `cancelAll`).
    #[wasm_bindgen(js_name = cancelAllRequest, unchecked_return_type = "Request")]
    pub fn cancel_all_request(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | bigint")] id: JsValue,
    ) -> Result<JsValue, JsValue> {
        Ok(request_out(&self.b()?.cancel_all_request(id_in(&id)?)))
    }

    /// Applies the reply to `renewAllRequest` sent at `sentAt`. Throws `LeaseMapError` (with
    /// the per-lease errors) if some leases failed; they have been removed from the map.
    #[wasm_bindgen(js_name = applyRenewAll)]
    pub fn apply_renew_all(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Reply")] reply: JsValue,
        #[wasm_bindgen(js_name = sentAt, unchecked_param_type = "number")] sent_at: JsValue,
    ) -> Result<(), JsValue> {
        let reply = reply_in(&reply)?;
        js(self.b()?.apply_renew_all(&reply, now_in(&sent_at)?))
    }

    /// Applies the reply to `cancelAllRequest`. Throws `LeaseMapError` for the failures.
    #[wasm_bindgen(js_name = applyCancelAll)]
    pub fn apply_cancel_all(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Reply")] reply: JsValue,
    ) -> Result<(), JsValue> {
        let reply = reply_in(&reply)?;
        js(self.b()?.apply_cancel_all(&reply))
    }
}

/// A grant request (object form) for `resource` (bytes or a string, sent as UTF-8) for
/// `duration` ms (`ANY`, `FOREVER` allowed).
#[wasm_bindgen(js_name = grantRequest, unchecked_return_type = "Request")]
pub fn grant_request(
    #[wasm_bindgen(unchecked_param_type = "number | bigint")] id: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] resource: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] duration: JsValue,
) -> Result<JsValue, JsValue> {
    Ok(request_out(&holder::grant_request(
        id_in(&id)?,
        text_or_bytes_in(&resource, "resource")?,
        ms_in(&duration, "duration")?,
    )))
}

/// The holder's lease from a landlord's reply to a grant request sent at `sentAt` (holder's
/// clock), shortened for clock-rate drift of up to `maxDriftPpm` (default 0). An error reply
/// throws its error.
#[wasm_bindgen(js_name = leaseFromReply)]
pub fn lease_from_reply(
    #[wasm_bindgen(unchecked_param_type = "Reply")] reply: JsValue,
    #[wasm_bindgen(js_name = sentAt, unchecked_param_type = "number")] sent_at: JsValue,
    #[wasm_bindgen(js_name = maxDriftPpm, unchecked_param_type = "number | undefined")]
    max_drift_ppm: JsValue,
) -> Result<Lease, JsValue> {
    let reply = reply_in(&reply)?;
    let sent = now_in(&sent_at)?;
    let ppm = if max_drift_ppm.is_undefined() {
        0
    } else {
        u32::try_from(u64_in(&max_drift_ppm, "maxDriftPpm")?)
            .map_err(|_| range_error("maxDriftPpm is too large"))?
    };
    Ok(Lease::wrap(js(holder::lease_from_reply_with_drift(&reply, sent, ppm))?))
}

/// Renews leases until their desired expirations, sans-I/O (Jini `LeaseRenewalManager`).
///
/// The host (or `RenewalDriver`) runs the loop: call `handleTimeout(now)` when `pollTimeout()`
/// says, send each `pollTransmit(now)` request to its landlord, give replies to
/// `handleReply(reply, now)` (or a failed send to `handleFailure(id, error, now)`), and deliver
/// `pollEvent()`s. After any call, drain `pollTransmit` and `pollEvent`.
#[wasm_bindgen]
pub struct RenewalManager {
    inner: RefCell<CoreManager>,
}

impl RenewalManager {
    /// The manager's state; arguments are converted before this is taken, and no JavaScript
    /// runs while it is held (see `Landlord`).
    fn b(&self) -> Result<RefMut<'_, CoreManager>, JsValue> {
        self.inner.try_borrow_mut().map_err(|_| busy_error("RenewalManager"))
    }
}

#[wasm_bindgen]
impl RenewalManager {
    /// A manager. `options` (all optional): `{batchWindow, maxBatch, initialRtt, minRto, maxRto,
    /// attempts, renewDivisor, maxRetryInterval, maxClockDriftPpm, firstRequestId,
    /// reportRenewals}`; settings out of range throw `InvalidArgumentError`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "RenewalManagerOptions | undefined")]
        options: JsValue,
    ) -> Result<RenewalManager, JsValue> {
        let options = from_js::<Option<holder::ManagerOptions>>(&options)?.unwrap_or_default();
        let manager = js(options.config().and_then(CoreManager::try_new))?;
        Ok(RenewalManager { inner: RefCell::new(manager) })
    }

    /// Renews `lease` until `duration` ms from `now` (`Infinity` = forever), asking for
    /// `renewDuration` each time.
    #[wasm_bindgen(js_name = renewFor)]
    pub fn renew_for(
        &self,
        lease: &Lease,
        #[wasm_bindgen(unchecked_param_type = "number")] duration: JsValue,
        #[wasm_bindgen(js_name = renewDuration, unchecked_param_type = "number")]
        renew_duration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let d = ms_in(&duration, "duration")?;
        let rd = ms_in(&renew_duration, "renewDuration")?;
        js(self.b()?.renew_for(lease.inner, d, rd, now_in(&now)?))
    }

    /// Stops managing `lease` (it is not cancelled); returns the manager's copy.
    pub fn remove(&self, lease: &Lease) -> Result<Lease, JsValue> {
        Ok(Lease::wrap(js(self.b()?.remove(&lease.inner))?))
    }

    /// The manager's copy of `lease` (current actual expiration), or undefined.
    pub fn lease(&self, lease: &Lease) -> Result<Option<Lease>, JsValue> {
        Ok(self.b()?.lease(&lease.inner).map(Lease::wrap))
    }

    /// Carries out one call of the core's `ManagerInput` (`{op, ...}`, data) and returns its
    /// answer (data): the calls off the hot path, named by `js/holder.js`.
    #[wasm_bindgen(skip_typescript)]
    pub fn handle(&self, input: JsValue, now: JsValue) -> Result<JsValue, JsValue> {
        let input = from_js(&input)?;
        let now = crate::machine::now_or_none(&now)?;
        let out = js(leasehold::machine::Machine::handle(&mut *self.b()?, input, now))?;
        to_js(&out)
    }

    /// Number of leases managed.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> Result<usize, JsValue> {
        Ok(self.b()?.len())
    }

    /// When to call `handleTimeout` next (ms), or undefined.
    #[wasm_bindgen(js_name = pollTimeout, unchecked_return_type = "number | undefined")]
    pub fn poll_timeout(&self) -> Result<JsValue, JsValue> {
        Ok(self.b()?.poll_timeout().map(ms_out).unwrap_or(JsValue::UNDEFINED))
    }

    /// Advances to `now`.
    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        self.b()?.handle_timeout(now_in(&now)?);
        Ok(())
    }

    /// The next request to send, `{landlord, request}` (object form), stamped with `now` as its
    /// send time; or undefined.
    #[wasm_bindgen(js_name = pollTransmit, unchecked_return_type = "Transmit | undefined")]
    pub fn poll_transmit(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let now = now_in(&now)?;
        Ok(match self.b()?.poll_transmit(now) {
            Some(t) => {
                let o = obj();
                set(&o, &"landlord".into(), &t.landlord.to_string().into());
                set(&o, &"request".into(), &request_out(&t.request));
                o.into()
            }
            None => JsValue::UNDEFINED,
        })
    }

    /// Takes a landlord's reply (object form) received at `now`.
    #[wasm_bindgen(js_name = handleReply)]
    pub fn handle_reply(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Reply")] reply: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let reply = reply_in(&reply)?;
        self.b()?.handle_reply(&reply, now_in(&now)?);
        Ok(())
    }

    /// The next event, or undefined: `{type: "renewed", lease}`,
    /// `{type: "desiredExpirationReached", lease, desiredExpiration}` or
    /// `{type: "renewalFailed", lease, desiredExpiration, error}`.
    #[wasm_bindgen(js_name = pollEvent, unchecked_return_type = "RenewalEvent | undefined")]
    pub fn poll_event(&self) -> Result<JsValue, JsValue> {
        use leasehold::holder::RenewalEvent::*;
        let Some(e) = self.b()?.poll_event() else { return Ok(JsValue::UNDEFINED) };
        let (kind, lease, desired, error) = match e {
            RenewalFailed { lease, desired_expiration: d, error } => {
                ("renewalFailed", lease, Some(d), Some(error))
            }
            DesiredExpirationReached { lease, desired_expiration: d } => {
                ("desiredExpirationReached", lease, Some(d), None)
            }
            Renewed { lease } => ("renewed", lease, None, None),
        };
        let o = obj();
        set(&o, &"type".into(), &kind.into());
        set(&o, &"lease".into(), &Lease::wrap(lease).into());
        if let Some(d) = desired {
            set(&o, &"desiredExpiration".into(), &ms_out(d));
        }
        if let Some(e) = error {
            set(&o, &"error".into(), &e.as_ref().map_or(JsValue::UNDEFINED, lease_error));
        }
        Ok(o.into())
    }
}
