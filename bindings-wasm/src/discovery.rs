//! The lookup discovery service (Jini `LookupDiscoveryService`, seed 003 LD): registrations
//! leased by the service's own landlord, each with its groups, locators and discovered
//! registrars, and discovered/discarded events for its listener. Every rule is the core's
//! `leasehold::discovery`; this module converts values (camelCase objects, registrar ids as
//! 32 hex digits, locators as `"host:port"`, groups as `null` for all groups or an array of
//! names) and reuses the shared pieces: the renewal service's event-registration form, the
//! generic store (`discovery/store.rs`), the lease-protocol wire conversions.

use std::cell::{RefCell, RefMut};

use js_sys::{Array, Uint8Array};
use leasehold::discovery::{
    Announcement, DeliveryFailure, DiscoveryConfig, DiscoveryService as CoreService,
    DiscoverySnapshot, Groups, Locator, Registrar, RegistrarId, RegistrationId,
    RemoteDiscoveryEvent, UnicastResponse,
};
use leasehold::LeaseError;
use wasm_bindgen::prelude::*;

use crate::convert::*;
use crate::landlord::{landlord_options_in, policy_in};
use crate::lease::Lease;
use crate::service::{registration_out, source_out};
use crate::store::Durability;
use crate::wire::{error_reply, id_in, id_out, reply_out, request_in};

mod store;
pub mod wire;

#[wasm_bindgen(typescript_custom_section)]
const TS_DISCOVERY: &'static str = r#"
/** Groups of interest: `null` for all groups, else an array of names (`[]`: no group). */
export type DiscoveryGroups = string[] | null;
/** A lookup service as the discovery service knows it. `id`: 32 hex digits; locators `"host:port"`. */
export interface Registrar { id: string; groups: string[]; locators: string[]; }
/** A registrar's multicast announcement (or the datagram a unicast probe reads). */
export interface Announcement { registrar: string; groups: string[]; locator: string; sequence: number | bigint; ttl: number; }
/** A discovered or discarded event for a registration's listener (Jini `RemoteDiscoveryEvent`). */
export interface DiscoveryEvent {
  eventId: number | bigint;
  source: { service: string; object: number | bigint };
  sequence: number | bigint;
  handback: Uint8Array;
  discarded: boolean;
  registrars: Registrar[];
}
/** What `register` gives: the registration's number, its lease and its event registration. */
export interface DiscoveryRegistered { registration: number; lease: Lease; eventRegistration: EventRegistration; }
/** A unicast discovery the host should make: connect to `locator`, answer `unicastFound`/`unicastFailed` with `id`. */
export interface UnicastRequest { id: number | bigint; locator: string; }
/** Why an event could not be delivered: `indefinite` is retried until the registration's lease ends; the others cancel it. */
export type DeliveryFailure =
  | { kind: "indefinite"; message?: string }
  | { kind: "unknownEvent" }
  | { kind: "badObject"; message?: string }
  | { kind: "badInvocation"; message?: string };
/** Options of `new DiscoveryService(...)` (durations in ms). */
export interface DiscoveryServiceOptions {
  /** The landlord id of the registration leases: 16 hex digits or an integer. */
  id: string | number | bigint;
  /** 32 secret bytes for the registration cookies; default from crypto.getRandomValues. */
  seed?: Uint8Array;
  grace?: number;
  limits?: Partial<Limits>;
  /** How registration leases are granted (default bounded: at most 30 min, 30 min for ANY). */
  leasePolicy?: PolicyDescription;
  /** Waits before resending an event after its n-th indefinite failure (the last repeats). */
  eventRetry?: number[];
  /** An event handed out and not reported within this is an indefinite failure (Infinity: never). */
  deliveryTimeout?: number;
  /** Waits before probing a locator again after its n-th failure (the last repeats). */
  unicastRetry?: number[];
  /** A unicast discovery not answered within this failed (Infinity: never). */
  unicastTimeout?: number;
  maxRegistrars?: number;
  maxAnnouncementTtl?: number;
  /** How far event sequence numbers jump on restore (0: exact). */
  restoreJump?: number;
}
"#;

fn schedule_in(v: &JsValue, what: &str) -> Result<Vec<i64>, JsValue> {
    array_items(v, what)?.iter().map(|x| ms_in(x, what)).collect()
}

pub(crate) fn config_from(options: &JsValue) -> Result<(DiscoveryConfig, bool), JsValue> {
    let (landlord, seed_given) = landlord_options_in(options, "DiscoveryService")?;
    let mut c = DiscoveryConfig::new(landlord.id, landlord.seed);
    c.landlord = landlord;
    let p = get(options, "leasePolicy")?;
    if !p.is_undefined() {
        c.lease_policy = policy_in(&p)?;
    }
    for (key, field) in [("eventRetry", &mut c.event_retry), ("unicastRetry", &mut c.unicast_retry)]
    {
        let v = get(options, key)?;
        if !v.is_undefined() {
            *field = schedule_in(&v, key)?;
        }
    }
    for (key, field) in [
        ("deliveryTimeout", &mut c.delivery_timeout),
        ("unicastTimeout", &mut c.unicast_timeout),
        ("maxAnnouncementTtl", &mut c.max_announcement_ttl),
    ] {
        let v = get(options, key)?;
        if !v.is_undefined() {
            *field = ms_in(&v, key)?;
        }
    }
    let m = get(options, "maxRegistrars")?;
    if !m.is_undefined() {
        c.max_registrars = count_in(&m, "maxRegistrars")?;
    }
    let j = get(options, "restoreJump")?;
    if !j.is_undefined() {
        c.restore_jump = u64_in(&j, "restoreJump")?;
    }
    Ok((c, seed_given))
}

fn string_in(v: &JsValue, what: &str) -> Result<String, JsValue> {
    v.as_string().ok_or_else(|| type_error(format!("{what} must be a string")))
}

fn names_in(v: &JsValue, what: &str) -> Result<Vec<String>, JsValue> {
    array_items(v, what)?.iter().map(|x| string_in(x, what)).collect()
}

/// `null` (all groups) or an array of names. `undefined` is refused: "all groups" is never the
/// default of a missing argument.
pub(crate) fn groups_in(v: &JsValue) -> Result<Groups, JsValue> {
    if v.is_null() {
        return Ok(Groups::All);
    }
    if v.is_undefined() {
        return Err(type_error("groups must be null (all groups) or an array of group names"));
    }
    Ok(Groups::of(names_in(v, "groups")?))
}

fn groups_out(g: &Groups) -> JsValue {
    match g.names() {
        None => JsValue::NULL,
        Some(n) => n.iter().map(|s| JsValue::from(s.as_str())).collect::<Array>().into(),
    }
}

fn locator_in(v: &JsValue) -> Result<Locator, JsValue> {
    js(string_in(v, "a locator")?.parse::<Locator>())
}

fn locators_in(v: &JsValue) -> Result<Vec<Locator>, JsValue> {
    array_items(v, "locators")?.iter().map(locator_in).collect()
}

fn registrar_id_in(v: &JsValue) -> Result<RegistrarId, JsValue> {
    js(string_in(v, "a registrar id")?.parse::<RegistrarId>())
}

fn registration_in(v: &JsValue) -> Result<RegistrationId, JsValue> {
    Ok(RegistrationId(id_in(v)?))
}

fn strings_out(it: impl Iterator<Item = String>) -> Array {
    it.map(JsValue::from).collect()
}

pub(crate) fn registrar_out(r: &Registrar) -> JsValue {
    let o = obj();
    set(&o, &"id".into(), &r.id.to_string().into());
    set(&o, &"groups".into(), &strings_out(r.groups.iter().cloned()));
    set(&o, &"locators".into(), &strings_out(r.locators.iter().map(|l| l.to_string())));
    o.into()
}

fn registrars_out(v: &[Registrar]) -> Array {
    v.iter().map(registrar_out).collect()
}

pub(crate) fn event_out(e: &RemoteDiscoveryEvent) -> JsValue {
    let o = obj();
    set(&o, &"eventId".into(), &id_out(e.event_id));
    set(&o, &"source".into(), &source_out(&e.source));
    set(&o, &"sequence".into(), &id_out(e.sequence));
    set(&o, &"handback".into(), &Uint8Array::from(&e.handback[..]));
    set(&o, &"discarded".into(), &e.is_discarded().into());
    set(&o, &"registrars".into(), &registrars_out(e.registrars()));
    o.into()
}

pub(crate) fn announcement_in(v: &JsValue) -> Result<Announcement, JsValue> {
    if !v.is_object() {
        return Err(type_error(
            "an announcement must be an object {registrar, groups, locator, sequence, ttl}",
        ));
    }
    Ok(Announcement {
        registrar: registrar_id_in(&get(v, "registrar")?)?,
        groups: names_in(&get(v, "groups")?, "announcement groups")?.into_iter().collect(),
        locator: locator_in(&get(v, "locator")?)?,
        sequence: id_in(&get(v, "sequence")?)?,
        ttl: ms_in(&get(v, "ttl")?, "ttl")?,
    })
}

pub(crate) fn announcement_out(a: &Announcement) -> JsValue {
    let o = obj();
    set(&o, &"registrar".into(), &a.registrar.to_string().into());
    set(&o, &"groups".into(), &strings_out(a.groups.iter().cloned()));
    set(&o, &"locator".into(), &a.locator.to_string().into());
    set(&o, &"sequence".into(), &id_out(a.sequence));
    set(&o, &"ttl".into(), &ms_out(a.ttl));
    o.into()
}

fn failure_in(v: &JsValue) -> Result<DeliveryFailure, JsValue> {
    let (kind, message) = if let Some(k) = v.as_string() {
        (k, String::new())
    } else if v.is_object() {
        let m = get(v, "message")?;
        (string_in(&get(v, "kind")?, "failure kind")?, m.as_string().unwrap_or_default())
    } else {
        return Err(type_error("a delivery failure must be {kind, message?}"));
    };
    Ok(match kind.as_str() {
        "indefinite" => DeliveryFailure::Indefinite(message),
        "unknownEvent" => DeliveryFailure::UnknownEvent,
        "badObject" => DeliveryFailure::BadObject(message),
        "badInvocation" => DeliveryFailure::BadInvocation(message),
        k => {
            return Err(range_error(format!(
                "a delivery failure kind is indefinite, unknownEvent, badObject or \
                 badInvocation, got {k:?}"
            )))
        }
    })
}

/// The lookup discovery service. Sans-I/O: feed it announcements (`handleAnnouncement`,
/// `handleDatagram`), unicast results (`unicastFound`, `unicastFailed`) and unreachable
/// registrars; take out unicast probes (`pollTransmit`) and events (`pollEvent`, then report
/// `delivered`/`deliveryFailed`); call `handleTimeout` at `pollTimeout()`. Clients speak the
/// discovery wire protocol (`handleDiscoveryBytes`) and renew or cancel their registration
/// leases with the lease protocol (`handleBytes`). `DiscoveryDriver` runs it on timers.
#[wasm_bindgen]
pub struct DiscoveryService {
    inner: RefCell<CoreService>,
    durability: RefCell<Option<Durability>>,
}

impl DiscoveryService {
    /// The service's state; arguments are converted before this is taken, and no JavaScript
    /// runs while it is held.
    fn b(&self) -> Result<RefMut<'_, CoreService>, JsValue> {
        self.inner.try_borrow_mut().map_err(|_| busy_error("DiscoveryService"))
    }

    fn wrap(inner: CoreService, durability: Option<Durability>) -> DiscoveryService {
        DiscoveryService { inner: RefCell::new(inner), durability: RefCell::new(durability) }
    }

    fn with_id<T>(
        &self,
        registration: &JsValue,
        now: &JsValue,
        f: impl FnOnce(&mut CoreService, RegistrationId, i64) -> leasehold::Result<T>,
    ) -> Result<T, JsValue> {
        let id = registration_in(registration)?;
        let now = now_in(now)?;
        js(f(&mut *self.b()?, id, now))
    }
}

#[wasm_bindgen]
impl DiscoveryService {
    /// A service (see `DiscoveryServiceOptions`).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "DiscoveryServiceOptions")] options: JsValue,
    ) -> Result<DiscoveryService, JsValue> {
        let (config, _) = config_from(&options)?;
        Ok(DiscoveryService::wrap(js(CoreService::new(config))?, None))
    }

    /// Rebuilds a service from `snapshot()` text at `now`; `options` as for the constructor
    /// (its `id` must be the snapshot's; id and seed come from the snapshot).
    pub fn restore(
        #[wasm_bindgen(unchecked_param_type = "DiscoveryServiceOptions")] options: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] snapshot: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<DiscoveryService, JsValue> {
        let (config, _) = config_from(&options)?;
        let text = snapshot.as_string().ok_or_else(|| type_error("snapshot must be a string"))?;
        let snap = js(DiscoverySnapshot::from_json(&text))?;
        Ok(DiscoveryService::wrap(js(CoreService::restore(config, snap, now_in(&now)?))?, None))
    }

    /// Everything the service holds, as JSON text (holds the cookie secret: keep it like a key).
    pub fn snapshot(&self) -> Result<String, JsValue> {
        Ok(self.b()?.snapshot().to_json())
    }

    /// The landlord id of the registration leases (and `service` of every event source).
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> Result<String, JsValue> {
        Ok(self.b()?.id().to_string())
    }

    /// A new registration (LD.2): `groups` (`null`: all), `locators` (`"host:port"`),
    /// `handback` (bytes or text, returned in every event), `leaseDuration` (positive,
    /// `FOREVER` or `ANY`). Registrars already known that it wants are discovered for it at once.
    #[wasm_bindgen(unchecked_return_type = "DiscoveryRegistered")]
    pub fn register(
        &self,
        #[wasm_bindgen(unchecked_param_type = "DiscoveryGroups")] groups: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string[]")] locators: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] handback: JsValue,
        #[wasm_bindgen(js_name = leaseDuration, unchecked_param_type = "number")]
        lease_duration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let groups = groups_in(&groups)?;
        let locators = locators_in(&locators)?;
        let handback = text_or_bytes_in(&handback, "handback")?;
        let d = ms_in(&lease_duration, "leaseDuration")?;
        let now = now_in(&now)?;
        let r = js(self.b()?.register(groups, locators, handback, d, now))?;
        let o = obj();
        set(&o, &"registration".into(), &id_out(r.id.0));
        set(&o, &"lease".into(), &Lease::wrap(r.lease).into());
        set(&o, &"eventRegistration".into(), &registration_out(r.event));
        Ok(o.into())
    }

    /// The live registrations' numbers.
    #[wasm_bindgen(unchecked_return_type = "number[]")]
    pub fn registrations(&self) -> Result<Array, JsValue> {
        Ok(self.b()?.registrations().into_iter().map(|r| id_out(r.0)).collect())
    }

    /// Every registrar the service currently knows.
    #[wasm_bindgen(unchecked_return_type = "Registrar[]")]
    pub fn discovered(&self) -> Result<Array, JsValue> {
        Ok(registrars_out(&self.b()?.discovered()))
    }

    /// The registration whose lease cookie is `cookie`, or undefined.
    #[wasm_bindgen(js_name = registrationOf, unchecked_return_type = "number | undefined")]
    pub fn registration_of(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] cookie: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let c = cookie_in(&cookie)?;
        let now = now_in(&now)?;
        Ok(self.b()?.registration_of(c, now).map(|r| id_out(r.0)).unwrap_or(JsValue::UNDEFINED))
    }

    /// The registration's lease. A gone registration throws `UnknownLeaseError` (every method).
    pub fn lease(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] registration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Lease, JsValue> {
        self.with_id(&registration, &now, |s, id, now| s.lease(id, now)).map(Lease::wrap)
    }

    /// The registration's event registration `{eventId, source, lease, sequence}`.
    #[wasm_bindgen(js_name = eventRegistration, unchecked_return_type = "EventRegistration")]
    pub fn event_registration(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] registration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        self.with_id(&registration, &now, |s, id, now| s.event_registration(id, now))
            .map(registration_out)
    }

    /// The registrars discovered for the registration (LD.2.3 `getRegistrars`).
    #[wasm_bindgen(unchecked_return_type = "Registrar[]")]
    pub fn registrars(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] registration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Array, JsValue> {
        let r = self.with_id(&registration, &now, |s, id, now| s.registrars(id, now))?;
        Ok(registrars_out(&r))
    }

    /// The registration's groups: `null` for all groups, else the names.
    #[wasm_bindgen(unchecked_return_type = "DiscoveryGroups")]
    pub fn groups(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] registration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let g = self.with_id(&registration, &now, |s, id, now| s.groups(id, now))?;
        Ok(groups_out(&g))
    }

    /// The registration's locators, `"host:port"`.
    #[wasm_bindgen(unchecked_return_type = "string[]")]
    pub fn locators(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] registration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Array, JsValue> {
        let l = self.with_id(&registration, &now, |s, id, now| s.locators(id, now))?;
        Ok(strings_out(l.iter().map(|l| l.to_string())))
    }

    /// Adds groups (LD.4.1.1: registrars of the new groups are discovered).
    #[wasm_bindgen(js_name = addGroups)]
    pub fn add_groups(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] registration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string[]")] groups: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let g = names_in(&groups, "groups")?;
        self.with_id(&registration, &now, |s, id, now| s.add_groups(id, g, now))
    }

    /// Replaces the groups (`null`: all groups); registrars no longer wanted are discarded.
    #[wasm_bindgen(js_name = setGroups)]
    pub fn set_groups(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] registration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "DiscoveryGroups")] groups: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let g = groups_in(&groups)?;
        self.with_id(&registration, &now, |s, id, now| s.set_groups(id, g, now))
    }

    /// Removes groups; registrars no longer wanted are discarded.
    #[wasm_bindgen(js_name = removeGroups)]
    pub fn remove_groups(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] registration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string[]")] groups: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let g = names_in(&groups, "groups")?;
        self.with_id(&registration, &now, |s, id, now| s.remove_groups(id, g, now))
    }

    /// Adds locators (each is discovered by unicast).
    #[wasm_bindgen(js_name = addLocators)]
    pub fn add_locators(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] registration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string[]")] locators: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let l = locators_in(&locators)?;
        self.with_id(&registration, &now, |s, id, now| s.add_locators(id, l, now))
    }

    /// Replaces the locators; registrars no longer wanted are discarded.
    #[wasm_bindgen(js_name = setLocators)]
    pub fn set_locators(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] registration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string[]")] locators: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let l = locators_in(&locators)?;
        self.with_id(&registration, &now, |s, id, now| s.set_locators(id, l, now))
    }

    /// Removes locators; registrars no longer wanted are discarded.
    #[wasm_bindgen(js_name = removeLocators)]
    pub fn remove_locators(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] registration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string[]")] locators: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let l = locators_in(&locators)?;
        self.with_id(&registration, &now, |s, id, now| s.remove_locators(id, l, now))
    }

    /// The client's active discard (LD.2.3): a discarded event, and the registrar may be
    /// discovered again.
    pub fn discard(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] registration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] registrar: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let r = registrar_id_in(&registrar)?;
        self.with_id(&registration, &now, |s, id, now| s.discard(id, r, now))
    }

    /// Stores where the registration's events go (bytes or text the host understands; kept
    /// with the registration, durably).
    #[wasm_bindgen(js_name = setListener)]
    pub fn set_listener(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] registration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] listener: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let l = text_or_bytes_in(&listener, "listener")?;
        self.with_id(&registration, &now, |s, id, now| s.set_listener(id, l, now))
    }

    /// The registration's listener as stored, or undefined.
    pub fn listener(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] registration: JsValue,
    ) -> Result<Option<Uint8Array>, JsValue> {
        let id = registration_in(&registration)?;
        Ok(self.b()?.listener(id).map(Uint8Array::from))
    }

    /// A registrar's announcement, received at `now`.
    #[wasm_bindgen(js_name = handleAnnouncement)]
    pub fn handle_announcement(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Announcement")] announcement: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let a = announcement_in(&announcement)?;
        let now = now_in(&now)?;
        js(self.b()?.handle_announcement(&a, now))
    }

    /// An announcement datagram as received (a bad one throws `DecodeError`, changing nothing).
    #[wasm_bindgen(js_name = handleDatagram)]
    pub fn handle_datagram(
        &self,
        bytes: &[u8],
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let now = now_in(&now)?;
        js(self.b()?.handle_datagram(bytes, now))
    }

    /// Unicast discovery `requestId` found `registrar` with `groups` (or pass the datagram the
    /// probe read as `found`). Returns whether the request was awaited.
    #[wasm_bindgen(js_name = unicastFound)]
    pub fn unicast_found(
        &self,
        #[wasm_bindgen(js_name = requestId, unchecked_param_type = "number | bigint")]
        request_id: JsValue,
        #[wasm_bindgen(
            unchecked_param_type = "Uint8Array | {registrar: string, groups: string[]}"
        )]
        found: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<bool, JsValue> {
        let id = id_in(&request_id)?;
        let now = now_in(&now)?;
        let response = if found.is_instance_of::<Uint8Array>() {
            let b = Uint8Array::from(found).to_vec();
            UnicastResponse::from(&js(Announcement::decode(&b))?)
        } else if found.is_object() {
            UnicastResponse {
                registrar: registrar_id_in(&get(&found, "registrar")?)?,
                groups: names_in(&get(&found, "groups")?, "groups")?.into_iter().collect(),
            }
        } else {
            return Err(type_error("found must be {registrar, groups} or the datagram read"));
        };
        Ok(self.b()?.handle_unicast(id, Ok(response), now))
    }

    /// Unicast discovery `requestId` failed (refused, silent, garbled): retried on the schedule.
    #[wasm_bindgen(js_name = unicastFailed)]
    pub fn unicast_failed(
        &self,
        #[wasm_bindgen(js_name = requestId, unchecked_param_type = "number | bigint")]
        request_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string | undefined")] reason: JsValue,
    ) -> Result<bool, JsValue> {
        let id = id_in(&request_id)?;
        let now = now_in(&now)?;
        let why =
            reason.as_string().unwrap_or_else(|| "the host's unicast discovery failed".into());
        Ok(self.b()?.handle_unicast(id, Err(LeaseError::Indefinite(why)), now))
    }

    /// The host found `registrar` unreachable: a passive discard (registrations that want it
    /// by group discard it; those that want it only by locator keep it). Whether it was known.
    #[wasm_bindgen(js_name = registrarUnreachable)]
    pub fn registrar_unreachable(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] registrar: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<bool, JsValue> {
        let r = registrar_id_in(&registrar)?;
        let now = now_in(&now)?;
        Ok(self.b()?.registrar_unreachable(r, now))
    }

    /// The next unicast discovery to make `{id, locator}`, or undefined.
    #[wasm_bindgen(js_name = pollTransmit, unchecked_return_type = "UnicastRequest | undefined")]
    pub fn poll_transmit(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let now = now_in(&now)?;
        let Some(t) = self.b()?.poll_transmit(now) else {
            return Ok(JsValue::UNDEFINED);
        };
        let o = obj();
        set(&o, &"id".into(), &id_out(t.id));
        set(&o, &"locator".into(), &t.locator.to_string().into());
        Ok(o.into())
    }

    /// The next event to deliver, or undefined. Report how it went with `delivered` or
    /// `deliveryFailed` (or `handleEventReply`); the listener is `listener(source.object)`.
    #[wasm_bindgen(js_name = pollEvent, unchecked_return_type = "DiscoveryEvent | undefined")]
    pub fn poll_event(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let now = now_in(&now)?;
        let e = self.b()?.poll_event(now);
        Ok(e.as_ref().map(event_out).unwrap_or(JsValue::UNDEFINED))
    }

    /// The listener received event (`eventId`, `sequence`). Whether it was the one awaited.
    pub fn delivered(
        &self,
        #[wasm_bindgen(js_name = eventId, unchecked_param_type = "number | bigint")]
        event_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number | bigint")] sequence: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<bool, JsValue> {
        let (e, s, now) = (id_in(&event_id)?, id_in(&sequence)?, now_in(&now)?);
        Ok(self.b()?.delivered(e, s, now))
    }

    /// Delivery of event (`eventId`, `sequence`) failed: `{kind: "indefinite"}` is retried
    /// until the lease ends; `unknownEvent`, `badObject`, `badInvocation` cancel the registration.
    #[wasm_bindgen(js_name = deliveryFailed)]
    pub fn delivery_failed(
        &self,
        #[wasm_bindgen(js_name = eventId, unchecked_param_type = "number | bigint")]
        event_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number | bigint")] sequence: JsValue,
        #[wasm_bindgen(unchecked_param_type = "DeliveryFailure")] failure: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<bool, JsValue> {
        let (e, s, now) = (id_in(&event_id)?, id_in(&sequence)?, now_in(&now)?);
        let f = failure_in(&failure)?;
        Ok(self.b()?.delivery_failed(e, s, f, now))
    }

    /// A listener's encoded event reply (what it answered to the POST of an event): delivered
    /// or failed as it says. A reply that does not decode throws `DecodeError`.
    #[wasm_bindgen(js_name = handleEventReply)]
    pub fn handle_event_reply(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] bytes: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Encoding | undefined")] encoding: JsValue,
    ) -> Result<bool, JsValue> {
        let enc = encoding_in(&encoding)?;
        let now = now_in(&now)?;
        let limits = self.b()?.config().landlord.limits;
        let b = js(wire_in(&bytes, limits.max_message_bytes, "event reply")?)?;
        let reply = js(leasehold::discovery::wire::EventReply::decode(&b, enc, &limits))?;
        Ok(self.b()?.handle_event_reply(&reply, now))
    }

    /// When to call `handleTimeout` next, or undefined.
    #[wasm_bindgen(js_name = pollTimeout, unchecked_return_type = "number | undefined")]
    pub fn poll_timeout(&self) -> Result<JsValue, JsValue> {
        Ok(self.b()?.poll_timeout().map(ms_out).unwrap_or(JsValue::UNDEFINED))
    }

    /// Advances to `now`: leases end, silent registrars are discarded, retries fall due.
    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let now = now_in(&now)?;
        self.b()?.handle_timeout(now);
        Ok(())
    }

    /// Answers a lease-protocol request about a registration lease (renew, cancel), object form.
    #[wasm_bindgen(js_name = handleRequest, unchecked_return_type = "Reply")]
    pub fn handle_request(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Request")] request: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let req = request_in(&request)?;
        let now = now_in(&now)?;
        Ok(reply_out(&self.b()?.handle_request(&req, now)))
    }

    /// Decodes, answers and encodes a lease-protocol request about a registration lease.
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
        let b = match wire_in(&bytes, max, "request")? {
            Ok(b) => b,
            Err(e) => return Ok(error_reply(id, &e, enc)),
        };
        Ok(self.b()?.handle_bytes(&b, enc, now))
    }

    /// Decodes, answers and encodes a discovery-protocol request (register, the registration's
    /// methods); a request that does not decode gets an error reply with id 0.
    #[wasm_bindgen(js_name = handleDiscoveryBytes)]
    pub fn handle_discovery_bytes(
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
        let b = match wire_in(&bytes, max, "discovery request")? {
            Ok(b) => b,
            Err(e) => return Ok(wire::discovery_error_reply(id, &e, enc)),
        };
        Ok(self.b()?.handle_discovery_bytes(&b, enc, now))
    }
}
