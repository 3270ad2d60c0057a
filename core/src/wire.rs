//! The wire protocol: request and reply messages for every landlord operation.
//!
//! Any transport (HTTP, WebSocket, postMessage, TCP, a C callback) can carry them: the holder
//! side makes [`Request`]s, the landlord answers each with a [`Reply`] of the same `id`
//! ([`crate::Landlord::handle_request`]). Durations on the wire are always *relative*, so the two
//! clocks never need to agree: the holder adds a granted duration to the time it sent the request.
//!
//! Both encodings are versioned and decoding enforces [`Limits`], so hostile input cannot
//! exhaust memory or panic. The byte layouts and JSON shapes are specified in [`crate::codec`];
//! `core/tests/vectors/wire.json` has an example of every message in both encodings, which
//! every binding's tests check.
//!
//! Errors travel as a [`WireError`]: the stable numeric code of [`crate::ErrorCode`] and the
//! message ([`LeaseError::detail`], empty for an unknown lease). A code unknown to the reader is
//! kept as it is in the `WireError` and reads as [`LeaseError::Decode`]. Batch replies carry one
//! [`Outcome`] per lease, in request order, rather than a single lease-map error.

use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, LeaseError, Result};
use crate::lease::{Cookie, LandlordId};
use crate::time::Duration;

/// Version of the wire protocol.
pub const WIRE_VERSION: u8 = 1;

/// Bounds enforced when decoding messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Largest encoded message accepted, in bytes.
    pub max_message_bytes: usize,
    /// Most leases in one batch (renew_all, cancel_all).
    pub max_batch: usize,
    /// Largest resource description in a grant request, in bytes.
    pub max_resource_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_message_bytes: 1 << 20, max_batch: 10_000, max_resource_bytes: 64 * 1024 }
    }
}

impl Limits {
    /// Refuses a message of `len` bytes over [`Limits::max_message_bytes`] with the decode
    /// error every decoder gives, so a host can check a body's length before it reads or
    /// copies it (a binding checks a JavaScript buffer before copying it into WebAssembly
    /// memory).
    pub fn check_message_size(&self, len: usize) -> Result<()> {
        if len > self.max_message_bytes {
            return Err(LeaseError::Decode(format!(
                "message is {len} bytes, more than the {} allowed",
                self.max_message_bytes
            )));
        }
        Ok(())
    }
}

/// Which encoding a message is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// Canonical JSON text (UTF-8).
    Json,
    /// Compact binary.
    Binary,
}

/// One error as carried on the wire: its stable code and a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireError {
    /// [`ErrorCode`] as a number.
    pub code: i32,
    /// Human-readable detail.
    pub message: String,
}

impl From<&LeaseError> for WireError {
    fn from(e: &LeaseError) -> Self {
        WireError { code: e.code() as i32, message: e.detail() }
    }
}

impl From<&WireError> for LeaseError {
    fn from(w: &WireError) -> Self {
        LeaseError::from_code(w.code, &w.message)
    }
}

impl WireError {
    /// The error as a [`LeaseError`].
    pub fn to_error(&self) -> LeaseError {
        self.into()
    }
    /// The code, if it is a known one.
    pub fn error_code(&self) -> Option<ErrorCode> {
        ErrorCode::from_i32(self.code)
    }
}

/// A request to a landlord. `id` is chosen by the sender and echoed in the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Correlates the reply with this request.
    pub id: u64,
    /// What is asked.
    pub body: RequestBody,
}

/// The operations a holder can ask of a landlord.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum RequestBody {
    /// A new lease on `resource` (opaque bytes, hex in JSON) for `duration` (or ANY/FOREVER).
    Grant {
        /// What the lease is for, as the landlord's host understands it.
        #[serde(with = "hex_bytes")]
        resource: Vec<u8>,
        /// Requested duration.
        #[serde(with = "crate::time::dec::i64")]
        duration: Duration,
    },
    /// Extends one lease by `duration` from the landlord's now.
    Renew {
        /// The lease.
        cookie: Cookie,
        /// Requested duration.
        #[serde(with = "crate::time::dec::i64")]
        duration: Duration,
    },
    /// Ends one lease.
    Cancel {
        /// The lease.
        cookie: Cookie,
    },
    /// Renews several leases in one message; each gets its own result.
    RenewAll {
        /// Leases and their requested durations.
        #[serde(with = "renew_items")]
        items: Vec<(Cookie, Duration)>,
    },
    /// Cancels several leases in one message; each gets its own result.
    CancelAll {
        /// The leases.
        cookies: Vec<Cookie>,
    },
}

/// One lease's outcome inside a batch reply: the granted duration, or an error.
///
/// In JSON, `{"duration":"<i64>"}` or `{"error":{"code":N,"message":"..."}}` for a renewal,
/// `{}` or `{"error":{...}}` for a cancellation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    /// Success.
    Ok(T),
    /// Failure of this lease only.
    Err(WireError),
}

impl<T: Clone> Outcome<T> {
    /// As a `Result`.
    pub fn to_result(&self) -> Result<T> {
        match self {
            Outcome::Ok(t) => Ok(t.clone()),
            Outcome::Err(e) => Err(e.to_error()),
        }
    }
}

impl<T> From<Result<T>> for Outcome<T> {
    fn from(r: Result<T>) -> Self {
        match r {
            Ok(t) => Outcome::Ok(t),
            Err(e) => Outcome::Err(WireError::from(&e)),
        }
    }
}

/// A landlord's answer to a [`Request`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The `id` of the request answered.
    pub id: u64,
    /// The landlord that answered.
    pub landlord: LandlordId,
    /// The answer.
    pub body: ReplyBody,
}

/// The answers a landlord gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum ReplyBody {
    /// A lease was granted for `duration` (relative; the holder adds its send time).
    Granted {
        /// The new lease's cookie.
        cookie: Cookie,
        /// Granted duration.
        #[serde(with = "crate::time::dec::i64")]
        duration: Duration,
    },
    /// The lease was renewed for `duration` from the landlord's now.
    Renewed {
        /// Granted duration.
        #[serde(with = "crate::time::dec::i64")]
        duration: Duration,
    },
    /// The lease was cancelled.
    Cancelled,
    /// Per-lease results of a renew_all, in request order.
    RenewedAll {
        /// Granted duration or error, per lease.
        results: Vec<Outcome<Duration>>,
    },
    /// Per-lease results of a cancel_all, in request order.
    CancelledAll {
        /// Success or error, per lease.
        results: Vec<Outcome<()>>,
    },
    /// The whole request failed (unknown lease, denied, invalid argument, undecodable request).
    Error(WireError),
}

/// The JSON form of a batch outcome (private; see [`Outcome`]).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutcomeJson {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::time::dec::opt_i64")]
    duration: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<WireError>,
}

impl Serialize for Outcome<Duration> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Outcome::Ok(d) => OutcomeJson { duration: Some(*d), error: None },
            Outcome::Err(e) => OutcomeJson { duration: None, error: Some(e.clone()) },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Outcome<Duration> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match OutcomeJson::deserialize(d)? {
            OutcomeJson { duration: Some(d), error: None } => Ok(Outcome::Ok(d)),
            OutcomeJson { duration: None, error: Some(e) } => Ok(Outcome::Err(e)),
            _ => Err(serde::de::Error::custom(
                "a renewal outcome has exactly one of \"duration\" and \"error\"",
            )),
        }
    }
}

impl Serialize for Outcome<()> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Outcome::Ok(()) => OutcomeJson { duration: None, error: None },
            Outcome::Err(e) => OutcomeJson { duration: None, error: Some(e.clone()) },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Outcome<()> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match OutcomeJson::deserialize(d)? {
            OutcomeJson { duration: None, error: None } => Ok(Outcome::Ok(())),
            OutcomeJson { duration: None, error: Some(e) } => Ok(Outcome::Err(e)),
            _ => Err(serde::de::Error::custom("a cancellation outcome has no \"duration\"")),
        }
    }
}

/// `renew_all` items in JSON: `[{"cookie":"<32 hex>","duration":"<i64>"}, ...]`.
mod renew_items {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::lease::Cookie;
    use crate::time::Duration;

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Item {
        cookie: Cookie,
        #[serde(with = "crate::time::dec::i64")]
        duration: Duration,
    }

    pub fn serialize<S: Serializer>(items: &[(Cookie, Duration)], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(items.iter().map(|&(cookie, duration)| Item { cookie, duration }))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(Cookie, Duration)>, D::Error> {
        let items = Vec::<Item>::deserialize(d)?;
        Ok(items.into_iter().map(|i| (i.cookie, i.duration)).collect())
    }
}

/// Opaque bytes as hex text (lower case when written, either case when read).
pub(crate) mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(b.len() * 2);
        for x in b {
            out.push(DIGITS[(x >> 4) as usize] as char);
            out.push(DIGITS[(x & 15) as usize] as char);
        }
        s.serialize_str(&out)
    }

    fn nibble(c: u8) -> Option<u8> {
        (c as char).to_digit(16).map(|d| d as u8)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        let bad = || {
            serde::de::Error::custom(
                "bytes (a resource, a handback) must be an even number of hex digits",
            )
        };
        if s.len() % 2 != 0 {
            return Err(bad());
        }
        s.as_bytes()
            .chunks_exact(2)
            .map(|p| Some(nibble(p[0])? << 4 | nibble(p[1])?))
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(bad)
    }
}
