//! `Landlord`: the grantor, with every built-in policy, expiry and the wire protocol.

use std::cell::{RefCell, RefMut};

mod store;

use js_sys::{Array, Uint8Array};
use leasehold::landlord::{LandlordSnapshot, SnapshotLease};
use leasehold::policy::{AdaptiveConfig, PolicySpec};
use leasehold::{Cookie, Expired, Landlord as CoreLandlord, LandlordConfig, LeaseError, Limits};
use wasm_bindgen::prelude::*;

use crate::convert::*;
use crate::lease::Lease;
use crate::wire::{error_reply, reply_out, request_in};

/// What a lease is for: any JavaScript value, or the bytes of a grant that came over the wire.
#[derive(Clone)]
pub enum Resource {
    /// Given by JavaScript.
    Js(JsValue),
    /// From a wire grant request (handed to JavaScript as a `Uint8Array`).
    Bytes(Box<[u8]>),
}

impl From<Vec<u8>> for Resource {
    fn from(b: Vec<u8>) -> Self {
        Resource::Bytes(b.into_boxed_slice())
    }
}

/// A durable landlord's resources are bytes (what the store writes, and what every runtime's
/// store of a landlord holds): a string is kept as its UTF-8 bytes, and resources come back as
/// `Uint8Array`s, before a restart as after it.
impl leasehold::journal::Durable for Resource {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Resource::Bytes(b) => out.extend_from_slice(b),
            // Not reached: a durable landlord converts every resource to bytes before granting
            // (`Landlord::resource_in`). Kept total for the trait: text as UTF-8, bytes as they
            // are; no JavaScript runs (no getters, no toJSON).
            Resource::Js(v) => {
                if let Some(s) = v.as_string() {
                    out.extend_from_slice(s.as_bytes());
                } else if let Some(a) = v.dyn_ref::<Uint8Array>() {
                    out.extend_from_slice(&a.to_vec());
                }
            }
        }
    }
    fn decode(bytes: &[u8]) -> leasehold::Result<Self> {
        Ok(Resource::Bytes(bytes.into()))
    }
}

impl Resource {
    fn to_js(&self) -> JsValue {
        match self {
            Resource::Js(v) => v.clone(),
            Resource::Bytes(b) => Uint8Array::from(&b[..]).into(),
        }
    }
    fn into_js(self) -> JsValue {
        match self {
            Resource::Js(v) => v,
            Resource::Bytes(b) => Uint8Array::from(&b[..]).into(),
        }
    }
}

fn opt_ms(o: &JsValue, key: &str, what: &str) -> Result<Option<i64>, JsValue> {
    let v = get(o, key)?;
    if v.is_undefined() {
        Ok(None)
    } else {
        ms_in(&v, what).map(Some)
    }
}

fn need_ms(o: &JsValue, key: &str, kind: &str) -> Result<i64, JsValue> {
    opt_ms(o, key, &format!("{kind} policy {key}"))?
        .ok_or_else(|| type_error(format!("{kind} policy needs {key} (ms)")))
}

fn need_count(o: &JsValue, key: &str, kind: &str) -> Result<usize, JsValue> {
    let v = get(o, key)?;
    if v.is_undefined() {
        return Err(type_error(format!("{kind} policy needs {key}")));
    }
    count_in(&v, &format!("{kind} policy {key}"))
}

fn need_f64(o: &JsValue, key: &str, kind: &str) -> Result<f64, JsValue> {
    let v = get(o, key)?;
    match v.as_f64() {
        Some(x) if x.is_finite() => Ok(x),
        Some(x) => {
            Err(range_error(format!("{kind} policy {key} must be a finite number, got {x}")))
        }
        None => Err(type_error(format!("{kind} policy needs {key} (a number)"))),
    }
}

/// A policy from its JavaScript description, e.g. `{kind: "bounded", max: 60000, default: 30000}`.
///
/// Kinds: `fixed {duration}`, `bounded {max, default}`, `capacity {maxLeases, inner}`,
/// `resourceAware {capacity, max, min}`, `adaptive {renewalsPerSecond, min, max, grantors?}` or
/// `adaptive {bytesPerSecond, requestSize, grantSize, min, max, grantors?}`.
pub fn policy_in(p: &JsValue) -> Result<PolicySpec, JsValue> {
    if !p.is_object() {
        return Err(type_error(
            "policy must be an object such as {kind: \"fixed\", duration: 30000}",
        ));
    }
    let kind = get(p, "kind")?.as_string().ok_or_else(|| {
        type_error("policy needs a kind (fixed, bounded, capacity, resourceAware, adaptive)")
    })?;
    Ok(match kind.as_str() {
        "fixed" => PolicySpec::Fixed { duration: need_ms(p, "duration", "fixed")? },
        "bounded" => PolicySpec::Bounded {
            max: need_ms(p, "max", "bounded")?,
            default: need_ms(p, "default", "bounded")?,
        },
        "capacity" => PolicySpec::Capacity {
            max_leases: need_count(p, "maxLeases", "capacity")?,
            inner: Box::new(policy_in(&get(p, "inner")?)?),
        },
        "resourceAware" | "resource_aware" => PolicySpec::ResourceAware {
            capacity: need_count(p, "capacity", "resourceAware")?,
            max: need_ms(p, "max", "resourceAware")?,
            min: need_ms(p, "min", "resourceAware")?,
        },
        "adaptive" => {
            let min = need_ms(p, "min", "adaptive")?;
            let max = need_ms(p, "max", "adaptive")?;
            let grantors = match get(p, "grantors")? {
                v if v.is_undefined() => 1,
                v => u32::try_from(u64_in(&v, "adaptive policy grantors")?)
                    .map_err(|_| range_error("adaptive policy grantors is too large"))?,
            };
            let mut cfg = if get(p, "bytesPerSecond")?.is_undefined() {
                AdaptiveConfig {
                    renewals_per_second: need_f64(p, "renewalsPerSecond", "adaptive")?,
                    min,
                    max,
                    grantors: 1,
                }
            } else {
                js(AdaptiveConfig::from_bandwidth(
                    need_f64(p, "bytesPerSecond", "adaptive")?,
                    need_f64(p, "requestSize", "adaptive")?,
                    need_f64(p, "grantSize", "adaptive")?,
                    min,
                    max,
                ))?
            };
            cfg.grantors = grantors;
            PolicySpec::Adaptive(cfg)
        }
        other => {
            return Err(range_error(format!(
                "unknown policy kind {other:?} (fixed, bounded, capacity, resourceAware, adaptive)"
            )))
        }
    })
}

/// Wire limits from JavaScript: `{maxMessageBytes?, maxBatch?, maxResourceBytes?}`.
pub fn limits_in(v: &JsValue) -> Result<Limits, JsValue> {
    let mut l = Limits::default();
    if v.is_undefined() || v.is_null() {
        return Ok(l);
    }
    for (key, field) in [
        ("maxMessageBytes", &mut l.max_message_bytes),
        ("maxBatch", &mut l.max_batch),
        ("maxResourceBytes", &mut l.max_resource_bytes),
    ] {
        let x = get(v, key)?;
        if !x.is_undefined() {
            *field = count_in(&x, &format!("limits.{key}"))?;
        }
    }
    Ok(l)
}

/// The JavaScript form of limits.
pub fn limits_out(l: &Limits) -> JsValue {
    let o = obj();
    set(&o, &"maxMessageBytes".into(), &(l.max_message_bytes as f64).into());
    set(&o, &"maxBatch".into(), &(l.max_batch as f64).into());
    set(&o, &"maxResourceBytes".into(), &(l.max_resource_bytes as f64).into());
    o.into()
}

pub(crate) fn random_seed() -> Result<[u8; 32], JsValue> {
    let crypto = js_sys::Reflect::get(&js_sys::global(), &"crypto".into())?;
    if crypto.is_undefined() {
        return Err(type_error("no globalThis.crypto: pass options.seed (32 random bytes)"));
    }
    let buf = Uint8Array::new_with_length(32);
    let f = js_sys::Reflect::get(&crypto, &"getRandomValues".into())?;
    let f: js_sys::Function =
        f.dyn_into().map_err(|_| type_error("crypto.getRandomValues missing"))?;
    f.call1(&crypto, &buf)?;
    let mut seed = [0u8; 32];
    buf.copy_to(&mut seed);
    Ok(seed)
}

/// A time for the fast paths: FOREVER is Infinity, NaN marks a value past the safe range (the
/// wrapper then asks the checked method, which gives an exact bigint).
fn fast_out(x: i64) -> f64 {
    if x == leasehold::FOREVER {
        f64::INFINITY
    } else if (x as f64).abs() <= MAX_SAFE {
        x as f64
    } else {
        f64::NAN
    }
}

fn expired_out(e: Expired<Resource>) -> JsValue {
    let o = obj();
    KEYS.with(|k| {
        set(&o, &k.cookie, &cookie_out(e.cookie));
        set(&o, &k.expiration, &ms_out(e.expiration));
        set(&o, &k.resource, &e.resource.into_js());
    });
    o.into()
}

/// Issues, renews, cancels and expires leases on resources (any JavaScript value).
///
/// Sans-I/O: every call takes `now` (ms); expiry is driven by the host with `pollTimeout`,
/// `handleTimeout` and `pollExpired` (or by `LandlordDriver`).
///
/// Re-entrancy: arguments are converted (which may run JavaScript: getters, proxies) before the
/// landlord's state is borrowed, and no JavaScript runs while it is borrowed, so a getter or
/// callback may call the same landlord again.
#[wasm_bindgen]
pub struct Landlord {
    state: RefCell<State>,
    /// Kept in a store: resources must be bytes (or text, kept as UTF-8).
    durable: bool,
}

struct State {
    inner: CoreLandlord<Resource>,
    policy: PolicySpec,
    /// The store's bookkeeping, for a landlord opened from one.
    durability: Option<crate::store::Durability>,
    /// A conversion error of the last fast grant (a durable landlord's resource of the wrong
    /// type), for `__takeError`.
    last_type_error: Option<JsValue>,
    /// Duration and expiration of the last `__grantW`, read by the JavaScript wrapper.
    last_grant: (i64, i64),
    /// Result of the last `__renewW`.
    last_renew: i64,
    /// The error of the last fast call that failed, for `__takeError`.
    last_error: Option<LeaseError>,
}

/// A cookie from the four 32-bit words of the word API (least significant first).
#[inline]
fn cookie_of_words(w0: u32, w1: u32, w2: u32, w3: u32) -> Cookie {
    Cookie((w3 as u128) << 96 | (w2 as u128) << 64 | (w1 as u128) << 32 | w0 as u128)
}

#[inline]
fn words_of_cookie(c: Cookie) -> [u32; 4] {
    [c.0 as u32, (c.0 >> 32) as u32, (c.0 >> 64) as u32, (c.0 >> 96) as u32]
}

/// A small buffer in wasm memory through which the word API hands cookies out without
/// allocating: words 0..4 are the cookie of the last grant, word 4 the status of the last
/// `__cancelW` (0 ok, 1 failed: see `__takeError`).
struct Scratch(std::cell::UnsafeCell<[u32; 8]>);
// SAFETY: wasm32-unknown-unknown runs this module on one thread.
unsafe impl Sync for Scratch {}
static SCRATCH: Scratch = Scratch(std::cell::UnsafeCell::new([0; 8]));

fn scratch() -> &'static mut [u32; 8] {
    // SAFETY: one thread, and no reference to it outlives the call that takes it.
    unsafe { &mut *SCRATCH.0.get() }
}

/// Where the word API's scratch words are in wasm memory (a byte offset).
#[wasm_bindgen(js_name = __scratchPtr, skip_typescript)]
pub fn scratch_ptr() -> u32 {
    SCRATCH.0.get() as u32
}

/// The wasm memory, for the JavaScript wrapper's views of the scratch words.
#[wasm_bindgen(js_name = __memory, skip_typescript)]
pub fn memory() -> JsValue {
    wasm_bindgen::memory()
}

/// A batch result: the value, or minus the error code.
#[inline]
fn code_out(e: &LeaseError) -> f64 {
    -(e.code() as i32 as f64)
}

impl Landlord {
    fn st(&self) -> Result<RefMut<'_, State>, JsValue> {
        self.state.try_borrow_mut().map_err(|_| busy_error("Landlord"))
    }

    fn read<T>(&self, f: impl FnOnce(&State) -> T) -> Result<T, JsValue> {
        Ok(f(&*self.state.try_borrow().map_err(|_| busy_error("Landlord"))?))
    }

    fn wrap(inner: CoreLandlord<Resource>, policy: PolicySpec) -> Landlord {
        Landlord::wrap_with(inner, policy, None)
    }

    fn wrap_with(
        inner: CoreLandlord<Resource>,
        policy: PolicySpec,
        durability: Option<crate::store::Durability>,
    ) -> Landlord {
        Landlord {
            durable: durability.is_some(),
            state: RefCell::new(State {
                inner,
                policy,
                durability,
                last_type_error: None,
                last_grant: (0, 0),
                last_renew: 0,
                last_error: None,
            }),
        }
    }

    /// A resource as this landlord keeps it: any JavaScript value, or for a durable landlord
    /// bytes (a `Uint8Array` copied, a string as its UTF-8 bytes). Runs no user code.
    fn resource_in(&self, v: JsValue) -> Result<Resource, JsValue> {
        if !self.durable {
            return Ok(Resource::Js(v));
        }
        if v.is_string() || v.is_instance_of::<Uint8Array>() {
            return text_or_bytes_in(&v, "resource").map(Resource::from);
        }
        Err(type_error(
            "a durable landlord's resource must be a string or a Uint8Array (it is written to its \
             store; encode other values yourself, e.g. with JSON.stringify)",
        ))
    }
}

/// The landlord's options as given to `new Landlord(...)` (and to a store, for a new one):
/// its configuration and its policy; whether a seed was given.
/// What every landlord and every leased service (renewal, discovery) takes: `{id, seed?, grace?,
/// limits?}` (`seed` defaults to fresh entropy). `what` names the options in the error for a
/// non-object. Returns the configuration and whether a seed was given.
pub(crate) fn landlord_options_in(
    options: &JsValue,
    what: &str,
) -> Result<(LandlordConfig, bool), JsValue> {
    if !options.is_object() {
        return Err(type_error(format!("{what} options must be an object {{id, ...}}")));
    }
    let id = landlord_in(&get(options, "id")?)?;
    let seed_v = get(options, "seed")?;
    let seed_given = !seed_v.is_undefined();
    let seed = if !seed_given {
        random_seed()?
    } else {
        let b = fixed_bytes_in(&seed_v, 32, "seed")?;
        <[u8; 32]>::try_from(b.as_slice()).expect("32 bytes")
    };
    let mut config = LandlordConfig::new(id, seed);
    if let Some(g) = opt_ms(options, "grace", "grace")? {
        if g < 0 {
            return Err(range_error(format!("grace must not be negative, got {g}")));
        }
        config = config.with_grace(g);
    }
    config.limits = limits_in(&get(options, "limits")?)?;
    Ok((config, seed_given))
}

fn config_in(options: &JsValue) -> Result<(LandlordConfig, PolicySpec, bool), JsValue> {
    if !options.is_object() {
        return Err(type_error("Landlord options must be an object {id, policy, ...}"));
    }
    let spec = policy_in(&get(options, "policy")?)?;
    let (mut config, seed_given) = landlord_options_in(options, "Landlord")?;
    let budget = get(options, "expiryBudget")?;
    if !budget.is_undefined() {
        config.expiry_budget = count_in(&budget, "expiryBudget")?;
        if config.expiry_budget == 0 {
            return Err(range_error("expiryBudget must be at least 1"));
        }
    }
    if let Some(i) = opt_ms(options, "journalClockInterval", "journalClockInterval")? {
        if i < 0 {
            return Err(range_error(format!("journalClockInterval must not be negative, got {i}")));
        }
        config.journal_clock_interval = i;
    }
    Ok((config, spec, seed_given))
}

#[wasm_bindgen]
impl Landlord {
    /// A landlord. `options`: `{id, policy, seed?, grace?, expiryBudget?, limits?}`; `id` is 16
    /// hex digits or an integer, `policy` a policy description, `seed` 32 secret bytes for
    /// cookies (default: from `crypto.getRandomValues`), `grace` ms honoured after expiry.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "LandlordOptions")] options: JsValue,
    ) -> Result<Landlord, JsValue> {
        let (config, spec, _) = config_in(&options)?;
        let policy = js(spec.build())?;
        Ok(Landlord::wrap(CoreLandlord::new(config, policy), spec))
    }

    /// This landlord's id, 16 hex digits.
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> Result<String, JsValue> {
        self.read(|s| s.inner.id().to_string())
    }

    /// Grace after expiry, ms.
    #[wasm_bindgen(getter, unchecked_return_type = "number")]
    pub fn grace(&self) -> Result<JsValue, JsValue> {
        self.read(|s| ms_out(s.inner.config().grace))
    }

    /// The wire limits enforced by `handleBytes`.
    #[wasm_bindgen(getter, unchecked_return_type = "Limits")]
    pub fn limits(&self) -> Result<JsValue, JsValue> {
        self.read(|s| limits_out(&s.inner.config().limits))
    }

    /// The policy's description, as given (kind in camelCase).
    #[wasm_bindgen(getter, unchecked_return_type = "PolicyDescription")]
    pub fn policy(&self) -> Result<JsValue, JsValue> {
        self.read(|s| crate::policy_out(&s.policy))
    }

    /// Leases held, including any past expiration not yet swept by `handleTimeout`.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> Result<usize, JsValue> {
        self.read(|s| s.inner.len())
    }

    /// Grants a lease on `resource` for at most `duration` ms (`ANY` = -1 lets the policy
    /// choose, `FOREVER` = Infinity). Returns `{cookie, duration, expiration}`.
    #[wasm_bindgen(js_name = grant, unchecked_return_type = "Grant")]
    pub fn grant_checked(
        &self,
        resource: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] duration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let d = ms_in(&duration, "duration")?;
        let now = now_in(&now)?;
        let resource = self.resource_in(resource)?;
        let g = self.st()?.inner.grant(resource, d, now);
        let g = js(g)?;
        let o = obj();
        KEYS.with(|k| {
            set(&o, &k.cookie, &cookie_out(g.cookie));
            set(&o, &k.duration, &ms_out(g.duration));
            set(&o, &k.expiration, &ms_out(g.expiration));
        });
        Ok(o.into())
    }

    /// Renews a lease for at most `duration` ms from `now`; returns the granted duration.
    /// A denied renewal leaves the lease as it was.
    #[wasm_bindgen(js_name = renew, unchecked_return_type = "number")]
    pub fn renew_checked(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] cookie: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] duration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let c = cookie_in(&cookie)?;
        let d = ms_in(&duration, "duration")?;
        let now = now_in(&now)?;
        let r = self.st()?.inner.renew(c, d, now);
        Ok(ms_out(js(r)?))
    }

    /// Cancels a lease and returns its resource.
    #[wasm_bindgen(js_name = cancel)]
    pub fn cancel_checked(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] cookie: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let c = cookie_in(&cookie)?;
        let now = now_in(&now)?;
        let r = self.st()?.inner.cancel(c, now);
        Ok(js(r)?.into_js())
    }

    /// Renews many leases (`[[cookie, duration], ...]`); one `{ok, value | error}` per lease,
    /// in order. One failure never aborts the batch.
    #[wasm_bindgen(js_name = renewAll, unchecked_return_type = "Outcome<number>[]")]
    pub fn renew_all(
        &self,
        #[wasm_bindgen(
            unchecked_param_type = "Array<[string, number] | {cookie: string, duration: number}>"
        )]
        items: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Array, JsValue> {
        let arr = array_items(&items, "renewAll items")?;
        let mut list = Vec::with_capacity(arr.len());
        for item in &arr {
            list.push(item_in(item)?);
        }
        let now = now_in(&now)?;
        let results = self.st()?.inner.renew_all(&list, now);
        let out = Array::new();
        for r in results {
            out.push(&outcome(r, ms_out));
        }
        Ok(out)
    }

    /// Cancels many leases; one `{ok, value: resource | error}` per lease, in order.
    #[wasm_bindgen(js_name = cancelAll, unchecked_return_type = "Outcome<unknown>[]")]
    pub fn cancel_all(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string[]")] cookies: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Array, JsValue> {
        let arr = array_items(&cookies, "cancelAll cookies")?;
        let list = arr.iter().map(cookie_in).collect::<Result<Vec<_>, _>>()?;
        let now = now_in(&now)?;
        let results = self.st()?.inner.cancel_all(&list, now);
        let out = Array::new();
        for r in results {
            out.push(&outcome(r, Resource::into_js));
        }
        Ok(out)
    }

    /// `{expiration, resource}` of a lease still honoured at `now`, or undefined.
    #[wasm_bindgen(unchecked_return_type = "{expiration: number, resource: unknown} | undefined")]
    pub fn get(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] cookie: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let c = cookie_in(&cookie)?;
        let now = now_in(&now)?;
        let found = self.read(|s| s.inner.get(c, now).map(|(exp, r)| (exp, r.to_js())))?;
        Ok(match found {
            None => JsValue::UNDEFINED,
            Some((exp, r)) => {
                let o = obj();
                KEYS.with(|k| {
                    set(&o, &k.expiration, &ms_out(exp));
                    set(&o, &k.resource, &r);
                });
                o.into()
            }
        })
    }

    /// Whether a lease is still honoured at `now`.
    pub fn has(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] cookie: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<bool, JsValue> {
        let (c, now) = (cookie_in(&cookie)?, now_in(&now)?);
        self.read(|s| s.inner.get(c, now).is_some())
    }

    /// The holder's view of a lease still honoured at `now` (expiration on this landlord's
    /// clock), or undefined.
    pub fn lease(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] cookie: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Option<Lease>, JsValue> {
        let (c, now) = (cookie_in(&cookie)?, now_in(&now)?);
        self.read(|s| s.inner.lease(c, now).map(Lease::wrap))
    }

    /// Every lease held, `{cookie, expiration, resource}`, in no particular order.
    /// (`for (const e of landlord)` iterates the same.)
    #[wasm_bindgen(unchecked_return_type = "LeaseEntry[]")]
    pub fn entries(&self) -> Result<Array, JsValue> {
        let list: Vec<_> =
            self.read(|s| s.inner.iter().map(|(c, exp, r)| (c, exp, r.to_js())).collect())?;
        let out = Array::new();
        KEYS.with(|k| {
            for (c, exp, r) in list {
                let o = obj();
                set(&o, &k.cookie, &cookie_out(c));
                set(&o, &k.expiration, &ms_out(exp));
                set(&o, &k.resource, &r);
                out.push(&o);
            }
        });
        Ok(out)
    }

    // Fast paths for the package's JavaScript wrapper (api.js), which calls them when the
    // arguments already have the right JavaScript types and falls back to the checked methods
    // above otherwise (so every error message stays the same). Numbers arrive as f64 without a
    // round trip through the JS heap; the checks on their values are the same.

    /// Expiration of the last `__grantW` (NaN if past the safe range).
    #[wasm_bindgen(js_name = __lastGrantExpiration, skip_typescript)]
    pub fn last_grant_expiration(&self) -> f64 {
        self.read(|s| fast_out(s.last_grant.1)).unwrap_or(f64::NAN)
    }

    /// `[duration, expiration]` of the last `__grantW`, exact (bigints past the safe range).
    #[wasm_bindgen(js_name = __lastGrantExact, skip_typescript)]
    pub fn last_grant_exact(&self) -> Result<Array, JsValue> {
        let (d, e) = self.read(|s| s.last_grant)?;
        Ok(Array::of2(&ms_out(d), &ms_out(e)))
    }

    /// The result of the last `__renewW`, exact.
    #[wasm_bindgen(js_name = __lastRenewExact, skip_typescript)]
    pub fn last_renew_exact(&self) -> Result<JsValue, JsValue> {
        self.read(|s| ms_out(s.last_renew))
    }

    // The word API (`grantWords`, `renewWords`, `cancelWords` and their batches in api.js): a
    // cookie as four unsigned 32-bit words, least significant first, so that it crosses the
    // boundary as plain numbers. Errors are kept for `__takeError` instead of thrown, so the
    // calls return plain numbers.

    /// Grants; the cookie goes to the scratch words. Returns the granted duration, or NaN when
    /// it failed (`__takeError` has the error) or is past the safe range (`__lastGrantExact`).
    #[wasm_bindgen(js_name = __grantW, skip_typescript)]
    pub fn grant_w(&self, resource: JsValue, duration: f64, now: f64) -> f64 {
        let resource = self.resource_in(resource);
        let Ok(mut st) = self.state.try_borrow_mut() else { return f64::NAN };
        let resource = match resource {
            Ok(r) => r,
            Err(e) => {
                st.last_type_error = Some(e);
                return f64::NAN;
            }
        };
        let r = ms_from_f64_core(duration, "duration")
            .and_then(|d| Ok((d, ms_from_f64_core(now, "now")?)))
            .and_then(|(d, now)| st.inner.grant(resource, d, now));
        match r {
            Ok(g) => {
                scratch()[..4].copy_from_slice(&words_of_cookie(g.cookie));
                st.last_grant = (g.duration, g.expiration);
                st.last_error = None;
                fast_out(g.duration)
            }
            Err(e) => {
                st.last_error = Some(e);
                f64::NAN
            }
        }
    }

    /// Renews the lease of a cookie given as words. Returns the granted duration, or NaN when
    /// it failed (`__takeError`) or is past the safe range (`__lastRenewExact`).
    #[wasm_bindgen(js_name = __renewW, skip_typescript)]
    #[allow(clippy::too_many_arguments)]
    pub fn renew_w(&self, w0: u32, w1: u32, w2: u32, w3: u32, duration: f64, now: f64) -> f64 {
        let Ok(mut st) = self.state.try_borrow_mut() else { return f64::NAN };
        let c = cookie_of_words(w0, w1, w2, w3);
        let r = ms_from_f64_core(duration, "duration")
            .and_then(|d| Ok((d, ms_from_f64_core(now, "now")?)))
            .and_then(|(d, now)| st.inner.renew(c, d, now));
        match r {
            Ok(d) => {
                st.last_renew = d;
                st.last_error = None;
                fast_out(d)
            }
            Err(e) => {
                st.last_error = Some(e);
                f64::NAN
            }
        }
    }

    /// Cancels the lease of a cookie given as words; returns its resource. Scratch word 4 is
    /// 0 on success, 1 on failure (`__takeError`).
    #[wasm_bindgen(js_name = __cancelW, skip_typescript)]
    pub fn cancel_w(&self, w0: u32, w1: u32, w2: u32, w3: u32, now: f64) -> JsValue {
        scratch()[4] = 1;
        let Ok(mut st) = self.state.try_borrow_mut() else { return JsValue::UNDEFINED };
        let c = cookie_of_words(w0, w1, w2, w3);
        let r = ms_from_f64_core(now, "now").and_then(|now| st.inner.cancel(c, now));
        match r {
            Ok(res) => {
                st.last_error = None;
                drop(st);
                scratch()[4] = 0;
                res.into_js()
            }
            Err(e) => {
                st.last_error = Some(e);
                JsValue::UNDEFINED
            }
        }
    }

    /// The error of the last failed fast call (then forgotten), or undefined; a re-entrancy
    /// error if the landlord is busy.
    #[wasm_bindgen(js_name = __takeError, skip_typescript)]
    pub fn take_error(&self) -> JsValue {
        match self.state.try_borrow_mut() {
            Ok(mut st) if st.last_type_error.is_some() => st.last_type_error.take().unwrap(),
            Ok(mut st) => match st.last_error.take() {
                Some(e) => {
                    drop(st);
                    lease_error(&e)
                }
                None => JsValue::UNDEFINED,
            },
            Err(_) => busy_error("Landlord"),
        }
    }

    /// Grants one lease per resource, each for at most `durations[i]` (or `durations[0]` for
    /// all). Writes each cookie's words to `words[4i..4i+4]` (zeros if refused) and the granted
    /// duration, or minus the error code, to `out[i]`. Returns the number refused.
    #[wasm_bindgen(js_name = __grantBatch, skip_typescript)]
    pub fn grant_batch(
        &self,
        resources: Vec<JsValue>,
        durations: &[f64],
        now: f64,
        words: &mut [u32],
        out: &mut [f64],
    ) -> Result<u32, JsValue> {
        let now = ms_from_f64(now, "now")?;
        let n = resources.len();
        if words.len() < 4 * n || out.len() < n || durations.is_empty() {
            return Err(range_error("grant batch: arrays too short"));
        }
        let resources: Vec<Result<Resource, LeaseError>> = resources
            .into_iter()
            .map(|r| {
                self.resource_in(r).map_err(|_| {
                    LeaseError::InvalidArgument(
                        "a durable landlord's resource must be a string or a Uint8Array".into(),
                    )
                })
            })
            .collect();
        let mut st = self.st()?;
        let mut failed = 0;
        for (i, r) in resources.into_iter().enumerate() {
            let d = durations[if durations.len() == 1 { 0 } else { i }];
            let g = r.and_then(|r| {
                ms_from_f64_core(d, "duration").and_then(|d| st.inner.grant(r, d, now))
            });
            match g {
                Ok(g) => {
                    words[4 * i..4 * i + 4].copy_from_slice(&words_of_cookie(g.cookie));
                    out[i] = fast_out(g.duration);
                }
                Err(e) => {
                    words[4 * i..4 * i + 4].fill(0);
                    out[i] = code_out(&e);
                    failed += 1;
                }
            }
        }
        Ok(failed)
    }

    /// Renews the leases whose cookies are `words` (4 per lease), each for at most
    /// `durations[i]` (or `durations[0]` for all). Writes the granted duration, or minus the
    /// error code, to `out[i]`. Returns the number that failed.
    #[wasm_bindgen(js_name = __renewBatch, skip_typescript)]
    pub fn renew_batch(
        &self,
        words: &[u32],
        durations: &[f64],
        now: f64,
        out: &mut [f64],
    ) -> Result<u32, JsValue> {
        let now = ms_from_f64(now, "now")?;
        let n = words.len() / 4;
        if out.len() < n || durations.is_empty() {
            return Err(range_error("renew batch: arrays too short"));
        }
        let mut items = Vec::with_capacity(n);
        let mut bad = Vec::new();
        for i in 0..n {
            let w = &words[4 * i..4 * i + 4];
            let d = durations[if durations.len() == 1 { 0 } else { i }];
            match ms_from_f64_core(d, "duration") {
                Ok(d) => items.push((cookie_of_words(w[0], w[1], w[2], w[3]), d)),
                Err(e) => {
                    // An invalid duration fails this lease only (core refuses it untouched).
                    items.push((Cookie(0), leasehold::ANY));
                    bad.push((i, e));
                }
            }
        }
        let results = self.st()?.inner.renew_all(&items, now);
        let mut failed = 0;
        for (i, r) in results.into_iter().enumerate() {
            out[i] = match r {
                Ok(d) => fast_out(d),
                Err(e) => {
                    failed += 1;
                    code_out(&e)
                }
            };
        }
        for (i, e) in bad {
            if out[i] >= 0.0 {
                failed += 1;
            }
            out[i] = code_out(&e);
        }
        Ok(failed)
    }

    /// Cancels the leases whose cookies are `words` (4 per lease). Writes 0, or minus the error
    /// code, to `out[i]`; returns the resources (undefined where the cancel failed).
    #[wasm_bindgen(js_name = __cancelBatch, skip_typescript)]
    pub fn cancel_batch(
        &self,
        words: &[u32],
        now: f64,
        out: &mut [f64],
    ) -> Result<Vec<JsValue>, JsValue> {
        let now = ms_from_f64(now, "now")?;
        let n = words.len() / 4;
        if out.len() < n {
            return Err(range_error("cancel batch: arrays too short"));
        }
        let cookies: Vec<Cookie> =
            words.chunks_exact(4).map(|w| cookie_of_words(w[0], w[1], w[2], w[3])).collect();
        let results = self.st()?.inner.cancel_all(&cookies, now);
        Ok(results
            .into_iter()
            .enumerate()
            .map(|(i, r)| match r {
                Ok(res) => {
                    out[i] = 0.0;
                    res.into_js()
                }
                Err(e) => {
                    out[i] = code_out(&e);
                    JsValue::UNDEFINED
                }
            })
            .collect())
    }

    /// `pollTimeout` as a plain number for the drivers: NaN when nothing is due (a far deadline
    /// is rounded, which is harmless for a timer).
    #[wasm_bindgen(js_name = __pollTimeoutMs, skip_typescript)]
    pub fn poll_timeout_ms(&self) -> f64 {
        self.read(|s| s.inner.poll_timeout().map(|t| t as f64).unwrap_or(f64::NAN))
            .unwrap_or(f64::NAN)
    }

    /// When the host should next call `handleTimeout` (ms), or undefined if nothing will expire.
    #[wasm_bindgen(js_name = pollTimeout, unchecked_return_type = "number | undefined")]
    pub fn poll_timeout(&self) -> Result<JsValue, JsValue> {
        self.read(|s| s.inner.poll_timeout().map(ms_out).unwrap_or(JsValue::UNDEFINED))
    }

    /// Advances expiry to `now`: leases past expiration (plus grace) are removed and queued
    /// for `pollExpired`.
    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        let now = now_in(&now)?;
        self.st()?.inner.handle_timeout(now);
        Ok(())
    }

    /// The next expired lease `{cookie, expiration, resource}` found by `handleTimeout`, or
    /// undefined.
    #[wasm_bindgen(js_name = pollExpired, unchecked_return_type = "LeaseEntry | undefined")]
    pub fn poll_expired(&self) -> Result<JsValue, JsValue> {
        let e = self.st()?.inner.poll_expired();
        Ok(match e {
            Some(e) => expired_out(e),
            None => JsValue::UNDEFINED,
        })
    }

    /// Answers one request message (the object form of the wire protocol).
    #[wasm_bindgen(js_name = handleRequest, unchecked_return_type = "Reply")]
    pub fn handle_request(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Request")] request: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let req = request_in(&request)?;
        let now = now_in(&now)?;
        let reply = self.st()?.inner.handle_request(&req, now);
        Ok(reply_out(&reply))
    }

    /// Decodes a request message (`"binary"` by default, or `"json"`), answers it, and returns
    /// the encoded reply. Undecodable input gets an error reply with id 0; it never throws for
    /// bad bytes. A message over `limits.maxMessageBytes` is refused before it is copied into
    /// WebAssembly memory.
    #[wasm_bindgen(js_name = handleBytes)]
    pub fn handle_bytes(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] bytes: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Encoding | undefined")] encoding: JsValue,
    ) -> Result<Vec<u8>, JsValue> {
        let enc = encoding_in(&encoding)?;
        let (id, max) = self.read(|s| (s.inner.id(), s.inner.config().limits.max_message_bytes))?;
        let b = match wire_in(&bytes, max, "request")? {
            Ok(b) => b,
            Err(e) => return Ok(error_reply(id, &e, enc)),
        };
        let now = now_in(&now)?;
        Ok(self.st()?.inner.handle_bytes(&b, enc, now))
    }

    /// Everything this landlord holds at `now`, to restart it without losing a lease:
    /// `{state, resources}` where `state` is JSON text (it contains the cookie secret: store it
    /// like a key) and `resources[i]` is the resource of the lease whose `resource` is `i`.
    #[wasm_bindgen(unchecked_return_type = "{state: string, resources: unknown[]}")]
    pub fn snapshot(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let now = now_in(&now)?;
        let snap = self.read(|s| s.inner.snapshot(now))?;
        let resources = Array::new();
        let mut index = |l: SnapshotLease<Resource>| {
            let i = resources.length();
            resources.push(&l.resource.into_js());
            SnapshotLease { cookie: l.cookie, remaining: l.remaining, resource: i }
        };
        let indexed = LandlordSnapshot {
            version: snap.version,
            config: snap.config,
            taken_at: snap.taken_at,
            rng: snap.rng,
            slots: snap.slots,
            free: snap.free,
            leases: snap.leases.into_iter().map(&mut index).collect(),
            expired: snap.expired.into_iter().map(&mut index).collect(),
        };
        let state = serde_json::to_string(&indexed)
            .map_err(|e| range_error(format!("snapshot does not serialize: {e}")))?;
        let o = obj();
        set(&o, &"state".into(), &state.into());
        set(&o, &"resources".into(), &resources);
        Ok(o.into())
    }

    /// Rebuilds a landlord from `snapshot()` at `now`, with `policy` (a policy description):
    /// every lease keeps its cookie and the time it had left.
    pub fn restore(
        #[wasm_bindgen(unchecked_param_type = "{state: string, resources: unknown[]}")]
        snapshot: JsValue,
        #[wasm_bindgen(unchecked_param_type = "PolicyDescription")] policy: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Landlord, JsValue> {
        let state = get(&snapshot, "state")?
            .as_string()
            .ok_or_else(|| type_error("snapshot.state must be the JSON text from snapshot()"))?;
        let resources = array_items(&get(&snapshot, "resources")?, "snapshot.resources")?;
        let spec = policy_in(&policy)?;
        let now = now_in(&now)?;
        let indexed: LandlordSnapshot<u32> = serde_json::from_str(&state).map_err(|e| {
            lease_error(&leasehold::LeaseError::Decode(format!("bad landlord snapshot: {e}")))
        })?;
        let n = resources.len() as u32;
        let mut resolve = |l: SnapshotLease<u32>| -> Result<SnapshotLease<Resource>, JsValue> {
            if l.resource >= n {
                return Err(lease_error(&leasehold::LeaseError::Decode(format!(
                    "bad landlord snapshot: resource {} of {n}",
                    l.resource
                ))));
            }
            Ok(SnapshotLease {
                cookie: l.cookie,
                remaining: l.remaining,
                resource: Resource::Js(resources[l.resource as usize].clone()),
            })
        };
        let snap = LandlordSnapshot {
            version: indexed.version,
            config: indexed.config,
            taken_at: indexed.taken_at,
            rng: indexed.rng,
            slots: indexed.slots,
            free: indexed.free,
            leases: indexed.leases.into_iter().map(&mut resolve).collect::<Result<_, _>>()?,
            expired: indexed.expired.into_iter().map(&mut resolve).collect::<Result<_, _>>()?,
        };
        let inner = js(CoreLandlord::restore(snap, js(spec.build())?, now))?;
        Ok(Landlord::wrap(inner, spec))
    }
}
