//! The renewal service as a [`Machine`]: its settings ([`ServiceOptions`]), every call a host
//! makes as one data enum ([`ServiceInput`]) and what it answers ([`ServiceOutput`]), renewal
//! requests out ([`Outgoing`]) and set events out ([`SetEventData`]). A binding converts these
//! forms and names the calls; every rule stays in [`RenewalService`].

use serde::{Deserialize, Serialize};

use super::{
    Membership, RenewalService, RenewalServiceConfig, ServiceSnapshot, SetEventKind, SetId,
};
use crate::error::{LeaseError, Result};
use crate::event::{EventId, EventRegistration, EventSource};
use crate::holder::ManagerOptions;
use crate::lease::{LandlordId, Lease};
use crate::machine::{self, LimitsOptions, Machine};
use crate::policy::PolicySpec;
use crate::time::{Duration, Millis};
use crate::wire::{Encoding, Reply};

/// A renewal service's settings (data form); each one not given keeps the default of
/// [`RenewalServiceConfig::new`]. Unknown names are refused.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(optional_fields))]
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceOptions {
    /// The landlord id of set leases and event sources.
    #[serde(with = "machine::landlord_id")]
    #[cfg_attr(feature = "ts", ts(type = "string | number | bigint"))]
    pub id: LandlordId,
    /// 32 bytes of entropy for the set lease cookies (the host's own when not given).
    #[serde(default, with = "machine::bytes::option")]
    #[cfg_attr(feature = "ts", ts(type = "Uint8Array", optional))]
    pub seed: Option<Vec<u8>>,
    /// Grace after a set lease expires.
    #[serde(default)]
    pub grace: Option<Duration>,
    /// Message limits of the set-lease landlord.
    #[serde(default)]
    pub limits: Option<LimitsOptions>,
    /// How long set leases are granted.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(type = "PolicySpec", optional))]
    pub set_policy: Option<PolicySpec>,
    /// The renewal manager that renews the client leases.
    #[serde(default)]
    pub manager: Option<ManagerOptions>,
    /// [`RenewalServiceConfig::restore_jump`].
    #[serde(default)]
    pub restore_jump: Option<u64>,
}

impl ServiceOptions {
    /// The configuration these settings make; `seed` when they give none. Checked.
    pub fn config(self, seed: [u8; 32]) -> Result<RenewalServiceConfig> {
        let mut c = RenewalServiceConfig::new(self.id, machine::seed(self.seed.as_deref(), seed)?);
        if let Some(g) = self.grace {
            if g < 0 {
                return Err(LeaseError::InvalidArgument(format!(
                    "grace must not be negative, got {g}"
                )));
            }
            c.landlord = c.landlord.with_grace(g);
        }
        if let Some(l) = self.limits {
            c.landlord.limits = l.apply(c.landlord.limits);
        }
        c.set_policy = self.set_policy.unwrap_or(c.set_policy);
        c.manager = self.manager.unwrap_or_default().config()?;
        c.restore_jump = self.restore_jump.unwrap_or(c.restore_jump);
        Ok(c)
    }
}

/// Every call a host makes of a renewal service besides the timer and polling (data form: an
/// object tagged by `op`, snake_case). `set` is a set's number.
#[derive(Debug, Clone, Deserialize)]
#[serde(remote = "Self", rename_all = "snake_case", deny_unknown_fields)]
pub enum ServiceInput {
    /// The landlord id of the set leases.
    Id,
    /// How set leases are granted, as configured.
    SetPolicy,
    /// [`RenewalService::create_set`].
    CreateSet {
        /// Requested set lease duration.
        lease_duration: Duration,
    },
    /// [`RenewalService::sets`].
    Sets,
    /// [`RenewalService::set_lease`].
    SetLease {
        /// The set.
        set: SetId,
    },
    /// [`RenewalService::set_of`].
    SetOf {
        /// A set lease.
        lease: Lease,
    },
    /// [`RenewalService::add`].
    Add {
        /// The set.
        set: SetId,
        /// The client lease.
        lease: Lease,
        /// How long the lease stays in the set.
        membership_duration: Duration,
        /// How long each renewal asks for.
        renew_duration: Duration,
    },
    /// [`RenewalService::remove`].
    Remove {
        /// The set.
        set: SetId,
        /// The client lease.
        lease: Lease,
    },
    /// [`RenewalService::leases`].
    Leases {
        /// The set.
        set: SetId,
    },
    /// [`RenewalService::membership`].
    Membership {
        /// The set.
        set: SetId,
        /// The client lease.
        lease: Lease,
    },
    /// [`RenewalService::set_expiration_warning_listener`].
    SetExpirationWarningListener {
        /// The set.
        set: SetId,
        /// How long before the set lease expires to warn.
        min_warning: Duration,
        /// Returned in every event.
        #[serde(with = "machine::bytes")]
        handback: Vec<u8>,
    },
    /// [`RenewalService::set_renewal_failure_listener`].
    SetRenewalFailureListener {
        /// The set.
        set: SetId,
        /// Returned in every event.
        #[serde(with = "machine::bytes")]
        handback: Vec<u8>,
    },
    /// [`RenewalService::clear_expiration_warning_listener`].
    ClearExpirationWarningListener {
        /// The set.
        set: SetId,
    },
    /// [`RenewalService::clear_renewal_failure_listener`].
    ClearRenewalFailureListener {
        /// The set.
        set: SetId,
    },
    /// [`RenewalService::unknown_event`].
    UnknownEvent {
        /// The event id the listener did not know.
        event_id: EventId,
    },
    /// [`RenewalService::delivered`].
    Delivered {
        /// The event's registration.
        event_id: EventId,
        /// The event's sequence number.
        sequence: u64,
    },
    /// [`RenewalService::registrations`].
    Registrations {
        /// The set.
        set: SetId,
    },
    /// The renewal counters of the service's renewal manager ([`crate::holder::RenewalStats`]).
    Stats,
    /// A request about set leases, encoded: answers the encoded reply
    /// ([`RenewalService::handle_bytes`]).
    Serve {
        /// The request.
        #[serde(with = "machine::bytes")]
        message: Vec<u8>,
        /// Its encoding (the reply's too).
        encoding: Encoding,
    },
    /// A client lease landlord's reply, encoded ([`RenewalService::handle_reply`]).
    Reply {
        /// The reply.
        #[serde(with = "machine::bytes")]
        message: Vec<u8>,
        /// Its encoding.
        encoding: Encoding,
    },
    /// Renewal request `id` failed in transport ([`RenewalService::handle_failure`]): a
    /// definite error when `code` is one, indefinite otherwise.
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
crate::machine::op_first::op_first!(ServiceInput);

/// What a [`ServiceInput`] answers (data form, untagged).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ServiceOutput {
    /// Nothing to answer (`null`).
    Done,
    /// Yes or no.
    Flag(bool),
    /// A new set and its lease.
    Created {
        /// The set.
        set: SetId,
        /// Its lease.
        lease: Lease,
    },
    /// Sets.
    Sets(Vec<SetId>),
    /// A set, or none.
    Set(Option<SetId>),
    /// A lease, or none.
    Lease(Option<Lease>),
    /// Leases.
    Leases(Vec<Lease>),
    /// A membership, or none.
    Membership(Option<Membership>),
    /// An event registration.
    Registration(EventRegistration),
    /// Event registrations.
    Registrations(Vec<EventRegistration>),
    /// A landlord id.
    Id(LandlordId),
    /// A lease policy.
    Policy(PolicySpec),
    /// Renewal counters.
    Stats(crate::holder::RenewalStats),
    /// An encoded reply.
    Bytes(#[serde(with = "machine::bytes")] Vec<u8>),
}

/// A request to send (data form): to whom, and the request in the binary encoding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outgoing {
    /// The landlord to send it to.
    pub landlord: LandlordId,
    /// The request's id (its reply carries the same).
    pub id: u64,
    /// The request, binary encoding.
    #[serde(with = "machine::bytes")]
    pub request: Vec<u8>,
}

impl From<crate::holder::Transmit> for Outgoing {
    fn from(t: crate::holder::Transmit) -> Outgoing {
        Outgoing {
            landlord: t.landlord,
            id: t.request.id,
            request: t.request.encode(Encoding::Binary),
        }
    }
}

/// An error in the data form: its stable code and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorData {
    /// [`crate::ErrorCode`] as a number.
    pub code: i32,
    /// What happened.
    pub message: String,
}

impl From<&LeaseError> for ErrorData {
    fn from(e: &LeaseError) -> ErrorData {
        ErrorData { code: e.code() as i32, message: e.to_string() }
    }
}

/// What a set event reports (data form, tagged by `type`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SetEventKindData {
    /// [`SetEventKind::ExpirationWarning`].
    ExpirationWarning {
        /// The set.
        set: SetId,
        /// When its lease expires.
        expiration: Millis,
    },
    /// [`SetEventKind::RenewalFailure`].
    RenewalFailure {
        /// The set.
        set: SetId,
        /// The client lease that left the set.
        lease: Lease,
        /// The last renewal error, none when the lease simply expired.
        error: Option<ErrorData>,
    },
}

/// A set event as a host delivers it (data form).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetEventData {
    /// The registration's event id.
    pub event_id: EventId,
    /// The service and set.
    pub source: EventSource,
    /// The event's sequence number.
    pub sequence: u64,
    /// The registration's handback.
    #[serde(with = "machine::bytes")]
    pub handback: Vec<u8>,
    /// What happened.
    pub kind: SetEventKindData,
}

impl From<super::SetEvent> for SetEventData {
    fn from(e: super::SetEvent) -> SetEventData {
        let kind = match e.kind {
            SetEventKind::ExpirationWarning { set, expiration } => {
                SetEventKindData::ExpirationWarning { set, expiration }
            }
            SetEventKind::RenewalFailure { set, lease, error } => {
                SetEventKindData::RenewalFailure {
                    set,
                    lease,
                    error: error.as_ref().map(Into::into),
                }
            }
        };
        SetEventData {
            event_id: e.event_id,
            source: e.source,
            sequence: e.sequence,
            handback: e.handback,
            kind,
        }
    }
}

impl Machine for RenewalService {
    const NAME: &'static str = "RenewalService";
    type Options = ServiceOptions;
    type Input = ServiceInput;
    type Output = ServiceOutput;
    type Transmit = Outgoing;
    type Event = SetEventData;

    fn create(options: ServiceOptions, seed: [u8; 32]) -> Result<Self> {
        RenewalService::new(options.config(seed)?)
    }

    fn restore(options: ServiceOptions, snapshot: &str, now: Millis) -> Result<Self> {
        let snap = ServiceSnapshot::from_json(snapshot)?;
        RenewalService::restore(options.config([0; 32])?, snap, now)
    }

    fn snapshot(&mut self, now: Millis) -> String {
        RenewalService::snapshot(self, now).to_json()
    }

    fn handle(&mut self, input: ServiceInput, now: Millis) -> Result<ServiceOutput> {
        use ServiceInput as I;
        use ServiceOutput as O;
        Ok(match input {
            I::Id => O::Id(self.id()),
            I::SetPolicy => O::Policy(self.config().set_policy.clone()),
            I::CreateSet { lease_duration } => {
                let (set, lease) = self.create_set(lease_duration, now)?;
                O::Created { set, lease }
            }
            I::Sets => O::Sets(self.sets()),
            I::SetLease { set } => O::Lease(self.set_lease(set, now)),
            I::SetOf { lease } => O::Set(self.set_of(&lease, now)),
            I::Add { set, lease, membership_duration, renew_duration } => {
                self.add(set, lease, membership_duration, renew_duration, now)?;
                O::Done
            }
            I::Remove { set, lease } => O::Lease(self.remove(set, &lease, now)?),
            I::Leases { set } => O::Leases(self.leases(set, now)?),
            I::Membership { set, lease } => O::Membership(self.membership(set, &lease, now)?),
            I::SetExpirationWarningListener { set, min_warning, handback } => O::Registration(
                self.set_expiration_warning_listener(set, min_warning, handback, now)?,
            ),
            I::SetRenewalFailureListener { set, handback } => {
                O::Registration(self.set_renewal_failure_listener(set, handback, now)?)
            }
            I::ClearExpirationWarningListener { set } => {
                self.clear_expiration_warning_listener(set, now)?;
                O::Done
            }
            I::ClearRenewalFailureListener { set } => {
                self.clear_renewal_failure_listener(set, now)?;
                O::Done
            }
            I::UnknownEvent { event_id } => O::Flag(self.unknown_event(event_id)),
            I::Delivered { event_id, sequence } => O::Flag(self.delivered(event_id, sequence, now)),
            I::Registrations { set } => O::Registrations(self.registrations(set, now)?),
            I::Stats => O::Stats(self.manager().stats()),
            I::Serve { message, encoding } => O::Bytes(self.handle_bytes(&message, encoding, now)),
            I::Reply { message, encoding } => {
                self.handle_reply(
                    &Reply::decode(&message, encoding, &crate::holder::machine::REPLY_LIMITS)?,
                    now,
                );
                O::Done
            }
            I::Failure { id, code, message } => {
                self.handle_failure(id, crate::holder::machine::failure(code, message), now);
                O::Done
            }
        })
    }

    fn leaves(input: &ServiceInput) -> bool {
        use ServiceInput as I;
        !matches!(
            input,
            I::Id
                | I::SetPolicy
                | I::Stats
                | I::Reply { .. }
                | I::Failure { .. }
                | I::Delivered { .. }
        )
    }

    fn poll_timeout(&self) -> Option<Millis> {
        RenewalService::poll_timeout(self)
    }

    fn handle_timeout(&mut self, now: Millis) {
        RenewalService::handle_timeout(self, now)
    }

    fn poll_transmit(&mut self, now: Millis) -> Option<Outgoing> {
        RenewalService::poll_transmit(self, now).map(Into::into)
    }

    fn poll_event(&mut self, _now: Millis) -> Option<SetEventData> {
        RenewalService::poll_event(self).map(Into::into)
    }
}
