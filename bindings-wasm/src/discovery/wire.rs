//! The discovery wire protocol for JavaScript: requests, replies, events and event replies in
//! both encodings, and announcement datagrams. A message's object form is its canonical JSON
//! form parsed (`JSON.parse` of the `"json"` encoding): snake_case keys as on the wire, 64-bit
//! numbers as decimal strings, bytes as hex, groups `null` for all groups; so the shared vectors'
//! `message` objects are exactly what these functions take and give.

use js_sys::JSON;
use leasehold::discovery::wire::{
    DiscoveryReply, DiscoveryReplyBody, DiscoveryRequest, EventReply,
};
use leasehold::discovery::{Announcement, RemoteDiscoveryEvent};
use leasehold::{Encoding, LandlordId, LeaseError, Limits};
use wasm_bindgen::prelude::*;

use crate::convert::*;
use crate::landlord::limits_in;

/// The reply a service gives to a discovery request it refused before decoding (id 0).
pub fn discovery_error_reply(landlord: LandlordId, e: &LeaseError, enc: Encoding) -> Vec<u8> {
    DiscoveryReply { id: 0, landlord, body: DiscoveryReplyBody::Error(e.into()) }.encode(enc)
}

fn enc_out(bytes: Vec<u8>, enc: Encoding) -> JsValue {
    match enc {
        Encoding::Json => String::from_utf8(bytes).unwrap_or_default().into(),
        Encoding::Binary => js_sys::Uint8Array::from(&bytes[..]).into(),
    }
}

/// The object form: the JSON encoding, parsed.
fn object_out(json: Vec<u8>) -> Result<JsValue, JsValue> {
    JSON::parse(&String::from_utf8(json).unwrap_or_default())
}

/// An object form back to the JSON text the core's decoder reads (it checks every field).
fn object_in(v: &JsValue, what: &str) -> Result<Vec<u8>, JsValue> {
    if !v.is_object() {
        return Err(type_error(format!("a {what} must be an object (its JSON form)")));
    }
    let s = JSON::stringify(v).map_err(|_| {
        type_error(format!(
            "a {what} must be JSON-serialisable (64-bit numbers as strings, bytes as hex)"
        ))
    })?;
    Ok(String::from(s).into_bytes())
}

fn input(v: &JsValue, limits: &JsValue, what: &str) -> Result<(Vec<u8>, Limits), JsValue> {
    let limits = limits_in(limits)?;
    let b = js(wire_in(v, limits.max_message_bytes, what)?)?;
    Ok((b, limits))
}

macro_rules! codec {
    ($ty:ty, $what:literal, $enc:ident, $dec:ident, $enc_js:literal, $dec_js:literal, $ts:literal) => {
        #[doc = concat!("Encodes a ", $what, " (its JSON object form) as `\"binary\"` (a `Uint8Array`, default) or `\"json\"` (a string).")]
        #[wasm_bindgen(js_name = $enc_js, unchecked_return_type = "Uint8Array | string")]
        pub fn $enc(
            #[wasm_bindgen(unchecked_param_type = $ts)] message: JsValue,
            #[wasm_bindgen(unchecked_param_type = "Encoding | undefined")] encoding: JsValue,
        ) -> Result<JsValue, JsValue> {
            let enc = encoding_in(&encoding)?;
            let text = object_in(&message, $what)?;
            let m = js(<$ty>::decode(&text, Encoding::Json, &Limits::default()))?;
            Ok(enc_out(m.encode(enc), enc))
        }

        #[doc = concat!("Decodes a ", $what, " (a `Uint8Array`, or a string for JSON), enforcing `limits`, into its JSON object form. Throws `DecodeError` for bad input.")]
        #[wasm_bindgen(js_name = $dec_js, unchecked_return_type = $ts)]
        pub fn $dec(
            #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] bytes: JsValue,
            #[wasm_bindgen(unchecked_param_type = "Encoding | undefined")] encoding: JsValue,
            #[wasm_bindgen(unchecked_param_type = "Partial<Limits> | undefined")] limits: JsValue,
        ) -> Result<JsValue, JsValue> {
            let enc = encoding_in(&encoding)?;
            let (b, limits) = input(&bytes, &limits, $what)?;
            let m = js(<$ty>::decode(&b, enc, &limits))?;
            object_out(m.encode(Encoding::Json))
        }
    };
}

#[wasm_bindgen(typescript_custom_section)]
const TS_DISCOVERY_WIRE: &'static str = r#"
/** A discovery request in its JSON object form: `{v: 1, id: "7", body: {op: "register", groups, locators, handback, duration}}` etc. */
export type DiscoveryRequestMessage = { v: 1; id: string | number; body: { op: string; [k: string]: unknown } };
/** A discovery reply in its JSON object form: `{v: 1, id, landlord, body: {op: "registered", ...}}`. */
export type DiscoveryReplyMessage = { v: 1; id: string; landlord: string; body: { op: string; [k: string]: unknown } };
/** A discovery event in its JSON object form (`event_id`, `source`, `sequence`, `handback` hex, `discarded`, `registrars`). */
export type DiscoveryEventMessage = { v: 1; event_id: string; source: { service: string; object: string }; sequence: string; handback: string; discarded: boolean; registrars: Registrar[] };
/** A listener's answer to an event: `{v: 1, event_id, sequence, body: {op: "received"} | {op: "unknown_event"} | {op: "error", code, message}}`. */
export type EventReplyMessage = { v: 1; event_id: string | number; sequence: string | number; body: { op: "received" } | { op: "unknown_event" } | { op: "error"; code: number; message: string } };
"#;

codec!(
    DiscoveryRequest,
    "discovery request",
    encode_discovery_request,
    decode_discovery_request,
    "encodeDiscoveryRequest",
    "decodeDiscoveryRequest",
    "DiscoveryRequestMessage"
);
codec!(
    DiscoveryReply,
    "discovery reply",
    encode_discovery_reply,
    decode_discovery_reply,
    "encodeDiscoveryReply",
    "decodeDiscoveryReply",
    "DiscoveryReplyMessage"
);
codec!(
    RemoteDiscoveryEvent,
    "discovery event",
    encode_discovery_event,
    decode_discovery_event,
    "encodeDiscoveryEvent",
    "decodeDiscoveryEvent",
    "DiscoveryEventMessage"
);
codec!(
    EventReply,
    "event reply",
    encode_event_reply,
    decode_event_reply,
    "encodeEventReply",
    "decodeEventReply",
    "EventReplyMessage"
);

/// Encodes an announcement as the datagram registrars send (see the vectors README).
#[wasm_bindgen(js_name = encodeAnnouncement)]
pub fn encode_announcement(
    #[wasm_bindgen(unchecked_param_type = "Announcement")] announcement: JsValue,
) -> Result<Vec<u8>, JsValue> {
    let a = super::announcement_in(&announcement)?;
    js(a.encode())
}

/// Decodes an announcement datagram. Throws `DecodeError` for bad input.
#[wasm_bindgen(js_name = decodeAnnouncement, unchecked_return_type = "Announcement")]
pub fn decode_announcement(bytes: &[u8]) -> Result<JsValue, JsValue> {
    Ok(super::announcement_out(&js(Announcement::decode(bytes))?))
}

/// A discovery event in the camelCase form `DiscoveryService.pollEvent` gives (handback as
/// bytes), from the encoded event a listener received.
#[wasm_bindgen(js_name = discoveryEventFromBytes, unchecked_return_type = "DiscoveryEvent")]
pub fn discovery_event_from_bytes(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] bytes: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Encoding | undefined")] encoding: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Partial<Limits> | undefined")] limits: JsValue,
) -> Result<JsValue, JsValue> {
    let enc = encoding_in(&encoding)?;
    let (b, limits) = input(&bytes, &limits, "discovery event")?;
    Ok(super::event_out(&js(RemoteDiscoveryEvent::decode(&b, enc, &limits))?))
}
