//! The renewal manager as a [`Machine`]: its settings ([`ManagerOptions`]), every call a host
//! makes as one data enum ([`ManagerInput`]) and what it answers ([`ManagerOutput`]), renewal
//! requests out ([`Outgoing`]) and events out ([`RenewalEventData`]). A binding converts these
//! forms and names the calls; every rule stays in [`RenewalManager`].

use serde::{Deserialize, Serialize};

use super::{
    ManagerOptions, ManagerSnapshot, RenewalEvent, RenewalManager, RenewalManagerConfig,
    RenewalStats, RttEstimator,
};
use crate::error::{LeaseError, Result};
use crate::lease::{LandlordId, Lease};
use crate::machine::{self, Machine};
use crate::service::machine::{ErrorData, Outgoing};
use crate::time::{Duration, Millis};
use crate::wire::{Encoding, Limits, Reply};

/// Every call a host makes of a renewal manager besides the timer and polling (data form: an
/// object tagged by `op`, snake_case).
#[derive(Debug, Clone, Deserialize)]
#[serde(remote = "Self", rename_all = "snake_case", deny_unknown_fields)]
pub enum ManagerInput {
    /// [`RenewalManager::renew_for`].
    RenewFor {
        /// The lease.
        lease: Lease,
        /// How long to keep it from now.
        duration: Duration,
        /// How long each renewal asks for.
        renew_duration: Duration,
    },
    /// [`RenewalManager::renew_until`].
    RenewUntil {
        /// The lease.
        lease: Lease,
        /// Until when to keep it.
        desired_expiration: Millis,
        /// How long each renewal asks for.
        renew_duration: Duration,
    },
    /// [`RenewalManager::remove`].
    Remove {
        /// The lease.
        lease: Lease,
    },
    /// [`RenewalManager::cancel`].
    Cancel {
        /// The lease.
        lease: Lease,
    },
    /// [`RenewalManager::expiration`].
    Expiration {
        /// The lease.
        lease: Lease,
    },
    /// [`RenewalManager::set_expiration`].
    SetExpiration {
        /// The lease.
        lease: Lease,
        /// The new desired expiration.
        desired_expiration: Millis,
    },
    /// [`RenewalManager::lease`].
    Lease {
        /// The lease.
        lease: Lease,
    },
    /// [`RenewalManager::renew_duration`].
    RenewDuration {
        /// The lease.
        lease: Lease,
    },
    /// [`RenewalManager::next_renewal`].
    NextRenewal {
        /// The lease.
        lease: Lease,
    },
    /// [`RenewalManager::rtt`].
    Rtt {
        /// The landlord.
        #[serde(with = "machine::landlord_id")]
        landlord: LandlordId,
    },
    /// [`RenewalManager::len`].
    Size,
    /// [`RenewalManager::leases`].
    Leases,
    /// [`RenewalManager::stats`].
    Stats,
    /// [`RenewalManager::config`].
    Config,
    /// A landlord's reply, encoded ([`RenewalManager::handle_reply`]).
    Reply {
        /// The reply.
        #[serde(with = "machine::bytes")]
        message: Vec<u8>,
        /// Its encoding.
        encoding: Encoding,
    },
    /// Request `id` failed in transport ([`RenewalManager::handle_failure`]): a definite error
    /// when `code` is one, indefinite otherwise.
    Failure {
        /// The request id.
        id: u64,
        /// The error code, if the transport knows one.
        #[serde(default)]
        code: Option<i32>,
        /// What happened.
        #[serde(default)]
        message: String,
    },
}
crate::machine::op_first::op_first!(ManagerInput);

/// A round-trip estimate (data form).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RttData {
    /// Smoothed round-trip time.
    pub srtt: Millis,
    /// Its variation.
    pub rttvar: Millis,
    /// Retransmission timeout.
    pub rto: Millis,
    /// How long a request waits for its reply.
    pub request_timeout: Millis,
    /// Samples taken.
    pub samples: u64,
}

impl From<&RttEstimator> for RttData {
    fn from(r: &RttEstimator) -> RttData {
        RttData {
            srtt: r.srtt(),
            rttvar: r.rttvar(),
            rto: r.rto(),
            request_timeout: r.request_timeout(),
            samples: r.samples(),
        }
    }
}

/// What a [`ManagerInput`] answers (data form, untagged).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ManagerOutput {
    /// Nothing to answer (`null`).
    Done,
    /// A lease, or none.
    Lease(Option<Lease>),
    /// Leases.
    Leases(Vec<Lease>),
    /// A time or duration, or none.
    Time(Option<Millis>),
    /// A count.
    Count(usize),
    /// A round-trip estimate, or none.
    Rtt(Option<RttData>),
    /// The counters.
    Stats(RenewalStats),
    /// The settings.
    Config(RenewalManagerConfig),
}

/// What the manager tells its host (data form, tagged by `type`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RenewalEventData {
    /// [`RenewalEvent::RenewalFailed`].
    RenewalFailed {
        /// The lease, with its last known expiration.
        lease: Lease,
        /// Until when it was to be kept.
        desired_expiration: Millis,
        /// The last error, none when the lease simply expired.
        error: Option<ErrorData>,
    },
    /// [`RenewalEvent::DesiredExpirationReached`].
    DesiredExpirationReached {
        /// The lease.
        lease: Lease,
        /// Its desired expiration.
        desired_expiration: Millis,
    },
    /// [`RenewalEvent::Renewed`].
    Renewed {
        /// The lease, with its new expiration.
        lease: Lease,
    },
}

impl From<RenewalEvent> for RenewalEventData {
    fn from(e: RenewalEvent) -> RenewalEventData {
        match e {
            RenewalEvent::RenewalFailed { lease, desired_expiration, error } => {
                RenewalEventData::RenewalFailed {
                    lease,
                    desired_expiration,
                    error: error.as_ref().map(Into::into),
                }
            }
            RenewalEvent::DesiredExpirationReached { lease, desired_expiration } => {
                RenewalEventData::DesiredExpirationReached { lease, desired_expiration }
            }
            RenewalEvent::Renewed { lease } => RenewalEventData::Renewed { lease },
        }
    }
}

/// Replies are read without message limits: they bound what a part serves, not what it hears
/// back from the landlords it renews with.
pub(crate) const REPLY_LIMITS: Limits =
    Limits { max_message_bytes: usize::MAX, max_batch: usize::MAX, max_resource_bytes: usize::MAX };

/// The error a transport failure stands for: definite when `code` is a definite code.
pub(crate) fn failure(code: Option<i32>, message: String) -> LeaseError {
    match code {
        Some(c @ 1..=6) => LeaseError::from_code(c, &message),
        _ => LeaseError::Indefinite(message),
    }
}

impl Machine for RenewalManager {
    const NAME: &'static str = "RenewalManager";
    type Options = Option<ManagerOptions>;
    type Input = ManagerInput;
    type Output = ManagerOutput;
    type Transmit = Outgoing;
    type Event = RenewalEventData;

    fn create(options: Option<ManagerOptions>, _seed: [u8; 32]) -> Result<Self> {
        RenewalManager::try_new(options.unwrap_or_default().config()?)
    }

    /// The snapshot carries the settings: `options` are not used.
    fn restore(_options: Option<ManagerOptions>, snapshot: &str, now: Millis) -> Result<Self> {
        let mut m = RenewalManager::restore(ManagerSnapshot::from_json(snapshot)?)?;
        m.handle_timeout(now);
        Ok(m)
    }

    fn snapshot(&mut self, now: Millis) -> String {
        if now != Millis::MIN {
            self.handle_timeout(now);
        }
        RenewalManager::snapshot(self).to_json()
    }

    fn handle(&mut self, input: ManagerInput, now: Millis) -> Result<ManagerOutput> {
        use ManagerInput as I;
        use ManagerOutput as O;
        Ok(match input {
            I::RenewFor { lease, duration, renew_duration } => {
                self.renew_for(lease, duration, renew_duration, now)?;
                O::Done
            }
            I::RenewUntil { lease, desired_expiration, renew_duration } => {
                self.renew_until(lease, desired_expiration, renew_duration, now)?;
                O::Done
            }
            I::Remove { lease } => O::Lease(Some(self.remove(&lease)?)),
            I::Cancel { lease } => {
                self.cancel(&lease, now)?;
                O::Done
            }
            I::Expiration { lease } => O::Time(Some(self.expiration(&lease)?)),
            I::SetExpiration { lease, desired_expiration } => {
                self.set_expiration(&lease, desired_expiration, now)?;
                O::Done
            }
            I::Lease { lease } => O::Lease(RenewalManager::lease(self, &lease)),
            I::RenewDuration { lease } => O::Time(Some(self.renew_duration(&lease)?)),
            I::NextRenewal { lease } => O::Time(self.next_renewal(&lease)),
            I::Rtt { landlord } => O::Rtt(self.rtt(landlord).map(Into::into)),
            I::Size => O::Count(self.len()),
            I::Leases => O::Leases(self.leases().copied().collect()),
            I::Stats => O::Stats(self.stats()),
            I::Config => O::Config(self.config().clone()),
            I::Reply { message, encoding } => {
                self.handle_reply(&Reply::decode(&message, encoding, &REPLY_LIMITS)?, now);
                O::Done
            }
            I::Failure { id, code, message } => {
                self.handle_failure(id, failure(code, message), now);
                O::Done
            }
        })
    }

    fn poll_timeout(&self) -> Option<Millis> {
        RenewalManager::poll_timeout(self)
    }

    fn handle_timeout(&mut self, now: Millis) {
        RenewalManager::handle_timeout(self, now)
    }

    fn poll_transmit(&mut self, now: Millis) -> Option<Outgoing> {
        RenewalManager::poll_transmit(self, now).map(Into::into)
    }

    fn poll_event(&mut self, _now: Millis) -> Option<RenewalEventData> {
        RenewalManager::poll_event(self).map(Into::into)
    }
}
