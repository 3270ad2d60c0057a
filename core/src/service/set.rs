//! Renewal sets: the client leases a set holds, with their memberships, and the LR argument rules.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::event::EventId;
use crate::lease::{Cookie, LandlordId, Lease};
use crate::time::{self, Duration, Millis, ANY, FOREVER};

/// Identifies a renewal set inside its [`super::RenewalService`]. Numbers are not reused.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SetId(pub u64);

impl fmt::Debug for SetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SetId({})", self.0)
    }
}

impl fmt::Display for SetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "set {}", self.0)
    }
}

/// A client lease's identity (its landlord and cookie), the key of memberships.
pub(crate) type ClientKey = (LandlordId, Cookie);

pub(crate) fn key_of(lease: &Lease) -> ClientKey {
    (lease.landlord(), lease.cookie())
}

/// A client lease's place in one set: until when the client wants it renewed (the *membership*
/// or *desired* expiration, LR.2) and how long each renewal asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Membership {
    /// The desired expiration: when the lease leaves the set without any event
    /// ([`FOREVER`] for never).
    pub expiration: Millis,
    /// The renewal duration: positive, [`FOREVER`], or [`ANY`] (only with a [`FOREVER`]
    /// membership).
    pub renew_duration: Duration,
}

/// Checks the LR rules for adding a lease to a set (Norm's `renewFor`): the renewal duration is
/// [`ANY`] only with a [`FOREVER`] membership; otherwise it must be positive (or [`FOREVER`]).
/// Any membership duration is accepted; zero or less means the lease leaves at once.
pub fn check_membership(membership_duration: Duration, renew_duration: Duration) -> Result<()> {
    if renew_duration == ANY {
        if membership_duration != FOREVER {
            return Err(LeaseError::InvalidArgument(format!(
                "renew duration ANY needs a FOREVER membership, got a membership of {}",
                time::describe(membership_duration)
            )));
        }
        return Ok(());
    }
    if renew_duration <= 0 {
        return Err(LeaseError::InvalidArgument(format!(
            "renew duration must be positive, FOREVER or ANY, got {}",
            time::describe(renew_duration)
        )));
    }
    Ok(())
}

/// Checks the `min_warning` of an expiration-warning registration: zero or more.
pub fn check_min_warning(min_warning: Duration) -> Result<()> {
    if min_warning < 0 {
        return Err(LeaseError::InvalidArgument(format!(
            "min_warning must not be negative, got {min_warning} ms"
        )));
    }
    Ok(())
}

/// An expiration-warning registration of a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Warning {
    pub event_id: EventId,
    pub min_warning: Duration,
    /// The set expiration a warning was last sent for (a renewal re-arms the warning).
    pub sent_for: Option<Millis>,
    /// When the pending warning is due, if one is scheduled.
    pub due: Option<Millis>,
}

impl Warning {
    /// When the warning for a set expiring at `expiration` is due; `None` for a set that never
    /// expires.
    pub fn due_for(&self, expiration: Millis) -> Option<Millis> {
        (expiration != FOREVER).then(|| expiration.saturating_sub(self.min_warning))
    }
}

/// A renewal set's state inside the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SetState {
    /// The cookie of the set's own lease (granted by the service's landlord).
    pub cookie: Cookie,
    /// Client leases in the set, by identity.
    pub members: BTreeMap<ClientKey, Membership>,
    pub warning: Option<Warning>,
    pub failure: Option<EventId>,
    /// When the set's lease is due to expire (host's clock), if it ever is.
    pub due: Option<Millis>,
}

impl SetState {
    pub fn new(cookie: Cookie) -> SetState {
        SetState { cookie, members: BTreeMap::new(), warning: None, failure: None, due: None }
    }
}
