"""Holder side in virtual time: LeaseMap batches and the renewal manager's sans-I/O loop."""

from __future__ import annotations

from typing import List

import pytest

from leasehold import (
    ANY,
    FOREVER,
    IndefiniteError,
    InvalidArgumentError,
    Landlord,
    Lease,
    LeaseMap,
    LeaseMapError,
    Policy,
    RenewalEvent,
    RenewalManager,
    Reply,
    Request,
    UnknownLeaseError,
    lease_from_reply,
    local_expiration,
)


def landlord(max_ms: int = 10_000) -> Landlord:
    return Landlord(5, Policy.bounded(max_ms, max_ms), seed=bytes(32))


def obtain(ll: Landlord, resource: bytes, duration: int, sent_at: int) -> Lease:
    reply = ll.handle_request(Request.grant(1, resource, duration), sent_at + 3)
    return lease_from_reply(reply, sent_at)


def test_lease_from_reply_counts_from_send_time() -> None:
    ll = landlord()
    lease = obtain(ll, b"r", 4_000, 100)
    assert lease.landlord == 5 and lease.expiration == 4_100
    assert local_expiration(100, 4_000) == 4_100
    assert local_expiration(100, 4_000, 1_000) < 4_100  # allows for a faster landlord clock
    assert local_expiration(0, FOREVER) == FOREVER
    denied = Reply.failure(1, 5, UnknownLeaseError("unknown lease", ""))
    with pytest.raises(UnknownLeaseError):
        lease_from_reply(denied, 0)


def test_lease_map_renews_and_reports_failures_per_lease() -> None:
    ll = landlord()
    a, b, c = (obtain(ll, x, 1_000, 0) for x in (b"a", b"b", b"c"))
    m = LeaseMap()
    m[a] = 5_000
    m.insert(b, 5_000)
    m[c] = 5_000
    assert len(m) == 3 and a in m and m[a] == 5_000 and m.landlord == 5
    assert not m.can_contain_key(Lease(6, "0" * 32, 0))
    with pytest.raises(InvalidArgumentError):
        m[Lease(6, "0" * 32, 0)] = 5
    ll.cancel(b.cookie, 10)  # b is gone at the landlord
    req = m.renew_all_request(42)
    assert req.op == "renew_all" and len(req.items or []) == 3
    reply = ll.handle_request(req, 500)
    with pytest.raises(LeaseMapError) as info:
        m.apply_renew_all(reply, 490)
    assert list(info.value.failures) == [b.cookie]
    assert isinstance(info.value.failures[b.cookie], UnknownLeaseError)
    assert b not in m and len(m) == 2
    got = m.get(a)
    assert got is not None and got[0].expiration == 490 + 5_000
    assert set(m) == {a, c} and {lease for lease, _ in m.items()} == {a, c}
    cancel = ll.handle_request(m.cancel_all_request(43), 600)
    m.apply_cancel_all(cancel)
    assert len(ll) == 0
    del m[a]
    with pytest.raises(KeyError):
        m[a]
    assert "LeaseMap(landlord=5" in repr(m)


def drive(m: RenewalManager, ll: Landlord, until: int, drop: bool = False) -> List[RenewalEvent]:
    """Virtual time: the host's loop, with the landlord answering instantly (or never, if drop)."""
    events: List[RenewalEvent] = []
    while True:
        t = m.poll_timeout()
        if t is None or t > until:
            break
        m.handle_timeout(t)
        ll.handle_timeout(t)
        while (tx := m.poll_transmit(t)) is not None:
            assert tx.landlord == ll.id and tx.id == tx.request.id
            if drop:
                m.handle_failure(tx.id, IndefiniteError("lost", "lost"), t)
            else:
                m.handle_reply(ll.handle_request(tx.request, t), t)
        events.extend(m.drain_events())
    return events


def test_manager_keeps_a_lease_alive_until_its_desired_expiration() -> None:
    ll = landlord(1_000)
    lease = obtain(ll, b"r", 1_000, 0)
    m = RenewalManager(initial_rtt=10, min_rto=20, report_renewals=True)
    m.renew_for(lease, 10_000, 1_000, 0)
    assert len(m) == 1 and m.expiration(lease) == 10_000 and m.renew_duration(lease) == 1_000
    nxt = m.next_renewal(lease)
    assert nxt is not None and 0 < nxt < 1_000
    events = drive(m, ll, 20_000)
    kinds = [e.kind for e in events]
    assert kinds.count("renewed") >= 9 and kinds[-1] == "desired_expiration_reached"
    assert len(m) == 0 and m.stats()["leases_renewed"] >= 9
    rtt = m.rtt(5)
    assert rtt is not None and rtt["samples"] >= 9


def test_manager_reports_failures_and_retries_indefinite_ones() -> None:
    ll = landlord(1_000)
    lease = obtain(ll, b"r", 1_000, 0)
    m = RenewalManager(initial_rtt=10, min_rto=20)
    m.renew_for(lease, FOREVER, 1_000, 0)
    events = drive(m, ll, 5_000, drop=True)
    assert [e.kind for e in events] == ["renewal_failed"]
    assert isinstance(events[0].error, IndefiniteError) and events[0].lease == lease
    assert m.stats()["indefinite_failures"] >= 2

    lease2 = obtain(ll, b"s", 1_000, 6_000)
    m.renew_for(lease2, FOREVER, 1_000, 6_000)
    ll.cancel(lease2.cookie, 6_001)
    events = drive(m, ll, 10_000)
    assert [e.kind for e in events] == ["renewal_failed"] and isinstance(events[0].error, UnknownLeaseError)


def test_manager_cancel_sends_a_cancel() -> None:
    ll = landlord(1_000)
    lease = obtain(ll, b"r", 1_000, 0)
    m = RenewalManager()
    m.renew_for(lease, FOREVER, ANY, 0)
    m.cancel(lease, 10)
    tx = m.poll_transmit(10)
    assert tx is not None and tx.request.op == "cancel"
    m.handle_reply(ll.handle_request(tx.request, 11), 11)
    assert len(ll) == 0 and len(m) == 0 and m.stats()["leases_cancelled"] == 1
    with pytest.raises(UnknownLeaseError):
        m.remove(lease)


def test_manager_rejects_bad_settings() -> None:
    with pytest.raises(ValueError):
        RenewalManager(renew_divisor=0)
    with pytest.raises(ValueError):
        RenewalManager(max_clock_drift_ppm=2_000_000)
    m = RenewalManager(batch_window=1_000)
    assert m.config["batch_window"] == 1_000
    with pytest.raises(InvalidArgumentError):
        m.renew_for(Lease(1, "0" * 32, 10), 1_000, ANY, 0)  # ANY only with a FOREVER desired expiration
    with pytest.raises(TypeError):
        m.handle_failure(1, RuntimeError("not a LeaseError"), 0)  # type: ignore[arg-type]


@pytest.mark.parametrize("drift_ppm", [0, 100, 5_000])
@pytest.mark.parametrize("latency", [0, 3, 17])
def test_desired_expiration_event_carries_it_and_never_comes_early(drift_ppm: int, latency: int) -> None:
    """Virtual time: replies arrive ``latency`` ms after the request; the holder's lease counts
    from the send time (so a grant ends a little before the landlord's), with a drift margin."""
    ll = landlord(1_000)
    m = RenewalManager(initial_rtt=10, min_rto=20, max_clock_drift_ppm=drift_ppm)
    desired = {}
    for i, until in enumerate([2_500, 3_001, 4_999, 7_777]):
        lease = obtain(ll, bytes([i]), 1_000, 0)
        m.renew_until(lease, until, 1_000, 0)
        desired[lease.cookie] = until
    in_flight: List[tuple[int, Request]] = []
    reached = {}
    t = 0
    while t <= 10_000:
        nexts = [x for x in (m.poll_timeout(), in_flight[0][0] if in_flight else None) if x is not None]
        if not nexts:
            break
        t = max(t, min(nexts))
        while in_flight and in_flight[0][0] <= t:
            _, req = in_flight.pop(0)
            m.handle_reply(ll.handle_request(req, t), t)
        m.handle_timeout(t)
        while (tx := m.poll_transmit(t)) is not None:
            in_flight.append((t + latency, tx.request))
        for e in m.drain_events():
            if e.kind == "renewed":
                continue
            assert e.kind == "desired_expiration_reached", e
            assert e.desired_expiration == desired[e.lease.cookie]  # carried by the event
            assert t >= e.desired_expiration, (t, e.desired_expiration)  # never before it
            reached[e.lease.cookie] = t
    assert reached.keys() == desired.keys() and len(m) == 0
