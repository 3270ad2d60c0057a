//! The lookup discovery service in the real `leasehold-server` binary (`--discovery-port`):
//! registrations over HTTP, announcements over UDP, events POSTed to a listener, registration
//! leases renewed through `/lease?landlord=`, readiness and metrics, a restart after SIGKILL
//! that keeps every registration, identities, and a discovery id among the shards refused
//! (PostgreSQL: `tests/discovery_pg.rs`).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use common::*;
use leasehold::discovery::wire::{
    DiscoveryReply, DiscoveryReplyBody, DiscoveryRequest, DiscoveryRequestBody,
};
use leasehold::discovery::{Announcement, Groups, Locator, RegistrarId};
use leasehold::{Cookie, Encoding, LandlordId, Limits, ReplyBody, Request, RequestBody};

const ID: u64 = 1_000_000;

fn discovery(
    addr: SocketAddr,
    body: DiscoveryRequestBody,
    headers: &[(&str, &str)],
) -> (u16, DiscoveryReply) {
    let req = DiscoveryRequest { id: 9, body };
    let (status, bytes) =
        post_raw(addr, "/discovery", &req.encode(Encoding::Json), "application/json", headers)
            .unwrap();
    let reply = DiscoveryReply::decode(&bytes, Encoding::Json, &Limits::default())
        .unwrap_or_else(|e| panic!("{status}: {e}: {}", String::from_utf8_lossy(&bytes)));
    (status, reply)
}

fn lease(addr: SocketAddr, landlord: Option<u64>, body: RequestBody) -> (u16, ReplyBody) {
    let a = post(addr, landlord, &Request { id: 3, body }, Duration::from_secs(10)).unwrap();
    (a.status, a.reply().body)
}

fn announce(port: u16, registrar: u128, group: &str, sequence: u64) {
    let a = Announcement {
        registrar: RegistrarId(registrar),
        groups: [group.to_string()].into(),
        locator: Locator::new("127.0.0.1", 1).unwrap(),
        sequence,
        ttl: 60_000,
    };
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .send_to(&a.encode().unwrap(), ("127.0.0.1", port))
        .unwrap();
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn status(s: &Server) -> serde_json::Value {
    let (code, body) = s.get("/discovery/status");
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[test]
fn discovery_service_in_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap().to_string();
    let udp = free_udp_port();
    let port = udp.to_string();
    let args = ["--data", &data, "--discovery-port", &port, "--discovery-announce", "unicast"];
    let s = Server::start(&args);
    s.wait_ready(Duration::from_secs(10));
    let (_, ready) = s.ready();
    let shards: Vec<u64> =
        ready["shards"].as_array().unwrap().iter().map(|x| x["shard"].as_u64().unwrap()).collect();
    assert_eq!(shards, [1, ID], "{ready}");
    let st = status(&s);
    assert_eq!(st["landlord"], "00000000000f4240");
    assert!(st["announcements"].as_str().unwrap().starts_with("unicast"), "{st}");

    // A registration needs its listener.
    let register = DiscoveryRequestBody::Register {
        groups: Groups::of(["lab"]),
        locators: vec![],
        handback: b"hb".to_vec(),
        duration: 30_000,
    };
    let (code, r) = discovery(s.addr, register.clone(), &[]);
    assert_eq!(code, 400, "{r:?}");
    let (code, r) = discovery(s.addr, register.clone(), &[("leasehold-listener", "ftp://x/")]);
    assert_eq!(code, 400, "{r:?}");
    // A listener outside --event-allow (by default: a link-local, cloud metadata address) is
    // refused with the reason, and nothing is registered.
    let metadata = "http://169.254.169.254/latest";
    let (code, r) = discovery(s.addr, register.clone(), &[("leasehold-listener", metadata)]);
    assert_eq!(code, 403, "{r:?}");
    let DiscoveryReplyBody::Error(e) = &r.body else { panic!("{r:?}") };
    assert!(e.message.contains("link-local") && e.message.contains("--event-allow"), "{e:?}");
    assert_eq!(s.metric("leasehold_discovery_registrations", &[]), 0.0);

    let (url, events) = discovery_listener();
    let (code, r) = discovery(s.addr, register, &[("leasehold-listener", &url)]);
    assert_eq!(code, 200, "{r:?}");
    assert_eq!(r.landlord, LandlordId(ID));
    let DiscoveryReplyBody::Registered { cookie, sequence, duration, .. } = r.body else {
        panic!("{r:?}")
    };
    assert_eq!(duration, 30_000);

    // An announcement of a registrar in the group: a discovered event at the listener.
    announce(udp, 7, "lab", 1);
    announce(udp, 8, "elsewhere", 1);
    let e = events.recv_timeout(Duration::from_secs(10)).expect("a discovered event");
    assert!(!e.is_discarded());
    assert_eq!(e.sequence, sequence + 1);
    assert_eq!(e.handback, b"hb");
    assert_eq!(e.registrars().iter().map(|r| r.id).collect::<Vec<_>>(), [RegistrarId(7)]);
    let (code, r) = discovery(s.addr, DiscoveryRequestBody::GetRegistrars { cookie }, &[]);
    assert_eq!(code, 200);
    let DiscoveryReplyBody::Registrars { registrars } = r.body else { panic!("{r:?}") };
    assert_eq!(registrars.len(), 1);

    // Its lease is renewed at the discovery shard, named as any lease's landlord.
    let (code, b) = lease(s.addr, Some(ID), RequestBody::Renew { cookie, duration: 20_000 });
    assert_eq!((code, b), (200, ReplyBody::Renewed { duration: 20_000 }));
    // Without the name, a single-shard server sends it to its landlord: unknown there.
    let (code, _) = lease(s.addr, None, RequestBody::Renew { cookie, duration: 20_000 });
    assert_eq!(code, 404);
    // Another landlord's name on /discovery: 404.
    let req = DiscoveryRequest { id: 1, body: DiscoveryRequestBody::GetRegistrars { cookie } };
    let (code, _) = post_raw(
        s.addr,
        "/discovery?landlord=0000000000000001",
        &req.encode(Encoding::Json),
        "application/json",
        &[],
    )
    .unwrap();
    assert_eq!(code, 404);

    let m = |name: &str, labels: &[&str]| s.metric(name, labels);
    assert_eq!(m("leasehold_discovery_registrars", &["shard=\"1000000\""]), 2.0);
    assert!(m("leasehold_discovery_events_total", &["outcome=\"delivered\""]) >= 1.0);
    assert_eq!(m("leasehold_discovery_events_total", &["outcome=\"ended\""]), 0.0);
    assert_eq!(m("leasehold_discovery_registrations", &["shard=\"1000000\""]), 1.0);
    assert!(m("leasehold_discovery_datagrams_total", &["outcome=\"taken\""]) >= 2.0);
    assert_eq!(m("leasehold_live_leases", &["shard=\"1000000\""]), 1.0);

    // SIGKILL and restart on the same directory: the registration, its cookie and its
    // registrars are all there.
    s.kill();
    let s = Server::start(&args);
    s.wait_ready(Duration::from_secs(10));
    let st = status(&s);
    assert_eq!(st["recovered"]["registrations"], 1, "{st}");
    assert_eq!(st["discovered"].as_array().unwrap().len(), 2, "{st}");
    let (code, b) = lease(s.addr, Some(ID), RequestBody::Renew { cookie, duration: 20_000 });
    assert_eq!((code, b), (200, ReplyBody::Renewed { duration: 20_000 }));
    // A new registrar after the restart: the next event, numbered after the first.
    announce(udp, 9, "lab", 1);
    let e = events.recv_timeout(Duration::from_secs(10)).expect("an event after the restart");
    assert_eq!(e.sequence, sequence + 2);
    assert_eq!(e.registrars().iter().map(|r| r.id).collect::<Vec<_>>(), [RegistrarId(9)]);

    let (code, b) = lease(s.addr, Some(ID), RequestBody::Cancel { cookie });
    assert_eq!((code, b), (200, ReplyBody::Cancelled));
    let (code, _) = discovery(s.addr, DiscoveryRequestBody::GetRegistrars { cookie }, &[]);
    assert_eq!(code, 404);
    let (code, _) =
        discovery(s.addr, DiscoveryRequestBody::GetRegistrars { cookie: Cookie(5) }, &[]);
    assert_eq!(code, 404);
    s.stop();
}

#[test]
fn without_a_discovery_service() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&["--data", dir.path().to_str().unwrap()]);
    s.wait_ready(Duration::from_secs(10));
    let (code, r) =
        discovery(s.addr, DiscoveryRequestBody::GetRegistrars { cookie: Cookie(5) }, &[]);
    assert_eq!(code, 400, "{r:?}");
    assert_eq!(s.get("/discovery/status").0, 404);
    s.stop();
}

#[test]
fn registering_needs_grant() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.toml");
    let tokens = tokens.to_str().unwrap();
    let token = |args: &[&str]| add_token(tokens, args);
    let full = token(&["--name", "client", "--ops", "grant,renew,cancel,metrics"]);
    let watcher = token(&["--name", "watcher", "--ops", "renew"]);
    let data = dir.path().join("data");
    let port = free_udp_port().to_string();
    let s = Server::start(&[
        "--data",
        data.to_str().unwrap(),
        "--tokens",
        tokens,
        "--discovery-port",
        &port,
        "--discovery-announce",
        "unicast",
    ]);
    let register = DiscoveryRequestBody::Register {
        groups: Groups::All,
        locators: vec![],
        handback: vec![],
        duration: leasehold::ANY,
    };
    let (url, _events) = discovery_listener();
    let req = DiscoveryRequest { id: 1, body: register.clone() }.encode(Encoding::Json);
    let (code, _) =
        post_raw(s.addr, "/discovery", &req, "application/json", &[("leasehold-listener", &url)])
            .unwrap();
    assert_eq!(code, 401);
    let bearer = |t: &str| format!("Bearer {t}");
    let (w, f) = (bearer(&watcher), bearer(&full));
    let (code, r) =
        discovery(s.addr, register.clone(), &[("leasehold-listener", &url), ("authorization", &w)]);
    assert_eq!(code, 403, "{r:?}");
    let (code, r) =
        discovery(s.addr, register, &[("leasehold-listener", &url), ("authorization", &f)]);
    assert_eq!(code, 200, "{r:?}");
    // The status is for operators: `metrics`.
    let get = |auth: &str| {
        let mut c = TcpStream::connect(s.addr).unwrap();
        write!(c, "GET /discovery/status HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\nConnection: close\r\n\r\n").unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out.split_whitespace().nth(1).unwrap().to_string()
    };
    assert_eq!(get(&w), "403");
    assert_eq!(get(&f), "200");
    s.stop();
}

#[test]
fn a_discovery_id_among_the_shards_is_refused_clearly() {
    let (code, _, err) = run(&["--discovery-port", "4160", "--discovery-id", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("--discovery-id must be above"), "{err}");
}

#[test]
fn a_damaged_discovery_shard_is_quarantined_and_taken_back() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap().to_string();
    let port = free_udp_port().to_string();
    let args = ["--data", &data, "--discovery-port", &port, "--discovery-announce", "unicast"];
    let s = Server::start(&args);
    s.wait_ready(Duration::from_secs(10));
    s.stop();
    let shard = dir.path().join("shard-1000000");
    std::fs::write(shard.join(leasehold::store::SNAPSHOT_FILE), b"not a snapshot").unwrap();
    let s = Server::start(&args);
    let (code, ready) = s.ready();
    assert_eq!(code, 503, "{ready}");
    let state = ready["shards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["shard"] == ID)
        .map(|x| x["state"].clone());
    assert_eq!(state, Some(serde_json::json!("quarantined")), "{ready}");
    assert!(shard.join("QUARANTINE").exists());
    assert_eq!(s.get("/discovery/status").0, 503);
    // The operator starts it afresh: the directory moved aside, marker and all.
    std::fs::rename(&shard, dir.path().join("damaged")).unwrap();
    s.wait_ready(Duration::from_secs(10));
    assert_eq!(status(&s)["recovered"]["created"], true);
    s.stop();
}
