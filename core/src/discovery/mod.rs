//! The lookup discovery service (seed 003, LD; Jini's `LookupDiscoveryService`, River's Fiddler).
//!
//! A client that cannot (or would rather not) run the discovery protocols itself asks a
//! [`DiscoveryService`] to do it on its behalf: [`DiscoveryService::register`] takes the groups
//! and the locators of the lookup services (*registrars*) the client wants, a handback, and a
//! lease duration, and gives a registration with its lease and its event registration. From
//! then on the service sends the registration's listener a *discovered* event for each wanted
//! registrar it finds and a *discarded* event for each one it drops, until the registration's
//! lease ends.
//!
//! # Registrations
//!
//! Each registration is leased by the service's own [`Landlord`] under a configurable policy
//! (by default at most 30 minutes, River's Fiddler bound). The client renews or cancels the
//! lease like any other, with the landlord wire protocol ([`DiscoveryService::handle_request`]).
//! A registration manages three sets (LD.2): its groups ([`Groups`]: all, none, or names), its
//! locators, and the registrars discovered for it. Every method of a registration whose lease
//! expired or was cancelled answers [`LeaseError::UnknownLease`] (Jini's
//! `NoSuchObjectException`: the registration, and its lease, no longer exist).
//!
//! A registration *wants* a registrar when the registrar is a member of one of its groups (all
//! groups match every registrar) or when one of its locators is a locator the registrar was
//! found at. The rules of LD.3 and LD.4, as this service applies them:
//!
//! - **One discovered event per registrar** until it is discarded: a registrar enters a
//!   registration's managed set with a discovered event, and leaves it with a discarded event
//!   (except when the registration itself ends).
//! - **The service's own set.** The service keeps the registrars it has discovered
//!   (announcements heard, unicast discovery answered). Whenever a registrar in it is wanted by
//!   a registration that does not hold it (new registration, new groups or locators, a
//!   registrar that joined a group), that registration discovers it at once.
//! - **Group and locator changes** (LD.4.1.1): a registration discards each registrar it holds
//!   that it no longer wants (neither by group nor by locator); it discovers each registrar of
//!   the service's set it now wants. A registrar it already holds gets no new event.
//! - **Passive no-interest discard**: when announcements show a registrar's groups changed,
//!   each registration that held it and no longer wants it discards it.
//! - **Passive communication discard**: when a registrar's announcements stop (its last
//!   announcement's `ttl` passes in silence) or the host reports it unreachable, the
//!   registrations that hold it *and want it by group* discard it, and the service drops it
//!   from its own set, so that it is discovered again when it comes back. A registration that
//!   wants it only by locator keeps it and gets no event. If no holder wants it by group, the
//!   service does not discard it at all (LD.4.1.1, "Discarding Lookup Services").
//! - **Active discard** ([`DiscoveryService::discard`]): the registration drops the registrar
//!   with a discarded event, and the service drops it from its own set, making it eligible for
//!   rediscovery; the next announcement or unicast answer discovers it again for every
//!   registration that wants it but does not hold it, which are those that discarded it (and
//!   registrations made since). Other registrations keep it and hear nothing.
//! - **Unicast discovery**: for every locator some registration wants that no registrar of the
//!   service's set was found at, the service asks the host to contact it
//!   ([`DiscoveryService::poll_transmit`]), and again after each failure (with back-off), until
//!   it is found, or no registration wants it any more.
//!
//! The changes one call causes reach each registration as at most one discarded event and then
//! at most one discovered event, each listing its registrars in id order (LD.4.2.1 allows this
//! batching).
//!
//! # Events
//!
//! Each registration has an event registration ([`crate::event`]) with an event id unique among
//! live registrations, sequence numbers strictly increasing, and its handback returned byte for
//! byte. Events of one registration are delivered in order, one at a time:
//! [`DiscoveryService::poll_event`] hands out the next one, and the host reports the outcome
//! ([`DiscoveryService::delivered`], [`DiscoveryService::delivery_failed`]). An indefinite
//! failure (or no report within [`DiscoveryConfig::delivery_timeout`]) sends the same event
//! again after a back-off, until it is delivered or the registration's lease ends; an
//! unknown-event, bad-object or bad-invocation answer cancels the registration (LD.3.1).
//!
//! # Driving it
//!
//! A sans-I/O state machine like every active part of leasehold. The host feeds in what it
//! hears (announcements: [`DiscoveryService::handle_announcement`] or
//! [`DiscoveryService::handle_datagram`]; unicast answers: [`DiscoveryService::handle_unicast`];
//! registrars it found unreachable: [`DiscoveryService::registrar_unreachable`]), carries out
//! [`DiscoveryService::poll_transmit`] and [`DiscoveryService::poll_event`], and calls
//! [`DiscoveryService::handle_timeout`] when [`DiscoveryService::poll_timeout`] says.
//!
//! Time: every call that takes `now` first brings the service to `now` (registrations whose
//! lease ended are removed, silent registrars dropped, overdue transmissions and deliveries
//! counted as failed), so the outcome depends only on the calls and their times, never on how
//! often the host polls. The service's time never runs backwards: a `now` earlier than one seen
//! before counts as the latest seen ([`DiscoveryService::now`]). Everything is kept in ordered
//! maps: the same calls give the same outputs, byte for byte.
//!
//! # Durability
//!
//! Registrations survive restarts and crashes. [`DiscoveryService::enable_journal`] starts a
//! journal (a service rebuilt from [`DiscoveryService::from_snapshot_bytes`] has one): every
//! call that changes the service writes a record, and the host moves them to its store with
//! [`DiscoveryService::take_journal`] and [`DiscoveryService::snapshot_bytes`] (the service is
//! [`crate::journal::Journaled`], so [`crate::store::Store`] and `leasehold-store` keep it in a
//! directory). The journal is a command log replayed through the same code, so snapshot plus
//! journal is exactly the service that wrote them: the same registrations, cookies, managed
//! sets, registrars, sequence numbers, events queued and in flight, retries and time-outs (the
//! record formats are in the docs of this module's source, `durable.rs`). After
//! [`DiscoveryService::recover`] the service [`resumes`](DiscoveryService::resume) where its
//! time was: time spent down does not count.
//!
//! **Nothing leaves before it is durable.** A reply to a client, and an event handed out by
//! [`DiscoveryService::poll_event`], depend on the records written up to
//! [`DiscoveryService::journal_seq`] read right after the call: hold them in a
//! [`crate::journal::Gate`] (or `leasehold_store::Shared::wait_durable`) until the store has
//! synced that record. An event whose delivery was not yet journaled as done when the process
//! died is delivered again after recovery, with the same sequence number (listeners drop an
//! event whose number they have seen).
//!
//! The listener a registration's events go to is the host's business (a URL, a channel);
//! [`DiscoveryService::set_listener`] keeps it, as opaque bytes, durably with the
//! registration.
//!
//! ```
//! use leasehold::discovery::{
//!     Announcement, DiscoveryConfig, DiscoveryService, Groups, Locator, RegistrarId,
//!     UnicastResponse,
//! };
//! use leasehold::{LandlordId, ANY};
//!
//! let mut svc = DiscoveryService::new(DiscoveryConfig::new(LandlordId(7), [3; 32])).unwrap();
//! // A client wants the registrars of group "printers", and the one at lookup.example:4160.
//! let locator: Locator = "lookup.example:4160".parse().unwrap();
//! let reg = svc
//!     .register(Groups::of(["printers"]), [locator.clone()], b"mine".to_vec(), ANY, 0)
//!     .unwrap();
//! assert_eq!(reg.lease.expiration(), 30 * 60 * 1000); // ANY gets the policy's 30 minutes
//!
//! // The host must try unicast discovery of the locator...
//! let probe = svc.poll_transmit(0).unwrap();
//! assert_eq!(probe.locator, locator);
//! // ...and meanwhile hears an announcement from a printer registrar.
//! let printers = Announcement {
//!     registrar: RegistrarId(1),
//!     groups: ["printers".to_string()].into(),
//!     locator: "10.0.0.5:4160".parse().unwrap(),
//!     sequence: 1,
//!     ttl: 30_000,
//! };
//! svc.handle_announcement(&printers, 100).unwrap();
//! let e = svc.poll_event(100).unwrap();
//! assert!(!e.is_discarded());
//! assert_eq!(e.registrars()[0].id, RegistrarId(1));
//! assert_eq!((e.event_id, e.sequence, &e.handback[..]), (reg.event.event_id, 1, &b"mine"[..]));
//! svc.delivered(e.event_id, e.sequence, 100); // the host delivered it to the listener
//!
//! // The probe finds registrar 2 (of group "lab") at the locator: wanted by locator.
//! let found = UnicastResponse { registrar: RegistrarId(2), groups: ["lab".to_string()].into() };
//! assert!(svc.handle_unicast(probe.id, Ok(found), 200));
//! let e = svc.poll_event(200).unwrap();
//! assert_eq!((e.is_discarded(), e.registrars()[0].id, e.sequence), (false, RegistrarId(2), 2));
//! svc.delivered(e.event_id, e.sequence, 200);
//!
//! // Registrar 1 falls silent: 30 s after its announcement it is discarded. Registrar 2 is
//! // wanted by locator only, so the service keeps it.
//! svc.handle_timeout(30_100);
//! let e = svc.poll_event(30_100).unwrap();
//! assert_eq!((e.is_discarded(), e.registrars()[0].id, e.sequence), (true, RegistrarId(1), 3));
//! let held: Vec<RegistrarId> = svc.registrars(reg.id, 30_100).unwrap().iter().map(|r| r.id).collect();
//! assert_eq!(held, [RegistrarId(2)]);
//! ```

mod durable;
mod handle;
mod machine;
mod snapshot;
mod types;
pub mod wire;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::error::{LeaseError, Result};
use crate::event::{EventId, EventRegistration, EventSource, EventTable};
use crate::landlord::{Landlord, LandlordConfig};
use crate::lease::{Cookie, LandlordId, Lease};
use crate::policy::PolicySpec;
use crate::time::{self, Duration, Millis, ANY, FOREVER};
use crate::wire::{Encoding, Outcome, Reply, ReplyBody, Request, RequestBody, WireError};

pub use durable::BINARY_SNAPSHOT_VERSION;
pub use handle::Registration;
pub use machine::{Delivery, DiscoveryInput, DiscoveryOptions, DiscoveryOutput, Protocol};
pub use snapshot::{DiscoverySnapshot, SNAPSHOT_VERSION};
pub use types::{
    check_group, Announcement, DeliveryFailure, DiscoveryChange, Groups, Locator, Registrar,
    RegistrarId, RegistrationId, RemoteDiscoveryEvent, UnicastRequest, UnicastResponse,
    MAX_NAME_BYTES,
};

/// Thirty minutes: the longest registration lease the default policy grants, and what it grants
/// for ANY (River's Fiddler bound).
pub const DEFAULT_MAX_REGISTRATION_LEASE: Duration = 30 * 60 * 1000;

/// How a discovery service is set up.
#[derive(Debug, Clone)]
pub struct DiscoveryConfig {
    /// The internal landlord that grants registration leases: its id (the `landlord` of every
    /// registration lease and the `service` of every event source), cookie seed, grace and
    /// limits (which also bound every discovery message and every registration's sets).
    pub landlord: LandlordConfig,
    /// How long registration leases are granted. Default: bounded, at most 30 minutes, 30
    /// minutes for ANY.
    pub lease_policy: PolicySpec,
    /// Waits before sending an event again after its n-th indefinite failure (the last one
    /// repeats). Default: 1 s, 5 s, 10 s, 1 min, 1 min, then every 5 min (Norm's schedule).
    pub event_retry: Vec<Duration>,
    /// An event handed out and not reported within this time counts as an indefinite failure.
    /// [`FOREVER`] waits for the report for ever. Default: 1 minute.
    pub delivery_timeout: Duration,
    /// Waits before contacting a locator again after its n-th failed unicast discovery (the
    /// last one repeats). Default: 1 s doubling up to 1 min.
    pub unicast_retry: Vec<Duration>,
    /// A unicast discovery handed out and not answered within this time counts as failed.
    /// [`FOREVER`] waits for the answer for ever. Default: 30 s.
    pub unicast_timeout: Duration,
    /// Most registrars the service keeps; announcements of further ones are refused until some
    /// are dropped. Default: 10 000.
    pub max_registrars: usize,
    /// Longest `ttl` an announcement is taken at (a longer one is shortened to it). Default:
    /// 30 minutes.
    pub max_announcement_ttl: Duration,
    /// How far event sequence numbers jump on restore ([`crate::event::DEFAULT_RESTORE_JUMP`] by
    /// default, for a snapshot that may be older than the last events sent). Zero makes a
    /// restore exact: use it when the snapshot is the latest state.
    pub restore_jump: u64,
}

impl DiscoveryConfig {
    /// Defaults for a service whose registration leases carry landlord id `id`; `seed` must be
    /// real entropy (it makes the registration cookies unguessable).
    pub fn new(id: LandlordId, seed: [u8; 32]) -> DiscoveryConfig {
        const SEC: Duration = 1000;
        DiscoveryConfig {
            landlord: LandlordConfig::new(id, seed),
            lease_policy: PolicySpec::Bounded {
                max: DEFAULT_MAX_REGISTRATION_LEASE,
                default: DEFAULT_MAX_REGISTRATION_LEASE,
            },
            event_retry: vec![SEC, 5 * SEC, 10 * SEC, 60 * SEC, 60 * SEC, 300 * SEC],
            delivery_timeout: 60 * SEC,
            unicast_retry: vec![SEC, 2 * SEC, 4 * SEC, 8 * SEC, 16 * SEC, 32 * SEC, 60 * SEC],
            unicast_timeout: 30 * SEC,
            max_registrars: 10_000,
            max_announcement_ttl: 30 * 60 * SEC,
            restore_jump: crate::event::DEFAULT_RESTORE_JUMP,
        }
    }

    fn check(&self) -> Result<()> {
        for (what, schedule) in
            [("event_retry", &self.event_retry), ("unicast_retry", &self.unicast_retry)]
        {
            if schedule.is_empty() || schedule.iter().any(|&d| d <= 0) {
                return Err(LeaseError::InvalidArgument(format!(
                    "{what} must be a non-empty list of positive durations, got {schedule:?}"
                )));
            }
        }
        for (what, d) in [
            ("delivery_timeout", self.delivery_timeout),
            ("unicast_timeout", self.unicast_timeout),
            ("max_announcement_ttl", self.max_announcement_ttl),
        ] {
            if d <= 0 {
                return Err(LeaseError::InvalidArgument(format!(
                    "{what} must be positive or FOREVER, got {}",
                    time::describe(d)
                )));
            }
        }
        if self.max_registrars == 0 {
            return Err(LeaseError::InvalidArgument("max_registrars must be at least 1".into()));
        }
        Ok(())
    }
}

/// What [`DiscoveryService::register`] gives: the registration, its lease and its event
/// registration (Jini's `LookupDiscoveryRegistration` with `getLease` and
/// `getEventRegistration`).
///
/// Data form (serde): `{id, lease, event}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Registered {
    /// The registration's number inside the service.
    pub id: RegistrationId,
    /// Its lease (landlord: the service's id; expiration on the service's clock).
    pub lease: Lease,
    /// Its event registration: event id, source, the same lease, and the sequence number the
    /// first event follows.
    pub event: EventRegistration,
}

/// How a registration's head event stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outbox {
    /// No event waiting.
    Idle,
    /// The head event may be handed out from `at` on; `failures` indefinite failures so far.
    Due { at: Millis, failures: u32 },
    /// The head event was handed out; counts as failed at `deadline` ([`FOREVER`]: never).
    InFlight { deadline: Millis, failures: u32 },
}

#[derive(Debug, Clone)]
struct Reg {
    cookie: Cookie,
    /// When the lease ends (the first time it is no longer honoured), if it ever does.
    ends_at: Option<Millis>,
    event_id: EventId,
    groups: Groups,
    locators: BTreeSet<Locator>,
    held: BTreeSet<RegistrarId>,
    queue: VecDeque<RemoteDiscoveryEvent>,
    outbox: Outbox,
    /// Where the host delivers the registration's events (opaque to the service).
    listener: Vec<u8>,
}

#[derive(Debug, Clone, Default)]
struct Known {
    groups: BTreeSet<String>,
    locators: BTreeSet<Locator>,
    /// In the service's own set of discovered registrars.
    present: bool,
    /// When it counts as silent (its last announcement plus ttl), if announcements are expected.
    silent_at: Option<Millis>,
    /// The sequence number of the last announcement accepted.
    last_sequence: Option<u64>,
    /// Registrations whose managed set holds it.
    holders: BTreeSet<RegistrationId>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    Due(Millis),
    InFlight { request: u64, deadline: Millis },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Unicast {
    failures: u32,
    state: Probe,
}

/// The changes one call makes to one registration, sent as events when the call ends.
#[derive(Debug, Default)]
struct Batch {
    discarded: BTreeMap<RegistrarId, Registrar>,
    discovered: BTreeMap<RegistrarId, Registrar>,
}

/// The lookup discovery service: leased registrations, their managed sets, the registrars it
/// has discovered, unicast discovery to do, and events to deliver.
pub struct DiscoveryService {
    config: DiscoveryConfig,
    landlord: Landlord<RegistrationId>,
    now: Millis,
    next_registration: u64,
    next_request: u64,
    regs: BTreeMap<RegistrationId, Reg>,
    known: BTreeMap<RegistrarId, Known>,
    by_locator: BTreeMap<Locator, RegistrarId>,
    /// Registrations wanting each locator.
    wanted: BTreeMap<Locator, BTreeSet<RegistrationId>>,
    unicast: BTreeMap<Locator, Unicast>,
    unicast_due: BTreeSet<(Millis, Locator)>,
    unicast_inflight: BTreeMap<u64, Locator>,
    unicast_deadlines: BTreeSet<(Millis, u64)>,
    silence_due: BTreeSet<(Millis, RegistrarId)>,
    /// Registration leases by end, so that `poll_timeout` is exact (the landlord's own is a
    /// lower bound that depends on its table's layout).
    lease_due: BTreeSet<(Millis, RegistrationId)>,
    event_due: BTreeSet<(Millis, RegistrationId)>,
    event_deadlines: BTreeSet<(Millis, RegistrationId)>,
    events: EventTable,
    batch: BTreeMap<RegistrationId, Batch>,
    /// Added to the host's `now` to give the service's time (non-zero after a resume).
    offset: Millis,
    journal: Option<Box<durable::Journal>>,
}

/// How a registration lease's duration is decided.
#[derive(Debug, Clone, Copy)]
enum Ask {
    /// By the policy, for this requested duration.
    Policy(Duration),
    /// Exactly this (replaying the journal: the policy decided it then).
    Exact(Duration),
}

fn backoff(schedule: &[Duration], failures: u32) -> Duration {
    let i = (failures.max(1) as usize - 1).min(schedule.len() - 1);
    schedule[i]
}

impl DiscoveryService {
    /// A service with no registrations and no registrars. A bad setting is an
    /// [`LeaseError::InvalidArgument`].
    pub fn new(config: DiscoveryConfig) -> Result<DiscoveryService> {
        config.check()?;
        let policy = config.lease_policy.build()?;
        let landlord = Landlord::new(config.landlord.clone(), policy);
        Ok(DiscoveryService {
            config,
            landlord,
            now: Millis::MIN,
            next_registration: 1,
            next_request: 1,
            regs: BTreeMap::new(),
            known: BTreeMap::new(),
            by_locator: BTreeMap::new(),
            wanted: BTreeMap::new(),
            unicast: BTreeMap::new(),
            unicast_due: BTreeSet::new(),
            unicast_inflight: BTreeMap::new(),
            unicast_deadlines: BTreeSet::new(),
            silence_due: BTreeSet::new(),
            lease_due: BTreeSet::new(),
            event_due: BTreeSet::new(),
            event_deadlines: BTreeSet::new(),
            events: EventTable::new(),
            batch: BTreeMap::new(),
            offset: 0,
            journal: None,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &DiscoveryConfig {
        &self.config
    }

    /// The id of the service's landlord: every registration lease and event source carries it.
    pub fn id(&self) -> LandlordId {
        self.landlord.id()
    }

    /// The service's time on the host's clock: the latest `now` it was given (`i64::MIN` before
    /// the first call). After a [`DiscoveryService::resume`], the host's `now` that continues
    /// from where the service's time was.
    pub fn now(&self) -> Millis {
        self.to_host(self.now)
    }

    /// A time of the service's, on the host's clock.
    fn to_host(&self, t: Millis) -> Millis {
        if t == FOREVER || t == Millis::MIN {
            t
        } else {
            t.saturating_sub(self.offset).min(FOREVER - 1)
        }
    }

    /// A lease as the service holds it, with its expiration on the host's clock.
    fn host_lease(&self, lease: Lease) -> Lease {
        Lease::new(lease.landlord(), lease.cookie(), self.to_host(lease.expiration()))
    }

    /// The live registrations, in id order (as of the last call).
    pub fn registrations(&self) -> Vec<RegistrationId> {
        self.regs.keys().copied().collect()
    }

    /// The registrars in the service's own discovered set, in id order.
    pub fn discovered(&self) -> Vec<Registrar> {
        self.known.iter().filter(|(_, k)| k.present).map(|(id, k)| info(*id, k)).collect()
    }

    /// What the service knows of a registrar (in its discovered set, or still held by some
    /// registration), if anything.
    pub fn registrar(&self, id: RegistrarId) -> Option<Registrar> {
        self.known.get(&id).map(|k| info(id, k))
    }

    /// The registration whose lease has `cookie`, if it is live at `now`.
    pub fn registration_of(&mut self, cookie: Cookie, now: Millis) -> Option<RegistrationId> {
        self.tick(now);
        self.landlord.get(cookie, self.now).map(|(_, id)| *id)
    }

    /// A handle on one registration, with the methods of Jini's `LookupDiscoveryRegistration`.
    pub fn registration(&mut self, id: RegistrationId) -> Registration<'_> {
        Registration::new(self, id)
    }

    // ---- registering ----

    /// Registers a client (Jini's `register`): the groups and locators it wants discovered, the
    /// handback its events carry, and the lease duration it asks for (positive, [`FOREVER`] or
    /// [`ANY`]; anything else is an [`LeaseError::InvalidArgument`], LD.3.3). The policy may
    /// grant less, or deny ([`LeaseError::LeaseDenied`]).
    ///
    /// Registrars the service has already discovered that the registration wants are discovered
    /// for it at once (one event, sequence number one past [`Registered::event`]'s). Group names
    /// and locators are each at most the landlord's `limits.max_batch`, the handback at most
    /// `limits.max_resource_bytes`.
    pub fn register(
        &mut self,
        groups: Groups,
        locators: impl IntoIterator<Item = Locator>,
        handback: Vec<u8>,
        lease_duration: Duration,
        now: Millis,
    ) -> Result<Registered> {
        if lease_duration <= 0 && lease_duration != ANY {
            return Err(LeaseError::InvalidArgument(format!(
                "a registration lease duration must be positive, FOREVER or ANY, got {}",
                time::describe(lease_duration)
            )));
        }
        let limits = self.config.landlord.limits;
        groups.check(limits.max_batch)?;
        let locators: BTreeSet<Locator> = locators.into_iter().collect();
        self.check_locator_count(locators.len())?;
        if handback.len() > limits.max_resource_bytes {
            return Err(LeaseError::InvalidArgument(format!(
                "handback is {} bytes, more than the {} allowed",
                handback.len(),
                limits.max_resource_bytes
            )));
        }
        self.tick(now);
        self.register_now(groups, locators, handback, Ask::Policy(lease_duration))
    }

    /// [`DiscoveryService::register`] at the service's time, arguments checked: the lease as
    /// the policy decides, or (replaying the journal) as it was decided.
    fn register_now(
        &mut self,
        groups: Groups,
        locators: BTreeSet<Locator>,
        handback: Vec<u8>,
        ask: Ask,
    ) -> Result<Registered> {
        let now = self.now;
        let number = self.next_registration.max(1);
        let next = number.checked_add(1).ok_or_else(|| {
            LeaseError::LeaseDenied(
                "every registration number of this service has been used".into(),
            )
        })?;
        let id = RegistrationId(number);
        let grant = match ask {
            Ask::Policy(d) => self.landlord.grant(id, d, now)?,
            Ask::Exact(d) => self.landlord.grant_exact(id, d, now)?,
        };
        if let Some(j) = self.journal.as_deref_mut() {
            j.register(grant.duration, grant.cookie, &groups, &locators, &handback);
        }
        self.next_registration = next;
        let source = self.source(id);
        let event_id = self.events.register(source, handback);
        let lease = Lease::new(self.landlord.id(), grant.cookie, self.to_host(grant.expiration));
        let event = self.events.registration(event_id, lease).expect("just registered");
        self.regs.insert(
            id,
            Reg {
                cookie: grant.cookie,
                ends_at: None,
                event_id,
                groups,
                locators: locators.clone(),
                held: BTreeSet::new(),
                queue: VecDeque::new(),
                outbox: Outbox::Idle,
                listener: Vec::new(),
            },
        );
        self.schedule_lease(id);
        for l in locators {
            self.wanted.entry(l.clone()).or_default().insert(id);
            self.sync_unicast(&l);
        }
        self.reconcile_registration(id);
        self.flush();
        Ok(Registered { id, lease, event })
    }

    fn check_locator_count(&self, n: usize) -> Result<()> {
        let max = self.config.landlord.limits.max_batch;
        if n > max {
            return Err(LeaseError::InvalidArgument(format!(
                "{n} locators, more than the {max} allowed"
            )));
        }
        Ok(())
    }

    /// The live registration `id` at the service's time, or [`LeaseError::UnknownLease`].
    fn live(&self, id: RegistrationId) -> Result<&Reg> {
        match self.regs.get(&id) {
            Some(r) if self.landlord.get(r.cookie, self.now).is_some() => Ok(r),
            _ => Err(LeaseError::UnknownLease),
        }
    }

    // ---- a registration's methods ----

    /// The registration's lease as the service sees it (`getLease`).
    pub fn lease(&mut self, id: RegistrationId, now: Millis) -> Result<Lease> {
        self.tick(now);
        let cookie = self.live(id)?.cookie;
        let lease = self.landlord.lease(cookie, self.now).ok_or(LeaseError::UnknownLease)?;
        Ok(self.host_lease(lease))
    }

    /// The registration's event registration (`getEventRegistration`), with the sequence number
    /// of the last event made so far.
    pub fn event_registration(
        &mut self,
        id: RegistrationId,
        now: Millis,
    ) -> Result<EventRegistration> {
        let lease = self.lease(id, now)?;
        let event_id = self.live(id)?.event_id;
        self.events.registration(event_id, lease).ok_or(LeaseError::UnknownLease)
    }

    /// The registrars discovered for the registration and not discarded since (`getRegistrars`),
    /// in id order, each as the service knows it now.
    pub fn registrars(&mut self, id: RegistrationId, now: Millis) -> Result<Vec<Registrar>> {
        self.tick(now);
        let r = self.live(id)?;
        Ok(r.held.iter().map(|g| info(*g, &self.known[g])).collect())
    }

    /// The registration's managed set of groups (`getGroups`).
    pub fn groups(&mut self, id: RegistrationId, now: Millis) -> Result<Groups> {
        self.tick(now);
        Ok(self.live(id)?.groups.clone())
    }

    /// The registration's managed set of locators (`getLocators`), in order.
    pub fn locators(&mut self, id: RegistrationId, now: Millis) -> Result<Vec<Locator>> {
        self.tick(now);
        Ok(self.live(id)?.locators.iter().cloned().collect())
    }

    /// Where the host delivers the registration's events: opaque bytes the service keeps with
    /// the registration (in its snapshots and journal) and forgets when it ends, such as a
    /// listener's URL. Jini's `register` takes the listener with the registration; here the
    /// host sets it right after [`DiscoveryService::register`], in the same step (before it
    /// polls events). At most `limits.max_resource_bytes`.
    pub fn set_listener(
        &mut self,
        id: RegistrationId,
        listener: Vec<u8>,
        now: Millis,
    ) -> Result<()> {
        let max = self.config.landlord.limits.max_resource_bytes;
        if listener.len() > max {
            return Err(LeaseError::InvalidArgument(format!(
                "listener is {} bytes, more than the {max} allowed",
                listener.len()
            )));
        }
        self.tick(now);
        self.live(id)?;
        self.listener_now(id, listener);
        Ok(())
    }

    fn listener_now(&mut self, id: RegistrationId, listener: Vec<u8>) {
        let r = self.regs.get_mut(&id).expect("checked live");
        if r.listener == listener {
            return;
        }
        if let Some(j) = self.journal.as_deref_mut() {
            j.listener(id, &listener);
        }
        r.listener = listener;
    }

    /// The registration's listener as the host set it ([`DiscoveryService::set_listener`]);
    /// empty if none was set, `None` if there is no such registration (as of the last call).
    pub fn listener(&self, id: RegistrationId) -> Option<&[u8]> {
        self.regs.get(&id).map(|r| r.listener.as_slice())
    }

    /// Adds groups to the registration's managed set (`addGroups`). A registration that wants
    /// all groups has no set to add to: [`LeaseError::InvalidArgument`] (Jini's
    /// `UnsupportedOperationException`).
    pub fn add_groups<I, S>(&mut self, id: RegistrationId, groups: I, now: Millis) -> Result<()>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let add: BTreeSet<String> = groups.into_iter().map(Into::into).collect();
        self.tick(now);
        let current = self.live(id)?.groups.clone();
        let Groups::Only(mut names) = current else {
            return Err(no_group_set("add to"));
        };
        names.extend(add);
        self.set_groups_checked(id, Groups::Only(names))
    }

    /// Replaces the registration's managed set of groups (`setGroups`): [`Groups::All`] for every
    /// group, an empty set to stop group discovery.
    pub fn set_groups(&mut self, id: RegistrationId, groups: Groups, now: Millis) -> Result<()> {
        self.tick(now);
        self.live(id)?;
        self.set_groups_checked(id, groups)
    }

    /// Removes groups from the registration's managed set (`removeGroups`); names it does not
    /// hold are ignored. A registration that wants all groups has no set to remove from:
    /// [`LeaseError::InvalidArgument`].
    pub fn remove_groups<I, S>(&mut self, id: RegistrationId, groups: I, now: Millis) -> Result<()>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let remove: BTreeSet<String> = groups.into_iter().map(Into::into).collect();
        self.tick(now);
        let current = self.live(id)?.groups.clone();
        let Groups::Only(mut names) = current else {
            return Err(no_group_set("remove from"));
        };
        names.retain(|n| !remove.contains(n));
        self.set_groups_checked(id, Groups::Only(names))
    }

    fn set_groups_checked(&mut self, id: RegistrationId, groups: Groups) -> Result<()> {
        groups.check(self.config.landlord.limits.max_batch)?;
        let r = self.regs.get_mut(&id).expect("checked live");
        if r.groups == groups {
            return Ok(());
        }
        if let Some(j) = self.journal.as_deref_mut() {
            j.set_groups(id, &groups);
        }
        r.groups = groups;
        self.reconcile_registration(id);
        self.flush();
        Ok(())
    }

    /// Adds locators to the registration's managed set (`addLocators`).
    pub fn add_locators(
        &mut self,
        id: RegistrationId,
        locators: impl IntoIterator<Item = Locator>,
        now: Millis,
    ) -> Result<()> {
        self.tick(now);
        let mut set = self.live(id)?.locators.clone();
        set.extend(locators);
        self.set_locators_checked(id, set)
    }

    /// Replaces the registration's managed set of locators (`setLocators`).
    pub fn set_locators(
        &mut self,
        id: RegistrationId,
        locators: impl IntoIterator<Item = Locator>,
        now: Millis,
    ) -> Result<()> {
        self.tick(now);
        self.live(id)?;
        self.set_locators_checked(id, locators.into_iter().collect())
    }

    /// Removes locators from the registration's managed set (`removeLocators`); locators it
    /// does not hold are ignored.
    pub fn remove_locators(
        &mut self,
        id: RegistrationId,
        locators: impl IntoIterator<Item = Locator>,
        now: Millis,
    ) -> Result<()> {
        self.tick(now);
        let mut set = self.live(id)?.locators.clone();
        for l in locators {
            set.remove(&l);
        }
        self.set_locators_checked(id, set)
    }

    fn set_locators_checked(&mut self, id: RegistrationId, set: BTreeSet<Locator>) -> Result<()> {
        self.check_locator_count(set.len())?;
        let r = self.regs.get_mut(&id).expect("checked live");
        if r.locators == set {
            return Ok(());
        }
        if let Some(j) = self.journal.as_deref_mut() {
            j.set_locators(id, &set);
        }
        let old = std::mem::replace(&mut r.locators, set.clone());
        for l in old.difference(&set) {
            self.unwant(l, id);
        }
        for l in set.difference(&old) {
            self.wanted.entry(l.clone()).or_default().insert(id);
            self.sync_unicast(l);
        }
        self.reconcile_registration(id);
        self.flush();
        Ok(())
    }

    /// Discards a registrar from the registration's managed set (`discard`): the registration
    /// gets a discarded event, and the service drops the registrar from its own set so that it
    /// can be discovered again (for this registration, and for any other that discards it
    /// before then). A registrar the registration does not hold is ignored.
    pub fn discard(
        &mut self,
        id: RegistrationId,
        registrar: RegistrarId,
        now: Millis,
    ) -> Result<()> {
        self.tick(now);
        self.discard_now(id, registrar)
    }

    fn discard_now(&mut self, id: RegistrationId, registrar: RegistrarId) -> Result<()> {
        if !self.live(id)?.held.contains(&registrar) {
            return Ok(());
        }
        if let Some(j) = self.journal.as_deref_mut() {
            j.discard(id, registrar);
        }
        self.drop_held(id, registrar);
        self.set_present(registrar, false);
        self.maybe_forget(registrar);
        self.flush();
        Ok(())
    }

    // ---- what the host hears ----

    /// A multicast announcement the host received. A stale one (sequence number not above the
    /// last accepted from that registrar) is ignored. A bad one (a `ttl` outside 1 to
    /// 2^32 - 1 ms, a group name too long, more groups than `limits.max_batch`) is an
    /// [`LeaseError::InvalidArgument`]; one from a new registrar while the service holds
    /// [`DiscoveryConfig::max_registrars`] is refused with [`LeaseError::LeaseDenied`].
    pub fn handle_announcement(&mut self, a: &Announcement, now: Millis) -> Result<()> {
        if a.ttl <= 0 || a.ttl > u32::MAX as Duration {
            return Err(LeaseError::InvalidArgument(format!(
                "announcement ttl must be 1 to {} ms, got {}",
                u32::MAX,
                a.ttl
            )));
        }
        types::check_names(a.groups.iter(), a.groups.len(), self.config.landlord.limits.max_batch)?;
        self.tick(now);
        self.announce_now(a)
    }

    fn announce_now(&mut self, a: &Announcement) -> Result<()> {
        let now = self.now;
        let g = a.registrar;
        match self.known.get(&g) {
            Some(k) if k.last_sequence.is_some_and(|last| a.sequence <= last) => return Ok(()),
            Some(_) => {}
            None if self.known.len() >= self.config.max_registrars => {
                return Err(LeaseError::LeaseDenied(format!(
                    "the service holds {} registrars, its maximum",
                    self.known.len()
                )))
            }
            None => {}
        }
        if let Some(j) = self.journal.as_deref_mut() {
            j.announce(a);
        }
        let ttl = a.ttl.min(self.config.max_announcement_ttl);
        let k = self.known.entry(g).or_default();
        k.last_sequence = Some(a.sequence);
        let mut changed = !k.present || k.groups != a.groups;
        k.groups.clone_from(&a.groups);
        self.schedule_silence(g, Some(time::expiration_after(now, ttl)));
        self.set_present(g, true);
        // A new locator for it (perhaps taken from another registrar, which may lose holders).
        if let Some(previous) = self.claim(&a.locator, g) {
            changed = true;
            if let Some(h) = previous {
                self.reconcile_registrar(h);
            }
        }
        if changed {
            self.reconcile_registrar(g);
        }
        self.flush();
        Ok(())
    }

    /// An announcement datagram the host received ([`Announcement::decode`], then
    /// [`DiscoveryService::handle_announcement`]). Undecodable bytes are a
    /// [`LeaseError::Decode`] error and change nothing.
    pub fn handle_datagram(&mut self, bytes: &[u8], now: Millis) -> Result<()> {
        let a = Announcement::decode(bytes)?;
        self.handle_announcement(&a, now)
    }

    /// The host's answer to the unicast discovery `request_id` from
    /// [`DiscoveryService::poll_transmit`]: the registrar found at its locator, or why none was
    /// (any error is retried after a back-off while the locator is still wanted). Returns
    /// whether the request was still awaited (an answer after its time-out, or for a locator no
    /// longer wanted, is ignored).
    pub fn handle_unicast(
        &mut self,
        request_id: u64,
        result: std::result::Result<UnicastResponse, LeaseError>,
        now: Millis,
    ) -> bool {
        self.tick(now);
        self.unicast_now(request_id, result)
    }

    fn unicast_now(
        &mut self,
        request_id: u64,
        result: std::result::Result<UnicastResponse, LeaseError>,
    ) -> bool {
        let Some(locator) = self.unicast_inflight.get(&request_id).cloned() else {
            return false;
        };
        if let Some(j) = self.journal.as_deref_mut() {
            j.unicast(request_id, result.as_ref().ok());
        }
        let found = match result {
            Ok(r) => r,
            Err(_) => {
                self.unicast_failed(request_id);
                return true;
            }
        };
        let limits = self.config.landlord.limits;
        let valid = types::check_names(found.groups.iter(), found.groups.len(), limits.max_batch);
        let full = !self.known.contains_key(&found.registrar)
            && self.known.len() >= self.config.max_registrars;
        if valid.is_err() || full {
            self.unicast_failed(request_id);
            return true;
        }
        let g = found.registrar;
        self.known.entry(g).or_default().groups = found.groups;
        // Present, and found at the locator: the probe is done (sync_unicast drops it).
        self.set_present(g, true);
        if let Some(Some(h)) = self.claim(&locator, g) {
            self.reconcile_registrar(h);
        }
        self.sync_unicast(&locator);
        self.reconcile_registrar(g);
        self.flush();
        true
    }

    /// The host found `registrar` unreachable (a failed call, a closed connection): a passive
    /// communication discard, as when its announcements stop (see the module docs). Returns
    /// whether the service knew the registrar.
    pub fn registrar_unreachable(&mut self, registrar: RegistrarId, now: Millis) -> bool {
        self.tick(now);
        self.unreachable_now(registrar)
    }

    fn unreachable_now(&mut self, registrar: RegistrarId) -> bool {
        if !self.known.contains_key(&registrar) {
            return false;
        }
        if let Some(j) = self.journal.as_deref_mut() {
            j.unreachable(registrar);
        }
        self.communication_discard(registrar);
        self.flush();
        true
    }

    // ---- what the host does ----

    /// The next unicast discovery to make: contact the locator and answer with
    /// [`DiscoveryService::handle_unicast`].
    pub fn poll_transmit(&mut self, now: Millis) -> Option<UnicastRequest> {
        self.tick(now);
        self.transmit_now()
    }

    fn transmit_now(&mut self) -> Option<UnicastRequest> {
        let now = self.now;
        let &(at, _) = self.unicast_due.first()?;
        if at > now {
            return None;
        }
        let (_, locator) = self.unicast_due.pop_first().expect("present");
        // Ids run on from the snapshot's; once they wrap (only a restored or tampered counter
        // gets there) they skip any still in flight, so an id always names one request.
        let mut request = self.next_request;
        while self.unicast_inflight.contains_key(&request) {
            request = request.wrapping_add(1).max(1);
        }
        self.next_request = request.wrapping_add(1).max(1);
        let deadline = time::expiration_after(now, self.config.unicast_timeout);
        let u = self.unicast.get_mut(&locator).expect("scheduled");
        u.state = Probe::InFlight { request, deadline };
        if deadline != FOREVER {
            self.unicast_deadlines.insert((deadline, request));
        }
        self.unicast_inflight.insert(request, locator.clone());
        if let Some(j) = self.journal.as_deref_mut() {
            j.transmit(request);
        }
        Some(UnicastRequest { id: request, locator })
    }

    /// The next event to deliver to a registration's listener. Report the outcome with
    /// [`DiscoveryService::delivered`] or [`DiscoveryService::delivery_failed`]; the
    /// registration's next event waits until then. With a journal, deliver it only once
    /// [`DiscoveryService::journal_seq`] (read right after this call) is durable.
    pub fn poll_event(&mut self, now: Millis) -> Option<RemoteDiscoveryEvent> {
        self.tick(now);
        self.event_now()
    }

    fn event_now(&mut self) -> Option<RemoteDiscoveryEvent> {
        let now = self.now;
        let &(at, id) = self.event_due.first()?;
        if at > now {
            return None;
        }
        self.event_due.pop_first();
        let deadline = time::expiration_after(now, self.config.delivery_timeout);
        let r = self.regs.get_mut(&id).expect("scheduled");
        let Outbox::Due { failures, .. } = r.outbox else { unreachable!("scheduled as due") };
        r.outbox = Outbox::InFlight { deadline, failures };
        if deadline != FOREVER {
            self.event_deadlines.insert((deadline, id));
        }
        let e = r.queue.front().cloned();
        if let (Some(j), Some(e)) = (self.journal.as_deref_mut(), &e) {
            j.poll_event(id, e.sequence);
        }
        e
    }

    /// The event `(event_id, sequence)` handed out by [`DiscoveryService::poll_event`] reached
    /// its listener. Returns whether it was the event awaited (a late or repeated report is
    /// ignored).
    pub fn delivered(&mut self, event_id: EventId, sequence: u64, now: Millis) -> bool {
        self.tick(now);
        self.delivered_now(event_id, sequence)
    }

    fn delivered_now(&mut self, event_id: EventId, sequence: u64) -> bool {
        let Some(id) = self.in_flight(event_id, sequence) else { return false };
        if let Some(j) = self.journal.as_deref_mut() {
            j.delivered(event_id, sequence);
        }
        self.unschedule_outbox(id);
        let now = self.now;
        let r = self.regs.get_mut(&id).expect("in flight");
        r.queue.pop_front();
        r.outbox = Outbox::Idle;
        if !r.queue.is_empty() {
            r.outbox = Outbox::Due { at: now, failures: 0 };
            self.event_due.insert((now, id));
        }
        true
    }

    /// The event `(event_id, sequence)` handed out by [`DiscoveryService::poll_event`] could not
    /// be delivered: an indefinite failure sends it again after a back-off (until the
    /// registration's lease ends); any other failure cancels the registration (LD.3.1). Returns
    /// whether it was the event awaited (a late or repeated report is ignored).
    pub fn delivery_failed(
        &mut self,
        event_id: EventId,
        sequence: u64,
        failure: DeliveryFailure,
        now: Millis,
    ) -> bool {
        self.tick(now);
        self.failed_now(event_id, sequence, failure.is_definite())
    }

    fn failed_now(&mut self, event_id: EventId, sequence: u64, definite: bool) -> bool {
        let Some(id) = self.in_flight(event_id, sequence) else { return false };
        if let Some(j) = self.journal.as_deref_mut() {
            j.delivery_failed(event_id, sequence, definite);
        }
        if definite {
            let cookie = self.regs[&id].cookie;
            // The registration is live (checked by tick), so its lease is there to cancel.
            let _ = self.landlord.cancel(cookie, self.now);
            self.destroy(id);
        } else {
            self.retry_event(id);
        }
        self.flush();
        true
    }

    fn in_flight(&self, event_id: EventId, sequence: u64) -> Option<RegistrationId> {
        let id = RegistrationId(self.events.get(event_id)?.source.object);
        let r = self.regs.get(&id)?;
        let head = r.queue.front()?;
        (matches!(r.outbox, Outbox::InFlight { .. }) && head.sequence == sequence).then_some(id)
    }

    /// When the host should next call [`DiscoveryService::handle_timeout`] (or poll for
    /// transmissions and events that become due then): exactly the time of the next thing due
    /// (a registration lease ending, a registrar falling silent, a retry or time-out), `None`
    /// if nothing ever is. A time already past means something is waiting for
    /// [`DiscoveryService::poll_transmit`] or [`DiscoveryService::poll_event`].
    pub fn poll_timeout(&self) -> Option<Millis> {
        [
            self.lease_due.first().map(|d| d.0),
            self.silence_due.first().map(|d| d.0),
            self.unicast_due.first().map(|d| d.0),
            self.unicast_deadlines.first().map(|d| d.0),
            self.event_due.first().map(|d| d.0),
            self.event_deadlines.first().map(|d| d.0),
        ]
        .into_iter()
        .flatten()
        .min()
        .map(|t| self.to_host(t))
    }

    /// Brings the service to `now`: registrations whose lease ended are removed (without
    /// events), registrars whose announcements stopped are discarded, and unicast discoveries
    /// and event deliveries past their time-out count as failed.
    pub fn handle_timeout(&mut self, now: Millis) {
        self.tick(now);
    }

    // ---- registration leases over the landlord wire protocol ----

    /// Answers a request about registration leases (renew, cancel, renew_all, cancel_all) from
    /// a client. A cancelled registration ends at once, without events. Grant requests are
    /// refused: registrations are made with [`DiscoveryService::register`].
    pub fn handle_request(&mut self, request: &Request, now: Millis) -> Reply {
        self.tick(now);
        let body = match &request.body {
            RequestBody::Grant { .. } => {
                ReplyBody::Error(WireError::from(&LeaseError::InvalidArgument(
                    "a discovery service makes registration leases with register, not grant".into(),
                )))
            }
            RequestBody::Renew { cookie, duration } => match self.renew_lease(*cookie, *duration) {
                Ok(d) => ReplyBody::Renewed { duration: d },
                Err(e) => ReplyBody::Error(WireError::from(&e)),
            },
            RequestBody::Cancel { cookie } => match self.cancel_lease(*cookie) {
                Ok(()) => ReplyBody::Cancelled,
                Err(e) => ReplyBody::Error(WireError::from(&e)),
            },
            RequestBody::RenewAll { items } => ReplyBody::RenewedAll {
                results: items
                    .iter()
                    .map(|&(c, d)| Outcome::from(self.renew_lease(c, d)))
                    .collect(),
            },
            RequestBody::CancelAll { cookies } => ReplyBody::CancelledAll {
                results: cookies.iter().map(|&c| Outcome::from(self.cancel_lease(c))).collect(),
            },
        };
        self.flush();
        Reply { id: request.id, landlord: self.landlord.id(), body }
    }

    /// Decodes a request about registration leases, answers it, and encodes the reply in the
    /// same encoding; an undecodable request gets an error reply with id 0.
    pub fn handle_bytes(&mut self, bytes: &[u8], encoding: Encoding, now: Millis) -> Vec<u8> {
        let reply = match Request::decode(bytes, encoding, &self.config.landlord.limits) {
            Ok(req) => self.handle_request(&req, now),
            Err(e) => Reply {
                id: 0,
                landlord: self.landlord.id(),
                body: ReplyBody::Error(WireError::from(&e)),
            },
        };
        reply.encode(encoding)
    }

    fn renew_lease(&mut self, cookie: Cookie, duration: Duration) -> Result<Duration> {
        self.renew_now(cookie, Ask::Policy(duration))
    }

    fn renew_now(&mut self, cookie: Cookie, ask: Ask) -> Result<Duration> {
        let granted = match ask {
            Ask::Policy(d) => self.landlord.renew(cookie, d, self.now)?,
            Ask::Exact(d) => self.landlord.renew_exact(cookie, d, self.now)?,
        };
        if let Some(j) = self.journal.as_deref_mut() {
            j.renew(cookie, granted);
        }
        if let Some((_, id)) = self.landlord.get(cookie, self.now) {
            let id = *id;
            self.schedule_lease(id);
        }
        Ok(granted)
    }

    /// Files registration `id` under the time its lease ends: the first time the landlord no
    /// longer honours it (its expiration plus grace, plus one). A lease the landlord no longer
    /// honours ends now.
    fn schedule_lease(&mut self, id: RegistrationId) {
        let Some(r) = self.regs.get(&id) else { return };
        let ends = match self.landlord.get(r.cookie, self.now) {
            Some((expiration, _)) => {
                let grace = self.landlord.config().grace.max(0);
                let deadline = time::expiration_after(expiration, grace);
                (expiration != FOREVER && deadline != FOREVER).then(|| deadline.saturating_add(1))
            }
            None => Some(self.now),
        };
        let r = self.regs.get_mut(&id).expect("present");
        if let Some(old) = std::mem::replace(&mut r.ends_at, ends) {
            self.lease_due.remove(&(old, id));
        }
        if let Some(t) = ends {
            self.lease_due.insert((t, id));
        }
    }

    fn cancel_lease(&mut self, cookie: Cookie) -> Result<()> {
        let id = self.landlord.cancel(cookie, self.now)?;
        if let Some(j) = self.journal.as_deref_mut() {
            j.cancel(cookie);
        }
        self.destroy(id);
        Ok(())
    }

    // ---- internals: time ----

    /// Brings the service to `now` (never backwards), in a fixed order: lease expiries,
    /// silent registrars, unicast time-outs, delivery time-outs.
    fn tick(&mut self, now: Millis) {
        let t = now.saturating_add(self.offset).max(self.now);
        self.advance(t);
    }

    /// Whether bringing the service to `t` changes anything but its time.
    fn due_by(&self, t: Millis) -> bool {
        let due = |first: Option<Millis>| first.is_some_and(|at| at <= t);
        due(self.lease_due.first().map(|d| d.0))
            || due(self.silence_due.first().map(|d| d.0))
            || due(self.unicast_deadlines.first().map(|d| d.0))
            || due(self.event_deadlines.first().map(|d| d.0))
    }

    /// Brings the service to its own time `t` (not before [`Self::now`]), journaling the time
    /// when it moves or something falls due.
    fn advance(&mut self, t: Millis) {
        debug_assert!(t >= self.now);
        if self.journal.is_some() {
            let effect = self.due_by(t);
            if t > self.now || effect {
                self.journal.as_deref_mut().expect("journaled").time(t, effect);
            }
        }
        self.now = t;
        let now = self.now;
        loop {
            let before = (self.landlord.len(), self.landlord.poll_timeout());
            self.landlord.handle_timeout(now);
            let mut ended = Vec::new();
            while let Some(e) = self.landlord.poll_expired() {
                ended.push(e.resource);
            }
            ended.sort();
            for id in ended {
                self.destroy(id);
            }
            let due = self.landlord.poll_timeout().is_some_and(|t| t <= now);
            if !due || before == (self.landlord.len(), self.landlord.poll_timeout()) {
                break;
            }
        }
        while let Some(&(at, g)) = self.silence_due.first() {
            if at > now {
                break;
            }
            self.silence_due.pop_first();
            self.known.get_mut(&g).expect("scheduled").silent_at = None;
            self.communication_discard(g);
        }
        while let Some(&(at, request)) = self.unicast_deadlines.first() {
            if at > now {
                break;
            }
            self.unicast_failed(request);
        }
        while let Some(&(at, id)) = self.event_deadlines.first() {
            if at > now {
                break;
            }
            self.retry_event(id);
        }
        self.flush();
    }

    fn retry_event(&mut self, id: RegistrationId) {
        self.unschedule_outbox(id);
        let r = self.regs.get_mut(&id).expect("in flight");
        let Outbox::InFlight { failures, .. } = r.outbox else { unreachable!("in flight") };
        let failures = failures.saturating_add(1);
        let at = time::expiration_after(self.now, backoff(&self.config.event_retry, failures));
        r.outbox = Outbox::Due { at, failures };
        self.event_due.insert((at, id));
    }

    fn unschedule_outbox(&mut self, id: RegistrationId) {
        match self.regs.get(&id).map(|r| r.outbox) {
            Some(Outbox::Due { at, .. }) => {
                self.event_due.remove(&(at, id));
            }
            Some(Outbox::InFlight { deadline, .. }) => {
                self.event_deadlines.remove(&(deadline, id));
            }
            _ => {}
        }
    }

    fn schedule_silence(&mut self, g: RegistrarId, at: Option<Millis>) {
        let k = self.known.get_mut(&g).expect("known");
        if let Some(old) = k.silent_at.take() {
            self.silence_due.remove(&(old, g));
        }
        k.silent_at = at.filter(|&t| t != FOREVER);
        if let Some(t) = k.silent_at {
            self.silence_due.insert((t, g));
        }
    }

    // ---- internals: unicast ----

    fn unicast_failed(&mut self, request: u64) {
        let Some(locator) = self.unicast_inflight.remove(&request) else { return };
        let u = self.unicast.get_mut(&locator).expect("in flight");
        if let Probe::InFlight { deadline, .. } = u.state {
            self.unicast_deadlines.remove(&(deadline, request));
        }
        u.failures = u.failures.saturating_add(1);
        let at = time::expiration_after(self.now, backoff(&self.config.unicast_retry, u.failures));
        u.state = Probe::Due(at);
        self.unicast_due.insert((at, locator));
    }

    /// Whether unicast discovery of `l` is needed: some registration wants it and no registrar
    /// of the service's set was found there.
    fn needs_probe(&self, l: &Locator) -> bool {
        self.wanted.get(l).is_some_and(|w| !w.is_empty())
            && self.by_locator.get(l).map_or(true, |g| !self.known[g].present)
    }

    /// Starts or stops unicast discovery of `l` as [`Self::needs_probe`] says.
    fn sync_unicast(&mut self, l: &Locator) {
        let need = self.needs_probe(l);
        match (need, self.unicast.contains_key(l)) {
            (true, false) => {
                let now = self.now;
                self.unicast.insert(l.clone(), Unicast { failures: 0, state: Probe::Due(now) });
                self.unicast_due.insert((now, l.clone()));
            }
            (false, true) => {
                let u = self.unicast.remove(l).expect("present");
                match u.state {
                    Probe::Due(at) => {
                        self.unicast_due.remove(&(at, l.clone()));
                    }
                    Probe::InFlight { request, deadline } => {
                        self.unicast_inflight.remove(&request);
                        self.unicast_deadlines.remove(&(deadline, request));
                    }
                }
            }
            _ => {}
        }
    }

    fn unwant(&mut self, l: &Locator, id: RegistrationId) {
        if let Some(w) = self.wanted.get_mut(l) {
            w.remove(&id);
            if w.is_empty() {
                self.wanted.remove(l);
            }
        }
        self.sync_unicast(l);
    }

    // ---- internals: registrars and interest ----

    fn source(&self, id: RegistrationId) -> EventSource {
        EventSource { service: self.landlord.id(), object: id.0 }
    }

    /// Records that `g` was found at `l`, taking `l` from any other registrar. Returns `None` if
    /// nothing changed, else `Some(previous owner)`.
    fn claim(&mut self, l: &Locator, g: RegistrarId) -> Option<Option<RegistrarId>> {
        let previous = self.by_locator.get(l).copied();
        if previous == Some(g) {
            return None;
        }
        if let Some(h) = previous {
            self.known.get_mut(&h).expect("mapped").locators.remove(l);
        }
        self.by_locator.insert(l.clone(), g);
        self.known.get_mut(&g).expect("known").locators.insert(l.clone());
        self.sync_unicast(l);
        Some(previous)
    }

    fn set_present(&mut self, g: RegistrarId, present: bool) {
        let k = self.known.get_mut(&g).expect("known");
        if k.present == present {
            return;
        }
        k.present = present;
        let locators: Vec<Locator> = k.locators.iter().cloned().collect();
        for l in &locators {
            self.sync_unicast(l);
        }
    }

    fn wants(r: &Reg, k: &Known) -> bool {
        r.groups.matches(&k.groups) || k.locators.iter().any(|l| r.locators.contains(l))
    }

    /// After a change to registrar `g` (groups, locators, presence): each registration that
    /// holds it and no longer wants it discards it; each that wants it and lacks it discovers it
    /// (if it is in the service's set).
    fn reconcile_registrar(&mut self, g: RegistrarId) {
        let Some(k) = self.known.get(&g) else { return };
        let mut drop = Vec::new();
        let mut add = Vec::new();
        for (id, r) in &self.regs {
            let holds = r.held.contains(&g);
            let wants = Self::wants(r, k);
            if holds && !wants {
                drop.push(*id);
            } else if !holds && wants && k.present {
                add.push(*id);
            }
        }
        for id in drop {
            self.drop_held(id, g);
        }
        for id in add {
            self.add_held(id, g);
        }
        self.maybe_forget(g);
    }

    /// After a change to registration `id`'s groups or locators.
    fn reconcile_registration(&mut self, id: RegistrationId) {
        let r = &self.regs[&id];
        let drop: Vec<RegistrarId> =
            r.held.iter().filter(|g| !Self::wants(r, &self.known[g])).copied().collect();
        let add: Vec<RegistrarId> = self
            .known
            .iter()
            .filter(|(g, k)| k.present && !r.held.contains(g) && Self::wants(r, k))
            .map(|(g, _)| *g)
            .collect();
        for g in drop {
            self.drop_held(id, g);
            self.maybe_forget(g);
        }
        for g in add {
            self.add_held(id, g);
        }
    }

    /// A passive communication discard of `g` (silence, or reported unreachable).
    fn communication_discard(&mut self, g: RegistrarId) {
        self.schedule_silence(g, None);
        let k = &self.known[&g];
        let by_group: Vec<RegistrationId> = k
            .holders
            .iter()
            .filter(|id| self.regs[id].groups.matches(&k.groups))
            .copied()
            .collect();
        if by_group.is_empty() && !k.holders.is_empty() {
            // Only locator discovery wants it: the service does not discard it (LD.4.1.1).
            return;
        }
        for id in by_group {
            self.drop_held(id, g);
        }
        self.set_present(g, false);
        self.maybe_forget(g);
    }

    /// Forgets `g` if it is neither in the service's set nor held by any registration.
    fn maybe_forget(&mut self, g: RegistrarId) {
        let Some(k) = self.known.get(&g) else { return };
        if k.present || !k.holders.is_empty() {
            return;
        }
        let k = self.known.remove(&g).expect("known");
        if let Some(t) = k.silent_at {
            self.silence_due.remove(&(t, g));
        }
        for l in &k.locators {
            self.by_locator.remove(l);
            self.sync_unicast(l);
        }
    }

    fn drop_held(&mut self, id: RegistrationId, g: RegistrarId) {
        let r = self.regs.get_mut(&id).expect("live");
        r.held.remove(&g);
        let k = self.known.get_mut(&g).expect("held");
        k.holders.remove(&id);
        let i = info(g, k);
        let b = self.batch.entry(id).or_default();
        if b.discovered.remove(&g).is_none() {
            b.discarded.insert(g, i);
        }
    }

    fn add_held(&mut self, id: RegistrationId, g: RegistrarId) {
        let r = self.regs.get_mut(&id).expect("live");
        r.held.insert(g);
        let k = self.known.get_mut(&g).expect("known");
        k.holders.insert(id);
        let i = info(g, k);
        let b = self.batch.entry(id).or_default();
        if b.discarded.remove(&g).is_none() {
            b.discovered.insert(g, i);
        }
    }

    /// Turns the changes of the call into events.
    fn flush(&mut self) {
        let now = self.now;
        for (id, b) in std::mem::take(&mut self.batch) {
            let Some(r) = self.regs.get_mut(&id) else { continue };
            for (discarded, list) in [(true, b.discarded), (false, b.discovered)] {
                if list.is_empty() {
                    continue;
                }
                let kind = DiscoveryChange { discarded, registrars: list.into_values().collect() };
                let e = self.events.next_event(r.event_id, kind).expect("registered");
                r.queue.push_back(e);
            }
            if r.outbox == Outbox::Idle && !r.queue.is_empty() {
                r.outbox = Outbox::Due { at: now, failures: 0 };
                self.event_due.insert((now, id));
            }
        }
    }

    /// Ends a registration (lease expired or cancelled): no events; its registrars and
    /// locators are let go.
    fn destroy(&mut self, id: RegistrationId) {
        self.unschedule_outbox(id);
        self.batch.remove(&id);
        let Some(r) = self.regs.remove(&id) else { return };
        if let Some(t) = r.ends_at {
            self.lease_due.remove(&(t, id));
        }
        self.events.remove(r.event_id);
        for g in &r.held {
            if let Some(k) = self.known.get_mut(g) {
                k.holders.remove(&id);
            }
            self.maybe_forget(*g);
        }
        for l in &r.locators {
            self.unwant(l, id);
        }
    }
}

fn info(id: RegistrarId, k: &Known) -> Registrar {
    Registrar { id, groups: k.groups.clone(), locators: k.locators.clone() }
}

fn no_group_set(what: &str) -> LeaseError {
    LeaseError::InvalidArgument(format!(
        "the registration discovers all groups: there is no set of groups to {what}"
    ))
}
