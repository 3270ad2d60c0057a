//! The HTTP carrier moves real wire messages between a landlord and a client on loopback.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::policy::Bounded;
use leasehold::{
    Encoding, Landlord, LandlordConfig, LandlordId, Limits, Reply, ReplyBody, Request, RequestBody,
};
use leasehold_examples::http::{Client, Server};

#[test]
fn grant_renew_cancel_over_loopback_http() {
    let landlord: Arc<Mutex<Landlord>> = Arc::new(Mutex::new(Landlord::new(
        LandlordConfig::new(LandlordId(9), [1; 32]),
        Bounded::new(60_000, 10_000).unwrap(),
    )));
    let ll = landlord.clone();
    let server =
        Server::start(move |body, enc| ll.lock().unwrap().handle_bytes(body, enc, 1_000)).unwrap();
    let mut client = Client::new(server.addr(), Duration::from_secs(5));
    for enc in [Encoding::Json, Encoding::Binary] {
        let req = Request {
            id: 1,
            body: RequestBody::Grant { resource: b"r".to_vec(), duration: 5_000 },
        };
        let reply =
            Reply::decode(&client.post(&req.encode(enc), enc).unwrap(), enc, &Limits::default())
                .unwrap();
        let ReplyBody::Granted { cookie, duration } = reply.body else { panic!("{reply:?}") };
        assert_eq!((reply.id, reply.landlord, duration), (1, LandlordId(9), 5_000));
        let req = Request { id: 2, body: RequestBody::Renew { cookie, duration: 7_000 } };
        let reply =
            Reply::decode(&client.post(&req.encode(enc), enc).unwrap(), enc, &Limits::default())
                .unwrap();
        assert_eq!(reply.body, ReplyBody::Renewed { duration: 7_000 });
        let req = Request { id: 3, body: RequestBody::Cancel { cookie } };
        let reply =
            Reply::decode(&client.post(&req.encode(enc), enc).unwrap(), enc, &Limits::default())
                .unwrap();
        assert_eq!(reply.body, ReplyBody::Cancelled);
    }
    assert!(landlord.lock().unwrap().is_empty());
    // Garbage gets an error reply, not a dropped connection.
    let out = client.post(b"\x00garbage", Encoding::Binary).unwrap();
    let reply = Reply::decode(&out, Encoding::Binary, &Limits::default()).unwrap();
    assert!(matches!(reply.body, ReplyBody::Error(ref e) if e.code == 5), "{reply:?}");
}
