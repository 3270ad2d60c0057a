//! One simulated run: a seed picks the world (how many landlords, holders, whether a renewal
//! service runs, which faults and how often: swarm testing), then the run goes through a
//! safety phase (faults at their full rates; every safety check after every step) and a
//! liveness phase (faults stop, partitions heal, crashed nodes come back; after a settling time
//! every lease that is healthy must stay alive while its holder keeps renewing it).

use std::collections::{BTreeMap, BTreeSet};

use leasehold::discovery::wire::DiscoveryRequestBody;
use leasehold::discovery::{DiscoveryConfig, Groups, RegistrarId};
use leasehold::holder::RenewalManagerConfig;
use leasehold::policy::PolicySpec;
use leasehold::service::{RenewalServiceConfig, SetId};
use leasehold::simnet::{Address, Clock, LinkConfig, Message, NodeId, Outgoing, SimNet};
use leasehold::store::StoreConfig;
use leasehold::wire::{Outcome as WireOutcome, WireError};
use leasehold::{
    Cookie, LandlordConfig, LandlordId, Lease, LeaseError, Millis, RenewalManager, Reply,
    ReplyBody, Request, RequestBody, ANY, FOREVER,
};
use rand_chacha::ChaCha12Rng;
use rand_core::{RngCore, SeedableRng};

use crate::coord::CoordClient;
use crate::discovery::{
    ghost_locator, locator_of, DiscoClient, DiscoveryHost, RegistrarNode, GROUPS,
};
use crate::durable::{CrashAt, Disk, DiskConfig};
use crate::nodes::{
    range, unit, Adversary, Check, Ctx, Failure, Faults, Hold, HolderHost, LandlordHost,
    ServiceHost, Shared,
};

/// How to run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Trace lines kept (0: none, the fast path).
    pub trace: usize,
    /// Known bugs to steer around (to hunt for others while they are open).
    pub avoid: Avoid,
}

/// Known bugs the world can steer around.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Avoid {
    /// Renew durations shorter than a lease's time left (the renewal manager then shortens it).
    pub short_renewals: bool,
    /// Clock steps backwards.
    pub steps_back: bool,
    /// Two landlords sharing one cookie seed.
    pub shared_seeds: bool,
    /// Corrupted snapshots handed to restore.
    pub corrupt_snapshots: bool,
    /// Comparing a restored landlord with its twin that never crashed.
    pub restore_twin: bool,
    /// A restored renewal service reusing the request ids of before its crash.
    pub reused_request_ids: bool,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The seed.
    pub seed: u64,
    /// Network steps.
    pub steps: u64,
    /// Faults injected.
    pub faults: Faults,
    /// The first failed check.
    pub failure: Option<Failure>,
    /// The world the seed chose, in one line.
    pub options: String,
    /// The last trace lines.
    pub trace: Vec<String>,
    /// Virtual time simulated (ms).
    pub simulated: Millis,
    /// Successful renewals.
    pub renewals: u64,
    /// Events handed out by the renewal service.
    pub events: u64,
}

/// The world a seed picks.
#[derive(Debug, Clone)]
struct Opts {
    landlords: usize,
    same_seed: bool,
    holders: usize,
    service: bool,
    latency: i64,
    jitter: i64,
    loss: f64,
    dup: f64,
    ppm: u32,
    grace: i64,
    budget: usize,
    max_lease: i64,
    fault_mean: i64,
    work_mean: i64,
    steps_on: bool,
    back_on: bool,
    crash_on: bool,
    partition_on: bool,
    slow_on: bool,
    hostile_on: bool,
    misroute_on: bool,
    corrupt_on: bool,
    sync_commit: f64,
    commit_delay: i64,
    disk: DiskConfig,
    eager_events: bool,
    timer_lag: i64,
    safety: i64,
    settle: i64,
    live: i64,
    discovery: bool,
    registrars: usize,
    announce_ms: i64,
    ttl_factor: i64,
    event_fail: f64,
    event_unknown: f64,
    /// Coordination: landlords run it and this many clients contend and watch (0: off).
    lockers: usize,
}

impl Opts {
    fn pick(rng: &mut ChaCha12Rng, avoid: Avoid) -> Opts {
        let landlords = range(rng, 1, 3) as usize;
        let on = |rng: &mut ChaCha12Rng, p: f64| unit(rng) < p;
        let jitter = match range(rng, 0, 3) {
            0 => 0,
            1 => range(rng, 1, 20),
            2 => range(rng, 20, 300),
            _ => range(rng, 300, 2_000),
        };
        let max_lease = [2_000, 5_000, 10_000, 30_000, 60_000][range(rng, 0, 4) as usize];
        Opts {
            landlords,
            same_seed: landlords >= 2 && on(rng, 0.25) && !avoid.shared_seeds,
            holders: range(rng, 1, 3) as usize,
            service: on(rng, 0.5),
            latency: range(rng, 1, 50),
            jitter,
            loss: if on(rng, 0.3) { 0.0 } else { unit(rng) * 0.3 },
            dup: if on(rng, 0.3) { 0.0 } else { unit(rng) * 0.1 },
            ppm: [100, 1_000, 20_000][range(rng, 0, 2) as usize],
            grace: if on(rng, 0.5) { 0 } else { range(rng, 1, 2_000) },
            budget: if on(rng, 0.7) { 10_000 } else { range(rng, 1, 3) as usize },
            max_lease,
            fault_mean: range(rng, 300, 8_000),
            work_mean: range(rng, 200, 3_000),
            steps_on: on(rng, 0.6),
            back_on: on(rng, 0.6) && !avoid.steps_back,
            crash_on: on(rng, 0.6),
            partition_on: on(rng, 0.5),
            slow_on: on(rng, 0.5),
            hostile_on: on(rng, 0.5),
            misroute_on: on(rng, 0.5),
            corrupt_on: on(rng, 0.5) && !avoid.corrupt_snapshots,
            sync_commit: unit(rng),
            commit_delay: range(rng, 1, 200),
            disk: DiskConfig {
                store: StoreConfig {
                    segment_bytes: [256, 2_048, 65_536][range(rng, 0, 2) as usize],
                    min_compact_bytes: [128, 1_024, 16_384, 4 << 20][range(rng, 0, 3) as usize],
                },
                op_ms: range(rng, 0, 3),
                sync_ms: [0, 2, 10, 50][range(rng, 0, 3) as usize],
            },
            eager_events: on(rng, 0.5),
            timer_lag: if on(rng, 0.5) { 0 } else { range(rng, 1, 2_000) },
            safety: range(rng, 20_000, 90_000),
            settle: 10_000,
            live: (2 * max_lease).max(20_000),
            discovery: on(rng, 0.4),
            registrars: range(rng, 1, 3) as usize,
            announce_ms: range(rng, 300, 3_000),
            ttl_factor: range(rng, 2, 4),
            event_fail: if on(rng, 0.5) { 0.0 } else { unit(rng) * 0.3 },
            event_unknown: if on(rng, 0.7) { 0.0 } else { unit(rng) * 0.02 },
            lockers: if on(rng, 0.5) { range(rng, 1, 3) as usize } else { 0 },
        }
    }

    fn line(&self) -> String {
        let mut faults = Vec::new();
        for (on, name) in [
            (self.steps_on, "clock-steps"),
            (self.steps_on && self.back_on, "steps-back"),
            (self.crash_on, "crashes"),
            (self.partition_on, "partitions"),
            (self.slow_on, "slow-links"),
            (self.hostile_on, "hostile"),
            (self.misroute_on, "misroute"),
            (self.corrupt_on && self.crash_on, "corrupt-snapshots"),
        ] {
            if on {
                faults.push(name);
            }
        }
        let disco = if self.discovery {
            format!(
                " discovery: {} registrars, announcing every ~{} ms (ttl x{}), events failing \
                 {:.3} (unknown {:.3}) |",
                self.registrars,
                self.announce_ms,
                self.ttl_factor,
                self.event_fail,
                self.event_unknown
            )
        } else {
            " discovery no |".into()
        };
        format!(
            "landlords {}{} holders {} service {} | coordination clients {} |{disco} latency {} ms jitter {} ms loss {:.3} dup {:.3} \
             | drift {} ppm grace {} ms expiry budget {} timer lag {} ms leases <= {} ms | faults every ~{} ms: {} \
             | commit sync {:.2} delay <= {} ms{} | disk: segments {} B, compaction > {} B, \
             sync <= {} ms | safety {} ms, settle {} ms, liveness {} ms",
            self.landlords,
            if self.same_seed { " (two share a seed)" } else { "" },
            self.holders,
            if self.service { "yes" } else { "no" },
            self.lockers,
            self.latency,
            self.jitter,
            self.loss,
            self.dup,
            self.ppm,
            self.grace,
            self.budget,
            self.timer_lag,
            self.max_lease,
            self.fault_mean,
            if faults.is_empty() { "none".to_string() } else { faults.join(" ") },
            self.sync_commit,
            self.commit_delay,
            if self.eager_events { ", events before commit" } else { "" },
            self.disk.store.segment_bytes,
            self.disk.store.min_compact_bytes,
            self.disk.sync_ms,
            self.safety,
            self.settle,
            self.live
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Fault,
    Work,
    Recover(NodeId),
    /// Crash a node in the middle of its next commit (retried while its disk is idle).
    CrashMidWrite(NodeId, u32),
    /// A registrar starts again after an outage.
    RegistrarUp(NodeId),
    Heal(NodeId, NodeId),
    Calm(NodeId, NodeId),
    Liveness,
    Settle,
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Safety,
    Settling,
    Live,
}

struct World {
    rng: ChaCha12Rng,
    net: SimNet,
    ctx: Shared,
    opts: Opts,
    landlords: Vec<NodeId>,
    service: Option<NodeId>,
    discovery: Option<NodeId>,
    registrars: Vec<NodeId>,
    holders: Vec<NodeId>,
    /// Coordination clients (lock contenders and watchers).
    lockers: Vec<NodeId>,
    adversary: NodeId,
    by_id: BTreeMap<LandlordId, NodeId>,
    /// The longest term a landlord grants, where its policy caps it below the leases' bound.
    caps: BTreeMap<LandlordId, Millis>,
    agenda: BTreeMap<(Millis, u64), Action>,
    seq: u64,
    down: BTreeSet<NodeId>,
    /// Clock steps that may make a belief unsafe: (node, real time, forward?).
    steps: Vec<(NodeId, Millis, bool)>,
    /// Per node, when its clock is back at the latest time it had read before stepping back
    /// (until then its timers sleep: a host's timer counts on the clock it reads).
    caught_up: BTreeMap<NodeId, Millis>,
    partitions: BTreeSet<(NodeId, NodeId)>,
    slow: BTreeSet<(NodeId, NodeId)>,
    phase: Phase,
    scan_gone: bool,
    next_adv_id: u64,
    steps_done: u64,
    avoid: Avoid,
    /// Beliefs found safe, with the two expirations they were checked at (clocks change only
    /// by actions, which clear it): (renewer, landlord, cookie) -> (belief, landlord's).
    seen_ok: std::cell::RefCell<FastMap<BeliefKey, (Millis, Millis)>>,
    /// Promises found kept, with the landlord's expiration and operation they were checked at.
    kept_ok: FastMap<(LandlordId, Cookie), (Millis, u64)>,
}

/// (renewer, landlord, cookie).
type BeliefKey = (NodeId, LandlordId, Cookie);

/// A renewer's beliefs: node, clock, leases, and when each was established.
type Beliefs = (NodeId, Clock, Vec<Lease>, BTreeMap<(LandlordId, Cookie), Millis>);

/// A hash map with a cheap, deterministic hasher (the keys are not attacker-chosen).
type FastMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<Fx>>;

/// The multiply-rotate hasher of rustc (FxHash), for small integer keys.
#[derive(Default)]
struct Fx(u64);

impl std::hash::Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u128(&mut self, n: u128) {
        self.write_u64(n as u64);
        self.write_u64((n >> 64) as u64);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// The longest a request stays on the way (a slow link's latency and jitter, with room).
const STALE_REQUEST: Millis = 8_000;

/// A random set of groups: none, some or all of [`GROUPS`].
fn random_groups(rng: &mut ChaCha12Rng) -> BTreeSet<String> {
    GROUPS.iter().filter(|_| unit(rng) < 0.5).map(|g| g.to_string()).collect()
}

fn seed32(rng: &mut ChaCha12Rng) -> [u8; 32] {
    let mut s = [0u8; 32];
    rng.fill_bytes(&mut s);
    s
}

/// Runs one seed; a panic of the code under test is a failure of the run.
pub fn run(seed: u64, cfg: &RunConfig) -> Outcome {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_inner(seed, cfg)));
    r.unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into());
        Outcome {
            seed,
            steps: 0,
            faults: Faults::default(),
            failure: Some(Failure { check: Check::Panic, message: msg, at: 0 }),
            options: String::new(),
            trace: Vec::new(),
            simulated: 0,
            renewals: 0,
            events: 0,
        }
    })
}

fn run_inner(seed: u64, cfg: &RunConfig) -> Outcome {
    let mut w = World::new(seed, cfg);
    w.run();
    let c = w.ctx.borrow();
    Outcome {
        seed,
        steps: w.steps_done,
        faults: {
            let mut f = c.faults;
            f.lost = w.net.stats().lost + w.net.stats().partitioned;
            f.locks = c.coord.acquired;
            f.fenced_writes = c.coord.writes;
            f.fence_refusals = c.coord.fenced;
            f.watch_events = c.coord.events;
            f.watch_missed = c.coord.missed;
            for &n in &w.landlords {
                let h = w.net.node::<LandlordHost>(n).expect("landlord");
                let d = h.disk.stats;
                f.commits += d.commits;
                f.compactions += d.compactions;
                f.crashes_mid_write += d.crashes_mid_write;
                f.torn_tails += d.torn_tails;
                f.unsynced_kept += d.unsynced_kept;
                f.exact_recoveries += h.twins;
            }
            if let Some(h) = w.discovery.and_then(|n| w.net.node::<DiscoveryHost>(n)) {
                let d = h.disk.stats;
                f.commits += d.commits;
                f.compactions += d.compactions;
                f.crashes_mid_write += d.crashes_mid_write;
                f.torn_tails += d.torn_tails;
                f.unsynced_kept += d.unsynced_kept;
            }
            f
        },
        failure: c.failure.clone(),
        options: w.opts.line(),
        trace: c.trace_lines(),
        simulated: w.net.now(),
        renewals: c.renewals,
        events: c.events,
    }
}

impl World {
    fn new(seed: u64, cfg: &RunConfig) -> World {
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        let opts = Opts::pick(&mut rng, cfg.avoid);
        let ctx: Shared = std::rc::Rc::new(std::cell::RefCell::new(Ctx::new(cfg.trace)));
        let mut net = SimNet::new(rng.next_u64());
        net.set_default_link(LinkConfig {
            latency: opts.latency,
            jitter: opts.jitter,
            loss: opts.loss,
        });
        let clock = |rng: &mut ChaCha12Rng| {
            let half = opts.ppm as f64 / 2e6;
            Clock::new(range(rng, -86_400_000, 86_400_000), 1.0 + (unit(rng) * 2.0 - 1.0) * half)
        };
        let mut landlords = Vec::new();
        let mut by_id = BTreeMap::new();
        let mut caps = BTreeMap::new();
        let mut first_seed = None;
        for i in 0..opts.landlords {
            let id = LandlordId(0x1000 + i as u64);
            let s = match (i, first_seed) {
                (1, Some(s)) if opts.same_seed => s,
                _ => seed32(&mut rng),
            };
            first_seed.get_or_insert(s);
            let config =
                LandlordConfig::new(id, s).with_grace(opts.grace).with_expiry_budget(opts.budget);
            let d = range(&mut rng, 1_000, opts.max_lease);
            let policy = match range(&mut rng, 0, 2) {
                0 => PolicySpec::Fixed { duration: d },
                1 => PolicySpec::Bounded { max: d, default: range(&mut rng, 500, d) },
                _ => PolicySpec::Capacity {
                    max_leases: range(&mut rng, 2, 20) as usize,
                    inner: Box::new(PolicySpec::Bounded { max: d, default: d / 2 + 1 }),
                },
            };
            let node = net.nodes_len();
            let c = clock(&mut rng);
            let disk = Disk::new(opts.disk, ChaCha12Rng::seed_from_u64(rng.next_u64()));
            let mut host = LandlordHost::new(
                c,
                config,
                policy,
                !cfg.avoid.restore_twin,
                disk,
                ChaCha12Rng::seed_from_u64(rng.next_u64()),
                opts.dup,
                opts.sync_commit,
                opts.commit_delay,
                opts.lockers > 0,
                ctx.clone(),
            );
            host.timer_lag = opts.timer_lag;
            net.add_node(Box::new(host), c);
            landlords.push(node);
            by_id.insert(id, node);
        }
        let manager_config =
            RenewalManagerConfig { max_clock_drift_ppm: opts.ppm, ..Default::default() };
        let service = if opts.service {
            let id = LandlordId(0x2000);
            let mut config = RenewalServiceConfig::new(id, seed32(&mut rng));
            config.landlord =
                config.landlord.with_grace(opts.grace).with_expiry_budget(opts.budget);
            let max = range(&mut rng, 2_000, opts.max_lease.max(5_000));
            caps.insert(id, max);
            config.set_policy = PolicySpec::Bounded { max, default: max };
            config.manager =
                RenewalManagerConfig { first_request_id: 1 << 40, ..manager_config.clone() };
            let node = net.nodes_len();
            let c = clock(&mut rng);
            let mut host = ServiceHost::new(
                node,
                c,
                config,
                ChaCha12Rng::seed_from_u64(rng.next_u64()),
                opts.dup,
                opts.sync_commit,
                opts.commit_delay,
                ctx.clone(),
            );
            host.eager_events = opts.eager_events;
            host.fresh_ids = cfg.avoid.reused_request_ids;
            net.add_node(Box::new(host), c);
            by_id.insert(id, node);
            Some(node)
        } else {
            None
        };
        let discovery = if opts.discovery {
            let id = LandlordId(0x3000);
            let mut config = DiscoveryConfig::new(id, seed32(&mut rng));
            config.landlord =
                config.landlord.with_grace(opts.grace).with_expiry_budget(opts.budget);
            let max = range(&mut rng, 2_000, opts.max_lease.max(5_000));
            caps.insert(id, max);
            config.lease_policy = PolicySpec::Bounded { max, default: max };
            config.event_retry = vec![200, 500, 1_000, 2_000];
            config.delivery_timeout = range(&mut rng, 500, 5_000);
            config.unicast_retry = vec![200, 500, 1_000, 2_000];
            config.unicast_timeout = range(&mut rng, 500, 3_000);
            let node = net.nodes_len();
            let c = clock(&mut rng);
            let disk = Disk::new(opts.disk, ChaCha12Rng::seed_from_u64(rng.next_u64()));
            let host = DiscoveryHost::new(
                node,
                c,
                config,
                disk,
                ChaCha12Rng::seed_from_u64(rng.next_u64()),
                opts.dup,
                opts.sync_commit,
                opts.commit_delay,
                ctx.clone(),
            );
            net.add_node(Box::new(host), c);
            by_id.insert(id, node);
            Some((node, id))
        } else {
            None
        };
        let mut holders = Vec::new();
        for _ in 0..opts.holders {
            let node = net.nodes_len();
            let c = clock(&mut rng);
            let mut host = HolderHost::new(
                node,
                c,
                RenewalManager::new(manager_config.clone()),
                ChaCha12Rng::seed_from_u64(rng.next_u64()),
                opts.dup,
                ctx.clone(),
            );
            if let Some(ds) = discovery {
                let mut d = DiscoClient::new(ds, node);
                d.fail_rate = opts.event_fail;
                d.unknown_rate = opts.event_unknown;
                host.disco = Some(d);
            }
            net.add_node(Box::new(host), c);
            holders.push(node);
        }
        let mut registrars = Vec::new();
        if let Some((ds, _)) = discovery {
            for k in 0..opts.registrars {
                let node = net.nodes_len();
                let groups = random_groups(&mut rng);
                let ttl = opts.announce_ms * opts.ttl_factor;
                let r = RegistrarNode::new(
                    RegistrarId(0x100 + k as u128),
                    locator_of(k),
                    groups,
                    ds,
                    opts.announce_ms,
                    ttl,
                    ChaCha12Rng::seed_from_u64(rng.next_u64()),
                    opts.dup,
                    ctx.clone(),
                );
                let c = clock(&mut rng);
                net.add_node(Box::new(r), c);
                net.node_mut::<DiscoveryHost>(ds)
                    .expect("discovery")
                    .dns
                    .insert(locator_of(k), node);
                registrars.push(node);
            }
        }
        let mut lockers = Vec::new();
        let ids: Vec<LandlordId> =
            by_id.iter().filter(|(_, n)| landlords.contains(n)).map(|(id, _)| *id).collect();
        for k in 0..opts.lockers {
            let node = net.nodes_len();
            let c = clock(&mut rng);
            let careless = k % 2 == 1;
            let client = CoordClient::new(
                node,
                c,
                ids.clone(),
                careless,
                opts.ppm,
                ChaCha12Rng::seed_from_u64(rng.next_u64()),
                ctx.clone(),
            );
            net.add_node(Box::new(client), c);
            lockers.push(node);
        }
        let adversary = net.nodes_len();
        net.add_node(Box::new(Adversary::new(adversary, ctx.clone())), Clock::exact());
        ctx.borrow_mut().adversary = adversary;
        let mut w = World {
            rng,
            net,
            ctx,
            opts,
            landlords,
            service,
            discovery: discovery.map(|d| d.0),
            registrars,
            holders,
            lockers,
            adversary,
            by_id,
            caps,
            agenda: BTreeMap::new(),
            seq: 0,
            down: BTreeSet::new(),
            steps: Vec::new(),
            caught_up: BTreeMap::new(),
            partitions: BTreeSet::new(),
            slow: BTreeSet::new(),
            phase: Phase::Safety,
            scan_gone: false,
            next_adv_id: 1 << 61,
            steps_done: 0,
            avoid: cfg.avoid,
            seen_ok: Default::default(),
            kept_ok: Default::default(),
        };
        let (f, wk, s) = (w.opts.fault_mean, w.opts.work_mean, w.opts.safety);
        let t = w.exp(f);
        w.at(t, Action::Fault);
        w.at(0, Action::Work);
        let t = w.exp(wk);
        w.at(t, Action::Work);
        w.at(s, Action::Liveness);
        w
    }

    fn at(&mut self, t: Millis, a: Action) {
        self.seq += 1;
        self.agenda.insert((t, self.seq), a);
    }

    /// An exponential wait with mean `mean`, from now.
    fn exp(&mut self, mean: i64) -> Millis {
        let u = unit(&mut self.rng).max(1e-12);
        self.net.now() + ((-u.ln()) * mean as f64) as i64 + 1
    }

    fn failed(&self) -> bool {
        self.ctx.borrow().failure.is_some()
    }

    fn run(&mut self) {
        loop {
            let Some((&(t, s), &a)) = self.agenda.iter().next() else { return };
            self.agenda.remove(&(t, s));
            while self.net.step_until(t) {
                self.steps_done += 1;
                self.check(false);
                if self.failed() {
                    return;
                }
            }
            self.net.run_until(t);
            self.ctx.borrow_mut().real = t;
            if self.act(a) {
                return;
            }
            self.check(true);
            if self.failed() {
                return;
            }
        }
    }

    // ---- actions ----

    /// Applies an action; true when the run is over.
    fn act(&mut self, a: Action) -> bool {
        match a {
            Action::Fault => {
                if self.phase == Phase::Safety {
                    self.fault();
                    let t = self.exp(self.opts.fault_mean);
                    self.at(t, Action::Fault);
                }
            }
            Action::Work => {
                self.work();
                let t = self.exp(self.opts.work_mean);
                self.at(t, Action::Work);
            }
            Action::Recover(n) => self.recover(n),
            Action::RegistrarUp(n) => self.registrar_up(n),
            Action::CrashMidWrite(n, tries) => {
                if self.phase == Phase::Safety && !self.down.contains(&n) {
                    self.crash_node(n, CrashAt::MidWrite, tries);
                }
            }
            Action::Heal(a, b) => {
                self.net.heal(a, b);
                self.partitions.remove(&(a, b));
            }
            Action::Calm(a, b) => {
                let calm = self.calm_link();
                self.net.set_link(a, b, calm);
                self.slow.remove(&(a, b));
            }
            Action::Liveness => self.begin_liveness(),
            Action::Settle => self.settle(),
            Action::End => {
                self.final_check();
                return true;
            }
        }
        false
    }

    fn calm_link(&self) -> LinkConfig {
        LinkConfig { latency: self.opts.latency, jitter: self.opts.jitter.min(50), loss: 0.0 }
    }

    fn local(&self, node: NodeId) -> Millis {
        self.net.local_now(node)
    }

    fn trace(&self, f: impl FnOnce() -> String) {
        self.ctx.borrow_mut().trace(f);
    }

    fn fault(&mut self) {
        let mut kinds = Vec::new();
        let o = &self.opts;
        if o.steps_on {
            kinds.push(0);
        }
        if o.crash_on {
            kinds.push(1);
        }
        if o.partition_on {
            kinds.push(2);
        }
        if o.slow_on {
            kinds.push(3);
        }
        if o.hostile_on {
            kinds.push(4);
        }
        if o.misroute_on && (self.landlords.len() > 1 || self.service.is_some()) {
            kinds.push(5);
        }
        if self.discovery.is_some() {
            kinds.push(6);
            kinds.push(7);
        }
        if kinds.is_empty() {
            return;
        }
        let k = kinds[range(&mut self.rng, 0, kinds.len() as i64 - 1) as usize];
        match k {
            0 => self.clock_step(),
            1 => self.crash(),
            2 => self.partition(),
            3 => self.slow_link(),
            4 => self.hostile(),
            5 => self.misroute(),
            6 => self.registrar_outage(),
            _ => self.unreachable(),
        }
    }

    fn pick<T: Copy>(&mut self, v: &[T]) -> Option<T> {
        if v.is_empty() {
            None
        } else {
            Some(v[range(&mut self.rng, 0, v.len() as i64 - 1) as usize])
        }
    }

    fn clock_step(&mut self) {
        let mut nodes = self.servers();
        nodes.extend(&self.holders);
        nodes.extend(&self.lockers);
        let Some(n) = self.pick(&nodes) else { return };
        let size = [10, 1_000, 30_000][range(&mut self.rng, 0, 2) as usize];
        let mut delta = range(&mut self.rng, 1, size);
        if self.opts.back_on && unit(&mut self.rng) < 0.5 {
            delta = -delta;
        }
        self.net.step_clock(n, delta);
        let c = self.net.clock(n);
        self.set_host_clock(n, c);
        if let Some(h) = self.net.node_mut::<LandlordHost>(n) {
            h.clock_stepped(delta);
        } else if let Some(h) = self.net.node_mut::<ServiceHost>(n) {
            h.clock_stepped(delta);
        } else if let Some(h) = self.net.node_mut::<DiscoveryHost>(n) {
            h.clock_stepped(delta);
        }
        let real = self.net.now();
        self.steps.push((n, real, delta > 0));
        {
            let mut ctx = self.ctx.borrow_mut();
            if delta > 0 {
                ctx.faults.clock_forward += 1;
            } else {
                ctx.faults.clock_back += 1;
            }
            ctx.trace(|| format!("fault: clock of node {n} steps {delta:+} ms"));
        }
        if delta < 0 {
            self.scan_gone = true;
            let c = self.caught_up.entry(n).or_insert(real);
            *c = (*c).max(real) + (-delta) * 2;
        }
    }

    fn set_host_clock(&mut self, n: NodeId, c: Clock) {
        if let Some(h) = self.net.node_mut::<LandlordHost>(n) {
            h.clock = c;
        } else if let Some(h) = self.net.node_mut::<ServiceHost>(n) {
            h.clock = c;
        } else if let Some(h) = self.net.node_mut::<HolderHost>(n) {
            h.clock = c;
        } else if let Some(h) = self.net.node_mut::<DiscoveryHost>(n) {
            h.clock = c;
        } else if let Some(h) = self.net.node_mut::<CoordClient>(n) {
            h.clock = c;
        }
    }

    fn crash(&mut self) {
        let mut nodes = self.servers();
        nodes.retain(|n| !self.down.contains(n));
        let Some(n) = self.pick(&nodes) else { return };
        let at = match range(&mut self.rng, 0, 3) {
            0 | 1 => CrashAt::Now,
            2 => CrashAt::AfterCommit,
            _ => CrashAt::MidWrite,
        };
        self.crash_node(n, at, 0);
    }

    fn crash_node(&mut self, n: NodeId, at: CrashAt, tries: u32) {
        if at == CrashAt::MidWrite && tries < 20 {
            // Nothing to write yet: strike when there is (a commit is never long in coming).
            let idle = self.net.node::<LandlordHost>(n).is_some_and(|h| h.disk_idle())
                || self.net.node::<DiscoveryHost>(n).is_some_and(|h| h.disk_idle());
            if idle {
                let t = self.net.now() + range(&mut self.rng, 5, 300);
                self.at(t, Action::CrashMidWrite(n, tries + 1));
                return;
            }
        }
        let now = self.local(n);
        if let Some(h) = self.net.node_mut::<LandlordHost>(n) {
            h.crash(at, now);
        } else if let Some(h) = self.net.node_mut::<ServiceHost>(n) {
            h.crash(at, now);
        } else if let Some(h) = self.net.node_mut::<DiscoveryHost>(n) {
            h.crash(at, now);
        }
        self.down.insert(n);
        {
            let mut c = self.ctx.borrow_mut();
            c.faults.crashes += 1;
            if at == CrashAt::AfterCommit {
                c.faults.crashes_at_commit += 1;
            }
        }
        let downtime = if unit(&mut self.rng) < 0.3 { 0 } else { range(&mut self.rng, 1, 10_000) };
        self.at(self.net.now() + downtime, Action::Recover(n));
    }

    fn recover(&mut self, n: NodeId) {
        if !self.down.remove(&n) {
            return;
        }
        let now = self.local(n);
        let corrupt = self.opts.corrupt_on && unit(&mut self.rng) < 0.5;
        if self.net.node::<LandlordHost>(n).is_some() {
            if corrupt {
                self.damage_store(n);
            }
            let h = self.net.node_mut::<LandlordHost>(n).expect("landlord");
            h.recover(now);
            if corrupt {
                self.corrupt(n, now);
            }
        } else if self.net.node::<ServiceHost>(n).is_some() {
            if corrupt {
                self.corrupt(n, now);
            }
            let h = self.net.node_mut::<ServiceHost>(n).expect("service");
            h.recover(now);
        } else if let Some(h) = self.net.node_mut::<DiscoveryHost>(n) {
            h.recover(now);
        }
        self.scan_gone = true;
    }

    /// Flips one bit of a copy of a crashed landlord's directory, anywhere but in the last
    /// frame of its log (which a crash may tear, so its damage is a torn tail): `Store::open`
    /// must refuse the copy, naming the damage, never recover from it silently.
    fn damage_store(&mut self, n: NodeId) {
        let Some(h) = self.net.node::<LandlordHost>(n) else { return };
        let files = h.disk.dir.files();
        // The last segment with anything in it: a rotation may have left an empty one after
        // it, and the store takes the end of the last non-empty one as the tail.
        let last_segment =
            files.iter().rposition(|(name, b)| name.starts_with("log-") && !b.is_empty());
        // (file, first byte, end) of every range a flip must be refused in.
        let mut ranges = Vec::new();
        for (i, (name, bytes)) in files.iter().enumerate() {
            if name == leasehold::store::SNAPSHOT_FILE {
                ranges.push((i, 0, bytes.len()));
            } else if name.starts_with("log-") {
                let Ok(scan) = leasehold::journal::scan(bytes, None) else { continue };
                let mut frames: Vec<(usize, usize)> = scan
                    .frames
                    .iter()
                    .map(|f| {
                        (f.offset, f.offset + leasehold::journal::FRAME_HEADER + f.payload.len())
                    })
                    .collect();
                if Some(i) == last_segment {
                    frames.pop();
                }
                ranges.extend(frames.into_iter().map(|(a, b)| (i, a, b)));
            }
        }
        let total: usize = ranges.iter().map(|r| r.2 - r.1).sum();
        if total == 0 {
            return;
        }
        let mut at = range(&mut self.rng, 0, total as i64 - 1) as usize;
        let bit = range(&mut self.rng, 0, 7) as u8;
        let (file, pos) = ranges
            .iter()
            .find_map(|&(i, a, b)| {
                if at < b - a {
                    Some((i, a + at))
                } else {
                    at -= b - a;
                    None
                }
            })
            .expect("in range");
        let mut damaged = files.clone();
        damaged[file].1[pos] ^= 1 << bit;
        let name = damaged[file].0.clone();
        let (policy, config) = (h.policy.clone(), h.config.clone());
        let open = |files: &[(String, Vec<u8>)]| {
            h.disk.open_copy(files, |snapshot| {
                let policy = policy.build()?;
                match snapshot {
                    Some(bytes) => {
                        leasehold::Landlord::<Vec<u8>>::from_snapshot_bytes(bytes, policy)
                    }
                    None => {
                        let mut ll = leasehold::Landlord::new(config.clone(), policy);
                        ll.enable_journal();
                        Ok(ll)
                    }
                }
            })
        };
        let opened = open(&damaged);
        // Damage to a log frame the snapshot already holds loses nothing: the store may take
        // it for a torn tail (as it does when it ends a segment) if it recovers every record
        // the undamaged copy does. Damage to the snapshot, or that costs a record, must be
        // refused.
        let harmless = |r: &leasehold::journal::Recovered| {
            name != leasehold::store::SNAPSHOT_FILE
                && open(&files).is_ok_and(|clean| clean.last_seq == r.last_seq)
        };
        let opened = opened.map(|r| (harmless(&r), r));
        let mut c = self.ctx.borrow_mut();
        c.faults.damaged_stores += 1;
        c.trace(|| {
            format!(
                "fault: bit {bit} of byte {pos} of {name} flipped in a copy of node {n}'s store"
            )
        });
        if let Ok((false, recovered)) = opened {
            c.fail(
                Check::Restore,
                format!(
                    "node {n}: Store::open accepted a store with bit {bit} of byte {pos} of \
                     {name} flipped (recovered {recovered:?})"
                ),
            );
        }
    }

    /// Hands restore a corrupted copy of the last commit: it must refuse it.
    fn corrupt(&mut self, n: NodeId, now: Millis) {
        let which = range(&mut self.rng, 0, 6);
        let pick = range(&mut self.rng, 0, i64::MAX - 1) as usize;
        let result = if let Some(h) = self.net.node::<LandlordHost>(n) {
            let Some(mut s) = h.ll.as_ref().map(|l| l.snapshot(now)) else { return };
            let what = match which {
                0 if !s.leases.is_empty() => {
                    let l = s.leases[pick % s.leases.len()].clone();
                    s.expired.push(l);
                    "a live lease also listed as expired"
                }
                1 if !s.leases.is_empty() => {
                    let l = s.leases[pick % s.leases.len()].clone();
                    s.leases.push(l);
                    "a lease listed twice"
                }
                2 if !s.leases.is_empty() && !s.free.is_empty() => {
                    let held = s.leases[pick % s.leases.len()].cookie.0 as u32;
                    let i = pick % s.free.len();
                    s.free[i] = held;
                    "a held slot on the free list"
                }
                3 if !s.leases.is_empty() => {
                    let i = pick % s.leases.len();
                    let c = s.leases[i].cookie.0;
                    s.leases[i].cookie = Cookie(c & !0xffff_ffff | (s.slots as u128 + 7));
                    "a cookie naming a slot outside the table"
                }
                4 if s.free.len() >= 2 => {
                    let i = pick % s.free.len();
                    let j = (i + 1) % s.free.len();
                    s.free[j] = s.free[i];
                    "a slot free twice"
                }
                5 if !s.expired.is_empty() => {
                    let e = s.expired[pick % s.expired.len()].clone();
                    s.expired.push(e);
                    "an expired lease listed twice"
                }
                _ if !s.leases.is_empty() => {
                    let i = pick % s.leases.len();
                    s.leases.remove(i);
                    "a lease missing from a full table (slot neither free nor held)"
                }
                _ => return,
            };
            let policy = h.policy.build().expect("valid");
            leasehold::Landlord::restore(s, policy, now)
                .map(|_| ())
                .map_err(|_| ())
                .err()
                .is_none()
                .then_some(what)
        } else if let Some(h) = self.net.node::<ServiceHost>(n) {
            let json = h.store.snapshot().to_json();
            let mut v: serde_json::Value = serde_json::from_str(&json).expect("json");
            let what = match which % 2 {
                0 => {
                    let leases = v["landlord"]["leases"].as_array().cloned().unwrap_or_default();
                    if leases.is_empty() {
                        return;
                    }
                    let l = leases[pick % leases.len()].clone();
                    v["landlord"]["expired"].as_array_mut().expect("array").push(l);
                    "a live set lease also listed as expired"
                }
                _ => {
                    let clients = v["clients"].as_array().cloned().unwrap_or_default();
                    if clients.is_empty() {
                        return;
                    }
                    let c = clients[pick % clients.len()].clone();
                    v["clients"].as_array_mut().expect("array").push(c);
                    "a client lease listed twice"
                }
            };
            let snap = leasehold::service::ServiceSnapshot::from_json(&v.to_string());
            let ok = match snap {
                Ok(s) => leasehold::RenewalService::restore(h.config.clone(), s, now).is_ok(),
                Err(_) => false,
            };
            ok.then_some(what)
        } else {
            return;
        };
        let mut c = self.ctx.borrow_mut();
        c.faults.corrupt_snapshots += 1;
        if let Some(what) = result {
            c.fail(
                Check::Restore,
                format!("node {n}: restore accepted an inconsistent snapshot: {what}"),
            );
        }
    }

    /// Nodes that serve: landlords, the renewal service, the discovery service.
    fn servers(&self) -> Vec<NodeId> {
        let mut nodes: Vec<NodeId> = self.landlords.clone();
        nodes.extend(self.service);
        nodes.extend(self.discovery);
        nodes
    }

    /// Nodes a server talks to: holders, the renewal service (a holder of client leases), the
    /// registrars (the discovery service's).
    fn peers_of(&self, a: NodeId) -> Vec<NodeId> {
        let mut others: Vec<NodeId> = self.holders.clone();
        others.extend(self.service.filter(|s| *s != a));
        if Some(a) == self.discovery {
            others.extend(&self.registrars);
        }
        others
    }

    fn partition(&mut self) {
        let nodes = self.servers();
        let Some(a) = self.pick(&nodes) else { return };
        let others = self.peers_of(a);
        let Some(b) = self.pick(&others) else { return };
        let (a, b) = (a.min(b), a.max(b));
        self.net.partition(a, b);
        self.partitions.insert((a, b));
        self.ctx.borrow_mut().faults.partitions += 1;
        self.trace(|| format!("fault: partition between nodes {a} and {b}"));
        let t = self.net.now() + range(&mut self.rng, 100, 20_000);
        self.at(t, Action::Heal(a, b));
    }

    fn slow_link(&mut self) {
        let nodes = self.servers();
        let Some(a) = self.pick(&nodes) else { return };
        let others = self.peers_of(a);
        let Some(b) = self.pick(&others) else { return };
        let (a, b) = (a.min(b), a.max(b));
        let link = LinkConfig {
            latency: range(&mut self.rng, 100, 3_000),
            jitter: range(&mut self.rng, 0, 3_000),
            loss: unit(&mut self.rng) * 0.5,
        };
        self.net.set_link(a, b, link);
        self.slow.insert((a, b));
        self.ctx.borrow_mut().faults.delayed += 1;
        self.trace(|| format!("fault: link {a}-{b} slow: {link:?}"));
        let t = self.net.now() + range(&mut self.rng, 1_000, 15_000);
        self.at(t, Action::Calm(a, b));
    }

    /// Replies a holder must ignore or survive: unknown ids, the ids of its requests with another
    /// landlord's id, or malformed and error bodies.
    fn hostile(&mut self) {
        let mut targets: Vec<NodeId> = self.holders.clone();
        targets.extend(self.service);
        let Some(to) = self.pick(&targets) else { return };
        let recent = if let Some(h) = self.net.node::<HolderHost>(to) {
            h.tap.recent_ids()
        } else if let Some(h) = self.net.node::<ServiceHost>(to) {
            h.tap.recent_ids()
        } else {
            Vec::new()
        };
        let ids: Vec<LandlordId> = self.by_id.keys().copied().collect();
        let n = range(&mut self.rng, 1, 4);
        for _ in 0..n {
            let kind = range(&mut self.rng, 0, 2);
            let (id, landlord, body) = match (kind, self.pick(&recent)) {
                (1, Some((id, l))) => {
                    // A request of its own, answered in another landlord's name.
                    let other = self.pick(&ids).filter(|o| *o != l).unwrap_or(LandlordId(0xbad));
                    (id, other, self.garbage_body(true))
                }
                (2, Some((id, l))) => (id, l, self.garbage_body(false)),
                _ => {
                    let l = self.pick(&ids).unwrap_or(LandlordId(0xbad));
                    (self.rng.next_u64(), l, self.garbage_body(true))
                }
            };
            let reply = Reply { id, landlord, body };
            self.trace(|| format!("fault: hostile reply to node {to}: {reply:?}"));
            self.ctx.borrow_mut().faults.hostile += 1;
            let out = Outgoing { to: Address::Node(to), message: Message::Reply(reply) };
            self.net
                .node_mut::<Adversary>(self.adversary)
                .expect("adversary")
                .outbox
                .push_back(out);
        }
    }

    /// A reply body; unless `any`, one that is malformed or an error for every request kind
    /// (a valid success in the right landlord's name and id would be a forgery, which the
    /// protocol does not claim to detect).
    fn garbage_body(&mut self, any: bool) -> ReplyBody {
        let cookie = Cookie(self.rng.next_u64() as u128 | (self.rng.next_u64() as u128) << 64);
        let err = |e: LeaseError| WireError::from(&e);
        let k = range(&mut self.rng, 0, if any { 6 } else { 2 });
        match k {
            0 => ReplyBody::Error(err(LeaseError::UnknownLease)),
            1 => ReplyBody::Error(err(LeaseError::Decode("garbage".into()))),
            2 => ReplyBody::Granted { cookie, duration: -5 },
            3 => ReplyBody::RenewedAll { results: vec![WireOutcome::Ok(1 << 40); 7] },
            4 => ReplyBody::Renewed { duration: FOREVER - 1 },
            5 => ReplyBody::Granted { cookie, duration: 1 << 40 },
            _ => ReplyBody::CancelledAll { results: vec![WireOutcome::Ok(())] },
        }
    }

    /// A registrar stops for a while (no announcements, no answers to unicast discovery).
    fn registrar_outage(&mut self) {
        let up: Vec<NodeId> = self
            .registrars
            .iter()
            .copied()
            .filter(|&r| self.net.node::<RegistrarNode>(r).is_some_and(|x| x.up))
            .collect();
        let Some(r) = self.pick(&up) else { return };
        let now = self.local(r);
        self.net.node_mut::<RegistrarNode>(r).expect("registrar").set_up(false, now);
        self.ctx.borrow_mut().faults.registrar_outages += 1;
        self.trace(|| format!("fault: registrar node {r} stops"));
        let t = self.net.now() + range(&mut self.rng, 500, 20_000);
        self.at(t, Action::RegistrarUp(r));
    }

    fn registrar_up(&mut self, r: NodeId) {
        let now = self.local(r);
        let reg = self.net.node_mut::<RegistrarNode>(r).expect("registrar");
        if !reg.up {
            reg.set_up(true, now);
            self.trace(|| format!("registrar node {r} starts again"));
        }
    }

    /// The discovery service's host reports a registrar unreachable (rightly or not).
    fn unreachable(&mut self) {
        let Some(ds) = self.discovery else { return };
        let ids: Vec<RegistrarId> = self
            .registrars
            .iter()
            .map(|&r| self.net.node::<RegistrarNode>(r).expect("registrar").id)
            .collect();
        let Some(g) = self.pick(&ids) else { return };
        let now = self.local(ds);
        let h = self.net.node_mut::<DiscoveryHost>(ds).expect("discovery");
        if h.svc.is_none() {
            return;
        }
        h.report_unreachable(g, now);
        self.ctx.borrow_mut().faults.unreachable += 1;
    }

    /// Replays a request a renewer sent to another landlord than the one it was meant for.
    fn misroute(&mut self) {
        let mut sources: Vec<NodeId> = self.holders.clone();
        sources.extend(self.service);
        let Some(from) = self.pick(&sources) else { return };
        let recent: Vec<(LandlordId, Request)> = if let Some(h) = self.net.node::<HolderHost>(from)
        {
            h.tap.recent().iter().cloned().collect()
        } else if let Some(h) = self.net.node::<ServiceHost>(from) {
            h.tap.recent().iter().cloned().collect()
        } else {
            return;
        };
        let recent: Vec<(LandlordId, Request)> = recent
            .into_iter()
            .filter(|(_, r)| !matches!(r.body, RequestBody::Grant { .. }))
            .collect();
        if recent.is_empty() {
            return;
        }
        let i = range(&mut self.rng, 0, recent.len() as i64 - 1) as usize;
        let (meant, mut req) = recent[i].clone();
        let ids: Vec<LandlordId> = self.by_id.keys().copied().filter(|l| *l != meant).collect();
        let Some(to) = self.pick(&ids) else { return };
        self.next_adv_id += 1;
        req.id = self.next_adv_id;
        {
            let mut c = self.ctx.borrow_mut();
            c.misrouted.insert(req.id, meant);
            c.faults.misrouted += 1;
            let m = Message::Request(req.clone());
            c.trace(|| {
                format!(
                    "fault: misroute to {to} (meant for {meant}): {}",
                    crate::nodes::describe(&m)
                )
            });
        }
        let out = Outgoing { to: Address::Landlord(to), message: Message::Request(req) };
        self.net.node_mut::<Adversary>(self.adversary).expect("adversary").outbox.push_back(out);
    }

    fn work(&mut self) {
        if self.discovery.is_some() && unit(&mut self.rng) < 0.35 {
            self.disco_work();
            return;
        }
        let x = unit(&mut self.rng);
        let svc_up = self.service.is_some_and(|s| !self.down.contains(&s));
        if x < 0.5 || !svc_up {
            if x < 0.85 {
                self.grant();
            } else {
                self.cancel();
            }
        } else if x < 0.65 {
            self.create_set();
        } else if x < 0.85 {
            self.handover();
        } else {
            self.remove_from_set();
        }
    }

    /// Work with the discovery service: registrations by groups and by locators, discards,
    /// changes of a registration's sets, registrars changing groups.
    fn disco_work(&mut self) {
        let x = unit(&mut self.rng);
        let Some(h) = self.pick(&self.holders.clone()) else { return };
        if x < 0.45 {
            let groups = match range(&mut self.rng, 0, 6) {
                0 => Groups::All,
                1 => Groups::none(),
                _ => Groups::Only(random_groups(&mut self.rng)),
            };
            let mut locators = BTreeSet::new();
            for k in 0..self.registrars.len() {
                if unit(&mut self.rng) < 0.3 {
                    locators.insert(locator_of(k));
                }
            }
            if unit(&mut self.rng) < 0.1 {
                locators.insert(ghost_locator());
            }
            let duration = if unit(&mut self.rng) < 0.2 {
                ANY
            } else {
                range(&mut self.rng, 500, self.opts.max_lease * 6 / 5)
            };
            let hold = self.hold(0.2, 2_000);
            let renew = self.renew_duration(500);
            let json = unit(&mut self.rng) < 0.3;
            self.trace(|| {
                format!("work: holder {h} registers for groups {groups:?}, locators {locators:?}")
            });
            let host = self.net.node_mut::<HolderHost>(h).expect("holder");
            let d = host.disco.as_mut().expect("a discovery client");
            d.register(h, groups, locators, duration, hold, renew, json);
        } else if x < 0.65 {
            let host = self.net.node::<HolderHost>(h).expect("holder");
            let live = host.disco.as_ref().expect("a discovery client").live();
            let Some((e, _, held)) = self.pick_live(&live) else { return };
            let Some(g) = self.pick(&held) else { return };
            self.trace(|| format!("work: holder {h} asks to discard {:x} from {e}", g.0));
            let host = self.net.node_mut::<HolderHost>(h).expect("holder");
            host.disco.as_mut().expect("client").discard(e, g);
        } else if x < 0.8 {
            let host = self.net.node::<HolderHost>(h).expect("holder");
            let live = host.disco.as_ref().expect("a discovery client").live();
            let Some((e, _, _)) = self.pick_live(&live) else { return };
            let k = range(&mut self.rng, 0, self.registrars.len() as i64 - 1) as usize;
            let groups = random_groups(&mut self.rng);
            let which = range(&mut self.rng, 0, 3);
            self.trace(|| format!("work: holder {h} changes registration {e} (kind {which})"));
            let host = self.net.node_mut::<HolderHost>(h).expect("holder");
            host.disco.as_mut().expect("client").change(e, |cookie| match which {
                0 => DiscoveryRequestBody::SetGroups { cookie, groups: Groups::Only(groups) },
                1 => {
                    DiscoveryRequestBody::AddGroups { cookie, groups: groups.into_iter().collect() }
                }
                2 => DiscoveryRequestBody::AddLocators { cookie, locators: vec![locator_of(k)] },
                _ => DiscoveryRequestBody::RemoveLocators { cookie, locators: vec![locator_of(k)] },
            });
        } else {
            let Some(r) = self.pick(&self.registrars.clone()) else { return };
            let groups = random_groups(&mut self.rng);
            let now = self.local(r);
            self.trace(|| format!("work: registrar node {r} now in groups {groups:?}"));
            self.net.node_mut::<RegistrarNode>(r).expect("registrar").set_groups(groups, now);
        }
    }

    fn pick_live<T: Clone>(&mut self, v: &[T]) -> Option<T> {
        if v.is_empty() {
            None
        } else {
            Some(v[range(&mut self.rng, 0, v.len() as i64 - 1) as usize].clone())
        }
    }

    fn grant(&mut self) {
        let Some(h) = self.pick(&self.holders.clone()) else { return };
        let Some(l) = self.pick(&self.landlords.clone()) else { return };
        let id = self.net.landlord_id_of(l);
        let duration = if unit(&mut self.rng) < 0.2 {
            ANY
        } else {
            range(&mut self.rng, 500, self.opts.max_lease * 6 / 5)
        };
        let hold = self.hold(0.2, 2_000);
        let renew = self.renew_duration(500);
        self.trace(|| format!("work: holder {h} asks {id} for a lease ({duration} ms, hold {hold}, renew {renew})"));
        let host = self.net.node_mut::<HolderHost>(h).expect("holder");
        host.request_grant(id, duration, Hold::For(hold), renew);
    }

    fn holder_leases(&self, h: NodeId) -> Vec<Lease> {
        let mut v: Vec<Lease> =
            self.net.node::<HolderHost>(h).expect("holder").manager.leases().copied().collect();
        v.sort_by_key(|l| (l.landlord(), l.cookie()));
        v
    }

    fn cancel(&mut self) {
        let Some(h) = self.pick(&self.holders.clone()) else { return };
        let leases = self.holder_leases(h);
        let Some(l) = self.pick(&leases) else { return };
        let now = self.local(h);
        self.trace(|| format!("work: holder {h} cancels {}", l.cookie()));
        let host = self.net.node_mut::<HolderHost>(h).expect("holder");
        let _ = host.manager.cancel(&l, now);
        self.ctx.borrow_mut().healthy.remove(&(h, l.landlord(), l.cookie()));
    }

    /// How long to keep a lease (or membership): FOREVER with probability `forever`; steering
    /// around short renewals, always FOREVER (a desired expiration close by makes a renewal ask
    /// for less than the lease has left).
    fn hold(&mut self, forever: f64, min: i64) -> i64 {
        if self.avoid.short_renewals || unit(&mut self.rng) < forever {
            FOREVER
        } else {
            range(&mut self.rng, min, 300_000)
        }
    }

    /// A renew duration; steering around short renewals, never shorter than any lease.
    fn renew_duration(&mut self, min: i64) -> i64 {
        if self.avoid.short_renewals {
            let longest = self.opts.max_lease.max(5_000) * 2;
            range(&mut self.rng, longest, 2 * longest)
        } else {
            range(&mut self.rng, min, 60_000)
        }
    }

    fn margin(&self, remaining: Millis) -> Millis {
        (remaining as i128 * self.opts.ppm as i128 / 1_000_000) as i64 + 2
    }

    fn create_set(&mut self) {
        let Some(s) = self.service else { return };
        let Some(h) = self.pick(&self.holders.clone()) else { return };
        let duration =
            if unit(&mut self.rng) < 0.3 { ANY } else { range(&mut self.rng, 2_000, 120_000) };
        let warn = (unit(&mut self.rng) < 0.5).then(|| range(&mut self.rng, 0, 5_000));
        let snow = self.local(s);
        let host = self.net.node_mut::<ServiceHost>(s).expect("service");
        let sid = host.id;
        let made = host.manage(snow, |svc, ctx| {
            let (set, lease) = svc.create_set(duration, snow).ok()?;
            let mut c = ctx.borrow_mut();
            c.issued.entry(lease.cookie()).or_default().push(sid);
            if let Ok(r) =
                svc.set_renewal_failure_listener(set, format!("f{}", set.0).into_bytes(), snow)
            {
                c.handbacks.insert((sid, r.event_id), format!("f{}", set.0).into_bytes());
            }
            if let Some(w) = warn {
                if let Ok(r) = svc.set_expiration_warning_listener(
                    set,
                    w,
                    format!("w{}", set.0).into_bytes(),
                    snow,
                ) {
                    c.handbacks.insert((sid, r.event_id), format!("w{}", set.0).into_bytes());
                }
            }
            Some((set, lease))
        });
        let Some(Some((set, lease))) = made else { return };
        // The holder keeps the set's lease alive (the lease crosses clocks in DURATION form).
        let remaining = lease.expiration() - snow;
        let hnow = self.local(h);
        let exp = hnow + remaining - self.margin(remaining);
        let hold = self.hold(0.3, 5_000);
        let renew = self.renew_duration(1_000);
        let real = self.net.now();
        self.trace(|| format!("work: {set} made, its lease {} goes to holder {h}", lease.cookie()));
        let host = self.net.node_mut::<HolderHost>(h).expect("holder");
        let l = Lease::new(sid, lease.cookie(), exp);
        if host.manager.renew_for(l, hold, renew, hnow).is_ok() {
            host.tap.established.insert((sid, lease.cookie()), real);
        }
    }

    /// A holder hands one of its leases to a set of the renewal service.
    fn handover(&mut self) {
        let Some(s) = self.service else { return };
        let Some(h) = self.pick(&self.holders.clone()) else { return };
        let sid = self.net.landlord_id_of(s);
        let hnow = self.local(h);
        let leases: Vec<Lease> = self
            .holder_leases(h)
            .into_iter()
            .filter(|l| {
                l.landlord() != sid && l.expiration() != FOREVER && l.expiration() - hnow > 2_000
            })
            .collect();
        // A belief a clock step made unsafe stays with its holder (its excuse is that node's step).
        // So does a lease the holder renewed lately: its request may still be on the way (a slow
        // link, a late duplicate) and, arriving after the service's renewal, cut the term the
        // service believes in (a holder hands over only a lease it stopped renewing a while ago).
        let tap = &self.net.node::<HolderHost>(h).expect("holder").tap;
        let since = self.net.now() - STALE_REQUEST;
        let leases: Vec<Lease> = leases
            .into_iter()
            .filter(|l| {
                let e = tap
                    .established
                    .get(&(l.landlord(), l.cookie()))
                    .copied()
                    .unwrap_or(Millis::MIN);
                !self.tainted(h, self.by_id[&l.landlord()], e)
                    && !tap.named_since(l.landlord(), l.cookie(), since)
            })
            .collect();
        let Some(l) = self.pick(&leases) else { return };
        let snow = self.local(s);
        let sets: Vec<SetId> = {
            let svc = self.net.node::<ServiceHost>(s).expect("service").svc.as_ref();
            let Some(svc) = svc else { return };
            svc.sets().into_iter().filter(|set| svc.set_lease(*set, snow).is_some()).collect()
        };
        let Some(set) = self.pick(&sets) else { return };
        let remaining = l.expiration() - hnow;
        let moved = Lease::new(l.landlord(), l.cookie(), snow + remaining - self.margin(remaining));
        let membership = self.hold(0.3, 5_000);
        let renew = self.renew_duration(1_000);
        let est = {
            let host = self.net.node_mut::<HolderHost>(h).expect("holder");
            let _ = host.manager.remove(&l);
            host.tap.established.get(&(l.landlord(), l.cookie())).copied()
        };
        self.ctx.borrow_mut().healthy.remove(&(h, l.landlord(), l.cookie()));
        self.trace(|| format!("work: holder {h} hands lease {} to {set}", l.cookie()));
        let host = self.net.node_mut::<ServiceHost>(s).expect("service");
        host.manage(snow, |svc, _| svc.add(set, moved, membership, renew, snow).is_ok());
        if let Some(e) = est {
            host.tap.established.insert((l.landlord(), l.cookie()), e);
        }
    }

    fn remove_from_set(&mut self) {
        let Some(s) = self.service else { return };
        let snow = self.local(s);
        let host = self.net.node_mut::<ServiceHost>(s).expect("service");
        host.manage(snow, |svc, _| {
            for set in svc.sets() {
                if let Ok(leases) = svc.leases(set, snow) {
                    if let Some(l) = leases.first() {
                        let _ = svc.remove(set, l, snow);
                        return;
                    }
                }
            }
        });
    }

    // ---- phases ----

    fn begin_liveness(&mut self) {
        self.phase = Phase::Settling;
        self.trace(|| "liveness: faults stop, partitions heal, crashed nodes restart".into());
        for (a, b) in std::mem::take(&mut self.partitions) {
            self.net.heal(a, b);
        }
        let calm = self.calm_link();
        for (a, b) in std::mem::take(&mut self.slow) {
            self.net.set_link(a, b, calm);
        }
        self.net.set_default_link(calm);
        for n in self.down.clone() {
            self.recover(n);
        }
        let nodes: Vec<NodeId> = (0..self.net.nodes_len()).collect();
        for n in nodes {
            if let Some(h) = self.net.node_mut::<LandlordHost>(n) {
                h.set_dup(0.0);
            } else if let Some(h) = self.net.node_mut::<ServiceHost>(n) {
                h.set_dup(0.0);
            } else if let Some(h) = self.net.node_mut::<HolderHost>(n) {
                h.set_dup(0.0);
                h.faults_on = false;
            } else if let Some(h) = self.net.node_mut::<DiscoveryHost>(n) {
                h.set_dup(0.0);
            } else if let Some(h) = self.net.node_mut::<RegistrarNode>(n) {
                h.dup = 0.0;
            }
        }
        for r in self.registrars.clone() {
            self.registrar_up(r);
        }
        let t = self.net.now() + self.opts.settle;
        self.at(t, Action::Settle);
    }

    /// Marks every lease that is healthy now; each must stay alive until the end.
    fn settle(&mut self) {
        self.phase = Phase::Live;
        let real = self.net.now();
        let mut healthy = BTreeSet::new();
        for (node, clock, leases, est) in self.renewers() {
            // A renewer whose clock stepped back sleeps until it reads its old time again.
            if self.caught_up.get(&node).is_some_and(|&t| t > real) {
                continue;
            }
            for l in leases {
                let Some(rh) = clock.real_at(l.expiration()) else { continue };
                if rh < real + 2_000 {
                    continue;
                }
                // A renewal term must leave room for a few round trips to a journaled
                // landlord: each reply waits for a group commit and its sync (and for the
                // commit before it), so a term of a few hundred ms cannot be promised to live.
                let cap = self.caps.get(&l.landlord()).copied().unwrap_or(Millis::MAX);
                let term = self.renew_of(node, &l).map(|d| if d > 0 { d.min(cap) } else { cap });
                if term.is_some_and(|d| d < self.shortest_live_term()) {
                    continue;
                }
                let e = est.get(&(l.landlord(), l.cookie())).copied();
                if self.belief_problem(node, clock, &l, e).is_none()
                    && !self.tainted(node, self.by_id[&l.landlord()], e.unwrap_or(Millis::MIN))
                {
                    healthy.insert((node, l.landlord(), l.cookie()));
                }
            }
        }
        let n = healthy.len();
        self.trace(|| format!("liveness: {n} healthy leases must stay alive"));
        let mut c = self.ctx.borrow_mut();
        c.healthy = healthy;
        c.liveness = true;
        drop(c);
        let t = real + self.opts.live;
        self.at(t, Action::End);
    }

    fn final_check(&mut self) {
        self.final_coord();
        let healthy = self.ctx.borrow().healthy.clone();
        for (node, l, c) in healthy {
            let Some(h) = self.net.node::<HolderHost>(node) else { continue };
            // Still managed (it may be a few ms past its local expiration, by the drift margin,
            // while the grant covers its desired expiration).
            if h.manager.lease(&Lease::new(l, c, 0)).is_none() {
                self.ctx.borrow_mut().fail(
                    Check::Liveness,
                    format!(
                        "holder {node} no longer holds lease {c} of {l}, and was never told why"
                    ),
                );
            }
        }
    }

    /// At the end, each watcher takes the events it has not yet seen straight from its
    /// landlord: then what it believes is held must be what the landlord holds.
    fn final_coord(&mut self) {
        let now = self.net.now();
        for &n in &self.lockers.clone() {
            let Some(client) = self.net.node_mut::<CoordClient>(n) else { continue };
            client.active = false;
            let Some(mut w) = client.watch.clone() else { continue };
            let Some(&ln) = self.by_id.get(&w.landlord) else { continue };
            let lnow = self.local(ln);
            let Some(h) = self.net.node_mut::<LandlordHost>(ln) else { continue };
            let Some(ll) = &mut h.ll else { continue };
            let e = match ll.poll_events(w.cookie, w.last, 0, lnow) {
                Ok(e) => e,
                Err(_) => continue, // the watch ran out at the end
            };
            let truth: BTreeMap<Vec<u8>, BTreeSet<u64>> =
                ll.holders(&w.selector).into_iter().fold(BTreeMap::new(), |mut m, h| {
                    m.entry(h.resource).or_default().insert(h.token);
                    m
                });
            let lid = w.landlord;
            let result = w.apply(&e).and_then(|()| {
                let believed = w.believed();
                if believed == truth {
                    Ok(())
                } else {
                    Err(format!(
                        "at the end it believes {believed:?} held, the landlord holds {truth:?}"
                    ))
                }
            });
            if let Err(m) = result {
                let _ = now;
                self.ctx
                    .borrow_mut()
                    .fail(Check::Coord, format!("watcher {n} of landlord {lid}: {m}"));
                return;
            }
        }
    }

    // ---- checks ----

    /// Every renewer: (node, clock, leases it believes in, establish times).
    /// The renewal term `node`'s manager asks for `l`.
    fn renew_of(&self, node: NodeId, l: &Lease) -> Option<Millis> {
        if let Some(h) = self.net.node::<HolderHost>(node) {
            h.manager.renew_duration(l).ok()
        } else {
            let h = self.net.node::<ServiceHost>(node)?;
            h.svc.as_ref()?.manager().renew_duration(l).ok()
        }
    }

    /// The shortest renewal term the liveness check holds to: fourteen of the slowest round
    /// trips once faults stop (calm links; a group commit's delay; a sync and a compaction's
    /// operations queued before the reply). The manager fits its three tries, each waiting a
    /// doubling time-out (1 + 2 + 4 of them), in at most half the term; a reply slower than
    /// its adaptive time-out costs a try, and the commit delay is random.
    fn shortest_live_term(&self) -> Millis {
        let o = &self.opts;
        let net = 2 * (o.latency + o.jitter.min(50));
        let disk = o.commit_delay + 4 * o.disk.sync_ms.max(o.disk.op_ms);
        14 * (net + disk)
    }

    fn renewers(&self) -> Vec<Beliefs> {
        let mut out = Vec::new();
        for &h in &self.holders {
            let host = self.net.node::<HolderHost>(h).expect("holder");
            out.push((
                h,
                host.clock,
                host.manager.leases().copied().collect(),
                host.tap.established.clone(),
            ));
        }
        if let Some(s) = self.service {
            let host = self.net.node::<ServiceHost>(s).expect("service");
            if let Some(svc) = &host.svc {
                out.push((
                    s,
                    host.clock,
                    svc.manager().leases().copied().collect(),
                    host.tap.established.clone(),
                ));
            }
        }
        out
    }

    /// Whether an unsafe clock step (the landlord's forward, the holder's back) happened since
    /// the request behind a belief was sent: such a belief may outlive the lease, by design.
    fn tainted(&self, holder: NodeId, landlord: NodeId, established: Millis) -> bool {
        self.steps.iter().any(|&(n, t, fwd)| {
            t >= established.saturating_sub(1) && ((n == landlord && fwd) || (n == holder && !fwd))
        })
    }

    fn honoured(&self, node: NodeId, cookie: Cookie, now: Millis) -> (Option<Millis>, Millis) {
        if let Some(h) = self.net.node::<LandlordHost>(node) {
            (h.honoured(cookie, now), h.grace())
        } else if let Some(h) = self.net.node::<ServiceHost>(node) {
            (h.honoured(cookie, now), h.grace())
        } else if let Some(h) = self.net.node::<DiscoveryHost>(node) {
            (h.honoured(cookie, now), h.grace())
        } else {
            (None, 0)
        }
    }

    /// (a) for one belief: `None` if the landlord honours the lease at least as long.
    fn belief_problem(
        &self,
        node: NodeId,
        clock: Clock,
        l: &Lease,
        est: Option<Millis>,
    ) -> Option<String> {
        let real = self.net.now();
        let Some(&ln) = self.by_id.get(&l.landlord()) else {
            return Some(format!(
                "node {node} believes in lease {} of unknown landlord {}",
                l.cookie(),
                l.landlord()
            ));
        };
        if self.down.contains(&ln) || self.tainted(node, ln, est.unwrap_or(Millis::MIN)) {
            return None;
        }
        let lc = self.net.clock(ln);
        let lnow = lc.local(real);
        let (hon, grace) = self.honoured(ln, l.cookie(), lnow);
        let fmt_real = |r: Option<Millis>| r.map_or("never".to_string(), |r| r.to_string());
        let key = (node, l.landlord(), l.cookie());
        if let Some(e) = hon {
            if self.seen_ok.borrow().get(&key) == Some(&(l.expiration(), e)) {
                return None;
            }
        }
        let rh = clock.real_at(l.expiration());
        if rh.is_some_and(|rh| rh <= real) {
            return None;
        }
        match hon {
            None => Some(format!(
                "node {node} believes in lease {} of landlord {} until its local {} (real {}), \
                 but the landlord (local {lnow}, real {real}) has dropped it",
                l.cookie(),
                l.landlord(),
                l.expiration(),
                fmt_real(rh)
            )),
            Some(e) => {
                let d = if e == FOREVER { FOREVER } else { e.saturating_add(grace) };
                let rl = if d >= FOREVER - 1 { None } else { lc.real_at(d + 1) };
                let bad = match (rh, rl) {
                    (_, None) => false,
                    (None, Some(_)) => true,
                    (Some(h), Some(l)) => h > l,
                };
                if !bad {
                    self.seen_ok.borrow_mut().insert(key, (l.expiration(), e));
                }
                bad.then(|| {
                    format!(
                        "node {node} believes in lease {} of landlord {} until real {}, but the \
                         landlord honours it only until real {} (its local expiration {e}, grace \
                         {grace} ms)",
                        l.cookie(),
                        l.landlord(),
                        fmt_real(rh),
                        fmt_real(rl)
                    )
                })
            }
        }
    }

    fn check(&mut self, full: bool) {
        let real = self.net.now();
        let (nodes, lids, newly_acked) = {
            let mut c = self.ctx.borrow_mut();
            c.real = real;
            if c.failure.is_some() {
                return;
            }
            let n = std::mem::take(&mut c.touched_nodes);
            let l = std::mem::take(&mut c.touched_landlords);
            let a = std::mem::take(&mut c.newly_acked);
            (n, l, a)
        };
        // A check can only turn false where something changed: a renewer's beliefs, a
        // landlord's leases, or (after an action of the simulator) anything.
        let touched =
            |node: NodeId, l: LandlordId| full || nodes.contains(&node) || lids.contains(&l);
        // (a) no holder believes in a lease its landlord has dropped.
        let mut problem = None;
        for &h in &self.holders {
            let host = self.net.node::<HolderHost>(h).expect("holder");
            for l in host.manager.leases() {
                if !touched(h, l.landlord()) {
                    continue;
                }
                let e = host.tap.established.get(&(l.landlord(), l.cookie())).copied();
                if let Some(p) = self.belief_problem(h, host.clock, l, e) {
                    problem = Some(p);
                    break;
                }
            }
        }
        if let (None, Some(s)) = (&problem, self.service) {
            let host = self.net.node::<ServiceHost>(s).expect("service");
            if let Some(svc) = &host.svc {
                for l in svc.manager().leases() {
                    if !touched(s, l.landlord()) {
                        continue;
                    }
                    let e = host.tap.established.get(&(l.landlord(), l.cookie())).copied();
                    if let Some(p) = self.belief_problem(s, host.clock, l, e) {
                        problem = Some(p);
                        break;
                    }
                }
            }
        }
        if let Some(p) = problem {
            self.ctx.borrow_mut().fail(Check::Belief, p);
            return;
        }
        // (b) every acknowledged grant or renewal is honoured until its promised expiration.
        let ctx = self.ctx.clone();
        let mut done = Vec::new();
        let mut kept = Vec::new();
        let mut failure = None;
        for (&(lid, c), &p) in ctx.borrow().acked.iter() {
            if !(full || lids.contains(&lid) || newly_acked.contains(&(lid, c))) {
                continue;
            }
            let Some(&ln) = self.by_id.get(&lid) else { continue };
            if self.down.contains(&ln) {
                continue;
            }
            let lnow = self.local(ln);
            let meta_op = if let Some(h) = self.net.node::<LandlordHost>(ln) {
                h.meta.last_op.get(&c).copied()
            } else if let Some(h) = self.net.node::<ServiceHost>(ln) {
                h.meta.last_op.get(&c).copied()
            } else if let Some(h) = self.net.node::<DiscoveryHost>(ln) {
                h.meta.last_op.get(&c).copied()
            } else {
                None
            };
            let (hon, grace) = self.honoured(ln, c, lnow);
            // Past once its promised real time has come (the landlord's clock may have stepped
            // back since, so its local time is no guide).
            let past = p.until_real.is_some_and(|t| real >= t)
                || (p.expiration != FOREVER && lnow > p.expiration.saturating_add(grace));
            let superseded = match meta_op {
                None => true,
                Some(op) => op > p.op,
            };
            if meta_op.is_some_and(|op| op < p.op) {
                failure = Some(format!(
                    "landlord {lid} lost operation {} on lease {c} (acknowledged, expiration \
                     {}); it is back at operation {}",
                    p.op,
                    p.expiration,
                    meta_op.unwrap_or(0)
                ));
                break;
            }
            if past || superseded {
                done.push((lid, c));
                continue;
            }
            if let Some(e) = hon {
                if self.kept_ok.get(&(lid, c)) == Some(&(e, p.op)) {
                    continue;
                }
            }
            // Honoured at least until the real time promised (a forward step of the
            // landlord's clock since then shortens every lease, by design).
            let rl = hon.map(|e| {
                if e >= FOREVER - 1 - grace {
                    None
                } else {
                    self.net.clock(ln).real_at(e + grace + 1)
                }
            });
            let ok = match (rl, p.until_real) {
                (None, _) => false,
                (Some(None), _) => true,
                (Some(Some(_)), None) => false,
                (Some(Some(now_until)), Some(promised)) => now_until >= promised,
            };
            if ok {
                if let Some(e) = hon {
                    kept.push(((lid, c), (e, p.op)));
                }
            }
            if !ok && !self.tainted(usize::MAX, ln, p.made) {
                failure = Some(format!(
                    "landlord {lid} (local {lnow}) acknowledged lease {c} until its local {} \
                     (real {:?}, operation {}); now it has {hon:?} (real {:?})",
                    p.expiration,
                    p.until_real,
                    p.op,
                    rl.flatten()
                ));
                break;
            }
        }
        self.kept_ok.extend(kept);
        let mut cm = ctx.borrow_mut();
        for k in done {
            cm.acked.remove(&k);
        }
        if let Some(f) = failure {
            cm.fail(Check::Acknowledged, f);
            return;
        }
        drop(cm);
        // (c) no lease comes back (after clock steps back and restores, and now and then).
        if self.scan_gone || self.steps_done & 511 == 0 {
            self.scan_gone = false;
            let gone: Vec<(LandlordId, Vec<(Cookie, Millis)>)> = self
                .ctx
                .borrow()
                .gone
                .iter()
                .map(|(l, g)| (*l, g.iter().map(|(c, t)| (*c, *t)).collect()))
                .collect();
            for (lid, cookies) in gone {
                let Some(&ln) = self.by_id.get(&lid) else { continue };
                if self.down.contains(&ln) {
                    continue;
                }
                let lnow = self.local(ln);
                for (c, at) in cookies {
                    if let (Some(e), _) = self.honoured(ln, c, lnow) {
                        self.ctx.borrow_mut().fail(
                            Check::ComesBack,
                            format!(
                                "landlord {lid} said lease {c} was gone at {at}; now (local {lnow}) \
                                 it honours it again, until {e}"
                            ),
                        );
                        return;
                    }
                }
            }
        }
        self.check_coord(full, &lids);
    }

    /// Coordination: never two leases of an exclusive resource at a landlord; a careful lock
    /// holder never fenced (unless a clock step the protocol cannot see excuses it).
    fn check_coord(&mut self, full: bool, lids: &[LandlordId]) {
        if self.lockers.is_empty() {
            return;
        }
        for &ln in &self.landlords {
            let Some(h) = self.net.node::<LandlordHost>(ln) else { continue };
            if !(full || lids.contains(&h.id)) {
                continue;
            }
            let Some(ll) = &h.ll else { continue };
            let mut held: BTreeMap<&[u8], usize> = BTreeMap::new();
            for (_, _, r) in ll.iter() {
                if crate::coord::exclusive(r) {
                    *held.entry(r.as_slice()).or_default() += 1;
                }
            }
            if let Some((r, n)) = held.iter().find(|(_, &n)| n > 1) {
                let msg = format!(
                    "landlord {} holds {n} leases of the exclusive resource {}",
                    h.id,
                    String::from_utf8_lossy(r)
                );
                self.ctx.borrow_mut().fail(Check::Coord, msg);
                return;
            }
        }
        let fenced = std::mem::take(&mut self.ctx.borrow_mut().coord.careful_fenced);
        for (node, lid, sent, what) in fenced {
            let ln = self.by_id[&lid];
            if !self.tainted(node, ln, sent) {
                self.ctx.borrow_mut().fail(Check::Coord, what);
                return;
            }
        }
    }
}

/// Helpers on `SimNet` the world needs.
trait NetExt {
    fn nodes_len(&self) -> usize;
    fn landlord_id_of(&self, node: NodeId) -> LandlordId;
}

impl NetExt for SimNet {
    fn nodes_len(&self) -> usize {
        self.node_count()
    }
    fn landlord_id_of(&self, node: NodeId) -> LandlordId {
        if let Some(h) = self.node::<LandlordHost>(node) {
            h.id
        } else if let Some(h) = self.node::<ServiceHost>(node) {
            h.id
        } else {
            LandlordId(0)
        }
    }
}
