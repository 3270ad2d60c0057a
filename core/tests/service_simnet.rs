//! The renewal service on the simulated network: latency, jitter, loss, partitions and clocks
//! that disagree. Client leases travel to the service in their DURATION serial form, as they
//! would between hosts; the client renews its set lease with its own renewal manager over the
//! wire, like any lease.

use std::any::Any;
use std::collections::VecDeque;

use leasehold::policy::Bounded;
use leasehold::service::{RenewalService, RenewalServiceConfig, SetEvent, SetEventKind, SetId};
use leasehold::simnet::{Actor, Address, Clock, LinkConfig, Message, NodeId, Outgoing, SimNet};
use leasehold::{
    Landlord, LandlordConfig, LandlordId, Lease, Millis, RenewalManager, Transmit, ANY, FOREVER,
};

const SEC: i64 = 1_000;
const MIN: i64 = 60 * SEC;
const HOUR: i64 = 60 * MIN;
const SERVICE: LandlordId = LandlordId(0x5e);

/// A node that runs a renewal service: answers set-lease requests, renews client leases.
struct ServiceNode {
    svc: RenewalService,
    events: Vec<(Millis, SetEvent)>,
    sent: Vec<(Millis, Transmit)>,
    outbox: VecDeque<Outgoing>,
}

impl ServiceNode {
    fn drain(&mut self, now: Millis) {
        while let Some(e) = self.svc.poll_event() {
            self.events.push((now, e));
        }
    }

    /// Local times of the renewal requests that named `lease`.
    fn requests_naming(&self, lease: &Lease) -> Vec<Millis> {
        use leasehold::RequestBody;
        self.sent
            .iter()
            .filter(|(_, t)| {
                t.landlord == lease.landlord()
                    && match &t.request.body {
                        RequestBody::Renew { cookie, .. } => *cookie == lease.cookie(),
                        RequestBody::RenewAll { items } => {
                            items.iter().any(|(c, _)| *c == lease.cookie())
                        }
                        _ => true,
                    }
            })
            .map(|(t, _)| *t)
            .collect()
    }
}

impl Actor for ServiceNode {
    fn poll_timeout(&self) -> Option<Millis> {
        self.svc.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Millis) {
        self.svc.handle_timeout(now);
        self.drain(now);
    }
    fn poll_outgoing(&mut self, now: Millis) -> Option<Outgoing> {
        if let Some(o) = self.outbox.pop_front() {
            return Some(o);
        }
        let t = self.svc.poll_transmit(now)?;
        self.sent.push((now, t.clone()));
        Some(Outgoing { to: Address::Landlord(t.landlord), message: Message::Request(t.request) })
    }
    fn handle_message(&mut self, from: NodeId, message: Message, now: Millis) {
        match message {
            Message::Reply(r) => self.svc.handle_reply(&r, now),
            Message::Request(req) => {
                let reply = self.svc.handle_request(&req, now);
                self.outbox.push_back(Outgoing {
                    to: Address::Node(from),
                    message: Message::Reply(reply),
                });
            }
            Message::Bytes(_) => {}
        }
        self.drain(now);
    }
    fn landlord_id(&self) -> Option<LandlordId> {
        Some(self.svc.id())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

struct Setup {
    net: SimNet,
    service: NodeId,
    landlords: Vec<NodeId>,
    client: NodeId,
    set: SetId,
    set_lease_at_client: Lease,
    leases: Vec<Lease>,
}

fn svc(net: &SimNet, node: NodeId) -> &ServiceNode {
    net.node::<ServiceNode>(node).unwrap()
}

fn svc_mut(net: &mut SimNet, node: NodeId) -> &mut ServiceNode {
    net.node_mut::<ServiceNode>(node).unwrap()
}

/// A service (clock an hour ahead, 50 ppm fast), two landlords, a client that puts `n` leases
/// of each landlord into one set (membership FOREVER) and renews the set lease itself.
fn setup(seed: u64, n: usize, link: LinkConfig) -> Setup {
    let mut net = SimNet::new(seed);
    net.set_default_link(link);
    let mut landlords = Vec::new();
    for id in [1u64, 2] {
        let ll = Landlord::new(
            LandlordConfig::new(LandlordId(id), [id as u8; 32]),
            Bounded::new(5 * MIN, MIN).unwrap(),
        );
        landlords.push(net.add_landlord(ll, Clock::exact()));
    }
    let service = net.add_node(
        Box::new(ServiceNode {
            svc: RenewalService::new(RenewalServiceConfig::new(SERVICE, [5; 32])).unwrap(),
            events: Vec::new(),
            sent: Vec::new(),
            outbox: VecDeque::new(),
        }),
        Clock::new(HOUR, 1.000_05),
    );
    let client =
        net.add_holder(RenewalManager::new(Default::default()), Clock::new(-3 * HOUR, 1.0));

    let s_now = net.local_now(service);
    let c_now = net.local_now(client);
    let (set, set_lease) = svc_mut(&mut net, service).svc.create_set(ANY, s_now).unwrap();
    let _ = svc_mut(&mut net, service)
        .svc
        .set_renewal_failure_listener(set, b"fail".to_vec(), s_now)
        .unwrap();
    // The set lease goes to the client in its DURATION form; the client renews it for ever.
    let set_lease_at_client = Lease::from_json(&set_lease.to_json(s_now), c_now).unwrap();
    net.holder_mut(client).manager.renew_until(set_lease_at_client, FOREVER, ANY, c_now).unwrap();

    let mut leases = Vec::new();
    for &ll in &landlords {
        for _ in 0..n {
            let l_now = net.local_now(ll);
            let node = net.landlord_mut(ll);
            let g = node.landlord.grant(b"resource".to_vec(), 2 * MIN, l_now).unwrap();
            let at_landlord = Lease::new(node.landlord.id(), g.cookie, g.expiration);
            let at_service = Lease::from_json(&at_landlord.to_json(l_now), s_now).unwrap();
            svc_mut(&mut net, service).svc.add(set, at_service, FOREVER, 2 * MIN, s_now).unwrap();
            leases.push(at_landlord);
        }
    }
    Setup { net, service, landlords, client, set, set_lease_at_client, leases }
}

fn alive(net: &SimNet, node: NodeId, lease: &Lease) -> bool {
    net.landlord(node).landlord.get(lease.cookie(), net.local_now(node)).is_some()
}

fn failures(node: &ServiceNode) -> Vec<(Millis, Lease)> {
    node.events
        .iter()
        .filter_map(|(t, e)| match &e.kind {
            SetEventKind::RenewalFailure { lease, .. } => Some((*t, *lease)),
            _ => None,
        })
        .collect()
}

#[test]
fn leases_outlive_their_client_for_hours_on_a_lossy_network() {
    let link = LinkConfig { latency: 20, jitter: 40, loss: 0.05 };
    let mut s = setup(11, 10, link);
    s.net.run_for(6 * HOUR);
    let node = svc(&s.net, s.service);
    for (i, l) in s.leases.iter().enumerate() {
        let ll = s.landlords[i / 10];
        assert!(alive(&s.net, ll, l), "lease {i} alive after 6 h");
    }
    assert!(failures(node).is_empty(), "{:?}", node.events);
    let now = s.net.local_now(s.service);
    assert_eq!(node.svc.leases(s.set, now).unwrap().len(), 20);
    assert!(s.net.stats().lost > 0, "the network did lose messages");
    // The client's manager kept the set lease alive over the same network.
    assert!(s.net.holder(s.client).manager.lease(&s.set_lease_at_client).is_some());
    // Leases of one landlord are renewed together: far fewer requests than lease renewals.
    let renewed = node.svc.manager().stats().leases_renewed;
    let requests = node.svc.manager().stats().renew_requests;
    assert!(requests * 4 < renewed, "{requests} requests for {renewed} renewals");
}

#[test]
fn when_the_client_goes_away_the_set_expires_and_its_leases_lapse() {
    let mut s = setup(12, 5, LinkConfig::default());
    let s_now = s.net.local_now(s.service);
    let reg = svc_mut(&mut s.net, s.service)
        .svc
        .set_expiration_warning_listener(s.set, 10 * MIN, b"wake up".to_vec(), s_now)
        .unwrap();
    s.net.run_for(90 * MIN);
    // The client stops renewing its set lease (it deactivated).
    let _ = s.net.holder_mut(s.client).manager.remove(&s.set_lease_at_client);
    let stop = s.net.local_now(s.service);
    s.net.run_for(3 * HOUR);
    let node = svc(&s.net, s.service);
    assert!(node.svc.sets().is_empty(), "the set expired");
    let warnings: Vec<_> = node.events.iter().filter(|(_, e)| e.event_id == reg.event_id).collect();
    assert!(!warnings.is_empty());
    let (t, last) = warnings.last().unwrap();
    let SetEventKind::ExpirationWarning { expiration, .. } = last.kind else { panic!() };
    assert_eq!(*t, expiration - 10 * MIN, "warned min_warning before the end");
    assert!(expiration > stop && expiration <= stop + HOUR);
    assert_eq!(last.handback, b"wake up");
    for l in &s.leases {
        let ll = s.landlords[(l.landlord().0 - 1) as usize];
        assert!(!alive(&s.net, ll, l));
        let reqs = node.requests_naming(l);
        assert!(reqs.iter().all(|&r| r <= expiration), "no renewal after the set expired");
    }
    assert!(failures(node).is_empty(), "a destroyed set reports nothing");
    assert!(node.svc.manager().is_empty());
}

#[test]
fn a_partitioned_landlord_gives_one_failure_per_lease_after_retries() {
    let mut s = setup(13, 4, LinkConfig { latency: 15, jitter: 10, loss: 0.0 });
    s.net.run_for(10 * MIN);
    let (l1, l2) = (s.landlords[0], s.landlords[1]);
    s.net.partition(s.service, l2);
    s.net.run_for(30 * MIN);
    s.net.heal(s.service, l2);
    s.net.run_for(30 * MIN);
    let node = svc(&s.net, s.service);
    let f = failures(node);
    assert_eq!(f.len(), 4, "{f:?}");
    for (t, lease) in &f {
        assert_eq!(lease.landlord(), LandlordId(2));
        let reqs = node.requests_naming(lease);
        assert!(reqs.len() >= 3, "retried: {reqs:?}");
        assert!(reqs.iter().all(|r| r < t), "nothing after the failure event");
        assert!(*t >= lease.expiration() - SEC, "not before its expiration");
    }
    for l in &s.leases {
        let ll = if l.landlord() == LandlordId(1) { l1 } else { l2 };
        assert_eq!(alive(&s.net, ll, l), l.landlord() == LandlordId(1));
    }
    let now = s.net.local_now(s.service);
    assert_eq!(node.svc.leases(s.set, now).unwrap().len(), 4);
    assert!(node.events.iter().all(|(_, e)| e.handback == b"fail"));
}
