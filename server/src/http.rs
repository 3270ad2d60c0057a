//! The HTTP face: `POST /lease[?landlord=<16 hex digits>]`, `GET /livez`, `GET /readyz`,
//! `GET /healthz`, `GET /metrics` (the health routes are described in [`crate::health`]),
//! `GET /openapi.json` ([`crate::openapi`]) and the admin endpoints under `/admin/`
//! ([`crate::admin`]). Statuses and the landlord id's one form: [`crate::reply`].
//!
//! A request body is one wire message, JSON (`Content-Type: application/json`) or binary (any
//! other type, `application/octet-stream` by convention); the reply comes in the same encoding.
//! The size limit is checked against `Content-Length` before the body is read, and again while
//! it is read (for bodies without a length).
//!
//! Routing: a grant without `landlord` goes to the shard picked by a hash of its resource (the
//! reply names the landlord, which the holder's lease then carries); renewals and cancels name
//! their landlord in the query (`Transmit.landlord` of the renewal manager), in the wire's form,
//! 16 hex digits; any other form is refused with a 400. Without
//! `landlord`, a renewal or cancel goes to the only shard of a single-shard server (so existing
//! clients of one landlord keep working) and is refused with an invalid-argument reply
//! otherwise. A shard this server does not own is forwarded to its owner (PostgreSQL mode).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use leasehold::wire::WireError;
use leasehold::{
    Encoding, ErrorCode, LandlordId, LeaseError, Reply, ReplyBody, Request, RequestBody,
};

use crate::shard::Answer;
use crate::App;

/// The content type of each encoding.
pub fn content_type(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::Json => "application/json",
        Encoding::Binary => "application/octet-stream",
    }
}

/// The encoding a `Content-Type` names: JSON for `application/json`, binary otherwise.
pub fn encoding_of(headers: &HeaderMap) -> Encoding {
    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if ct.trim().to_ascii_lowercase().starts_with("application/json") {
        Encoding::Json
    } else {
        Encoding::Binary
    }
}

/// The shard a grant of `resource` goes to, among `shards` (1-based): FNV-1a of the bytes,
/// mixed (Fibonacci hashing) so that every bit of the hash counts.
pub fn pick_shard(resource: &[u8], shards: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in resource {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) % shards + 1
}

/// Header on a forwarded request, so that it is never forwarded twice.
pub const FORWARDED: &str = "x-leasehold-forwarded";
/// Header naming the URL of the server that owns the shard that answered.
pub const OWNER: &str = "x-leasehold-owner";

/// The router of a server (the client listener): every route behind [`crate::auth`]'s
/// identities when a tokens file is given (`/livez` and `/openapi.json` stay open).
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/lease", post(lease))
        .route("/coord", post(crate::coord::coord))
        .route("/renewal", post(crate::renewal::endpoint))
        .route("/watch", get(crate::coord::watch))
        .route("/discovery", post(crate::discovery::endpoint))
        .route("/discovery/status", get(crate::discovery::status))
        .route("/livez", get(livez))
        .route("/readyz", get(readyz))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(crate::openapi::serve))
        .merge(crate::admin::routes())
        .layer(axum::middleware::from_fn_with_state(app.clone(), crate::access::guard))
        .with_state(app)
}

/// The operators' listener (`--metrics-listen`): metrics and health, no token.
pub fn operator_router(app: Arc<App>) -> Router {
    Router::new()
        .route("/livez", get(livez))
        .route("/readyz", get(readyz))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .with_state(app)
}

use crate::reply::error as error_reply;

fn text(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], msg.into() + "\n")
        .into_response()
}

async fn lease(
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
            Err(crate::access::Unread::TooLarge(max)) => return crate::reply::too_large(max, enc),
            Err(crate::access::Unread::Slow(e)) => return error_reply(0, 0, &e, enc),
            Err(crate::access::Unread::Refused(r)) => return crate::access::refused_wire(&r, enc),
        };
    let named = match landlord.as_deref().map(crate::reply::parse_landlord) {
        None => None,
        Some(Ok(id)) => Some(id.0),
        Some(Err(e)) => return error_reply(0, 0, &e, enc),
    };
    let mut request = match Request::decode(&body, enc, &app.config.limits) {
        Ok(r) => r,
        Err(e) => return error_reply(0, named.unwrap_or(0), &e, enc),
    };
    let mut body = body;
    if let Some(who) = &caller {
        match crate::access::authorize(who, &mut request) {
            Ok(false) => {}
            // Durations cut to the identity's longest lease: forward what is answered.
            Ok(true) => body = Bytes::from(request.encode(enc)),
            Err(r) => return crate::access::refused_reply(&r, request.id, enc),
        }
    }
    let shards = app.shard_count();
    let shard = match (named, &request.body) {
        (Some(id), _) => id,
        (None, RequestBody::Grant { resource, .. }) => app.config.coord.shard_of(resource, shards),
        (None, _) if shards == 1 => 1,
        (None, _) => {
            let e = LeaseError::InvalidArgument(format!(
                "this server has {shards} landlords: name the lease's with \
                 POST /lease?landlord=<16 hex digits>"
            ));
            return error_reply(request.id, 0, &e, enc);
        }
    };
    if app.discovery.as_ref().is_some_and(|d| d.settings.id == shard) {
        // A registration lease of the discovery service: renewed and cancelled as any lease.
        let who = caller.as_ref().map(|c| c.name.as_str());
        return crate::discovery::lease(&app, request, enc, body, forwarded, who).await;
    }
    if app.is_renewal(shard) {
        // A renewal set's own lease: renewed and cancelled like any lease, at its service.
        let why = match app.renewal(shard) {
            Some(h) => {
                let cookie = match &request.body {
                    RequestBody::Renew { cookie, .. } | RequestBody::Cancel { cookie } => {
                        Some(*cookie)
                    }
                    _ => None,
                };
                match h.lease(request).await {
                    Answer::Reply(reply) => {
                        let reply = crate::reply::explain(reply, cookie);
                        return crate::reply::wire(&reply, enc, Some(&app.config.advertise));
                    }
                    Answer::Unavailable(why) => why,
                    _ => "a set answer to a landlord request".to_string(),
                }
            }
            None => app.unserved_why(shard),
        };
        if !forwarded {
            let who = caller.as_ref().map(|c| c.name.as_str());
            if let Some(r) = app.forward(shard, Some(shard), enc, body, who).await {
                return r;
            }
        }
        app.stats.unavailable.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return crate::reply::unavailable(why);
    }
    if shard == 0 || shard > shards {
        let reply = Reply {
            id: request.id,
            landlord: LandlordId(shard),
            body: ReplyBody::Error(WireError {
                code: ErrorCode::UnknownLease as i32,
                message: format!(
                    "landlord {} is not one of this cluster's (0000000000000001 to {})",
                    LandlordId(shard),
                    LandlordId(shards)
                ),
            }),
        };
        return crate::reply::wire(&reply, enc, None);
    }
    let id = request.id;
    let cookie = match &request.body {
        RequestBody::Renew { cookie, .. } | RequestBody::Cancel { cookie } => Some(*cookie),
        _ => None,
    };
    let why = match app.shard(shard) {
        Some(h) => {
            // An identity's quota (its live leases under its prefixes, in this landlord).
            let quota = match &caller {
                Some(who) => match crate::access::reserve(
                    &app,
                    &h,
                    who,
                    shard,
                    matches!(request.body, RequestBody::Grant { .. }),
                )
                .await
                {
                    Ok(q) => q,
                    Err(r) => return r.reply(request.id, shard, enc),
                },
                None => None,
            };
            let answer = h.call(request).await;
            if let Some(q) = quota {
                q.finish(matches!(&answer, Answer::Reply(r) if matches!(r.body, ReplyBody::Granted { .. })))
                    .await;
            }
            match answer {
                Answer::Reply(reply) => {
                    let reply = crate::reply::explain(reply, cookie);
                    return crate::reply::wire(&reply, enc, Some(&app.config.advertise));
                }
                Answer::Coord(_) | Answer::Set(_) => {
                    "a coordination answer to a landlord request".to_string()
                }
                Answer::Unavailable(why) => why,
            }
        }
        None => app.unserved_why(shard),
    };
    if !forwarded {
        let who = caller.as_ref().map(|c| c.name.as_str());
        if let Some(r) = app.forward(shard, q_landlord(named), enc, body, who).await {
            return r;
        }
    }
    let _ = id;
    app.stats.unavailable.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    crate::reply::unavailable(why)
}

fn q_landlord(named: Option<u64>) -> Option<u64> {
    named
}

/// 200 while the runtime answers: no store, no database.
async fn livez() -> Response {
    text(StatusCode::OK, "live")
}

/// 200 when every shard is served (here or by a live owner this server forwards to), else
/// 503; the body says each shard's state and why (JSON).
async fn readyz(State(app): State<Arc<App>>) -> Response {
    let r = app.readiness();
    let status = if r.ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let body = serde_json::to_vec(&r).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// `/readyz`'s status with one line of text (for scripts written before `/readyz`).
async fn healthz(State(app): State<Arc<App>>) -> Response {
    let r = app.readiness();
    let status = if r.ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    text(status, r.summary())
}

async fn metrics(State(app): State<Arc<App>>) -> Response {
    let body = app.render_metrics();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}
