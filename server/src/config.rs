//! Settings: a TOML file (`--config`) and command-line flags; a flag given wins over the file.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use leasehold::{Duration, Limits, PolicySpec};
use serde::Deserialize;

/// Command-line flags. Every flag may also be set in the config file (same name, `_` for `-`).
#[derive(Debug, Parser, Default)]
#[command(
    name = "leasehold-server",
    version,
    about = "A lease server: leasehold's wire protocol over HTTP"
)]
pub struct Flags {
    /// A TOML file with any of these settings (flags win).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where to listen (default 127.0.0.1:7420).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// The embedded file store's directory, one subdirectory per shard (default ./data).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Keep shards in PostgreSQL instead (postgres://user@host:port/db).
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// Number of shards (landlords 1..=N). With PostgreSQL, the first server sets it for the
    /// cluster. Default 1.
    #[arg(long, value_name = "N")]
    pub shards: Option<u64>,
    /// Number of renewal-service shards (seed 003, LR), numbered after the landlords:
    /// `shards+1..=shards+N`. Default 0. With PostgreSQL, the cluster keeps the largest number any
    /// server was started with (docs/renewal-service.md).
    #[arg(long, value_name = "N")]
    pub renewal_shards: Option<u64>,
    /// Longest lease a renewal set is granted, in ms (default 7200000: two hours; ANY gets
    /// the smaller of this and one hour).
    #[arg(long, value_name = "MS")]
    pub max_set_lease_ms: Option<Duration>,
    /// Most event deliveries (POSTs to renewal sets' listeners) under way at once, per
    /// renewal-service shard (default 64); more events wait their turn, none is dropped.
    #[arg(long, value_name = "N")]
    pub max_event_deliveries: Option<u64>,
    /// The URL other servers use to reach this one (default `http://<listen>`).
    #[arg(long, value_name = "URL")]
    pub advertise: Option<String>,
    /// A name for this server in logs and ownership rows (default: the advertised URL).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Longest lease granted, in ms (default 60000). Shorthand for a bounded policy.
    #[arg(long, value_name = "MS")]
    pub max_lease_ms: Option<Duration>,
    /// Lease granted when the holder asks for ANY, in ms (default 30000).
    #[arg(long, value_name = "MS")]
    pub default_lease_ms: Option<Duration>,
    /// Ownership lease of a shard in PostgreSQL, in ms (default 3000).
    #[arg(long, value_name = "MS")]
    pub ownership_ms: Option<u64>,
    /// Log format: text or json (default text). Levels come from RUST_LOG (default info).
    #[arg(long, value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// Every resource under this prefix is exclusive (may be given several times; adds to
    /// `coordination.exclusive_prefixes` of the config file).
    #[arg(long = "exclusive-prefix", value_name = "PREFIX")]
    pub exclusive_prefix: Vec<String>,
    /// Every resource under this prefix lives in one shard, so that watches on the prefix see
    /// them all (may be given several times; adds to `coordination.colocate`).
    #[arg(long, value_name = "PREFIX")]
    pub colocate: Vec<String>,
    /// PostgreSQL: the clock guard's bound on this host's clock offset from the database's,
    /// in ms (default 500). Beyond it the server hands its shards back and is not ready.
    #[arg(long, value_name = "MS")]
    pub max_clock_offset_ms: Option<u64>,
    /// PostgreSQL: the clock guard's bound on how much faster or slower the server's lease
    /// clock runs than the database's, in parts per million (default 1000).
    #[arg(long, value_name = "PPM")]
    pub max_clock_rate_ppm: Option<u64>,
    /// PostgreSQL: how long a forward to a shard's owner may take before this server answers
    /// 503 with Retry-After (and stops forwarding to it for a moment), in ms (default 400).
    /// Keep it below the holders' per-attempt time-out.
    #[arg(long, value_name = "MS")]
    pub forward_timeout_ms: Option<u64>,
    /// PostgreSQL: how long one database statement may take before it counts as failed (a
    /// write is then unacknowledged and the connection re-made), in ms (default twice
    /// --ownership-ms, at least 1000).
    #[arg(long, value_name = "MS")]
    pub db_timeout_ms: Option<u64>,
    /// Relaxed renewals (embedded file store only): answer a renewal before its record is
    /// synced when an earlier, durable reservation covers it; grants and cancels stay durable
    /// first. After a crash a lease lives at least as long as its holder was told and at most
    /// one lease period longer (docs/server-operations.md, "Relaxed renewals"). Default off.
    #[arg(long)]
    pub relaxed_renewals: bool,
    /// Limits, TLS and authentication (docs/security.md).
    #[command(flatten)]
    pub security: crate::security::SecurityFlags,
    /// The lookup discovery service (docs/discovery-service.md).
    #[command(flatten)]
    pub discovery: crate::discovery::DiscoveryFlags,
    /// Outgoing traffic of the renewal and discovery services: TLS, token, allow-lists
    /// (docs/security.md, "Outgoing traffic").
    #[command(flatten)]
    pub outbound: crate::outbound::OutboundFlags,
    /// An operator command instead of serving (none: serve).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Operator commands of `leasehold-server` (without one, it serves).
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Quarantined shards: list, inspect, repair, restore, release (see
    /// `leasehold-server quarantine --help`).
    Quarantine {
        /// What to do.
        #[command(subcommand)]
        action: QuarantineAction,
    },
    /// The tokens file: add, list, remove identities (see `leasehold-server token --help`).
    Token {
        /// What to do.
        #[command(subcommand)]
        action: crate::auth::TokenAction,
    },
}

/// Where a quarantine command looks.
#[derive(Debug, clap::Args)]
pub struct StoreArgs {
    /// The embedded file store's directory.
    #[arg(long, value_name = "DIR", conflicts_with = "store")]
    pub data: Option<PathBuf>,
    /// PostgreSQL (the servers' --store URL).
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// A quarantine command.
#[derive(Debug, clap::Subcommand)]
pub enum QuarantineAction {
    /// The quarantined shards and why.
    List {
        #[command(flatten)]
        /// Where.
        store: StoreArgs,
    },
    /// What a shard holds, where it stops being readable, and what a repair would drop.
    /// Changes nothing.
    Inspect {
        #[command(flatten)]
        /// Where.
        store: StoreArgs,
        /// The shard.
        #[arg(long)]
        shard: u64,
    },
    /// Truncates a quarantined shard at its damage: keeps every record before it, drops the
    /// rest (printed), writes the result as a new snapshot. Needs --truncate-at-damage.
    Repair {
        #[command(flatten)]
        /// Where.
        store: StoreArgs,
        /// The shard.
        #[arg(long)]
        shard: u64,
        /// Yes, drop everything after the damage (run `inspect` first to see what).
        #[arg(long, required = true)]
        truncate_at_damage: bool,
    },
    /// Replaces a quarantined shard's state with a snapshot file (e.g. `shard-N/snapshot`
    /// from a backup); its log is dropped.
    Restore {
        #[command(flatten)]
        /// Where.
        store: StoreArgs,
        /// The shard.
        #[arg(long)]
        shard: u64,
        /// The snapshot file.
        #[arg(long, value_name = "FILE")]
        snapshot: PathBuf,
    },
    /// Serves a quarantined shard again once it loads (after a repair or restore).
    Release {
        #[command(flatten)]
        /// Where.
        store: StoreArgs,
        /// The shard.
        #[arg(long)]
        shard: u64,
    },
}

/// The config file's contents (every field optional).
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    listen: Option<SocketAddr>,
    data: Option<PathBuf>,
    store: Option<String>,
    shards: Option<u64>,
    renewal_shards: Option<u64>,
    max_set_lease_ms: Option<Duration>,
    max_event_deliveries: Option<u64>,
    advertise: Option<String>,
    name: Option<String>,
    max_lease_ms: Option<Duration>,
    default_lease_ms: Option<Duration>,
    ownership_ms: Option<u64>,
    log_format: Option<String>,
    /// The grant policy, as the core's `PolicySpec` (e.g. `{ kind = "bounded", max = 60000,
    /// default = 30000 }`); overrides max/default_lease_ms.
    policy: Option<PolicySpec>,
    /// Grace after expiry, in ms (clock skew between holders and the server). Default: the
    /// longest lease times `max_clock_rate_ppm` (60 ms for 60 s and 1000 ppm).
    grace_ms: Option<Duration>,
    /// Request limits (bytes of a message, leases in a batch, bytes of a resource).
    limits: Option<Limits>,
    /// File store: a log segment that reaches this size, in bytes, is closed and a new one
    /// started (default 64 MiB).
    segment_bytes: Option<u64>,
    /// File store: the log is compacted into a snapshot once it is larger than both this, in
    /// bytes, and the snapshot (default 4 MiB).
    min_compact_bytes: Option<u64>,
    /// Exclusive resources, pools, colocated prefixes, watch limits.
    coordination: Option<crate::coord::CoordSettings>,
    max_clock_offset_ms: Option<u64>,
    max_clock_rate_ppm: Option<u64>,
    forward_timeout_ms: Option<u64>,
    db_timeout_ms: Option<u64>,
    /// Relaxed renewals (embedded file store only); see `--relaxed-renewals`.
    relaxed_renewals: Option<bool>,
    /// Limits, TLS and authentication: the flags' names with `_` for `-`, in a `[security]`
    /// table.
    security: Option<crate::security::SecurityFlags>,
    /// The lookup discovery service: the flags' names with `_` for `-` and without the
    /// `discovery_` prefix, in a `[discovery]` table.
    discovery: Option<crate::discovery::DiscoveryFlags>,
    /// Outgoing traffic of the renewal and discovery services: the flags' names with `_` for
    /// `-` and without the `outbound_` prefix, in an `[outbound]` table.
    outbound: Option<crate::outbound::OutboundFlags>,
}

/// The landlords' default grace: the longest lease times the clock rate bound, so that a lease
/// clock that runs fast by up to `--max-clock-rate-ppm` never ends a lease before its holder
/// was told (docs/server-operations.md, "Clocks"). 0 for policies without a longest lease.
fn default_grace(policy: &PolicySpec, rate_ppm: u64) -> Duration {
    let max = match policy {
        PolicySpec::Bounded { max, .. } => *max,
        PolicySpec::Fixed { duration } => *duration,
        _ => return 0,
    };
    if max <= 0 || max == leasehold::FOREVER {
        return 0;
    }
    let micro = max as i128 * rate_ppm as i128;
    ((micro + 999_999) / 1_000_000).min(i64::MAX as i128) as Duration
}

/// Where shards are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreKind {
    /// The embedded file store, in this directory.
    Files(PathBuf),
    /// PostgreSQL at this URL.
    Postgres(String),
}

/// The settings in force.
#[derive(Debug, Clone)]
pub struct Config {
    /// Listen address.
    pub listen: SocketAddr,
    /// Where shards live.
    pub store: StoreKind,
    /// Shards (landlords 1..=shards).
    pub shards: u64,
    /// Renewal-service shards (`shards+1..=shards+renewal_shards`).
    pub renewal_shards: u64,
    /// The policy of renewal sets' leases.
    pub set_policy: PolicySpec,
    /// Most event POSTs under way at once per renewal-service shard.
    pub max_event_deliveries: usize,
    /// URL of this server for the others.
    pub advertise: String,
    /// Name in logs.
    pub name: String,
    /// The grant policy.
    pub policy: PolicySpec,
    /// Grace after expiry.
    pub grace_ms: Duration,
    /// Request limits.
    pub limits: Limits,
    /// File store tuning.
    pub store_config: leasehold::store::StoreConfig,
    /// Ownership lease length (PostgreSQL).
    pub ownership_ms: u64,
    /// json or text logs.
    pub json_logs: bool,
    /// Coordination: exclusive resources, pools, colocated prefixes.
    pub coord: crate::coord::CoordSettings,
    /// The clock guard's offset bound, ms (PostgreSQL).
    pub max_clock_offset_ms: u64,
    /// The clock guard's rate bound, ppm (PostgreSQL).
    pub max_clock_rate_ppm: u64,
    /// Longest forward to an owner, ms (PostgreSQL).
    pub forward_timeout_ms: u64,
    /// Longest database statement, ms (PostgreSQL).
    pub db_timeout_ms: u64,
    /// Limits, TLS and authentication.
    pub security: crate::security::Security,
    /// The lookup discovery service, if it runs.
    pub discovery: Option<crate::discovery::DiscoverySettings>,
    /// Relaxed renewals (embedded file store only).
    pub relaxed_renewals: bool,
    /// Outgoing traffic of the renewal and discovery services.
    pub outbound: crate::outbound::Outbound,
}

impl Config {
    /// Reads the config file named by the flags (if any) and merges the flags over it.
    pub fn load(flags: Flags) -> Result<Config, String> {
        let file: FileConfig = match &flags.config {
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
                toml::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?
            }
            None => FileConfig::default(),
        };
        let listen =
            flags.listen.or(file.listen).unwrap_or_else(|| "127.0.0.1:7420".parse().unwrap());
        let store = match (flags.store.or(file.store), flags.data.or(file.data)) {
            (Some(url), None) => {
                if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                    return Err(format!("--store wants a postgres:// URL, got {url:?}"));
                }
                StoreKind::Postgres(url)
            }
            (Some(_), Some(_)) => return Err("give either --data or --store, not both".into()),
            (None, data) => StoreKind::Files(data.unwrap_or_else(|| PathBuf::from("data"))),
        };
        let shards = flags.shards.or(file.shards).unwrap_or(1);
        if shards == 0 || shards > 65_536 {
            return Err(format!("--shards must be 1 to 65536, got {shards}"));
        }
        let renewal_shards = flags.renewal_shards.or(file.renewal_shards).unwrap_or(0);
        if renewal_shards > 4096 {
            return Err(format!("--renewal-shards must be 0 to 4096, got {renewal_shards}"));
        }
        let max_set = flags.max_set_lease_ms.or(file.max_set_lease_ms).unwrap_or(7_200_000);
        if max_set <= 0 {
            return Err(format!("--max-set-lease-ms must be positive, got {max_set}"));
        }
        let set_policy = PolicySpec::Bounded { max: max_set, default: max_set.min(3_600_000) };
        let max_event_deliveries =
            flags.max_event_deliveries.or(file.max_event_deliveries).unwrap_or(64);
        if !(1..=65_536).contains(&max_event_deliveries) {
            return Err(format!(
                "--max-event-deliveries must be 1 to 65536, got {max_event_deliveries}"
            ));
        }
        let max_event_deliveries = max_event_deliveries as usize;
        set_policy.build().map_err(|e| format!("bad set lease policy: {e}"))?;
        let advertise =
            flags.advertise.or(file.advertise).unwrap_or_else(|| format!("http://{listen}"));
        let name = flags.name.or(file.name).unwrap_or_else(|| advertise.clone());
        let policy = match file.policy {
            Some(p) if flags.max_lease_ms.is_none() && flags.default_lease_ms.is_none() => p,
            _ => PolicySpec::Bounded {
                max: flags.max_lease_ms.or(file.max_lease_ms).unwrap_or(60_000),
                default: flags.default_lease_ms.or(file.default_lease_ms).unwrap_or(30_000),
            },
        };
        policy.build().map_err(|e| format!("bad policy: {e}"))?;
        let security =
            crate::security::Security::load(flags.security, file.security.unwrap_or_default())?;
        let outbound =
            crate::outbound::Outbound::load(flags.outbound, file.outbound.unwrap_or_default())?;
        let discovery = crate::discovery::DiscoverySettings::load(
            flags.discovery,
            file.discovery.unwrap_or_default(),
            shards,
        )?;
        if let Some(d) = &discovery {
            if d.id <= shards + renewal_shards {
                return Err(format!(
                    "--discovery-id must be above the landlord and renewal-service shards (1 to \
                     {}), got {}",
                    shards + renewal_shards,
                    d.id
                ));
            }
        }
        let mut store_config = leasehold::store::StoreConfig::default();
        if let Some(b) = file.segment_bytes {
            store_config.segment_bytes = b;
        }
        if let Some(b) = file.min_compact_bytes {
            store_config.min_compact_bytes = b;
        }
        let ownership_ms = flags.ownership_ms.or(file.ownership_ms).unwrap_or(3_000);
        if !(300..=600_000).contains(&ownership_ms) {
            return Err(format!("--ownership-ms must be 300 to 600000, got {ownership_ms}"));
        }
        let json_logs = match flags.log_format.or(file.log_format).as_deref() {
            None | Some("text") => false,
            Some("json") => true,
            Some(other) => return Err(format!("--log-format is text or json, got {other:?}")),
        };
        let mut coord = file.coordination.unwrap_or_default();
        coord.exclusive_prefixes.extend(flags.exclusive_prefix);
        coord.colocate.extend(flags.colocate);
        coord.validate()?;
        let max_clock_offset_ms =
            flags.max_clock_offset_ms.or(file.max_clock_offset_ms).unwrap_or(500);
        if !(1..=60_000).contains(&max_clock_offset_ms) {
            return Err(format!(
                "--max-clock-offset-ms must be 1 to 60000, got {max_clock_offset_ms}"
            ));
        }
        let max_clock_rate_ppm =
            flags.max_clock_rate_ppm.or(file.max_clock_rate_ppm).unwrap_or(1000);
        if !(1..=1_000_000).contains(&max_clock_rate_ppm) {
            return Err(format!(
                "--max-clock-rate-ppm must be 1 to 1000000, got {max_clock_rate_ppm}"
            ));
        }
        let forward_timeout_ms =
            flags.forward_timeout_ms.or(file.forward_timeout_ms).unwrap_or(400);
        if !(10..=60_000).contains(&forward_timeout_ms) {
            return Err(format!(
                "--forward-timeout-ms must be 10 to 60000, got {forward_timeout_ms}"
            ));
        }
        let db_timeout_ms =
            flags.db_timeout_ms.or(file.db_timeout_ms).unwrap_or((2 * ownership_ms).max(1000));
        if !(100..=600_000).contains(&db_timeout_ms) {
            return Err(format!("--db-timeout-ms must be 100 to 600000, got {db_timeout_ms}"));
        }
        let relaxed_renewals = flags.relaxed_renewals || file.relaxed_renewals.unwrap_or(false);
        if relaxed_renewals && matches!(store, StoreKind::Postgres(_)) {
            // A reply before the write would also skip the fence check that keeps a deposed
            // owner from answering.
            return Err("--relaxed-renewals is for the embedded file store only".into());
        }
        let grace_ms =
            file.grace_ms.unwrap_or_else(|| default_grace(&policy, max_clock_rate_ppm)).max(0);
        // Every landlord is bounded by default: a full one denies new leases with a reason.
        let policy = match security.max_leases_per_shard {
            0 => policy,
            n => PolicySpec::Capacity { max_leases: n, inner: Box::new(policy) },
        };
        Ok(Config {
            max_clock_offset_ms,
            max_clock_rate_ppm,
            forward_timeout_ms,
            db_timeout_ms,
            listen,
            store,
            shards,
            renewal_shards,
            set_policy,
            max_event_deliveries,
            advertise,
            name,
            policy,
            grace_ms,
            limits: file.limits.unwrap_or_default(),
            store_config,
            ownership_ms,
            json_logs,
            security,
            coord,
            discovery,
            relaxed_renewals,
            outbound,
        })
    }
}
