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
    // A negative clock reading does not overflow either (on a fresh manager: this one's time
    // is already `now`, and a manager's time never runs backwards).
    let mut m = RenewalManager::new(RenewalManagerConfig::default());
    let l = lease(L1, 8, 60_000);
    m.renew_for(l, FOREVER - 1, 60_000, -5).unwrap();
    assert_eq!(m.expiration(&l), Ok(FOREVER - 6));
    m.renew_for(l, FOREVER, 60_000, i64::MIN).unwrap();
    assert_eq!(m.expiration(&l), Ok(FOREVER));
}

/// A tiny deterministic generator (xorshift), so the fuzz below needs no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn hostile_replies_never_panic_and_ended_leases_are_never_named_again() {
    use leasehold::wire::WireError;
    use leasehold::LeaseError;
    use std::collections::BTreeSet;
    // Renewals, failure events, desired expirations reached, cancels: all must occur.
    let mut covered = [0u64; 4];
    for seed in 1..=40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let cfg = RenewalManagerConfig { min_rto: 1, max_batch: 4, ..Default::default() };
        let mut m = RenewalManager::new(cfg);
        let mut now: Millis = 0;
        for c in 0..12u128 {
            let ll = LandlordId(1 + (c % 3) as u64);
            let exp = 1_000 + rng.below(20_000) as i64;
            let desired = if c % 4 == 0 { FOREVER } else { 5_000 + rng.below(200_000) as i64 };
            m.renew_until(lease(ll, c, exp), desired, 1 + rng.below(30_000) as i64, 0).unwrap();
        }
        let mut sent: Vec<Transmit> = Vec::new();
        let mut ended: BTreeSet<u128> = BTreeSet::new();
        for _ in 0..3_000 {
            let Some(t) = m.poll_timeout() else { break };
            now = now.max(t).max(now + rng.below(50) as i64);
            m.handle_timeout(now);
            while let Some(tx) = m.poll_transmit(now) {
                let named: Vec<u128> = match &tx.request.body {
                    RequestBody::Renew { cookie, .. } | RequestBody::Cancel { cookie } => {
                        vec![cookie.0]
                    }
                    RequestBody::RenewAll { items } => items.iter().map(|(c, _)| c.0).collect(),
                    RequestBody::CancelAll { cookies } => cookies.iter().map(|c| c.0).collect(),
                    b => panic!("unexpected {b:?}"),
                };
                for c in named {
                    assert!(!ended.contains(&c), "seed {seed}: lease {c} named after its event");
                }
                sent.push(tx);
            }
            // Answer some request, rightly or wrongly.
            if !sent.is_empty() && rng.below(3) > 0 {
                let i = if rng.below(4) == 0 {
                    rng.below(sent.len() as u64) as usize
                } else {
                    sent.len() - 1
                };
                let tx = sent[i].clone();
                let n = match &tx.request.body {
                    RequestBody::RenewAll { items } => items.len(),
                    RequestBody::CancelAll { cookies } => cookies.len(),
                    _ => 1,
                };
                let mut reply = grant_all(&tx);
                match rng.below(30) {
                    0 => reply.id = rng.next(),
                    1 => reply.landlord = LandlordId(rng.below(5)),
                    2 => {
                        let k = rng.below(n as u64 + 2) as usize;
                        let results = (0..k).map(|_| Outcome::Ok(rng.below(40_000) as i64));
                        reply.body = ReplyBody::RenewedAll { results: results.collect() };
                    }
                    3 => reply.body = ReplyBody::Renewed { duration: -(rng.below(5) as i64) },
                    4 => {
                        let e = if rng.below(2) == 0 {
                            LeaseError::UnknownLease
                        } else {
                            LeaseError::Indefinite("busy".into())
                        };
                        reply.body = ReplyBody::Error(WireError::from(&e));
                    }
                    5 => reply.body = ReplyBody::Renewed { duration: FOREVER },
                    6 => {
                        reply.body = ReplyBody::Error(WireError { code: 999, message: "?".into() })
                    }
                    7 => m.handle_failure(tx.request.id, LeaseError::Indefinite("x".into()), now),
                    _ => {}
                }
                m.handle_reply(&reply, now + rng.below(100) as i64);
                if rng.below(4) > 0 {
                    sent.swap_remove(i);
                }
            }
            while let Some(e) = m.poll_event() {
                match e {
                    RenewalEvent::RenewalFailed { lease, .. }
                    | RenewalEvent::DesiredExpirationReached { lease, .. } => {
                        assert!(ended.insert(lease.cookie().0), "seed {seed}: a second end event");
                    }
                    RenewalEvent::Renewed { lease } => {
                        assert!(
                            !ended.contains(&lease.cookie().0),
                            "seed {seed}: {lease:?} renewed after its end at {now}"
                        )
                    }
                }
            }
            if rng.below(50) == 0 {
                let c = rng.below(12) as u128;
                let l = lease(LandlordId(1 + (c % 3) as u64), c, 0);
                if m.cancel(&l, now).is_ok() {
                    ended.insert(c);
                    // Its cancel request is the one request that may still name it.
                    let tx = m.poll_transmit(now).expect("the cancel");
                    assert!(matches!(
                        tx.request.body,
                        RequestBody::Cancel { .. } | RequestBody::CancelAll { .. }
                    ));
                    sent.push(tx);
                }
            }
        }
        assert_eq!(m.len() + ended.len(), 12, "seed {seed}: every lease is managed or has ended");
        let st = m.stats();
        for (i, n) in [st.leases_renewed, st.failures, st.desired_reached, st.cancel_requests]
            .into_iter()
            .enumerate()
        {
            covered[i] += n;
        }
    }
    assert!(covered.iter().all(|&n| n > 0), "the fuzz covers every path: {covered:?}");
}
