//! The security settings: connection limits, the landlords' capacity, TLS, tokens and the
//! cluster secret. Every limit is on by default with a safe value; TLS and authentication are
//! on when their files are given. What each setting defends against: `docs/security.md`.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

/// The flags of [`Security`] (also the `[security]` table of the config file, same names with
/// `_` for `-`).
#[derive(Debug, Clone, Default, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecurityFlags {
    /// Most live leases per landlord (shard): a full landlord denies new grants with "capacity
    /// reached" (default 100000; 0: no bound).
    #[arg(long, value_name = "N")]
    pub max_leases_per_shard: Option<usize>,
    /// How long a client may take to send a request's headers, in ms, before its connection is
    /// closed (default 5000).
    #[arg(long, value_name = "MS")]
    pub header_timeout_ms: Option<u64>,
    /// How long a connection may sit idle between requests, in ms (default 60000).
    #[arg(long, value_name = "MS")]
    pub idle_timeout_ms: Option<u64>,
    /// Most open client connections; more wait in the kernel's backlog (default 4096).
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Most bytes of a request's head (request line and headers); a longer head is refused
    /// with 431 (default 16384, at least 8192).
    #[arg(long, value_name = "BYTES")]
    pub max_header_bytes: Option<usize>,
    /// Serve `/metrics`, `/livez`, `/readyz` and `/healthz` on this address too, without a
    /// token (bind it where only operators reach it).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
    /// The tokens file (identities, their hashed tokens, permissions and quotas; written by
    /// `leasehold-server token add`). With it, every request needs an identity; reloaded on
    /// SIGHUP.
    #[arg(long, value_name = "FILE")]
    pub tokens: Option<PathBuf>,
    /// A file holding the cluster secret (at least 32 bytes) that servers sign forwarded
    /// requests with; every server of a cluster has the same. Needed with --tokens in a
    /// PostgreSQL cluster.
    #[arg(long, value_name = "FILE")]
    pub cluster_secret: Option<PathBuf>,
    /// TLS: this server's certificate chain (PEM). With --tls-key, the client listener speaks
    /// only TLS. Reloaded on SIGHUP.
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// TLS: the private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// TLS: CA certificates (PEM) that client certificates must chain to (mTLS). A client's
    /// certificate names its identity (its first DNS subject alternative name).
    #[arg(long, value_name = "FILE")]
    pub tls_client_ca: Option<PathBuf>,
    /// TLS: with --tls-client-ca, whether a client certificate is `required` (default) or
    /// `optional` (clients without one use a token).
    #[arg(long, value_name = "MODE")]
    pub tls_client_auth: Option<String>,
    /// Forwarding between servers over https: CA certificates (PEM) the other servers'
    /// certificates must chain to (their advertised host name is checked).
    #[arg(long, value_name = "FILE")]
    pub peer_ca: Option<PathBuf>,
    /// Forwarding: the client certificate (PEM) this server presents to the others (mTLS
    /// between servers), with --peer-key.
    #[arg(long, value_name = "FILE")]
    pub peer_cert: Option<PathBuf>,
    /// Forwarding: the key of --peer-cert (PEM).
    #[arg(long, value_name = "FILE")]
    pub peer_key: Option<PathBuf>,
}

/// Whether clients must present a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// Every client presents one that chains to the CA.
    Required,
    /// A client may present one; one without uses a token.
    Optional,
}

/// The security settings in force.
#[derive(Debug, Clone)]
pub struct Security {
    /// Most live leases per shard (0: no bound).
    pub max_leases_per_shard: usize,
    /// Header read time-out, ms.
    pub header_timeout_ms: u64,
    /// Idle keep-alive time-out, ms.
    pub idle_timeout_ms: u64,
    /// Most connections.
    pub max_connections: usize,
    /// Most bytes of a request head.
    pub max_header_bytes: usize,
    /// The operators' listener.
    pub metrics_listen: Option<SocketAddr>,
    /// The tokens file.
    pub tokens: Option<PathBuf>,
    /// The cluster secret file.
    pub cluster_secret: Option<PathBuf>,
    /// Certificate and key of the client listener.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// CA of client certificates, and whether they are required.
    pub client_ca: Option<(PathBuf, ClientAuth)>,
    /// CA of the other servers' certificates.
    pub peer_ca: Option<PathBuf>,
    /// This server's client certificate and key towards the others.
    pub peer_identity: Option<(PathBuf, PathBuf)>,
}

fn pick<T>(flag: Option<T>, file: Option<T>) -> Option<T> {
    flag.or(file)
}

fn pair(
    a: Option<PathBuf>,
    b: Option<PathBuf>,
    na: &str,
    nb: &str,
) -> Result<Option<(PathBuf, PathBuf)>, String> {
    match (a, b) {
        (Some(a), Some(b)) => Ok(Some((a, b))),
        (None, None) => Ok(None),
        _ => Err(format!("give both --{na} and --{nb}, or neither")),
    }
}

impl Security {
    /// The settings from the flags over the file's `[security]` table, checked.
    pub fn load(f: SecurityFlags, c: SecurityFlags) -> Result<Security, String> {
        let max_leases_per_shard =
            pick(f.max_leases_per_shard, c.max_leases_per_shard).unwrap_or(100_000);
        let header_timeout_ms = pick(f.header_timeout_ms, c.header_timeout_ms).unwrap_or(5_000);
        if !(100..=600_000).contains(&header_timeout_ms) {
            return Err(format!(
                "--header-timeout-ms must be 100 to 600000, got {header_timeout_ms}"
            ));
        }
        let idle_timeout_ms = pick(f.idle_timeout_ms, c.idle_timeout_ms).unwrap_or(60_000);
        if !(100..=3_600_000).contains(&idle_timeout_ms) {
            return Err(format!("--idle-timeout-ms must be 100 to 3600000, got {idle_timeout_ms}"));
        }
        let max_connections = pick(f.max_connections, c.max_connections).unwrap_or(4096);
        if max_connections == 0 {
            return Err("--max-connections must be at least 1".into());
        }
        let max_header_bytes = pick(f.max_header_bytes, c.max_header_bytes).unwrap_or(16_384);
        if !(8192..=1 << 20).contains(&max_header_bytes) {
            return Err(format!(
                "--max-header-bytes must be 8192 to 1048576, got {max_header_bytes}"
            ));
        }
        let tls =
            pair(pick(f.tls_cert, c.tls_cert), pick(f.tls_key, c.tls_key), "tls-cert", "tls-key")?;
        let client_auth = match pick(f.tls_client_auth, c.tls_client_auth).as_deref() {
            None | Some("required") => ClientAuth::Required,
            Some("optional") => ClientAuth::Optional,
            Some(o) => return Err(format!("--tls-client-auth is required or optional, got {o:?}")),
        };
        let client_ca = pick(f.tls_client_ca, c.tls_client_ca).map(|p| (p, client_auth));
        if client_ca.is_some() && tls.is_none() {
            return Err("--tls-client-ca needs --tls-cert and --tls-key".into());
        }
        let peer_identity = pair(
            pick(f.peer_cert, c.peer_cert),
            pick(f.peer_key, c.peer_key),
            "peer-cert",
            "peer-key",
        )?;
        Ok(Security {
            max_leases_per_shard,
            header_timeout_ms,
            idle_timeout_ms,
            max_connections,
            max_header_bytes,
            metrics_listen: pick(f.metrics_listen, c.metrics_listen),
            tokens: pick(f.tokens, c.tokens),
            cluster_secret: pick(f.cluster_secret, c.cluster_secret),
            tls,
            client_ca,
            peer_ca: pick(f.peer_ca, c.peer_ca),
            peer_identity,
        })
    }

    /// The scheme clients reach this server with.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }
}
