//! `e2e-server`: the Rust landlord served over HTTP/1.1 (hyper on tokio), in memory, the way a
//! Rust user would host it next to their own service: one `Landlord` behind a mutex, answering
//! `POST <any path>` with `Landlord::handle_bytes` (binary, or JSON for `application/json`), and
//! a task that follows `poll_timeout` to expire leases. Prints `listening <port>` once bound.
//!
//! Usage: `e2e-server [PORT] [WORKERS]` (default: any free port, 2 worker threads).

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use leasehold::policy::Bounded;
use leasehold::{Encoding, Landlord, LandlordConfig, LandlordId, Millis};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// Lease length the bench asks for (and the most the landlord grants): 10 min.
const LEASE: i64 = 600_000;

struct Host {
    landlord: Mutex<Landlord<Vec<u8>>>,
    start: Instant,
    wake: Notify,
}

impl Host {
    fn now(&self) -> Millis {
        self.start.elapsed().as_millis() as Millis
    }
}

async fn answer(
    host: Arc<Host>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let json = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().to_ascii_lowercase().starts_with("application/json"));
    let enc = if json { Encoding::Json } else { Encoding::Binary };
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Ok(Response::builder().status(400).body(Full::default()).unwrap()),
    };
    let reply = {
        let now = host.now();
        let mut ll = host.landlord.lock().unwrap();
        ll.handle_bytes(&body, enc, now)
    };
    host.wake.notify_one();
    let mut r = Response::new(Full::new(Bytes::from(reply)));
    let ct = if json { "application/json" } else { "application/octet-stream" };
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(ct));
    Ok(r)
}

/// Expires leases on time: sleeps until `poll_timeout` (or a request changes the landlord).
async fn expiry(host: Arc<Host>) {
    loop {
        let next = {
            let now = host.now();
            let mut ll = host.landlord.lock().unwrap();
            ll.handle_timeout(now);
            while ll.poll_expired().is_some() {}
            ll.poll_timeout()
        };
        match next {
            Some(t) => {
                let wait = (t - host.now()).max(0) as u64;
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_millis(wait)) => {}
                    _ = host.wake.notified() => {}
                }
            }
            None => host.wake.notified().await,
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let port: u16 = args.first().map_or(0, |p| p.parse().expect("PORT"));
    let workers: usize = args.get(1).map_or(2, |w| w.parse().expect("WORKERS"));
    let mut seed = [0u8; 32];
    // The core has no entropy of its own: take some from the OS.
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").unwrap(), &mut seed)
        .unwrap();
    let landlord = Landlord::new(
        LandlordConfig::new(LandlordId(1), seed),
        Bounded::new(LEASE, LEASE).expect("policy"),
    );
    let host = Arc::new(Host {
        landlord: Mutex::new(landlord),
        start: Instant::now(),
        wake: Notify::new(),
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
        println!("listening {}", listener.local_addr().unwrap().port());
        tokio::spawn(expiry(host.clone()));
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let _ = tcp.set_nodelay(true);
            let host = host.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| answer(host.clone(), req));
                let _ = http1::Builder::new().serve_connection(TokioIo::new(tcp), svc).await;
            });
        }
    });
}
