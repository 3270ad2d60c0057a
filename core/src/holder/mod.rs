//! The holder side: obtaining leases over the wire, lease maps, and the renewal manager.
//!
//! - [`grant`]: [`grant_request`] and [`lease_from_reply`], so a host can obtain a lease by
//!   message; the local expiration counts from the time the request was *sent* (seed 000, 2.3).
//! - [`LeaseMap`]: leases of one landlord renewed or cancelled in one message (seed 000, 2.2).
//! - [`RenewalManager`]: keeps leases alive until their desired expirations, batching leases
//!   of one landlord, scheduling by a measured round-trip estimate, retrying indefinite
//!   failures, and reporting [`RenewalEvent`]s (seed 000, 3.1; seed 002; seed 003, LR.2).
//!
//! # Time and restarts
//!
//! A renewal manager's clock never runs backwards and never stands still while the host's clock
//! runs: a host clock that steps back grows an offset instead ([`RenewalManager::clock_offset`];
//! see [`RenewalManager`], "Time"). [`RenewalManager::snapshot`] and
//! [`RenewalManager::restore`] carry everything it holds ([`ManagerSnapshot`], JSON or compact
//! binary), so a restored manager sends, reports and times out exactly as the original would
//! have. Its times are absolute on the host's clock (the leases' landlords keep counting while
//! the holder is down). Inside a renewal service, the service's journal covers it.
//!
//! # Driving a renewal manager
//!
//! The manager never reads a clock or touches a socket. The host runs one loop, with `now`
//! from its own clock in every call:
//!
//! 1. sleep until [`RenewalManager::poll_timeout`] (or until a reply arrives), then call
//!    [`RenewalManager::handle_timeout`];
//! 2. send every [`Transmit`] that [`RenewalManager::poll_transmit`] hands out (the send time is
//!    the `now` given to it, so call it just before sending);
//! 3. hand each reply to [`RenewalManager::handle_reply`], or report a request that could not
//!    be sent or got no answer by the host's own reckoning with
//!    [`RenewalManager::handle_failure`] (the manager also times requests out by itself);
//! 4. after any of these calls, drain [`RenewalManager::poll_transmit`] and
//!    [`RenewalManager::poll_event`].
//!
//! ```
//! use leasehold::holder::{grant_request, lease_from_reply, RenewalEvent, RenewalManager};
//! use leasehold::policy::Fixed;
//! use leasehold::{Landlord, LandlordConfig, LandlordId};
//!
//! // A landlord granting 10 s leases, reached over an instant, lossless "network".
//! let mut landlord: Landlord =
//!     Landlord::new(LandlordConfig::new(LandlordId(1), [7; 32]), Fixed::new(10_000).unwrap());
//! let reply = landlord.handle_request(&grant_request(1, b"printer".to_vec(), 10_000), 0);
//! let lease = lease_from_reply(&reply, 0).unwrap();
//!
//! // Keep it for a minute, asking for 10 s at a time.
//! let mut manager = RenewalManager::new(Default::default());
//! manager.renew_for(lease, 60_000, 10_000, 0).unwrap();
//! let mut events = Vec::new();
//! while let Some(now) = manager.poll_timeout() {
//!     landlord.handle_timeout(now);
//!     manager.handle_timeout(now);
//!     while let Some(tx) = manager.poll_transmit(now) {
//!         let reply = landlord.handle_request(&tx.request, now);
//!         manager.handle_reply(&reply, now);
//!     }
//!     events.extend(std::iter::from_fn(|| manager.poll_event()));
//!     assert!(landlord.get(lease.cookie(), now).is_some(), "never lapses");
//! }
//! assert!(matches!(events.last(), Some(RenewalEvent::DesiredExpirationReached { .. })));
//! assert!(manager.is_empty());
//! ```

pub(crate) mod bin;
pub mod grant;
pub mod machine;
mod manager;
mod map;
mod options;
mod renewer;
mod rtt;

pub use grant::{grant_request, lease_from_reply, lease_from_reply_with_drift, local_expiration};
pub use manager::{
    ManagerSnapshot, RenewalEvent, RenewalManager, RenewalManagerConfig, RenewalStats, Transmit,
    MANAGER_SNAPSHOT_VERSION,
};
pub use map::LeaseMap;
pub use options::ManagerOptions;
pub use renewer::Renewer;
pub use rtt::{RttEstimator, CLOCK_GRANULARITY};
