//! The lease renewal service (Jini `LeaseRenewalService`): leased renewal sets, memberships,
//! expiration-warning and renewal-failure event registrations.

use std::cell::{RefCell, RefMut};

use js_sys::{Array, Uint8Array};
use leasehold::event::{EventRegistration, EventSource};
use leasehold::service::{
    RenewalService as CoreService, RenewalServiceConfig, ServiceSnapshot, SetEventKind, SetId,
};
use wasm_bindgen::prelude::*;

use crate::convert::*;
use crate::holder::{config_in, failure_in};
use crate::landlord::{landlord_options_in, policy_in};
use crate::lease::Lease;
use crate::wire::{error_reply, id_in, id_out, reply_in, reply_out, request_in, request_out};

fn set_in(v: &JsValue) -> Result<SetId, JsValue> {
    Ok(SetId(id_in(v)?))
}

pub(crate) fn source_out(s: &EventSource) -> JsValue {
    let o = obj();
    set(&o, &"service".into(), &s.service.to_string().into());
    set(&o, &"object".into(), &id_out(s.object));
    o.into()
}

pub(crate) fn registration_out(r: EventRegistration) -> JsValue {
    let o = obj();
    set(&o, &"eventId".into(), &id_out(r.event_id));
    set(&o, &"source".into(), &source_out(&r.source));
    set(&o, &"lease".into(), &Lease::wrap(r.lease).into());
    set(&o, &"sequence".into(), &id_out(r.sequence));
    o.into()
}

fn config_from(options: &JsValue) -> Result<RenewalServiceConfig, JsValue> {
    let (landlord, _) = landlord_options_in(options, "RenewalService")?;
    let mut c = RenewalServiceConfig::new(landlord.id, landlord.seed);
    c.landlord = landlord;
    let p = get(options, "setPolicy")?;
    if !p.is_undefined() {
        c.set_policy = policy_in(&p)?;
    }
    c.manager = config_in(&get(options, "manager")?)?;
    let j = get(options, "restoreJump")?;
    if !j.is_undefined() {
        c.restore_jump = u64_in(&j, "restoreJump")?;
    }
    Ok(c)
}

fn leases_out(v: Vec<leasehold::Lease>) -> Array {
    v.into_iter().map(|l| JsValue::from(Lease::wrap(l))).collect()
}

/// The lease renewal service: clients hand it leases in renewal sets, each set itself leased;
/// it renews the client leases (with one renewal manager) and sends set events. Sans-I/O: drive
/// it like a RenewalManager (`pollTimeout`/`handleTimeout`/`pollTransmit`/`handleReply`) and
/// deliver `pollEvent()`s to the registered listeners.
#[wasm_bindgen]
pub struct RenewalService {
    inner: RefCell<CoreService>,
    config: RenewalServiceConfig,
}

impl RenewalService {
    /// The service's state; arguments are converted before this is taken, and no JavaScript
    /// runs while it is held (see `Landlord`).
    fn b(&self) -> Result<RefMut<'_, CoreService>, JsValue> {
        self.inner.try_borrow_mut().map_err(|_| busy_error("RenewalService"))
    }
}

#[wasm_bindgen]
impl RenewalService {
    /// A service. `options`: `{id, seed?, grace?, limits?, setPolicy?, manager?, restoreJump?}`;
    /// `id` is the landlord id of its set leases, `setPolicy` how long sets are leased (default
    /// bounded: at most 2 h, 1 h for ANY), `manager` the RenewalManager options.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "RenewalServiceOptions")] options: JsValue,
    ) -> Result<RenewalService, JsValue> {
        let config = config_from(&options)?;
        Ok(RenewalService { inner: RefCell::new(js(CoreService::new(config.clone()))?), config })
    }

    /// Rebuilds a service from `snapshot()` text at `now`; `options` as for the constructor
    /// (its `id` must match the snapshot's).
    pub fn restore(
        #[wasm_bindgen(unchecked_param_type = "RenewalServiceOptions")] options: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] snapshot: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<RenewalService, JsValue> {
        let config = config_from(&options)?;
        let text = snapshot.as_string().ok_or_else(|| type_error("snapshot must be a string"))?;
        let snap = js(ServiceSnapshot::from_json(&text))?;
        let inner = js(CoreService::restore(config.clone(), snap, now_in(&now)?))?;
        Ok(RenewalService { inner: RefCell::new(inner), config })
    }

    /// Everything the service holds, as JSON text (contains the set-lease secret: store it
    /// like a key).
    pub fn snapshot(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<String, JsValue> {
        Ok(self.b()?.snapshot(now_in(&now)?).to_json())
    }

    /// The landlord id of the set leases, 16 hex digits.
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> Result<String, JsValue> {
        Ok(self.b()?.id().to_string())
    }

    /// Creates a renewal set leased for `leaseDuration` ms (ANY lets the service choose):
    /// `{set, lease}`.
    #[wasm_bindgen(js_name = createSet, unchecked_return_type = "{set: number, lease: Lease}")]
    pub fn create_set(
        &self,
        #[wasm_bindgen(js_name = leaseDuration, unchecked_param_type = "number")]
        lease_duration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let d = ms_in(&lease_duration, "leaseDuration")?;
        let (set_id, lease) = js(self.b()?.create_set(d, now_in(&now)?))?;
        let o = obj();
        set(&o, &"set".into(), &id_out(set_id.0));
        set(&o, &"lease".into(), &Lease::wrap(lease).into());
        Ok(o.into())
    }

    /// The live sets' ids.
    #[wasm_bindgen(unchecked_return_type = "number[]")]
    pub fn sets(&self) -> Result<Array, JsValue> {
        Ok(self.b()?.sets().into_iter().map(|s| id_out(s.0)).collect())
    }

    /// The set's lease (service's clock), or undefined.
    #[wasm_bindgen(js_name = setLease)]
    pub fn set_lease(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] set_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Option<Lease>, JsValue> {
        Ok(self.b()?.set_lease(set_in(&set_id)?, now_in(&now)?).map(Lease::wrap))
    }

    /// The set whose lease `lease` is, or undefined.
    #[wasm_bindgen(js_name = setOf, unchecked_return_type = "number | undefined")]
    pub fn set_of(
        &self,
        lease: &Lease,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let now = now_in(&now)?;
        Ok(self.b()?.set_of(&lease.inner, now).map(|s| id_out(s.0)).unwrap_or(JsValue::UNDEFINED))
    }

    /// Adds `lease` to a set (Jini `renewFor`): kept for `membershipDuration` ms, renewed for
    /// `renewDuration` ms at a time.
    pub fn add(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] set_id: JsValue,
        lease: &Lease,
        #[wasm_bindgen(js_name = membershipDuration, unchecked_param_type = "number")]
        membership: JsValue,
        #[wasm_bindgen(js_name = renewDuration, unchecked_param_type = "number")]
        renew_duration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let s = set_in(&set_id)?;
        let m = ms_in(&membership, "membershipDuration")?;
        let r = ms_in(&renew_duration, "renewDuration")?;
        js(self.b()?.add(s, lease.inner, m, r, now_in(&now)?))
    }

    /// Takes `lease` out of a set (not cancelled); returns it, or undefined if it was not there.
    pub fn remove(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] set_id: JsValue,
        lease: &Lease,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Option<Lease>, JsValue> {
        let s = set_in(&set_id)?;
        Ok(js(self.b()?.remove(s, &lease.inner, now_in(&now)?))?.map(Lease::wrap))
    }

    /// The client leases of a set.
    #[wasm_bindgen(unchecked_return_type = "Lease[]")]
    pub fn leases(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] set_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Array, JsValue> {
        Ok(leases_out(js(self.b()?.leases(set_in(&set_id)?, now_in(&now)?))?))
    }

    /// `{expiration, renewDuration}` of `lease` in a set, or undefined.
    #[wasm_bindgen(
        unchecked_return_type = "{expiration: number, renewDuration: number} | undefined"
    )]
    pub fn membership(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] set_id: JsValue,
        lease: &Lease,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let m = js(self.b()?.membership(set_in(&set_id)?, &lease.inner, now_in(&now)?))?;
        Ok(match m {
            Some(m) => {
                let o = obj();
                set(&o, &"expiration".into(), &ms_out(m.expiration));
                set(&o, &"renewDuration".into(), &ms_out(m.renew_duration));
                o.into()
            }
            None => JsValue::UNDEFINED,
        })
    }

    /// Registers for the set's expiration-warning event, `minWarning` ms before its lease
    /// expires; `handback` comes back in every event. Returns the EventRegistration.
    #[wasm_bindgen(js_name = setExpirationWarningListener, unchecked_return_type = "EventRegistration")]
    pub fn set_expiration_warning_listener(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] set_id: JsValue,
        #[wasm_bindgen(js_name = minWarning, unchecked_param_type = "number")] min_warning: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] handback: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let s = set_in(&set_id)?;
        let w = ms_in(&min_warning, "minWarning")?;
        let h = text_or_bytes_in(&handback, "handback")?;
        Ok(registration_out(js(self.b()?.set_expiration_warning_listener(s, w, h, now_in(&now)?))?))
    }

    /// Registers for the set's renewal-failure events. Returns the EventRegistration.
    #[wasm_bindgen(js_name = setRenewalFailureListener, unchecked_return_type = "EventRegistration")]
    pub fn set_renewal_failure_listener(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] set_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] handback: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let s = set_in(&set_id)?;
        let h = text_or_bytes_in(&handback, "handback")?;
        Ok(registration_out(js(self.b()?.set_renewal_failure_listener(s, h, now_in(&now)?))?))
    }

    /// Ends the set's expiration-warning registration.
    #[wasm_bindgen(js_name = clearExpirationWarningListener)]
    pub fn clear_expiration_warning_listener(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] set_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        js(self.b()?.clear_expiration_warning_listener(set_in(&set_id)?, now_in(&now)?))
    }

    /// Ends the set's renewal-failure registration.
    #[wasm_bindgen(js_name = clearRenewalFailureListener)]
    pub fn clear_renewal_failure_listener(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] set_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        js(self.b()?.clear_renewal_failure_listener(set_in(&set_id)?, now_in(&now)?))
    }

    /// The listener of `eventId` answered "unknown event": that registration ends. Returns
    /// whether it was active.
    #[wasm_bindgen(js_name = unknownEvent)]
    pub fn unknown_event(
        &self,
        #[wasm_bindgen(js_name = eventId, unchecked_param_type = "number")] event_id: JsValue,
    ) -> Result<bool, JsValue> {
        Ok(self.b()?.unknown_event(id_in(&event_id)?))
    }

    /// The set's active event registrations.
    #[wasm_bindgen(unchecked_return_type = "EventRegistration[]")]
    pub fn registrations(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] set_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Array, JsValue> {
        let r = js(self.b()?.registrations(set_in(&set_id)?, now_in(&now)?))?;
        Ok(r.into_iter().map(registration_out).collect())
    }

    /// Answers a request about set leases (renew or cancel a set's lease), object form.
    #[wasm_bindgen(js_name = handleRequest, unchecked_return_type = "Reply")]
    pub fn handle_request(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Request")] request: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let req = request_in(&request)?;
        Ok(reply_out(&self.b()?.handle_request(&req, now_in(&now)?)))
    }

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
        let b = match wire_in(&bytes, self.config.landlord.limits.max_message_bytes, "request")? {
            Ok(b) => b,
            Err(e) => return Ok(error_reply(self.config.landlord.id, &e, enc)),
        };
        let now = now_in(&now)?;
        Ok(self.b()?.handle_bytes(&b, enc, now))
    }

    /// When to call `handleTimeout` next, or undefined.
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

    /// The next renewal request for a client lease's landlord, `{landlord, request}`, or undefined.
    #[wasm_bindgen(js_name = pollTransmit, unchecked_return_type = "Transmit | undefined")]
    pub fn poll_transmit(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        Ok(match self.b()?.poll_transmit(now_in(&now)?) {
            Some(t) => {
                let o = obj();
                set(&o, &"landlord".into(), &t.landlord.to_string().into());
                set(&o, &"request".into(), &request_out(&t.request));
                o.into()
            }
            None => JsValue::UNDEFINED,
        })
    }

    /// A client lease landlord's reply, received at `now`.
    #[wasm_bindgen(js_name = handleReply)]
    pub fn handle_reply(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Reply")] reply: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let r = reply_in(&reply)?;
        self.b()?.handle_reply(&r, now_in(&now)?);
        Ok(())
    }

    /// Request `id` failed in transport (indefinite unless `error` carries a definite code).
    #[wasm_bindgen(js_name = handleFailure)]
    pub fn handle_failure(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | bigint")] id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] error: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let id = id_in(&id)?;
        let now = now_in(&now)?;
        let failure = failure_in(&error); // may run getters: before the borrow
        self.b()?.handle_failure(id, failure, now);
        Ok(())
    }

    /// The next set event for a listener, or undefined: `{eventId, source, sequence, handback,
    /// kind}` with `kind` `{type: "expirationWarning", set, expiration}` or
    /// `{type: "renewalFailure", set, lease, error?}`.
    #[wasm_bindgen(js_name = pollEvent, unchecked_return_type = "SetEvent | undefined")]
    pub fn poll_event(&self) -> Result<JsValue, JsValue> {
        Ok({
            let Some(e) = self.b()?.poll_event() else {
                return Ok(JsValue::UNDEFINED);
            };
            let o = obj();
            set(&o, &"eventId".into(), &id_out(e.event_id));
            set(&o, &"source".into(), &source_out(&e.source));
            set(&o, &"sequence".into(), &id_out(e.sequence));
            set(&o, &"handback".into(), &Uint8Array::from(&e.handback[..]));
            let k = obj();
            match e.kind {
                SetEventKind::ExpirationWarning { set: s, expiration } => {
                    set(&k, &"type".into(), &"expirationWarning".into());
                    set(&k, &"set".into(), &id_out(s.0));
                    set(&k, &"expiration".into(), &ms_out(expiration));
                }
                SetEventKind::RenewalFailure { set: s, lease, error } => {
                    set(&k, &"type".into(), &"renewalFailure".into());
                    set(&k, &"set".into(), &id_out(s.0));
                    set(&k, &"lease".into(), &Lease::wrap(lease).into());
                    if let Some(err) = error {
                        set(&k, &"error".into(), &lease_error(&err));
                    }
                }
            }
            set(&o, &"kind".into(), &k);
            o.into()
        })
    }

    /// The policy of set leases, as given.
    #[wasm_bindgen(getter, js_name = setPolicy, unchecked_return_type = "PolicyDescription")]
    pub fn set_policy(&self) -> JsValue {
        crate::policy_out(&self.config.set_policy)
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
