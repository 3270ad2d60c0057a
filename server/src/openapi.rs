//! The HTTP API as a contract: an OpenAPI 3.1 document, served at `GET /openapi.json`.
//!
//! The schemas follow the core's codec ([`leasehold::codec`]) and the admin types
//! ([`leasehold_client::admin`]); every example is made by encoding a real message with the
//! core, so an example cannot drift from the codec. Checks that the schemas cannot drift
//! either: this module's tests decode every example; `scripts/test-api.sh` validates every
//! message of the shared vectors (`core/tests/vectors/wire.json`) against the schemas, and
//! runs schemathesis against a running server (every documented status and schema holds, no
//! 500s).

use std::sync::{Arc, OnceLock};

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use leasehold::holder::grant_request;
use leasehold::wire::{Outcome, WireError};
use leasehold::{
    Cookie, Encoding, LandlordId, LeaseError, Reply, ReplyBody, Request, RequestBody, ANY,
};
use leasehold_client::admin::{hex, AdminError, AdminLease, LeasePage, Revoked};
use serde_json::{json, Value};

use crate::App;

/// `GET /openapi.json`.
pub async fn serve(State(_app): State<Arc<App>>) -> Response {
    static DOC: OnceLock<String> = OnceLock::new();
    let body = DOC.get_or_init(|| serde_json::to_string_pretty(&document()).unwrap_or_default());
    ([(header::CONTENT_TYPE, "application/json")], body.clone()).into_response()
}

fn enc_req(r: &Request) -> Value {
    serde_json::from_slice(&r.encode(Encoding::Json)).expect("the codec writes JSON")
}

fn enc_reply(r: &Reply) -> Value {
    serde_json::from_slice(&r.encode(Encoding::Json)).expect("the codec writes JSON")
}

const COOKIE: Cookie = Cookie(0x2f6b_03c4_9a1e_77d0_51b8_e23a_c4f0_9d16);

/// Example requests: (name, summary, message).
pub fn request_examples() -> Vec<(&'static str, &'static str, Request)> {
    vec![
        (
            "grant",
            "a lease on \"printer-3\" for 30 s",
            grant_request(1, b"printer-3".to_vec(), 30_000),
        ),
        (
            "grant_any",
            "a lease for as long as the landlord grants (ANY)",
            grant_request(2, b"printer-3".to_vec(), ANY),
        ),
        (
            "renew",
            "renew for 30 s",
            Request { id: 3, body: RequestBody::Renew { cookie: COOKIE, duration: 30_000 } },
        ),
        ("cancel", "cancel", Request { id: 4, body: RequestBody::Cancel { cookie: COOKIE } }),
        (
            "renew_all",
            "renew two leases of one landlord in one message",
            Request {
                id: 5,
                body: RequestBody::RenewAll { items: vec![(COOKIE, 30_000), (Cookie(7), 10_000)] },
            },
        ),
        (
            "cancel_all",
            "cancel two leases",
            Request { id: 6, body: RequestBody::CancelAll { cookies: vec![COOKIE, Cookie(7)] } },
        ),
    ]
}

fn err(e: LeaseError, message: &str) -> ReplyBody {
    let mut w = WireError::from(&e);
    if !message.is_empty() {
        w.message = message.to_string();
    }
    ReplyBody::Error(w)
}

/// Example replies: (name, status, summary, message).
pub fn reply_examples() -> Vec<(&'static str, u16, &'static str, Reply)> {
    let l = LandlordId(16);
    let r = |id, body| Reply { id, landlord: l, body };
    vec![
        ("granted", 200, "granted for 30 s by landlord 16", r(1, ReplyBody::Granted { cookie: COOKIE, duration: 30_000 })),
        ("renewed", 200, "renewed for 30 s", r(3, ReplyBody::Renewed { duration: 30_000 })),
        ("cancelled", 200, "cancelled", r(4, ReplyBody::Cancelled)),
        (
            "renewed_all",
            200,
            "one renewed, one unknown",
            r(5, ReplyBody::RenewedAll {
                results: vec![Outcome::Ok(30_000), Outcome::Err(WireError::from(&LeaseError::UnknownLease))],
            }),
        ),
        ("cancelled_all", 200, "both cancelled", r(6, ReplyBody::CancelledAll { results: vec![Outcome::Ok(()), Outcome::Ok(())] })),
        (
            "unknown_lease",
            404,
            "the landlord does not know the lease",
            r(3, err(LeaseError::UnknownLease, &format!("lease {COOKIE} is unknown to landlord {l}: never granted there, cancelled, revoked, or expired"))),
        ),
        ("denied", 409, "the landlord refuses (at capacity)", r(1, err(LeaseError::LeaseDenied(String::new()), "at capacity: 10000 leases held"))),
        (
            "bad_landlord",
            400,
            "a landlord id in another form than the wire's",
            Reply { id: 0, landlord: LandlordId(0), body: err(LeaseError::InvalidArgument(String::new()), "landlord=\"16\" is not a landlord id: write it as the wire does, 16 hex digits (landlord 16 is 0000000000000010)") },
        ),
        (
            "undecodable",
            400,
            "a body that does not decode",
            Reply { id: 0, landlord: LandlordId(0), body: err(LeaseError::Decode("expected value at line 1 column 2".into()), "") },
        ),
        (
            "too_large",
            413,
            "a body over the size limit",
            Reply { id: 0, landlord: LandlordId(0), body: err(LeaseError::Decode("a message is at most 1048576 bytes".into()), "") },
        ),
    ]
}

fn dec() -> Value {
    json!({
        "description": "A 64-bit integer as a decimal string (exact in JavaScript); readers also accept a JSON integer.",
        "oneOf": [
            { "type": "string", "pattern": "^-?[0-9]{1,20}$" },
            { "type": "integer" }
        ]
    })
}

fn obj(required: &[&str], props: Value) -> Value {
    json!({ "type": "object", "additionalProperties": false, "required": required, "properties": props })
}

fn op(name: &str, required: &[&str], mut props: Value) -> Value {
    props["op"] = json!({ "const": name });
    let mut req = vec!["op"];
    req.extend_from_slice(required);
    obj(&req, props)
}

fn schemas() -> Value {
    let r = |n: &str| json!({ "$ref": format!("#/components/schemas/{n}") });
    json!({
        "LandlordId": {
            "description": "A landlord (shard) id: 16 hex digits, the only form anywhere (landlord 16 is 0000000000000010).",
            "type": "string", "pattern": "^[0-9a-fA-F]{16}$", "examples": ["0000000000000010"]
        },
        "Cookie": {
            "description": "A lease's cookie: 32 hex digits.",
            "type": "string", "pattern": "^[0-9a-fA-F]{32}$", "examples": [COOKIE.to_string()]
        },
        "Dec64": dec(),
        "DecU64": {
            "description": "A request id: an unsigned 64-bit integer as a decimal string; readers also accept a JSON integer.",
            "oneOf": [ { "type": "string", "pattern": "^[0-9]{1,20}$" }, { "type": "integer", "minimum": 0 } ]
        },
        "Duration": {
            "description": "Milliseconds as a decimal string; 9223372036854775807 is FOREVER, -1 is ANY (requests only).",
            "$ref": "#/components/schemas/Dec64"
        },
        "HexBytes": { "description": "Bytes as hex (an even number of digits).", "type": "string", "pattern": "^([0-9a-fA-F]{2})*$" },
        "WireError": {
            "description": "An error: its stable code (1 unknown_lease, 2 lease_denied, 3 lease_map, 4 invalid_argument, 5 decode, 6 indefinite) and a message.",
            "type": "object", "additionalProperties": false, "required": ["code", "message"],
            "properties": { "code": { "type": "integer", "format": "int32" }, "message": { "type": "string" } }
        },
        "Request": {
            "description": "A request message, JSON form version 1 (core/src/codec.rs).",
            "type": "object", "additionalProperties": false, "required": ["v", "id", "body"],
            "properties": { "v": { "const": 1 }, "id": r("DecU64"), "body": r("RequestBody") },
            "examples": request_examples().iter().map(|(_, _, m)| enc_req(m)).collect::<Vec<_>>()
        },
        "RequestBody": { "oneOf": [
            op("grant", &["resource", "duration"], json!({ "resource": r("HexBytes"), "duration": r("Duration") })),
            op("renew", &["cookie", "duration"], json!({ "cookie": r("Cookie"), "duration": r("Duration") })),
            op("cancel", &["cookie"], json!({ "cookie": r("Cookie") })),
            op("renew_all", &["items"], json!({ "items": { "type": "array", "items": obj(&["cookie", "duration"], json!({ "cookie": r("Cookie"), "duration": r("Duration") })) } })),
            op("cancel_all", &["cookies"], json!({ "cookies": { "type": "array", "items": r("Cookie") } }))
        ]},
        "Reply": {
            "description": "A reply message, JSON form version 1: the request's id, the landlord that answered, the answer.",
            "type": "object", "additionalProperties": false, "required": ["v", "id", "landlord", "body"],
            "properties": { "v": { "const": 1 }, "id": r("DecU64"), "landlord": r("LandlordId"), "body": r("ReplyBody") },
            "examples": reply_examples().iter().map(|(_, _, _, m)| enc_reply(m)).collect::<Vec<_>>()
        },
        "ReplyBody": { "oneOf": [
            op("granted", &["cookie", "duration"], json!({ "cookie": r("Cookie"), "duration": r("Duration") })),
            op("renewed", &["duration"], json!({ "duration": r("Duration") })),
            op("cancelled", &[], json!({})),
            op("renewed_all", &["results"], json!({ "results": { "type": "array", "items": { "oneOf": [
                obj(&["duration"], json!({ "duration": r("Duration") })),
                obj(&["error"], json!({ "error": r("WireError") }))
            ]}}})),
            op("cancelled_all", &["results"], json!({ "results": { "type": "array", "items": { "oneOf": [
                obj(&[], json!({})),
                obj(&["error"], json!({ "error": r("WireError") }))
            ]}}})),
            op("error", &["code", "message"], json!({ "code": { "type": "integer", "format": "int32" }, "message": { "type": "string" } }))
        ]},
        "AdminLease": obj(&["landlord", "cookie", "resource", "expires_in_ms"], json!({
            "landlord": r("LandlordId"), "cookie": r("Cookie"), "resource": r("HexBytes"),
            "resource_text": { "type": "string", "description": "The resource as text, when it is UTF-8." },
            "expires_in_ms": { "description": "Milliseconds left at the landlord (FOREVER: 9223372036854775807).", "type": "string", "pattern": "^[0-9]{1,19}$" }
        })),
        "LeasePage": obj(&["landlord", "leases"], json!({
            "landlord": r("LandlordId"),
            "leases": { "type": "array", "items": r("AdminLease") },
            "next": { "description": "The cursor (`after`) of the next page; absent on the last.", "$ref": "#/components/schemas/Cookie" }
        })),
        "Revoked": obj(&["landlord", "revoked"], json!({
            "landlord": r("LandlordId"), "revoked": { "type": "array", "items": r("AdminLease") }
        })),
        "AdminError": obj(&["error"], json!({ "error": r("WireError") }))
    })
}

fn readiness_response(description: &str) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": {
        "type": "object",
        "required": ["ready", "server", "store", "shards", "unserved"],
        "properties": {
            "ready": { "type": "boolean" },
            "server": { "type": "string" },
            "store": { "type": "string", "enum": ["files", "postgres"] },
            "database": { "type": "object" },
            "clock": { "type": "object" },
            "shards": { "type": "array", "items": { "type": "object", "required": ["shard", "state"],
                "properties": { "shard": { "type": "integer" }, "state": { "type": "string" } } } },
            "unserved": { "type": "array", "items": { "type": "integer" } }
        }
    } } } })
}

fn text_response(description: &str) -> Value {
    json!({ "description": description, "content": { "text/plain": { "schema": { "type": "string" } } } })
}

fn unavailable() -> Value {
    json!({
        "description": "The shard cannot answer here and no owner could be reached: try another server (an indefinite failure). No wire reply.",
        "headers": { "Retry-After": { "description": "Seconds.", "schema": { "type": "string" } } },
        "content": { "text/plain": { "schema": { "type": "string" } } }
    })
}

fn wire_response(status: u16, description: &str) -> Value {
    let examples: serde_json::Map<String, Value> = reply_examples()
        .into_iter()
        .filter(|(_, s, _, _)| *s == status)
        .map(|(name, _, summary, m)| {
            (name.to_string(), json!({ "summary": summary, "value": enc_reply(&m) }))
        })
        .collect();
    json!({
        "description": description,
        "headers": { "X-Leasehold-Owner": { "description": "The URL of the server that owns the shard that answered: send this landlord's requests there first.", "schema": { "type": "string" } } },
        "content": {
            "application/json": { "schema": { "$ref": "#/components/schemas/Reply" }, "examples": examples },
            "application/octet-stream": { "schema": { "type": "string", "format": "binary" } }
        }
    })
}

fn admin_json(description: &str, schema: &str) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": { "$ref": format!("#/components/schemas/{schema}") } } } })
}

fn admin_responses(ok: &str, ok_schema: &str) -> Value {
    json!({
        "200": admin_json(ok, ok_schema),
        "400": admin_json("A malformed landlord id, cookie, resource or parameter.", "AdminError"),
        "404": admin_json("No such lease, or no such landlord.", "AdminError"),
        "503": unavailable()
    })
}

fn param(name: &str, place: &str, schema: Value, description: &str, required: bool) -> Value {
    json!({ "name": name, "in": place, "required": required, "description": description, "schema": schema })
}

/// The whole document.
pub fn document() -> Value {
    let r = |n: &str| json!({ "$ref": format!("#/components/schemas/{n}") });
    let landlord_q = param("landlord", "query", r("LandlordId"),
        "The lease's landlord, 16 hex digits (any other form: 400). Renewals and cancels name it; a grant without it goes to the shard its resource hashes to.", false);
    let landlord_p =
        param("landlord", "path", r("LandlordId"), "The landlord (shard), 16 hex digits.", true);
    let cookie_p = param("cookie", "path", r("Cookie"), "The lease's cookie.", true);
    let resource_p = param("resource", "path", r("HexBytes"), "The resource, hex.", true);
    let req_examples: serde_json::Map<String, Value> = request_examples()
        .into_iter()
        .map(|(name, summary, m)| {
            (name.to_string(), json!({ "summary": summary, "value": enc_req(&m) }))
        })
        .collect();
    let page_example = LeasePage {
        landlord: LandlordId(16),
        leases: vec![AdminLease {
            landlord: LandlordId(16),
            cookie: COOKIE,
            resource: hex(b"printer-3"),
            resource_text: Some("printer-3".into()),
            expires_in_ms: 21_400,
        }],
        next: None,
    };
    let revoked_example =
        Revoked { landlord: LandlordId(16), revoked: page_example.leases.clone() };
    let admin_error = AdminError {
        error: WireError::from(&LeaseError::InvalidArgument(
            "limit must be a number from 1 to 10000".into(),
        )),
    };
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "leasehold-server",
            "version": env!("CARGO_PKG_VERSION"),
            "summary": "Distributed leases over HTTP: leasehold's wire protocol, and admin endpoints for operators.",
            "description": "POST /lease carries one wire message (JSON or binary by Content-Type) and answers one reply in the same encoding. Any answer with a wire reply in the body is the landlord's definite answer, whatever its status (404 unknown lease, 409 denied, 400 bad request); a 503 without a wire reply means: try another server. Transport rules for clients: docs/server-transports.md.",
            "license": { "name": "Apache-2.0", "identifier": "Apache-2.0" }
        },
        "paths": {
            "/lease": { "post": {
                "operationId": "lease",
                "summary": "Grant, renew, cancel, renew_all or cancel_all: one wire message in, one reply out.",
                "parameters": [landlord_q],
                "requestBody": { "required": true, "content": {
                    "application/json": { "schema": r("Request"), "examples": req_examples },
                    "application/octet-stream": { "schema": { "type": "string", "format": "binary" } }
                }},
                "responses": {
                    "200": wire_response(200, "The landlord's answer (per-lease errors of a batch included)."),
                    "400": wire_response(400, "An error reply: the body does not decode (code 5), or a bad argument (code 4), such as a landlord id in another form."),
                    "404": wire_response(404, "An error reply: the lease is unknown to its landlord, or the landlord is not one of the cluster's (code 1)."),
                    "401": wire_response(401, "An error reply (code 2): the server has a tokens file (--tokens) and the request carried neither a token nor a client certificate."),
                    "403": wire_response(403, "An error reply (code 2): the token names no identity, the identity may not use this operation or lease this resource, or a forwarded request's proof is wrong."),
                    "409": wire_response(409, "An error reply: the landlord denies the request (code 2: at capacity, over the identity's quota, a policy); the lease is unchanged."),
                    "413": wire_response(413, "An error reply: the body is over the size limit (code 5)."),
                    "503": unavailable()
                }
            }},
            "/livez": { "get": { "operationId": "livez", "summary": "Whether the process answers at all (restart it if not).", "responses": {
                "200": text_response("The process runs.") } } },
            "/readyz": { "get": { "operationId": "readyz", "summary": "Whether this server can serve every shard correctly now, and each shard's state and why.", "responses": {
                "200": readiness_response("Every shard served (here or by a live owner this server forwards to)."),
                "503": readiness_response("Some shard is not served, the database is unreachable or the clock is off: the body says which and why.") } } },
            "/healthz": { "get": { "operationId": "healthz", "summary": "/readyz's status with one line of text.", "responses": {
                "200": text_response("Every shard served."), "503": text_response("Not ready: the line says why.") } } },
            "/metrics": { "get": { "operationId": "metrics", "summary": "Prometheus metrics.", "responses": {
                "200": { "description": "The Prometheus text format.", "content": { "text/plain": { "schema": { "type": "string" } } } } } } },
            "/openapi.json": { "get": { "operationId": "openapi", "summary": "This document.", "responses": {
                "200": { "description": "OpenAPI 3.1.", "content": { "application/json": { "schema": { "type": "object" } } } } } } },
            "/admin/landlords/{landlord}/leases": { "get": {
                "operationId": "adminList", "tags": ["admin"],
                "summary": "A page of a landlord's leases, in cookie order.",
                "parameters": [landlord_p,
                    param("prefix", "query", r("HexBytes"), "Only leases whose resource starts with these bytes (hex).", false),
                    param("after", "query", r("Cookie"), "Only cookies after this one (the `next` of the page before).", false),
                    param("limit", "query", json!({ "type": "integer", "minimum": 1, "maximum": crate::admin::MAX_PAGE }), "At most this many (default 100).", false)],
                "responses": with_example(admin_responses("The page.", "LeasePage"), &page_example, &admin_error)
            }},
            "/admin/landlords/{landlord}/leases/{cookie}": {
                "get": { "operationId": "adminGet", "tags": ["admin"], "summary": "One lease.",
                    "parameters": [landlord_p, cookie_p],
                    "responses": with_example(admin_responses("The lease.", "AdminLease"), &page_example.leases[0], &admin_error) },
                "delete": { "operationId": "adminRevoke", "tags": ["admin"], "summary": "Revokes a lease (the landlord cancels it; durable before the answer).",
                    "parameters": [landlord_p, cookie_p],
                    "responses": with_example(admin_responses("What was revoked.", "Revoked"), &revoked_example, &admin_error) }
            },
            "/admin/resources/{resource}": {
                "get": { "operationId": "adminResource", "tags": ["admin"], "summary": "The leases on a resource, at the landlord its grants go to (or the one named).",
                    "parameters": [resource_p, param("landlord", "query", r("LandlordId"), "Look at this landlord instead.", false)],
                    "responses": with_example(admin_responses("The leases (one page, no cursor).", "LeasePage"), &page_example, &admin_error) },
                "delete": { "operationId": "adminRevokeResource", "tags": ["admin"], "summary": "Revokes every lease on a resource (404 if there is none).",
                    "parameters": [resource_p, param("landlord", "query", r("LandlordId"), "At this landlord instead.", false)],
                    "responses": with_example(admin_responses("What was revoked.", "Revoked"), &revoked_example, &admin_error) }
            }
        },
        "components": { "schemas": schemas() }
    })
}

fn with_example(mut responses: Value, ok: &impl serde::Serialize, error: &AdminError) -> Value {
    responses["200"]["content"]["application/json"]["example"] =
        serde_json::to_value(ok).unwrap_or(Value::Null);
    responses["400"]["content"]["application/json"]["example"] =
        serde_json::to_value(error).unwrap_or(Value::Null);
    responses
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold::Limits;

    /// Every example is a message the codec reads back to the same value, and writes back to
    /// the same bytes.
    #[test]
    fn examples_are_real_messages() {
        let doc = document();
        let schemas = &doc["components"]["schemas"];
        let limits = Limits::default();
        for ex in schemas["Request"]["examples"].as_array().unwrap() {
            let text = serde_json::to_vec(ex).unwrap();
            let m = Request::decode(&text, Encoding::Json, &limits).unwrap();
            assert_eq!(enc_req(&m), *ex);
        }
        for ex in schemas["Reply"]["examples"].as_array().unwrap() {
            let text = serde_json::to_vec(ex).unwrap();
            let m = Reply::decode(&text, Encoding::Json, &limits).unwrap();
            assert_eq!(enc_reply(&m), *ex);
        }
        let post = &doc["paths"]["/lease"]["post"];
        for (status, resp) in post["responses"].as_object().unwrap() {
            let Some(examples) = resp["content"]["application/json"]["examples"].as_object() else {
                continue;
            };
            for (name, ex) in examples {
                let text = serde_json::to_vec(&ex["value"]).unwrap();
                let reply = Reply::decode(&text, Encoding::Json, &limits).unwrap();
                let expected = if name == "too_large" {
                    413
                } else {
                    crate::reply::status_of(&reply).as_u16()
                };
                assert_eq!(status, &expected.to_string(), "example {name}");
            }
        }
        // Each op of the codec has a schema branch, and nothing else.
        let ops = |s: &str| -> Vec<String> {
            schemas[s]["oneOf"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["properties"]["op"]["const"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(ops("RequestBody"), ["grant", "renew", "cancel", "renew_all", "cancel_all"]);
        assert_eq!(
            ops("ReplyBody"),
            ["granted", "renewed", "cancelled", "renewed_all", "cancelled_all", "error"]
        );
        for (_, _, m) in request_examples() {
            let v = enc_req(&m);
            assert!(ops("RequestBody").contains(&v["body"]["op"].as_str().unwrap().to_string()));
        }
    }
}
