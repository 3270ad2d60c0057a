//! `leasehold`: the operators' and developers' tool for `leasehold-server` and its stores.
//!
//! ```text
//! leasehold lease grant printer-3 --duration-ms 30000
//! leasehold lease renew 0000000000000003 <cookie> --duration-ms 30000
//! leasehold lease list 0000000000000003 --prefix job/
//! leasehold lease revoke --resource printer-3
//! leasehold lease watch locks/ --prefix
//! leasehold lock locks/report --wait-ms 60000 -- ./make-report.sh
//! leasehold elect leader --value "$(hostname)" -- ./serve.sh
//! leasehold cluster status
//! leasehold renewal create-set --duration-ms 3600000
//! leasehold renewal add <service> <set> <landlord> <cookie> --remaining-ms 30000
//! leasehold discovery status
//! leasehold store verify --data ./data
//! leasehold completions bash > /etc/bash_completion.d/leasehold
//! ```
//!
//! Servers come from `--servers` or `LEASEHOLD_SERVERS` (comma-separated URLs; default
//! `http://127.0.0.1:7420`). Landlord ids are 16 hex digits and cookies 32, exactly as the
//! wire writes them (and as every command prints them). `--output json` prints one JSON
//! document for scripts (`lease watch`, `lock` and `elect`: one per line, as they happen).
//! Exit status: 0 done; 1 the landlord said no (unknown lease, denied, a lock held past the
//! wait or lost) or the server refused the caller, or a store was refused; 2 bad usage
//! (including an unreadable certificate or key); 3 no server answered. `lock` and `elect`
//! with a command exit with the command's status (128 + N if a signal N ended it, 127 if it
//! could not be started).
//!
//! A secured server: `--token` (or `LEASEHOLD_TOKEN`, better: a command line is visible to
//! the machine's other users) goes as `Authorization: Bearer` with every request, admin calls
//! and `cluster status` included, and is never printed; `https://` URLs are checked against
//! `--cacert` (or the system's CAs), and `--cert`/`--key` present a client certificate
//! (mTLS).
//!
//! `lock` and `elect` are the recipes of `leasehold_client::recipes` (see [`coord`]); the
//! server must make the name exclusive (`--exclusive-prefix`), which they check.

mod coord;
mod out;
mod renewal;
mod store;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand};
use hyper_util::client::legacy::connect::Connect;
use leasehold::holder::grant_request;
use leasehold::{
    Cookie, Encoding, ErrorCode, LandlordId, Reply, ReplyBody, Request, RequestBody, ANY, FOREVER,
};
use leasehold_client::admin::{hex, AdminLease, LeasePage, Revoked};
use leasehold_client::{ClientError, Cluster, ClusterConfig, TlsOptions};
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
    /// How long `lease grant`, `renew` and `cancel` keep trying while no server answers (a
    /// shard being taken over answers 503 for a moment; each round waits the Retry-After a
    /// server asked for), ms; 0: one round over the servers.
    #[arg(long, global = true, default_value_t = 5000)]
    retry_ms: u64,
    #[command(flatten)]
    access: Access,
    #[command(subcommand)]
    command: Top,
}

/// A secret that never shows in a `Debug` (nor anywhere else this program prints).
#[derive(Clone)]
struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl std::str::FromStr for Secret {
    type Err = String;
    fn from_str(s: &str) -> Result<Secret, String> {
        Ok(Secret(s.trim().to_string()))
    }
}

/// How to reach a secured server: a token, TLS, a client certificate.
#[derive(Debug, clap::Args)]
struct Access {
    /// A bearer token (`leasehold-server token add` prints it), sent with every request; never
    /// printed. Prefer the environment: a command line is visible to other users.
    #[arg(
        long,
        global = true,
        env = "LEASEHOLD_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    token: Option<Secret>,
    /// CA certificates (PEM) that https:// servers must chain to (default: the system's).
    #[arg(long, global = true, env = "LEASEHOLD_CACERT", value_name = "FILE")]
    cacert: Option<PathBuf>,
    /// A client certificate chain (PEM) for servers that ask for one (mTLS); its key in --key,
    /// or in the same file.
    #[arg(long, global = true, env = "LEASEHOLD_CERT", value_name = "FILE")]
    cert: Option<PathBuf>,
    /// The private key (PEM) of --cert.
    #[arg(long, global = true, env = "LEASEHOLD_KEY", value_name = "FILE")]
    key: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Top {
    /// Grant, renew, cancel, watch, look up, list and revoke leases.
    #[command(subcommand)]
    Lease(LeaseCmd),
    /// Takes a lock (an exclusive resource) with a fencing token; runs a command while it is
    /// held, or holds it until Ctrl-C.
    #[command(after_help = LOCK_HELP)]
    Lock {
        /// The lock: a resource the server makes exclusive (its --exclusive-prefix).
        name: String,
        /// How long to wait if it is held, ms (0: fail at once; default: as long as it takes).
        #[arg(long)]
        wait_ms: Option<u64>,
        /// The lease, ms: renewed while held; how long the lock outlives this process if it
        /// dies without releasing it.
        #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(i64).range(1..))]
        duration_ms: i64,
        /// A label watchers see with the lock's events (default: this process and host).
        #[arg(long)]
        holder: Option<String>,
        /// If the lock is lost, the command gets SIGTERM, and SIGKILL this many ms later.
        #[arg(long, default_value_t = 5_000)]
        kill_after_ms: u64,
        /// The command to run while the lock is held, and its arguments (after --).
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Campaigns for leadership of a name; runs a command while leading, or leads until
    /// Ctrl-C.
    #[command(after_help = ELECT_HELP)]
    Elect {
        /// The election: a resource the server makes exclusive.
        name: String,
        /// What this candidate is known by (observers and `lease watch` see it).
        #[arg(long)]
        value: String,
        /// How long to campaign, ms (0: lead now or fail; default: as long as it takes).
        #[arg(long)]
        wait_ms: Option<u64>,
        /// The leader's lease, ms: renewed while leading; how long leadership outlives this
        /// process if it dies without resigning.
        #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(i64).range(1..))]
        duration_ms: i64,
        /// If leadership is lost, the command gets SIGTERM, and SIGKILL this many ms later.
        #[arg(long, default_value_t = 5_000)]
        kill_after_ms: u64,
        /// The command to run while leading, and its arguments (after --).
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// What each server serves: readiness, shards, owners, epochs, leases, journal lag.
    #[command(subcommand)]
    Cluster(ClusterCmd),
    /// A renewal service's sets: create, add and remove client leases, list, listen, renew,
    /// cancel (docs/renewal-service.md).
    #[command(subcommand)]
    Renewal(renewal::RenewalCmd),
    /// The lookup discovery service.
    #[command(subcommand)]
    Discovery(DiscoveryCmd),
    /// A server's store, offline: a data directory or a PostgreSQL URL.
    #[command(subcommand)]
    Store(StoreCmd),
    /// Prints a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

const LOCK_HELP: &str = "\
The server must make NAME exclusive (leasehold-server --exclusive-prefix locks/): otherwise every
grant of it succeeds and no lock excludes anyone, so `lock` checks it and refuses.

The command runs with, in its environment:
  LEASEHOLD_FENCING_TOKEN   the lock's token: pass it with every write to the protected resource,
                            which refuses any token lower than the highest it has seen
  LEASEHOLD_LOCK_COOKIE     the lease's cookie, LEASEHOLD_LOCK_LANDLORD its landlord
  LEASEHOLD_LOCK_RESOURCE   what is held
The lock is released when the command ends, and `lock` exits with the command's status. If the
lock is lost (its lease could not be renewed), the command gets SIGTERM; `lock` then exits 1.
SIGTERM to `lock` is passed on to the command. Without a command, `lock` prints the token and
holds the lock until Ctrl-C.

Examples:
  leasehold lock locks/report --wait-ms 60000 -- ./make-report.sh
  leasehold --output json lock locks/db          # {\"token\":\"7\",...}, held until Ctrl-C";

const ELECT_HELP: &str = "\
Candidates wait in line, first come first served; the leader's lease is renewed while it leads.
The command runs with LEASEHOLD_FENCING_TOKEN (greater for every later leader), as for `lock`;
leadership ends (the next candidate leads at once) when the command ends, and `elect` exits
with the command's status. Lost leadership: SIGTERM to the command, exit 1.

Examples:
  leasehold elect scheduler --value \"$(hostname)\" -- ./run-scheduler.sh
  leasehold lease watch scheduler                  # who leads, as it changes";

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
    /// Prints the events of a resource (or of every resource under a prefix) as they happen:
    /// granted, cancelled, expired (and renewed, with --renewals), until Ctrl-C.
    Watch {
        /// The resource, or the prefix with --prefix.
        resource: String,
        /// Every resource starting with RESOURCE (on a server of one shard, or inside one of
        /// its --colocate prefixes).
        #[arg(long)]
        prefix: bool,
        /// Renewals are events too.
        #[arg(long)]
        renewals: bool,
        /// The watch's own lease, ms (renewed while this runs).
        #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(i64).range(1..))]
        duration_ms: i64,
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
enum DiscoveryCmd {
    /// What the discovery service holds: registrations, registrars, announcements (`GET
    /// /discovery/status` of the first server that answers; needs `metrics` with tokens).
    Status,
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
            ClientError::Unavailable(m) => Fail::Unavailable(unavailable_message(m)),
            ClientError::Config(m) => Fail::Usage(m),
            ClientError::Refused(m) => Fail::No(refused_message(&m)),
            ClientError::Http { status: status @ (401 | 403), message } => {
                Fail::No(refused_message(&format!("HTTP {status}: {message}")))
            }
            e => Fail::No(e.to_string()),
        }
    }
}

/// The server refused the caller (401, 403): what it said, and, when no credential came,
/// where one goes.
fn refused_message(why: &str) -> String {
    let hint = if why.contains("unauthorized") {
        " (a token goes in --token or LEASEHOLD_TOKEN, a client certificate in --cert and --key)"
    } else {
        ""
    };
    format!("the server refused: {why}{hint}")
}

/// No server answered: what each said, and, when TLS refused a server's certificate, why that
/// may be.
fn unavailable_message(why: String) -> String {
    if why.contains("invalid peer certificate") {
        format!(
            "{why} (the server's certificate must chain to a CA of --cacert, or of the \
             system's bundle without it, and name the host of its URL)"
        )
    } else {
        why
    }
}

type Done = Result<Shown, Fail>;

/// How a command ended well.
enum Outcome {
    /// A result to print.
    Show(Shown),
    /// Printed already (`lock`, `elect`, `lease watch`): exit with this status.
    Exit(u8),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let output = cli.output;
    let result =
        match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
            Ok(rt) => rt.block_on(run(cli)),
            Err(e) => Err(Fail::Unavailable(format!("cannot start the runtime: {e}"))),
        };
    match result {
        Ok(Outcome::Show(shown)) => {
            shown.print(output);
            ExitCode::SUCCESS
        }
        Ok(Outcome::Exit(code)) => ExitCode::from(code),
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

async fn run(cli: Cli) -> Result<Outcome, Fail> {
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
        Top::Store(cmd) => store_cmd(cmd).await.map(Outcome::Show),
        command => {
            let (config, tls) = connection(&cli.servers, cli.timeout_ms, &cli.access)?;
            match tls {
                Some(tls) => {
                    let c = Cluster::with_tls(config, &tls)?;
                    served(c, command, cli.output, cli.retry_ms, &cli.servers).await
                }
                None => {
                    let c = Cluster::new(config)?;
                    served(c, command, cli.output, cli.retry_ms, &cli.servers).await
                }
            }
        }
    }
}

/// The commands that talk to servers, on a cluster over plain TCP or TLS.
async fn served<C: Connect + Clone + Send + Sync + 'static>(
    c: Cluster<C>,
    command: Top,
    output: Output,
    retry_ms: u64,
    servers: &[String],
) -> Result<Outcome, Fail> {
    match command {
        Top::Renewal(cmd) => renewal::run(&c, cmd, servers).await.map(Outcome::Show),
        Top::Discovery(DiscoveryCmd::Status) => discovery_status(&c).await.map(Outcome::Show),
        Top::Lease(LeaseCmd::Watch { resource, prefix, renewals, duration_ms, r }) => {
            let selector = resource_arg(&resource, &r)?;
            coord::watch(c, selector, prefix, renewals, duration_ms, output).await
        }
        Top::Lease(cmd) => lease_cmd(&c, cmd, retry_ms).await.map(Outcome::Show),
        Top::Cluster(ClusterCmd::Status) => status(&c).await.map(Outcome::Show),
        Top::Lock { name, wait_ms, duration_ms, holder, kill_after_ms, command } => {
            let holder = holder.unwrap_or_else(default_holder);
            let hold =
                coord::HoldArgs { command, kill_after: Duration::from_millis(kill_after_ms) };
            coord::lock(c, name, wait_ms, duration_ms, holder, hold, output).await
        }
        Top::Elect { name, value, wait_ms, duration_ms, kill_after_ms, command } => {
            let hold =
                coord::HoldArgs { command, kill_after: Duration::from_millis(kill_after_ms) };
            coord::elect(c, name, value, wait_ms, duration_ms, hold, output).await
        }
        Top::Store(_) | Top::Completions { .. } => unreachable!("served without a cluster"),
    }
}

/// `leasehold:PID@HOST`: who holds a lock, for watchers.
fn default_holder() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    format!("leasehold:{}@{host}", std::process::id())
}

/// That a file given for `flag` can be read: a clear usage error before any TLS library says
/// less.
fn readable(flag: &str, path: &std::path::Path) -> Result<(), Fail> {
    std::fs::File::open(path)
        .map(drop)
        .map_err(|e| Fail::Usage(format!("{flag} {}: cannot read it: {e}", path.display())))
}

/// The cluster's settings and, for `https://` servers or a certificate given, its TLS.
fn connection(
    servers: &[String],
    timeout_ms: u64,
    access: &Access,
) -> Result<(ClusterConfig, Option<TlsOptions>), Fail> {
    let mut config = ClusterConfig::new(servers.iter().cloned())
        .encoding(Encoding::Json)
        .attempt_timeout(Duration::from_millis(timeout_ms.max(1)));
    if let Some(Secret(token)) = &access.token {
        if token.is_empty() {
            return Err(Fail::Usage("--token (or LEASEHOLD_TOKEN) is empty".into()));
        }
        config = config.bearer_token(token).map_err(|_| {
            Fail::Usage("--token: not a token (it has characters a header cannot carry)".into())
        })?;
        if let Some(u) = servers.iter().find(|u| u.trim().starts_with("http://")) {
            eprintln!("leasehold: warning: the token goes to {u} unencrypted (not https://)");
        }
    }
    if access.key.is_some() && access.cert.is_none() {
        return Err(Fail::Usage(
            "--key needs --cert: the client certificate the key belongs to".into(),
        ));
    }
    let https = servers.iter().any(|u| u.trim().starts_with("https://"));
    if !https && access.cacert.is_none() && access.cert.is_none() {
        return Ok((config, None));
    }
    let mut tls = TlsOptions::new();
    if let Some(ca) = &access.cacert {
        readable("--cacert", ca)?;
        tls = tls.ca_file(ca);
    } else if !std::path::Path::new(leasehold_client::tls::SYSTEM_CA_BUNDLE).exists() {
        return Err(Fail::Usage(format!(
            "https:// needs the CAs to check the servers against: --cacert FILE (there is no \
             system bundle at {})",
            leasehold_client::tls::SYSTEM_CA_BUNDLE
        )));
    }
    if let Some(cert) = &access.cert {
        readable("--cert", cert)?;
        let key = access.key.as_ref().unwrap_or(cert);
        readable("--key", key)?;
        tls = tls.client_cert(cert, key);
    }
    // The files' contents (PEM, a key that matches) are checked here, before anything is sent.
    tls.client_config().map_err(|e| match e {
        ClientError::Config(m) => Fail::Usage(format!("--cacert, --cert or --key: {m}")),
        e => Fail::Usage(e.to_string()),
    })?;
    Ok((config, Some(tls)))
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
        // Landlord 0: the server refused the caller before any landlord saw the request.
        ReplyBody::Error(e)
            if reply.landlord.0 == 0 && e.error_code() == Some(ErrorCode::LeaseDenied) =>
        {
            Err(Fail::No(refused_message(&e.message)))
        }
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

async fn lease_cmd<C: Connect + Clone + Send + Sync + 'static>(
    c: &Cluster<C>,
    cmd: LeaseCmd,
    retry_ms: u64,
) -> Done {
    // One round over the servers, then more until the deadline while none gives a reply.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(retry_ms);
    let send = |landlord: Option<LandlordId>, req: Request| async move {
        c.send_until(landlord, &req, deadline).await.map(|(r, _)| r)
    };
    match cmd {
        LeaseCmd::Grant { resource, duration_ms, r } => {
            let resource = resource_arg(&resource, &r)?;
            let req = grant_request(request_id(), resource, duration_arg(&duration_ms)?);
            let reply = answered(send(None, req).await?)?;
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
            let reply = answered(send(Some(landlord), req).await?)?;
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
            answered(send(Some(landlord), req).await?)?;
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
        LeaseCmd::Watch { .. } => unreachable!("`served` runs watches"),
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

/// `GET /discovery/status`: its top-level fields as rows, the document as JSON.
async fn discovery_status<C: Connect + Clone + Send + Sync + 'static>(c: &Cluster<C>) -> Done {
    let (status, body) = c.get("/discovery/status").await?;
    let text = String::from_utf8_lossy(&body).trim().to_string();
    if !status.is_success() {
        return Err(match status.as_u16() {
            401 | 403 => Fail::No(refused_message(&format!("HTTP {status}: {text}"))),
            _ => Fail::No(format!("HTTP {status}: {text}")),
        });
    }
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| Fail::No(format!("not a discovery status ({e}): {text}")))?;
    let rows = v
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, x)| {
                    let shown = match x {
                        Value::Array(a) => format!("{} item(s)", a.len()),
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    vec![k.clone(), shown]
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Shown { headers: vec!["FIELD", "VALUE"], rows, json: v, note: None })
}

async fn status<C: Connect + Clone + Send + Sync + 'static>(c: &Cluster<C>) -> Done {
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
        let ready_text = match code {
            200 => "ready",
            // The caller's identity may not read /readyz and /metrics (permission `metrics`).
            401 | 403 => "refused",
            _ => "not ready",
        };
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
    let refused = servers.iter().filter(|s| s["status"] == 401 || s["status"] == 403).count();
    let mut notes = Vec::new();
    if down > 0 {
        notes.push(format!("{down} server(s) did not answer"));
    }
    if refused > 0 {
        notes.push(format!(
            "{refused} server(s) refused /readyz and /metrics: a token with the `metrics` \
             permission sees them"
        ));
    }
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
        note: (!notes.is_empty()).then(|| notes.join("; ")),
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
                        {
                            let note = r
                                .error
                                .clone()
                                .or_else(|| r.torn.as_ref().map(|t| format!("torn tail: {t}")));
                            let kind = match r.kind {
                                "renewal" => Some("renewal shard (LEASES: client leases)"),
                                "discovery" => Some("discovery shard (LEASES: registrations)"),
                                _ => None,
                            };
                            match (kind, note) {
                                (Some(k), Some(n)) => format!("{k}; {n}"),
                                (Some(k), None) => k.to_string(),
                                (None, n) => n.unwrap_or_default(),
                            }
                        },
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
