//! What a binding needs of a sans-I/O part, written once: the [`Machine`] trait (settings in,
//! every call as one data enum, the timer, transmissions and events out, snapshot and
//! restore), the [`Message`] trait (a wire message's two encodings), and the serde helpers of
//! the *data form* ([`bytes`], [`landlord_id`]).
//!
//! # Data form and wire form
//!
//! Every value that crosses a binding has one serde description here in core. Two forms come
//! out of it, and they never mix:
//!
//! - The **wire form** of a message (requests, replies, event messages) is its canonical JSON
//!   encoding: a protocol, byte for byte the same in every runtime, checked by the shared
//!   vectors. A binding hands a message to its users as that JSON parsed (an object in JS, a
//!   dict in Python) and reads it back by encoding it as JSON text and decoding it here
//!   ([`Message::decode`]), so every check of the protocol applies.
//! - The **data form** of everything else (settings, the inputs of [`Machine::handle`] and what
//!   it answers, transmissions, events as handed out) is the natural serde form of the Rust
//!   type: field names as in Rust (snake_case), integers as integers, bytes as bytes, ids and
//!   cookies as their hex text, locators as `"host:port"`, durations in ms with
//!   [`crate::FOREVER`] as `i64::MAX`. A binding converts it with its ecosystem's converter
//!   (pythonize, serde-wasm-bindgen); the JavaScript one renames field names to camelCase at
//!   run time (see `docs/bindings.md`): nothing here depends on a cargo feature or a target.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::Result;
use crate::time::Millis;
use crate::wire::{Encoding, Limits};

/// A sans-I/O part as a binding drives it: made from settings, fed every host call as one
/// input value, asked for its timer, transmissions and events, snapshotted and restored.
///
/// A binding implements each method of this trait once, generically, for its runtime; a new
/// part then costs its binding only the names of its calls (see `docs/bindings.md`).
pub trait Machine: Sized {
    /// The part's name, as bindings show it (`"DiscoveryService"`).
    const NAME: &'static str;
    /// Its settings, data form.
    type Options: DeserializeOwned + Send;
    /// Every call a host makes besides the timer and polling: one enum, tagged by `op`.
    type Input: DeserializeOwned + Send;
    /// What an input answers.
    type Output: Serialize + Send;
    /// What [`Machine::poll_transmit`] hands out.
    type Transmit: Serialize + Send;
    /// What [`Machine::poll_event`] hands out.
    type Event: Serialize + Send;

    /// A new part. `seed` is the entropy for its cookies when the options give none.
    fn create(options: Self::Options, seed: [u8; 32]) -> Result<Self>;
    /// A part rebuilt from [`Machine::snapshot`] text at `now`, with `options` (its id must be
    /// the snapshot's).
    fn restore(options: Self::Options, snapshot: &str, now: Millis) -> Result<Self>;
    /// Everything the part holds at `now`, as JSON text (it holds secrets: keep it like a key).
    fn snapshot(&mut self, now: Millis) -> String;
    /// Carries out one call.
    fn handle(&mut self, input: Self::Input, now: Millis) -> Result<Self::Output>;
    /// Whether the answer to `input` leaves the process (a reply, a registration): a durable
    /// part answers it only once the records behind it are durable. Feeding in what the host
    /// heard (an announcement, a delivery report) answers nothing that needs to wait.
    fn leaves(input: &Self::Input) -> bool {
        let _ = input;
        true
    }
    /// When the host should call [`Machine::handle_timeout`] next.
    fn poll_timeout(&self) -> Option<Millis>;
    /// Advances the part to `now`.
    fn handle_timeout(&mut self, now: Millis);
    /// The next thing the host must send (a request, a probe).
    fn poll_transmit(&mut self, now: Millis) -> Option<Self::Transmit>;
    /// The next event the host must deliver.
    fn poll_event(&mut self, now: Millis) -> Option<Self::Event>;
}

/// A part kept in a store (the embedded file store, a host's own): how a binding's generic
/// durable layer builds it and applies settings again on every open.
pub trait Stored: Machine + crate::journal::Journaled {
    /// The part from its snapshot bytes, or (`None`) a new one with its journal on.
    fn from_store(snapshot: Option<&[u8]>, options: Self::Options, seed: [u8; 32]) -> Result<Self>;
    /// Applies `options` again after recovery (journaled): the id and seed stay the store's.
    fn reconfigure(&mut self, options: Self::Options) -> Result<()>;
    /// What it holds, by name (`"registrations"`), as recovery reports count it.
    const HOLDS: &'static str;
    /// How many of them it holds.
    fn held(&self) -> usize;
}

/// A wire message: its canonical JSON and compact binary encodings, both checked on decode.
pub trait Message: Sized {
    /// The message's name, as bindings show it (`"DiscoveryRequest"`).
    const NAME: &'static str;
    /// Encodes the message.
    fn encode(&self, encoding: Encoding) -> Vec<u8>;
    /// Decodes and checks a message against `limits`; any failure is a decode error.
    fn decode(bytes: &[u8], encoding: Encoding, limits: &Limits) -> Result<Self>;
}

macro_rules! message {
    ($t:ty, $name:literal) => {
        impl Message for $t {
            const NAME: &'static str = $name;
            fn encode(&self, encoding: Encoding) -> Vec<u8> {
                <$t>::encode(self, encoding)
            }
            fn decode(bytes: &[u8], encoding: Encoding, limits: &Limits) -> Result<Self> {
                <$t>::decode(bytes, encoding, limits)
            }
        }
    };
}

message!(crate::wire::Request, "Request");
message!(crate::wire::Reply, "Reply");
message!(crate::discovery::wire::DiscoveryRequest, "DiscoveryRequest");
message!(crate::discovery::wire::DiscoveryReply, "DiscoveryReply");
message!(crate::discovery::RemoteDiscoveryEvent, "DiscoveryEvent");
message!(crate::discovery::wire::EventReply, "EventReply");
message!(crate::coord::wire::CoordRequest, "CoordRequest");
message!(crate::coord::wire::CoordReply, "CoordReply");

message!(crate::service::wire::SetRequest, "SetRequest");
message!(crate::service::wire::SetReply, "SetReply");
message!(crate::service::wire::SetEventMessage, "SetEvent");

/// Limits in settings: each one given replaces the default.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(optional_fields))]
#[derive(Debug, Clone, Copy, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsOptions {
    /// [`Limits::max_message_bytes`].
    pub max_message_bytes: Option<usize>,
    /// [`Limits::max_batch`].
    pub max_batch: Option<usize>,
    /// [`Limits::max_resource_bytes`].
    pub max_resource_bytes: Option<usize>,
}

impl LimitsOptions {
    /// `limits` with the values given here.
    pub fn apply(self, limits: Limits) -> Limits {
        Limits {
            max_message_bytes: self.max_message_bytes.unwrap_or(limits.max_message_bytes),
            max_batch: self.max_batch.unwrap_or(limits.max_batch),
            max_resource_bytes: self.max_resource_bytes.unwrap_or(limits.max_resource_bytes),
        }
    }
}

/// The cookie seed of settings: the 32 bytes given, or `fallback` (the host's entropy).
pub fn seed(given: Option<&[u8]>, fallback: [u8; 32]) -> Result<[u8; 32]> {
    match given {
        None => Ok(fallback),
        Some(b) => <[u8; 32]>::try_from(b).map_err(|_| {
            crate::LeaseError::InvalidArgument(format!("a seed is 32 bytes, got {}", b.len()))
        }),
    }
}

/// Re-encodes a message: decoded from `from` (checked against `limits`), encoded as `to`. What
/// a binding does with a message in its JSON object form.
pub fn transcode<M: Message>(
    bytes: &[u8],
    from: Encoding,
    to: Encoding,
    limits: &Limits,
) -> Result<Vec<u8>> {
    Ok(M::decode(bytes, from, limits)?.encode(to))
}

/// Reading inputs tagged by `op` without buffering them.
pub(crate) mod op_first;

/// Bytes in the data form: serialized as bytes (`bytes` in Python, `Uint8Array` in JS); read
/// from bytes, a sequence of byte values, or text (taken as its UTF-8 bytes, a convenience for
/// handbacks and listeners given as strings).
pub mod bytes {
    use serde::de::{self, SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};

    /// Writes `b` as bytes.
    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(b)
    }

    /// Reads bytes, a sequence of bytes, or text.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_byte_buf(BytesVisitor)
    }

    pub(crate) struct BytesVisitor;

    impl<'de> Visitor<'de> for BytesVisitor {
        type Value = Vec<u8>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("bytes or a string")
        }
        fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }
        fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<u8>, E> {
            Ok(v.as_bytes().to_vec())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
            while let Some(b) = seq.next_element::<u8>()? {
                out.push(b);
            }
            Ok(out)
        }
    }

    /// The same for an optional value (`None` stays `None`).
    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};

        /// Writes `b` as bytes, or none.
        pub fn serialize<S: Serializer>(b: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
            match b {
                Some(b) => s.serialize_some(&Bytes(b)),
                None => s.serialize_none(),
            }
        }

        /// Reads none, or bytes as [`super::deserialize`] does.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
            Ok(Option::<Owned>::deserialize(d)?.map(|o| o.0))
        }

        struct Bytes<'a>(&'a [u8]);
        impl serde::Serialize for Bytes<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(self.0)
            }
        }
        struct Owned(Vec<u8>);
        impl<'de> Deserialize<'de> for Owned {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                super::deserialize(d).map(Owned)
            }
        }
    }
}

/// A landlord id in the data form: written as its 16 hex digits, read from those or from an
/// integer (hosts often hold ids as numbers).
pub mod landlord_id {
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serialize, Serializer};

    use crate::lease::LandlordId;

    /// Writes the id as 16 hex digits.
    pub fn serialize<S: Serializer>(id: &LandlordId, s: S) -> Result<S::Ok, S::Error> {
        id.serialize(s)
    }

    /// Reads 16 hex digits or a non-negative integer.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<LandlordId, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = LandlordId;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a landlord id: 16 hex digits or an integer from 0 to 2^64 - 1")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LandlordId, E> {
                Ok(LandlordId(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LandlordId, E> {
                u64::try_from(v)
                    .map(LandlordId)
                    .map_err(|_| E::custom("a landlord id is not negative"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LandlordId, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}
