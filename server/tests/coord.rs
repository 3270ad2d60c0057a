//! Coordination on the real `leasehold-server` binary (embedded file store): locks with waits,
//! reasons and tokens (through the recipes), waiters that go away, watches by long polling that
//! resume across a SIGKILL and restart, elections, routing, and the shard-count guard.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use leasehold::coord::wire::{CoordReply, CoordReplyBody, CoordRequest, CoordRequestBody};
use leasehold::coord::{EventKind, Events};
use leasehold::{Cookie, Encoding, ErrorCode, LandlordId, Limits};
use leasehold_examples::http::Cluster;
use leasehold_examples::recipes::{Election, ElectionOptions, Lock, LockOptions, RecipeError};

struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(dir: &Path, args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_leasehold-server"))
            .arg("--data")
            .arg(dir)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start leasehold-server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().rsplit(' ').next().unwrap().to_string();
        let addr = url.trim_start_matches("http://").parse().unwrap_or_else(|_| panic!("{line:?}"));
        Server { child, addr }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    fn get(&self, path: &str) -> (u16, String) {
        let mut s = TcpStream::connect(self.addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let status = out.split_whitespace().nth(1).unwrap().parse().unwrap();
        let body = out.split_once("\r\n\r\n").map(|x| x.1.to_string()).unwrap_or_default();
        (status, body)
    }

    fn metric(&self, name: &str) -> u64 {
        let (_, text) = self.get("/metrics");
        text.lines()
            .filter(|l| l.starts_with(name) && !l.starts_with('#'))
            .filter(|l| l[name.len()..].starts_with(['{', ' ']))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64)
            .sum()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ask(
    c: &mut Cluster,
    landlord: Option<u64>,
    body: CoordRequestBody,
    wait: Duration,
) -> CoordReply {
    let req = CoordRequest { id: 1, body };
    let bytes = c
        .post_waiting(
            "/coord",
            landlord.map(LandlordId),
            &req.encode(Encoding::Json),
            Encoding::Json,
            wait,
        )
        .unwrap();
    CoordReply::decode(&bytes, Encoding::Json, &Limits::default()).unwrap()
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

#[test]
fn locks_deny_with_a_reason_wait_in_line_and_grow_their_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &["--shards", "3", "--exclusive-prefix", "locks/"]);
    let url = s.url();
    let servers = [url.as_str()];
    let a = Lock::acquire(&servers, "locks/db", &LockOptions::default()).unwrap();
    assert!(a.is_held());
    assert!(a.safe_for() > Duration::from_secs(8), "{:?}", a.safe_for());
    match Lock::acquire(&servers, "locks/db", &LockOptions::default()) {
        Err(RecipeError::Held(why)) => assert!(why.contains("free in at most"), "{why}"),
        other => panic!("{other:?}"),
    }
    // Another resource is another lock (maybe in another shard, with its own tokens).
    let other = Lock::acquire(&servers, "locks/other", &LockOptions::default()).unwrap();
    // A waiter gets it the moment the holder lets go.
    let waiter = {
        let url = url.clone();
        std::thread::spawn(move || {
            let opts =
                LockOptions { wait: Some(Duration::from_secs(20)), ..LockOptions::default() };
            let t = Instant::now();
            let l = Lock::acquire(&[url.as_str()], "locks/db", &opts).unwrap();
            (l, t.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let released = Instant::now();
    let first = a.token();
    a.release().unwrap();
    let (b, waited) = waiter.join().unwrap();
    assert!(waited >= Duration::from_millis(400), "it waited {waited:?}");
    assert!(
        released.elapsed() < Duration::from_secs(3),
        "granted {:?} after the release",
        released.elapsed()
    );
    assert!(b.token() > first);
    assert!(s.metric("leasehold_acquire_waited_total") >= 1);
    assert!(s.metric("leasehold_fencing_token") >= 2);
    // Dropping the lock releases it.
    drop(b);
    let c = Lock::acquire(&servers, "locks/db", &LockOptions::default()).unwrap();
    c.release().unwrap();
    other.release().unwrap();
}

#[test]
fn a_waiter_that_goes_away_is_granted_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &["--exclusive-prefix", "locks/"]);
    let url = s.url();
    let a = Lock::acquire(&[url.as_str()], "locks/x", &LockOptions::default()).unwrap();
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
        std::thread::sleep(Duration::from_millis(300));
    }
    std::thread::sleep(Duration::from_millis(600));
    a.release().unwrap();
    // Nobody holds it now: a lease granted to the hung-up waiter would block this for 60 s.
    let t = Instant::now();
    let opts = LockOptions { wait: Some(Duration::from_secs(5)), ..LockOptions::default() };
    let b = Lock::acquire(&[url.as_str()], "locks/x", &opts).unwrap();
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(
        s.metric("leasehold_waits_abandoned_total")
            + s.metric("leasehold_acquired_undelivered_total"),
        1
    );
    b.release().unwrap();
}

#[test]
fn watches_long_poll_and_resume_after_a_sigkill_with_the_same_numbers_and_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["--shards", "2", "--exclusive-prefix", "locks/", "--colocate", "locks/"];
    let s = Server::start(tmp.path(), &args);
    let mut c = Cluster::from_urls(&[&s.url()], Duration::from_secs(2)).unwrap();
    let w = ask(
        &mut c,
        None,
        CoordRequestBody::Watch {
            resource: b"locks/".to_vec(),
            prefix: true,
            renewals: false,
            duration: 60_000,
            handback: b"hb".to_vec(),
        },
        Duration::ZERO,
    );
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
                &format!("/watch?landlord={landlord}&cookie={cookie}&since=0&wait_ms=10000"),
            );
            assert_eq!(status, 200, "{body}");
            CoordReply::decode(body.as_bytes(), Encoding::Json, &Limits::default()).unwrap()
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let granted = ask(&mut c, None, acquire("locks/a", 1_500, 0), Duration::ZERO);
    let first = granted.acquired().unwrap();
    assert_eq!(granted.landlord.0, landlord, "locks/ is colocated with its watch");
    let polled = poller.join().unwrap();
    let e = events(&polled);
    assert_eq!((e.event_id, e.handback.as_slice(), e.last), (event_id, &b"hb"[..], 1));
    assert_eq!((e.events[0].kind, e.events[0].token), (EventKind::Granted, first.token));
    // SIGKILL, restart on the same directory: the watch, its events and the tokens are back.
    s.kill();
    let s = Server::start(tmp.path(), &args);
    let mut c = Cluster::from_urls(&[&s.url()], Duration::from_secs(2)).unwrap();
    let poll = |c: &mut Cluster, since: u64, wait: i64| {
        ask(
            c,
            Some(landlord),
            CoordRequestBody::Poll { cookie, since, wait, max: 0 },
            Duration::from_millis(wait as u64),
        )
    };
    let again = poll(&mut c, 0, 0);
    assert_eq!(events(&again).events, e.events);
    // The lease expires (its time counts from the restart): the watcher hears it, in order.
    let r = poll(&mut c, 1, 5_000);
    let e2 = events(&r);
    assert_eq!(e2.events.len(), 1, "{e2:?}");
    assert_eq!(
        (e2.events[0].sequence, e2.events[0].kind, e2.events[0].token),
        (2, EventKind::Expired, first.token)
    );
    let next = ask(&mut c, None, acquire("locks/a", 60_000, 0), Duration::ZERO).acquired().unwrap();
    assert!(next.token > first.token);
    assert_eq!(events(&poll(&mut c, 2, 0)).events[0].token, next.token);
    // A number the watch never issued is refused; a cookie that is no watch is unknown.
    let r = poll(&mut c, 99, 0);
    assert!(
        matches!(r.body, CoordReplyBody::Error(ref e) if e.error_code() == Some(ErrorCode::InvalidArgument))
    );
    let r = ask(
        &mut c,
        Some(landlord),
        CoordRequestBody::Poll { cookie: Cookie(7), since: 0, wait: 0, max: 0 },
        Duration::ZERO,
    );
    assert!(
        matches!(r.body, CoordReplyBody::Error(ref e) if e.error_code() == Some(ErrorCode::UnknownLease))
    );
    assert!(s.metric("leasehold_polls_total") >= 3);
    assert_eq!(s.metric("leasehold_watches"), 1);
}

fn get(url: &str, path: &str) -> (u16, String) {
    let addr: SocketAddr = url.trim_start_matches("http://").parse().unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = out.split_once("\r\n\r\n").map(|x| x.1.to_string()).unwrap_or_default();
    (status, body)
}

#[test]
fn an_election_has_one_leader_and_observers_follow_it() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &["--shards", "2", "--exclusive-prefix", "elect/"]);
    let url = s.url();
    let servers = [url.as_str()];
    let opts = ElectionOptions::default();
    let mut observer = Election::observe(&servers, "elect/db", &opts).unwrap();
    assert_eq!(observer.leader(), None);
    let a =
        Election::campaign(&servers, "elect/db", b"node-a", Some(Duration::from_secs(5)), &opts)
            .unwrap();
    assert!(a.is_leader());
    let seen = observer.next(Duration::from_secs(5)).unwrap().expect("a change");
    assert_eq!(
        seen.as_ref().map(|l| (l.token, l.value.as_slice())),
        Some((a.token(), &b"node-a"[..]))
    );
    let b = {
        let url = url.clone();
        std::thread::spawn(move || {
            Election::campaign(
                &[url.as_str()],
                "elect/db",
                b"node-b",
                None,
                &ElectionOptions::default(),
            )
            .unwrap()
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let first = a.token();
    a.resign().unwrap();
    // The observer sees the old leader go and the new one come, in order.
    let mut changes = Vec::new();
    let t = Instant::now();
    while changes.last().is_none_or(|c: &Option<Vec<u8>>| c.is_none())
        && t.elapsed() < Duration::from_secs(10)
    {
        if let Some(c) = observer.next(Duration::from_secs(5)).unwrap() {
            changes.push(c.map(|l| l.value));
        }
    }
    assert_eq!(changes.last().unwrap().as_deref(), Some(&b"node-b"[..]), "{changes:?}");
    let b = b.join().unwrap();
    assert!(b.token() > first);
    assert_eq!(observer.leader().unwrap().token, b.token());
    b.resign().unwrap();
    observer.close();
}

#[test]
fn routing_keeps_a_prefix_watch_in_one_shard_or_says_why_not() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &["--shards", "4", "--colocate", "svc/"]);
    let mut c = Cluster::from_urls(&[&s.url()], Duration::from_secs(2)).unwrap();
    let watch = |c: &mut Cluster, r: &str| {
        ask(
            c,
            None,
            CoordRequestBody::Watch {
                resource: r.as_bytes().to_vec(),
                prefix: true,
                renewals: false,
                duration: 10_000,
                handback: vec![],
            },
            Duration::ZERO,
        )
    };
    let r = watch(&mut c, "x/");
    match r.body {
        CoordReplyBody::Error(e) => {
            assert_eq!(e.error_code(), Some(ErrorCode::InvalidArgument));
            assert!(e.message.contains("colocate"), "{}", e.message);
        }
        b => panic!("{b:?}"),
    }
    let w = watch(&mut c, "svc/web/");
    let CoordReplyBody::Watching { cookie, .. } = w.body else { panic!("{w:?}") };
    // Plain grants under svc/ land in the watch's shard, whatever their names.
    for i in 0..8 {
        let req = leasehold::holder::grant_request(i, format!("svc/web/{i}").into_bytes(), 10_000);
        let bytes = c.post(None, &req.encode(Encoding::Binary), Encoding::Binary).unwrap();
        let reply = leasehold::Reply::decode(&bytes, Encoding::Binary, &Limits::default()).unwrap();
        assert_eq!(reply.landlord, w.landlord);
    }
    let r = ask(
        &mut c,
        Some(w.landlord.0),
        CoordRequestBody::Poll { cookie, since: 0, wait: 0, max: 0 },
        Duration::ZERO,
    );
    assert_eq!(events(&r).events.len(), 8);
    assert!(events(&r).events.iter().all(|e| e.kind == EventKind::Granted));
}

#[test]
fn a_fenced_file_refuses_a_holder_whose_lease_ended_while_it_was_paused() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &["--exclusive-prefix", "locks/"]);
    let url = s.url();
    let file = leasehold_examples::fenced::FencedFile::new(tmp.path().join("report.log"));
    let mut c = Cluster::from_urls(&[&url], Duration::from_secs(2)).unwrap();
    // A takes the lock with a short lease it will not renew (it is about to be paused).
    let a = ask(&mut c, None, acquire("locks/report", 400, 0), Duration::ZERO).acquired().unwrap();
    file.append(a.token, "a 1\n").unwrap().unwrap();
    // A is paused past its lease; B gets the lock and writes.
    std::thread::sleep(Duration::from_millis(700));
    let opts = LockOptions { wait: Some(Duration::from_secs(5)), ..LockOptions::default() };
    let b = Lock::acquire(&[url.as_str()], "locks/report", &opts).unwrap();
    assert!(b.token() > a.token);
    file.append(b.token(), "b 1\n").unwrap().unwrap();
    // A wakes up believing in its lock: the file refuses it.
    let refused = file.append(a.token, "a 2\n").unwrap().unwrap_err();
    assert_eq!((refused.token, refused.highest), (a.token, b.token()));
    file.append(b.token(), "b 2\n").unwrap().unwrap();
    let text = std::fs::read_to_string(tmp.path().join("report.log")).unwrap();
    assert_eq!(text, "a 1\nb 1\nb 2\n");
    assert_eq!(file.fence().unwrap().highest(), b.token());
    b.release().unwrap();
}

#[test]
fn a_store_is_never_opened_with_another_number_of_shards() {
    let tmp = tempfile::tempdir().unwrap();
    Server::start(tmp.path(), &["--shards", "2"]).kill();
    let out = Command::new(env!("CARGO_BIN_EXE_leasehold-server"))
        .arg("--data")
        .arg(tmp.path())
        .args(["--listen", "127.0.0.1:0", "--shards", "3"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("was made with 2 shards, not 3"), "{err}");
    Server::start(tmp.path(), &["--shards", "2"]).kill();
}
