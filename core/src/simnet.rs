//! A virtual-time network for driving sans-I/O parts together: landlords, renewal managers,
//! and anything else that implements [`Actor`].
//!
//! Time is *real* (virtual) milliseconds, starting at 0; each node reads its own [`Clock`], with
//! an offset and a rate, so holder and landlord can disagree about what time it is and how fast
//! it passes. Messages travel with a latency (plus seeded jitter), may be lost with a given
//! probability, and are dropped while their two ends are partitioned (also messages already in
//! flight when the partition starts). Nothing here sleeps: [`SimNet::run_until`] jumps from one
//! event to the next, so hours of virtual time take milliseconds.
//!
//! ```
//! use leasehold::simnet::{Clock, HolderNode, Hold, LandlordNode, SimNet};
//! use leasehold::{policy::Fixed, Landlord, LandlordConfig, LandlordId, RenewalManager};
//! let mut net = SimNet::new(7);
//! let ll = net.add_landlord(
//!     Landlord::new(LandlordConfig::new(LandlordId(1), [1; 32]), Fixed::new(10_000).unwrap()),
//!     Clock::exact(),
//! );
//! let h = net.add_holder(RenewalManager::new(Default::default()), Clock::new(5_000_000, 1.0));
//! net.holder_mut(h).request_grant(LandlordId(1), b"printer".to_vec(), 10_000, Hold::For(3_600_000), 10_000);
//! net.run_until(3_000_000); // 50 minutes of virtual time
//! assert_eq!(net.holder(h).manager.len(), 1);
//! assert_eq!(net.landlord(ll).landlord.len(), 1);
//! ```

use std::any::Any;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};

use rand_chacha::ChaCha12Rng;
use rand_core::{RngCore, SeedableRng};

use crate::error::LeaseError;
use crate::holder::{self, RenewalEvent, RenewalManager, Transmit};
use crate::landlord::{Expired, Landlord};
use crate::lease::{LandlordId, Lease};
use crate::time::{Duration, Millis};
use crate::wire::{Reply, Request};

/// Identifies a node of a [`SimNet`] (its index, in the order nodes were added).
pub type NodeId = usize;

/// A node's clock: `local = offset + floor(real * rate)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clock {
    /// Local time at real time 0.
    pub offset: Millis,
    /// Local milliseconds per real millisecond (1.01 runs 1% fast). A rate that is not positive
    /// and finite reads as 1.
    pub rate: f64,
}

impl Clock {
    /// A clock that reads real time.
    pub fn exact() -> Clock {
        Clock { offset: 0, rate: 1.0 }
    }

    /// A clock with an offset and a rate (rates that are not positive and finite read as 1).
    pub fn new(offset: Millis, rate: f64) -> Clock {
        let rate = if rate.is_finite() && rate > 0.0 { rate } else { 1.0 };
        Clock { offset, rate }
    }

    /// The rate in force: `rate`, or 1 if it is not positive and finite.
    fn effective_rate(&self) -> f64 {
        if self.rate.is_finite() && self.rate > 0.0 {
            self.rate
        } else {
            1.0
        }
    }

    /// The local time at real time `real`.
    pub fn local(&self, real: Millis) -> Millis {
        self.offset.saturating_add((real as f64 * self.effective_rate()).floor() as i64)
    }

    /// The earliest real time (not before `0`) at which this clock reads `local` or later;
    /// `None` if it never does within `i64` range.
    pub fn real_at(&self, local: Millis) -> Option<Millis> {
        let target = local.checked_sub(self.offset)?;
        if target <= 0 {
            return Some(0);
        }
        let guess = (target as f64 / self.effective_rate()).ceil();
        if !guess.is_finite() || guess >= (i64::MAX / 4) as f64 {
            return None;
        }
        let mut r = guess as i64;
        while self.local(r) < local {
            r += 1;
        }
        while r > 0 && self.local(r - 1) >= local {
            r -= 1;
        }
        Some(r)
    }
}

/// A message on the simulated wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A request to a landlord.
    Request(Request),
    /// A landlord's reply.
    Reply(Reply),
    /// Opaque bytes of another protocol (the lookup discovery service's announcements, unicast
    /// discovery, requests, events and their answers, in the simulator).
    Bytes(Vec<u8>),
}

/// Where a message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Address {
    /// A node, by id.
    Node(NodeId),
    /// The node that runs this landlord.
    Landlord(LandlordId),
}

/// A message an actor wants sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// Destination.
    pub to: Address,
    /// The message.
    pub message: Message,
}

/// A sans-I/O part the network can drive. Every `now` is the node's local time.
pub trait Actor: Any {
    /// When the actor wants [`Actor::handle_timeout`] (local time), if ever.
    fn poll_timeout(&self) -> Option<Millis>;
    /// Time has come.
    fn handle_timeout(&mut self, now: Millis);
    /// The next message to send.
    fn poll_outgoing(&mut self, now: Millis) -> Option<Outgoing>;
    /// A message arrived from node `from`.
    fn handle_message(&mut self, from: NodeId, message: Message, now: Millis);
    /// The landlord this node answers for, if any (so [`Address::Landlord`] can reach it).
    fn landlord_id(&self) -> Option<LandlordId> {
        None
    }
    /// As [`Any`], to get the concrete actor back.
    fn as_any(&self) -> &dyn Any;
    /// As mutable [`Any`].
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// A node running a [`Landlord`]: answers requests, expires leases and logs expiries.
pub struct LandlordNode {
    /// The landlord.
    pub landlord: Landlord<Vec<u8>>,
    /// Every lease that expired, with the local time it was found.
    pub expired: Vec<(Millis, Expired<Vec<u8>>)>,
    /// Requests answered.
    pub requests: u64,
    outbox: VecDeque<Outgoing>,
}

impl LandlordNode {
    /// A node for `landlord`.
    pub fn new(landlord: Landlord<Vec<u8>>) -> LandlordNode {
        LandlordNode { landlord, expired: Vec::new(), requests: 0, outbox: VecDeque::new() }
    }
}

impl Actor for LandlordNode {
    fn poll_timeout(&self) -> Option<Millis> {
        self.landlord.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Millis) {
        self.landlord.handle_timeout(now);
        while let Some(e) = self.landlord.poll_expired() {
            self.expired.push((now, e));
        }
    }
    fn poll_outgoing(&mut self, _now: Millis) -> Option<Outgoing> {
        self.outbox.pop_front()
    }
    fn handle_message(&mut self, from: NodeId, message: Message, now: Millis) {
        if let Message::Request(req) = message {
            self.requests += 1;
            let reply = self.landlord.handle_request(&req, now);
            self.outbox
                .push_back(Outgoing { to: Address::Node(from), message: Message::Reply(reply) });
        }
    }
    fn landlord_id(&self) -> Option<LandlordId> {
        Some(self.landlord.id())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// How long a holder wants a lease it asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// For this long from when the grant arrives ([`crate::FOREVER`] for ever).
    For(Duration),
    /// Until this local time.
    Until(Millis),
}

struct PendingGrant {
    landlord: LandlordId,
    request: Request,
    hold: Hold,
    renew_duration: Duration,
    sent_at: Option<Millis>,
}

/// A node running a [`RenewalManager`]; it can also ask landlords for new leases, which it
/// then hands to its manager.
pub struct HolderNode {
    /// The manager.
    pub manager: RenewalManager,
    /// Every event of the manager, with the local time it came out.
    pub events: Vec<(Millis, RenewalEvent)>,
    /// Every request sent (grants and the manager's), with its local send time.
    pub sent: Vec<(Millis, Transmit)>,
    /// Leases obtained by [`HolderNode::request_grant`], in order of arrival.
    pub granted: Vec<Lease>,
    /// Grant requests that failed, with the landlord's error.
    pub grant_errors: Vec<(LandlordId, LeaseError)>,
    /// Errors the manager returned when handed a granted lease.
    pub manage_errors: Vec<LeaseError>,
    grants: HashMap<u64, PendingGrant>,
    queued: VecDeque<u64>,
    next_grant_id: u64,
}

impl HolderNode {
    /// A node around `manager`. Grant requests use ids from `1 << 62` up, apart from the
    /// manager's.
    pub fn new(manager: RenewalManager) -> HolderNode {
        HolderNode {
            manager,
            events: Vec::new(),
            sent: Vec::new(),
            granted: Vec::new(),
            grant_errors: Vec::new(),
            manage_errors: Vec::new(),
            grants: HashMap::new(),
            queued: VecDeque::new(),
            next_grant_id: 1 << 62,
        }
    }

    /// Asks `landlord` for a lease on `resource` for `duration`; once granted, the manager
    /// renews it per `hold`, asking `renew_duration` each time. The local expiration counts
    /// from the send time, less the manager's clock-drift margin.
    pub fn request_grant(
        &mut self,
        landlord: LandlordId,
        resource: Vec<u8>,
        duration: Duration,
        hold: Hold,
        renew_duration: Duration,
    ) -> u64 {
        let id = self.next_grant_id;
        self.next_grant_id += 1;
        let request = holder::grant_request(id, resource, duration);
        self.grants
            .insert(id, PendingGrant { landlord, request, hold, renew_duration, sent_at: None });
        self.queued.push_back(id);
        id
    }

    /// Requests sent that named `lease` (renewals and cancels), with their send times.
    pub fn requests_naming(&self, lease: &Lease) -> Vec<Millis> {
        self.sent
            .iter()
            .filter(|(_, t)| t.landlord == lease.landlord() && names(&t.request, lease))
            .map(|(at, _)| *at)
            .collect()
    }

    fn drain_events(&mut self, now: Millis) {
        while let Some(e) = self.manager.poll_event() {
            self.events.push((now, e));
        }
    }

    fn handle_grant(&mut self, reply: &Reply, now: Millis) -> bool {
        let Some(g) = self.grants.get(&reply.id) else { return false };
        let Some(sent_at) = g.sent_at else { return false };
        if reply.landlord != g.landlord {
            return false;
        }
        let g = self.grants.remove(&reply.id).expect("checked");
        let drift = self.manager.config().max_clock_drift_ppm;
        match holder::lease_from_reply_with_drift(reply, sent_at, drift) {
            Ok(lease) => {
                self.granted.push(lease);
                let r = match g.hold {
                    Hold::For(d) => self.manager.renew_for(lease, d, g.renew_duration, now),
                    Hold::Until(t) => self.manager.renew_until(lease, t, g.renew_duration, now),
                };
                if let Err(e) = r {
                    self.manage_errors.push(e);
                }
            }
            Err(e) => self.grant_errors.push((g.landlord, e)),
        }
        true
    }
}

fn names(request: &Request, lease: &Lease) -> bool {
    use crate::wire::RequestBody as B;
    let c = lease.cookie();
    match &request.body {
        B::Renew { cookie, .. } | B::Cancel { cookie } => *cookie == c,
        B::RenewAll { items } => items.iter().any(|(k, _)| *k == c),
        B::CancelAll { cookies } => cookies.contains(&c),
        B::Grant { .. } => false,
    }
}

impl Actor for HolderNode {
    fn poll_timeout(&self) -> Option<Millis> {
        self.manager.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Millis) {
        self.manager.handle_timeout(now);
        self.drain_events(now);
    }
    fn poll_outgoing(&mut self, now: Millis) -> Option<Outgoing> {
        if let Some(id) = self.queued.pop_front() {
            if let Some(g) = self.grants.get_mut(&id) {
                g.sent_at = Some(now);
                let t = Transmit { landlord: g.landlord, request: g.request.clone() };
                self.sent.push((now, t.clone()));
                return Some(Outgoing {
                    to: Address::Landlord(t.landlord),
                    message: Message::Request(t.request),
                });
            }
        }
        let t = self.manager.poll_transmit(now)?;
        self.sent.push((now, t.clone()));
        Some(Outgoing { to: Address::Landlord(t.landlord), message: Message::Request(t.request) })
    }
    fn handle_message(&mut self, _from: NodeId, message: Message, now: Millis) {
        if let Message::Reply(reply) = message {
            if !self.handle_grant(&reply, now) {
                self.manager.handle_reply(&reply, now);
            }
            self.drain_events(now);
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// How messages travel between two nodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkConfig {
    /// One-way latency, ms.
    pub latency: Duration,
    /// Extra latency drawn uniformly from `0..=jitter`, ms.
    pub jitter: Duration,
    /// Probability that a message is lost (0 to 1).
    pub loss: f64,
}

impl Default for LinkConfig {
    /// 10 ms one way, no jitter, no loss.
    fn default() -> Self {
        LinkConfig { latency: 10, jitter: 0, loss: 0.0 }
    }
}

/// What happened to messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Messages handed to the network.
    pub sent: u64,
    /// Messages delivered.
    pub delivered: u64,
    /// Messages lost at random.
    pub lost: u64,
    /// Messages dropped by a partition.
    pub partitioned: u64,
    /// Messages to an address no node answers for.
    pub undeliverable: u64,
    /// Events processed (deliveries and time-outs).
    pub steps: u64,
}

struct Slot {
    actor: Box<dyn Actor>,
    clock: Clock,
    last_timeout: Option<Millis>,
}

struct InTransit {
    from: NodeId,
    to: NodeId,
    message: Message,
}

enum Next {
    Deliver(u64),
    Timeout(NodeId),
}

/// The simulated network: nodes, their clocks, links, partitions, and virtual real time.
pub struct SimNet {
    now: Millis,
    nodes: Vec<Slot>,
    landlords: HashMap<LandlordId, NodeId>,
    heap: BinaryHeap<Reverse<(Millis, u64)>>,
    transit: HashMap<u64, InTransit>,
    seq: u64,
    link: LinkConfig,
    links: HashMap<(NodeId, NodeId), LinkConfig>,
    blocked: HashSet<(NodeId, NodeId)>,
    rng: ChaCha12Rng,
    stats: NetStats,
}

fn pair(a: NodeId, b: NodeId) -> (NodeId, NodeId) {
    (a.min(b), a.max(b))
}

impl SimNet {
    /// An empty network at real time 0; `seed` drives jitter and loss.
    pub fn new(seed: u64) -> SimNet {
        SimNet {
            now: 0,
            nodes: Vec::new(),
            landlords: HashMap::new(),
            heap: BinaryHeap::new(),
            transit: HashMap::new(),
            seq: 0,
            link: LinkConfig::default(),
            links: HashMap::new(),
            blocked: HashSet::new(),
            rng: ChaCha12Rng::seed_from_u64(seed),
            stats: NetStats::default(),
        }
    }

    /// Adds a node running `actor` on `clock`.
    pub fn add_node(&mut self, actor: Box<dyn Actor>, clock: Clock) -> NodeId {
        let id = self.nodes.len();
        if let Some(l) = actor.landlord_id() {
            self.landlords.insert(l, id);
        }
        self.nodes.push(Slot { actor, clock, last_timeout: None });
        id
    }

    /// Adds a node running `landlord`.
    pub fn add_landlord(&mut self, landlord: Landlord<Vec<u8>>, clock: Clock) -> NodeId {
        self.add_node(Box::new(LandlordNode::new(landlord)), clock)
    }

    /// Adds a node running `manager`.
    pub fn add_holder(&mut self, manager: RenewalManager, clock: Clock) -> NodeId {
        self.add_node(Box::new(HolderNode::new(manager)), clock)
    }

    /// The link used between nodes without their own.
    pub fn set_default_link(&mut self, link: LinkConfig) {
        self.link = link;
    }

    /// The link between `a` and `b` (both ways).
    pub fn set_link(&mut self, a: NodeId, b: NodeId, link: LinkConfig) {
        self.links.insert(pair(a, b), link);
    }

    /// Cuts `a` off from `b` (both ways), including messages already in flight.
    pub fn partition(&mut self, a: NodeId, b: NodeId) {
        self.blocked.insert(pair(a, b));
    }

    /// Joins `a` and `b` again.
    pub fn heal(&mut self, a: NodeId, b: NodeId) {
        self.blocked.remove(&pair(a, b));
    }

    /// Whether `a` and `b` are cut off from each other.
    pub fn is_partitioned(&self, a: NodeId, b: NodeId) -> bool {
        self.blocked.contains(&pair(a, b))
    }

    /// Real (virtual) time.
    pub fn now(&self) -> Millis {
        self.now
    }

    /// The clock of `node`. Panics if there is no such node (a bug in the test).
    pub fn clock(&self, node: NodeId) -> Clock {
        self.nodes[node].clock
    }

    /// Replaces the clock of `node` from now on (a clock step, or a new rate). Its local time
    /// jumps to what the new clock reads at the current real time, backwards too: that is how a
    /// test steps a node's clock. Panics if there is no such node (a bug in the test).
    pub fn set_clock(&mut self, node: NodeId, clock: Clock) {
        let slot = &mut self.nodes[node];
        slot.clock = clock;
        // The guard against waking twice at one local instant counts on the old clock: after a
        // step back it would keep the node asleep until its clock read the old time again.
        slot.last_timeout = None;
    }

    /// Steps the clock of `node` by `delta` ms (negative steps it back), keeping its rate: from
    /// now on it reads `delta` more than it would have. Panics if there is no such node.
    pub fn step_clock(&mut self, node: NodeId, delta: Duration) {
        let slot = &mut self.nodes[node];
        slot.clock.offset = slot.clock.offset.saturating_add(delta);
        slot.last_timeout = None;
    }

    /// How many nodes the network has (their ids are `0..node_count()`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The local time of `node` now.
    pub fn local_now(&self, node: NodeId) -> Millis {
        self.nodes[node].clock.local(self.now)
    }

    /// Message counters.
    pub fn stats(&self) -> NetStats {
        self.stats
    }

    /// The actor of `node` as `T`, if it is one.
    pub fn node<T: Actor>(&self, node: NodeId) -> Option<&T> {
        self.nodes.get(node)?.actor.as_any().downcast_ref::<T>()
    }

    /// The actor of `node` as mutable `T`, if it is one. Messages it queues go out on the next step.
    pub fn node_mut<T: Actor>(&mut self, node: NodeId) -> Option<&mut T> {
        self.nodes.get_mut(node)?.actor.as_any_mut().downcast_mut::<T>()
    }

    /// The landlord node `node`. Panics if it is not one (a bug in the test).
    pub fn landlord(&self, node: NodeId) -> &LandlordNode {
        self.node(node).expect("not a landlord node")
    }

    /// The landlord node `node`, mutable. Panics if it is not one.
    pub fn landlord_mut(&mut self, node: NodeId) -> &mut LandlordNode {
        self.node_mut(node).expect("not a landlord node")
    }

    /// The holder node `node`. Panics if it is not one (a bug in the test).
    pub fn holder(&self, node: NodeId) -> &HolderNode {
        self.node(node).expect("not a holder node")
    }

    /// The holder node `node`, mutable. Panics if it is not one.
    pub fn holder_mut(&mut self, node: NodeId) -> &mut HolderNode {
        self.node_mut(node).expect("not a holder node")
    }

    fn drain(&mut self) {
        for from in 0..self.nodes.len() {
            let local = self.nodes[from].clock.local(self.now);
            while let Some(out) = self.nodes[from].actor.poll_outgoing(local) {
                self.send(from, out);
            }
        }
    }

    fn send(&mut self, from: NodeId, out: Outgoing) {
        self.stats.sent += 1;
        let to = match out.to {
            Address::Node(n) if n < self.nodes.len() => n,
            Address::Landlord(l) => match self.landlords.get(&l) {
                Some(&n) => n,
                None => {
                    self.stats.undeliverable += 1;
                    return;
                }
            },
            Address::Node(_) => {
                self.stats.undeliverable += 1;
                return;
            }
        };
        if self.is_partitioned(from, to) {
            self.stats.partitioned += 1;
            return;
        }
        let link = self.links.get(&pair(from, to)).copied().unwrap_or(self.link);
        if link.loss > 0.0 {
            let x = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            if x < link.loss {
                self.stats.lost += 1;
                return;
            }
        }
        let jitter = if link.jitter > 0 {
            (self.rng.next_u64() % (link.jitter as u64 + 1)) as i64
        } else {
            0
        };
        let at = self.now.saturating_add(link.latency.max(0)).saturating_add(jitter);
        self.seq += 1;
        self.transit.insert(self.seq, InTransit { from, to, message: out.message });
        self.heap.push(Reverse((at, self.seq)));
    }

    fn next(&self) -> Option<(Millis, Next)> {
        let mut best: Option<(Millis, Next)> =
            self.heap.peek().map(|Reverse((t, s))| (*t, Next::Deliver(*s)));
        for (i, slot) in self.nodes.iter().enumerate() {
            let Some(mut t) = slot.actor.poll_timeout() else { continue };
            if let Some(last) = slot.last_timeout {
                // Never wake a node twice at one local instant: progress is guaranteed.
                t = t.max(last.saturating_add(1));
            }
            let Some(real) = slot.clock.real_at(t) else { continue };
            let real = real.max(self.now);
            let earlier = match &best {
                Some((b, _)) => real < *b,
                None => true,
            };
            if earlier {
                best = Some((real, Next::Timeout(i)));
            }
        }
        best
    }

    /// Processes the next event if it comes no later than `until`; false if there is none.
    pub fn step_until(&mut self, until: Millis) -> bool {
        self.drain();
        let Some((at, what)) = self.next() else { return false };
        if at > until {
            return false;
        }
        self.now = at;
        self.stats.steps += 1;
        match what {
            Next::Deliver(seq) => {
                self.heap.pop();
                if let Some(m) = self.transit.remove(&seq) {
                    if self.is_partitioned(m.from, m.to) {
                        self.stats.partitioned += 1;
                    } else {
                        self.stats.delivered += 1;
                        let local = self.nodes[m.to].clock.local(self.now);
                        self.nodes[m.to].actor.handle_message(m.from, m.message, local);
                    }
                }
            }
            Next::Timeout(i) => {
                let local = self.nodes[i].clock.local(self.now);
                self.nodes[i].last_timeout = Some(local);
                self.nodes[i].actor.handle_timeout(local);
            }
        }
        self.drain();
        true
    }

    /// Processes the next event, whenever it comes; false if nothing is scheduled.
    pub fn step(&mut self) -> bool {
        self.step_until(Millis::MAX)
    }

    /// Runs every event up to real time `until`, then sets the time to `until`.
    pub fn run_until(&mut self, until: Millis) {
        while self.step_until(until) {}
        self.now = self.now.max(until);
    }

    /// Runs for `duration` of real time.
    pub fn run_for(&mut self, duration: Duration) {
        self.run_until(self.now.saturating_add(duration));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_inverse() {
        for c in [Clock::exact(), Clock::new(-7_200_000, 0.99), Clock::new(3_600_000, 1.01)] {
            for local in [c.local(0), c.local(0) + 1, c.local(12_345), c.local(999_999) + 3] {
                let r = c.real_at(local).unwrap();
                assert!(c.local(r) >= local);
                assert!(r == 0 || c.local(r - 1) < local);
            }
        }
        assert_eq!(Clock::new(5, 1.0).real_at(i64::MAX), None);
        assert_eq!(Clock::new(0, f64::NAN).rate, 1.0);
    }

    #[test]
    fn a_stepped_clock_reads_the_step_at_once_and_keeps_its_rate() {
        let mut net = SimNet::new(1);
        let n = net.add_node(
            Box::new(LandlordNode::new(Landlord::new(
                crate::LandlordConfig::new(LandlordId(1), [1; 32]),
                crate::policy::Fixed::new(1_000).unwrap(),
            ))),
            Clock::new(100, 2.0),
        );
        net.run_until(50);
        assert_eq!(net.local_now(n), 200);
        net.step_clock(n, -150);
        assert_eq!(net.local_now(n), 50);
        net.run_until(60);
        assert_eq!(net.local_now(n), 70);
        net.set_clock(n, Clock::exact());
        assert_eq!(net.local_now(n), 60);
    }

    /// An actor that asks to be woken at one local time, and records when it was.
    struct Alarm {
        at: Option<Millis>,
        woken: Vec<Millis>,
    }

    impl Actor for Alarm {
        fn poll_timeout(&self) -> Option<Millis> {
            self.at
        }
        fn handle_timeout(&mut self, now: Millis) {
            if self.at.is_some_and(|t| t <= now) {
                self.at = None;
                self.woken.push(now);
            }
        }
        fn poll_outgoing(&mut self, _now: Millis) -> Option<Outgoing> {
            None
        }
        fn handle_message(&mut self, _from: NodeId, _message: Message, _now: Millis) {}
        fn as_any(&self) -> &dyn Any {
            self
        }
        fn as_any_mut(&mut self) -> &mut dyn Any {
            self
        }
    }

    #[test]
    fn a_node_whose_clock_steps_back_still_wakes_for_what_is_due() {
        // Woken at local 1 000; its clock then steps back by 10 s and it asks to be woken at
        // local -8 000: that must happen when its clock reads -8 000, not once it reads 1 001.
        let mut net = SimNet::new(1);
        let n =
            net.add_node(Box::new(Alarm { at: Some(1_000), woken: Vec::new() }), Clock::exact());
        net.run_until(2_000);
        net.step_clock(n, -11_000);
        net.node_mut::<Alarm>(n).unwrap().at = Some(-8_000);
        net.run_until(3_100);
        assert_eq!(net.node::<Alarm>(n).unwrap().woken, vec![1_000, -8_000]);
    }

    #[test]
    fn a_clock_built_with_a_bad_rate_reads_as_rate_one() {
        // The fields are public, so a clock may bypass Clock::new: a rate that is not positive
        // and finite must not run time backwards or make real_at loop for ever.
        for rate in [-1.0, 0.0, f64::NAN, f64::INFINITY] {
            let c = Clock { offset: 10, rate };
            assert_eq!(c.local(100), 110, "rate {rate}");
            assert_eq!(c.real_at(110), Some(100), "rate {rate}");
        }
    }
}
