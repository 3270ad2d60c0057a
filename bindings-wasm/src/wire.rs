//! The wire protocol in JavaScript: object forms of requests and replies, and their encodings.
//!
//! The object form mirrors the JSON form: `{id, body: {op, ...}}` for a request and
//! `{id, landlord, body: {op, ...}}` for a reply, with op names as on the wire (`grant`,
//! `renew`, `cancel`, `renew_all`, `cancel_all`; `granted`, `renewed`, `cancelled`,
//! `renewed_all`, `cancelled_all`, `error`), bytes as `Uint8Array`, durations as numbers
//! (`Infinity` = FOREVER), errors as `{code, message}` and batch results as in JSON:
//! `{duration}` or `{error}` (renewed_all), `{}` or `{error}` (cancelled_all). Ids and times
//! are numbers, or bigints past the safe range.

use js_sys::{Array, Object, Uint8Array};
use leasehold::wire::{Outcome, WireError};
use leasehold::{Encoding, Limits, Reply, ReplyBody, Request, RequestBody};
use wasm_bindgen::prelude::*;

use crate::convert::*;
use crate::landlord::limits_in;

/// A message id from JavaScript: a safe non-negative integer or a bigint up to 2^64-1.
pub fn id_in(v: &JsValue) -> Result<u64, JsValue> {
    if v.is_bigint() {
        let b: js_sys::BigInt = v.clone().unchecked_into();
        return u64::try_from(b)
            .map_err(|_| range_error("message id must fit in 64 unsigned bits"));
    }
    u64_in(v, "message id")
}

/// A message id for JavaScript: a number when safe, else a bigint.
pub fn id_out(id: u64) -> JsValue {
    if id as f64 <= MAX_SAFE {
        JsValue::from(id as f64)
    } else {
        js_sys::BigInt::from(id).into()
    }
}

fn op_of(body: &JsValue, what: &str) -> Result<String, JsValue> {
    get(body, "op")?
        .as_string()
        .ok_or_else(|| type_error(format!("{what} body needs an op string")))
}

fn body_of(msg: &JsValue, what: &str) -> Result<JsValue, JsValue> {
    if !msg.is_object() {
        return Err(type_error(format!("{what} must be an object {{id, body: {{op, ...}}}}")));
    }
    let b = get(msg, "body")?;
    if !b.is_object() {
        return Err(type_error(format!("{what} needs a body object {{op, ...}}")));
    }
    Ok(b)
}

/// A request from its object form.
pub fn request_in(v: &JsValue) -> Result<Request, JsValue> {
    let b = body_of(v, "request")?;
    let id = id_in(&get(v, "id")?)?;
    let body = match op_of(&b, "request")?.as_str() {
        "grant" => RequestBody::Grant {
            resource: text_or_bytes_in(&get(&b, "resource")?, "grant resource")?,
            duration: ms_in(&get(&b, "duration")?, "duration")?,
        },
        "renew" => RequestBody::Renew {
            cookie: cookie_in(&get(&b, "cookie")?)?,
            duration: ms_in(&get(&b, "duration")?, "duration")?,
        },
        "cancel" => RequestBody::Cancel { cookie: cookie_in(&get(&b, "cookie")?)? },
        "renew_all" => {
            let arr = array_items(&get(&b, "items")?, "renew_all items")?;
            let mut items = Vec::with_capacity(arr.len());
            for it in &arr {
                items.push(item_in(it)?);
            }
            RequestBody::RenewAll { items }
        }
        "cancel_all" => {
            let arr = array_items(&get(&b, "cookies")?, "cancel_all cookies")?;
            RequestBody::CancelAll { cookies: arr.iter().map(cookie_in).collect::<Result<_, _>>()? }
        }
        op => {
            return Err(range_error(format!(
                "unknown request op {op:?} (grant, renew, cancel, renew_all, cancel_all)"
            )))
        }
    };
    Ok(Request { id, body })
}

/// A request's object form.
pub fn request_out(r: &Request) -> JsValue {
    let b = obj();
    let op = |o: &Object, s: &str| set(o, &"op".into(), &s.into());
    match &r.body {
        RequestBody::Grant { resource, duration } => {
            op(&b, "grant");
            set(&b, &"resource".into(), &Uint8Array::from(&resource[..]));
            set(&b, &"duration".into(), &ms_out(*duration));
        }
        RequestBody::Renew { cookie, duration } => {
            op(&b, "renew");
            set(&b, &"cookie".into(), &cookie_out(*cookie));
            set(&b, &"duration".into(), &ms_out(*duration));
        }
        RequestBody::Cancel { cookie } => {
            op(&b, "cancel");
            set(&b, &"cookie".into(), &cookie_out(*cookie));
        }
        RequestBody::RenewAll { items } => {
            op(&b, "renew_all");
            let arr = Array::new();
            KEYS.with(|k| {
                for (c, d) in items {
                    let it = obj();
                    set(&it, &k.cookie, &cookie_out(*c));
                    set(&it, &k.duration, &ms_out(*d));
                    arr.push(&it);
                }
            });
            set(&b, &"items".into(), &arr);
        }
        RequestBody::CancelAll { cookies } => {
            op(&b, "cancel_all");
            let arr = Array::new();
            for c in cookies {
                arr.push(&cookie_out(*c));
            }
            set(&b, &"cookies".into(), &arr);
        }
    }
    let o = obj();
    set(&o, &"id".into(), &id_out(r.id));
    set(&o, &"body".into(), &b);
    o.into()
}

fn wire_error_out(e: &WireError) -> JsValue {
    let o = obj();
    set(&o, &"code".into(), &JsValue::from(e.code));
    set(&o, &"message".into(), &e.message.as_str().into());
    o.into()
}

fn wire_error_in(v: &JsValue) -> Result<WireError, JsValue> {
    let code = get(v, "code")?
        .as_f64()
        .filter(|c| c.fract() == 0.0 && c.abs() <= i32::MAX as f64)
        .ok_or_else(|| type_error("an error needs an integer code"))? as i32;
    let m = get(v, "message")?;
    let message = if m.is_undefined() {
        String::new()
    } else {
        m.as_string().ok_or_else(|| type_error("an error message must be a string"))?
    };
    Ok(WireError { code, message })
}

fn outcome_out<T>(o: &Outcome<T>, f: impl FnOnce(&T) -> Option<JsValue>) -> JsValue {
    let r = obj();
    KEYS.with(|k| match o {
        Outcome::Ok(t) => {
            if let Some(v) = f(t) {
                set(&r, &k.duration, &v);
            }
        }
        Outcome::Err(e) => set(&r, &k.error, &wire_error_out(e)),
    });
    r.into()
}

fn outcome_in<T>(
    v: &JsValue,
    f: impl FnOnce(&JsValue) -> Result<T, JsValue>,
) -> Result<Outcome<T>, JsValue> {
    let e = get(v, "error")?;
    if e.is_undefined() {
        Ok(Outcome::Ok(f(&get(v, "duration")?)?))
    } else {
        Ok(Outcome::Err(wire_error_in(&e)?))
    }
}

/// A reply's object form.
pub fn reply_out(r: &Reply) -> JsValue {
    let b = obj();
    let op = |o: &Object, s: &str| set(o, &"op".into(), &s.into());
    match &r.body {
        ReplyBody::Granted { cookie, duration } => {
            op(&b, "granted");
            set(&b, &"cookie".into(), &cookie_out(*cookie));
            set(&b, &"duration".into(), &ms_out(*duration));
        }
        ReplyBody::Renewed { duration } => {
            op(&b, "renewed");
            set(&b, &"duration".into(), &ms_out(*duration));
        }
        ReplyBody::Cancelled => op(&b, "cancelled"),
        ReplyBody::RenewedAll { results } => {
            op(&b, "renewed_all");
            let arr = Array::new();
            for o in results {
                arr.push(&outcome_out(o, |d| Some(ms_out(*d))));
            }
            set(&b, &"results".into(), &arr);
        }
        ReplyBody::CancelledAll { results } => {
            op(&b, "cancelled_all");
            let arr = Array::new();
            for o in results {
                arr.push(&outcome_out(o, |_| None));
            }
            set(&b, &"results".into(), &arr);
        }
        ReplyBody::Error(e) => {
            op(&b, "error");
            set(&b, &"code".into(), &JsValue::from(e.code));
            set(&b, &"message".into(), &e.message.as_str().into());
        }
    }
    let o = obj();
    set(&o, &"id".into(), &id_out(r.id));
    set(&o, &"landlord".into(), &r.landlord.to_string().into());
    set(&o, &"body".into(), &b);
    o.into()
}

/// A reply from its object form.
pub fn reply_in(v: &JsValue) -> Result<Reply, JsValue> {
    let b = body_of(v, "reply")?;
    let id = id_in(&get(v, "id")?)?;
    let landlord = landlord_in(&get(v, "landlord")?)?;
    let body = match op_of(&b, "reply")?.as_str() {
        "granted" => ReplyBody::Granted {
            cookie: cookie_in(&get(&b, "cookie")?)?,
            duration: ms_in(&get(&b, "duration")?, "duration")?,
        },
        "renewed" => ReplyBody::Renewed { duration: ms_in(&get(&b, "duration")?, "duration")? },
        "cancelled" => ReplyBody::Cancelled,
        "renewed_all" => ReplyBody::RenewedAll {
            results: array_items(&get(&b, "results")?, "renewed_all results")?
                .iter()
                .map(|o| outcome_in(o, |d| ms_in(d, "duration")))
                .collect::<Result<_, _>>()?,
        },
        "cancelled_all" => ReplyBody::CancelledAll {
            results: array_items(&get(&b, "results")?, "cancelled_all results")?
                .iter()
                .map(|o| outcome_in(o, |_| Ok(())))
                .collect::<Result<_, _>>()?,
        },
        "error" => ReplyBody::Error(wire_error_in(&b)?),
        op => {
            return Err(range_error(format!(
                "unknown reply op {op:?} (granted, renewed, cancelled, renewed_all, cancelled_all, error)"
            )))
        }
    };
    Ok(Reply { id, landlord, body })
}

fn enc_out(bytes: Vec<u8>, enc: Encoding) -> JsValue {
    match enc {
        // JSON is UTF-8 text written by core; hand it over as a string.
        Encoding::Json => String::from_utf8(bytes).unwrap_or_default().into(),
        Encoding::Binary => Uint8Array::from(&bytes[..]).into(),
    }
}

/// Encodes a request (object form) as `"binary"` (a `Uint8Array`, default) or `"json"` (a string).
#[wasm_bindgen(js_name = encodeRequest, unchecked_return_type = "Uint8Array | string")]
pub fn encode_request(
    #[wasm_bindgen(unchecked_param_type = "Request")] request: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Encoding | undefined")] encoding: JsValue,
) -> Result<JsValue, JsValue> {
    let enc = encoding_in(&encoding)?;
    Ok(enc_out(request_in(&request)?.encode(enc), enc))
}

/// Decodes a request (`Uint8Array`, or a string for JSON), enforcing `limits`.
/// Throws `DecodeError` for malformed, truncated, oversized or foreign input.
#[wasm_bindgen(js_name = decodeRequest, unchecked_return_type = "Request")]
pub fn decode_request(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] bytes: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Encoding | undefined")] encoding: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Partial<Limits> | undefined")] limits: JsValue,
) -> Result<JsValue, JsValue> {
    let enc = encoding_in(&encoding)?;
    let limits: Limits = limits_in(&limits)?;
    let b = js(wire_in(&bytes, limits.max_message_bytes, "request")?)?;
    Ok(request_out(&js(Request::decode(&b, enc, &limits))?))
}

/// Encodes a reply (object form) as `"binary"` (default) or `"json"`.
#[wasm_bindgen(js_name = encodeReply, unchecked_return_type = "Uint8Array | string")]
pub fn encode_reply(
    #[wasm_bindgen(unchecked_param_type = "Reply")] reply: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Encoding | undefined")] encoding: JsValue,
) -> Result<JsValue, JsValue> {
    let enc = encoding_in(&encoding)?;
    Ok(enc_out(reply_in(&reply)?.encode(enc), enc))
}

/// Decodes a reply, enforcing `limits`. Throws `DecodeError` for bad input.
#[wasm_bindgen(js_name = decodeReply, unchecked_return_type = "Reply")]
pub fn decode_reply(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] bytes: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Encoding | undefined")] encoding: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Partial<Limits> | undefined")] limits: JsValue,
) -> Result<JsValue, JsValue> {
    let enc = encoding_in(&encoding)?;
    let limits: Limits = limits_in(&limits)?;
    let b = js(wire_in(&bytes, limits.max_message_bytes, "reply")?)?;
    Ok(reply_out(&js(Reply::decode(&b, enc, &limits))?))
}

/// The error object for a wire error `{code, message}` (an `Error` subclass with its `code`;
/// unknown codes read as `DecodeError`).
#[wasm_bindgen(js_name = errorFromWire)]
pub fn error_from_wire(
    #[wasm_bindgen(unchecked_param_type = "WireError")] error: JsValue,
) -> Result<JsValue, JsValue> {
    Ok(lease_error(&wire_error_in(&error)?.to_error()))
}

/// The reply a landlord gives to bytes that do not decode (id 0, the error), as core's
/// `handle_bytes` builds it; used when the binding refuses a message before copying it.
pub fn error_reply(
    landlord: leasehold::LandlordId,
    e: &leasehold::LeaseError,
    enc: Encoding,
) -> Vec<u8> {
    Reply { id: 0, landlord, body: ReplyBody::Error(WireError::from(e)) }.encode(enc)
}
