//! The admin endpoints, for operators (`leasehold lease list|get|revoke`): everything under
//! `/admin/`, so that one permission can guard them all (issue 22).
//!
//! - `GET /admin/landlords/{landlord}/leases?prefix=<hex>&after=<cookie>&limit=<n>`: a page
//!   of a landlord's leases in cookie order, those whose resource starts with `prefix`
//!   (default: all), after the cookie `after` (default: from the first), at most `limit`
//!   (default 100, at most 10000); `next` names the cursor of the following page.
//! - `GET /admin/landlords/{landlord}/leases/{cookie}`: one lease.
//! - `DELETE /admin/landlords/{landlord}/leases/{cookie}`: revokes it.
//! - `GET /admin/resources/{resource hex}[?landlord=]`: the leases on a resource, at the
//!   landlord its grants go to (or the one named).
//! - `DELETE /admin/resources/{resource hex}[?landlord=]`: revokes every one of them.
//!
//! Landlord ids are 16 hex digits, cookies 32, resources hex: the wire's forms. The shapes
//! are [`leasehold_client::admin`]'s types (one definition for the server, the client and the
//! CLI) and the OpenAPI document's. Every job runs in the shard's actor
//! ([`crate::shard::AdminJob`]): a revocation is the landlord's `cancel`, journaled, and the
//! answer leaves only once durable (with PostgreSQL, after the ownership check), like every
//! other change; a listing is consistent with what the shard answers at that moment. A shard
//! owned by another server is forwarded to it, as `POST /lease` is.
//!
//! Errors are JSON, `{"error":{"code":N,"message":"..."}}` with the wire's codes: 400 for a
//! malformed id or parameter, 404 for an unknown lease or landlord, 503 (plain text,
//! `Retry-After`) when the shard cannot answer here.

// The handlers return a ready answer as their error: a cold path, not worth boxing.
#![allow(clippy::result_large_err)]

use std::collections::BinaryHeap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::TokioExecutor;
use leasehold::wire::WireError;
use leasehold::{Cookie, ErrorCode, LandlordId, LeaseError, Millis, FOREVER};
use leasehold_client::admin::{hex, unhex, AdminError, AdminLease, LeasePage, Revoked};
use serde_json::Value;

use crate::http::{pick_shard, FORWARDED};
use crate::shard::{AdminJob, LL};
use crate::App;

/// Most leases one page lists.
pub const MAX_PAGE: usize = 10_000;
/// Leases a page lists when `limit` is not given.
pub const DEFAULT_PAGE: usize = 100;

/// The admin routes.
pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/admin/landlords/{landlord}/leases", get(list))
        .route("/admin/landlords/{landlord}/leases/{cookie}", get(get_one).delete(revoke_one))
        .route("/admin/resources/{resource}", get(by_resource).delete(revoke_resource))
}

fn json(status: StatusCode, v: &impl serde::Serialize) -> Response {
    let body = serde_json::to_vec(v).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn error(e: &LeaseError, message: String) -> Response {
    let status = match e.code() {
        ErrorCode::UnknownLease => StatusCode::NOT_FOUND,
        ErrorCode::InvalidArgument | ErrorCode::Decode => StatusCode::BAD_REQUEST,
        ErrorCode::LeaseDenied => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    json(status, &AdminError { error: WireError { code: e.code() as i32, message } })
}

fn bad(message: String) -> Response {
    error(&LeaseError::InvalidArgument(String::new()), message)
}

fn unknown(message: String) -> Response {
    error(&LeaseError::UnknownLease, message)
}

fn landlord_of(text: &str) -> Result<LandlordId, Response> {
    crate::reply::parse_landlord(text).map_err(|e| bad(e.to_string()))
}

fn cookie_of(text: &str) -> Result<Cookie, Response> {
    text.parse::<Cookie>().map_err(|e| bad(format!("cookie {text:?}: {e}")))
}

/// The admin view of a lease at `now`.
fn view(
    landlord: LandlordId,
    cookie: Cookie,
    expiration: Millis,
    resource: &[u8],
    now: Millis,
) -> AdminLease {
    AdminLease {
        landlord,
        cookie,
        resource: hex(resource),
        resource_text: std::str::from_utf8(resource).ok().map(str::to_string),
        expires_in_ms: if expiration == FOREVER { FOREVER } else { (expiration - now).max(0) },
    }
}

/// The leases of `ll` still honoured at `now` for which `keep` holds.
fn live<'a>(
    ll: &'a LL,
    now: Millis,
    keep: impl Fn(&Cookie, &[u8]) -> bool + 'a,
) -> impl Iterator<Item = (Cookie, Millis, &'a Vec<u8>)> + 'a {
    ll.iter().filter(move |(c, _, r)| keep(c, r) && ll.get(*c, now).is_some())
}

/// Runs `job` on `shard` here, or at its owner, or answers 503.
async fn on_shard(
    app: &Arc<App>,
    shard: LandlordId,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    job: AdminJob,
) -> Response {
    let shards = app.shard_count();
    if shard.0 == 0 || shard.0 > shards {
        return unknown(format!(
            "landlord {shard} is not one of this cluster's (0000000000000001 to {})",
            LandlordId(shards)
        ));
    }
    let why = match app.shard(shard.0) {
        Some(h) => match h.admin(job).await {
            Some(v) => return answer(v),
            None => format!("shard {} could not answer (its store failed, or it moved)", shard.0),
        },
        None => format!("shard {} is not served here", shard.0),
    };
    if !headers.contains_key(FORWARDED) {
        if let Some(r) = forward(app, shard.0, method, uri).await {
            return r;
        }
    }
    crate::reply::unavailable(why)
}

/// A job's answer: an `{"error":...}` object gets the status of its code.
fn answer(v: Value) -> Response {
    match serde_json::from_value::<AdminError>(v.clone()) {
        Ok(AdminError { error: e }) => error(&e.to_error(), e.message),
        Err(_) => json(StatusCode::OK, &v),
    }
}

fn to_value(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn error_value(e: LeaseError, message: String) -> Value {
    to_value(&AdminError { error: WireError { code: e.code() as i32, message } })
}

/// Forwards an admin request to the owner of `shard` (PostgreSQL mode), if another server
/// owns it.
async fn forward(app: &Arc<App>, shard: u64, method: Method, uri: &Uri) -> Option<Response> {
    static HTTP: OnceLock<HttpClient<HttpConnector, Full<Bytes>>> = OnceLock::new();
    let cluster = app.cluster.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
    let owner = cluster.owner_url(shard)?;
    if owner == app.config.advertise {
        return None;
    }
    let http = HTTP.get_or_init(|| HttpClient::builder(TokioExecutor::new()).build_http());
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let req = hyper::Request::builder()
        .method(method)
        .uri(format!("{owner}{path}"))
        .header(FORWARDED, "1")
        .body(Full::new(Bytes::new()))
        .ok()?;
    let resp = tokio::time::timeout(Duration::from_secs(2), http.request(req)).await.ok()?.ok()?;
    if resp.status() == StatusCode::SERVICE_UNAVAILABLE {
        return None;
    }
    let (parts, body) = resp.into_parts();
    let bytes =
        tokio::time::timeout(Duration::from_secs(5), body.collect()).await.ok()?.ok()?.to_bytes();
    let mut r = (parts.status, bytes).into_response();
    if let Some(ct) = parts.headers.get(header::CONTENT_TYPE) {
        r.headers_mut().insert(header::CONTENT_TYPE, ct.clone());
    }
    if let Ok(v) = HeaderValue::from_str(&owner) {
        r.headers_mut().insert(crate::http::OWNER, v);
    }
    Some(r)
}

struct ListQuery {
    prefix: Option<String>,
    after: Option<String>,
    limit: Option<String>,
}

/// Query parameters, each at most once.
fn params<T>(
    pairs: &[(String, String)],
    names: &[&str],
    make: impl FnOnce(Vec<Option<String>>) -> T,
) -> Result<T, Response> {
    let mut vals = Vec::new();
    for n in names {
        vals.push(crate::reply::one_param(pairs, n).map_err(|e| bad(e.to_string()))?);
    }
    Ok(make(vals))
}

async fn list(
    State(app): State<Arc<App>>,
    Path(landlord): Path<String>,
    Query(q): Query<Vec<(String, String)>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let q = match params(&q, &["prefix", "after", "limit"], |mut v| ListQuery {
        limit: v.pop().flatten(),
        after: v.pop().flatten(),
        prefix: v.pop().flatten(),
    }) {
        Ok(q) => q,
        Err(r) => return r,
    };
    let landlord = match landlord_of(&landlord) {
        Ok(l) => l,
        Err(r) => return r,
    };
    let prefix = match q.prefix.as_deref().map(|p| (p, unhex(p))) {
        None => Vec::new(),
        Some((_, Some(b))) => b,
        Some((p, None)) => {
            return bad(format!("prefix {p:?} is not hex (an even number of digits)"))
        }
    };
    let after = match q.after.as_deref().map(cookie_of).transpose() {
        Ok(a) => a,
        Err(r) => return r,
    };
    let limit = match q.limit.as_deref().map(str::parse::<usize>) {
        None => DEFAULT_PAGE,
        Some(Ok(n)) if (1..=MAX_PAGE).contains(&n) => n,
        Some(_) => {
            return bad(format!("limit must be a number from 1 to {MAX_PAGE}, got {:?}", q.limit))
        }
    };
    let job: AdminJob = Box::new(move |ll: &mut LL, now| {
        // The `limit + 1` smallest cookies after `after`: a heap of that size, one pass.
        let mut heap: BinaryHeap<Cookie> = BinaryHeap::with_capacity(limit + 1);
        for (c, _, _) in
            live(ll, now, |c, r| r.starts_with(&prefix) && after.is_none_or(|a| *c > a))
        {
            if heap.len() <= limit {
                heap.push(c);
            } else if heap.peek().is_some_and(|top| c < *top) {
                heap.pop();
                heap.push(c);
            }
        }
        let mut cookies = heap.into_sorted_vec();
        let more = cookies.len() > limit;
        cookies.truncate(limit);
        let leases: Vec<AdminLease> = cookies
            .iter()
            .filter_map(|c| ll.get(*c, now).map(|(exp, r)| view(landlord, *c, exp, r, now)))
            .collect();
        let next = if more { leases.last().map(|l| l.cookie) } else { None };
        to_value(&LeasePage { landlord, leases, next })
    });
    on_shard(&app, landlord, method, &uri, &headers, job).await
}

fn lease_unknown(landlord: LandlordId, cookie: Cookie) -> Value {
    error_value(
        LeaseError::UnknownLease,
        format!(
            "lease {cookie} is unknown to landlord {landlord}: never granted there, cancelled, \
             revoked, or expired"
        ),
    )
}

async fn get_one(
    State(app): State<Arc<App>>,
    Path((landlord, cookie)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let (landlord, cookie) = match (landlord_of(&landlord), cookie_of(&cookie)) {
        (Ok(l), Ok(c)) => (l, c),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let job: AdminJob = Box::new(move |ll: &mut LL, now| match ll.get(cookie, now) {
        Some((exp, r)) => to_value(&view(landlord, cookie, exp, r, now)),
        None => lease_unknown(landlord, cookie),
    });
    on_shard(&app, landlord, method, &uri, &headers, job).await
}

async fn revoke_one(
    State(app): State<Arc<App>>,
    Path((landlord, cookie)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let (landlord, cookie) = match (landlord_of(&landlord), cookie_of(&cookie)) {
        (Ok(l), Ok(c)) => (l, c),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let job: AdminJob = Box::new(move |ll: &mut LL, now| {
        let Some(before) = ll.get(cookie, now).map(|(exp, r)| view(landlord, cookie, exp, r, now))
        else {
            return lease_unknown(landlord, cookie);
        };
        match ll.cancel(cookie, now) {
            Ok(_) => {
                tracing::info!(landlord = %landlord, cookie = %cookie, "lease revoked by an operator");
                to_value(&Revoked { landlord, revoked: vec![before] })
            }
            Err(e) => error_value(e.clone(), e.to_string()),
        }
    });
    on_shard(&app, landlord, method, &uri, &headers, job).await
}

struct ResourceQuery {
    landlord: Option<String>,
}

fn resource_query(q: &[(String, String)]) -> Result<ResourceQuery, Response> {
    params(q, &["landlord"], |mut v| ResourceQuery { landlord: v.pop().flatten() })
}

fn resource_target(
    app: &App,
    resource: &str,
    q: &ResourceQuery,
) -> Result<(Vec<u8>, LandlordId), Response> {
    let Some(bytes) = unhex(resource) else {
        return Err(bad(format!("resource {resource:?} is not hex (an even number of digits)")));
    };
    let landlord = match q.landlord.as_deref() {
        Some(l) => landlord_of(l)?,
        None => LandlordId(pick_shard(&bytes, app.shard_count())),
    };
    Ok((bytes, landlord))
}

async fn by_resource(
    State(app): State<Arc<App>>,
    Path(resource): Path<String>,
    Query(q): Query<Vec<(String, String)>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let q = match resource_query(&q) {
        Ok(q) => q,
        Err(r) => return r,
    };
    let (resource, landlord) = match resource_target(&app, &resource, &q) {
        Ok(x) => x,
        Err(r) => return r,
    };
    let job: AdminJob = Box::new(move |ll: &mut LL, now| {
        let mut leases: Vec<AdminLease> = live(ll, now, |_, r| r == resource.as_slice())
            .map(|(c, exp, r)| view(landlord, c, exp, r, now))
            .collect();
        leases.sort_by_key(|l| l.cookie);
        to_value(&LeasePage { landlord, leases, next: None })
    });
    on_shard(&app, landlord, method, &uri, &headers, job).await
}

async fn revoke_resource(
    State(app): State<Arc<App>>,
    Path(resource): Path<String>,
    Query(q): Query<Vec<(String, String)>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let q = match resource_query(&q) {
        Ok(q) => q,
        Err(r) => return r,
    };
    let (resource, landlord) = match resource_target(&app, &resource, &q) {
        Ok(x) => x,
        Err(r) => return r,
    };
    let job: AdminJob = Box::new(move |ll: &mut LL, now| {
        let mut found: Vec<AdminLease> = live(ll, now, |_, r| r == resource.as_slice())
            .map(|(c, exp, r)| view(landlord, c, exp, r, now))
            .collect();
        if found.is_empty() {
            return error_value(
                LeaseError::UnknownLease,
                format!("landlord {landlord} holds no lease on resource {}", hex(&resource)),
            );
        }
        found.sort_by_key(|l| l.cookie);
        found.retain(|l| ll.cancel(l.cookie, now).is_ok());
        tracing::info!(landlord = %landlord, resource = %hex(&resource), revoked = found.len(), "leases revoked by an operator");
        to_value(&Revoked { landlord, revoked: found })
    });
    on_shard(&app, landlord, method, &uri, &headers, job).await
}
