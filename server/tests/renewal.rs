//! The lease renewal service as real processes (issue 26, phase 1; docs/renewal-service.md).
//!
//! Server A is a landlord; server B runs a renewal-service shard. A holder (this test) grants
//! 100 leases of 8 s at A, hands them to a renewal set on B for 30 s, and then never touches
//! them again. Meanwhile the test samples A's leases (the admin listing, which renews nothing)
//! and B's view of the set, runs a listener for B's events, cancels one lease at A (a
//! renewal-failure event must come), removes one from the set, and SIGKILLs and restarts B in
//! the middle (the service is restored from its journal and keeps renewing).
//!
//! Counted, for the 98 leases left to the service:
//! - *lost*: gone at A at any sample before their desired expiration;
//! - *early*: missing from the set at B at any sample before their desired expiration;
//! - *late*: still alive at A well after their desired expiration (the service kept renewing).
//!
//! All three must be 0.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use leasehold::service::wire::{
    ClientLease, SetEventBody, SetEventType, SetReply, SetReplyBody, SetRequest, SetRequestBody,
};
use leasehold::{Cookie, Encoding, ErrorCode, LandlordId, Limits, Request, RequestBody};

/// The leases' own duration.
const D: i64 = 8_000;
/// How long the holder wants them kept, from the time it hands them over.
const KEEP: i64 = 30_000;
const N: usize = 100;

/// The cookies of landlord 1's live leases at `addr` (the admin listing renews nothing).
fn live_at(addr: SocketAddr) -> Option<BTreeSet<Cookie>> {
    let (status, body) = get(addr, "/admin/landlords/0000000000000001/leases?limit=10000");
    if status != 200 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    Some(
        v["leases"]
            .as_array()?
            .iter()
            .map(|l| Cookie(u128::from_str_radix(l["cookie"].as_str().unwrap(), 16).unwrap()))
            .collect(),
    )
}

/// The client leases of the set at B.
fn in_set(addr: SocketAddr, service: LandlordId, set: Cookie) -> Option<BTreeSet<Cookie>> {
    let (status, reply) = set_op(addr, Some(service), SetRequestBody::Leases { set });
    match reply.body {
        SetReplyBody::Leases { leases } if status == 200 => {
            Some(leases.iter().map(|l| l.cookie).collect())
        }
        _ => None,
    }
}

#[test]
fn a_renewal_set_keeps_leases_alive_through_a_sigkill_of_its_service() {
    let dir_a = tempfile::tempdir().unwrap();
    let dir_b = tempfile::tempdir().unwrap();
    let a = Server::start(&["--data", dir_a.path().to_str().unwrap()]);
    let data_b = dir_b.path().to_str().unwrap().to_string();
    let mut b = Server::start(&["--data", &data_b, "--renewal-shards", "1"]);
    a.wait_ready(Duration::from_secs(20));
    b.wait_ready(Duration::from_secs(20));
    let service = LandlordId(2);
    let (events_url, events) = set_listener();

    // The holder: 100 leases of 8 s at A, each counted from when its grant was sent.
    let t0 = Instant::now();
    let ms = |t: Instant| t.duration_since(t0).as_millis() as i64;
    let mut leases = Vec::new();
    for i in 0..N {
        let sent = ms(Instant::now());
        let (landlord, cookie) = grant_retry(a.addr, i as u64 + 1, &format!("job/{i}"), D);
        assert_eq!(landlord, 1);
        leases.push((cookie, sent + D));
    }
    // A set for 10 minutes, renewal failures to our listener, and the leases handed over.
    let (status, r) = set_op(b.addr, None, SetRequestBody::CreateSet { duration: 600_000 });
    let SetReplyBody::SetCreated { cookie: set, duration, .. } = r.body else { panic!("{r:?}") };
    assert_eq!((status, r.landlord, duration), (200, service, 600_000));
    let (status, r) = set_op(
        b.addr,
        Some(service),
        SetRequestBody::Listen {
            set,
            event: SetEventType::RenewalFailure,
            min_warning: 0,
            url: events_url,
            handback: b"holder-1".to_vec(),
        },
    );
    assert!(status == 200 && matches!(r.body, SetReplyBody::Registered { .. }), "{r:?}");
    let mut desired = BTreeMap::new();
    for (cookie, expiration) in &leases {
        let now = ms(Instant::now());
        let lease = ClientLease {
            landlord: LandlordId(1),
            cookie: *cookie,
            remaining: expiration - now,
            urls: vec![a.url()],
            membership: None,
            renew: None,
        };
        let (status, r) = set_op(
            b.addr,
            Some(service),
            SetRequestBody::Add { set, lease, membership: KEEP, renew: D },
        );
        assert_eq!((status, &r.body), (200, &SetReplyBody::Done), "{r:?}");
        desired.insert(*cookie, now + KEEP);
    }
    let handed_over = ms(Instant::now());
    eprintln!("{N} leases granted and handed over in {handed_over} ms; the holder is gone");
    let cancelled = leases[0].0;
    let removed = leases[1].0;
    let kept: BTreeSet<Cookie> = leases[2..].iter().map(|l| l.0).collect();

    // The set's own lease is a lease like any other: renewed at B's /lease.
    let renew = Request { id: 9, body: RequestBody::Renew { cookie: set, duration: 600_000 } };
    let ans = post(b.addr, Some(service.0), &renew, Duration::from_secs(5)).unwrap();
    assert_eq!(ans.status, 200, "{}", String::from_utf8_lossy(&ans.body));

    let (mut lost, mut early, mut samples, mut restarted) =
        (BTreeSet::new(), BTreeSet::new(), 0, false);
    let (mut did_cancel, mut did_remove) = (false, false);
    let end = handed_over + KEEP - 500;
    while ms(Instant::now()) < end {
        let now = ms(Instant::now());
        if !did_remove && now > 3_000 {
            let (status, r) = set_op(
                b.addr,
                Some(service),
                SetRequestBody::Remove {
                    set,
                    landlord: LandlordId(1),
                    cookie: removed,
                    urls: vec![a.url()],
                },
            );
            assert!(
                status == 200
                    && matches!(&r.body, SetReplyBody::Removed { lease: Some(l) } if l.cookie == removed),
                "{r:?}"
            );
            did_remove = true;
        }
        if !did_cancel && now > 5_000 {
            let c = Request { id: 10, body: RequestBody::Cancel { cookie: cancelled } };
            assert_eq!(post(a.addr, Some(1), &c, Duration::from_secs(5)).unwrap().status, 200);
            did_cancel = true;
        }
        if !restarted && now > 12_000 {
            // SIGKILL: no shutdown, no last write. Back after a second, on the same data.
            let t = Instant::now();
            b.kill();
            std::thread::sleep(Duration::from_secs(1));
            b = Server::start(&["--data", &data_b, "--renewal-shards", "1"]);
            b.wait_ready(Duration::from_secs(20));
            eprintln!("service SIGKILLed and back in {} ms", t.elapsed().as_millis());
            // Restored from its store, not made afresh.
            let opened =
                b.logs.lock().unwrap().iter().find(|l| l.contains("renewal shard opened")).cloned();
            let opened = opened.unwrap_or_default();
            assert!(opened.contains("sets=1") && opened.contains("created=false"), "{opened}");
            restarted = true;
        }
        let (Some(at_a), Some(at_b)) = (live_at(a.addr), in_set(b.addr, service, set)) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let now = ms(Instant::now()).min(now);
        samples += 1;
        for c in &kept {
            if now < desired[c] - 200 {
                if !at_a.contains(c) {
                    lost.insert(*c);
                }
                if !at_b.contains(c) {
                    early.insert(*c);
                }
            }
        }
        if did_remove {
            assert!(!at_b.contains(&removed), "a removed lease is no longer in the set");
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(restarted && did_cancel && did_remove);

    // The cancelled lease: exactly one renewal-failure event, naming it as the holder does
    // (delivery is at least once: a listener drops repeats by event id and sequence number).
    let mut got = set_events(&events);
    let mut seen = BTreeSet::new();
    got.retain(|e| seen.insert((e.service, e.event_id, e.sequence)));
    eprintln!("events: {got:?}");
    assert_eq!(got.len(), 1, "{got:?}");
    let e = &got[0];
    assert_eq!((e.service, e.handback.as_slice()), (service, b"holder-1".as_slice()));
    let SetEventBody::RenewalFailure { lease, error } = &e.body else { panic!("{e:?}") };
    assert_eq!((lease.landlord, lease.cookie), (LandlordId(1), cancelled));
    assert_eq!(lease.urls, [a.url()]);
    assert_eq!(error.as_ref().map(|e| e.code), Some(ErrorCode::UnknownLease as i32));

    // After the desired expirations the service stops: the leases end at A by then (the last
    // renewal asked only for what was left), none is renewed past it.
    let last = desired.values().max().copied().unwrap();
    while ms(Instant::now()) < last + 2_000 {
        std::thread::sleep(Duration::from_millis(200));
    }
    let at_a = live_at(a.addr).unwrap();
    let late: Vec<_> = kept.iter().filter(|c| at_a.contains(c)).collect();
    let lost_n = lost.len();
    let early_n = early.len();
    eprintln!(
        "{} leases kept for {KEEP} ms (their own duration {D} ms), {samples} samples, one SIGKILL: \
         {lost_n} lost, {early_n} early, {} late",
        kept.len(),
        late.len()
    );
    assert_eq!((lost_n, early_n, late.len()), (0, 0, 0), "lost {lost:?} early {early:?}");
    assert!(samples > 50, "only {samples} samples");

    // The set is cancelled like any lease; then it is gone.
    let cancel = Request { id: 11, body: RequestBody::Cancel { cookie: set } };
    assert_eq!(post(b.addr, Some(service.0), &cancel, Duration::from_secs(5)).unwrap().status, 200);
    let (status, r) = set_op(b.addr, Some(service), SetRequestBody::Leases { set });
    assert_eq!(status, 404, "{r:?}");
    assert!(b.logged("renewal shard opened"), "{}", b.log_text());
}

#[test]
fn renewal_requests_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&["--data", dir.path().to_str().unwrap()]);
    s.wait_ready(Duration::from_secs(20));
    // No renewal shards: 404 with a reason.
    let (status, r) = set_op(s.addr, None, SetRequestBody::CreateSet { duration: 1000 });
    assert_eq!(status, 404, "{r:?}");
    let SetReplyBody::Error(e) = r.body else { panic!() };
    assert!(e.message.contains("--renewal-shards"), "{e:?}");
    drop(s);
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&["--data", dir.path().to_str().unwrap(), "--renewal-shards", "2"]);
    s.wait_ready(Duration::from_secs(20));
    // Undecodable: 400; an operation without its set's landlord: 400; a landlord shard: 404.
    let (status, _) = post_raw(s.addr, "/renewal", b"{\"v\":1}", "application/json", &[]).unwrap();
    assert_eq!(status, 400);
    let (status, _) = set_op(s.addr, None, SetRequestBody::Leases { set: Cookie(1) });
    assert_eq!(status, 400);
    let (status, _) =
        set_op(s.addr, Some(LandlordId(1)), SetRequestBody::Leases { set: Cookie(1) });
    assert_eq!(status, 404);
    // New sets go to shards 2 and 3 in turn; an unknown set is 404.
    let mut services = BTreeSet::new();
    for _ in 0..2 {
        let (status, r) = set_op(s.addr, None, SetRequestBody::CreateSet { duration: 60_000 });
        assert_eq!(status, 200);
        services.insert(r.landlord);
    }
    assert_eq!(services, BTreeSet::from([LandlordId(2), LandlordId(3)]));
    let (status, _) =
        set_op(s.addr, Some(LandlordId(3)), SetRequestBody::Leases { set: Cookie(1) });
    assert_eq!(status, 404);
    // The binary form, answered in kind; an undecodable one is a binary error reply.
    let bin = |body: &[u8]| {
        let (status, r) =
            post_raw(s.addr, "/renewal", body, "application/octet-stream", &[]).unwrap();
        (status, SetReply::decode(&r, Encoding::Binary, &Limits::default()).unwrap())
    };
    let create = SetRequest { id: 7, body: SetRequestBody::CreateSet { duration: 60_000 } };
    let (status, r) = bin(&create.encode(Encoding::Binary));
    assert_eq!((status, r.id), (200, 7), "{r:?}");
    let SetReplyBody::SetCreated { duration, .. } = r.body else { panic!("{r:?}") };
    assert_eq!(duration, 60_000);
    let (status, r) = bin(b"{\"v\":1}");
    assert_eq!(status, 400);
    let SetReplyBody::Error(e) = r.body else { panic!("{r:?}") };
    assert_eq!(e.code, ErrorCode::Decode as i32, "{e:?}");
    // Fewer renewal shards than the data was made with: refused at start.
    drop(s);
    let (code, _, err) = run(&[
        "--data",
        dir.path().to_str().unwrap(),
        "--renewal-shards",
        "1",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("renewal-service shards"), "{err}");
    // The discovery service's landlord id may not be a renewal shard's.
    let (code, _, err) = run(&[
        "--data",
        dir.path().to_str().unwrap(),
        "--renewal-shards",
        "2",
        "--discovery-port",
        "1",
        "--discovery-id",
        "3",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("above the landlord and renewal-service shards (1 to 3)"), "{err}");
}

/// With a tokens file, `/renewal` speaks as an identity: `create_set` needs `grant` (and the
/// set's lease is cut to the identity's longest lease), the other operations `renew`; a refusal
/// is a set error reply (`lease_denied`, 401 or 403), read as a definite answer.
#[test]
fn renewal_sets_need_the_right_identity() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.toml");
    let tokens = tokens.to_str().unwrap();
    let token = |args: &[&str]| add_token(tokens, args);
    let owner =
        token(&["--name", "owner", "--ops", "grant,renew,cancel", "--max-lease-ms", "20000"]);
    let renewer = token(&["--name", "renewer", "--ops", "renew"]);
    let data = dir.path().join("data");
    let s = Server::start(&[
        "--data",
        data.to_str().unwrap(),
        "--renewal-shards",
        "1",
        "--tokens",
        tokens,
    ]);
    let op = |token: Option<&str>, service: Option<LandlordId>, body: SetRequestBody| {
        let auth = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        let msg = SetRequest { id: 7, body }.to_json();
        let path = renewal_path(service);
        let (status, bytes) = post_raw(s.addr, &path, &msg, "application/json", &headers).unwrap();
        let reply = set_reply(status, &bytes);
        (status, reply)
    };
    let denied = |r: &SetReply| matches!(&r.body, SetReplyBody::Error(e) if e.code == ErrorCode::LeaseDenied as i32);
    let create = SetRequestBody::CreateSet { duration: 600_000 };
    let (status, r) = op(None, None, create.clone());
    assert_eq!(status, 401, "{r:?}");
    assert!(denied(&r), "{r:?}");
    let (status, r) = op(Some("not-a-token"), None, create.clone());
    assert_eq!(status, 403, "{r:?}");
    let (status, r) = op(Some(&renewer), None, create.clone());
    assert_eq!(status, 403, "{r:?}");
    assert!(denied(&r), "{r:?}");
    // Granted, cut to the owner's longest lease.
    let (status, r) = op(Some(&owner), None, create);
    assert_eq!(status, 200, "{r:?}");
    let SetReplyBody::SetCreated { cookie: set, duration, .. } = r.body else { panic!("{r:?}") };
    assert_eq!(duration, 20_000);
    let service = r.landlord;
    // Reading the set takes `renew`: the renewer may, with the set's cookie.
    let (status, r) = op(Some(&renewer), Some(service), SetRequestBody::Leases { set });
    assert_eq!(status, 200, "{r:?}");
    let (status, r) = op(None, Some(service), SetRequestBody::Leases { set });
    assert_eq!(status, 401, "{r:?}");
}

#[test]
fn an_expiration_warning_comes_before_the_set_lease_ends() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&["--data", dir.path().to_str().unwrap(), "--renewal-shards", "1"]);
    s.wait_ready(Duration::from_secs(20));
    let service = LandlordId(2);
    let (url, events) = set_listener();
    let t0 = Instant::now();
    let (status, r) = set_op(s.addr, None, SetRequestBody::CreateSet { duration: 4_000 });
    let SetReplyBody::SetCreated { cookie: set, duration, .. } = r.body else { panic!("{r:?}") };
    assert_eq!((status, duration), (200, 4_000));
    let (status, r) = set_op(
        s.addr,
        Some(service),
        SetRequestBody::Listen {
            set,
            event: SetEventType::ExpirationWarning,
            min_warning: 2_000,
            url,
            handback: vec![7],
        },
    );
    assert!(status == 200 && matches!(r.body, SetReplyBody::Registered { .. }), "{r:?}");
    assert!(eventually(Duration::from_secs(10), || !events.lock().unwrap().is_empty()));
    let at = t0.elapsed().as_millis() as i64;
    let got = set_events(&events);
    let SetEventBody::ExpirationWarning { remaining } = got[0].body else { panic!("{got:?}") };
    assert!((0..=2_000).contains(&remaining), "{remaining}");
    assert!((1_500..4_000).contains(&at), "warned at {at} ms");
    assert_eq!(got[0].handback, [7]);
    // Not renewed: the set is gone after its lease.
    std::thread::sleep(Duration::from_millis(4_500u64.saturating_sub(at as u64)));
    let (status, _) = set_op(s.addr, Some(service), SetRequestBody::Leases { set });
    assert_eq!(status, 404);
}

/// `leasehold_client::RemoteSet`: the Rust client hands a lease over, the service keeps it,
/// the client takes it back and cancels the set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_client_hands_a_lease_over_and_takes_it_back() {
    use leasehold_client::{Cluster, RemoteSet, RenewalDriver};
    let dir_a = tempfile::tempdir().unwrap();
    let dir_b = tempfile::tempdir().unwrap();
    let a = Server::start(&["--data", dir_a.path().to_str().unwrap()]);
    let b = Server::start(&["--data", dir_b.path().to_str().unwrap(), "--renewal-shards", "1"]);
    a.wait_ready(Duration::from_secs(20));
    b.wait_ready(Duration::from_secs(20));
    let landlords = Cluster::from_urls([a.url()]).unwrap();
    let service = Cluster::from_urls([b.url()]).unwrap();
    let (driver, _events) = RenewalDriver::start(landlords.clone(), Default::default()).unwrap();
    let lease = driver.grant("job/rust", 2_000).await.unwrap();
    let mut set = RemoteSet::create(&service, 60_000, driver.now()).await.unwrap();
    assert_eq!(set.lease().landlord(), LandlordId(2));
    set.add(&lease, driver.now(), &landlords.origins(), 60_000, 2_000).await.unwrap();
    // The driver never renews it; after twice its duration it is alive, thanks to the set.
    tokio::time::sleep(Duration::from_millis(4_500)).await;
    let alive = live_at(a.addr).unwrap();
    assert!(alive.contains(&lease.cookie()), "the lease expired: {alive:?}");
    // The renewal shard's counters: the client lease it renews, the renewals it got.
    assert_eq!(b.metric("leasehold_live_leases", &["shard=\"2\""]), 1.0);
    assert!(b.metric("leasehold_renewals_total", &["shard=\"2\""]) >= 1.0);
    let listed = set.leases().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].landlord, listed[0].cookie), (lease.landlord(), lease.cookie()));
    assert_eq!(listed[0].urls, landlords.origins());
    // Taken back: the client holds it again (the time it has left, as last renewed).
    let back = set.remove(&lease, &landlords.origins()).await.unwrap().expect("it was in the set");
    assert!(back.remaining > 0 && back.remaining <= 2_000, "{back:?}");
    assert!(set.leases().await.unwrap().is_empty());
    set.renew(120_000, driver.now()).await.unwrap();
    assert!(set.lease().remaining(driver.now()) > 60_000);
    let again = RemoteSet::from_lease(&service, set.lease(), set.number());
    set.cancel().await.unwrap();
    let e = again.leases().await.unwrap_err();
    assert!(
        matches!(e, leasehold_client::ClientError::Lease(leasehold::LeaseError::UnknownLease)),
        "{e:?}"
    );
    driver.close().await;
}
