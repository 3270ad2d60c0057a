//! Access control on the routes: the middleware that finds who speaks and what the route
//! needs, the checks of a lease request against its identity (operation, prefix, longest
//! lease) and the quota reservation. The rules are in [`crate::auth`].
//!
//! | route | needs |
//! |---|---|
//! | `/livez`, `/openapi.json` | nothing (they reveal no lease and no server state) |
//! | `POST /lease` | an identity with the operation (`grant`, `renew`, `cancel`) |
//! | `POST /renewal` | an identity with `grant` (`create_set`) or `renew` (every other set operation) |
//! | `/readyz`, `/healthz`, `/metrics` | `metrics` (or the `--metrics-listen` listener) |
//! | `/admin/...` | `admin` |
//! | `/watch...` | `watch` |
//! | `POST /discovery` | an identity; `grant` to register |
//! | `GET /discovery/status` | `metrics` |
//! | anything else | an identity |
//!
//! A refused `/lease` gets a wire error reply (`lease_denied` with a message that says why)
//! under 401 or 403, so that clients read it as a definite answer and do not fail over;
//! other routes get the message as text.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request as HttpRequest, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use leasehold::coord::wire::{CoordRequest, CoordRequestBody};
use leasehold::wire::WireError;
use leasehold::{Encoding, ErrorCode, LandlordId, Reply, ReplyBody, Request, RequestBody};

use crate::auth::{Count, Identity, Op, Refused, RECOUNT_EVERY};
use crate::listener::ConnInfo;
use crate::shard::ShardHandle;
use crate::App;

/// The identity a request speaks as (`None`: authentication is off), put in the request's
/// extensions by [`guard`].
#[derive(Debug, Clone)]
pub struct Caller(pub Option<Arc<Identity>>);

enum Need {
    Nothing,
    Identity,
    Op(Op),
    /// `/lease`: an identity, or a forwarding server's proof (checked with the body).
    Lease,
    /// `/coord`: as `/lease`, its refusals in the coordination reply's form.
    Coord,
    /// `/renewal`: as `/lease`, its refusals in the set reply's form.
    Renewal,
    /// `/discovery`: an identity, or a forwarding server's proof (checked with the body).
    Discovery,
}

fn need(path: &str) -> Need {
    match path {
        "/livez" | "/openapi.json" => Need::Nothing,
        "/lease" => Need::Lease,
        "/coord" => Need::Coord,
        "/renewal" => Need::Renewal,
        "/discovery" => Need::Discovery,
        "/readyz" | "/healthz" | "/metrics" | "/discovery/status" => Need::Op(Op::Metrics),
        p if p.starts_with("/admin/") || p == "/admin" => Need::Op(Op::Admin),
        p if p.starts_with("/watch") => Need::Op(Op::Watch),
        _ => Need::Identity,
    }
}

fn text(status: StatusCode, msg: String) -> Response {
    let mut r =
        (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], msg + "\n").into_response();
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    r
}

/// The middleware of the client listener.
pub async fn guard(State(app): State<Arc<App>>, mut req: HttpRequest, next: Next) -> Response {
    if !app.auth.enabled() {
        return next.run(req).await;
    }
    let need = need(req.uri().path());
    if matches!(need, Need::Nothing) {
        return next.run(req).await;
    }
    if matches!(need, Need::Lease | Need::Coord | Need::Renewal | Need::Discovery)
        && req.headers().contains_key(crate::http::FORWARDED)
    {
        // The handler checks the proof against the body.
        return next.run(req).await;
    }
    let cert = req.extensions().get::<ConnInfo>().and_then(|c| c.cert_identity.clone());
    let who = match app.auth.identify(req.headers(), cert.as_deref()) {
        Ok(Some(w)) => w,
        Ok(None) => return next.run(req).await,
        Err(r) => {
            app.stats.refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let resp = match need {
                Need::Lease => refused_wire(&r, crate::http::encoding_of(req.headers())),
                Need::Coord => {
                    crate::coord::refused(&r, 0, crate::http::encoding_of(req.headers()))
                }
                Need::Renewal => {
                    crate::renewal::refused(&r, 0, crate::http::encoding_of(req.headers()))
                }
                _ => text(r.status(), r.message()),
            };
            return settled(&app, req, resp).await;
        }
    };
    if let Need::Op(op) = need {
        if !who.may(op) {
            app.stats.refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let r =
                Refused::NotAllowed(format!("identity {:?} may not use {}", who.name, op.name()));
            return settled(&app, req, text(r.status(), r.message())).await;
        }
    }
    req.extensions_mut().insert(Caller(Some(who)));
    next.run(req).await
}

/// `resp`, a refusal decided before the request's body is read. Over HTTP/2 a reply that
/// leaves the body unread ends the stream with RST_STREAM(NO_ERROR), which RFC 9113 (8.1)
/// allows but some clients (curl 7.88) report as a failed transfer instead of the reply; so
/// there the body is read first, bounded in size and time as [`intake`] bounds it.
async fn settled(app: &App, req: HttpRequest, resp: Response) -> Response {
    if req.version() == axum::http::Version::HTTP_2 {
        let _ = read_body(app, req).await;
    }
    resp
}

/// A request's body, at most the message limit (`Ok(Err(_))` beyond it), arriving within the
/// head time-out (`Err(_)` after it).
async fn read_body(
    app: &App,
    req: HttpRequest,
) -> Result<Result<axum::body::Bytes, axum::Error>, tokio::time::error::Elapsed> {
    let max = app.config.limits.max_message_bytes;
    let limit = std::time::Duration::from_millis(app.config.security.header_timeout_ms);
    tokio::time::timeout(limit, axum::body::to_bytes(req.into_body(), max)).await
}

/// A wire request's body and who sends it, read the same way for `/lease` and `/coord`.
pub struct Intake {
    /// The body, at most the message limit.
    pub body: axum::body::Bytes,
    /// The identity that speaks (`None`: authentication is off, or a server forwarded it
    /// without one).
    pub caller: Option<Arc<Identity>>,
    /// A server forwarded it (with a valid proof).
    pub forwarded: bool,
}

/// Why a request was not read; each endpoint answers it in its own reply form.
pub enum Unread {
    /// Declared or found larger than the message limit (413).
    TooLarge(usize),
    /// The body did not arrive within the head time-out.
    Slow(leasehold::LeaseError),
    /// A forwarded request whose proof does not hold.
    Refused(Refused),
}

/// Reads a wire request's body (bounded in size and in time, as a head is) and settles who
/// speaks: the identity [`guard`] found, or the one a forwarding server vouches for.
pub async fn intake(app: &App, req: HttpRequest) -> Result<Intake, Unread> {
    let max = app.config.limits.max_message_bytes;
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(Unread::TooLarge(max));
    }
    let proof =
        req.headers().get(crate::http::FORWARDED).map(|v| v.to_str().unwrap_or("").to_string());
    let raw_query = req.uri().query().unwrap_or("").to_string();
    let caller = req.extensions().get::<Caller>().cloned();
    let body = match read_body(app, req).await {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => return Err(Unread::TooLarge(max)),
        Err(_) => {
            return Err(Unread::Slow(leasehold::LeaseError::InvalidArgument(format!(
                "the request body did not arrive within {} ms",
                app.config.security.header_timeout_ms
            ))))
        }
    };
    let caller = match (&proof, caller) {
        (Some(p), _) => app.auth.verify_forward(p, &raw_query, &body).map_err(Unread::Refused)?,
        (None, Some(c)) => c.0,
        (None, None) => None,
    };
    Ok(Intake { body, caller, forwarded: proof.is_some() })
}

/// A refusal as a wire error reply (request id 0: it was not read).
pub fn refused_wire(r: &Refused, enc: Encoding) -> Response {
    refused_reply(r, 0, enc)
}

/// A refusal of request `id` as a wire error reply.
pub fn refused_reply(r: &Refused, id: u64, enc: Encoding) -> Response {
    let reply = Reply {
        id,
        landlord: LandlordId(0),
        body: ReplyBody::Error(WireError {
            code: ErrorCode::LeaseDenied as i32,
            message: r.message(),
        }),
    };
    let mut resp = crate::reply::wire_with(r.status(), &reply, enc, None);
    if r.status() == StatusCode::UNAUTHORIZED {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    resp
}

fn cut(d: &mut i64, max: i64) -> bool {
    if *d == leasehold::ANY || *d == leasehold::FOREVER || *d > max {
        *d = max;
        true
    } else {
        false
    }
}

/// Checks `request` against `who`: the operation, the resource's prefix; cuts requested
/// durations to the identity's longest lease. `Ok(true)` when the request was changed.
pub fn authorize(who: &Identity, request: &mut Request) -> Result<bool, Refused> {
    let op = match &request.body {
        RequestBody::Grant { .. } => Op::Grant,
        RequestBody::Renew { .. } | RequestBody::RenewAll { .. } => Op::Renew,
        RequestBody::Cancel { .. } | RequestBody::CancelAll { .. } => Op::Cancel,
    };
    if !who.may(op) {
        return Err(Refused::NotAllowed(format!("identity {:?} may not {}", who.name, op.name())));
    }
    if let RequestBody::Grant { resource, .. } = &request.body {
        if !who.may_lease(resource) {
            return Err(Refused::NotAllowed(format!(
                "identity {:?} may lease only resources starting with {}",
                who.name,
                who.prefixes.iter().map(|p| format!("{p:?}")).collect::<Vec<_>>().join(" or ")
            )));
        }
    }
    let Some(max) = who.max_lease_ms else { return Ok(false) };
    Ok(match &mut request.body {
        RequestBody::Grant { duration, .. } | RequestBody::Renew { duration, .. } => {
            cut(duration, max)
        }
        RequestBody::RenewAll { items } => {
            items.iter_mut().fold(false, |changed, (_, d)| cut(d, max) | changed)
        }
        _ => false,
    })
}

/// Checks a coordination request against `who`: an acquire is a grant (the operation, the
/// resource's prefix, the longest lease), a watch, poll or holders query needs `watch` and,
/// for what it selects, one of the identity's prefixes. `Ok(true)` when the request was changed.
pub fn authorize_coord(who: &Identity, request: &mut CoordRequest) -> Result<bool, Refused> {
    let (op, selected) = match &request.body {
        CoordRequestBody::Acquire { resource, .. } => (Op::Grant, Some(resource)),
        CoordRequestBody::Watch { resource, .. } | CoordRequestBody::Holders { resource, .. } => {
            (Op::Watch, Some(resource))
        }
        CoordRequestBody::Poll { .. } => (Op::Watch, None),
    };
    if !who.may(op) {
        return Err(Refused::NotAllowed(format!("identity {:?} may not {}", who.name, op.name())));
    }
    if let Some(resource) = selected {
        if !who.may_lease(resource) {
            return Err(Refused::NotAllowed(format!(
                "identity {:?} may {} only resources starting with {}",
                who.name,
                op.name(),
                who.prefixes.iter().map(|p| format!("{p:?}")).collect::<Vec<_>>().join(" or ")
            )));
        }
    }
    let Some(max) = who.max_lease_ms else { return Ok(false) };
    Ok(match &mut request.body {
        CoordRequestBody::Acquire { duration, .. } | CoordRequestBody::Watch { duration, .. } => {
            cut(duration, max)
        }
        _ => false,
    })
}

/// A grant's place in its identity's quota, held until the landlord answers.
pub struct Reserved {
    count: Arc<tokio::sync::Mutex<Count>>,
}

impl Reserved {
    /// The landlord answered: the place is kept if the lease was granted.
    pub async fn finish(self, granted: bool) {
        let mut c = self.count.lock().await;
        c.pending = c.pending.saturating_sub(1);
        if granted {
            c.counted += 1;
        }
    }
}

/// A quota that is full.
pub struct Full {
    pub(crate) message: String,
}

impl Full {
    /// The denial, as the landlord would give it (409).
    pub fn reply(&self, id: u64, shard: u64, enc: Encoding) -> Response {
        let reply = Reply {
            id,
            landlord: LandlordId(shard),
            body: ReplyBody::Error(WireError {
                code: ErrorCode::LeaseDenied as i32,
                message: self.message.clone(),
            }),
        };
        crate::reply::wire(&reply, enc, None)
    }
}

/// Counts `who`'s live leases in the shard: every lease whose resource starts with one of its
/// prefixes (in the shard's actor, from the landlord's own state).
async fn scan(h: &ShardHandle, who: &Identity) -> Option<usize> {
    let prefixes: Vec<Vec<u8>> = who.prefixes.iter().map(|p| p.as_bytes().to_vec()).collect();
    let v = h
        .admin(Box::new(move |ll, now| {
            let n = ll
                .iter()
                .filter(|(_, exp, r)| {
                    *exp > now && prefixes.iter().any(|p| r.starts_with(p.as_slice()))
                })
                .count();
            serde_json::json!(n)
        }))
        .await?;
    v.as_u64().map(|n| n as usize)
}

/// Takes a place in `who`'s quota for a grant to `shard` (`grant`: the request is one; nothing
/// to take for other requests or identities without `max_leases`); [`Full`] when there is none.
pub async fn reserve(
    app: &App,
    h: &ShardHandle,
    who: &Identity,
    shard: u64,
    grant: bool,
) -> Result<Option<Reserved>, Full> {
    let (Some(max), true) = (who.max_leases, grant) else {
        return Ok(None);
    };
    let count = app.auth.count(&who.name, shard);
    let mut c = count.lock().await;
    let stale = c.scanned.is_none_or(|t| t.elapsed() >= RECOUNT_EVERY);
    if c.scanned.is_none() || (c.counted + c.pending >= max && stale) {
        // Count again: the first time, and before denying (expired and cancelled leases free
        // their places). Grants answered before the scan but not finished here are counted
        // twice for a moment: the quota errs towards denying, never towards exceeding.
        if let Some(n) = scan(h, who).await {
            c.counted = n;
            c.scanned = Some(Instant::now());
        }
    }
    if c.counted + c.pending >= max {
        app.stats.refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return Err(Full {
            message: format!(
                "quota reached: identity {:?} holds {} of its {max} live leases in landlord {}",
                who.name,
                c.counted + c.pending,
                LandlordId(shard)
            ),
        });
    }
    c.pending += 1;
    drop(c);
    Ok(Some(Reserved { count }))
}
