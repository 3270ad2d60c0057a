//! The renewal service's outgoing traffic (docs/security.md, "Outgoing traffic"): a renewal
//! shard keeps a lease alive at a landlord that speaks only TLS and wants an identity (its
//! certificate checked against `--outbound-ca`, the shard's client certificate presented),
//! its own metrics move; landlord and listener URLs outside the allow-lists are refused when a
//! set operation names them, with the reason. Certificates are made here with rcgen.

mod common;

use std::path::Path;
use std::time::Duration;

use common::pki::{ca, leaf};
use common::*;
use leasehold::service::wire::{
    ClientLease, SetEventBody, SetEventType, SetReplyBody, SetRequestBody,
};
use leasehold::{Cookie, ErrorCode, LandlordId, Request, RequestBody};
use leasehold_client::{Cluster, ClusterConfig, TlsOptions};

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

fn message(body: &SetReplyBody) -> String {
    match body {
        SetReplyBody::Error(e) => e.message.clone(),
        other => format!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_shard_renews_at_an_https_landlord_with_its_certificate() {
    let pki = tempfile::tempdir().unwrap();
    let d = pki.path();
    let authority = ca(d, "ca");
    leaf(d, "landlord", &["localhost", "127.0.0.1"], &authority);
    leaf(d, "renewer", &["renewer.example"], &authority);
    // The landlord: TLS only, every request with an identity. The holder has a token; the
    // renewal service is known by its certificate and may only renew.
    let tokens = p(d, "tokens.toml");
    let (code, holder, err) = run(&[
        "token",
        "add",
        "--file",
        &tokens,
        "--name",
        "holder",
        "--ops",
        "grant,renew,cancel",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&[
        "token",
        "add",
        "--file",
        &tokens,
        "--name",
        "renewer.example",
        "--cert",
        "--ops",
        "renew",
    ]);
    assert_eq!(code, 0, "{err}");
    let dir_a = tempfile::tempdir().unwrap();
    let a = Server::start(&[
        "--data",
        dir_a.path().to_str().unwrap(),
        "--tokens",
        &tokens,
        "--tls-cert",
        &p(d, "landlord.pem"),
        "--tls-key",
        &p(d, "landlord.key"),
        "--tls-client-ca",
        &p(d, "ca.pem"),
        "--tls-client-auth",
        "optional",
    ]);
    let https = format!("https://{}", a.addr);
    // The renewal service: trusts the test CA, presents its certificate, reaches only the
    // landlord's host and the listener's URL (a prefix with a path: a connector sees only the
    // origin, the path is checked when the URL is named).
    let (events_url, events) = set_listener();
    let dir_b = tempfile::tempdir().unwrap();
    let b = Server::start(&[
        "--data",
        dir_b.path().to_str().unwrap(),
        "--renewal-shards",
        "1",
        "--outbound-ca",
        &p(d, "ca.pem"),
        "--outbound-cert",
        &p(d, "renewer.pem"),
        "--outbound-key",
        &p(d, "renewer.key"),
        "--renewal-allow",
        "127.0.0.1",
        "--event-allow",
        &events_url,
    ]);
    b.wait_ready(Duration::from_secs(20));

    let config = ClusterConfig::new([https.clone()])
        .attempt_timeout(Duration::from_secs(3))
        .bearer_token(holder.trim())
        .unwrap();
    let holder = Cluster::with_tls(config, &TlsOptions::new().ca_file(p(d, "ca.pem"))).unwrap();
    let grant = Request {
        id: 1,
        body: RequestBody::Grant { resource: b"job/tls".to_vec(), duration: 2_000 },
    };
    let mut granted = None;
    for _ in 0..100 {
        match holder.send(None, &grant).await {
            Ok(r) => {
                granted = Some(r);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let r = granted.expect("the landlord answers over TLS");
    let (landlord, cookie) = match r.body {
        leasehold::ReplyBody::Granted { cookie, .. } => (r.landlord, cookie),
        other => panic!("not granted: {other:?}"),
    };

    let service = LandlordId(2);
    let (status, r) = set_op(b.addr, None, SetRequestBody::CreateSet { duration: 60_000 });
    let SetReplyBody::SetCreated { cookie: set, .. } = r.body else { panic!("{status} {r:?}") };
    let (status, r) = set_op(
        b.addr,
        Some(service),
        SetRequestBody::Listen {
            set,
            event: SetEventType::RenewalFailure,
            min_warning: 0,
            url: events_url,
            handback: vec![],
        },
    );
    assert_eq!(status, 200, "{r:?}");
    let lease = ClientLease {
        landlord,
        cookie,
        remaining: 2_000,
        urls: vec![https.clone()],
        membership: None,
        renew: None,
    };
    let add = SetRequestBody::Add { set, lease, membership: 60_000, renew: 2_000 };
    let (status, r) = set_op(b.addr, Some(service), add);
    assert_eq!(status, 200, "{r:?}");

    // Nobody but the service renews it: after twice its duration it is alive at the landlord.
    tokio::time::sleep(Duration::from_millis(4_500)).await;
    let renew = Request { id: 2, body: RequestBody::Renew { cookie, duration: 2_000 } };
    let r = holder.send(Some(landlord), &renew).await.unwrap();
    assert!(matches!(r.body, leasehold::ReplyBody::Renewed { .. }), "expired: {r:?}");

    // The shard's own metrics.
    let shard = ["shard=\"2\""];
    assert_eq!(b.metric("leasehold_renewal_sets", &shard), 1.0);
    assert!(
        b.metric("leasehold_renewal_requests_total", &["shard=\"2\"", "kind=\"renew\""]) >= 2.0
    );
    assert!(b.metric("leasehold_renewal_leases_renewed_total", &shard) >= 2.0);
    assert_eq!(b.metric("leasehold_renewal_failures_total", &["kind=\"definite\""]), 0.0);

    // Cancelled at the landlord behind the service's back: a definite failure, an event.
    let cancel = Request { id: 3, body: RequestBody::Cancel { cookie } };
    let r = holder.send(Some(landlord), &cancel).await.unwrap();
    assert!(matches!(r.body, leasehold::ReplyBody::Cancelled), "{r:?}");
    assert!(
        eventually(Duration::from_secs(10), || !events.lock().unwrap().is_empty()),
        "no renewal-failure event"
    );
    let got = set_events(&events);
    assert!(matches!(got[0].body, SetEventBody::RenewalFailure { .. }), "{got:?}");
    assert!(eventually(Duration::from_secs(5), || {
        b.metric("leasehold_renewal_events_total", &["shard=\"2\"", "outcome=\"delivered\""]) == 1.0
    }));
    assert_eq!(b.metric("leasehold_renewal_events_total", &["outcome=\"queued\""]), 1.0);
    assert_eq!(b.metric("leasehold_renewal_failures_total", &["kind=\"definite\""]), 1.0);
    drop(a);
}

#[test]
fn urls_outside_the_allow_lists_are_refused_with_their_reason() {
    // Default lists: anything but link-local, unspecified and metadata addresses.
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&["--data", dir.path().to_str().unwrap(), "--renewal-shards", "1"]);
    s.wait_ready(Duration::from_secs(20));
    let service = LandlordId(2);
    let (_, r) = set_op(s.addr, None, SetRequestBody::CreateSet { duration: 60_000 });
    let SetReplyBody::SetCreated { cookie: set, .. } = r.body else { panic!("{r:?}") };
    let lease = |urls: &[&str]| ClientLease {
        landlord: LandlordId(1),
        cookie: Cookie(42),
        remaining: 5_000,
        urls: urls.iter().map(|u| u.to_string()).collect(),
        membership: None,
        renew: None,
    };
    let add = |urls: &[&str]| SetRequestBody::Add {
        set,
        lease: lease(urls),
        membership: 60_000,
        renew: 5_000,
    };
    let (status, r) =
        set_op(s.addr, Some(service), add(&["http://127.0.0.1:1", "http://169.254.169.254/"]));
    assert_eq!(status, 403, "{r:?}");
    let SetReplyBody::Error(e) = &r.body else { panic!("{r:?}") };
    assert_eq!(e.code, ErrorCode::LeaseDenied as i32);
    assert!(e.message.contains("169.254.169.254 is a link-local address"), "{}", e.message);
    assert!(e.message.contains("--renewal-allow"), "{}", e.message);
    let listen = |url: &str| SetRequestBody::Listen {
        set,
        event: SetEventType::RenewalFailure,
        min_warning: 0,
        url: url.to_string(),
        handback: vec![],
    };
    let (status, r) = set_op(s.addr, Some(service), listen("http://[fe80::1]:8080/hook"));
    assert_eq!(status, 403, "{r:?}");
    assert!(message(&r.body).contains("--event-allow"), "{r:?}");
    // Nothing was taken: the set is empty.
    let (_, r) = set_op(s.addr, Some(service), SetRequestBody::Leases { set });
    assert!(matches!(&r.body, SetReplyBody::Leases { leases } if leases.is_empty()), "{r:?}");
    drop(s);

    // Lists given: only what they name.
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&[
        "--data",
        dir.path().to_str().unwrap(),
        "--renewal-shards",
        "1",
        "--renewal-allow",
        "*.leases.internal:7420",
        "--renewal-allow",
        "127.0.0.1",
        "--event-allow",
        "https://hooks.example/leasehold/",
    ]);
    s.wait_ready(Duration::from_secs(20));
    let (_, r) = set_op(s.addr, None, SetRequestBody::CreateSet { duration: 60_000 });
    let SetReplyBody::SetCreated { cookie: set, .. } = r.body else { panic!("{r:?}") };
    let add = |urls: &[&str]| SetRequestBody::Add {
        set,
        lease: lease(urls),
        membership: 60_000,
        renew: 5_000,
    };
    let listen = |url: &str| SetRequestBody::Listen {
        set,
        event: SetEventType::RenewalFailure,
        min_warning: 0,
        url: url.to_string(),
        handback: vec![],
    };
    let (status, r) = set_op(s.addr, Some(service), add(&["https://evil.example:7420"]));
    assert_eq!(status, 403, "{r:?}");
    assert!(
        message(&r.body).contains(
            "https://evil.example:7420 is refused: not in this server's --renewal-allow list"
        ),
        "{r:?}"
    );
    let (status, r) = set_op(s.addr, Some(service), add(&["https://a.leases.internal:7420"]));
    assert_eq!(status, 200, "{r:?}");
    let (status, r) = set_op(s.addr, Some(service), listen("http://127.0.0.1:9/hook"));
    assert_eq!(status, 403, "{r:?}");
    assert!(message(&r.body).contains("--event-allow"), "{r:?}");
    let (status, r) = set_op(s.addr, Some(service), listen("https://hooks.example/leasehold/1"));
    assert_eq!(status, 200, "{r:?}");
}
