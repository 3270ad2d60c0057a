//! [`Registration`]: one registration of a discovery service, with the methods of Jini's
//! `LookupDiscoveryRegistration`.

use crate::error::Result;
use crate::event::EventRegistration;
use crate::lease::Lease;
use crate::time::Millis;

use super::{DiscoveryService, Groups, Locator, Registrar, RegistrarId, RegistrationId};

/// A registration of a [`DiscoveryService`], borrowed from it
/// ([`DiscoveryService::registration`]): the operations of Jini's
/// `LookupDiscoveryRegistration`, each a shorthand for the service method of the same name.
/// Every method answers [`crate::LeaseError::UnknownLease`] (no such object) once the
/// registration's lease has expired or was cancelled.
pub struct Registration<'a> {
    svc: &'a mut DiscoveryService,
    id: RegistrationId,
}

impl<'a> Registration<'a> {
    pub(super) fn new(svc: &'a mut DiscoveryService, id: RegistrationId) -> Registration<'a> {
        Registration { svc, id }
    }

    /// The registration's number.
    pub fn id(&self) -> RegistrationId {
        self.id
    }

    /// `getLease`: see [`DiscoveryService::lease`].
    pub fn lease(&mut self, now: Millis) -> Result<Lease> {
        self.svc.lease(self.id, now)
    }

    /// `getEventRegistration`: see [`DiscoveryService::event_registration`].
    pub fn event_registration(&mut self, now: Millis) -> Result<EventRegistration> {
        self.svc.event_registration(self.id, now)
    }

    /// `getRegistrars`: see [`DiscoveryService::registrars`].
    pub fn registrars(&mut self, now: Millis) -> Result<Vec<Registrar>> {
        self.svc.registrars(self.id, now)
    }

    /// `getGroups`: see [`DiscoveryService::groups`].
    pub fn groups(&mut self, now: Millis) -> Result<Groups> {
        self.svc.groups(self.id, now)
    }

    /// `getLocators`: see [`DiscoveryService::locators`].
    pub fn locators(&mut self, now: Millis) -> Result<Vec<Locator>> {
        self.svc.locators(self.id, now)
    }

    /// `addGroups`: see [`DiscoveryService::add_groups`].
    pub fn add_groups<I, S>(&mut self, groups: I, now: Millis) -> Result<()>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.svc.add_groups(self.id, groups, now)
    }

    /// `setGroups`: see [`DiscoveryService::set_groups`].
    pub fn set_groups(&mut self, groups: Groups, now: Millis) -> Result<()> {
        self.svc.set_groups(self.id, groups, now)
    }

    /// `removeGroups`: see [`DiscoveryService::remove_groups`].
    pub fn remove_groups<I, S>(&mut self, groups: I, now: Millis) -> Result<()>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.svc.remove_groups(self.id, groups, now)
    }

    /// `addLocators`: see [`DiscoveryService::add_locators`].
    pub fn add_locators(
        &mut self,
        locators: impl IntoIterator<Item = Locator>,
        now: Millis,
    ) -> Result<()> {
        self.svc.add_locators(self.id, locators, now)
    }

    /// `setLocators`: see [`DiscoveryService::set_locators`].
    pub fn set_locators(
        &mut self,
        locators: impl IntoIterator<Item = Locator>,
        now: Millis,
    ) -> Result<()> {
        self.svc.set_locators(self.id, locators, now)
    }

    /// `removeLocators`: see [`DiscoveryService::remove_locators`].
    pub fn remove_locators(
        &mut self,
        locators: impl IntoIterator<Item = Locator>,
        now: Millis,
    ) -> Result<()> {
        self.svc.remove_locators(self.id, locators, now)
    }

    /// `discard`: see [`DiscoveryService::discard`].
    pub fn discard(&mut self, registrar: RegistrarId, now: Millis) -> Result<()> {
        self.svc.discard(self.id, registrar, now)
    }
}
