//! The renewal service under a host clock that steps back (issue 13, finding 4), its checked
//! restore (finding 2, fuzzed), and its journal (issue 14): torn tails, damage, time across
//! restarts, clock records, and crashes with replies, requests and events held until durable.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use leasehold::journal::{self, write_snapshot, Gate, KIND_LANDLORD, KIND_RENEWAL_SERVICE};
use leasehold::policy::Bounded;
use leasehold::service::{
    RenewalService, RenewalServiceConfig, ServiceSnapshot, SetEvent, SetEventKind, SetId,
    BINARY_SNAPSHOT_VERSION,
};
use leasehold::wire::{Request, RequestBody};
use leasehold::{
    Cookie, Encoding, Landlord, LandlordConfig, LandlordId, Lease, LeaseError, Millis, Reply,
    ReplyBody, Transmit, ANY, FOREVER,
};
use proptest::prelude::*;

const SEC: i64 = 1_000;
const MIN: i64 = 60 * SEC;
const SERVICE: LandlordId = LandlordId(0x5e);

fn config() -> RenewalServiceConfig {
    RenewalServiceConfig::new(SERVICE, [9; 32])
}

fn client(id: u64) -> Landlord {
    Landlord::new(
        LandlordConfig::new(LandlordId(id), [id as u8; 32]),
        Bounded::new(10 * MIN, MIN).unwrap(),
    )
}

fn decode_err<T>(r: leasehold::Result<T>) -> String {
    match r {
        Err(LeaseError::Decode(m)) => m,
        Err(e) => panic!("expected a decode error, got {e:?}"),
        Ok(_) => panic!("an inconsistent snapshot was accepted"),
    }
}

// ---- time that never runs backwards ----

/// A membership the service ended stays ended when the host clock steps back: it is not
/// listed, not renewed, and a new add counts from the service's time.
#[test]
fn a_membership_that_ended_stays_ended_when_the_clock_steps_back() {
    let mut svc = RenewalService::new(config()).unwrap();
    let (set, _) = svc.create_set(FOREVER, 0).unwrap();
    let lease = Lease::new(LandlordId(1), Cookie(7), 30 * SEC);
    svc.add(set, lease, 10 * SEC, 5 * SEC, 0).unwrap();
    svc.handle_timeout(20 * SEC);
    assert_eq!(svc.membership(set, &lease, 20 * SEC), Ok(None));
    // Back to 5 s: still gone, nothing to renew.
    assert_eq!(svc.membership(set, &lease, 5 * SEC), Ok(None));
    assert!(svc.leases(set, 5 * SEC).unwrap().is_empty());
    svc.handle_timeout(5 * SEC);
    assert!(svc.poll_transmit(5 * SEC).is_none());
    assert!(svc.manager().is_empty());
    assert_eq!(svc.clock_offset(), 15 * SEC, "the service's own clock stays at 20 s");
    // Added again with the host clock at 5 s: ten seconds from now, on the host's clock.
    svc.add(set, lease, 10 * SEC, 5 * SEC, 5 * SEC).unwrap();
    assert_eq!(svc.membership(set, &lease, 5 * SEC).unwrap().unwrap().expiration, 15 * SEC);
}

/// A set whose lease ran out stays gone, even before a time-out swept it, once the service has
/// seen a time past it: queries with an earlier clock do not bring it back.
#[test]
fn a_set_whose_lease_ran_out_stays_gone_when_the_clock_steps_back() {
    let mut svc = RenewalService::new(config()).unwrap();
    let (set, set_lease) = svc.create_set(10 * SEC, 0).unwrap();
    // The service sees 12 s (no time-out yet, so the set is not swept).
    assert!(svc.poll_transmit(12 * SEC).is_none());
    assert_eq!(svc.set_lease(set, 5 * SEC), None, "read as the service's time, 12 s");
    assert_eq!(svc.set_of(&set_lease, 5 * SEC), None);
    assert_eq!(svc.leases(set, 5 * SEC), Err(LeaseError::UnknownLease));
    let l = Lease::new(LandlordId(1), Cookie(7), MIN);
    assert_eq!(svc.add(set, l, MIN, MIN, 5 * SEC), Err(LeaseError::UnknownLease));
    let renew =
        Request { id: 1, body: RequestBody::Renew { cookie: set_lease.cookie(), duration: MIN } };
    let reply = svc.handle_request(&renew, 5 * SEC);
    assert!(matches!(reply.body, ReplyBody::Error(_)), "{reply:?}");
    svc.handle_timeout(6 * SEC);
    assert!(svc.sets().is_empty());
}

/// A warning due at the service's time is not postponed by a step back.
#[test]
fn warnings_follow_the_services_time() {
    let mut svc = RenewalService::new(config()).unwrap();
    let (set, _) = svc.create_set(MIN, 0).unwrap();
    svc.handle_timeout(55 * SEC);
    svc.set_expiration_warning_listener(set, 10 * SEC, b"w".to_vec(), 1_000).unwrap();
    let e = svc.poll_event().expect("due at once: 5 s are left on the service's clock");
    // The set expires 5 s from the host's now (1 s), on the host's clock.
    assert!(matches!(e.kind, SetEventKind::ExpirationWarning { expiration: 6_000, .. }), "{e:?}");
}

// ---- a busy service, for snapshots ----

struct Busy {
    svc: RenewalService,
    lls: BTreeMap<LandlordId, Landlord>,
    now: Millis,
}

impl Busy {
    fn new(journal: bool) -> Busy {
        let mut cfg = config();
        cfg.manager.min_rto = 20;
        let mut svc = RenewalService::new(cfg).unwrap();
        if journal {
            svc.enable_journal();
        }
        let mut lls = BTreeMap::new();
        for id in [1, 2] {
            lls.insert(LandlordId(id), client(id));
        }
        Busy { svc, lls, now: 0 }
    }

    fn grant(&mut self, ll: u64, d: i64) -> Lease {
        let g = self.lls.get_mut(&LandlordId(ll)).unwrap().grant(vec![1], d, self.now).unwrap();
        Lease::new(LandlordId(ll), g.cookie, g.expiration)
    }

    /// Runs the host loop to `to`, answering every request at once.
    fn run(&mut self, to: Millis) {
        while let Some(t) = self.svc.poll_timeout() {
            if t > to {
                break;
            }
            self.now = self.now.max(t);
            self.svc.handle_timeout(self.now);
            while let Some(tx) = self.svc.poll_transmit(self.now) {
                let reply =
                    self.lls.get_mut(&tx.landlord).unwrap().handle_request(&tx.request, self.now);
                self.svc.handle_reply(&reply, self.now);
            }
        }
        self.now = to;
    }

    /// A service with sets, memberships in two sets, listeners, a failure event waiting, a
    /// renewal in flight and one ready.
    fn build(journal: bool) -> Busy {
        let mut b = Busy::new(journal);
        let (a, _) = b.svc.create_set(30 * MIN, 0).unwrap();
        let (c, _) = b.svc.create_set(FOREVER, 0).unwrap();
        b.svc.set_expiration_warning_listener(a, 5 * MIN, b"warn".to_vec(), 0).unwrap();
        b.svc.set_renewal_failure_listener(a, b"fail".to_vec(), 0).unwrap();
        b.svc.set_renewal_failure_listener(c, b"fail2".to_vec(), 0).unwrap();
        let x = b.grant(1, MIN);
        let y = b.grant(2, MIN);
        let doomed = b.grant(1, MIN);
        b.svc.add(a, x, 20 * MIN, MIN, 0).unwrap();
        b.svc.add(c, x, FOREVER, 2 * MIN, 0).unwrap();
        b.svc.add(a, y, FOREVER, ANY, 0).unwrap();
        b.svc.add(c, doomed, FOREVER, MIN, 0).unwrap();
        b.lls.get_mut(&LandlordId(1)).unwrap().cancel(doomed.cookie(), 0).unwrap();
        b.run(3 * MIN);
        // One request out and unanswered.
        let due = b.svc.poll_timeout().unwrap();
        b.now = due;
        b.svc.handle_timeout(due);
        let _out = b.svc.poll_transmit(due);
        b
    }
}

fn restore_text(text: &str) -> leasehold::Result<RenewalService> {
    let mut cfg = config();
    cfg.restore_jump = 0;
    let snap = ServiceSnapshot::from_json(text)?;
    let at = snap.taken_at();
    RenewalService::restore(cfg, snap, at)
}

#[test]
fn restore_refuses_inconsistent_snapshots() {
    let b = Busy::build(false);
    let text = b.svc.snapshot(b.now).to_json();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(!doc["pending"].as_array().unwrap().is_empty(), "a failure event waits: {text}");
    assert!(!doc["manager"]["inflight"].as_array().unwrap().is_empty(), "a request is out");
    let r = restore_text(&text).unwrap();
    assert_eq!(r.snapshot(b.now), b.svc.snapshot(b.now));
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut d = doc.clone();
        f(&mut d);
        serde_json::to_string(&d).unwrap()
    };
    // A client lease in no set.
    let t = edit(&|d| {
        let mut c = d["clients"][0].clone();
        c["lease"]["cookie"] = "000000000000000000000000000000ff".into();
        d["clients"].as_array_mut().unwrap().push(c);
    });
    assert!(decode_err(restore_text(&t)).contains("in no set"));
    // The same client twice.
    let t = edit(&|d| {
        let c = d["clients"][0].clone();
        d["clients"].as_array_mut().unwrap().push(c);
    });
    assert!(decode_err(restore_text(&t)).contains("appears twice"));
    // A membership naming a client the snapshot does not hold.
    let t =
        edit(&|d| d["sets"][0]["members"][0]["cookie"] = "000000000000000000000000000000ee".into());
    assert!(decode_err(restore_text(&t)).contains("unknown client lease"));
    // The manager renewing a lease no set holds.
    let t = edit(&|d| {
        let cells = d["manager"]["cells"].as_array_mut().unwrap();
        for c in cells {
            if !c["entry"].is_null() {
                c["entry"]["lease"]["cookie"] = "000000000000000000000000000000dd".into();
                break;
            }
        }
    });
    assert!(decode_err(restore_text(&t)).contains("no set holds"));
    // The manager ahead of the service's time.
    let t = edit(&|d| d["manager"]["clock"] = (b.now + 1).into());
    assert!(decode_err(restore_text(&t)).contains("ahead"));
    // A pending event numbered past its registration.
    let t = edit(&|d| d["pending"][0]["sequence"] = 99.into());
    assert!(decode_err(restore_text(&t)).contains("does not fit"));
    // A registration of another set.
    let t = edit(&|d| {
        let f = d["sets"][1]["failure"].clone();
        d["sets"][0]["failure"] = f;
    });
    assert!(decode_err(restore_text(&t)).contains("wrongly"));
    // A set lease that belongs to no set.
    let t = edit(&|d| {
        let s = d["sets"].as_array_mut().unwrap();
        s.remove(1);
    });
    assert!(decode_err(restore_text(&t)).contains("belongs to no set"));
    // Set numbers start at 1.
    let t = edit(&|d| d["next_set"] = 0.into());
    assert!(decode_err(restore_text(&t)).contains("start at 1"));
    // Another version.
    let t = edit(&|d| d["version"] = 1.into());
    assert!(decode_err(restore_text(&t)).contains("version"));
    // Another service's snapshot: an invalid argument, not damage.
    let other = RenewalServiceConfig::new(LandlordId(0x77), [9; 32]);
    let snap = ServiceSnapshot::from_json(&text).unwrap();
    assert!(matches!(
        RenewalService::restore(other, snap, b.now),
        Err(LeaseError::InvalidArgument(_))
    ));
}

/// Drives a restored service (time-outs, odd replies, events) and checks it stays consistent.
fn exercise(mut svc: RenewalService) {
    let start = svc.now().max(0);
    for k in 0..5i64 {
        let t = start.saturating_add(k * 61_001);
        svc.handle_timeout(t);
        while let Some(tx) = svc.poll_transmit(t) {
            let body = match (k % 2, &tx.request.body) {
                (0, RequestBody::RenewAll { items }) => ReplyBody::RenewedAll {
                    results: vec![leasehold::wire::Outcome::Ok(MIN); items.len()],
                },
                (0, _) => ReplyBody::Renewed { duration: MIN },
                _ => ReplyBody::Cancelled,
            };
            svc.handle_reply(&Reply { id: tx.request.id, landlord: tx.landlord, body }, t + 5);
        }
        while svc.poll_event().is_some() {}
    }
    let t = svc.now();
    let again = RenewalService::restore(
        RenewalServiceConfig { restore_jump: 0, ..config() },
        svc.snapshot(t),
        t,
    )
    .expect("a live service restores");
    // A restore hands out again what was handed out and not delivered, as a resume does.
    svc.resume(t);
    assert_eq!(again.snapshot(t), svc.snapshot(t));
}

fn refused_or_consistent(r: leasehold::Result<RenewalService>) {
    match r {
        Ok(svc) => exercise(svc),
        Err(LeaseError::Decode(_)) | Err(LeaseError::InvalidArgument(_)) => {}
        Err(e) => panic!("not a decode error: {e:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Mutated JSON snapshots are refused or restore to a service that works and snapshots
    /// back to itself; never a panic.
    #[test]
    fn fuzzed_json_snapshots_are_refused_or_consistent(ms in common::mutations()) {
        let b = Busy::build(false);
        let text = common::mutate(&b.svc.snapshot(b.now).to_json(), &ms);
        refused_or_consistent(restore_text(&text));
    }

    /// Mutated binary bodies (wrapped in a valid container, so the checks behind the checksum
    /// are what is tested) are refused or give a consistent service.
    #[test]
    fn fuzzed_binary_snapshots_are_refused_or_consistent(
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        cut in any::<Option<usize>>(),
    ) {
        let mut b = Busy::build(true);
        let mut bytes = Vec::new();
        b.svc.snapshot_bytes(&mut bytes);
        let snap = journal::read_snapshot(&bytes).unwrap();
        let mut body = snap.body.to_vec();
        for (at, x) in flips {
            let i = at % body.len();
            body[i] ^= x.max(1);
        }
        if let Some(c) = cut {
            body.truncate(c % (body.len() + 1));
        }
        let mut again = Vec::new();
        write_snapshot(&mut again, KIND_RENEWAL_SERVICE, BINARY_SNAPSHOT_VERSION, snap.seq, &body);
        refused_or_consistent(RenewalService::from_snapshot_bytes(&again));
    }
}

// ---- the journal ----

/// The log of a busy journaled service, its snapshot, and the service itself.
fn journaled() -> (Busy, Vec<u8>, Vec<u8>) {
    let mut b = Busy::new(true);
    let mut snapshot = Vec::new();
    b.svc.snapshot_bytes(&mut snapshot);
    let mut log = Vec::new();
    let (a, _) = b.svc.create_set(30 * MIN, 0).unwrap();
    b.svc.take_journal(&mut log);
    b.svc.set_renewal_failure_listener(a, b"f".to_vec(), 0).unwrap();
    let x = b.grant(1, MIN);
    let y = b.grant(2, MIN);
    b.svc.add(a, x, 20 * MIN, MIN, 0).unwrap();
    b.svc.add(a, y, FOREVER, ANY, 0).unwrap();
    b.svc.take_journal(&mut log);
    b.lls.get_mut(&LandlordId(2)).unwrap().cancel(y.cookie(), 0).unwrap();
    b.run(5 * MIN);
    b.svc.take_journal(&mut log);
    while b.svc.poll_event().is_some() {}
    b.run(7 * MIN);
    b.svc.take_journal(&mut log);
    (b, snapshot, log)
}

#[test]
fn a_torn_tail_is_dropped_at_every_cut_and_damage_in_the_middle_is_refused() {
    let (mut b, snapshot, log) = journaled();
    // Resumed at the service's own time: nothing lost or gained (and the events handed out
    // and not delivered are handed out again, as the original would after a resume).
    let t = b.svc.now();
    let full = RenewalService::recover(&snapshot, &[&log], t).unwrap().0;
    b.svc.resume(t);
    assert_eq!(full.snapshot(t), b.svc.snapshot(t));
    let frames = journal::scan(&log, None).unwrap().frames;
    assert!(frames.len() >= 4);
    let last_start = frames.last().unwrap().offset;
    for cut in last_start + 1..log.len() {
        let (svc, rec) = RenewalService::recover(&snapshot, &[&log[..cut]], t).unwrap();
        assert_eq!(rec.torn.as_ref().map(|x| x.1), Some(last_start), "cut at {cut}");
        // The service as of the last whole frame.
        let before = RenewalService::recover(&snapshot, &[&log[..last_start]], t).unwrap().0;
        assert_eq!(svc.snapshot(t), before.snapshot(t));
    }
    // A flipped byte in any frame but the last is refused.
    for at in (0..last_start).step_by(7) {
        let mut bad = log.clone();
        bad[at] ^= 0x20;
        let e = RenewalService::recover(&snapshot, &[&bad], t).err().expect("damage refused");
        assert!(matches!(e, LeaseError::Decode(_)), "{e:?}");
    }
    // A log that skips records, or another state machine's snapshot, is refused.
    let second = frames[1].offset;
    let e = RenewalService::recover(&snapshot, &[&log[second..]], t).err().unwrap();
    assert!(e.to_string().contains("missing"), "{e}");
    let mut ll: Landlord = client(1);
    ll.enable_journal();
    let mut other = Vec::new();
    ll.snapshot_bytes(&mut other);
    assert!(decode_err(RenewalService::from_snapshot_bytes(&other)).contains("kind"));
    let mut wrong = Vec::new();
    write_snapshot(&mut wrong, KIND_LANDLORD, 1, 0, b"x");
    assert!(RenewalService::from_snapshot_bytes(&wrong).is_err());
    // Replaying onto a service without a journal is a usage error.
    let mut plain = RenewalService::new(config()).unwrap();
    assert!(matches!(plain.replay_segments(&[&log]), Err(LeaseError::InvalidArgument(_))));
}

/// Records the snapshot already holds are skipped: replaying the whole log onto a later
/// snapshot, or twice, changes nothing.
#[test]
fn replay_skips_what_the_snapshot_has() {
    let (mut b, snapshot, log) = journaled();
    let mut later = Vec::new();
    let seq = b.svc.snapshot_bytes(&mut later);
    assert_eq!(seq, b.svc.journal_seq());
    let t = b.svc.now();
    let (svc, rec) = RenewalService::recover(&later, &[&log], t).unwrap();
    assert_eq!(rec.replayed, 0);
    // The original, had it resumed: the events it handed out are handed out again.
    b.svc.resume(t);
    assert_eq!(svc.snapshot(t), b.svc.snapshot(t));
    let (svc, rec) = RenewalService::recover(&snapshot, &[&log, &log], t).unwrap_or_else(|e| {
        panic!("{e}");
    });
    assert_eq!(rec.last_seq, seq);
    assert_eq!(svc.snapshot(t), b.svc.snapshot(t));
}

// ---- time across restarts ----

/// Set leases do not count the time spent down; client leases and memberships are absolute.
#[test]
fn set_leases_keep_their_time_left_and_client_leases_keep_their_expirations() {
    let mut b = Busy::new(true);
    let mut snapshot = Vec::new();
    b.svc.snapshot_bytes(&mut snapshot);
    let (set, set_lease) = b.svc.create_set(10 * MIN, 0).unwrap();
    b.svc.set_expiration_warning_listener(set, MIN, b"w".to_vec(), 0).unwrap();
    b.svc.set_renewal_failure_listener(set, b"f".to_vec(), 0).unwrap();
    let short = b.grant(1, MIN);
    let long = b.grant(2, 10 * MIN);
    b.svc.add(set, short, FOREVER, MIN, 0).unwrap();
    b.svc.add(set, long, 5 * MIN, MIN, 0).unwrap();
    b.run(2 * MIN);
    let mut log = Vec::new();
    b.svc.take_journal(&mut log);
    assert_eq!(b.svc.set_lease(set, b.now).unwrap().expiration(), 10 * MIN);
    // Down for an hour. The set lease had 10 minutes less the service's time at the last record
    // (a little under 2 minutes: the host's loop made no call at exactly 2 minutes) left.
    let left = 10 * MIN - b.svc.now();
    assert!(left > 8 * MIN && left < 8 * MIN + SEC, "{left}");
    let up = b.now + 60 * MIN;
    let (mut svc, _) = RenewalService::recover(&snapshot, &[&log], up).unwrap();
    let sl = svc.set_lease(set, up).unwrap();
    assert_eq!(sl.cookie(), set_lease.cookie());
    assert_eq!(sl.expiration(), up + left, "the time it had left, from the restart");
    // The client lease's landlord kept counting: `short` expired meanwhile (a failure at the
    // first time-out), `long`'s membership ended (silently).
    svc.handle_timeout(up);
    let events: Vec<SetEvent> = std::iter::from_fn(|| svc.poll_event()).collect();
    let failures: Vec<&Lease> = events
        .iter()
        .filter_map(|e| match &e.kind {
            SetEventKind::RenewalFailure { lease, .. } => Some(lease),
            _ => None,
        })
        .collect();
    assert_eq!(failures, vec![&short]);
    assert!(svc.leases(set, up).unwrap().is_empty());
    // The warning follows the set's new expiration.
    assert!(svc.poll_timeout().unwrap() <= up + left - MIN);
    svc.handle_timeout(up + left - MIN - 1);
    assert!(svc.poll_event().is_none(), "not before a minute before the new expiration");
    svc.handle_timeout(up + left - MIN);
    let w = svc.poll_event().unwrap();
    assert!(
        matches!(w.kind, SetEventKind::ExpirationWarning { expiration, .. } if expiration == up + left)
    );
}

/// A host whose clock is behind the last recorded time (another machine): the service's own
/// clock goes on from the recorded time, and set leases keep their time left.
#[test]
fn recovering_on_a_host_whose_clock_is_behind() {
    let mut b = Busy::new(true);
    let mut snapshot = Vec::new();
    b.svc.snapshot_bytes(&mut snapshot);
    let (set, _) = b.svc.create_set(10 * MIN, 100 * MIN).unwrap();
    let mut log = Vec::new();
    b.svc.take_journal(&mut log);
    let (svc, _) = RenewalService::recover(&snapshot, &[&log], 5 * MIN).unwrap();
    assert_eq!(svc.now(), 5 * MIN);
    assert_eq!(svc.clock_offset(), 95 * MIN, "its own clock stays at 100 minutes");
    assert_eq!(svc.set_lease(set, 5 * MIN).unwrap().expiration(), 15 * MIN, "10 minutes left");
}

/// With a journal and sets held, the service asks for a time-out at least every
/// `journal_clock_interval`, so a crash loses at most that much of a set lease's time.
#[test]
fn clock_records_bound_the_time_a_crash_forgets() {
    let mut cfg = config();
    cfg.landlord.journal_clock_interval = 2 * SEC;
    let mut svc = RenewalService::new(cfg).unwrap();
    svc.enable_journal();
    let mut snapshot = Vec::new();
    svc.snapshot_bytes(&mut snapshot);
    let mut log = Vec::new();
    let (set, _) = svc.create_set(10 * MIN, 0).unwrap();
    let mut now = 0;
    for _ in 0..30 {
        let t = svc.poll_timeout().unwrap();
        assert!(t <= now + 2 * SEC, "asked at {t}, last record at {now}");
        now = t;
        svc.handle_timeout(now);
        svc.take_journal(&mut log);
    }
    assert_eq!(now, 60 * SEC);
    // Crash just before the next record; up again much later.
    let (svc, _) = RenewalService::recover(&snapshot, &[&log], 50 * MIN).unwrap();
    let left = svc.set_lease(set, 50 * MIN).unwrap().expiration() - 50 * MIN;
    assert_eq!(left, 10 * MIN - 60 * SEC);
    // Without sets, no clock records are asked for.
    let mut idle = RenewalService::new(config()).unwrap();
    idle.enable_journal();
    assert_eq!(idle.poll_timeout(), None);
}

// ---- crashes, with everything held until durable ----

#[derive(Debug, Clone)]
enum Step {
    CreateSet(i64),
    Grant(u8, i64),
    Add(usize, usize, i64),
    Listen(usize),
    RenewSet(usize, i64),
    CancelSet(usize),
    Revoke(usize),
    Run(i64),
    Sync,
    /// Crash: what is not synced is lost (maybe a torn part of it is on disk); up after `i64`.
    Crash(i64, bool),
    Compact,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            2 => prop_oneof![Just(ANY), 10_000i64..300_000].prop_map(Step::CreateSet),
            3 => (1u8..3, 5_000i64..120_000).prop_map(|(l, d)| Step::Grant(l, d)),
            4 => (0usize..8, 0usize..16, prop_oneof![Just(FOREVER), 10_000i64..600_000])
                .prop_map(|(s, l, m)| Step::Add(s, l, m)),
            1 => (0usize..8).prop_map(Step::Listen),
            3 => (0usize..8, 10_000i64..300_000).prop_map(|(s, d)| Step::RenewSet(s, d)),
            1 => (0usize..8).prop_map(Step::CancelSet),
            1 => (0usize..16).prop_map(Step::Revoke),
            6 => (1i64..60_000).prop_map(Step::Run),
            4 => Just(Step::Sync),
            2 => (0i64..120_000, any::<bool>()).prop_map(|(d, t)| Step::Crash(d, t)),
            1 => Just(Step::Compact),
        ],
        1..150,
    )
}

/// The host: a service with a journal, a disk (snapshot and synced log), and a gate that holds
/// everything the service hands out until the records behind it are synced.
struct Host {
    svc: RenewalService,
    snapshot: Vec<u8>,
    synced: Vec<u8>,
    unsynced: Vec<u8>,
    gate: Gate<Out>,
    lls: BTreeMap<LandlordId, Landlord>,
    now: Millis,
    leases: Vec<Lease>,
    sets: Vec<(SetId, Cookie)>,
    /// What left: events by (event id, sequence), set-lease promises, requests by id.
    delivered: BTreeSet<(u64, u64)>,
    last_seq: BTreeMap<u64, u64>,
    /// Events that left the gate and are on their way to their listener (lost in a crash).
    in_delivery: Vec<SetEvent>,
    /// Every event that left the gate, by (event id, sequence): at least once, each reaches its
    /// listener unless its registration ends first.
    left: BTreeMap<(u64, u64), SetEvent>,
    promised: BTreeMap<Cookie, Millis>,
    /// Set leases the client asked to cancel (acknowledged or not: no promise holds for them).
    asked_to_cancel: BTreeSet<Cookie>,
    /// Renewals asked and not answered yet, per set lease: each may have taken effect.
    outstanding: BTreeMap<Cookie, u32>,
    cancelled: BTreeSet<Cookie>,
    sent: BTreeMap<u64, Vec<u8>>,
}

#[derive(Debug)]
enum Out {
    Event(SetEvent),
    Transmit(Transmit, Millis),
    SetReply(Cookie, Reply, Millis),
}

impl Host {
    fn new() -> Host {
        let mut cfg = config();
        cfg.landlord.journal_clock_interval = 5 * SEC;
        let mut svc = RenewalService::new(cfg).unwrap();
        svc.enable_journal();
        let mut snapshot = Vec::new();
        svc.snapshot_bytes(&mut snapshot);
        let mut lls = BTreeMap::new();
        for id in [1, 2] {
            lls.insert(LandlordId(id), client(id));
        }
        Host {
            svc,
            snapshot,
            synced: Vec::new(),
            unsynced: Vec::new(),
            gate: Gate::new(),
            lls,
            now: 1_000,
            leases: Vec::new(),
            sets: Vec::new(),
            delivered: BTreeSet::new(),
            last_seq: BTreeMap::new(),
            in_delivery: Vec::new(),
            left: BTreeMap::new(),
            promised: BTreeMap::new(),
            asked_to_cancel: BTreeSet::new(),
            outstanding: BTreeMap::new(),
            cancelled: BTreeSet::new(),
            sent: BTreeMap::new(),
        }
    }

    /// Takes what the last call wrote and holds `out` until it is durable.
    fn hold(&mut self, out: Out) {
        self.svc.take_journal(&mut self.unsynced);
        self.gate.push(self.svc.journal_seq(), out);
    }

    fn drain(&mut self) {
        while let Some(tx) = self.svc.poll_transmit(self.now) {
            let now = self.now;
            self.hold(Out::Transmit(tx, now));
        }
        while let Some(e) = self.svc.poll_event() {
            self.hold(Out::Event(e));
        }
        self.svc.take_journal(&mut self.unsynced);
    }

    /// fsync: the log is durable, what waited may leave.
    fn sync(&mut self) {
        self.synced.append(&mut self.unsynced);
        let durable = journal::scan(&self.synced, None).unwrap().last_seq().unwrap_or(0);
        let outs: Vec<Out> = self.gate.release(durable).collect();
        for o in outs {
            self.leave(o);
        }
    }

    fn leave(&mut self, o: Out) {
        match o {
            Out::Event(e) => {
                let key = (e.event_id, e.sequence);
                if let Some(first) = self.left.get(&key) {
                    // Handed out again after a crash: the same event (a warning's expiration
                    // moved on by the time spent down, as the set's lease did).
                    assert_eq!((&first.source, &first.handback), (&e.source, &e.handback));
                    if let SetEventKind::RenewalFailure { .. } = e.kind {
                        assert_eq!(first.kind, e.kind, "{key:?} handed out again, changed");
                    }
                } else {
                    let last = self.last_seq.get(&e.event_id).copied().unwrap_or(0);
                    assert!(e.sequence > last, "sequence numbers go back: {e:?} after {last}");
                    self.left.insert(key, e.clone());
                }
                self.in_delivery.push(e);
            }
            Out::Transmit(tx, at) => {
                let bytes = tx.request.encode(Encoding::Binary);
                if let Some(old) = self.sent.insert(tx.request.id, bytes.clone()) {
                    assert_eq!(old, bytes, "request id {} sent for two requests", tx.request.id);
                }
                if let Some(ll) = self.lls.get_mut(&tx.landlord) {
                    let reply = ll.handle_request(&tx.request, at);
                    self.svc.handle_reply(&reply, self.now);
                    self.svc.take_journal(&mut self.unsynced);
                }
            }
            Out::SetReply(cookie, reply, at) => match reply.body {
                ReplyBody::Renewed { duration } => {
                    // The latest renewal acknowledged sets the expiration (a client may ask for
                    // less than it had), unless a later one is still out.
                    let exp = leasehold::time::expiration_after(at, duration);
                    let out = self.outstanding.entry(cookie).or_insert(1);
                    *out = out.saturating_sub(1);
                    let p = self.promised.entry(cookie).or_insert(exp);
                    *p = if *out == 0 { exp } else { (*p).min(exp) };
                }
                ReplyBody::Cancelled => {
                    self.cancelled.insert(cookie);
                }
                _ => {
                    if let Some(out) = self.outstanding.get_mut(&cookie) {
                        *out = out.saturating_sub(1);
                    }
                }
            },
        }
    }

    /// The listeners take the events on their way (the first half of them, or all), dropping
    /// repeats by (event id, sequence number), and the host reports each delivered.
    fn deliver(&mut self, all: bool) {
        let n = if all { self.in_delivery.len() } else { self.in_delivery.len() / 2 };
        for e in self.in_delivery.drain(..n).collect::<Vec<_>>() {
            let key = (e.event_id, e.sequence);
            if self.delivered.insert(key) {
                let last = self.last_seq.insert(e.event_id, e.sequence).unwrap_or(0);
                assert!(e.sequence > last, "a listener sees {key:?} after {last}");
            }
            self.svc.delivered(e.event_id, e.sequence, self.now);
            self.svc.take_journal(&mut self.unsynced);
        }
    }

    /// At least once: every event that left reached its listener, unless its registration
    /// ended (the set's lease, a cleared listener) before it did.
    fn check_all_delivered(&mut self) {
        for _ in 0..4 {
            self.drain();
            self.sync();
            self.deliver(true);
        }
        let active: BTreeSet<u64> = self
            .sets
            .iter()
            .filter_map(|&(set, _)| self.svc.registrations(set, self.now).ok())
            .flatten()
            .map(|r| r.event_id)
            .collect();
        for key in self.left.keys() {
            if active.contains(&key.0) {
                assert!(self.delivered.contains(key), "event {key:?} left and was lost");
            }
        }
        assert_eq!(self.svc.unacked_events(), 0, "every event delivered was reported");
    }

    fn crash(&mut self, down: Millis, torn: bool) {
        // What was on its way to a listener dies with the process.
        self.in_delivery.clear();
        let mut disk = self.synced.clone();
        if torn && !self.unsynced.is_empty() {
            // Part of an unsynced write made it to disk.
            disk.extend_from_slice(&self.unsynced[..self.unsynced.len() / 2]);
        }
        self.now += down;
        let (svc, rec) = RenewalService::recover(&self.snapshot, &[&disk], self.now).unwrap();
        if let Some((_, len, _)) = rec.torn {
            disk.truncate(len);
        }
        self.svc = svc;
        self.synced = disk;
        self.unsynced.clear();
        self.gate = Gate::new();
        self.outstanding.clear();
        self.svc.take_journal(&mut self.unsynced);
        // Time spent down does not count for set leases.
        for p in self.promised.values_mut() {
            *p = p.saturating_add(down);
        }
    }

    /// Every promise kept: a set whose renewal was acknowledged is alive until then, a set
    /// whose cancel was acknowledged never comes back.
    fn check(&self) {
        let alive: BTreeSet<Cookie> = self
            .sets
            .iter()
            .filter_map(|&(set, _)| self.svc.set_lease(set, self.now).map(|l| l.cookie()))
            .collect();
        for (cookie, until) in &self.promised {
            if self.now < *until && !self.asked_to_cancel.contains(cookie) {
                assert!(alive.contains(cookie), "set lease {cookie} dropped before {until}");
            }
        }
        for cookie in &self.cancelled {
            assert!(!alive.contains(cookie), "cancelled set lease {cookie} came back");
        }
    }

    fn step(&mut self, s: &Step) {
        let pick = |v: &[(SetId, Cookie)], i: usize| (!v.is_empty()).then(|| v[i % v.len()]);
        match s {
            Step::CreateSet(d) => {
                if let Ok((set, lease)) = self.svc.create_set(*d, self.now) {
                    self.sets.push((set, lease.cookie()));
                    let at = self.now;
                    let reply = Reply {
                        id: 0,
                        landlord: SERVICE,
                        body: ReplyBody::Renewed { duration: lease.expiration() - at },
                    };
                    self.hold(Out::SetReply(lease.cookie(), reply, at));
                }
            }
            Step::Grant(l, d) => {
                let ll = self.lls.get_mut(&LandlordId(*l as u64)).unwrap();
                let g = ll.grant(vec![*l], *d, self.now).unwrap();
                self.leases.push(Lease::new(LandlordId(*l as u64), g.cookie, g.expiration));
            }
            Step::Add(s, l, m) => {
                if let (Some((set, _)), false) = (pick(&self.sets, *s), self.leases.is_empty()) {
                    let lease = self.leases[l % self.leases.len()];
                    let _ = self.svc.add(set, lease, *m, 30_000, self.now);
                    self.svc.take_journal(&mut self.unsynced);
                }
            }
            Step::Listen(s) => {
                if let Some((set, _)) = pick(&self.sets, *s) {
                    let _ = self.svc.set_renewal_failure_listener(set, vec![1], self.now);
                    let _ =
                        self.svc.set_expiration_warning_listener(set, 20_000, vec![2], self.now);
                    self.drain();
                }
            }
            Step::RenewSet(s, d) => {
                if let Some((_, cookie)) = pick(&self.sets, *s) {
                    // Asked, it may take effect whether or not the answer comes back: the
                    // lease lasts at least until the shorter of what it had and what is asked.
                    let bound = leasehold::time::expiration_after(self.now, *d);
                    if let Some(p) = self.promised.get_mut(&cookie) {
                        *p = (*p).min(bound);
                    }
                    *self.outstanding.entry(cookie).or_insert(0) += 1;
                    let req = Request { id: 7, body: RequestBody::Renew { cookie, duration: *d } };
                    let at = self.now;
                    let reply = self.svc.handle_request(&req, at);
                    self.hold(Out::SetReply(cookie, reply, at));
                }
            }
            Step::CancelSet(s) => {
                if let Some((_, cookie)) = pick(&self.sets, *s) {
                    self.asked_to_cancel.insert(cookie);
                    let req = Request { id: 8, body: RequestBody::Cancel { cookie } };
                    let at = self.now;
                    let reply = self.svc.handle_request(&req, at);
                    self.hold(Out::SetReply(cookie, reply, at));
                }
            }
            Step::Revoke(l) => {
                if !self.leases.is_empty() {
                    let lease = self.leases[l % self.leases.len()];
                    let _ = self
                        .lls
                        .get_mut(&lease.landlord())
                        .unwrap()
                        .cancel(lease.cookie(), self.now);
                }
            }
            Step::Run(dt) => {
                let to = self.now + dt;
                for _ in 0..50 {
                    match self.svc.poll_timeout() {
                        Some(t) if t <= to => {
                            self.now = self.now.max(t);
                            self.svc.handle_timeout(self.now);
                            self.drain();
                            self.sync();
                        }
                        _ => break,
                    }
                }
                self.now = self.now.max(to);
            }
            Step::Sync => {
                self.sync();
                self.deliver(false);
            }
            Step::Crash(down, torn) => self.crash(*down, *torn),
            Step::Compact => {
                // The snapshot (replaced atomically) holds every record written so far: they
                // are durable once it is, and the log they were in may go.
                self.sync();
                self.snapshot.clear();
                let seq = self.svc.snapshot_bytes(&mut self.snapshot);
                self.synced.clear();
                self.svc.take_journal(&mut self.unsynced);
                let outs: Vec<Out> = self.gate.release(seq).collect();
                for o in outs {
                    self.leave(o);
                }
            }
        }
        self.check();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, ..ProptestConfig::default() })]

    /// Crashes at random moments, with a torn tail or without: every event that left reaches
    /// its listener at least once (unless its registration ends first), a listener that drops
    /// repeats by (event id, sequence number) sees each once and in order, no request id is
    /// reused for another request, every acknowledged set renewal is honoured until its
    /// promised time (plus the time spent down), no acknowledged cancel is undone.
    #[test]
    fn crashes_keep_every_promise_that_left(steps in steps()) {
        let mut h = Host::new();
        for s in &steps {
            h.step(s);
        }
        h.check_all_delivered();
    }
}

/// The natural path: read `journal_seq` after each call and gate what it handed out.
#[test]
fn everything_handed_out_waits_for_its_records() {
    let mut svc = RenewalService::new(config()).unwrap();
    svc.enable_journal();
    let mut gate = Gate::new();
    let (set, lease) = svc.create_set(MIN, 0).unwrap();
    gate.push(svc.journal_seq(), format!("created {set}"));
    let renew =
        Request { id: 1, body: RequestBody::Renew { cookie: lease.cookie(), duration: MIN } };
    let reply = svc.handle_request(&renew, 10);
    gate.push(svc.journal_seq(), format!("{:?}", reply.body));
    assert_eq!(gate.release(0).count(), 0, "nothing durable yet: nothing leaves");
    let mut log = Vec::new();
    let range = svc.take_journal(&mut log).unwrap();
    assert_eq!(range, 1..3);
    let out: Vec<String> = gate.release(range.end - 1).collect();
    assert_eq!(out.len(), 2);
    // An event records that it was handed out, and, once the host reports it, that it was
    // delivered: a restart hands it out again only if it was not.
    svc.set_expiration_warning_listener(set, 2 * MIN, vec![], 20).unwrap();
    let seq_before = svc.journal_seq();
    let e = svc.poll_event().unwrap();
    assert!(svc.journal_seq() > seq_before, "{e:?}");
    svc.take_journal(&mut log);
    let mut fresh = RenewalService::new(config()).unwrap();
    fresh.enable_journal();
    let mut empty_snapshot = Vec::new();
    fresh.snapshot_bytes(&mut empty_snapshot);
    let (mut back, _) = RenewalService::recover(&empty_snapshot, &[&log], 20).unwrap();
    let again = back.poll_event().expect("handed out, not delivered: handed out again");
    assert_eq!((again.event_id, again.sequence), (e.event_id, e.sequence));
    assert!(back.poll_event().is_none());
    assert!(svc.delivered(e.event_id, e.sequence, 30));
    assert!(!svc.delivered(e.event_id, e.sequence, 30), "reported once");
    svc.take_journal(&mut log);
    let (mut back, _) = RenewalService::recover(&empty_snapshot, &[&log], 40).unwrap();
    assert!(back.poll_event().is_none(), "delivered before the crash");
    assert_eq!(back.unacked_events(), 0);
}

// ---- the embedded store ----

fn open_service(
    dir: &leasehold::store::MemDir,
    now: Millis,
) -> leasehold::store::Opened<RenewalService> {
    use leasehold::store::{Store, StoreConfig};
    let cfg = StoreConfig { segment_bytes: 512, min_compact_bytes: 1_024 };
    Store::open(cfg, &dir.files(), Some(now), |snapshot| match snapshot {
        Some(bytes) => RenewalService::from_snapshot_bytes(bytes),
        None => {
            let mut svc = RenewalService::new(config())?;
            svc.enable_journal();
            Ok(svc)
        }
    })
    .unwrap()
}

/// The renewal service in the embedded store (a directory of segments and a snapshot): commits,
/// rotation, compaction, a crash that tears the last write, and reopening.
#[test]
fn the_embedded_store_keeps_a_renewal_service() {
    use leasehold::store::MemDir;
    let mut dir = MemDir::new();
    let mut o = open_service(&dir, 0);
    assert!(o.created);
    dir.apply_all(&o.ops);
    let (mut svc, mut store) = (o.state, o.store);
    let mut gate = Gate::new();
    let mut acked = Vec::new();
    let mut now = 0;
    for i in 0..40u64 {
        now += 1_000;
        let (set, lease) = svc.create_set(10 * MIN, now).unwrap();
        gate.push(svc.journal_seq(), (set, lease.expiration()));
        svc.set_renewal_failure_listener(set, vec![i as u8; 40], now).unwrap();
        if let Some(c) = store.commit(&mut svc) {
            dir.apply_all(&c.ops);
            acked.extend(gate.release(c.durable));
        }
        if store.wants_compaction() {
            dir.apply_all(&store.compact(&mut svc));
        }
    }
    assert_eq!(acked.len(), 40);
    // Unacknowledged work, half of it on disk when the process dies.
    let (lost, _) = svc.create_set(10 * MIN, now).unwrap();
    let c = store.commit(&mut svc).unwrap();
    for op in &c.ops {
        if let leasehold::store::FileOp::Append { .. } = op {
            dir.apply(op);
        }
    }
    dir.crash(|_, unsynced| unsynced / 2);
    o = open_service(&dir, now + HOUR_MS);
    assert!(!o.created);
    assert!(o.recovered.torn.is_some());
    dir.apply_all(&o.ops);
    let svc = o.state;
    for (set, expiration) in acked {
        let l = svc.set_lease(set, now + HOUR_MS).expect("every acknowledged set is there");
        // Time spent down (the hour since the last record, at `now`) does not count.
        assert_eq!(l.expiration(), expiration + HOUR_MS);
    }
    assert!(!svc.sets().contains(&lost));
}

const HOUR_MS: i64 = 60 * MIN;
