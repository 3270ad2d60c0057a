//! `modelcheck`: exhaustive model checking of the holder/landlord lease protocol with
//! `stateright`.
//!
//! The model: one landlord (the real `leasehold::Landlord`, its state carried from state to
//! state as its own snapshot), one or two holders that follow the protocol's rules (count a
//! grant from the time the request was *sent*, renew early enough for a retry, retransmit after
//! a time-out, ignore replies to requests that are not their latest, drop the lease at its local
//! expiration or on "unknown lease"), and a network that loses, duplicates, reorders and delays
//! messages. Time advances in ticks of 100 ms on one clock; a message is delivered (or lost)
//! within one tick of being sent, and at most `--faults` messages are lost or duplicated per run.
//! Every interleaving of these, up to `--ticks` ticks, is explored.
//!
//! Properties:
//! - always (a): a holder that believes in its lease (local expiration not reached) holds one
//!   the landlord honours, at least until that local expiration;
//! - always (e): a holder that keeps renewing keeps its lease while at most one message of the
//!   run is lost or duplicated (the renewal margin covers one retry);
//! - eventually: every holder obtains a lease (faults are bounded, so retries get through);
//! - sometimes: a lease is renewed twice; sometimes: a holder loses its lease (the fault model
//!   has teeth).
//!
//! Prints the states explored and each property's outcome; the last line is
//! `modelcheck: P passed, F failed`.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use clap::Parser;
use leasehold::holder::local_expiration;
use leasehold::landlord::LandlordSnapshot;
use leasehold::policy::Fixed;
use leasehold::wire::WireError;
use leasehold::{
    Cookie, LandlordConfig, LandlordId, LeaseError, Millis, ReplyBody, Request, RequestBody,
};
use stateright::{Checker, Expectation, Model, Property};

/// One tick of model time, in ms.
const TICK: Millis = 100;

/// Explores every interleaving of the holder/landlord protocol under loss, duplication,
/// reordering and bounded delay.
#[derive(Debug, Parser, Clone)]
#[command(name = "modelcheck")]
struct Args {
    /// Holders (1 or 2).
    #[arg(long, default_value_t = 1)]
    holders: u8,
    /// Ticks of 100 ms explored.
    #[arg(long, default_value_t = 16)]
    ticks: u8,
    /// Messages the network may lose or duplicate in one run.
    #[arg(long, default_value_t = 2)]
    faults: u8,
    /// Lease duration granted by the landlord, in ticks.
    #[arg(long, default_value_t = 8)]
    lease: u8,
    /// A holder renews when this many ticks (or fewer) are left: two round trips and a
    /// time-out must fit, so that one lost message is survived.
    #[arg(long, default_value_t = 6)]
    renew_at: u8,
    /// A holder retransmits after this many ticks without a reply (more than a round trip,
    /// which takes up to two ticks).
    #[arg(long, default_value_t = 3)]
    timeout: u8,
    /// Checker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Model a holder that counts its lease from when the reply *arrives* (the mistake seed
    /// 000, 2.3 warns about): the checker must then find a counterexample to (a).
    #[arg(long)]
    mutant: bool,
    /// Run the configurations of `.ci`: one holder (24 ticks, 3 faults), two holders (16
    /// ticks, 2 faults), and the mutant, whose counterexample to (a) must be found.
    #[arg(long)]
    ci: bool,
}

/// A holder, as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Holder {
    /// Wants a lease, has not asked yet.
    Idle,
    /// Asked for a lease with request `req`, sent at `sent`.
    Asking { req: u8, sent: Millis },
    /// Holds a lease until local `exp`; `pending` is its latest renewal (request, send time).
    Holding { cookie: Cookie, exp: Millis, pending: Option<(u8, Millis)>, renewals: u8 },
    /// Lost its lease (it expired locally, or the landlord answered "unknown").
    Lost,
}

/// A message in flight.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Msg {
    Grant { holder: u8, req: u8, sent_tick: u8 },
    Renew { holder: u8, req: u8, cookie: Cookie, sent_tick: u8 },
    Granted { holder: u8, req: u8, cookie: Cookie, duration: Millis, sent_tick: u8 },
    Renewed { holder: u8, req: u8, duration: Millis, sent_tick: u8 },
    Unknown { holder: u8, req: u8, sent_tick: u8 },
}

impl Msg {
    fn sent_tick(&self) -> u8 {
        match self {
            Msg::Grant { sent_tick, .. }
            | Msg::Renew { sent_tick, .. }
            | Msg::Granted { sent_tick, .. }
            | Msg::Renewed { sent_tick, .. }
            | Msg::Unknown { sent_tick, .. } => *sent_tick,
        }
    }
}

/// The whole system.
#[derive(Debug, Clone, PartialEq)]
struct State {
    tick: u8,
    landlord: LandlordSnapshot<Vec<u8>>,
    holders: Vec<Holder>,
    /// Next request number per holder.
    next_req: Vec<u8>,
    /// Whether each holder ever obtained a lease.
    granted_once: Vec<bool>,
    net: BTreeMap<Msg, u8>,
    faults_used: u8,
}

impl Eq for State {}

impl Hash for State {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.tick.hash(h);
        let s = &self.landlord;
        s.taken_at.hash(h);
        s.rng.word_pos.0.hash(h);
        s.slots.hash(h);
        s.free.hash(h);
        for l in &s.leases {
            (l.cookie, l.remaining, &l.resource).hash(h);
        }
        for l in &s.expired {
            (l.cookie, l.remaining).hash(h);
        }
        self.holders.hash(h);
        self.next_req.hash(h);
        self.granted_once.hash(h);
        self.net.hash(h);
        self.faults_used.hash(h);
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    /// Time passes one tick (the landlord sweeps, holders expire leases).
    Tick,
    /// A holder sends what its rules say it should now (a grant, a renewal or a retry).
    Send(u8),
    /// The network delivers one copy of a message.
    Deliver(Msg),
    /// The network loses one copy.
    Lose(Msg),
    /// The network duplicates a message.
    Duplicate(Msg),
}

#[derive(Clone)]
struct Protocol {
    args: Args,
}

impl Protocol {
    fn now(tick: u8) -> Millis {
        tick as Millis * TICK
    }

    fn landlord(&self, s: &State) -> leasehold::Landlord<Vec<u8>> {
        // Restoring at the snapshot's own time keeps every expiration exactly.
        leasehold::Landlord::restore(s.landlord.clone(), self.policy(), s.landlord.taken_at)
            .expect("a snapshot of the model's own landlord restores")
    }

    fn policy(&self) -> Fixed {
        Fixed::new(self.args.lease as Millis * TICK).expect("positive")
    }

    /// What a holder would send now, if anything.
    fn wants_to_send(&self, s: &State, i: usize) -> bool {
        let now = Self::now(s.tick);
        let timeout = self.args.timeout as Millis * TICK;
        match &s.holders[i] {
            Holder::Idle => true,
            Holder::Asking { sent, .. } => now >= sent + timeout,
            Holder::Holding { exp, pending, .. } => {
                let due = exp - now <= self.args.renew_at as Millis * TICK && now < *exp;
                match pending {
                    None => due,
                    Some((_, sent)) => due && now >= sent + timeout,
                }
            }
            Holder::Lost => false,
        }
    }

    /// Some message is due: time may not pass until it is delivered or lost.
    fn overdue(&self, s: &State) -> bool {
        s.net.keys().any(|m| m.sent_tick() < s.tick)
    }
}

fn add(net: &mut BTreeMap<Msg, u8>, m: Msg) {
    *net.entry(m).or_insert(0) += 1;
}

fn take(net: &mut BTreeMap<Msg, u8>, m: &Msg) {
    if let Some(n) = net.get_mut(m) {
        *n -= 1;
        if *n == 0 {
            net.remove(m);
        }
    }
}

impl Model for Protocol {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let ll: leasehold::Landlord<Vec<u8>> =
            leasehold::Landlord::new(LandlordConfig::new(LandlordId(1), [7; 32]), self.policy());
        let n = self.args.holders as usize;
        vec![State {
            tick: 0,
            landlord: ll.snapshot(0),
            holders: vec![Holder::Idle; n],
            next_req: vec![0; n],
            granted_once: vec![false; n],
            net: BTreeMap::new(),
            faults_used: 0,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        for i in 0..s.holders.len() {
            if self.wants_to_send(s, i) && s.next_req[i] < 250 {
                actions.push(Action::Send(i as u8));
            }
        }
        for m in s.net.keys() {
            actions.push(Action::Deliver(m.clone()));
            if s.faults_used < self.args.faults {
                actions.push(Action::Lose(m.clone()));
                actions.push(Action::Duplicate(m.clone()));
            }
        }
        // Holders act at once when their rules say so, and the network delivers within a tick:
        // time passes only when neither has anything left to do now.
        let idle = (0..s.holders.len()).all(|i| !self.wants_to_send(s, i));
        if s.tick < self.args.ticks && !self.overdue(s) && idle {
            actions.push(Action::Tick);
        }
    }

    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        let mut s = s.clone();
        let now = Self::now(s.tick);
        match action {
            Action::Tick => {
                s.tick += 1;
                let now = Self::now(s.tick);
                let mut ll = self.landlord(&s);
                ll.handle_timeout(now);
                while ll.poll_expired().is_some() {}
                s.landlord = ll.snapshot(now);
                for h in &mut s.holders {
                    if let Holder::Holding { exp, .. } = h {
                        if now >= *exp {
                            *h = Holder::Lost;
                        }
                    }
                }
            }
            Action::Send(i) => {
                let i = i as usize;
                let req = s.next_req[i];
                s.next_req[i] += 1;
                let holder = i as u8;
                let m = match &mut s.holders[i] {
                    Holder::Idle | Holder::Asking { .. } => {
                        s.holders[i] = Holder::Asking { req, sent: now };
                        Msg::Grant { holder, req, sent_tick: s.tick }
                    }
                    Holder::Holding { cookie, pending, .. } => {
                        *pending = Some((req, now));
                        Msg::Renew { holder, req, cookie: *cookie, sent_tick: s.tick }
                    }
                    Holder::Lost => return None,
                };
                add(&mut s.net, m);
            }
            Action::Lose(m) => {
                take(&mut s.net, &m);
                s.faults_used += 1;
            }
            Action::Duplicate(m) => {
                // The copy travels on its own, sent now.
                let mut copy = m.clone();
                match &mut copy {
                    Msg::Grant { sent_tick, .. }
                    | Msg::Renew { sent_tick, .. }
                    | Msg::Granted { sent_tick, .. }
                    | Msg::Renewed { sent_tick, .. }
                    | Msg::Unknown { sent_tick, .. } => *sent_tick = s.tick,
                }
                add(&mut s.net, copy);
                s.faults_used += 1;
            }
            Action::Deliver(m) => {
                take(&mut s.net, &m);
                self.deliver(&mut s, m, now);
            }
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("(a) a holder never believes in a lease its landlord dropped", |_, s: &State| {
                let now = Protocol::now(s.tick);
                s.holders.iter().all(|h| match h {
                    Holder::Holding { cookie, exp, .. } if *exp > now => {
                        s.landlord.leases.iter().any(|l| {
                            l.cookie == *cookie && s.landlord.taken_at + l.remaining >= *exp
                        })
                    }
                    _ => true,
                })
            }),
            Property::always(
                "(e) with at most one message lost or duplicated, a renewing holder keeps its lease",
                |_, s: &State| s.faults_used >= 2 || s.holders.iter().all(|h| *h != Holder::Lost),
            ),
            Property::eventually("every holder obtains a lease", |_, s: &State| {
                s.granted_once.iter().all(|g| *g)
            }),
            Property::sometimes("a lease is renewed twice", |_, s: &State| {
                s.holders.iter().any(|h| matches!(h, Holder::Holding { renewals, .. } if *renewals >= 2))
            }),
            Property::sometimes("a holder loses its lease", |_, s: &State| {
                s.holders.contains(&Holder::Lost)
            }),
        ]
    }
}

impl Protocol {
    fn deliver(&self, s: &mut State, m: Msg, now: Millis) {
        match m {
            Msg::Grant { holder, req, .. } => {
                let mut ll = self.landlord(s);
                let request =
                    leasehold::holder::grant_request(req as u64, vec![holder], leasehold::ANY);
                let reply = ll.handle_request(&request, now);
                s.landlord = ll.snapshot(now);
                let answer = match reply.body {
                    ReplyBody::Granted { cookie, duration } => {
                        Msg::Granted { holder, req, cookie, duration, sent_tick: s.tick }
                    }
                    _ => Msg::Unknown { holder, req, sent_tick: s.tick },
                };
                add(&mut s.net, answer);
            }
            Msg::Renew { holder, req, cookie, .. } => {
                let mut ll = self.landlord(s);
                let request = Request {
                    id: req as u64,
                    body: RequestBody::Renew { cookie, duration: self.args.lease as Millis * TICK },
                };
                let reply = ll.handle_request(&request, now);
                s.landlord = ll.snapshot(now);
                let answer = match reply.body {
                    ReplyBody::Renewed { duration } => {
                        Msg::Renewed { holder, req, duration, sent_tick: s.tick }
                    }
                    ReplyBody::Error(e) if is_unknown(&e) => {
                        Msg::Unknown { holder, req, sent_tick: s.tick }
                    }
                    other => panic!("unexpected reply to a renewal: {other:?}"),
                };
                add(&mut s.net, answer);
            }
            Msg::Granted { holder, req, cookie, duration, .. } => {
                let h = &mut s.holders[holder as usize];
                if let Holder::Asking { req: r, sent } = *h {
                    if r == req {
                        let from = if self.args.mutant { now } else { sent };
                        *h = Holder::Holding {
                            cookie,
                            exp: local_expiration(from, duration, 0),
                            pending: None,
                            renewals: 0,
                        };
                        s.granted_once[holder as usize] = true;
                    }
                }
            }
            Msg::Renewed { holder, req, duration, .. } => {
                if let Holder::Holding { exp, pending, renewals, .. } =
                    &mut s.holders[holder as usize]
                {
                    if let Some((r, sent)) = *pending {
                        if r == req && now < *exp {
                            let from = if self.args.mutant { now } else { sent };
                            *exp = local_expiration(from, duration, 0);
                            *pending = None;
                            *renewals = renewals.saturating_add(1);
                        }
                    }
                }
            }
            Msg::Unknown { holder, req, .. } => {
                let h = &mut s.holders[holder as usize];
                let current = match h {
                    Holder::Holding { pending: Some((r, _)), .. } => *r == req,
                    Holder::Asking { req: r, .. } => *r == req,
                    _ => false,
                };
                if current {
                    *h = Holder::Lost;
                }
            }
        }
    }
}

fn is_unknown(e: &WireError) -> bool {
    matches!(e.to_error(), LeaseError::UnknownLease)
}

/// Checks one configuration; returns (properties passed, failed).
fn check(args: &Args) -> (u32, u32) {
    println!(
        "== {}{} holder(s), {} ticks of {TICK} ms, lease {} ticks, renew at {} left, time-out {}, \
         at most {} message(s) lost or duplicated",
        if args.mutant { "MUTANT (counts from the reply's arrival), " } else { "" },
        args.holders,
        args.ticks,
        args.lease,
        args.renew_at,
        args.timeout,
        args.faults
    );
    let start = std::time::Instant::now();
    let model = Protocol { args: args.clone() };
    let properties = model.properties();
    let checker = model.checker().threads(args.threads.max(1)).spawn_bfs().join();
    let (mut passed, mut failed) = (0, 0);
    for p in &properties {
        let found = checker.discovery(p.name);
        let mut ok = match p.expectation {
            Expectation::Always | Expectation::Eventually => found.is_none(),
            Expectation::Sometimes => found.is_some(),
        };
        if args.mutant {
            // The mutant must break (a); its other properties are not judged.
            if !p.name.starts_with("(a)") {
                continue;
            }
            ok = !ok;
            println!(
                "  {} the mutant breaks (a): {}",
                if ok { "ok" } else { "FAILED" },
                if ok { "counterexample found" } else { "no counterexample found" }
            );
            if ok {
                if let Some(path) = found {
                    let actions = path.into_actions();
                    println!("    counterexample ({} steps), its last 6:", actions.len());
                    for a in &actions[actions.len().saturating_sub(6)..] {
                        println!("      {a:?}");
                    }
                }
                passed += 1;
            } else {
                failed += 1;
            }
            continue;
        }
        let kind = match p.expectation {
            Expectation::Always => "always",
            Expectation::Eventually => "eventually",
            Expectation::Sometimes => "sometimes",
        };
        println!("  {} {kind}: {}", if ok { "ok" } else { "FAILED" }, p.name);
        if !ok {
            if let Some(path) = found {
                println!("    counterexample ({} steps):", path.clone().into_actions().len());
                for a in path.into_actions() {
                    println!("      {a:?}");
                }
            }
            failed += 1;
        } else {
            passed += 1;
        }
    }
    println!(
        "  states explored: {} unique ({} generated), max depth {}, {:.1} s",
        checker.unique_state_count(),
        checker.state_count(),
        checker.max_depth(),
        start.elapsed().as_secs_f64()
    );
    (passed, failed)
}

fn main() {
    let args = Args::parse();
    let runs = if args.ci {
        vec![
            Args { holders: 1, ticks: 24, faults: 3, ..args.clone() },
            Args { holders: 2, ticks: 16, faults: 2, ..args.clone() },
            Args { holders: 1, ticks: 16, faults: 2, mutant: true, ..args.clone() },
        ]
    } else {
        vec![args]
    };
    let (mut p, mut f) = (0, 0);
    for a in &runs {
        let (pp, ff) = check(a);
        p += pp;
        f += ff;
    }
    println!("modelcheck: {p} passed, {f} failed");
    std::process::exit(if f == 0 { 0 } else { 1 });
}
