//! Inverted leasing (seed 004, section 3): the landlord polls, the holders answer.
//!
//! Instead of every holder renewing its own lease, the landlord (a [`Poller`]) multicasts a
//! [`Poll`] carrying two durations: `D`, how long it listens for answers, and `A`, the extra
//! time after `D` within which holders can expect the next poll. Each holder (a
//! [`PollListener`]) answers at a random time uniformly spread over `0..D`; the landlord
//! confirms each answer. A holder that has not answered when `D` ends loses its lease; a holder
//! that hears no poll within `D + A` of the last one asks for a new lease.
//!
//! The landlord chooses `D = max(N / G, L_MIN)` for `N` holders and a renewal budget of `G`
//! answers per second, and `A = fraction * D`, reduced so that `D + A <= L_MAX`. It denies new
//! holders beyond `N_MAX = L_MAX * G`. With the sizes of the five messages ([`MessageSizes`])
//! the bandwidth is `B = (S_P + N (S_PR + S_RC)) / P` for a polling interval `P = D + A`
//! ([`bandwidth`]; the paper writes the poll term as `S_P`, which is a size, not a rate: one
//! poll is sent per interval). Failure detection takes `R = D` on average when failures fall
//! uniformly within `D` (the paper's analysis), and `R = D + A / 2` when they fall uniformly over
//! the whole interval `D + A` ([`expected_detection`]).
//!
//! Both sides are sans-I/O state machines: the host calls `handle_timeout(now)` when
//! `poll_timeout()` says, carries what `poll_transmit()` hands out, and feeds answers back.
//!
//! ```
//! use leasehold::inverted::{Poller, PollerConfig, PollListener, ListenerConfig, ListenerTransmit};
//! use leasehold::{LandlordId, FOREVER};
//! let cfg = PollerConfig::new(LandlordId(1), [3; 32], 3.0, 15_000, FOREVER, 0.2).unwrap();
//! let mut poller: Poller<u32> = Poller::new(cfg, 0).unwrap();
//! let mut holder = PollListener::new(ListenerConfig::new(42)).unwrap();
//! holder.join(0);
//! assert_eq!(holder.poll_transmit(), Some(ListenerTransmit::Join));
//! let admission = poller.join(7, 0).unwrap();
//! holder.handle_admission(Ok(admission), 0);
//! // The first poll goes out at once: D = max(1 / 3 s, L_MIN) = 15 s and A = 0.2 D = 3 s.
//! poller.handle_timeout(0);
//! let poll = poller.poll_transmit().unwrap();
//! assert_eq!((poll.duration, poll.extra), (15_000, 3_000));
//! holder.handle_poll(&poll, 0);
//! let answer_at = holder.poll_timeout().unwrap();
//! assert!(answer_at < 15_000);
//! holder.handle_timeout(answer_at);
//! let Some(ListenerTransmit::Respond { cookie, seq }) = holder.poll_transmit() else { panic!() };
//! holder.handle_confirm(poller.respond(cookie, seq, answer_at), answer_at);
//! poller.handle_timeout(15_001); // D is over: the holder answered, so it keeps its lease
//! assert!(poller.poll_expired().is_none() && poller.contains(cookie));
//! ```

use std::collections::{BTreeSet, HashMap, VecDeque};

use rand_chacha::ChaCha12Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::landlord::Expired;
use crate::lease::{Cookie, LandlordId};
use crate::time::{self, Duration, Millis, FOREVER};

/// Sizes in bytes of the messages of both leasing schemes, for bandwidth accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageSizes {
    /// S_R: a lease (or join) request.
    pub request: u64,
    /// S_G: a lease grant (or admission).
    pub grant: u64,
    /// S_P: a poll.
    pub poll: u64,
    /// S_PR: a poll response.
    pub response: u64,
    /// S_RC: a response confirmation.
    pub confirm: u64,
}

impl Default for MessageSizes {
    /// The paper's S_R = 128 and S_G = 32 bytes; a response is the size of a request and a
    /// confirmation the size of a grant; a poll (landlord id, sequence, D, A) 64 bytes.
    fn default() -> Self {
        MessageSizes { request: 128, grant: 32, poll: 64, response: 128, confirm: 32 }
    }
}

/// The bandwidth of inverted leasing in bytes per second: `(S_P + N (S_PR + S_RC)) / P` for `n`
/// holders answering once per polling interval `period` (ms).
pub fn bandwidth(n: f64, period: Duration, sizes: &MessageSizes) -> f64 {
    if period <= 0 {
        return f64::INFINITY;
    }
    (sizes.poll as f64 + n * (sizes.response + sizes.confirm) as f64) / (period as f64 / 1000.0)
}

/// Expected failure-detection delay (ms) for a holder failing at a time uniformly distributed
/// over a polling interval with listening time `d` and extra time `a`: `D + A / 2`.
///
/// The paper's `R = D` is the case `A = 0` (or failures uniform within `D` only).
pub fn expected_detection(d: Duration, a: Duration) -> f64 {
    d as f64 + a as f64 / 2.0
}

/// How a [`Poller`] is set up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PollerConfig {
    /// This landlord's id, carried by its polls.
    pub id: LandlordId,
    /// Secret seed for cookies; supply real entropy (the core has none of its own).
    pub seed: [u8; 32],
    /// G: poll responses per second the landlord can afford.
    pub renewals_per_second: f64,
    /// L_MIN in ms: shortest listening time D (and shortest interval D + A).
    pub min: Duration,
    /// L_MAX in ms: longest interval D + A ([`FOREVER`] for unbounded).
    pub max: Duration,
    /// A as a fraction of D (the paper uses 0.2); reduced so that D + A <= L_MAX.
    pub extra_fraction: f64,
    /// Message sizes for the traffic counters.
    pub sizes: MessageSizes,
}

impl PollerConfig {
    /// A configuration with the default message sizes; checked by [`Poller::new`].
    pub fn new(
        id: LandlordId,
        seed: [u8; 32],
        renewals_per_second: f64,
        min: Duration,
        max: Duration,
        extra_fraction: f64,
    ) -> Result<PollerConfig> {
        let c = PollerConfig {
            id,
            seed,
            renewals_per_second,
            min,
            max,
            extra_fraction,
            sizes: MessageSizes::default(),
        };
        c.check()?;
        Ok(c)
    }

    /// Checks the settings: G > 0 and finite, 0 < L_MIN <= L_MAX, fraction >= 0 and finite.
    pub fn check(&self) -> Result<()> {
        let g = self.renewals_per_second;
        if g.is_nan() || g <= 0.0 || !g.is_finite() {
            return Err(LeaseError::InvalidArgument(format!("G must be positive, got {g}")));
        }
        if self.min <= 0 || self.min > self.max {
            return Err(LeaseError::InvalidArgument(format!(
                "need 0 < L_MIN <= L_MAX, got L_MIN {} ms, L_MAX {}",
                self.min,
                time::describe(self.max)
            )));
        }
        let f = self.extra_fraction;
        if f.is_nan() || f < 0.0 || !f.is_finite() {
            return Err(LeaseError::InvalidArgument(format!(
                "the extra-time fraction A/D must be zero or more, got {f}"
            )));
        }
        Ok(())
    }

    /// N_MAX = L_MAX * G: most holders admitted (infinite when L_MAX is FOREVER).
    pub fn max_holders(&self) -> f64 {
        if self.max == FOREVER {
            f64::INFINITY
        } else {
            (self.max as f64 / 1000.0 * self.renewals_per_second).floor()
        }
    }

    /// The listening time D and extra time A (ms) for `n` holders.
    pub fn period_for(&self, n: usize) -> (Duration, Duration) {
        let want = (n as f64 * 1000.0 / self.renewals_per_second).ceil();
        let d = if want >= self.max as f64 { self.max } else { (want as i64).max(self.min) };
        let a = (d as f64 * self.extra_fraction).round();
        let room = self.max.saturating_sub(d);
        let a = if a >= room as f64 { room } else { a as i64 };
        (d, a)
    }
}

/// A poll, multicast by the landlord to every holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Poll {
    /// The polling landlord.
    pub landlord: LandlordId,
    /// Round number, strictly increasing; answers carry it back.
    pub seq: u64,
    /// D in ms: how long the landlord listens for answers to this poll.
    pub duration: Duration,
    /// A in ms: extra time after D within which the next poll will come.
    pub extra: Duration,
}

/// The landlord's answer to a join: the holder's cookie and when to expect the next poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Admission {
    /// The holder's lease.
    pub cookie: Cookie,
    /// T_p relative to the landlord's now: the next poll comes within this many ms.
    pub next_poll_in: Duration,
}

/// The landlord's confirmation of a poll response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confirm {
    /// The lease confirmed.
    pub cookie: Cookie,
    /// The round answered.
    pub seq: u64,
}

/// Message and byte counts of one side of inverted leasing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrafficStats {
    /// Messages sent.
    pub messages_sent: u64,
    /// Messages received.
    pub messages_received: u64,
    /// Bytes sent (by [`MessageSizes`]).
    pub bytes_sent: u64,
    /// Bytes received (by [`MessageSizes`]).
    pub bytes_received: u64,
    /// Polls sent (landlord) or heard (holder).
    pub polls: u64,
    /// Joins admitted (landlord) or asked for (holder).
    pub joins: u64,
    /// Joins denied.
    pub denials: u64,
    /// Responses confirmed (landlord) or sent (holder).
    pub responses: u64,
    /// Leases cancelled for not answering (landlord) or lost (holder).
    pub cancelled: u64,
}

impl TrafficStats {
    fn sent(&mut self, bytes: u64) {
        self.messages_sent += 1;
        self.bytes_sent += bytes;
    }
    fn received(&mut self, bytes: u64) {
        self.messages_received += 1;
        self.bytes_received += bytes;
    }
}

struct Member<R> {
    resource: R,
}

#[derive(Debug, Clone, Copy)]
struct Round {
    seq: u64,
    close_at: Millis,
}

/// The landlord side of inverted leasing: admits holders, polls them, cancels the silent.
pub struct Poller<R> {
    config: PollerConfig,
    rng: ChaCha12Rng,
    members: HashMap<Cookie, Member<R>>,
    owing: BTreeSet<Cookie>,
    open: Option<Round>,
    /// A round whose listening time ends in the very millisecond the next poll went out (only
    /// when A = 0), with the holders that still owe it an answer: it closes one ms later, so
    /// an answer at exactly D counts as in every other round.
    closing: Option<(Round, BTreeSet<Cookie>)>,
    next_poll_at: Millis,
    seq: u64,
    last: Option<Poll>,
    transmit: Option<Poll>,
    expired: VecDeque<Expired<R>>,
    stats: TrafficStats,
}

impl<R> Poller<R> {
    /// A poller whose first poll goes out at `now`.
    pub fn new(config: PollerConfig, now: Millis) -> Result<Poller<R>> {
        config.check()?;
        let rng = ChaCha12Rng::from_seed(config.seed);
        Ok(Poller {
            config,
            rng,
            members: HashMap::new(),
            owing: BTreeSet::new(),
            open: None,
            closing: None,
            next_poll_at: now,
            seq: 0,
            last: None,
            transmit: None,
            expired: VecDeque::new(),
            stats: TrafficStats::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &PollerConfig {
        &self.config
    }

    /// Holders admitted and not cancelled.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// No holders.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Traffic so far (S_R and S_PR received, S_G, S_P and S_RC sent).
    pub fn stats(&self) -> &TrafficStats {
        &self.stats
    }

    /// The last poll sent, if any: its D and A are the current control variables.
    pub fn last_poll(&self) -> Option<&Poll> {
        self.last.as_ref()
    }

    /// When the next poll goes out.
    pub fn next_poll_at(&self) -> Millis {
        self.next_poll_at
    }

    /// Whether `cookie` is an admitted holder.
    pub fn contains(&self, cookie: Cookie) -> bool {
        self.members.contains_key(&cookie)
    }

    fn new_cookie(&mut self) -> Cookie {
        loop {
            let hi = self.rng.next_u64() as u128;
            let lo = self.rng.next_u64() as u128;
            let c = Cookie(hi << 64 | lo);
            if c.0 != 0 && !self.members.contains_key(&c) {
                return c;
            }
        }
    }

    /// Admits a holder on `resource` (a join request of size S_R, answered with S_G), or denies
    /// it once N_MAX holders are admitted. The holder first answers the poll after this one.
    pub fn join(&mut self, resource: R, now: Millis) -> Result<Admission> {
        self.stats.received(self.config.sizes.request);
        if (self.members.len() + 1) as f64 > self.config.max_holders() {
            self.stats.denials += 1;
            self.stats.sent(self.config.sizes.grant);
            return Err(LeaseError::LeaseDenied(format!(
                "capacity reached: {} holders, N_MAX = L_MAX * G = {}",
                self.members.len(),
                self.config.max_holders()
            )));
        }
        let cookie = self.new_cookie();
        self.members.insert(cookie, Member { resource });
        self.stats.joins += 1;
        self.stats.sent(self.config.sizes.grant);
        Ok(Admission { cookie, next_poll_in: self.next_poll_at.saturating_sub(now).max(0) })
    }

    /// Takes a poll response (S_PR) and confirms it (S_RC). An unknown (or cancelled) holder
    /// gets [`LeaseError::UnknownLease`] and should join again.
    pub fn respond(&mut self, cookie: Cookie, seq: u64, now: Millis) -> Result<Confirm> {
        self.stats.received(self.config.sizes.response);
        self.close_due(now);
        if !self.members.contains_key(&cookie) {
            return Err(LeaseError::UnknownLease);
        }
        if self.open.is_some_and(|r| r.seq == seq) {
            self.owing.remove(&cookie);
        }
        if let Some((r, owing)) = &mut self.closing {
            if r.seq == seq {
                owing.remove(&cookie);
            }
        }
        self.stats.responses += 1;
        self.stats.sent(self.config.sizes.confirm);
        Ok(Confirm { cookie, seq })
    }

    /// A holder leaves: its lease ends and its resource is handed back.
    pub fn leave(&mut self, cookie: Cookie, _now: Millis) -> Result<R> {
        let m = self.members.remove(&cookie).ok_or(LeaseError::UnknownLease)?;
        self.owing.remove(&cookie);
        if let Some((_, owing)) = &mut self.closing {
            owing.remove(&cookie);
        }
        Ok(m.resource)
    }

    /// When the host should next call [`Poller::handle_timeout`]: the first millisecond after
    /// an open round's listening time (answers at exactly D count), or the next poll.
    pub fn poll_timeout(&self) -> Option<Millis> {
        let ends = [self.open.as_ref(), self.closing.as_ref().map(|c| &c.0)];
        let ends = ends.into_iter().flatten().map(|r| r.close_at.saturating_add(1));
        Some(ends.fold(self.next_poll_at, Millis::min))
    }

    /// Closes the rounds whose listening time is over at `now`.
    fn close_due(&mut self, now: Millis) {
        if let Some((r, owing)) = self.closing.take() {
            if now > r.close_at {
                self.close_round(r, owing);
            } else {
                self.closing = Some((r, owing));
            }
        }
        if let Some(r) = self.open {
            if now > r.close_at {
                self.open = None;
                let owing = std::mem::take(&mut self.owing);
                self.close_round(r, owing);
            }
        }
    }

    /// Cancels every holder in `owing` that is still a member.
    fn close_round(&mut self, r: Round, owing: BTreeSet<Cookie>) {
        for cookie in owing {
            if let Some(m) = self.members.remove(&cookie) {
                self.stats.cancelled += 1;
                self.expired.push_back(Expired {
                    cookie,
                    expiration: r.close_at,
                    resource: m.resource,
                });
            }
        }
    }

    /// Advances to `now`: closes a round whose listening time has passed (cancelling every
    /// holder that did not answer) and sends the next poll when it is due.
    pub fn handle_timeout(&mut self, now: Millis) {
        self.close_due(now);
        if now >= self.next_poll_at {
            if let Some(r) = self.open.take() {
                // The next poll is due in the last millisecond of this round's listening time
                // (A = 0): the round keeps listening until that millisecond is over.
                let owing = std::mem::take(&mut self.owing);
                if let Some((old, old_owing)) = self.closing.replace((r, owing)) {
                    // Cannot happen (D > 0, so close_due has closed it); closed all the same.
                    self.close_round(old, old_owing);
                }
            }
            let (d, a) = self.config.period_for(self.members.len());
            self.seq += 1;
            let poll = Poll { landlord: self.config.id, seq: self.seq, duration: d, extra: a };
            self.owing = self.members.keys().copied().collect();
            self.open = Some(Round { seq: self.seq, close_at: time::expiration_after(now, d) });
            self.next_poll_at = time::expiration_after(now, d.saturating_add(a));
            self.stats.polls += 1;
            self.stats.sent(self.config.sizes.poll);
            self.last = Some(poll);
            self.transmit = Some(poll);
        }
    }

    /// The poll to multicast, once per round.
    pub fn poll_transmit(&mut self) -> Option<Poll> {
        self.transmit.take()
    }

    /// The next holder cancelled for not answering; `expiration` is the end of the round's D.
    pub fn poll_expired(&mut self) -> Option<Expired<R>> {
        self.expired.pop_front()
    }
}

/// How a [`PollListener`] is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerConfig {
    /// Seed of the holder's random answer times (the core has no entropy of its own).
    pub seed: u64,
    /// Allowance in ms for the network: answers go out within `0..D - guard` so they arrive
    /// before D ends, and a poll is missed only after `D + A + guard`.
    pub guard: Duration,
    /// Message sizes for the traffic counters.
    pub sizes: MessageSizes,
}

impl ListenerConfig {
    /// No guard, default sizes.
    pub fn new(seed: u64) -> ListenerConfig {
        ListenerConfig { seed, guard: 0, sizes: MessageSizes::default() }
    }
    /// With a network allowance.
    pub fn with_guard(mut self, guard: Duration) -> ListenerConfig {
        self.guard = guard;
        self
    }
}

/// What a [`PollListener`] asks its host to send to the landlord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ListenerTransmit {
    /// Ask to join (a lease request); answer with [`PollListener::handle_admission`].
    Join,
    /// Answer a poll; answer with [`PollListener::handle_confirm`].
    Respond {
        /// The holder's lease.
        cookie: Cookie,
        /// The round answered.
        seq: u64,
    },
}

/// What a [`PollListener`] tells its host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ListenerEvent {
    /// Admitted with this lease.
    Joined(Cookie),
    /// The join was denied (or failed); the listener is idle until [`PollListener::join`].
    Denied(LeaseError),
    /// No poll came within D + A (+ guard): the lease is presumed lost; joining again.
    PollMissed(Cookie),
    /// The landlord no longer knows the lease (it was cancelled); joining again.
    Cancelled(Cookie),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    Joining,
    Member(Cookie),
}

/// The holder side of inverted leasing: listens for polls and answers each at a random time.
pub struct PollListener {
    config: ListenerConfig,
    rng: ChaCha12Rng,
    state: State,
    reply: Option<(Millis, u64)>,
    deadline: Option<Millis>,
    /// The latest round heard since admission: older or repeated polls are ignored.
    last_seq: Option<u64>,
    transmits: VecDeque<ListenerTransmit>,
    events: VecDeque<ListenerEvent>,
    stats: TrafficStats,
}

impl PollListener {
    /// A listener, idle until [`PollListener::join`]. The guard must be zero or more.
    pub fn new(config: ListenerConfig) -> Result<PollListener> {
        if config.guard < 0 {
            return Err(LeaseError::InvalidArgument(format!(
                "guard must be zero or more, got {} ms",
                config.guard
            )));
        }
        Ok(PollListener {
            config,
            rng: ChaCha12Rng::seed_from_u64(config.seed),
            state: State::Idle,
            reply: None,
            deadline: None,
            last_seq: None,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            stats: TrafficStats::default(),
        })
    }

    /// The lease held, if admitted.
    pub fn cookie(&self) -> Option<Cookie> {
        match self.state {
            State::Member(c) => Some(c),
            _ => None,
        }
    }

    /// Traffic so far (S_R and S_PR sent, S_G, S_P and S_RC received).
    pub fn stats(&self) -> &TrafficStats {
        &self.stats
    }

    fn send_join(&mut self) {
        self.state = State::Joining;
        self.reply = None;
        self.deadline = None;
        self.last_seq = None;
        self.stats.joins += 1;
        self.stats.sent(self.config.sizes.request);
        self.transmits.push_back(ListenerTransmit::Join);
    }

    /// Asks to join (queues a [`ListenerTransmit::Join`]).
    pub fn join(&mut self, _now: Millis) {
        self.send_join();
    }

    /// Leaves: forgets the lease and returns it, so the host can tell the landlord.
    pub fn leave(&mut self) -> Option<Cookie> {
        let c = self.cookie();
        self.state = State::Idle;
        self.reply = None;
        self.deadline = None;
        self.last_seq = None;
        c
    }

    /// The landlord's answer to a join.
    pub fn handle_admission(&mut self, result: Result<Admission>, now: Millis) {
        self.stats.received(self.config.sizes.grant);
        if self.state != State::Joining {
            return;
        }
        match result {
            Ok(a) => {
                self.state = State::Member(a.cookie);
                self.deadline =
                    Some(now.saturating_add(a.next_poll_in).saturating_add(self.config.guard));
                self.events.push_back(ListenerEvent::Joined(a.cookie));
            }
            Err(e) => {
                self.stats.denials += 1;
                self.state = State::Idle;
                self.events.push_back(ListenerEvent::Denied(e));
            }
        }
    }

    /// A poll arrived: schedules an answer uniformly within `0..D - guard` and expects the next
    /// poll within `D + A + guard`.
    ///
    /// A poll whose round (`seq`) is not newer than the latest one heard since admission, a
    /// duplicate or one overtaken on the way, is counted and otherwise ignored: each round is
    /// answered once. (A landlord that restarts its numbering is thus not heard; the listener
    /// joins again when no newer poll has come within `D + A + guard`.)
    pub fn handle_poll(&mut self, poll: &Poll, now: Millis) {
        self.stats.received(self.config.sizes.poll);
        self.stats.polls += 1;
        let State::Member(_) = self.state else { return };
        if self.last_seq.is_some_and(|last| poll.seq <= last) {
            return;
        }
        self.last_seq = Some(poll.seq);
        let window = poll.duration.saturating_sub(self.config.guard).max(1) as u64;
        let offset = (self.rng.next_u64() % window) as i64;
        self.reply = Some((now.saturating_add(offset), poll.seq));
        let next = poll.duration.saturating_add(poll.extra).saturating_add(self.config.guard);
        self.deadline = Some(now.saturating_add(next));
    }

    /// The landlord's answer to a poll response: a confirmation, or an error (an unknown lease
    /// was cancelled: the listener joins again).
    pub fn handle_confirm(&mut self, result: Result<Confirm>, _now: Millis) {
        self.stats.received(self.config.sizes.confirm);
        if let (Err(e), State::Member(c)) = (&result, self.state) {
            if e.is_definite() {
                self.stats.cancelled += 1;
                self.events.push_back(ListenerEvent::Cancelled(c));
                self.send_join();
            }
        }
    }

    /// When the host should next call [`PollListener::handle_timeout`].
    pub fn poll_timeout(&self) -> Option<Millis> {
        match (self.reply.map(|r| r.0), self.deadline) {
            (Some(a), Some(b)) => Some(a.min(b.saturating_add(1))),
            (Some(a), None) => Some(a),
            (None, Some(b)) => Some(b.saturating_add(1)),
            (None, None) => None,
        }
    }

    /// Advances to `now`: sends a due answer; joins again if the next poll is overdue.
    pub fn handle_timeout(&mut self, now: Millis) {
        let State::Member(cookie) = self.state else { return };
        if let Some((at, seq)) = self.reply {
            if now >= at {
                self.reply = None;
                self.stats.responses += 1;
                self.stats.sent(self.config.sizes.response);
                self.transmits.push_back(ListenerTransmit::Respond { cookie, seq });
            }
        }
        if self.deadline.is_some_and(|d| now > d) {
            self.stats.cancelled += 1;
            self.events.push_back(ListenerEvent::PollMissed(cookie));
            self.send_join();
        }
    }

    /// The next message to send to the landlord.
    pub fn poll_transmit(&mut self) -> Option<ListenerTransmit> {
        self.transmits.pop_front()
    }

    /// The next event for the host.
    pub fn poll_event(&mut self) -> Option<ListenerEvent> {
        self.events.pop_front()
    }
}
