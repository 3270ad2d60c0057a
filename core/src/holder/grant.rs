//! Obtaining a lease over the wire: the grant request and reading its reply.
//!
//! The holder counts a lease from the time it *sent* the request (seed 000, 2.3): the landlord
//! starts its clock when the request arrives, which is later, so the holder never believes in a
//! lease longer than the landlord grants it (as long as the two clocks run at the same rate;
//! [`local_expiration`] also covers clocks whose rates differ by a bounded amount).

use crate::error::{LeaseError, Result};
use crate::lease::Lease;
use crate::time::{self, Duration, Millis, ANY, FOREVER};
use crate::wire::{Reply, ReplyBody, Request, RequestBody};

/// A request for a new lease on `resource` for `duration` ms (or [`ANY`], [`FOREVER`]).
///
/// The landlord checks the duration; a negative one other than [`ANY`] gets an
/// invalid-argument error reply.
pub fn grant_request(id: u64, resource: Vec<u8>, duration: Duration) -> Request {
    Request { id, body: RequestBody::Grant { resource, duration } }
}

/// The holder's lease from a landlord's reply to a grant request sent at `sent_at` (holder's
/// clock): expiration = `sent_at` + granted duration, saturating ([`FOREVER`] stays [`FOREVER`];
/// a finite grant stays finite).
///
/// An error reply gives its error; a reply of another kind or with a negative duration is a
/// [`LeaseError::Decode`] error.
pub fn lease_from_reply(reply: &Reply, sent_at: Millis) -> Result<Lease> {
    lease_from_reply_with_drift(reply, sent_at, 0)
}

/// Like [`lease_from_reply`], but shortened for clocks whose rates may differ by up to
/// `max_drift_ppm` parts per million (see [`local_expiration`]); `0` gives [`lease_from_reply`].
pub fn lease_from_reply_with_drift(
    reply: &Reply,
    sent_at: Millis,
    max_drift_ppm: u32,
) -> Result<Lease> {
    match &reply.body {
        ReplyBody::Granted { cookie, duration } => {
            let granted = checked_granted(*duration)?;
            Ok(Lease::new(
                reply.landlord,
                *cookie,
                local_expiration(sent_at, granted, max_drift_ppm),
            ))
        }
        ReplyBody::Error(e) => Err(e.to_error()),
        other => Err(LeaseError::Decode(format!(
            "expected a granted reply to a grant request, got {}",
            body_name(other)
        ))),
    }
}

/// Checks a granted duration read from a reply: zero or more, or [`FOREVER`].
pub(crate) fn checked_granted(duration: Duration) -> Result<Duration> {
    if duration < 0 {
        Err(LeaseError::Decode(format!("granted duration {duration} ms is negative")))
    } else {
        Ok(duration)
    }
}

/// A granted duration as the holder may count it: never more than it asked for (a reply that
/// claims more is read as what was asked; [`ANY`] takes what was granted).
pub(crate) fn capped(requested: Duration, granted: Duration) -> Duration {
    if requested == ANY || requested < 0 {
        granted
    } else {
        granted.min(requested)
    }
}

/// The local expiration of a lease granted `granted` ms in reply to a request sent at `sent_at`.
///
/// With `max_drift_ppm == 0` this is `sent_at + granted`, saturating. Otherwise the holder
/// allows for a landlord clock that runs up to `max_drift_ppm` millionths faster than its own:
/// it subtracts `ceil(granted * max_drift_ppm / 1e6) + 1` ms (the extra millisecond covers
/// clocks read to whole milliseconds), never going below `sent_at`. [`FOREVER`] stays [`FOREVER`].
/// No step can overflow.
pub fn local_expiration(sent_at: Millis, granted: Duration, max_drift_ppm: u32) -> Millis {
    if granted == FOREVER {
        return FOREVER;
    }
    let granted = granted.max(0);
    let margin = if max_drift_ppm == 0 {
        0
    } else {
        let m = (granted as i128 * max_drift_ppm as i128 + 999_999) / 1_000_000 + 1;
        m.min(granted as i128) as i64
    };
    time::expiration_after(sent_at, granted - margin)
}

pub(crate) fn body_name(body: &ReplyBody) -> &'static str {
    match body {
        ReplyBody::Granted { .. } => "granted",
        ReplyBody::Renewed { .. } => "renewed",
        ReplyBody::Cancelled => "cancelled",
        ReplyBody::RenewedAll { .. } => "renewed_all",
        ReplyBody::CancelledAll { .. } => "cancelled_all",
        ReplyBody::Error(_) => "error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::{Cookie, LandlordId};
    use crate::wire::WireError;

    fn reply(body: ReplyBody) -> Reply {
        Reply { id: 1, landlord: LandlordId(9), body }
    }

    #[test]
    fn counts_from_send_time() {
        let r = reply(ReplyBody::Granted { cookie: Cookie(5), duration: 1_000 });
        let l = lease_from_reply(&r, 100).unwrap();
        assert_eq!(l.expiration(), 1_100);
        assert_eq!(l.landlord(), LandlordId(9));
        assert_eq!(l.cookie(), Cookie(5));
    }

    #[test]
    fn forever_and_saturation() {
        let r = reply(ReplyBody::Granted { cookie: Cookie(5), duration: FOREVER });
        assert_eq!(lease_from_reply(&r, 1 << 40).unwrap().expiration(), FOREVER);
        // A finite grant never turns into a perpetual lease by arithmetic.
        let r = reply(ReplyBody::Granted { cookie: Cookie(5), duration: FOREVER - 1 });
        assert_eq!(lease_from_reply(&r, 1 << 40).unwrap().expiration(), FOREVER - 1);
        assert_eq!(local_expiration(i64::MIN, 5, 0), i64::MIN + 5);
    }

    #[test]
    fn errors_and_malformed() {
        let e = reply(ReplyBody::Error(WireError::from(&LeaseError::LeaseDenied("full".into()))));
        assert_eq!(lease_from_reply(&e, 0), Err(LeaseError::LeaseDenied("full".into())));
        let neg = reply(ReplyBody::Granted { cookie: Cookie(5), duration: -3 });
        assert!(matches!(lease_from_reply(&neg, 0), Err(LeaseError::Decode(_))));
        let other = reply(ReplyBody::Cancelled);
        assert!(matches!(lease_from_reply(&other, 0), Err(LeaseError::Decode(_))));
    }

    #[test]
    fn drift_margin() {
        // 1% of 60 s is 600 ms, plus one for whole-millisecond clocks.
        assert_eq!(local_expiration(0, 60_000, 10_000), 60_000 - 601);
        assert_eq!(local_expiration(0, 0, 10_000), 0);
        assert_eq!(local_expiration(10, 1, 10_000), 10);
        assert_eq!(local_expiration(0, FOREVER, 10_000), FOREVER);
        assert_eq!(local_expiration(0, FOREVER - 1, u32::MAX), 0);
    }
}
