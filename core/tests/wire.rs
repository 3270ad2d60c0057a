//! The wire protocol: every op in both encodings, limits, hostile input.

use leasehold::wire::{Outcome, WireError, WIRE_VERSION};
use leasehold::{
    Cookie, Encoding, ErrorCode, LandlordId, Limits, Reply, ReplyBody, Request, RequestBody, ANY,
    FOREVER,
};
use proptest::prelude::*;

const ENCODINGS: [Encoding; 2] = [Encoding::Json, Encoding::Binary];
const C: Cookie = Cookie(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff);

fn requests() -> Vec<Request> {
    let bodies = vec![
        RequestBody::Grant { resource: b"printer-7".to_vec(), duration: 30_000 },
        RequestBody::Grant { resource: vec![], duration: ANY },
        RequestBody::Grant { resource: vec![0, 255, 16], duration: FOREVER },
        RequestBody::Grant { resource: vec![1], duration: 0 },
        RequestBody::Renew { cookie: C, duration: 60_000 },
        RequestBody::Renew { cookie: Cookie(u128::MAX), duration: ANY },
        RequestBody::Cancel { cookie: C },
        RequestBody::RenewAll { items: vec![] },
        RequestBody::RenewAll { items: vec![(C, 1), (Cookie(2), ANY), (Cookie(3), FOREVER)] },
        RequestBody::CancelAll { cookies: vec![] },
        RequestBody::CancelAll { cookies: vec![C, Cookie(0)] },
    ];
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| Request { id: i as u64 * 1_000_003, body })
        .collect()
}

fn replies() -> Vec<Reply> {
    let unknown = WireError { code: 1, message: String::new() };
    let denied = WireError { code: 2, message: "capacity reached".into() };
    let bodies = vec![
        ReplyBody::Granted { cookie: C, duration: 30_000 },
        ReplyBody::Granted { cookie: C, duration: FOREVER },
        ReplyBody::Renewed { duration: 0 },
        ReplyBody::Cancelled,
        ReplyBody::RenewedAll { results: vec![] },
        ReplyBody::RenewedAll {
            results: vec![
                Outcome::Ok(5),
                Outcome::Err(unknown.clone()),
                Outcome::Err(denied.clone()),
            ],
        },
        ReplyBody::CancelledAll { results: vec![Outcome::Ok(()), Outcome::Err(unknown)] },
        ReplyBody::Error(denied),
        ReplyBody::Error(WireError { code: 4, message: "bad".into() }),
    ];
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| Reply { id: u64::MAX - i as u64, landlord: LandlordId(0xfeed), body })
        .collect()
}

fn lim() -> Limits {
    Limits::default()
}

fn decode_code<T: std::fmt::Debug>(r: leasehold::Result<T>) -> ErrorCode {
    r.expect_err("must not decode").code()
}

#[test]
fn every_op_round_trips_in_both_encodings() {
    for enc in ENCODINGS {
        for r in requests() {
            let bytes = r.encode(enc);
            assert_eq!(Request::decode(&bytes, enc, &lim()).unwrap(), r, "{enc:?} {r:?}");
        }
        for r in replies() {
            let bytes = r.encode(enc);
            assert_eq!(Reply::decode(&bytes, enc, &lim()).unwrap(), r, "{enc:?} {r:?}");
        }
    }
}

#[test]
fn binary_request_by_hand() {
    let r = Request { id: 7, body: RequestBody::Renew { cookie: C, duration: ANY } };
    let mut want = vec![0x4c, WIRE_VERSION, 0x10];
    want.extend_from_slice(&7u64.to_be_bytes());
    want.push(2);
    want.extend_from_slice(&C.0.to_be_bytes());
    want.extend_from_slice(&[0xff; 8]);
    assert_eq!(r.encode(Encoding::Binary), want);
}

#[test]
fn json_forms_by_hand() {
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    let r = Request {
        id: u64::MAX,
        body: RequestBody::RenewAll { items: vec![(Cookie(1), FOREVER), (Cookie(2), ANY)] },
    };
    assert_eq!(
        text(r.encode(Encoding::Json)),
        r#"{"v":1,"id":"18446744073709551615","body":{"op":"renew_all","items":[{"cookie":"00000000000000000000000000000001","duration":"9223372036854775807"},{"cookie":"00000000000000000000000000000002","duration":"-1"}]}}"#
    );
    let g = Request { id: 1, body: RequestBody::Grant { resource: vec![0xab, 0x01], duration: 5 } };
    assert_eq!(
        text(g.encode(Encoding::Json)),
        r#"{"v":1,"id":"1","body":{"op":"grant","resource":"ab01","duration":"5"}}"#
    );
    let rep = Reply {
        id: 2,
        landlord: LandlordId(3),
        body: ReplyBody::CancelledAll {
            results: vec![
                Outcome::Ok(()),
                Outcome::Err(WireError { code: 1, message: String::new() }),
            ],
        },
    };
    assert_eq!(
        text(rep.encode(Encoding::Json)),
        r#"{"v":1,"id":"2","landlord":"0000000000000003","body":{"op":"cancelled_all","results":[{},{"error":{"code":1,"message":""}}]}}"#
    );
    let c = Reply { id: 2, landlord: LandlordId(3), body: ReplyBody::Cancelled };
    assert_eq!(
        text(c.encode(Encoding::Json)),
        r#"{"v":1,"id":"2","landlord":"0000000000000003","body":{"op":"cancelled"}}"#
    );
    let e = Reply {
        id: 2,
        landlord: LandlordId(3),
        body: ReplyBody::Error(WireError { code: 2, message: "no".into() }),
    };
    assert_eq!(
        text(e.encode(Encoding::Json)),
        r#"{"v":1,"id":"2","landlord":"0000000000000003","body":{"op":"error","code":2,"message":"no"}}"#
    );
}

#[test]
fn json_reader_accepts_numbers_case_and_order() {
    let text = br#"{"body":{"duration":-1,"op":"renew","cookie":"00112233445566778899AABBCCDDEEFF"},"id":7,"v":1}"#;
    let r = Request::decode(text, Encoding::Json, &lim()).unwrap();
    assert_eq!(r, Request { id: 7, body: RequestBody::Renew { cookie: C, duration: ANY } });
    let g = br#"{"v":1,"id":"1","body":{"op":"grant","resource":"AB01","duration":"5"}}"#;
    let r = Request::decode(g, Encoding::Json, &lim()).unwrap();
    assert_eq!(r.body, RequestBody::Grant { resource: vec![0xab, 1], duration: 5 });
}

#[test]
fn bad_json_is_a_decode_error() {
    let good = r#"{"v":1,"id":"7","body":{"op":"renew","cookie":"00112233445566778899aabbccddeeff","duration":"60000"}}"#;
    assert!(Request::decode(good.as_bytes(), Encoding::Json, &lim()).is_ok());
    let cases = [
        String::new(),
        "null".into(),
        good[..good.len() - 1].into(),
        format!("{good}{good}"),
        good.replace(r#""v":1"#, r#""v":2"#),
        good.replace(r#""v":1,"#, ""),
        good.replace(r#""id":"7""#, r#""id":"-7""#),
        good.replace(r#""id":"7""#, r#""id":"18446744073709551616""#),
        good.replace(r#""id":"7","#, ""),
        good.replace("renew", "renew_some"),
        good.replace("renew", "renewed"),
        good.replace(r#""op":"renew","#, ""),
        good.replace(r#""v":1,"#, r#""v":1,"extra":true,"#),
        good.replace(r#""op":"renew","#, r#""op":"renew","extra":true,"#),
        good.replace(r#""60000""#, r#""60000.0""#),
        good.replace(r#""60000""#, "60000.0"),
        good.replace(r#""60000""#, r#""9223372036854775808""#),
        good.replace(r#""60000""#, "[]"),
        good.replace("00112233445566778899aabbccddeeff", "xyz"),
        r#"{"v":1,"id":"1","body":{"op":"grant","resource":"abc","duration":"5"}}"#.into(),
        r#"{"v":1,"id":"1","body":{"op":"grant","resource":"zz","duration":"5"}}"#.into(),
        r#"{"v":1,"id":"1","body":{"op":"grant","resource":"é1","duration":"5"}}"#.into(),
        r#"{"v":1,"id":"1","body":{"op":"renew_all","items":[{"cookie":"00112233445566778899aabbccddeeff"}]}}"#.into(),
        r#"{"v":1,"id":"1","body":{"op":"cancel_all","cookies":null}}"#.into(),
        format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
        good.replace(r#""v":1,"#, r#""v":1,"v":1,"#),
        good.replace(r#""op":"renew","#, r#""op":"renew","op":"renew","#),
        good.replace(r#""op":"renew","#, r#""op":"cancel","op":"renew","#),
        good.replace(r#","duration":"60000""#, r#","duration":"60000","duration":"1""#),
    ];
    for text in cases {
        assert_eq!(
            decode_code(Request::decode(text.as_bytes(), Encoding::Json, &lim())),
            ErrorCode::Decode,
            "{text}"
        );
    }
    let bad_replies = [
        r#"{"v":1,"id":"1","landlord":"0000000000000001","body":{"op":"renewed_all","results":[{"duration":"1","error":{"code":1,"message":""}}]}}"#,
        r#"{"v":1,"id":"1","landlord":"0000000000000001","body":{"op":"renewed_all","results":[{}]}}"#,
        r#"{"v":1,"id":"1","landlord":"0000000000000001","body":{"op":"cancelled_all","results":[{"duration":"1"}]}}"#,
        r#"{"v":1,"id":"1","landlord":"0000000000000001","body":{"op":"error","code":1}}"#,
        r#"{"v":1,"id":"1","landlord":"0000000000000001","body":{"op":"error","code":"1","message":""}}"#,
        r#"{"v":1,"id":"1","body":{"op":"cancelled"}}"#,
        r#"{"v":1,"id":"1","landlord":"0000000000000001","body":{"op":"cancel","cookie":"00112233445566778899aabbccddeeff"}}"#,
    ];
    for text in bad_replies {
        assert_eq!(
            decode_code(Reply::decode(text.as_bytes(), Encoding::Json, &lim())),
            ErrorCode::Decode,
            "{text}"
        );
    }
}

#[test]
fn bad_binary_is_a_decode_error() {
    let good = Request { id: 1, body: RequestBody::Cancel { cookie: C } }.encode(Encoding::Binary);
    let with = |i: usize, v: u8| {
        let mut b = good.clone();
        b[i] = v;
        b
    };
    for bytes in [
        vec![],
        with(0, 0),
        with(1, 2),
        with(2, 0x11),
        with(2, 0x01),
        with(11, 0),
        with(11, 9),
        [good.clone(), vec![0]].concat(),
    ] {
        assert_eq!(
            decode_code(Request::decode(&bytes, Encoding::Binary, &lim())),
            ErrorCode::Decode,
            "{bytes:02x?}"
        );
    }
    // Every strict prefix of every message is truncated.
    for enc in ENCODINGS {
        for r in requests() {
            let b = r.encode(enc);
            for n in 0..b.len() {
                assert_eq!(decode_code(Request::decode(&b[..n], enc, &lim())), ErrorCode::Decode);
            }
            // And a request is not a reply.
            assert_eq!(decode_code(Reply::decode(&b, enc, &lim())), ErrorCode::Decode);
        }
        for r in replies() {
            let b = r.encode(enc);
            for n in 0..b.len() {
                assert_eq!(decode_code(Reply::decode(&b[..n], enc, &lim())), ErrorCode::Decode);
            }
            assert_eq!(decode_code(Request::decode(&b, enc, &lim())), ErrorCode::Decode);
        }
    }
    // Bad outcome tag, and an error message that is not UTF-8.
    let mut b = Reply {
        id: 1,
        landlord: LandlordId(1),
        body: ReplyBody::CancelledAll { results: vec![Outcome::Ok(())] },
    }
    .encode(Encoding::Binary);
    *b.last_mut().unwrap() = 2;
    assert_eq!(decode_code(Reply::decode(&b, Encoding::Binary, &lim())), ErrorCode::Decode);
    let mut b = Reply {
        id: 1,
        landlord: LandlordId(1),
        body: ReplyBody::Error(WireError { code: 1, message: "ab".into() }),
    }
    .encode(Encoding::Binary);
    *b.last_mut().unwrap() = 0xff;
    assert_eq!(decode_code(Reply::decode(&b, Encoding::Binary, &lim())), ErrorCode::Decode);
}

/// A message header, then `op`, as the start of a hostile binary request.
fn header(op: u8) -> Vec<u8> {
    let mut b = vec![0x4c, 1, 0x10];
    b.extend_from_slice(&1u64.to_be_bytes());
    b.push(op);
    b
}

#[test]
fn hostile_counts_do_not_allocate() {
    // Counts claiming 2^32 - 1 entries in a 16-byte message: refused before any allocation.
    for op in [4u8, 5] {
        let mut b = header(op);
        b.extend_from_slice(&u32::MAX.to_be_bytes());
        let e = Request::decode(&b, Encoding::Binary, &lim()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Decode);
        assert!(e.to_string().contains("batch"), "{e}");
        // Within max_batch but more than the bytes present: refused as truncated.
        let mut b = header(op);
        b.extend_from_slice(&10_000u32.to_be_bytes());
        let e = Request::decode(&b, Encoding::Binary, &lim()).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
    }
    let mut rep = vec![0x4c, 1, 0x11];
    rep.extend_from_slice(&[0; 16]);
    for op in [4u8, 5] {
        let mut b = rep.clone();
        b.push(op);
        b.extend_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(decode_code(Reply::decode(&b, Encoding::Binary, &lim())), ErrorCode::Decode);
    }
    // A resource or error message claiming 4 GiB.
    let mut b = header(1);
    b.extend_from_slice(&5i64.to_be_bytes());
    b.extend_from_slice(&u32::MAX.to_be_bytes());
    let e = Request::decode(&b, Encoding::Binary, &lim()).unwrap_err();
    assert!(e.to_string().contains("resource"), "{e}");
    let mut b = rep.clone();
    b.push(6);
    b.extend_from_slice(&1i32.to_be_bytes());
    b.extend_from_slice(&u32::MAX.to_be_bytes());
    assert_eq!(decode_code(Reply::decode(&b, Encoding::Binary, &lim())), ErrorCode::Decode);
}

#[test]
fn limits_are_enforced_in_both_encodings() {
    let small = Limits { max_message_bytes: 4096, max_batch: 3, max_resource_bytes: 8 };
    let batch = Request { id: 1, body: RequestBody::CancelAll { cookies: vec![C; 4] } };
    let renew_batch = Request { id: 1, body: RequestBody::RenewAll { items: vec![(C, 1); 4] } };
    let fits = Request { id: 1, body: RequestBody::CancelAll { cookies: vec![C; 3] } };
    let big_res = Request { id: 1, body: RequestBody::Grant { resource: vec![7; 9], duration: 1 } };
    let ok_res = Request { id: 1, body: RequestBody::Grant { resource: vec![7; 8], duration: 1 } };
    let huge = Request { id: 1, body: RequestBody::CancelAll { cookies: vec![C; 3] } };
    let tiny = Limits { max_message_bytes: 20, ..small };
    let reply_batch = Reply {
        id: 1,
        landlord: LandlordId(1),
        body: ReplyBody::CancelledAll { results: vec![Outcome::Ok(()); 4] },
    };
    let renewed_batch = Reply {
        id: 1,
        landlord: LandlordId(1),
        body: ReplyBody::RenewedAll { results: vec![Outcome::Ok(1); 4] },
    };
    for enc in ENCODINGS {
        for r in [&batch, &renew_batch, &big_res] {
            let e = Request::decode(&r.encode(enc), enc, &small).unwrap_err();
            assert_eq!(e.code(), ErrorCode::Decode, "{enc:?} {r:?}");
        }
        for r in [&fits, &ok_res] {
            assert_eq!(&Request::decode(&r.encode(enc), enc, &small).unwrap(), r);
        }
        let e = Request::decode(&huge.encode(enc), enc, &tiny).unwrap_err();
        assert!(e.to_string().contains("more than the 20 allowed"), "{e}");
        for r in [&reply_batch, &renewed_batch] {
            assert_eq!(decode_code(Reply::decode(&r.encode(enc), enc, &small)), ErrorCode::Decode);
        }
    }
}

// ---------- properties ----------

fn t() -> impl Strategy<Value = i64> {
    prop_oneof![
        2 => any::<i64>(),
        1 => prop_oneof![Just(FOREVER), Just(ANY), Just(0), Just(i64::MIN)],
        2 => 0i64..1_000_000,
    ]
}

fn cookie() -> impl Strategy<Value = Cookie> {
    any::<u128>().prop_map(Cookie)
}

fn wire_error() -> impl Strategy<Value = WireError> {
    (any::<i32>(), "\\PC{0,20}").prop_map(|(code, message)| WireError { code, message })
}

fn request() -> impl Strategy<Value = Request> {
    let body = prop_oneof![
        (prop::collection::vec(any::<u8>(), 0..40), t())
            .prop_map(|(resource, duration)| RequestBody::Grant { resource, duration }),
        (cookie(), t()).prop_map(|(cookie, duration)| RequestBody::Renew { cookie, duration }),
        cookie().prop_map(|cookie| RequestBody::Cancel { cookie }),
        prop::collection::vec((cookie(), t()), 0..10)
            .prop_map(|items| RequestBody::RenewAll { items }),
        prop::collection::vec(cookie(), 0..10)
            .prop_map(|cookies| RequestBody::CancelAll { cookies }),
    ];
    (any::<u64>(), body).prop_map(|(id, body)| Request { id, body })
}

fn reply() -> impl Strategy<Value = Reply> {
    let d_outcome = prop_oneof![t().prop_map(Outcome::Ok), wire_error().prop_map(Outcome::Err)];
    let u_outcome = prop_oneof![Just(Outcome::Ok(())), wire_error().prop_map(Outcome::Err)];
    let body = prop_oneof![
        (cookie(), t()).prop_map(|(cookie, duration)| ReplyBody::Granted { cookie, duration }),
        t().prop_map(|duration| ReplyBody::Renewed { duration }),
        Just(ReplyBody::Cancelled),
        prop::collection::vec(d_outcome, 0..10)
            .prop_map(|results| ReplyBody::RenewedAll { results }),
        prop::collection::vec(u_outcome, 0..10)
            .prop_map(|results| ReplyBody::CancelledAll { results }),
        wire_error().prop_map(ReplyBody::Error),
    ];
    (any::<u64>(), any::<u64>(), body).prop_map(|(id, l, body)| Reply {
        id,
        landlord: LandlordId(l),
        body,
    })
}

fn must_be_decode<T>(r: leasehold::Result<T>) -> Result<(), TestCaseError> {
    if let Err(e) = r {
        prop_assert_eq!(e.code(), ErrorCode::Decode);
    }
    Ok(())
}

proptest! {
    #[test]
    fn requests_round_trip(r in request()) {
        for enc in ENCODINGS {
            prop_assert_eq!(Request::decode(&r.encode(enc), enc, &lim()).unwrap(), r.clone());
        }
    }

    #[test]
    fn replies_round_trip(r in reply()) {
        for enc in ENCODINGS {
            prop_assert_eq!(Reply::decode(&r.encode(enc), enc, &lim()).unwrap(), r.clone());
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        for enc in ENCODINGS {
            must_be_decode(Request::decode(&bytes, enc, &lim()))?;
            must_be_decode(Reply::decode(&bytes, enc, &lim()))?;
        }
    }

    /// Arbitrary tails after a valid header reach every op's decoder.
    #[test]
    fn arbitrary_bodies_never_panic(op in 0u8..8, tail in prop::collection::vec(any::<u8>(), 0..120)) {
        let mut req = header(op);
        req.extend_from_slice(&tail);
        must_be_decode(Request::decode(&req, Encoding::Binary, &lim()))?;
        let mut rep = vec![0x4c, 1, 0x11];
        rep.extend_from_slice(&[0; 16]);
        rep.push(op);
        rep.extend_from_slice(&tail);
        must_be_decode(Reply::decode(&rep, Encoding::Binary, &lim()))?;
    }

    #[test]
    fn mutated_messages_never_panic(r in request(), p in reply(), at in any::<usize>(), v in any::<u8>()) {
        for enc in ENCODINGS {
            let mut b = r.encode(enc);
            let i = at % b.len();
            b[i] = v;
            must_be_decode(Request::decode(&b, enc, &lim()))?;
            let mut b = p.encode(enc);
            let i = at % b.len();
            b[i] = v;
            must_be_decode(Reply::decode(&b, enc, &lim()))?;
        }
    }

    #[test]
    fn arbitrary_json_text_never_panics(s in "\\PC{0,200}") {
        must_be_decode(Request::decode(s.as_bytes(), Encoding::Json, &lim()))?;
        must_be_decode(Reply::decode(s.as_bytes(), Encoding::Json, &lim()))?;
    }
}
