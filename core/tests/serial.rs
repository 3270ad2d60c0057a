//! The lease value type and its serial forms (JSON and binary, DURATION and ABSOLUTE).

use std::collections::HashSet;

use leasehold::serial::{LEASE_BINARY_LEN, LEASE_JSON_MAX};
use leasehold::{Cookie, ErrorCode, LandlordId, Lease, SerialFormat, ANY, FOREVER};
use proptest::prelude::*;

const L1: LandlordId = LandlordId(0x0123_4567_89ab_cdef);
const C1: Cookie = Cookie(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff);

fn decode_err(r: leasehold::Result<Lease>) -> String {
    let e = r.expect_err("must not decode");
    assert_eq!(e.code(), ErrorCode::Decode, "{e}");
    e.to_string()
}

// ---------- the value type ----------

#[test]
fn equality_and_hash_by_landlord_and_cookie() {
    let a = Lease::new(L1, C1, 1_000);
    let renewed = Lease::new(L1, C1, 99_000).with_serial_format(SerialFormat::Absolute);
    let other_cookie = Lease::new(L1, Cookie(C1.0 + 1), 1_000);
    let other_landlord = Lease::new(LandlordId(L1.0 + 1), C1, 1_000);
    assert_eq!(a, renewed, "expiration and format do not matter");
    assert_ne!(a, other_cookie);
    assert_ne!(a, other_landlord);
    let set: HashSet<Lease> = [a, renewed, other_cookie, other_landlord].into_iter().collect();
    assert_eq!(set.len(), 3);
    assert!(set.contains(&Lease::new(L1, C1, -5)));
}

#[test]
fn can_batch_exactly_same_landlord() {
    let a = Lease::new(L1, C1, 1_000);
    assert!(a.can_batch(&a));
    assert!(a.can_batch(&Lease::new(L1, Cookie(7), FOREVER)));
    assert!(!a.can_batch(&Lease::new(LandlordId(L1.0 ^ 1), C1, 1_000)));
}

#[test]
fn accessors_and_expiry() {
    let mut l = Lease::new(L1, C1, 1_000);
    assert_eq!((l.landlord(), l.cookie(), l.expiration()), (L1, C1, 1_000));
    assert_eq!(l.serial_format(), SerialFormat::Duration, "DURATION is the default");
    assert!(!l.is_expired(999));
    assert!(l.is_expired(1_000));
    assert_eq!(l.remaining(400), 600);
    l.set_expiration(FOREVER);
    assert!(!l.is_expired(FOREVER));
    assert_eq!(l.remaining(i64::MIN), FOREVER);
    l.set_serial_format(SerialFormat::Absolute);
    assert_eq!(l.serial_format(), SerialFormat::Absolute);
}

#[test]
fn from_grant_counts_from_send_time() {
    let l = Lease::from_grant(L1, C1, 10_000, 30_000);
    assert_eq!(l.expiration(), 40_000);
    assert_eq!(Lease::from_grant(L1, C1, 10_000, FOREVER).expiration(), FOREVER);
    assert_eq!(Lease::from_grant(L1, C1, FOREVER - 10, 30_000).expiration(), FOREVER - 1);
}

#[test]
fn serial_format_numbers() {
    assert_eq!(SerialFormat::from_i32(1), Ok(SerialFormat::Duration));
    assert_eq!(SerialFormat::from_i32(2), Ok(SerialFormat::Absolute));
    for n in [0, 3, -1, i32::MAX] {
        assert_eq!(SerialFormat::from_i32(n).unwrap_err().code(), ErrorCode::InvalidArgument);
    }
}

#[test]
fn ids_in_text() {
    assert_eq!(C1.to_string(), "00112233445566778899aabbccddeeff");
    assert_eq!(L1.to_string(), "0123456789abcdef");
    assert_eq!("00112233445566778899AABBCCDDEEFF".parse::<Cookie>().unwrap(), C1);
    for bad in [
        "",
        "0",
        "+0112233445566778899aabbccddeeff",
        "0g112233445566778899aabbccddeeff",
        " 0112233445566778899aabbccddeeff",
    ] {
        assert_eq!(bad.parse::<Cookie>().unwrap_err().code(), ErrorCode::Decode, "{bad:?}");
    }
    assert_eq!("0123456789abcde".parse::<LandlordId>().unwrap_err().code(), ErrorCode::Decode);
    assert_eq!(format!("{C1:?}"), "Cookie(00112233445566778899aabbccddeeff)");
}

// ---------- exact forms ----------

#[test]
fn binary_layout_by_hand() {
    let l = Lease::new(L1, C1, 10_000);
    let b = l.to_bytes(4_000);
    let mut want = vec![0x4c, 1, 1, 1];
    want.extend_from_slice(&L1.0.to_be_bytes());
    want.extend_from_slice(&C1.0.to_be_bytes());
    want.extend_from_slice(&6_000i64.to_be_bytes());
    assert_eq!(b, want);
    assert_eq!(b.len(), LEASE_BINARY_LEN);
    let abs = l.with_serial_format(SerialFormat::Absolute).to_bytes(4_000);
    assert_eq!(abs[3], 2);
    assert_eq!(&abs[28..], &10_000i64.to_be_bytes());
}

#[test]
fn json_text_by_hand() {
    let l = Lease::new(L1, C1, 10_000);
    assert_eq!(
        l.to_json(4_000),
        r#"{"v":1,"format":"duration","landlord":"0123456789abcdef","cookie":"00112233445566778899aabbccddeeff","duration":"6000"}"#
    );
    assert_eq!(
        l.with_serial_format(SerialFormat::Absolute).to_json(4_000),
        r#"{"v":1,"format":"absolute","landlord":"0123456789abcdef","cookie":"00112233445566778899aabbccddeeff","expiration":"10000"}"#
    );
    assert!(Lease::new(L1, C1, FOREVER)
        .to_json(5)
        .ends_with(r#""duration":"9223372036854775807"}"#));
}

#[test]
fn duration_reads_against_readers_clock() {
    let l = Lease::new(L1, C1, 10_000);
    for now in [-1_000_000, 0, 3_600_000] {
        let j = Lease::from_json(&l.to_json(4_000), now).unwrap();
        let b = Lease::from_bytes(&l.to_bytes(4_000), now).unwrap();
        assert_eq!(j.expiration(), now + 6_000);
        assert_eq!(b.expiration(), now + 6_000);
        assert_eq!(j.serial_format(), SerialFormat::Duration);
    }
    // An expired lease stays expired; -1 is not ANY inside a lease.
    let gone = Lease::new(L1, C1, 999);
    assert_eq!(Lease::from_bytes(&gone.to_bytes(1_000), 50).unwrap().expiration(), 49);
    assert_eq!(Lease::from_json(&gone.to_json(1_000), 50).unwrap().expiration(), 49);
}

#[test]
fn absolute_reads_unchanged() {
    let l = Lease::new(L1, C1, 10_000).with_serial_format(SerialFormat::Absolute);
    for now in [i64::MIN, 0, FOREVER] {
        assert_eq!(Lease::from_bytes(&l.to_bytes(4_000), now).unwrap().expiration(), 10_000);
        let j = Lease::from_json(&l.to_json(4_000), now).unwrap();
        assert_eq!((j.expiration(), j.serial_format()), (10_000, SerialFormat::Absolute));
    }
}

#[test]
fn json_reader_is_lenient_where_harmless() {
    let text = r#" { "cookie" : "00112233445566778899AABBCCDDEEFF", "duration": 6000,
                     "landlord":"0123456789ABCDEF", "format":"duration", "v":1 } "#;
    let l = Lease::from_json(text, 100).unwrap();
    assert_eq!((l.landlord(), l.cookie(), l.expiration()), (L1, C1, 6_100));
    let big = r#"{"v":1,"format":"absolute","landlord":"0123456789abcdef","cookie":"00112233445566778899aabbccddeeff","expiration":9223372036854775807}"#;
    assert_eq!(Lease::from_json(big, 0).unwrap().expiration(), FOREVER);
}

// ---------- what must not decode ----------

const GOOD: &str = r#"{"v":1,"format":"duration","landlord":"0123456789abcdef","cookie":"00112233445566778899aabbccddeeff","duration":"6000"}"#;

#[test]
fn bad_json_is_a_decode_error() {
    let cases: Vec<(&str, String)> = vec![
        ("empty", String::new()),
        ("not json", "lease".into()),
        ("array", "[]".into()),
        ("truncated", GOOD[..GOOD.len() - 2].into()),
        ("trailing", format!("{GOOD} x")),
        ("version 2", GOOD.replace(r#""v":1"#, r#""v":2"#)),
        ("version 0", GOOD.replace(r#""v":1"#, r#""v":0"#)),
        ("version string", GOOD.replace(r#""v":1"#, r#""v":"1""#)),
        ("no version", GOOD.replace(r#""v":1,"#, "")),
        ("format unknown", GOOD.replace("duration\",\"l", "relative\",\"l")),
        ("format upper", GOOD.replace("\"duration\",", "\"DURATION\",")),
        ("format number", GOOD.replace("\"duration\",", "1,")),
        ("unknown field", GOOD.replace(r#""v":1,"#, r#""v":1,"x":0,"#)),
        ("duplicate field", GOOD.replace(r#""v":1,"#, r#""v":1,"v":1,"#)),
        ("duration and expiration", GOOD.replace('}', r#","expiration":"5"}"#)),
        ("duration lease with expiration", GOOD.replace("\"duration\":", "\"expiration\":")),
        ("absolute lease with duration", GOOD.replace("\"duration\",", "\"absolute\",")),
        ("no time", GOOD.replace(r#","duration":"6000""#, "")),
        ("time null", GOOD.replace(r#""6000""#, "null")),
        ("time float", GOOD.replace(r#""6000""#, "6000.5")),
        ("time exponent", GOOD.replace(r#""6000""#, "6e3")),
        ("time overflow", GOOD.replace("6000", "9223372036854775808")),
        ("time overflow number", GOOD.replace(r#""6000""#, "9223372036854775808")),
        ("time plus sign", GOOD.replace("6000", "+6000")),
        ("time spaces", GOOD.replace("6000", " 6000")),
        ("time empty", GOOD.replace("6000", "")),
        ("time hex", GOOD.replace("6000", "0x10")),
        ("cookie short", GOOD.replace("00112233445566778899aabbccddeeff", "0011")),
        (
            "cookie long",
            GOOD.replace("00112233445566778899aabbccddeeff", "00112233445566778899aabbccddeeff00"),
        ),
        (
            "cookie bad hex",
            GOOD.replace("00112233445566778899aabbccddeeff", "0011223344556677889zaabbccddeeff"),
        ),
        ("cookie number", GOOD.replace("\"00112233445566778899aabbccddeeff\"", "5")),
        ("landlord bad hex", GOOD.replace("0123456789abcdef", "0123456789abcdeg")),
        ("landlord non-ascii", GOOD.replace("0123456789abcdef", "0123456789abcdé")),
        ("deep nesting", "[".repeat(200)),
        ("oversized", format!("{}{}", " ".repeat(LEASE_JSON_MAX), GOOD)),
    ];
    for (name, text) in cases {
        let msg = decode_err(Lease::from_json(&text, 0));
        assert!(!msg.is_empty(), "{name}");
    }
}

#[test]
fn bad_binary_is_a_decode_error() {
    let good = Lease::new(L1, C1, 10_000).to_bytes(0);
    assert!(Lease::from_bytes(&good, 0).is_ok());
    let with = |i: usize, v: u8| {
        let mut b = good.clone();
        b[i] = v;
        b
    };
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("magic", with(0, 0x4d)),
        ("version 0", with(1, 0)),
        ("version 2", with(1, 2)),
        ("kind request", with(2, 0x10)),
        ("format 0", with(3, 0)),
        ("format 3", with(3, 3)),
        ("oversized", [good.clone(), vec![0]].concat()),
        ("huge", vec![0x4c; 1 << 16]),
    ];
    for n in 0..good.len() {
        cases.push(("truncated", good[..n].to_vec()));
    }
    for (name, bytes) in cases {
        let msg = decode_err(Lease::from_bytes(&bytes, 0));
        assert!(!msg.is_empty(), "{name}");
    }
}

// ---------- properties ----------

fn t() -> impl Strategy<Value = i64> {
    prop_oneof![
        3 => any::<i64>(),
        1 => prop_oneof![Just(FOREVER), Just(FOREVER - 1), Just(ANY), Just(0), Just(i64::MIN)],
        1 => (FOREVER - 100_000)..=FOREVER,
        1 => i64::MIN..(i64::MIN + 100_000),
        2 => -100_000i64..100_000,
    ]
}

fn lease() -> impl Strategy<Value = Lease> {
    (any::<u64>(), any::<u128>(), t(), any::<bool>()).prop_map(|(l, c, e, abs)| {
        Lease::new(LandlordId(l), Cookie(c), e).with_serial_format(if abs {
            SerialFormat::Absolute
        } else {
            SerialFormat::Duration
        })
    })
}

proptest! {
    #[test]
    fn round_trips_in_both_forms(l in lease(), w in t(), r in t()) {
        let j = Lease::from_json(&l.to_json(w), r).unwrap();
        let b = Lease::from_bytes(&l.to_bytes(w), r).unwrap();
        for x in [j, b] {
            prop_assert_eq!(x, l);
            prop_assert_eq!(x.landlord(), l.landlord());
            prop_assert_eq!(x.serial_format(), l.serial_format());
            // Both forms agree.
            prop_assert_eq!(x.expiration(), j.expiration());
        }
        let e = j.expiration();
        match l.serial_format() {
            SerialFormat::Absolute => prop_assert_eq!(e, l.expiration()),
            SerialFormat::Duration if l.expiration() == FOREVER => prop_assert_eq!(e, FOREVER),
            SerialFormat::Duration => {
                prop_assert!(e < FOREVER, "finite became FOREVER");
                let left = l.expiration() as i128 - w as i128;
                let exact = left + r as i128;
                if left < FOREVER as i128 && left >= i64::MIN as i128
                    && exact < FOREVER as i128 && exact >= i64::MIN as i128 {
                    prop_assert_eq!(e as i128, exact);
                }
            }
        }
        // Read back at the writer's own clock: the same text again (unless the reader saturated).
        let same = Lease::from_json(&l.to_json(w), w).unwrap();
        if same.expiration() == l.expiration() {
            prop_assert_eq!(same.to_json(w), l.to_json(w));
            prop_assert_eq!(same.to_bytes(w), l.to_bytes(w));
        }
    }

    #[test]
    fn forever_survives_any_chain_of_clocks(clocks in prop::collection::vec(t(), 1..8)) {
        let mut l = Lease::new(L1, C1, FOREVER);
        for w in clocks.windows(2) {
            l = Lease::from_bytes(&l.to_bytes(w[0]), w[1]).unwrap();
            l = Lease::from_json(&l.to_json(w[1]), w[0]).unwrap();
        }
        prop_assert_eq!(l.expiration(), FOREVER);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64), now in t()) {
        if let Err(e) = Lease::from_bytes(&bytes, now) {
            prop_assert_eq!(e.code(), ErrorCode::Decode);
        }
        if let Err(e) = Lease::from_json(&String::from_utf8_lossy(&bytes), now) {
            prop_assert_eq!(e.code(), ErrorCode::Decode);
        }
    }

    #[test]
    fn near_valid_bytes_never_panic(l in lease(), at in 0usize..36, v in any::<u8>(), now in t()) {
        let mut b = l.to_bytes(0);
        b[at] = v;
        match Lease::from_bytes(&b, now) {
            Ok(x) => {
                prop_assert!(b[0] == 0x4c && b[1] == 1 && b[2] == 1 && (b[3] == 1 || b[3] == 2));
                prop_assert_eq!(x.cookie().0.to_be_bytes(), <[u8; 16]>::try_from(&b[12..28]).unwrap());
            }
            Err(e) => prop_assert_eq!(e.code(), ErrorCode::Decode),
        }
    }

    #[test]
    fn arbitrary_strings_never_panic(s in "\\PC{0,200}", now in t()) {
        if let Err(e) = Lease::from_json(&s, now) {
            prop_assert_eq!(e.code(), ErrorCode::Decode);
        }
    }

    #[test]
    fn mutated_json_never_panics(l in lease(), at in 0usize..200, c in any::<char>(), now in t()) {
        let mut s = l.to_json(0);
        let at = at % s.len();
        if s.is_char_boundary(at) {
            s.insert(at, c);
            if let Err(e) = Lease::from_json(&s, now) {
                prop_assert_eq!(e.code(), ErrorCode::Decode);
            }
            s.truncate(at);
            prop_assert_eq!(Lease::from_json(&s, now).unwrap_err().code(), ErrorCode::Decode);
        }
    }
}
