//! Inverted leasing: poller (landlord side) and poll listener (holder side), in virtual time.

use leasehold::inverted::{
    bandwidth, expected_detection, Admission, ListenerConfig, ListenerEvent, ListenerTransmit,
    MessageSizes, PollListener, Poller, PollerConfig,
};
use leasehold::{ErrorCode, LandlordId, LeaseError, FOREVER};

fn config(g: f64, min: i64, max: i64, frac: f64) -> PollerConfig {
    PollerConfig::new(LandlordId(9), [5; 32], g, min, max, frac).unwrap()
}

#[test]
fn period_follows_n_over_g_clamped_to_l_min_and_l_max() {
    let c = config(3.0, 15_000, FOREVER, 0.2);
    assert_eq!(c.period_for(0), (15_000, 3_000));
    assert_eq!(c.period_for(45), (15_000, 3_000));
    assert_eq!(c.period_for(90), (30_000, 6_000));
    assert_eq!(c.period_for(200), (66_667, 13_333));
    // D + A <= L_MAX: A shrinks first, then D is capped.
    let c = config(3.0, 15_000, 40_000, 0.2);
    assert_eq!(c.period_for(90), (30_000, 6_000));
    assert_eq!(c.period_for(105), (35_000, 5_000));
    assert_eq!(c.period_for(120), (40_000, 0));
    assert_eq!(c.max_holders(), 120.0);
}

#[test]
fn bad_settings_are_clear_errors() {
    for (g, min, max, f) in [
        (0.0, 15_000, FOREVER, 0.2),
        (-1.0, 15_000, FOREVER, 0.2),
        (f64::NAN, 15_000, FOREVER, 0.2),
        (3.0, 0, FOREVER, 0.2),
        (3.0, 20_000, 10_000, 0.2),
        (3.0, 15_000, FOREVER, -0.1),
    ] {
        let e = PollerConfig::new(LandlordId(1), [0; 32], g, min, max, f).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{g} {min} {max} {f}: {e}");
    }
    let e = PollListener::new(ListenerConfig::new(1).with_guard(-5)).err().unwrap();
    assert!(e.to_string().contains("guard"));
}

#[test]
fn joins_beyond_n_max_are_denied() {
    let mut p: Poller<u32> = Poller::new(config(1.0, 1_000, 3_000, 0.0), 0).unwrap();
    for i in 0..3 {
        p.join(i, 0).unwrap();
    }
    let e = p.join(3, 0).unwrap_err();
    assert_eq!(e.code(), ErrorCode::LeaseDenied);
    assert_eq!(p.len(), 3);
    assert_eq!(p.stats().denials, 1);
}

#[test]
fn silent_holders_are_cancelled_when_d_ends_and_answering_ones_kept() {
    let mut p: Poller<u32> = Poller::new(config(3.0, 15_000, FOREVER, 0.2), 0).unwrap();
    let a = p.join(1, 0).unwrap();
    let b = p.join(2, 0).unwrap();
    assert_eq!(a.next_poll_in, 0);
    p.handle_timeout(0);
    let poll = p.poll_transmit().unwrap();
    assert_eq!(poll.seq, 1);
    assert!(p.poll_transmit().is_none(), "one poll per round");
    // A holder joining during the round first answers the next poll.
    let c = p.join(3, 5_000).unwrap();
    assert_eq!(c.next_poll_in, 13_000);
    p.respond(a.cookie, poll.seq, 14_000).unwrap();
    assert_eq!(p.poll_timeout(), Some(15_001));
    p.handle_timeout(15_000);
    assert!(p.poll_expired().is_none(), "D not over yet at exactly 15 s");
    p.handle_timeout(15_001);
    let gone = p.poll_expired().unwrap();
    assert_eq!((gone.cookie, gone.resource, gone.expiration), (b.cookie, 2, 15_000));
    assert!(p.poll_expired().is_none());
    assert!(p.contains(a.cookie) && p.contains(c.cookie) && !p.contains(b.cookie));
    // A late answer from the cancelled holder is an unknown lease.
    assert_eq!(p.respond(b.cookie, 1, 15_002).unwrap_err(), LeaseError::UnknownLease);
    // Next poll at D + A = 18 s, now with D for 2 holders (still L_MIN).
    assert_eq!(p.poll_timeout(), Some(18_000));
    p.handle_timeout(18_000);
    let poll2 = p.poll_transmit().unwrap();
    assert_eq!((poll2.seq, poll2.duration, poll2.extra), (2, 15_000, 3_000));
    assert_eq!(p.leave(c.cookie, 18_001).unwrap(), 3);
    p.handle_timeout(33_001);
    let gone = p.poll_expired().unwrap();
    assert_eq!(gone.cookie, a.cookie, "a did not answer round 2");
    assert!(p.is_empty());
}

#[test]
fn listener_answers_within_d_minus_guard_and_rejoins_when_polls_stop() {
    let mut l = PollListener::new(ListenerConfig::new(7).with_guard(100)).unwrap();
    assert_eq!(l.poll_timeout(), None);
    l.join(0);
    assert_eq!(l.poll_transmit(), Some(ListenerTransmit::Join));
    let cookie = leasehold::Cookie(77);
    l.handle_admission(Ok(Admission { cookie, next_poll_in: 1_000 }), 10);
    assert_eq!(l.poll_event(), Some(ListenerEvent::Joined(cookie)));
    assert_eq!(l.cookie(), Some(cookie));
    assert_eq!(l.poll_timeout(), Some(1_111), "first poll due by T_p + guard");
    let mut now = 1_000;
    for seq in 1..=200u64 {
        let poll =
            leasehold::inverted::Poll { landlord: LandlordId(9), seq, duration: 2_000, extra: 500 };
        l.handle_poll(&poll, now);
        let at = l.poll_timeout().unwrap();
        assert!((now..now + 1_900).contains(&at), "answer at {at} for a poll at {now}");
        l.handle_timeout(at);
        assert_eq!(l.poll_transmit(), Some(ListenerTransmit::Respond { cookie, seq }));
        assert_eq!(l.poll_timeout(), Some(now + 2_601));
        now += 2_500;
    }
    // No poll: after D + A + guard the listener joins again.
    l.handle_timeout(now + 100);
    assert!(l.poll_event().is_none());
    l.handle_timeout(now + 101);
    assert_eq!(l.poll_event(), Some(ListenerEvent::PollMissed(cookie)));
    assert_eq!(l.poll_transmit(), Some(ListenerTransmit::Join));
    assert_eq!(l.cookie(), None);
    l.handle_admission(Err(LeaseError::LeaseDenied("full".into())), now + 200);
    assert!(matches!(l.poll_event(), Some(ListenerEvent::Denied(_))));
    assert_eq!(l.poll_timeout(), None);
}

#[test]
fn answer_times_are_uniform_and_seeded() {
    let times = |seed| {
        let mut l = PollListener::new(ListenerConfig::new(seed)).unwrap();
        l.join(0);
        l.handle_admission(Ok(Admission { cookie: leasehold::Cookie(1), next_poll_in: 0 }), 0);
        (0..4000u64)
            .map(|seq| {
                let poll = leasehold::inverted::Poll {
                    landlord: LandlordId(1),
                    seq,
                    duration: 10_000,
                    extra: 0,
                };
                l.handle_poll(&poll, 0);
                let t = l.poll_timeout().unwrap();
                l.handle_timeout(t);
                l.poll_transmit().unwrap();
                t
            })
            .collect::<Vec<_>>()
    };
    let a = times(1);
    assert_eq!(a, times(1));
    assert_ne!(a, times(2));
    let mean = a.iter().sum::<i64>() as f64 / a.len() as f64;
    assert!((mean - 5_000.0).abs() < 200.0, "mean answer time {mean}");
    let low = a.iter().filter(|&&t| t < 2_500).count() as f64 / a.len() as f64;
    assert!((low - 0.25).abs() < 0.03, "quarter below D/4: {low}");
}

#[test]
fn cancelled_listener_joins_again() {
    let mut p: Poller<u32> = Poller::new(config(3.0, 15_000, FOREVER, 0.0), 0).unwrap();
    let mut l = PollListener::new(ListenerConfig::new(3)).unwrap();
    l.join(0);
    l.poll_transmit();
    l.handle_admission(p.join(1, 0), 0);
    let cookie = l.cookie().unwrap();
    p.leave(cookie, 1).unwrap();
    p.handle_timeout(1);
    let poll = p.poll_transmit().unwrap();
    l.handle_poll(&poll, 1);
    let t = l.poll_timeout().unwrap();
    l.handle_timeout(t);
    let Some(ListenerTransmit::Respond { cookie: c, seq }) = l.poll_transmit() else { panic!() };
    l.handle_confirm(p.respond(c, seq, t), t);
    l.poll_event(); // Joined
    assert_eq!(l.poll_event(), Some(ListenerEvent::Cancelled(cookie)));
    assert_eq!(l.poll_transmit(), Some(ListenerTransmit::Join));
}

#[test]
fn traffic_matches_the_bandwidth_formula() {
    // N holders answering every round: bytes per interval = S_P + N (S_PR + S_RC).
    let sizes = MessageSizes::default();
    let mut p: Poller<u32> = Poller::new(config(3.0, 15_000, FOREVER, 0.2), 0).unwrap();
    let n = 120;
    let cookies: Vec<_> = (0..n).map(|i| p.join(i, 0).unwrap().cookie).collect();
    let join_bytes = p.stats().bytes_sent + p.stats().bytes_received;
    let mut now = 0;
    let rounds = 50;
    for _ in 0..rounds {
        p.handle_timeout(now);
        let poll = p.poll_transmit().unwrap();
        assert_eq!(poll.duration, 40_000);
        for (i, c) in cookies.iter().enumerate() {
            p.respond(*c, poll.seq, now + i as i64 * 100).unwrap();
        }
        now = p.next_poll_at();
    }
    p.handle_timeout(now - 1);
    assert!(p.poll_expired().is_none());
    let s = p.stats();
    let bytes = (s.bytes_sent + s.bytes_received - join_bytes) as f64;
    let measured = bytes / (now as f64 / 1000.0);
    let predicted = bandwidth(n as f64, 48_000, &sizes);
    assert!((measured - predicted).abs() < 1e-9 * predicted, "{measured} vs {predicted}");
    assert_eq!(s.polls, rounds);
    assert_eq!(s.responses, rounds * n as u64);
    assert_eq!(expected_detection(40_000, 8_000), 44_000.0);
}

#[test]
fn with_no_extra_time_an_answer_at_exactly_d_still_counts() {
    // A = 0 (here because D reaches L_MAX): the next poll is due in the very millisecond the
    // round's listening time ends. D is inclusive (an answer at exactly D counts, as in the
    // test above), also when the next poll has already gone out at that instant.
    let mut p: Poller<u32> = Poller::new(config(3.0, 15_000, 15_000, 0.2), 0).unwrap();
    let a = p.join(1, 0).unwrap();
    let b = p.join(2, 0).unwrap();
    let c = p.join(3, 0).unwrap();
    p.handle_timeout(0);
    let poll = p.poll_transmit().unwrap();
    assert_eq!((poll.duration, poll.extra), (15_000, 0));
    assert_eq!(p.poll_timeout(), Some(15_000), "the next poll");
    p.handle_timeout(15_000);
    let poll2 = p.poll_transmit().unwrap();
    assert_eq!(poll2.seq, 2);
    // Answers to round 1 arriving at exactly D, after the host ran its timer.
    p.respond(a.cookie, poll.seq, 15_000).unwrap();
    p.respond(c.cookie, poll2.seq, 15_000).unwrap();
    assert!(p.poll_expired().is_none(), "nobody cancelled before D is over");
    assert_eq!(p.poll_timeout(), Some(15_001));
    p.handle_timeout(15_001);
    let gone: Vec<_> = std::iter::from_fn(|| p.poll_expired()).map(|e| e.cookie).collect();
    let mut want = vec![b.cookie, c.cookie];
    let mut gone = gone;
    want.sort();
    gone.sort();
    assert_eq!(gone, want, "b never answered; c answered only the new round");
    assert!(p.contains(a.cookie) && !p.contains(b.cookie) && !p.contains(c.cookie));
    // Round 2 goes on: a answers it and stays.
    p.respond(a.cookie, poll2.seq, 20_000).unwrap();
    p.handle_timeout(30_001);
    assert!(p.poll_expired().is_none());
    assert!(p.contains(a.cookie));
}

#[test]
fn duplicated_or_reordered_polls_are_answered_once() {
    // Multicast may duplicate or reorder polls: each round is answered once, and an old poll
    // arriving late does not move the answer or the deadline of the newer one.
    let mut l = PollListener::new(ListenerConfig::new(5)).unwrap();
    l.join(0);
    l.poll_transmit();
    let cookie = leasehold::Cookie(9);
    l.handle_admission(Ok(Admission { cookie, next_poll_in: 0 }), 0);
    let poll = |seq| leasehold::inverted::Poll {
        landlord: LandlordId(1),
        seq,
        duration: 10_000,
        extra: 2_000,
    };
    l.handle_poll(&poll(1), 0);
    let t = l.poll_timeout().unwrap();
    l.handle_timeout(t);
    assert_eq!(l.poll_transmit(), Some(ListenerTransmit::Respond { cookie, seq: 1 }));
    l.handle_poll(&poll(1), t); // a duplicate
    assert_eq!(l.poll_timeout(), Some(12_001), "only the deadline of round 1 is pending");
    l.handle_poll(&poll(2), 12_000);
    let (answer, deadline) = (l.poll_timeout().unwrap(), 24_001);
    assert!(answer < 22_000);
    l.handle_poll(&poll(1), 12_500); // round 1 again, late
    assert_eq!(l.poll_timeout(), Some(answer));
    l.handle_timeout(answer);
    assert_eq!(l.poll_transmit(), Some(ListenerTransmit::Respond { cookie, seq: 2 }));
    assert_eq!(l.poll_transmit(), None);
    assert_eq!(l.poll_timeout(), Some(deadline));
    assert_eq!(l.stats().responses, 2);
}
