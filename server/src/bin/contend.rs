//! `leasehold-contend`: processes that contend for one lock through `leasehold-server`s and write
//! to a register in PostgreSQL fenced by the lock's token, or watch the lock, logging what they
//! did as JSON lines for `scripts/test-coord.sh` to judge.
//!
//! - `--role holder`: acquire the lock (waiting for it), then write to the register a few
//!   times with the lock's fencing token, release, again, until `--run-ms` is over. A write is
//!   one statement that the register accepts only if the token is at least the highest it has
//!   accepted (`UPDATE ... WHERE token <= $1`), and that logs the accepted write in the same
//!   transaction. With `--careless` the holder does not check that its lease is still held
//!   before writing (a holder that trusts its lock, or is paused between the check and the
//!   write): only the fence stands between it and the register.
//! - `--role watcher`: a watch on the lock; every event it polls is logged (number, kind,
//!   token). It resumes from its last number after every failure.
//!
//! The register: `fenced_register (id, token, writes, writer)` and `fenced_log (id bigserial,
//! writer, token)`, created by `--setup`.

use std::fs::File;
use std::io::{LineWriter, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use leasehold::coord::wire::{CoordReply, CoordReplyBody, CoordRequest, CoordRequestBody};
use leasehold::{
    Cookie, Encoding, ErrorCode, LandlordId, Limits, Reply, ReplyBody, Request, RequestBody,
};
use leasehold_examples::http::Cluster;
use leasehold_examples::recipes::{Lock, LockOptions, RecipeError};
use serde_json::json;

#[derive(Debug, Parser)]
#[command(name = "leasehold-contend", about = "Contend for a fenced lock, or watch it")]
struct Opts {
    /// Server URLs, comma-separated.
    #[arg(long, value_delimiter = ',')]
    servers: Vec<String>,
    /// PostgreSQL URL of the register.
    #[arg(long)]
    pg: String,
    /// holder or watcher.
    #[arg(long, default_value = "holder")]
    role: String,
    /// Create the register's tables and exit.
    #[arg(long)]
    setup: bool,
    /// The lock's name.
    #[arg(long, default_value = "locks/register")]
    lock: String,
    /// This process's name (in the register and the log).
    #[arg(long, default_value = "client")]
    name: String,
    /// The lock's lease, ms.
    #[arg(long, default_value_t = 2_000)]
    lease_ms: i64,
    /// Writes per turn with the lock.
    #[arg(long, default_value_t = 5)]
    writes: u32,
    /// Pause between writes, ms.
    #[arg(long, default_value_t = 40)]
    gap_ms: u64,
    /// Do not check the lease before writing (the fence alone protects the register).
    #[arg(long)]
    careless: bool,
    /// How long to run, ms.
    #[arg(long, default_value_t = 30_000)]
    run_ms: u64,
    /// Where to log (JSON lines).
    #[arg(long)]
    log: String,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS fenced_register (
    id int PRIMARY KEY, token bigint NOT NULL, writes bigint NOT NULL, writer text);
INSERT INTO fenced_register VALUES (1, 0, 0, NULL) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS fenced_log (
    id bigserial PRIMARY KEY, writer text NOT NULL, token bigint NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE IF NOT EXISTS fenced_refused (
    id bigserial PRIMARY KEY, writer text NOT NULL, token bigint NOT NULL, highest bigint NOT NULL);
";

/// The fenced write: accepted (and logged in the same statement) only if `$1` is at least
/// the highest token the register has accepted.
const WRITE: &str = "
WITH u AS (UPDATE fenced_register SET token = $1, writes = writes + 1, writer = $2
           WHERE id = 1 AND token <= $1 RETURNING 1)
INSERT INTO fenced_log (writer, token) SELECT $2, $1 FROM u RETURNING id";

fn main() -> ExitCode {
    let o = Opts::parse();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let db = match rt.block_on(connect(&o.pg)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("leasehold-contend: PostgreSQL: {e}");
            return ExitCode::FAILURE;
        }
    };
    if o.setup {
        return match rt.block_on(db.batch_execute(SCHEMA)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("leasehold-contend: setup: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let mut log = LineWriter::new(File::create(&o.log).expect("the log file"));
    let servers: Vec<&str> = o.servers.iter().map(String::as_str).collect();
    match o.role.as_str() {
        "holder" => holder(&o, &servers, &rt, &db, &mut log),
        "watcher" => watcher(&o, &servers, &mut log),
        r => {
            eprintln!("leasehold-contend: --role holder or watcher, not {r}");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

async fn connect(url: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

fn ms(start: Instant) -> u64 {
    start.elapsed().as_millis() as u64
}

fn holder(
    o: &Opts,
    servers: &[&str],
    rt: &tokio::runtime::Runtime,
    db: &tokio_postgres::Client,
    log: &mut impl Write,
) {
    let start = Instant::now();
    let end = start + Duration::from_millis(o.run_ms);
    let write = rt.block_on(db.prepare(WRITE)).expect("prepare");
    let opts = LockOptions {
        lease_ms: o.lease_ms,
        wait: Some(Duration::from_secs(3)),
        holder: o.name.as_bytes().to_vec(),
        timeout: Duration::from_millis(500),
        ..LockOptions::default()
    };
    let mut line = |v: serde_json::Value| {
        let _ = writeln!(log, "{v}");
    };
    while Instant::now() < end {
        let lock = match Lock::acquire(servers, &o.lock, &opts) {
            Ok(l) => l,
            Err(RecipeError::Held(_)) => continue,
            Err(e) => {
                line(json!({"at": ms(start), "acquire_failed": e.to_string()}));
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let token = lock.token();
        line(json!({"at": ms(start), "acquired": token, "landlord": lock.landlord().0,
                    "safe_ms": lock.safe_for().as_millis() as u64}));
        for _ in 0..o.writes {
            if !o.careless && !lock.is_held() {
                line(json!({"at": ms(start), "lost": token, "why": lock.lost()}));
                break;
            }
            let r = rt.block_on(db.query(&write, &[&(token as i64), &o.name]));
            match r {
                Ok(rows) if rows.len() == 1 => {
                    let id: i64 = rows[0].get(0);
                    line(json!({"at": ms(start), "write": token, "ok": true, "log_id": id}));
                }
                Ok(_) => {
                    let highest: i64 = rt
                        .block_on(
                            db.query_one("SELECT token FROM fenced_register WHERE id = 1", &[]),
                        )
                        .map(|r| r.get(0))
                        .unwrap_or(-1);
                    let _ = rt.block_on(db.execute(
                        "INSERT INTO fenced_refused (writer, token, highest) VALUES ($1, $2, $3)",
                        &[&o.name, &(token as i64), &highest],
                    ));
                    line(json!({"at": ms(start), "write": token, "ok": false, "highest": highest}));
                }
                Err(e) => line(json!({"at": ms(start), "write": token, "error": e.to_string()})),
            }
            std::thread::sleep(Duration::from_millis(o.gap_ms));
        }
        match lock.release() {
            Ok(()) => line(json!({"at": ms(start), "released": token})),
            Err(e) => line(json!({"at": ms(start), "release_failed": token, "why": e.to_string()})),
        }
    }
    line(json!({"at": ms(start), "done": true}));
}

fn coord(
    c: &mut Cluster,
    landlord: Option<LandlordId>,
    body: CoordRequestBody,
    wait: Duration,
) -> Option<CoordReply> {
    let req = CoordRequest { id: 1, body };
    let bytes = c
        .post_waiting("/coord", landlord, &req.encode(Encoding::Binary), Encoding::Binary, wait)
        .ok()?;
    CoordReply::decode(&bytes, Encoding::Binary, &Limits::default()).ok()
}

fn watcher(o: &Opts, servers: &[&str], log: &mut impl Write) {
    let start = Instant::now();
    let end = start + Duration::from_millis(o.run_ms);
    let mut c = Cluster::from_urls(servers, Duration::from_millis(500)).expect("servers");
    let mut line = |v: serde_json::Value| {
        let _ = writeln!(log, "{v}");
    };
    let register = |c: &mut Cluster| -> Option<(LandlordId, Cookie, u64)> {
        let body = CoordRequestBody::Watch {
            resource: o.lock.as_bytes().to_vec(),
            prefix: false,
            renewals: false,
            duration: 30_000,
            handback: o.name.as_bytes().to_vec(),
        };
        let r = coord(c, None, body, Duration::ZERO)?;
        match r.body {
            CoordReplyBody::Watching { cookie, event_id, .. } => {
                Some((r.landlord, cookie, event_id))
            }
            _ => None,
        }
    };
    let (mut landlord, mut cookie, mut event_id) = loop {
        if let Some(w) = register(&mut c) {
            break w;
        }
        if Instant::now() > end {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    line(json!({"at": ms(start), "watching": event_id, "landlord": landlord.0}));
    let mut last = 0u64;
    let mut renewed = Instant::now();
    // Watch a little past the holders' end, to see their last releases.
    let stop = end + Duration::from_secs(3);
    while Instant::now() < stop {
        if renewed.elapsed() > Duration::from_secs(5) {
            let req = Request { id: 2, body: RequestBody::Renew { cookie, duration: 30_000 } };
            if let Ok(bytes) =
                c.post(Some(landlord), &req.encode(Encoding::Binary), Encoding::Binary)
            {
                if let Ok(r) = Reply::decode(&bytes, Encoding::Binary, &Limits::default()) {
                    match r.body {
                        ReplyBody::Renewed { .. } => renewed = Instant::now(),
                        ReplyBody::Error(e) if e.error_code() == Some(ErrorCode::UnknownLease) => {
                            line(json!({"at": ms(start), "watch_lost": event_id}));
                            if let Some(w) = register(&mut c) {
                                (landlord, cookie, event_id) = w;
                                last = 0;
                                renewed = Instant::now();
                                line(json!({"at": ms(start), "watching": event_id}));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        let body = CoordRequestBody::Poll { cookie, since: last, wait: 2_000, max: 0 };
        let Some(r) = coord(&mut c, Some(landlord), body, Duration::from_secs(2)) else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        match r.body {
            CoordReplyBody::Events(e) => {
                if let Some(m) = e.missed {
                    line(json!({"at": ms(start), "missed": [m.from, m.to]}));
                    last = m.to;
                }
                for ev in e.events {
                    last = ev.sequence;
                    let kind = serde_json::to_value(ev.kind).unwrap();
                    line(
                        json!({"at": ms(start), "event": ev.sequence, "kind": kind, "token": ev.token,
                                "holder": String::from_utf8_lossy(&ev.holder)}),
                    );
                }
            }
            CoordReplyBody::Error(e) => {
                line(json!({"at": ms(start), "poll_error": e.message, "code": e.code}));
                std::thread::sleep(Duration::from_millis(100));
            }
            _ => {}
        }
    }
    line(json!({"at": ms(start), "done": true, "last": last}));
}
