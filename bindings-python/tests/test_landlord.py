from __future__ import annotations

import threading
from typing import List, Union
from datetime import timedelta

import pytest

import leasehold
from leasehold import ANY, FOREVER, Expired, Landlord, LeaseError, Policy, UnknownLeaseError


def test_grant_renew_cancel(landlord: Landlord) -> None:
    resource = {"printer": "lobby"}
    g = landlord.grant(resource, 10_000, 1_000)
    assert len(g.cookie) == 32 and g.duration == 10_000 and g.expiration == 11_000
    assert landlord.get(g.cookie, 5_000) == (11_000, resource)
    assert landlord.renew(g.cookie, timedelta(seconds=20), 5_000) == 20_000
    lease = landlord.lease(g.cookie, 5_000)
    assert lease is not None and lease.expiration == 25_000 and lease.landlord == 7
    assert landlord.cancel(g.cookie, 6_000) is resource
    assert len(landlord) == 0
    with pytest.raises(UnknownLeaseError) as info:
        landlord.renew(g.cookie, ANY, 7_000)
    assert info.value.code == leasehold.ErrorCode.UNKNOWN_LEASE and info.value.definite


def test_same_seed_same_cookies() -> None:
    def cookies() -> list[str]:
        ll = Landlord(1, Policy.fixed(10), seed=b"\x05" * 32)
        return [ll.grant(i, ANY, 0).cookie for i in range(3)]

    assert cookies() == cookies()
    unseeded = Landlord(1, Policy.fixed(10))
    assert unseeded.grant("x", ANY, 0).cookie not in cookies()


def test_expiry_is_polled_not_scanned() -> None:
    landlord = Landlord(7, Policy.bounded(FOREVER, 30_000), seed=bytes(32))
    a = landlord.grant("a", 1_000, 0)
    b = landlord.grant("b", 2_000, 0)
    landlord.grant("forever", FOREVER, 0)

    def run_until(now: int) -> list[Expired]:
        out: list[Expired] = []
        while True:
            t = landlord.poll_timeout()
            if t is None or t > now:
                return out
            landlord.handle_timeout(t)
            out.extend(landlord.drain_expired())

    t = landlord.poll_timeout()
    assert t is not None and t <= 1_001  # the host's timer never fires too late
    assert run_until(1_000) == [] and landlord.poll_expired() is None
    first = run_until(1_001)
    assert [(e.cookie, e.expiration, e.resource) for e in first] == [(a.cookie, 1_000, "a")]
    assert "Expired(" in repr(first[0])
    assert [e.cookie for e in run_until(10**12)] == [b.cookie]
    assert landlord.poll_timeout() is None and len(landlord) == 1


def test_grace_honours_late_renewals() -> None:
    ll = Landlord(1, Policy.fixed(1_000), seed=bytes(32), grace=500)
    g = ll.grant("r", ANY, 0)
    assert ll.grace == 500
    assert ll.renew(g.cookie, ANY, 1_400) == 1_000  # late, within grace
    with pytest.raises(UnknownLeaseError):
        ll.renew(g.cookie, ANY, 3_000)


def test_expiry_budget_limits_one_call() -> None:
    ll = Landlord(1, Policy.fixed(10), seed=bytes(32), expiry_budget=2)
    for i in range(5):
        ll.grant(i, ANY, 0)
    ll.handle_timeout(100)
    first = ll.drain_expired()
    assert 0 < len(first) <= 2  # at most the budget per call
    got = len(first)
    for _ in range(20):
        t = ll.poll_timeout()
        if t is None:
            break
        assert t <= 100  # a backlog asks to be called again at once
        ll.handle_timeout(100)
        got += len(ll.drain_expired())
    assert got == 5 and len(ll) == 0


def test_batches_report_per_lease(landlord: Landlord) -> None:
    a = landlord.grant("a", 1_000, 0)
    b = landlord.grant("b", 1_000, 0)
    missing = "f" * 32
    results = landlord.renew_all([(a.cookie, 5_000), (missing, 5_000), (b.cookie, -7)], 10)
    assert results[0] == 5_000
    assert isinstance(results[1], UnknownLeaseError)
    assert isinstance(results[2], ValueError) and isinstance(results[2], LeaseError)
    out = landlord.cancel_all([b.cookie, missing], 20)
    assert out[0] == "b" and isinstance(out[1], UnknownLeaseError)
    assert [c for c, _, _ in landlord] == [a.cookie]
    assert landlord.leases()[0][2] == "a"


def test_iteration_len_and_repr(landlord: Landlord) -> None:
    for i in range(10):
        landlord.grant(i, ANY, 0)
    assert len(landlord) == 10
    assert sorted(r for _, _, r in landlord) == list(range(10))
    assert repr(landlord) == "Landlord(id=7, leases=10)"
    assert landlord.id == 7 and landlord.policy == Policy.bounded(60_000, 30_000)
    assert landlord.limits.max_batch == 10_000 and landlord.expiry_budget == 10_000


def test_threads_share_one_landlord() -> None:
    ll = Landlord(1, Policy.fixed(60_000), seed=bytes(32))
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(2_000):
                g = ll.grant((k, i), ANY, i)
                ll.renew(g.cookie, ANY, i + 1)
                if i % 2:
                    ll.cancel(g.cookie, i + 2)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(ll) == 4 * 1_000


def test_snapshot_and_restore_keep_every_lease() -> None:
    import pickle

    ll = Landlord(3, Policy.bounded(FOREVER, 30_000), seed=bytes(range(32)))
    a = ll.grant({"printer": 1}, 10_000, 0)
    b = ll.grant(b"raw", FOREVER, 0)
    text = ll.snapshot(4_000, encode=pickle.dumps)
    with pytest.raises(TypeError):
        ll.snapshot(4_000)  # a dict is not bytes: an encoder is needed
    back = Landlord.restore(text, Policy.bounded(FOREVER, 30_000), 100_000, decode=pickle.loads)
    assert len(back) == 2 and back.id == 3
    got = back.get(a.cookie, 100_000)
    assert got == (106_000, {"printer": 1})  # 6 s were left at the snapshot
    assert back.get(b.cookie, 10**15) == (FOREVER, b"raw")
    assert back.grant("new", ANY, 100_000).cookie not in (a.cookie, b.cookie)
    raw = Landlord.restore(ll.snapshot(4_000, encode=lambda r: pickle.dumps(r)), Policy.fixed(5), 0)
    assert isinstance(raw.get(b.cookie, 0), tuple)
    with pytest.raises(leasehold.DecodeError):
        Landlord.restore("{}", Policy.fixed(5), 0)
    with pytest.raises(leasehold.DecodeError):
        Landlord.restore(text.replace('"version":2', '"version":7'), Policy.fixed(5), 0)


def test_cookies_as_text_bytes_or_int(landlord: Landlord) -> None:
    g = landlord.grant("r", ANY, 0)
    raw = g.cookie_bytes
    assert isinstance(raw, bytes) and len(raw) == 16 and raw.hex() == g.cookie
    forms: List[Union[str, bytes, int]] = [g.cookie, g.cookie.upper(), raw, int(g.cookie, 16)]
    for c in forms:
        got = landlord.get(c, 1)
        assert got is not None and got[1] == "r"
        assert landlord.renew(c, 1_000, 1) == 1_000
    assert landlord.renew_all([(raw, 2_000), (g.cookie, 3_000), (int(g.cookie, 16), 4_000)], 2) == [2_000, 3_000, 4_000]
    assert landlord.renew_all(((c, ANY) for c in [raw]), 3) == [30_000]  # any iterable of tuples
    assert landlord.renew(raw, 30_000, 3) is landlord.renew(g.cookie, 30_000, 3)  # one int object
    for bad in [b"\x00" * 15, b"\x00" * 17, 2**128, -1, "g" * 32, "0" * 31, "\u00e9" * 32]:
        with pytest.raises(ValueError):
            landlord.renew(bad, ANY, 4)  # type: ignore[arg-type]
    for wrong in [True, 1.5, None, bytearray(raw)]:
        with pytest.raises(TypeError):
            landlord.renew(wrong, ANY, 4)  # type: ignore[arg-type]
    assert landlord.cancel_all([raw, raw], 5)[0] == "r"
    landlord.grant("s", 1, 0)
    landlord.handle_timeout(10_000)
    (e,) = landlord.drain_expired()
    assert e.cookie_bytes.hex() == e.cookie and e.resource == "s"


def test_big_batches_run_detached_and_other_threads_meanwhile() -> None:
    ll = Landlord(2, Policy.fixed(60_000), seed=bytes(32), limits=leasehold.Limits(max_batch=100_000))
    cookies = [ll.grant(i, ANY, 0).cookie_bytes for i in range(5_000)]
    ticks = []
    stop = threading.Event()

    def other() -> None:
        while not stop.is_set():
            ticks.append(len(ll))

    t = threading.Thread(target=other)
    t.start()
    try:
        for k in range(20):
            assert ll.renew_all([(c, ANY) for c in cookies], 1_000 * k) == [60_000] * len(cookies)
            msg = leasehold.Request.renew_all(k, [(c, 60_000) for c in cookies]).encode()
            results = leasehold.Reply.decode(ll.handle_bytes(msg, "binary", 1_000 * k + 500)).results
            assert results == [60_000] * len(cookies)
    finally:
        stop.set()
        t.join()
    assert ticks and set(ticks) == {5_000}
    assert ll.cancel_all(cookies, 30_000) == list(range(len(cookies)))
