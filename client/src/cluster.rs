//! The cluster transport: one wire message to a `leasehold-server` cluster, with failover.
//!
//! The rules are those of `docs/server-transports.md`; in short:
//!
//! - a grant goes to `POST <server>/lease` (the server picks the shard from the resource);
//!   a renewal or cancel to `POST <server>/lease?landlord=<16 hex digits>`, the landlord id in
//!   exactly the form the wire uses (the server refuses any other form with a 400);
//! - within one send the servers are tried in turn, starting with the owner of the landlord's
//!   shard once a server has named it (`X-Leasehold-Owner`), else the one that answered last;
//!   a refused or reset connection, an attempt that takes longer than
//!   [`ClusterConfig::attempt_timeout`] (a paused server accepts connections but never
//!   answers), or an answer that is not a wire reply (a 5xx such as `503` with `Retry-After`,
//!   a proxy's error page, an undecodable body) moves on to the next server;
//! - an answer that *is* a wire reply is returned whatever its status: a `404` "unknown
//!   lease" or a `409` "denied" is the landlord's definite answer, for the renewal manager to
//!   act on, and is never retried elsewhere;
//! - only when every server failed does [`Cluster::send`] fail, with
//!   [`ClientError::Unavailable`]: an *indefinite* failure, which the renewal manager retries
//!   until the lease would expire ([`ClientError::to_lease_error`]);
//! - a `307`/`308` is followed once, with the same method and body.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{
    HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE, LOCATION, RETRY_AFTER,
};
use hyper::{Method, StatusCode, Uri};
use hyper_util::client::legacy::connect::{Connect, HttpConnector};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use leasehold::coord::wire::{CoordReply, CoordRequest, CoordRequestBody};
use leasehold::service::wire::{SetReply, SetRequest};
use leasehold::{Encoding, LandlordId, LeaseError, Limits, Reply, Request};

use crate::error::ClientError;

/// The header a server names the owner of the answering shard with.
pub const OWNER_HEADER: &str = "x-leasehold-owner";

/// The content type of a wire message in `encoding`.
pub fn content_type(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::Json => "application/json",
        Encoding::Binary => "application/octet-stream",
    }
}

/// The query of a request for `landlord`: `landlord=` and the id in the wire's form, 16
/// lower-case hex digits (`LandlordId(16)` is `landlord=0000000000000010`).
pub fn landlord_query(landlord: LandlordId) -> String {
    format!("landlord={landlord}")
}

/// How to reach a cluster.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The servers' URLs, `http://host:port` (a URL with a path other than `/` uses that path
    /// as its lease endpoint; otherwise `/lease`). At least one.
    pub servers: Vec<String>,
    /// The encoding of the messages sent (replies come back in the same one). Binary by
    /// default.
    pub encoding: Encoding,
    /// How long one attempt at one server may take (connect, send, whole answer). Keep it well
    /// under the lease lengths in use: 1 s by default.
    pub attempt_timeout: Duration,
    /// Headers sent with every request (e.g. `Authorization`, see
    /// [`ClusterConfig::bearer_token`]).
    pub headers: HeaderMap,
    /// Limits a reply is decoded under.
    pub limits: Limits,
}

impl ClusterConfig {
    /// A configuration for these servers with the defaults.
    pub fn new<S: Into<String>>(servers: impl IntoIterator<Item = S>) -> ClusterConfig {
        ClusterConfig {
            servers: servers.into_iter().map(Into::into).collect(),
            encoding: Encoding::Binary,
            attempt_timeout: Duration::from_secs(1),
            headers: HeaderMap::new(),
            limits: Limits::default(),
        }
    }

    /// Sends messages in `encoding`.
    pub fn encoding(mut self, encoding: Encoding) -> ClusterConfig {
        self.encoding = encoding;
        self
    }

    /// Ends each attempt after `timeout`.
    pub fn attempt_timeout(mut self, timeout: Duration) -> ClusterConfig {
        self.attempt_timeout = timeout;
        self
    }

    /// Sends `Authorization: Bearer <token>` with every request (the hook for the servers'
    /// tokens; a token with characters a header cannot carry is an error).
    pub fn bearer_token(mut self, token: &str) -> Result<ClusterConfig, ClientError> {
        let v = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| ClientError::Config("the token cannot go in a header".into()))?;
        self.headers.insert(AUTHORIZATION, v);
        Ok(self)
    }

    /// Sends `name: value` with every request.
    pub fn header(mut self, name: &str, value: &str) -> Result<ClusterConfig, ClientError> {
        let n = HeaderName::from_str(name)
            .map_err(|_| ClientError::Config(format!("{name:?} is not a header name")))?;
        let v = HeaderValue::from_str(value)
            .map_err(|_| ClientError::Config(format!("{value:?} is not a header value")))?;
        self.headers.insert(n, v);
        Ok(self)
    }
}

#[derive(Debug, Clone)]
struct Server {
    /// `scheme://authority`.
    origin: String,
    /// The lease endpoint's path (`/lease` by default).
    lease_path: String,
    /// The coordination endpoint's path: `/coord` beside the lease endpoint.
    coord_path: String,
    /// The renewal service's endpoint: `/renewal` beside the lease endpoint.
    renewal_path: String,
}

/// Which endpoint a message goes to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Lease,
    Coord,
    /// Set messages: JSON whatever the configured encoding.
    Renewal,
}

fn parse_server(url: &str) -> Result<Server, ClientError> {
    let uri = Uri::from_str(url.trim())
        .map_err(|e| ClientError::Config(format!("{url:?} is not a URL: {e}")))?;
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return Err(ClientError::Config(format!("{url:?} is not an http://host:port URL")));
    };
    if scheme != "http" && scheme != "https" {
        return Err(ClientError::Config(format!("{url:?}: only http:// and https:// URLs")));
    }
    let lease_path = match uri.path() {
        "" | "/" => "/lease".to_string(),
        p => p.to_string(),
    };
    let base = lease_path.strip_suffix("/lease").unwrap_or("");
    let coord_path = format!("{base}/coord");
    let renewal_path = format!("{base}/renewal");
    Ok(Server { origin: format!("{scheme}://{authority}"), lease_path, coord_path, renewal_path })
}

/// A reply decoder: [`Reply::decode`] or [`CoordReply::decode`].
type Decoder<T> = dyn Fn(&[u8], Encoding, &Limits) -> Result<T, LeaseError> + Sync;

/// What came back from one attempt.
struct Answer {
    status: StatusCode,
    content_type: Option<String>,
    owner: Option<String>,
    location: Option<String>,
    /// `Retry-After`, in seconds.
    retry_after: Option<u64>,
    body: Bytes,
}

/// Who gave a reply: for histories that record which server answered (the fault suite's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// The origin (`http://host:port`) of the server that answered (after a redirect: its
    /// target).
    pub server: String,
    /// The `X-Leasehold-Owner` it named: the server whose shard answered, when it forwarded.
    pub owner: Option<String>,
    /// When the request that was answered went out (the start of the attempt at that server;
    /// earlier attempts at servers that failed come before it). A lease the reply grants counts
    /// from here: not from the first attempt, which after a failover (an attempt that timed out,
    /// perhaps after the server held it) would lose the time spent on the failed servers.
    pub sent: tokio::time::Instant,
}

struct State {
    /// The server that answered last.
    current: usize,
    /// The server that owns each landlord's shard, as the servers said.
    owner_of: HashMap<LandlordId, usize>,
}

struct Inner<C> {
    servers: Vec<Server>,
    config: ClusterConfig,
    http: Client<C, Full<Bytes>>,
    state: Mutex<State>,
}

/// A client of a `leasehold-server` cluster: the servers, failover between them, the owner
/// hints they give. Cheap to clone (clones share connections and hints); every method takes
/// `&self`, so many tasks can send at once.
///
/// `C` is hyper's connector: plain TCP ([`HttpConnector`]) by default; a TLS connector (for
/// example one from `hyper-rustls`) plugs in through [`Cluster::with_connector`].
pub struct Cluster<C = HttpConnector> {
    inner: Arc<Inner<C>>,
}

impl<C> Clone for Cluster<C> {
    fn clone(&self) -> Self {
        Cluster { inner: self.inner.clone() }
    }
}

impl<C> std::fmt::Debug for Cluster<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("servers", &self.inner.config.servers).finish()
    }
}

impl Cluster<HttpConnector> {
    /// A client of the servers in `config`, over plain TCP (`http://` URLs only).
    pub fn new(config: ClusterConfig) -> Result<Cluster, ClientError> {
        if let Some(u) = config.servers.iter().find(|u| !u.trim().starts_with("http://")) {
            return Err(ClientError::Config(format!(
                "{u:?}: the plain connector speaks http:// only (use Cluster::with_tls for \
                 https://)"
            )));
        }
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(config.attempt_timeout));
        Cluster::with_connector(config, connector)
    }

    /// A client of these URLs with the default settings.
    pub fn from_urls<S: Into<String>>(
        urls: impl IntoIterator<Item = S>,
    ) -> Result<Cluster, ClientError> {
        Cluster::new(ClusterConfig::new(urls))
    }
}

impl<C: Connect + Clone + Send + Sync + 'static> Cluster<C> {
    /// A client of the servers in `config` through `connector`.
    pub fn with_connector(config: ClusterConfig, connector: C) -> Result<Cluster<C>, ClientError> {
        if config.servers.is_empty() {
            return Err(ClientError::Config("a cluster needs at least one server URL".into()));
        }
        if config.attempt_timeout.is_zero() {
            return Err(ClientError::Config("the attempt time-out must be more than 0".into()));
        }
        let servers = config.servers.iter().map(|u| parse_server(u)).collect::<Result<_, _>>()?;
        let http = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(Cluster {
            inner: Arc::new(Inner {
                servers,
                config,
                http,
                state: Mutex::new(State { current: 0, owner_of: HashMap::new() }),
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ClusterConfig {
        &self.inner.config
    }

    /// The servers' origins (`http://host:port`), in the configured order.
    pub fn origins(&self) -> Vec<String> {
        self.inner.servers.iter().map(|s| s.origin.clone()).collect()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends `request` (a grant with `landlord` `None`; a renewal or cancel names the lease's
    /// landlord) and returns the landlord's reply, which may be an error reply (a definite
    /// answer). [`ClientError::Unavailable`] when no server gave a wire reply.
    pub async fn send(
        &self,
        landlord: Option<LandlordId>,
        request: &Request,
    ) -> Result<Reply, ClientError> {
        self.send_traced(landlord, request).await.map(|(r, _)| r)
    }

    /// [`Cluster::send`], also saying which server answered.
    pub async fn send_traced(
        &self,
        landlord: Option<LandlordId>,
        request: &Request,
    ) -> Result<(Reply, Answered), ClientError> {
        let body = Bytes::from(request.encode(self.inner.config.encoding));
        self.round(landlord, Endpoint::Lease, body, Duration::ZERO, &Reply::decode)
            .await
            .map_err(|(e, _)| e)
    }

    /// Sends a coordination request (`POST /coord`: acquire, watch, poll, holders) and returns
    /// the landlord's reply, which may be an error reply (a definite answer), with failover as
    /// [`Cluster::send`]. `landlord` `None` lets the server route it by its resource (an
    /// acquire, a watch); a poll names the watch's landlord. A request the server may hold (an
    /// acquire that waits, a long poll) gets its wait on top of each attempt's time-out.
    pub async fn send_coord(
        &self,
        landlord: Option<LandlordId>,
        request: &CoordRequest,
    ) -> Result<CoordReply, ClientError> {
        self.send_coord_traced(landlord, request).await.map(|(r, _)| r)
    }

    /// [`Cluster::send_coord`], also saying which server answered and when the answered
    /// attempt was sent.
    pub async fn send_coord_traced(
        &self,
        landlord: Option<LandlordId>,
        request: &CoordRequest,
    ) -> Result<(CoordReply, Answered), ClientError> {
        let held = match &request.body {
            CoordRequestBody::Acquire { wait, .. } | CoordRequestBody::Poll { wait, .. } => {
                Duration::from_millis((*wait).max(0) as u64)
            }
            _ => Duration::ZERO,
        };
        let body = Bytes::from(request.encode(self.inner.config.encoding));
        self.round(landlord, Endpoint::Coord, body, held, &CoordReply::decode)
            .await
            .map_err(|(e, _)| e)
    }

    /// Like [`Cluster::send_traced`], but when no server gives a reply, waits a moment (the
    /// `Retry-After` a server asked for, clamped to 50..250 ms; 100 ms if none did) and tries
    /// every server again, until `deadline`. A renewal sent this way with its lease's end as
    /// the deadline rides out an owner that is paused or dead until another server has taken
    /// its shard over. Each attempt still ends after [`ClusterConfig::attempt_timeout`]: keep
    /// that a fraction of the lease.
    pub async fn send_until(
        &self,
        landlord: Option<LandlordId>,
        request: &Request,
        deadline: tokio::time::Instant,
    ) -> Result<(Reply, Answered), ClientError> {
        loop {
            let body = Bytes::from(request.encode(self.inner.config.encoding));
            let round = self.round(landlord, Endpoint::Lease, body, Duration::ZERO, &Reply::decode);
            let (e, retry_after) = match round.await {
                Ok(r) => return Ok(r),
                Err(x) => x,
            };
            let pause = retry_after
                .unwrap_or(Duration::from_millis(100))
                .clamp(Duration::from_millis(50), Duration::from_millis(250));
            if tokio::time::Instant::now() + pause >= deadline {
                return Err(e);
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// Sends a renewal set message (`POST /renewal`, JSON whatever the configured encoding;
    /// `landlord` is the set's, `None` for `create_set`) and returns the service's reply, which
    /// may be an error reply (a definite answer), with failover as [`Cluster::send`].
    pub async fn send_set(
        &self,
        landlord: Option<LandlordId>,
        request: &SetRequest,
    ) -> Result<SetReply, ClientError> {
        let body = Bytes::from(request.to_json());
        let decode = |b: &[u8], _: Encoding, l: &Limits| SetReply::from_json(b, l);
        self.round(landlord, Endpoint::Renewal, body, Duration::ZERO, &decode)
            .await
            .map(|(r, _)| r)
            .map_err(|(e, _)| e)
    }

    /// One round over the servers; on failure, the error and any `Retry-After` a server gave.
    /// `endpoint`: where to; `held`: how long the server may hold the request (added to each
    /// attempt's time-out); `decode`: the reply's decoder.
    async fn round<T>(
        &self,
        landlord: Option<LandlordId>,
        endpoint: Endpoint,
        body: Bytes,
        held: Duration,
        decode: &Decoder<T>,
    ) -> Result<(T, Answered), (ClientError, Option<Duration>)> {
        let n = self.inner.servers.len();
        let first = {
            let s = self.state();
            landlord.and_then(|l| s.owner_of.get(&l).copied()).unwrap_or(s.current)
        };
        let mut failures = Vec::new();
        let mut retry_after = None;
        for k in 0..n {
            let i = (first + k) % n;
            let server = &self.inner.servers[i];
            let path = match endpoint {
                Endpoint::Lease => &server.lease_path,
                Endpoint::Coord => &server.coord_path,
                Endpoint::Renewal => &server.renewal_path,
            };
            let enc = match endpoint {
                Endpoint::Renewal => Encoding::Json,
                _ => self.inner.config.encoding,
            };
            let mut target = match landlord {
                Some(l) => format!("{}{path}?{}", server.origin, landlord_query(l)),
                None => format!("{}{path}", server.origin),
            };
            let mut origin = server.origin.clone();
            let mut redirected = false;
            let sent = tokio::time::Instant::now();
            loop {
                let answer =
                    match self.exchange(Method::POST, &target, Some(body.clone()), held, enc).await
                    {
                        Ok(a) => a,
                        Err(why) => {
                            failures.push(format!("{target}: {why}"));
                            // A server that does not answer is no owner to start with next time.
                            let mut s = self.state();
                            if let Some(l) = landlord {
                                if s.owner_of.get(&l) == Some(&i) {
                                    s.owner_of.remove(&l);
                                }
                            }
                            if s.current == i {
                                s.current = (i + 1) % n;
                            }
                            break;
                        }
                    };
                if matches!(answer.status.as_u16(), 307 | 308) && !redirected {
                    if let Some(to) = answer.location.clone() {
                        redirected = true;
                        target = absolute(&server.origin, &to);
                        origin = parse_server(&target).map(|s| s.origin).unwrap_or(origin);
                        continue;
                    }
                }
                match self.wire_reply(&answer, decode, enc) {
                    Ok(reply) => {
                        let mut s = self.state();
                        s.current = i;
                        if let Some(l) = landlord {
                            let owner = answer.owner.as_deref().and_then(|o| self.index_of(o));
                            s.owner_of.insert(l, owner.unwrap_or(i));
                        }
                        return Ok((reply, Answered { server: origin, owner: answer.owner, sent }));
                    }
                    Err(why) => {
                        if let Some(secs) = answer.retry_after {
                            retry_after = Some(Duration::from_secs(secs));
                        }
                        failures.push(format!("{target}: {why}"));
                        break;
                    }
                }
            }
        }
        Err((ClientError::Unavailable(failures.join("; ")), retry_after))
    }

    /// The reply an answer carries, if it carries one: a wire content type and a body that
    /// decodes. A 5xx never does (the server could not answer; the next one may).
    fn wire_reply<T>(&self, a: &Answer, decode: &Decoder<T>, enc: Encoding) -> Result<T, String> {
        if a.status.is_server_error() || a.status.is_informational() {
            return Err(format!("HTTP {}{}", a.status.as_u16(), snippet(a)));
        }
        let ct = a.content_type.as_deref().unwrap_or("");
        if !ct.trim().to_ascii_lowercase().starts_with(content_type(enc)) {
            return Err(format!("HTTP {} with no wire reply{}", a.status.as_u16(), snippet(a)));
        }
        decode(&a.body, enc, &self.inner.config.limits)
            .map_err(|e| format!("HTTP {} with an undecodable reply: {e}", a.status.as_u16()))
    }

    fn index_of(&self, url: &str) -> Option<usize> {
        let origin = parse_server(url).ok()?.origin;
        self.inner.servers.iter().position(|s| s.origin == origin)
    }

    async fn exchange(
        &self,
        method: Method,
        url: &str,
        body: Option<Bytes>,
        held: Duration,
        enc: Encoding,
    ) -> Result<Answer, String> {
        let mut req = hyper::Request::builder().method(method).uri(url);
        let headers = req.headers_mut().expect("a fresh builder");
        // Each configured header appended as it is (a name and a value are cheap to clone);
        // cloning the whole map first cost an allocation and a rehash per request.
        let extra = &self.inner.config.headers;
        headers.reserve(extra.len() + 1);
        for (name, value) in extra {
            headers.append(name.clone(), value.clone());
        }
        if body.is_some() {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type(enc)));
        }
        let req = req
            .body(Full::new(body.unwrap_or_default()))
            .map_err(|e| format!("bad request: {e}"))?;
        let timeout = self.inner.config.attempt_timeout + held;
        let exchange = async {
            let resp = self.inner.http.request(req).await.map_err(|e| describe(&e))?;
            let (parts, body) = resp.into_parts();
            let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
            let header =
                |n: &str| parts.headers.get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
            Ok(Answer {
                status: parts.status,
                content_type: header(CONTENT_TYPE.as_str()),
                owner: header(OWNER_HEADER),
                location: header(LOCATION.as_str()),
                retry_after: header(RETRY_AFTER.as_str()).and_then(|v| v.trim().parse().ok()),
                body,
            })
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(r) => r,
            Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
        }
    }

    /// `GET <server><path>` on each server in turn until one answers with anything but a 5xx
    /// or a transport failure; the status and body. For the admin endpoints and `/openapi.json`.
    pub async fn get(&self, path: &str) -> Result<(StatusCode, Bytes), ClientError> {
        self.call(Method::GET, path, None).await
    }

    /// `DELETE <server><path>`, tried as [`Cluster::get`].
    pub async fn delete(&self, path: &str) -> Result<(StatusCode, Bytes), ClientError> {
        self.call(Method::DELETE, path, None).await
    }

    /// `method <server><path>` with `body`, tried as [`Cluster::get`].
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<(StatusCode, Bytes), ClientError> {
        let n = self.inner.servers.len();
        let first = self.state().current;
        let mut failures = Vec::new();
        for k in 0..n {
            let i = (first + k) % n;
            let url = format!("{}{path}", self.inner.servers[i].origin);
            let enc = self.inner.config.encoding;
            match self.exchange(method.clone(), &url, body.clone(), Duration::ZERO, enc).await {
                Ok(a) if !a.status.is_server_error() => return Ok((a.status, a.body)),
                Ok(a) => failures.push(format!("{url}: HTTP {}{}", a.status.as_u16(), snippet(&a))),
                Err(why) => failures.push(format!("{url}: {why}")),
            }
        }
        Err(ClientError::Unavailable(failures.join("; ")))
    }

    /// `GET <path>` from server `index` alone (of [`Cluster::origins`]), whatever it answers:
    /// what `leasehold cluster status` reads from each server (`/readyz`, `/metrics`).
    pub async fn get_from(
        &self,
        index: usize,
        path: &str,
    ) -> Result<(StatusCode, Bytes), ClientError> {
        let server = self
            .inner
            .servers
            .get(index)
            .ok_or_else(|| ClientError::Config(format!("no server {index}")))?;
        let url = format!("{}{path}", server.origin);
        self.exchange(Method::GET, &url, None, Duration::ZERO, self.inner.config.encoding)
            .await
            .map(|a| (a.status, a.body))
            .map_err(|why| ClientError::Unavailable(format!("{url}: {why}")))
    }
}

fn absolute(origin: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        location.to_string()
    } else {
        format!("{origin}{}{location}", if location.starts_with('/') { "" } else { "/" })
    }
}

fn snippet(a: &Answer) -> String {
    let text = String::from_utf8_lossy(&a.body[..a.body.len().min(120)]).trim().to_string();
    if text.is_empty() || a.content_type.as_deref().is_some_and(|c| !c.starts_with("text/")) {
        String::new()
    } else {
        format!(": {text}")
    }
}

/// A client error with its cause (hyper's `Display` alone says only "client error").
fn describe(e: &hyper_util::client::legacy::Error) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(c) = source {
        s.push_str(": ");
        s.push_str(&c.to_string());
        source = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_queries() {
        assert_eq!(landlord_query(LandlordId(16)), "landlord=0000000000000010");
        let s = parse_server("http://127.0.0.1:7420").unwrap();
        assert_eq!((s.origin.as_str(), s.lease_path.as_str()), ("http://127.0.0.1:7420", "/lease"));
        let s = parse_server("http://h:1/x/lease").unwrap();
        assert_eq!(s.lease_path, "/x/lease");
        assert!(parse_server("ftp://h:1").is_err());
        assert!(parse_server("not a url").is_err());
        assert!(Cluster::from_urls(Vec::<String>::new()).is_err());
        assert!(Cluster::from_urls(["https://h:1"]).is_err());
        assert_eq!(absolute("http://a:1", "/lease?x"), "http://a:1/lease?x");
        assert_eq!(absolute("http://a:1", "http://b:2/lease"), "http://b:2/lease");
    }
}
