//! The holder side: obtaining leases over the wire, lease maps, and the renewal manager.
//!
//! - [`grant`]: [`grant_request`] and [`lease_from_reply`], so a host can obtain a lease by
//!   message; the local expiration counts from the time the request was *sent* (seed 000, 2.3).
//! - [`LeaseMap`]: leases of one landlord renewed or cancelled in one message (seed 000, 2.2).
//! - [`RenewalManager`]: keeps leases alive until their desired expirations, batching leases
//!   of one landlord, scheduling by a measured round-trip estimate, retrying indefinite
//!   failures, and reporting [`RenewalEvent`]s (seed 000, 3.1; seed 002; seed 003, LR.2).

pub mod grant;
mod manager;
mod map;
mod rtt;

pub use grant::{grant_request, lease_from_reply, lease_from_reply_with_drift, local_expiration};
pub use manager::{RenewalEvent, RenewalManager, RenewalManagerConfig, RenewalStats, Transmit};
pub use map::LeaseMap;
pub use rtt::{RttEstimator, CLOCK_GRANULARITY};
