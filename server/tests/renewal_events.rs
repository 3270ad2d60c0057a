//! Renewal-service events are delivered at least once across a SIGKILL of the shard's owner
//! (issue 26; docs/renewal-service.md, "Events").
//!
//! Server A is a landlord; server B runs a renewal-service shard with
//! `--max-event-deliveries 2`. Three sets at B each register for renewal failures and
//! expiration warnings at the test's listener, hold ten leases of A that A then cancels (ten
//! renewal failures per set), and have their own lease renewed (a second warning per set).
//! Until B is killed the listener takes only each registration's first event and answers 503
//! to the rest, so the service has handed out events that are not delivered. B is SIGKILLed,
//! the listener starts taking everything, and B is started again on its data: every event
//! (warnings and failures, every lease's failure) must arrive, at least once, each
//! registration's in sequence order; and the listener never sees more than two POSTs at once.
//!
//! On the file store B is one server, started again on its data; on PostgreSQL B is two
//! servers on one database, and the owner of the renewal shard is killed (the other takes the
//! shard over; the dead one is started again).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use leasehold::service::wire::{
    ClientLease, SetEventBody, SetEventMessage, SetEventType, SetReplyBody, SetRequestBody,
};
use leasehold::{Cookie, LandlordId, Limits, Request, RequestBody};

/// Sets, and client leases per set.
const SETS: usize = 3;
const PER_SET: usize = 10;
/// The client leases' duration at A: their failures come within it.
const D: i64 = 2_000;
/// Most POSTs under way at once at B.
const CAP: usize = 2;

/// The test's listener: takes an event (200) when `open` or when it is its registration's
/// first, refuses it (503) otherwise; each POST is held 30 ms, so that overlapping ones show.
#[derive(Clone, Default)]
struct Listener {
    open: Arc<AtomicBool>,
    /// Events taken, in the order they came (repeats included).
    taken: Arc<Mutex<Vec<SetEventMessage>>>,
    refused: Arc<AtomicUsize>,
    now: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl Listener {
    fn start(&self) -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/events", l.local_addr().unwrap());
        let me = self.clone();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(s) = s else { continue };
                let me = me.clone();
                std::thread::spawn(move || me.serve(s));
            }
        });
        url
    }

    fn serve(&self, mut s: TcpStream) {
        let mut r = BufReader::new(s.try_clone().unwrap());
        loop {
            // One request after another on a kept-alive connection.
            let mut len = None;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let t = line.trim();
                if t.is_empty() {
                    break;
                }
                if let Some((k, v)) = t.split_once(':') {
                    if k.eq_ignore_ascii_case("content-length") {
                        len = v.trim().parse().ok();
                    }
                }
            }
            let mut body = vec![0; len.unwrap_or(0)];
            if r.read_exact(&mut body).is_err() {
                return;
            }
            let n = self.now.fetch_add(1, SeqCst) + 1;
            self.most.fetch_max(n, SeqCst);
            std::thread::sleep(Duration::from_millis(30));
            let msg = SetEventMessage::from_json(&body, &Limits::default()).unwrap();
            let take = self.open.load(SeqCst) || msg.sequence == 1;
            if take {
                self.taken.lock().unwrap().push(msg);
            } else {
                self.refused.fetch_add(1, SeqCst);
            }
            self.now.fetch_sub(1, SeqCst);
            let answer: &[u8] = if take {
                b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
            } else {
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
            };
            if s.write_all(answer).is_err() {
                return;
            }
        }
    }

    /// The (event id, sequence) taken so far, each once.
    fn seen(&self) -> BTreeSet<(u64, u64)> {
        self.taken.lock().unwrap().iter().map(|m| (m.event_id, m.sequence)).collect()
    }
}

/// The servers that run B's renewal shard (landlord 2), each restartable on its port.
struct B {
    servers: Vec<Option<Server>>,
    listens: Vec<String>,
    args: Vec<String>,
    _dir: Option<tempfile::TempDir>,
}

impl B {
    fn start(args: Vec<String>, n: usize, dir: Option<tempfile::TempDir>) -> B {
        let listens: Vec<String> = (0..n).map(|_| format!("127.0.0.1:{}", free_port())).collect();
        let mut b = B { servers: (0..n).map(|_| None).collect(), listens, args, _dir: dir };
        for i in 0..n {
            b.start_server(i);
        }
        for s in b.servers.iter().flatten() {
            s.wait_ready(Duration::from_secs(30));
        }
        if n > 1 {
            // One landlord shard and one renewal shard, shared out between the servers.
            let servers: Vec<&Server> = b.servers.iter().flatten().collect();
            settled(&servers, 2, Duration::from_secs(30));
        }
        b
    }

    /// One server on the file store.
    fn files() -> B {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["--data".to_string(), dir.path().to_str().unwrap().to_string()];
        args.extend(
            ["--renewal-shards", "1", "--max-event-deliveries", &CAP.to_string()]
                .map(|s| s.to_string()),
        );
        B::start(args, 1, Some(dir))
    }

    /// Two servers on PostgreSQL.
    fn postgres(pg: &Pg) -> B {
        let cap = CAP.to_string();
        let args = ["--store", &pg.url(), "--ownership-ms", "1000", "--shards", "1"]
            .into_iter()
            .chain(["--renewal-shards", "1", "--max-event-deliveries", &cap])
            .map(|s| s.to_string())
            .collect();
        B::start(args, 2, None)
    }

    fn start_server(&mut self, i: usize) {
        let args: Vec<&str> = self.args.iter().map(|s| s.as_str()).collect();
        self.servers[i] = Some(Server::start_at(&self.listens[i], &args));
    }

    /// Where set operations go (forwarded to the owner with PostgreSQL).
    fn addr(&self) -> SocketAddr {
        self.servers.iter().flatten().next().expect("a server runs").addr
    }

    /// The server that serves landlord 2, as `/readyz` says.
    fn owner(&self) -> usize {
        let t0 = Instant::now();
        loop {
            for (i, s) in self.servers.iter().enumerate() {
                let Some(s) = s else { continue };
                let (_, r) = s.ready();
                let served = r["shards"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| x["shard"] == 2 && x["state"] == "served"));
                if served {
                    return i;
                }
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "nobody serves shard 2");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log_text(&self) -> String {
        self.servers.iter().flatten().map(|s| s.log_text()).collect::<Vec<_>>().join("\n")
    }

    fn stop(self) {
        for s in self.servers.into_iter().flatten() {
            s.stop();
        }
    }
}

#[test]
fn events_pending_delivery_survive_a_sigkill_of_the_owner() {
    run(B::files());
}

#[test]
fn events_pending_delivery_survive_a_takeover_in_postgresql() {
    let pg = Pg::start();
    run(B::postgres(&pg));
}

fn run(mut b: B) {
    let dir_a = tempfile::tempdir().unwrap();
    let a = Server::start(&["--data", dir_a.path().to_str().unwrap()]);
    a.wait_ready(Duration::from_secs(20));
    b.owner();
    let service = LandlordId(2);
    let listener = Listener::default();
    let url = listener.start();
    let t0 = Instant::now();

    // The sets, both registrations each, and the leases handed over.
    let mut sets = Vec::new();
    let mut failure_regs = BTreeMap::new();
    let mut warning_regs = BTreeSet::new();
    let mut leases: BTreeMap<Cookie, usize> = BTreeMap::new();
    for k in 0..SETS {
        let (status, r) = set_op(b.addr(), None, SetRequestBody::CreateSet { duration: 60_000 });
        let SetReplyBody::SetCreated { cookie: set, .. } = r.body else { panic!("{r:?}") };
        assert_eq!(status, 200);
        for (event, min_warning) in
            [(SetEventType::RenewalFailure, 0), (SetEventType::ExpirationWarning, 60_000)]
        {
            let listen = SetRequestBody::Listen {
                set,
                event,
                min_warning,
                url: url.clone(),
                handback: vec![k as u8],
            };
            let (status, r) = set_op(b.addr(), Some(service), listen);
            let SetReplyBody::Registered { event_id, .. } = r.body else { panic!("{r:?}") };
            assert_eq!(status, 200);
            match event {
                SetEventType::RenewalFailure => {
                    failure_regs.insert(event_id, k);
                }
                SetEventType::ExpirationWarning => {
                    warning_regs.insert(event_id);
                }
            }
        }
        for i in 0..PER_SET {
            let id = (k * PER_SET + i) as u64 + 1;
            let sent = Instant::now();
            let (_, cookie) = grant_retry(a.addr, id, &format!("job/{k}/{i}"), D);
            let lease = ClientLease {
                landlord: LandlordId(1),
                cookie,
                remaining: D - sent.elapsed().as_millis() as i64,
                urls: vec![a.url()],
                membership: None,
                renew: None,
            };
            let add = SetRequestBody::Add { set, lease, membership: 600_000, renew: D };
            let (status, r) = set_op(b.addr(), Some(service), add);
            assert_eq!((status, &r.body), (200, &SetReplyBody::Done), "{r:?}");
            leases.insert(cookie, k);
        }
        sets.push(set);
    }
    // A forgets every lease: each set's next renewals fail, ten failures per set. Each set's
    // lease is renewed: its warning (due at once, min_warning is the whole lease) comes again.
    for (n, cookie) in leases.keys().enumerate() {
        let cancel =
            Request { id: 1_000 + n as u64, body: RequestBody::Cancel { cookie: *cookie } };
        let ans = post(a.addr, Some(1), &cancel, Duration::from_secs(5)).unwrap();
        assert_eq!(ans.status, 200, "{}", String::from_utf8_lossy(&ans.body));
    }
    for set in &sets {
        let renew = Request { id: 9, body: RequestBody::Renew { cookie: *set, duration: 60_000 } };
        let ans = post(b.addr(), Some(service.0), &renew, Duration::from_secs(5)).unwrap();
        assert_eq!(ans.status, 200, "{}", String::from_utf8_lossy(&ans.body));
    }

    // Every failure has happened once the sets are empty; an answer after that is sent once
    // the records before it are durable, among them those of the events handed out.
    let empty = || {
        sets.iter().all(|set| {
            let (status, r) = set_op(b.addr(), Some(service), SetRequestBody::Leases { set: *set });
            status == 200 && matches!(&r.body, SetReplyBody::Leases { leases } if leases.is_empty())
        })
    };
    assert!(eventually(Duration::from_secs(15), empty), "the leases did not fail");
    assert!(empty());
    // Each registration's first event was taken; the rest are refused and wait.
    let firsts: BTreeSet<(u64, u64)> =
        failure_regs.keys().chain(&warning_regs).map(|id| (*id, 1)).collect();
    let got_firsts = || listener.seen().is_superset(&firsts);
    assert!(eventually(Duration::from_secs(10), got_firsts), "firsts: {:?}", listener.seen());
    assert!(eventually(Duration::from_secs(10), || listener.refused.load(SeqCst) >= SETS));
    let before_kill = listener.seen();
    eprintln!(
        "{} events taken, {} POSTs refused before the kill, at {} ms",
        before_kill.len(),
        listener.refused.load(SeqCst),
        t0.elapsed().as_millis()
    );
    assert!(before_kill.iter().all(|e| e.1 == 1), "{before_kill:?}");

    // SIGKILL the owner; the listener takes everything from now on; the dead server starts
    // again on its port (with PostgreSQL the other one takes the shard over meanwhile).
    let owner = b.owner();
    b.servers[owner].take().unwrap().kill();
    // (The listener finishes the POSTs the dead process had under way before another starts:
    // the cap is per process.)
    assert!(eventually(Duration::from_secs(5), || listener.now.load(SeqCst) == 0));
    listener.open.store(true, SeqCst);
    let killed = Instant::now();
    b.start_server(owner);
    let owner = b.owner();
    eprintln!(
        "shard 2 served by server {owner} {} ms after the kill",
        killed.elapsed().as_millis()
    );

    let mut expected: BTreeSet<(u64, u64)> = BTreeSet::new();
    for id in failure_regs.keys() {
        expected.extend((1..=PER_SET as u64).map(|s| (*id, s)));
    }
    for id in &warning_regs {
        expected.extend([(*id, 1), (*id, 2)]);
    }
    let all = eventually(Duration::from_secs(20), || listener.seen().is_superset(&expected));
    let seen = listener.seen();
    let missing: Vec<_> = expected.difference(&seen).collect();
    assert!(all, "events lost: {missing:?}\nlogs:\n{}", b.log_text());
    let after = killed.elapsed().as_millis();

    // Every lease's failure, in its own set's registration; warnings are warnings.
    let taken = listener.taken.lock().unwrap().clone();
    let mut failed: BTreeMap<Cookie, usize> = BTreeMap::new();
    for m in &taken {
        match &m.body {
            SetEventBody::RenewalFailure { lease, .. } => {
                assert_eq!(lease.landlord, LandlordId(1));
                let k = failure_regs[&m.event_id];
                assert_eq!(m.handback, vec![k as u8]);
                failed.insert(lease.cookie, k);
            }
            SetEventBody::ExpirationWarning { .. } => {
                assert!(warning_regs.contains(&m.event_id), "{m:?}")
            }
        }
    }
    assert_eq!(failed, leases, "a failure event for every lease, from its set");
    // A listener that drops repeats sees each registration's events in order.
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    let mut repeats = 0;
    for m in &taken {
        let l = last.entry(m.event_id).or_insert(0);
        if m.sequence <= *l {
            repeats += 1;
        } else {
            assert_eq!(m.sequence, *l + 1, "registration {} skipped to {}", m.event_id, m.sequence);
            *l = m.sequence;
        }
    }
    let most = listener.most.load(SeqCst);
    eprintln!(
        "all {} events arrived {after} ms after the kill ({repeats} repeats); at most {most} \
         POSTs at once",
        expected.len()
    );
    assert!(most <= CAP, "{most} POSTs at once, the cap is {CAP}");
    b.stop();
    a.stop();
}
