//! The model: N leaseholders against one lookup-service landlord, in virtual time.
//!
//! Every rule of leasing comes from the core: a real [`Landlord`] with a real policy
//! ([`Fixed`] or [`Adaptive`]) and one real [`RenewalManager`] per holder, talking in wire
//! [`Request`]s and [`Reply`]s; or, for inverted leasing, a real [`Poller`] and one
//! [`PollListener`] per holder. The simulator only carries messages (with a fixed one-way
//! latency), injects failures and joins, and measures:
//!
//! - B: bytes of every message actually sent, by its model size (S_R, S_G, S_P, S_PR, S_RC);
//! - R: from a holder's failure to the landlord noticing (its lease expiring or being
//!   cancelled), per failure;
//! - the control variable: every granted L_G (fixed, adaptive) or poll D (inverted).

use std::collections::HashMap;

use leasehold::holder::{
    grant_request, lease_from_reply, RenewalEvent, RenewalManager, RenewalManagerConfig,
};
use leasehold::inverted::{
    expected_detection, Admission, Confirm, ListenerConfig, ListenerEvent, ListenerTransmit,
    MessageSizes, Poll, PollListener, Poller, PollerConfig,
};
use leasehold::policy::{Adaptive, AdaptiveConfig, Fixed};
use leasehold::{
    Duration, Landlord, LandlordConfig, LandlordId, LeasePolicy, Millis, Reply, ReplyBody, Request,
    Result, ANY, FOREVER,
};

use crate::engine::{derive_seed, Meter, Queue, Rng};

/// How the landlord decides lease periods.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scheme {
    /// Every lease gets L_G.
    Fixed { lease: Duration },
    /// The paper's adaptive policy (core `policy::Adaptive`).
    Adaptive(AdaptiveConfig),
    /// Inverted leasing (core `inverted::Poller`): G, L_MIN, L_MAX, A/D.
    Inverted { g: f64, min: Duration, max: Duration, extra: f64 },
}

/// The renewal manager's scheduling knobs the simulator sets (see `--help`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ManagerKnobs {
    pub renew_divisor: u32,
    pub attempts: u32,
    pub min_rto: Duration,
}

/// Holders that fail and come back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Churn {
    /// Mean time between failures of one holder; failure times are uniform on `0..2 MTBF`
    /// after each (re)join (or after `Scenario::churn_from`, if later).
    pub mtbf: Duration,
    /// Mean downtime before rejoining; uniform on `0..2 mean`.
    pub downtime: Duration,
}

/// One run of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub scheme: Scheme,
    pub sizes: MessageSizes,
    /// One-way message latency, ms.
    pub latency: Duration,
    pub seed: u64,
    /// Holders at the start, joining uniformly over `0..join_spread`.
    pub initial: usize,
    pub join_spread: Duration,
    /// Extra holders joining at uniformly distributed times in `[from, to)` (growth).
    pub growth: Option<(usize, Millis, Millis)>,
    /// Failures with rejoin (steady N).
    pub churn: Option<Churn>,
    /// No churn failure happens before this time (a failure-free stretch to measure B in).
    pub churn_from: Millis,
    /// Window of the failures whose R is measured (default: `window`).
    pub r_window: Option<(Millis, Millis)>,
    /// Every initial holder fails once, at a uniformly distributed time in `[from, to)`, and
    /// does not rejoin (shrinking N).
    pub shrink: Option<(Millis, Millis)>,
    /// Measurement window `[from, to)`: bytes sent and failures happening in it are counted.
    pub window: (Millis, Millis),
    /// The run stops here (after the window, so late detections are seen).
    pub end: Millis,
    /// Bin width in holders for per-N series (0: totals only).
    pub bin_width: usize,
    pub knobs: ManagerKnobs,
    /// Wait after a denied join before asking again.
    pub retry_after_denial: Duration,
}

impl Scenario {
    fn max_n(&self) -> usize {
        self.initial + self.growth.map_or(0, |g| g.0)
    }
    fn meter(&self) -> Meter {
        let mut m = Meter::new(self.bin_width, self.max_n(), self.window.0, self.window.1);
        if let Some((from, to)) = self.r_window {
            m.r_from = from;
            m.r_to = to;
        }
        m
    }
}

/// What a landlord knows a lease by: the holder and its incarnation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Tag(u64);

impl Tag {
    fn new(h: usize, inc: u32) -> Tag {
        Tag((h as u64) << 32 | inc as u64)
    }
}

impl From<Vec<u8>> for Tag {
    fn from(b: Vec<u8>) -> Tag {
        let mut x = [0u8; 8];
        for (d, s) in x.iter_mut().zip(b) {
            *d = s;
        }
        Tag(u64::from_le_bytes(x))
    }
}

/// A failure waiting to be detected.
struct Failure {
    at: Millis,
    n: usize,
    /// The analysis' expectation for this failure, and the paper's formula, in ms.
    predicted: f64,
    paper: f64,
}

/// Schedules the joins and failures every scheme shares; returns the number of holder slots.
fn schedule_population<E>(
    sc: &Scenario,
    rng: &mut Rng,
    q: &mut Queue<E>,
    join: impl Fn(usize) -> E,
    fail: impl Fn(usize) -> E,
) -> usize {
    for h in 0..sc.initial {
        q.push(rng.between(0, sc.join_spread.max(1)), join(h));
    }
    let mut slots = sc.initial;
    if let Some((count, from, to)) = sc.growth {
        for i in 0..count {
            q.push(rng.between(from, to), join(sc.initial + i));
        }
        slots += count;
    }
    if let Some((from, to)) = sc.shrink {
        for h in 0..sc.initial {
            q.push(rng.between(from, to), fail(h));
        }
    }
    slots
}

fn manager_config(sc: &Scenario) -> RenewalManagerConfig {
    RenewalManagerConfig {
        // The holder knows the round trip from its grant request.
        initial_rtt: 2 * sc.latency,
        min_rto: sc.knobs.min_rto,
        attempts: sc.knobs.attempts,
        renew_divisor: sc.knobs.renew_divisor,
        // One virtual clock for everyone: no drift to allow for.
        max_clock_drift_ppm: 0,
        report_renewals: false,
        ..RenewalManagerConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Classic leasing: Landlord + policy, one RenewalManager per holder.

enum Ev {
    Join(usize),
    Fail(usize, Option<u32>),
    HolderTimer(usize),
    LandlordTimer,
    ToLandlord(usize, u32, Request),
    ToHolder(usize, u32, Reply),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum St {
    Down,
    Joining(Millis),
    Up,
}

struct Holder {
    st: St,
    inc: u32,
    mgr: RenewalManager,
    timer: Option<Millis>,
    granted: Duration,
}

struct Leasing<'a> {
    sc: &'a Scenario,
    q: Queue<Ev>,
    rng: Rng,
    ll: Landlord<Tag>,
    ll_timer: Option<Millis>,
    holders: Vec<Holder>,
    live: usize,
    failures: HashMap<Tag, Failure>,
    meter: Meter,
}

/// Runs fixed or adaptive leasing.
pub fn run_leasing(sc: &Scenario) -> Result<Meter> {
    let mut rng = Rng::new(sc.seed);
    let config = LandlordConfig::new(LandlordId(1), rng.seed32());
    let policy: Box<dyn LeasePolicy> = match sc.scheme {
        Scheme::Fixed { lease } => Box::new(Fixed::new(lease)?),
        Scheme::Adaptive(c) => Box::new(Adaptive::new(c)?),
        Scheme::Inverted { .. } => unreachable!("run_inverted handles inverted leasing"),
    };
    let mut q = Queue::new();
    let slots = schedule_population(sc, &mut rng, &mut q, Ev::Join, |h| Ev::Fail(h, None));
    let mgr = RenewalManager::try_new(manager_config(sc))?;
    let holders = (0..slots)
        .map(|_| Holder {
            st: St::Down,
            inc: 0,
            mgr: RenewalManager::new(mgr.config().clone()),
            timer: None,
            granted: 0,
        })
        .collect();
    let mut sim = Leasing {
        sc,
        q,
        rng,
        ll: Landlord::new(config, policy),
        ll_timer: None,
        holders,
        live: 0,
        failures: HashMap::new(),
        meter: sc.meter(),
    };
    sim.run();
    sim.meter.counts.events = sim.q.processed;
    Ok(sim.meter)
}

impl Leasing<'_> {
    fn run(&mut self) {
        while let Some((now, ev)) = self.q.pop_until(self.sc.end) {
            self.meter.advance(now, self.live);
            match ev {
                Ev::Join(h) => self.join(h, now),
                Ev::Fail(h, inc) => self.fail(h, inc, now),
                Ev::HolderTimer(h) => {
                    if self.holders[h].timer == Some(now) {
                        self.holders[h].timer = None;
                        self.holders[h].mgr.handle_timeout(now);
                        self.flush(h, now);
                    }
                }
                Ev::LandlordTimer => {
                    if self.ll_timer == Some(now) {
                        self.ll_timer = None;
                        self.ll.handle_timeout(now);
                        self.detect(now);
                        self.arm_landlord();
                    }
                }
                Ev::ToLandlord(h, inc, req) => self.at_landlord(h, inc, req, now),
                Ev::ToHolder(h, inc, reply) => self.at_holder(h, inc, reply, now),
            }
        }
        self.meter.advance(self.sc.end, self.live);
    }

    fn send_up(&mut self, h: usize, req: Request, now: Millis) {
        self.meter.bytes(now, self.live, self.sc.sizes.request);
        let inc = self.holders[h].inc;
        self.q.push(now + self.sc.latency, Ev::ToLandlord(h, inc, req));
    }

    fn join(&mut self, h: usize, now: Millis) {
        let sc = self.sc;
        let holder = &mut self.holders[h];
        if holder.st != St::Down {
            return;
        }
        holder.inc += 1;
        holder.st = St::Joining(now);
        holder.mgr = RenewalManager::new(holder.mgr.config().clone());
        holder.timer = None;
        let inc = holder.inc;
        self.live += 1;
        self.meter.counts.joins += 1;
        if let Some(c) = sc.churn {
            let from = now.max(sc.churn_from);
            let at = self.rng.between(from, from + 2 * c.mtbf);
            self.q.push(at, Ev::Fail(h, Some(inc)));
        }
        let resource = Tag::new(h, inc).0.to_le_bytes().to_vec();
        self.send_up(h, grant_request(0, resource, ANY), now);
    }

    fn fail(&mut self, h: usize, inc: Option<u32>, now: Millis) {
        let holder = &mut self.holders[h];
        if holder.st == St::Down || inc.is_some_and(|i| i != holder.inc) {
            return;
        }
        if holder.st == St::Up {
            let paper = holder.granted as f64 / 2.0;
            self.failures.insert(
                Tag::new(h, holder.inc),
                Failure { at: now, n: self.live, predicted: paper, paper },
            );
        }
        holder.st = St::Down;
        holder.inc += 1; // replies in flight to the dead incarnation are dropped
        holder.timer = None;
        holder.mgr = RenewalManager::new(holder.mgr.config().clone());
        self.live -= 1;
        self.meter.counts.failures += 1;
        if let (Some(c), None) = (self.sc.churn, self.sc.shrink) {
            let at = self.rng.between(now, now + 2 * c.downtime + 1);
            self.q.push(at, Ev::Join(h));
        }
    }

    fn at_landlord(&mut self, h: usize, inc: u32, req: Request, now: Millis) {
        let reply = self.ll.handle_request(&req, now);
        match &reply.body {
            ReplyBody::Granted { duration, .. } => {
                self.meter.counts.grants += 1;
                self.meter.control(now, self.live, *duration);
            }
            ReplyBody::Renewed { duration } => {
                self.meter.counts.renewals += 1;
                self.meter.control(now, self.live, *duration);
            }
            ReplyBody::Error(_) => self.meter.counts.denials += 1,
            _ => {}
        }
        self.meter.bytes(now, self.live, self.sc.sizes.grant);
        self.q.push(now + self.sc.latency, Ev::ToHolder(h, inc, reply));
        self.arm_landlord();
    }

    fn at_holder(&mut self, h: usize, inc: u32, reply: Reply, now: Millis) {
        let holder = &mut self.holders[h];
        if holder.inc != inc {
            return;
        }
        match holder.st {
            St::Down => {}
            St::Joining(sent_at) => match lease_from_reply(&reply, sent_at) {
                Ok(lease) => {
                    holder.st = St::Up;
                    holder.granted = lease.expiration() - sent_at;
                    holder
                        .mgr
                        .renew_until(lease, FOREVER, ANY, now)
                        .expect("ANY with a FOREVER desired expiration is valid");
                    self.flush(h, now);
                }
                Err(_) => {
                    // Denied: wait, then ask again (the holder stays counted as live).
                    holder.st = St::Down;
                    self.live -= 1;
                    self.q.push(now + self.sc.retry_after_denial, Ev::Join(h));
                }
            },
            St::Up => {
                if let ReplyBody::Renewed { duration } = reply.body {
                    holder.granted = duration;
                }
                holder.mgr.handle_reply(&reply, now);
                self.flush(h, now);
            }
        }
    }

    fn flush(&mut self, h: usize, now: Millis) {
        while let Some(t) = self.holders[h].mgr.poll_transmit(now) {
            self.send_up(h, t.request, now);
        }
        let mut lost = false;
        while let Some(ev) = self.holders[h].mgr.poll_event() {
            if let RenewalEvent::RenewalFailed { .. } = ev {
                lost = true;
            }
        }
        if lost {
            // A live holder lost its lease (should not happen on a lossless network): rejoin.
            self.meter.counts.lost += 1;
            self.holders[h].st = St::Down;
            self.live -= 1;
            self.join(h, now);
            return;
        }
        let t = self.holders[h].mgr.poll_timeout();
        if self.holders[h].timer != t {
            self.holders[h].timer = t;
            if let Some(t) = t {
                self.q.push(t.max(now), Ev::HolderTimer(h));
                self.holders[h].timer = Some(t.max(now));
            }
        }
    }

    fn arm_landlord(&mut self) {
        let t = self.ll.poll_timeout();
        if t != self.ll_timer {
            self.ll_timer = t;
            if let Some(t) = t {
                self.q.push(t, Ev::LandlordTimer);
            }
        }
    }

    fn detect(&mut self, now: Millis) {
        while let Some(e) = self.ll.poll_expired() {
            match self.failures.remove(&e.resource) {
                Some(f) => {
                    self.meter.detection(f.at, f.n, (now - f.at) as f64, f.predicted, f.paper)
                }
                None => {
                    let h = (e.resource.0 >> 32) as usize;
                    let inc = e.resource.0 as u32;
                    if self.holders[h].inc == inc && self.holders[h].st == St::Up {
                        self.meter.counts.lost += 1;
                    }
                    // Otherwise: granted to a holder that died while joining; nobody waits.
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Inverted leasing: Poller + one PollListener per holder.

enum Up {
    Join,
    Respond(leasehold::Cookie, u64),
}

enum Down {
    Admission(Result<Admission>),
    Confirm(Result<Confirm>),
}

enum IEv {
    Join(usize),
    Fail(usize, Option<u32>),
    PollerTimer,
    ListenerTimer(usize),
    PollArrives(Poll),
    ToPoller(usize, u32, Up),
    ToHolder(usize, u32, Down),
}

struct Listener {
    live: bool,
    inc: u32,
    l: Option<PollListener>,
    timer: Option<Millis>,
}

struct Inverted<'a> {
    sc: &'a Scenario,
    q: Queue<IEv>,
    rng: Rng,
    poller: Poller<Tag>,
    p_timer: Option<Millis>,
    holders: Vec<Listener>,
    live: usize,
    failures: HashMap<Tag, Failure>,
    meter: Meter,
}

/// Runs inverted leasing.
pub fn run_inverted(sc: &Scenario) -> Result<Meter> {
    let Scheme::Inverted { g, min, max, extra } = sc.scheme else {
        unreachable!("run_leasing handles classic leasing")
    };
    let mut rng = Rng::new(sc.seed);
    let mut config = PollerConfig::new(LandlordId(1), rng.seed32(), g, min, max, extra)?;
    config.sizes = sc.sizes;
    let mut q = Queue::new();
    let slots = schedule_population(sc, &mut rng, &mut q, IEv::Join, |h| IEv::Fail(h, None));
    let mut sim = Inverted {
        sc,
        q,
        rng,
        poller: Poller::new(config, 0)?,
        p_timer: None,
        holders: (0..slots)
            .map(|_| Listener { live: false, inc: 0, l: None, timer: None })
            .collect(),
        live: 0,
        failures: HashMap::new(),
        meter: sc.meter(),
    };
    sim.arm_poller();
    sim.run();
    sim.meter.counts.events = sim.q.processed;
    Ok(sim.meter)
}

impl Inverted<'_> {
    fn run(&mut self) {
        while let Some((now, ev)) = self.q.pop_until(self.sc.end) {
            self.meter.advance(now, self.live);
            match ev {
                IEv::Join(h) => self.join(h, now),
                IEv::Fail(h, inc) => self.fail(h, inc, now),
                IEv::PollerTimer => {
                    if self.p_timer == Some(now) {
                        self.p_timer = None;
                        self.poller.handle_timeout(now);
                        if let Some(poll) = self.poller.poll_transmit() {
                            self.meter.bytes(now, self.live, self.sc.sizes.poll);
                            self.meter.control(now, self.live, poll.duration);
                            self.q.push(now + self.sc.latency, IEv::PollArrives(poll));
                        }
                        self.detect(now);
                        self.arm_poller();
                    }
                }
                IEv::ListenerTimer(h) => {
                    if self.holders[h].timer == Some(now) {
                        self.holders[h].timer = None;
                        if let Some(l) = self.holders[h].l.as_mut() {
                            l.handle_timeout(now);
                        }
                        self.flush(h, now);
                    }
                }
                IEv::PollArrives(poll) => {
                    for h in 0..self.holders.len() {
                        if let (true, Some(l)) = (self.holders[h].live, self.holders[h].l.as_mut())
                        {
                            l.handle_poll(&poll, now);
                            self.flush(h, now);
                        }
                    }
                }
                IEv::ToPoller(h, inc, msg) => self.at_poller(h, inc, msg, now),
                IEv::ToHolder(h, inc, msg) => self.at_holder(h, inc, msg, now),
            }
        }
        self.meter.advance(self.sc.end, self.live);
    }

    fn join(&mut self, h: usize, now: Millis) {
        let sc = self.sc;
        if self.holders[h].live {
            return;
        }
        let seed = derive_seed(sc.seed, (h as u64) << 32 | (self.holders[h].inc as u64 + 1));
        let mut l =
            PollListener::new(ListenerConfig { seed, guard: 2 * sc.latency + 1, sizes: sc.sizes })
                .expect("the guard is positive");
        l.join(now);
        let holder = &mut self.holders[h];
        holder.inc += 1;
        holder.live = true;
        holder.l = Some(l);
        holder.timer = None;
        let inc = holder.inc;
        self.live += 1;
        self.meter.counts.joins += 1;
        if let Some(c) = sc.churn {
            let from = now.max(sc.churn_from);
            let at = self.rng.between(from, from + 2 * c.mtbf);
            self.q.push(at, IEv::Fail(h, Some(inc)));
        }
        self.flush(h, now);
    }

    fn fail(&mut self, h: usize, inc: Option<u32>, now: Millis) {
        let holder = &mut self.holders[h];
        if !holder.live || inc.is_some_and(|i| i != holder.inc) {
            return;
        }
        if holder.l.as_ref().and_then(|l| l.cookie()).is_some() {
            let (d, a) = self.poller.last_poll().map_or((0, 0), |p| (p.duration, p.extra));
            self.failures.insert(
                Tag::new(h, holder.inc),
                Failure {
                    at: now,
                    n: self.live,
                    predicted: expected_detection(d, a),
                    paper: d as f64,
                },
            );
        }
        holder.live = false;
        holder.l = None;
        holder.timer = None;
        holder.inc += 1;
        self.live -= 1;
        self.meter.counts.failures += 1;
        if let (Some(c), None) = (self.sc.churn, self.sc.shrink) {
            let at = self.rng.between(now, now + 2 * c.downtime + 1);
            self.q.push(at, IEv::Join(h));
        }
    }

    fn at_poller(&mut self, h: usize, inc: u32, msg: Up, now: Millis) {
        let down = match msg {
            Up::Join => {
                let r = self.poller.join(Tag::new(h, inc), now);
                match r {
                    Ok(_) => self.meter.counts.grants += 1,
                    Err(_) => self.meter.counts.denials += 1,
                }
                self.meter.bytes(now, self.live, self.sc.sizes.grant);
                Down::Admission(r)
            }
            Up::Respond(cookie, seq) => {
                let r = self.poller.respond(cookie, seq, now);
                self.meter.counts.renewals += 1;
                self.meter.bytes(now, self.live, self.sc.sizes.confirm);
                Down::Confirm(r)
            }
        };
        self.detect(now);
        self.q.push(now + self.sc.latency, IEv::ToHolder(h, inc, down));
    }

    fn at_holder(&mut self, h: usize, inc: u32, msg: Down, now: Millis) {
        let holder = &mut self.holders[h];
        let (true, true, Some(l)) = (holder.live, holder.inc == inc, holder.l.as_mut()) else {
            return;
        };
        match msg {
            Down::Admission(r) => l.handle_admission(r, now),
            Down::Confirm(r) => l.handle_confirm(r, now),
        }
        self.flush(h, now);
    }

    fn flush(&mut self, h: usize, now: Millis) {
        let sc = self.sc;
        let inc = self.holders[h].inc;
        let Some(l) = self.holders[h].l.as_mut() else { return };
        let mut sent = Vec::new();
        while let Some(t) = l.poll_transmit() {
            sent.push(t);
        }
        let mut denied = false;
        while let Some(ev) = l.poll_event() {
            match ev {
                ListenerEvent::Joined(_) => {}
                ListenerEvent::Denied(_) => denied = true,
                // A live holder lost its lease (should not happen on a lossless network); the
                // listener has already asked to join again.
                ListenerEvent::PollMissed(_) | ListenerEvent::Cancelled(_) => {
                    self.meter.counts.lost += 1
                }
            }
        }
        let t = l.poll_timeout();
        for tx in sent {
            let (bytes, msg) = match tx {
                ListenerTransmit::Join => (sc.sizes.request, Up::Join),
                ListenerTransmit::Respond { cookie, seq } => {
                    (sc.sizes.response, Up::Respond(cookie, seq))
                }
            };
            self.meter.bytes(now, self.live, bytes);
            self.q.push(now + sc.latency, IEv::ToPoller(h, inc, msg));
        }
        if denied {
            // Wait, then ask again as a fresh listener.
            let holder = &mut self.holders[h];
            holder.live = false;
            holder.l = None;
            holder.timer = None;
            self.live -= 1;
            self.q.push(now + sc.retry_after_denial, IEv::Join(h));
            return;
        }
        if self.holders[h].timer != t {
            self.holders[h].timer = t.map(|t| t.max(now));
            if let Some(t) = t {
                self.q.push(t.max(now), IEv::ListenerTimer(h));
            }
        }
    }

    fn arm_poller(&mut self) {
        let t = self.poller.poll_timeout();
        if t != self.p_timer {
            self.p_timer = t;
            if let Some(t) = t {
                self.q.push(t, IEv::PollerTimer);
            }
        }
    }

    fn detect(&mut self, now: Millis) {
        while let Some(e) = self.poller.poll_expired() {
            match self.failures.remove(&e.resource) {
                Some(f) => {
                    self.meter.detection(f.at, f.n, (now - f.at) as f64, f.predicted, f.paper)
                }
                None => {
                    let h = (e.resource.0 >> 32) as usize;
                    let inc = e.resource.0 as u32;
                    if self.holders[h].inc == inc && self.holders[h].live {
                        self.meter.counts.lost += 1;
                    }
                }
            }
        }
    }
}

/// Runs a scenario with the scheme's simulator.
pub fn run(sc: &Scenario) -> Result<Meter> {
    match sc.scheme {
        Scheme::Inverted { .. } => run_inverted(sc),
        _ => run_leasing(sc),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(scheme: Scheme, n: usize) -> Scenario {
        Scenario {
            scheme,
            sizes: MessageSizes::default(),
            latency: 5,
            seed: 3,
            initial: n,
            join_spread: 15_000,
            growth: None,
            churn: Some(Churn { mtbf: 30_000, downtime: 0 }),
            churn_from: 30_000 + 600_000,
            r_window: Some((630_000, 1_830_000)),
            shrink: None,
            window: (30_000, 630_000),
            end: 1_900_000,
            bin_width: 0,
            knobs: ManagerKnobs { renew_divisor: 1000, attempts: 1, min_rto: 50 },
            retry_after_denial: 10_000,
        }
    }

    #[test]
    fn fixed_leasing_follows_the_analysis_and_is_deterministic() {
        let sc = scenario(Scheme::Fixed { lease: 15_000 }, 20);
        let m = run(&sc).unwrap();
        let b = m.total.bandwidth();
        let paper = 20.0 / 15.0 * 160.0;
        assert!((b / paper - 1.0).abs() < 0.02, "B {b} vs {paper}");
        let r = m.total.r_s();
        assert!(m.total.r_n > 500.0, "{} failures detected", m.total.r_n);
        assert!((r / 7.5 - 1.0).abs() < 0.08, "R {r}");
        assert_eq!(m.counts.lost, 0);
        let again = run(&sc).unwrap();
        assert_eq!((again.total.bytes, again.total.r_sum), (m.total.bytes, m.total.r_sum));
    }

    #[test]
    fn inverted_leasing_detects_failures_after_d_plus_a_half() {
        let scheme = Scheme::Inverted { g: 1.0, min: 10_000, max: FOREVER, extra: 0.2 };
        // Failures long after joining: a holder admitted during a round is first polled in the
        // next one, so a failure right after joining takes longer to detect than D + A/2.
        let mut sc = scenario(scheme, 20);
        sc.churn = Some(Churn { mtbf: 240_000, downtime: 0 });
        sc.r_window = Some((630_000, 8_000_000));
        sc.end = 8_100_000;
        let m = run(&sc).unwrap();
        assert_eq!(m.counts.lost, 0);
        // Without failures (the B window) D = max(20 / 1, 10) s = 20 s, A = 4 s.
        assert!((m.total.ctrl_s() - 20.0).abs() < 0.1, "D {}", m.total.ctrl_s());
        // With failures, dead holders count until cancelled, so D is a little longer; each
        // failure is compared with the D + A/2 of the round it happened in.
        let (r, pred, paper) = (m.total.r_s(), m.total.r_pred_s(), m.total.r_paper_s());
        assert!(m.total.r_n > 500.0, "{} failures", m.total.r_n);
        assert!((22.0..24.0).contains(&pred), "D + A/2 = {pred}");
        assert!((pred / paper - 1.1).abs() < 1e-9, "A = 0.2 D");
        assert!((r / pred - 1.0).abs() < 0.06, "R {r} vs D + A/2 {pred}");
    }

    #[test]
    fn adaptive_leasing_keeps_below_its_bandwidth_ceiling() {
        let c = AdaptiveConfig { renewals_per_second: 1.0, min: 5_000, max: FOREVER, grantors: 1 };
        let mut sc = scenario(Scheme::Adaptive(c), 40);
        sc.churn = None;
        let m = run(&sc).unwrap();
        let ceiling = 1.0 * 160.0;
        assert!(m.total.bandwidth() <= ceiling * 1.02, "B {}", m.total.bandwidth());
        assert!(m.total.bandwidth() >= ceiling * 0.95, "B {}", m.total.bandwidth());
        assert!((m.total.ctrl_s() - 40.0).abs() < 0.5, "L_G {}", m.total.ctrl_s());
    }
}
