from __future__ import annotations

from datetime import timedelta

import pytest

from leasehold import ANY, FOREVER, InvalidArgumentError, Landlord, LeaseDeniedError, Policy


def make(policy: Policy) -> Landlord:
    return Landlord(1, policy, seed=bytes(32))


def test_fixed() -> None:
    ll = make(Policy.fixed(5_000))
    assert ll.grant("r", ANY, 0).duration == 5_000
    assert ll.grant("r", 1_000, 0).duration == 1_000  # never more than asked
    assert ll.grant("r", FOREVER, 0).duration == 5_000


def test_bounded_with_timedelta() -> None:
    ll = make(Policy.bounded(timedelta(minutes=1), timedelta(seconds=30)))
    assert ll.grant("r", ANY, 0).duration == 30_000
    assert ll.grant("r", timedelta(hours=1), 0).duration == 60_000


def test_capacity_denies_and_keeps_renewals() -> None:
    ll = make(Policy.capacity(2, Policy.fixed(1_000)))
    a = ll.grant("a", ANY, 0)
    ll.grant("b", ANY, 0)
    with pytest.raises(LeaseDeniedError) as info:
        ll.grant("c", ANY, 0)
    assert info.value.code == 2 and "capacity" in str(info.value)
    assert ll.renew(a.cookie, ANY, 10) == 1_000  # renewals are not denied for capacity


def test_resource_aware_shortens_as_it_fills() -> None:
    ll = make(Policy.resource_aware(4, 10_000, 2_000))
    durations = [ll.grant(i, ANY, 0).duration for i in range(4)]
    assert durations == sorted(durations, reverse=True) and durations[0] == 10_000
    with pytest.raises(LeaseDeniedError):
        ll.grant("full", ANY, 0)


def test_adaptive_period_grows_with_holders_and_denies_above_max() -> None:
    ll = make(Policy.adaptive(10.0, 100, 500))  # G = 10 renewals/s, L_MIN 100 ms, L_MAX 500 ms
    got = [ll.grant(i, ANY, 0).duration for i in range(5)]
    assert got == [100, 200, 300, 400, 500]
    with pytest.raises(LeaseDeniedError):
        ll.grant("sixth", ANY, 0)


def test_adaptive_from_bandwidth_and_json_round_trip() -> None:
    p = Policy.adaptive_from_bandwidth(1_000.0, 60.0, 40.0, 100, 10_000, grantors=2)
    assert p.kind == "adaptive"
    again = Policy.from_json(p.to_json())
    assert again == p and again != Policy.fixed(1)
    nested = Policy.capacity(3, Policy.bounded(10, 5))
    assert Policy.from_json(nested.to_json()) == nested
    assert "bounded" in repr(nested)


@pytest.mark.parametrize(
    "build",
    [
        lambda: Policy.fixed(0),
        lambda: Policy.fixed(-5),
        lambda: Policy.bounded(10, 20),
        lambda: Policy.resource_aware(0, 10, 5),
        lambda: Policy.resource_aware(3, 5, 10),
        lambda: Policy.adaptive(0.0, 1, 2),
        lambda: Policy.adaptive(float("nan"), 1, 2),
        lambda: Policy.adaptive(1.0, 5, 2),
        lambda: Policy.adaptive(1.0, 1, 2, grantors=0),
        lambda: Policy.adaptive_from_bandwidth(-1.0, 1.0, 1.0, 1, 2),
        lambda: Policy.from_json('{"kind":"fixed","duration":0}'),
    ],
)
def test_bad_settings_are_invalid_argument(build: object) -> None:
    with pytest.raises(InvalidArgumentError):
        build()  # type: ignore[operator]


def test_policy_nesting_is_bounded() -> None:
    p = Policy.fixed(1)
    with pytest.raises(InvalidArgumentError):
        for _ in range(100):
            p = Policy.capacity(1, p)
