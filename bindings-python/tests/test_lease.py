from __future__ import annotations

import pytest

import leasehold
from leasehold import ABSOLUTE, ANY, DURATION, FOREVER, Lease, SerialFormat

COOKIE = "00112233445566778899aabbccddeeff"


def test_constants() -> None:
    assert FOREVER == 2**63 - 1
    assert ANY == -1
    assert (DURATION, ABSOLUTE) == (1, 2)
    assert SerialFormat.DURATION == DURATION and SerialFormat.ABSOLUTE == ABSOLUTE


def test_lease_fields_and_equality() -> None:
    a = Lease(1, COOKIE, 10_000)
    b = Lease(1, COOKIE.upper(), 99_999, SerialFormat.ABSOLUTE)
    assert a.landlord == 1 and a.cookie == COOKIE and a.expiration == 10_000
    assert a.serial_format == DURATION and b.serial_format == ABSOLUTE
    assert a == b and hash(a) == hash(b)  # same landlord and cookie: the same lease
    assert a != Lease(2, COOKIE, 10_000)
    assert a != "not a lease"
    assert a.can_batch(Lease(1, "f" * 32, 0)) and not a.can_batch(Lease(2, COOKIE, 0))
    assert {a, b} == {a}
    assert "Lease(landlord=1" in repr(a)


def test_remaining_and_expiry() -> None:
    lease = Lease(1, COOKIE, 10_000)
    assert lease.remaining(4_000) == 6_000
    assert lease.remaining(12_000) == -2_000
    assert not lease.is_expired(9_999) and lease.is_expired(10_000)
    forever = Lease(1, COOKIE, FOREVER)
    assert forever.remaining(10**15) == FOREVER and not forever.is_expired(FOREVER - 1)


def test_from_grant_counts_from_send_time_and_saturates() -> None:
    assert Lease.from_grant(1, COOKIE, 1_000, 5_000).expiration == 6_000
    assert Lease.from_grant(1, COOKIE, 10**18, FOREVER).expiration == FOREVER
    assert Lease.from_grant(1, COOKIE, FOREVER - 5, 100).expiration == FOREVER - 1  # finite stays finite


def test_json_duration_round_trip_across_clocks() -> None:
    lease = Lease(1, COOKIE, 10_000)
    text = lease.to_json(4_000)
    assert text == '{"v":1,"format":"duration","landlord":"0000000000000001","cookie":"%s","duration":"6000"}' % COOKIE
    back = Lease.from_json(text, 1_000_000)  # a reader whose clock is far ahead
    assert back == lease and back.expiration == 1_006_000
    assert Lease.from_json(text.encode(), 0).expiration == 6_000


def test_json_absolute_and_binary() -> None:
    lease = Lease(3, COOKIE, 1_700_000_000_000, "absolute")
    text = lease.to_json(0)
    assert '"format":"absolute"' in text and '"expiration":"1700000000000"' in text
    assert Lease.from_json(text, 5).expiration == 1_700_000_000_000
    data = lease.to_bytes(0)
    assert len(data) == leasehold.LEASE_BINARY_LEN and data[:4] == b"\x4c\x01\x01\x02"
    assert Lease.from_bytes(data, 123).expiration == 1_700_000_000_000
    assert Lease.from_bytes(bytearray(data), 0) == lease
    assert Lease.from_bytes(memoryview(data), 0) == lease


def test_forever_survives_serialization() -> None:
    lease = Lease(1, COOKIE, FOREVER)
    assert Lease.from_json(lease.to_json(123), 10**12).expiration == FOREVER
    assert Lease.from_bytes(lease.to_bytes(123), 10**12).expiration == FOREVER


def test_with_methods_return_copies() -> None:
    lease = Lease(1, COOKIE, 10)
    assert lease.with_serial_format(ABSOLUTE).serial_format == ABSOLUTE
    assert lease.serial_format == DURATION
    assert lease.with_expiration(99).expiration == 99 and lease.expiration == 10


@pytest.mark.parametrize("fmt", [0, 3, -1, "sideways", 2**70])
def test_bad_serial_format_is_value_error(fmt: object) -> None:
    with pytest.raises(ValueError):
        Lease(1, COOKIE, 0, fmt)  # type: ignore[arg-type]
