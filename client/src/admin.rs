//! The admin endpoints of `leasehold-server` (`/admin/...`): what they answer, and typed calls.
//!
//! | call | endpoint |
//! |---|---|
//! | [`Admin::list`] | `GET /admin/landlords/{landlord}/leases?prefix=&after=&limit=` |
//! | [`Admin::get`] | `GET /admin/landlords/{landlord}/leases/{cookie}` |
//! | [`Admin::revoke`] | `DELETE /admin/landlords/{landlord}/leases/{cookie}` |
//! | [`Admin::resource`] | `GET /admin/resources/{resource hex}` |
//! | [`Admin::revoke_resource`] | `DELETE /admin/resources/{resource hex}` |
//!
//! Landlord ids are 16 hex digits and cookies 32, as on the wire; resources are hex. Times
//! are what is left at the landlord when it answered, in ms, as a decimal string (exact in
//! JavaScript; `FOREVER` is `9223372036854775807`). A revocation is the landlord's `cancel`:
//! journaled, and answered only once durable, like every other change. The server's
//! OpenAPI document (`GET /openapi.json`) describes the same shapes.

use bytes::Bytes;
use hyper::StatusCode;
use hyper_util::client::legacy::connect::Connect;
use leasehold::{Cookie, LandlordId, Millis};
use serde::{Deserialize, Serialize};

use crate::cluster::Cluster;
use crate::error::ClientError;

/// One lease as the admin endpoints show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminLease {
    /// Its landlord (shard).
    pub landlord: LandlordId,
    /// Its cookie.
    pub cookie: Cookie,
    /// Its resource, hex.
    pub resource: String,
    /// Its resource as text, when it is UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_text: Option<String>,
    /// Milliseconds left at the landlord (decimal string; `FOREVER` is i64::MAX).
    #[serde(with = "dec_i64")]
    pub expires_in_ms: Millis,
}

/// A page of a landlord's leases, in cookie order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeasePage {
    /// The landlord listed.
    pub landlord: LandlordId,
    /// The leases of this page.
    pub leases: Vec<AdminLease>,
    /// Pass as `after` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<Cookie>,
}

/// What a revocation ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Revoked {
    /// The landlord that revoked.
    pub landlord: LandlordId,
    /// The leases revoked (as they were just before).
    pub revoked: Vec<AdminLease>,
}

/// The body of an admin error answer: `{"error":{"code":N,"message":"..."}}` (the wire's
/// error codes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminError {
    /// The error.
    pub error: leasehold::wire::WireError,
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes of a hex string (even number of digits), or `None`.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
}

/// Admin calls through a [`Cluster`] (any server answers; one that does not own the shard
/// forwards to its owner).
pub struct Admin<'a, C> {
    cluster: &'a Cluster<C>,
}

impl<C> Cluster<C> {
    /// The admin calls.
    pub fn admin(&self) -> Admin<'_, C> {
        Admin { cluster: self }
    }
}

fn parse<T: for<'de> Deserialize<'de>>(
    (status, body): (StatusCode, Bytes),
) -> Result<T, ClientError> {
    if status.is_success() {
        return serde_json::from_slice(&body).map_err(|e| ClientError::Http {
            status: status.as_u16(),
            message: format!("unexpected answer: {e}"),
        });
    }
    if let Ok(AdminError { error }) = serde_json::from_slice::<AdminError>(&body) {
        return Err(ClientError::Lease(error.to_error()).with_message(&error.message));
    }
    Err(ClientError::Http {
        status: status.as_u16(),
        message: String::from_utf8_lossy(&body).trim().to_string(),
    })
}

impl ClientError {
    /// An unknown-lease error carries no message in the core; the admin endpoints give one.
    fn with_message(self, message: &str) -> ClientError {
        match self {
            ClientError::Lease(leasehold::LeaseError::UnknownLease) if !message.is_empty() => {
                ClientError::Http { status: 404, message: message.to_string() }
            }
            e => e,
        }
    }
}

impl<C: Connect + Clone + Send + Sync + 'static> Admin<'_, C> {
    /// Up to `limit` leases of `landlord` whose resource starts with `prefix`, with cookies
    /// after `after`, in cookie order.
    pub async fn list(
        &self,
        landlord: LandlordId,
        prefix: &[u8],
        after: Option<Cookie>,
        limit: usize,
    ) -> Result<LeasePage, ClientError> {
        let mut path = format!("/admin/landlords/{landlord}/leases?limit={limit}");
        if !prefix.is_empty() {
            path += &format!("&prefix={}", hex(prefix));
        }
        if let Some(a) = after {
            path += &format!("&after={a}");
        }
        parse(self.cluster.get(&path).await?)
    }

    /// One lease of `landlord`.
    pub async fn get(
        &self,
        landlord: LandlordId,
        cookie: Cookie,
    ) -> Result<AdminLease, ClientError> {
        parse(self.cluster.get(&format!("/admin/landlords/{landlord}/leases/{cookie}")).await?)
    }

    /// Revokes one lease (the landlord cancels it; durable before it answers).
    pub async fn revoke(
        &self,
        landlord: LandlordId,
        cookie: Cookie,
    ) -> Result<Revoked, ClientError> {
        parse(self.cluster.delete(&format!("/admin/landlords/{landlord}/leases/{cookie}")).await?)
    }

    /// The leases on `resource`, at the landlord its grants go to (or at `landlord`).
    pub async fn resource(
        &self,
        resource: &[u8],
        landlord: Option<LandlordId>,
    ) -> Result<LeasePage, ClientError> {
        parse(self.cluster.get(&resource_path(resource, landlord)).await?)
    }

    /// Revokes every lease on `resource`, at the landlord its grants go to (or at `landlord`).
    pub async fn revoke_resource(
        &self,
        resource: &[u8],
        landlord: Option<LandlordId>,
    ) -> Result<Revoked, ClientError> {
        parse(self.cluster.delete(&resource_path(resource, landlord)).await?)
    }
}

fn resource_path(resource: &[u8], landlord: Option<LandlordId>) -> String {
    match landlord {
        Some(l) => format!("/admin/resources/{}?landlord={l}", hex(resource)),
        None => format!("/admin/resources/{}", hex(resource)),
    }
}

mod dec_i64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let l = AdminLease {
            landlord: LandlordId(16),
            cookie: Cookie(5),
            resource: hex(b"printer"),
            resource_text: Some("printer".into()),
            expires_in_ms: leasehold::FOREVER,
        };
        let text = serde_json::to_string(&l).unwrap();
        assert_eq!(
            text,
            r#"{"landlord":"0000000000000010","cookie":"00000000000000000000000000000005","resource":"7072696e746572","resource_text":"printer","expires_in_ms":"9223372036854775807"}"#
        );
        assert_eq!(serde_json::from_str::<AdminLease>(&text).unwrap(), l);
        assert_eq!(unhex("7072696e746572").unwrap(), b"printer");
        assert!(unhex("7").is_none() && unhex("zz").is_none());
    }
}
