//! Regression tests from the correctness review of the holder side: round-trip time-outs on
//! jitter-free links, cancels, overflow guards, expiration boundaries and hostile replies.

use std::collections::BTreeMap;

use leasehold::holder::{RenewalEvent, RenewalManager, RenewalManagerConfig, Transmit};
use leasehold::wire::Outcome;
use leasehold::{Cookie, LandlordId, Lease, Millis, Reply, ReplyBody, RequestBody, FOREVER};

const L1: LandlordId = LandlordId(1);

fn lease(l: LandlordId, c: u128, exp: Millis) -> Lease {
    Lease::new(l, Cookie(c), exp)
}

fn events(m: &mut RenewalManager) -> Vec<RenewalEvent> {
    std::iter::from_fn(|| m.poll_event()).collect()
}

/// The landlord's answer to `t`: every lease renewed for what was asked.
fn grant_all(t: &Transmit) -> Reply {
    let body = match &t.request.body {
        RequestBody::Renew { duration, .. } => ReplyBody::Renewed { duration: *duration },
        RequestBody::RenewAll { items } => {
            ReplyBody::RenewedAll { results: items.iter().map(|(_, d)| Outcome::Ok(*d)).collect() }
        }
        RequestBody::Cancel { .. } => ReplyBody::Cancelled,
        RequestBody::CancelAll { cookies } => {
            ReplyBody::CancelledAll { results: cookies.iter().map(|_| Outcome::Ok(())).collect() }
        }
        b => panic!("unexpected request {b:?}"),
    };
    Reply { id: t.request.id, landlord: t.landlord, body }
}

/// Drives `m` against a landlord that always answers after exactly `rtt` ms, until `end`. At a
/// tie, the host runs its timers before it reads its socket (a legitimate order). Returns the
/// requests sent.
fn drive_fixed_rtt(m: &mut RenewalManager, rtt: Millis, end: Millis) -> u64 {
    let mut arrivals: BTreeMap<(Millis, u64), Reply> = BTreeMap::new();
    let mut seq = 0;
    let mut sent = 0;
    loop {
        let timer = m.poll_timeout();
        let arrival = arrivals.keys().next().map(|k| k.0);
        let now = match (timer, arrival) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => break,
        };
        if now > end {
            break;
        }
        if timer == Some(now) {
            m.handle_timeout(now);
        }
        while let Some(entry) = arrivals.first_entry() {
            if entry.key().0 != now {
                break;
            }
            let reply = entry.remove();
            m.handle_reply(&reply, now);
        }
        while let Some(t) = m.poll_transmit(now) {
            sent += 1;
            seq += 1;
            arrivals.insert((now + rtt, seq), grant_all(&t));
        }
    }
    sent
}

#[test]
fn jitter_free_link_with_min_rto_1_has_no_spurious_timeouts() {
    // With no jitter the variation decays to nothing and the time-out used to settle at exactly
    // the round trip: every reply arrived in the millisecond of its time-out, counted as a
    // time-out, and each round cost a retry (a storm with many holders).
    let cfg = RenewalManagerConfig { min_rto: 1, max_clock_drift_ppm: 0, ..Default::default() };
    let mut m = RenewalManager::new(cfg);
    let l = lease(L1, 1, 10_000);
    m.renew_for(l, FOREVER, 10_000, 0).unwrap();
    let hour = 3_600_000;
    let sent = drive_fixed_rtt(&mut m, 40, hour);
    let s = m.stats();
    assert_eq!(s.timeouts, 0, "no reply on a perfect link may count as lost: {s:?}");
    assert_eq!(s.requests_sent, sent);
    assert_eq!(s.leases_renewed, sent, "one request per renewal");
    assert!(sent < 2 * hour as u64 / 10_000, "about one request per half grant: {sent}");
    assert_eq!(m.lease(&l).map(|l| l.expiration() > hour - 10_000), Some(true));
    assert!(events(&mut m).iter().all(|e| matches!(e, RenewalEvent::Renewed { .. })));
}

#[test]
fn failed_cancels_are_counted_not_retried() {
    use leasehold::wire::WireError;
    use leasehold::LeaseError;
    let cfg = RenewalManagerConfig { max_clock_drift_ppm: 0, ..Default::default() };
    let mut m = RenewalManager::new(cfg);
    let ls: Vec<Lease> = (0..4).map(|c| lease(L1, c, 60_000)).collect();
    for l in &ls {
        m.renew_for(*l, FOREVER, 60_000, 0).unwrap();
    }
    // 1. Error reply to a lone cancel.
    m.cancel(&ls[0], 1).unwrap();
    let t = m.poll_transmit(1).unwrap();
    let err = WireError::from(&LeaseError::UnknownLease);
    m.handle_reply(&Reply { id: t.request.id, landlord: L1, body: ReplyBody::Error(err) }, 2);
    assert_eq!(m.stats().cancel_failures, 1);
    // 2. A cancel_all with one per-lease error.
    m.cancel(&ls[1], 3).unwrap();
    m.cancel(&ls[2], 3).unwrap();
    let t = m.poll_transmit(3).unwrap();
    let results = vec![Outcome::Ok(()), Outcome::Err(WireError::from(&LeaseError::UnknownLease))];
    m.handle_reply(
        &Reply { id: t.request.id, landlord: L1, body: ReplyBody::CancelledAll { results } },
        4,
    );
    assert_eq!(m.stats().leases_cancelled, 1);
    assert_eq!(m.stats().cancel_failures, 2);
    // 3. No reply at all: the time-out counts it, and nothing is sent again.
    m.cancel(&ls[3], 5).unwrap();
    let t = m.poll_transmit(5).unwrap();
    let timeout = m.poll_timeout().unwrap();
    m.handle_timeout(timeout);
    assert_eq!(m.stats().cancel_failures, 3);
    assert_eq!(m.poll_transmit(timeout), None, "a cancel is not retried");
    // 4. A malformed reply (a renewal's body) counts as failed too; the late reply is ignored.
    m.handle_reply(&grant_all(&t), timeout + 1);
    assert_eq!(m.stats().cancel_failures, 3, "stale reply ignored");
    assert!(m.is_empty());
    assert!(events(&mut m).is_empty(), "cancels raise no renewal events");
}

#[test]
fn renew_for_durations_past_the_end_of_time_mean_forever() {
    // River's guard: a duration that would reach FOREVER from now is FOREVER (so ANY is allowed
    // with it); shorter ones stay finite; nothing wraps.
    use leasehold::{LeaseError, ANY};
    let now: Millis = 1_700_000_000_000;
    let mut m = RenewalManager::new(RenewalManagerConfig::default());
    for (c, d) in [(1, FOREVER), (2, FOREVER - 1), (3, FOREVER - now), (4, FOREVER - now + 1)] {
        let l = lease(L1, c, now + 60_000);
        m.renew_for(l, d, 60_000, now).unwrap();
        assert_eq!(m.expiration(&l), Ok(FOREVER), "duration {d}");
    }
    let l = lease(L1, 5, now + 60_000);
    m.renew_for(l, FOREVER - now - 1, 60_000, now).unwrap();
    assert_eq!(m.expiration(&l), Ok(FOREVER - 1), "just short of the end of time stays finite");
    let l = lease(L1, 6, now + 60_000);
    m.renew_for(l, FOREVER - 1, ANY, now).unwrap();
    assert_eq!(m.expiration(&l), Ok(FOREVER));
    assert!(matches!(
        m.renew_for(lease(L1, 7, now + 60_000), FOREVER - now - 1, ANY, now),
        Err(LeaseError::InvalidArgument(_))
    ));
    // A negative clock reading does not overflow either.
    let l = lease(L1, 8, 60_000);
    m.renew_for(l, FOREVER - 1, 60_000, -5).unwrap();
    assert_eq!(m.expiration(&l), Ok(FOREVER - 6));
    m.renew_for(l, FOREVER, 60_000, i64::MIN).unwrap();
    assert_eq!(m.expiration(&l), Ok(FOREVER));
}
