//! `peers-load`: one load generator for leasehold-server, Redis and etcd (scripts/bench-peers.sh).
//!
//! Closed loop: `--inflight` tasks each send one request (or one batch), wait for its reply,
//! check it, and send the next. Every reply is checked; a wrong one ends the run with an error.
//!
//! - leasehold: `leasehold-client`'s cluster transport (HTTP/1.1 keep-alive, binary encoding):
//!   grant, renew, `renew_all` of 100 leases of one landlord.
//! - Redis: the lock user's pattern. A grant is `SET key token NX PX ttl`; a renewal is one Lua
//!   script (EVALSHA, loaded once; NOSCRIPT reloads it) that extends the key only if it still
//!   holds the caller's token; a batch of 100 is 100 EVALSHAs in one pipeline (one write, 100
//!   replies read back). One connection per task, replies parsed as RESP.
//! - etcd: its gRPC API through the `etcd-client` crate (one HTTP/2 channel, as etcd's own
//!   client keeps): LeaseGrant; a renewal is one LeaseKeepAlive request and its response on the
//!   task's keep-alive stream (opened once; etcd's Go client also sends every lease's
//!   keep-alives on one stream); a batch is 100 keep-alives (one per lease) sent on that stream,
//!   then their 100 responses.
//!
//! Modes: `cell` (prints one JSON line: ops/s, p50/p99 µs), `fill` (grants until N leases exist,
//! writes one of them to `--keep`), `probe` (renews the lease in `--keep` until it succeeds and
//! prints the ms that took).

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use etcd_client::{Client as Etcd, LeaseKeepAliveStream, LeaseKeeper};
use leasehold::wire::Outcome;
use leasehold::{Cookie, Encoding, LandlordId, ReplyBody, Request, RequestBody};
use leasehold_client::{Cluster, ClusterConfig};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

#[derive(Debug, Parser)]
#[command(
    name = "peers-load",
    about = "Grants, renewals and batches against leasehold, Redis and etcd"
)]
struct Opts {
    /// cell, fill or probe.
    mode: String,
    /// leasehold, redis or etcd.
    #[arg(long)]
    system: String,
    /// Address: http://host:port (leasehold, etcd) or host:port (redis).
    #[arg(long)]
    url: String,
    /// grant, renew or batch (cell mode).
    #[arg(long, default_value = "renew")]
    op: String,
    /// Requests (or batches) in flight.
    #[arg(long, default_value_t = 16)]
    inflight: usize,
    /// Seconds to measure (cell mode).
    #[arg(long, default_value_t = 3.0)]
    secs: f64,
    /// Leases per batch.
    #[arg(long, default_value_t = 100)]
    batch: usize,
    /// Leases to grant (fill mode).
    #[arg(long, default_value_t = 100_000)]
    leases: u64,
    /// Where fill writes one lease it granted, and probe reads it.
    #[arg(long)]
    keep: Option<String>,
    /// Key prefix (Redis) / resource prefix (leasehold), so that runs do not collide.
    #[arg(long, default_value = "b")]
    prefix: String,
    /// Give up probing after this many seconds.
    #[arg(long, default_value_t = 120.0)]
    probe_limit: f64,
}

/// Lease length asked for everywhere: long enough that nothing expires during a run.
const TTL_MS: i64 = 3_600_000;

type Res<T> = Result<T, String>;

fn err<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> String {
    move |e| format!("{what}: {e}")
}

// ---------------------------------------------------------------------------------------------
// leasehold

struct Lh {
    c: Cluster,
}

impl Lh {
    fn new(url: &str) -> Res<Lh> {
        let config = ClusterConfig::new([url.to_string()])
            .encoding(Encoding::Binary)
            .attempt_timeout(Duration::from_secs(30));
        Ok(Lh { c: Cluster::new(config).map_err(err("client"))? })
    }

    async fn grant(&self, resource: Vec<u8>) -> Res<(LandlordId, Cookie)> {
        let r = self
            .c
            .send(None, &Request { id: 1, body: RequestBody::Grant { resource, duration: TTL_MS } })
            .await
            .map_err(err("grant"))?;
        match r.body {
            ReplyBody::Granted { cookie, duration } if duration > 0 => Ok((r.landlord, cookie)),
            other => Err(format!("grant answered {other:?}")),
        }
    }

    async fn renew(&self, l: LandlordId, cookie: Cookie) -> Res<()> {
        let req = Request { id: 2, body: RequestBody::Renew { cookie, duration: TTL_MS } };
        let r = self.c.send(Some(l), &req).await.map_err(err("renew"))?;
        match r.body {
            ReplyBody::Renewed { duration } if duration > 0 => Ok(()),
            other => Err(format!("renew answered {other:?}")),
        }
    }

    async fn renew_all(&self, l: LandlordId, cookies: &[Cookie]) -> Res<()> {
        let items = cookies.iter().map(|c| (*c, TTL_MS)).collect();
        let req = Request { id: 3, body: RequestBody::RenewAll { items } };
        let r = self.c.send(Some(l), &req).await.map_err(err("renew_all"))?;
        match r.body {
            ReplyBody::RenewedAll { results }
                if results.len() == cookies.len()
                    && results.iter().all(|o| matches!(o, Outcome::Ok(d) if *d > 0)) =>
            {
                Ok(())
            }
            other => Err(format!("renew_all answered {other:?}")),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Redis: RESP by hand over one connection per task.

/// Extends the key by ARGV[2] ms if it still holds the caller's token ARGV[1].
const RENEW_LUA: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then \
    return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

#[derive(Debug, PartialEq)]
enum Resp {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Resp>),
}

struct Redis {
    r: BufReader<OwnedReadHalf>,
    w: OwnedWriteHalf,
    out: Vec<u8>,
    sha: String,
}

fn cmd(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

impl Redis {
    async fn connect(addr: &str) -> Res<Redis> {
        let s = TcpStream::connect(addr).await.map_err(err("redis connect"))?;
        s.set_nodelay(true).map_err(err("nodelay"))?;
        let (r, w) = s.into_split();
        let mut c = Redis {
            r: BufReader::with_capacity(64 * 1024, r),
            w,
            out: Vec::new(),
            sha: String::new(),
        };
        c.load().await?;
        Ok(c)
    }

    async fn load(&mut self) -> Res<()> {
        cmd(&mut self.out, &[b"SCRIPT", b"LOAD", RENEW_LUA.as_bytes()]);
        self.flush().await?;
        match self.read().await? {
            Resp::Bulk(Some(s)) => self.sha = String::from_utf8_lossy(&s).into_owned(),
            other => return Err(format!("SCRIPT LOAD answered {other:?}")),
        }
        Ok(())
    }

    async fn flush(&mut self) -> Res<()> {
        self.w.write_all(&self.out).await.map_err(err("redis write"))?;
        self.out.clear();
        Ok(())
    }

    fn read(
        &mut self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Res<Resp>> + Send + '_>> {
        Box::pin(async move {
            let mut line = Vec::with_capacity(32);
            self.r.read_until(b'\n', &mut line).await.map_err(err("redis read"))?;
            if line.len() < 3 {
                return Err("redis closed the connection".into());
            }
            let body = std::str::from_utf8(&line[1..line.len() - 2]).map_err(err("resp"))?;
            Ok(match line[0] {
                b'+' => Resp::Simple(body.to_string()),
                b'-' => Resp::Error(body.to_string()),
                b':' => Resp::Int(body.parse().map_err(err("resp int"))?),
                b'$' => {
                    let n: i64 = body.parse().map_err(err("resp len"))?;
                    if n < 0 {
                        Resp::Bulk(None)
                    } else {
                        let mut b = vec![0; n as usize + 2];
                        self.r.read_exact(&mut b).await.map_err(err("redis read"))?;
                        b.truncate(n as usize);
                        Resp::Bulk(Some(b))
                    }
                }
                b'*' => {
                    let n: i64 = body.parse().map_err(err("resp len"))?;
                    let mut v = Vec::new();
                    for _ in 0..n.max(0) {
                        v.push(self.read().await?);
                    }
                    Resp::Array(v)
                }
                _ => return Err(format!("not RESP: {line:?}")),
            })
        })
    }

    fn push_grant(&mut self, key: &str, token: &str) {
        let ttl = TTL_MS.to_string();
        cmd(
            &mut self.out,
            &[b"SET", key.as_bytes(), token.as_bytes(), b"NX", b"PX", ttl.as_bytes()],
        );
    }

    fn push_renew(&mut self, key: &str, token: &str) {
        let ttl = TTL_MS.to_string();
        let sha = std::mem::take(&mut self.sha);
        cmd(
            &mut self.out,
            &[b"EVALSHA", sha.as_bytes(), b"1", key.as_bytes(), token.as_bytes(), ttl.as_bytes()],
        );
        self.sha = sha;
    }

    async fn expect_ok(&mut self, n: usize) -> Res<()> {
        self.flush().await?;
        for _ in 0..n {
            match self.read().await? {
                Resp::Simple(s) if s == "OK" => {}
                other => return Err(format!("SET NX answered {other:?}")),
            }
        }
        Ok(())
    }

    async fn expect_renewed(&mut self, n: usize) -> Res<()> {
        self.flush().await?;
        for _ in 0..n {
            match self.read().await? {
                Resp::Int(1) => {}
                other => return Err(format!("renewal script answered {other:?}")),
            }
        }
        Ok(())
    }
}

fn token(i: u64) -> String {
    // What a lock user stores: an unguessable token per holder (here unique, not secret).
    format!("{:032x}", (i as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835))
}

// ---------------------------------------------------------------------------------------------
// etcd

/// One keep-alive stream (as etcd's Go client keeps one per client) and the leases it renews.
struct EtcdLease {
    ids: Vec<i64>,
    keepers: Vec<LeaseKeeper>,
    stream: LeaseKeepAliveStream,
}

async fn etcd_grant(c: &Etcd) -> Res<i64> {
    let r = c.lease_client().grant(TTL_MS / 1000, None).await.map_err(err("LeaseGrant"))?;
    if r.id() == 0 || !r.error().is_empty() || r.ttl() <= 0 {
        return Err(format!(
            "LeaseGrant answered id {} ttl {} error {:?}",
            r.id(),
            r.ttl(),
            r.error()
        ));
    }
    Ok(r.id())
}

/// Opens one keep-alive stream for the leases `ids` (every keep-alive request names its lease,
/// so one stream carries them all).
async fn etcd_open(c: &Etcd, ids: Vec<i64>) -> Res<EtcdLease> {
    let (first, stream) =
        c.lease_client().keep_alive(ids[0]).await.map_err(err("LeaseKeepAlive"))?;
    let keepers = ids.iter().map(|&id| LeaseKeeper { id, sender: first.sender.clone() }).collect();
    Ok(EtcdLease { ids, keepers, stream })
}

/// Sends one keep-alive for every lease of the stream, then reads every answer.
async fn etcd_renew(l: &mut EtcdLease) -> Res<()> {
    for k in l.keepers.iter_mut() {
        k.keep_alive().await.map_err(err("keep-alive send"))?;
    }
    for &id in &l.ids {
        match l.stream.message().await.map_err(err("keep-alive receive"))? {
            Some(r) if r.id() == id && r.ttl() > 0 => {}
            Some(r) => {
                return Err(format!("keep-alive of {id} answered id {} ttl {}", r.id(), r.ttl()))
            }
            None => return Err("keep-alive stream ended".into()),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The closed loop

/// One task's state for its op.
enum Worker {
    LhGrant(Arc<Lh>, String, u64),
    LhRenew(Arc<Lh>, LandlordId, Cookie),
    LhBatch(Arc<Lh>, LandlordId, Vec<Cookie>),
    RedisGrant(Redis, String, u64),
    RedisRenew(Redis, String, String),
    RedisBatch(Redis, Vec<(String, String)>),
    EtcdGrant(Box<Etcd>),
    EtcdRenew(EtcdLease),
    EtcdBatch(EtcdLease),
}

impl Worker {
    async fn step(&mut self) -> Res<()> {
        match self {
            Worker::LhGrant(c, p, i) => {
                *i += 1;
                c.grant(format!("{p}/{i}").into_bytes()).await.map(|_| ())
            }
            Worker::LhRenew(c, l, k) => c.renew(*l, *k).await,
            Worker::LhBatch(c, l, ks) => c.renew_all(*l, ks).await,
            Worker::RedisGrant(r, p, i) => {
                *i += 1;
                r.push_grant(&format!("{p}:{i}"), &token(*i));
                r.expect_ok(1).await
            }
            Worker::RedisRenew(r, k, t) => {
                let (k, t) = (k.clone(), t.clone());
                r.push_renew(&k, &t);
                r.expect_renewed(1).await
            }
            Worker::RedisBatch(r, ks) => {
                for (k, t) in ks.iter() {
                    r.push_renew(k, t);
                }
                r.expect_renewed(ks.len()).await
            }
            Worker::EtcdGrant(c) => etcd_grant(c).await.map(|_| ()),
            Worker::EtcdRenew(l) | Worker::EtcdBatch(l) => etcd_renew(l).await,
        }
    }
}

/// Grants `n` leases of one landlord (leases of other landlords are granted and left).
async fn lh_same_landlord(c: &Lh, prefix: &str, n: usize) -> Res<(LandlordId, Vec<Cookie>)> {
    let mut by: std::collections::HashMap<LandlordId, Vec<Cookie>> = Default::default();
    let mut i = 0u64;
    loop {
        i += 1;
        let (l, k) = c.grant(format!("{prefix}/{i}").into_bytes()).await?;
        let v = by.entry(l).or_default();
        v.push(k);
        if v.len() == n {
            return Ok((l, std::mem::take(v)));
        }
    }
}

async fn make_worker(o: &Opts, w: usize, lh: &Option<Arc<Lh>>, etcd: &Option<Etcd>) -> Res<Worker> {
    let p = format!("{}-{}-{}-{w}", o.prefix, o.op, o.inflight);
    Ok(match (o.system.as_str(), o.op.as_str()) {
        ("leasehold", op) => {
            let c = lh.clone().ok_or("no client")?;
            match op {
                "grant" => Worker::LhGrant(c, p, 0),
                "renew" => {
                    let (l, k) = c.grant(p.into_bytes()).await?;
                    Worker::LhRenew(c, l, k)
                }
                _ => {
                    let (l, ks) = lh_same_landlord(&c, &p, o.batch).await?;
                    Worker::LhBatch(c, l, ks)
                }
            }
        }
        ("redis", op) => {
            let mut r = Redis::connect(&o.url).await?;
            match op {
                "grant" => Worker::RedisGrant(r, p, 0),
                "renew" => {
                    let (k, t) = (format!("{p}:0"), token(w as u64));
                    r.push_grant(&k, &t);
                    r.expect_ok(1).await?;
                    Worker::RedisRenew(r, k, t)
                }
                _ => {
                    let ks: Vec<(String, String)> =
                        (0..o.batch as u64).map(|i| (format!("{p}:{i}"), token(i))).collect();
                    for (k, t) in &ks {
                        r.push_grant(k, t);
                    }
                    r.expect_ok(ks.len()).await?;
                    Worker::RedisBatch(r, ks)
                }
            }
        }
        ("etcd", op) => {
            let c = etcd.clone().ok_or("no client")?;
            match op {
                "grant" => Worker::EtcdGrant(Box::new(c)),
                "renew" => {
                    let id = etcd_grant(&c).await?;
                    Worker::EtcdRenew(etcd_open(&c, vec![id]).await?)
                }
                _ => {
                    let mut ids = Vec::new();
                    for _ in 0..o.batch {
                        ids.push(etcd_grant(&c).await?);
                    }
                    Worker::EtcdBatch(etcd_open(&c, ids).await?)
                }
            }
        }
        (s, _) => return Err(format!("unknown system {s}")),
    })
}

async fn clients(o: &Opts) -> Res<(Option<Arc<Lh>>, Option<Etcd>)> {
    Ok(match o.system.as_str() {
        "leasehold" => (Some(Arc::new(Lh::new(&o.url)?)), None),
        "etcd" => {
            let ep = o.url.trim_start_matches("http://").to_string();
            (None, Some(Etcd::connect([ep], None).await.map_err(err("etcd connect"))?))
        }
        _ => (None, None),
    })
}

async fn cell(o: &Opts) -> Res<String> {
    let (lh, etcd) = clients(o).await?;
    let mut workers = Vec::new();
    // Set up in parallel (etcd grants one lease per round trip).
    let mut sets = tokio::task::JoinSet::new();
    let o2 = Arc::new(Opts { ..o.clone_opts() });
    for w in 0..o.inflight {
        let (o2, lh, etcd) = (o2.clone(), lh.clone(), etcd.clone());
        sets.spawn(async move { make_worker(&o2, w, &lh, &etcd).await });
    }
    while let Some(r) = sets.join_next().await {
        workers.push(r.map_err(err("setup"))??);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let warm = Duration::from_secs_f64((o.secs * 0.2).min(1.0));
    let run = Duration::from_secs_f64(o.secs);
    let start = Instant::now();
    let measure_from = start + warm;
    let tasks: Vec<_> = workers
        .into_iter()
        .map(|mut w| {
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut lat: Vec<u32> = Vec::with_capacity(1 << 16);
                while !stop.load(Relaxed) {
                    let t = Instant::now();
                    w.step().await?;
                    if t >= measure_from {
                        lat.push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
                    }
                }
                Ok::<_, String>(lat)
            })
        })
        .collect();
    tokio::time::sleep_until((measure_from + run).into()).await;
    stop.store(true, Relaxed);
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.map_err(err("task"))??);
    }
    lat.sort_unstable();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    let per = if o.op == "batch" { o.batch as f64 } else { 1.0 };
    Ok(serde_json::json!({
        "system": o.system, "op": o.op, "inflight": o.inflight,
        "requests": lat.len(), "leases_per_s": lat.len() as f64 * per / o.secs,
        "requests_per_s": lat.len() as f64 / o.secs,
        "p50_us": pct(0.5), "p99_us": pct(0.99),
    })
    .to_string())
}

/// Grants `--leases` leases as fast as the system takes them; writes one to `--keep`.
async fn fill(o: &Opts) -> Res<String> {
    let (lh, etcd) = clients(o).await?;
    let next = Arc::new(AtomicU64::new(0));
    let total = o.leases;
    let start = Instant::now();
    let mut tasks = Vec::new();
    let width = o.inflight.max(1);
    for w in 0..width {
        let (lh, etcd, next, url, p) =
            (lh.clone(), etcd.clone(), next.clone(), o.url.clone(), o.prefix.clone());
        let system = o.system.clone();
        tasks.push(tokio::spawn(async move {
            let mut kept = None;
            let mut redis =
                if system == "redis" { Some(Redis::connect(&url).await?) } else { None };
            loop {
                let chunk = if system == "redis" { 200 } else { 1 };
                let i = next.fetch_add(chunk, Relaxed);
                if i >= total {
                    return Ok::<_, String>(kept);
                }
                let n = chunk.min(total - i);
                match system.as_str() {
                    "leasehold" => {
                        let (l, k) = lh
                            .as_ref()
                            .ok_or("no client")?
                            .grant(format!("{p}/{i}").into_bytes())
                            .await?;
                        if kept.is_none() {
                            kept = Some(format!("{} {}", l.0, k.0));
                        }
                    }
                    "redis" => {
                        let r = redis.as_mut().ok_or("no conn")?;
                        for j in i..i + n {
                            r.push_grant(&format!("{p}:{j}"), &token(j));
                        }
                        r.expect_ok(n as usize).await?;
                        if kept.is_none() {
                            kept = Some(format!("{p}:{i} {}", token(i)));
                        }
                    }
                    _ => {
                        let id = etcd_grant(etcd.as_ref().ok_or("no client")?).await?;
                        if kept.is_none() {
                            kept = Some(id.to_string());
                        }
                    }
                }
                let _ = w;
            }
        }));
    }
    let mut kept = None;
    for t in tasks {
        if let Some(k) = t.await.map_err(err("task"))?? {
            kept = Some(k);
        }
    }
    if let (Some(path), Some(k)) = (&o.keep, &kept) {
        std::fs::write(path, k).map_err(err("keep"))?;
    }
    Ok(format!("granted={total} seconds={:.1}", start.elapsed().as_secs_f64()))
}

/// Renews the kept lease until that succeeds; prints the ms it took.
async fn probe(o: &Opts) -> Res<String> {
    let kept = std::fs::read_to_string(o.keep.as_ref().ok_or("--keep")?).map_err(err("keep"))?;
    let parts: Vec<&str> = kept.split_whitespace().collect();
    let start = Instant::now();
    let limit = Duration::from_secs_f64(o.probe_limit);
    let mut last = String::new();
    while start.elapsed() < limit {
        let r: Res<()> = async {
            match o.system.as_str() {
                "leasehold" => {
                    let c = Lh::new(&o.url)?;
                    let l = LandlordId(parts[0].parse().map_err(err("landlord"))?);
                    let k = Cookie(parts[1].parse().map_err(err("cookie"))?);
                    tokio::time::timeout(Duration::from_secs(5), c.renew(l, k))
                        .await
                        .map_err(err("timeout"))?
                }
                "redis" => {
                    let mut r = Redis::connect(&o.url).await?;
                    r.push_renew(parts[0], parts[1]);
                    r.expect_renewed(1).await
                }
                _ => {
                    let ep = o.url.trim_start_matches("http://").to_string();
                    let c = tokio::time::timeout(Duration::from_secs(5), Etcd::connect([ep], None))
                        .await
                        .map_err(err("timeout"))?
                        .map_err(err("etcd connect"))?;
                    let id: i64 = parts[0].parse().map_err(err("id"))?;
                    let mut l =
                        tokio::time::timeout(Duration::from_secs(5), etcd_open(&c, vec![id]))
                            .await
                            .map_err(err("timeout"))??;
                    tokio::time::timeout(Duration::from_secs(5), etcd_renew(&mut l))
                        .await
                        .map_err(err("timeout"))?
                }
            }
        }
        .await;
        match r {
            Ok(()) => return Ok(format!("{:.0}", start.elapsed().as_secs_f64() * 1000.0)),
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Err(format!("not serving after {:.0} s: {last}", o.probe_limit))
}

impl Opts {
    fn clone_opts(&self) -> Opts {
        Opts {
            mode: self.mode.clone(),
            system: self.system.clone(),
            url: self.url.clone(),
            op: self.op.clone(),
            inflight: self.inflight,
            secs: self.secs,
            batch: self.batch,
            leases: self.leases,
            keep: self.keep.clone(),
            prefix: self.prefix.clone(),
            probe_limit: self.probe_limit,
        }
    }
}

fn main() -> ExitCode {
    let o = Opts::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let out = rt.block_on(async {
        match o.mode.as_str() {
            "cell" => cell(&o).await,
            "fill" => fill(&o).await,
            "probe" => probe(&o).await,
            m => Err(format!("unknown mode {m}")),
        }
    });
    match out {
        Ok(s) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("peers-load: {e}");
            ExitCode::FAILURE
        }
    }
}
