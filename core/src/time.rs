//! Time in leasehold: milliseconds on the host's clock, with the Jini special values.
//!
//! The core never reads a clock. Every call whose answer depends on time takes `now`, a
//! millisecond count on whatever clock the host uses (epoch time, a monotonic counter, or the
//! virtual time of a simulation). All arithmetic here saturates: `now + FOREVER` is
//! [`FOREVER`], never a wrap-around (the Jini 1.0 renewal-manager bug of seed 002 cannot happen).

use crate::error::LeaseError;

/// A point in time, in milliseconds on the host's clock.
pub type Millis = i64;

/// A length of time in milliseconds. May also be [`FOREVER`] or, as a request, [`ANY`].
pub type Duration = i64;

/// `Lease.FOREVER`: a lease (or duration) that never ends. Equal to Java's `Long.MAX_VALUE`.
pub const FOREVER: i64 = i64::MAX;

/// `Lease.ANY`: a request that lets the grantor choose the duration. Equal to Jini's `-1`.
pub const ANY: i64 = -1;

/// The expiration of something that lasts `duration` from `now`.
///
/// [`FOREVER`] stays [`FOREVER`] whatever `now` is. Any other duration saturates: the result
/// is at least `i64::MIN` and at most `FOREVER - 1`, so a finite lease never becomes a
/// perpetual one by arithmetic (the Jini 1.0 overflow of seed 002 cannot happen either way).
#[inline]
pub fn expiration_after(now: Millis, duration: Duration) -> Millis {
    if duration == FOREVER {
        FOREVER
    } else {
        now.saturating_add(duration).min(FOREVER - 1)
    }
}

/// Time left until `expiration`, seen at `now` (negative once it has passed).
///
/// A [`FOREVER`] expiration has [`FOREVER`] left; any other expiration has strictly less than
/// [`FOREVER`] left, so a finite lease never turns into a perpetual one by arithmetic.
#[inline]
pub fn remaining(expiration: Millis, now: Millis) -> Duration {
    if expiration == FOREVER {
        FOREVER
    } else {
        expiration.saturating_sub(now).min(FOREVER - 1)
    }
}

/// Checks a requested lease duration: positive, zero, [`FOREVER`] or [`ANY`].
///
/// ```
/// use leasehold::time::check_requested;
/// assert_eq!(check_requested(-1), Ok(-1)); // ANY
/// assert_eq!(check_requested(0), Ok(0));
/// assert!(check_requested(-2).is_err());
/// ```
///
/// Any other negative value is an [`LeaseError::InvalidArgument`].
#[inline]
pub fn check_requested(duration: Duration) -> Result<Duration, LeaseError> {
    if duration >= 0 || duration == ANY {
        Ok(duration)
    } else {
        Err(LeaseError::InvalidArgument(format!(
            "requested duration {duration} ms is negative and not ANY (-1)"
        )))
    }
}

/// Formats a duration for people: `FOREVER`, `ANY`, or milliseconds.
pub fn describe(duration: Duration) -> String {
    match duration {
        FOREVER => "FOREVER".to_string(),
        ANY => "ANY".to_string(),
        d => format!("{d} ms"),
    }
}

/// Serde helpers for 64-bit integers in JSON text: written as decimal strings (exact in every
/// language, including JavaScript, whose numbers lose precision above 2^53), read from a
/// decimal string or a JSON integer.
pub(crate) mod dec {
    use std::fmt;

    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};

    /// Parses a decimal integer: optional `-`, then 1 to 20 ASCII digits (no `+`, no spaces).
    pub fn parse<T: std::str::FromStr>(s: &str) -> Option<T> {
        let digits = s.strip_prefix('-').unwrap_or(s);
        if digits.is_empty() || digits.len() > 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    }

    struct V<T>(std::marker::PhantomData<T>);

    impl<T> Visitor<'_> for V<T>
    where
        T: std::str::FromStr + TryFrom<i64> + TryFrom<u64>,
    {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a 64-bit integer as a decimal string")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<T, E> {
            parse(s).ok_or_else(|| {
                E::custom(format_args!(
                    "{:?} is not a 64-bit decimal integer",
                    s.chars().take(40).collect::<String>()
                ))
            })
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
            T::try_from(v).map_err(|_| E::custom(format_args!("{v} is out of range")))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
            T::try_from(v).map_err(|_| E::custom(format_args!("{v} is out of range")))
        }
    }

    /// `#[serde(with = "dec::i64")]`
    pub mod i64 {
        use super::*;
        pub fn serialize<S: Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
            s.collect_str(v)
        }
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
            d.deserialize_any(V::<i64>(std::marker::PhantomData))
        }
    }

    /// `#[serde(with = "dec::u64")]`
    pub mod u64 {
        use super::*;
        pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
            s.collect_str(v)
        }
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
            d.deserialize_any(V::<u64>(std::marker::PhantomData))
        }
    }

    /// `#[serde(with = "dec::opt_i64")]`, for optional fields.
    pub mod opt_i64 {
        use super::*;
        use serde::Deserialize;
        pub fn serialize<S: Serializer>(v: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
            match v {
                Some(v) => s.collect_str(v),
                None => s.serialize_none(),
            }
        }
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
            #[derive(Deserialize)]
            struct W(#[serde(with = "super::i64")] i64);
            Ok(Some(W::deserialize(d)?.0))
        }
    }
}
