//! RenewalManager rules, driven by hand: durations asked, overflow, send-time expirations,
//! batching, failure classes, retries, stale replies, cancel, desired expiration.

use leasehold::holder::{RenewalEvent, RenewalManager, RenewalManagerConfig, Transmit};
use leasehold::wire::{Outcome, WireError};
use leasehold::{
    Cookie, LandlordId, Lease, LeaseError, Millis, Reply, ReplyBody, RequestBody, ANY, FOREVER,
};

const L1: LandlordId = LandlordId(1);
const L2: LandlordId = LandlordId(2);

fn exact() -> RenewalManagerConfig {
    RenewalManagerConfig { max_clock_drift_ppm: 0, ..Default::default() }
}

fn lease(l: LandlordId, c: u128, exp: Millis) -> Lease {
    Lease::new(l, Cookie(c), exp)
}

/// Runs the manager's timers up to `now` and collects what it sends.
fn due(m: &mut RenewalManager, now: Millis) -> Vec<Transmit> {
    m.handle_timeout(now);
    let mut out = Vec::new();
    while let Some(t) = m.poll_transmit(now) {
        out.push(t);
    }
    out
}

/// Advances to the next timer and collects what is sent then.
fn next(m: &mut RenewalManager) -> (Millis, Vec<Transmit>) {
    let t = m.poll_timeout().expect("a timer");
    (t, due(m, t))
}

fn events(m: &mut RenewalManager) -> Vec<RenewalEvent> {
    std::iter::from_fn(|| m.poll_event()).collect()
}

/// The event of a manager that gave up renewing `lease` (kept for ever) on `error`.
fn gave_up(lease: Lease, error: LeaseError) -> RenewalEvent {
    RenewalEvent::RenewalFailed { lease, desired_expiration: FOREVER, error: Some(error) }
}

fn items(t: &Transmit) -> Vec<(Cookie, i64)> {
    match &t.request.body {
        RequestBody::Renew { cookie, duration } => vec![(*cookie, *duration)],
        RequestBody::RenewAll { items } => items.clone(),
        b => panic!("not a renewal: {b:?}"),
    }
}

fn renewed(t: &Transmit, granted: i64) -> Reply {
    let body = match &t.request.body {
        RequestBody::Renew { .. } => ReplyBody::Renewed { duration: granted },
        RequestBody::RenewAll { items } => {
            ReplyBody::RenewedAll { results: items.iter().map(|_| Outcome::Ok(granted)).collect() }
        }
        b => panic!("not a renewal: {b:?}"),
    };
    Reply { id: t.request.id, landlord: t.landlord, body }
}

fn error(t: &Transmit, e: &LeaseError) -> Reply {
    Reply { id: t.request.id, landlord: t.landlord, body: ReplyBody::Error(WireError::from(e)) }
}

#[test]
fn requested_duration_is_min_of_renew_duration_and_remaining_desired() {
    let mut m = RenewalManager::new(exact());
    let l = lease(L1, 1, 10_000);
    m.renew_until(l, 100_000, 60_000, 0).unwrap();
    let (t1, sent) = next(&mut m);
    assert!(t1 < 10_000);
    assert_eq!(items(&sent[0]), vec![(Cookie(1), 60_000)]);
    m.handle_reply(&renewed(&sent[0], 60_000), t1 + 20);
    assert_eq!(m.lease(&l).unwrap().expiration(), t1 + 60_000);
    let (t2, sent) = next(&mut m);
    assert!(t2 > t1 + 30_000 && t2 < t1 + 60_000, "renewal at {t2}");
    assert_eq!(items(&sent[0]), vec![(Cookie(1), 100_000 - t2)], "remaining desired duration");
    // The grant now reaches the desired expiration: no more renewals, then the event.
    m.handle_reply(&renewed(&sent[0], 100_000 - t2), t2 + 20);
    assert_eq!(m.next_renewal(&l), None);
    assert_eq!(m.poll_timeout(), Some(100_000));
    let _ = events(&mut m);
    assert!(due(&mut m, 100_000).is_empty());
    assert_eq!(
        events(&mut m),
        vec![RenewalEvent::DesiredExpirationReached {
            lease: m_lease(l, 100_000),
            desired_expiration: 100_000
        }]
    );
    assert!(m.is_empty());
    assert_eq!(m.poll_timeout(), None);
}

fn m_lease(l: Lease, exp: Millis) -> Lease {
    let mut l = l;
    l.set_expiration(exp);
    l
}

#[test]
fn any_only_with_forever_and_bad_durations_are_rejected() {
    let mut m = RenewalManager::new(exact());
    let l = lease(L1, 1, 10_000);
    assert!(matches!(m.renew_until(l, 50_000, ANY, 0), Err(LeaseError::InvalidArgument(_))));
    assert!(matches!(m.renew_until(l, 50_000, 0, 0), Err(LeaseError::InvalidArgument(_))));
    assert!(matches!(m.renew_until(l, 50_000, -5, 0), Err(LeaseError::InvalidArgument(_))));
    assert!(matches!(m.renew_for(l, -2, 1_000, 0), Err(LeaseError::InvalidArgument(_))));
    assert!(m.is_empty());
    m.renew_until(l, FOREVER, ANY, 0).unwrap();
    assert!(matches!(m.set_expiration(&l, 5_000, 0), Err(LeaseError::InvalidArgument(_))));
    assert_eq!(m.expiration(&l), Ok(FOREVER));
    let (_, sent) = next(&mut m);
    assert_eq!(items(&sent[0]), vec![(Cookie(1), ANY)]);
    // The landlord grants FOREVER: nothing more to do, ever.
    m.handle_reply(&renewed(&sent[0], FOREVER), 9_000);
    assert_eq!(m.lease(&l).unwrap().expiration(), FOREVER);
    assert_eq!(m.poll_timeout(), None);
}

#[test]
fn forever_never_overflows() {
    // Jini 1.0 added FOREVER to the current time and never renewed. Here it saturates.
    let now: Millis = 1_700_000_000_000;
    let mut m = RenewalManager::new(exact());
    let l = lease(L1, 1, now + 60_000);
    m.renew_for(l, FOREVER, 60_000, now).unwrap();
    assert_eq!(m.expiration(&l), Ok(FOREVER));
    let l2 = lease(L1, 2, now + 60_000);
    // A duration past the end of time is FOREVER (River's guard), never a wrap-around.
    m.renew_for(l2, FOREVER - 1, FOREVER, now).unwrap();
    assert_eq!(m.expiration(&l2), Ok(FOREVER));
    // A huge finite desired expiration stays finite.
    m.renew_until(l2, FOREVER - 1, FOREVER, now).unwrap();
    assert_eq!(m.expiration(&l2), Ok(FOREVER - 1));
    let (t, sent) = next(&mut m);
    assert!(t > now && t < now + 60_000);
    let mut asked = items(&sent[0]);
    asked.sort();
    assert_eq!(asked, vec![(Cookie(1), 60_000), (Cookie(2), FOREVER - 1 - t)]);
    // Even at the end of time nothing wraps: a huge finite grant saturates, and stays finite.
    m.handle_reply(&renewed(&sent[0], FOREVER - 1), t + 1);
    assert_eq!(m.lease(&l2).unwrap().expiration(), FOREVER - 1);
    assert_eq!(m.lease(&l).unwrap().expiration(), t + 60_000, "capped to what was asked");
    let mut m = RenewalManager::new(exact());
    let far = lease(L1, 3, i64::MAX - 10);
    m.renew_for(far, FOREVER, 1_000, i64::MAX - 20).unwrap();
    let (t, sent) = next(&mut m);
    m.handle_reply(&renewed(&sent[0], 1_000), t + 1);
    assert_eq!(m.lease(&far).unwrap().expiration(), FOREVER - 1);
    let next = m.poll_timeout().unwrap();
    assert!(next > t && next < FOREVER - 1, "the next renewal is still ahead: {next}");
}

#[test]
fn local_expiration_counts_from_send_time() {
    let mut m = RenewalManager::new(exact());
    let l = lease(L1, 1, 10_000);
    m.renew_for(l, FOREVER, 10_000, 0).unwrap();
    let t = m.poll_timeout().unwrap();
    m.handle_timeout(t);
    // The host gets round to sending 300 ms later; the reply arrives 2 s after that.
    let tx = m.poll_transmit(t + 300).unwrap();
    m.handle_reply(&renewed(&tx, 10_000), t + 2_300);
    assert_eq!(m.lease(&l).unwrap().expiration(), t + 300 + 10_000);
}

#[test]
fn clock_drift_margin_shortens_what_the_holder_believes() {
    let cfg = RenewalManagerConfig { max_clock_drift_ppm: 10_000, ..Default::default() };
    let mut m = RenewalManager::new(cfg);
    let l = lease(L1, 1, 10_000);
    m.renew_for(l, FOREVER, 60_000, 0).unwrap();
    let (t, sent) = next(&mut m);
    m.handle_reply(&renewed(&sent[0], 60_000), t + 10);
    assert_eq!(m.lease(&l).unwrap().expiration(), t + 60_000 - 601);
}

#[test]
fn unknown_leases_give_unknown_lease() {
    let mut m = RenewalManager::new(exact());
    let l = lease(L1, 1, 10_000);
    assert_eq!(m.expiration(&l), Err(LeaseError::UnknownLease));
    assert_eq!(m.set_expiration(&l, 5, 0), Err(LeaseError::UnknownLease));
    assert_eq!(m.remove(&l), Err(LeaseError::UnknownLease));
    assert_eq!(m.cancel(&l, 0), Err(LeaseError::UnknownLease));
    assert_eq!(m.renew_duration(&l), Err(LeaseError::UnknownLease));
    assert_eq!(m.lease(&l), None);
    m.renew_for(l, 1_000, 500, 0).unwrap();
    assert_eq!(m.remove(&l).unwrap().expiration(), 10_000);
    assert_eq!(m.remove(&l), Err(LeaseError::UnknownLease));
    assert_eq!(m.poll_timeout(), None);
}

#[test]
fn definite_failures_drop_the_lease_with_their_error() {
    for err in [
        LeaseError::UnknownLease,
        LeaseError::LeaseDenied("no".into()),
        LeaseError::InvalidArgument("bad".into()),
    ] {
        let mut m = RenewalManager::new(exact());
        let l = lease(L1, 1, 10_000);
        m.renew_for(l, FOREVER, 10_000, 0).unwrap();
        let (t, sent) = next(&mut m);
        m.handle_reply(&error(&sent[0], &err), t + 5);
        assert_eq!(events(&mut m), vec![gave_up(l, err)]);
        assert!(m.is_empty());
        assert_eq!(m.poll_timeout(), None);
        assert_eq!(m.stats().failures, 1);
    }
}

#[test]
fn malformed_replies_are_definite() {
    let mut m = RenewalManager::new(exact());
    let (a, b) = (lease(L1, 1, 10_000), lease(L1, 2, 10_000));
    m.renew_for(a, FOREVER, 10_000, 0).unwrap();
    m.renew_for(b, FOREVER, 10_000, 0).unwrap();
    let (t, sent) = next(&mut m);
    assert_eq!(sent.len(), 1);
    let bad = Reply {
        id: sent[0].request.id,
        landlord: L1,
        body: ReplyBody::RenewedAll { results: vec![Outcome::Ok(5)] },
    };
    m.handle_reply(&bad, t + 5);
    let ev = events(&mut m);
    assert_eq!(ev.len(), 2);
    assert!(ev.iter().all(|e| matches!(
        e,
        RenewalEvent::RenewalFailed { error: Some(LeaseError::Decode(_)), .. }
    )));
}

#[test]
fn batch_replies_apply_per_lease() {
    let mut m = RenewalManager::new(exact());
    let (a, b, c) = (lease(L1, 1, 10_000), lease(L1, 2, 10_000), lease(L1, 3, 10_000));
    for l in [a, b, c] {
        m.renew_for(l, FOREVER, 10_000, 0).unwrap();
    }
    let (t, sent) = next(&mut m);
    assert_eq!(sent.len(), 1);
    let order = items(&sent[0]);
    let results = order
        .iter()
        .map(|(c, _)| match c.0 {
            1 => Outcome::Ok(10_000),
            2 => Outcome::Err(WireError::from(&LeaseError::UnknownLease)),
            _ => Outcome::Err(WireError::from(&LeaseError::Indefinite("busy".into()))),
        })
        .collect();
    let reply =
        Reply { id: sent[0].request.id, landlord: L1, body: ReplyBody::RenewedAll { results } };
    m.handle_reply(&reply, t + 5);
    assert_eq!(m.lease(&a).unwrap().expiration(), t + 10_000);
    assert!(m.lease(&b).is_none());
    assert!(m.lease(&c).is_some(), "an indefinite error is retried");
    assert!(m.next_renewal(&c).unwrap() > t + 5);
    let ev = events(&mut m);
    assert!(ev.contains(&gave_up(b, LeaseError::UnknownLease)));
    assert_eq!(m.stats().leases_renewed, 1);
}

#[test]
fn indefinite_failures_back_off_until_the_actual_expiration() {
    let cfg = RenewalManagerConfig { min_rto: 100, ..exact() };
    let mut m = RenewalManager::new(cfg);
    let hour = 3_600_000;
    let l = lease(L1, 1, hour);
    m.renew_for(l, FOREVER, hour, 0).unwrap();
    let mut sends = Vec::new();
    let err = LeaseError::Indefinite("connection refused".into());
    loop {
        let t = m.poll_timeout().expect("a timer until the lease ends");
        let sent = due(&mut m, t);
        if sent.is_empty() {
            // The actual expiration: dropped with the last error.
            assert_eq!(t, hour);
            break;
        }
        sends.push(t);
        // The host's transport fails at once, every time.
        m.handle_failure(sent[0].request.id, err.clone(), t);
        assert!(events(&mut m).is_empty(), "no event before the actual expiration");
    }
    assert_eq!(events(&mut m), vec![gave_up(l, err)]);
    let gaps: Vec<i64> = sends.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(sends.len() >= 5, "retried: {sends:?}");
    assert!(sends.len() < 40, "no tight loop: {gaps:?}");
    assert!(
        gaps.iter().all(|&g| (100..=60_000).contains(&g)),
        "min_rto..max_retry_interval apart: {gaps:?}"
    );
    assert!(gaps[0] < gaps[1] && gaps[1] < gaps[2], "backs off: {gaps:?}");
    assert!(sends.iter().all(|&s| s < hour));
    assert!(hour - sends.last().unwrap() < 1_000, "keeps trying until the end: {sends:?}");
    assert_eq!(m.poll_timeout(), None);
    assert_eq!(m.stats().failures, 1);
}

#[test]
fn requests_without_reply_time_out_and_are_retried() {
    let mut m = RenewalManager::new(exact());
    let l = lease(L1, 1, 60_000);
    m.renew_for(l, FOREVER, 60_000, 0).unwrap();
    let (t0, sent0) = next(&mut m);
    let timeout = m.rtt(L1).unwrap().request_timeout();
    let (t1, sent1) = next(&mut m);
    assert_eq!(t1, t0 + timeout + 1, "a reply at t0 + timeout is still on time");
    assert_eq!(sent1.len(), 1, "the time-out was the wait: retried at once");
    assert_eq!(m.stats().timeouts, 1);
    assert_eq!(m.rtt(L1).unwrap().request_timeout(), 2 * timeout, "Karn back-off");
    let (t2, _) = next(&mut m);
    assert_eq!(t2, t1 + 2 * timeout + 1, "the retry waits twice as long");
    // The late reply to the first request is ignored; the lease keeps its old expiration.
    m.handle_reply(&renewed(&sent0[0], 60_000), t2 + 1);
    assert_eq!(m.stats().replies_ignored, 1);
    assert_eq!(m.lease(&l).unwrap().expiration(), 60_000);
}

#[test]
fn stale_duplicate_and_foreign_replies_are_ignored() {
    let mut m = RenewalManager::new(exact());
    let l = lease(L1, 1, 10_000);
    m.renew_for(l, FOREVER, 10_000, 0).unwrap();
    let (t, sent) = next(&mut m);
    let mut r = renewed(&sent[0], 10_000);
    r.id = 999;
    m.handle_reply(&r, t + 1);
    let mut foreign = renewed(&sent[0], 10_000);
    foreign.landlord = L2;
    m.handle_reply(&foreign, t + 1);
    assert_eq!(m.stats().replies_ignored, 2);
    assert_eq!(m.lease(&l).unwrap().expiration(), 10_000);
    m.handle_reply(&renewed(&sent[0], 10_000), t + 1);
    m.handle_reply(&renewed(&sent[0], 20_000), t + 2);
    assert_eq!(m.stats().replies_ignored, 3);
    assert_eq!(m.lease(&l).unwrap().expiration(), t + 10_000);
    m.handle_failure(12345, LeaseError::Indefinite("x".into()), t + 3);
    assert_eq!(m.lease(&l).unwrap().expiration(), t + 10_000);
}

#[test]
fn removed_or_replaced_leases_ignore_their_reply() {
    let mut m = RenewalManager::new(exact());
    let l = lease(L1, 1, 10_000);
    m.renew_for(l, FOREVER, 10_000, 0).unwrap();
    let (t, sent) = next(&mut m);
    m.remove(&l).unwrap();
    m.handle_reply(&renewed(&sent[0], 10_000), t + 1);
    assert!(m.is_empty());
    assert!(events(&mut m).is_empty());
    // Replaced while in flight: the new entry is not touched by the old reply.
    m.renew_for(l, FOREVER, 10_000, t).unwrap();
    let (t2, sent2) = next(&mut m);
    m.renew_for(lease(L1, 1, 30_000), FOREVER, 10_000, t2).unwrap();
    m.handle_reply(&renewed(&sent2[0], 10_000), t2 + 1);
    assert_eq!(m.lease(&l).unwrap().expiration(), 30_000);
}

#[test]
fn leases_of_one_landlord_batch_and_others_do_not() {
    let mut m = RenewalManager::new(exact());
    for c in 0..5 {
        // Expirations spread over 2 s: all inside the batch window.
        m.renew_for(lease(L1, c, 60_000 + 500 * c as i64), FOREVER, 60_000, 0).unwrap();
    }
    m.renew_for(lease(L2, 9, 60_000), FOREVER, 60_000, 0).unwrap();
    let (t, sent) = next(&mut m);
    assert_eq!(sent.len(), 2, "one request per landlord: {sent:?}");
    let one = sent.iter().find(|t| t.landlord == L1).unwrap();
    assert!(matches!(one.request.body, RequestBody::RenewAll { ref items } if items.len() == 5));
    let two = sent.iter().find(|t| t.landlord == L2).unwrap();
    assert!(matches!(two.request.body, RequestBody::Renew { .. }), "a lone lease uses renew");
    assert!(t < 60_000);

    let cfg = RenewalManagerConfig { max_batch: 1, ..exact() };
    let mut m = RenewalManager::new(cfg);
    for c in 0..5 {
        m.renew_for(lease(L1, c, 60_000), FOREVER, 60_000, 0).unwrap();
    }
    let (_, sent) = next(&mut m);
    assert_eq!(sent.len(), 5, "batching off");
    assert!(sent.iter().all(|t| matches!(t.request.body, RequestBody::Renew { .. })));
}

#[test]
fn measured_round_trips_move_the_schedule() {
    // A far landlord (2 s round trips) is renewed earlier than a near one (20 ms).
    let mut m = RenewalManager::new(exact());
    let (near, far) = (lease(L1, 1, 10_000), lease(L2, 2, 10_000));
    m.renew_for(near, FOREVER, 20_000, 0).unwrap();
    m.renew_for(far, FOREVER, 20_000, 0).unwrap();
    let mut now = 0;
    for _ in 0..12 {
        let (t, sent) = next(&mut m);
        now = t;
        for tx in &sent {
            let rtt = if tx.landlord == L1 { 20 } else { 2_000 };
            m.handle_reply(&renewed(tx, 20_000), t + rtt);
        }
    }
    let near_srtt = m.rtt(L1).unwrap().srtt();
    let far_srtt = m.rtt(L2).unwrap().srtt();
    assert!((15..=25).contains(&near_srtt), "near srtt {near_srtt}");
    assert!((1_900..=2_100).contains(&far_srtt), "far srtt {far_srtt}");
    let lead = |l: &Lease| m.lease(l).unwrap().expiration() - m.next_renewal(l).unwrap();
    assert!(now > 0);
    assert!(lead(&far) >= 3 * 2_000, "far lead {} covers 3 round trips", lead(&far));
    assert!(lead(&near) < lead(&far), "near {} far {}", lead(&near), lead(&far));
    assert_eq!(lead(&near), 20_000 / 8, "near: 1/8 of the grant");
}

#[test]
fn cancel_removes_and_queues_one_request_per_landlord() {
    let mut m = RenewalManager::new(exact());
    let ls: Vec<Lease> = (0..3).map(|c| lease(L1, c, 60_000)).collect();
    for l in &ls {
        m.renew_for(*l, FOREVER, 60_000, 0).unwrap();
    }
    let solo = lease(L2, 7, 60_000);
    m.renew_for(solo, FOREVER, 60_000, 0).unwrap();
    m.cancel(&ls[0], 5).unwrap();
    m.cancel(&ls[1], 5).unwrap();
    m.cancel(&solo, 5).unwrap();
    assert_eq!(m.len(), 1);
    let mut sent: Vec<Transmit> = std::iter::from_fn(|| m.poll_transmit(6)).collect();
    sent.sort_by_key(|t| t.landlord);
    assert_eq!(sent.len(), 2);
    assert!(
        matches!(&sent[0].request.body, RequestBody::CancelAll { cookies } if cookies.len() == 2)
    );
    assert!(
        matches!(&sent[1].request.body, RequestBody::Cancel { cookie } if *cookie == Cookie(7))
    );
    assert_eq!(m.stats().cancel_requests, 2);
    let reply = Reply { id: sent[1].request.id, landlord: L2, body: ReplyBody::Cancelled };
    m.handle_reply(&reply, 20);
    assert_eq!(m.stats().leases_cancelled, 1);
    assert!(events(&mut m).is_empty());
}

#[test]
fn reached_desired_expiration_stops_requests() {
    let mut m = RenewalManager::new(exact());
    let l = lease(L1, 1, 10_000);
    m.renew_until(l, 25_000, 10_000, 0).unwrap();
    let mut requests = 0;
    while let Some(t) = m.poll_timeout() {
        for tx in due(&mut m, t) {
            requests += 1;
            let asked = items(&tx)[0].1;
            assert!(asked <= 10_000 && asked <= 25_000 - t);
            m.handle_reply(&renewed(&tx, asked), t + 10);
        }
    }
    let ev = events(&mut m);
    assert!(matches!(ev.last(), Some(RenewalEvent::DesiredExpirationReached { .. })));
    assert_eq!(ev.iter().filter(|e| !matches!(e, RenewalEvent::Renewed { .. })).count(), 1);
    assert!((2..=4).contains(&requests), "requests {requests}");
    assert!(m.is_empty());
}

#[test]
fn set_expiration_reschedules() {
    let mut m = RenewalManager::new(exact());
    let l = lease(L1, 1, 60_000);
    m.renew_until(l, 30_000, 60_000, 0).unwrap();
    assert_eq!(m.next_renewal(&l), None, "the grant already covers the desired expiration");
    assert_eq!(m.poll_timeout(), Some(30_000));
    m.set_expiration(&l, 200_000, 1_000).unwrap();
    assert_eq!(m.expiration(&l), Ok(200_000));
    assert!(m.next_renewal(&l).unwrap() < 60_000);
    m.set_expiration(&l, 500, 1_000).unwrap();
    assert!(due(&mut m, 1_000).is_empty());
    assert!(matches!(events(&mut m)[..], [RenewalEvent::DesiredExpirationReached { .. }]));
}

#[test]
fn config_validation() {
    assert!(RenewalManagerConfig::default().validate().is_ok());
    let bad = RenewalManagerConfig { max_batch: 0, ..Default::default() };
    assert!(matches!(RenewalManager::try_new(bad.clone()), Err(LeaseError::InvalidArgument(_))));
    assert_eq!(RenewalManager::new(bad).config().max_batch, 1);
    let bad = RenewalManagerConfig { min_rto: 0, ..Default::default() };
    assert!(bad.validate().is_err());
    let bad = RenewalManagerConfig { max_clock_drift_ppm: 1_000_000, ..Default::default() };
    assert!(bad.validate().is_err());
}

#[test]
fn heavy_rescheduling_keeps_timers_exact() {
    // Thousands of changes leave stale timers behind; the manager must still wake exactly when
    // needed and report each lease once.
    let mut m = RenewalManager::new(exact());
    let ls: Vec<Lease> = (0..3).map(|c| lease(L1, c, 60_000)).collect();
    for l in &ls {
        m.renew_until(*l, 500_000, 60_000, 0).unwrap();
    }
    for i in 0..20_000i64 {
        let l = &ls[(i % 3) as usize];
        m.set_expiration(l, 100_000 + (i * 7_919) % 400_000, 0).unwrap();
    }
    m.set_expiration(&ls[0], 30_000, 0).unwrap();
    m.set_expiration(&ls[1], 200_000, 0).unwrap();
    m.remove(&ls[2]).unwrap();
    assert_eq!(m.poll_timeout(), Some(30_000), "lease 0's desired expiration comes first");
    let mut reached = Vec::new();
    while let Some(t) = m.poll_timeout() {
        for tx in due(&mut m, t) {
            let asked = items(&tx)[0].1;
            m.handle_reply(&renewed(&tx, asked), t + 10);
        }
        for e in events(&mut m) {
            if let RenewalEvent::DesiredExpirationReached { lease, .. } = e {
                reached.push((t, lease.cookie()));
            }
        }
    }
    assert_eq!(reached, vec![(30_000, Cookie(0)), (200_000, Cookie(1))]);
}

/// Regression (independent testing): with a clock-drift margin the last grant's local expiration
/// falls a few ms short of the desired expiration; the event must still not come before it,
/// and it carries the desired expiration.
#[test]
fn desired_expiration_event_never_comes_early() {
    let mut m = RenewalManager::new(RenewalManagerConfig::default()); // 100 ppm drift margin
    let l = lease(L1, 1, 10_000);
    m.renew_until(l, 100_000, 60_000, 0).unwrap();
    let mut reached = None;
    while let Some(t) = m.poll_timeout() {
        for tx in due(&mut m, t) {
            let asked = items(&tx)[0].1;
            m.handle_reply(&renewed(&tx, asked), t);
        }
        for e in events(&mut m) {
            if let RenewalEvent::DesiredExpirationReached { desired_expiration, .. } = e {
                reached = Some((t, desired_expiration));
            }
        }
    }
    let (at, desired) = reached.expect("the desired expiration is reported");
    assert_eq!(desired, 100_000);
    assert!(at >= 100_000, "reported at {at}, before the desired expiration");
}
