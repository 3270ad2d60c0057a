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
/// [`FOREVER`] stays [`FOREVER`] whatever `now` is; everything else saturates at the
/// bounds of `i64` (a result at or above [`FOREVER`] is [`FOREVER`]).
#[inline]
pub fn expiration_after(now: Millis, duration: Duration) -> Millis {
    if duration == FOREVER {
        FOREVER
    } else {
        now.saturating_add(duration)
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
