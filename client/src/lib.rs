//! # leasehold-client
//!
//! The Rust client of `leasehold-server`, on tokio and hyper:
//!
//! - [`Cluster`]: the cluster transport. One wire message to a list of servers with failover
//!   within one send, the owner hint, per-attempt time-outs, both encodings, and the line
//!   between *definite* answers (any wire reply, whatever its HTTP status: "unknown lease" is
//!   a `404` with the reply in the body) and *indefinite* failures (no server gave a wire
//!   reply: [`ClientError::Unavailable`]). TLS plugs in as a hyper connector
//!   ([`Cluster::with_connector`]); a bearer token as a header ([`ClusterConfig::bearer_token`]).
//! - [`RenewalDriver`]: the core's [`leasehold::RenewalManager`] run by a tokio task on tokio's
//!   timers: grant, renew for a while or until a time, cancel, remove, events on a channel,
//!   close.
//! - [`recipes`]: locks with fencing tokens and leader election ([`RenewalDriver::lock`],
//!   [`RenewalDriver::elect`], [`RenewalDriver::observe`]) on `POST /coord`.
//! - [`admin`]: typed calls of the admin endpoints (list a landlord's leases, look up by
//!   resource, revoke).
//! - [`RemoteSet`]: a renewal set at a remote lease renewal service (`POST /renewal`): hand
//!   leases to it before going away, take them back, listen for its events.
//!
//! Every rule of leasing (when to renew, batching, retries, what an answer means) is the
//! core's; this crate carries messages and runs timers.
//!
//! ```no_run
//! use leasehold::{RenewalEvent, FOREVER};
//! use leasehold_client::{Cluster, ClusterConfig, RenewalDriver};
//!
//! # async fn run() -> Result<(), leasehold_client::ClientError> {
//! // Three servers sharing a PostgreSQL; any of them answers for any shard.
//! let cluster = Cluster::new(ClusterConfig::new([
//!     "http://127.0.0.1:7421",
//!     "http://127.0.0.1:7422",
//!     "http://127.0.0.1:7423",
//! ]))?;
//! let (driver, mut events) = RenewalDriver::start(cluster, Default::default())?;
//! let lease = driver.grant("printer-3", 30_000).await?; // the server picks the shard
//! driver.renew_for(lease, FOREVER, 30_000).await?; // renewed until cancelled
//! tokio::spawn(async move {
//!     while let Some(event) = events.recv().await {
//!         if let RenewalEvent::RenewalFailed { lease, error, .. } = event {
//!             eprintln!("lost {}: {error:?}", lease.cookie());
//!         }
//!     }
//! });
//! // ... use the printer ...
//! driver.cancel(lease).await?;
//! driver.close().await;
//! # Ok(()) }
//! ```
//!
//! The crate's tests run the same against real `leasehold-server` processes
//! (`server/tests/client.rs`).
#![deny(missing_docs)]

pub mod admin;
pub mod cluster;
pub mod driver;
pub mod error;
pub mod recipes;
pub mod renewal;
pub mod tls;

pub use cluster::{content_type, landlord_query, Answered, Cluster, ClusterConfig, OWNER_HEADER};
pub use driver::RenewalDriver;
pub use error::ClientError;
pub use renewal::RemoteSet;
pub use tls::{HttpsConnector, TcpConnection, TcpConnector, TlsOptions};
