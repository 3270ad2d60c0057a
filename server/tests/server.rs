//! The real `leasehold-server` binary on loopback, with the embedded file store: keep-alive
//! clients (`leasehold-client`), both encodings, routing by `?landlord=`, limits, metrics, and a
//! restart (after SIGKILL) on the same directory that keeps every lease.

mod common;

use common::{raw, Server};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

use leasehold::holder::grant_request;
use leasehold::wire::Outcome;
use leasehold::{
    Cookie, Encoding, ErrorCode, LandlordId, Limits, Reply, ReplyBody, Request, RequestBody,
};
use leasehold_client::{Cluster, ClusterConfig};

fn cluster(addr: SocketAddr, enc: Encoding) -> Cluster {
    let config = ClusterConfig::new([format!("http://{addr}")])
        .encoding(enc)
        .attempt_timeout(Duration::from_secs(5));
    Cluster::new(config).unwrap()
}

/// One request through `leasehold-client` (a client per encoding, as a holder has one).
fn call(c: &mut Clients, landlord: Option<u64>, req: &Request, enc: Encoding) -> Reply {
    let cl = if enc == Encoding::Json { &c.json } else { &c.binary };
    c.rt.block_on(cl.send(landlord.map(LandlordId), req)).unwrap()
}

struct Clients {
    rt: tokio::runtime::Runtime,
    json: Cluster,
    binary: Cluster,
}

impl Clients {
    fn new(addr: SocketAddr) -> Clients {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _g = rt.enter();
        Clients { json: cluster(addr, Encoding::Json), binary: cluster(addr, Encoding::Binary), rt }
    }
}

fn granted(r: &Reply) -> Cookie {
    match r.body {
        ReplyBody::Granted { cookie, .. } => cookie,
        ref b => panic!("not granted: {b:?}"),
    }
}

fn renew(cookie: Cookie, id: u64) -> Request {
    Request { id, body: RequestBody::Renew { cookie, duration: 60_000 } }
}

fn code(r: &Reply) -> Option<ErrorCode> {
    match &r.body {
        ReplyBody::Error(e) => e.error_code(),
        _ => None,
    }
}

#[test]
fn both_encodings_over_one_keep_alive_connection_with_routing_and_metrics() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_in(tmp.path(), &["--shards", "4"]);
    let mut c = Clients::new(s.addr);
    let mut held = Vec::new();
    for (i, enc) in [Encoding::Json, Encoding::Binary].into_iter().cycle().take(40).enumerate() {
        let r =
            call(&mut c, None, &grant_request(i as u64, format!("r{i}").into_bytes(), 30_000), enc);
        assert_eq!(r.id, i as u64);
        assert!((1..=4).contains(&r.landlord.0), "{:?}", r.landlord);
        held.push((r.landlord.0, granted(&r), enc));
    }
    // Grants spread over the shards by resource.
    let mut per_shard = [0; 5];
    for (l, _, _) in &held {
        per_shard[*l as usize] += 1;
    }
    assert!(per_shard[1..].iter().all(|&n| n > 0), "{per_shard:?}");
    for (i, &(l, cookie, enc)) in held.iter().enumerate() {
        let r = call(&mut c, Some(l), &renew(cookie, 100 + i as u64), enc);
        assert_eq!(r.body, ReplyBody::Renewed { duration: 60_000 });
    }
    // The wrong landlord does not know the cookie (cookies are bound to their landlord).
    let (l, cookie, _) = held[0];
    let other = l % 4 + 1;
    assert_eq!(
        code(&call(&mut c, Some(other), &renew(cookie, 1), Encoding::Json)),
        Some(ErrorCode::UnknownLease)
    );
    // No landlord named on a multi-shard server: a clear invalid-argument reply.
    let r = call(&mut c, None, &renew(cookie, 2), Encoding::Json);
    assert_eq!(code(&r), Some(ErrorCode::InvalidArgument), "{r:?}");
    // A landlord that is not a shard of this server.
    assert_eq!(
        code(&call(&mut c, Some(9), &renew(cookie, 3), Encoding::Binary)),
        Some(ErrorCode::UnknownLease)
    );
    // A batch through the binary encoding.
    let items: Vec<_> = held.iter().filter(|h| h.0 == l).map(|h| (h.1, 10_000)).collect();
    let n = items.len();
    let r = call(
        &mut c,
        Some(l),
        &Request { id: 9, body: RequestBody::RenewAll { items } },
        Encoding::Binary,
    );
    match r.body {
        ReplyBody::RenewedAll { results } => {
            assert_eq!(results.len(), n);
            assert!(results.iter().all(|o| *o == Outcome::Ok(10_000)));
        }
        b => panic!("{b:?}"),
    }
    let r = call(
        &mut c,
        Some(l),
        &Request { id: 10, body: RequestBody::Cancel { cookie } },
        Encoding::Json,
    );
    assert_eq!(r.body, ReplyBody::Cancelled);

    assert_eq!(s.metric_total("leasehold_grants_total"), 40);
    assert_eq!(s.metric_total("leasehold_renewals_total"), 40 + n as u64);
    assert_eq!(s.metric_total("leasehold_cancels_total"), 1);
    assert_eq!(s.metric_total("leasehold_live_leases"), 39);
    assert_eq!(s.metric_total("leasehold_shards_owned"), 4);
    assert!(s.metric_total("leasehold_commits_total") >= 1);
    assert_eq!(s.metric_total("leasehold_journal_lag_records"), 0);
    let (status, text) = s.get("/metrics");
    assert_eq!(status, 200);
    assert!(text.contains("# TYPE leasehold_journal_lag_seconds gauge"), "{text}");
    let (status, body) = s.get("/healthz");
    assert_eq!((status, body.trim()), (200, "ok: 4 shards served"));
}

#[test]
fn keep_alive_serves_many_requests_on_one_socket() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_in(tmp.path(), &[]);
    let mut sock = TcpStream::connect(s.addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut reader = BufReader::new(sock.try_clone().unwrap());
    for i in 0..20u64 {
        let body = grant_request(i, b"printer".to_vec(), 5_000).encode(Encoding::Json);
        write!(
            sock,
            "POST /lease HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .unwrap();
        sock.write_all(&body).unwrap();
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.starts_with("HTTP/1.1 200"), "{status:?}");
        let mut len = 0;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if h.trim().is_empty() {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
        }
        let mut b = vec![0; len];
        reader.read_exact(&mut b).unwrap();
        let r = Reply::decode(&b, Encoding::Json, &Limits::default()).unwrap();
        assert_eq!((r.id, r.landlord), (i, LandlordId(1)));
    }
    // A single-shard server takes renewals without `landlord` (clients of one landlord).
    let mut c = Clients::new(s.addr);
    let g = call(&mut c, None, &grant_request(1, b"x".to_vec(), 5_000), Encoding::Binary);
    let r = call(&mut c, None, &renew(granted(&g), 2), Encoding::Binary);
    assert!(matches!(r.body, ReplyBody::Renewed { .. }), "{r:?}");
}

#[test]
fn oversized_bodies_are_refused_from_their_length_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_in(tmp.path(), &[]);
    let mut sock = TcpStream::connect(s.addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // Announce 10 MB, send none of it: the answer comes from the header alone.
    write!(
        sock,
        "POST /lease HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n"
    )
    .unwrap();
    let mut status = String::new();
    BufReader::new(&sock).read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 413"), "{status:?}");
    // An undecodable body gets an error reply (and a 400), not a crash.
    let (status, _, body) = raw(s.addr, "POST", "/lease", "application/json", b"{not json");
    assert_eq!(status, 400);
    let r = Reply::decode(&body, Encoding::Json, &Limits::default()).unwrap();
    assert_eq!(code(&r), Some(ErrorCode::Decode));
}

#[test]
fn a_restart_after_sigkill_keeps_every_lease_and_every_cancel() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_in(tmp.path(), &["--shards", "3"]);
    let mut c = Clients::new(s.addr);
    let mut held = Vec::new();
    for i in 0..120u64 {
        let enc = if i % 2 == 0 { Encoding::Json } else { Encoding::Binary };
        let r =
            call(&mut c, None, &grant_request(i, format!("lease-{i}").into_bytes(), 60_000), enc);
        held.push((r.landlord.0, granted(&r)));
    }
    let cancelled: Vec<_> = held.iter().step_by(5).copied().collect();
    for &(l, cookie) in &cancelled {
        let r = call(
            &mut c,
            Some(l),
            &Request { id: 7, body: RequestBody::Cancel { cookie } },
            Encoding::Json,
        );
        assert_eq!(r.body, ReplyBody::Cancelled);
    }
    s.kill();
    let s = Server::start_in(tmp.path(), &["--shards", "3"]);
    let mut c = Clients::new(s.addr);
    assert_eq!(s.metric_total("leasehold_live_leases"), 120 - cancelled.len() as u64);
    for (i, &(l, cookie)) in held.iter().enumerate() {
        let r = call(&mut c, Some(l), &renew(cookie, i as u64), Encoding::Binary);
        if cancelled.contains(&(l, cookie)) {
            assert_eq!(code(&r), Some(ErrorCode::UnknownLease), "cancelled lease {i} came back");
        } else {
            assert!(matches!(r.body, ReplyBody::Renewed { .. }), "lease {i} lost: {r:?}");
        }
    }
    // A second server on the same directory is refused (the store's lock), loudly.
    let out = Command::new(env!("CARGO_BIN_EXE_leasehold-server"))
        .arg("--data")
        .arg(tmp.path())
        .args(["--listen", "127.0.0.1:0", "--shards", "3"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("in use"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bad_flags_and_config_files_are_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("server.toml");
    std::fs::write(&cfg, "shards = 2\nlisten = \"127.0.0.1:0\"\npolicy = { kind = \"bounded\", max = 5000, default = 2000 }\n")
        .unwrap();
    let s = Server::start_in(&tmp.path().join("data"), &["--config", cfg.to_str().unwrap()]);
    let mut c = Clients::new(s.addr);
    let r = call(&mut c, None, &grant_request(1, b"a".to_vec(), leasehold::ANY), Encoding::Json);
    assert!(matches!(r.body, ReplyBody::Granted { duration: 2000, .. }), "{r:?}");
    assert_eq!(s.metric_total("leasehold_shards_owned"), 2);
    std::fs::write(&cfg, "shardz = 2\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_leasehold-server"))
        .args(["--config", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("shardz"));
    let out = Command::new(env!("CARGO_BIN_EXE_leasehold-server"))
        .args(["--shards", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
