//! The lookup discovery service over its wire messages: a client that only has bytes (JSON or
//! binary) registers, manages its sets, renews its lease, and a listener answers events.

mod common;

use leasehold::discovery::wire::{
    DiscoveryReply, DiscoveryReplyBody as Out, DiscoveryRequest, DiscoveryRequestBody as In,
    EventReply, EventReplyBody,
};
use leasehold::discovery::{
    Announcement, DiscoveryConfig, DiscoveryService, Groups, Locator, RegistrarId,
    RemoteDiscoveryEvent,
};
use leasehold::wire::{Reply, ReplyBody, Request, RequestBody, WireError};
use leasehold::{Cookie, Encoding, ErrorCode, LandlordId, Lease, Limits, Millis, ANY};

const SEC: i64 = 1_000;
const ID: LandlordId = LandlordId(0x1d5);

fn loc(s: &str) -> Locator {
    s.parse().unwrap()
}

struct Client {
    enc: Encoding,
    next: u64,
}

impl Client {
    fn call(&mut self, svc: &mut DiscoveryService, body: In, now: Millis) -> Out {
        self.next += 1;
        let bytes = DiscoveryRequest { id: self.next, body }.encode(self.enc);
        let reply = svc.handle_discovery_bytes(&bytes, self.enc, now);
        let r = DiscoveryReply::decode(&reply, self.enc, &Limits::default()).unwrap();
        assert_eq!((r.id, r.landlord), (self.next, ID));
        r.body
    }

    fn lease_call(
        &mut self,
        svc: &mut DiscoveryService,
        body: RequestBody,
        now: Millis,
    ) -> ReplyBody {
        self.next += 1;
        let bytes = Request { id: self.next, body }.encode(self.enc);
        let reply = svc.handle_bytes(&bytes, self.enc, now);
        Reply::decode(&reply, self.enc, &Limits::default()).unwrap().body
    }
}

fn error_code(out: &Out) -> Option<ErrorCode> {
    match out {
        Out::Error(e) => e.error_code(),
        _ => None,
    }
}

/// Registrar `id`'s first announcement, multicast as a datagram.
fn announce(svc: &mut DiscoveryService, id: u128, groups: &[&str], host: &str, now: Millis) {
    let a = common::discovery::announcement(id, groups, host, 1, 30 * SEC);
    svc.handle_datagram(&a.encode().unwrap(), now).unwrap();
}

#[test]
fn a_client_with_only_bytes_does_everything() {
    for enc in [Encoding::Json, Encoding::Binary] {
        let mut svc = DiscoveryService::new(DiscoveryConfig::new(ID, [4; 32])).unwrap();
        let mut c = Client { enc, next: 0 };
        announce(&mut svc, 1, &["a"], "h1:1", 0);
        let out = c.call(
            &mut svc,
            In::Register {
                groups: Groups::of(["a"]),
                locators: vec![loc("h2:1")],
                handback: b"cb".to_vec(),
                duration: ANY,
            },
            0,
        );
        let Out::Registered { registration, cookie, duration, event_id, sequence } = out else {
            panic!("{out:?}")
        };
        assert_eq!((duration, sequence), (30 * 60 * SEC, 0));
        let lease = Lease::from_grant(ID, cookie, 0, duration);
        let id = svc.registration_of(cookie, 0).unwrap();
        assert_eq!(id.0, registration);
        assert_eq!(svc.lease(id, 0).unwrap().expiration(), lease.expiration());
        // The registrar the service knew is discovered at once: an event for the listener.
        let e = svc.poll_event(0).unwrap();
        assert_eq!((e.event_id, e.sequence, e.handback.clone()), (event_id, 1, b"cb".to_vec()));
        let ack = EventReply {
            event_id: e.event_id,
            sequence: e.sequence,
            body: EventReplyBody::Received,
        };
        assert!(svc.handle_event_reply(
            &EventReply::decode(&ack.encode(enc), enc, &Limits::default()).unwrap(),
            0
        ));

        let out = c.call(&mut svc, In::GetGroups { cookie }, 0);
        assert_eq!(out, Out::Groups { groups: Groups::of(["a"]) });
        assert_eq!(
            c.call(&mut svc, In::AddGroups { cookie, groups: vec!["b".into()] }, 0),
            Out::Done
        );
        assert_eq!(
            c.call(&mut svc, In::RemoveGroups { cookie, groups: vec!["a".into()] }, 0),
            Out::Done
        );
        assert_eq!(
            c.call(&mut svc, In::GetGroups { cookie }, 0),
            Out::Groups { groups: Groups::of(["b"]) }
        );
        assert_eq!(c.call(&mut svc, In::SetGroups { cookie, groups: Groups::All }, 0), Out::Done);
        let out = c.call(&mut svc, In::AddGroups { cookie, groups: vec!["c".into()] }, 0);
        assert_eq!(error_code(&out), Some(ErrorCode::InvalidArgument), "no set to add to");
        assert_eq!(
            c.call(&mut svc, In::GetLocators { cookie }, 0),
            Out::Locators { locators: vec![loc("h2:1")] }
        );
        assert_eq!(
            c.call(&mut svc, In::AddLocators { cookie, locators: vec![loc("h3:1")] }, 0),
            Out::Done
        );
        assert_eq!(
            c.call(&mut svc, In::RemoveLocators { cookie, locators: vec![loc("h2:1")] }, 0),
            Out::Done
        );
        assert_eq!(
            c.call(&mut svc, In::SetLocators { cookie, locators: vec![loc("h4:1")] }, 0),
            Out::Done
        );
        assert_eq!(
            c.call(&mut svc, In::GetLocators { cookie }, 0),
            Out::Locators { locators: vec![loc("h4:1")] }
        );
        let Out::Registrars { registrars } = c.call(&mut svc, In::GetRegistrars { cookie }, 0)
        else {
            panic!()
        };
        assert_eq!(registrars.iter().map(|g| g.id).collect::<Vec<_>>(), [RegistrarId(1)]);
        assert_eq!(
            c.call(&mut svc, In::Discard { cookie, registrar: RegistrarId(1) }, 0),
            Out::Done
        );
        assert_eq!(
            c.call(&mut svc, In::GetRegistrars { cookie }, 0),
            Out::Registrars { registrars: vec![] }
        );

        // The lease is renewed and cancelled with the landlord protocol.
        let r = c.lease_call(&mut svc, RequestBody::Renew { cookie, duration: 60 * SEC }, 10 * SEC);
        assert_eq!(r, ReplyBody::Renewed { duration: 60 * SEC });
        assert_eq!(
            c.lease_call(&mut svc, RequestBody::Cancel { cookie }, 10 * SEC),
            ReplyBody::Cancelled
        );
        // Gone: every method answers "no such object" (unknown lease, code 1).
        for body in [
            In::GetGroups { cookie },
            In::SetGroups { cookie, groups: Groups::none() },
            In::GetRegistrars { cookie },
            In::Discard { cookie, registrar: RegistrarId(1) },
        ] {
            assert_eq!(
                error_code(&c.call(&mut svc, body, 10 * SEC)),
                Some(ErrorCode::UnknownLease)
            );
        }
        // A cookie of nothing, a bad duration, bytes that do not decode.
        let out = c.call(&mut svc, In::GetLocators { cookie: Cookie(12345) }, 10 * SEC);
        assert_eq!(error_code(&out), Some(ErrorCode::UnknownLease));
        let out = c.call(
            &mut svc,
            In::Register {
                groups: Groups::none(),
                locators: vec![],
                handback: vec![],
                duration: 0,
            },
            10 * SEC,
        );
        assert_eq!(error_code(&out), Some(ErrorCode::InvalidArgument));
        let reply = svc.handle_discovery_bytes(b"\x4c\x01\x20", enc, 10 * SEC);
        let r = DiscoveryReply::decode(&reply, enc, &Limits::default()).unwrap();
        assert_eq!((r.id, error_code(&r.body)), (0, Some(ErrorCode::Decode)));
        let grant = RequestBody::Grant { resource: vec![], duration: 1 };
        assert!(
            matches!(c.lease_call(&mut svc, grant, 10 * SEC), ReplyBody::Error(e) if e.code == 4)
        );
    }
}

/// One event through the wire to a listener and its answer back.
fn round_trip(
    svc: &mut DiscoveryService,
    enc: Encoding,
    answer: EventReplyBody,
    now: Millis,
) -> (RemoteDiscoveryEvent, bool) {
    let e = svc.poll_event(now).unwrap();
    let got = RemoteDiscoveryEvent::decode(&e.encode(enc), enc, &Limits::default()).unwrap();
    assert_eq!(got, e);
    let reply = EventReply { event_id: got.event_id, sequence: got.sequence, body: answer };
    let back = EventReply::decode(&reply.encode(enc), enc, &Limits::default()).unwrap();
    (e, svc.handle_event_reply(&back, now))
}

#[test]
fn listener_answers_decide_what_happens_to_events() {
    for enc in [Encoding::Json, Encoding::Binary] {
        let mut svc = DiscoveryService::new(DiscoveryConfig::new(ID, [4; 32])).unwrap();
        let r = svc.register(Groups::all(), [], vec![], ANY, 0).unwrap();
        announce(&mut svc, 1, &["a"], "h1:1", 0);
        // An indefinite error: the same event again a second later.
        let busy = EventReplyBody::Error(WireError {
            code: ErrorCode::Indefinite as i32,
            message: "busy".into(),
        });
        let (first, ok) = round_trip(&mut svc, enc, busy, 0);
        assert!(ok);
        assert_eq!(svc.poll_event(SEC - 1), None);
        let (again, ok) = round_trip(&mut svc, enc, EventReplyBody::Received, SEC);
        assert!(ok);
        assert_eq!(again, first);
        // A late answer for it changes nothing.
        let late = EventReply {
            event_id: first.event_id,
            sequence: first.sequence,
            body: EventReplyBody::UnknownEvent,
        };
        assert!(!svc.handle_event_reply(&late, SEC));
        assert_eq!(svc.registrations(), [r.id]);
        // A definite error (any other code): the registration is cancelled.
        announce(&mut svc, 2, &["a"], "h2:1", SEC);
        let bad = EventReplyBody::Error(WireError {
            code: ErrorCode::InvalidArgument as i32,
            message: "no".into(),
        });
        let (_, ok) = round_trip(&mut svc, enc, bad, SEC);
        assert!(ok);
        assert!(svc.registrations().is_empty());
        // And an unknown-event answer does the same.
        let r = svc.register(Groups::all(), [], vec![], ANY, SEC).unwrap();
        let (e, ok) = round_trip(&mut svc, enc, EventReplyBody::UnknownEvent, SEC);
        assert!(ok);
        assert_eq!(e.event_id, r.event.event_id);
        assert!(svc.registrations().is_empty());
    }
}

fn samples() -> &'static [(u8, Vec<u8>)] {
    static SAMPLES: std::sync::OnceLock<Vec<(u8, Vec<u8>)>> = std::sync::OnceLock::new();
    SAMPLES.get_or_init(load_samples)
}

fn load_samples() -> Vec<(u8, Vec<u8>)> {
    let path = format!("{}/tests/vectors/discovery.json", env!("CARGO_MANIFEST_DIR"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let unhex = |h: &str| {
        (0..h.len())
            .step_by(2)
            .map(|k| u8::from_str_radix(&h[k..k + 2], 16).unwrap())
            .collect::<Vec<u8>>()
    };
    let mut out = Vec::new();
    for (kind, key) in [(0u8, "requests"), (1, "replies"), (2, "events"), (3, "event_replies")] {
        for c in v[key].as_array().unwrap() {
            out.push((kind, unhex(c["hex"].as_str().unwrap())));
            out.push((kind + 10, c["json"].as_str().unwrap().as_bytes().to_vec()));
        }
    }
    for c in v["announcements"].as_array().unwrap() {
        out.push((4, unhex(c["hex"].as_str().unwrap())));
    }
    out
}

fn decode_any(kind: u8, bytes: &[u8]) {
    let l = Limits::default();
    let enc = if kind >= 10 { Encoding::Json } else { Encoding::Binary };
    // Whatever the bytes, every decoder answers (and a success re-encodes and decodes the same).
    match kind % 10 {
        0 => {
            if let Ok(m) = DiscoveryRequest::decode(bytes, enc, &l) {
                assert_eq!(DiscoveryRequest::decode(&m.encode(enc), enc, &l).unwrap(), m);
            }
        }
        1 => {
            if let Ok(m) = DiscoveryReply::decode(bytes, enc, &l) {
                assert_eq!(DiscoveryReply::decode(&m.encode(enc), enc, &l).unwrap(), m);
            }
        }
        2 => {
            if let Ok(m) = RemoteDiscoveryEvent::decode(bytes, enc, &l) {
                assert_eq!(RemoteDiscoveryEvent::decode(&m.encode(enc), enc, &l).unwrap(), m);
            }
        }
        3 => {
            if let Ok(m) = EventReply::decode(bytes, enc, &l) {
                assert_eq!(EventReply::decode(&m.encode(enc), enc, &l).unwrap(), m);
            }
        }
        _ => {
            if let Ok(a) = Announcement::decode(bytes) {
                assert_eq!(Announcement::decode(&a.encode().unwrap()).unwrap(), a);
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 2048, ..Default::default() })]

    /// Valid messages with bytes changed, cut or added: never a panic, and whatever decodes
    /// round-trips.
    #[test]
    fn mangled_messages_never_panic(
        pick in 0usize..1000,
        edits in proptest::collection::vec((0usize..2000, proptest::prelude::any::<u8>(), 0u8..3), 1..6),
    ) {
        let all = samples();
        let (kind, mut bytes) = all[pick % all.len()].clone();
        for (at, byte, how) in edits {
            let i = at % (bytes.len() + 1);
            match how {
                0 if i < bytes.len() => bytes[i] = byte,
                1 => bytes.truncate(i),
                _ => bytes.insert(i, byte),
            }
        }
        decode_any(kind, &bytes);
    }

    #[test]
    fn random_bytes_never_panic(kind in 0u8..15, bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
        decode_any(kind, &bytes);
    }
}
