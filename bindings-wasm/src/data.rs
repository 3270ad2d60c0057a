//! Data across the boundary, written once: any core value with a serde description to
//! JavaScript (serde-wasm-bindgen) and back (JSON text, serde_json), and any wire message between its encodings and its
//! JSON object form.
//!
//! The core's serde description has Rust (snake_case) field names and no attribute that depends
//! on a feature or a target (see `docs/bindings.md`). This module gives JavaScript its own case
//! at run time (`src/data.js`, one call per value): a struct comes out of serde-wasm-bindgen as
//! a plain object, and its keys are renamed to camelCase; a plain object going in has its keys
//! renamed back as it is written as JSON text (bytes as arrays of numbers, BigInts exact) (keys whose value
//! is `undefined` are dropped: absent). Maps come out as `Map`s and are never renamed (their
//! keys are data). Numbers stay exact: 64-bit integers come out as numbers when they are safe
//! integers, as `BigInt`s otherwise, and `i64::MAX` (`FOREVER`) as `Infinity`; going in,
//! `Infinity` is `FOREVER`. Enum tags (`op`, `kind`) are values and keep the core's snake_case
//! (a `kind` given in camelCase is read as its snake_case name).

use js_sys::{Uint8Array, JSON};
use leasehold::machine::Message;
use leasehold::{Encoding, LeaseError, Limits};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::convert::{encoding_in, js, lease_error, type_error, wire_in};
use crate::landlord::limits_in;

const OUT: serde_wasm_bindgen::Serializer = serde_wasm_bindgen::Serializer::new()
    .serialize_large_number_types_as_bigints(true)
    .serialize_missing_as_null(true);

#[wasm_bindgen(module = "/src/data.js")]
extern "C" {
    /// `v` as the core's JSON text (the case walk, in JavaScript: see `src/data.js`).
    #[wasm_bindgen(catch, js_name = dataIn)]
    fn data_in(v: &JsValue) -> Result<String, JsValue>;
    /// What serde-wasm-bindgen made, in JavaScript's case.
    #[wasm_bindgen(js_name = dataOut)]
    fn data_out(v: JsValue) -> JsValue;
}

/// `value` as JavaScript data.
pub fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    let raw = value.serialize(&OUT).map_err(|e| type_error(e.to_string()))?;
    Ok(data_out(raw))
}

/// A core value from JavaScript data: a wrong type, a missing or unknown field is an
/// `ArgumentTypeError`; a value the core refuses is its error (`DecodeError` for an id that does
/// not parse), any other bad value an `InvalidArgumentError`.
///
/// The value crosses as JSON text written by `src/data.js` (one call, no boundary crossing per
/// key or probe), read here by serde_json: serde buffers an `op`-tagged input in Rust.
pub fn from_js<T: DeserializeOwned>(v: &JsValue) -> Result<T, JsValue> {
    let text = data_in(v).map_err(|e| {
        let why = e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message()));
        type_error(why.unwrap_or_else(|| "a value JSON cannot carry".into()))
    })?;
    serde_json::from_str(&text).map_err(|e| {
        let full = e.to_string();
        // serde_json's position is in the text we wrote, not in anything the caller wrote.
        let text = match e.line() {
            0 => &full[..],
            _ => full.rsplit_once(" at line ").map_or(&full[..], |(t, _)| t),
        };
        const TYPE: [&str; 6] = [
            "invalid type",
            "missing field",
            "unknown field",
            "unknown variant",
            "expected",
            "duplicate field",
        ];
        if TYPE.iter().any(|t| text.starts_with(t)) {
            type_error(text)
        } else if let Some(why) = text.strip_prefix("decode error: ") {
            lease_error(&LeaseError::Decode(why.into()))
        } else {
            lease_error(&LeaseError::InvalidArgument(text.into()))
        }
    })
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
        "SetRequest" => message::<leasehold::service::wire::SetRequest>(data, from, to, limits),
        "SetReply" => message::<leasehold::service::wire::SetReply>(data, from, to, limits),
        "SetEvent" => message::<leasehold::service::wire::SetEventMessage>(data, from, to, limits),
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
