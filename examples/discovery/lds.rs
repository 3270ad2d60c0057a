//! The lookup discovery service as a process: the core's `DiscoveryService` on tokio, with
//!
//! - announcements heard over UDP (the multicast group on loopback, or its own UDP port),
//! - unicast discovery of locators over TCP,
//! - the discovery wire protocol over HTTP (`POST /discovery`, and `POST /lease` for renewing
//!   and cancelling registration leases), answered only once what the answer depends on is
//!   durable,
//! - events pushed to each registration's listener by HTTP POST (Jini's remote listener), with
//!   the core's retries; the listener's answer is an event reply message,
//! - its registrations kept durable in a data directory with `leasehold-store`.
//!
//! One task owns the service (an actor): it takes every command that arrived, runs them, then
//! commits once (one write and one fsync for the whole batch: group commit) before any reply,
//! event or probe leaves.

use std::path::PathBuf;
use std::time::Duration as StdDuration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::Router;
use ldrun::{
    choose_mode, encoding_of, multicast_receiver, now_ms, unicast_probe, Args, Http, Mode,
    LISTENER_HEADER,
};
use leasehold::discovery::wire::{
    DiscoveryReplyBody, DiscoveryRequest, DiscoveryRequestBody, EventReply,
};
use leasehold::discovery::{
    DeliveryFailure, DiscoveryConfig, DiscoveryService, RegistrationId, RemoteDiscoveryEvent,
    UnicastRequest, UnicastResponse,
};
use leasehold::{Encoding, LandlordId, LeaseError, PolicySpec};
use leasehold_store::Durable;
use tokio::sync::{mpsc, oneshot};

const USAGE: &str = "\
lds: the lookup discovery service over HTTP, with registrations kept in a data directory.

USAGE: lds --data DIR --announce-port PORT [OPTIONS]

OPTIONS:
  --http ADDR          where to serve HTTP (default 127.0.0.1:0; the URL is printed)
  --data DIR           the store (created if missing; its registrations survive restarts)
  --announce-port P    UDP port for announcements (on 127.0.0.1, and the group's if multicast)
  --announce MODE      auto | multicast | unicast (default auto: multicast if it works on lo)
  --id N               the service's id (default 1; the landlord id of its leases)
  --max-lease-ms MS    longest registration lease (default 60000)
";

enum Cmd {
    Discovery {
        body: Bytes,
        enc: Encoding,
        listener: Option<String>,
        reply: oneshot::Sender<Vec<u8>>,
    },
    Lease {
        body: Bytes,
        enc: Encoding,
        reply: oneshot::Sender<Vec<u8>>,
    },
    Datagram(Vec<u8>),
    Unicast {
        id: u64,
        result: Result<UnicastResponse, LeaseError>,
    },
    Delivered {
        event_id: u64,
        sequence: u64,
        failure: Option<DeliveryFailure>,
    },
    Status {
        reply: oneshot::Sender<String>,
    },
}

type Tx = mpsc::UnboundedSender<Cmd>;

fn main() {
    if let Err(e) = start() {
        eprintln!("lds: {e}");
        std::process::exit(2);
    }
}

fn config(id: u64, seed: [u8; 32], max_lease: i64) -> DiscoveryConfig {
    let mut c = DiscoveryConfig::new(LandlordId(id), seed);
    c.lease_policy = PolicySpec::Bounded { max: max_lease, default: max_lease / 2 };
    c.event_retry = vec![200, 500, 1000, 2000];
    c.delivery_timeout = 5_000;
    c.unicast_retry = vec![300, 600, 1200, 2000];
    c.unicast_timeout = 2_000;
    c
}

/// A seed from the OS's entropy (the core has none of its own).
fn seed() -> Result<[u8; 32], String> {
    use std::io::Read;
    let mut s = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut s))
        .map_err(|e| format!("no entropy: {e}"))?;
    Ok(s)
}

fn start() -> Result<(), String> {
    let args = Args::parse(USAGE)?;
    let data = PathBuf::from(args.get("data").ok_or("--data is required (see --help)")?);
    let aport = args.num("announce-port", 0)?;
    if !(1..=65535).contains(&aport) {
        return Err("--announce-port is required, 1 to 65535".into());
    }
    let id = args.num("id", 1)? as u64;
    let max_lease = args.num("max-lease-ms", 60_000)?;
    let (mode, why) = choose_mode(&args.or("announce", "auto"), aport as u16)?;
    let http = args.or("http", "127.0.0.1:0");
    let wanted = config(id, [0; 32], max_lease);
    let fresh = config(id, seed()?, max_lease);

    // The store: a new one starts from `fresh`, an existing one from its snapshot and log.
    // Time spent down does not count: opening resumes the service at the host's now.
    let mut durable =
        Durable::open(&data, Default::default(), now_ms(), |snapshot| match snapshot {
            Some(bytes) => DiscoveryService::from_snapshot_bytes(bytes),
            None => {
                let mut svc = DiscoveryService::new(fresh)?;
                svc.enable_journal();
                Ok(svc)
            }
        })
        .map_err(|e| format!("cannot open the store in {}: {e}", data.display()))?;
    let recovered = durable.recovered().clone();
    let svc = durable.state_mut();
    svc.reconfigure(wanted).map_err(|e| e.to_string())?;
    let registrations = svc.registrations().len();
    durable.commit().map_err(|e| e.to_string())?;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let (tx, rx) = mpsc::unbounded_channel();
        // Announcements: our own port on 127.0.0.1 always; the group too when multicast works.
        let unicast = std::net::UdpSocket::bind(("127.0.0.1", aport as u16))
            .map_err(|e| format!("cannot bind UDP 127.0.0.1:{aport}: {e}"))?;
        listen_udp(unicast, tx.clone())?;
        if let Mode::Multicast(p) = mode {
            let m = multicast_receiver(p).map_err(|e| format!("cannot join the group: {e}"))?;
            listen_udp(m, tx.clone())?;
        }
        let app = Router::new()
            .route("/discovery", post(discovery))
            .route("/lease", post(lease))
            .route("/status", get(status))
            .with_state(tx.clone());
        let listener = tokio::net::TcpListener::bind(&http)
            .await
            .map_err(|e| format!("cannot listen on {http}: {e}"))?;
        let url = format!("http://{}", listener.local_addr().map_err(|e| e.to_string())?);
        println!(
            "{}",
            serde_json::json!({
                "lds": url,
                "announcements": mode.describe(),
                "multicast_unavailable": why,
                "recovered": { "records": recovered.replayed, "registrations": registrations,
                               "torn_tail": recovered.torn.map(|t| t.2) },
            })
        );
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                eprintln!("lds: http: {e}");
            }
        });
        // The actor runs on a worker thread (its commits block in place).
        tokio::spawn(actor(durable, rx, tx)).await.map_err(|e| e.to_string())?;
        Ok::<(), String>(())
    })
}

fn listen_udp(socket: std::net::UdpSocket, tx: Tx) -> Result<(), String> {
    socket.set_nonblocking(true).map_err(|e| e.to_string())?;
    let socket = tokio::net::UdpSocket::from_std(socket).map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let mut buf = vec![0u8; 2048];
        while let Ok((n, _)) = socket.recv_from(&mut buf).await {
            if tx.send(Cmd::Datagram(buf[..n].to_vec())).is_err() {
                break;
            }
        }
    });
    Ok(())
}

async fn ask<T>(tx: &Tx, make: impl FnOnce(oneshot::Sender<T>) -> Cmd) -> Result<T, StatusCode> {
    let (reply, rx) = oneshot::channel();
    tx.send(make(reply)).map_err(|_| StatusCode::SERVICE_UNAVAILABLE)?;
    rx.await.map_err(|_| StatusCode::SERVICE_UNAVAILABLE)
}

fn enc(headers: &HeaderMap) -> Encoding {
    encoding_of(headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or(""))
}

fn answer(e: Encoding, body: Vec<u8>) -> ([(&'static str, &'static str); 1], Vec<u8>) {
    ([("content-type", ldrun::content_type(e))], body)
}

async fn discovery(
    State(tx): State<Tx>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<([(&'static str, &'static str); 1], Vec<u8>), StatusCode> {
    let e = enc(&headers);
    let listener = headers.get(LISTENER_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    let out = ask(&tx, |reply| Cmd::Discovery { body, enc: e, listener, reply }).await?;
    Ok(answer(e, out))
}

async fn lease(
    State(tx): State<Tx>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<([(&'static str, &'static str); 1], Vec<u8>), StatusCode> {
    let e = enc(&headers);
    let out = ask(&tx, |reply| Cmd::Lease { body, enc: e, reply }).await?;
    Ok(answer(e, out))
}

async fn status(State(tx): State<Tx>) -> Result<String, StatusCode> {
    ask(&tx, |reply| Cmd::Status { reply }).await
}

/// What leaves once the batch is durable.
enum Out {
    Reply(oneshot::Sender<Vec<u8>>, Vec<u8>),
    Status(oneshot::Sender<String>, String),
    Event(RemoteDiscoveryEvent, Vec<u8>),
    Probe(UnicastRequest),
}

async fn actor(
    mut durable: Durable<DiscoveryService>,
    mut rx: mpsc::UnboundedReceiver<Cmd>,
    tx: Tx,
) {
    let http = Http::new();
    let mut out = Vec::new();
    loop {
        let wait = durable.state().poll_timeout().map(|t| (t - now_ms()).clamp(0, 60_000));
        let sleep = tokio::time::sleep(StdDuration::from_millis(wait.unwrap_or(60_000) as u64));
        tokio::select! {
            c = rx.recv() => match c {
                Some(c) => handle(durable.state_mut(), c, &mut out),
                None => return,
            },
            _ = sleep => {}
        }
        while let Ok(c) = rx.try_recv() {
            handle(durable.state_mut(), c, &mut out);
        }
        let now = now_ms();
        let svc = durable.state_mut();
        svc.handle_timeout(now);
        while let Some(p) = svc.poll_transmit(now) {
            out.push(Out::Probe(p));
        }
        while let Some(e) = svc.poll_event(now) {
            let listener = svc.listener(RegistrationId(e.source.object)).unwrap_or(&[]).to_vec();
            out.push(Out::Event(e, listener));
        }
        // Group commit: one write and one fsync for everything above, before anything leaves.
        if let Err(e) = tokio::task::block_in_place(|| durable.commit()) {
            eprintln!("lds: the store cannot write ({e}); stopping without acknowledging");
            std::process::exit(1);
        }
        for o in out.drain(..) {
            match o {
                Out::Reply(r, bytes) => {
                    let _ = r.send(bytes);
                }
                Out::Status(r, s) => {
                    let _ = r.send(s);
                }
                Out::Event(e, listener) => {
                    tokio::spawn(deliver(http.clone(), e, listener, tx.clone()));
                }
                Out::Probe(p) => {
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        let result = match unicast_probe(&p.locator, StdDuration::from_secs(1))
                            .await
                        {
                            Ok(a) => Ok(UnicastResponse::from(&a)),
                            Err(e) => Err(LeaseError::Indefinite(format!("{}: {e}", p.locator))),
                        };
                        let _ = tx.send(Cmd::Unicast { id: p.id, result });
                    });
                }
            }
        }
    }
}

fn handle(svc: &mut DiscoveryService, c: Cmd, out: &mut Vec<Out>) {
    let now = now_ms();
    match c {
        Cmd::Discovery { body, enc, listener, reply } => {
            let limits = svc.config().landlord.limits;
            let bytes = match DiscoveryRequest::decode(&body, enc, &limits) {
                Ok(req) => {
                    let r = svc.handle_discovery(&req, now);
                    if let (
                        DiscoveryRequestBody::Register { .. },
                        DiscoveryReplyBody::Registered { registration, .. },
                    ) = (&req.body, &r.body)
                    {
                        // The listener lives and dies with the registration, durably: its
                        // encoding (that of the register request) and URL.
                        let url = listener.unwrap_or_default();
                        let tag = if enc == Encoding::Json { "json" } else { "binary" };
                        let value = format!("{tag} {url}").into_bytes();
                        let _ = svc.set_listener(RegistrationId(*registration), value, now);
                    }
                    r.encode(enc)
                }
                Err(_) => svc.handle_discovery_bytes(&body, enc, now),
            };
            out.push(Out::Reply(reply, bytes));
        }
        Cmd::Lease { body, enc, reply } => {
            out.push(Out::Reply(reply, svc.handle_bytes(&body, enc, now)));
        }
        Cmd::Datagram(bytes) => {
            if let Err(e) = svc.handle_datagram(&bytes, now) {
                eprintln!("lds: announcement refused: {e}");
            }
        }
        Cmd::Unicast { id, result } => {
            svc.handle_unicast(id, result, now);
        }
        Cmd::Delivered { event_id, sequence, failure } => match failure {
            None => {
                svc.delivered(event_id, sequence, now);
            }
            Some(f) => {
                svc.delivery_failed(event_id, sequence, f, now);
            }
        },
        Cmd::Status { reply } => {
            svc.handle_timeout(now);
            let regs: Vec<_> = svc.registrations().iter().map(|r| r.0).collect();
            let registrars: Vec<_> = svc.discovered().iter().map(|r| r.id.to_string()).collect();
            let s = serde_json::json!({
                "registrations": regs,
                "discovered": registrars,
                "journal_seq": svc.journal_seq(),
            });
            out.push(Out::Status(reply, s.to_string()));
        }
    }
}

/// Pushes one event to its listener; the listener's event reply (or the lack of one) goes back
/// to the service, which retries indefinite failures.
async fn deliver(http: Http, e: RemoteDiscoveryEvent, listener: Vec<u8>, tx: Tx) {
    let listener = String::from_utf8_lossy(&listener).to_string();
    let failure = match listener.split_once(' ') {
        Some((tag, url)) if !url.is_empty() => {
            let enc = if tag == "json" { Encoding::Json } else { Encoding::Binary };
            match http.post(url, enc, e.encode(enc), &[], StdDuration::from_secs(2)).await {
                Ok((200, body)) => match EventReply::decode(&body, enc, &Default::default()) {
                    Ok(r) if r.event_id == e.event_id && r.sequence == e.sequence => {
                        r.body.failure()
                    }
                    Ok(r) => Some(DeliveryFailure::Indefinite(format!(
                        "answer for event {} #{}",
                        r.event_id, r.sequence
                    ))),
                    Err(err) => Some(DeliveryFailure::Indefinite(format!("bad answer: {err}"))),
                },
                Ok((status, _)) => Some(DeliveryFailure::Indefinite(format!("HTTP {status}"))),
                Err(err) => Some(DeliveryFailure::Indefinite(err.to_string())),
            }
        }
        _ => Some(DeliveryFailure::Indefinite("no listener".into())),
    };
    let _ = tx.send(Cmd::Delivered { event_id: e.event_id, sequence: e.sequence, failure });
}
