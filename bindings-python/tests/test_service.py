"""The renewal service in virtual time: leased sets, memberships, events, snapshot and restore."""

from __future__ import annotations

from typing import List

import pytest

from leasehold import (
    ANY,
    FOREVER,
    GapTracker,
    InvalidArgumentError,
    Landlord,
    Lease,
    Policy,
    Reply,
    Request,
    RenewalService,
    SetEvent,
    UnknownLeaseError,
)

MIN = 60_000


def client_lease(printer: Landlord, now: int) -> Lease:
    g = printer.grant(b"printer", MIN, now)
    return Lease(printer.id, g.cookie, g.expiration)


def run(svc: RenewalService, printer: Landlord, until: int) -> List[SetEvent]:
    events: List[SetEvent] = []
    while True:
        t = svc.poll_timeout()
        if t is None or t > until:
            break
        svc.handle_timeout(t)
        printer.handle_timeout(t)
        while (tx := svc.poll_transmit(t)) is not None:
            svc.handle_reply(printer.handle_request(tx.request, t), t)
        events.extend(svc.drain_events())
    return events


def test_a_set_keeps_its_leases_renewed() -> None:
    printer = Landlord(1, Policy.bounded(MIN, MIN), seed=bytes(32))
    svc = RenewalService(99, seed=b"\x02" * 32, manager={"initial_rtt": 10})
    lease = client_lease(printer, 0)
    rs, set_lease = svc.create_set(ANY, 0)
    assert set_lease.landlord == 99 and set_lease.expiration == 60 * MIN
    rs.renew_for(lease, 30 * MIN, MIN, 0)
    assert rs.leases(0) == [lease] and rs.membership(lease, 0) == (30 * MIN, MIN)
    assert svc.sets() == [rs] and svc.set_of(set_lease, 0) == rs and svc.set(rs.id) == rs
    run(svc, printer, 20 * MIN)
    assert printer.get(lease.cookie, 20 * MIN) is not None  # renewed far past its first minute
    assert svc.managed_leases()[0].expiration > 20 * MIN
    assert rs.remove(lease, 20 * MIN) is not None and rs.leases(20 * MIN) == []
    with pytest.raises(InvalidArgumentError):
        rs.renew_for(set_lease, MIN, MIN, 20 * MIN)  # a set lease cannot go into its own service


def test_events_warn_and_report_failures_with_sequence_numbers() -> None:
    printer = Landlord(1, Policy.bounded(MIN, MIN), seed=bytes(32))
    svc = RenewalService(99, seed=b"\x02" * 32, set_policy=Policy.fixed(10 * MIN))
    rs, set_lease = svc.create_set(ANY, 0)
    assert set_lease.expiration == 10 * MIN
    warn = rs.set_expiration_warning_listener(2 * MIN, b"warn-me", 0)
    fail = rs.set_renewal_failure_listener(b"failed", 0)
    assert warn.event_id != fail.event_id and warn.lease == set_lease
    assert [r.event_id for r in rs.registrations(0)] == [warn.event_id, fail.event_id]
    tracker = GapTracker()
    tracker.expect(fail.event_id, fail.sequence)
    tracker.expect(warn.event_id, warn.sequence)

    lease = client_lease(printer, 0)
    rs.renew_for(lease, FOREVER, MIN, 0)
    printer.cancel(lease.cookie, 1)  # its landlord drops it: the next renewal fails definitely
    events = run(svc, printer, 9 * MIN)
    kinds = [e.kind for e in events]
    assert "renewal_failure" in kinds and "expiration_warning" in kinds
    failure = next(e for e in events if e.kind == "renewal_failure")
    assert failure.handback == b"failed" and failure.lease == lease
    assert isinstance(failure.error, UnknownLeaseError) and failure.set_id == rs.id
    assert tracker.observe(failure.event_id, failure.sequence) == ("in_order", 0)
    warning = next(e for e in events if e.kind == "expiration_warning")
    assert warning.handback == b"warn-me" and warning.expiration == 10 * MIN
    assert tracker.observe(warning.event_id, warning.sequence + 5)[0] == "gap"
    assert tracker.observe(warning.event_id, 0) == ("stale", 0)
    # Delivered: reported once, so that a restart does not hand it out again.
    assert svc.delivered(failure.event_id, failure.sequence, 9 * MIN)
    assert not svc.delivered(failure.event_id, failure.sequence, 9 * MIN)


def test_set_leases_renew_and_cancel_over_the_wire() -> None:
    svc = RenewalService(99, seed=b"\x02" * 32)
    rs, set_lease = svc.create_set(MIN, 0)
    reply = Reply.decode(svc.handle_bytes(Request.renew(1, set_lease.cookie, 2 * MIN).encode(), "binary", 10))
    assert reply.op == "renewed" and reply.duration == 2 * MIN
    assert svc.handle_request(Request.cancel(2, set_lease.cookie), 20).op == "cancelled"
    with pytest.raises(UnknownLeaseError):
        rs.leases(30)
    assert svc.handle_request(Request.grant(3, b"x", MIN), 30).op == "error"


def test_snapshot_and_restore() -> None:
    printer = Landlord(1, Policy.bounded(MIN, MIN), seed=bytes(32))
    svc = RenewalService(99, seed=b"\x02" * 32)
    rs, _ = svc.create_set(ANY, 0)
    lease = client_lease(printer, 0)
    rs.renew_for(lease, 30 * MIN, MIN, 0)
    text = svc.snapshot(1_000)
    back = RenewalService.restore(text, 5_000, 99)
    assert [s.id for s in back.sets()] == [rs.id]
    assert back.set(rs.id).leases(5_000) == [lease]
    with pytest.raises(ValueError):
        RenewalService.restore("{not json", 0, 99)
    with pytest.raises(TypeError):
        RenewalService(1, manager={"no_such_setting": 1})
