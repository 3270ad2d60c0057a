//! # leasehold
//!
//! Distributed leases in the Jini model, as a sans-I/O core: every rule of leasing, no clocks,
//! no sockets, no threads. The host supplies `now` (milliseconds on its clock), carries the
//! messages, and runs the timers that [`Landlord::poll_timeout`] and friends ask for.
//!
//! - [`time`]: [`FOREVER`], [`ANY`], saturating time arithmetic.
//! - [`Lease`] and its serial formats ([`serial`]), [`LeaseError`] and its codes.
//! - [`policy`]: how long a landlord grants (fixed, bounded, capacity, resource-aware, adaptive).
//! - [`holder`]: the holder side: [`LeaseMap`], [`RenewalManager`], grant helpers.
//! - [`simnet`]: a virtual-time network to drive landlords and holders in tests and simulations.
//! - [`Landlord`]: the grantor, with expiry, batching, snapshot and the [`wire`] protocol.
//! - [`event`]: event registrations, sequence numbers, gaps and handbacks.
//! - [`coord`]: leases to coordinate with: exclusive resources and pools, fencing tokens and
//!   the resource's [`Fence`], watches that resume from a sequence number.
//! - [`service`]: the lease renewal service: leased renewal sets, warnings and failure events.
//! - [`discovery`]: the lookup discovery service: leased registrations, discovered and
//!   discarded events, announcements and unicast discovery driven by the host.
//! - [`inverted`]: inverted leasing (the landlord polls, holders answer), seed 004.
//! - [`journal`]: durability without I/O: journal frames, snapshots, and replies held until
//!   the records behind them are durable.
//! - [`store`]: the embedded file store's directory format and policy, carried out by hosts.
//! - [`machine`]: what a binding needs of a part, written once: [`machine::Machine`] (settings,
//!   calls as data, timer, transmissions, events, snapshots) and [`machine::Message`].
#![deny(missing_docs)]

pub mod codec;
pub mod coord;
pub mod discovery;
pub mod error;
pub mod event;
pub mod holder;
pub mod inverted;
pub mod journal;
pub mod landlord;
pub mod lease;
pub mod machine;
pub mod policy;
pub mod serial;
pub mod service;
pub mod simnet;
pub mod store;
pub mod time;
pub mod wire;

pub use coord::{Acquire, Acquired, CoordConfig, Fence, Fenced, Selector, Ticket};
pub use discovery::{
    DiscoveryConfig, DiscoveryService, Groups, Locator, RegistrarId, RegistrationId,
    RemoteDiscoveryEvent,
};
pub use error::{ErrorCode, LeaseError, LeaseFailure, Result};
pub use event::{
    Delivery, EventId, EventRegistration, EventSource, EventTable, GapTracker, RemoteEvent,
};
pub use holder::{
    LeaseMap, RenewalEvent, RenewalManager, RenewalManagerConfig, RenewalStats, Transmit,
};
pub use landlord::{Expired, Grant, Landlord, LandlordConfig, LandlordSnapshot};
pub use lease::{Cookie, LandlordId, Lease, SerialFormat};
pub use policy::{LeasePolicy, PolicyContext, PolicySpec};
pub use service::{
    RenewalService, RenewalServiceConfig, RenewalSet, SetEvent, SetEventKind, SetId,
};
pub use time::{Duration, Millis, ANY, FOREVER};
pub use wire::{Encoding, Limits, Reply, ReplyBody, Request, RequestBody};

/// The Rust quickstart of the repository's README, compiled and run as a doc test so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeQuickstart;
