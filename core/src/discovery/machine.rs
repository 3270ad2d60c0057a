//! The discovery service as a [`Machine`]: its settings ([`DiscoveryOptions`]), every call a
//! host makes as one data enum ([`DiscoveryInput`]) and what it answers ([`DiscoveryOutput`]),
//! unicast probes out ([`UnicastRequest`]) and events out with their listener ([`Delivery`]).
//! This is all a binding needs: each runtime's generic wrapper converts these forms and adds
//! only the names of the calls.

use serde::{Deserialize, Serialize};

use super::wire::{DiscoveryRequest, EventReply};
use super::{
    Announcement, DeliveryFailure, DiscoveryConfig, DiscoveryService, DiscoverySnapshot, Groups,
    Locator, Registered, Registrar, RegistrarId, RegistrationId, RemoteDiscoveryEvent,
    UnicastRequest, UnicastResponse,
};
use crate::error::{LeaseError, Result};
use crate::event::{EventId, EventRegistration, EventSource};
use crate::lease::{Cookie, LandlordId, Lease};
use crate::machine::{self, LimitsOptions, Machine, Stored};
use crate::policy::PolicySpec;
use crate::time::{Duration, Millis};
use crate::wire::{Encoding, Reply, ReplyBody, Request, RequestBody};

/// A discovery service's settings (data form); each one not given keeps the default of
/// [`DiscoveryConfig::new`]. Unknown names are refused.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(optional_fields))]
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscoveryOptions {
    /// The landlord id of registration leases and event sources.
    #[serde(with = "machine::landlord_id")]
    #[cfg_attr(feature = "ts", ts(type = "string | number | bigint"))]
    pub id: LandlordId,
    /// 32 bytes of entropy for the cookies (the host's own when not given).
    #[serde(default, with = "machine::bytes::option")]
    #[cfg_attr(feature = "ts", ts(type = "Uint8Array", optional))]
    pub seed: Option<Vec<u8>>,
    /// How registration leases are granted.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(type = "PolicySpec", optional))]
    pub lease_policy: Option<PolicySpec>,
    /// Grace after a registration lease expires.
    #[serde(default)]
    pub grace: Option<Duration>,
    /// Message and set limits.
    #[serde(default)]
    pub limits: Option<LimitsOptions>,
    /// [`DiscoveryConfig::event_retry`].
    #[serde(default)]
    pub event_retry: Option<Vec<Duration>>,
    /// [`DiscoveryConfig::delivery_timeout`].
    #[serde(default)]
    pub delivery_timeout: Option<Duration>,
    /// [`DiscoveryConfig::unicast_retry`].
    #[serde(default)]
    pub unicast_retry: Option<Vec<Duration>>,
    /// [`DiscoveryConfig::unicast_timeout`].
    #[serde(default)]
    pub unicast_timeout: Option<Duration>,
    /// [`DiscoveryConfig::max_registrars`].
    #[serde(default)]
    pub max_registrars: Option<usize>,
    /// [`DiscoveryConfig::max_announcement_ttl`].
    #[serde(default)]
    pub max_announcement_ttl: Option<Duration>,
    /// [`DiscoveryConfig::restore_jump`].
    #[serde(default)]
    pub restore_jump: Option<u64>,
}

impl DiscoveryOptions {
    /// The configuration these settings make; `seed` when they give none. Checked.
    pub fn config(self, seed: [u8; 32]) -> Result<DiscoveryConfig> {
        let mut c = DiscoveryConfig::new(self.id, machine::seed(self.seed.as_deref(), seed)?);
        if let Some(p) = self.lease_policy {
            c.lease_policy = p;
        }
        if let Some(g) = self.grace {
            c.landlord = c.landlord.with_grace(g);
        }
        if let Some(l) = self.limits {
            c.landlord.limits = l.apply(c.landlord.limits);
        }
        let set = |v: Option<Duration>, d: &mut Duration| *d = v.unwrap_or(*d);
        set(self.delivery_timeout, &mut c.delivery_timeout);
        set(self.unicast_timeout, &mut c.unicast_timeout);
        set(self.max_announcement_ttl, &mut c.max_announcement_ttl);
        c.event_retry = self.event_retry.unwrap_or(c.event_retry);
        c.unicast_retry = self.unicast_retry.unwrap_or(c.unicast_retry);
        c.max_registrars = self.max_registrars.unwrap_or(c.max_registrars);
        c.restore_jump = self.restore_jump.unwrap_or(c.restore_jump);
        c.check()?;
        c.lease_policy.build()?;
        Ok(c)
    }
}

/// Which wire protocol a message to [`DiscoveryInput::Serve`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// The lease protocol ([`crate::wire`]): renew and cancel registration leases.
    Lease,
    /// The discovery protocol ([`super::wire`]): register and a registration's methods.
    Discovery,
    /// A listener's answer to an event ([`EventReply`]); answers a flag, not a message.
    EventReply,
}

/// Every call a host makes of a discovery service besides the timer and polling (data form:
/// an object tagged by `op`, snake_case). `registration` is a registration's number.
#[derive(Debug, Clone, Deserialize)]
#[serde(remote = "Self", rename_all = "snake_case", deny_unknown_fields)]
pub enum DiscoveryInput {
    /// [`DiscoveryService::register`], then [`DiscoveryService::set_listener`] in the same step
    /// when a listener is given (a refused listener cancels the registration again).
    Register {
        /// Groups to discover (`null`: all; never missing).
        #[serde(deserialize_with = "super::wire::required_groups")]
        groups: Groups,
        /// Locators to discover.
        locators: Vec<Locator>,
        /// Returned in every event.
        #[serde(with = "machine::bytes")]
        handback: Vec<u8>,
        /// Requested lease duration.
        lease_duration: Duration,
        /// Where its events go.
        #[serde(default, with = "machine::bytes::option")]
        listener: Option<Vec<u8>>,
    },
    /// The service's id (the landlord id of its leases).
    Id,
    /// The service's time: the latest `now` it was given (`null` before the first call).
    Now,
    /// The live registrations' numbers.
    Registrations,
    /// The service's own discovered set.
    Discovered,
    /// What the service knows of a registrar.
    Registrar {
        /// Its id.
        registrar: RegistrarId,
    },
    /// The registration with this lease cookie, if live.
    RegistrationOf {
        /// The cookie.
        cookie: Cookie,
    },
    /// A registration's lease.
    Lease {
        /// The registration.
        registration: RegistrationId,
    },
    /// A registration's event registration.
    EventRegistration {
        /// The registration.
        registration: RegistrationId,
    },
    /// A registration's discovered registrars.
    Registrars {
        /// The registration.
        registration: RegistrationId,
    },
    /// A registration's groups.
    Groups {
        /// The registration.
        registration: RegistrationId,
    },
    /// A registration's locators.
    Locators {
        /// The registration.
        registration: RegistrationId,
    },
    /// [`DiscoveryService::add_groups`].
    AddGroups {
        /// The registration.
        registration: RegistrationId,
        /// Names to add.
        groups: Vec<String>,
    },
    /// [`DiscoveryService::set_groups`].
    SetGroups {
        /// The registration.
        registration: RegistrationId,
        /// The new groups (`null`: all; never missing).
        #[serde(deserialize_with = "super::wire::required_groups")]
        groups: Groups,
    },
    /// [`DiscoveryService::remove_groups`].
    RemoveGroups {
        /// The registration.
        registration: RegistrationId,
        /// Names to remove.
        groups: Vec<String>,
    },
    /// [`DiscoveryService::add_locators`].
    AddLocators {
        /// The registration.
        registration: RegistrationId,
        /// Locators to add.
        locators: Vec<Locator>,
    },
    /// [`DiscoveryService::set_locators`].
    SetLocators {
        /// The registration.
        registration: RegistrationId,
        /// The new locators.
        locators: Vec<Locator>,
    },
    /// [`DiscoveryService::remove_locators`].
    RemoveLocators {
        /// The registration.
        registration: RegistrationId,
        /// Locators to remove.
        locators: Vec<Locator>,
    },
    /// [`DiscoveryService::discard`].
    Discard {
        /// The registration.
        registration: RegistrationId,
        /// The registrar.
        registrar: RegistrarId,
    },
    /// [`DiscoveryService::set_listener`].
    SetListener {
        /// The registration.
        registration: RegistrationId,
        /// Where its events go.
        #[serde(with = "machine::bytes")]
        listener: Vec<u8>,
    },
    /// [`DiscoveryService::listener`]: `null` once the registration is gone.
    Listener {
        /// The registration.
        registration: RegistrationId,
    },
    /// Renews a registration's lease (the policy decides); answers the granted duration.
    Renew {
        /// The registration.
        registration: RegistrationId,
        /// Requested duration.
        duration: Duration,
    },
    /// Cancels a registration's lease: it ends at once, without events.
    Cancel {
        /// The registration.
        registration: RegistrationId,
    },
    /// [`DiscoveryService::handle_announcement`].
    Announcement {
        /// What was heard.
        announcement: Announcement,
    },
    /// [`DiscoveryService::handle_datagram`].
    Datagram {
        /// The datagram.
        #[serde(with = "machine::bytes")]
        datagram: Vec<u8>,
    },
    /// A unicast probe found a registrar ([`DiscoveryService::handle_unicast`]).
    UnicastFound {
        /// The probe's id.
        request: u64,
        /// What answered.
        found: UnicastResponse,
    },
    /// A unicast probe read a registrar's announcement datagram.
    UnicastDatagram {
        /// The probe's id.
        request: u64,
        /// The datagram.
        #[serde(with = "machine::bytes")]
        datagram: Vec<u8>,
    },
    /// A unicast probe failed (retried after a back-off).
    UnicastFailed {
        /// The probe's id.
        request: u64,
        /// Why.
        #[serde(default)]
        reason: String,
    },
    /// [`DiscoveryService::registrar_unreachable`].
    Unreachable {
        /// The registrar.
        registrar: RegistrarId,
    },
    /// [`DiscoveryService::delivered`].
    Delivered {
        /// The event id.
        event_id: EventId,
        /// The event's sequence number.
        sequence: u64,
    },
    /// [`DiscoveryService::delivery_failed`].
    DeliveryFailed {
        /// The event id.
        event_id: EventId,
        /// The event's sequence number.
        sequence: u64,
        /// Why.
        failure: DeliveryFailure,
    },
    /// Answers a wire message: `lease` and `discovery` requests get the encoded reply (a
    /// request that does not decode gets an error reply); an `event_reply` is reported as
    /// [`DiscoveryService::handle_event_reply`] does and answers a flag (one that does not
    /// decode is an error). A registration made by a discovery request gets `listener`.
    Serve {
        /// Which protocol.
        protocol: Protocol,
        /// The message.
        #[serde(with = "machine::bytes")]
        message: Vec<u8>,
        /// Its encoding (the reply's too).
        encoding: Encoding,
        /// Where the events of a registration it makes go.
        #[serde(default, with = "machine::bytes::option")]
        listener: Option<Vec<u8>>,
    },
}
crate::machine::op_first::op_first!(DiscoveryInput);

/// What a [`DiscoveryInput`] answers (data form: the value itself, untagged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum DiscoveryOutput {
    /// Nothing (`null`).
    Done,
    /// A yes or no (whether a report was awaited, a registrar known).
    Flag(bool),
    /// A new registration.
    Registered(Registered),
    /// Registration numbers.
    Registrations(Vec<RegistrationId>),
    /// Registrars.
    Registrars(Vec<Registrar>),
    /// A registrar, if known.
    Registrar(Option<Registrar>),
    /// A registration, if live.
    Registration(Option<RegistrationId>),
    /// A lease.
    Lease(Lease),
    /// An event registration.
    EventRegistration(EventRegistration),
    /// Groups (`null`: all).
    Groups(Groups),
    /// Locators.
    Locators(Vec<Locator>),
    /// A listener, `null` once the registration is gone.
    Listener(#[serde(with = "machine::bytes::option")] Option<Vec<u8>>),
    /// A granted duration.
    Duration(Duration),
    /// An id.
    Id(LandlordId),
    /// A time, if any.
    Time(Option<Millis>),
    /// An encoded message.
    Bytes(#[serde(with = "machine::bytes")] Vec<u8>),
}

/// An event to deliver (data form): the event and the listener of its registration.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Delivery {
    /// The registration's event id.
    pub event_id: EventId,
    /// Who sent it: the service and the registration's number.
    pub source: EventSource,
    /// Its sequence number.
    pub sequence: u64,
    /// The registration's handback, exactly as registered.
    #[serde(with = "machine::bytes")]
    #[cfg_attr(feature = "ts", ts(type = "Uint8Array"))]
    pub handback: Vec<u8>,
    /// A discarded event (else a discovered one).
    pub discarded: bool,
    /// The registrars discovered or discarded, in id order.
    pub registrars: Vec<Registrar>,
    /// Where the host delivers it (empty when none was set).
    #[serde(with = "machine::bytes")]
    #[cfg_attr(feature = "ts", ts(type = "Uint8Array"))]
    pub listener: Vec<u8>,
}

impl Delivery {
    /// `e` with its listener.
    pub fn new(e: RemoteDiscoveryEvent, listener: Vec<u8>) -> Delivery {
        Delivery {
            event_id: e.event_id,
            source: e.source,
            sequence: e.sequence,
            handback: e.handback,
            discarded: e.kind.discarded,
            registrars: e.kind.registrars,
            listener,
        }
    }
}

fn lease_request(
    s: &mut DiscoveryService,
    id: RegistrationId,
    now: Millis,
    body: impl FnOnce(Cookie) -> RequestBody,
) -> Result<ReplyBody> {
    let cookie = s.lease(id, now)?.cookie();
    let reply: Reply = s.handle_request(&Request { id: 0, body: body(cookie) }, now);
    match reply.body {
        ReplyBody::Error(e) => Err(e.to_error()),
        other => Ok(other),
    }
}

/// Sets a new registration's listener in the same step; a refused one cancels it again.
fn listen(s: &mut DiscoveryService, r: &Registered, listener: Vec<u8>, now: Millis) -> Result<()> {
    s.set_listener(r.id, listener, now).inspect_err(|_| {
        let cancel = Request { id: 0, body: RequestBody::Cancel { cookie: r.lease.cookie() } };
        s.handle_request(&cancel, now);
    })
}

fn serve(
    s: &mut DiscoveryService,
    protocol: Protocol,
    message: &[u8],
    enc: Encoding,
    listener: Option<Vec<u8>>,
    now: Millis,
) -> Result<DiscoveryOutput> {
    use super::wire::DiscoveryReplyBody as B;
    let limits = s.config().landlord.limits;
    Ok(match protocol {
        Protocol::Lease => DiscoveryOutput::Bytes(s.handle_bytes(message, enc, now)),
        Protocol::EventReply => {
            let reply = EventReply::decode(message, enc, &limits)?;
            DiscoveryOutput::Flag(s.handle_event_reply(&reply, now))
        }
        Protocol::Discovery => DiscoveryOutput::Bytes(
            match (DiscoveryRequest::decode(message, enc, &limits), listener) {
                (Ok(req), Some(l)) => {
                    let mut reply = s.handle_discovery(&req, now);
                    if let B::Registered { registration, cookie, .. } = &reply.body {
                        let id = RegistrationId(*registration);
                        if let Err(e) = s.set_listener(id, l, now) {
                            let cancel =
                                Request { id: 0, body: RequestBody::Cancel { cookie: *cookie } };
                            s.handle_request(&cancel, now);
                            reply.body = B::Error((&e).into());
                        }
                    }
                    reply.encode(enc)
                }
                _ => s.handle_discovery_bytes(message, enc, now),
            },
        ),
    })
}

impl Machine for DiscoveryService {
    const NAME: &'static str = "DiscoveryService";
    type Options = DiscoveryOptions;
    type Input = DiscoveryInput;
    type Output = DiscoveryOutput;
    type Transmit = UnicastRequest;
    type Event = Delivery;

    fn create(options: DiscoveryOptions, seed: [u8; 32]) -> Result<Self> {
        DiscoveryService::new(options.config(seed)?)
    }

    fn restore(options: DiscoveryOptions, snapshot: &str, now: Millis) -> Result<Self> {
        let snap = DiscoverySnapshot::from_json(snapshot)?;
        DiscoveryService::restore(options.config([0; 32])?, snap, now)
    }

    fn snapshot(&mut self, now: Millis) -> String {
        self.handle_timeout(now);
        DiscoveryService::snapshot(self).to_json()
    }

    fn handle(&mut self, input: DiscoveryInput, now: Millis) -> Result<DiscoveryOutput> {
        use DiscoveryInput as I;
        use DiscoveryOutput as O;
        Ok(match input {
            I::Register { groups, locators, handback, lease_duration, listener } => {
                let r = self.register(groups, locators, handback, lease_duration, now)?;
                if let Some(l) = listener {
                    listen(self, &r, l, now)?;
                }
                O::Registered(r)
            }
            I::Id => O::Id(self.id()),
            I::Now => O::Time(Some(self.now()).filter(|&t| t != Millis::MIN)),
            I::Registrations => O::Registrations(self.registrations()),
            I::Discovered => O::Registrars(self.discovered()),
            I::Registrar { registrar } => O::Registrar(self.registrar(registrar)),
            I::RegistrationOf { cookie } => O::Registration(self.registration_of(cookie, now)),
            I::Lease { registration } => O::Lease(self.lease(registration, now)?),
            I::EventRegistration { registration } => {
                O::EventRegistration(self.event_registration(registration, now)?)
            }
            I::Registrars { registration } => O::Registrars(self.registrars(registration, now)?),
            I::Groups { registration } => O::Groups(self.groups(registration, now)?),
            I::Locators { registration } => O::Locators(self.locators(registration, now)?),
            I::AddGroups { registration, groups } => {
                done(self.add_groups(registration, groups, now))?
            }
            I::SetGroups { registration, groups } => {
                done(self.set_groups(registration, groups, now))?
            }
            I::RemoveGroups { registration, groups } => {
                done(self.remove_groups(registration, groups, now))?
            }
            I::AddLocators { registration, locators } => {
                done(self.add_locators(registration, locators, now))?
            }
            I::SetLocators { registration, locators } => {
                done(self.set_locators(registration, locators, now))?
            }
            I::RemoveLocators { registration, locators } => {
                done(self.remove_locators(registration, locators, now))?
            }
            I::Discard { registration, registrar } => {
                done(self.discard(registration, registrar, now))?
            }
            I::SetListener { registration, listener } => {
                done(self.set_listener(registration, listener, now))?
            }
            I::Listener { registration } => {
                O::Listener(self.listener(registration).map(<[u8]>::to_vec))
            }
            I::Renew { registration, duration } => {
                match lease_request(self, registration, now, |cookie| RequestBody::Renew {
                    cookie,
                    duration,
                })? {
                    ReplyBody::Renewed { duration } => O::Duration(duration),
                    other => return Err(LeaseError::Decode(format!("renew answered {other:?}"))),
                }
            }
            I::Cancel { registration } => {
                lease_request(self, registration, now, |cookie| RequestBody::Cancel { cookie })?;
                O::Done
            }
            I::Announcement { announcement } => done(self.handle_announcement(&announcement, now))?,
            I::Datagram { datagram } => done(self.handle_datagram(&datagram, now))?,
            I::UnicastFound { request, found } => {
                O::Flag(self.handle_unicast(request, Ok(found), now))
            }
            I::UnicastDatagram { request, datagram } => {
                let found = Announcement::decode(&datagram).map(|a| UnicastResponse::from(&a));
                O::Flag(self.handle_unicast(request, found, now))
            }
            I::UnicastFailed { request, reason } => {
                O::Flag(self.handle_unicast(request, Err(LeaseError::Indefinite(reason)), now))
            }
            I::Unreachable { registrar } => O::Flag(self.registrar_unreachable(registrar, now)),
            I::Delivered { event_id, sequence } => O::Flag(self.delivered(event_id, sequence, now)),
            I::DeliveryFailed { event_id, sequence, failure } => {
                O::Flag(self.delivery_failed(event_id, sequence, failure, now))
            }
            I::Serve { protocol, message, encoding, listener } => {
                serve(self, protocol, &message, encoding, listener, now)?
            }
        })
    }

    fn leaves(input: &DiscoveryInput) -> bool {
        use DiscoveryInput as I;
        !matches!(
            input,
            I::Id
                | I::Now
                | I::Announcement { .. }
                | I::Datagram { .. }
                | I::UnicastFound { .. }
                | I::UnicastDatagram { .. }
                | I::UnicastFailed { .. }
                | I::Unreachable { .. }
                | I::Delivered { .. }
                | I::DeliveryFailed { .. }
        )
    }

    fn poll_timeout(&self) -> Option<Millis> {
        DiscoveryService::poll_timeout(self)
    }

    fn handle_timeout(&mut self, now: Millis) {
        DiscoveryService::handle_timeout(self, now)
    }

    fn poll_transmit(&mut self, now: Millis) -> Option<UnicastRequest> {
        DiscoveryService::poll_transmit(self, now)
    }

    fn poll_event(&mut self, now: Millis) -> Option<Delivery> {
        let e = DiscoveryService::poll_event(self, now)?;
        let listener = self.listener(RegistrationId(e.source.object)).unwrap_or_default().to_vec();
        Some(Delivery::new(e, listener))
    }
}

fn done(r: Result<()>) -> Result<DiscoveryOutput> {
    r.map(|()| DiscoveryOutput::Done)
}

impl Stored for DiscoveryService {
    fn from_store(
        snapshot: Option<&[u8]>,
        options: DiscoveryOptions,
        seed: [u8; 32],
    ) -> Result<Self> {
        match snapshot {
            Some(bytes) => DiscoveryService::from_snapshot_bytes(bytes),
            None => {
                let mut s = DiscoveryService::new(options.config(seed)?)?;
                s.enable_journal();
                Ok(s)
            }
        }
    }

    fn reconfigure(&mut self, options: DiscoveryOptions) -> Result<()> {
        DiscoveryService::reconfigure(self, options.config([0; 32])?)
    }

    const HOLDS: &'static str = "registrations";

    fn held(&self) -> usize {
        self.registrations().len()
    }
}
