//! The Rust client (`leasehold-client`) against a TLS server with tokens and client
//! certificates (certificates made here with rcgen). The hostile-client suite is
//! `scripts/test-security.sh`.

mod common;

use std::time::Duration;

use common::pki::{ca, leaf};
use common::{add_token, run, Server};
use leasehold::{LandlordId, Request, RequestBody};
use leasehold_client::{ClientError, Cluster, ClusterConfig, TlsOptions};

struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = ca(d, "ca");
    let other = ca(d, "otherca");
    leaf(d, "server", &["localhost", "127.0.0.1"], &good);
    leaf(d, "client", &["worker.example"], &good);
    leaf(d, "rogue", &["worker.example"], &other);
    Pki { dir }
}

fn token(pki: &Pki, args: &[&str]) -> String {
    add_token(&pki.path("tokens.toml"), args)
}

fn grant(resource: &str) -> Request {
    Request {
        id: 1,
        body: RequestBody::Grant { resource: resource.as_bytes().to_vec(), duration: 5_000 },
    }
}

/// The cookie of a grant's reply; panics (the test fails) on any other reply.
fn granted_cookie(r: &leasehold::Reply) -> leasehold::Cookie {
    match r.body {
        leasehold::ReplyBody::Granted { cookie, .. } => cookie,
        _ => panic!("not granted: {r:?}"),
    }
}

fn message(r: &leasehold::Reply) -> String {
    match &r.body {
        leasehold::ReplyBody::Error(e) => e.message.clone(),
        other => format!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_client_speaks_tls_with_a_token_or_a_certificate() {
    let pki = pki();
    let alice = token(&pki, &["--name", "alice", "--ops", "grant,renew,cancel", "--prefix", "t/"]);
    token(&pki, &["--name", "worker.example", "--cert", "--ops", "grant"]);
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(&[
        "--data",
        data.path().to_str().unwrap(),
        "--tokens",
        &pki.path("tokens.toml"),
        "--tls-cert",
        &pki.path("server.pem"),
        "--tls-key",
        &pki.path("server.key"),
        "--tls-client-ca",
        &pki.path("ca.pem"),
        "--tls-client-auth",
        "optional",
    ]);
    let https = format!("https://{}", server.addr);
    let config = || ClusterConfig::new([https.clone()]).attempt_timeout(Duration::from_secs(3));
    let trust = TlsOptions::new().ca_file(pki.path("ca.pem"));

    // A token over TLS: granted, renewed, cancelled.
    let c = Cluster::with_tls(config().bearer_token(&alice).unwrap(), &trust).unwrap();
    let r = c.send(None, &grant("t/1")).await.unwrap();
    let cookie = granted_cookie(&r);
    let renew = Request { id: 2, body: RequestBody::Renew { cookie, duration: 5_000 } };
    let r2 = c.send(Some(r.landlord), &renew).await.unwrap();
    assert!(matches!(r2.body, leasehold::ReplyBody::Renewed { .. }), "{r2:?}");
    // Outside its prefix: a definite denial that says why.
    let r = c.send(None, &grant("u/1")).await.unwrap();
    assert!(message(&r).contains("may lease only resources starting with"), "{r:?}");

    // A wrong token and no token: definite refusals (wire replies), not failovers.
    // (The last character changed: to '1' when it already is '0'.)
    let last = if alice.ends_with('0') { '1' } else { '0' };
    let wrong = format!("{}{last}", &alice[..alice.len() - 1]);
    let c = Cluster::with_tls(config().bearer_token(&wrong).unwrap(), &trust).unwrap();
    let r = c.send(None, &grant("t/2")).await.unwrap();
    assert!(message(&r).starts_with("forbidden"), "{r:?}");
    let c = Cluster::with_tls(config(), &trust).unwrap();
    let r = c.send(None, &grant("t/2")).await.unwrap();
    assert!(message(&r).starts_with("unauthorized"), "{r:?}");

    // A client certificate names its identity.
    let mtls = trust.clone().client_cert(pki.path("client.pem"), pki.path("client.key"));
    let c = Cluster::with_tls(config(), &mtls).unwrap();
    let r = c.send(None, &grant("any/1")).await.unwrap();
    assert!(matches!(r.body, leasehold::ReplyBody::Granted { .. }), "{r:?}");
    assert_eq!(r.landlord, LandlordId(1));

    // HTTP/2 (offered by ALPN; the client's `http2` option): the server takes it, and the same
    // token, prefix and certificate rules hold on one connection carrying many requests.
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut offer = trust.client_config().unwrap();
    offer.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let s = tokio_rustls::TlsConnector::from(std::sync::Arc::new(offer))
        .connect(name, tcp)
        .await
        .unwrap();
    assert_eq!(s.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    drop(s);
    let h2 = trust.clone().http2();
    let c = Cluster::with_tls(config().bearer_token(&alice).unwrap(), &h2).unwrap();
    let r = c.send(None, &grant("t/h2")).await.unwrap();
    let cookie = granted_cookie(&r);
    let renew = Request { id: 3, body: RequestBody::Renew { cookie, duration: 5_000 } };
    let many: Vec<_> = (0..64)
        .map(|_| {
            let (c, renew) = (c.clone(), renew.clone());
            tokio::spawn(async move { c.send(Some(r.landlord), &renew).await })
        })
        .collect();
    for t in many {
        let r = t.await.unwrap().unwrap();
        assert!(matches!(r.body, leasehold::ReplyBody::Renewed { .. }), "{r:?}");
    }
    let r = c.send(None, &grant("u/h2")).await.unwrap();
    assert!(message(&r).contains("may lease only resources starting with"), "{r:?}");
    let c = Cluster::with_tls(config().bearer_token(&wrong).unwrap(), &h2).unwrap();
    let r = c.send(None, &grant("t/h2b")).await.unwrap();
    assert!(message(&r).starts_with("forbidden"), "{r:?}");
    let c = Cluster::with_tls(config(), &mtls.clone().http2()).unwrap();
    let r = c.send(None, &grant("any/h2")).await.unwrap();
    assert!(matches!(r.body, leasehold::ReplyBody::Granted { .. }), "{r:?}");

    // A certificate from another CA, a server checked against another CA, plain HTTP: no
    // answer at all.
    let rogue = trust.clone().client_cert(pki.path("rogue.pem"), pki.path("rogue.key"));
    let c = Cluster::with_tls(config(), &rogue).unwrap();
    assert!(matches!(c.send(None, &grant("any/2")).await, Err(ClientError::Unavailable(_))));
    let wrong_ca = TlsOptions::new().ca_file(pki.path("otherca.pem"));
    let c = Cluster::with_tls(config().bearer_token(&alice).unwrap(), &wrong_ca).unwrap();
    assert!(matches!(c.send(None, &grant("t/3")).await, Err(ClientError::Unavailable(_))));
    let plain = ClusterConfig::new([format!("http://{}", server.addr)])
        .bearer_token(&alice)
        .unwrap()
        .attempt_timeout(Duration::from_secs(3));
    let c = Cluster::new(plain).unwrap();
    assert!(matches!(c.send(None, &grant("t/4")).await, Err(ClientError::Unavailable(_))));
    server.stop();
}

#[test]
fn bad_security_settings_are_refused_at_start() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().to_str().unwrap();
    for (args, want) in [
        (vec!["--tls-cert", "x.pem"], "give both --tls-cert and --tls-key"),
        (vec!["--header-timeout-ms", "5"], "--header-timeout-ms must be"),
        (vec!["--max-header-bytes", "100"], "--max-header-bytes must be"),
        (vec!["--tokens", "/nonexistent/tokens.toml"], "/nonexistent/tokens.toml"),
        (vec!["--store", "postgres://h/db?sslmode=verify-full"], "needs sslrootcert"),
    ] {
        let mut a = vec!["--listen", "127.0.0.1:0"];
        if !args.contains(&"--store") {
            a.extend(["--data", data]);
        }
        a.extend(args);
        let (code, _, err) = run(&a);
        assert_ne!(code, 0, "{a:?} started");
        assert!(err.contains(want), "{a:?}: {err}");
    }
}
