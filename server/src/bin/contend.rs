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
//! - `--role register --listen ADDR`: the register over HTTP, for contenders in other runtimes
//!   (the Python and JS lock recipes, scripts/coord/): `POST /write?writer=NAME&token=N` runs
//!   the same fenced statement as a holder here and answers `{"ok": true, "log_id": ..}`,
//!   `{"ok": false, "highest": ..}` (refused by the fence, recorded in `fenced_refused`), or
//!   503 `{"error": ..}`. The fence stays in PostgreSQL: this process checks nothing itself.
//!
//! The register: `fenced_register (id, token, writes, writer)` and `fenced_log (id bigserial,
//! writer, token)`, created by `--setup`.

use std::fs::File;
use std::io::{LineWriter, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use leasehold::coord::wire::{CoordReplyBody, CoordRequest, CoordRequestBody};
use leasehold::{Cookie, ErrorCode, LandlordId, LeaseError, ReplyBody, Request, RequestBody};
use leasehold_client::recipes::LockOptions;
use leasehold_client::{ClientError, Cluster, ClusterConfig, RenewalDriver};
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
    #[arg(long, default_value = "/dev/null")]
    log: String,
    /// Stop (a holder: after its turn; a watcher: at once) once this file exists.
    #[arg(long)]
    stop_file: Option<String>,
    /// Where the register listens (`--role register`).
    #[arg(long, default_value = "127.0.0.1:7600")]
    listen: String,
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
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
    if o.role == "register" {
        return match rt.block_on(register_server(&o, db)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("leasehold-contend: register: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let mut log = LineWriter::new(File::create(&o.log).expect("the log file"));
    let config = ClusterConfig::new(o.servers.clone()).attempt_timeout(Duration::from_millis(500));
    let cluster = match Cluster::new(config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("leasehold-contend: --servers: {e}");
            return ExitCode::from(2);
        }
    };
    match o.role.as_str() {
        "holder" => rt.block_on(holder(&o, cluster, &db, &mut log)),
        "watcher" => rt.block_on(watcher(&o, cluster, &mut log)),
        r => {
            eprintln!("leasehold-contend: --role holder, watcher or register, not {r}");
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

/// Whether `--stop-file` exists.
fn stopped(o: &Opts) -> bool {
    o.stop_file.as_deref().is_some_and(|f| std::path::Path::new(f).exists())
}

fn ms(start: Instant) -> u64 {
    start.elapsed().as_millis() as u64
}

async fn holder(o: &Opts, cluster: Cluster, db: &tokio_postgres::Client, log: &mut impl Write) {
    let start = Instant::now();
    let end = start + Duration::from_millis(o.run_ms);
    let write = db.prepare(WRITE).await.expect("prepare");
    let (driver, _events) = RenewalDriver::start(cluster, Default::default()).expect("driver");
    let opts = LockOptions {
        lease_ms: o.lease_ms,
        wait: Some(Duration::from_secs(3)),
        holder: o.name.as_bytes().to_vec(),
    };
    let mut line = |v: serde_json::Value| {
        let _ = writeln!(log, "{v}");
    };
    while Instant::now() < end && !stopped(o) {
        let lock = match driver.lock(&o.lock, &opts).await {
            Ok(l) => l,
            Err(ClientError::Lease(LeaseError::LeaseDenied(_))) => continue,
            Err(e) => {
                line(json!({"at": ms(start), "acquire_failed": e.to_string()}));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let token = lock.token();
        line(json!({"at": ms(start), "acquired": token, "landlord": lock.landlord().0,
                    "safe_ms": lock.safe_for().await.as_millis() as u64}));
        for _ in 0..o.writes {
            if !o.careless && !lock.is_held().await {
                line(json!({"at": ms(start), "lost": token}));
                break;
            }
            let mut v = fenced_write(db, &write, token as i64, &o.name).await;
            v["at"] = json!(ms(start));
            v["write"] = json!(token);
            line(v);
            tokio::time::sleep(Duration::from_millis(o.gap_ms)).await;
        }
        match lock.release().await {
            Ok(()) => line(json!({"at": ms(start), "released": token})),
            Err(e) => line(json!({"at": ms(start), "release_failed": token, "why": e.to_string()})),
        }
    }
    line(json!({"at": ms(start), "done": true}));
}

/// The fenced write of `writer` with `token`: `{"ok": true, "log_id"}` if the register took
/// it, `{"ok": false, "highest"}` if the fence refused it (recorded in `fenced_refused`),
/// `{"error"}` if PostgreSQL did not answer.
async fn fenced_write(
    db: &tokio_postgres::Client,
    write: &tokio_postgres::Statement,
    token: i64,
    writer: &str,
) -> serde_json::Value {
    match db.query(write, &[&token, &writer]).await {
        Ok(rows) if rows.len() == 1 => {
            let id: i64 = rows[0].get(0);
            json!({"ok": true, "log_id": id})
        }
        Ok(_) => {
            let highest: i64 = db
                .query_one("SELECT token FROM fenced_register WHERE id = 1", &[])
                .await
                .map(|r| r.get(0))
                .unwrap_or(-1);
            let _ = db
                .execute(
                    "INSERT INTO fenced_refused (writer, token, highest) VALUES ($1, $2, $3)",
                    &[&writer, &token, &highest],
                )
                .await;
            json!({"ok": false, "highest": highest})
        }
        Err(e) => json!({"error": e.to_string()}),
    }
}

#[derive(serde::Deserialize)]
struct WriteQuery {
    writer: String,
    token: i64,
}

/// `--role register`: the fenced register over HTTP (`POST /write?writer=&token=`).
async fn register_server(o: &Opts, db: tokio_postgres::Client) -> std::io::Result<()> {
    use axum::extract::{Query, State};
    use axum::http::StatusCode;
    use std::sync::Arc;
    let write = db.prepare(WRITE).await.map_err(std::io::Error::other)?;
    let state = Arc::new((db, write));
    let app = axum::Router::new()
        .route(
            "/write",
            axum::routing::post(
                |State(s): State<Arc<(tokio_postgres::Client, tokio_postgres::Statement)>>,
                 Query(q): Query<WriteQuery>| async move {
                    let v = fenced_write(&s.0, &s.1, q.token, &q.writer).await;
                    let status = if v.get("error").is_some() {
                        StatusCode::SERVICE_UNAVAILABLE
                    } else {
                        StatusCode::OK
                    };
                    (status, [("content-type", "application/json")], v.to_string())
                },
            ),
        )
        .with_state(state);
    let listener = tokio::net::TcpListener::bind(&o.listen).await?;
    eprintln!("leasehold-contend: register on {}", listener.local_addr()?);
    axum::serve(listener, app).await
}

async fn register(o: &Opts, c: &Cluster) -> Option<(LandlordId, Cookie, u64, u64)> {
    let body = CoordRequestBody::Watch {
        resource: o.lock.as_bytes().to_vec(),
        prefix: false,
        renewals: false,
        duration: 30_000,
        handback: o.name.as_bytes().to_vec(),
    };
    let r = c.send_coord(None, &CoordRequest { id: 1, body }).await.ok()?;
    match r.body {
        CoordReplyBody::Watching { cookie, event_id, sequence, .. } => {
            Some((r.landlord, cookie, event_id, sequence))
        }
        _ => None,
    }
}

async fn watcher(o: &Opts, c: Cluster, log: &mut impl Write) {
    let start = Instant::now();
    let end = start + Duration::from_millis(o.run_ms);
    let mut line = |v: serde_json::Value| {
        let _ = writeln!(log, "{v}");
    };
    let (mut landlord, mut cookie, mut event_id, mut last) = loop {
        if let Some(w) = register(o, &c).await {
            break w;
        }
        if Instant::now() > end {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    line(json!({"at": ms(start), "watching": event_id, "landlord": landlord.0}));
    let mut renewed = Instant::now();
    // Watch a little past the holders' end, to see their last releases (or until the stop
    // file exists: scripts/test-coord.sh makes the watchers' once every holder has exited).
    let stop = end + Duration::from_secs(3);
    while Instant::now() < stop && !stopped(o) {
        if renewed.elapsed() > Duration::from_secs(5) {
            let req = Request { id: 2, body: RequestBody::Renew { cookie, duration: 30_000 } };
            if let Ok(r) = c.send(Some(landlord), &req).await {
                match r.body {
                    ReplyBody::Renewed { .. } => renewed = Instant::now(),
                    ReplyBody::Error(e) if e.error_code() == Some(ErrorCode::UnknownLease) => {
                        line(json!({"at": ms(start), "watch_lost": event_id}));
                        if let Some(w) = register(o, &c).await {
                            (landlord, cookie, event_id, last) = w;
                            renewed = Instant::now();
                            line(json!({"at": ms(start), "watching": event_id}));
                        }
                    }
                    _ => {}
                }
            }
        }
        let body = CoordRequestBody::Poll { cookie, since: last, wait: 2_000, max: 0 };
        let Ok(r) = c.send_coord(Some(landlord), &CoordRequest { id: 3, body }).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
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
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            _ => {}
        }
    }
    line(json!({"at": ms(start), "done": true, "last": last}));
}
