//! LeaseMap: batching rules, renew_all and cancel_all against a real landlord.

use leasehold::holder::{grant_request, lease_from_reply, LeaseMap};
use leasehold::policy::{Fixed, LeasePolicy, PolicyContext};
use leasehold::wire::{Outcome, WireError};
use leasehold::{
    Cookie, Landlord, LandlordConfig, LandlordId, Lease, LeaseError, Millis, Reply, ReplyBody,
    RequestBody, ANY, FOREVER,
};

fn landlord(id: u64) -> Landlord<Vec<u8>> {
    Landlord::new(LandlordConfig::new(LandlordId(id), [id as u8; 32]), Fixed::new(10_000).unwrap())
}

fn grant(ll: &mut Landlord<Vec<u8>>, id: u64, now: Millis) -> Lease {
    let reply = ll.handle_request(&grant_request(id, b"r".to_vec(), 10_000), now + 3);
    lease_from_reply(&reply, now).unwrap()
}

#[test]
fn only_leases_of_one_landlord_and_valid_durations() {
    let mut map = LeaseMap::new();
    assert!(map.is_empty());
    let a = Lease::new(LandlordId(1), Cookie(1), 100);
    let b = Lease::new(LandlordId(1), Cookie(2), 100);
    let other = Lease::new(LandlordId(2), Cookie(3), 100);
    assert!(map.can_contain_key(&other), "an empty unbound map takes any lease");
    map.insert(a, 5_000).unwrap();
    map.insert(b, ANY).unwrap();
    assert_eq!(map.landlord(), Some(LandlordId(1)));
    assert!(map.can_contain_key(&b));
    assert!(!map.can_contain_key(&other));
    assert!(matches!(map.insert(other, 5_000), Err(LeaseError::InvalidArgument(_))));
    assert!(matches!(
        map.insert(Lease::new(LandlordId(1), Cookie(4), 0), -2),
        Err(LeaseError::InvalidArgument(_))
    ));
    map.insert(Lease::new(LandlordId(1), Cookie(5), 0), FOREVER).unwrap();
    assert_eq!(map.len(), 3);
    assert_eq!(map.get(&a), Some((a, 5_000)));
    assert_eq!(map.get(&other), None);
    assert_eq!(map.remove(&other), None);
    assert_eq!(map.remove(&b).map(|x| x.1), Some(ANY));
    assert_eq!(map.iter().map(|(l, _)| l.cookie()).collect::<Vec<_>>(), vec![Cookie(1), Cookie(5)]);
    let bound = LeaseMap::for_landlord(LandlordId(9));
    assert!(!bound.can_contain_key(&a));
}

#[test]
fn renew_all_applies_send_time_plus_grant_and_removes_failures() {
    let mut ll = landlord(1);
    let leases: Vec<Lease> = (0..4).map(|i| grant(&mut ll, i, 0)).collect();
    let mut map = LeaseMap::new();
    for l in &leases {
        map.insert(*l, 8_000).unwrap();
    }
    // One lease is cancelled behind the map's back: its renewal must fail, alone.
    ll.cancel(leases[2].cookie(), 1_000).unwrap();
    let req = map.renew_all_request(77);
    match &req.body {
        RequestBody::RenewAll { items } => assert_eq!(items.len(), 4),
        b => panic!("expected renew_all, got {b:?}"),
    }
    let sent_at = 5_000;
    let reply = ll.handle_request(&req, sent_at + 40);
    let err = map.apply_renew_all(&reply, sent_at).unwrap_err();
    match err {
        LeaseError::LeaseMap(f) => {
            assert_eq!(f.len(), 1);
            assert_eq!(f[0].cookie, leases[2].cookie());
            assert_eq!(f[0].error, LeaseError::UnknownLease);
        }
        e => panic!("expected a lease-map error, got {e:?}"),
    }
    assert_eq!(map.len(), 3);
    assert!(!map.contains(&leases[2]));
    for l in [leases[0], leases[1], leases[3]] {
        assert_eq!(map.get(&l).unwrap().0.expiration(), sent_at + 8_000, "send time + granted");
    }
    // Applying the same reply twice is refused and changes nothing.
    assert!(map.apply_renew_all(&reply, sent_at + 1).is_err());
    assert_eq!(map.get(&leases[0]).unwrap().0.expiration(), sent_at + 8_000);
}

#[test]
fn renew_all_all_good_and_mismatched_replies() {
    let mut ll = landlord(1);
    let mut map = LeaseMap::new();
    for i in 0..3 {
        map.insert(grant(&mut ll, i, 0), FOREVER).unwrap();
    }
    let req = map.renew_all_request(5);
    // A reply with the wrong count is a decode error and changes nothing.
    let short = Reply {
        id: 5,
        landlord: LandlordId(1),
        body: ReplyBody::RenewedAll { results: vec![Outcome::Ok(1)] },
    };
    assert!(matches!(map.apply_renew_all(&short, 0), Err(LeaseError::Decode(_))));
    // Wrong id, wrong landlord: refused.
    let mut reply = ll.handle_request(&req, 100);
    reply.id = 6;
    assert!(matches!(map.apply_renew_all(&reply, 90), Err(LeaseError::InvalidArgument(_))));
    reply.id = 5;
    let mut foreign = reply.clone();
    foreign.landlord = LandlordId(2);
    assert!(matches!(map.apply_renew_all(&foreign, 90), Err(LeaseError::InvalidArgument(_))));
    // The right reply: fixed policy grants 10 s even for FOREVER.
    map.apply_renew_all(&reply, 90).unwrap();
    assert!(map.iter().all(|(l, _)| l.expiration() == 10_090));
}

#[test]
fn a_grant_never_counts_longer_than_asked_and_negative_grants_fail() {
    let mut map = LeaseMap::new();
    let a = Lease::new(LandlordId(1), Cookie(1), 0);
    let b = Lease::new(LandlordId(1), Cookie(2), 0);
    map.insert(a, 1_000).unwrap();
    map.insert(b, 1_000).unwrap();
    let req = map.renew_all_request(1);
    let reply = Reply {
        id: req.id,
        landlord: LandlordId(1),
        body: ReplyBody::RenewedAll { results: vec![Outcome::Ok(50_000), Outcome::Ok(-7)] },
    };
    match map.apply_renew_all(&reply, 10) {
        Err(LeaseError::LeaseMap(f)) => {
            assert_eq!(f.len(), 1);
            assert!(matches!(f[0].error, LeaseError::Decode(_)));
        }
        r => panic!("unexpected {r:?}"),
    }
    assert_eq!(map.get(&a).unwrap().0.expiration(), 1_010);
}

#[test]
fn whole_request_error_changes_nothing() {
    let mut map = LeaseMap::new();
    let a = Lease::new(LandlordId(1), Cookie(1), 42);
    map.insert(a, 1_000).unwrap();
    let req = map.renew_all_request(3);
    let reply = Reply {
        id: req.id,
        landlord: LandlordId(1),
        body: ReplyBody::Error(WireError::from(&LeaseError::LeaseDenied("busy".into()))),
    };
    assert_eq!(map.apply_renew_all(&reply, 10), Err(LeaseError::LeaseDenied("busy".into())));
    assert_eq!(map.get(&a).unwrap().0.expiration(), 42);
}

#[test]
fn renewals_the_landlord_denies_are_reported_per_lease() {
    struct DenyRenewals;
    impl LeasePolicy for DenyRenewals {
        fn grant(&mut self, _r: i64, _c: &PolicyContext) -> leasehold::Result<i64> {
            Ok(1_000)
        }
        fn renew(&mut self, _r: i64, _e: Millis, _c: &PolicyContext) -> leasehold::Result<i64> {
            Err(LeaseError::LeaseDenied("no renewals here".into()))
        }
    }
    let mut ll: Landlord<Vec<u8>> =
        Landlord::new(LandlordConfig::new(LandlordId(4), [4; 32]), DenyRenewals);
    let mut map = LeaseMap::new();
    for i in 0..2 {
        map.insert(grant(&mut ll, i, 0), 1_000).unwrap();
    }
    let req = map.renew_all_request(9);
    let reply = ll.handle_request(&req, 10);
    match map.apply_renew_all(&reply, 10) {
        Err(LeaseError::LeaseMap(f)) => {
            assert_eq!(f.len(), 2);
            assert!(f
                .iter()
                .all(|x| x.error == LeaseError::LeaseDenied("no renewals here".into())));
        }
        r => panic!("unexpected {r:?}"),
    }
    assert!(map.is_empty());
}

#[test]
fn cancel_all_keeps_cancelled_and_removes_failures() {
    let mut ll = landlord(1);
    let leases: Vec<Lease> = (0..3).map(|i| grant(&mut ll, i, 0)).collect();
    let mut map = LeaseMap::new();
    for l in &leases {
        map.insert(*l, 1_000).unwrap();
    }
    ll.cancel(leases[1].cookie(), 5).unwrap();
    let req = map.cancel_all_request(11);
    assert!(matches!(&req.body, RequestBody::CancelAll { cookies } if cookies.len() == 3));
    let reply = ll.handle_request(&req, 10);
    match map.apply_cancel_all(&reply) {
        Err(LeaseError::LeaseMap(f)) => {
            assert_eq!(f.len(), 1);
            assert_eq!(f[0].cookie, leases[1].cookie());
        }
        r => panic!("unexpected {r:?}"),
    }
    // As in Jini: successfully cancelled leases stay in the map.
    assert_eq!(map.len(), 2);
    assert!(ll.is_empty());
    // A renew reply cannot answer a cancel request.
    let req = map.cancel_all_request(12);
    let wrong = Reply {
        id: req.id,
        landlord: LandlordId(1),
        body: ReplyBody::RenewedAll { results: vec![] },
    };
    assert!(matches!(map.apply_cancel_all(&wrong), Err(LeaseError::Decode(_))));
    let reply = ll.handle_request(&req, 20);
    assert!(matches!(map.apply_cancel_all(&reply), Err(LeaseError::LeaseMap(f)) if f.len() == 2));
}
