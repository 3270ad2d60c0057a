//! The lookup discovery service (Jini `LookupDiscoveryService`, seed 003 LD): its class on the
//! generic layer (`machine_class!`: every call as data, timer, probes, events, snapshot, store)
//! and its announcement datagram. Every rule is the core's `leasehold::discovery`;
//! `js/discovery.js` names the calls and runs the driver.

use leasehold::discovery::{Announcement, DiscoveryService as CoreService};
use wasm_bindgen::prelude::*;

use crate::convert::js;
use crate::data::{from_js, to_js};
use crate::machine::machine_class;

machine_class!(DiscoveryService, CoreService, "DiscoveryService");

/// Encodes an announcement (`{registrar, groups, locator, sequence, ttl}`) as the datagram
/// registrars send; a bad one throws `InvalidArgumentError`.
#[wasm_bindgen(js_name = encodeAnnouncement)]
pub fn encode_announcement(
    #[wasm_bindgen(unchecked_param_type = "import('./discovery.js').Announcement")]
    announcement: JsValue,
) -> Result<Vec<u8>, JsValue> {
    js(from_js::<Announcement>(&announcement)?.encode())
}

/// Decodes an announcement datagram; bad input throws `DecodeError`.
#[wasm_bindgen(js_name = decodeAnnouncement, unchecked_return_type = "import('./discovery.js').Announcement")]
pub fn decode_announcement(bytes: &[u8]) -> Result<JsValue, JsValue> {
    to_js(&js(Announcement::decode(bytes))?)
}
