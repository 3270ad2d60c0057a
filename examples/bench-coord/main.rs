//! `leasehold-bench-coord`: the load of `scripts/bench-coord.sh` (in the examples crate, so
//! that nothing shipped depends on it). Measures, against one
//! `leasehold-server` or one etcd (its v3 HTTP/JSON gateway, the same requests its
//! `concurrency.Mutex` and `Election` make server-side: `/v3/lock/lock`, `/v3/lock/unlock`,
//! `/v3/election/campaign`, `/v3/election/resign`):
//!
//! - `lock`: N contenders acquire and release one lock as fast as they can for a while; prints
//!   cycles per second and the latency of one acquire + release (waiting included);
//! - `failover`: a leader and a waiting candidate; the time from the leader's resignation to the
//!   next leader (handoff), and from a leader that dies (its lease is never renewed) to the next
//!   leader, less the lease's TTL (detection);
//! - `watch` (leasehold only): a watcher long-polls a prefix while writers grant and cancel
//!   leases; prints events per second and the delivery latency (from a cancel's acknowledgment to
//!   the watcher holding its event).
//!
//! Each contender has its own keep-alive connection. Output: one JSON object per run.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use leasehold::coord::wire::{CoordReply, CoordReplyBody, CoordRequest, CoordRequestBody};
use leasehold::{Cookie, Encoding, LandlordId, Limits, Reply, ReplyBody, Request, RequestBody};
use leasehold_examples::http::Client as Cluster;
use serde_json::{json, Value};

#[derive(Debug, Parser)]
#[command(
    name = "leasehold-bench-coord",
    about = "Lock, election and watch load for bench-coord.sh"
)]
struct Opts {
    /// lock, failover or watch.
    what: String,
    /// leasehold or etcd.
    #[arg(long, default_value = "leasehold")]
    system: String,
    /// The server's URL.
    #[arg(long)]
    url: String,
    /// Contenders (lock).
    #[arg(long, default_value_t = 1)]
    contenders: usize,
    /// How long to run, s (lock, watch).
    #[arg(long, default_value_t = 5)]
    secs: u64,
    /// Rounds (failover).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Lease TTL, s (failover; etcd's smallest useful TTL is a few seconds).
    #[arg(long, default_value_t = 5)]
    ttl: i64,
    /// Writer threads (watch).
    #[arg(long, default_value_t = 4)]
    writers: usize,
}

fn b64(b: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                s.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

fn client(url: &str) -> Cluster {
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let addr = std::net::ToSocketAddrs::to_socket_addrs(addr)
        .ok()
        .and_then(|mut a| a.next())
        .expect("an http://host:port URL");
    Cluster::new(addr, Duration::from_secs(60))
}

/// One JSON call to etcd's gateway.
fn etcd(c: &mut Cluster, path: &str, body: Value) -> Value {
    let (_, b) =
        c.post_to(path, body.to_string().as_bytes(), Encoding::Json).expect("etcd answers");
    serde_json::from_slice(&b).expect("JSON from etcd")
}

fn etcd_lease(c: &mut Cluster, ttl: i64) -> String {
    let r = etcd(c, "/v3/lease/grant", json!({"TTL": ttl}));
    r["ID"].as_str().map(str::to_string).unwrap_or_else(|| r["ID"].to_string())
}

/// `path`, with `?landlord=` when one is named.
fn at(path: &str, landlord: Option<LandlordId>) -> String {
    match landlord {
        Some(l) => format!("{path}?landlord={l}"),
        None => path.to_string(),
    }
}

/// A coordination request; the wire reply comes back under any status (a denial is a 409).
fn coord(
    c: &mut Cluster,
    landlord: Option<u64>,
    body: CoordRequestBody,
    _wait: Duration,
) -> CoordReply {
    let req = CoordRequest { id: 1, body }.encode(Encoding::Binary);
    let (_, b) = c
        .post_to(&at("/coord", landlord.map(LandlordId)), &req, Encoding::Binary)
        .expect("leasehold answers");
    CoordReply::decode(&b, Encoding::Binary, &Limits::default()).expect("a reply")
}

fn lease(c: &mut Cluster, landlord: LandlordId, body: RequestBody) -> Reply {
    let req = Request { id: 2, body }.encode(Encoding::Binary);
    let (_, b) = c
        .post_to(&at("/lease", Some(landlord)), &req, Encoding::Binary)
        .expect("leasehold answers");
    Reply::decode(&b, Encoding::Binary, &Limits::default()).expect("a reply")
}

/// A lock held, as each system hands it out.
enum Held {
    Leasehold(LandlordId, Cookie),
    Etcd(String),
}

struct Contender {
    c: Cluster,
    system: String,
    etcd_lease: String,
}

impl Contender {
    fn new(o: &Opts) -> Contender {
        let mut c = client(&o.url);
        let etcd_lease = if o.system == "etcd" { etcd_lease(&mut c, 60) } else { String::new() };
        Contender { c, system: o.system.clone(), etcd_lease }
    }

    fn acquire(&mut self, name: &[u8], ttl_ms: i64, label: &[u8]) -> Held {
        if self.system == "etcd" {
            let r = etcd(
                &mut self.c,
                "/v3/lock/lock",
                json!({"name": b64(name), "lease": self.etcd_lease}),
            );
            Held::Etcd(r["key"].as_str().expect("a lock key").to_string())
        } else {
            loop {
                let body = CoordRequestBody::Acquire {
                    resource: name.to_vec(),
                    duration: ttl_ms,
                    wait: 30_000,
                    holder: label.to_vec(),
                };
                let r = coord(&mut self.c, None, body, Duration::from_secs(30));
                if let CoordReplyBody::Acquired { cookie, .. } = r.body {
                    return Held::Leasehold(r.landlord, cookie);
                }
            }
        }
    }

    fn release(&mut self, h: Held) {
        match h {
            Held::Etcd(key) => {
                etcd(&mut self.c, "/v3/lock/unlock", json!({"key": key}));
            }
            Held::Leasehold(l, cookie) => {
                let r = lease(&mut self.c, l, RequestBody::Cancel { cookie });
                assert_eq!(r.body, ReplyBody::Cancelled);
            }
        }
    }
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn lock(o: &Opts) -> Value {
    let lat = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now() + Duration::from_millis(500);
    let end = start + Duration::from_secs(o.secs);
    let threads: Vec<_> = (0..o.contenders)
        .map(|_| {
            let lat = lat.clone();
            let mut c = Contender::new(o);
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                while Instant::now() < start {
                    std::thread::sleep(Duration::from_millis(1));
                }
                while Instant::now() < end {
                    let t = Instant::now();
                    let h = c.acquire(b"bench/lock", 10_000, b"");
                    c.release(h);
                    mine.push(t.elapsed().as_secs_f64() * 1e3);
                }
                lat.lock().unwrap().extend(mine);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut v = std::mem::take(&mut *lat.lock().unwrap());
    let elapsed = o.secs as f64;
    json!({"system": o.system, "what": "lock", "contenders": o.contenders, "cycles": v.len(),
           "per_sec": v.len() as f64 / elapsed, "p50_ms": percentile(&mut v, 0.5), "p99_ms": percentile(&mut v, 0.99)})
}

fn failover(o: &Opts) -> Value {
    let ttl_ms = o.ttl * 1000;
    let (mut handoff, mut detect) = (Vec::new(), Vec::new());
    for round in 0..o.rounds {
        let name = format!("bench/elect/{round}");
        for dies in [false, true] {
            // The leader.
            let mut a = client(&o.url);
            let (leader_at, resign): (Instant, Box<dyn FnOnce()>) = if o.system == "etcd" {
                let l = etcd_lease(&mut a, o.ttl);
                let r = etcd(
                    &mut a,
                    "/v3/election/campaign",
                    json!({"name": b64(name.as_bytes()), "lease": l, "value": b64(b"a")}),
                );
                let t = Instant::now();
                let leader = r["leader"].clone();
                (
                    t,
                    Box::new(move || {
                        etcd(&mut a, "/v3/election/resign", json!({"leader": leader}));
                    }),
                )
            } else {
                let r = coord(
                    &mut a,
                    None,
                    CoordRequestBody::Acquire {
                        resource: name.clone().into_bytes(),
                        duration: ttl_ms,
                        wait: 0,
                        holder: b"a".to_vec(),
                    },
                    Duration::ZERO,
                );
                let t = Instant::now();
                let CoordReplyBody::Acquired { cookie, .. } = r.body else { panic!("{r:?}") };
                let l = r.landlord;
                (
                    t,
                    Box::new(move || {
                        lease(&mut a, l, RequestBody::Cancel { cookie });
                    }),
                )
            };
            // The candidate waits in line.
            let ready = Arc::new(AtomicBool::new(false));
            let cand = {
                let (url, system, ready, name) =
                    (o.url.clone(), o.system.clone(), ready.clone(), name.clone());
                let ttl = o.ttl;
                std::thread::spawn(move || {
                    let mut b = client(&url);
                    if system == "etcd" {
                        let l = etcd_lease(&mut b, ttl.max(10) * 2);
                        ready.store(true, Relaxed);
                        let r = etcd(
                            &mut b,
                            "/v3/election/campaign",
                            json!({"name": b64(name.as_bytes()), "lease": l, "value": b64(b"b")}),
                        );
                        let t = Instant::now();
                        etcd(&mut b, "/v3/election/resign", json!({"leader": r["leader"].clone()}));
                        t
                    } else {
                        ready.store(true, Relaxed);
                        let r = coord(
                            &mut b,
                            None,
                            CoordRequestBody::Acquire {
                                resource: name.into_bytes(),
                                duration: 60_000,
                                wait: 60_000,
                                holder: b"b".to_vec(),
                            },
                            Duration::from_secs(60),
                        );
                        let t = Instant::now();
                        let CoordReplyBody::Acquired { cookie, .. } = r.body else {
                            panic!("{r:?}")
                        };
                        lease(&mut b, r.landlord, RequestBody::Cancel { cookie });
                        t
                    }
                })
            };
            while !ready.load(Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(200));
            if dies {
                // The leader never renews: it is gone when its TTL runs out.
                drop(resign);
                let t = cand.join().unwrap();
                detect.push((t - leader_at).as_secs_f64() * 1e3 - ttl_ms as f64);
            } else {
                let t0 = Instant::now();
                resign();
                let t = cand.join().unwrap();
                handoff.push((t - t0).as_secs_f64() * 1e3);
            }
        }
    }
    json!({"system": o.system, "what": "failover", "ttl_s": o.ttl, "rounds": o.rounds,
           "handoff_p50_ms": percentile(&mut handoff, 0.5), "handoff_max_ms": percentile(&mut handoff, 1.0),
           "detect_p50_ms": percentile(&mut detect, 0.5), "detect_max_ms": percentile(&mut detect, 1.0)})
}

fn watch(o: &Opts) -> Value {
    // Cancel acknowledgments by token, to time each event's delivery.
    let acked: Arc<Mutex<std::collections::HashMap<u64, Instant>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let mut c = client(&o.url);
    let w = coord(
        &mut c,
        None,
        CoordRequestBody::Watch {
            resource: b"bench/w/".to_vec(),
            prefix: true,
            renewals: false,
            duration: 600_000,
            handback: vec![],
        },
        Duration::ZERO,
    );
    let landlord = w.landlord.0;
    let CoordReplyBody::Watching { cookie, .. } = w.body else { panic!("{w:?}") };
    let writers: Vec<_> = (0..o.writers)
        .map(|k| {
            let (url, acked, stop, writes) =
                (o.url.clone(), acked.clone(), stop.clone(), writes.clone());
            std::thread::spawn(move || {
                let mut c = client(&url);
                let mut i = 0u64;
                while !stop.load(Relaxed) {
                    i += 1;
                    let r = coord(
                        &mut c,
                        None,
                        CoordRequestBody::Acquire {
                            resource: format!("bench/w/{k}/{}", i % 64).into_bytes(),
                            duration: 60_000,
                            wait: 0,
                            holder: vec![],
                        },
                        Duration::ZERO,
                    );
                    let CoordReplyBody::Acquired { cookie, token, .. } = r.body else { continue };
                    lease(&mut c, r.landlord, RequestBody::Cancel { cookie });
                    acked.lock().unwrap().insert(token, Instant::now());
                    writes.fetch_add(1, Relaxed);
                }
            })
        })
        .collect();
    let start = Instant::now();
    let end = start + Duration::from_secs(o.secs);
    let (mut since, mut events, mut lat) = (0u64, 0u64, Vec::new());
    let mut late = Vec::new();
    while Instant::now() < end {
        let r = coord(
            &mut c,
            Some(landlord),
            CoordRequestBody::Poll { cookie, since, wait: 1_000, max: 0 },
            Duration::from_secs(1),
        );
        let now = Instant::now();
        let CoordReplyBody::Events(e) = r.body else { panic!("{r:?}") };
        assert!(e.missed.is_none(), "the bench watcher fell behind the history");
        for ev in e.events {
            since = ev.sequence;
            events += 1;
            if ev.kind.is_end() {
                late.push((ev.token, now));
            }
        }
        let a = acked.lock().unwrap();
        late.retain(|(t, seen)| match a.get(t) {
            Some(at) => {
                lat.push(seen.saturating_duration_since(*at).as_secs_f64() * 1e3);
                false
            }
            None => true,
        });
    }
    let elapsed = start.elapsed().as_secs_f64();
    stop.store(true, Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    json!({"system": "leasehold", "what": "watch", "writers": o.writers, "events": events,
           "events_per_sec": events as f64 / elapsed, "grant_cancel_per_sec": writes.load(Relaxed) as f64 / elapsed,
           "delivery_p50_ms": percentile(&mut lat, 0.5), "delivery_p99_ms": percentile(&mut lat, 0.99)})
}

fn main() {
    let o = Opts::parse();
    let v = match o.what.as_str() {
        "lock" => lock(&o),
        "failover" => failover(&o),
        "watch" => watch(&o),
        w => panic!("lock, failover or watch, not {w}"),
    };
    println!("{v}");
}
