//! Outgoing traffic of the renewal and discovery services: renewals sent to client leases'
//! landlords, events POSTed to listeners. Both go to URLs that *clients* name, so both are
//! checked against an allow-list when a client names them (a set operation or a registration
//! naming a URL outside it is refused with its reason) and again when a connection is made
//! ([`Guarded`]: a URL stored before the list changed is not reached either). `https://` URLs
//! are reached over rustls, the server checked against `--outbound-ca` (default: the system's
//! CA bundle), with an optional client certificate (`--outbound-cert`, `--outbound-key`) and,
//! towards landlords only, a bearer token (`--outbound-token-file`). See `docs/security.md`,
//! "Outgoing traffic".

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::pin::Pin;
use std::str::FromStr;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use leasehold_client::{Cluster, ClusterConfig, TlsOptions};
use serde::Deserialize;

/// The flags of [`Outbound`] (also the `[outbound]` table of the config file, same names with
/// `_` for `-` and without the `outbound_` prefix where the flag has one).
#[derive(Debug, Clone, Default, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutboundFlags {
    /// Outgoing https (renewals to landlords, events to listeners): CA certificates (PEM) the
    /// servers' certificates must chain to (default: the system's bundle,
    /// /etc/ssl/certs/ca-certificates.crt).
    #[arg(long = "outbound-ca", value_name = "FILE")]
    #[serde(rename = "ca")]
    pub outbound_ca: Option<PathBuf>,
    /// Outgoing https: a client certificate chain (PEM) presented to landlords and listeners
    /// that ask for one (mTLS), with --outbound-key.
    #[arg(long = "outbound-cert", value_name = "FILE")]
    #[serde(rename = "cert")]
    pub outbound_cert: Option<PathBuf>,
    /// Outgoing https: the key of --outbound-cert (PEM).
    #[arg(long = "outbound-key", value_name = "FILE")]
    #[serde(rename = "key")]
    pub outbound_key: Option<PathBuf>,
    /// A file holding a bearer token sent with every renewal to client leases' landlords (one
    /// line; never sent to event listeners).
    #[arg(long = "outbound-token-file", value_name = "FILE")]
    #[serde(rename = "token_file")]
    pub outbound_token_file: Option<PathBuf>,
    /// Landlord URLs renewal sets may name: `host`, `host:port`, `*.domain[:port]`, an
    /// address range `10.0.0.0/8`, or a URL prefix `https://host:port/path` (may be given
    /// several times). Default: any host but link-local and unspecified addresses.
    #[arg(long = "renewal-allow", value_name = "PATTERN")]
    #[serde(default)]
    pub renewal_allow: Vec<String>,
    /// Listener URLs events may be POSTed to (renewal-set and discovery registrations); the
    /// patterns of --renewal-allow (may be given several times). Default: as --renewal-allow.
    #[arg(long = "event-allow", value_name = "PATTERN")]
    #[serde(default)]
    pub event_allow: Vec<String>,
}

/// One allow-list pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// A host name or address, exactly (any port unless given).
    Host(String, Option<u16>),
    /// `*.domain`: any name under it (not the domain itself).
    Suffix(String, Option<u16>),
    /// An address range.
    Net(IpAddr, u8),
    /// A URL prefix (scheme, host and port as written, lower-case), ending at a `/` boundary.
    Prefix(String),
}

/// Which URLs outgoing traffic may go to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    patterns: Vec<Pattern>,
    /// The flag it came from, for messages.
    flag: &'static str,
}

fn split_port(s: &str) -> Result<(&str, Option<u16>), String> {
    // `[v6]:port`, `[v6]`, `host:port`, `host`; a bare v6 address has several colons.
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("an unclosed [")?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((host, Some(p.parse().map_err(|_| format!("bad port {p:?}"))?))),
            None if after.is_empty() => Ok((host, None)),
            None => Err(format!("{after:?} after the address")),
        };
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => {
            Ok((h, Some(p.parse().map_err(|_| format!("bad port {p:?}"))?)))
        }
        _ => Ok((s, None)),
    }
}

fn norm_host(h: &str) -> String {
    h.trim_end_matches('.').to_ascii_lowercase()
}

impl Pattern {
    fn parse(p: &str) -> Result<Pattern, String> {
        let p = p.trim();
        if p.is_empty() {
            return Err("an empty pattern".into());
        }
        if p.contains("://") {
            let uri = Uri::from_str(p).map_err(|e| format!("not a URL: {e}"))?;
            if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.authority().is_none() {
                return Err("a URL prefix is http:// or https:// with a host".into());
            }
            return Ok(Pattern::Prefix(lower_origin(p)));
        }
        if let Some((addr, bits)) = p.split_once('/') {
            let addr = addr.trim_start_matches('[').trim_end_matches(']');
            let ip: IpAddr = addr.parse().map_err(|_| format!("{addr:?} is not an address"))?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let bits: u8 = bits.parse().ok().filter(|b| *b <= max).ok_or("a bad prefix length")?;
            return Ok(Pattern::Net(ip, bits));
        }
        let (host, port) = split_port(p)?;
        if host.is_empty() {
            return Err("no host".into());
        }
        match host.strip_prefix("*.") {
            Some(d) if !d.is_empty() => Ok(Pattern::Suffix(norm_host(d), port)),
            _ if host.contains('*') => Err("a wildcard is only `*.` at the start".into()),
            _ => Ok(Pattern::Host(norm_host(host), port)),
        }
    }

    /// Whether `url` matches; `origin_only`: `url` is a connection's origin (`scheme://host/`,
    /// all a connector sees), and a URL prefix matches when its own origin is that one (its
    /// path was checked against the whole URL when the URL was named, and before each event).
    fn matches(
        &self,
        url: &str,
        host: &str,
        ip: Option<IpAddr>,
        port: u16,
        origin_only: bool,
    ) -> bool {
        let port_ok = |p: &Option<u16>| p.is_none_or(|p| p == port);
        match self {
            Pattern::Host(h, p) => h == host && port_ok(p),
            Pattern::Suffix(d, p) => {
                host.len() > d.len() + 1
                    && host.ends_with(d.as_str())
                    && host.as_bytes()[host.len() - d.len() - 1] == b'.'
                    && port_ok(p)
            }
            Pattern::Net(net, bits) => ip.is_some_and(|ip| in_net(ip, *net, *bits)),
            Pattern::Prefix(prefix) if origin_only => {
                origin_of(prefix) == origin_of(&lower_origin(url))
            }
            Pattern::Prefix(prefix) => {
                let url = lower_origin(url);
                url.starts_with(prefix.as_str())
                    && (prefix.ends_with('/')
                        || matches!(url.as_bytes().get(prefix.len()), None | Some(b'/' | b'?')))
            }
        }
    }
}

/// `url` with its scheme and authority in lower case (the path as it is).
fn lower_origin(url: &str) -> String {
    match url.find("://") {
        Some(i) => {
            let rest = &url[i + 3..];
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            format!(
                "{}://{}{}",
                url[..i].to_ascii_lowercase(),
                rest[..end].to_ascii_lowercase(),
                &rest[end..]
            )
        }
        None => url.to_string(),
    }
}

/// `scheme://authority` of a URL.
fn origin_of(url: &str) -> &str {
    let start = url.find("://").map_or(0, |i| i + 3);
    let end = url[start..].find(['/', '?', '#']).map_or(url.len(), |e| start + e);
    &url[..end]
}

fn in_net(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (canonical(ip), canonical(net)) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - u32::from(bits.min(32))) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - u32::from(bits.min(128))) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

/// Why the default list refuses an address, if it does: link-local addresses (where cloud
/// metadata services answer: 169.254.169.254, fd00:ec2::254 aside, fe80::/10), unspecified,
/// broadcast and multicast ones.
fn refused_by_default(host: &str, ip: Option<IpAddr>) -> Option<&'static str> {
    if host == "metadata.google.internal" || host == "metadata" {
        return Some("a cloud metadata service");
    }
    match ip.map(canonical)? {
        IpAddr::V4(a) if a.is_link_local() => Some("a link-local address (cloud metadata)"),
        IpAddr::V4(a) if a.is_unspecified() || a == Ipv4Addr::BROADCAST || a.is_multicast() => {
            Some("not a unicast address")
        }
        IpAddr::V6(a) if (a.segments()[0] & 0xffc0) == 0xfe80 => Some("a link-local address"),
        IpAddr::V6(a) if a == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) => {
            Some("a cloud metadata service")
        }
        IpAddr::V6(a) if a.is_unspecified() || a.is_multicast() => Some("not a unicast address"),
        _ => None,
    }
}

impl AllowList {
    /// The list of these patterns (none: the default list), from `flag` (for messages).
    pub fn parse(flag: &'static str, patterns: &[String]) -> Result<AllowList, String> {
        let patterns = patterns
            .iter()
            .map(|p| Pattern::parse(p).map_err(|e| format!("--{flag} {p:?}: {e}")))
            .collect::<Result<_, _>>()?;
        Ok(AllowList { patterns, flag })
    }

    /// Whether the operator gave patterns (otherwise the default list is in force).
    pub fn is_default(&self) -> bool {
        self.patterns.is_empty()
    }

    /// `Ok` when outgoing traffic may go to `url`, otherwise why not (a sentence naming the
    /// URL and the setting).
    pub fn check(&self, url: &str) -> Result<(), String> {
        self.check_as(url, false)
    }

    /// [`AllowList::check`] of a connection's origin (what a connector is given).
    pub fn check_origin(&self, origin: &str) -> Result<(), String> {
        self.check_as(origin, true)
    }

    fn check_as(&self, url: &str, origin_only: bool) -> Result<(), String> {
        let shown: String = url.chars().take(200).collect();
        let uri = Uri::from_str(url.trim()).map_err(|e| format!("{shown:?} is not a URL: {e}"))?;
        let scheme = uri.scheme_str().unwrap_or("");
        let Some(auth) = uri.authority().filter(|_| scheme == "http" || scheme == "https") else {
            return Err(format!("{shown:?} is not an http:// or https:// URL"));
        };
        let port = auth.port_u16().unwrap_or(if scheme == "https" { 443 } else { 80 });
        let host = norm_host(auth.host().trim_start_matches('[').trim_end_matches(']'));
        let ip = host.parse::<IpAddr>().ok();
        if self.patterns.is_empty() {
            return match refused_by_default(&host, ip) {
                None => Ok(()),
                Some(why) => Err(format!(
                    "{shown} is refused: {host} is {why}, never reached unless --{} names it \
                     (docs/security.md, \"Outgoing traffic\")",
                    self.flag
                )),
            };
        }
        if self.patterns.iter().any(|p| p.matches(url.trim(), &host, ip, port, origin_only)) {
            return Ok(());
        }
        Err(format!(
            "{shown} is refused: not in this server's --{} list (docs/security.md, \"Outgoing \
             traffic\")",
            self.flag
        ))
    }
}

/// The outgoing-traffic settings in force.
#[derive(Debug, Clone)]
pub struct Outbound {
    /// TLS towards landlords and listeners.
    pub tls: TlsOptions,
    /// Whether `tls.ca_file` was given (else the system bundle, if there is one).
    ca_given: bool,
    /// The bearer token sent to landlords.
    pub token: Option<String>,
    /// Landlord URLs renewal sets may name.
    pub renewal_allow: AllowList,
    /// Listener URLs events may go to.
    pub event_allow: AllowList,
}

impl Default for Outbound {
    fn default() -> Outbound {
        Outbound {
            tls: TlsOptions::new(),
            ca_given: false,
            token: None,
            renewal_allow: AllowList { patterns: vec![], flag: "renewal-allow" },
            event_allow: AllowList { patterns: vec![], flag: "event-allow" },
        }
    }
}

impl Outbound {
    /// The settings from the flags over the file's `[outbound]` table, checked (the files are
    /// read, so that a bad one stops the server at start rather than at the first renewal).
    pub fn load(f: OutboundFlags, c: OutboundFlags) -> Result<Outbound, String> {
        let ca = f.outbound_ca.or(c.outbound_ca);
        let cert = f.outbound_cert.or(c.outbound_cert);
        let key = f.outbound_key.or(c.outbound_key);
        let mut tls = TlsOptions::new();
        let ca_given = ca.is_some();
        if let Some(ca) = ca {
            tls = tls.ca_file(ca);
        }
        match (cert, key) {
            (Some(c), Some(k)) => tls = tls.client_cert(c, k),
            (None, None) => {}
            _ => return Err("give both --outbound-cert and --outbound-key, or neither".into()),
        }
        let token = match f.outbound_token_file.or(c.outbound_token_file) {
            None => None,
            Some(p) => {
                let t = std::fs::read_to_string(&p)
                    .map_err(|e| format!("--outbound-token-file {}: {e}", p.display()))?;
                let t = t.trim().to_string();
                if t.is_empty() {
                    return Err(format!("--outbound-token-file {}: empty", p.display()));
                }
                Some(t)
            }
        };
        let pick = |a: Vec<String>, b: Vec<String>| if a.is_empty() { b } else { a };
        let out = Outbound {
            tls,
            ca_given,
            token,
            renewal_allow: AllowList::parse(
                "renewal-allow",
                &pick(f.renewal_allow, c.renewal_allow),
            )?,
            event_allow: AllowList::parse("event-allow", &pick(f.event_allow, c.event_allow))?,
        };
        if out.ca_given || out.tls.client_cert.is_some() {
            out.tls.client_config().map_err(|e| format!("outgoing TLS: {e}"))?;
        }
        Ok(out)
    }

    /// The rustls configuration of outgoing https: the CA bundle (the system's when none was
    /// given; none at all if the system has none, so that every https URL is refused rather
    /// than trusted blindly) and the client certificate.
    fn client_config(&self) -> rustls::ClientConfig {
        match self.tls.client_config() {
            Ok(c) => c,
            Err(e) => {
                if self.ca_given || self.tls.client_cert.is_some() {
                    // Checked at load; a file changed since.
                    tracing::error!(error = %e, "outgoing TLS settings unreadable: https URLs will fail");
                } else {
                    tracing::info!(error = %e, "no system CA bundle: outgoing https needs --outbound-ca");
                }
                rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .with_safe_default_protocol_versions()
                .expect("ring supports the default versions")
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth()
            }
        }
    }

    /// A connector for outgoing traffic checked against `allow` (`http://` over TCP,
    /// `https://` over TLS).
    pub fn connector(&self, allow: &AllowList, connect_timeout: Duration) -> Guarded {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(connect_timeout));
        let inner = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(self.client_config())
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        Guarded { inner, allow: std::sync::Arc::new(allow.clone()) }
    }

    /// A cluster client of a client lease's landlord, over `urls`, with the landlords' token.
    pub fn landlord(
        &self,
        urls: Vec<String>,
        attempt: Duration,
        connector: Guarded,
    ) -> Result<Cluster<Guarded>, leasehold_client::ClientError> {
        let mut config = ClusterConfig::new(urls).attempt_timeout(attempt);
        if let Some(t) = &self.token {
            config = config.bearer_token(t)?;
        }
        Cluster::with_connector(config, connector)
    }
}

impl Outbound {
    /// Checks the URLs a set operation names (a client lease's landlord URLs, a listener's
    /// URL) against the allow-lists: a refusal is `lease_denied` with the reason, answered 403.
    pub fn check_set_request(
        &self,
        body: &leasehold::service::wire::SetRequestBody,
    ) -> Result<(), leasehold::LeaseError> {
        use leasehold::service::wire::SetRequestBody;
        let refused = match body {
            SetRequestBody::Add { lease, .. } => {
                lease.urls.iter().find_map(|u| self.renewal_allow.check(u).err())
            }
            SetRequestBody::Listen { url, .. } => self.event_allow.check(url).err(),
            _ => None,
        };
        match refused {
            None => Ok(()),
            Some(why) => Err(leasehold::LeaseError::LeaseDenied(why)),
        }
    }
}

type Inner = hyper_rustls::HttpsConnector<HttpConnector>;

/// A connector that refuses URLs outside its allow-list before connecting.
#[derive(Clone, Debug)]
pub struct Guarded {
    inner: Inner,
    allow: std::sync::Arc<AllowList>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower_service::Service<Uri> for Guarded {
    type Response = <Inner as tower_service::Service<Uri>>::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        if let Err(why) = self.allow.check_origin(&uri.to_string()) {
            return Box::pin(async move { Err(why.into()) });
        }
        let f = self.inner.call(uri);
        Box::pin(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(p: &[&str]) -> AllowList {
        AllowList::parse("renewal-allow", &p.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .unwrap()
    }

    #[test]
    fn the_default_list_refuses_metadata_and_link_local_only() {
        let d = list(&[]);
        assert!(d.check("http://127.0.0.1:7420").is_ok());
        assert!(d.check("https://lease-1.internal:7420/").is_ok());
        assert!(d.check("http://10.1.2.3/").is_ok());
        for bad in [
            "http://169.254.169.254/latest/meta-data",
            "http://[fe80::1]:80/",
            "http://[::ffff:169.254.169.254]/",
            "http://0.0.0.0:7420",
            "http://metadata.google.internal/",
            "http://224.0.0.1/",
        ] {
            let e = d.check(bad).unwrap_err();
            assert!(e.contains("--renewal-allow"), "{bad}: {e}");
        }
        assert!(d.check("ftp://a/").is_err());
    }

    #[test]
    fn patterns_match_hosts_ports_ranges_and_prefixes() {
        let l = list(&[
            "lease-1.internal:7420",
            "*.leases.example",
            "10.0.0.0/8",
            "https://hooks.example/leasehold/",
            "[::1]",
        ]);
        assert!(l.check("http://lease-1.internal:7420").is_ok());
        assert!(l.check("http://LEASE-1.internal.:7420/lease").is_ok());
        assert!(l.check("http://lease-1.internal:7421").is_err());
        assert!(l.check("https://a.leases.example").is_ok());
        assert!(l.check("https://leases.example").is_err());
        assert!(l.check("https://evilleases.example").is_err());
        assert!(l.check("http://10.9.8.7:1/").is_ok());
        assert!(l.check("http://11.0.0.1/").is_err());
        assert!(l.check("https://hooks.example/leasehold/set-1").is_ok());
        assert!(l.check("https://hooks.example/leaseholder").is_err());
        assert!(l.check("http://hooks.example/leasehold/x").is_err());
        assert!(l.check("http://[::1]:9/").is_ok());
        assert!(l.check("http://169.254.169.254/").is_err());
        let e = l.check("http://127.0.0.1:1/").unwrap_err();
        assert!(e.contains("not in this server's --renewal-allow list"), "{e}");
        // A prefix without a path ends at the authority.
        let p = list(&["http://a.example:80"]);
        assert!(p.check("http://a.example:80/lease").is_ok());
        assert!(p.check("http://a.example:8080/").is_err());
        // A connector sees only the origin: a prefix's origin lets the connection through (its
        // path was checked when the URL was named and before each event).
        assert!(l.check_origin("https://hooks.example/").is_ok());
        assert!(l.check_origin("http://hooks.example/").is_err());
        assert!(l.check_origin("https://hooks.example:8443/").is_err());
    }

    #[test]
    fn bad_patterns_are_refused_at_start() {
        for bad in ["", "a:b", "*a.example", "10.0.0.0/33", "ftp://x/", "[::1"] {
            assert!(AllowList::parse("event-allow", &[bad.to_string()]).is_err(), "{bad}");
        }
    }
}
