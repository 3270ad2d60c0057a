"""Hostile input: wrong types, out-of-range numbers and random bytes give TypeError, ValueError or
a LeaseError, never a crash or pyo3's PanicException."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any, Callable

import pytest

import leasehold
from leasehold import ANY, FOREVER, DecodeError, Encoding, Landlord, Lease, LeaseError, Limits, Policy, Reply, Request

ALLOWED = (TypeError, ValueError, LeaseError)
C = "0" * 31 + "1"

WEIRD: list[Any] = [
    None,
    True,
    -(2**63) - 1,
    2**63,
    2**64,
    2**200,
    -2,
    -(2**63),
    1.5,
    float("nan"),
    float("inf"),
    "",
    "x" * 100_000,
    "\udcff",
    "é" * 32,
    b"",
    b"\xff" * 36,
    [],
    {},
    object(),
    timedelta(days=-1),
    timedelta(days=999_999_999),
]


def call(f: Callable[[], object]) -> None:
    try:
        f()
    except ALLOWED:
        pass
    except BaseException as e:  # noqa: BLE001 - the point is to catch what must never happen
        pytest.fail(f"{type(e).__module__}.{type(e).__name__}: {e}")


@pytest.mark.parametrize("value", WEIRD, ids=lambda v: type(v).__name__)
def test_every_argument_slot_rejects_cleanly(value: Any) -> None:
    ll = Landlord(1, Policy.bounded(FOREVER, 1_000), seed=bytes(32))
    g = ll.grant("r", ANY, 0)
    lease = Lease(1, C, 10)
    calls: list[Callable[[], object]] = [
        lambda: Landlord(value, Policy.fixed(1)),
        lambda: Landlord(1, value),
        lambda: Landlord(1, Policy.fixed(1), seed=value),
        lambda: Landlord(1, Policy.fixed(1), grace=value),
        lambda: Landlord(1, Policy.fixed(1), expiry_budget=value),
        lambda: ll.grant(value, value, 0),
        lambda: ll.grant("r", value, 0),
        lambda: ll.grant("r", 10, value),
        lambda: ll.renew(value, 10, 0),
        lambda: ll.renew(g.cookie, value, 0),
        lambda: ll.renew(g.cookie, 10, value),
        lambda: ll.cancel(value, 0),
        lambda: ll.renew_all(value, 0),
        lambda: ll.renew_all([value], 0),
        lambda: ll.renew_all([(g.cookie, value)], 0),
        lambda: ll.cancel_all(value, 0),
        lambda: ll.cancel_all([value], 0),
        lambda: ll.get(value, 0),
        lambda: ll.lease(g.cookie, value),
        lambda: ll.handle_timeout(value),
        lambda: ll.handle_bytes(value, "binary", 0),
        lambda: ll.handle_bytes(b"", value, 0),
        lambda: ll.handle_request(value, 0),
        lambda: Lease(value, C, 0),
        lambda: Lease(1, value, 0),
        lambda: Lease(1, C, value),
        lambda: Lease(1, C, 0, value),
        lambda: Lease.from_grant(1, C, value, value),
        lambda: Lease.from_json(value, 0),
        lambda: Lease.from_bytes(value, 0),
        lambda: lease.to_json(value),
        lambda: lease.to_bytes(value),
        lambda: lease.remaining(value),
        lambda: lease.can_batch(value),
        lambda: lease.with_serial_format(value),
        lambda: Policy.fixed(value),
        lambda: Policy.bounded(value, value),
        lambda: Policy.capacity(value, Policy.fixed(1)),
        lambda: Policy.resource_aware(value, 10, 1),
        lambda: Policy.adaptive(value, 1, 2, value),
        lambda: Policy.adaptive_from_bandwidth(value, value, value, 1, 2),
        lambda: Policy.from_json(value),
        lambda: Limits(value, value, value),
        lambda: Request.grant(value, value, value),
        lambda: Request.renew(1, value, value),
        lambda: Request.renew_all(1, value),
        lambda: Request.cancel_all(1, value),
        lambda: Request.decode(value),
        lambda: Request.decode(b"", value),
        lambda: Reply.decode(value, "json"),
        lambda: Reply.renewed_all(1, 2, value),
        lambda: Reply.cancelled_all(1, 2, [value]),
        lambda: Reply.failure(1, 2, value),
        lambda: ll.snapshot(value),
        lambda: ll.snapshot(0, value),
        lambda: Landlord.restore(value, Policy.fixed(1), 0),
        lambda: leasehold.RenewalManager(batch_window=value, max_batch=value),
        lambda: leasehold.RenewalManager().renew_for(lease, value, value, 0),
        lambda: leasehold.RenewalManager().handle_failure(value, value, 0),
        lambda: leasehold.LeaseMap(value),
        lambda: leasehold.RenewalService(value),
        lambda: leasehold.RenewalService(1, manager=value),
        lambda: leasehold.RenewalService.restore(value, 0, 1),
        lambda: leasehold.GapTracker().observe(value, value),
        lambda: leasehold.lease_from_reply(value, value),
    ]
    for f in calls:
        call(f)


def test_extreme_times_saturate() -> None:
    ll = Landlord(1, Policy.bounded(FOREVER, FOREVER), seed=bytes(32))
    g2 = ll.grant("r", 5, -(2**63))
    assert g2.expiration == -(2**63) + 5
    g = ll.grant("r", FOREVER - 1, FOREVER - 1)
    assert g.expiration == FOREVER - 1  # saturates, and a finite lease never becomes FOREVER
    # The landlord's time never runs back: a grant at the earliest time counts from the latest.
    assert ll.grant("r", 5, -(2**63)).expiration == FOREVER - 1
    ll.handle_timeout(FOREVER)
    ll.handle_timeout(-(2**63))
    assert Lease(1, C, -(2**63)).remaining(FOREVER) < 0


def test_random_bytes_never_crash_decoders() -> None:
    rng = random.Random(1234)
    ll = Landlord(1, Policy.fixed(1_000), seed=bytes(32))
    valid = [
        Request.grant(1, b"r", 5).encode(),
        Request.renew_all(2, [(C, 1)] * 3).encode(),
        Request.cancel_all(3, [C] * 3).encode("json"),
        Reply.renewed_all(1, 2, [5, leasehold.UnknownLeaseError("x", "")]).encode(),
    ]
    for i in range(3_000):
        base = bytearray(rng.choice(valid))
        mode = i % 3
        if mode == 0:
            data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 64)))
        elif mode == 1:
            for _ in range(rng.randrange(1, 4)):
                base[rng.randrange(len(base))] = rng.getrandbits(8)
            data = bytes(base)
        else:
            data = bytes(base[: rng.randrange(len(base))])
        encodings: list[Encoding] = ["binary", "json"]
        for enc in encodings:
            out = Reply.decode(ll.handle_bytes(data, enc, i), enc)
            assert out.op in ("granted", "renewed", "cancelled", "renewed_all", "cancelled_all", "error")
            call(lambda: Request.decode(data, enc))
            call(lambda: Reply.decode(data, enc))
        call(lambda: Lease.from_bytes(data, 0))
        call(lambda: Lease.from_json(data, 0))


def test_announced_huge_batch_is_refused_without_allocating() -> None:
    # op 5 (cancel_all) announcing 2**32 - 1 cookies, with none present.
    data = b"\x4c\x01\x10" + (1).to_bytes(8, "big") + b"\x05" + b"\xff\xff\xff\xff"
    with pytest.raises(DecodeError):
        Request.decode(data, "binary", Limits(max_batch=2**40))


def test_oversized_input_is_refused() -> None:
    with pytest.raises(DecodeError):
        Request.decode(b"\x00" * (2 << 20))
    with pytest.raises(DecodeError):
        Lease.from_json("{" + " " * 5000 + "}", 0)
    with pytest.raises(DecodeError):
        Policy.from_json("[" * 100_000)
