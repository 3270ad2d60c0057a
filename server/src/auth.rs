//! Identities: who may speak to the server, what they may do, and how much they may hold.
//!
//! An identity is named by a bearer token (`Authorization: Bearer lh_<id>_<secret>`) or by the
//! first DNS name of a verified client certificate (mTLS). The tokens file (TOML, written by
//! `leasehold-server token add`, reloaded on SIGHUP) lists every identity with:
//! - `ops`: the operations it may use: `grant`, `renew`, `cancel`, `watch`, `admin`, `metrics`;
//! - `prefixes`: the resources it may lease (every resource when empty);
//! - `max_leases`: most live leases under its prefixes per landlord (needs `prefixes`);
//! - `max_lease_ms`: its longest lease (longer requests, and ANY, are cut to it).
//!
//! The cookie stays the capability for renew and cancel: an identity with `renew` renews only
//! the leases whose cookies it holds; the identity says who may speak at all.
//!
//! **Why SHA-256 with a salt and not argon2**: the server makes every token itself, 32 random
//! bytes (256 bits), so there is no dictionary to try and no brute force that a slow hash
//! would slow down further; a slow hash only protects secrets people choose. It would cost
//! tens of milliseconds of CPU per request (or a cache of verified tokens in memory, which is
//! as good as the token to whoever reads the process). A salt per entry keeps equal hashes
//! from showing equal tokens and rules out tables computed in advance; the comparison is in
//! constant time. The token's `<id>` part picks the entry, so one hash is computed per
//! request, whatever the number of identities.
//!
//! **Quotas** (`max_leases`) are derived from the landlord's own state, so they stay exact
//! across a restart and a failover: an identity's live leases are the live leases under its
//! prefixes. The server counts them in the shard's actor (a scan of the shard's leases) the
//! first time, adds a grant as it goes out, and counts again (at most every 100 ms) before it
//! denies, so that expired and cancelled leases free their places.
//!
//! **Forwarded requests** between servers carry `X-Leasehold-Forwarded: <ms>.<identity>.<mac>`,
//! an HMAC-SHA256 with the cluster secret over the time, the identity, the query and the body.
//! A server accepts one only with a valid MAC less than 30 s old, and then applies that
//! identity's permissions (every server reads the same tokens file); a client without the
//! secret cannot forge one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// An operation an identity may be allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Grant leases.
    Grant,
    /// Renew leases (one or a batch).
    Renew,
    /// Cancel leases (one or a batch).
    Cancel,
    /// Watch resources.
    Watch,
    /// The `/admin/` endpoints.
    Admin,
    /// `/metrics`, `/readyz`, `/healthz` on the client listener.
    Metrics,
}

impl Op {
    /// The name in the tokens file.
    pub fn name(self) -> &'static str {
        match self {
            Op::Grant => "grant",
            Op::Renew => "renew",
            Op::Cancel => "cancel",
            Op::Watch => "watch",
            Op::Admin => "admin",
            Op::Metrics => "metrics",
        }
    }

    fn parse(s: &str) -> Result<Op, String> {
        Ok(match s.trim() {
            "grant" => Op::Grant,
            "renew" => Op::Renew,
            "cancel" => Op::Cancel,
            "watch" => Op::Watch,
            "admin" => Op::Admin,
            "metrics" => Op::Metrics,
            o => {
                return Err(format!(
                    "unknown operation {o:?} (grant, renew, cancel, watch, admin, metrics)"
                ))
            }
        })
    }
}

/// One identity of the tokens file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// Its name (for a certificate identity: the certificate's DNS name).
    pub name: String,
    /// The token's id (hex), if it has a token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_id: Option<String>,
    /// The salt (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salt: Option<String>,
    /// SHA-256 of salt and secret (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Whether a client certificate naming `name` is this identity.
    #[serde(default)]
    pub cert: bool,
    /// Allowed operations.
    pub ops: Vec<Op>,
    /// Resource prefixes it may lease (empty: any).
    #[serde(default)]
    pub prefixes: Vec<String>,
    /// Most live leases under its prefixes, per landlord.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_leases: Option<usize>,
    /// Longest lease, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lease_ms: Option<i64>,
}

impl Identity {
    /// Whether it may use `op`.
    pub fn may(&self, op: Op) -> bool {
        self.ops.contains(&op)
    }

    /// Whether it may lease `resource`.
    pub fn may_lease(&self, resource: &[u8]) -> bool {
        self.prefixes.is_empty() || self.prefixes.iter().any(|p| resource.starts_with(p.as_bytes()))
    }
}

/// The tokens file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokensFile {
    /// The identities.
    #[serde(default)]
    pub identity: Vec<Identity>,
}

impl TokensFile {
    /// Reads and checks a tokens file.
    pub fn read(path: &Path) -> Result<TokensFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let f: TokensFile =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut names = std::collections::HashSet::new();
        for i in &f.identity {
            if !names.insert(i.name.as_str()) {
                return Err(format!("{}: identity {:?} is listed twice", path.display(), i.name));
            }
            let token = [&i.token_id, &i.salt, &i.sha256].iter().filter(|x| x.is_some()).count();
            if token != 0 && token != 3 {
                return Err(format!(
                    "{}: identity {:?} needs token_id, salt and sha256 together",
                    path.display(),
                    i.name
                ));
            }
            if token == 0 && !i.cert {
                return Err(format!(
                    "{}: identity {:?} has neither a token nor cert = true",
                    path.display(),
                    i.name
                ));
            }
            if i.max_leases.is_some() && i.prefixes.is_empty() {
                return Err(format!(
                    "{}: identity {:?}: max_leases counts the leases under its prefixes; give it \
                     prefixes",
                    path.display(),
                    i.name
                ));
            }
            if i.max_lease_ms.is_some_and(|m| m <= 0) {
                return Err(format!(
                    "{}: identity {:?}: max_lease_ms must be > 0",
                    path.display(),
                    i.name
                ));
            }
        }
        Ok(f)
    }

    /// Writes the file (owner-only permissions).
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let text =
            "# leasehold-server tokens: written by `leasehold-server token`; tokens are kept \
                    as salted SHA-256 hashes.\n"
                .to_string()
                + &toml::to_string(self).map_err(|e| e.to_string())?;
        let tmp = path.with_extension("tmp");
        {
            use std::io::Write;
            let mut o = std::fs::OpenOptions::new();
            o.write(true).create(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
            let mut f = o.open(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
            f.write_all(text.as_bytes()).map_err(|e| format!("{}: {e}", tmp.display()))?;
            f.sync_all().map_err(|e| format!("{}: {e}", tmp.display()))?;
        }
        std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
    }
}

fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

fn random<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).expect("the system's random source");
    b
}

fn digest(salt: &[u8], secret: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(secret);
    h.finalize().into()
}

/// A token's salt, hash and identity, by the token's id.
type TokenEntry = (Vec<u8>, [u8; 32], Arc<Identity>);

/// Quota counters by identity and shard.
type Counts = HashMap<(String, u64), Arc<tokio::sync::Mutex<Count>>>;

/// A loaded, checked tokens file, ready to authenticate.
#[derive(Debug, Default)]
pub struct Identities {
    by_token: HashMap<Vec<u8>, TokenEntry>,
    by_cert: HashMap<String, Arc<Identity>>,
    by_name: HashMap<String, Arc<Identity>>,
}

impl Identities {
    /// From a tokens file.
    pub fn of(f: TokensFile) -> Result<Identities, String> {
        let mut out = Identities::default();
        for i in f.identity {
            let i = Arc::new(i);
            if let (Some(id), Some(salt), Some(h)) = (&i.token_id, &i.salt, &i.sha256) {
                let bad = || format!("identity {:?}: token_id, salt and sha256 are hex", i.name);
                let h: [u8; 32] = unhex(h).and_then(|v| v.try_into().ok()).ok_or_else(bad)?;
                out.by_token.insert(
                    unhex(id).ok_or_else(bad)?,
                    (unhex(salt).ok_or_else(bad)?, h, i.clone()),
                );
            }
            if i.cert {
                out.by_cert.insert(i.name.clone(), i.clone());
            }
            out.by_name.insert(i.name.clone(), i);
        }
        Ok(out)
    }

    /// The identity a bearer token names: `Ok(None)` if none does (wrong token).
    pub fn by_token(&self, token: &str) -> Option<Arc<Identity>> {
        let rest = token.strip_prefix("lh_")?;
        let (id, secret) = rest.split_once('_')?;
        let (salt, want, who) = self.by_token.get(&unhex(id)?)?;
        let got = digest(salt, secret.as_bytes());
        bool::from(got.ct_eq(want)).then(|| who.clone())
    }

    /// The identity a client certificate's name is, if the file lists it with `cert = true`.
    pub fn by_cert(&self, name: &str) -> Option<Arc<Identity>> {
        self.by_cert.get(name).cloned()
    }

    /// The identity named `name` (a forwarded request's).
    pub fn by_name(&self, name: &str) -> Option<Arc<Identity>> {
        self.by_name.get(name).cloned()
    }
}

/// Why a request is refused before it reaches a landlord.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// No credential at all: 401.
    NoCredential,
    /// A credential that names no identity: 403.
    BadCredential,
    /// An identity without the permission: 403.
    NotAllowed(String),
    /// A forwarded header without a valid proof: 403.
    BadForward(String),
}

impl Refused {
    /// The HTTP status.
    pub fn status(&self) -> axum::http::StatusCode {
        match self {
            Refused::NoCredential => axum::http::StatusCode::UNAUTHORIZED,
            _ => axum::http::StatusCode::FORBIDDEN,
        }
    }

    /// What the client is told.
    pub fn message(&self) -> String {
        match self {
            Refused::NoCredential => {
                "unauthorized: this server needs a token (Authorization: Bearer ...) or a client \
                 certificate"
                    .into()
            }
            Refused::BadCredential => {
                "forbidden: the token names no identity of this server".into()
            }
            Refused::NotAllowed(why) => format!("forbidden: {why}"),
            Refused::BadForward(why) => format!("forbidden: forwarded request refused: {why}"),
        }
    }
}

/// Authentication and authorization state of a server.
pub struct Auth {
    path: Option<PathBuf>,
    ids: RwLock<Arc<Identities>>,
    secret: Option<Vec<u8>>,
    quotas: Mutex<Counts>,
}

/// One identity's count in one shard.
#[derive(Debug, Default)]
pub struct Count {
    /// Live leases under its prefixes, as last counted plus grants since.
    pub counted: usize,
    /// Grants sent and not answered yet.
    pub pending: usize,
    /// When the shard was last scanned.
    pub scanned: Option<Instant>,
}

/// How long a forwarded request's proof stays good.
pub const FORWARD_WINDOW_MS: u64 = 30_000;

impl Auth {
    /// From the settings: the tokens file (if any) and the cluster secret (if any).
    pub fn load(tokens: Option<&Path>, secret: Option<&Path>) -> Result<Auth, String> {
        let ids = match tokens {
            Some(p) => Identities::of(TokensFile::read(p)?)?,
            None => Identities::default(),
        };
        let secret = match secret {
            Some(p) => {
                let s = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
                let s = s.trim_ascii().to_vec();
                if s.len() < 32 {
                    return Err(format!(
                        "{}: the cluster secret must be at least 32 bytes",
                        p.display()
                    ));
                }
                Some(s)
            }
            None => None,
        };
        Ok(Auth {
            path: tokens.map(Path::to_path_buf),
            ids: RwLock::new(Arc::new(ids)),
            secret,
            quotas: Mutex::new(HashMap::new()),
        })
    }

    /// Whether requests need an identity.
    pub fn enabled(&self) -> bool {
        self.path.is_some()
    }

    /// Whether forwarded requests are signed.
    pub fn signs(&self) -> bool {
        self.secret.is_some()
    }

    /// Re-reads the tokens file; on an error the old identities stay.
    pub fn reload(&self) -> Result<usize, String> {
        let Some(p) = &self.path else { return Ok(0) };
        let ids = Identities::of(TokensFile::read(p)?)?;
        let n = ids.by_name.len();
        *self.ids.write().unwrap_or_else(|x| x.into_inner()) = Arc::new(ids);
        Ok(n)
    }

    fn ids(&self) -> Arc<Identities> {
        self.ids.read().unwrap_or_else(|x| x.into_inner()).clone()
    }

    /// Who is speaking: the token (if any), else the certificate's identity. `Ok(None)` when
    /// authentication is off.
    pub fn identify(
        &self,
        headers: &axum::http::HeaderMap,
        cert: Option<&str>,
    ) -> Result<Option<Arc<Identity>>, Refused> {
        if !self.enabled() {
            return Ok(None);
        }
        let ids = self.ids();
        if let Some(v) = headers.get(axum::http::header::AUTHORIZATION) {
            let v = v.to_str().map_err(|_| Refused::BadCredential)?;
            let token = v
                .strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
                .ok_or(Refused::BadCredential)?;
            return ids.by_token(token.trim()).map(Some).ok_or(Refused::BadCredential);
        }
        match cert {
            Some(name) => ids.by_cert(name).map(Some).ok_or(Refused::BadCredential),
            None => Err(Refused::NoCredential),
        }
    }

    /// The MAC of a forwarded request.
    fn mac(&self, secret: &[u8], at_ms: u64, identity: &str, query: &str, body: &[u8]) -> Vec<u8> {
        let mut m = hmac::Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key");
        m.update(format!("leasehold-forward\n{at_ms}\n{identity}\n{query}\n").as_bytes());
        m.update(body);
        m.finalize().into_bytes().to_vec()
    }

    /// The `X-Leasehold-Forwarded` value for a request this server forwards (`None` without a
    /// cluster secret: then the header only says "do not forward again").
    pub fn sign(&self, identity: Option<&str>, query: &str, body: &[u8]) -> Option<String> {
        let secret = self.secret.as_ref()?;
        let at = wall_ms();
        let who = identity.unwrap_or("-");
        Some(format!("{at}.{who}.{}", hex(&self.mac(secret, at, who, query, body))))
    }

    /// Checks a forwarded request's proof; the identity it carries (`None`: sent without
    /// authentication).
    pub fn verify_forward(
        &self,
        value: &str,
        query: &str,
        body: &[u8],
    ) -> Result<Option<Arc<Identity>>, Refused> {
        let Some(secret) = &self.secret else {
            if self.enabled() {
                return Err(Refused::BadForward("this server has no cluster secret".into()));
            }
            return Ok(None);
        };
        let bad = |w: &str| Refused::BadForward(w.to_string());
        let (at, rest) = value.split_once('.').ok_or_else(|| bad("malformed proof"))?;
        let (who, mac) = rest.rsplit_once('.').ok_or_else(|| bad("malformed proof"))?;
        let at: u64 = at.parse().map_err(|_| bad("malformed proof"))?;
        let mac = unhex(mac).ok_or_else(|| bad("malformed proof"))?;
        let want = self.mac(secret, at, who, query, body);
        if !bool::from(want.as_slice().ct_eq(&mac)) {
            return Err(bad("the proof does not match (not signed with the cluster secret)"));
        }
        if wall_ms().abs_diff(at) > FORWARD_WINDOW_MS {
            return Err(bad("the proof is too old"));
        }
        if who == "-" {
            if self.enabled() {
                return Err(bad("it carries no identity"));
            }
            return Ok(None);
        }
        match self.ids().by_name(who) {
            Some(i) => Ok(Some(i)),
            None if !self.enabled() => Ok(None),
            None => Err(bad("its identity is not in this server's tokens file")),
        }
    }

    /// The counter of `identity`'s leases in shard `shard`.
    pub fn count(&self, identity: &str, shard: u64) -> Arc<tokio::sync::Mutex<Count>> {
        self.quotas
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((identity.to_string(), shard))
            .or_default()
            .clone()
    }
}

/// How often a full identity's leases are counted again, at most.
pub const RECOUNT_EVERY: Duration = Duration::from_millis(100);

/// Token commands of `leasehold-server token`.
#[derive(Debug, clap::Subcommand)]
pub enum TokenAction {
    /// Adds an identity with a new token (printed once; only its hash is kept), or with
    /// --cert, one that a client certificate naming it is.
    Add {
        /// The tokens file (created if missing).
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        /// The identity's name (with --cert: the certificate's DNS name).
        #[arg(long)]
        name: String,
        /// Allowed operations, comma-separated: grant,renew,cancel,watch,admin,metrics.
        #[arg(long, default_value = "grant,renew,cancel,watch")]
        ops: String,
        /// A resource prefix it may lease (repeat for more; none: any resource).
        #[arg(long = "prefix", value_name = "PREFIX")]
        prefixes: Vec<String>,
        /// Most live leases under its prefixes, per landlord.
        #[arg(long)]
        max_leases: Option<usize>,
        /// Longest lease, ms.
        #[arg(long)]
        max_lease_ms: Option<i64>,
        /// A certificate identity instead of a token.
        #[arg(long)]
        cert: bool,
    },
    /// Lists the identities (never tokens).
    List {
        /// The tokens file.
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
    },
    /// Removes an identity (its token stops working at the server's next SIGHUP).
    Remove {
        /// The tokens file.
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        /// The identity's name.
        #[arg(long)]
        name: String,
    },
}

/// Runs a token command; what to print.
pub fn token_command(action: TokenAction) -> Result<String, String> {
    match action {
        TokenAction::Add { file, name, ops, prefixes, max_leases, max_lease_ms, cert } => {
            let mut f =
                if file.exists() { TokensFile::read(&file)? } else { TokensFile::default() };
            if f.identity.iter().any(|i| i.name == name) {
                return Err(format!(
                    "{}: identity {name:?} exists (remove it first)",
                    file.display()
                ));
            }
            let ops = ops
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(Op::parse)
                .collect::<Result<Vec<_>, _>>()?;
            let mut id = Identity {
                name: name.clone(),
                token_id: None,
                salt: None,
                sha256: None,
                cert,
                ops,
                prefixes,
                max_leases,
                max_lease_ms,
            };
            let mut out = String::new();
            if !cert {
                let (tid, salt, secret) = (random::<8>(), random::<16>(), hex(&random::<32>()));
                id.token_id = Some(hex(&tid));
                id.salt = Some(hex(&salt));
                id.sha256 = Some(hex(&digest(&salt, secret.as_bytes())));
                out = format!("lh_{}_{secret}\n", hex(&tid));
            }
            f.identity.push(id);
            // Check the result as the server will read it.
            let text = toml::to_string(&f).map_err(|e| e.to_string())?;
            let check: TokensFile = toml::from_str(&text).map_err(|e| e.to_string())?;
            Identities::of(check)?;
            f.write(&file)?;
            TokensFile::read(&file)?;
            Ok(out)
        }
        TokenAction::List { file } => {
            let f = TokensFile::read(&file)?;
            Ok(f.identity
                .iter()
                .map(|i| {
                    let ops = i.ops.iter().map(|o| o.name()).collect::<Vec<_>>().join(",");
                    format!(
                        "{}\t{}\tops={ops}\tprefixes={}\tmax_leases={}\tmax_lease_ms={}\n",
                        i.name,
                        if i.cert { "cert" } else { "token" },
                        if i.prefixes.is_empty() { "*".into() } else { i.prefixes.join(",") },
                        i.max_leases.map_or("-".into(), |n| n.to_string()),
                        i.max_lease_ms.map_or("-".into(), |n| n.to_string()),
                    )
                })
                .collect())
        }
        TokenAction::Remove { file, name } => {
            let mut f = TokensFile::read(&file)?;
            let before = f.identity.len();
            f.identity.retain(|i| i.name != name);
            if f.identity.len() == before {
                return Err(format!("{}: no identity {name:?}", file.display()));
            }
            f.write(&file)?;
            Ok(format!("removed {name}\n"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_wrong_ones_fail() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        let add = |name: &str| {
            token_command(TokenAction::Add {
                file: file.clone(),
                name: name.into(),
                ops: "grant,renew".into(),
                prefixes: vec!["a/".into()],
                max_leases: Some(3),
                max_lease_ms: Some(1000),
                cert: false,
            })
            .unwrap()
        };
        let t1 = add("one");
        let t2 = add("two");
        let ids = Identities::of(TokensFile::read(&file).unwrap()).unwrap();
        assert_eq!(ids.by_token(t1.trim()).unwrap().name, "one");
        assert_eq!(ids.by_token(t2.trim()).unwrap().name, "two");
        // Right id, wrong secret; garbage; the secret of another id.
        let mut bad = t1.trim().to_string();
        bad.pop();
        bad.push('x');
        assert!(ids.by_token(&bad).is_none());
        assert!(ids.by_token("lh_zz_zz").is_none());
        let (id1, _) = t1.trim()[3..].split_once('_').unwrap();
        let (_, s2) = t2.trim()[3..].split_once('_').unwrap();
        assert!(ids.by_token(&format!("lh_{id1}_{s2}")).is_none());
        // The file keeps no token.
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains(t1.trim().rsplit('_').next().unwrap()));
        token_command(TokenAction::Remove { file: file.clone(), name: "one".into() }).unwrap();
        let ids = Identities::of(TokensFile::read(&file).unwrap()).unwrap();
        assert!(ids.by_token(t1.trim()).is_none());
    }

    #[test]
    fn forwards_need_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let s = dir.path().join("secret");
        std::fs::write(&s, "0123456789abcdef0123456789abcdef").unwrap();
        let a = Auth::load(None, Some(&s)).unwrap();
        let v = a.sign(None, "landlord=1", b"body").unwrap();
        assert_eq!(a.verify_forward(&v, "landlord=1", b"body"), Ok(None));
        assert!(a.verify_forward(&v, "landlord=2", b"body").is_err());
        assert!(a.verify_forward(&v, "landlord=1", b"bodx").is_err());
        std::fs::write(&s, "another secret of at least 32 bytes....").unwrap();
        let b = Auth::load(None, Some(&s)).unwrap();
        assert!(b.verify_forward(&v, "landlord=1", b"body").is_err());
        assert!(b.verify_forward("1", "", b"").is_err());
    }
}
