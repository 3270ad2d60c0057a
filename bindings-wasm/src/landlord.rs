//! `Landlord`: the grantor, with every built-in policy, expiry and the wire protocol.

use js_sys::{Array, Uint8Array};
use leasehold::landlord::{LandlordSnapshot, SnapshotLease};
use leasehold::policy::{AdaptiveConfig, PolicySpec};
use leasehold::{Expired, Landlord as CoreLandlord, LandlordConfig, Limits};
use wasm_bindgen::prelude::*;

use crate::convert::*;
use crate::lease::Lease;
use crate::wire::{reply_out, request_in};

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
#[wasm_bindgen]
pub struct Landlord {
    inner: CoreLandlord<Resource>,
    policy: PolicySpec,
    /// Duration and expiration of the last `__grantFast`, read by the JavaScript wrapper.
    last_grant: (i64, i64),
    /// Result of the last `__renewFast`.
    last_renew: i64,
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
        if !options.is_object() {
            return Err(type_error("Landlord options must be an object {id, policy, ...}"));
        }
        let id = landlord_in(&get(&options, "id")?)?;
        let spec = policy_in(&get(&options, "policy")?)?;
        let seed_v = get(&options, "seed")?;
        let seed = if seed_v.is_undefined() {
            random_seed()?
        } else {
            let b = bytes_in(&seed_v, "seed")?;
            <[u8; 32]>::try_from(b.as_slice())
                .map_err(|_| range_error(format!("seed must be 32 bytes, got {}", b.len())))?
        };
        let mut config = LandlordConfig::new(id, seed);
        if let Some(g) = opt_ms(&options, "grace", "grace")? {
            if g < 0 {
                return Err(range_error(format!("grace must not be negative, got {g}")));
            }
            config = config.with_grace(g);
        }
        let budget = get(&options, "expiryBudget")?;
        if !budget.is_undefined() {
            config.expiry_budget = count_in(&budget, "expiryBudget")?;
            if config.expiry_budget == 0 {
                return Err(range_error("expiryBudget must be at least 1"));
            }
        }
        config.limits = limits_in(&get(&options, "limits")?)?;
        let policy = js(spec.build())?;
        Ok(Landlord {
            inner: CoreLandlord::new(config, policy),
            policy: spec,
            last_grant: (0, 0),
            last_renew: 0,
        })
    }

    /// This landlord's id, 16 hex digits.
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.inner.id().to_string()
    }

    /// Grace after expiry, ms.
    #[wasm_bindgen(getter, unchecked_return_type = "number")]
    pub fn grace(&self) -> JsValue {
        ms_out(self.inner.config().grace)
    }

    /// The wire limits enforced by `handleBytes`.
    #[wasm_bindgen(getter, unchecked_return_type = "Limits")]
    pub fn limits(&self) -> JsValue {
        limits_out(&self.inner.config().limits)
    }

    /// The policy's description, as given (kind in camelCase).
    #[wasm_bindgen(getter, unchecked_return_type = "PolicyDescription")]
    pub fn policy(&self) -> JsValue {
        crate::policy_out(&self.policy)
    }

    /// Leases held, including any past expiration not yet swept by `handleTimeout`.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> usize {
        self.inner.len()
    }

    /// Grants a lease on `resource` for at most `duration` ms (`ANY` = -1 lets the policy
    /// choose, `FOREVER` = Infinity). Returns `{cookie, duration, expiration}`.
    #[wasm_bindgen(js_name = grant, unchecked_return_type = "Grant")]
    pub fn grant_checked(
        &mut self,
        resource: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] duration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let d = ms_in(&duration, "duration")?;
        let now = now_in(&now)?;
        let g = js(self.inner.grant(Resource::Js(resource), d, now))?;
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
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] cookie: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] duration: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let c = cookie_in(&cookie)?;
        let d = ms_in(&duration, "duration")?;
        let now = now_in(&now)?;
        Ok(ms_out(js(self.inner.renew(c, d, now))?))
    }

    /// Cancels a lease and returns its resource.
    #[wasm_bindgen(js_name = cancel)]
    pub fn cancel_checked(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] cookie: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let c = cookie_in(&cookie)?;
        let now = now_in(&now)?;
        Ok(js(self.inner.cancel(c, now))?.into_js())
    }

    /// Renews many leases (`[[cookie, duration], ...]`); one `{ok, value | error}` per lease,
    /// in order. One failure never aborts the batch.
    #[wasm_bindgen(js_name = renewAll, unchecked_return_type = "Outcome<number>[]")]
    pub fn renew_all(
        &mut self,
        #[wasm_bindgen(
            unchecked_param_type = "Array<[string, number] | {cookie: string, duration: number}>"
        )]
        items: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Array, JsValue> {
        let arr = array_in(&items, "renewAll items")?;
        let mut list = Vec::with_capacity(arr.length() as usize);
        for item in arr.iter() {
            list.push(item_in(&item)?);
        }
        let now = now_in(&now)?;
        let out = Array::new();
        for r in self.inner.renew_all(&list, now) {
            out.push(&outcome(r, ms_out));
        }
        Ok(out)
    }

    /// Cancels many leases; one `{ok, value: resource | error}` per lease, in order.
    #[wasm_bindgen(js_name = cancelAll, unchecked_return_type = "Outcome<unknown>[]")]
    pub fn cancel_all(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string[]")] cookies: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Array, JsValue> {
        let arr = array_in(&cookies, "cancelAll cookies")?;
        let list = arr.iter().map(|c| cookie_in(&c)).collect::<Result<Vec<_>, _>>()?;
        let now = now_in(&now)?;
        let out = Array::new();
        for r in self.inner.cancel_all(&list, now) {
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
        Ok(match self.inner.get(c, now) {
            None => JsValue::UNDEFINED,
            Some((exp, r)) => {
                let o = obj();
                KEYS.with(|k| {
                    set(&o, &k.expiration, &ms_out(exp));
                    set(&o, &k.resource, &r.to_js());
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
        Ok(self.inner.get(cookie_in(&cookie)?, now_in(&now)?).is_some())
    }

    /// The holder's view of a lease still honoured at `now` (expiration on this landlord's
    /// clock), or undefined.
    pub fn lease(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] cookie: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<Option<Lease>, JsValue> {
        Ok(self.inner.lease(cookie_in(&cookie)?, now_in(&now)?).map(Lease::wrap))
    }

    /// Every lease held, `{cookie, expiration, resource}`, in no particular order.
    /// (`for (const e of landlord)` iterates the same.)
    #[wasm_bindgen(unchecked_return_type = "LeaseEntry[]")]
    pub fn entries(&self) -> Array {
        let out = Array::new();
        KEYS.with(|k| {
            for (c, exp, r) in self.inner.iter() {
                let o = obj();
                set(&o, &k.cookie, &cookie_out(c));
                set(&o, &k.expiration, &ms_out(exp));
                set(&o, &k.resource, &r.to_js());
                out.push(&o);
            }
        });
        out
    }

    // Fast paths for the package's JavaScript wrapper (api.js), which calls them when the
    // arguments already have the right JavaScript types and falls back to the checked methods
    // above otherwise (so every error message stays the same). Numbers arrive as f64 without a
    // round trip through the JS heap; the checks on their values are the same.

    /// Grant with numeric arguments; returns the cookie, leaves duration and expiration for
    /// `__lastGrantDuration`/`__lastGrantExpiration`.
    #[wasm_bindgen(js_name = __grantFast, skip_typescript)]
    pub fn grant_fast(
        &mut self,
        resource: JsValue,
        duration: f64,
        now: f64,
    ) -> Result<String, JsValue> {
        let d = ms_from_f64(duration, "duration")?;
        let now = ms_from_f64(now, "now")?;
        let g = js(self.inner.grant(Resource::Js(resource), d, now))?;
        self.last_grant = (g.duration, g.expiration);
        Ok(g.cookie.to_string())
    }

    /// Granted duration of the last `__grantFast` (NaN if past the safe range).
    #[wasm_bindgen(js_name = __lastGrantDuration, skip_typescript)]
    pub fn last_grant_duration(&self) -> f64 {
        fast_out(self.last_grant.0)
    }

    /// Expiration of the last `__grantFast` (NaN if past the safe range).
    #[wasm_bindgen(js_name = __lastGrantExpiration, skip_typescript)]
    pub fn last_grant_expiration(&self) -> f64 {
        fast_out(self.last_grant.1)
    }

    /// `[duration, expiration]` of the last `__grantFast`, exact (bigints past the safe range).
    #[wasm_bindgen(js_name = __lastGrantExact, skip_typescript)]
    pub fn last_grant_exact(&self) -> Array {
        Array::of2(&ms_out(self.last_grant.0), &ms_out(self.last_grant.1))
    }

    /// The result of the last `__renewFast`, exact.
    #[wasm_bindgen(js_name = __lastRenewExact, skip_typescript)]
    pub fn last_renew_exact(&self) -> JsValue {
        ms_out(self.last_renew)
    }

    /// Renew with a string cookie and numeric arguments (NaN if the result is past the safe range).
    #[wasm_bindgen(js_name = __renewFast, skip_typescript)]
    pub fn renew_fast(&mut self, cookie: &str, duration: f64, now: f64) -> Result<f64, JsValue> {
        let c = cookie.parse().map_err(|e: leasehold::LeaseError| range_error(e.detail()))?;
        let d = ms_from_f64(duration, "duration")?;
        let now = ms_from_f64(now, "now")?;
        self.last_renew = js(self.inner.renew(c, d, now))?;
        Ok(fast_out(self.last_renew))
    }

    /// Cancel with a string cookie and a numeric `now`.
    #[wasm_bindgen(js_name = __cancelFast, skip_typescript)]
    pub fn cancel_fast(&mut self, cookie: &str, now: f64) -> Result<JsValue, JsValue> {
        let c = cookie.parse().map_err(|e: leasehold::LeaseError| range_error(e.detail()))?;
        let now = ms_from_f64(now, "now")?;
        Ok(js(self.inner.cancel(c, now))?.into_js())
    }

    /// `pollTimeout` as a plain number for the drivers: NaN when nothing is due (a far deadline
    /// is rounded, which is harmless for a timer).
    #[wasm_bindgen(js_name = __pollTimeoutMs, skip_typescript)]
    pub fn poll_timeout_ms(&self) -> f64 {
        self.inner.poll_timeout().map(|t| t as f64).unwrap_or(f64::NAN)
    }

    /// When the host should next call `handleTimeout` (ms), or undefined if nothing will expire.
    #[wasm_bindgen(js_name = pollTimeout, unchecked_return_type = "number | undefined")]
    pub fn poll_timeout(&self) -> JsValue {
        self.inner.poll_timeout().map(ms_out).unwrap_or(JsValue::UNDEFINED)
    }

    /// Advances expiry to `now`: leases past expiration (plus grace) are removed and queued
    /// for `pollExpired`.
    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<(), JsValue> {
        self.inner.handle_timeout(now_in(&now)?);
        Ok(())
    }

    /// The next expired lease `{cookie, expiration, resource}` found by `handleTimeout`, or
    /// undefined.
    #[wasm_bindgen(js_name = pollExpired, unchecked_return_type = "LeaseEntry | undefined")]
    pub fn poll_expired(&mut self) -> JsValue {
        match self.inner.poll_expired() {
            Some(e) => expired_out(e),
            None => JsValue::UNDEFINED,
        }
    }

    /// Answers one request message (the object form of the wire protocol).
    #[wasm_bindgen(js_name = handleRequest, unchecked_return_type = "Reply")]
    pub fn handle_request(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Request")] request: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let req = request_in(&request)?;
        let now = now_in(&now)?;
        Ok(reply_out(&self.inner.handle_request(&req, now)))
    }

    /// Decodes a request message (`"binary"` by default, or `"json"`), answers it, and returns
    /// the encoded reply. Undecodable input gets an error reply with id 0; it never throws for
    /// bad bytes.
    #[wasm_bindgen(js_name = handleBytes)]
    pub fn handle_bytes(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] bytes: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Encoding | undefined")] encoding: JsValue,
    ) -> Result<Vec<u8>, JsValue> {
        let enc = encoding_in(&encoding)?;
        let b = text_or_bytes_in(&bytes, "request")?;
        let now = now_in(&now)?;
        Ok(self.inner.handle_bytes(&b, enc, now))
    }

    /// Everything this landlord holds at `now`, to restart it without losing a lease:
    /// `{state, resources}` where `state` is JSON text (it contains the cookie secret: store it
    /// like a key) and `resources[i]` is the resource of the lease whose `resource` is `i`.
    #[wasm_bindgen(unchecked_return_type = "{state: string, resources: unknown[]}")]
    pub fn snapshot(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let snap = self.inner.snapshot(now_in(&now)?);
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
        let resources = array_in(&get(&snapshot, "resources")?, "snapshot.resources")?;
        let spec = policy_in(&policy)?;
        let now = now_in(&now)?;
        let indexed: LandlordSnapshot<u32> = serde_json::from_str(&state).map_err(|e| {
            lease_error(&leasehold::LeaseError::Decode(format!("bad landlord snapshot: {e}")))
        })?;
        let n = resources.length();
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
                resource: Resource::Js(resources.get(l.resource)),
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
        Ok(Landlord { inner, policy: spec, last_grant: (0, 0), last_renew: 0 })
    }
}
