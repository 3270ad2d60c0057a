//! `Landlord`: the grantor, with every built-in policy, expiry and the wire protocol.

use js_sys::{Array, Uint8Array};
use leasehold::policy::{AdaptiveConfig, PolicySpec};
use leasehold::{Expired, Landlord as CoreLandlord, LandlordConfig, Limits};
use wasm_bindgen::prelude::*;

use crate::convert::*;
use crate::lease::Lease;
use crate::wire::{reply_out, request_in};

/// What a lease is for: any JavaScript value, or the bytes of a grant that came over the wire.
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

fn random_seed() -> Result<[u8; 32], JsValue> {
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
        Ok(Landlord { inner: CoreLandlord::new(config, policy), policy: spec })
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
    #[wasm_bindgen(unchecked_return_type = "Grant")]
    pub fn grant(
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
    #[wasm_bindgen(unchecked_return_type = "number")]
    pub fn renew(
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
    pub fn cancel(
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
        #[wasm_bindgen(unchecked_param_type = "Array<[string, number] | {cookie: string, duration: number}>")] items: JsValue,
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
            out.push(&outcome(r, |d| ms_out(d)));
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
}
