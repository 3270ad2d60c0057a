//! The serial forms of a lease: canonical JSON and compact binary, both versioned.
//!
//! # Time in a serialized lease
//!
//! In DURATION format (the default, [`SerialFormat::Duration`]) the stored time is what was
//! left at the writer's `now`, and reading it back adds the reader's `now`: hosts whose clocks
//! differ by hours still agree on how long the lease has left. A lease already past its
//! expiration stores a negative time left and reads back as expired. [`FOREVER`] is stored as
//! [`FOREVER`] and read back exactly, whatever the two clocks say; any other stored time reads
//! back as a finite expiration (at most `FOREVER - 1`), so a lease never becomes perpetual by
//! crossing hosts. In ABSOLUTE format the stored time is the expiration itself (epoch ms), read
//! back unchanged. Nothing in a serialized lease is a request, so `-1` ([`crate::ANY`]) has no
//! special meaning here: it is a lease that expired 1 ms before it was written.
//!
//! # Binary form, version 1
//!
//! Exactly 36 bytes, integers big-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 1 | magic `0x4C` (`L`) |
//! | 1 | 1 | version `0x01` |
//! | 2 | 1 | kind `0x01` (lease) |
//! | 3 | 1 | serial format: `1` DURATION, `2` ABSOLUTE |
//! | 4 | 8 | landlord id, unsigned |
//! | 12 | 16 | cookie, unsigned |
//! | 28 | 8 | time left (DURATION) or expiration (ABSOLUTE), two's complement |
//!
//! # JSON form, version 1
//!
//! One object, keys in this order, no white space:
//!
//! ```text
//! {"v":1,"format":"duration","landlord":"<16 hex>","cookie":"<32 hex>","duration":"<i64>"}
//! {"v":1,"format":"absolute","landlord":"<16 hex>","cookie":"<32 hex>","expiration":"<i64>"}
//! ```
//!
//! Ids are lower-case hex with leading zeros. The 64-bit time is a decimal *string*, so that
//! JavaScript and other readers whose numbers are doubles read it exactly (`FOREVER` is
//! `"9223372036854775807"`). Readers also accept upper-case hex, keys in any order, white
//! space, and the time as a JSON integer; they reject unknown or duplicate keys, a missing or
//! extra time field, any other version or format, and text longer than [`LEASE_JSON_MAX`].
//!
//! Every failure to read is a [`LeaseError::Decode`]; no input makes the reader panic.
//!
//! ```
//! use leasehold::{Cookie, LandlordId, Lease, FOREVER};
//! let lease = Lease::new(LandlordId(1), Cookie(2), 10_000);
//! let text = lease.to_json(4_000); // 6 s left on the writer's clock
//! assert_eq!(
//!     text,
//!     r#"{"v":1,"format":"duration","landlord":"0000000000000001","cookie":"00000000000000000000000000000002","duration":"6000"}"#
//! );
//! // A reader whose clock says 1 000 000 sees 6 s left too.
//! assert_eq!(Lease::from_json(&text, 1_000_000).unwrap().expiration(), 1_006_000);
//! // FOREVER crosses clocks unchanged.
//! let forever = Lease::new(LandlordId(1), Cookie(2), FOREVER);
//! assert_eq!(Lease::from_bytes(&forever.to_bytes(5), -77).unwrap().expiration(), FOREVER);
//! ```

use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::lease::{Cookie, LandlordId, Lease, SerialFormat};
#[cfg(doc)]
use crate::time::FOREVER;
use crate::time::{self, Millis};

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
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::time::dec::opt_i64")]
    duration: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::time::dec::opt_i64")]
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
        // FOREVER stays FOREVER; anything else saturates below it.
        SerialFormat::Duration => time::expiration_after(now, stored),
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
        let mut landlord = [0u8; 8];
        landlord.copy_from_slice(&bytes[4..12]);
        let mut cookie = [0u8; 16];
        cookie.copy_from_slice(&bytes[12..28]);
        let mut stored = [0u8; 8];
        stored.copy_from_slice(&bytes[28..36]);
        let (landlord, cookie) =
            (LandlordId(u64::from_be_bytes(landlord)), Cookie(u128::from_be_bytes(cookie)));
        let stored = i64::from_be_bytes(stored);
        Ok(Lease::new(landlord, cookie, read_time(format, stored, now)).with_serial_format(format))
    }
}
