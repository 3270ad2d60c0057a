//! Coordination over HTTP: `POST /coord` (acquire with a wait, watch, poll, holders) and
//! `GET /watch` (a watch's events by long polling), routing that keeps what must be together
//! in one shard, and coordination metrics.
//!
//! # Routing
//!
//! Exclusivity, tokens and watches are per landlord, so everything that must be decided
//! together lives in one shard. A resource's *routing key* is the longest configured
//! `colocate` prefix it starts with; else, for a pool's member, the pool's name; else the
//! resource itself. Grants (`POST /lease`) and acquires go to the shard of the routing key's
//! hash, so a plain grant and an acquire of one exclusive resource always meet in one landlord,
//! and a pool and its members are one landlord's. A watch on one resource goes where that
//! resource goes; a watch on a prefix must be inside a `colocate` prefix (or the server must
//! have one shard), so that every resource it selects is in the shard that serves it. Polls
//! name the landlord that made the watch (`?landlord=`, as the `watching` reply says).
//!
//! # Why long polling (not Server-Sent Events)
//!
//! A poll is one request through the shard's actor and group commit, like any other: its
//! answer leaves only once the records behind its events are durable, it is forwarded to the
//! shard's owner like any request, and a watcher resumes after a disconnect or a failover by
//! asking again with the last number it has (`since`); nothing about a watcher lives in a
//! connection. The same messages carry watches over any transport (the wire protocol is
//! request and reply), which is what bindings and hosts of their own need. The cost is a round
//! trip per batch of events; an answer carries every event that arrived meanwhile, so a busy
//! watch is not slower for it.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use leasehold::coord::wire::{CoordReply, CoordReplyBody, CoordRequest, CoordRequestBody};
use leasehold::coord::CoordConfig;
use leasehold::wire::WireError;
use leasehold::{Cookie, Encoding, LandlordId, LeaseError};
use serde::Deserialize;

use crate::http::{content_type, encoding_of, pick_shard, OWNER};
use crate::shard::Answer;
use crate::App;

/// Coordination settings of a server (`[coordination]` in the config file).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoordSettings {
    /// Resources that are exclusive, by exact name.
    #[serde(default)]
    pub exclusive: Vec<String>,
    /// Prefixes under which every resource is exclusive.
    #[serde(default)]
    pub exclusive_prefixes: Vec<String>,
    /// Pools: `{ name = "ips", members = ["10.0.0.1", ...] }`.
    #[serde(default)]
    pub pools: Vec<PoolSettings>,
    /// Prefixes whose resources all live in one shard (so prefix watches see them all).
    #[serde(default)]
    pub colocate: Vec<String>,
    /// Events kept per watch (default 1024).
    pub history: Option<usize>,
    /// Most watches per shard (default 10000).
    pub max_watches: Option<usize>,
    /// Most requests waiting per shard (default 100000).
    pub max_waiters: Option<usize>,
    /// Longest wait an acquire or a poll may ask for, in ms (default 60000); longer ones are
    /// cut to it.
    pub max_wait_ms: Option<i64>,
}

/// One pool in the config file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolSettings {
    /// What holders acquire.
    pub name: String,
    /// Its members.
    pub members: Vec<String>,
}

/// Longest wait by default.
pub const DEFAULT_MAX_WAIT_MS: i64 = 60_000;

impl CoordSettings {
    /// The core's configuration.
    pub fn core(&self) -> CoordConfig {
        let mut c = CoordConfig::new();
        for e in &self.exclusive {
            c = c.exclusive(leasehold::Selector::exact(e.as_bytes()));
        }
        for p in &self.exclusive_prefixes {
            c = c.exclusive(leasehold::Selector::prefix(p.as_bytes()));
        }
        for p in &self.pools {
            c = c.pool(leasehold::coord::Pool::new(
                p.name.as_bytes(),
                p.members.iter().map(|m| m.as_bytes().to_vec()),
            ));
        }
        if let Some(h) = self.history {
            c.history = h;
        }
        if let Some(n) = self.max_watches {
            c.max_watches = n;
        }
        if let Some(n) = self.max_waiters {
            c.max_waiters = n;
        }
        c
    }

    /// Checks the settings (the core's checks, and colocate prefixes are not empty).
    pub fn validate(&self) -> Result<(), String> {
        self.core().validate().map_err(|e| e.detail())?;
        if self.colocate.iter().any(String::is_empty) {
            return Err("coordination: a colocate prefix is empty (it would put every resource in one shard: use shards = 1)".into());
        }
        if self.max_wait_ms.is_some_and(|w| w < 0) {
            return Err("coordination: max_wait_ms is negative".into());
        }
        Ok(())
    }

    /// The routing key of a resource (see the module docs).
    pub fn route_key<'a>(&'a self, resource: &'a [u8]) -> &'a [u8] {
        if let Some(p) = self
            .colocate
            .iter()
            .filter(|p| resource.starts_with(p.as_bytes()))
            .max_by_key(|p| p.len())
        {
            return p.as_bytes();
        }
        if let Some(p) =
            self.pools.iter().find(|p| p.members.iter().any(|m| m.as_bytes() == resource))
        {
            return p.name.as_bytes();
        }
        resource
    }

    /// The shard of `resource` among `shards`.
    pub fn shard_of(&self, resource: &[u8], shards: u64) -> u64 {
        pick_shard(self.route_key(resource), shards)
    }

    /// The shard that serves a watch (or a holders query) on `resource` (a prefix if
    /// `prefix`), or why none can.
    pub fn shard_of_selector(
        &self,
        resource: &[u8],
        prefix: bool,
        shards: u64,
    ) -> Result<u64, String> {
        if shards == 1 {
            return Ok(1);
        }
        if !prefix {
            return Ok(self.shard_of(resource, shards));
        }
        match self
            .colocate
            .iter()
            .filter(|p| resource.starts_with(p.as_bytes()))
            .max_by_key(|p| p.len())
        {
            Some(p) => Ok(pick_shard(p.as_bytes(), shards)),
            None => Err(format!(
                "a prefix watch spans shards: this server has {shards}, and the prefix {} is not \
                 inside a colocated prefix (coordination.colocate), so its resources are spread \
                 over every shard",
                leasehold::coord::show(resource)
            )),
        }
    }

    /// Longest wait allowed.
    pub fn max_wait(&self) -> i64 {
        self.max_wait_ms.unwrap_or(DEFAULT_MAX_WAIT_MS)
    }
}

/// Server-wide coordination counters.
#[derive(Debug, Default)]
pub struct CoordMetrics {
    /// Acquires granted (at once or after a wait).
    pub acquired: AtomicU64,
    /// Acquires denied (held and no wait, or the wait ran out).
    pub denied: AtomicU64,
    /// Acquires that waited (held, then answered later).
    pub waited: AtomicU64,
    /// Waiting requests whose requester went away.
    pub abandoned: AtomicU64,
    /// Leases granted to a requester that had gone, cancelled at once.
    pub undelivered: AtomicU64,
    /// Watches made.
    pub watches: AtomicU64,
    /// Polls answered.
    pub polls: AtomicU64,
    /// Events delivered by polls.
    pub events: AtomicU64,
    /// Polls told that events were missed.
    pub missed: AtomicU64,
}

impl CoordMetrics {
    /// Counts an acknowledged coordination reply.
    pub fn count(&self, reply: &CoordReply) {
        match &reply.body {
            CoordReplyBody::Acquired { .. } => {
                self.acquired.fetch_add(1, Relaxed);
            }
            CoordReplyBody::Watching { .. } => {
                self.watches.fetch_add(1, Relaxed);
            }
            CoordReplyBody::Events(e) => {
                self.polls.fetch_add(1, Relaxed);
                self.events.fetch_add(e.events.len() as u64, Relaxed);
                if e.missed.is_some() {
                    self.missed.fetch_add(1, Relaxed);
                }
            }
            CoordReplyBody::Error(e) if e.code == leasehold::ErrorCode::LeaseDenied as i32 => {
                self.denied.fetch_add(1, Relaxed);
            }
            _ => {}
        }
    }

    /// Appends the coordination metrics (and per-shard gauges) in Prometheus text.
    pub fn render(&self, out: &mut String, shards: &[(u64, leasehold::coord::CoordStats)]) {
        use std::fmt::Write;
        let counters: [(&str, &str, &AtomicU64); 9] = [
            (
                "leasehold_acquired_total",
                "Acquires granted (at once or after a wait).",
                &self.acquired,
            ),
            (
                "leasehold_acquire_denied_total",
                "Acquires denied (held, or the wait ran out).",
                &self.denied,
            ),
            (
                "leasehold_acquire_waited_total",
                "Acquires held waiting for a resource.",
                &self.waited,
            ),
            (
                "leasehold_waits_abandoned_total",
                "Waiting requests whose requester went away.",
                &self.abandoned,
            ),
            (
                "leasehold_acquired_undelivered_total",
                "Leases granted to a requester that had gone (cancelled at once).",
                &self.undelivered,
            ),
            ("leasehold_watches_total", "Watches made.", &self.watches),
            ("leasehold_polls_total", "Watch polls answered.", &self.polls),
            ("leasehold_events_delivered_total", "Watch events delivered.", &self.events),
            ("leasehold_polls_missed_total", "Polls told that events were missed.", &self.missed),
        ];
        for (name, help, v) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                v.load(Relaxed)
            );
        }
        type Get = fn(&leasehold::coord::CoordStats) -> u64;
        let gauges: [(&str, &str, Get); 4] = [
            ("leasehold_fencing_token", "The last fencing token granted.", |s| s.last_token),
            ("leasehold_exclusive_held", "Exclusive resources held.", |s| s.held as u64),
            ("leasehold_waiting_requests", "Requests waiting (acquires and polls).", |s| {
                s.waiting as u64
            }),
            ("leasehold_watches", "Watches held.", |s| s.watches as u64),
        ];
        for (name, help, get) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
            for (id, s) in shards {
                let _ = writeln!(out, "{name}{{shard=\"{id}\"}} {}", get(s));
            }
        }
    }
}

fn encoded(reply: &CoordReply, enc: Encoding, owner: Option<&str>) -> Response {
    encoded_with(status_of(reply), reply, enc, owner)
}

/// The status of an answer carrying `reply`: as `POST /lease`'s ([`crate::reply`]), by the
/// error's code; every other reply is 200.
pub fn status_of(reply: &CoordReply) -> StatusCode {
    match &reply.body {
        CoordReplyBody::Error(e) => crate::reply::status_of_error(e),
        _ => StatusCode::OK,
    }
}

fn encoded_with(
    status: StatusCode,
    reply: &CoordReply,
    enc: Encoding,
    owner: Option<&str>,
) -> Response {
    let explained;
    let reply = match &reply.body {
        // The core's "unknown lease" has no message (as for `POST /lease`, see
        // [`crate::reply::explain`]): say what it can mean.
        CoordReplyBody::Error(e)
            if e.error_code() == Some(leasehold::ErrorCode::UnknownLease)
                && e.message.is_empty() =>
        {
            let mut e = e.clone();
            e.message = format!(
                "the lease or watch is unknown to landlord {}: never granted there, cancelled, \
                 revoked, or expired",
                reply.landlord
            );
            explained = CoordReply { body: CoordReplyBody::Error(e), ..reply.clone() };
            &explained
        }
        _ => reply,
    };
    let mut r =
        (status, [(header::CONTENT_TYPE, content_type(enc))], reply.encode(enc)).into_response();
    if let Some(o) = owner.and_then(|o| HeaderValue::from_str(o).ok()) {
        r.headers_mut().insert(OWNER, o);
    }
    r
}

fn error_reply(id: u64, landlord: u64, e: &LeaseError, enc: Encoding) -> Response {
    let reply = CoordReply {
        id,
        landlord: LandlordId(landlord),
        body: CoordReplyBody::Error(WireError::from(e)),
    };
    encoded(&reply, enc, None)
}

/// A refusal of coordination request `id` (0: not read) for its identity, as a coordination
/// error reply with the refusal's status (401 or 403).
pub fn refused(r: &crate::auth::Refused, id: u64, enc: Encoding) -> Response {
    let reply = CoordReply {
        id,
        landlord: LandlordId(0),
        body: CoordReplyBody::Error(WireError {
            code: leasehold::ErrorCode::LeaseDenied as i32,
            message: r.message(),
        }),
    };
    let mut resp = encoded_with(r.status(), &reply, enc, None);
    if r.status() == StatusCode::UNAUTHORIZED {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    resp
}

/// `413` with a decode error reply (id 0: the body was not read).
fn too_large(max: usize, enc: Encoding) -> Response {
    let e = LeaseError::Decode(format!("a message is at most {max} bytes"));
    let reply =
        CoordReply { id: 0, landlord: LandlordId(0), body: CoordReplyBody::Error((&e).into()) };
    encoded_with(StatusCode::PAYLOAD_TOO_LARGE, &reply, enc, None)
}

/// The wait a request asks for, cut to the server's longest.
fn wait_of(body: &CoordRequestBody) -> i64 {
    match body {
        CoordRequestBody::Acquire { wait, .. } | CoordRequestBody::Poll { wait, .. } => *wait,
        _ => 0,
    }
}

fn cap_wait(body: &mut CoordRequestBody, max: i64) {
    match body {
        CoordRequestBody::Acquire { wait, .. } | CoordRequestBody::Poll { wait, .. } => {
            *wait = (*wait).min(max)
        }
        _ => {}
    }
}

/// `POST /coord[?landlord=<16 hex digits>]`: one coordination message, answered in the same
/// encoding, with the statuses and wire bodies of `POST /lease` ([`crate::reply`]): any wire
/// reply is the landlord's definite answer, whatever its status; `503` (plain text, with
/// `Retry-After`) means this server could not answer and another may.
pub(crate) async fn coord(
    State(app): State<Arc<App>>,
    Query(q): Query<Vec<(String, String)>>,
    req: axum::extract::Request,
) -> Response {
    let enc = encoding_of(req.headers());
    let landlord = match crate::reply::one_param(&q, "landlord") {
        Ok(l) => l,
        Err(e) => return error_reply(0, 0, &e, enc),
    };
    let crate::access::Intake { body, caller, forwarded } =
        match crate::access::intake(&app, req).await {
            Ok(i) => i,
            Err(crate::access::Unread::TooLarge(max)) => return too_large(max, enc),
            Err(crate::access::Unread::Slow(e)) => return error_reply(0, 0, &e, enc),
            Err(crate::access::Unread::Refused(r)) => return refused(&r, 0, enc),
        };
    let named = match landlord.as_deref().map(crate::reply::parse_landlord) {
        None => None,
        Some(Ok(id)) => Some(id.0),
        Some(Err(e)) => return error_reply(0, 0, &e, enc),
    };
    let mut request = match CoordRequest::decode(&body, enc, &app.config.limits) {
        Ok(r) => r,
        Err(e) => return error_reply(0, named.unwrap_or(0), &e, enc),
    };
    let mut body = body;
    if let Some(who) = &caller {
        match crate::access::authorize_coord(who, &mut request) {
            Ok(false) => {}
            // Durations cut to the identity's longest lease: forward what is answered.
            Ok(true) => body = Bytes::from(request.encode(enc)),
            Err(r) => return refused(&r, request.id, enc),
        }
    }
    let settings = &app.config.coord;
    cap_wait(&mut request.body, settings.max_wait());
    let shards = app.shard_count();
    let shard = match (named, &request.body) {
        (Some(id), _) => id,
        (None, CoordRequestBody::Acquire { resource, .. }) => settings.shard_of(resource, shards),
        (None, CoordRequestBody::Watch { resource, prefix, .. })
        | (None, CoordRequestBody::Holders { resource, prefix }) => {
            match settings.shard_of_selector(resource, *prefix, shards) {
                Ok(s) => s,
                Err(why) => {
                    return error_reply(request.id, 0, &LeaseError::InvalidArgument(why), enc)
                }
            }
        }
        (None, _) if shards == 1 => 1,
        (None, _) => {
            let e = LeaseError::InvalidArgument(format!(
                "this server has {shards} landlords: poll with POST /coord?landlord=<16 hex \
                 digits> (the landlord of the watching reply)"
            ));
            return error_reply(request.id, 0, &e, enc);
        }
    };
    if shard == 0 || shard > shards {
        let e = WireError {
            code: leasehold::ErrorCode::UnknownLease as i32,
            message: format!(
                "landlord {} is not one of this cluster's (0000000000000001 to {})",
                LandlordId(shard),
                LandlordId(shards)
            ),
        };
        let reply = CoordReply {
            id: request.id,
            landlord: LandlordId(shard),
            body: CoordReplyBody::Error(e),
        };
        return encoded(&reply, enc, None);
    }
    let wait = wait_of(&request.body);
    let why = match app.shard(shard) {
        Some(h) => {
            // An identity's quota: an acquire is a grant.
            let acquire = matches!(request.body, CoordRequestBody::Acquire { .. });
            let quota = match &caller {
                Some(who) => match crate::access::reserve(&app, &h, who, shard, acquire).await {
                    Ok(q) => q,
                    Err(full) => {
                        let e = LeaseError::LeaseDenied(full.message);
                        return error_reply(request.id, shard, &e, enc);
                    }
                },
                None => None,
            };
            let answer = h.coord(request).await;
            if let Some(q) = quota {
                q.finish(matches!(&answer, Answer::Coord(r) if matches!(r.body, CoordReplyBody::Acquired { .. })))
                    .await;
            }
            match answer {
                Answer::Coord(reply) => return encoded(&reply, enc, Some(&app.config.advertise)),
                Answer::Reply(_) | Answer::Set(_) => {
                    "a landlord reply to a coordination request".to_string()
                }
                Answer::Unavailable(why) => why,
            }
        }
        None => app.unserved_why(shard),
    };
    if !forwarded {
        // The owner may hold the request for its wait: give it that long on top.
        let held = Duration::from_millis(wait.max(0) as u64);
        let who = caller.as_ref().map(|c| c.name.as_str());
        if let Some(r) = app.forward_to("/coord", shard, Some(shard), enc, body, who, held).await {
            return r;
        }
    }
    app.stats.unavailable.fetch_add(1, Relaxed);
    crate::reply::unavailable(why)
}

/// The query of `GET /watch`.
#[derive(Debug, Deserialize)]
pub(crate) struct WatchQuery {
    landlord: Option<String>,
    cookie: String,
    since: Option<u64>,
    wait_ms: Option<i64>,
    max: Option<u32>,
}

/// `GET /watch?cookie=<watch cookie>&since=<n>[&landlord=<16 hex digits>][&wait_ms=<ms>][&max=<n>]`:
/// a watch's events after `since` as JSON (the `events` reply of a poll), waiting up to
/// `wait_ms` (default 25000, at most the server's longest wait) for one if there are none.
/// Statuses as `POST /coord`'s.
pub(crate) async fn watch(
    State(app): State<Arc<App>>,
    caller: Option<axum::Extension<crate::access::Caller>>,
    q: Result<Query<WatchQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Query(q) = match q {
        Ok(q) => q,
        Err(e) => {
            return error_reply(0, 0, &LeaseError::InvalidArgument(e.body_text()), Encoding::Json)
        }
    };
    let cookie: Cookie = match q.cookie.parse() {
        Ok(c) => c,
        Err(e) => {
            let e = LeaseError::InvalidArgument(format!("cookie: {e}"));
            return error_reply(0, 0, &e, Encoding::Json);
        }
    };
    let request = CoordRequest {
        id: 0,
        body: CoordRequestBody::Poll {
            cookie,
            since: q.since.unwrap_or(0),
            wait: q.wait_ms.unwrap_or(25_000),
            max: q.max.unwrap_or(0),
        },
    };
    let body = Bytes::from(request.encode(Encoding::Json));
    let mut req = axum::http::Request::post("/coord")
        .header(header::CONTENT_TYPE, "application/json")
        .body(axum::body::Body::from(body))
        .expect("a request");
    // The identity the guard found speaks for the poll.
    if let Some(axum::Extension(c)) = caller {
        req.extensions_mut().insert(c);
    }
    let params = q.landlord.map(|l| vec![("landlord".to_string(), l)]).unwrap_or_default();
    coord(State(app), Query(params), req).await
}
