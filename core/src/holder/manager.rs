//! The renewal manager: keeps leases alive until their desired expiration (seed 000, 3.1;
//! seed 002, `LeaseRenewalManager`; seed 003, LR.2), as a sans-I/O state machine.

mod snapshot;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::holder::grant::{body_name, capped, checked_granted, local_expiration};
use crate::holder::rtt::RttEstimator;
use crate::lease::{Cookie, LandlordId, Lease};
use crate::time::{self, Duration, Millis, ANY, FOREVER};
use crate::wire::{Limits, Reply, ReplyBody, Request, RequestBody};

/// How a [`RenewalManager`] schedules, batches and retries. Its data form (serde, written only:
/// settings are read through [`super::ManagerOptions`]) has the field names.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RenewalManagerConfig {
    /// When a lease falls due, other leases of the same landlord due within this window join
    /// its request, if they are past `batch_join_after` of their current grant. Default 5
    /// minutes, as River.
    pub batch_window: Duration,
    /// The fraction of its current grant a lease must have used before it may join a batch
    /// early (0 to 1). It bounds over-eager renewals: a lease is never renewed more than
    /// `1 / batch_join_after` times per grant length. Default 0.25.
    pub batch_join_after: f64,
    /// Most leases in one request. `1` turns batching off. Default: the wire's default
    /// [`Limits::max_batch`] (10 000).
    pub max_batch: usize,
    /// Round-trip estimate before anything is measured, per landlord. Default 1 s.
    pub initial_rtt: Duration,
    /// Smallest request time-out, and the smallest gap between two attempts for one lease.
    /// Default 200 ms.
    pub min_rto: Duration,
    /// Largest request time-out. Default 60 s.
    pub max_rto: Duration,
    /// Attempts that must fit between a renewal and the actual expiration, each waiting out a
    /// time-out that doubles (`rto`, `2 rto`, `4 rto`, ..., with `rto = srtt + max(G, 4 rttvar)`
    /// measured per landlord): the manager renews at least `(2^attempts - 1) rto` before the
    /// actual expiration. Default 3 (`7 rto`).
    pub attempts: u32,
    /// A lease is renewed when `1 / renew_divisor` of its grant is left (or the round-trip
    /// margin, if that is more; never before the middle of the grant). Default 8.
    pub renew_divisor: u32,
    /// Longest wait between retries after indefinite failures. Default 60 s.
    pub max_retry_interval: Duration,
    /// Largest difference of clock rates (holder vs landlord) the manager allows for, in parts
    /// per million: a renewed lease counts `ceil(granted * ppm / 1e6) + 1` ms less than granted,
    /// so the holder never believes in a lease its landlord has dropped. `0` counts exactly
    /// `sent + granted`. Default 100 ppm.
    pub max_clock_drift_ppm: u32,
    /// Id of the first request; ids then count up (so several senders can share a transport).
    /// Default 1.
    #[cfg_attr(feature = "ts", ts(type = "number | bigint"))]
    pub first_request_id: u64,
    /// Whether every successful renewal is reported as [`RenewalEvent::Renewed`]. Default true.
    pub report_renewals: bool,
}

impl Default for RenewalManagerConfig {
    fn default() -> Self {
        RenewalManagerConfig {
            batch_window: 5 * 60_000,
            batch_join_after: 0.25,
            max_batch: Limits::default().max_batch,
            initial_rtt: 1_000,
            min_rto: 200,
            max_rto: 60_000,
            attempts: 3,
            renew_divisor: 8,
            max_retry_interval: 60_000,
            max_clock_drift_ppm: 100,
            first_request_id: 1,
            report_renewals: true,
        }
    }
}

impl RenewalManagerConfig {
    /// Checks every setting; the error names the first bad one.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(LeaseError::InvalidArgument(m));
        if self.batch_window < 0 {
            return bad(format!("batch_window must be >= 0, got {}", self.batch_window));
        }
        if !(0.0..=1.0).contains(&self.batch_join_after) {
            return bad(format!(
                "batch_join_after must be within 0 and 1, got {}",
                self.batch_join_after
            ));
        }
        if self.max_batch == 0 {
            return bad("max_batch must be at least 1".into());
        }
        if self.initial_rtt < 0 {
            return bad(format!("initial_rtt must be >= 0, got {}", self.initial_rtt));
        }
        if self.min_rto < 1 || self.max_rto < self.min_rto {
            return bad(format!(
                "need 1 <= min_rto <= max_rto, got {} and {}",
                self.min_rto, self.max_rto
            ));
        }
        if self.attempts == 0 || self.attempts > 30 {
            return bad(format!("attempts must be 1 to 30, got {}", self.attempts));
        }
        if self.renew_divisor < 2 {
            return bad(format!("renew_divisor must be at least 2, got {}", self.renew_divisor));
        }
        if self.max_retry_interval < self.min_rto {
            return bad(format!(
                "max_retry_interval ({}) must be at least min_rto ({})",
                self.max_retry_interval, self.min_rto
            ));
        }
        if self.max_clock_drift_ppm >= 1_000_000 {
            return bad(format!(
                "max_clock_drift_ppm must be below 1 000 000, got {}",
                self.max_clock_drift_ppm
            ));
        }
        Ok(())
    }
}

/// A request for the host to send to `landlord`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Whom to send it to.
    pub landlord: LandlordId,
    /// What to send; the reply carries the same id.
    pub request: Request,
}

/// What the manager tells its host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenewalEvent {
    /// The lease could not be kept until its desired expiration: a definite error (unknown,
    /// denied, malformed reply), or its actual expiration came first (then `error` is the last
    /// indefinite error, or none). The manager no longer holds the lease.
    RenewalFailed {
        /// The lease, with its last actual expiration.
        lease: Lease,
        /// When the holder wanted it to end.
        desired_expiration: Millis,
        /// Why, if known.
        error: Option<LeaseError>,
    },
    /// The desired expiration came; the manager no longer holds the lease (it is not
    /// cancelled). Never reported before `desired_expiration`, even when the last grant, less
    /// the clock-drift margin, ends a few milliseconds short of it.
    DesiredExpirationReached {
        /// The lease, with its actual expiration.
        lease: Lease,
        /// When the holder wanted it to end (the time this event is due).
        desired_expiration: Millis,
    },
    /// A renewal succeeded; `lease` carries the new actual expiration (informational).
    Renewed {
        /// The lease with its new expiration.
        lease: Lease,
    },
}

pub use snapshot::{ManagerSnapshot, MANAGER_SNAPSHOT_VERSION};

/// Counters, so that traffic can be measured.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenewalStats {
    /// Requests handed out by [`RenewalManager::poll_transmit`] (renewals and cancels).
    pub requests_sent: u64,
    /// Of those, renewal requests (`renew` or `renew_all`).
    pub renew_requests: u64,
    /// Of those, cancel requests (`cancel` or `cancel_all`).
    pub cancel_requests: u64,
    /// Successful renewals of single leases.
    pub leases_renewed: u64,
    /// [`RenewalEvent::RenewalFailed`] events.
    pub failures: u64,
    /// [`RenewalEvent::DesiredExpirationReached`] events.
    pub desired_reached: u64,
    /// Indefinite per-lease failures that were retried (or awaited the actual expiration).
    pub indefinite_failures: u64,
    /// Requests that got no reply within their time-out.
    pub timeouts: u64,
    /// Cancels the landlord confirmed.
    pub leases_cancelled: u64,
    /// Leases whose cancel was not confirmed: an error for the lease (or the whole request),
    /// a malformed reply, no reply within the time-out, or a transport failure the host
    /// reported. Cancels are not retried (see [`RenewalManager::cancel`]).
    pub cancel_failures: u64,
    /// Replies ignored: unknown or stale id, or from another landlord.
    pub replies_ignored: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    InFlight(u64),
}

type Key = (LandlordId, Cookie);

/// Where an entry lives: its cell, and the cell's generation when the entry was put there (so a
/// stale reference to a reused cell is recognised).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Slot {
    idx: u32,
    gen: u32,
}

#[derive(Debug)]
struct Entry {
    /// The lease, its expiration on the manager's clock.
    lease: Lease,
    /// The same lease with its expiration on the host's clock (what the host is shown).
    shown: Lease,
    /// Index of its landlord in `peers`.
    peer: u32,
    /// `sent + granted` without the clock-drift margin: if it reaches the desired expiration,
    /// the landlord holds the lease until then and no renewal is needed.
    raw_expiration: Millis,
    desired: Millis,
    renew_duration: Duration,
    /// Length of the current grant on the holder's clock, and when it started.
    period: Duration,
    granted_at: Millis,
    /// When a request for it was last sent.
    last_sent: Millis,
    state: State,
    /// When it must be sent (only while idle and a renewal is wanted).
    send_at: Option<Millis>,
    /// When it may join another lease's batch (while `send_at` is set; never after it).
    join_at: Millis,
    /// When it ends: min(desired, actual expiration), unless FOREVER.
    end_at: Option<Millis>,
    failures: u32,
    last_error: Option<LeaseError>,
}

impl Entry {
    /// The grant already reaches the desired expiration.
    fn covers_desired(&self) -> bool {
        self.raw_expiration >= self.desired
    }
}

struct Cell {
    gen: u32,
    entry: Option<Entry>,
}

/// A min-heap of times and slots. Entries are never removed in place: a changed time pushes a
/// new entry, and stale ones are recognised (and dropped) when they come to the top.
type Timers = BinaryHeap<Reverse<(Millis, Slot)>>;

struct Peer {
    id: LandlordId,
    /// Idle leases of this landlord by the time they may join a batch.
    joins: Timers,
    rtt: RttEstimator,
}

/// The leases of a renewal request and the durations asked (filled in when it is sent).
type Items = Vec<(Slot, Duration)>;

enum Kind {
    Renew(Items),
    Cancel(Vec<Cookie>),
}

struct InFlight {
    landlord: LandlordId,
    kind: Kind,
    sent_at: Option<Millis>,
    timeout_at: Millis,
}

/// Renews leases until their desired expirations, sans-I/O.
///
/// The host adds leases ([`RenewalManager::renew_for`], [`RenewalManager::renew_until`]) and
/// runs the loop: call [`RenewalManager::handle_timeout`] when [`RenewalManager::poll_timeout`]
/// says, send what [`RenewalManager::poll_transmit`] hands out, give replies to
/// [`RenewalManager::handle_reply`] (or report a failed send with
/// [`RenewalManager::handle_failure`]), and deliver [`RenewalManager::poll_event`]s. After any
/// call, drain `poll_transmit` and `poll_event`.
///
/// The rules:
/// - Each renewal asks for [`ANY`] if the renew duration is [`ANY`] (allowed only with a
///   [`FOREVER`] desired expiration), else min(renew duration, remaining desired duration).
///   All arithmetic saturates, so `renew_for(.., FOREVER, ..)` is simply perpetual.
/// - A renewal is sent when `1 / renew_divisor` of the grant is left, or earlier so that
///   `attempts` tries, each waiting out a doubling time-out (from the measured
///   `srtt + max(G, 4 rttvar)` of its landlord), fit before the actual expiration; never before the
///   middle of the grant.
/// - When a lease falls due, the leases of its landlord due within `batch_window` (and past
///   `batch_join_after` of their grant) go in the same `renew_all` request, up to `max_batch`;
///   a lone lease goes as `renew`. Leases with equal durations thus settle into one request per
///   round.
/// - Cost per lease per round does not grow with the number of leases beyond a heap's
///   `log n`: entries live in a slab and timers in heaps whose stale entries are dropped lazily.
/// - The local expiration counts from the time the request was handed out by `poll_transmit`
///   (its send time), less the clock-drift margin.
/// - Definite errors drop the lease with [`RenewalEvent::RenewalFailed`]. Indefinite ones
///   (host-reported failures, time-outs) are retried with exponential back-off, at least
///   `min_rto` apart, until the actual expiration, where the lease is dropped with the last
///   error. A reached desired expiration gives [`RenewalEvent::DesiredExpirationReached`].
///   After either event no request names the lease again.
/// - A request times out when no reply has come within its time-out; a reply in the very
///   millisecond of the time-out is still on time (the time-out fires one millisecond later).
/// - Replies with an unknown or stale id are ignored.
///
/// # Time
///
/// The manager's time never runs backwards, whatever `now` the host passes, and it never stands
/// still while the host's clock runs. It is the host's `now` plus an offset that starts at 0;
/// when the host's clock steps back (a `now` that would put the manager's time before the
/// latest), the offset grows by the step, so the manager's time goes on from where it was, at
/// the host clock's rate ([`RenewalManager::now`], [`RenewalManager::clock_offset`]). A lease
/// the manager has given up stays given up, a renewal never asks for more than the desired
/// expiration leaves, and nothing is sent again because the clock went back.
///
/// A holder must never believe in a lease longer than its landlord grants it, so the manager's
/// time must not stand still either: had it waited for the host's clock to catch up, every
/// renewal sent meanwhile would count from a send time later than the real one. Times the host
/// gives (a lease's expiration, a desired expiration) are read on the host's clock and times the
/// manager gives back (leases, desired expirations, [`RenewalManager::poll_timeout`], events)
/// are on the host's clock as it reads now: after a step back of `d` ms, every expiration the
/// manager shows is `d` ms earlier than before, as it should be on a clock now `d` ms behind.
///
/// ```
/// use leasehold::holder::{RenewalManager, RenewalManagerConfig};
/// use leasehold::{Cookie, LandlordId, Lease, FOREVER};
/// let mut m = RenewalManager::new(RenewalManagerConfig::default());
/// let lease = Lease::new(LandlordId(1), Cookie(7), 60_000);
/// m.renew_until(lease, FOREVER, 60_000, 0).unwrap();
/// let due = m.poll_timeout().unwrap();
/// assert!(due > 30_000 && due < 60_000);
/// m.handle_timeout(due);
/// let t = m.poll_transmit(due).unwrap();
/// assert_eq!(t.landlord, LandlordId(1));
/// ```
pub struct RenewalManager {
    config: RenewalManagerConfig,
    cells: Vec<Cell>,
    free: Vec<u32>,
    index: HashMap<Key, Slot>,
    peers: Vec<Peer>,
    peer_index: HashMap<LandlordId, u32>,
    /// Idle leases by the time they must be sent.
    sends: Timers,
    /// Leases by the time they end.
    ends: Timers,
    timeouts: BTreeSet<(Millis, u64)>,
    inflight: HashMap<u64, InFlight>,
    ready: VecDeque<u64>,
    cancels: BTreeMap<LandlordId, Vec<Cookie>>,
    events: VecDeque<RenewalEvent>,
    next_id: u64,
    stats: RenewalStats,
    /// The manager's time: never runs backwards (`i64::MIN` before any).
    clock: Millis,
    /// The manager's time minus the host's: 0 until the host's clock steps back, then how far
    /// back it stepped in all (see the type's docs, "Time").
    offset: Millis,
}

/// When a request sent at `sent` with time-out `timeout` times out: the first millisecond *after*
/// `sent + timeout`, so that a reply arriving in the very millisecond of the time-out (which a
/// host may see after its timer) is on time.
fn deadline(sent: Millis, timeout: Duration) -> Millis {
    sent.saturating_add(timeout).saturating_add(1)
}

fn with_expiration(mut lease: Lease, expiration: Millis) -> Lease {
    lease.set_expiration(expiration);
    lease
}

fn key(lease: &Lease) -> Key {
    (lease.landlord(), lease.cookie())
}

fn check_renew_duration(renew_duration: Duration, desired: Millis) -> Result<()> {
    if renew_duration == ANY {
        if desired != FOREVER {
            return Err(LeaseError::InvalidArgument(
                "renew duration ANY is only allowed with a FOREVER desired expiration".into(),
            ));
        }
        return Ok(());
    }
    if renew_duration <= 0 {
        return Err(LeaseError::InvalidArgument(format!(
            "renew duration must be positive, FOREVER or ANY, got {renew_duration}"
        )));
    }
    Ok(())
}

impl RenewalManager {
    /// A manager with `config`; settings out of range are brought into range (see
    /// [`RenewalManager::try_new`] to reject them instead).
    pub fn new(config: RenewalManagerConfig) -> RenewalManager {
        let mut c = config;
        c.batch_window = c.batch_window.max(0);
        c.batch_join_after =
            if c.batch_join_after.is_nan() { 0.25 } else { c.batch_join_after.clamp(0.0, 1.0) };
        c.max_batch = c.max_batch.max(1);
        c.initial_rtt = c.initial_rtt.max(0);
        c.min_rto = c.min_rto.max(1);
        c.max_rto = c.max_rto.max(c.min_rto);
        c.attempts = c.attempts.clamp(1, 30);
        c.renew_divisor = c.renew_divisor.max(2);
        c.max_retry_interval = c.max_retry_interval.max(c.min_rto);
        c.max_clock_drift_ppm = c.max_clock_drift_ppm.min(999_999);
        let next_id = c.first_request_id;
        RenewalManager {
            config: c,
            cells: Vec::new(),
            free: Vec::new(),
            index: HashMap::new(),
            peers: Vec::new(),
            peer_index: HashMap::new(),
            sends: BinaryHeap::new(),
            ends: BinaryHeap::new(),
            timeouts: BTreeSet::new(),
            inflight: HashMap::new(),
            ready: VecDeque::new(),
            cancels: BTreeMap::new(),
            events: VecDeque::new(),
            next_id,
            stats: RenewalStats::default(),
            clock: Millis::MIN,
            offset: 0,
        }
    }

    /// A manager with `config`, or the error of [`RenewalManagerConfig::validate`].
    pub fn try_new(config: RenewalManagerConfig) -> Result<RenewalManager> {
        config.validate()?;
        Ok(RenewalManager::new(config))
    }

    /// The configuration in force.
    pub fn config(&self) -> &RenewalManagerConfig {
        &self.config
    }

    /// The manager's time on the host's clock (`i64::MIN` before any call with a `now`): the
    /// latest `now` it was given, or, while the host's clock is behind the manager's time, that
    /// time on the host's clock. The manager's own clock (this plus
    /// [`RenewalManager::clock_offset`]) never runs backwards.
    pub fn now(&self) -> Millis {
        if self.clock == Millis::MIN {
            Millis::MIN
        } else {
            self.to_host(self.clock)
        }
    }

    /// The manager's own clock (never runs backwards).
    pub(crate) fn clock(&self) -> Millis {
        self.clock
    }

    /// How far the manager's own clock is ahead of the host's: 0 until the host's clock steps
    /// back, then the sum of the steps back seen.
    pub fn clock_offset(&self) -> Millis {
        self.offset
    }

    /// Moves the manager's time to the host's `now` (never backwards: a host clock that stepped
    /// back grows the offset instead) and returns it.
    pub(crate) fn tick(&mut self, now: Millis) -> Millis {
        let t = now.saturating_add(self.offset);
        if t >= self.clock {
            self.clock = t;
            return t;
        }
        self.offset = self.clock.saturating_sub(now);
        self.reshow();
        self.clock
    }

    /// Skips `n` request ids. A manager restored from a snapshot that may be stale (requests
    /// may have been sent after it was taken, and their replies may still arrive) must not hand
    /// their ids out again, or a late reply would be taken for the reply to another request:
    /// skip at least as many ids as it can have sent since. (A manager restored from its last
    /// state needs no skip.)
    pub fn skip_request_ids(&mut self, n: u64) {
        self.next_id = self.next_id.wrapping_add(n);
    }

    /// Gives every request not sent yet a fresh id (from the next one on). For a restore from a
    /// snapshot that may be stale, after [`RenewalManager::skip_request_ids`]: such a request
    /// may have been sent under its old id after the snapshot was taken, and a late reply to
    /// that send must not be taken for the reply to this one, counted from this send.
    pub fn renumber_unsent(&mut self) {
        let ready: Vec<u64> = self.ready.drain(..).collect();
        for old in ready {
            let Some(rec) = self.inflight.remove(&old) else { continue };
            let new = self.new_id();
            if let Kind::Renew(items) = &rec.kind {
                let slots: Vec<Slot> = items.iter().map(|(s, _)| *s).collect();
                for s in slots {
                    if let Some(e) = self.get_mut(s) {
                        if e.state == State::InFlight(old) {
                            e.state = State::InFlight(new);
                        }
                    }
                }
            }
            self.inflight.insert(new, rec);
            self.ready.push_back(new);
        }
    }

    /// Moves the manager's time on to `t` (its own clock) without doing anything else.
    pub(crate) fn advance_to(&mut self, t: Millis) {
        self.clock = self.clock.max(t);
    }

    /// A time on the manager's clock, on the host's.
    #[inline]
    fn to_host(&self, t: Millis) -> Millis {
        if t == FOREVER {
            FOREVER
        } else {
            t.saturating_sub(self.offset)
        }
    }

    /// A time on the host's clock, on the manager's.
    #[inline]
    fn to_mine(&self, t: Millis) -> Millis {
        if t == FOREVER {
            FOREVER
        } else {
            t.saturating_add(self.offset).min(FOREVER - 1)
        }
    }

    fn shown(&self, lease: Lease) -> Lease {
        let mut l = lease;
        l.set_expiration(self.to_host(lease.expiration()));
        l
    }

    fn event_shown(&self, e: RenewalEvent) -> RenewalEvent {
        match e {
            RenewalEvent::RenewalFailed { lease, desired_expiration, error } => {
                RenewalEvent::RenewalFailed {
                    lease: self.shown(lease),
                    desired_expiration: self.to_host(desired_expiration),
                    error,
                }
            }
            RenewalEvent::DesiredExpirationReached { lease, desired_expiration } => {
                RenewalEvent::DesiredExpirationReached {
                    lease: self.shown(lease),
                    desired_expiration: self.to_host(desired_expiration),
                }
            }
            RenewalEvent::Renewed { lease } => RenewalEvent::Renewed { lease: self.shown(lease) },
        }
    }

    /// Recomputes every lease's host-clock copy (after the offset changed).
    fn reshow(&mut self) {
        let offset = self.offset;
        for c in &mut self.cells {
            if let Some(e) = c.entry.as_mut() {
                let exp = e.lease.expiration();
                e.shown.set_expiration(if exp == FOREVER {
                    FOREVER
                } else {
                    exp.saturating_sub(offset)
                });
            }
        }
    }

    /// Whether [`RenewalManager::poll_transmit`] has something to hand out (or requests to
    /// drop): when false, it changes nothing but the time.
    pub(crate) fn has_transmit(&self) -> bool {
        !self.cancels.is_empty() || !self.ready.is_empty()
    }

    /// Renews `lease` until `duration` from `now` (read as the manager's time: never before the
    /// latest `now` it has seen), asking for `renew_duration` each time. See
    /// [`RenewalManager::renew_until`].
    ///
    /// As in River, a duration that reaches the end of time (`now + duration >= FOREVER`, which
    /// includes [`FOREVER`] itself) means a [`FOREVER`] desired expiration; nothing overflows
    /// (the Jini 1.0 bug of seed 002, where `now + FOREVER` wrapped negative and the lease was
    /// never renewed, cannot happen).
    pub fn renew_for(
        &mut self,
        lease: Lease,
        duration: Duration,
        renew_duration: Duration,
        now: Millis,
    ) -> Result<()> {
        let now = self.tick(now);
        if duration < 0 {
            return Err(LeaseError::InvalidArgument(format!(
                "renew_for duration must be >= 0 or FOREVER, got {duration}"
            )));
        }
        let desired = match now.checked_add(duration) {
            Some(t) if t < FOREVER && duration != FOREVER => t,
            _ => FOREVER,
        };
        let lease = with_expiration(lease, self.to_mine(lease.expiration()));
        self.renew_until_in(lease, desired, renew_duration, now)
    }

    /// Renews `lease` until `desired_expiration` (holder's clock), asking for `renew_duration`
    /// each time: positive, [`FOREVER`], or [`ANY`] with a [`FOREVER`] desired expiration.
    ///
    /// `lease.expiration()` is its actual expiration. A lease already managed is replaced (a
    /// renewal in flight for the old entry is then ignored). A desired expiration already past
    /// (at the manager's time: `now`, or the latest `now` seen if that is later) is reported as
    /// reached at the next [`RenewalManager::handle_timeout`].
    pub fn renew_until(
        &mut self,
        lease: Lease,
        desired_expiration: Millis,
        renew_duration: Duration,
        now: Millis,
    ) -> Result<()> {
        let now = self.tick(now);
        let lease = with_expiration(lease, self.to_mine(lease.expiration()));
        let desired = self.to_mine(desired_expiration);
        self.renew_until_in(lease, desired, renew_duration, now)
    }

    /// [`RenewalManager::renew_until`] with every time on the manager's clock.
    pub(crate) fn renew_until_in(
        &mut self,
        lease: Lease,
        desired_expiration: Millis,
        renew_duration: Duration,
        now: Millis,
    ) -> Result<()> {
        check_renew_duration(renew_duration, desired_expiration)?;
        if let Some(old) = self.index.get(&key(&lease)).copied() {
            self.remove_entry(old);
        }
        let period = if lease.expiration() == FOREVER {
            FOREVER
        } else {
            lease.expiration().saturating_sub(now).max(0)
        };
        let peer = self.peer_idx(lease.landlord());
        let shown = self.shown(lease);
        let s = self.insert_entry(Entry {
            lease,
            shown,
            peer,
            raw_expiration: lease.expiration(),
            desired: desired_expiration,
            renew_duration,
            period,
            granted_at: now,
            last_sent: now,
            state: State::Idle,
            send_at: None,
            join_at: 0,
            end_at: None,
            failures: 0,
            last_error: None,
        });
        self.schedule(s, now);
        self.clean();
        Ok(())
    }

    /// Stops managing `lease` (it is not cancelled) and gives back the manager's copy, with its
    /// current actual expiration. An unmanaged lease is [`LeaseError::UnknownLease`].
    pub fn remove(&mut self, lease: &Lease) -> Result<Lease> {
        self.remove_in(lease).map(|l| self.shown(l))
    }

    /// [`RenewalManager::remove`], the lease's expiration on the manager's clock.
    pub(crate) fn remove_in(&mut self, lease: &Lease) -> Result<Lease> {
        let s = self.index.get(&key(lease)).copied().ok_or(LeaseError::UnknownLease)?;
        let e = self.remove_entry(s);
        self.clean();
        Ok(e.lease)
    }

    /// Stops managing `lease` and queues a cancel request for it (several cancels for one
    /// landlord go out as one `cancel_all`). The lease is removed whatever the landlord answers.
    ///
    /// A cancel is best effort: it is sent once, never retried, and raises no
    /// [`RenewalEvent`]. If it fails (an error, a malformed reply, no reply within the time-out,
    /// or a transport failure from [`RenewalManager::handle_failure`]), the landlord still drops
    /// the lease at its actual expiration, since nobody renews it any more; the failure shows in
    /// [`RenewalStats::cancel_failures`] (confirmed ones in `leases_cancelled`). A host that must
    /// know the outcome of one cancel should send it itself (`RequestBody::Cancel`) and read the
    /// reply.
    ///
    /// `now` moves the manager's time (never backwards) like every other call.
    pub fn cancel(&mut self, lease: &Lease, now: Millis) -> Result<()> {
        self.tick(now);
        let removed = self.remove_in(lease)?;
        self.cancels.entry(removed.landlord()).or_default().push(removed.cookie());
        Ok(())
    }

    fn entry_of(&self, lease: &Lease) -> Option<&Entry> {
        self.index.get(&key(lease)).and_then(|s| self.get(*s))
    }

    /// The desired expiration of `lease` (host's clock).
    pub fn expiration(&self, lease: &Lease) -> Result<Millis> {
        self.expiration_in(lease).map(|t| self.to_host(t))
    }

    /// [`RenewalManager::expiration`] on the manager's clock.
    pub(crate) fn expiration_in(&self, lease: &Lease) -> Result<Millis> {
        self.entry_of(lease).map(|e| e.desired).ok_or(LeaseError::UnknownLease)
    }

    /// Sets the desired expiration of `lease` (same rule for an [`ANY`] renew duration as
    /// [`RenewalManager::renew_until`]). `now` is read as the manager's time (never before the
    /// latest `now` seen).
    pub fn set_expiration(&mut self, lease: &Lease, desired: Millis, now: Millis) -> Result<()> {
        let now = self.tick(now);
        let desired = self.to_mine(desired);
        self.set_expiration_in(lease, desired, now)
    }

    /// [`RenewalManager::set_expiration`] on the manager's clock.
    pub(crate) fn set_expiration_in(
        &mut self,
        lease: &Lease,
        desired: Millis,
        now: Millis,
    ) -> Result<()> {
        let s = self.index.get(&key(lease)).copied().ok_or(LeaseError::UnknownLease)?;
        let e = self.get_mut(s).ok_or(LeaseError::UnknownLease)?;
        check_renew_duration(e.renew_duration, desired)?;
        e.desired = desired;
        self.schedule(s, now);
        self.clean();
        Ok(())
    }

    /// The manager's copy of `lease`, with its current actual expiration (host's clock).
    pub fn lease(&self, lease: &Lease) -> Option<Lease> {
        self.entry_of(lease).map(|e| e.shown)
    }

    /// [`RenewalManager::lease`], its expiration on the manager's clock.
    pub(crate) fn lease_in(&self, lease: &Lease) -> Option<Lease> {
        self.entry_of(lease).map(|e| e.lease)
    }

    /// The renew duration of `lease`.
    pub fn renew_duration(&self, lease: &Lease) -> Result<Duration> {
        self.entry_of(lease).map(|e| e.renew_duration).ok_or(LeaseError::UnknownLease)
    }

    /// When `lease` will next be sent for renewal, if one is scheduled (none while a request
    /// for it is in flight, or when its actual expiration already covers the desired one).
    pub fn next_renewal(&self, lease: &Lease) -> Option<Millis> {
        self.entry_of(lease).and_then(|e| e.send_at).map(|t| self.to_host(t))
    }

    /// The round-trip estimate for `landlord`, once the manager has dealt with it.
    pub fn rtt(&self, landlord: LandlordId) -> Option<&RttEstimator> {
        self.peer_index.get(&landlord).map(|&i| &self.peers[i as usize].rtt)
    }

    /// Number of leases managed.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// No leases managed.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The leases managed, with their current actual expirations on the host's clock (in no
    /// particular order).
    pub fn leases(&self) -> impl Iterator<Item = &Lease> + '_ {
        self.cells.iter().filter_map(|c| c.entry.as_ref().map(|e| &e.shown))
    }

    /// The counters.
    pub fn stats(&self) -> RenewalStats {
        self.stats
    }

    /// When the host should next call [`RenewalManager::handle_timeout`] (host's clock);
    /// `None` if nothing is scheduled.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.poll_timeout_in().map(|t| self.to_host(t))
    }

    /// [`RenewalManager::poll_timeout`] on the manager's clock.
    pub(crate) fn poll_timeout_in(&self) -> Option<Millis> {
        [
            self.ends.peek().map(|t| t.0 .0),
            self.sends.peek().map(|t| t.0 .0),
            self.timeouts.first().map(|t| t.0),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Advances to `now` (read as the manager's time: a `now` before the latest seen changes
    /// nothing about time): requests without a reply time out, leases reach their desired or
    /// actual expiration, and due renewals are batched for [`RenewalManager::poll_transmit`].
    pub fn handle_timeout(&mut self, now: Millis) {
        let now = self.tick(now);
        self.handle_timeout_in(now)
    }

    /// [`RenewalManager::handle_timeout`] at a time on the manager's clock.
    pub(crate) fn handle_timeout_in(&mut self, now: Millis) {
        while let Some(&(t, id)) = self.timeouts.first() {
            if t > now {
                break;
            }
            self.timeouts.pop_first();
            if let Some(rec) = self.inflight.remove(&id) {
                self.stats.timeouts += 1;
                let waited = now.saturating_sub(rec.sent_at.unwrap_or(now));
                let p = self.peer_idx(rec.landlord);
                self.peers[p as usize].rtt.timed_out();
                let err = LeaseError::Indefinite(format!("no reply within {waited} ms"));
                self.fail_request(id, rec, err, now);
            }
        }
        while let Some(&Reverse((t, s))) = self.ends.peek() {
            if t > now {
                break;
            }
            self.ends.pop();
            if !matches!(self.get(s), Some(e) if e.end_at == Some(t)) {
                continue;
            }
            let e = self.remove_entry(s);
            if e.covers_desired() {
                self.stats.desired_reached += 1;
                self.events.push_back(RenewalEvent::DesiredExpirationReached {
                    lease: e.lease,
                    desired_expiration: e.desired,
                });
            } else {
                self.stats.failures += 1;
                self.events.push_back(RenewalEvent::RenewalFailed {
                    lease: e.lease,
                    desired_expiration: e.desired,
                    error: e.last_error,
                });
            }
        }
        self.make_batches(now);
        self.clean();
    }

    /// The next request to send, stamped with `now` as its send time (the local expiration of
    /// each lease it renews counts from here). `now` is read as the manager's time: after a host
    /// clock step back, the send time is the latest `now` seen, and a renewal asks for no more
    /// than the desired expiration leaves at that time.
    pub fn poll_transmit(&mut self, now: Millis) -> Option<Transmit> {
        let now = self.tick(now);
        self.poll_transmit_in(now)
    }

    /// [`RenewalManager::poll_transmit`] at a time on the manager's clock.
    pub(crate) fn poll_transmit_in(&mut self, now: Millis) -> Option<Transmit> {
        if let Some((landlord, cookies)) = self.cancels.pop_first() {
            let id = self.new_id();
            let body = if cookies.len() == 1 {
                RequestBody::Cancel { cookie: cookies[0] }
            } else {
                RequestBody::CancelAll { cookies: cookies.clone() }
            };
            let p = self.peer_idx(landlord) as usize;
            let timeout_at = deadline(now, self.peers[p].rtt.request_timeout());
            self.inflight.insert(
                id,
                InFlight { landlord, kind: Kind::Cancel(cookies), sent_at: Some(now), timeout_at },
            );
            self.timeouts.insert((timeout_at, id));
            self.stats.requests_sent += 1;
            self.stats.cancel_requests += 1;
            return Some(Transmit { landlord, request: Request { id, body } });
        }
        while let Some(id) = self.ready.pop_front() {
            let Some(mut rec) = self.inflight.remove(&id) else { continue };
            let Kind::Renew(items) = &mut rec.kind else { continue };
            let landlord = rec.landlord;
            let mut kept = Vec::with_capacity(items.len());
            let mut wire = Vec::with_capacity(items.len());
            let mut first_exp = FOREVER;
            for &(s, _) in items.iter() {
                let Some(e) = self.get_mut(s) else { continue };
                if e.state != State::InFlight(id) {
                    continue;
                }
                let remaining = time::remaining(e.desired, now);
                if remaining <= 0 || e.lease.is_expired(now) {
                    // Its end comes first; handle_timeout reports it.
                    e.state = State::Idle;
                    continue;
                }
                let requested =
                    if e.renew_duration == ANY { ANY } else { e.renew_duration.min(remaining) };
                e.last_sent = now;
                kept.push((s, requested));
                wire.push((e.lease.cookie(), requested));
            }
            if kept.is_empty() {
                continue;
            }
            // A renewal that asks for less than a lease has left may shorten it at the landlord
            // as soon as it arrives (a landlord never shortens a lease unless asked, and then
            // to what was asked): from now on, believe in no more than that, whatever becomes
            // of the reply.
            for &(s, requested) in kept.iter() {
                if requested != ANY {
                    self.bound(s, now, requested);
                }
                // The time-out below is bounded by what is left once bounded (else a lease cut
                // to the renewal's term could end before its request times out: vopr --seed
                // 2365 on vopr2).
                if let Some(e) = self.get(s) {
                    first_exp = first_exp.min(e.lease.expiration());
                }
            }
            let body = if wire.len() == 1 {
                RequestBody::Renew { cookie: wire[0].0, duration: wire[0].1 }
            } else {
                RequestBody::RenewAll { items: wire }
            };
            *items = kept;
            // Wait out the (backed-off) time-out, but never beyond half of what the first lease
            // has left, so that a lost request still leaves room for another try.
            let pi = self.peer_idx(landlord) as usize;
            let rtt = &self.peers[pi].rtt;
            let timeout =
                rtt.request_timeout().min(rtt.rto().max(first_exp.saturating_sub(now) / 2));
            rec.sent_at = Some(now);
            rec.timeout_at = deadline(now, timeout);
            self.timeouts.insert((rec.timeout_at, id));
            self.inflight.insert(id, rec);
            self.stats.requests_sent += 1;
            self.stats.renew_requests += 1;
            return Some(Transmit { landlord, request: Request { id, body } });
        }
        None
    }

    /// Takes a landlord's reply to a request of this manager, received at `now` (read as the
    /// manager's time: never before the latest `now` seen, so never before the send time).
    ///
    /// Replies with an unknown id (or one already answered, timed out or failed), or from
    /// another landlord than the one asked, are ignored.
    pub fn handle_reply(&mut self, reply: &Reply, now: Millis) {
        let now = self.tick(now);
        self.handle_reply_in(reply, now)
    }

    /// [`RenewalManager::handle_reply`] at a time on the manager's clock.
    pub(crate) fn handle_reply_in(&mut self, reply: &Reply, now: Millis) {
        let ok = match self.inflight.get(&reply.id) {
            Some(rec) => rec.sent_at.is_some() && rec.landlord == reply.landlord,
            None => false,
        };
        if !ok {
            self.stats.replies_ignored += 1;
            return;
        }
        let rec = self.inflight.remove(&reply.id).expect("checked");
        self.timeouts.remove(&(rec.timeout_at, reply.id));
        let sent_at = rec.sent_at.expect("checked");
        let p = self.peer_idx(rec.landlord) as usize;
        self.peers[p].rtt.sample(now.saturating_sub(sent_at));
        let items = match rec.kind {
            Kind::Renew(items) => items,
            Kind::Cancel(cookies) => {
                let confirmed = match &reply.body {
                    ReplyBody::Cancelled if cookies.len() == 1 => 1,
                    ReplyBody::CancelledAll { results } if results.len() == cookies.len() => {
                        results.iter().filter(|r| r.to_result().is_ok()).count() as u64
                    }
                    _ => 0,
                };
                self.stats.leases_cancelled += confirmed;
                self.stats.cancel_failures += cookies.len() as u64 - confirmed;
                return;
            }
        };
        let n = items.len();
        let results: Vec<Result<Duration>> = match &reply.body {
            ReplyBody::Renewed { duration } if n == 1 => vec![Ok(*duration)],
            ReplyBody::RenewedAll { results } if results.len() == n => {
                results.iter().map(|o| o.to_result()).collect()
            }
            ReplyBody::Error(w) => vec![Err(w.to_error()); n],
            other => {
                let err = LeaseError::Decode(format!(
                    "malformed reply to a renewal of {n} lease(s): {}",
                    match other {
                        ReplyBody::RenewedAll { results } =>
                            format!("renewed_all with {} results", results.len()),
                        b => body_name(b).to_string(),
                    }
                ));
                vec![Err(err); n]
            }
        };
        for ((s, requested), result) in items.into_iter().zip(results) {
            self.apply(s, reply.id, sent_at, requested, result, now);
        }
        self.clean();
    }

    /// The host reports that request `request_id` failed in transport (or timed out by the
    /// host's own reckoning). An indefinite `error` is retried with back-off; a definite one
    /// drops the leases of the request with a failure event. Unknown ids are ignored. `now` is
    /// read as the manager's time (never before the latest `now` seen).
    pub fn handle_failure(&mut self, request_id: u64, error: LeaseError, now: Millis) {
        let now = self.tick(now);
        self.handle_failure_in(request_id, error, now)
    }

    /// [`RenewalManager::handle_failure`] at a time on the manager's clock.
    pub(crate) fn handle_failure_in(&mut self, request_id: u64, error: LeaseError, now: Millis) {
        match self.inflight.get(&request_id) {
            Some(rec) if rec.sent_at.is_some() => {}
            _ => return,
        }
        let rec = self.inflight.remove(&request_id).expect("checked");
        self.timeouts.remove(&(rec.timeout_at, request_id));
        self.fail_request(request_id, rec, error, now);
        self.clean();
    }

    /// The next event for the host (leases and desired expirations on the host's clock).
    pub fn poll_event(&mut self) -> Option<RenewalEvent> {
        let e = self.events.pop_front()?;
        Some(self.event_shown(e))
    }

    /// [`RenewalManager::poll_event`], times on the manager's clock.
    pub(crate) fn poll_event_in(&mut self) -> Option<RenewalEvent> {
        self.events.pop_front()
    }

    fn fail_request(&mut self, id: u64, rec: InFlight, error: LeaseError, now: Millis) {
        let items = match rec.kind {
            Kind::Renew(items) => items,
            Kind::Cancel(cookies) => {
                self.stats.cancel_failures += cookies.len() as u64;
                return;
            }
        };
        let sent_at = rec.sent_at.unwrap_or(now);
        for (s, requested) in items {
            self.apply(s, id, sent_at, requested, Err(error.clone()), now);
        }
    }

    fn apply(
        &mut self,
        s: Slot,
        id: u64,
        sent_at: Millis,
        requested: Duration,
        result: Result<Duration>,
        now: Millis,
    ) {
        let drift = self.config.max_clock_drift_ppm;
        let report = self.config.report_renewals;
        let offset = self.offset;
        let Some(e) = self.get_mut(s) else { return };
        if e.state != State::InFlight(id) {
            return;
        }
        e.state = State::Idle;
        match result.and_then(checked_granted) {
            Ok(granted) => {
                let granted = capped(requested, granted);
                let exp = local_expiration(sent_at, granted, drift);
                e.lease.set_expiration(exp);
                e.shown.set_expiration(if exp == FOREVER {
                    FOREVER
                } else {
                    exp.saturating_sub(offset)
                });
                e.raw_expiration = time::expiration_after(sent_at, granted);
                e.period = if exp == FOREVER { FOREVER } else { exp.saturating_sub(sent_at) };
                e.granted_at = sent_at;
                e.failures = 0;
                e.last_error = None;
                let lease = e.lease;
                self.stats.leases_renewed += 1;
                if report {
                    self.events.push_back(RenewalEvent::Renewed { lease });
                }
                self.schedule(s, now);
            }
            Err(error) if !error.is_definite() => {
                e.failures = e.failures.saturating_add(1);
                e.last_error = Some(error);
                self.stats.indefinite_failures += 1;
                self.schedule(s, now);
            }
            Err(error) => {
                let e = self.remove_entry(s);
                self.stats.failures += 1;
                self.events.push_back(RenewalEvent::RenewalFailed {
                    lease: e.lease,
                    desired_expiration: e.desired,
                    error: Some(error),
                });
            }
        }
    }

    fn new_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        id
    }

    fn peer_idx(&mut self, landlord: LandlordId) -> u32 {
        if let Some(&i) = self.peer_index.get(&landlord) {
            return i;
        }
        let c = &self.config;
        let i = self.peers.len() as u32;
        self.peers.push(Peer {
            id: landlord,
            joins: BinaryHeap::new(),
            rtt: RttEstimator::new(c.initial_rtt, c.min_rto, c.max_rto),
        });
        self.peer_index.insert(landlord, i);
        i
    }

    fn get(&self, s: Slot) -> Option<&Entry> {
        let c = self.cells.get(s.idx as usize)?;
        if c.gen == s.gen {
            c.entry.as_ref()
        } else {
            None
        }
    }

    fn get_mut(&mut self, s: Slot) -> Option<&mut Entry> {
        let c = self.cells.get_mut(s.idx as usize)?;
        if c.gen == s.gen {
            c.entry.as_mut()
        } else {
            None
        }
    }

    fn insert_entry(&mut self, e: Entry) -> Slot {
        let k = key(&e.lease);
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.cells.push(Cell { gen: 0, entry: None });
                (self.cells.len() - 1) as u32
            }
        };
        let cell = &mut self.cells[idx as usize];
        cell.entry = Some(e);
        let s = Slot { idx, gen: cell.gen };
        self.index.insert(k, s);
        s
    }

    /// Takes the entry out; every timer and request still naming its slot becomes stale.
    fn remove_entry(&mut self, s: Slot) -> Entry {
        let cell = &mut self.cells[s.idx as usize];
        let e = cell.entry.take().expect("caller checked the entry exists");
        cell.gen = cell.gen.wrapping_add(1);
        self.free.push(s.idx);
        self.index.remove(&key(&e.lease));
        e
    }

    /// Lowers what the manager believes of the lease in `s` to what a renewal of `requested`
    /// ms sent at `now` leaves it, if that is less.
    fn bound(&mut self, s: Slot, now: Millis, requested: Duration) {
        let drift = self.config.max_clock_drift_ppm;
        let offset = self.offset;
        let Some(e) = self.get_mut(s) else { return };
        let exp = local_expiration(now, requested, drift);
        if exp >= e.lease.expiration() {
            return;
        }
        e.lease.set_expiration(exp);
        e.shown.set_expiration(exp.saturating_sub(offset));
        e.raw_expiration = e.raw_expiration.min(time::expiration_after(now, requested));
        self.schedule(s, now);
    }

    /// Recomputes when the lease in `s` ends and when it is next sent.
    fn schedule(&mut self, s: Slot, now: Millis) {
        let cfg = &self.config;
        let Some(e) = self.get(s) else { return };
        let rto = self.peers[e.peer as usize].rtt.rto();
        let exp = e.lease.expiration();
        // A grant that reaches the desired expiration ends the lease's stay at that time, not
        // at its local expiration (which the drift margin puts a little earlier).
        let end = if e.covers_desired() { e.desired } else { e.desired.min(exp) };
        let send = if e.state != State::Idle || exp == FOREVER || e.covers_desired() {
            None
        } else if e.failures > 0 {
            // Indefinite failure: exponential back-off counted from the failed attempt's send
            // time (after a time-out, that wait is already over), never more than half of
            // what is left, at least min_rto after the last attempt; nothing once the actual
            // expiration would come first.
            let shift = (e.failures - 1).min(40);
            let backoff = rto.saturating_mul(1i64 << shift).min(cfg.max_retry_interval);
            let left = exp.saturating_sub(now);
            let at = e
                .last_sent
                .saturating_add(backoff)
                .min(now.saturating_add(left / 2))
                .max(e.last_sent.saturating_add(cfg.min_rto))
                .max(now);
            if at < exp {
                Some(at)
            } else {
                None
            }
        } else {
            let period = e.period.max(0);
            let margin = rto.saturating_mul((1i64 << cfg.attempts.min(30)) - 1);
            let lead = (period / cfg.renew_divisor as i64).max(margin).min(period / 2);
            Some(exp.saturating_sub(lead).max(now))
        };
        let join = send.map(|at| {
            if e.failures > 0 {
                return at;
            }
            let used = (e.period.max(0) as f64 * cfg.batch_join_after) as i64;
            at.saturating_sub(cfg.batch_window).max(e.granted_at.saturating_add(used)).min(at)
        });
        let peer = e.peer as usize;
        let end = if end == FOREVER { None } else { Some(end) };
        // Direct field access, so the heaps can be pushed to while the entry is borrowed.
        let e = self.cells[s.idx as usize].entry.as_mut().expect("checked");
        if e.end_at != end {
            e.end_at = end;
            if let Some(t) = end {
                self.ends.push(Reverse((t, s)));
            }
        }
        let old = e.send_at.map(|t| (t, e.join_at));
        let new = send.zip(join);
        if old != new {
            e.send_at = send;
            if let Some((t, j)) = new {
                e.join_at = j;
                self.sends.push(Reverse((t, s)));
                self.peers[peer].joins.push(Reverse((j, s)));
            }
        }
    }

    /// Drops stale timers from the tops of the heaps (so `poll_timeout` is exact), and rebuilds
    /// the heaps when stale entries outnumber live ones.
    fn clean(&mut self) {
        while let Some(&Reverse((t, s))) = self.ends.peek() {
            if matches!(self.get(s), Some(e) if e.end_at == Some(t)) {
                break;
            }
            self.ends.pop();
        }
        while let Some(&Reverse((t, s))) = self.sends.peek() {
            if matches!(self.get(s), Some(e) if e.state == State::Idle && e.send_at == Some(t)) {
                break;
            }
            self.sends.pop();
        }
        let live = self.index.len();
        if self.ends.len() + self.sends.len() > 4 * live + 4_096 {
            self.rebuild();
        }
    }

    fn rebuild(&mut self) {
        let mut ends = Vec::new();
        let mut sends = Vec::new();
        for p in &mut self.peers {
            p.joins.clear();
        }
        for (i, c) in self.cells.iter().enumerate() {
            let Some(e) = &c.entry else { continue };
            let s = Slot { idx: i as u32, gen: c.gen };
            if let Some(t) = e.end_at {
                ends.push(Reverse((t, s)));
            }
            if let (State::Idle, Some(t)) = (e.state, e.send_at) {
                sends.push(Reverse((t, s)));
                self.peers[e.peer as usize].joins.push(Reverse((e.join_at, s)));
            }
        }
        self.ends = BinaryHeap::from(ends);
        self.sends = BinaryHeap::from(sends);
    }

    /// Turns due leases into requests: per landlord, the leases due now, then those allowed to
    /// join early (due within the batch window and past `batch_join_after` of their grant), at
    /// most `max_batch` per request. Early joiners never open a request of their own.
    fn make_batches(&mut self, now: Millis) {
        let max = self.config.max_batch;
        // Open batches: (peer, request id, slots), in the order they were opened.
        let mut open: Vec<(u32, u64, Items)> = Vec::new();
        let mut by_peer: HashMap<u32, usize> = HashMap::new();
        while let Some(&Reverse((t, s))) = self.sends.peek() {
            if t > now {
                break;
            }
            self.sends.pop();
            let peer = match self.get(s) {
                Some(e) if e.state == State::Idle && e.send_at == Some(t) => e.peer,
                _ => continue,
            };
            let pos = match by_peer.get(&peer) {
                Some(&i) if open[i].2.len() < max => i,
                _ => {
                    let id = self.new_id();
                    open.push((peer, id, Vec::new()));
                    by_peer.insert(peer, open.len() - 1);
                    open.len() - 1
                }
            };
            let id = open[pos].1;
            open[pos].2.push((s, 0));
            let e = self.get_mut(s).expect("checked");
            e.send_at = None;
            e.state = State::InFlight(id);
        }
        for &pos in by_peer.values() {
            let (peer, id) = (open[pos].0, open[pos].1);
            while open[pos].2.len() < max {
                let Some(&Reverse((j, s))) = self.peers[peer as usize].joins.peek() else { break };
                if j > now {
                    break;
                }
                self.peers[peer as usize].joins.pop();
                let Some(e) = self.get_mut(s) else { continue };
                if e.state != State::Idle || e.send_at.is_none() || e.join_at != j {
                    continue;
                }
                e.send_at = None;
                e.state = State::InFlight(id);
                open[pos].2.push((s, 0));
            }
        }
        for (peer, id, items) in open {
            let landlord = self.peers[peer as usize].id;
            self.inflight.insert(
                id,
                InFlight { landlord, kind: Kind::Renew(items), sent_at: None, timeout_at: 0 },
            );
            self.ready.push_back(id);
        }
    }
}
