//! End to end in virtual time: a real landlord and several renewal managers on a simulated
//! network with latency, loss, partitions and skewed clocks, over hours of virtual time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use leasehold::holder::{RenewalEvent, RenewalManager, RenewalManagerConfig};
use leasehold::policy::{Fixed, LeasePolicy, PolicyContext};
use leasehold::simnet::{Clock, Hold, LinkConfig, NodeId, SimNet};
use leasehold::wire::RequestBody;
use leasehold::{Landlord, LandlordConfig, LandlordId, Lease, LeaseError, Millis, ANY, FOREVER};

const SEC: Millis = 1_000;
const MIN: Millis = 60 * SEC;
const HOUR: Millis = 60 * MIN;
const LL: LandlordId = LandlordId(0xa11ce);

fn landlord(policy: impl LeasePolicy + 'static) -> Landlord<Vec<u8>> {
    Landlord::new(LandlordConfig::new(LL, [3; 32]), policy)
}

fn failures(net: &SimNet, h: NodeId) -> Vec<(Millis, Lease, Option<LeaseError>)> {
    net.holder(h)
        .events
        .iter()
        .filter_map(|(t, e)| match e {
            RenewalEvent::RenewalFailed { lease, error, .. } => Some((*t, *lease, error.clone())),
            _ => None,
        })
        .collect()
}

/// Checks that `lease`, which holder `h` believes in, is honoured by the landlord now, and
/// will be for at least as long (in real time) as the holder believes in it.
fn check_belief(net: &SimNet, ll: NodeId, h: NodeId, lease: &Lease) {
    let (lc, lnow) = (net.clock(ll), net.local_now(ll));
    let (hc, hnow) = (net.clock(h), net.local_now(h));
    if lease.is_expired(hnow) {
        return;
    }
    let Some((exp, _)) = net.landlord(ll).landlord.get(lease.cookie(), lnow) else {
        panic!(
            "real {}: holder {h} believes in {:?} until {} (now {hnow}) but the landlord dropped it",
            net.now(),
            lease.cookie(),
            lease.expiration()
        );
    };
    if lease.expiration() == FOREVER {
        assert_eq!(exp, FOREVER);
        return;
    }
    let holder_until = hc.real_at(lease.expiration()).unwrap();
    let landlord_until = if exp == FOREVER { Millis::MAX } else { lc.real_at(exp + 1).unwrap() };
    assert!(
        holder_until <= landlord_until,
        "real {}: holder {h} believes in {:?} until real {holder_until}, landlord only until {landlord_until}",
        net.now(),
        lease.cookie()
    );
}

/// Runs to `until`, checking every belief of every holder whenever it changes (a grant or a
/// renewal: the landlord's side only ever grows in between, or expires, which the real-time
/// comparison already covers), and every belief of every holder every 500 steps.
fn run_checked(net: &mut SimNet, until: Millis, ll: NodeId, holders: &[NodeId]) {
    let mut seen: Vec<(usize, usize)> = holders
        .iter()
        .map(|&h| (net.holder(h).events.len(), net.holder(h).granted.len()))
        .collect();
    let mut steps = 0u64;
    while net.step_until(until) {
        steps += 1;
        for (i, &h) in holders.iter().enumerate() {
            let node = net.holder(h);
            let (e0, g0) = seen[i];
            let mut changed: Vec<Lease> = node.granted[g0..].to_vec();
            for (_, ev) in &node.events[e0..] {
                if let RenewalEvent::Renewed { lease } = ev {
                    changed.push(*lease);
                }
            }
            if steps % 500 == 0 {
                changed.extend(node.manager.leases().copied());
            }
            seen[i] = (node.events.len(), node.granted.len());
            for lease in changed {
                if let Some(now_held) = net.holder(h).manager.lease(&lease) {
                    check_belief(net, ll, h, &now_held);
                }
            }
        }
    }
    net.run_until(until);
}

#[test]
fn leases_never_lapse_while_reachable() {
    let mut net = SimNet::new(1);
    net.set_default_link(LinkConfig { latency: 20, jitter: 60, loss: 0.0 });
    let ll = net.add_landlord(landlord(Fixed::new(2 * MIN).unwrap()), Clock::exact());
    let mut holders = Vec::new();
    for i in 0..4 {
        let h = net.add_holder(
            RenewalManager::new(RenewalManagerConfig::default()),
            Clock::new(i * 7 * MIN, 1.0),
        );
        let node = net.holder_mut(h);
        node.request_grant(LL, b"a".to_vec(), 10 * SEC, Hold::For(FOREVER), 10 * SEC);
        node.request_grant(LL, b"b".to_vec(), MIN, Hold::For(FOREVER), MIN);
        node.request_grant(LL, b"c".to_vec(), ANY, Hold::For(FOREVER), ANY);
        node.request_grant(LL, b"d".to_vec(), 30 * SEC, Hold::For(12 * HOUR), 45 * SEC);
        holders.push(h);
    }
    // Grants go through a clean network; then it loses 1% of messages.
    run_checked(&mut net, 5 * SEC, ll, &holders);
    net.set_default_link(LinkConfig { latency: 20, jitter: 60, loss: 0.01 });
    run_checked(&mut net, 8 * HOUR, ll, &holders);
    for &h in &holders {
        let node = net.holder(h);
        assert_eq!(node.granted.len(), 4, "grants: {:?}", node.grant_errors);
        assert_eq!(node.manager.len(), 4);
        assert!(failures(&net, h).is_empty(), "holder {h}: {:?}", failures(&net, h));
        assert!(node.manager.stats().leases_renewed > 4 * 100);
    }
    assert!(net.landlord(ll).expired.is_empty(), "expired: {:?}", net.landlord(ll).expired);
    assert_eq!(net.landlord(ll).landlord.len(), 16);
    assert!(net.stats().lost > 0, "the network did lose messages");
}

#[test]
fn lossy_network_with_long_leases_still_never_lapses() {
    let mut net = SimNet::new(2);
    net.set_default_link(LinkConfig { latency: 50, jitter: 200, loss: 0.2 });
    let ll = net.add_landlord(landlord(Fixed::new(5 * MIN).unwrap()), Clock::exact());
    let h = net.add_holder(RenewalManager::new(Default::default()), Clock::exact());
    // The grant itself may be lost; ask a few times.
    for _ in 0..5 {
        net.holder_mut(h).request_grant(LL, b"x".to_vec(), 5 * MIN, Hold::For(FOREVER), 5 * MIN);
    }
    run_checked(&mut net, 12 * HOUR, ll, &[h]);
    assert!(!net.holder(h).granted.is_empty());
    assert!(failures(&net, h).is_empty(), "{:?}", failures(&net, h));
    assert!(net.holder(h).manager.stats().timeouts > 0);
    assert_eq!(net.holder(h).manager.len(), net.holder(h).granted.len());
}

#[test]
fn partition_longer_than_the_grant_gives_one_failure_after_the_actual_expiration() {
    let mut net = SimNet::new(3);
    let ll = net.add_landlord(landlord(Fixed::new(30 * SEC).unwrap()), Clock::exact());
    let h = net.add_holder(RenewalManager::new(Default::default()), Clock::new(HOUR, 1.0));
    let other = net.add_holder(RenewalManager::new(Default::default()), Clock::exact());
    net.holder_mut(h).request_grant(LL, b"x".to_vec(), 30 * SEC, Hold::For(FOREVER), 30 * SEC);
    net.holder_mut(other).request_grant(LL, b"y".to_vec(), 30 * SEC, Hold::For(FOREVER), 30 * SEC);
    run_checked(&mut net, 10 * MIN, ll, &[h, other]);
    let lease = net.holder(h).granted[0];
    let before = net.holder(h).manager.lease(&lease).unwrap().expiration();
    assert!(failures(&net, h).is_empty());

    net.partition(h, ll);
    let cut = net.local_now(h);
    run_checked(&mut net, 15 * MIN, ll, &[h, other]);
    net.heal(h, ll);
    run_checked(&mut net, HOUR, ll, &[h, other]);

    let f = failures(&net, h);
    assert_eq!(f.len(), 1, "exactly one failure event: {f:?}");
    let (at, failed, error) = &f[0];
    assert!(
        *at >= failed.expiration(),
        "event at {at}, before the actual expiration {}",
        failed.expiration()
    );
    assert!(failed.expiration() >= before && failed.expiration() <= cut + 30 * SEC);
    assert!(*at - failed.expiration() < SEC, "reported promptly");
    assert!(matches!(error, Some(LeaseError::Indefinite(_))), "last error: {error:?}");
    assert!(net.holder(h).manager.is_empty());
    // After the event, no request names the lease again.
    let after: Vec<Millis> =
        net.holder(h).requests_naming(&lease).into_iter().filter(|t| t > at).collect();
    assert!(after.is_empty(), "requests after the failure: {after:?}");
    // The landlord expired it; the other holder never noticed anything.
    assert_eq!(net.landlord(ll).expired.len(), 1);
    assert!(failures(&net, other).is_empty());
    assert_eq!(net.holder(other).manager.len(), 1);
}

struct Switchable {
    deny: Arc<AtomicBool>,
}

impl LeasePolicy for Switchable {
    fn grant(&mut self, requested: i64, _c: &PolicyContext) -> leasehold::Result<i64> {
        Ok(if requested == ANY { MIN } else { requested.min(MIN) })
    }
    fn renew(&mut self, requested: i64, _e: Millis, c: &PolicyContext) -> leasehold::Result<i64> {
        if self.deny.load(Ordering::SeqCst) {
            Err(LeaseError::LeaseDenied("maintenance".into()))
        } else {
            self.grant(requested, c)
        }
    }
}

#[test]
fn a_denied_renewal_gives_a_failure_event_with_that_error() {
    let deny = Arc::new(AtomicBool::new(false));
    let mut net = SimNet::new(4);
    let ll = net.add_landlord(landlord(Switchable { deny: deny.clone() }), Clock::exact());
    let h = net.add_holder(RenewalManager::new(Default::default()), Clock::exact());
    for _ in 0..3 {
        net.holder_mut(h).request_grant(LL, b"x".to_vec(), MIN, Hold::For(FOREVER), MIN);
    }
    run_checked(&mut net, 30 * MIN, ll, &[h]);
    assert!(failures(&net, h).is_empty());
    deny.store(true, Ordering::SeqCst);
    let when = net.now();
    run_checked(&mut net, 2 * HOUR, ll, &[h]);
    let f = failures(&net, h);
    assert_eq!(f.len(), 3);
    for (at, lease, error) in &f {
        assert_eq!(error, &Some(LeaseError::LeaseDenied("maintenance".into())));
        assert!(*at < lease.expiration(), "definite: reported at once, before the expiration");
        assert!(*at <= when + MIN);
    }
    assert!(net.holder(h).manager.is_empty());
    let last_event = f.iter().map(|x| x.0).max().unwrap();
    assert!(net.holder(h).sent.iter().all(|(t, _)| *t <= last_event));
}

#[test]
fn reached_desired_expiration_gives_its_event_and_no_further_requests() {
    let mut net = SimNet::new(5);
    net.set_default_link(LinkConfig { latency: 30, jitter: 20, loss: 0.0 });
    let ll = net.add_landlord(landlord(Fixed::new(MIN).unwrap()), Clock::exact());
    let cfg = RenewalManagerConfig { max_clock_drift_ppm: 500, ..Default::default() };
    let h = net.add_holder(RenewalManager::new(cfg), Clock::new(-3 * HOUR, 1.0));
    let until = net.local_now(h) + 10 * MIN + 7_777;
    net.holder_mut(h).request_grant(LL, b"x".to_vec(), MIN, Hold::Until(until), MIN);
    run_checked(&mut net, HOUR, ll, &[h]);
    let node = net.holder(h);
    let reached: Vec<_> = node
        .events
        .iter()
        .filter(|(_, e)| matches!(e, RenewalEvent::DesiredExpirationReached { .. }))
        .collect();
    assert_eq!(reached.len(), 1);
    let at = reached[0].0;
    assert!(at <= until && at > until - SEC, "reached at {at}, desired {until}");
    assert!(failures(&net, h).is_empty());
    let lease = node.granted[0];
    let sends = node.requests_naming(&lease);
    assert!(sends.iter().all(|&t| t < at), "requests after the event");
    assert!(
        sends.len() >= 10 && sends.len() <= 14,
        "about one per 52 s over 10 min: {}",
        sends.len()
    );
    // Every renewal asked for at most the remaining desired duration.
    for (t, tx) in &node.sent {
        if let RequestBody::Renew { duration, .. } = tx.request.body {
            assert!(duration <= MIN && duration <= until - t);
        }
    }
    assert!(node.manager.is_empty());
    // The landlord lets it expire at about the desired time.
    assert_eq!(net.landlord(ll).expired.len(), 1);
}

fn k_leases_requests_per_round(max_batch: usize, k: usize) -> (u64, u64, usize) {
    let mut net = SimNet::new(6);
    net.set_default_link(LinkConfig { latency: 15, jitter: 10, loss: 0.0 });
    let ll = net.add_landlord(landlord(Fixed::new(MIN).unwrap()), Clock::exact());
    let cfg = RenewalManagerConfig { max_batch, ..Default::default() };
    let h = net.add_holder(RenewalManager::new(cfg), Clock::exact());
    // Grants trickle in over 20 s.
    for i in 0..k {
        net.holder_mut(h).request_grant(LL, vec![i as u8], MIN, Hold::For(FOREVER), MIN);
        net.run_for(20 * SEC / k as i64);
    }
    run_checked(&mut net, 10 * MIN, ll, &[h]);
    let before = net.holder(h).manager.stats();
    run_checked(&mut net, 2 * HOUR + 10 * MIN, ll, &[h]);
    let after = net.holder(h).manager.stats();
    assert!(failures(&net, h).is_empty());
    assert_eq!(net.holder(h).manager.len(), k);
    let requests = after.renew_requests - before.renew_requests;
    let renewals = after.leases_renewed - before.leases_renewed;
    (requests, renewals, k)
}

#[test]
fn k_leases_of_one_landlord_cost_one_request_per_round() {
    let (requests, renewals, k) = k_leases_requests_per_round(10_000, 40);
    let rounds = renewals / k as u64;
    // 2 hours of 60 s leases renewed with 1/8 left: about 137 rounds.
    assert!((120..=160).contains(&rounds), "rounds {rounds}");
    assert_eq!(requests, rounds, "one request per round, not {k}");
    let (requests, renewals, k) = k_leases_requests_per_round(1, 40);
    assert_eq!(requests, renewals, "without batching: one request per lease per round");
    assert!(requests >= 120 * k as u64);
}

fn skewed_net(drift_ppm: u32, seed: u64) -> (SimNet, NodeId, Vec<NodeId>) {
    let mut net = SimNet::new(seed);
    net.set_default_link(LinkConfig { latency: 40, jitter: 80, loss: 0.0 });
    // Landlord three hours ahead; holders hours behind or ahead, running up to 1% slower
    // or faster than the landlord.
    let ll = net.add_landlord(landlord(Fixed::new(2 * MIN).unwrap()), Clock::new(3 * HOUR, 1.0));
    let cfg = RenewalManagerConfig { max_clock_drift_ppm: drift_ppm, ..Default::default() };
    let mut holders = Vec::new();
    for (offset, rate) in [(-5 * HOUR, 0.99), (7 * HOUR, 1.01), (0, 0.995), (-HOUR, 0.99)] {
        let h = net.add_holder(RenewalManager::new(cfg.clone()), Clock::new(offset, rate));
        for (i, d) in [20 * SEC, 2 * MIN, 90 * SEC].into_iter().enumerate() {
            net.holder_mut(h).request_grant(LL, vec![i as u8], d, Hold::For(FOREVER), d);
        }
        holders.push(h);
    }
    // Grants go through a clean network (they are not retried); then it loses 2% of messages.
    net.run_until(5 * SEC);
    for &h in &holders {
        assert_eq!(net.holder(h).granted.len(), 3);
    }
    net.set_default_link(LOSSY);
    (net, ll, holders)
}

const LOSSY: LinkConfig = LinkConfig { latency: 40, jitter: 80, loss: 0.02 };

#[test]
fn skewed_clocks_never_make_a_holder_believe_in_a_dropped_lease() {
    let (mut net, ll, holders) = skewed_net(10_000, 7);
    run_checked(&mut net, HOUR, ll, &holders);
    // Partitions longer than any grant: holders must give their leases up no later than the
    // landlord drops them.
    for (i, &h) in holders.iter().enumerate() {
        net.partition(h, ll);
        let until = net.now() + 5 * MIN;
        run_checked(&mut net, until, ll, &holders);
        net.heal(h, ll);
        let f = failures(&net, h);
        assert_eq!(f.len(), 3, "holder {i}: {f:?}");
        // The holder asks again, on its own: new leases, renewed for the rest of the run.
        net.set_default_link(LinkConfig { loss: 0.0, ..LOSSY });
        for d in [20 * SEC, 2 * MIN] {
            net.holder_mut(h).request_grant(LL, vec![9], d, Hold::For(FOREVER), d);
        }
        let until = net.now() + 5 * SEC;
        run_checked(&mut net, until, ll, &holders);
        net.set_default_link(LOSSY);
        let until = net.now() + 20 * MIN;
        run_checked(&mut net, until, ll, &holders);
    }
    run_checked(&mut net, 6 * HOUR, ll, &holders);
    for &h in &holders {
        assert_eq!(
            failures(&net, h).len(),
            3,
            "only the partition's failures: {:?}",
            failures(&net, h)
        );
        assert_eq!(net.holder(h).manager.len(), 2);
    }
}

#[test]
fn without_a_drift_margin_a_slow_holder_would_believe_too_long() {
    // The same scenario with no margin: the check above must catch it, or it proves nothing.
    let (mut net, ll, holders) = skewed_net(0, 7);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_checked(&mut net, HOUR, ll, &holders);
    }));
    assert!(caught.is_err(), "a 1% slower holder clock without margin must be caught");
}
