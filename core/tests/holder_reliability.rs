//! The renewal manager under a host clock that steps back (issue 13, finding 4), and its checked
//! restore (finding 2): every inconsistent snapshot is refused with a decode error, and fuzzed
//! snapshots are refused or give a consistent manager, never a panic.

mod common;

use leasehold::holder::{ManagerSnapshot, RenewalEvent, RenewalManager, RenewalManagerConfig};
use leasehold::{
    Cookie, LandlordId, Lease, LeaseError, Millis, Reply, ReplyBody, RequestBody, FOREVER,
};
use proptest::prelude::*;

const L1: LandlordId = LandlordId(1);

fn exact() -> RenewalManagerConfig {
    RenewalManagerConfig { max_clock_drift_ppm: 0, ..Default::default() }
}

fn renewed(id: u64, granted: i64) -> Reply {
    Reply { id, landlord: L1, body: ReplyBody::Renewed { duration: granted } }
}

fn asked(t: &leasehold::Transmit) -> i64 {
    match t.request.body {
        RequestBody::Renew { duration, .. } => duration,
        ref b => panic!("not a renewal: {b:?}"),
    }
}

/// A renewal sent after the host clock stepped back asks for no more than what the desired
/// expiration leaves on the manager's clock (which did not go back): the lease is never kept
/// past its desired expiration because the clock went back. What the manager shows is on the
/// host's clock as it reads now: 9 s earlier than before the step.
#[test]
fn a_renewal_after_a_step_back_never_reaches_past_the_desired_expiration() {
    let mut m = RenewalManager::new(exact());
    let lease = Lease::new(L1, Cookie(1), 10_000);
    m.renew_until(lease, 20_000, 60_000, 0).unwrap();
    let due = m.poll_timeout().unwrap();
    m.handle_timeout(due);
    // The host clock steps back by far more than the desired expiration is away.
    let tx = m.poll_transmit(due - 9_000).unwrap();
    assert_eq!(m.clock_offset(), 9_000);
    assert_eq!(m.now(), due - 9_000);
    assert_eq!(asked(&tx), 20_000 - due, "counted on the manager's clock, not the host's");
    m.handle_reply(&renewed(tx.request.id, 20_000 - due), due - 9_000);
    assert_eq!(
        m.lease(&lease).unwrap().expiration(),
        11_000,
        "the desired end, on the host's clock"
    );
    assert_eq!(m.expiration(&lease), Ok(11_000));
    assert_eq!(m.rtt(L1).unwrap().samples(), 1, "a round trip of zero, not a negative one");
}

/// After a step back, a renewal counts from its real send time: the manager's clock does not
/// stand still waiting for the host's to catch up (which would make it believe in the lease
/// for as long as the step, past what the landlord grants: issue 13's simulator found that).
#[test]
fn after_a_step_back_a_renewal_counts_from_its_real_send_time() {
    let mut m = RenewalManager::new(exact());
    let lease = Lease::new(L1, Cookie(1), 40_000);
    m.renew_until(lease, FOREVER, 30_000, 0).unwrap();
    m.handle_timeout(10_000);
    // The host clock steps back 10 s (to 0); the renewal falls due 10 s later (host 10 s).
    m.handle_timeout(0);
    assert_eq!(m.lease(&lease).unwrap().expiration(), 30_000, "40 s on the old clock");
    let due = m.poll_timeout().unwrap();
    assert_eq!(due, 10_000, "20 s on the old clock");
    m.handle_timeout(due);
    let tx = m.poll_transmit(due).unwrap();
    m.handle_reply(&renewed(tx.request.id, 30_000), due + 10);
    assert_eq!(
        m.lease(&lease).unwrap().expiration(),
        due + 30_000,
        "the host's send time plus the grant, on the host's clock"
    );
}

/// `renew_for` counts the desired expiration from the host's `now`, on the manager's clock.
#[test]
fn renew_for_after_a_step_back_counts_from_the_hosts_now() {
    let mut m = RenewalManager::new(exact());
    m.renew_for(Lease::new(L1, Cookie(1), 100_000), 5_000, 1_000, 50_000).unwrap();
    let late = Lease::new(L1, Cookie(2), 100_000);
    m.renew_for(late, 5_000, 1_000, 1_000).unwrap();
    assert_eq!(m.clock_offset(), 49_000);
    assert_eq!(m.expiration(&late), Ok(6_000));
}

/// A desired expiration reached at the manager's time is reported at the next time-out even
/// while the host clock reads earlier, and the lease is not renewed meanwhile.
#[test]
fn a_lease_given_up_stays_given_up_when_the_clock_steps_back() {
    let mut m = RenewalManager::new(exact());
    let a = Lease::new(L1, Cookie(1), 8_000);
    m.renew_until(a, 30_000, 5_000, 0).unwrap();
    m.handle_timeout(40_000);
    let events: Vec<_> = std::iter::from_fn(|| m.poll_event()).collect();
    assert!(matches!(&events[..], [RenewalEvent::RenewalFailed { .. }]), "{events:?}");
    // Back to 1 s: a late reply or a time-out brings nothing back and sends nothing.
    m.handle_timeout(1_000);
    assert!(m.poll_transmit(1_000).is_none());
    assert!(m.is_empty());
    // A lease added now with a desired expiration already past is reached at once.
    let b = Lease::new(L1, Cookie(2), 100_000);
    m.renew_until(b, 500, 5_000, 1_000).unwrap();
    m.handle_timeout(2_000);
    let events: Vec<_> = std::iter::from_fn(|| m.poll_event()).collect();
    assert!(matches!(&events[..], [RenewalEvent::DesiredExpirationReached { .. }]), "{events:?}");
    assert!(m.poll_transmit(2_000).is_none(), "nothing is sent for it");
}

/// A request that timed out is not answered by a reply handed in with an earlier clock, and
/// nothing is sent again because the clock went back.
#[test]
fn a_timed_out_request_is_not_revived_by_a_step_back() {
    let mut m = RenewalManager::new(exact());
    let lease = Lease::new(L1, Cookie(1), 60_000);
    m.renew_until(lease, FOREVER, 60_000, 0).unwrap();
    let due = m.poll_timeout().unwrap();
    m.handle_timeout(due);
    let first = m.poll_transmit(due).unwrap();
    let timeout = m.poll_timeout().unwrap();
    m.handle_timeout(timeout);
    assert_eq!(m.stats().timeouts, 1);
    let (retry_at, retry) = match m.poll_transmit(timeout) {
        Some(tx) => (timeout, tx),
        None => {
            let t = m.poll_timeout().unwrap();
            m.handle_timeout(t);
            (t, m.poll_transmit(t).expect("the retry"))
        }
    };
    // The host clock steps back to the first send: the stale reply is ignored, nothing more
    // goes out, and the retry's grant counts from its own send time.
    m.handle_reply(&renewed(first.request.id, 60_000), due);
    assert_eq!(m.stats().replies_ignored, 1, "the reply to a timed-out request is stale");
    m.handle_timeout(due);
    assert!(m.poll_transmit(due).is_none(), "nothing is sent again");
    m.handle_reply(&renewed(retry.request.id, 60_000), due);
    assert_eq!(m.clock_offset(), retry_at - due);
    assert_eq!(m.lease(&lease).unwrap().expiration(), retry_at + 60_000 - m.clock_offset());
    assert_eq!(m.stats().requests_sent, 2);
}

fn busy_manager() -> (RenewalManager, Vec<leasehold::Transmit>) {
    let mut m = RenewalManager::new(RenewalManagerConfig {
        max_batch: 3,
        min_rto: 20,
        ..Default::default()
    });
    for i in 0..8u128 {
        let l = LandlordId(1 + (i % 3) as u64);
        m.renew_until(Lease::new(l, Cookie(i + 1), 5_000 + i as i64 * 300), FOREVER, 4_000, 0)
            .unwrap();
    }
    m.renew_for(Lease::new(LandlordId(9), Cookie(77), 100_000), 50_000, 10_000, 0).unwrap();
    let mut sent = Vec::new();
    for t in [3_000, 4_000, 4_500] {
        m.handle_timeout(t);
        if let Some(tx) = m.poll_transmit(t) {
            sent.push(tx);
        }
    }
    // One answered, one failed, one (or more) still out; one lease cancelled, one ready.
    if let Some(tx) = sent.first() {
        let n = match &tx.request.body {
            RequestBody::RenewAll { items } => items.len(),
            _ => 1,
        };
        let body = if n == 1 {
            ReplyBody::Renewed { duration: 4_000 }
        } else {
            ReplyBody::RenewedAll { results: vec![leasehold::wire::Outcome::Ok(4_000); n] }
        };
        m.handle_reply(&Reply { id: tx.request.id, landlord: tx.landlord, body }, 4_600);
    }
    if let Some(tx) = sent.get(1) {
        m.handle_failure(tx.request.id, LeaseError::Indefinite("lost".into()), 4_700);
    }
    m.cancel(&Lease::new(LandlordId(9), Cookie(77), 0), 4_800).unwrap();
    m.handle_timeout(4_900);
    (m, sent)
}

fn decode_err<T>(r: leasehold::Result<T>) -> String {
    match r {
        Err(LeaseError::Decode(m)) => m,
        Err(e) => panic!("expected a decode error, got {e:?}"),
        Ok(_) => panic!("an inconsistent snapshot was accepted"),
    }
}

fn restore_text(text: &str) -> leasehold::Result<RenewalManager> {
    RenewalManager::restore(ManagerSnapshot::from_json(text)?)
}

#[test]
fn restore_refuses_inconsistent_snapshots() {
    let (m, _) = busy_manager();
    let snap = m.snapshot();
    let text = snap.to_json();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut d = doc.clone();
        f(&mut d);
        serde_json::to_string(&d).unwrap()
    };
    assert!(restore_text(&text).is_ok());
    let first_held =
        doc["cells"].as_array().unwrap().iter().position(|c| !c["entry"].is_null()).unwrap();
    // The same lease in two slots.
    let t = edit(&|d| {
        let cells = d["cells"].as_array_mut().unwrap();
        let c = cells[first_held].clone();
        cells.push(c);
    });
    assert!(decode_err(restore_text(&t)).contains("appears twice"));
    let t = edit(&|d| {
        let cells = d["cells"].as_array_mut().unwrap();
        let c = cells[first_held].clone();
        cells.push(c);
        let n = cells.len();
        d["free"].as_array_mut().unwrap().push(serde_json::Value::from(n as u64 - 1));
    });
    assert!(decode_err(restore_text(&t)).contains("appears twice"));
    // A held slot listed as free.
    let t = edit(&|d| {
        d["free"].as_array_mut().unwrap().push(serde_json::Value::from(first_held as u64));
    });
    assert!(decode_err(restore_text(&t)).contains("both free and held"));
    // A lease waiting for a request that does not exist.
    let waiting = doc["cells"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["entry"]["in_flight"].is_u64())
        .expect("a lease in flight");
    let t = edit(&|d| d["cells"][waiting]["entry"]["in_flight"] = 999_999.into());
    assert!(decode_err(restore_text(&t)).contains("does not name it"));
    // A lease both waiting and scheduled.
    let t = edit(&|d| d["cells"][waiting]["entry"]["send_at"] = 5.into());
    assert!(decode_err(restore_text(&t)).contains("both waiting"));
    // An end that its grant does not give.
    let t = edit(&|d| d["cells"][first_held]["entry"]["end_at"] = 1.into());
    assert!(decode_err(restore_text(&t)).contains("ends at"));
    // A lease filed under another landlord.
    let t = edit(&|d| {
        let p = d["cells"][first_held]["entry"]["peer"].as_u64().unwrap();
        d["cells"][first_held]["entry"]["peer"] = ((p + 1) % 4).into();
    });
    assert!(decode_err(restore_text(&t)).contains("filed under"));
    // A renew duration the rules do not allow.
    let t = edit(&|d| d["cells"][first_held]["entry"]["renew_duration"] = 0.into());
    assert!(decode_err(restore_text(&t)).contains("renew duration"));
    // A request both sent and ready, or ready but unknown.
    let t = edit(&|d| d["ready"] = serde_json::json!([3]));
    assert!(decode_err(restore_text(&t)).contains("already sent"));
    let t = edit(&|d| d["ready"] = serde_json::json!([42]));
    assert!(decode_err(restore_text(&t)).contains("unknown"));
    let t = edit(&|d| d["version"] = 7.into());
    assert!(decode_err(restore_text(&t)).contains("version"));
    let t = edit(&|d| d["peers"][0]["srtt"] = "NaN".into());
    assert!(decode_err(restore_text(&t)).contains("finite"));
    let t = edit(&|d| {
        let p = d["peers"][0].clone();
        d["peers"].as_array_mut().unwrap().push(p);
    });
    assert!(decode_err(restore_text(&t)).contains("twice"));
    let t = edit(&|d| d["config"]["min_rto"] = 0.into());
    assert!(decode_err(restore_text(&t)).contains("min_rto"));
}

/// Drives a restored manager hard (time-outs, odd replies) and checks it stays consistent.
fn exercise(mut m: RenewalManager) {
    let start = m.now().max(0);
    for k in 0..6i64 {
        let t = start.saturating_add(k * 7_919);
        m.handle_timeout(t);
        while let Some(tx) = m.poll_transmit(t) {
            let body = match (k % 3, &tx.request.body) {
                (0, RequestBody::RenewAll { items }) => ReplyBody::RenewedAll {
                    results: vec![leasehold::wire::Outcome::Ok(3_000); items.len()],
                },
                (0, _) => ReplyBody::Renewed { duration: 3_000 },
                (1, _) => ReplyBody::Cancelled,
                _ => continue,
            };
            m.handle_reply(
                &Reply { id: tx.request.id, landlord: tx.landlord, body },
                t.saturating_add(5),
            );
        }
        while m.poll_event().is_some() {}
    }
    m.handle_timeout(FOREVER - 1);
    while m.poll_event().is_some() {}
    let again = RenewalManager::restore(m.snapshot()).expect("a live manager restores");
    assert_eq!(again.snapshot(), m.snapshot());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Mutated snapshots are refused with a decode error, or restore to a manager that works
    /// and snapshots back to itself; never a panic.
    #[test]
    fn fuzzed_snapshots_are_refused_or_consistent(ms in common::mutations(), binary in any::<bool>()) {
        let (m, _) = busy_manager();
        let text = common::mutate(&m.snapshot().to_json(), &ms);
        let restored = ManagerSnapshot::from_json(&text).and_then(|s| {
            if binary {
                RenewalManager::restore(ManagerSnapshot::from_bytes(&s.to_bytes())?)
            } else {
                RenewalManager::restore(s)
            }
        });
        match restored {
            Ok(m) => exercise(m),
            Err(LeaseError::Decode(_)) => {}
            Err(e) => panic!("not a decode error: {e:?}"),
        }
    }

    /// Damaged binary forms are refused or consistent too.
    #[test]
    fn fuzzed_binary_snapshots_are_refused_or_consistent(
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        cut in any::<Option<usize>>(),
    ) {
        let (m, _) = busy_manager();
        let mut bytes = m.snapshot().to_bytes();
        for (at, x) in flips {
            let i = at % bytes.len();
            bytes[i] ^= x.max(1);
        }
        if let Some(c) = cut {
            bytes.truncate(c % (bytes.len() + 1));
        }
        match ManagerSnapshot::from_bytes(&bytes).and_then(RenewalManager::restore) {
            Ok(m) => exercise(m),
            Err(LeaseError::Decode(_)) => {}
            Err(e) => panic!("not a decode error: {e:?}"),
        }
    }
}

#[test]
fn the_busy_manager_has_everything_in_it() {
    let (m, sent) = busy_manager();
    let s = m.snapshot();
    let text = s.to_json();
    assert!(sent.len() >= 2, "{sent:?}");
    assert!(text.contains("\"in_flight\":"), "{text}");
    assert!(text.contains("\"cancels\":[{"), "a queued cancel: {text}");
    assert!(!s.is_empty());
    let _: Millis = s.taken_at();
}
