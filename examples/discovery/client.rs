//! A client of the lookup discovery service: registers (groups, locators, its listener's URL),
//! receives discovery events on its own small HTTP listener and answers each with an event
//! reply, renews its registration lease, and cancels it when told to quit.
//!
//! The contract every client of the discovery run follows (Rust here; Python and Node clients
//! follow the same one): the flags below; one JSON line on stdout per thing that happens
//! (`listening`, `registered`, `event`, `registrars`, `renew_failed`, `lost`, `cancelled`);
//! commands on stdin, one per line (`registrars`: ask the service for the registration's
//! registrars; `quit`: cancel the registration and exit).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use ldrun::{content_type, encoding_of, Args, Http, LISTENER_HEADER};
use leasehold::discovery::wire::{
    DiscoveryReply, DiscoveryReplyBody, DiscoveryRequest, DiscoveryRequestBody, EventReply,
    EventReplyBody,
};
use leasehold::discovery::{Groups, Locator, RemoteDiscoveryEvent};
use leasehold::wire::{Reply, ReplyBody, Request, RequestBody};
use leasehold::{Cookie, Encoding, ErrorCode, LandlordId, Limits};
use serde_json::json;
use tokio::io::AsyncBufReadExt;

const USAGE: &str = "\
ld-client: registers with a lookup discovery service and prints what it hears.

USAGE: ld-client --lds URL --name NAME [OPTIONS]

OPTIONS:
  --lds URL          the service: a leasehold-server run with --discovery-port
                     (http://127.0.0.1:PORT)
  --name NAME        printed on every line; also the registration's handback
  --groups G         all | none | a comma-separated list (default none)
  --locators L       comma-separated host:port locators (default none)
  --lease-ms MS      registration lease asked for (default 10000); renewed every third of it
  --encoding E       json | binary (default json)

stdin: `registrars` (print the registration's registrars), `quit` (cancel and exit).
";

fn say(v: serde_json::Value) {
    println!("{v}");
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    if let Err(e) = rt.block_on(run()) {
        eprintln!("ld-client: {e}");
        std::process::exit(2);
    }
}

struct Client {
    http: Http,
    lds: String,
    enc: Encoding,
    name: String,
    /// The landlord of the registration lease, once registered: named in every later request
    /// (`?landlord=<16 hex digits>`), so that a leasehold-server with landlord shards beside
    /// its discovery service sends them to the service.
    landlord: std::sync::OnceLock<LandlordId>,
}

impl Client {
    fn url(&self, path: &str) -> String {
        match self.landlord.get() {
            Some(l) => format!("{}{path}?landlord={l}", self.lds),
            None => format!("{}{path}", self.lds),
        }
    }
}

impl Client {
    async fn discovery(
        &self,
        body: DiscoveryRequestBody,
        headers: &[(&str, &str)],
    ) -> Result<DiscoveryReplyBody, String> {
        let req = DiscoveryRequest { id: 1, body };
        let url = self.url("/discovery");
        let (status, bytes) = self
            .http
            .post(&url, self.enc, req.encode(self.enc), headers, StdDuration::from_secs(5))
            .await
            .map_err(|e| e.to_string())?;
        // An error reply comes with a status that says what it is (404, 409, ...) and the
        // reply in the body; a status without a reply (503) is a failure to retry.
        let reply = DiscoveryReply::decode(&bytes, self.enc, &Limits::default())
            .map_err(|e| format!("HTTP {status}: {e}"))?;
        if let DiscoveryReplyBody::Registered { .. } = reply.body {
            let _ = self.landlord.set(reply.landlord);
        }
        Ok(reply.body)
    }

    async fn lease(&self, body: RequestBody) -> Result<ReplyBody, String> {
        let url = self.url("/lease");
        let req = Request { id: 1, body };
        let (status, bytes) = self
            .http
            .post(&url, self.enc, req.encode(self.enc), &[], StdDuration::from_secs(5))
            .await
            .map_err(|e| e.to_string())?;
        Ok(Reply::decode(&bytes, self.enc, &Limits::default())
            .map_err(|e| format!("HTTP {status}: {e}"))?
            .body)
    }
}

async fn run() -> Result<(), String> {
    let args = Args::parse(USAGE)?;
    let lds =
        args.get("lds").ok_or("--lds is required (see --help)")?.trim_end_matches('/').to_string();
    let name = args.get("name").ok_or("--name is required (see --help)")?.to_string();
    let groups = match args.or("groups", "none").as_str() {
        "all" => Groups::All,
        "none" | "" => Groups::none(),
        list => Groups::of(list.split(',')),
    };
    let locators: Vec<Locator> = match args.get("locators") {
        None | Some("") => Vec::new(),
        Some(l) => l
            .split(',')
            .map(|s| s.parse().map_err(|e| format!("{e}")))
            .collect::<Result<_, String>>()?,
    };
    let lease_ms = args.num("lease-ms", 10_000)?;
    let enc = match args.or("encoding", "json").as_str() {
        "json" => Encoding::Json,
        "binary" => Encoding::Binary,
        e => return Err(format!("--encoding must be json or binary, got {e:?}")),
    };
    let client = Arc::new(Client {
        http: Http::new(),
        lds,
        enc,
        name: name.clone(),
        landlord: Default::default(),
    });

    // The listener: events arrive as POSTs; each is answered with an event reply.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?;
    let addr: SocketAddr = listener.local_addr().map_err(|e| e.to_string())?;
    let url = format!("http://{addr}/events");
    let app = Router::new().route("/events", post(event)).with_state(name.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    say(json!({"type": "listening", "name": name, "url": url}));

    let body = DiscoveryRequestBody::Register {
        groups,
        locators,
        handback: name.as_bytes().to_vec(),
        duration: lease_ms,
    };
    let cookie: Cookie = match client.discovery(body, &[(LISTENER_HEADER, &url)]).await? {
        DiscoveryReplyBody::Registered { registration, cookie, duration, event_id, sequence } => {
            say(json!({"type": "registered", "name": name, "registration": registration,
                "cookie": cookie.to_string(), "event_id": event_id, "sequence": sequence,
                "duration": duration}));
            cookie
        }
        other => return Err(format!("register answered {other:?}")),
    };

    // Renewals: every third of the lease; a failure is retried soon after.
    let renewer = client.clone();
    tokio::spawn(async move {
        let mut wait = lease_ms / 3;
        loop {
            tokio::time::sleep(StdDuration::from_millis(wait as u64)).await;
            match renewer.lease(RequestBody::Renew { cookie, duration: lease_ms }).await {
                Ok(ReplyBody::Renewed { .. }) => wait = lease_ms / 3,
                Ok(ReplyBody::Error(e)) if e.code == ErrorCode::UnknownLease as i32 => {
                    say(json!({"type": "lost", "name": renewer.name, "error": e.message}));
                    return;
                }
                Ok(other) => {
                    say(
                        json!({"type": "renew_failed", "name": renewer.name, "error": format!("{other:?}")}),
                    );
                    wait = 250;
                }
                Err(e) => {
                    say(json!({"type": "renew_failed", "name": renewer.name, "error": e}));
                    wait = 250;
                }
            }
        }
    });

    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        match line.trim() {
            "registrars" => {
                match client.discovery(DiscoveryRequestBody::GetRegistrars { cookie }, &[]).await {
                    Ok(DiscoveryReplyBody::Registrars { registrars }) => {
                        let ids: Vec<String> =
                            registrars.iter().map(|r| r.id.to_string()).collect();
                        say(json!({"type": "registrars", "name": name, "registrars": ids}));
                    }
                    other => say(
                        json!({"type": "registrars", "name": name, "error": format!("{other:?}")}),
                    ),
                }
            }
            "quit" => break,
            "" => {}
            other => eprintln!("ld-client: unknown command {other:?}"),
        }
    }
    let r = client.lease(RequestBody::Cancel { cookie }).await;
    say(json!({"type": "cancelled", "name": name, "ok": matches!(r, Ok(ReplyBody::Cancelled))}));
    Ok(())
}

async fn event(
    State(name): State<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<([(&'static str, &'static str); 1], Vec<u8>), StatusCode> {
    let enc = encoding_of(headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or(""));
    let e = RemoteDiscoveryEvent::decode(&body, enc, &Limits::default())
        .map_err(|_| StatusCode::BAD_REQUEST)?;
    let ids: Vec<String> = e.registrars().iter().map(|r| r.id.to_string()).collect();
    say(json!({"type": "event", "name": name, "event_id": e.event_id, "sequence": e.sequence,
        "discarded": e.is_discarded(), "registrars": ids,
        "handback": String::from_utf8_lossy(&e.handback)}));
    let reply =
        EventReply { event_id: e.event_id, sequence: e.sequence, body: EventReplyBody::Received };
    Ok(([("content-type", content_type(enc))], reply.encode(enc)))
}
