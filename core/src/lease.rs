//! The lease value type (the holder's view of a lease) and its serial formats.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{LeaseError, Result};
use crate::time::{self, Millis};

/// The grantor's key for a lease: 128 bits, unguessable (derived from the landlord's seed).
///
/// Written as 32 lower-case hex digits in text forms.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Cookie(pub u128);

/// Identifies a landlord (grantor). Chosen by the host; leases of one landlord can batch.
///
/// Written as 16 lower-case hex digits in text forms.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct LandlordId(pub u64);

macro_rules! hex_id {
    ($t:ident, $inner:ty, $digits:expr, $what:expr) => {
        impl $t {
            /// The lower-case hex digits, without going through `fmt`: ids and cookies are in
            /// most answers a binding hands out, and a serializer's `collect_str` wrote them a
            /// digit at a time (serde_json escaping each piece).
            fn hex(&self) -> [u8; $digits] {
                const DIGITS: &[u8; 16] = b"0123456789abcdef";
                let mut buf = [0u8; $digits];
                let mut v = self.0;
                for b in buf.iter_mut().rev() {
                    *b = DIGITS[(v & 0xf) as usize];
                    v >>= 4;
                }
                buf
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // ASCII hex digits are valid UTF-8.
                f.write_str(std::str::from_utf8(&self.hex()).unwrap_or_default())
            }
        }
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($t), self)
            }
        }
        impl FromStr for $t {
            type Err = LeaseError;
            fn from_str(s: &str) -> Result<Self> {
                if s.len() != $digits || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(LeaseError::Decode(format!(
                        "{} must be {} hex digits, got {:?}",
                        $what,
                        $digits,
                        s.chars().take(40).collect::<String>()
                    )));
                }
                <$inner>::from_str_radix(s, 16)
                    .map($t)
                    .map_err(|e| LeaseError::Decode(format!("{}: {e}", $what)))
            }
        }
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(std::str::from_utf8(&self.hex()).unwrap_or_default())
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
hex_id!(Cookie, u128, 32, "cookie");
hex_id!(LandlordId, u64, 16, "landlord id");

/// How a lease is written out (Jini `Lease.DURATION` and `Lease.ABSOLUTE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SerialFormat {
    /// Time left at serialization; read back against the reader's `now` (survives clock offset).
    #[default]
    Duration = 1,
    /// The expiration itself, in epoch milliseconds (needs synchronised clocks).
    Absolute = 2,
}

impl SerialFormat {
    /// The Jini number of the format (`DURATION = 1`, `ABSOLUTE = 2`).
    pub fn from_i32(n: i32) -> Result<SerialFormat> {
        match n {
            1 => Ok(SerialFormat::Duration),
            2 => Ok(SerialFormat::Absolute),
            _ => Err(LeaseError::InvalidArgument(format!(
                "serial format must be 1 (DURATION) or 2 (ABSOLUTE), got {n}"
            ))),
        }
    }
}

/// A lease as its holder sees it: which landlord, which cookie, and when it expires on the
/// holder's clock.
///
/// Two leases are equal when they have the same landlord and cookie, whatever their
/// expirations (a renewed copy is the same lease).
///
/// Data form (serde): `{landlord, cookie, expiration}` (the serial format is not carried: a
/// lease read back has the DURATION format). The serialized forms are in [`crate::serial`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lease {
    landlord: LandlordId,
    cookie: Cookie,
    expiration: Millis,
    #[serde(skip)]
    serial_format: SerialFormat,
}

impl PartialEq for Lease {
    fn eq(&self, other: &Self) -> bool {
        self.landlord == other.landlord && self.cookie == other.cookie
    }
}
impl Eq for Lease {}
impl Hash for Lease {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.landlord.hash(state);
        self.cookie.hash(state);
    }
}

impl Lease {
    /// A lease of `landlord` with `cookie`, expiring at `expiration` (holder's clock), DURATION format.
    pub fn new(landlord: LandlordId, cookie: Cookie, expiration: Millis) -> Lease {
        Lease { landlord, cookie, expiration, serial_format: SerialFormat::Duration }
    }

    /// A lease granted `granted` ms by a reply to a request the holder *sent* at `sent_at`
    /// (seed 000, 2.3: the holder counts from the send time, so it never outlives the grantor's view).
    pub fn from_grant(
        landlord: LandlordId,
        cookie: Cookie,
        sent_at: Millis,
        granted: i64,
    ) -> Lease {
        Lease::new(landlord, cookie, time::expiration_after(sent_at, granted))
    }

    /// The landlord that granted this lease.
    pub fn landlord(&self) -> LandlordId {
        self.landlord
    }
    /// The landlord's key for this lease.
    pub fn cookie(&self) -> Cookie {
        self.cookie
    }
    /// When the lease expires, on the holder's clock ([`time::FOREVER`] if never).
    pub fn expiration(&self) -> Millis {
        self.expiration
    }
    /// Sets the local expiration (after a renewal).
    pub fn set_expiration(&mut self, expiration: Millis) {
        self.expiration = expiration;
    }
    /// Time left at `now` (negative once expired; [`time::FOREVER`] for a perpetual lease).
    pub fn remaining(&self, now: Millis) -> i64 {
        time::remaining(self.expiration, now)
    }
    /// Whether the lease has expired at `now` on the holder's clock.
    pub fn is_expired(&self, now: Millis) -> bool {
        self.expiration != time::FOREVER && self.expiration <= now
    }
    /// How the lease is written out.
    pub fn serial_format(&self) -> SerialFormat {
        self.serial_format
    }
    /// Chooses how the lease is written out.
    pub fn set_serial_format(&mut self, format: SerialFormat) {
        self.serial_format = format;
    }
    /// The same lease with another serial format.
    pub fn with_serial_format(mut self, format: SerialFormat) -> Lease {
        self.serial_format = format;
        self
    }
    /// Jini `canBatch`: true exactly when both leases belong to the same landlord.
    pub fn can_batch(&self, other: &Lease) -> bool {
        self.landlord == other.landlord
    }
}
