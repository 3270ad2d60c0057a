//! The HTTP API as a contract, against the real `leasehold-server` binary: the one form of a
//! landlord id (finding 2 of issue 23: 20 shards, a lease of shard 16), statuses that say what
//! the reply says (finding 3), the admin endpoints (durable revocations), `/openapi.json`, and
//! `leasehold-client`'s transport and renewal driver (failover past dead and paused servers).

mod common;

use common::{raw, Server};

use std::time::Duration;

use leasehold::holder::grant_request;
use leasehold::{
    Cookie, Encoding, ErrorCode, LandlordId, Limits, RenewalEvent, RenewalManagerConfig, Reply,
    ReplyBody, Request, RequestBody, FOREVER,
};
use leasehold_client::{ClientError, Cluster, ClusterConfig, RenewalDriver};
use leasehold_server::http::pick_shard;

fn json_reply(body: &[u8]) -> Reply {
    Reply::decode(body, Encoding::Json, &Limits::default())
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)))
}

fn error_of(r: &Reply) -> (Option<ErrorCode>, String) {
    match &r.body {
        ReplyBody::Error(e) => (e.error_code(), e.message.clone()),
        b => panic!("not an error: {b:?}"),
    }
}

fn post(s: &Server, landlord: Option<&str>, req: &Request) -> (u16, Reply) {
    let target = match landlord {
        Some(l) => format!("/lease?landlord={l}"),
        None => "/lease".into(),
    };
    let (status, _, body) =
        raw(s.addr, "POST", &target, "application/json", &req.encode(Encoding::Json));
    (status, json_reply(&body))
}

/// A resource whose grants go to `shard` of `shards`.
fn resource_of_shard(shard: u64, shards: u64) -> Vec<u8> {
    (0..).map(|i| format!("r{i}").into_bytes()).find(|r| pick_shard(r, shards) == shard).unwrap()
}

#[test]
fn a_lease_of_shard_16_of_20_is_renewed_by_the_id_its_grant_named() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_in(tmp.path(), &["--shards", "20"]);
    let resource = resource_of_shard(16, 20);
    let (status, g) = post(&s, None, &grant_request(1, resource, 30_000));
    assert_eq!(status, 200);
    assert_eq!(g.landlord, LandlordId(16));
    let ReplyBody::Granted { cookie, .. } = g.body else { panic!("{g:?}") };
    // The reply writes its landlord as 16 hex digits: exactly what the query takes.
    let named = g.landlord.to_string();
    assert_eq!(named, "0000000000000010");
    let renew = |id| Request { id, body: RequestBody::Renew { cookie, duration: 30_000 } };
    let (status, r) = post(&s, Some(&named), &renew(2));
    assert_eq!((status, &r.body), (200, &ReplyBody::Renewed { duration: 30_000 }));
    // Any other form is refused before it can reach a shard: no "unknown lease" that would
    // make a holder drop its lease.
    for other in ["16", "10", "0x10", "000000000000010", "00000000000000010"] {
        let (status, r) = post(&s, Some(other), &renew(3));
        let (code, message) = error_of(&r);
        assert_eq!((status, code), (400, Some(ErrorCode::InvalidArgument)), "{other}");
        assert!(message.contains("16 hex digits"), "{message}");
    }
    // Shard 10 (written in the one form) does not know the lease, and says so.
    let (status, r) = post(&s, Some("000000000000000a"), &renew(4));
    let (code, message) = error_of(&r);
    assert_eq!((status, code), (404, Some(ErrorCode::UnknownLease)));
    assert!(message.contains("is unknown to landlord 000000000000000a"), "{message}");
    // The Rust client writes the same form.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let c = rt.block_on(async { Cluster::from_urls([s.url()]) }).unwrap();
    let r = rt.block_on(c.send(Some(LandlordId(16)), &renew(5))).unwrap();
    assert_eq!(r.body, ReplyBody::Renewed { duration: 30_000 });
}

#[test]
fn statuses_say_what_the_reply_says_and_the_reply_stays_in_the_body() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("server.toml");
    std::fs::write(
        &cfg,
        "shards = 2\npolicy = { kind = \"capacity\", max_leases = 1, inner = { kind = \"bounded\", max = 60000, default = 30000 } }\n",
    )
    .unwrap();
    let s = Server::start_in(&tmp.path().join("data"), &["--config", cfg.to_str().unwrap()]);
    let resource = resource_of_shard(1, 2);
    let (status, g) = post(&s, None, &grant_request(1, resource.clone(), 30_000));
    assert_eq!(status, 200, "{g:?}");
    // Denied: the shard is at capacity.
    let (status, r) = post(&s, None, &grant_request(2, resource, 30_000));
    assert_eq!((status, error_of(&r).0), (409, Some(ErrorCode::LeaseDenied)));
    // Unknown lease, with a message.
    let renew = Request { id: 3, body: RequestBody::Renew { cookie: Cookie(99), duration: 1000 } };
    let (status, r) = post(&s, Some("0000000000000001"), &renew);
    let (code, message) = error_of(&r);
    assert_eq!((status, code), (404, Some(ErrorCode::UnknownLease)));
    assert!(message.contains("unknown to landlord 0000000000000001"), "{message}");
    assert_eq!(r.id, 3);
    // A landlord the cluster does not have.
    let (status, r) = post(&s, Some("0000000000000003"), &renew);
    let (code, message) = error_of(&r);
    assert_eq!((status, code), (404, Some(ErrorCode::UnknownLease)));
    assert!(message.contains("not one of this cluster's"), "{message}");
    // No landlord on a multi-shard server.
    let (status, r) = post(&s, None, &renew);
    assert_eq!((status, error_of(&r).0), (400, Some(ErrorCode::InvalidArgument)));
    // Undecodable, in each encoding: the reply in the request's encoding.
    let (status, h, body) = raw(s.addr, "POST", "/lease", "application/octet-stream", b"\x00\x01");
    assert_eq!(status, 400);
    assert!(h.contains(&("content-type".into(), "application/octet-stream".into())), "{h:?}");
    let r = Reply::decode(&body, Encoding::Binary, &Limits::default()).unwrap();
    assert_eq!(error_of(&r).0, Some(ErrorCode::Decode));
    // Too large: 413 with a decode error reply.
    let big = vec![b' '; (1 << 20) + 1];
    let (status, _, body) = raw(s.addr, "POST", "/lease", "application/json", &big[..100_000]);
    assert_eq!(status, 400, "a short body is read and refused as undecodable");
    let (status, _, body2) = raw(s.addr, "POST", "/lease", "application/json", &big);
    let _ = body;
    let body = body2;
    assert_eq!(status, 413);
    assert_eq!(error_of(&json_reply(&body)).0, Some(ErrorCode::Decode));
    // A batch with per-lease errors is a 200.
    let batch = Request { id: 4, body: RequestBody::RenewAll { items: vec![(Cookie(1), 10)] } };
    let (status, r) = post(&s, Some("0000000000000001"), &batch);
    assert_eq!(status, 200);
    assert!(matches!(r.body, ReplyBody::RenewedAll { .. }));
    // The contract is served.
    let (status, _, body) = raw(s.addr, "GET", "/openapi.json", "text/plain", b"");
    assert_eq!(status, 200);
    let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/lease"]["post"]["responses"]["409"].is_object());
}

#[test]
fn admin_lists_looks_up_and_revokes_durably() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_in(tmp.path(), &["--shards", "3"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let c = rt.block_on(async { Cluster::from_urls([s.url()]) }).unwrap();
    // 30 leases on shard 2: 20 "job/..." and 10 "lock/...".
    let mut resources = Vec::new();
    for i in 0.. {
        let r = format!("{}/{i}", if resources.len() < 20 { "job" } else { "lock" }).into_bytes();
        if pick_shard(&r, 3) == 2 {
            resources.push(r);
        }
        if resources.len() == 30 {
            break;
        }
    }
    let mut granted = Vec::new();
    for (i, r) in resources.iter().enumerate() {
        let reply = rt.block_on(c.send(None, &grant_request(i as u64, r.clone(), 60_000))).unwrap();
        let ReplyBody::Granted { cookie, .. } = reply.body else { panic!("{reply:?}") };
        granted.push((cookie, r.clone()));
    }
    let admin = c.admin();
    // Paged by prefix, in cookie order, every lease once.
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = rt.block_on(admin.list(LandlordId(2), b"job/", after, 7)).unwrap();
        assert!(page.leases.len() <= 7);
        seen.extend(page.leases.iter().map(|l| l.cookie));
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    let mut jobs: Vec<Cookie> =
        granted.iter().filter(|(_, r)| r.starts_with(b"job/")).map(|(c, _)| *c).collect();
    jobs.sort();
    assert_eq!(seen, jobs);
    // Look up one lease, and by resource.
    let (cookie, resource) = granted[25].clone();
    let one = rt.block_on(admin.get(LandlordId(2), cookie)).unwrap();
    assert_eq!(one.resource_text.as_deref(), Some(std::str::from_utf8(&resource).unwrap()));
    assert!(one.expires_in_ms > 50_000 && one.expires_in_ms <= 60_000, "{one:?}");
    let by = rt.block_on(admin.resource(&resource, None)).unwrap();
    assert_eq!(by.leases.len(), 1);
    assert_eq!(by.leases[0].cookie, cookie);
    // Revoke by cookie and by resource.
    let gone = rt.block_on(admin.revoke(LandlordId(2), cookie)).unwrap();
    assert_eq!(gone.revoked.len(), 1);
    let (cookie2, resource2) = granted[3].clone();
    let gone = rt.block_on(admin.revoke_resource(&resource2, None)).unwrap();
    assert_eq!(gone.revoked[0].cookie, cookie2);
    // Unknown now, through the admin and to the holder.
    assert!(matches!(
        rt.block_on(admin.get(LandlordId(2), cookie)),
        Err(ClientError::Http { status: 404, .. })
    ));
    let renew = |cookie| Request { id: 99, body: RequestBody::Renew { cookie, duration: 1000 } };
    let r = rt.block_on(c.send(Some(LandlordId(2)), &renew(cookie))).unwrap();
    assert!(matches!(r.body, ReplyBody::Error(_)));
    // Errors: bad ids are 400, an unknown landlord 404, nothing on a resource 404.
    let (status, _, body) = raw(s.addr, "GET", "/admin/landlords/2/leases", "text/plain", b"");
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
    let (status, _, _) =
        raw(s.addr, "GET", "/admin/landlords/0000000000000009/leases", "text/plain", b"");
    assert_eq!(status, 404);
    let (status, _, _) = raw(s.addr, "DELETE", "/admin/resources/6e6f6e65", "text/plain", b"");
    assert_eq!(status, 404);
    let (status, _, _) =
        raw(s.addr, "GET", "/admin/landlords/0000000000000002/leases?limit=0", "text/plain", b"");
    assert_eq!(status, 400);
    // Revocations were durable before they were acknowledged: a SIGKILL forgets none.
    drop(c);
    s.kill();
    let s = Server::start_in(tmp.path(), &["--shards", "3"]);
    let c = rt.block_on(async { Cluster::from_urls([s.url()]) }).unwrap();
    for (ck, expect_live) in [(cookie, false), (cookie2, false), (granted[0].0, true)] {
        let r = rt.block_on(c.send(Some(LandlordId(2)), &renew(ck))).unwrap();
        assert_eq!(matches!(r.body, ReplyBody::Renewed { .. }), expect_live, "{r:?}");
    }
    let page = rt.block_on(c.admin().list(LandlordId(2), b"", None, 100)).unwrap();
    assert_eq!(page.leases.len(), 28);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_fails_over_past_dead_and_paused_servers_and_the_driver_keeps_leases() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_in(
        tmp.path(),
        &["--shards", "4", "--max-lease-ms", "800", "--default-lease-ms", "800"],
    );
    // A port nobody listens on, and a server that accepts and never answers (paused).
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let paused = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let paused_addr = paused.local_addr().unwrap();
    let _held = tokio::spawn(async move {
        let mut keep = Vec::new();
        while let Ok((sock, _)) = paused.accept().await {
            keep.push(sock);
        }
    });
    let config =
        ClusterConfig::new([format!("http://{dead}"), format!("http://{paused_addr}"), s.url()])
            .attempt_timeout(Duration::from_millis(200));
    let cluster = Cluster::new(config).unwrap();
    let manager = RenewalManagerConfig { min_rto: 50, ..Default::default() };
    let (driver, mut events) = RenewalDriver::start(cluster.clone(), manager).unwrap();
    let lease = driver.grant("printer", 800).await.unwrap();
    assert!((1..=4).contains(&lease.landlord().0));
    driver.renew_for(lease, FOREVER, 800).await.unwrap();
    // Renewed through the live server across three lease lengths.
    let mut renewed = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(2500);
    while let Ok(Some(e)) = tokio::time::timeout_at(deadline, events.recv()).await {
        match e {
            RenewalEvent::Renewed { .. } => renewed += 1,
            other => panic!("{other:?}"),
        }
    }
    assert!(renewed >= 3, "renewed {renewed} times");
    let (n, _) = driver.stats().await.unwrap();
    assert_eq!(n, 1);
    // A definite answer (unknown lease, a 404) is returned, not retried elsewhere.
    let r = cluster
        .send(
            Some(lease.landlord()),
            &Request { id: 1, body: RequestBody::Cancel { cookie: Cookie(5) } },
        )
        .await
        .unwrap();
    assert!(matches!(r.body, ReplyBody::Error(_)));
    // Cancel through the driver: the landlord forgets it.
    driver.cancel(lease).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let page = cluster.admin().list(lease.landlord(), b"", None, 10).await.unwrap();
    assert!(page.leases.iter().all(|l| l.cookie != lease.cookie()), "{page:?}");
    driver.close().await;
    assert!(driver.grant("x", 100).await.is_ok(), "grants do not need the task");
    assert!(matches!(driver.renew_for(lease, FOREVER, 800).await, Err(ClientError::Closed)));
    // Every server down: an indefinite failure.
    drop(s);
    let err = cluster.send(None, &grant_request(9, b"y".to_vec(), 100)).await.unwrap_err();
    assert!(matches!(err, ClientError::Unavailable(_)) && !err.is_definite(), "{err}");
}
