//! Time arithmetic: FOREVER and ANY keep their Jini values, everything saturates.

use leasehold::time::{self, check_requested, describe, expiration_after, remaining};
use leasehold::{ErrorCode, ANY, FOREVER};
use proptest::prelude::*;

#[test]
fn jini_values() {
    assert_eq!(FOREVER, i64::MAX);
    assert_eq!(ANY, -1);
}

#[test]
fn forever_stays_forever() {
    for now in [i64::MIN, -1, 0, 1, 1_700_000_000_000, FOREVER - 1, FOREVER] {
        assert_eq!(expiration_after(now, FOREVER), FOREVER);
        assert_eq!(remaining(FOREVER, now), FOREVER);
    }
}

#[test]
fn finite_saturates_below_forever() {
    assert_eq!(expiration_after(10, FOREVER - 1), FOREVER - 1);
    assert_eq!(expiration_after(FOREVER - 5, 1_000), FOREVER - 1);
    assert_eq!(expiration_after(i64::MIN, -5), i64::MIN);
    assert_eq!(expiration_after(1_000, 500), 1_500);
    assert_eq!(expiration_after(1_000, 0), 1_000);
    assert_eq!(expiration_after(1_000, -400), 600);
    assert_eq!(remaining(FOREVER - 1, i64::MIN), FOREVER - 1);
    assert_eq!(remaining(i64::MIN, FOREVER - 1), i64::MIN);
    assert_eq!(remaining(1_500, 1_000), 500);
    assert_eq!(remaining(1_000, 1_500), -500);
}

#[test]
fn requested_durations() {
    for ok in [0, 1, 60_000, FOREVER - 1, FOREVER, ANY] {
        assert_eq!(check_requested(ok), Ok(ok), "{ok}");
    }
    for bad in [-2, -1000, i64::MIN] {
        let e = check_requested(bad).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{bad}");
        assert!(e.to_string().contains(&bad.to_string()), "{e}");
    }
}

#[test]
fn descriptions() {
    assert_eq!(describe(FOREVER), "FOREVER");
    assert_eq!(describe(ANY), "ANY");
    assert_eq!(describe(250), "250 ms");
}

/// Any i64, with the edges (FOREVER, ANY, zero, i64::MIN, near-overflow) far more often than
/// uniform sampling would give them.
fn t() -> impl Strategy<Value = i64> {
    prop_oneof![
        3 => any::<i64>(),
        1 => prop_oneof![Just(FOREVER), Just(FOREVER - 1), Just(ANY), Just(0), Just(i64::MIN), Just(i64::MIN + 1)],
        1 => (FOREVER - 100_000)..=FOREVER,
        1 => i64::MIN..(i64::MIN + 100_000),
        2 => -100_000i64..100_000,
    ]
}

proptest! {
    #[test]
    fn expiration_after_never_wraps(now in t(), d in t()) {
        let e = expiration_after(now, d);
        if d == FOREVER {
            prop_assert_eq!(e, FOREVER);
        } else {
            // Finite never becomes FOREVER, and the result is exact when it fits.
            prop_assert!(e < FOREVER);
            match now.checked_add(d) {
                Some(x) if x < FOREVER => prop_assert_eq!(e, x),
                _ => prop_assert!(e == FOREVER - 1 || e == i64::MIN),
            }
            if d >= 0 { prop_assert!(e >= now.min(FOREVER - 1)); } else { prop_assert!(e <= now); }
        }
    }

    #[test]
    fn remaining_never_wraps(exp in t(), now in t()) {
        let r = remaining(exp, now);
        if exp == FOREVER {
            prop_assert_eq!(r, FOREVER);
        } else {
            prop_assert!(r < FOREVER);
            match exp.checked_sub(now) {
                Some(x) if x < FOREVER => prop_assert_eq!(r, x),
                _ => prop_assert!(r == FOREVER - 1 || r == i64::MIN),
            }
            prop_assert_eq!(r < 0, exp < now);
        }
    }

    /// DURATION round trip of an expiration between two clocks: FOREVER exactly, finite stays
    /// finite, and exact whenever nothing saturates.
    #[test]
    fn duration_round_trip_between_clocks(exp in t(), w in t(), r in t()) {
        let left = remaining(exp, w);
        let back = expiration_after(r, left);
        if exp == FOREVER {
            prop_assert_eq!(back, FOREVER);
        } else {
            prop_assert!(back < FOREVER);
            let exact = (exp as i128) - (w as i128) + (r as i128);
            if exact < FOREVER as i128 && exact >= i64::MIN as i128
                && (exp as i128 - w as i128) < FOREVER as i128
                && (exp as i128 - w as i128) >= i64::MIN as i128
            {
                prop_assert_eq!(back as i128, exact);
            }
        }
    }

    #[test]
    fn check_requested_accepts_exactly_the_valid(d in t()) {
        prop_assert_eq!(check_requested(d).is_ok(), d >= 0 || d == ANY);
        let _ = time::describe(d);
    }
}
