"""The lookup discovery service as a Python user relies on it (seed 003, LD.3 and LD.4): one
discovered event per registrar until it is discarded, discards by group interest only, active
discard making a registrar eligible again, handbacks returned unchanged, gone registrations
answering "no such object", strictly increasing sequence numbers, registrations surviving a
reopened directory, the wire protocol, and the drivers. Virtual time throughout, but for the
drivers, which run on the real clock (and only wait for events to arrive)."""

from __future__ import annotations

import asyncio
import gc
import random
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import pytest

from leasehold import (
    ALL_GROUPS, ANY, FOREVER, NO_GROUPS, Announcement, DecodeError, Delivery, DiscoveryEvent,
    DiscoveryRegistration, DiscoveryReply, DiscoveryRequest, DiscoveryService, EventReply, GapTracker,
    IndefiniteError, InvalidArgumentError, LeaseDeniedError, LeaseError, Policy, Registrar, Reply,
    Request, StoreError, UnicastResponse, UnknownLeaseError, aio, monotonic_ms, threaded,
)

R1 = "00000000000000000000000000000001"
R2 = "00000000000000000000000000000002"
R3 = "00000000000000000000000000000003"
LOC1 = "10.0.0.1:4160"
LOC2 = "10.0.0.2:4160"
LOC3 = "10.0.0.3:4160"
LOCATOR = {R1: LOC1, R2: LOC2, R3: LOC3}


def service(**settings: object) -> DiscoveryService:
    return DiscoveryService(7, seed=bytes(32), lease_policy=Policy.bounded(60_000, 30_000), **settings)


class Sequences:
    """Announcement sequence numbers per registrar (each announcement must grow them)."""

    def __init__(self) -> None:
        self.seq: Dict[str, int] = {}

    def __call__(self, rid: str, groups: List[str], ttl: int = 30_000) -> Announcement:
        self.seq[rid] = self.seq.get(rid, 0) + 1
        return Announcement(rid, groups, LOCATOR[rid], self.seq[rid], ttl)


def deliver_all(svc: DiscoveryService, now: int) -> List[Delivery]:
    """Every event due, each reported delivered (which lets the next of its registration out)."""
    out: List[Delivery] = []
    while (e := svc.poll_event(now)) is not None:
        assert svc.delivered(e.event_id, e.sequence, now)
        out.append(e)
    return out


def req(id: int, op: str, **body: Any) -> Dict[str, Any]:
    """A discovery request in its JSON object form."""
    return {"v": 1, "id": str(id), "body": {"op": op, **body}}


def ids(rs: List[Registrar]) -> List[str]:
    return [r.id for r in rs]


def test_one_discovered_event_per_registrar_until_discarded() -> None:
    svc, ann = service(), Sequences()
    reg, ev = svc.register(["printers"], [], b"mine", ANY, 0)
    assert ev.lease.expiration == 30_000 and ev.sequence == 0
    assert ev.source_object == reg.id and ev.source_service == 7
    svc.handle_announcement(ann(R1, ["printers"]), 100)
    got = deliver_all(svc, 100)
    assert [(e.discarded, ids(e.registrars), e.sequence) for e in got] == [(False, [R1], 1)]
    assert got[0].event_id == ev.event_id and got[0].registrars[0].locators == [LOC1]
    # The same registrar announcing again and again: nothing new.
    for t in range(200, 2000, 100):
        svc.handle_announcement(ann(R1, ["printers"]), t)
        assert deliver_all(svc, t) == []
    # A registrar of a group nobody wants: nothing.
    svc.handle_announcement(ann(R2, ["lab"]), 2000)
    assert deliver_all(svc, 2000) == []
    assert ids(reg.registrars(2000)) == [R1]
    assert ids(svc.discovered()) == [R1, R2]
    # A stale announcement (sequence not above the last) changes nothing either.
    svc.handle_announcement(Announcement(R1, ["lab"], LOC1, 1, 30_000), 2100)
    assert deliver_all(svc, 2100) == [] and reg.registrars(2100)[0].groups == ["printers"]


def test_discard_makes_a_registrar_eligible_again_for_that_registration_only() -> None:
    svc, ann = service(), Sequences()
    a, _ = svc.register(["printers"], [], b"a", ANY, 0)
    b, _ = svc.register(["printers"], [], b"b", ANY, 0)
    svc.handle_announcement(ann(R1, ["printers"]), 10)
    assert sorted(e.handback for e in deliver_all(svc, 10)) == [b"a", b"b"]
    a.discard(R1, 20)
    got = deliver_all(svc, 20)
    assert [(e.handback, e.discarded, ids(e.registrars)) for e in got] == [(b"a", True, [R1])]
    assert a.registrars(20) == [] and ids(b.registrars(20)) == [R1]
    a.discard(R1, 25)  # one it does not hold: ignored
    assert deliver_all(svc, 25) == []
    # The next announcement discovers it again, for a only; b never heard of the discard.
    svc.handle_announcement(ann(R1, ["printers"]), 30)
    got = deliver_all(svc, 30)
    assert [(e.handback, e.discarded, ids(e.registrars), e.sequence) for e in got] == [(b"a", False, [R1], 3)]
    assert ids(a.registrars(30)) == [R1]


@pytest.mark.parametrize("handback", [b"", bytes(range(256)), b"\xff\xfe not utf-8 \x00"])
def test_events_carry_the_handback_unchanged(handback: bytes) -> None:
    svc, ann = service(), Sequences()
    svc.register(ALL_GROUPS, [], handback, ANY, 0)
    svc.handle_announcement(ann(R1, []), 1)
    svc.registrar_unreachable(R1, 2)  # wanted by group (all groups): discarded
    got = deliver_all(svc, 2)
    assert [e.discarded for e in got] == [False, True]
    for e in got:
        assert e.handback == handback
        # The event message carries it byte for byte (hex in its JSON object form).
        for enc in ("json", "binary"):
            m = DiscoveryEvent.decode(e.encode(enc), enc)
            assert m["handback"] == handback.hex() and m["event_id"] == str(e.event_id)
            assert m["registrars"] == [dict(r) for r in e.registrars] and m["discarded"] == e.discarded


def every_call(reg: DiscoveryRegistration, now: int) -> List[Callable[[], object]]:
    return [
        lambda: reg.lease(now),
        lambda: reg.event_registration(now),
        lambda: reg.registrars(now),
        lambda: reg.groups(now),
        lambda: reg.locators(now),
        lambda: reg.add_groups(["x"], now),
        lambda: reg.set_groups(["x"], now),
        lambda: reg.remove_groups(["x"], now),
        lambda: reg.add_locators([LOC1], now),
        lambda: reg.set_locators([LOC1], now),
        lambda: reg.remove_locators([LOC1], now),
        lambda: reg.discard(R1, now),
        lambda: reg.set_listener(b"http://x/", now),
        lambda: reg.renew(1000, now),
        lambda: reg.cancel(now),
    ]


def test_expired_and_cancelled_registrations_answer_no_such_object() -> None:
    svc, ann = service(), Sequences()
    short, ev = svc.register(["printers"], [LOC2], b"short", 1_000, 0)
    gone, _ = svc.register(["printers"], [], b"gone", 50_000, 0)
    cookie = ev.lease.cookie
    assert short.renew(1_000, 500) == 1_000  # ends at 1500 now
    gone.cancel(600)
    svc.handle_announcement(ann(R1, ["printers"]), 700)
    # The cancelled registration gets no event; the live one does.
    assert [e.handback for e in deliver_all(svc, 700)] == [b"short"]
    svc.handle_timeout(1_501)
    assert len(svc) == 0 and svc.registrations() == []
    for reg in (short, gone):
        for call in every_call(reg, 1_600):
            with pytest.raises(UnknownLeaseError):
                call()
        assert reg.listener() is None
    assert svc.registration_of(cookie, 1_600) is None
    reply = svc.handle_discovery(req(1, "get_registrars", cookie=cookie), 1_600)
    assert reply["body"]["op"] == "error" and reply["body"]["code"] == 1
    renewed = svc.handle_request(Request.renew(2, cookie, 1000), 1_600)
    assert isinstance(renewed.error, UnknownLeaseError)
    # Nothing is probed for a locator no live registration wants any more.
    assert svc.poll_transmit(1_600) is None


def test_passive_discards_go_only_to_registrations_that_wanted_it_by_group() -> None:
    svc, ann = service(), Sequences()
    g, _ = svc.register(["printers"], [], b"group", ANY, 0)
    loc, _ = svc.register(NO_GROUPS, [LOC1], b"locator", ANY, 0)
    assert loc.groups(0) == frozenset() and g.groups(0) == frozenset({"printers"})
    svc.handle_announcement(ann(R1, ["printers"], ttl=5_000), 10)
    assert sorted(e.handback for e in deliver_all(svc, 10)) == [b"group", b"locator"]
    # R1 falls silent: ttl passes. Only the group registration discards it.
    assert svc.poll_timeout() == 5_010
    svc.handle_timeout(5_010)
    got = deliver_all(svc, 5_010)
    assert [(e.handback, e.discarded) for e in got] == [(b"group", True)]
    assert g.registrars(5_010) == [] and ids(loc.registrars(5_010)) == [R1]
    # Reported unreachable: the locator registration still keeps it, and hears nothing.
    svc.registrar_unreachable(R1, 5_100)
    assert deliver_all(svc, 5_100) == [] and ids(loc.registrars(5_100)) == [R1]
    # Its groups change (no longer printers): no-interest discard for group holders only.
    svc.handle_announcement(ann(R1, ["printers"]), 5_200)
    assert [e.handback for e in deliver_all(svc, 5_200)] == [b"group"]
    svc.handle_announcement(ann(R1, ["lab"]), 5_300)
    got = deliver_all(svc, 5_300)
    assert [(e.handback, e.discarded) for e in got] == [(b"group", True)]
    assert loc.registrars(5_300)[0].groups == ["lab"]


def test_group_and_locator_changes_discover_and_discard() -> None:
    svc, ann = service(), Sequences()
    svc.handle_announcement(ann(R1, ["printers"]), 0)
    svc.handle_announcement(ann(R2, ["lab"]), 0)
    reg, ev = svc.register(["printers"], [], b"h", ANY, 1)
    got = deliver_all(svc, 1)  # discovered at once: one event, one past the registration's number
    assert [(ids(e.registrars), e.sequence) for e in got] == [([R1], ev.sequence + 1)]
    reg.add_groups(["lab"], 2)
    assert [ids(e.registrars) for e in deliver_all(svc, 2)] == [[R2]]
    reg.add_groups(["lab", "printers"], 3)  # held already: no event
    assert deliver_all(svc, 3) == []
    reg.set_groups(NO_GROUPS, 4)  # one discarded event listing both, in id order
    got = deliver_all(svc, 4)
    assert [(e.discarded, ids(e.registrars)) for e in got] == [(True, [R1, R2])]
    reg.set_locators([LOC2], 5)
    assert [(e.discarded, ids(e.registrars)) for e in deliver_all(svc, 5)] == [(False, [R2])]
    reg.set_groups(ALL_GROUPS, 6)
    assert reg.groups(6) is None
    assert [(e.discarded, ids(e.registrars)) for e in deliver_all(svc, 6)] == [(False, [R1])]
    with pytest.raises(InvalidArgumentError):
        reg.add_groups(["x"], 7)  # all groups: no set to add to
    reg.remove_locators([LOC2], 8)  # still wanted by group: no event
    assert deliver_all(svc, 8) == [] and reg.locators(8) == frozenset()


def test_unicast_discovery_of_a_locator() -> None:
    svc = service(unicast_retry=[1_000], unicast_timeout=500)
    reg, _ = svc.register(NO_GROUPS, ["Lookup.Example:4160"], b"u", ANY, 0)
    assert reg.locators(0) == {"lookup.example:4160"}
    probe = svc.poll_transmit(0)
    assert probe is not None and (probe.host, probe.port, probe.locator) == ("lookup.example", 4160, "lookup.example:4160")
    assert svc.poll_transmit(0) is None
    # Failed: tried again after the back-off.
    assert svc.handle_unicast(probe.id, IndefiniteError("refused"), 100)
    assert not svc.handle_unicast(probe.id, UnicastResponse(R2, ["lab"]), 100)  # no longer awaited
    assert svc.poll_transmit(100) is None and svc.poll_timeout() == 1_100
    probe = svc.poll_transmit(1_100)
    assert probe is not None
    # Not answered in time: counts as failed, and is handed out again.
    svc.handle_timeout(1_600)
    again = svc.poll_transmit(2_600)
    assert again is not None and again.id != probe.id
    # Found (an announcement datagram is an answer too).
    assert svc.handle_unicast(again.id, Announcement(R2, ["lab"], "10.9.9.9:1", 1, 1000), 2_700)
    got = deliver_all(svc, 2_700)
    assert [(e.discarded, ids(e.registrars)) for e in got] == [(False, [R2])]
    assert got[0].registrars[0].locators == ["lookup.example:4160"]
    assert svc.poll_transmit(2_700) is None


def test_delivery_failures_retry_or_cancel() -> None:
    svc, ann = service(event_retry=[1_000], delivery_timeout=2_000), Sequences()
    keep, _ = svc.register(["printers"], [], b"keep", ANY, 0)
    svc.handle_announcement(ann(R1, ["printers"]), 0)
    e = svc.poll_event(0)
    assert e is not None and svc.poll_event(0) is None  # one at a time per registration
    assert svc.delivery_failed(e.event_id, e.sequence, IndefiniteError("down"), 10)
    assert svc.poll_event(500) is None
    again = svc.poll_event(1_010)
    assert again == e  # the same event, the same number
    # No report within delivery_timeout: failed, sent again.
    svc.handle_timeout(3_010)
    third = svc.poll_event(4_010)
    assert third == e
    assert svc.handle_event_reply(EventReply.received(e.event_id, e.sequence), 4_020)
    assert not svc.delivered(e.event_id, e.sequence, 4_030)  # a repeated report is ignored
    # Definite failures end the registration: a broken listener, an unknown event.
    for fail in ("definite", "unknown", "reply"):
        reg, _ = svc.register(["printers"], [], fail.encode(), ANY, 5_000)
        e = svc.poll_event(5_000)
        assert e is not None and e.handback == fail.encode()
        if fail == "definite":
            assert svc.delivery_failed(e.event_id, e.sequence, InvalidArgumentError("bad listener"), 5_000)
        elif fail == "unknown":
            assert svc.unknown_event(e.event_id, e.sequence, 5_000)
        else:
            assert svc.handle_event_reply(EventReply.unknown_event(e.event_id, e.sequence), 5_000)
        with pytest.raises(UnknownLeaseError):
            reg.registrars(5_001)
    assert len(svc) == 1 and ids(keep.registrars(5_001)) == [R1]


def test_sequence_numbers_strictly_increase_and_discovery_is_exactly_once() -> None:
    """Random streams of announcements, silences, unreachable reports, group and locator
    changes, discards and failed deliveries: per registration, every event delivered has a
    number one past the last, every discovered registrar was not held, every discarded one
    was, and what the events add up to is what the registration holds."""
    for seed in range(40):
        rnd = random.Random(seed)
        svc = service(event_retry=[50, 100], delivery_timeout=200)
        ann = Sequences()
        groups = [["printers"], ["lab"], ["printers", "lab"], [], [""]]
        regs: List[DiscoveryRegistration] = []
        held: Dict[int, Set[str]] = {}
        gaps = GapTracker()
        now = 0
        for i in range(3):
            locs = rnd.sample(list(LOCATOR.values()), rnd.randint(0, 2))
            reg, ev = svc.register(rnd.choice([*groups, None]), locs, bytes([i]), FOREVER, now)
            gaps.expect(ev.event_id, ev.sequence)
            regs.append(reg)
            held[ev.event_id] = set()
        for _ in range(150):
            now += rnd.randint(0, 400)
            op = rnd.random()
            rid = rnd.choice([R1, R2, R3])
            reg = rnd.choice(regs)
            if op < 0.4:
                svc.handle_announcement(ann(rid, rnd.choice(groups), ttl=rnd.choice([300, 1_000, 30_000])), now)
            elif op < 0.5:
                svc.registrar_unreachable(rid, now)
            elif op < 0.6:
                reg.set_groups(rnd.choice([*groups, None]), now)
            elif op < 0.7:
                reg.set_locators(rnd.sample(list(LOCATOR.values()), rnd.randint(0, 2)), now)
            elif op < 0.8:
                reg.discard(rid, now)
            else:
                svc.handle_timeout(now)
            while (p := svc.poll_transmit(now)) is not None:
                found = [r for r, loc in LOCATOR.items() if loc == p.locator]
                if rnd.random() < 0.5:
                    svc.handle_unicast(p.id, UnicastResponse(found[0], rnd.choice(groups)), now)
                else:
                    svc.handle_unicast(p.id, IndefiniteError("no answer"), now)
            while (e := svc.poll_event(now)) is not None:
                if rnd.random() < 0.2:  # failed: the same event comes again later
                    svc.delivery_failed(e.event_id, e.sequence, IndefiniteError("lost"), now)
                    continue
                assert svc.delivered(e.event_id, e.sequence, now)
                assert gaps.observe(e.event_id, e.sequence) == ("in_order", 0), (seed, e)
                got = set(ids(e.registrars))
                h = held[e.event_id]
                if e.discarded:
                    assert got <= h, (seed, e, h)
                    h -= got
                else:
                    assert not got & h, (seed, e, h)
                    h |= got
        # Let every retry out, then compare with what the registrations hold.
        for _ in range(20):
            now += 300
            svc.handle_timeout(now)
            for e in deliver_all(svc, now):
                assert gaps.observe(e.event_id, e.sequence) == ("in_order", 0)
                h = held[e.event_id]
                h.difference_update(ids(e.registrars)) if e.discarded else h.update(ids(e.registrars))
        for reg in regs:
            er = reg.event_registration(now)
            assert held[er.event_id] == set(ids(reg.registrars(now))), seed
            assert gaps.last(er.event_id) == er.sequence


def test_registrations_survive_reopening_the_directory(tmp_path: Path) -> None:
    data = tmp_path / "lds"
    ann = Sequences()
    svc = DiscoveryService.open(data, 7, 1_000, seed=bytes(32), lease_policy=Policy.bounded(60_000, 30_000))
    assert svc.durable and svc.data_dir == str(data)
    assert svc.recovery is not None and svc.recovery["created"] and svc.recovery["registrations"] == 0
    reg, ev = svc.register(["printers"], [LOC3], b"mine", 20_000, 1_000, listener="http://127.0.0.1:9/events")
    svc.handle_announcement(ann(R1, ["printers"]), 2_000)
    e = svc.poll_event(2_000)
    assert e is not None and e.listener == b"http://127.0.0.1:9/events"
    assert svc.delivered(e.event_id, e.sequence, 2_000)
    cookie = ev.lease.cookie
    assert svc.durable_seq <= svc.journal_seq
    svc.commit()
    assert svc.durable_seq == svc.journal_seq and svc.commits >= 1
    # The directory is locked while the service is open.
    with pytest.raises(StoreError):
        DiscoveryService.open(data, 7, 2_000)
    del svc, reg, e
    gc.collect()
    # Reopened much later on the host's clock: time spent down does not count.
    svc = DiscoveryService.open(data, 7, 1_000_000, lease_policy=Policy.bounded(60_000, 30_000))
    rec = svc.recovery
    assert rec is not None and not rec["created"] and rec["registrations"] == 1 and rec["replayed"] > 0
    back = svc.registration_of(cookie, 1_000_000)
    assert back is not None and back.id == ev.source_object
    assert back.lease(1_000_000).remaining(1_000_000) == 19_000
    assert ids(back.registrars(1_000_000)) == [R1] and back.groups(1_000_000) == frozenset({"printers"})
    assert back.locators(1_000_000) == {LOC3} and back.listener() == b"http://127.0.0.1:9/events"
    # Sequence numbers carry on from where they were.
    assert back.event_registration(1_000_000).sequence == 1
    svc.handle_announcement(ann(R2, ["printers"]), 1_000_100)
    e2 = svc.poll_event(1_000_100)
    assert e2 is not None and (e2.sequence, ids(e2.registrars)) == (2, [R2])
    # A different id is refused, and leaves the directory as it was.
    del svc, back, e2
    gc.collect()
    with pytest.raises(InvalidArgumentError):
        DiscoveryService.open(data, 8, 1_000_200)
    gc.collect()
    svc = DiscoveryService.open(data, 7, 1_000_300)
    assert len(svc) == 1


def test_an_event_not_yet_reported_is_delivered_again_after_a_crash(tmp_path: Path) -> None:
    data, ann = tmp_path / "lds", Sequences()
    settings = dict(delivery_timeout=5_000, event_retry=[1_000])
    svc = DiscoveryService.open(data, 7, 0, seed=bytes(32), **settings)
    svc.register(ALL_GROUPS, [], b"h", 60_000, 0)
    svc.handle_announcement(ann(R1, ["x"]), 10)
    e = svc.poll_event(10)  # handed out (and durable), never reported
    assert e is not None
    del svc
    gc.collect()
    svc = DiscoveryService.open(data, 7, 50, **settings)
    # Its outcome is unknown: it stays in flight until its delivery time-out (counted on the
    # reopened service's clock: the 40 ms down do not count), then goes again after the back-off.
    assert svc.poll_event(50) is None
    deadline = svc.poll_timeout()
    assert deadline == 50 + 5_000  # handed out at 10, the last time before the crash
    svc.handle_timeout(deadline)
    assert svc.poll_event(deadline) is None
    retry = svc.poll_timeout()
    assert retry == deadline + 1_000  # the first step of the default back-off
    again = svc.poll_event(retry)
    assert again == e  # the same event, the same sequence number: delivered at least once
    assert svc.delivered(again.event_id, again.sequence, retry)
    assert svc.poll_event(retry) is None


def test_the_wire_protocol_end_to_end() -> None:
    """Messages are their JSON object form (as the shared vectors write them)."""
    svc, ann = service(), Sequences()
    for enc in ("json", "binary"):
        msg = DiscoveryRequest.encode(req(1, "register", groups=["printers"], locators=[], handback=b"wire".hex(), duration="10000"), enc)
        sent_at = 1_000
        reply = DiscoveryReply.decode(svc.handle_discovery_bytes(msg, enc, sent_at, listener=f"{enc} listener"), enc)
        body = reply["body"]
        assert body["op"] == "registered" and reply["landlord"] == "0000000000000007" and body["duration"] == "10000"
        cookie = body["cookie"]
        renewed = Reply.decode(svc.handle_bytes(Request.renew(2, cookie, 20_000).encode(enc), enc, 2_000), enc)
        assert renewed.duration == 20_000
        got = svc.handle_discovery(req(3, "get_groups", cookie=cookie), 2_000)
        assert got["body"] == {"op": "groups", "groups": ["printers"]}
    svc.handle_announcement(ann(R1, ["printers"]), 3_000)
    events = deliver_all(svc, 3_000)
    assert sorted(e.listener for e in events) == [b"binary listener", b"json listener"]
    cookie = svc.registrations()[0].lease(3_000).cookie
    r = svc.handle_discovery(req(4, "get_registrars", cookie=cookie), 3_000)
    assert [x["id"] for x in r["body"]["registrars"]] == [R1]
    assert svc.handle_discovery(req(5, "discard", cookie=cookie, registrar=R1), 3_000)["body"]["op"] == "done"
    assert svc.handle_discovery(req(6, "get_registrars", cookie=cookie), 3_000)["body"]["registrars"] == []
    assert Reply.decode(svc.handle_bytes(Request.cancel(7, cookie).encode(), "binary", 3_000)).op == "cancelled"
    r = svc.handle_discovery(req(8, "get_groups", cookie=cookie), 3_000)
    assert r["body"]["op"] == "error" and r["body"]["code"] == 1
    # Undecodable input gets an error reply (id 0), never an exception.
    bad = DiscoveryReply.decode(svc.handle_discovery_bytes(b"\x4c\x01\x20", "binary", 3_000))
    assert (bad["id"], bad["body"]["op"], bad["body"]["code"]) == ("0", "error", 5)
    # A message object the protocol refuses is refused before it is sent.
    with pytest.raises(DecodeError):
        DiscoveryRequest.encode(req(9, "register", groups=["a"], locators=["no-port"], handback="", duration="5"))
    # A grant through the lease endpoint is refused: registrations are made with register.
    g = svc.handle_request(Request.grant(9, b"x", 1000), 3_000)
    assert g.op == "error"


def test_snapshot_and_restore() -> None:
    svc, ann = service(), Sequences()
    reg, ev = svc.register(["printers"], [LOC2], b"s", 40_000, 0, listener=b"where")
    svc.handle_announcement(ann(R1, ["printers"]), 100)
    deliver_all(svc, 100)
    text = svc.snapshot(200)
    back = DiscoveryService.restore(text, 200, 7, lease_policy=Policy.bounded(60_000, 30_000), restore_jump=0)
    r = back.registration(reg.id)
    assert ids(r.registrars(200)) == [R1] and r.listener() == b"where"
    assert r.lease(200) == reg.lease(200)
    assert back.snapshot(200) == text
    with pytest.raises(InvalidArgumentError):
        DiscoveryService.restore(text, 200, 8)
    with pytest.raises(DecodeError):
        DiscoveryService.restore("{}", 200, 7)
    # The default jump: sequence numbers after a restore are never ones handed out before it.
    jumped = DiscoveryService.restore(text, 200, 7)
    assert jumped.registration(reg.id).event_registration(200).sequence > 2**31


def test_bad_arguments_raise_clear_errors() -> None:
    svc = service()
    with pytest.raises(InvalidArgumentError):
        svc.register(["a"], [], b"", -5, 0)
    with pytest.raises(TypeError, match="single str"):
        svc.register("printers", [], b"", ANY, 0)
    with pytest.raises(TypeError):
        svc.register(["a", None], [], b"", ANY, 0)
    with pytest.raises(InvalidArgumentError):
        svc.register(["a"], ["no-port"], b"", ANY, 0)
    with pytest.raises(InvalidArgumentError):
        svc.register(["x" * 256], [], b"", ANY, 0)
    with pytest.raises(TypeError):
        svc.register(["a"], [], "not bytes", ANY, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown field `colour`"):
        DiscoveryService(1, colour="blue")
    with pytest.raises(InvalidArgumentError):
        DiscoveryService(1, event_retry=[])
    with pytest.raises(InvalidArgumentError):
        svc.registrar_unreachable("not hex", 0)
    with pytest.raises(InvalidArgumentError):
        svc.registrar_unreachable(b"short", 0)
    assert not svc.registrar_unreachable(2**127, 0)
    with pytest.raises(TypeError):
        svc.handle_unicast(1, 42, 0)
    with pytest.raises(TypeError):
        svc.delivery_failed(1, 1, RuntimeError("x"), 0)  # type: ignore[arg-type]
    with pytest.raises(DecodeError):
        svc.handle_datagram(b"not an announcement", 0)
    with pytest.raises(InvalidArgumentError):
        Announcement(R1, [], LOC1, 1, 0).encode()
    with pytest.raises(LeaseDeniedError):
        small = service(max_registrars=1)
        small.handle_announcement(Announcement(R1, [], LOC1, 1, 1000), 0)
        small.handle_announcement(Announcement(R2, [], LOC2, 1, 1000), 0)
    # A listener too long for the limits: refused, and no registration is left behind.
    with pytest.raises(InvalidArgumentError):
        svc.register(["a"], [], b"", ANY, 0, listener=b"x" * 70_000)
    assert len(svc) == 0
    # The registrar id forms are the same registrar.
    svc.handle_announcement(Announcement(int(R3, 16), [], LOC3, 1, 1000), 0)
    r = svc.registrar(bytes.fromhex(R3))
    assert r is not None and r.id == R3 and svc.registrar(r) == r and hash(r) == hash(svc.registrar(R3.upper()))


def test_values_compare_and_print() -> None:
    a = Announcement(R1, ["b", "a", "a"], "Host:1", 5, 1000)
    assert a.groups == ["a", "b"] and a.locator == "host:1" and a == Announcement.decode(a.encode())
    assert a["ttl"] == 1000 and dict(a)["sequence"] == 5 and "registrar='" + R1 in repr(a)
    with pytest.raises(AttributeError):
        a.ttl = 5
    r = Registrar(R1, ["g"], ["h:1"])
    assert r == Registrar(int(R1, 16), {"g"}, ("h:1",)) and r != Registrar(R2, ["g"], ["h:1"])
    assert UnicastResponse(R1, ["g"]) == UnicastResponse(R1, ("g",))
    with pytest.raises(TypeError):
        Registrar(R1, ["g"])  # a field missing
    svc = service()
    reg, _ = svc.register(NO_GROUPS, [], b"", ANY, 0)
    assert reg == svc.registration(reg.id) and reg != svc.registration(reg.id + 1)
    assert {reg: 1}[svc.registrations()[0]] == 1
    assert repr(reg) == f"DiscoveryRegistration(id={reg.id})" and "registrations=1" in repr(svc)
    assert svc.now == 0 and service().now is None and svc.id == 7


# ---------- drivers (real clock; they wait only for events to arrive) ----------


def wait_until(pred: Callable[[], bool], timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


class Listener:
    """A deliverer that fails each event's first delivery (indefinitely), then takes it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.got: List[Delivery] = []
        self.attempts: Dict[Tuple[int, int], int] = {}

    def __call__(self, e: Delivery) -> Optional[Dict[str, Any]]:
        with self.lock:
            key = (e.event_id, e.sequence)
            self.attempts[key] = self.attempts.get(key, 0) + 1
            if self.attempts[key] == 1:
                raise ConnectionRefusedError("listener down")
            self.got.append(e)
        return EventReply.received(e.event_id, e.sequence) if e.sequence % 2 else None


def registrar_server(a: Announcement) -> Tuple[socket.socket, int]:
    """A TCP server that answers unicast discovery with ``a``'s datagram, on a thread."""
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            with c:
                c.sendall(a.encode())

    threading.Thread(target=serve, daemon=True).start()
    return srv, port


def stop(srv: socket.socket) -> None:
    """Stops a ``registrar_server``: a bare close would leave the listening socket open while
    its thread is blocked in accept (Linux keeps the file alive for the call)."""
    try:
        srv.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    srv.close()


def test_threaded_driver_delivers_probes_and_retries(tmp_path: Path) -> None:
    listener = Listener()
    srv, port = registrar_server(Announcement(R2, ["lab"], "127.0.0.1:1", 1, 60_000))
    try:
        with threaded.DiscoveryDriver.open(
            str(tmp_path / "d"), 3, listener, seed=bytes(32), event_retry=[20], unicast_retry=[20]
        ) as driver:
            svc = driver.service
            reg, ev = svc.register(["printers"], [f"127.0.0.1:{port}"], b"t", 60_000, driver.now(), listener="L")
            driver.wake()
            driver.handle_datagram(Announcement(R1, ["printers"], LOC1, 1, 60_000).encode())
            assert wait_until(lambda: len(listener.got) == 2), listener.got
            assert {i for e in listener.got for i in ids(e.registrars)} == {R1, R2}
            assert [e.sequence for e in listener.got] == [1, 2]
            assert all(n == 2 for n in listener.attempts.values())  # each failed once, then went
            assert all(e.listener == b"L" and e.handback == b"t" for e in listener.got)
            reply = DiscoveryReply.decode(
                driver.handle_discovery_bytes(DiscoveryRequest.encode(req(1, "get_registrars", cookie=ev.lease.cookie)))
            )
            assert [r["id"] for r in reply["body"]["registrars"]] == [R1, R2]
            assert driver.registrar_unreachable(R1)
            assert wait_until(lambda: len(listener.got) == 3)
            assert listener.got[2].discarded and ids(listener.got[2].registrars) == [R1]
            assert driver.errors == []
    finally:
        stop(srv)


def test_asyncio_driver_delivers_probes_and_retries(tmp_path: Path) -> None:
    async def main() -> None:
        got: List[Delivery] = []
        tries: Dict[int, int] = {}

        async def deliver(e: Delivery) -> Optional[Dict[str, Any]]:
            tries[e.sequence] = tries.get(e.sequence, 0) + 1
            if tries[e.sequence] == 1:
                raise OSError("listener down")
            got.append(e)
            return EventReply.received(e.event_id, e.sequence)

        srv, port = registrar_server(Announcement(R2, ["lab"], "127.0.0.1:1", 1, 60_000))
        try:
            driver = aio.DiscoveryDriver.open(
                str(tmp_path / "d"), 3, deliver, seed=bytes(32), event_retry=[20], unicast_retry=[20]
            )
            async with driver:
                svc = driver.service
                register = req(1, "register", groups=["printers"], locators=[f"127.0.0.1:{port}"], handback="61", duration="60000")
                reply = DiscoveryReply.decode(await driver.handle_discovery(DiscoveryRequest.encode(register), listener=b"L"))
                assert reply["body"]["op"] == "registered" and svc.durable_seq >= 1
                cookie = reply["body"]["cookie"]
                driver.handle_announcement(Announcement(R1, ["printers"], LOC1, 1, 60_000))
                for _ in range(1000):
                    if len(got) == 2:
                        break
                    await asyncio.sleep(0.01)
                assert sorted(i for e in got for i in ids(e.registrars)) == [R1, R2]
                assert [e.sequence for e in got] == [1, 2] and set(tries.values()) == {2}
                renewed = Reply.decode(await driver.handle(Request.renew(2, cookie, 30_000).encode()))
                assert renewed.duration == 30_000
                # R1 unreachable: wanted by group, so discarded; R2 (found by its locator) stays.
                assert driver.registrar_unreachable(R1)
                for _ in range(1000):
                    if len(got) == 3:
                        break
                    await asyncio.sleep(0.01)
                assert got[2].discarded and ids(got[2].registrars) == [R1] and got[2].sequence == 3
                held = DiscoveryReply.decode(await driver.handle_discovery(DiscoveryRequest.encode(req(3, "get_registrars", cookie=cookie))))
                assert [r["id"] for r in held["body"]["registrars"]] == [R2]
        finally:
            stop(srv)

    asyncio.run(main())


def test_driver_reports_what_a_deliverer_answers() -> None:
    seen: List[str] = []

    def deliver(e: Delivery) -> Optional[Dict[str, Any]]:
        seen.append(e.handback.decode())
        if e.handback == b"unknown":
            return EventReply.unknown_event(e.event_id, e.sequence)
        if e.handback == b"broken":
            raise InvalidArgumentError("broken listener")
        if e.handback == b"wrong":
            return EventReply.received(e.event_id + 100, e.sequence)  # about another event: retried
        return None

    svc = service(event_retry=[20])
    start = monotonic_ms()

    def clock() -> int:  # the driver's clock, starting where the registrations were made
        return monotonic_ms() - start

    regs = {h: svc.register(ALL_GROUPS, [], h.encode(), ANY, 0)[0] for h in ["ok", "unknown", "broken", "wrong"]}
    with threaded.DiscoveryDriver(svc, deliver, clock=clock) as driver:
        driver.handle_announcement(Announcement(R1, [], LOC1, 1, 60_000))
        assert wait_until(lambda: len(svc) == 2 and seen.count("wrong") >= 3), (len(svc), seen)
        assert driver.errors == []
    # An unknown-event answer and a definite failure cancelled theirs; the answer about another
    # event is an indefinite failure, retried; the plain return was a delivery, made once.
    assert {r.id for r in svc.registrations()} == {regs["ok"].id, regs["wrong"].id}
    assert seen.count("ok") == 1 and seen.count("unknown") == 1 and seen.count("broken") == 1
    for gone in ("unknown", "broken"):
        with pytest.raises(UnknownLeaseError):
            regs[gone].lease(clock())
    assert ids(regs["ok"].registrars(clock())) == [R1]


def test_probe_tcp_reads_the_registrars_datagram() -> None:
    a = Announcement(R3, ["lab"], "127.0.0.1:7", 9, 5_000)
    srv, port = registrar_server(a)
    svc = service()
    svc.register(NO_GROUPS, [f"127.0.0.1:{port}"], b"", ANY, 0)
    req = svc.poll_transmit(0)
    assert req is not None
    assert threaded.probe_tcp(req) == a
    assert asyncio.run(aio.probe_tcp(req)) == a
    stop(srv)
    with pytest.raises(OSError):
        threaded.probe_tcp(req, timeout=0.5)
