//! Coordination on the real `leasehold-server` binary (embedded file store): locks with waits,
//! reasons and tokens (through the recipes), waiters that go away, watches by long polling that
//! resume across a SIGKILL and restart, elections, routing, and the shard-count guard.

mod common;

use common::{raw, Server};

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use leasehold::coord::wire::{CoordReply, CoordReplyBody, CoordRequest, CoordRequestBody};
use leasehold::coord::{EventKind, Events};
use leasehold::{Cookie, Encoding, ErrorCode, LandlordId, LeaseError, Limits};
use leasehold_client::recipes::{Lock, LockOptions};
use leasehold_client::{ClientError, Cluster, ClusterConfig, RenewalDriver};

fn cluster(url: &str) -> Cluster {
    Cluster::new(ClusterConfig::new([url]).encoding(Encoding::Json)).unwrap()
}

fn driver(url: &str) -> RenewalDriver {
    RenewalDriver::start(cluster(url), Default::default()).unwrap().0
}

async fn ask(c: &Cluster, landlord: Option<u64>, body: CoordRequestBody) -> CoordReply {
    c.send_coord(landlord.map(LandlordId), &CoordRequest { id: 1, body }).await.unwrap()
}

fn held(r: Result<Lock, ClientError>) -> String {
    match r {
        Err(ClientError::Lease(LeaseError::LeaseDenied(why))) => why,
        other => panic!("{other:?}"),
    }
}

fn acquire(resource: &str, ms: i64, wait: i64) -> CoordRequestBody {
    CoordRequestBody::Acquire {
        resource: resource.as_bytes().to_vec(),
        duration: ms,
        wait,
        holder: b"test".to_vec(),
    }
}

fn events(r: &CoordReply) -> &Events {
    match &r.body {
        CoordReplyBody::Events(e) => e,
        b => panic!("not events: {b:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_deny_with_a_reason_wait_in_line_and_grow_their_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_in(tmp.path(), &["--shards", "3", "--exclusive-prefix", "locks/"]);
    let url = s.url();
    let d = driver(&url);
    let a = d.lock("locks/db", &LockOptions::default()).await.unwrap();
    assert!(a.is_held().await);
    assert!(a.safe_for().await > Duration::from_secs(8), "{:?}", a.safe_for().await);
    let why = held(d.lock("locks/db", &LockOptions::default()).await);
    assert!(why.contains("free in at most"), "{why}");
    // The same denial over HTTP is a 409 with the wire reply in the body.
    let req = CoordRequest { id: 1, body: acquire("locks/db", 1000, 0) }.encode(Encoding::Json);
    let (status, body) = post(s.addr, "/coord", &req);
    assert_eq!(status, 409, "{body}");
    let r = CoordReply::decode(body.as_bytes(), Encoding::Json, &Limits::default()).unwrap();
    assert!(
        matches!(r.body, CoordReplyBody::Error(ref e) if e.error_code() == Some(ErrorCode::LeaseDenied))
    );
    // Another resource is another lock (maybe in another shard, with its own tokens).
    let other = d.lock("locks/other", &LockOptions::default()).await.unwrap();
    // A waiter gets it the moment the holder lets go.
    let waiter = {
        let d = driver(&url);
        tokio::spawn(async move {
            let opts =
                LockOptions { wait: Some(Duration::from_secs(20)), ..LockOptions::default() };
            let t = Instant::now();
            let l = d.lock("locks/db", &opts).await.unwrap();
            (l, t.elapsed(), d)
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let released = Instant::now();
    let first = a.token();
    a.release().await.unwrap();
    let (b, waited, _waiter_driver) = waiter.await.unwrap();
    assert!(waited >= Duration::from_millis(400), "it waited {waited:?}");
    assert!(
        released.elapsed() < Duration::from_secs(3),
        "granted {:?} after the release",
        released.elapsed()
    );
    assert!(b.token() > first);
    assert!(s.metric_total("leasehold_acquire_waited_total") >= 1);
    assert!(s.metric_total("leasehold_fencing_token") >= 2);
    // Dropping the lock releases it (in the background, while its driver runs).
    drop(b);
    let opts = LockOptions { wait: Some(Duration::from_secs(5)), ..LockOptions::default() };
    let c = d.lock("locks/db", &opts).await.unwrap();
    c.release().await.unwrap();
    other.release().await.unwrap();
}

/// A lock granted after a wait longer than its lease is held from the moment it is returned:
/// the lease counted from when the waiting request was sent would already be over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_granted_after_a_long_wait_is_known_held() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_in(tmp.path(), &["--exclusive-prefix", "locks/"]);
    let url = s.url();
    let short = LockOptions { lease_ms: 1000, ..LockOptions::default() };
    let a = driver(&url).lock("locks/w", &short).await.unwrap();
    let waiter = {
        let d = driver(&url);
        tokio::spawn(async move {
            let opts = LockOptions { wait: Some(Duration::from_secs(20)), ..short };
            let l = d.lock("locks/w", &opts).await.unwrap();
            let (safe, held) = (l.safe_for().await, l.is_held().await);
            (l, safe, held, d)
        })
    };
    // The waiter waits 2.5 lease periods (the holder keeps renewing meanwhile).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    a.release().await.unwrap();
    let (b, safe, held, _d) = waiter.await.unwrap();
    assert!(held, "not known held when returned (safe for {safe:?})");
    assert!(safe > Duration::from_millis(500), "safe for only {safe:?} when returned");
    // And it stays held: the driver renews it.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(b.is_held().await, "lost after {:?}", b.safe_for().await);
    b.release().await.unwrap();
}

/// A lock (and a plain grant) taken after a failover counts from the attempt that was
/// answered: the first server here accepts connections and never answers, so the first
/// attempt (held for the acquire's wait on top of the time-out) ends after 3.5 s, longer than
/// the 1 s lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_taken_after_a_failover_counts_from_the_answered_attempt() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_in(tmp.path(), &["--exclusive-prefix", "locks/"]);
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    let accepted = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((sock, _)) = silent.accept().await {
            open.push(sock);
        }
    });
    let config = ClusterConfig::new([silent_url.as_str(), s.url().as_str()])
        .encoding(Encoding::Json)
        .attempt_timeout(Duration::from_millis(500));
    let d = RenewalDriver::start(Cluster::new(config).unwrap(), Default::default()).unwrap().0;
    let opts = LockOptions {
        lease_ms: 1000,
        wait: Some(Duration::from_secs(3)),
        ..LockOptions::default()
    };
    let t = Instant::now();
    let l = d.lock("locks/f", &opts).await.unwrap();
    assert!(t.elapsed() >= Duration::from_secs(3), "no failover: {:?}", t.elapsed());
    let safe = l.safe_for().await;
    assert!(safe > Duration::from_millis(500), "safe for only {safe:?} after the failover");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(l.is_held().await, "lost after {:?}", l.safe_for().await);
    l.release().await.unwrap();
    // A grant fails over the same way (now to the server that answered last, so a fresh
    // driver, whose cluster starts at the silent one).
    let config = ClusterConfig::new([silent_url.as_str(), s.url().as_str()])
        .encoding(Encoding::Json)
        .attempt_timeout(Duration::from_millis(1500));
    let d = RenewalDriver::start(Cluster::new(config).unwrap(), Default::default()).unwrap().0;
    let lease = d.grant("plain/f", 1000).await.unwrap();
    let left = lease.expiration() - d.now();
    assert!(left > 500, "{left} ms left of a 1 s grant after the failover");
    accepted.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_goes_away_is_granted_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_in(tmp.path(), &["--exclusive-prefix", "locks/"]);
    let url = s.url();
    let d = driver(&url);
    let a = d.lock("locks/x", &LockOptions::default()).await.unwrap();
    // A waiting acquire whose client hangs up.
    {
        let req =
            CoordRequest { id: 1, body: acquire("locks/x", 60_000, 30_000) }.encode(Encoding::Json);
        let mut sock = TcpStream::connect(s.addr).unwrap();
        write!(
            sock,
            "POST /coord HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            req.len()
        )
        .unwrap();
        sock.write_all(&req).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    a.release().await.unwrap();
    // Nobody holds it now: a lease granted to the hung-up waiter would block this for 60 s.
    let t = Instant::now();
    let opts = LockOptions { wait: Some(Duration::from_secs(5)), ..LockOptions::default() };
    let b = d.lock("locks/x", &opts).await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(
        s.metric_total("leasehold_waits_abandoned_total")
            + s.metric_total("leasehold_acquired_undelivered_total"),
        1
    );
    b.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_long_poll_and_resume_after_a_sigkill_with_the_same_numbers_and_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["--shards", "2", "--exclusive-prefix", "locks/", "--colocate", "locks/"];
    let s = Server::start_in(tmp.path(), &args);
    let c = cluster(&s.url());
    let w = ask(
        &c,
        None,
        CoordRequestBody::Watch {
            resource: b"locks/".to_vec(),
            prefix: true,
            renewals: false,
            duration: 60_000,
            handback: b"hb".to_vec(),
        },
    )
    .await;
    let landlord = w.landlord.0;
    let CoordReplyBody::Watching { cookie, event_id, sequence: 0, .. } = w.body else {
        panic!("{w:?}")
    };
    // A long poll answered by the grant it waited for.
    let poller = {
        let url = s.url();
        std::thread::spawn(move || {
            let (status, body) = get(
                &url,
                &format!(
                    "/watch?landlord={}&cookie={cookie}&since=0&wait_ms=10000",
                    LandlordId(landlord)
                ),
            );
            assert_eq!(status, 200, "{body}");
            CoordReply::decode(body.as_bytes(), Encoding::Json, &Limits::default()).unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let granted = ask(&c, None, acquire("locks/a", 1_500, 0)).await;
    let first = granted.acquired().unwrap();
    assert_eq!(granted.landlord.0, landlord, "locks/ is colocated with its watch");
    let polled = poller.join().unwrap();
    let e = events(&polled);
    assert_eq!((e.event_id, e.handback.as_slice(), e.last), (event_id, &b"hb"[..], 1));
    assert_eq!((e.events[0].kind, e.events[0].token), (EventKind::Granted, first.token));
    // SIGKILL, restart on the same directory: the watch, its events and the tokens are back.
    s.kill();
    let s = Server::start_in(tmp.path(), &args);
    let c = cluster(&s.url());
    let poll = |since: u64, wait: i64| {
        let c = c.clone();
        async move {
            ask(&c, Some(landlord), CoordRequestBody::Poll { cookie, since, wait, max: 0 }).await
        }
    };
    let again = poll(0, 0).await;
    assert_eq!(events(&again).events, e.events);
    // The lease expires (its time counts from the restart): the watcher hears it, in order.
    let r = poll(1, 5_000).await;
    let e2 = events(&r);
    assert_eq!(e2.events.len(), 1, "{e2:?}");
    assert_eq!(
        (e2.events[0].sequence, e2.events[0].kind, e2.events[0].token),
        (2, EventKind::Expired, first.token)
    );
    let next = ask(&c, None, acquire("locks/a", 60_000, 0)).await.acquired().unwrap();
    assert!(next.token > first.token);
    assert_eq!(events(&poll(2, 0).await).events[0].token, next.token);
    // A number the watch never issued is refused; a cookie that is no watch is unknown.
    let r = poll(99, 0).await;
    assert!(
        matches!(r.body, CoordReplyBody::Error(ref e) if e.error_code() == Some(ErrorCode::InvalidArgument))
    );
    let r = ask(
        &c,
        Some(landlord),
        CoordRequestBody::Poll { cookie: Cookie(7), since: 0, wait: 0, max: 0 },
    )
    .await;
    assert!(
        matches!(r.body, CoordReplyBody::Error(ref e) if e.error_code() == Some(ErrorCode::UnknownLease))
    );
    assert!(s.metric_total("leasehold_polls_total") >= 3);
    assert_eq!(s.metric_total("leasehold_watches"), 1);
}

fn post(addr: SocketAddr, path: &str, body: &[u8]) -> (u16, String) {
    let (status, _, body) = raw(addr, "POST", path, "application/json", body);
    (status, String::from_utf8_lossy(&body).into_owned())
}

fn get(url: &str, path: &str) -> (u16, String) {
    let addr: SocketAddr = url.trim_start_matches("http://").parse().unwrap();
    let (status, _, body) = raw(addr, "GET", path, "text/plain", b"");
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_election_has_one_leader_and_observers_follow_it() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_in(tmp.path(), &["--shards", "2", "--exclusive-prefix", "elect/"]);
    let url = s.url();
    let d = driver(&url);
    let mut observer = d.observe("elect/db", 10_000).await.unwrap();
    assert_eq!(observer.leader(), None);
    let a = d.elect("elect/db", "node-a", 10_000, Some(Duration::from_secs(5))).await.unwrap();
    assert!(a.is_leader().await);
    let seen = observer.next(Duration::from_secs(5)).await.unwrap().expect("a change");
    assert_eq!(
        seen.as_ref().map(|l| (l.token, l.value.as_slice())),
        Some((a.token(), &b"node-a"[..]))
    );
    let b = {
        let d = driver(&url);
        tokio::spawn(async move { d.elect("elect/db", "node-b", 10_000, None).await.unwrap() })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let first = a.token();
    a.resign().await.unwrap();
    // The observer sees the old leader go and the new one come, in order.
    let mut changes = Vec::new();
    let t = Instant::now();
    while changes.last().is_none_or(|c: &Option<Vec<u8>>| c.is_none())
        && t.elapsed() < Duration::from_secs(10)
    {
        if let Some(c) = observer.next(Duration::from_secs(5)).await.unwrap() {
            changes.push(c.map(|l| l.value));
        }
    }
    assert_eq!(changes.last().unwrap().as_deref(), Some(&b"node-b"[..]), "{changes:?}");
    let b = b.await.unwrap();
    assert!(b.token() > first);
    assert_eq!(observer.leader().unwrap().token, b.token());
    b.resign().await.unwrap();
    observer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routing_keeps_a_prefix_watch_in_one_shard_or_says_why_not() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_in(tmp.path(), &["--shards", "4", "--colocate", "svc/"]);
    let c = cluster(&s.url());
    let watch = |r: &str| {
        let body = CoordRequestBody::Watch {
            resource: r.as_bytes().to_vec(),
            prefix: true,
            renewals: false,
            duration: 10_000,
            handback: vec![],
        };
        let c = c.clone();
        async move { ask(&c, None, body).await }
    };
    let r = watch("x/").await;
    match r.body {
        CoordReplyBody::Error(e) => {
            assert_eq!(e.error_code(), Some(ErrorCode::InvalidArgument));
            assert!(e.message.contains("colocate"), "{}", e.message);
        }
        b => panic!("{b:?}"),
    }
    let w = watch("svc/web/").await;
    let CoordReplyBody::Watching { cookie, .. } = w.body else { panic!("{w:?}") };
    // Plain grants under svc/ land in the watch's shard, whatever their names.
    for i in 0..8 {
        let req = leasehold::holder::grant_request(i, format!("svc/web/{i}").into_bytes(), 10_000);
        let reply = c.send(None, &req).await.unwrap();
        assert_eq!(reply.landlord, w.landlord);
    }
    let r =
        ask(&c, Some(w.landlord.0), CoordRequestBody::Poll { cookie, since: 0, wait: 0, max: 0 })
            .await;
    assert_eq!(events(&r).events.len(), 8);
    assert!(events(&r).events.iter().all(|e| e.kind == EventKind::Granted));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_file_refuses_a_holder_whose_lease_ended_while_it_was_paused() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_in(tmp.path(), &["--exclusive-prefix", "locks/"]);
    let url = s.url();
    let file = leasehold_examples::fenced::FencedFile::new(tmp.path().join("report.log"));
    let c = cluster(&url);
    // A takes the lock with a short lease it will not renew (it is about to be paused).
    let a = ask(&c, None, acquire("locks/report", 400, 0)).await.acquired().unwrap();
    file.append(a.token, "a 1\n").unwrap().unwrap();
    // A is paused past its lease; B gets the lock and writes.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let opts = LockOptions { wait: Some(Duration::from_secs(5)), ..LockOptions::default() };
    let b = driver(&url).lock("locks/report", &opts).await.unwrap();
    assert!(b.token() > a.token);
    file.append(b.token(), "b 1\n").unwrap().unwrap();
    // A wakes up believing in its lock: the file refuses it.
    let refused = file.append(a.token, "a 2\n").unwrap().unwrap_err();
    assert_eq!((refused.token, refused.highest), (a.token, b.token()));
    file.append(b.token(), "b 2\n").unwrap().unwrap();
    let text = std::fs::read_to_string(tmp.path().join("report.log")).unwrap();
    assert_eq!(text, "a 1\nb 1\nb 2\n");
    assert_eq!(file.fence().unwrap().highest(), b.token());
    b.release().await.unwrap();
}

#[test]
fn a_store_is_never_opened_with_another_number_of_shards() {
    let tmp = tempfile::tempdir().unwrap();
    Server::start_in(tmp.path(), &["--shards", "2"]).kill();
    let out = Command::new(env!("CARGO_BIN_EXE_leasehold-server"))
        .arg("--data")
        .arg(tmp.path())
        .args(["--listen", "127.0.0.1:0", "--shards", "3"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("was made with 2 shards, not 3"), "{err}");
    Server::start_in(tmp.path(), &["--shards", "2"]).kill();
}
