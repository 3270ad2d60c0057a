//! Data across the boundary, written once: any core value with a serde description to
//! JavaScript and back (serde-wasm-bindgen), and any wire message between its encodings and its
//! JSON object form.
//!
//! The core's serde description has Rust (snake_case) field names and no attribute that depends
//! on a feature or a target (see `docs/bindings.md`). This module gives JavaScript its own case
//! at run time: a struct comes out of serde-wasm-bindgen as a plain object, and its keys are
//! renamed to camelCase; a plain object going in has its keys renamed back (keys whose value
//! is `undefined` are dropped: absent). Maps come out as `Map`s and are never renamed (their
//! keys are data). Numbers stay exact: 64-bit integers come out as numbers when they are safe
//! integers, as `BigInt`s otherwise, and `i64::MAX` (`FOREVER`) as `Infinity`; going in,
//! `Infinity` is `FOREVER`. Enum tags (`op`, `kind`) are values and keep the core's snake_case
//! (a `kind` given in camelCase is read as its snake_case name).

use js_sys::{Array, BigInt, Map, Object, Reflect, Uint8Array, JSON};
use leasehold::machine::Message;
use leasehold::{Encoding, LeaseError, Limits};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::convert::{encoding_in, js, lease_error, type_error, wire_in, MAX_SAFE};
use crate::landlord::limits_in;

const OUT: serde_wasm_bindgen::Serializer = serde_wasm_bindgen::Serializer::new()
    .serialize_large_number_types_as_bigints(true)
    .serialize_missing_as_null(true);

/// `value` as JavaScript data.
pub fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    let raw = value.serialize(&OUT).map_err(|e| type_error(e.to_string()))?;
    Ok(outward(raw))
}

/// A core value from JavaScript data: a wrong type, a missing or unknown field is an
/// `ArgumentTypeError`; a value the core refuses is its error (`DecodeError` for an id that does
/// not parse), any other bad value an `InvalidArgumentError`.
pub fn from_js<T: DeserializeOwned>(v: &JsValue) -> Result<T, JsValue> {
    serde_wasm_bindgen::from_value(inward(v)).map_err(|e| {
        let text = e.to_string();
        let text = text.strip_prefix("Error: ").unwrap_or(&text);
        const TYPE: [&str; 5] =
            ["invalid type", "missing field", "unknown field", "unknown variant", "expected"];
        if TYPE.iter().any(|t| text.starts_with(t)) {
            type_error(text)
        } else if let Some(why) = text.strip_prefix("decode error: ") {
            lease_error(&LeaseError::Decode(why.into()))
        } else {
            lease_error(&LeaseError::InvalidArgument(text.into()))
        }
    })
}

fn rename(key: &str, to_camel: bool) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    let mut up = false;
    for c in key.chars() {
        if to_camel && c == '_' {
            up = true;
        } else if to_camel && up {
            out.extend(c.to_uppercase());
            up = false;
        } else if !to_camel && c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn is_plain(v: &JsValue) -> bool {
    v.is_object()
        && !Array::is_array(v)
        && !v.is_instance_of::<Map>()
        && !v.is_instance_of::<Uint8Array>()
        && !v.is_instance_of::<js_sys::ArrayBuffer>()
        && !v.is_function()
}

fn rekey(v: &JsValue, to_camel: bool, value: fn(JsValue) -> JsValue) -> JsValue {
    let o = Object::new();
    for entry in Object::entries(v.unchecked_ref()).iter() {
        let pair: Array = entry.unchecked_into();
        let (k, x) = (pair.get(0), pair.get(1));
        if x.is_undefined() {
            continue;
        }
        let k = rename(&k.as_string().unwrap_or_default(), to_camel);
        // A tag written in JavaScript's case (`kind: "resourceAware"`) is read as the core's.
        let x = match x.as_string() {
            Some(tag) if !to_camel && k == "kind" => rename(&tag, false).into(),
            _ => x,
        };
        let _ = Reflect::set(&o, &k.into(), &value(x));
    }
    o.into()
}

fn outward(v: JsValue) -> JsValue {
    if v.is_bigint() {
        let b: BigInt = v.clone().unchecked_into();
        return match i64::try_from(b) {
            Ok(i64::MAX) => f64::INFINITY.into(),
            Ok(x) if (x as f64).abs() <= MAX_SAFE => (x as f64).into(),
            _ => v,
        };
    }
    if Array::is_array(&v) {
        return Array::from(&v).iter().map(outward).collect::<Array>().into();
    }
    if is_plain(&v) {
        return rekey(&v, true, outward);
    }
    v
}

fn inward(v: &JsValue) -> JsValue {
    if v.as_f64() == Some(f64::INFINITY) {
        return BigInt::from(i64::MAX).into();
    }
    if Array::is_array(v) {
        return Array::from(v).iter().map(|x| inward(&x)).collect::<Array>().into();
    }
    if is_plain(v) {
        return rekey(v, false, |x| inward(&x));
    }
    v.clone()
}

/// A message in one form read and written in another: bytes in `from` (or, when `from` is
/// None, its JSON object form) to bytes in `to` (None: the JSON object form), checked against
/// `limits`.
fn message<M: Message>(
    data: &JsValue,
    from: Option<Encoding>,
    to: Option<Encoding>,
    limits: &Limits,
) -> Result<JsValue, JsValue> {
    let bytes = match from {
        Some(_) => js(wire_in(data, limits.max_message_bytes, M::NAME)?)?,
        None => {
            if !data.is_object() {
                return Err(type_error(format!("a {} must be an object (its JSON form)", M::NAME)));
            }
            let text = JSON::stringify(data).map_err(|_| {
                type_error(format!("a {} must be JSON (64-bit numbers as strings)", M::NAME))
            })?;
            String::from(text).into_bytes()
        }
    };
    let m = js(M::decode(&bytes, from.unwrap_or(Encoding::Json), limits))?;
    match to {
        Some(Encoding::Binary) => Ok(Uint8Array::from(&m.encode(Encoding::Binary)[..]).into()),
        Some(Encoding::Json) => {
            Ok(String::from_utf8(m.encode(Encoding::Json)).unwrap_or_default().into())
        }
        None => JSON::parse(&String::from_utf8(m.encode(Encoding::Json)).unwrap_or_default()),
    }
}

fn dispatch(
    kind: &str,
    data: &JsValue,
    from: Option<Encoding>,
    to: Option<Encoding>,
    limits: &Limits,
) -> Result<JsValue, JsValue> {
    use leasehold::discovery::wire as dw;
    match kind {
        "DiscoveryRequest" => message::<dw::DiscoveryRequest>(data, from, to, limits),
        "DiscoveryReply" => message::<dw::DiscoveryReply>(data, from, to, limits),
        "DiscoveryEvent" => message::<leasehold::RemoteDiscoveryEvent>(data, from, to, limits),
        "EventReply" => message::<dw::EventReply>(data, from, to, limits),
        "CoordRequest" => message::<leasehold::coord::CoordRequest>(data, from, to, limits),
        "CoordReply" => message::<leasehold::coord::CoordReply>(data, from, to, limits),
        other => Err(type_error(format!("no message kind {other:?}"))),
    }
}

/// Encodes message `kind` from its JSON object form (`"binary"`, the default: a `Uint8Array`;
/// `"json"`: a string). The package exports one function per kind (`encodeDiscoveryRequest`...).
#[wasm_bindgen(js_name = __encodeMessage, skip_typescript)]
pub fn encode_message(kind: &str, message: JsValue, encoding: JsValue) -> Result<JsValue, JsValue> {
    let to = encoding_in(&encoding)?;
    dispatch(kind, &message, None, Some(to), &Limits::default())
}

/// Decodes message `kind` (bytes, or a string for JSON), enforcing `limits`, into its JSON
/// object form; bad input throws `DecodeError`.
#[wasm_bindgen(js_name = __decodeMessage, skip_typescript)]
pub fn decode_message(
    kind: &str,
    bytes: JsValue,
    encoding: JsValue,
    limits: JsValue,
) -> Result<JsValue, JsValue> {
    let from = encoding_in(&encoding)?;
    dispatch(kind, &bytes, Some(from), None, &limits_in(&limits)?)
}
