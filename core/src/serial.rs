//! The serial forms of a lease: canonical JSON and compact binary, both versioned.
//!
//! In DURATION format the stored time is what was left at `now` when written, and reading
//! it back adds the reader's `now`: hosts whose clocks differ by hours still agree on how
//! long the lease has left. [`FOREVER`] is stored as [`FOREVER`] and read back exactly.
//! In ABSOLUTE format the stored time is the expiration itself.
//!
//! Binary layout, version 1 (36 bytes, integers big-endian):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 1 | magic `0x4C` (`L`) |
//! | 1 | 1 | version `1` |
//! | 2 | 1 | kind `0x01` (lease) |
//! | 3 | 1 | serial format: 1 DURATION, 2 ABSOLUTE |
//! | 4 | 8 | landlord id |
//! | 12 | 16 | cookie |
//! | 28 | 8 | time left (DURATION) or expiration (ABSOLUTE), signed |
//!
//! JSON, version 1: `{"v":1,"format":"duration","landlord":"<16 hex>","cookie":"<32 hex>","duration":N}`
//! or with `"format":"absolute"` and `"expiration":N`, keys in exactly that order, no spaces.

use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::lease::{Cookie, LandlordId, Lease, SerialFormat};
use crate::time::{self, Millis, FOREVER};

/// Current version of both serial forms.
pub const SERIAL_VERSION: u8 = 1;
/// First byte of every binary message of leasehold.
pub const MAGIC: u8 = 0x4C;
/// Kind byte of a serialized lease.
pub const KIND_LEASE: u8 = 0x01;
/// Exact length of a binary lease.
pub const LEASE_BINARY_LEN: usize = 36;
/// Longest JSON lease text accepted by [`Lease::from_json`].
pub const LEASE_JSON_MAX: usize = 1024;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LeaseJson {
    v: u32,
    format: SerialFormat,
    landlord: LandlordId,
    cookie: Cookie,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expiration: Option<i64>,
}

/// The stored time of a lease written at `now` in its serial format.
fn stored_time(lease: &Lease, now: Millis) -> i64 {
    match lease.serial_format() {
        SerialFormat::Duration => time::remaining(lease.expiration(), now),
        SerialFormat::Absolute => lease.expiration(),
    }
}

/// The expiration of a lease read at `now` from its stored time.
fn read_time(format: SerialFormat, stored: i64, now: Millis) -> Millis {
    match format {
        SerialFormat::Duration => time::expiration_after(now, stored).min(if stored == FOREVER {
            FOREVER
        } else {
            FOREVER - 1
        }),
        SerialFormat::Absolute => stored,
    }
}

impl Lease {
    /// The canonical JSON form, written at `now` (DURATION stores the time left at `now`).
    pub fn to_json(&self, now: Millis) -> String {
        let t = stored_time(self, now);
        let (duration, expiration) = match self.serial_format() {
            SerialFormat::Duration => (Some(t), None),
            SerialFormat::Absolute => (None, Some(t)),
        };
        let j = LeaseJson {
            v: SERIAL_VERSION as u32,
            format: self.serial_format(),
            landlord: self.landlord(),
            cookie: self.cookie(),
            duration,
            expiration,
        };
        serde_json::to_string(&j).expect("lease JSON cannot fail")
    }

    /// Reads the canonical JSON form at `now` (the reader's clock, for DURATION).
    pub fn from_json(text: &str, now: Millis) -> Result<Lease> {
        if text.len() > LEASE_JSON_MAX {
            return Err(LeaseError::Decode(format!(
                "lease JSON is {} bytes, more than the {LEASE_JSON_MAX} allowed",
                text.len()
            )));
        }
        let j: LeaseJson = serde_json::from_str(text)
            .map_err(|e| LeaseError::Decode(format!("lease JSON: {e}")))?;
        if j.v != SERIAL_VERSION as u32 {
            return Err(LeaseError::Decode(format!(
                "lease JSON version {} is not supported (expected {SERIAL_VERSION})",
                j.v
            )));
        }
        let stored = match (j.format, j.duration, j.expiration) {
            (SerialFormat::Duration, Some(d), None) => d,
            (SerialFormat::Absolute, None, Some(e)) => e,
            (SerialFormat::Duration, _, _) => {
                return Err(LeaseError::Decode(
                    "a DURATION lease has \"duration\" and no \"expiration\"".into(),
                ))
            }
            (SerialFormat::Absolute, _, _) => {
                return Err(LeaseError::Decode(
                    "an ABSOLUTE lease has \"expiration\" and no \"duration\"".into(),
                ))
            }
        };
        let exp = read_time(j.format, stored, now);
        Ok(Lease::new(j.landlord, j.cookie, exp).with_serial_format(j.format))
    }

    /// The compact binary form, written at `now`.
    pub fn to_bytes(&self, now: Millis) -> Vec<u8> {
        let mut out = Vec::with_capacity(LEASE_BINARY_LEN);
        out.extend_from_slice(&[MAGIC, SERIAL_VERSION, KIND_LEASE, self.serial_format() as u8]);
        out.extend_from_slice(&self.landlord().0.to_be_bytes());
        out.extend_from_slice(&self.cookie().0.to_be_bytes());
        out.extend_from_slice(&stored_time(self, now).to_be_bytes());
        out
    }

    /// Reads the compact binary form at `now`.
    pub fn from_bytes(bytes: &[u8], now: Millis) -> Result<Lease> {
        if bytes.len() != LEASE_BINARY_LEN {
            return Err(LeaseError::Decode(format!(
                "a binary lease is {LEASE_BINARY_LEN} bytes, got {}",
                bytes.len()
            )));
        }
        if bytes[0] != MAGIC {
            return Err(LeaseError::Decode(format!("bad magic byte 0x{:02x}", bytes[0])));
        }
        if bytes[1] != SERIAL_VERSION {
            return Err(LeaseError::Decode(format!(
                "binary lease version {} is not supported (expected {SERIAL_VERSION})",
                bytes[1]
            )));
        }
        if bytes[2] != KIND_LEASE {
            return Err(LeaseError::Decode(format!(
                "kind 0x{:02x} is not a lease (0x01)",
                bytes[2]
            )));
        }
        let format = SerialFormat::from_i32(bytes[3] as i32)
            .map_err(|_| LeaseError::Decode(format!("bad serial format {}", bytes[3])))?;
        let landlord = LandlordId(u64::from_be_bytes(bytes[4..12].try_into().unwrap()));
        let cookie = Cookie(u128::from_be_bytes(bytes[12..28].try_into().unwrap()));
        let stored = i64::from_be_bytes(bytes[28..36].try_into().unwrap());
        Ok(Lease::new(landlord, cookie, read_time(format, stored, now)).with_serial_format(format))
    }
}
