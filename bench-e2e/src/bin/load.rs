//! `e2e-load`: the one load generator of `scripts/bench-e2e.sh`. It talks plain HTTP/1.1 over
//! one kept-alive loopback connection per thread (hand-written requests, `Content-Length`
//! framing, `TCP_NODELAY`), so every server is measured by the same client with as little
//! client cost as possible.
//!
//! It grants `--leases` leases (10 min each) one request at a time, then for each batch size B
//! sends renewals for `--seconds`: a `renew` message when B = 1, a `renew_all` of B leases
//! otherwise (binary encoding), cycling through the leases; each thread waits for a reply before
//! it sends again (closed loop). Every reply must be HTTP 200 with the size of a good reply,
//! and one in 64 (plus the first) is decoded and checked in full: every renewal granted 10 min.
//!
//! Prints one markdown row per batch size:
//! `| label | B | requests | renewals/s | requests/s | p50 ms | p99 ms |`.
//!
//! Usage: `e2e-load --url http://127.0.0.1:PORT/lease --label NAME [--batches 1,10,100,1000]
//! [--leases 10000] [--seconds 3] [--warmup 0.5] [--connections 1]`

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::ExitCode;
use std::time::{Duration as StdDuration, Instant};

use leasehold::wire::Outcome;
use leasehold::{Cookie, Encoding, Limits, Reply, ReplyBody, Request, RequestBody};

const LEASE: i64 = 600_000;

struct Opts {
    host: String,
    port: u16,
    path: String,
    label: String,
    batches: Vec<usize>,
    leases: usize,
    seconds: f64,
    warmup: f64,
    connections: usize,
}

fn opts() -> Result<Opts, String> {
    let mut o = Opts {
        host: String::new(),
        port: 0,
        path: String::new(),
        label: "?".into(),
        batches: vec![1, 10, 100, 1000],
        leases: 10_000,
        seconds: 3.0,
        warmup: 0.5,
        connections: 1,
    };
    let mut url = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut v = || args.next().ok_or(format!("{a} wants a value"));
        match a.as_str() {
            "--url" => url = Some(v()?),
            "--label" => o.label = v()?,
            "--batches" => {
                o.batches = v()?
                    .split(',')
                    .map(|b| b.trim().parse().map_err(|e| format!("--batches: {e}")))
                    .collect::<Result<_, _>>()?
            }
            "--leases" => o.leases = v()?.parse().map_err(|e| format!("--leases: {e}"))?,
            "--seconds" => o.seconds = v()?.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--warmup" => o.warmup = v()?.parse().map_err(|e| format!("--warmup: {e}"))?,
            "--connections" => {
                o.connections = v()?.parse().map_err(|e| format!("--connections: {e}"))?
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    let url = url.ok_or("--url is required")?;
    let rest = url.strip_prefix("http://").ok_or("--url must be http://host:port/path")?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (host, port) = authority.rsplit_once(':').ok_or("--url must name a port")?;
    o.host = host.to_string();
    o.port = port.parse().map_err(|e| format!("port: {e}"))?;
    o.path = format!("/{path}");
    if o.batches.iter().any(|&b| b == 0 || b > o.leases) {
        return Err("every batch size must be 1 to --leases".into());
    }
    Ok(o)
}

/// One kept-alive HTTP/1.1 connection.
struct Conn {
    out: TcpStream,
    inp: BufReader<TcpStream>,
    head: Vec<u8>,
    body: Vec<u8>,
}

impl Conn {
    fn open(o: &Opts) -> std::io::Result<Conn> {
        let s = TcpStream::connect((o.host.as_str(), o.port))?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(StdDuration::from_secs(30)))?;
        Ok(Conn {
            inp: BufReader::with_capacity(1 << 16, s.try_clone()?),
            out: s,
            head: Vec::new(),
            body: Vec::new(),
        })
    }

    /// Sends one request (head and body in one write) and reads the reply into `self.body`;
    /// returns the status code.
    fn post(&mut self, path: &str, host: &str, msg: &[u8]) -> Result<u16, String> {
        self.head.clear();
        write!(
            self.head,
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/octet-stream\r\n\
             Content-Length: {}\r\n\r\n",
            msg.len()
        )
        .unwrap();
        self.head.extend_from_slice(msg);
        self.out.write_all(&self.head).map_err(|e| format!("send: {e}"))?;
        let mut line = String::new();
        self.inp.read_line(&mut line).map_err(|e| format!("status line: {e}"))?;
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad status line {line:?}"))?;
        let mut len = None;
        let mut chunked = false;
        loop {
            line.clear();
            self.inp.read_line(&mut line).map_err(|e| format!("header: {e}"))?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse::<usize>().ok();
                } else if k.eq_ignore_ascii_case("transfer-encoding") {
                    chunked = v.trim().eq_ignore_ascii_case("chunked");
                }
            }
        }
        if chunked {
            return Err("chunked replies are not read (a server must send Content-Length)".into());
        }
        let len = len.ok_or("a reply without Content-Length")?;
        self.body.resize(len, 0);
        self.inp.read_exact(&mut self.body).map_err(|e| format!("body: {e}"))?;
        Ok(status)
    }
}

fn grant_all(o: &Opts, c: &mut Conn) -> Result<Vec<Cookie>, String> {
    let mut cookies = Vec::with_capacity(o.leases);
    for i in 0..o.leases {
        let req = Request {
            id: i as u64 + 1,
            body: RequestBody::Grant { resource: format!("r{i}").into_bytes(), duration: LEASE },
        };
        let st = c.post(&o.path, &o.host, &req.encode(Encoding::Binary))?;
        let reply = Reply::decode(&c.body, Encoding::Binary, &Limits::default())
            .map_err(|e| format!("grant reply (HTTP {st}): {e}"))?;
        match reply.body {
            ReplyBody::Granted { cookie, duration } if duration == LEASE => cookies.push(cookie),
            other => return Err(format!("grant answered {other:?}")),
        }
    }
    Ok(cookies)
}

/// The messages of one batch size: enough to cycle through every lease.
fn messages(cookies: &[Cookie], b: usize) -> Vec<Vec<u8>> {
    cookies
        .chunks(b)
        .filter(|c| c.len() == b)
        .enumerate()
        .map(|(i, c)| {
            let body = if b == 1 {
                RequestBody::Renew { cookie: c[0], duration: LEASE }
            } else {
                RequestBody::RenewAll { items: c.iter().map(|&k| (k, LEASE)).collect() }
            };
            Request { id: i as u64 + 1, body }.encode(Encoding::Binary)
        })
        .collect()
}

fn check(body: &[u8], b: usize) -> Result<(), String> {
    let r = Reply::decode(
        body,
        Encoding::Binary,
        &Limits { max_batch: usize::MAX, ..Limits::default() },
    )
    .map_err(|e| format!("renew reply: {e}"))?;
    match r.body {
        ReplyBody::Renewed { duration } if b == 1 && duration == LEASE => Ok(()),
        ReplyBody::RenewedAll { results }
            if results.len() == b && results.iter().all(|x| *x == Outcome::Ok(LEASE)) =>
        {
            Ok(())
        }
        other => Err(format!("renewal answered {:.200}", format!("{other:?}"))),
    }
}

/// One connection's run at batch size `b`: the latencies (ns) of the requests done, and the
/// seconds it took.
fn run(
    o: &Opts,
    c: &mut Conn,
    msgs: &[Vec<u8>],
    b: usize,
    secs: f64,
) -> Result<(Vec<u64>, f64), String> {
    let mut lat = Vec::new();
    let start = Instant::now();
    let mut good_len = None;
    let end = Instant::now() + StdDuration::from_secs_f64(secs);
    let mut i = 0usize;
    loop {
        let t = Instant::now();
        if t >= end {
            break;
        }
        let st = c.post(&o.path, &o.host, &msgs[i % msgs.len()])?;
        lat.push(t.elapsed().as_nanos() as u64);
        if st != 200 {
            return Err(format!("HTTP {st}"));
        }
        match good_len {
            None => {
                check(&c.body, b)?;
                good_len = Some(c.body.len());
            }
            Some(n) if n != c.body.len() => check(&c.body, b)?,
            Some(_) if i % 64 == 0 => check(&c.body, b)?,
            Some(_) => {}
        }
        i += 1;
    }
    Ok((lat, start.elapsed().as_secs_f64()))
}

fn main() -> ExitCode {
    let o = match opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("e2e-load: {e}");
            return ExitCode::from(2);
        }
    };
    match bench(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("e2e-load ({}): {e}", o.label);
            ExitCode::FAILURE
        }
    }
}

fn bench(o: &Opts) -> Result<(), String> {
    // Each connection holds its own leases, so connections never renew the same lease.
    let mut conns = Vec::new();
    for _ in 0..o.connections {
        let mut c = Conn::open(o).map_err(|e| format!("connect: {e}"))?;
        let cookies = grant_all(o, &mut c)?;
        conns.push((c, cookies));
    }
    for &b in &o.batches {
        let results: Vec<Result<(Vec<u64>, f64), String>> = std::thread::scope(|s| {
            let hs: Vec<_> = conns
                .iter_mut()
                .map(|(c, cookies)| {
                    s.spawn(move || {
                        let msgs = messages(cookies, b);
                        run(o, c, &msgs, b, o.warmup)?;
                        run(o, c, &msgs, b, o.seconds)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut lat = Vec::new();
        let mut secs = 0f64;
        for r in results {
            let (l, s) = r?;
            lat.extend(l);
            secs = secs.max(s);
        }
        lat.sort_unstable();
        let reqs = lat.len();
        let rps = reqs as f64 / secs;
        let pct = |p: f64| lat[((reqs as f64 * p) as usize).min(reqs - 1)] as f64 / 1e6;
        println!(
            "| {} | {} | {} | {:.0} | {:.0} | {:.3} | {:.3} |",
            o.label,
            b,
            reqs,
            rps * b as f64,
            rps,
            pct(0.5),
            pct(0.99)
        );
    }
    Ok(())
}
