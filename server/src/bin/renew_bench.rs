//! `leasehold-renew-bench`: renewals per second through one server with N requests in flight,
//! over plain HTTP or over TLS with a token (`scripts/bench-security.sh` compares the two).
//!
//! Grants N leases (one per in-flight slot), renews each once (untimed: the connections are
//! opened, and TLS handshakes done, before the clock starts), then N tokio tasks each renew
//! theirs, one request at a time, for the run; prints one line
//! `inflight=N renewals=R seconds=S per_s=X`. Over https://, `--http2` offers HTTP/2 (one
//! connection carries every slot's requests).

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use hyper_util::client::legacy::connect::Connect;
use leasehold::{Encoding, Reply, ReplyBody, Request, RequestBody};
use leasehold_client::{Cluster, ClusterConfig, TlsOptions};

#[derive(Debug, Parser)]
#[command(name = "leasehold-renew-bench", about = "Renewals per second with N requests in flight")]
struct Opts {
    /// The server's URL (http:// or https://).
    #[arg(long)]
    server: String,
    /// Requests in flight.
    #[arg(long, default_value_t = 16)]
    inflight: usize,
    /// Seconds to measure.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// CA bundle for https://.
    #[arg(long)]
    ca: Option<String>,
    /// Over https://, offer HTTP/2 too (one connection carries every slot's requests) instead
    /// of HTTP/1.1 only (one connection per slot).
    #[arg(long)]
    http2: bool,
    /// Bearer token.
    #[arg(long)]
    token: Option<String>,
    /// Send this many grants instead (a flood), of `--lease-ms` each.
    #[arg(long)]
    flood: Option<u64>,
    /// Lease length asked for by the flood's grants.
    #[arg(long, default_value_t = 3_600_000)]
    lease_ms: i64,
}

async fn flood<C: Connect + Clone + Send + Sync + 'static>(
    c: Cluster<C>,
    n: usize,
    total: u64,
    lease_ms: i64,
) -> Result<String, String> {
    let next = Arc::new(AtomicU64::new(0));
    let counts = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
    let reason = Arc::new(std::sync::Mutex::new(String::new()));
    let start = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (c, next, counts, reason) =
                (c.clone(), next.clone(), counts.clone(), reason.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Relaxed);
                    if i >= total {
                        return;
                    }
                    let g = Request {
                        id: i,
                        body: RequestBody::Grant {
                            resource: format!("flood/{i}").into_bytes(),
                            duration: lease_ms,
                        },
                    };
                    let k = match c.send(None, &g).await {
                        Ok(r) => match r.body {
                            ReplyBody::Granted { .. } => 0,
                            ReplyBody::Error(e) => {
                                let mut w = reason.lock().unwrap_or_else(|p| p.into_inner());
                                if w.is_empty() {
                                    *w = e.message;
                                }
                                1
                            }
                            _ => 2,
                        },
                        Err(_) => 2,
                    };
                    counts[k].fetch_add(1, Relaxed);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.map_err(|e| e.to_string())?;
    }
    let s = start.elapsed().as_secs_f64();
    let why = reason.lock().unwrap_or_else(|p| p.into_inner()).clone();
    Ok(format!(
        "sent={total} granted={} denied={} other={} seconds={s:.1} rate={:.0}\nreason={why:?}",
        counts[0].load(Relaxed),
        counts[1].load(Relaxed),
        counts[2].load(Relaxed),
        total as f64 / s
    ))
}

async fn bench<C: Connect + Clone + Send + Sync + 'static>(
    c: Cluster<C>,
    n: usize,
    run: Duration,
) -> Result<(u64, f64), String> {
    let mut leases = Vec::new();
    for i in 0..n {
        let g = Request {
            id: i as u64,
            body: RequestBody::Grant {
                resource: format!("bench/{i}").into_bytes(),
                duration: 600_000,
            },
        };
        let r: Reply = c.send(None, &g).await.map_err(|e| e.to_string())?;
        match r.body {
            ReplyBody::Granted { cookie, .. } => leases.push((r.landlord, cookie)),
            other => return Err(format!("grant {i}: {other:?}")),
        }
    }
    // One untimed renewal per slot first, all at once: the client's pool then holds a
    // connection per slot (for https://, its TLS handshake done), so that the timed run
    // measures renewals over open connections, not connection set-up.
    let warm: Vec<_> = leases
        .iter()
        .map(|&(landlord, cookie)| {
            let c = c.clone();
            tokio::spawn(async move {
                let req = Request { id: 1, body: RequestBody::Renew { cookie, duration: 600_000 } };
                match c.send(Some(landlord), &req).await {
                    Ok(r) if matches!(r.body, ReplyBody::Renewed { .. }) => Ok(()),
                    Ok(r) => Err(format!("renewal: {:?}", r.body)),
                    Err(e) => Err(e.to_string()),
                }
            })
        })
        .collect();
    for t in warm {
        t.await.map_err(|e| e.to_string())??;
    }
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let end = start + run;
    let tasks: Vec<_> = leases
        .into_iter()
        .map(|(landlord, cookie)| {
            let (c, done) = (c.clone(), done.clone());
            tokio::spawn(async move {
                let req = Request { id: 1, body: RequestBody::Renew { cookie, duration: 600_000 } };
                while Instant::now() < end {
                    match c.send(Some(landlord), &req).await {
                        Ok(r) if matches!(r.body, ReplyBody::Renewed { .. }) => {
                            done.fetch_add(1, Relaxed);
                        }
                        Ok(r) => return Err(format!("renewal: {:?}", r.body)),
                        Err(e) => return Err(e.to_string()),
                    }
                }
                Ok(())
            })
        })
        .collect();
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    Ok((done.load(Relaxed), start.elapsed().as_secs_f64()))
}

fn line(inflight: usize, (n, s): (u64, f64)) -> String {
    format!("inflight={inflight} renewals={n} seconds={s:.2} per_s={:.0}", n as f64 / s)
}

fn main() -> ExitCode {
    let o = Opts::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let run = Duration::from_secs_f64(o.seconds);
    let out = rt.block_on(async {
        let mut config = ClusterConfig::new([o.server.clone()])
            .encoding(Encoding::Binary)
            .attempt_timeout(Duration::from_secs(5));
        if let Some(t) = &o.token {
            config = config.bearer_token(t).map_err(|e| e.to_string())?;
        }
        if o.server.starts_with("https://") {
            let mut tls = TlsOptions::new();
            if let Some(ca) = &o.ca {
                tls = tls.ca_file(ca);
            }
            if o.http2 {
                tls = tls.http2();
            }
            let c = Cluster::with_tls(config, &tls).map_err(|e| e.to_string())?;
            match o.flood {
                Some(total) => flood(c, o.inflight, total, o.lease_ms).await,
                None => bench(c, o.inflight, run).await.map(|r| line(o.inflight, r)),
            }
        } else {
            let c = Cluster::new(config).map_err(|e| e.to_string())?;
            match o.flood {
                Some(total) => flood(c, o.inflight, total, o.lease_ms).await,
                None => bench(c, o.inflight, run).await.map(|r| line(o.inflight, r)),
            }
        }
    });
    match out {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("leasehold-renew-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
