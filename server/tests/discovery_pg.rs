//! The lookup discovery service on PostgreSQL, as real processes (issue 26;
//! docs/discovery-service.md).
//!
//! Two servers share one PostgreSQL, each started with `--discovery-port P` on its own loopback
//! address (127.0.0.1 and 127.0.0.2, the same port): one of them owns the discovery shard
//! (its row in `leasehold_shards`, id 1000000), the other forwards `POST /discovery` and the
//! registration leases' `POST /lease?landlord=` to it and drops the announcements it hears.
//! Registrars announce to both addresses.
//!
//! Clients register through both servers (a register through the non-owner carries its
//! listener to the owner), a registrar is announced, every registration gets its discovered
//! event. Then the owner is SIGKILLed: the other server takes the shard over (a new epoch,
//! restored exactly from the snapshot and journal rows), and every registration is there with
//! its cookie, its lease, its registrars and its event numbering: the next registrar's event
//! is numbered right after the first. 0 registrations lost. The killed server comes back
//! without the discovery service: the rebalance hands it the landlord shard, never the
//! discovery shard (which it could not take).
//!
//! `forwarded_registrations_keep_their_identity` does it with identities and a cluster secret.
//! Both run in `cargo test` and in `scripts/test-server.sh` (about 10 s together).

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use leasehold::discovery::wire::{
    DiscoveryReply, DiscoveryReplyBody, DiscoveryRequest, DiscoveryRequestBody,
};
use leasehold::discovery::{Announcement, Groups, Locator, RegistrarId, RemoteDiscoveryEvent};
use leasehold::{Cookie, Encoding, LandlordId, Limits, ReplyBody, Request, RequestBody};

const ID: u64 = 1_000_000;
/// Registrations made (half through each server).
const N: usize = 12;

/// A discovery request at `addr`, tried again while the answer is a 503 (a takeover under
/// way), for up to 20 s.
fn discovery(
    addr: SocketAddr,
    body: DiscoveryRequestBody,
    headers: &[(&str, &str)],
) -> (u16, DiscoveryReply) {
    let req = DiscoveryRequest { id: 9, body };
    let t0 = Instant::now();
    loop {
        let r =
            post_raw(addr, "/discovery", &req.encode(Encoding::Json), "application/json", headers);
        match r {
            Ok((status, bytes)) if status != 503 => {
                let reply = DiscoveryReply::decode(&bytes, Encoding::Json, &Limits::default())
                    .unwrap_or_else(|e| {
                        panic!("{status}: {e}: {}", String::from_utf8_lossy(&bytes))
                    });
                return (status, reply);
            }
            other => assert!(t0.elapsed() < Duration::from_secs(20), "{other:?}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A registration lease operation at `addr` (named landlord: the discovery id), tried again
/// while the answer is a 503.
fn lease(addr: SocketAddr, body: RequestBody) -> (u16, ReplyBody) {
    let t0 = Instant::now();
    loop {
        let r =
            post(addr, Some(ID), &Request { id: 3, body: body.clone() }, Duration::from_secs(10));
        match r {
            Ok(a) if a.status != 503 => return (a.status, a.reply().body),
            other => {
                assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", other.map(|a| a.status))
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Announces registrar `registrar` of `group` to every server's address at `port`.
fn announce(port: u16, registrar: u128, group: &str, sequence: u64) {
    let a = Announcement {
        registrar: RegistrarId(registrar),
        groups: [group.to_string()].into(),
        locator: Locator::new("127.0.0.1", 1).unwrap(),
        sequence,
        ttl: 120_000,
    };
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    for to in ["127.0.0.1", "127.0.0.2"] {
        s.send_to(&a.encode().unwrap(), (to, port)).unwrap();
    }
}

/// The index of the server that serves the discovery shard, as `/readyz` says, and its epoch.
fn owner(servers: &[Option<Server>]) -> (usize, u64) {
    let t0 = Instant::now();
    loop {
        for (i, s) in servers.iter().enumerate() {
            let Some(s) = s else { continue };
            let (_, r) = s.ready();
            let row = r["shards"]
                .as_array()
                .and_then(|a| a.iter().find(|x| x["shard"] == ID && x["state"] == "served"));
            if let Some(row) = row {
                return (i, row["epoch"].as_u64().unwrap_or(0));
            }
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "nobody serves the discovery shard");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits for the next events until every registration in `want` (event id -> sequence) has
/// the one it expects; returns them. Duplicates (an event sent again after a takeover, same
/// number) are dropped.
fn collect(
    events: &mpsc::Receiver<RemoteDiscoveryEvent>,
    want: &BTreeMap<u64, u64>,
) -> BTreeMap<u64, RemoteDiscoveryEvent> {
    let mut got = BTreeMap::new();
    let t0 = Instant::now();
    while got.len() < want.len() {
        let left = Duration::from_secs(20).saturating_sub(t0.elapsed());
        let e = events.recv_timeout(left).unwrap_or_else(|_| {
            panic!("events missing: got {:?}, want {want:?}", got.keys().collect::<Vec<_>>())
        });
        if want.get(&e.event_id) == Some(&e.sequence) {
            got.insert(e.event_id, e);
        }
    }
    got
}

#[test]
fn discovery_shard_moves_with_its_owner() {
    let t0 = Instant::now();
    let pg = Pg::start();
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let url = pg.url();
    let args = |i: usize| -> Vec<String> {
        [
            "--store",
            &url,
            "--ownership-ms",
            "1000",
            "--shards",
            "1",
            "--name",
            &format!("lds-{i}"),
            "--discovery-port",
            &port,
            "--discovery-announce",
            "unicast",
            "--discovery-interface",
            &format!("127.0.0.{}", i + 1),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let start = |i: usize| {
        let a = args(i);
        let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
        Server::start(&a)
    };
    let mut servers = vec![Some(start(0)), Some(start(1))];
    {
        let both: Vec<&Server> = servers.iter().flatten().collect();
        for s in &both {
            s.wait_ready(Duration::from_secs(30));
        }
        // Two shards: landlord 1 and the discovery shard, one each.
        settled(&both, 2, Duration::from_secs(30));
    }
    let addrs: Vec<SocketAddr> = servers.iter().flatten().map(|s| s.addr).collect();
    let (first, epoch) = owner(&servers);
    eprintln!("two servers ready in {:?}; server {first} owns the discovery shard", t0.elapsed());
    // Both servers list the discovery shard; its owner serves it, the other knows where.
    for s in servers.iter().flatten() {
        let (_, r) = s.ready();
        let row = r["shards"].as_array().unwrap().iter().find(|x| x["shard"] == ID).cloned();
        assert!(row.is_some_and(|x| x["state"] == "served" || x["state"] == "elsewhere"), "{r}");
    }

    // Registrations through both servers: the non-owner forwards them, listener and all.
    let (listen, events) = discovery_listener();
    let mut regs = Vec::new();
    for k in 0..N {
        let register = DiscoveryRequestBody::Register {
            groups: Groups::of(["lab"]),
            locators: vec![],
            handback: vec![k as u8],
            duration: 60_000,
        };
        let (code, r) = discovery(addrs[k % 2], register, &[("leasehold-listener", &listen)]);
        assert_eq!(code, 200, "{r:?}");
        assert_eq!(r.landlord, LandlordId(ID));
        let DiscoveryReplyBody::Registered { cookie, sequence, event_id, .. } = r.body else {
            panic!("{r:?}")
        };
        regs.push((cookie, event_id, sequence));
    }
    // A registrar in the group: one discovered event for every registration.
    announce(port.parse().unwrap(), 7, "lab", 1);
    let want: BTreeMap<u64, u64> = regs.iter().map(|r| (r.1, r.2 + 1)).collect();
    let got = collect(&events, &want);
    for e in got.values() {
        assert_eq!(e.registrars().iter().map(|r| r.id).collect::<Vec<_>>(), [RegistrarId(7)]);
    }
    // The registration leases are renewed through either server.
    for (k, (cookie, ..)) in regs.iter().enumerate() {
        let (code, b) =
            lease(addrs[k % 2], RequestBody::Renew { cookie: *cookie, duration: 60_000 });
        assert_eq!((code, b), (200, ReplyBody::Renewed { duration: 60_000 }));
    }

    // SIGKILL the owner: the other server takes the shard over.
    let killed = Instant::now();
    servers[first].take().unwrap().kill();
    let (second, epoch2) = owner(&servers);
    assert_ne!(second, first);
    assert!(epoch2 > epoch, "a new epoch: {epoch} -> {epoch2}");
    eprintln!("server {second} took the discovery shard over in {:?}", killed.elapsed());
    let survivor = addrs[second];
    let (code, st) = get(survivor, "/discovery/status");
    assert_eq!(code, 200, "{st}");
    let st: serde_json::Value = serde_json::from_str(&st).unwrap();
    assert_eq!(st["recovered"]["registrations"], N as u64, "{st}");
    assert_eq!(st["recovered"]["created"], false, "{st}");
    assert_eq!(st["discovered"].as_array().unwrap().len(), 1, "{st}");

    // Every registration is there: its cookie, its registrars, its lease.
    for (cookie, ..) in &regs {
        let (code, r) =
            discovery(survivor, DiscoveryRequestBody::GetRegistrars { cookie: *cookie }, &[]);
        assert_eq!(code, 200, "{r:?}");
        let DiscoveryReplyBody::Registrars { registrars } = r.body else { panic!("{r:?}") };
        assert_eq!(registrars.iter().map(|r| r.id).collect::<Vec<_>>(), [RegistrarId(7)]);
        let (code, b) = lease(survivor, RequestBody::Renew { cookie: *cookie, duration: 60_000 });
        assert_eq!((code, b), (200, ReplyBody::Renewed { duration: 60_000 }));
    }
    // A new registrar, heard by the new owner: every registration's next event, numbered
    // right after the first (an event of the old owner sent again would carry its old number).
    announce(port.parse().unwrap(), 9, "lab", 1);
    let want: BTreeMap<u64, u64> = regs.iter().map(|r| (r.1, r.2 + 2)).collect();
    let got = collect(&events, &want);
    for e in got.values() {
        assert_eq!(e.registrars().iter().map(|r| r.id).collect::<Vec<_>>(), [RegistrarId(9)]);
    }

    // The killed server comes back without the discovery service: the survivor, above a fair
    // share, hands it the landlord shard, never the discovery shard (which it could not take).
    let a = args(first);
    let plain: Vec<&str> = a.iter().take(8).map(|s| s.as_str()).collect();
    servers[first] = Some(Server::start(&plain));
    {
        let both: Vec<&Server> = servers.iter().flatten().collect();
        settled(&both, 2, Duration::from_secs(30));
    }
    assert_eq!(owner(&servers).0, second);
    let (code, b) = lease(survivor, RequestBody::Cancel { cookie: regs[0].0 });
    assert_eq!((code, b), (200, ReplyBody::Cancelled));
    let (code, _) =
        discovery(survivor, DiscoveryRequestBody::GetRegistrars { cookie: regs[0].0 }, &[]);
    assert_eq!(code, 404);
    let (code, _) =
        discovery(survivor, DiscoveryRequestBody::GetRegistrars { cookie: Cookie(5) }, &[]);
    assert_eq!(code, 404);
    eprintln!("0 of {N} registrations lost; {:?} in all", t0.elapsed());
    for s in servers.into_iter().flatten() {
        s.stop();
    }
}

/// With identities: a register through the server that does not own the discovery shard is
/// forwarded with the cluster secret's proof and the identity that spoke; the owner checks the
/// proof and the identity's `grant` again. An identity without `grant` is refused (403) at the
/// first server, never forwarded.
#[test]
fn forwarded_registrations_keep_their_identity() {
    let pg = Pg::start();
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.toml");
    let tokens = tokens.to_str().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "5f".repeat(32)).unwrap();
    let secret = secret.to_str().unwrap();
    let token = |args: &[&str]| format!("Bearer {}", add_token(tokens, args));
    let full = token(&["--name", "client", "--ops", "grant,renew,cancel,metrics"]);
    let renewer = token(&["--name", "renewer", "--ops", "renew,metrics"]);
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let url = pg.url();
    let start = |i: usize| {
        let iface = format!("127.0.0.{}", i + 1);
        let name = format!("lds-auth-{i}");
        Server::start(&[
            "--store",
            &url,
            "--ownership-ms",
            "1000",
            "--shards",
            "1",
            "--name",
            &name,
            "--tokens",
            tokens,
            "--cluster-secret",
            secret,
            "--discovery-port",
            &port,
            "--discovery-announce",
            "unicast",
            "--discovery-interface",
            &iface,
        ])
    };
    let servers = vec![Some(start(0)), Some(start(1))];
    let metrics_ready = |s: &Server| {
        let t0 = Instant::now();
        loop {
            let mut c = TcpStream::connect(s.addr).unwrap();
            write!(c, "GET /readyz HTTP/1.1\r\nHost: x\r\nAuthorization: {full}\r\nConnection: close\r\n\r\n").unwrap();
            let mut out = String::new();
            c.read_to_string(&mut out).unwrap();
            if out.split_whitespace().nth(1) == Some("200") && out.contains("\"served\"") {
                let body = &out[out.find("\r\n\r\n").unwrap() + 4..];
                return serde_json::from_str::<serde_json::Value>(body).unwrap();
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "not ready: {out}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    // The non-owner of the discovery shard (both ready, the shards shared out).
    let t0 = Instant::now();
    let other = loop {
        let found = servers.iter().flatten().position(|s| {
            let r = metrics_ready(s);
            r["shards"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["shard"] == ID && x["state"] == "elsewhere")
        });
        if let Some(i) = found {
            break i;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "no server forwards the discovery shard");
        std::thread::sleep(Duration::from_millis(200));
    };
    let at = servers[other].as_ref().unwrap().addr;
    let (listen, events) = discovery_listener();
    let register = DiscoveryRequestBody::Register {
        groups: Groups::of(["lab"]),
        locators: vec![],
        handback: vec![],
        duration: 30_000,
    };
    let (code, r) = discovery(
        at,
        register.clone(),
        &[("leasehold-listener", &listen), ("authorization", &renewer)],
    );
    assert_eq!(code, 403, "{r:?}");
    let (code, r) =
        discovery(at, register, &[("leasehold-listener", &listen), ("authorization", &full)]);
    assert_eq!(code, 200, "{r:?}");
    let DiscoveryReplyBody::Registered { event_id, sequence, .. } = r.body else { panic!("{r:?}") };
    announce(port.parse().unwrap(), 7, "lab", 1);
    let got = collect(&events, &[(event_id, sequence + 1)].into());
    assert_eq!(got.len(), 1);
    for s in servers.into_iter().flatten() {
        s.stop();
    }
}
