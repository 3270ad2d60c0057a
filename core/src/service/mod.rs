//! The lease renewal service (seed 003, LR; Jini's `LeaseRenewalService`, River's Norm).
//!
//! Clients hand their leases to a [`RenewalService`], grouped into renewal *sets*. A set is
//! itself leased: [`RenewalService::create_set`] grants it a lease from the service's own
//! [`Landlord`] under a configurable policy (by default bounded: at most 2 h, 1 h for ANY),
//! and the client renews or cancels that lease like any other, through the wire protocol
//! ([`RenewalService::handle_request`]). When the set's lease expires or is cancelled the set is
//! destroyed, its event registrations end, and none of its client leases is renewed again
//! (unless another set still holds it).
//!
//! # Memberships and the renewal manager
//!
//! Each client lease in a set has a [`Membership`]: the desired expiration (when it leaves the
//! set silently) and the renewal duration. The renewing itself is done by one holder-side
//! [`RenewalManager`], so the rules of when to renew, what to ask for (the renewal duration
//! until the remaining membership is shorter, then the remainder; ANY passed on as ANY),
//! batching per landlord, retries of indefinite failures and the detection of expiries live in
//! one place.
//!
//! The manager knows each client lease once, while the same lease may sit in several sets.
//! The service keeps every membership itself and tells the manager the *governing* one: the
//! membership with the latest desired expiration (ties go to the lowest [`SetId`]), whose
//! desired expiration and renewal duration the manager uses. Whenever a membership is added,
//! changed, reached or dropped, the governing one is worked out again; a lease that no set
//! holds any more is taken out of the manager (never cancelled). Each set's membership
//! expiration is tracked by the service's own timer, so a lease leaves a set silently at that
//! set's desired expiration even while another set keeps it renewed. When the manager reports
//! that a grant already reaches the governing desired expiration (LR: a lease whose actual
//! expiration is past its desired one is not renewed), the lease stays listed in its sets,
//! unrenewed, until each membership ends.
//!
//! A renewal failure the manager reports (a definite error after exactly one attempt, or the
//! lease's actual expiration reached, after retrying indefinite errors up to it) removes the
//! lease from every set that holds it, and each of those sets with a renewal-failure listener
//! gets one [`SetEventKind::RenewalFailure`] event.
//!
//! # Events
//!
//! Each set may have one expiration-warning and one renewal-failure registration
//! ([`crate::event`]): event ids unique among the active registrations, sequence numbers
//! strictly increasing per id, handbacks returned byte for byte, covered by the set's lease.
//! Events come out of [`RenewalService::poll_event`]; the host delivers them, and reports a
//! listener that answered "unknown event" with [`RenewalService::unknown_event`].
//!
//! ## Delivery: at least once, across restarts
//!
//! An event handed out by [`RenewalService::poll_event`] stays in the service's *outbox* (part
//! of its state: both snapshot forms and the journal) until the host reports that its listener
//! took it, with [`RenewalService::delivered`] (journaled as its own record). When a service is
//! rebuilt after a crash (snapshot and journal, [`RenewalService::recover`], or a JSON
//! [`RenewalService::restore`]), its [`RenewalService::resume`] puts every event that was handed
//! out and not reported delivered back in front of the events not yet handed out, and
//! [`RenewalService::poll_event`] hands them out again, in sequence order per registration.
//! Delivery is thus *at least once*: a listener may see an event twice (the process died
//! between the delivery and the record of it), and drops repeats by `(event id, sequence
//! number)`, as in Jini's event model (sequence numbers strictly increase per event id, so
//! a receiver keeps the last one seen per registration: [`crate::event::GapTracker`]).
//!
//! A registration that ends (its set cancelled or expired, the listener cleared, or
//! [`RenewalService::unknown_event`]) drops its outbox. The outbox of one registration holds at
//! most [`MAX_UNACKED_EVENTS`] events: handing out one more drops the oldest (which loses only
//! its redelivery after a crash: the host already has it), counted by
//! [`RenewalService::unacked_dropped`] for the host to log. A host that gives up delivering an
//! event (its listener stayed away too long) reports it with [`RenewalService::delivered`] too,
//! so that it is not handed out again.
//!
//! # Driving it
//!
//! Like every active part of leasehold it is a sans-I/O state machine: the host calls
//! [`RenewalService::handle_timeout`] when [`RenewalService::poll_timeout`] says, sends what
//! [`RenewalService::poll_transmit`] hands out to the client leases' landlords, and feeds back
//! replies ([`RenewalService::handle_reply`]) or transport failures
//! ([`RenewalService::handle_failure`]).
//!
//! ```
//! use leasehold::policy::Bounded;
//! use leasehold::service::{RenewalService, RenewalServiceConfig};
//! use leasehold::{Landlord, LandlordConfig, LandlordId, Lease, ANY};
//! const MIN: i64 = 60_000;
//!
//! // A landlord somewhere, and a one-minute lease it granted to a client.
//! let mut printer: Landlord =
//!     Landlord::new(LandlordConfig::new(LandlordId(1), [1; 32]), Bounded::new(MIN, MIN).unwrap());
//! let g = printer.grant(b"printer".to_vec(), MIN, 0).unwrap();
//! let lease = Lease::new(LandlordId(1), g.cookie, g.expiration);
//!
//! // The client hands it to a renewal service for half an hour, a minute at a time.
//! let mut svc = RenewalService::new(RenewalServiceConfig::new(LandlordId(99), [2; 32])).unwrap();
//! let (set, set_lease) = svc.create_set(ANY, 0).unwrap();
//! assert_eq!(set_lease.expiration(), 60 * MIN); // the default policy grants an hour for ANY
//! svc.add(set, lease, 30 * MIN, MIN, 0).unwrap();
//!
//! // The host's loop: timers, and the renewal requests carried to the landlord and back.
//! let mut now = 0;
//! while let Some(t) = svc.poll_timeout() {
//!     if t > 20 * MIN {
//!         break;
//!     }
//!     now = now.max(t);
//!     svc.handle_timeout(now);
//!     printer.handle_timeout(now);
//!     while let Some(tx) = svc.poll_transmit(now) {
//!         let reply = printer.handle_request(&tx.request, now);
//!         svc.handle_reply(&reply, now);
//!     }
//! }
//! assert!(printer.get(lease.cookie(), now).is_some(), "renewed for 20 minutes so far");
//! ```
//!
//! # Time
//!
//! The service's time never runs backwards, whatever `now` the host passes, and never stands
//! still while the host's clock runs: it is its renewal manager's clock (one clock, one rule:
//! see [`RenewalManager`], "Time"), the host's `now` plus an offset that grows by every step
//! back of the host's clock ([`RenewalService::clock_offset`]). A set or a membership the
//! service has ended stays ended, and nothing is renewed or sent again because the clock went
//! back; and since the clock keeps running, a client lease renewed after a step back is counted
//! from its real send time (a clock that stood still until the host's caught up would make the
//! service believe in client leases longer than their landlords grant them). The set-lease
//! landlord runs on the service's clock. Every time the service takes or gives (expirations of
//! set and client leases, memberships, warnings, [`RenewalService::poll_timeout`]) is on the
//! host's clock as it reads at the time of the call.
//!
//! # Snapshots, the journal, and replies after durable
//!
//! [`RenewalService::snapshot`] / [`RenewalService::restore`] carry everything the service holds
//! as JSON-friendly data ([`ServiceSnapshot`]), exactly: restored at the time it was taken, the
//! service answers, sends and reports as the original would have. For durability, a service
//! keeps a journal ([`RenewalService::enable_journal`], [`RenewalService::take_journal`]): a
//! command log of every call that changes it, with the service's time, replayed through the same
//! code. It writes compact binary snapshots ([`RenewalService::snapshot_bytes`], kind
//! [`crate::journal::KIND_RENEWAL_SERVICE`]), and [`RenewalService::recover`] rebuilds it from a
//! snapshot and the log that follows (a torn tail tolerated, damage refused), then
//! [`RenewalService::resume`]s.
//!
//! Across a restart, set leases follow the landlord's rule: time spent down does not count (a
//! set lease with 10 minutes left at the last record has 10 minutes left after the restart;
//! with a journal and sets held, [`RenewalService::poll_timeout`] asks for a time-out at least
//! every `journal_clock_interval` of the set-lease landlord's configuration, which bounds the
//! time before a crash that does not count). Client leases and memberships are absolute times on
//! the host's clock, because the client leases' landlords kept counting while the service was
//! down: run the service on a clock that continues across restarts (epoch milliseconds).
//!
//! Everything a call hands out (its return value, a reply, a request to send, an event) may
//! leave only once the journal is durable up to [`RenewalService::journal_seq`] read right after
//! the call; push it into a [`crate::journal::Gate`] with that number and release it when the
//! store confirms (one sync covers everything answered meanwhile). Handing out an event is
//! journaled too, and so is its delivery ([`RenewalService::delivered`]): a restart hands out
//! again exactly the events handed out and not reported delivered (see "Delivery" above).

mod durable;
mod handle;
pub mod machine;
mod remote;
mod set;
mod snapshot;
pub mod wire;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::error::{LeaseError, Result};
use crate::event::{EventId, EventRegistration, EventSource, EventTable, RemoteEvent};
use crate::holder::{RenewalEvent, RenewalManager, RenewalManagerConfig, Transmit};
use crate::landlord::{Landlord, LandlordConfig};
use crate::lease::{Cookie, LandlordId, Lease};
use crate::policy::PolicySpec;
use crate::time::{self, Duration, Millis};
use crate::wire::{Encoding, Outcome, Reply, ReplyBody, Request, RequestBody, WireError};

pub use handle::RenewalSet;
pub use remote::{unwrap_handback, Route, ALIAS_BASE};
pub use set::{check_membership, check_min_warning, Membership, SetId};
use set::{key_of, ClientKey, SetState, Warning};
pub use snapshot::{ServiceSnapshot, BINARY_SNAPSHOT_VERSION, SNAPSHOT_VERSION};

/// Two hours: the longest set lease the default policy grants (Norm's default).
pub const DEFAULT_MAX_SET_LEASE: Duration = 2 * 60 * 60 * 1000;
/// One hour: the set lease the default policy grants for ANY (Norm's default).
pub const DEFAULT_SET_LEASE: Duration = 60 * 60 * 1000;
/// The longest locator [`RenewalService::set_locator`] accepts.
pub const MAX_LOCATOR_BYTES: usize = 4096;
/// The most locators a service holds.
pub const MAX_LOCATORS: usize = 65_536;
/// The most events of one registration kept in the outbox (handed out by
/// [`RenewalService::poll_event`], not yet reported [`RenewalService::delivered`]); one more
/// drops the oldest ([`RenewalService::unacked_dropped`]). See the module docs, "Delivery".
pub const MAX_UNACKED_EVENTS: usize = 1024;

/// How a renewal service is set up.
#[derive(Debug, Clone)]
pub struct RenewalServiceConfig {
    /// The internal landlord that grants set leases: its id (the `landlord` of every set lease,
    /// and the `service` of every event source), cookie seed, grace and limits.
    pub landlord: LandlordConfig,
    /// How long set leases are granted. Default: bounded, max 2 h, default 1 h.
    pub set_policy: PolicySpec,
    /// The renewal manager that renews the client leases.
    pub manager: RenewalManagerConfig,
    /// How far event sequence numbers and renewal request ids jump on a JSON restore
    /// ([`RenewalService::restore`]; [`crate::event::DEFAULT_RESTORE_JUMP`] by default). Use 0
    /// when the snapshot is the service's last state (taken at a clean shutdown): the numbers go
    /// on without a gap. Keep a jump when the snapshot may be stale (events numbered, or
    /// requests sent, after it was taken may have left). A service rebuilt from its binary
    /// snapshot and journal is exact and never jumps (nothing left before it was journaled).
    pub restore_jump: u64,
}

impl RenewalServiceConfig {
    /// Defaults for a service whose set leases carry landlord id `id`; `seed` must be real
    /// entropy (it makes the set lease cookies unguessable).
    pub fn new(id: LandlordId, seed: [u8; 32]) -> RenewalServiceConfig {
        RenewalServiceConfig {
            landlord: LandlordConfig::new(id, seed),
            set_policy: PolicySpec::Bounded {
                max: DEFAULT_MAX_SET_LEASE,
                default: DEFAULT_SET_LEASE,
            },
            manager: RenewalManagerConfig::default(),
            restore_jump: crate::event::DEFAULT_RESTORE_JUMP,
        }
    }
}

/// What an event of a renewal set reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetEventKind {
    /// The set's lease expires at `expiration` (the registration's `min_warning` or less from
    /// now): renew it or lose the set.
    ExpirationWarning {
        /// The set.
        set: SetId,
        /// When the set's lease expires.
        expiration: Millis,
    },
    /// A client lease could not be renewed and has left the set: a definite error on a renewal
    /// attempt, or its actual expiration reached before its desired one.
    RenewalFailure {
        /// The set.
        set: SetId,
        /// The client lease, with its last known expiration.
        lease: Lease,
        /// The last error of a renewal attempt; `None` when the lease simply expired.
        error: Option<LeaseError>,
    },
}

impl SetEventKind {
    /// The set the event is about.
    pub fn set(&self) -> SetId {
        match self {
            SetEventKind::ExpirationWarning { set, .. }
            | SetEventKind::RenewalFailure { set, .. } => *set,
        }
    }
}

/// An event of a renewal set, as the host delivers it to the registered listener.
pub type SetEvent = RemoteEvent<SetEventKind>;

/// The lease renewal service: renewal sets, their leases, memberships and events.
pub struct RenewalService {
    config: RenewalServiceConfig,
    landlord: Landlord<SetId>,
    manager: RenewalManager,
    next_set: u64,
    sets: BTreeMap<SetId, SetState>,
    /// Which sets hold each client lease.
    holders: BTreeMap<ClientKey, BTreeSet<SetId>>,
    /// The last known copy of each client lease (the manager's copy wins while it has one).
    clients: BTreeMap<ClientKey, Lease>,
    /// Client leases the manager reported as covered up to their desired expiration (no
    /// renewal needed until then): the memberships up to that time stay without the manager.
    covered: BTreeMap<ClientKey, Millis>,
    /// Membership expirations, earliest first.
    memberships_due: BTreeSet<(Millis, SetId, ClientKey)>,
    /// Pending expiration warnings, earliest first.
    warnings_due: BTreeSet<(Millis, SetId)>,
    /// When each set's lease is due to expire (past its expiration plus grace), earliest
    /// first: exact, where the landlord's own time-out may come early.
    sets_due: BTreeSet<(Millis, SetId)>,
    events: EventTable,
    out: VecDeque<SetEvent>,
    /// Events handed out and not yet reported delivered, per registration, in sequence order
    /// (the outbox: handed out again after a restart).
    unacked: BTreeMap<EventId, VecDeque<SetEvent>>,
    /// Events dropped from a full outbox since this value was built (replayed records count).
    unacked_dropped: u64,
    /// The service's time on the host's clock: the latest `now` seen (`i64::MIN` before any).
    clock: Millis,
    /// The set-lease landlord's clock minus the service's (non-zero after a resume: time spent
    /// down does not count for set leases).
    set_offset: Millis,
    /// The host's locators of client-lease landlords ([`RenewalService::set_locator`]).
    locators: BTreeMap<LandlordId, Vec<u8>>,
    /// The landlord id of each locator (derived from `locators`).
    by_locator: BTreeMap<Vec<u8>, LandlordId>,
    journal: Option<Box<durable::Journal>>,
}

/// One call that changes a service, as the journal records it and replay runs it again: every
/// change goes through [`RenewalService::execute`], live or replayed.
#[derive(Debug, Clone)]
pub(crate) enum Command {
    CreateSet {
        duration: Duration,
    },
    Add {
        set: SetId,
        lease: Lease,
        membership: Duration,
        renew: Duration,
    },
    Remove {
        set: SetId,
        lease: Lease,
    },
    SetWarning {
        set: SetId,
        min_warning: Duration,
        handback: Vec<u8>,
    },
    SetFailure {
        set: SetId,
        handback: Vec<u8>,
    },
    ClearWarning {
        set: SetId,
    },
    ClearFailure {
        set: SetId,
    },
    UnknownEvent {
        event_id: EventId,
    },
    /// The host delivered an event handed out ([`RenewalService::delivered`]).
    Delivered {
        event_id: EventId,
        sequence: u64,
    },
    /// A host's locator for a client-lease landlord (no time: it changes nothing else).
    Locate {
        landlord: LandlordId,
        locator: Vec<u8>,
    },
    Request(Request),
    Timeout,
    Transmit,
    Reply(Reply),
    Failure {
        id: u64,
        error: LeaseError,
    },
    /// Continue after a restart ([`RenewalService::resume`]); carries the time before it.
    Resume {
        before: Millis,
    },
}

/// What [`RenewalService::execute`] answers.
pub(crate) enum Output {
    Set(Result<(SetId, Lease)>),
    Unit(Result<()>),
    Removed(Result<Option<Lease>>),
    Registration(Result<EventRegistration>),
    Known(bool),
    Reply(Reply),
    Transmit(Option<Transmit>),
    Nothing,
}

impl RenewalService {
    /// A service with no sets.
    pub fn new(config: RenewalServiceConfig) -> Result<RenewalService> {
        let policy = config.set_policy.build()?;
        let landlord = Landlord::new(config.landlord.clone(), policy);
        let manager = RenewalManager::new(config.manager.clone());
        Ok(RenewalService {
            config,
            landlord,
            manager,
            next_set: 1,
            sets: BTreeMap::new(),
            holders: BTreeMap::new(),
            clients: BTreeMap::new(),
            covered: BTreeMap::new(),
            memberships_due: BTreeSet::new(),
            warnings_due: BTreeSet::new(),
            sets_due: BTreeSet::new(),
            events: EventTable::new(),
            out: VecDeque::new(),
            unacked: BTreeMap::new(),
            unacked_dropped: 0,
            clock: Millis::MIN,
            set_offset: 0,
            locators: BTreeMap::new(),
            by_locator: BTreeMap::new(),
            journal: None,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &RenewalServiceConfig {
        &self.config
    }

    /// The id of the service's landlord: every set lease carries it.
    pub fn id(&self) -> LandlordId {
        self.landlord.id()
    }

    /// The renewal manager that renews the client leases (read-only).
    pub fn manager(&self) -> &RenewalManager {
        &self.manager
    }

    /// The service's time on the host's clock (`i64::MIN` before any call with a `now`): the
    /// latest `now` it was given, or, while the host's clock is behind the service's time, that
    /// time on the host's clock. The service's own clock (this plus
    /// [`RenewalService::clock_offset`]) never runs backwards (see the module docs, "Time").
    pub fn now(&self) -> Millis {
        if self.clock == Millis::MIN {
            Millis::MIN
        } else {
            self.to_host(self.clock)
        }
    }

    /// How far the service's time is ahead of the host's clock: 0 until the host's clock steps
    /// back, then the sum of the steps back seen.
    pub fn clock_offset(&self) -> Millis {
        self.manager.clock_offset()
    }

    /// Moves the service's time to the host's `now` and returns it. The service's time is its
    /// renewal manager's: one clock, one rule ([`RenewalManager`], "Time").
    #[inline]
    fn tick(&mut self, now: Millis) -> Millis {
        self.clock = self.manager.tick(now);
        self.clock
    }

    /// The host's `now` read as the service's time, without moving it.
    #[inline]
    fn at(&self, now: Millis) -> Millis {
        self.clock.max(now.saturating_add(self.clock_offset()))
    }

    /// A time on the service's clock, on the host's.
    fn to_host(&self, t: Millis) -> Millis {
        if t == time::FOREVER {
            t
        } else {
            t.saturating_sub(self.clock_offset())
        }
    }

    /// A time on the host's clock, on the service's.
    fn to_mine(&self, t: Millis) -> Millis {
        if t == time::FOREVER {
            t
        } else {
            t.saturating_add(self.clock_offset()).min(time::FOREVER - 1)
        }
    }

    fn lease_mine(&self, mut lease: Lease) -> Lease {
        lease.set_expiration(self.to_mine(lease.expiration()));
        lease
    }

    fn lease_to_host(&self, mut lease: Lease) -> Lease {
        lease.set_expiration(self.to_host(lease.expiration()));
        lease
    }

    fn event_to_host(&self, mut e: SetEvent) -> SetEvent {
        e.kind = match e.kind {
            SetEventKind::ExpirationWarning { set, expiration } => {
                SetEventKind::ExpirationWarning { set, expiration: self.to_host(expiration) }
            }
            SetEventKind::RenewalFailure { set, lease, error } => {
                SetEventKind::RenewalFailure { set, lease: self.lease_to_host(lease), error }
            }
        };
        e
    }

    /// Moves the service's time to the host's `now` (`None` for calls without one), journals
    /// `command` with that `now` (if journaled) and runs it.
    fn command(&mut self, command: Command, now: Option<Millis>) -> Output {
        let before = self.clock;
        let t = match now {
            Some(raw) => self.tick(raw),
            None => self.clock,
        };
        let command = match command {
            Command::Resume { .. } => Command::Resume { before },
            c => c,
        };
        if let Some(j) = self.journal.as_deref_mut() {
            j.command(&command, now, t);
        }
        self.execute(&command, t)
    }

    /// For calls that change nothing but the time: moves it to the host's `now`, and journals
    /// that if it changed anything (an answer about to leave may depend on it).
    fn note_time(&mut self, now: Millis) {
        let before = (self.clock, self.clock_offset());
        let t = self.tick(now);
        if before != (t, self.clock_offset()) {
            if let Some(j) = self.journal.as_deref_mut() {
                j.clock_record(now, t);
            }
        }
    }

    /// Creates a set whose lease lasts (at most) `lease_duration` (positive, [`time::FOREVER`]
    /// or [`time::ANY`]; the policy decides), from `now` (read as the service's time: never
    /// before the latest `now` it has seen). Returns the set and its lease. The policy may deny
    /// it ([`LeaseError::LeaseDenied`]), as does a service whose set numbers are all used.
    pub fn create_set(&mut self, lease_duration: Duration, now: Millis) -> Result<(SetId, Lease)> {
        match self.command(Command::CreateSet { duration: lease_duration }, Some(now)) {
            Output::Set(r) => r,
            _ => unreachable!("create_set answers a set"),
        }
    }

    /// A handle on one set, with the methods of Jini's `LeaseRenewalSet`.
    pub fn set(&mut self, id: SetId) -> RenewalSet<'_> {
        RenewalSet::new(self, id)
    }

    /// The sets alive, in creation order (a set past its lease's expiration counts until
    /// [`RenewalService::handle_timeout`] destroys it).
    pub fn sets(&self) -> Vec<SetId> {
        self.sets.keys().copied().collect()
    }

    /// The set's own lease as the service sees it at `now` (read as the service's time: never
    /// before the latest `now` it has seen); `None` for a set that is gone.
    pub fn set_lease(&self, set: SetId, now: Millis) -> Option<Lease> {
        self.set_lease_in(set, self.at(now)).map(|l| self.lease_to_host(l))
    }

    /// The set's lease at the service's time `now`, its expiration on the service's clock.
    fn set_lease_in(&self, set: SetId, now: Millis) -> Option<Lease> {
        let s = self.sets.get(&set)?;
        self.landlord.lease(s.cookie, now)
    }

    /// The set whose lease is `lease`, if it is alive at `now` (read as the service's time).
    pub fn set_of(&self, lease: &Lease, now: Millis) -> Option<SetId> {
        if lease.landlord() != self.landlord.id() {
            return None;
        }
        self.landlord.get(lease.cookie(), self.at(now)).map(|(_, s)| *s)
    }

    /// The set, if its lease is honoured at the service's time `now`.
    fn live_set(&self, set: SetId, now: Millis) -> Result<&SetState> {
        match self.sets.get(&set) {
            Some(s) if self.landlord.get(s.cookie, now).is_some() => Ok(s),
            _ => Err(LeaseError::UnknownLease),
        }
    }

    /// Puts `lease` into `set` (Norm's `renewFor`), or updates its membership if it is there:
    /// it is renewed until `membership_duration` from `now` (read as the service's time: never
    /// before the latest `now` it has seen) has passed, asking for `renew_duration` each time
    /// (less when less membership remains).
    ///
    /// Rules (LR): `renew_duration` is [`time::ANY`] only with a [`time::FOREVER`]
    /// membership, otherwise positive or [`time::FOREVER`], else [`LeaseError::InvalidArgument`];
    /// a membership of zero or less is accepted and the lease leaves the set at once, without an
    /// event; a set lease of this same service is an invalid argument. An unknown or expired set
    /// is [`LeaseError::UnknownLease`].
    pub fn add(
        &mut self,
        set: SetId,
        lease: Lease,
        membership_duration: Duration,
        renew_duration: Duration,
        now: Millis,
    ) -> Result<()> {
        let c = Command::Add { set, lease, membership: membership_duration, renew: renew_duration };
        match self.command(c, Some(now)) {
            Output::Unit(r) => r,
            _ => unreachable!("add answers a unit"),
        }
    }

    /// Takes `lease` out of `set` without cancelling it (Norm's `remove`): the lease as last
    /// known, or `None` if the set did not hold it. An unknown set is
    /// [`LeaseError::UnknownLease`]. `now` is read as the service's time.
    pub fn remove(&mut self, set: SetId, lease: &Lease, now: Millis) -> Result<Option<Lease>> {
        match self.command(Command::Remove { set, lease: *lease }, Some(now)) {
            Output::Removed(r) => r,
            _ => unreachable!("remove answers a lease"),
        }
    }

    /// The client leases in `set`, each as last known (after the latest renewal). `now` is read
    /// as the service's time.
    pub fn leases(&self, set: SetId, now: Millis) -> Result<Vec<Lease>> {
        let s = self.live_set(set, self.at(now))?;
        Ok(s.members
            .keys()
            .filter_map(|k| self.client_lease(*k))
            .map(|l| self.lease_to_host(l))
            .collect())
    }

    /// The membership of `lease` in `set`, if the set holds it. `now` is read as the service's
    /// time.
    pub fn membership(&self, set: SetId, lease: &Lease, now: Millis) -> Result<Option<Membership>> {
        let s = self.live_set(set, self.at(now))?;
        Ok(s.members
            .get(&key_of(lease))
            .map(|m| Membership { expiration: self.to_host(m.expiration), ..*m }))
    }

    /// Registers for the set's expiration-warning event, due `min_warning` before the set's
    /// lease expires (at once if less time is left); replaces an earlier registration of the
    /// set, keeping its event id and numbering. `min_warning` must not be negative. `now` is
    /// read as the service's time.
    pub fn set_expiration_warning_listener(
        &mut self,
        set: SetId,
        min_warning: Duration,
        handback: Vec<u8>,
        now: Millis,
    ) -> Result<EventRegistration> {
        match self.command(Command::SetWarning { set, min_warning, handback }, Some(now)) {
            Output::Registration(r) => r,
            _ => unreachable!("a listener answers a registration"),
        }
    }

    /// Registers for the set's renewal-failure events; replaces an earlier registration of the
    /// set, keeping its event id and numbering. `now` is read as the service's time.
    pub fn set_renewal_failure_listener(
        &mut self,
        set: SetId,
        handback: Vec<u8>,
        now: Millis,
    ) -> Result<EventRegistration> {
        match self.command(Command::SetFailure { set, handback }, Some(now)) {
            Output::Registration(r) => r,
            _ => unreachable!("a listener answers a registration"),
        }
    }

    /// Ends the set's expiration-warning registration, if any. `now` is read as the service's
    /// time.
    pub fn clear_expiration_warning_listener(&mut self, set: SetId, now: Millis) -> Result<()> {
        match self.command(Command::ClearWarning { set }, Some(now)) {
            Output::Unit(r) => r,
            _ => unreachable!("clear answers a unit"),
        }
    }

    /// Ends the set's renewal-failure registration, if any. `now` is read as the service's
    /// time.
    pub fn clear_renewal_failure_listener(&mut self, set: SetId, now: Millis) -> Result<()> {
        match self.command(Command::ClearFailure { set }, Some(now)) {
            Output::Unit(r) => r,
            _ => unreachable!("clear answers a unit"),
        }
    }

    /// The host reports that the listener of `event_id` answered "unknown event": that
    /// registration alone ends (the set and its other registration stay), and its events not
    /// yet handed out are dropped. Returns whether it was active.
    pub fn unknown_event(&mut self, event_id: EventId) -> bool {
        match self.command(Command::UnknownEvent { event_id }, None) {
            Output::Known(k) => k,
            _ => unreachable!("unknown_event answers a flag"),
        }
    }

    /// The host reports that the event `(event_id, sequence)` handed out by
    /// [`RenewalService::poll_event`] reached its listener (or that the host gave up on it):
    /// it leaves the outbox and is not handed out again after a restart (module docs,
    /// "Delivery"). Journaled as its own record; nothing waits for it to be durable (a record
    /// lost in a crash means one more delivery, which the listener drops as a repeat). Returns
    /// whether the event was in the outbox (a repeated or late report, or one for a
    /// registration that ended, changes nothing). `now` is read as the service's time.
    pub fn delivered(&mut self, event_id: EventId, sequence: u64, now: Millis) -> bool {
        match self.command(Command::Delivered { event_id, sequence }, Some(now)) {
            Output::Known(k) => k,
            _ => unreachable!("delivered answers a flag"),
        }
    }

    /// Events handed out and not yet reported [`RenewalService::delivered`], over every
    /// registration (each keeps at most [`MAX_UNACKED_EVENTS`]).
    pub fn unacked_events(&self) -> usize {
        self.unacked.values().map(VecDeque::len).sum()
    }

    /// Events dropped from a full outbox (the oldest of a registration that had
    /// [`MAX_UNACKED_EVENTS`] handed out and not delivered) since this service value was built
    /// (records replayed into it count): each is still delivered by the host that has it, but
    /// would not be handed out again after a crash. A host logs it when it grows.
    pub fn unacked_dropped(&self) -> u64 {
        self.unacked_dropped
    }

    /// Records how the host reaches the landlord of client leases whose landlord id is
    /// `landlord`: `locator` is opaque to the service (a list of URLs, an address, a channel
    /// name), journaled and snapshotted with it, so that a host restored from its store knows
    /// again where to send each [`Transmit`] ([`RenewalService::locator`] of its `landlord`).
    /// Replaces an earlier locator of that id; an empty `locator` forgets it. A host whose
    /// client leases come from landlords that share ids (two clusters, each with a landlord 1)
    /// gives each landlord an id of its own inside the service and translates at its edge.
    ///
    /// A locator longer than [`MAX_LOCATOR_BYTES`] is an invalid argument, as is a new one
    /// beyond [`MAX_LOCATORS`]. Like every change, it may be relied on (a reply about it may
    /// leave) once [`RenewalService::journal_seq`] is durable.
    pub fn set_locator(&mut self, landlord: LandlordId, locator: Vec<u8>) -> Result<()> {
        match self.command(Command::Locate { landlord, locator }, None) {
            Output::Unit(r) => r,
            _ => unreachable!("set_locator answers a unit"),
        }
    }

    /// The host's locator of `landlord`, if it gave one ([`RenewalService::set_locator`]).
    pub fn locator(&self, landlord: LandlordId) -> Option<&[u8]> {
        self.locators.get(&landlord).map(|v| v.as_slice())
    }

    /// Every locator the host gave, by landlord id.
    pub fn locators(&self) -> impl Iterator<Item = (LandlordId, &[u8])> + '_ {
        self.locators.iter().map(|(k, v)| (*k, v.as_slice()))
    }

    fn do_locate(&mut self, landlord: LandlordId, locator: &[u8]) -> Result<()> {
        if locator.len() > MAX_LOCATOR_BYTES {
            return Err(LeaseError::InvalidArgument(format!(
                "a locator is at most {MAX_LOCATOR_BYTES} bytes, got {}",
                locator.len()
            )));
        }
        if !locator.is_empty()
            && !self.locators.contains_key(&landlord)
            && self.locators.len() >= MAX_LOCATORS
        {
            return Err(LeaseError::InvalidArgument(format!(
                "the service holds {MAX_LOCATORS} locators already"
            )));
        }
        if let Some(old) = self.locators.remove(&landlord) {
            if self.by_locator.get(&old) == Some(&landlord) {
                self.by_locator.remove(&old);
            }
        }
        if !locator.is_empty() {
            self.locators.insert(landlord, locator.to_vec());
            self.by_locator.entry(locator.to_vec()).or_insert(landlord);
        }
        Ok(())
    }

    /// The active event registrations of `set` (expiration warning first, then failure).
    /// `now` is read as the service's time.
    pub fn registrations(&self, set: SetId, now: Millis) -> Result<Vec<EventRegistration>> {
        let s = self.live_set(set, self.at(now))?;
        let ids = s.warning.map(|w| w.event_id).into_iter().chain(s.failure);
        ids.map(|id| self.registration(set, id, self.at(now))).collect()
    }

    /// Answers a request about set leases (renew, cancel, renew_all, cancel_all) from a client
    /// of the service, at `now` (read as the service's time). A cancelled set is destroyed at
    /// once. Grant requests are refused: sets are made with [`RenewalService::create_set`].
    ///
    /// With a journal, the reply may leave only once [`RenewalService::journal_seq`] (read right
    /// after this call) is durable: see [`crate::journal::Gate`].
    pub fn handle_request(&mut self, request: &Request, now: Millis) -> Reply {
        match self.command(Command::Request(request.clone()), Some(now)) {
            Output::Reply(r) => r,
            _ => unreachable!("a request answers a reply"),
        }
    }

    /// Decodes a request about set leases, answers it, and encodes the reply in the same
    /// encoding; an undecodable request gets an error reply with id 0.
    pub fn handle_bytes(&mut self, bytes: &[u8], encoding: Encoding, now: Millis) -> Vec<u8> {
        let reply = match Request::decode(bytes, encoding, &self.landlord.config().limits) {
            Ok(req) => self.handle_request(&req, now),
            Err(e) => {
                self.note_time(now);
                Reply {
                    id: 0,
                    landlord: self.landlord.id(),
                    body: ReplyBody::Error(WireError::from(&e)),
                }
            }
        };
        reply.encode(encoding)
    }

    /// When the host should next call [`RenewalService::handle_timeout`] (host's clock). With
    /// a journal and sets held, never later than the next clock record is due
    /// ([`LandlordConfig::journal_clock_interval`] of the set-lease landlord's configuration):
    /// after a crash, set leases resume from the last recorded time.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.poll_timeout_in().map(|t| self.to_host(t))
    }

    /// [`RenewalService::poll_timeout`] on the service's clock.
    fn poll_timeout_in(&self) -> Option<Millis> {
        let clock = match &self.journal {
            Some(j) if !self.sets.is_empty() && self.config.landlord.journal_clock_interval > 0 => {
                Some(j.clock().saturating_add(self.config.landlord.journal_clock_interval))
            }
            _ => None,
        };
        [
            self.sets_due.first().map(|d| d.0),
            self.memberships_due.first().map(|d| d.0),
            self.warnings_due.first().map(|d| d.0),
            self.manager.poll_timeout_in(),
            clock,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Advances time to `now` (read as the service's time: a `now` before the latest seen
    /// changes nothing about time): destroys sets whose lease expired, removes client leases
    /// whose membership expiration is reached (silently), issues due expiration warnings, and
    /// lets the manager renew and detect expiries. Sets go first, so no client lease of a set
    /// that expired by `now` is renewed for it: while the landlord has expired set leases left
    /// to sweep (more than its per-call budget expired at once), the manager waits, and
    /// [`RenewalService::poll_timeout`] asks to be called again at once.
    pub fn handle_timeout(&mut self, now: Millis) {
        self.command(Command::Timeout, Some(now));
    }

    /// The next renewal request to send to a client lease's landlord, sent at `now` (read as
    /// the service's time).
    ///
    /// With a journal, it may be sent only once [`RenewalService::journal_seq`] (read right
    /// after this call) is durable: a request the service forgets in a crash must not be out
    /// (its id would be handed out again after the restart).
    pub fn poll_transmit(&mut self, now: Millis) -> Option<Transmit> {
        if !self.manager.has_transmit() {
            self.note_time(now);
            return None;
        }
        match self.command(Command::Transmit, Some(now)) {
            Output::Transmit(t) => t,
            _ => unreachable!("poll_transmit answers a transmit"),
        }
    }

    /// Whether [`RenewalService::poll_transmit`] has a request to hand out (or requests to
    /// drop). When it has not, `poll_transmit` only moves the service's time, which a
    /// journaled service records: a host that polls after every write asks this first, so
    /// that polling does not make a record (and a write) of its own.
    pub fn wants_transmit(&self) -> bool {
        self.manager.has_transmit()
    }

    /// A landlord's reply to a request from [`RenewalService::poll_transmit`], received at
    /// `now` (read as the service's time).
    pub fn handle_reply(&mut self, reply: &Reply, now: Millis) {
        self.command(Command::Reply(reply.clone()), Some(now));
    }

    /// The request `request_id` got no reply: `error` says why (an indefinite error is retried).
    /// `now` is read as the service's time.
    pub fn handle_failure(&mut self, request_id: u64, error: LeaseError, now: Millis) {
        self.command(Command::Failure { id: request_id, error }, Some(now));
    }

    /// The next event to deliver to a set's listener. It stays in the outbox until the host
    /// reports it with [`RenewalService::delivered`]; after a restart, events handed out and not
    /// reported are handed out again first (module docs, "Delivery": at least once, the
    /// listener drops repeats by event id and sequence number).
    ///
    /// With a journal, it may be delivered only once [`RenewalService::journal_seq`] (read
    /// right after this call) is durable: that it was handed out is journaled too, and it never
    /// leaves unless that is durable.
    pub fn poll_event(&mut self) -> Option<SetEvent> {
        let e = self.hand_out()?;
        if let Some(j) = self.journal.as_deref_mut() {
            j.taken();
        }
        Some(self.event_to_host(e))
    }

    /// Takes the next event out of the queue into its registration's outbox (live, or a
    /// `taken` record replayed): an event of a registration that has ended is not kept.
    fn hand_out(&mut self) -> Option<SetEvent> {
        let e = self.out.pop_front()?;
        if self.events.contains(e.event_id) {
            let q = self.unacked.entry(e.event_id).or_default();
            if q.len() >= MAX_UNACKED_EVENTS {
                q.pop_front();
                self.unacked_dropped += 1;
            }
            q.push_back(e.clone());
        }
        Some(e)
    }

    fn do_delivered(&mut self, event_id: EventId, sequence: u64) -> bool {
        let Some(q) = self.unacked.get_mut(&event_id) else { return false };
        let Some(i) = q.iter().position(|e| e.sequence == sequence) else { return false };
        q.remove(i);
        if q.is_empty() {
            self.unacked.remove(&event_id);
        }
        true
    }

    /// After a restart: events handed out and not delivered go back in front of the queue,
    /// in sequence order per registration (each registration's outbox holds events older than
    /// any of its events still queued).
    fn requeue_unacked(&mut self) {
        if self.unacked.is_empty() {
            return;
        }
        let mut out: VecDeque<SetEvent> =
            std::mem::take(&mut self.unacked).into_values().flatten().collect();
        out.append(&mut self.out);
        self.out = out;
    }

    /// Runs one command at the service's time `now`: the one place where the service changes,
    /// whether the call is live or replayed from the journal.
    pub(crate) fn execute(&mut self, command: &Command, now: Millis) -> Output {
        match command {
            Command::CreateSet { duration } => Output::Set(self.do_create_set(*duration, now)),
            Command::Add { set, lease, membership, renew } => {
                Output::Unit(self.do_add(*set, *lease, *membership, *renew, now))
            }
            Command::Remove { set, lease } => Output::Removed(self.do_remove(*set, lease, now)),
            Command::SetWarning { set, min_warning, handback } => {
                Output::Registration(self.do_set_warning(*set, *min_warning, handback, now))
            }
            Command::SetFailure { set, handback } => {
                Output::Registration(self.do_set_failure(*set, handback, now))
            }
            Command::ClearWarning { set } => Output::Unit(self.do_clear_warning(*set, now)),
            Command::ClearFailure { set } => Output::Unit(self.do_clear_failure(*set, now)),
            Command::UnknownEvent { event_id } => Output::Known(self.do_unknown_event(*event_id)),
            Command::Delivered { event_id, sequence } => {
                Output::Known(self.do_delivered(*event_id, *sequence))
            }
            Command::Locate { landlord, locator } => {
                Output::Unit(self.do_locate(*landlord, locator))
            }
            Command::Request(r) => Output::Reply(self.do_request(r, now)),
            Command::Timeout => {
                self.do_timeout(now);
                Output::Nothing
            }
            Command::Transmit => Output::Transmit(self.manager.poll_transmit_in(now)),
            Command::Reply(r) => {
                self.manager.handle_reply_in(r, now);
                self.drain_manager(now);
                Output::Nothing
            }
            Command::Failure { id, error } => {
                self.manager.handle_failure_in(*id, error.clone(), now);
                self.drain_manager(now);
                Output::Nothing
            }
            Command::Resume { before } => {
                self.requeue_unacked();
                self.do_resume(*before, now);
                Output::Nothing
            }
        }
    }

    fn do_create_set(&mut self, lease_duration: Duration, now: Millis) -> Result<(SetId, Lease)> {
        if lease_duration == 0 {
            return Err(LeaseError::InvalidArgument(
                "a set lease duration must be positive, FOREVER or ANY, got 0 ms".into(),
            ));
        }
        time::check_requested(lease_duration)?;
        // Set numbers start at 1 and are never reused; a restored counter may be at its end.
        let number = self.next_set.max(1);
        let next = number.checked_add(1).ok_or_else(|| {
            LeaseError::LeaseDenied("every set number of this service has been used".into())
        })?;
        let id = SetId(number);
        let grant = self.landlord.grant(id, lease_duration, now)?;
        self.next_set = next;
        self.sets.insert(id, SetState::new(grant.cookie));
        self.file_set(id, grant.expiration);
        let lease = Lease::new(self.landlord.id(), grant.cookie, grant.expiration);
        Ok((id, self.lease_to_host(lease)))
    }

    fn do_add(
        &mut self,
        set: SetId,
        lease: Lease,
        membership_duration: Duration,
        renew_duration: Duration,
        now: Millis,
    ) -> Result<()> {
        self.live_set(set, now)?;
        if lease.landlord() == self.landlord.id() {
            return Err(LeaseError::InvalidArgument(
                "a set lease of this renewal service cannot be put into one of its sets".into(),
            ));
        }
        check_membership(membership_duration, renew_duration)?;
        // The host's copy, read on the service's clock.
        let lease = self.lease_mine(lease);
        let key = key_of(&lease);
        let expiration = if membership_duration < 0 {
            now.saturating_add(membership_duration)
        } else {
            time::expiration_after(now, membership_duration)
        };
        // The caller's copy is newer than anything we hold unless the manager renewed it since.
        if !self.manager_has(&lease) {
            self.clients.insert(key, lease);
        } else {
            self.clients.entry(key).or_insert(lease);
        }
        self.drop_membership(set, key);
        if expiration > now {
            let m = Membership { expiration, renew_duration };
            self.sets.get_mut(&set).expect("checked").members.insert(key, m);
            self.holders.entry(key).or_default().insert(set);
            if expiration != time::FOREVER {
                self.memberships_due.insert((expiration, set, key));
            }
        }
        self.resync(key, now)
    }

    fn do_remove(&mut self, set: SetId, lease: &Lease, now: Millis) -> Result<Option<Lease>> {
        self.live_set(set, now)?;
        let key = key_of(lease);
        let held = self.sets.get(&set).expect("checked").members.contains_key(&key);
        if !held {
            return Ok(None);
        }
        let current = self.client_lease(key).map(|l| self.lease_to_host(l));
        self.drop_membership(set, key);
        self.resync(key, now)?;
        Ok(current)
    }

    fn do_set_warning(
        &mut self,
        set: SetId,
        min_warning: Duration,
        handback: &[u8],
        now: Millis,
    ) -> Result<EventRegistration> {
        check_min_warning(min_warning)?;
        self.live_set(set, now)?;
        let source = self.source(set);
        let existing = self.sets[&set].warning.map(|w| w.event_id);
        let event_id = match existing {
            Some(id) => {
                self.events.set_handback(id, handback.to_vec())?;
                id
            }
            None => self.events.register(source, handback.to_vec()),
        };
        self.unschedule_warning(set);
        self.sets.get_mut(&set).expect("checked").warning =
            Some(Warning { event_id, min_warning, sent_for: None, due: None });
        self.arm_warning(set, now);
        self.registration(set, event_id, now)
    }

    fn do_set_failure(
        &mut self,
        set: SetId,
        handback: &[u8],
        now: Millis,
    ) -> Result<EventRegistration> {
        self.live_set(set, now)?;
        let source = self.source(set);
        let event_id = match self.sets[&set].failure {
            Some(id) => {
                self.events.set_handback(id, handback.to_vec())?;
                id
            }
            None => self.events.register(source, handback.to_vec()),
        };
        self.sets.get_mut(&set).expect("checked").failure = Some(event_id);
        self.registration(set, event_id, now)
    }

    fn do_clear_warning(&mut self, set: SetId, now: Millis) -> Result<()> {
        self.live_set(set, now)?;
        self.unschedule_warning(set);
        if let Some(w) = self.sets.get_mut(&set).expect("checked").warning.take() {
            self.events.remove(w.event_id);
            self.unacked.remove(&w.event_id);
        }
        Ok(())
    }

    fn do_clear_failure(&mut self, set: SetId, now: Millis) -> Result<()> {
        self.live_set(set, now)?;
        if let Some(id) = self.sets.get_mut(&set).expect("checked").failure.take() {
            self.events.remove(id);
            self.unacked.remove(&id);
        }
        Ok(())
    }

    fn do_unknown_event(&mut self, event_id: EventId) -> bool {
        let Some(reg) = self.events.remove(event_id) else {
            return false;
        };
        self.out.retain(|e| e.event_id != event_id);
        self.unacked.remove(&event_id);
        let set = SetId(reg.source.object);
        if let Some(s) = self.sets.get_mut(&set) {
            if s.failure == Some(event_id) {
                s.failure = None;
            }
            if s.warning.map(|w| w.event_id) == Some(event_id) {
                self.unschedule_warning(set);
                self.sets.get_mut(&set).expect("present").warning = None;
            }
        }
        true
    }

    fn do_request(&mut self, request: &Request, now: Millis) -> Reply {
        let body = match &request.body {
            RequestBody::Grant { .. } => {
                ReplyBody::Error(WireError::from(&LeaseError::InvalidArgument(
                    "a renewal service makes set leases with create_set, not grant".into(),
                )))
            }
            RequestBody::Renew { cookie, duration } => {
                match self.renew_set_lease(*cookie, *duration, now) {
                    Ok(d) => ReplyBody::Renewed { duration: d },
                    Err(e) => ReplyBody::Error(WireError::from(&e)),
                }
            }
            RequestBody::Cancel { cookie } => match self.cancel_set_lease(*cookie, now) {
                Ok(()) => ReplyBody::Cancelled,
                Err(e) => ReplyBody::Error(WireError::from(&e)),
            },
            RequestBody::RenewAll { items } => ReplyBody::RenewedAll {
                results: items
                    .iter()
                    .map(|&(c, d)| Outcome::from(self.renew_set_lease(c, d, now)))
                    .collect(),
            },
            RequestBody::CancelAll { cookies } => ReplyBody::CancelledAll {
                results: cookies
                    .iter()
                    .map(|&c| Outcome::from(self.cancel_set_lease(c, now)))
                    .collect(),
            },
        };
        Reply { id: request.id, landlord: self.landlord.id(), body }
    }

    fn renew_set_lease(
        &mut self,
        cookie: Cookie,
        duration: Duration,
        now: Millis,
    ) -> Result<Duration> {
        let granted = self.landlord.renew(cookie, duration, now)?;
        if let Some((expiration, set)) = self.landlord.get(cookie, now) {
            let set = *set;
            self.file_set(set, expiration);
            self.arm_warning(set, now);
        }
        Ok(granted)
    }

    fn cancel_set_lease(&mut self, cookie: Cookie, now: Millis) -> Result<()> {
        let set = self.landlord.cancel(cookie, now)?;
        self.destroy_set(set, now);
        Ok(())
    }

    fn do_timeout(&mut self, now: Millis) {
        self.landlord.handle_timeout(now);
        while let Some(expired) = self.landlord.poll_expired() {
            self.destroy_set(expired.resource, now);
        }
        // Set leases due but not expired yet: the landlord ran out of its per-call budget.
        let sweeping = self.sets_due.first().is_some_and(|d| d.0 <= now);
        while let Some(&(due, set, key)) = self.memberships_due.first() {
            if due > now {
                break;
            }
            self.memberships_due.pop_first();
            self.drop_membership(set, key);
            // Only this lease changes; a failure here leaves the manager as it was.
            let _ = self.resync(key, now);
        }
        while let Some(&(due, set)) = self.warnings_due.first() {
            if due > now {
                break;
            }
            self.warnings_due.pop_first();
            self.fire_warning(set, now);
        }
        if sweeping {
            return;
        }
        self.manager.handle_timeout_in(now);
        self.drain_manager(now);
    }

    // ---- internals ----

    /// Files when the lease of `set`, expiring at `expiration` (host's clock), is due to
    /// expire: the first millisecond past its expiration plus the landlord's grace.
    fn file_set(&mut self, set: SetId, expiration: Millis) {
        let due = if expiration == time::FOREVER {
            None
        } else {
            let deadline = time::expiration_after(expiration, self.config.landlord.grace.max(0));
            Some(deadline.saturating_add(1))
        };
        let Some(s) = self.sets.get_mut(&set) else { return };
        if let Some(t) = s.due {
            self.sets_due.remove(&(t, set));
        }
        s.due = due;
        if let Some(t) = due {
            self.sets_due.insert((t, set));
        }
    }

    /// Files every set's lease again (after a restore or a resume moved the host's view of
    /// their expirations).
    fn file_all_sets(&mut self) {
        let leases: Vec<(Millis, SetId)> =
            self.landlord.iter().map(|(_, expiration, set)| (expiration, *set)).collect();
        for (expiration, set) in leases {
            if self.sets.contains_key(&set) {
                self.file_set(set, expiration);
            }
        }
    }

    fn source(&self, set: SetId) -> EventSource {
        EventSource { service: self.landlord.id(), object: set.0 }
    }

    fn registration(
        &self,
        set: SetId,
        event_id: EventId,
        now: Millis,
    ) -> Result<EventRegistration> {
        let lease = self.set_lease_in(set, now).ok_or(LeaseError::UnknownLease)?;
        let lease = self.lease_to_host(lease);
        self.events.registration(event_id, lease).ok_or(LeaseError::UnknownLease)
    }

    fn manager_has(&self, lease: &Lease) -> bool {
        self.manager.lease_in(lease).is_some()
    }

    /// The current copy of a client lease: the manager's while it renews it, else the last known.
    fn client_lease(&self, key: ClientKey) -> Option<Lease> {
        let stored = *self.clients.get(&key)?;
        Some(self.manager.lease_in(&stored).unwrap_or(stored))
    }

    /// Removes `key` from `set` (no event, no manager update).
    fn drop_membership(&mut self, set: SetId, key: ClientKey) {
        let Some(s) = self.sets.get_mut(&set) else { return };
        if let Some(m) = s.members.remove(&key) {
            self.memberships_due.remove(&(m.expiration, set, key));
        }
        if let Some(h) = self.holders.get_mut(&key) {
            h.remove(&set);
            if h.is_empty() {
                self.holders.remove(&key);
            }
        }
    }

    /// The governing membership of a client lease among the sets holding it at `now`: the latest
    /// desired expiration, ties to the lowest set id.
    fn governing(&self, key: ClientKey, now: Millis) -> Option<Membership> {
        let mut best: Option<Membership> = None;
        for set in self.holders.get(&key).into_iter().flatten() {
            let m = self.sets[set].members[&key];
            if m.expiration <= now {
                continue;
            }
            match best {
                Some(b) if b.expiration >= m.expiration => {}
                _ => best = Some(m),
            }
        }
        best
    }

    /// Tells the manager what the sets now want of a client lease: renew it under the governing
    /// membership, or stop renewing it (never cancelling) when no set holds it.
    fn resync(&mut self, key: ClientKey, now: Millis) -> Result<()> {
        let Some(lease) = self.client_lease(key) else { return Ok(()) };
        let governing = self.governing(key, now);
        let covered = self.covered.get(&key).copied();
        match governing {
            // The landlord already holds it to the end of every membership: nothing to renew.
            Some(m) if !self.manager_has(&lease) && covered.is_some_and(|c| m.expiration <= c) => {
                Ok(())
            }
            Some(m) => {
                self.covered.remove(&key);
                self.clients.insert(key, lease);
                // Keep the manager's entry (and any renewal in flight) when only the desired
                // expiration moves; replace it when the renew duration changes.
                let same_renew = self.manager.renew_duration(&lease).ok() == Some(m.renew_duration);
                if same_renew {
                    if self.manager.expiration_in(&lease).ok() != Some(m.expiration) {
                        self.manager.set_expiration_in(&lease, m.expiration, now)?;
                    }
                    Ok(())
                } else {
                    self.manager.renew_until_in(lease, m.expiration, m.renew_duration, now)
                }
            }
            None => {
                if self.manager_has(&lease) {
                    let _ = self.manager.remove_in(&lease);
                }
                if !self.holders.contains_key(&key) {
                    self.clients.remove(&key);
                    self.covered.remove(&key);
                }
                Ok(())
            }
        }
    }

    fn drain_manager(&mut self, now: Millis) {
        while let Some(ev) = self.manager.poll_event_in() {
            match ev {
                RenewalEvent::Renewed { lease } => {
                    let key = key_of(&lease);
                    if self.clients.contains_key(&key) {
                        self.clients.insert(key, lease);
                    }
                }
                RenewalEvent::RenewalFailed { lease, error, .. } => {
                    self.renewal_failed(lease, error)
                }
                RenewalEvent::DesiredExpirationReached { lease, .. } => {
                    // The manager stops when the grant reaches the governing desired expiration
                    // (its local copy may end a few ms earlier, by its clock-drift margin). The
                    // memberships stay until their own expirations, without renewals.
                    let key = key_of(&lease);
                    if !self.holders.contains_key(&key) {
                        continue;
                    }
                    self.clients.insert(key, lease);
                    if let Some(m) = self.governing(key, now) {
                        self.covered.insert(key, m.expiration);
                    }
                }
            }
        }
    }

    fn renewal_failed(&mut self, lease: Lease, error: Option<LeaseError>) {
        let key = key_of(&lease);
        let sets: Vec<SetId> = self.holders.get(&key).into_iter().flatten().copied().collect();
        for set in sets {
            self.drop_membership(set, key);
            if let Some(event_id) = self.sets[&set].failure {
                let kind = SetEventKind::RenewalFailure { set, lease, error: error.clone() };
                if let Some(e) = self.events.next_event(event_id, kind) {
                    self.out.push_back(e);
                }
            }
        }
        self.clients.remove(&key);
        self.covered.remove(&key);
    }

    fn unschedule_warning(&mut self, set: SetId) {
        if let Some(w) = self.sets.get_mut(&set).and_then(|s| s.warning.as_mut()) {
            if let Some(due) = w.due.take() {
                self.warnings_due.remove(&(due, set));
            }
        }
    }

    /// Schedules (or sends at once) the warning for the set's current expiration.
    fn arm_warning(&mut self, set: SetId, now: Millis) {
        self.unschedule_warning(set);
        let Some(s) = self.sets.get(&set) else { return };
        let Some(w) = s.warning else { return };
        let Some((expiration, _)) = self.landlord.get(s.cookie, now) else { return };
        if w.sent_for == Some(expiration) {
            return;
        }
        let Some(due) = w.due_for(expiration) else { return };
        if due <= now {
            self.fire_warning(set, now);
        } else {
            self.sets.get_mut(&set).expect("present").warning.as_mut().expect("present").due =
                Some(due);
            self.warnings_due.insert((due, set));
        }
    }

    fn fire_warning(&mut self, set: SetId, now: Millis) {
        let Some(s) = self.sets.get(&set) else { return };
        let Some(w) = s.warning else { return };
        let Some((expiration, _)) = self.landlord.get(s.cookie, now) else { return };
        if w.sent_for == Some(expiration) {
            return;
        }
        let w = self.sets.get_mut(&set).expect("present").warning.as_mut().expect("present");
        w.sent_for = Some(expiration);
        w.due = None;
        let kind = SetEventKind::ExpirationWarning { set, expiration };
        if let Some(e) = self.events.next_event(w.event_id, kind) {
            self.out.push_back(e);
        }
    }

    /// Destroys a set: its registrations end and its client leases leave it; those no other set
    /// holds are taken out of the manager (not cancelled).
    fn destroy_set(&mut self, set: SetId, now: Millis) {
        self.unschedule_warning(set);
        let Some(s) = self.sets.remove(&set) else { return };
        if let Some(t) = s.due {
            self.sets_due.remove(&(t, set));
        }
        if let Some(w) = s.warning {
            self.events.remove(w.event_id);
            self.unacked.remove(&w.event_id);
        }
        if let Some(id) = s.failure {
            self.events.remove(id);
            self.unacked.remove(&id);
        }
        for (key, m) in s.members {
            self.memberships_due.remove(&(m.expiration, set, key));
            if let Some(h) = self.holders.get_mut(&key) {
                h.remove(&set);
                if h.is_empty() {
                    self.holders.remove(&key);
                }
            }
            let _ = self.resync(key, now);
        }
    }
}
