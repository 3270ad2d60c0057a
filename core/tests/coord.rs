//! Coordination, case by case: exclusive resources (deny with the time left, wait first come
//! first served, time-outs, abandoned waiters), pools, fencing tokens across renewals and
//! restores, watches (events, history, long polls, their leases), and the wire messages.

use leasehold::coord::wire::{CoordReply, CoordReplyBody, CoordRequest, CoordRequestBody};
use leasehold::coord::{
    Acquire, CoordConfig, EventKind, Events, Handled, Pool, Selector, Ticket, Watching,
};
use leasehold::policy::Bounded;
use leasehold::{
    Cookie, Encoding, ErrorCode, Landlord, LandlordConfig, LandlordId, LeaseError, Limits, Request,
    RequestBody, FOREVER,
};

type LL = Landlord<Vec<u8>>;

fn config() -> CoordConfig {
    CoordConfig::new()
        .exclusive(Selector::prefix("locks/"))
        .exclusive(Selector::exact("leader"))
        .pool(Pool::new("ips", ["10.0.0.1", "10.0.0.2"]))
}

fn landlord() -> LL {
    let mut ll =
        LL::new(LandlordConfig::new(LandlordId(1), [3; 32]), Bounded::new(60_000, 10_000).unwrap());
    ll.enable_coordination(config()).unwrap();
    ll
}

fn granted(a: leasehold::Result<Acquire>) -> leasehold::Acquired {
    match a.unwrap() {
        Acquire::Granted(a) => a,
        Acquire::Waiting(t) => panic!("waiting with {t:?}"),
    }
}

fn waiting(a: leasehold::Result<Acquire>) -> Ticket {
    match a.unwrap() {
        Acquire::Waiting(t) => t,
        Acquire::Granted(a) => panic!("granted {a:?}"),
    }
}

fn deferred(ll: &mut LL) -> Vec<(Ticket, CoordReply)> {
    std::iter::from_fn(|| ll.poll_deferred()).collect()
}

#[test]
fn an_exclusive_resource_is_denied_with_the_time_its_holder_has_left() {
    let mut ll = landlord();
    let a = granted(ll.acquire(b"locks/a".to_vec(), 10_000, 0, b"alice".to_vec(), 0));
    assert_eq!(a.token, 1);
    assert_eq!(a.resource, b"locks/a");
    let e = ll.acquire(b"locks/a".to_vec(), 10_000, 0, vec![], 4_000).unwrap_err();
    assert_eq!(e.code(), ErrorCode::LeaseDenied);
    assert_eq!(
        e.detail(),
        "\"locks/a\" is held by another lease: free in at most 6000 ms (unless its holder renews)"
    );
    // A plain grant is refused the same way; other resources are not exclusive.
    assert!(matches!(ll.grant(b"locks/a".to_vec(), 1_000, 4_000), Err(LeaseError::LeaseDenied(_))));
    ll.grant(b"other".to_vec(), 1_000, 4_000).unwrap();
    ll.grant(b"other".to_vec(), 1_000, 4_000).unwrap();
    let b = granted(ll.acquire(b"locks/b".to_vec(), 10_000, 0, vec![], 4_000));
    assert!(b.token > a.token);
    // Once the holder's lease is over, the resource is free again (swept on the way).
    let c = granted(ll.acquire(b"locks/a".to_vec(), 10_000, 0, vec![], 10_001));
    assert!(c.token > b.token);
    let gone: Vec<_> = std::iter::from_fn(|| ll.poll_expired()).map(|e| e.cookie).collect();
    assert!(gone.contains(&a.cookie), "{gone:?}");
}

#[test]
fn a_perpetual_holder_is_held_until_it_cancels() {
    let mut ll = LL::new(
        LandlordConfig::new(LandlordId(1), [3; 32]),
        Bounded::new(FOREVER, 10_000).unwrap(),
    );
    ll.enable_coordination(config()).unwrap();
    granted(ll.acquire(b"leader".to_vec(), FOREVER, 0, vec![], 4_000));
    let e = ll.acquire(b"leader".to_vec(), 10, 0, vec![], 5_000).unwrap_err();
    assert!(e.detail().contains("held until its holder cancels"), "{e}");
}

#[test]
fn waiters_are_served_first_come_first_served_and_count_their_wait() {
    let mut ll = landlord();
    let a = granted(ll.acquire(b"locks/a".to_vec(), 10_000, 0, vec![], 0));
    let t1 = waiting(ll.acquire(b"locks/a".to_vec(), 5_000, 20_000, b"one".to_vec(), 100));
    let t2 = waiting(ll.acquire(b"locks/a".to_vec(), 5_000, 20_000, b"two".to_vec(), 200));
    let t3 = waiting(ll.acquire(b"locks/a".to_vec(), 5_000, 20_000, b"three".to_vec(), 300));
    assert_eq!(ll.waiting(), 3);
    assert!(deferred(&mut ll).is_empty());
    // The second waiter gives up.
    assert!(ll.abandon(t2));
    assert!(!ll.abandon(t2));
    // The holder lets go: the first waiter gets it, having waited 900 ms.
    ll.cancel(a.cookie, 1_000).unwrap();
    let d = deferred(&mut ll);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].0, t1);
    let one = d[0].1.acquired().unwrap();
    assert_eq!((one.waited, one.duration), (900, 5_000));
    assert!(one.token > a.token);
    // Its lease expires: the third waiter gets it on the sweep.
    let at = ll.poll_timeout().unwrap();
    assert!(at <= 6_001, "{at}");
    ll.handle_timeout(6_001);
    let d = deferred(&mut ll);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].0, t3);
    let three = d[0].1.acquired().unwrap();
    assert_eq!(three.waited, 5_701);
    assert!(three.token > one.token);
    assert_eq!(ll.waiting(), 0);
    assert_eq!(ll.token(three.cookie), Some(three.token));
    assert_eq!(ll.holders(&Selector::exact("locks/a"))[0].holder, b"three");
}

#[test]
fn a_wait_runs_out_with_a_denial_that_says_why() {
    let mut ll = landlord();
    granted(ll.acquire(b"locks/a".to_vec(), 10_000, 0, vec![], 0));
    let t = waiting(ll.acquire(b"locks/a".to_vec(), 5_000, 2_000, vec![], 1_000));
    assert_eq!(ll.poll_timeout(), Some(3_000));
    ll.handle_timeout(2_999);
    assert!(deferred(&mut ll).is_empty());
    ll.handle_timeout(3_000);
    let d = deferred(&mut ll);
    assert_eq!(d[0].0, t);
    let e = d[0].1.acquired().unwrap_err();
    assert_eq!(e.code(), ErrorCode::LeaseDenied);
    assert!(e.detail().starts_with("waited 2000 ms: \"locks/a\" is held"), "{e}");
    assert_eq!(ll.waiting(), 0);
}

#[test]
fn pools_hand_out_free_members_and_queue_when_all_are_held() {
    let mut ll = landlord();
    let a = granted(ll.acquire(b"ips".to_vec(), 10_000, 0, vec![], 0));
    let b = granted(ll.acquire(b"ips".to_vec(), 10_000, 0, vec![], 0));
    assert_eq!(
        (a.resource.as_slice(), b.resource.as_slice()),
        (&b"10.0.0.1"[..], &b"10.0.0.2"[..])
    );
    let e = ll.acquire(b"ips".to_vec(), 10_000, 0, vec![], 1_000).unwrap_err();
    assert!(
        e.detail()
            .starts_with("every member of pool \"ips\" is held: the first free in at most 9000 ms"),
        "{e}"
    );
    // A member asked for by name and the pool wait in one line, oldest first.
    let direct = waiting(ll.acquire(b"10.0.0.2".to_vec(), 10_000, 60_000, vec![], 1_000));
    let pooled = waiting(ll.acquire(b"ips".to_vec(), 10_000, 60_000, vec![], 1_100));
    ll.cancel(b.cookie, 2_000).unwrap();
    let d = deferred(&mut ll);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].0, d[0].1.acquired().unwrap().resource), (direct, b"10.0.0.2".to_vec()));
    ll.cancel(a.cookie, 2_000).unwrap();
    let d = deferred(&mut ll);
    assert_eq!((d[0].0, d[0].1.acquired().unwrap().resource), (pooled, b"10.0.0.1".to_vec()));
    // A pool's name is never granted as such.
    let e = ll.grant(b"ips".to_vec(), 1_000, 3_000).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
}

#[test]
fn the_configuration_is_checked() {
    let mut ll = landlord();
    for bad in [
        CoordConfig::new().pool(Pool::new("p", Vec::<Vec<u8>>::new())),
        CoordConfig::new().pool(Pool::new("p", ["a"])).pool(Pool::new("q", ["a"])),
        CoordConfig::new().pool(Pool::new("p", ["a"])).pool(Pool::new("a", ["b"])),
        CoordConfig::new().pool(Pool::new("locks/p", ["a"])).exclusive(Selector::prefix("locks/")),
        CoordConfig::new().with_history(0),
    ] {
        assert_eq!(ll.enable_coordination(bad).unwrap_err().code(), ErrorCode::InvalidArgument);
    }
    // Without coordination, acquire and watch say so.
    let mut plain =
        LL::new(LandlordConfig::new(LandlordId(2), [3; 32]), Bounded::new(60_000, 10_000).unwrap());
    let e = plain.acquire(b"x".to_vec(), 1, 0, vec![], 0).unwrap_err();
    assert!(e.detail().contains("enable_coordination"), "{e}");
    assert_eq!(plain.token(Cookie(1)), None);
}

#[test]
fn tokens_grow_across_renewals_snapshots_and_the_journal() {
    let mut ll = landlord();
    ll.enable_journal();
    let mut snap = Vec::new();
    ll.snapshot_bytes(&mut snap);
    let mut log = Vec::new();
    let a = granted(ll.acquire(b"locks/a".to_vec(), 10_000, 0, b"me".to_vec(), 0));
    let g = ll.grant(b"plain".to_vec(), 10_000, 0).unwrap();
    assert_eq!(ll.token(g.cookie), Some(a.token + 1));
    ll.renew(a.cookie, 10_000, 5_000).unwrap();
    assert_eq!(ll.token(a.cookie), Some(a.token));
    ll.take_journal(&mut log);
    // Rebuilt from the snapshot and the journal: the same tokens, the same next one.
    let mut r = LL::from_snapshot_bytes(&snap, Bounded::new(60_000, 10_000).unwrap()).unwrap();
    r.enable_coordination(config()).unwrap();
    r.replay_segments(&[&log]).unwrap();
    r.resume(5_000);
    assert_eq!(r.token(a.cookie), Some(a.token));
    assert_eq!(r.holders(&Selector::exact("locks/a"))[0].holder, b"me");
    assert!(r.acquire(b"locks/a".to_vec(), 1, 0, vec![], 5_000).is_err());
    let next = granted(r.acquire(b"locks/b".to_vec(), 1, 0, vec![], 5_000));
    let same = granted(ll.acquire(b"locks/b".to_vec(), 1, 0, vec![], 5_000));
    assert_eq!(next, same);
    assert_eq!(next.token, a.token + 2);
    // A new snapshot (version 2) carries them too, and so does the JSON form.
    let mut snap2 = Vec::new();
    ll.snapshot_bytes(&mut snap2);
    let r2 = LL::from_snapshot_bytes(&snap2, Bounded::new(60_000, 10_000).unwrap()).unwrap();
    assert_eq!(r2.coord_stats().last_token, next.token);
    let json = serde_json::to_string(&ll.snapshot_coordinated(5_000)).unwrap();
    let r3 = LL::restore_coordinated(
        serde_json::from_str(&json).unwrap(),
        Bounded::new(60_000, 10_000).unwrap(),
        config(),
        5_000,
    )
    .unwrap();
    assert_eq!(r3.token(a.cookie), Some(a.token));
    assert_eq!(r3.coord_stats(), ll.coord_stats());
}

#[test]
fn a_landlord_without_coordination_writes_version_1_snapshots() {
    let mut ll =
        LL::new(LandlordConfig::new(LandlordId(2), [3; 32]), Bounded::new(60_000, 10_000).unwrap());
    ll.enable_journal();
    let mut snap = Vec::new();
    ll.snapshot_bytes(&mut snap);
    assert_eq!(u16::from_le_bytes([snap[6], snap[7]]), 1);
    ll.enable_coordination(CoordConfig::new()).unwrap();
    let mut snap = Vec::new();
    ll.snapshot_bytes(&mut snap);
    assert_eq!(u16::from_le_bytes([snap[6], snap[7]]), 2);
}

fn watch(ll: &mut LL, s: Selector, renewals: bool, now: i64) -> Watching {
    ll.watch(s, 60_000, b"hb".to_vec(), renewals, now).unwrap()
}

fn kinds(e: &Events) -> Vec<(u64, EventKind, Vec<u8>, u64)> {
    e.events.iter().map(|e| (e.sequence, e.kind, e.resource.clone(), e.token)).collect()
}

#[test]
fn a_watch_sees_every_grant_and_end_in_order() {
    let mut ll = landlord();
    let held = granted(ll.acquire(b"locks/a".to_vec(), 10_000, 0, b"h".to_vec(), 0));
    let w = watch(&mut ll, Selector::prefix("locks/"), false, 0);
    assert_eq!((w.event_id, w.sequence), (1, 0));
    assert_eq!(w.current.len(), 1);
    assert_eq!((w.current[0].token, w.current[0].remaining), (held.token, 10_000));
    let exact = watch(&mut ll, Selector::exact("locks/b"), true, 0);
    let b = granted(ll.acquire(b"locks/b".to_vec(), 10_000, 0, vec![], 100));
    ll.grant(b"elsewhere".to_vec(), 10_000, 100).unwrap();
    ll.renew(b.cookie, 10_000, 200).unwrap();
    ll.cancel(b.cookie, 300).unwrap();
    ll.handle_timeout(10_001);
    let e = ll.poll_events(w.cookie, 0, 0, 10_001).unwrap();
    assert_eq!(e.handback, b"hb");
    assert_eq!(e.last, 3);
    assert_eq!(
        kinds(&e),
        vec![
            (1, EventKind::Granted, b"locks/b".to_vec(), b.token),
            (2, EventKind::Cancelled, b"locks/b".to_vec(), b.token),
            (3, EventKind::Expired, b"locks/a".to_vec(), held.token),
        ]
    );
    assert_eq!(e.events[2].holder, b"h");
    // The exact watch asked for renewals too.
    let x = ll.poll_events(exact.cookie, 0, 0, 10_001).unwrap();
    assert_eq!(
        x.events.iter().map(|e| (e.kind, e.duration)).collect::<Vec<_>>(),
        vec![(EventKind::Granted, 10_000), (EventKind::Renewed, 10_000), (EventKind::Cancelled, 0)]
    );
    // Resuming from a number gives what follows; a number never issued is refused.
    assert_eq!(ll.poll_events(w.cookie, 2, 0, 10_001).unwrap().events.len(), 1);
    assert_eq!(ll.poll_events(w.cookie, 3, 0, 10_001).unwrap().events.len(), 0);
    assert_eq!(
        ll.poll_events(w.cookie, 4, 0, 10_001).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    assert_eq!(ll.poll_events(w.cookie, 0, 2, 10_001).unwrap().events.len(), 2);
}

#[test]
fn a_watcher_that_falls_behind_the_history_is_told_exactly_what_it_missed() {
    let mut ll = landlord();
    ll.enable_coordination(config().with_history(2)).unwrap();
    let w = watch(&mut ll, Selector::prefix("locks/"), false, 0);
    let mut last = None;
    for i in 0..3 {
        let a = granted(ll.acquire(b"locks/a".to_vec(), 10_000, 0, vec![], i * 10));
        ll.cancel(a.cookie, i * 10 + 1).unwrap();
        last = Some(a);
    }
    let held = granted(ll.acquire(b"locks/z".to_vec(), 10_000, 0, vec![], 100));
    // 7 events; 2 kept.
    let e = ll.poll_events(w.cookie, 1, 0, 100).unwrap();
    assert_eq!(e.last, 7);
    let m = e.missed.unwrap();
    assert_eq!((m.from, m.to), (2, 7));
    assert!(e.events.is_empty());
    let current = e.current.unwrap();
    assert_eq!((current.len(), current[0].token), (1, held.token));
    // Within the history: nothing missed.
    let e = ll.poll_events(w.cookie, 5, 0, 100).unwrap();
    assert!(e.missed.is_none());
    assert_eq!(e.events.iter().map(|e| e.sequence).collect::<Vec<_>>(), vec![6, 7]);
    assert_eq!(e.events[0].token, last.unwrap().token);
}

#[test]
fn a_long_poll_is_answered_by_the_next_event_or_at_its_deadline() {
    let mut ll = landlord();
    let w = watch(&mut ll, Selector::exact("leader"), false, 0);
    let poll = |since, wait| CoordRequest {
        id: 9,
        body: CoordRequestBody::Poll { cookie: w.cookie, since, wait, max: 10 },
    };
    let Handled::Later(t) = ll.handle_coord(&poll(0, 5_000), 0) else {
        panic!("nothing to answer yet")
    };
    let a = granted(ll.acquire(b"leader".to_vec(), 10_000, 0, b"n1".to_vec(), 10));
    let d = deferred(&mut ll);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].0, t);
    assert_eq!(d[0].1.id, 9);
    let e = d[0].1.events().unwrap();
    assert_eq!(
        (e.events.len(), e.events[0].token, e.events[0].holder.as_slice()),
        (1, a.token, &b"n1"[..])
    );
    // An empty answer at the deadline.
    let Handled::Later(t) = ll.handle_coord(&poll(1, 1_000), 20) else { panic!() };
    assert_eq!(ll.poll_timeout(), Some(1_020));
    ll.handle_timeout(1_020);
    let d = deferred(&mut ll);
    assert_eq!((d[0].0, d[0].1.events().unwrap().events.len()), (t, 0));
    // A watch that ends answers its polls "unknown lease".
    let Handled::Later(_) = ll.handle_coord(&poll(1, 100_000), 1_100) else { panic!() };
    let cancel = Request { id: 3, body: RequestBody::Cancel { cookie: w.cookie } };
    let r = ll.handle_request(&cancel, 1_200);
    assert_eq!(r.body, leasehold::ReplyBody::Cancelled);
    let d = deferred(&mut ll);
    assert_eq!(d[0].1.events().unwrap_err(), LeaseError::UnknownLease);
    assert_eq!(ll.poll_events(w.cookie, 0, 0, 1_300).unwrap_err(), LeaseError::UnknownLease);
}

#[test]
fn a_watch_is_a_lease_renewed_and_ended_like_any() {
    let mut ll = landlord();
    let w = ll.watch(Selector::prefix(""), 1_000, vec![], false, 0).unwrap();
    assert_eq!(w.duration, 1_000);
    let renew = Request { id: 1, body: RequestBody::Renew { cookie: w.cookie, duration: 2_000 } };
    assert_eq!(
        ll.handle_request(&renew, 900).body,
        leasehold::ReplyBody::Renewed { duration: 2_000 }
    );
    ll.handle_timeout(2_000);
    ll.poll_events(w.cookie, 0, 0, 2_000).unwrap();
    assert_eq!(ll.poll_timeout(), Some(2_901));
    ll.handle_timeout(2_901);
    assert_eq!(ll.coord_stats().watches, 0);
    assert_eq!(ll.poll_events(w.cookie, 0, 0, 2_901).unwrap_err(), LeaseError::UnknownLease);
    assert_eq!(
        ll.handle_request(&renew, 2_902).body,
        leasehold::ReplyBody::Error((&LeaseError::UnknownLease).into())
    );
}

#[test]
fn watches_and_their_events_survive_the_journal_exactly() {
    let mut ll = landlord();
    ll.enable_journal();
    let mut snap = Vec::new();
    ll.snapshot_bytes(&mut snap);
    let w = watch(&mut ll, Selector::prefix("locks/"), true, 0);
    let a = granted(ll.acquire(b"locks/a".to_vec(), 1_000, 0, b"x".to_vec(), 10));
    ll.renew(a.cookie, 1_000, 500).unwrap();
    ll.handle_timeout(1_501);
    let b = granted(ll.acquire(b"locks/a".to_vec(), 1_000, 0, vec![], 1_600));
    let mut log = Vec::new();
    ll.take_journal(&mut log);
    let mut r = LL::from_snapshot_bytes(&snap, Bounded::new(60_000, 10_000).unwrap()).unwrap();
    r.enable_coordination(config()).unwrap();
    r.replay_segments(&[&log]).unwrap();
    r.resume(1_600);
    let want = ll.poll_events(w.cookie, 0, 0, 1_600).unwrap();
    assert_eq!(r.poll_events(w.cookie, 0, 0, 1_600).unwrap(), want);
    assert_eq!(want.events.len(), 4);
    assert_eq!(want.events[3].token, b.token);
    // And both go on the same way.
    for l in [&mut ll, &mut r] {
        l.cancel(b.cookie, 1_700).unwrap();
    }
    assert_eq!(
        r.poll_events(w.cookie, 4, 0, 1_700).unwrap(),
        ll.poll_events(w.cookie, 4, 0, 1_700).unwrap()
    );
}

#[test]
fn coordination_messages_through_handle_coord() {
    let mut ll = landlord();
    let lim = Limits::default();
    let ask = |ll: &mut LL, body: CoordRequestBody, now| {
        let bytes = CoordRequest { id: 5, body }.encode(Encoding::Binary);
        let req = CoordRequest::decode(&bytes, Encoding::Binary, &lim).unwrap();
        match ll.handle_coord(&req, now) {
            Handled::Now(r) => {
                let back =
                    CoordReply::decode(&r.encode(Encoding::Json), Encoding::Json, &lim).unwrap();
                assert_eq!(back, r);
                Ok(r)
            }
            Handled::Later(t) => Err(t),
        }
    };
    let acquire = |wait| CoordRequestBody::Acquire {
        resource: b"locks/q".to_vec(),
        duration: 1_000,
        wait,
        holder: b"me".to_vec(),
    };
    let r = ask(&mut ll, acquire(0), 0).unwrap();
    assert_eq!(r.landlord, LandlordId(1));
    let CoordReplyBody::Acquired { token, .. } = r.body else { panic!("{r:?}") };
    let r = ask(&mut ll, acquire(0), 0).unwrap();
    assert!(
        matches!(r.body, CoordReplyBody::Error(ref e) if e.code == ErrorCode::LeaseDenied as i32)
    );
    let t = ask(&mut ll, acquire(100), 0).unwrap_err();
    let r =
        ask(&mut ll, CoordRequestBody::Holders { resource: b"locks/".to_vec(), prefix: true }, 0)
            .unwrap();
    let CoordReplyBody::Holders { holders } = r.body else { panic!() };
    assert_eq!(
        (holders.len(), holders[0].token, holders[0].holder.as_slice()),
        (1, token, &b"me"[..])
    );
    let r = ask(
        &mut ll,
        CoordRequestBody::Watch {
            resource: b"locks/q".to_vec(),
            prefix: false,
            renewals: false,
            duration: 5_000,
            handback: vec![7],
        },
        0,
    )
    .unwrap();
    let CoordReplyBody::Watching { current, event_id, .. } = r.body else { panic!() };
    assert_eq!((current.len(), event_id), (1, 1));
    ll.handle_timeout(100);
    let d = deferred(&mut ll);
    assert_eq!(d[0].0, t);
    assert_eq!(d[0].1.id, 5);
}
