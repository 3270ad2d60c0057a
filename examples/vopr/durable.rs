//! What survives a crash, and how a crashed host comes back.
//!
//! The durability contract: a crash loses only what was not durable, and a host replies only
//! after the change behind the reply is durable. Until the core has a journal, "durable" means
//! "in the latest snapshot": the hosts of the simulator commit (take a snapshot) after changes
//! and hold every reply and event until the next commit (group commit). A crash restores the
//! latest commit.
//!
//! The two traits below are the seam where "snapshot + journal replay" plugs in later: `commit`
//! would append the records written since the last commit (and sync), `recover` would read the
//! last snapshot and replay the journal onto it. Nothing else in the simulator needs to change.

use leasehold::landlord::LandlordSnapshot;
use leasehold::service::{RenewalService, RenewalServiceConfig, ServiceSnapshot};
use leasehold::{Landlord, LeasePolicy, Millis, Result};

use crate::nodes::Meta;

/// How a restored landlord counts time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestoreMode {
    /// Restore at the snapshot's own `taken_at`, then advance to the real `now`: every lease
    /// keeps its absolute expiration (what a journal replay gives: "the same expiries").
    Absolute,
    /// Restore at `now`: every lease keeps the time it had left when the snapshot was taken
    /// (the documented default of `Landlord::restore`).
    Remaining,
}

/// The durable side of a landlord host.
pub trait LandlordStore {
    /// Makes the landlord's current state (and the host's bookkeeping) durable.
    fn commit(&mut self, landlord: &Landlord<Vec<u8>>, meta: &Meta, now: Millis);
    /// Rebuilds the landlord after a crash, at local time `now`.
    fn recover(
        &self,
        policy: Box<dyn LeasePolicy>,
        now: Millis,
        mode: RestoreMode,
    ) -> Result<(Landlord<Vec<u8>>, Meta)>;
    /// The latest snapshot, for negative tests (restore must refuse corrupted copies).
    fn snapshot(&self) -> &LandlordSnapshot<Vec<u8>>;
}

/// Durable = the latest snapshot, taken at every commit.
pub struct SnapshotStore {
    snapshot: LandlordSnapshot<Vec<u8>>,
    meta: Meta,
}

impl SnapshotStore {
    /// A store whose first commit is `landlord` as it is now.
    pub fn new(landlord: &Landlord<Vec<u8>>, meta: &Meta, now: Millis) -> SnapshotStore {
        SnapshotStore { snapshot: landlord.snapshot(now), meta: meta.clone() }
    }
}

impl LandlordStore for SnapshotStore {
    fn commit(&mut self, landlord: &Landlord<Vec<u8>>, meta: &Meta, now: Millis) {
        self.snapshot = landlord.snapshot(now);
        self.meta.clone_from(meta);
    }

    fn recover(
        &self,
        policy: Box<dyn LeasePolicy>,
        now: Millis,
        mode: RestoreMode,
    ) -> Result<(Landlord<Vec<u8>>, Meta)> {
        let at = match mode {
            RestoreMode::Absolute => self.snapshot.taken_at,
            RestoreMode::Remaining => now,
        };
        let mut ll = Landlord::restore(self.snapshot.clone(), policy, at)?;
        if mode == RestoreMode::Absolute {
            ll.handle_timeout(now);
        }
        Ok((ll, self.meta.clone()))
    }

    fn snapshot(&self) -> &LandlordSnapshot<Vec<u8>> {
        &self.snapshot
    }
}

/// The durable side of a renewal-service host.
pub trait ServiceStore {
    /// Makes the service's current state durable.
    fn commit(&mut self, service: &RenewalService, meta: &Meta, now: Millis);
    /// Rebuilds the service after a crash, at local time `now`.
    fn recover(&self, config: RenewalServiceConfig, now: Millis) -> Result<(RenewalService, Meta)>;
    /// The latest snapshot, for negative tests.
    fn snapshot(&self) -> &ServiceSnapshot;
}

/// Durable = the latest service snapshot.
pub struct ServiceSnapshotStore {
    snapshot: ServiceSnapshot,
    meta: Meta,
}

impl ServiceSnapshotStore {
    /// A store whose first commit is `service` as it is now.
    pub fn new(service: &RenewalService, meta: &Meta, now: Millis) -> ServiceSnapshotStore {
        ServiceSnapshotStore { snapshot: service.snapshot(now), meta: meta.clone() }
    }
}

impl ServiceStore for ServiceSnapshotStore {
    fn commit(&mut self, service: &RenewalService, meta: &Meta, now: Millis) {
        self.snapshot = service.snapshot(now);
        self.meta.clone_from(meta);
    }

    fn recover(&self, config: RenewalServiceConfig, now: Millis) -> Result<(RenewalService, Meta)> {
        let svc = RenewalService::restore(config, self.snapshot.clone(), now)?;
        Ok((svc, self.meta.clone()))
    }

    fn snapshot(&self) -> &ServiceSnapshot {
        &self.snapshot
    }
}
