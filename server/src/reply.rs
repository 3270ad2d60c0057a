//! What `POST /lease` answers: a wire reply with a status that says what it is, and the one
//! form of a landlord id in a URL.
//!
//! Every answer that carries a wire reply keeps the reply in the body (in the request's
//! encoding), so a client reads the landlord's answer whatever the status. The status follows
//! the reply:
//!
//! | reply | status |
//! |---|---|
//! | `granted`, `renewed`, `cancelled`, `renewed_all`, `cancelled_all` (even with per-lease errors) | 200 |
//! | error `decode` (5) or `invalid_argument` (4) | 400 |
//! | error `unknown_lease` (1), also for a landlord this cluster does not have | 404 |
//! | error `lease_denied` (2) | 409 |
//! | error `decode`, the body over the size limit | 413 |
//! | error `lease_map` (3) or `indefinite` (6), which a landlord never answers alone | 500 |
//!
//! `409 Conflict` for a denial: the request was understood and well formed, and the landlord
//! refuses it because of its current state (at capacity, a policy); the lease is unchanged.
//! `429` would promise that slowing down helps and `403` would speak of permissions, which
//! are another matter (issue 22).
//!
//! A shard that cannot answer here (not served, its store failed) and that cannot be
//! forwarded gets `503` with `Retry-After` and a plain-text body, and *no* wire reply: that is
//! what tells a client to try another server (an indefinite failure), while any wire reply is
//! a definite answer.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use leasehold::wire::WireError;
use leasehold::{Encoding, ErrorCode, LandlordId, LeaseError, Reply, ReplyBody};

use crate::http::{content_type, OWNER};

/// The landlord id of a `landlord=` query parameter: exactly the wire's form, 16 hex digits
/// (`0000000000000010` is landlord 16). Anything else is refused, so that no client can send
/// a landlord to the wrong shard by writing its id in another base.
pub fn parse_landlord(text: &str) -> Result<LandlordId, LeaseError> {
    if text.len() != 16 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(LeaseError::InvalidArgument(format!(
            "landlord={:?} is not a landlord id: write it as the wire does, 16 hex digits \
             (landlord 16 is 0000000000000010)",
            text.chars().take(40).collect::<String>()
        )));
    }
    u64::from_str_radix(text, 16)
        .map(LandlordId)
        .map_err(|e| LeaseError::InvalidArgument(format!("landlord={text:?}: {e}")))
}

/// The value of query parameter `name` among `pairs`, if given; given twice is an error (a
/// client that sends two landlords must not have one of them picked for it).
pub fn one_param(pairs: &[(String, String)], name: &str) -> Result<Option<String>, LeaseError> {
    let mut found = pairs.iter().filter(|(k, _)| k == name).map(|(_, v)| v.clone());
    let first = found.next();
    if found.next().is_some() {
        return Err(LeaseError::InvalidArgument(format!("{name} is given more than once")));
    }
    Ok(first)
}

/// The status of an answer carrying `reply`.
pub fn status_of(reply: &Reply) -> StatusCode {
    match &reply.body {
        ReplyBody::Error(e) => status_of_error(e),
        _ => StatusCode::OK,
    }
}

/// The status of an answer carrying error reply `e` (also `POST /coord`'s).
pub fn status_of_error(e: &WireError) -> StatusCode {
    match e.error_code() {
        Some(ErrorCode::Decode | ErrorCode::InvalidArgument) => StatusCode::BAD_REQUEST,
        Some(ErrorCode::UnknownLease) => StatusCode::NOT_FOUND,
        Some(ErrorCode::LeaseDenied) => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// Gives an "unknown lease" error reply a message (the core's is empty): which lease, which
/// landlord, and what it can mean.
pub fn explain(mut reply: Reply, cookie: Option<leasehold::Cookie>) -> Reply {
    if let ReplyBody::Error(e) = &mut reply.body {
        if e.error_code() == Some(ErrorCode::UnknownLease) && e.message.is_empty() {
            e.message = match cookie {
                Some(c) => format!(
                    "lease {c} is unknown to landlord {}: never granted there, cancelled, \
                     revoked, or expired",
                    reply.landlord
                ),
                None => format!("unknown to landlord {}", reply.landlord),
            };
        }
    }
    reply
}

/// An answer carrying `reply` in `enc`, with the status that matches it and, when known, the
/// owner of the shard that answered.
pub fn wire(reply: &Reply, enc: Encoding, owner: Option<&str>) -> Response {
    wire_with(status_of(reply), reply, enc, owner)
}

/// As [`wire`], with a status of the caller's choice (413).
pub fn wire_with(
    status: StatusCode,
    reply: &Reply,
    enc: Encoding,
    owner: Option<&str>,
) -> Response {
    let mut r =
        (status, [(header::CONTENT_TYPE, content_type(enc))], reply.encode(enc)).into_response();
    if let Some(o) = owner.and_then(|o| HeaderValue::from_str(o).ok()) {
        r.headers_mut().insert(OWNER, o);
    }
    r
}

/// An error reply to request `id` from `landlord`.
pub fn error(id: u64, landlord: u64, e: &LeaseError, enc: Encoding) -> Response {
    let reply =
        Reply { id, landlord: LandlordId(landlord), body: ReplyBody::Error(WireError::from(e)) };
    wire(&explain(reply, None), enc, None)
}

/// `413` with a decode error reply (id 0: the body was not read).
pub fn too_large(max: usize, enc: Encoding) -> Response {
    let e = LeaseError::Decode(format!("a message is at most {max} bytes"));
    let reply =
        Reply { id: 0, landlord: LandlordId(0), body: ReplyBody::Error(WireError::from(&e)) };
    wire_with(StatusCode::PAYLOAD_TOO_LARGE, &reply, enc, None)
}

/// `503` with `Retry-After: 1` and why, as plain text (no wire reply: try another server).
pub fn unavailable(why: impl Into<String>) -> Response {
    let mut r = (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        why.into() + "\n",
    )
        .into_response();
    r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_form_of_landlord_id() {
        assert_eq!(parse_landlord("0000000000000010").unwrap(), LandlordId(16));
        assert_eq!(parse_landlord("000000000000000a").unwrap(), LandlordId(10));
        assert_eq!(parse_landlord("000000000000000A").unwrap(), LandlordId(10));
        for bad in
            ["16", "10", "0x10", "", "00000000000000010", "000000000000001g", "+000000000000010"]
        {
            let e = parse_landlord(bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidArgument, "{bad}");
            assert!(e.to_string().contains("16 hex digits"), "{e}");
        }
    }

    #[test]
    fn statuses_follow_the_reply() {
        let r = |body| Reply { id: 1, landlord: LandlordId(1), body };
        let err = |e: LeaseError| ReplyBody::Error(WireError::from(&e));
        assert_eq!(status_of(&r(ReplyBody::Cancelled)), StatusCode::OK);
        assert_eq!(status_of(&r(err(LeaseError::UnknownLease))), StatusCode::NOT_FOUND);
        assert_eq!(
            status_of(&r(err(LeaseError::LeaseDenied("full".into())))),
            StatusCode::CONFLICT
        );
        assert_eq!(status_of(&r(err(LeaseError::Decode("x".into())))), StatusCode::BAD_REQUEST);
        assert_eq!(
            status_of(&r(err(LeaseError::InvalidArgument("x".into())))),
            StatusCode::BAD_REQUEST
        );
        let explained = explain(r(err(LeaseError::UnknownLease)), Some(leasehold::Cookie(3)));
        match explained.body {
            ReplyBody::Error(e) => {
                assert!(e.message.contains("is unknown to landlord 0000000000000001"))
            }
            _ => unreachable!(),
        }
    }
}
