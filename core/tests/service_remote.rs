//! A renewal service reached over a network (`service::wire`, `service::remote`): set messages,
//! client leases of landlords that share an id in two clusters, routing, events as messages,
//! and the locators' journal and snapshots.

use leasehold::policy::Bounded;
use leasehold::service::wire::{
    ClientLease, SetEventBody, SetEventMessage, SetEventType, SetReply, SetReplyBody, SetRequest,
    SetRequestBody,
};
use leasehold::service::{RenewalService, RenewalServiceConfig, ALIAS_BASE};
use leasehold::wire::Limits;
use leasehold::{Cookie, ErrorCode, Landlord, LandlordConfig, LandlordId, Lease, Millis, FOREVER};

const SEC: i64 = 1_000;
const MIN: i64 = 60 * SEC;
const SERVICE: LandlordId = LandlordId(3);
const A: &str = "http://a.example:7420";
const B: &str = "http://b.example:7420";

/// Two clusters, each with a landlord 1 (granting one-minute leases), and a journaled service.
struct World {
    now: Millis,
    svc: RenewalService,
    a: Landlord,
    b: Landlord,
    events: Vec<SetEventMessage>,
    urls: Vec<Option<String>>,
}

fn landlord(seed: u8) -> Landlord {
    Landlord::new(LandlordConfig::new(LandlordId(1), [seed; 32]), Bounded::new(MIN, MIN).unwrap())
}

impl World {
    fn new() -> World {
        let mut svc = RenewalService::new(RenewalServiceConfig::new(SERVICE, [9; 32])).unwrap();
        svc.enable_journal();
        World { now: 0, svc, a: landlord(1), b: landlord(2), events: vec![], urls: vec![] }
    }

    fn ask(&mut self, body: SetRequestBody) -> SetReplyBody {
        // Through the JSON form, as a network host does.
        let req = SetRequest::from_json(&SetRequest { id: 7, body }.to_json(), &Limits::default())
            .unwrap();
        let reply = self.svc.handle_set_request(&req, self.now);
        assert_eq!((reply.id, reply.landlord), (7, SERVICE));
        SetReply::from_json(&reply.to_json(), &Limits::default()).unwrap().body
    }

    /// Runs the service and both landlords until `until`, carrying requests by route.
    fn run(&mut self, until: Millis) {
        while let Some(t) = self.svc.poll_timeout() {
            if t > until {
                break;
            }
            self.now = self.now.max(t);
            self.svc.handle_timeout(self.now);
            self.a.handle_timeout(self.now);
            self.b.handle_timeout(self.now);
            while let Some(tx) = self.svc.poll_transmit(self.now) {
                let route = self.svc.route(tx.landlord).expect("every alias has a route");
                assert_eq!(route.landlord, LandlordId(1));
                let ll = if route.urls == [A] { &mut self.a } else { &mut self.b };
                let reply = ll.handle_request(&tx.request, self.now);
                assert_eq!(reply.landlord, LandlordId(1), "the landlord names its own id");
                self.svc.handle_routed_reply(tx.landlord, reply, self.now);
            }
            while let Some(e) = self.svc.poll_event() {
                let (url, msg) = self.svc.event_message(&e, self.now);
                let back = SetEventMessage::from_json(&msg.to_json(), &Limits::default()).unwrap();
                assert_eq!(back, msg);
                self.events.push(msg);
                self.urls.push(url);
            }
        }
        self.now = self.now.max(until);
    }
}

fn client(landlord: &Landlord, cookie: Cookie, remaining: i64, url: &str) -> ClientLease {
    ClientLease {
        landlord: landlord.id(),
        cookie,
        remaining,
        urls: vec![format!("{url}/")],
        membership: None,
        renew: None,
    }
}

#[test]
fn landlords_sharing_an_id_in_two_clusters_are_renewed_each_at_its_own_urls() {
    let mut w = World::new();
    let SetReplyBody::SetCreated { set, cookie: set_cookie, duration } =
        w.ask(SetRequestBody::CreateSet { duration: 30 * MIN })
    else {
        panic!("no set")
    };
    assert_eq!((set, duration), (1, 30 * MIN));
    let ga = w.a.grant(b"x".to_vec(), MIN, 0).unwrap();
    let gb = w.b.grant(b"y".to_vec(), MIN, 0).unwrap();
    let leases = [client(&w.a, ga.cookie, MIN, A), client(&w.b, gb.cookie, MIN, B)];
    for lease in leases {
        let r =
            w.ask(SetRequestBody::Add { set: set_cookie, lease, membership: 20 * MIN, renew: MIN });
        assert_eq!(r, SetReplyBody::Done);
    }
    let r = w.ask(SetRequestBody::Listen {
        set: set_cookie,
        event: SetEventType::RenewalFailure,
        min_warning: 0,
        url: "http://me.example/events".into(),
        handback: b"hb".to_vec(),
    });
    assert!(matches!(r, SetReplyBody::Registered { .. }), "{r:?}");
    // Two aliases, one per cluster, each with its route.
    let locs: Vec<_> = w.svc.locators().map(|(l, _)| l).collect();
    assert_eq!(locs, [LandlordId(ALIAS_BASE), LandlordId(ALIAS_BASE + 1)]);
    w.run(10 * MIN);
    assert!(w.a.get(ga.cookie, w.now).is_some() && w.b.get(gb.cookie, w.now).is_some());
    let SetReplyBody::Leases { leases } = w.ask(SetRequestBody::Leases { set: set_cookie }) else {
        panic!()
    };
    assert_eq!(leases.len(), 2);
    for l in &leases {
        assert_eq!(l.landlord, LandlordId(1), "the real id goes out again");
        assert!(l.urls == [A] || l.urls == [B], "{:?}", l.urls);
        assert!(l.remaining > 0 && l.remaining <= MIN);
        assert_eq!((l.membership, l.renew), (Some(10 * MIN), Some(MIN)));
    }
    // A lease cancelled at its landlord: one failure event, naming it as the client does.
    w.b.cancel(gb.cookie, w.now).unwrap();
    w.run(12 * MIN);
    assert_eq!(w.events.len(), 1, "{:?}", w.events);
    assert_eq!(w.urls, [Some("http://me.example/events".to_string())]);
    let e = &w.events[0];
    assert_eq!((e.service, e.set, e.handback.as_slice()), (SERVICE, 1, b"hb".as_slice()));
    let SetEventBody::RenewalFailure { lease, error } = &e.body else { panic!("{e:?}") };
    assert_eq!(
        (lease.landlord, lease.cookie, lease.urls.as_slice()),
        (LandlordId(1), gb.cookie, [B.to_string()].as_slice())
    );
    assert_eq!(error.as_ref().map(|e| e.code), Some(ErrorCode::UnknownLease as i32));
    let message = &error.as_ref().unwrap().message;
    assert!(message.contains(B) && message.contains("unknown_lease"), "{message}");
    // Removing the other one by its landlord, cookie and URLs (as given, trailing / or not).
    let r = w.ask(SetRequestBody::Remove {
        set: set_cookie,
        landlord: LandlordId(1),
        cookie: ga.cookie,
        urls: vec![A.into()],
    });
    let SetReplyBody::Removed { lease: Some(l) } = r else { panic!("{r:?}") };
    assert_eq!((l.landlord, l.cookie), (LandlordId(1), ga.cookie));
    // Unknown set, bad URLs: error replies.
    let r = w.ask(SetRequestBody::Leases { set: Cookie(5) });
    assert!(matches!(r, SetReplyBody::Error(ref e) if e.code == ErrorCode::UnknownLease as i32));
    let mut bad = client(&w.a, ga.cookie, MIN, A);
    bad.urls = vec!["ftp://x".into()];
    let r = w.ask(SetRequestBody::Add { set: set_cookie, lease: bad, membership: MIN, renew: MIN });
    assert!(matches!(r, SetReplyBody::Error(ref e) if e.code == ErrorCode::InvalidArgument as i32));
}

#[test]
fn locators_survive_the_journal_and_both_snapshot_forms() {
    let mut w = World::new();
    let mut snapshot = Vec::new();
    w.svc.snapshot_bytes(&mut snapshot);
    let SetReplyBody::SetCreated { cookie: set, .. } =
        w.ask(SetRequestBody::CreateSet { duration: 30 * MIN })
    else {
        panic!()
    };
    let g = w.a.grant(b"x".to_vec(), MIN, 0).unwrap();
    w.ask(SetRequestBody::Add {
        set,
        lease: client(&w.a, g.cookie, MIN, A),
        membership: FOREVER,
        renew: MIN,
    });
    w.run(3 * MIN);
    let mut log = Vec::new();
    w.svc.take_journal(&mut log);
    // Snapshot before the locator, log after it.
    let (back, _) = RenewalService::recover(&snapshot, &[&log], w.now).unwrap();
    assert_eq!(back.route(LandlordId(ALIAS_BASE)), w.svc.route(LandlordId(ALIAS_BASE)));
    assert_eq!(back.route(LandlordId(ALIAS_BASE)).unwrap().urls, [A]);
    // A snapshot holding it, binary and JSON.
    let mut snap2 = Vec::new();
    w.svc.snapshot_bytes(&mut snap2);
    let (back, _) = RenewalService::recover(&snap2, &[], w.now).unwrap();
    assert_eq!(back.locators().count(), 1);
    let json = w.svc.snapshot(w.now).to_json();
    assert!(json.contains("\"locators\""), "{json}");
    let s = leasehold::service::ServiceSnapshot::from_json(&json).unwrap();
    let mut config = RenewalServiceConfig::new(SERVICE, [9; 32]);
    config.restore_jump = 0;
    let back = RenewalService::restore(config, s, w.now).unwrap();
    assert_eq!(back.route(LandlordId(ALIAS_BASE)).unwrap().landlord, LandlordId(1));
    // The same landlord added again finds its alias; no second locator.
    let mut back = back;
    let g2 = w.a.grant(b"z".to_vec(), MIN, w.now).unwrap();
    let req = SetRequest {
        id: 1,
        body: SetRequestBody::Add {
            set,
            lease: client(&w.a, g2.cookie, MIN, A),
            membership: FOREVER,
            renew: MIN,
        },
    };
    assert_eq!(back.handle_set_request(&req, w.now).body, SetReplyBody::Done);
    assert_eq!(back.locators().count(), 1);
    let _ = Lease::new(LandlordId(1), g2.cookie, 0);
}

#[test]
fn set_messages_refuse_what_they_should() {
    let limits = Limits::default();
    for bad in [
        r#"{"v":1,"id":"1","body":{"op":"create_set","duration":"1000","x":1}}"#,
        r#"{"v":2,"id":"1","body":{"op":"create_set","duration":"1000"}}"#,
        r#"{"v":1,"id":"1","body":{"op":"grant"}}"#,
        r#"{"v":1,"id":"1","body":{"op":"leases","set":"zz"}}"#,
    ] {
        let e = SetRequest::from_json(bad.as_bytes(), &limits).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Decode, "{bad}");
    }
    let text = r#"{"v":1,"id":"9","body":{"op":"create_set","duration":"-1"}}"#;
    let r = SetRequest::from_json(text.as_bytes(), &limits).unwrap();
    assert_eq!(r.body, SetRequestBody::CreateSet { duration: -1 });
    assert_eq!(r.to_json(), text.as_bytes());
}
