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
