//! Coordination under long random runs: exactness and the invariants.
//!
//! Three twins are fed the same requests (acquires with and without waits, pools, plain grants,
//! renewals, cancels, watches and their polls, time): one is never restored, one is restored
//! from its JSON snapshot (`snapshot_coordinated`), one is rebuilt from its binary snapshot and
//! journal, at random moments. A rebuild is a crash: requests held waiting are lost by the
//! rebuilt twins, so the original abandons its own (its host lost their connections too). Every
//! answer (now and later) must be the same byte for byte.
//!
//! Invariants, checked on the original after every step:
//! - never two leases of an exclusive resource at the landlord;
//! - every token granted is greater than every token granted before it;
//! - every watcher sees every event of its watch once, in order of strictly increasing number,
//!   or is told exactly which numbers it missed; the grants and ends it sees fit together (an
//!   end only for a lease granted, once), and what it believes is held (for an exclusive
//!   resource) is what the landlord says is held.

use std::collections::{BTreeMap, BTreeSet};

use leasehold::coord::wire::{CoordReply, CoordReplyBody, CoordRequest, CoordRequestBody};
use leasehold::coord::{CoordConfig, EventKind, Handled, Pool, Selector, Ticket};
use leasehold::policy::PolicySpec;
use leasehold::{
    Cookie, Duration, Encoding, Landlord, LandlordConfig, LandlordId, Limits, Millis, Reply,
    ReplyBody, Request, RequestBody, ANY, FOREVER,
};
use proptest::prelude::*;

type LL = Landlord<Vec<u8>>;

const RESOURCES: [&str; 7] = ["x/0", "x/1", "x/2", "pool", "m/0", "m/1", "free"];
const SELECTORS: [(&str, bool); 4] = [("x/", true), ("x/0", false), ("m/", true), ("", true)];

fn coord_config() -> CoordConfig {
    CoordConfig::new()
        .exclusive(Selector::prefix("x/"))
        .pool(Pool::new("pool", ["m/0", "m/1"]))
        .with_history(4)
}

fn exclusive(r: &[u8]) -> bool {
    r.starts_with(b"x/") || r.starts_with(b"m/")
}

#[derive(Debug, Clone)]
enum Op {
    Acquire(usize, Duration, Duration),
    Grant(usize, Duration),
    Renew(usize, Duration),
    Cancel(usize),
    CancelAll(Vec<usize>),
    Watch(usize, Duration, bool),
    Poll(usize, Duration),
    Holders(usize),
    Abandon(usize),
    Step(i64),
    Timeout,
    Expired,
    Rebuild,
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![4 => 0i64..3_000, 1 => Just(ANY), 1 => Just(FOREVER), 1 => Just(0i64)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0usize..RESOURCES.len(), duration(), prop_oneof![Just(0i64), 0i64..4_000])
            .prop_map(|(r, d, w)| Op::Acquire(r, d, w)),
        2 => (0usize..RESOURCES.len(), duration()).prop_map(|(r, d)| Op::Grant(r, d)),
        4 => (0usize..64, duration()).prop_map(|(p, d)| Op::Renew(p, d)),
        4 => (0usize..64).prop_map(Op::Cancel),
        1 => prop::collection::vec(0usize..64, 0..4).prop_map(Op::CancelAll),
        2 => (0usize..SELECTORS.len(), prop_oneof![Just(FOREVER), 500i64..20_000], any::<bool>())
            .prop_map(|(s, d, r)| Op::Watch(s, d, r)),
        5 => (0usize..16, prop_oneof![Just(0i64), 0i64..3_000]).prop_map(|(w, t)| Op::Poll(w, t)),
        1 => (0usize..SELECTORS.len()).prop_map(Op::Holders),
        1 => (0usize..16).prop_map(Op::Abandon),
        8 => (0i64..1_500).prop_map(Op::Step),
        5 => Just(Op::Timeout),
        2 => Just(Op::Expired),
        1 => Just(Op::Rebuild),
    ]
}

fn policy() -> impl Strategy<Value = PolicySpec> {
    prop_oneof![
        Just(PolicySpec::Bounded { max: 5_000, default: 1_000 }),
        Just(PolicySpec::Capacity {
            max_leases: 6,
            inner: Box::new(PolicySpec::Bounded { max: FOREVER, default: 700 })
        }),
    ]
}

/// What a twin says to one step.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Reply(Vec<u8>),
    Later(Ticket),
    Deferred(Ticket, Vec<u8>),
    Expired(Cookie, Millis, Vec<u8>),
    Stats(usize, u64, usize, usize),
}

/// What the test knows: cookies granted, watches made, tickets waiting.
#[derive(Default)]
struct Known {
    cookies: Vec<Cookie>,
    watches: Vec<Cookie>,
    tickets: Vec<Ticket>,
    /// Long polls waiting, by ticket: the watch they are for.
    polls: BTreeMap<Ticket, Cookie>,
}

fn pick<T: Copy>(v: &[T], p: usize) -> Option<T> {
    (!v.is_empty()).then(|| v[p % v.len()])
}

enum Msg {
    Lease(Request),
    Coord(CoordRequest),
}

fn message(op: &Op, k: &Known, id: u64) -> Option<Msg> {
    let r = |i: usize| RESOURCES[i].as_bytes().to_vec();
    let cookie = |p| pick(&k.cookies, p).unwrap_or(Cookie(p as u128));
    Some(match op {
        Op::Acquire(i, d, w) => Msg::Coord(CoordRequest {
            id,
            body: CoordRequestBody::Acquire {
                resource: r(*i),
                duration: *d,
                wait: *w,
                holder: vec![*i as u8; *i % 3],
            },
        }),
        Op::Grant(i, d) => {
            Msg::Lease(Request { id, body: RequestBody::Grant { resource: r(*i), duration: *d } })
        }
        Op::Renew(p, d) => {
            let c =
                if p % 5 == 4 { pick(&k.watches, *p).unwrap_or(cookie(*p)) } else { cookie(*p) };
            Msg::Lease(Request { id, body: RequestBody::Renew { cookie: c, duration: *d } })
        }
        Op::Cancel(p) => {
            let c =
                if p % 7 == 6 { pick(&k.watches, *p).unwrap_or(cookie(*p)) } else { cookie(*p) };
            Msg::Lease(Request { id, body: RequestBody::Cancel { cookie: c } })
        }
        Op::CancelAll(ps) => Msg::Lease(Request {
            id,
            body: RequestBody::CancelAll { cookies: ps.iter().map(|&p| cookie(p)).collect() },
        }),
        Op::Watch(s, d, renewals) => Msg::Coord(CoordRequest {
            id,
            body: CoordRequestBody::Watch {
                resource: SELECTORS[*s].0.as_bytes().to_vec(),
                prefix: SELECTORS[*s].1,
                renewals: *renewals,
                duration: *d,
                handback: vec![*s as u8],
            },
        }),
        Op::Holders(s) => Msg::Coord(CoordRequest {
            id,
            body: CoordRequestBody::Holders {
                resource: SELECTORS[*s].0.as_bytes().to_vec(),
                prefix: SELECTORS[*s].1,
            },
        }),
        _ => return None,
    })
}

fn drain(ll: &mut LL, enc: Encoding, seen: &mut Vec<Seen>) {
    while let Some((t, r)) = ll.poll_deferred() {
        seen.push(Seen::Deferred(t, r.encode(enc)));
    }
}

/// One step on a twin. Polls are made by the caller (they depend on each watcher's position).
fn step(ll: &mut LL, msg: Option<&Msg>, op: &Op, now: Millis, enc: Encoding) -> Vec<Seen> {
    let mut seen = Vec::new();
    match msg {
        Some(Msg::Lease(req)) => {
            seen.push(Seen::Reply(ll.handle_bytes(&req.encode(enc), enc, now)))
        }
        Some(Msg::Coord(req)) => {
            let req = CoordRequest::decode(&req.encode(enc), enc, &Limits::default()).unwrap();
            match ll.handle_coord(&req, now) {
                Handled::Now(r) => seen.push(Seen::Reply(r.encode(enc))),
                Handled::Later(t) => seen.push(Seen::Later(t)),
            }
        }
        None => {}
    }
    match op {
        Op::Timeout => ll.handle_timeout(now),
        Op::Expired => {
            while let Some(e) = ll.poll_expired() {
                seen.push(Seen::Expired(e.cookie, e.expiration, e.resource));
            }
        }
        _ => {}
    }
    drain(ll, enc, &mut seen);
    let s = ll.coord_stats();
    seen.push(Seen::Stats(ll.len(), s.last_token, s.held, s.watches));
    seen
}

/// What one watcher has seen.
#[derive(Default, Debug)]
struct Watcher {
    last: u64,
    /// Tokens it believes live, per resource (from grants and ends).
    live: BTreeMap<Vec<u8>, BTreeSet<u64>>,
    ended: BTreeSet<u64>,
}

fn check_events(w: &mut Watcher, bytes: &[u8], enc: Encoding) {
    let r = CoordReply::decode(bytes, enc, &Limits::default()).unwrap();
    let CoordReplyBody::Events(e) = r.body else { return };
    if let Some(m) = e.missed {
        assert_eq!(m.from, w.last + 1, "missed numbers start right after the last one seen");
        assert_eq!(m.to, e.last, "missed up to the last number issued");
        assert!(e.events.is_empty());
        w.last = m.to;
        // Resynchronise from the current holders (the state after event `to`).
        w.live.clear();
        for h in e.current.unwrap() {
            w.live.entry(h.resource).or_default().insert(h.token);
        }
        return;
    }
    for ev in &e.events {
        assert_eq!(ev.sequence, w.last + 1, "events in order, none skipped without a word");
        w.last = ev.sequence;
        match ev.kind {
            EventKind::Granted => {
                assert!(!w.ended.contains(&ev.token), "a token is granted once");
                assert!(w.live.entry(ev.resource.clone()).or_default().insert(ev.token));
            }
            EventKind::Renewed => {}
            EventKind::Cancelled | EventKind::Expired => {
                assert!(w.ended.insert(ev.token), "an end is seen once");
                let known = w.live.get_mut(&ev.resource).is_some_and(|s| s.remove(&ev.token));
                // The watcher knows every holder of an exclusive resource (from `current`);
                // a non-exclusive lease granted before the watch began ends unseen.
                assert!(known || !exclusive(&ev.resource), "end of token {} unknown", ev.token);
            }
        }
    }
    assert!(e.last >= w.last);
}

/// A twin's tickets under the original's numbers.
#[derive(Default)]
struct Tickets {
    ours: BTreeMap<Ticket, Ticket>,
    theirs: BTreeMap<Ticket, Ticket>,
}

impl Tickets {
    fn translate(&mut self, original: &[Seen], mut seen: Vec<Seen>) -> Vec<Seen> {
        if let (Some(Seen::Later(o)), Some(Seen::Later(t))) = (original.first(), seen.first()) {
            self.ours.insert(*t, *o);
            self.theirs.insert(*o, *t);
        }
        for s in &mut seen {
            match s {
                Seen::Later(t) | Seen::Deferred(t, _) => {
                    if let Some(o) = self.ours.get(t) {
                        *t = *o;
                    }
                }
                _ => {}
            }
        }
        seen
    }
    fn theirs(&self, t: Ticket) -> Ticket {
        self.theirs.get(&t).copied().unwrap_or(Ticket(u64::MAX))
    }
}

struct Disk {
    snapshot: Vec<u8>,
    log: Vec<u8>,
}

fn run(spec: PolicySpec, ops: Vec<Op>) {
    let build = || spec.build().unwrap();
    let new = || {
        let mut ll = LL::new(LandlordConfig::new(LandlordId(5), [4; 32]).with_grace(50), build());
        ll.enable_coordination(coord_config()).unwrap();
        ll
    };
    let mut a = new();
    let mut b = new();
    let mut c = {
        let mut c = LL::new(LandlordConfig::new(LandlordId(5), [4; 32]).with_grace(50), build());
        c.enable_journal();
        c.enable_coordination(coord_config()).unwrap();
        c
    };
    let mut disk = Disk { snapshot: Vec::new(), log: Vec::new() };
    c.snapshot_bytes(&mut disk.snapshot);
    let mut k = Known::default();
    let mut watchers: BTreeMap<Cookie, Watcher> = BTreeMap::new();
    let mut last_token = 0u64;
    let mut tickets_b = Tickets::default();
    let mut tickets_c = Tickets::default();
    let mut now: Millis = 1_000;
    for (i, op) in ops.iter().enumerate() {
        let id = i as u64 + 1;
        let enc = if i % 3 == 0 { Encoding::Json } else { Encoding::Binary };
        match op {
            Op::Step(s) => {
                now += s;
                continue;
            }
            Op::Rebuild => {
                // A crash: waiting requests are gone (their connections with them).
                for t in k.tickets.drain(..) {
                    a.abandon(t);
                }
                k.polls.clear();
                tickets_b = Tickets::default();
                tickets_c = Tickets::default();
                let t = b.now();
                if t != Millis::MIN {
                    let json = serde_json::to_string(&b.snapshot_coordinated(t)).unwrap();
                    b = LL::restore_coordinated(
                        serde_json::from_str(&json).unwrap(),
                        build(),
                        coord_config(),
                        t,
                    )
                    .unwrap();
                }
                c.take_journal(&mut disk.log);
                if i % 2 == 0 {
                    disk.snapshot.clear();
                    disk.log.clear();
                    c.snapshot_bytes(&mut disk.snapshot);
                }
                let mut r = LL::from_snapshot_bytes(&disk.snapshot, build()).unwrap();
                r.enable_coordination(coord_config()).unwrap();
                let rec = r.replay_segments(&[&disk.log]).unwrap();
                assert_eq!(rec.last_seq, c.journal_seq());
                c = r;
                for l in [&mut a, &mut b, &mut c] {
                    assert_eq!(l.waiting(), 0);
                }
                continue;
            }
            Op::Abandon(p) => {
                if let Some(t) = pick(&k.tickets, *p) {
                    let x = a.abandon(t);
                    assert_eq!(x, b.abandon(tickets_b.theirs(t)));
                    assert_eq!(x, c.abandon(tickets_c.theirs(t)));
                    k.tickets.retain(|&u| u != t);
                    k.polls.remove(&t);
                }
                continue;
            }
            _ => {}
        }
        let msg = match op {
            Op::Poll(w, wait) => pick(&k.watches, *w)
                .filter(|cookie| !k.polls.values().any(|c| c == cookie))
                .map(|cookie| {
                    let since = watchers.get(&cookie).map_or(0, |w| w.last);
                    Msg::Coord(CoordRequest {
                        id,
                        body: CoordRequestBody::Poll { cookie, since, wait: *wait, max: 3 },
                    })
                }),
            _ => message(op, &k, id),
        };
        let sa = step(&mut a, msg.as_ref(), op, now, enc);
        // Tickets are the host's handles of waiting requests, not durable state: a rebuilt
        // twin numbers them afresh. Compare the others' under the original's numbers.
        let sb = tickets_b.translate(&sa, step(&mut b, msg.as_ref(), op, now, enc));
        let sc = tickets_c.translate(&sa, step(&mut c, msg.as_ref(), op, now, enc));
        c.take_journal(&mut disk.log);
        assert_eq!(sa, sb, "JSON-restored twin differs at step {i} ({op:?})");
        assert_eq!(sa, sc, "journal-rebuilt twin differs at step {i} ({op:?})");
        // Learn from the answers, and check them.
        let polled = match &msg {
            Some(Msg::Coord(CoordRequest {
                body: CoordRequestBody::Poll { cookie, .. }, ..
            })) => Some(*cookie),
            _ => None,
        };
        let mut step_tokens = BTreeSet::new();
        for s in &sa {
            let (bytes, cookie) = match s {
                Seen::Later(t) => {
                    k.tickets.push(*t);
                    if let Some(c) = polled {
                        k.polls.insert(*t, c);
                    }
                    continue;
                }
                Seen::Reply(b) => (b, polled),
                Seen::Deferred(t, b) => {
                    k.tickets.retain(|x| x != t);
                    (b, k.polls.remove(t))
                }
                _ => continue,
            };
            if let Ok(r) = Reply::decode(bytes, enc, &Limits::default()) {
                if let ReplyBody::Granted { cookie, .. } = r.body {
                    k.cookies.push(cookie);
                }
                continue;
            }
            let r = CoordReply::decode(bytes, enc, &Limits::default()).unwrap();
            match &r.body {
                CoordReplyBody::Acquired { cookie, token, .. } => {
                    // One step may answer several (a sweep serves waiters before the
                    // request at hand): each is above every token of earlier steps.
                    assert!(*token > last_token, "token {token} after {last_token}");
                    assert!(step_tokens.insert(*token), "token {token} twice");
                    k.cookies.push(*cookie);
                }
                CoordReplyBody::Watching { cookie, current, .. } => {
                    k.watches.push(*cookie);
                    let mut w = Watcher::default();
                    for h in current {
                        w.live.entry(h.resource.clone()).or_default().insert(h.token);
                    }
                    watchers.insert(*cookie, w);
                }
                CoordReplyBody::Events(_) => {
                    let w = watchers.get_mut(&cookie.expect("events answer a poll")).unwrap();
                    check_events(w, bytes, enc);
                }
                _ => {}
            }
        }
        last_token = step_tokens.last().copied().unwrap_or(last_token).max(last_token);
        // Never two leases of an exclusive resource.
        let mut held: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
        for (_, _, r) in a.iter() {
            if exclusive(r) {
                *held.entry(r.clone()).or_default() += 1;
            }
        }
        assert!(held.values().all(|&n| n == 1), "two holders at step {i}: {held:?}");
        // A watcher that has every event so far believes of each exclusive resource it
        // selects what the landlord says: who holds it.
        for (cookie, w) in &watchers {
            let Ok(e) = a.poll_events(*cookie, w.last, 0, now) else { continue };
            if !e.events.is_empty() || e.missed.is_some() {
                continue;
            }
            let mut truth: BTreeMap<Vec<u8>, BTreeSet<u64>> = BTreeMap::new();
            let sel = SELECTORS
                .iter()
                .find(|s| e.handback == [SELECTORS.iter().position(|x| x == *s).unwrap() as u8])
                .unwrap();
            let selector = Selector { resource: sel.0.as_bytes().to_vec(), prefix: sel.1 };
            for h in a.holders(&selector) {
                truth.entry(h.resource).or_default().insert(h.token);
            }
            let believed: BTreeMap<Vec<u8>, BTreeSet<u64>> = w
                .live
                .iter()
                .filter(|(r, t)| exclusive(r) && !t.is_empty())
                .map(|(r, t)| (r.clone(), t.clone()))
                .collect();
            assert_eq!(believed, truth, "watcher {cookie} at step {i}");
        }
    }
    // In the end the same leases, the same watches and events.
    let all = |l: &LL| l.iter().map(|(c, e, r)| (c, e, r.clone())).collect::<Vec<_>>();
    assert_eq!(all(&a), all(&b));
    assert_eq!(all(&a), all(&c));
    for &w in &k.watches {
        let e = a.poll_events(w, 0, 0, now);
        assert_eq!(e, b.poll_events(w, 0, 0, now));
        assert_eq!(e, c.poll_events(w, 0, 0, now));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn coordinated_twins_answer_alike_and_keep_the_invariants(
        spec in policy(),
        ops in prop::collection::vec(op(), 1..400),
    ) {
        run(spec, ops);
    }
}
