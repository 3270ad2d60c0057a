//! Compact binary pieces shared by the binary snapshots and journals of the holder side, the
//! event tables and the renewal service: leases, errors, optional values and exact floats.
//! Integers are LEB128 (signed ones zigzag), cookies 16 bytes little-endian.

use crate::error::{LeaseError, LeaseFailure, Result};
use crate::journal::{put_bytes, put_ivarint, put_varint, Reader};
use crate::lease::{Cookie, LandlordId, Lease, SerialFormat};
use crate::time::Millis;

/// Deepest nesting of lease-map errors read back (a hostile input cannot exhaust the stack).
const MAX_ERROR_DEPTH: u32 = 4;

pub(crate) fn put_cookie(out: &mut Vec<u8>, c: Cookie) {
    out.extend_from_slice(&c.0.to_le_bytes());
}

pub(crate) fn cookie(r: &mut Reader<'_>) -> Result<Cookie> {
    Ok(Cookie(r.u128()?))
}

pub(crate) fn put_landlord(out: &mut Vec<u8>, l: LandlordId) {
    put_varint(out, l.0);
}

pub(crate) fn landlord(r: &mut Reader<'_>) -> Result<LandlordId> {
    Ok(LandlordId(r.varint()?))
}

pub(crate) fn put_bool(out: &mut Vec<u8>, b: bool) {
    out.push(b as u8);
}

pub(crate) fn bool(r: &mut Reader<'_>) -> Result<bool> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        b => Err(r.error(format!("flag {b} is neither 0 nor 1"))),
    }
}

pub(crate) fn put_opt_time(out: &mut Vec<u8>, t: Option<Millis>) {
    match t {
        None => out.push(0),
        Some(t) => {
            out.push(1);
            put_ivarint(out, t);
        }
    }
}

pub(crate) fn opt_time(r: &mut Reader<'_>) -> Result<Option<Millis>> {
    Ok(if bool(r)? { Some(r.ivarint()?) } else { None })
}

pub(crate) fn put_opt_u64(out: &mut Vec<u8>, v: Option<u64>) {
    match v {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            put_varint(out, v);
        }
    }
}

pub(crate) fn opt_u64(r: &mut Reader<'_>) -> Result<Option<u64>> {
    Ok(if bool(r)? { Some(r.varint()?) } else { None })
}

pub(crate) fn u32_of(r: &mut Reader<'_>, what: &str) -> Result<u32> {
    let v = r.varint()?;
    u32::try_from(v).map_err(|_| r.error(format!("{what} {v} does not fit 32 bits")))
}

/// A lease: landlord, cookie, expiration, serial format.
pub(crate) fn put_lease(out: &mut Vec<u8>, l: &Lease) {
    put_landlord(out, l.landlord());
    put_cookie(out, l.cookie());
    put_ivarint(out, l.expiration());
    out.push(l.serial_format() as u8);
}

pub(crate) fn lease(r: &mut Reader<'_>) -> Result<Lease> {
    let landlord = landlord(r)?;
    let cookie = cookie(r)?;
    let expiration = r.ivarint()?;
    let format = format(r)?;
    Ok(Lease::new(landlord, cookie, expiration).with_serial_format(format))
}

pub(crate) fn format(r: &mut Reader<'_>) -> Result<SerialFormat> {
    let f = r.u8()?;
    SerialFormat::from_i32(f as i32).map_err(|_| r.error(format!("serial format {f}")))
}

/// A lease in a JSON snapshot: landlord, cookie, expiration (host's clock), serial format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LeaseRecord {
    pub landlord: LandlordId,
    pub cookie: Cookie,
    pub expiration: Millis,
    #[serde(default)]
    pub format: SerialFormat,
}

impl From<&Lease> for LeaseRecord {
    fn from(l: &Lease) -> LeaseRecord {
        LeaseRecord {
            landlord: l.landlord(),
            cookie: l.cookie(),
            expiration: l.expiration(),
            format: l.serial_format(),
        }
    }
}

impl From<LeaseRecord> for Lease {
    fn from(l: LeaseRecord) -> Lease {
        Lease::new(l.landlord, l.cookie, l.expiration).with_serial_format(l.format)
    }
}

/// An `f64` kept bit for bit in a JSON snapshot: written as the shortest decimal string that
/// reads back to the same number (JSON number parsers are not all exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct F64(pub u64);

impl F64 {
    pub fn of(v: f64) -> F64 {
        F64(v.to_bits())
    }
    pub fn get(self) -> f64 {
        f64::from_bits(self.0)
    }
}

impl serde::Serialize for F64 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:?}", self.get()))
    }
}

impl<'de> serde::Deserialize<'de> for F64 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<F64, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        if s.len() > 400 {
            return Err(serde::de::Error::custom("number text too long"));
        }
        s.parse::<f64>().map(F64::of).map_err(serde::de::Error::custom)
    }
}

/// An error: its code, then its message (or, for a lease map, its failures).
pub(crate) fn put_error(out: &mut Vec<u8>, e: &LeaseError) {
    out.push(e.code() as u8);
    match e {
        LeaseError::UnknownLease => {}
        LeaseError::LeaseMap(failures) => {
            put_varint(out, failures.len() as u64);
            for f in failures {
                put_cookie(out, f.cookie);
                put_error(out, &f.error);
            }
        }
        LeaseError::LeaseDenied(m)
        | LeaseError::InvalidArgument(m)
        | LeaseError::Decode(m)
        | LeaseError::Indefinite(m) => put_bytes(out, m.as_bytes()),
    }
}

pub(crate) fn error(r: &mut Reader<'_>) -> Result<LeaseError> {
    error_at(r, 0)
}

fn error_at(r: &mut Reader<'_>, depth: u32) -> Result<LeaseError> {
    let code = r.u8()?;
    let text = |r: &mut Reader<'_>| -> Result<String> {
        let b = r.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| r.error("an error message is not UTF-8"))
    };
    Ok(match code {
        1 => LeaseError::UnknownLease,
        2 => LeaseError::LeaseDenied(text(r)?),
        3 => {
            if depth >= MAX_ERROR_DEPTH {
                return Err(r.error("lease-map errors nested too deep"));
            }
            let n = r.count(17)?;
            let mut failures = Vec::with_capacity(n);
            for _ in 0..n {
                let cookie = cookie(r)?;
                failures.push(LeaseFailure { cookie, error: error_at(r, depth + 1)? });
            }
            LeaseError::LeaseMap(failures)
        }
        4 => LeaseError::InvalidArgument(text(r)?),
        5 => LeaseError::Decode(text(r)?),
        6 => LeaseError::Indefinite(text(r)?),
        c => return Err(r.error(format!("error code {c}"))),
    })
}

pub(crate) fn put_opt_error(out: &mut Vec<u8>, e: Option<&LeaseError>) {
    match e {
        None => out.push(0),
        Some(e) => {
            out.push(1);
            put_error(out, e);
        }
    }
}

pub(crate) fn opt_error(r: &mut Reader<'_>) -> Result<Option<LeaseError>> {
    Ok(if bool(r)? { Some(error(r)?) } else { None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_round_trip_and_nesting_is_bounded() {
        let nested = LeaseError::LeaseMap(vec![LeaseFailure {
            cookie: Cookie(5),
            error: LeaseError::LeaseMap(vec![LeaseFailure {
                cookie: Cookie(6),
                error: LeaseError::Indefinite("x".into()),
            }]),
        }]);
        for e in [
            LeaseError::UnknownLease,
            LeaseError::LeaseDenied("no".into()),
            LeaseError::InvalidArgument(String::new()),
            LeaseError::Decode("d".into()),
            nested,
        ] {
            let mut v = Vec::new();
            put_error(&mut v, &e);
            let mut r = Reader::new(&v, "t");
            assert_eq!(error(&mut r).unwrap(), e);
            r.finish().unwrap();
        }
        let mut deep = LeaseError::UnknownLease;
        for _ in 0..10 {
            deep = LeaseError::LeaseMap(vec![LeaseFailure { cookie: Cookie(1), error: deep }]);
        }
        let mut v = Vec::new();
        put_error(&mut v, &deep);
        assert!(error(&mut Reader::new(&v, "t")).is_err());
    }

    #[test]
    fn floats_are_exact_in_json() {
        for v in [0.1, 1.0 / 3.0, 123_456.789_012_345_67, f64::MIN_POSITIVE, 1e300, 0.0, -0.0] {
            let j = serde_json::to_string(&F64::of(v)).unwrap();
            assert_eq!(serde_json::from_str::<F64>(&j).unwrap(), F64::of(v), "{j}");
        }
    }
}
