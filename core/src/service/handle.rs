//! [`RenewalSet`]: one set of a service, with the methods of Jini's `LeaseRenewalSet`.

use crate::error::Result;
use crate::event::EventRegistration;
use crate::lease::Lease;
use crate::time::{Duration, Millis};

use super::{Membership, RenewalService, SetId};

/// A renewal set of a [`RenewalService`], borrowed from it ([`RenewalService::set`]): the
/// operations of Jini's `LeaseRenewalSet`, each a shorthand for the service method of the same
/// meaning. Every method answers [`crate::LeaseError::UnknownLease`] once the set is gone.
pub struct RenewalSet<'a> {
    svc: &'a mut RenewalService,
    id: SetId,
}

impl<'a> RenewalSet<'a> {
    pub(super) fn new(svc: &'a mut RenewalService, id: SetId) -> RenewalSet<'a> {
        RenewalSet { svc, id }
    }

    /// The set's number.
    pub fn id(&self) -> SetId {
        self.id
    }

    /// `renewFor`: see [`RenewalService::add`].
    pub fn renew_for(
        &mut self,
        lease: Lease,
        membership_duration: Duration,
        renew_duration: Duration,
        now: Millis,
    ) -> Result<()> {
        self.svc.add(self.id, lease, membership_duration, renew_duration, now)
    }

    /// `remove`: see [`RenewalService::remove`].
    pub fn remove(&mut self, lease: &Lease, now: Millis) -> Result<Option<Lease>> {
        self.svc.remove(self.id, lease, now)
    }

    /// `getLeases`: see [`RenewalService::leases`].
    pub fn leases(&self, now: Millis) -> Result<Vec<Lease>> {
        self.svc.leases(self.id, now)
    }

    /// The membership of `lease`: see [`RenewalService::membership`].
    pub fn membership(&self, lease: &Lease, now: Millis) -> Result<Option<Membership>> {
        self.svc.membership(self.id, lease, now)
    }

    /// `getRenewalSetLease`: the set's own lease, if the set is alive.
    pub fn lease(&self, now: Millis) -> Option<Lease> {
        self.svc.set_lease(self.id, now)
    }

    /// `setExpirationWarningListener`: see [`RenewalService::set_expiration_warning_listener`].
    pub fn set_expiration_warning_listener(
        &mut self,
        min_warning: Duration,
        handback: Vec<u8>,
        now: Millis,
    ) -> Result<EventRegistration> {
        self.svc.set_expiration_warning_listener(self.id, min_warning, handback, now)
    }

    /// `clearExpirationWarningListener`.
    pub fn clear_expiration_warning_listener(&mut self, now: Millis) -> Result<()> {
        self.svc.clear_expiration_warning_listener(self.id, now)
    }

    /// `setRenewalFailureListener`: see [`RenewalService::set_renewal_failure_listener`].
    pub fn set_renewal_failure_listener(
        &mut self,
        handback: Vec<u8>,
        now: Millis,
    ) -> Result<EventRegistration> {
        self.svc.set_renewal_failure_listener(self.id, handback, now)
    }

    /// `clearRenewalFailureListener`.
    pub fn clear_renewal_failure_listener(&mut self, now: Millis) -> Result<()> {
        self.svc.clear_renewal_failure_listener(self.id, now)
    }
}
