//! `leasehold`: the operators' and developers' tool for `leasehold-server` and its stores.
//!
//! ```text
//! leasehold lease grant printer-3 --duration-ms 30000
//! leasehold lease renew 0000000000000003 <cookie> --duration-ms 30000
//! leasehold lease list 0000000000000003 --prefix job/
//! leasehold lease revoke --resource printer-3
//! leasehold cluster status
//! leasehold store verify --data ./data
//! leasehold completions bash > /etc/bash_completion.d/leasehold
//! ```
//!
//! Servers come from `--servers` or `LEASEHOLD_SERVERS` (comma-separated URLs; default
//! `http://127.0.0.1:7420`). Landlord ids are 16 hex digits and cookies 32, exactly as the
//! wire writes them (and as every command prints them). `--output json` prints one JSON
//! document for scripts. Exit status: 0 done; 1 the landlord said no (unknown lease, denied)
//! or a store was refused; 2 bad usage; 3 no server answered.
//!
//! `lease watch`, `lock` and `elect` come with watches and exclusive leases (issue 25).

mod out;
mod store;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand};
use leasehold::holder::grant_request;
use leasehold::{
    Cookie, Encoding, LandlordId, Reply, ReplyBody, Request, RequestBody, ANY, FOREVER,
};
use leasehold_client::admin::{hex, AdminLease, LeasePage, Revoked};
use leasehold_client::{ClientError, Cluster, ClusterConfig};
use serde_json::{json, Value};

use crate::out::{ms, Output, Shown};

#[derive(Debug, Parser)]
#[command(
    name = "leasehold",
    version,
    about = "Leases, admin and status of leasehold-server; offline inspection of its stores"
)]
struct Cli {
    /// Server URLs, comma-separated.
    #[arg(
        long,
        global = true,
        env = "LEASEHOLD_SERVERS",
        value_delimiter = ',',
        default_value = "http://127.0.0.1:7420"
    )]
    servers: Vec<String>,
    /// table (for people) or json (for scripts).
    #[arg(long, short, global = true, value_enum, default_value = "table")]
    output: Output,
    /// Time-out of one attempt at one server, ms.
    #[arg(long, global = true, default_value_t = 2000)]
    timeout_ms: u64,
    #[command(subcommand)]
    command: Top,
}

#[derive(Debug, Subcommand)]
enum Top {
    /// Grant, renew, cancel, look up, list and revoke leases.
    #[command(subcommand)]
    Lease(LeaseCmd),
    /// What each server serves: readiness, shards, owners, epochs, leases, journal lag.
    #[command(subcommand)]
    Cluster(ClusterCmd),
    /// A server's store, offline: a data directory or a PostgreSQL URL.
    #[command(subcommand)]
    Store(StoreCmd),
    /// Prints a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// A resource: text, or hex with `--hex`.
#[derive(Debug, clap::Args)]
struct ResourceArg {
    /// Read the resource as hex bytes instead of text.
    #[arg(long)]
    hex: bool,
}

#[derive(Debug, Subcommand)]
enum LeaseCmd {
    /// Asks for a new lease (the server picks the shard from the resource).
    Grant {
        /// What the lease is for.
        resource: String,
        /// How long: ms, `any` or `forever`.
        #[arg(long, default_value = "30000")]
        duration_ms: String,
        #[command(flatten)]
        r: ResourceArg,
    },
    /// Renews a lease.
    Renew {
        /// The lease's landlord (16 hex digits, as `grant` prints it).
        landlord: String,
        /// The lease's cookie (32 hex digits).
        cookie: String,
        /// How long: ms, `any` or `forever`.
        #[arg(long, default_value = "30000")]
        duration_ms: String,
    },
    /// Cancels a lease (as its holder).
    Cancel {
        /// The lease's landlord.
        landlord: String,
        /// The lease's cookie.
        cookie: String,
    },
    /// Shows one lease and its time left (admin), or the leases on a resource.
    Get {
        /// The lease's landlord (omit with --resource).
        landlord: Option<String>,
        /// The lease's cookie.
        cookie: Option<String>,
        /// The leases on this resource instead (at the landlord its grants go to, or LANDLORD).
        #[arg(long)]
        resource: Option<String>,
        #[command(flatten)]
        r: ResourceArg,
    },
    /// Lists a landlord's leases (admin), in cookie order.
    List {
        /// The landlord.
        landlord: String,
        /// Only resources starting with this.
        #[arg(long, default_value = "")]
        prefix: String,
        /// Leases per page.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Start after this cookie (the cursor the previous page printed).
        #[arg(long)]
        after: Option<String>,
        /// Every page, not just the first.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        r: ResourceArg,
    },
    /// Revokes a lease, or every lease on a resource (admin; durable before it answers).
    Revoke {
        /// The lease's landlord (with --resource: where to look instead of the resource's shard).
        landlord: Option<String>,
        /// The lease's cookie.
        cookie: Option<String>,
        /// Revoke every lease on this resource.
        #[arg(long)]
        resource: Option<String>,
        #[command(flatten)]
        r: ResourceArg,
    },
}

#[derive(Debug, Subcommand)]
enum ClusterCmd {
    /// Each server's readiness and shards, with owners, epochs, leases and journal lag.
    Status,
}

#[derive(Debug, clap::Args)]
struct StoreArgs {
    /// A server's data directory (one shard-N directory per shard).
    #[arg(long, conflicts_with = "store", required_unless_present = "store")]
    data: Option<PathBuf>,
    /// A PostgreSQL URL (postgres://user@host:port/db).
    #[arg(long)]
    store: Option<String>,
    /// Only this shard (a number, as in shard-N).
    #[arg(long)]
    shard: Option<u64>,
}

#[derive(Debug, Subcommand)]
enum StoreCmd {
    /// What each shard's store holds: snapshot, log, records, leases, a torn tail.
    Inspect(StoreArgs),
    /// Recovers every shard as a server would; exit 1 if any is refused.
    Verify(StoreArgs),
    /// Every lease held, with its time left as of the last record.
    Dump(StoreArgs),
    /// Writes a fresh snapshot and drops the log it covers (no server may run on it).
    Compact(StoreArgs),
}

/// How a command failed.
enum Fail {
    /// The landlord said no, or a store was refused.
    No(String),
    Usage(String),
    Unavailable(String),
    /// A result to print, and then fail (1) with this message (`store verify`).
    Refused(Box<Shown>, String),
}

impl From<ClientError> for Fail {
    fn from(e: ClientError) -> Fail {
        match e {
            ClientError::Unavailable(m) => Fail::Unavailable(m),
            ClientError::Config(m) => Fail::Usage(m),
            e => Fail::No(e.to_string()),
        }
    }
}

type Done = Result<Shown, Fail>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let output = cli.output;
    let result =
        match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
            Ok(rt) => rt.block_on(run(cli)),
            Err(e) => Err(Fail::Unavailable(format!("cannot start the runtime: {e}"))),
        };
    match result {
        Ok(shown) => {
            shown.print(output);
            ExitCode::SUCCESS
        }
        Err(Fail::Refused(shown, msg)) => {
            shown.print(output);
            eprintln!("leasehold: {msg}");
            ExitCode::from(1)
        }
        Err(f) => {
            let (code, msg) = match f {
                Fail::Refused(..) => unreachable!("handled above"),
                Fail::No(m) => (1, m),
                Fail::Usage(m) => (2, m),
                Fail::Unavailable(m) => (3, format!("no server answered: {m}")),
            };
            if output == Output::Json {
                println!("{}", json!({ "error": msg }));
            }
            eprintln!("leasehold: {msg}");
            ExitCode::from(code)
        }
    }
}

async fn run(cli: Cli) -> Done {
    match cli.command {
        Top::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "leasehold",
                &mut std::io::stdout(),
            );
            std::process::exit(0);
        }
        Top::Store(cmd) => store_cmd(cmd).await,
        Top::Lease(cmd) => lease_cmd(&cluster(&cli.servers, cli.timeout_ms)?, cmd).await,
        Top::Cluster(ClusterCmd::Status) => status(&cluster(&cli.servers, cli.timeout_ms)?).await,
    }
}

fn cluster(servers: &[String], timeout_ms: u64) -> Result<Cluster, Fail> {
    let config = ClusterConfig::new(servers.iter().cloned())
        .encoding(Encoding::Json)
        .attempt_timeout(Duration::from_millis(timeout_ms.max(1)));
    Ok(Cluster::new(config)?)
}

fn landlord_arg(s: &str) -> Result<LandlordId, Fail> {
    s.parse::<LandlordId>().map_err(|_| {
        Fail::Usage(format!("{s:?} is not a landlord id: 16 hex digits, as the wire and `lease grant` write it (landlord 16 is 0000000000000010)"))
    })
}

fn cookie_arg(s: &str) -> Result<Cookie, Fail> {
    s.parse::<Cookie>().map_err(|_| Fail::Usage(format!("{s:?} is not a cookie: 32 hex digits")))
}

fn duration_arg(s: &str) -> Result<i64, Fail> {
    match s {
        "any" | "ANY" => Ok(ANY),
        "forever" | "FOREVER" => Ok(FOREVER),
        n => n
            .parse::<i64>()
            .ok()
            .filter(|d| *d >= 0)
            .ok_or_else(|| Fail::Usage(format!("--duration-ms {n:?}: ms, `any` or `forever`"))),
    }
}

fn resource_arg(s: &str, r: &ResourceArg) -> Result<Vec<u8>, Fail> {
    if r.hex {
        leasehold_client::admin::unhex(s).ok_or_else(|| Fail::Usage(format!("{s:?} is not hex")))
    } else {
        Ok(s.as_bytes().to_vec())
    }
}

/// A request id for a one-off request: the process id and the time, so that two runs differ.
fn request_id() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    (u64::from(std::process::id()) << 32) ^ t.as_micros() as u64
}

/// The landlord's answer, or its error as a failure.
fn answered(reply: Reply) -> Result<Reply, Fail> {
    match &reply.body {
        ReplyBody::Error(e) => {
            let name = e.error_code().map_or("error", |c| c.name());
            Err(Fail::No(format!("landlord {} answered {name}: {}", reply.landlord, e.message)))
        }
        _ => Ok(reply),
    }
}

fn lease_rows(leases: &[AdminLease]) -> Vec<Vec<String>> {
    leases
        .iter()
        .map(|l| {
            vec![
                l.landlord.to_string(),
                l.cookie.to_string(),
                ms(l.expires_in_ms),
                l.resource_text.clone().unwrap_or_else(|| format!("hex:{}", l.resource)),
            ]
        })
        .collect()
}

const LEASE_HEADERS: [&str; 4] = ["LANDLORD", "COOKIE", "LEFT", "RESOURCE"];

fn page_shown(page: &LeasePage, note: Option<String>) -> Shown {
    Shown {
        headers: LEASE_HEADERS.to_vec(),
        rows: lease_rows(&page.leases),
        json: serde_json::to_value(page).unwrap_or(Value::Null),
        note,
    }
}

fn revoked_shown(r: &Revoked) -> Shown {
    Shown {
        headers: LEASE_HEADERS.to_vec(),
        rows: lease_rows(&r.revoked),
        json: serde_json::to_value(r).unwrap_or(Value::Null),
        note: Some(format!("revoked {} lease(s) at landlord {}", r.revoked.len(), r.landlord)),
    }
}

async fn lease_cmd(c: &Cluster, cmd: LeaseCmd) -> Done {
    match cmd {
        LeaseCmd::Grant { resource, duration_ms, r } => {
            let resource = resource_arg(&resource, &r)?;
            let req = grant_request(request_id(), resource, duration_arg(&duration_ms)?);
            let reply = answered(c.send(None, &req).await?)?;
            let ReplyBody::Granted { cookie, duration } = reply.body else {
                return Err(Fail::No(format!("unexpected answer: {reply:?}")));
            };
            Ok(Shown {
                headers: vec!["LANDLORD", "COOKIE", "GRANTED"],
                rows: vec![vec![reply.landlord.to_string(), cookie.to_string(), ms(duration)]],
                json: json!({ "landlord": reply.landlord, "cookie": cookie, "duration_ms": duration.to_string() }),
                note: None,
            })
        }
        LeaseCmd::Renew { landlord, cookie, duration_ms } => {
            let (landlord, cookie) = (landlord_arg(&landlord)?, cookie_arg(&cookie)?);
            let req = Request {
                id: request_id(),
                body: RequestBody::Renew { cookie, duration: duration_arg(&duration_ms)? },
            };
            let reply = answered(c.send(Some(landlord), &req).await?)?;
            let ReplyBody::Renewed { duration } = reply.body else {
                return Err(Fail::No(format!("unexpected answer: {reply:?}")));
            };
            Ok(Shown {
                headers: vec!["LANDLORD", "COOKIE", "RENEWED"],
                rows: vec![vec![landlord.to_string(), cookie.to_string(), ms(duration)]],
                json: json!({ "landlord": landlord, "cookie": cookie, "duration_ms": duration.to_string() }),
                note: None,
            })
        }
        LeaseCmd::Cancel { landlord, cookie } => {
            let (landlord, cookie) = (landlord_arg(&landlord)?, cookie_arg(&cookie)?);
            let req = Request { id: request_id(), body: RequestBody::Cancel { cookie } };
            answered(c.send(Some(landlord), &req).await?)?;
            Ok(Shown {
                headers: vec!["LANDLORD", "COOKIE", "STATE"],
                rows: vec![vec![landlord.to_string(), cookie.to_string(), "cancelled".into()]],
                json: json!({ "landlord": landlord, "cookie": cookie, "cancelled": true }),
                note: None,
            })
        }
        LeaseCmd::Get { landlord, cookie, resource, r } => {
            let landlord = landlord.as_deref().map(landlord_arg).transpose()?;
            match (resource, landlord, cookie) {
                (Some(res), l, None) => {
                    let page = c.admin().resource(&resource_arg(&res, &r)?, l).await?;
                    if page.leases.is_empty() {
                        return Err(Fail::No(format!(
                            "no lease on resource {res:?} at landlord {}",
                            page.landlord
                        )));
                    }
                    Ok(page_shown(&page, None))
                }
                (None, Some(l), Some(ck)) => {
                    let lease = c.admin().get(l, cookie_arg(&ck)?).await?;
                    Ok(Shown {
                        headers: LEASE_HEADERS.to_vec(),
                        rows: lease_rows(std::slice::from_ref(&lease)),
                        json: serde_json::to_value(&lease).unwrap_or(Value::Null),
                        note: None,
                    })
                }
                _ => Err(Fail::Usage("give LANDLORD COOKIE, or --resource R [LANDLORD]".into())),
            }
        }
        LeaseCmd::List { landlord, prefix, limit, after, all, r } => {
            let landlord = landlord_arg(&landlord)?;
            let prefix = resource_arg(&prefix, &r)?;
            let mut after = after.as_deref().map(cookie_arg).transpose()?;
            let mut leases = Vec::new();
            loop {
                let page = c.admin().list(landlord, &prefix, after, limit).await?;
                leases.extend(page.leases);
                after = page.next;
                if !all || after.is_none() {
                    break;
                }
            }
            let note = after.map(|a| format!("more: --after {a}"));
            let page = LeasePage { landlord, leases, next: after };
            Ok(page_shown(&page, note))
        }
        LeaseCmd::Revoke { landlord, cookie, resource, r } => {
            let landlord = landlord.as_deref().map(landlord_arg).transpose()?;
            match (resource, landlord, cookie) {
                (Some(res), l, None) => Ok(revoked_shown(
                    &c.admin().revoke_resource(&resource_arg(&res, &r)?, l).await?,
                )),
                (None, Some(l), Some(ck)) => {
                    Ok(revoked_shown(&c.admin().revoke(l, cookie_arg(&ck)?).await?))
                }
                _ => Err(Fail::Usage("give LANDLORD COOKIE, or --resource R [LANDLORD]".into())),
            }
        }
    }
}

/// One sample of a Prometheus text: `name{shard="N"} value` or `name value`.
fn samples(text: &str, name: &str) -> Vec<(Option<u64>, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let (labels, value) = rest.rsplit_once(' ')?;
            if !(labels.is_empty() || labels.starts_with('{')) {
                return None;
            }
            let shard = labels
                .split("shard=\"")
                .nth(1)
                .and_then(|s| s.split('"').next())
                .and_then(|s| s.parse().ok());
            if labels.starts_with('{') && shard.is_none() {
                return None;
            }
            Some((shard, value.trim().parse().ok()?))
        })
        .collect()
}

async fn status(c: &Cluster) -> Done {
    let mut rows = Vec::new();
    let mut servers = Vec::new();
    for (i, origin) in c.origins().into_iter().enumerate() {
        let ready = match c.get_from(i, "/readyz").await {
            Ok((s, body)) if s.as_u16() != 404 => {
                Some((s.as_u16(), serde_json::from_slice::<Value>(&body).ok()))
            }
            Ok(_) => match c.get_from(i, "/healthz").await {
                Ok((s, _)) => Some((s.as_u16(), None)),
                Err(_) => None,
            },
            Err(_) => None,
        };
        let metrics = c
            .get_from(i, "/metrics")
            .await
            .ok()
            .map(|(_, b)| String::from_utf8_lossy(&b).to_string());
        let Some((code, readyz)) = ready else {
            rows.push(vec![
                origin.clone(),
                "down".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
            servers.push(json!({ "server": origin, "up": false }));
            continue;
        };
        let text = metrics.unwrap_or_default();
        let per = |name| samples(&text, name);
        let (live, lag_r, lag_s) = (
            per("leasehold_live_leases"),
            per("leasehold_journal_lag_records"),
            per("leasehold_journal_lag_seconds"),
        );
        let get = |v: &Vec<(Option<u64>, f64)>, id: u64| {
            v.iter().find(|(s, _)| *s == Some(id)).map(|x| x.1)
        };
        // Shards: from /readyz when the server has it (state, owner, epoch), else from the
        // shards this server's metrics name (served here).
        let mut shards: Vec<(u64, String, Option<String>, Option<i64>)> = Vec::new();
        if let Some(list) = readyz.as_ref().and_then(|r| r["shards"].as_array()) {
            for s in list {
                let Some(id) = s["shard"].as_u64() else { continue };
                shards.push((
                    id,
                    s["state"].as_str().unwrap_or("?").to_string(),
                    s["owner"].as_str().map(str::to_string),
                    s["epoch"].as_i64(),
                ));
            }
        } else {
            for (id, _) in &live {
                if let Some(id) = id {
                    shards.push((*id, "served".into(), Some(origin.clone()), None));
                }
            }
        }
        let ready_text = if code == 200 { "ready" } else { "not ready" };
        let mut js = Vec::new();
        for (id, state, owner, epoch) in &shards {
            let (l, lr, ls) = (get(&live, *id), get(&lag_r, *id), get(&lag_s, *id));
            rows.push(vec![
                origin.clone(),
                ready_text.into(),
                LandlordId(*id).to_string(),
                state.clone(),
                owner.clone().unwrap_or_else(|| "-".into()),
                epoch.map_or("-".into(), |e| e.to_string()),
                l.map_or("-".into(), |v| format!("{v}")),
                match (lr, ls) {
                    (Some(r), Some(s)) => format!("{r} rec / {s:.3} s"),
                    _ => "-".into(),
                },
            ]);
            js.push(json!({ "landlord": LandlordId(*id), "shard": id, "state": state, "owner": owner, "epoch": epoch,
                "live_leases": l, "journal_lag_records": lr, "journal_lag_seconds": ls }));
        }
        if shards.is_empty() {
            rows.push(vec![
                origin.clone(),
                ready_text.into(),
                "-".into(),
                "none served".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
        }
        servers.push(json!({ "server": origin, "up": true, "ready": code == 200, "status": code, "readyz": readyz, "shards": js }));
    }
    let down = servers.iter().filter(|s| s["up"] == false).count();
    Ok(Shown {
        headers: vec![
            "SERVER",
            "READY",
            "LANDLORD",
            "STATE",
            "OWNER",
            "EPOCH",
            "LEASES",
            "JOURNAL LAG",
        ],
        rows,
        json: json!({ "servers": servers }),
        note: (down > 0).then(|| format!("{down} server(s) did not answer")),
    })
}

async fn store_cmd(cmd: StoreCmd) -> Done {
    let (args, kind) = match &cmd {
        StoreCmd::Inspect(a) => (a, "inspect"),
        StoreCmd::Verify(a) => (a, "verify"),
        StoreCmd::Dump(a) => (a, "dump"),
        StoreCmd::Compact(a) => (a, "compact"),
    };
    if kind == "compact" {
        let done = match (&args.data, &args.store) {
            (Some(d), _) => store::compact_files(d, args.shard),
            (None, Some(u)) => store::compact_postgres(u, args.shard).await,
            _ => return Err(Fail::Usage("give --data DIR or --store URL".into())),
        }
        .map_err(Fail::No)?;
        let rows = done
            .iter()
            .map(|v| {
                vec![
                    v["landlord"].as_str().unwrap_or("").to_string(),
                    v["leases"].to_string(),
                    v["bytes_before"].to_string(),
                    v["bytes_after"].to_string(),
                ]
            })
            .collect();
        return Ok(Shown {
            headers: vec!["LANDLORD", "LEASES", "BYTES BEFORE", "BYTES AFTER"],
            rows,
            json: json!(done),
            note: None,
        });
    }
    let reports = match (&args.data, &args.store) {
        (Some(d), _) => store::files(d, args.shard),
        (None, Some(u)) => store::postgres(u, args.shard).await,
        _ => return Err(Fail::Usage("give --data DIR or --store URL".into())),
    }
    .map_err(Fail::No)?;
    let refused: Vec<String> = reports
        .iter()
        .filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", LandlordId(r.landlord))))
        .collect();
    match kind {
        "dump" => {
            let now = store::now_ms();
            let mut leases = Vec::new();
            for r in &reports {
                let Some(ll) = &r.landlord_state else { continue };
                let mut mine: Vec<AdminLease> = ll
                    .iter()
                    .map(|(cookie, exp, res)| AdminLease {
                        landlord: LandlordId(r.landlord),
                        cookie,
                        resource: hex(res),
                        resource_text: std::str::from_utf8(res).ok().map(str::to_string),
                        expires_in_ms: if exp == FOREVER { FOREVER } else { (exp - now).max(0) },
                    })
                    .collect();
                mine.sort_by_key(|l| l.cookie);
                leases.extend(mine);
            }
            if !refused.is_empty() {
                return Err(Fail::No(format!("refused: {}", refused.join("; "))));
            }
            Ok(Shown {
                headers: LEASE_HEADERS.to_vec(),
                rows: lease_rows(&leases),
                json: serde_json::to_value(&leases).unwrap_or(Value::Null),
                note: Some(format!(
                    "{} lease(s); time left as of each shard's last record",
                    leases.len()
                )),
            })
        }
        _ => {
            let rows = reports
                .iter()
                .map(|r| {
                    vec![
                        LandlordId(r.landlord).to_string(),
                        if r.error.is_some() { "REFUSED".into() } else { "ok".into() },
                        r.leases.to_string(),
                        r.snapshot_bytes.to_string(),
                        format!("{} in {}", r.log_bytes, r.log_parts),
                        r.replayed.to_string(),
                        r.last_seq.to_string(),
                        r.owner.as_ref().map_or("-".into(), |(o, e)| {
                            format!("{} (epoch {e})", o.as_deref().unwrap_or("none"))
                        }),
                        r.error
                            .clone()
                            .or_else(|| r.torn.as_ref().map(|t| format!("torn tail: {t}")))
                            .unwrap_or_default(),
                    ]
                })
                .collect();
            let shown = Shown {
                headers: vec![
                    "LANDLORD",
                    "STATE",
                    "LEASES",
                    "SNAPSHOT B",
                    "LOG B (PARTS)",
                    "REPLAYED",
                    "LAST SEQ",
                    "OWNER",
                    "NOTE",
                ],
                rows,
                json: json!(reports.iter().map(store::Report::json).collect::<Vec<_>>()),
                note: Some(format!("{} shard(s), {} refused", reports.len(), refused.len())),
            };
            if kind == "verify" && !refused.is_empty() {
                return Err(Fail::Refused(
                    Box::new(shown),
                    format!("refused: {}", refused.join("; ")),
                ));
            }
            Ok(shown)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_samples() {
        let text = "# HELP x\nleasehold_live_leases{shard=\"3\"} 12\nleasehold_live_leases_total 9\nleasehold_shards_owned 2\n";
        assert_eq!(samples(text, "leasehold_live_leases"), vec![(Some(3), 12.0)]);
        assert_eq!(samples(text, "leasehold_shards_owned"), vec![(None, 2.0)]);
    }

    #[test]
    fn ids_in_one_form() {
        assert_eq!(landlord_arg("0000000000000010").ok(), Some(LandlordId(16)));
        assert!(landlord_arg("16").is_err());
        assert_eq!(duration_arg("forever").ok(), Some(FOREVER));
        assert!(duration_arg("-5").is_err());
    }
}
