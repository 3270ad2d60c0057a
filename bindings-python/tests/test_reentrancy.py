"""Re-entrancy: user code (destructors, callbacks, transports, event handlers, collector-run
finalizers) that calls back into leasehold must work, never hang and never panic.

Every scenario runs on a worker thread joined with a time limit, so a deadlock fails the test
instead of blocking the run.
"""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import pytest

import leasehold
from conftest import bounded
from leasehold import (
    ANY,
    FOREVER,
    DecodeError,
    Expired,
    Landlord,
    Lease,
    LeaseDeniedError,
    Policy,
    Poller,
    RenewalEvent,
    RenewalManager,
    RenewalService,
    Reply,
    Request,
    SetEvent,
    aio,
    lease_from_reply,
    threaded,
)

class CallsBack:
    """A resource whose destructor calls ``action`` and records what it got (or raised)."""

    def __init__(self, seen: List[object], action: Callable[[], object]) -> None:
        self.seen = seen
        self.action = action

    def __del__(self) -> None:
        try:
            self.seen.append(self.action())
        except BaseException as e:  # recorded, so the test can see a failure
            self.seen.append(e)


def landlord(max_leases: Optional[int] = None) -> Landlord:
    policy = Policy.bounded(60_000, 30_000)
    if max_leases is not None:
        policy = Policy.capacity(max_leases, policy)
    return Landlord(3, policy, seed=bytes(range(32)))


def no_errors(seen: List[object]) -> None:
    assert not [s for s in seen if isinstance(s, BaseException)], seen


def test_cancel_through_handle_request_releases_the_resource_after_the_lock() -> None:
    ll = landlord()
    seen: List[object] = []
    g = ll.grant(CallsBack(seen, lambda: (len(ll), ll.grant(b"new", ANY, 5).duration)), ANY, 0)

    def scenario() -> Reply:
        return ll.handle_request(Request.cancel(1, g.cookie), 10)

    reply = bounded(scenario)
    assert reply.op == "cancelled"
    assert seen == [(0, 30_000)] and len(ll) == 1  # __del__ saw the lease gone and granted another


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_cancel_all_through_handle_bytes(encoding: leasehold.Encoding) -> None:
    ll = landlord()
    seen: List[object] = []
    cookies = [ll.grant(CallsBack(seen, lambda: len(ll)), ANY, 0).cookie for _ in range(5)]
    unknown = "f" * 32

    def scenario() -> Reply:
        msg = Request.cancel_all(2, cookies + [unknown]).encode(encoding)
        return Reply.decode(ll.handle_bytes(msg, encoding, 10), encoding)

    reply = bounded(scenario)
    assert reply.op == "cancelled_all" and reply.results is not None
    assert reply.results[:5] == [None] * 5 and isinstance(reply.results[5], leasehold.UnknownLeaseError)
    no_errors(seen)
    assert sorted(int(str(s)) for s in seen) == [0] * 5  # each ran after the whole batch, unlocked


def test_single_cancel_and_cancel_all_through_handle_bytes() -> None:
    ll = landlord()
    seen: List[object] = []
    a = ll.grant(CallsBack(seen, lambda: ll.get(b_cookie[0], 10)), ANY, 0)
    b_cookie = [ll.grant(b"b", ANY, 0).cookie]

    def scenario() -> None:
        r = Reply.decode(ll.handle_bytes(Request.cancel(1, a.cookie).encode(), "binary", 10))
        assert r.op == "cancelled"
        r = ll.handle_request(Request.cancel_all(2, b_cookie), 11)
        assert r.op == "cancelled_all"

    bounded(scenario)
    assert seen == [(30_000, b"b")]  # the destructor read another lease while the landlord was free
    assert len(ll) == 0


def test_direct_cancel_and_cancel_all() -> None:
    ll = landlord()
    seen: List[object] = []
    c1 = ll.grant(CallsBack(seen, lambda: len(ll)), ANY, 0).cookie
    c2 = ll.grant(CallsBack(seen, lambda: ll.renew(c3, ANY, 20)), ANY, 0).cookie
    c3 = ll.grant(b"kept", ANY, 0).cookie

    def scenario() -> None:
        ll.cancel(c1, 10)  # the returned resource dies here, in the caller
        out = ll.cancel_all([c2, "0" * 32], 10)
        assert isinstance(out[1], leasehold.UnknownLeaseError)
        del out

    bounded(scenario)
    assert seen == [2, 30_000]


def test_expired_resources_die_outside_the_lock() -> None:
    ll = landlord()
    seen: List[object] = []
    for i in range(4):
        ll.grant(CallsBack(seen, lambda: (len(ll), ll.poll_timeout())), 1_000 + i, 0)

    def scenario() -> None:
        ll.handle_timeout(10_000)
        first = ll.poll_expired()
        assert first is not None
        del first
        ll.drain_expired()  # dropped at once

    bounded(scenario)
    no_errors(seen)
    assert len(seen) == 4 and seen[-1] == (0, None)


def test_a_denied_grant_and_a_failed_snapshot_release_resources_safely() -> None:
    ll = landlord(max_leases=1)
    seen: List[object] = []
    ll.grant(b"only", ANY, 0)

    def scenario() -> None:
        with pytest.raises(LeaseDeniedError):
            ll.grant(CallsBack(seen, lambda: len(ll)), ANY, 0)
        ll.cancel(ll.leases()[0][0], 1)
        ll.grant(CallsBack(seen, lambda: len(ll)), ANY, 2)
        with pytest.raises(TypeError):
            ll.snapshot(3)  # an object resource without encode=
        with pytest.raises(ZeroDivisionError):
            ll.snapshot(3, encode=lambda r: bytes([len(ll) // 0]))
        text = ll.snapshot(3, encode=lambda r: bytes([len(ll)]))  # encode may call back in
        assert json.loads(text)["leases"][0]["resource"] == "01"

    bounded(scenario)
    assert seen == [1]  # the denied resource; the granted one is still held


def test_restore_failing_half_way_releases_what_it_decoded() -> None:
    ll = landlord()
    for i in range(3):
        ll.grant(bytes([i]), ANY, 0)
    text = ll.snapshot(0)
    other = landlord()
    seen: List[object] = []
    made: List[int] = []

    def decode(b: bytes) -> CallsBack:
        made.append(b[0])
        if len(made) == 2 and raising[0]:
            raise RuntimeError("decode failed")
        # the destructor calls a live landlord, and restore itself (re-entrantly, from decode)
        return CallsBack(seen, lambda: (other.grant(b"x", ANY, 0).duration, len(Landlord.restore(text, Policy.fixed(1), 0))))

    raising = [True]
    broken = json.loads(text)
    broken["leases"].append(dict(broken["leases"][0]))  # one cookie twice: inconsistent

    def scenario() -> Landlord:
        with pytest.raises(RuntimeError, match="decode failed"):
            Landlord.restore(text, Policy.fixed(1_000), 0, decode=decode)
        raising[0] = False
        with pytest.raises(DecodeError):
            Landlord.restore(json.dumps(broken), Policy.fixed(1_000), 0, decode=decode)
        back = Landlord.restore(text, Policy.fixed(1_000), 0, decode=decode)
        assert len(back) == 3
        return back

    back = bounded(scenario)
    no_errors(seen)
    # 1 object from the failed decode, 4 from the inconsistent snapshot
    assert seen == [(30_000, 3)] * 5 and len(other) == 5 and len(back) == 3


def test_a_landlord_dropped_while_holding_resources() -> None:
    other = landlord()
    seen: List[object] = []

    def scenario() -> None:
        ll = landlord()
        for _ in range(3):
            ll.grant(CallsBack(seen, lambda: other.grant(b"from __del__", ANY, 0).duration), ANY, 0)
        ll.handle_timeout(40_000)  # expired, queued and never drained
        ll.grant(CallsBack(seen, lambda: "fourth"), ANY, 40_000)
        del ll
        gc.collect()

    bounded(scenario)
    no_errors(seen)
    assert sorted(map(str, seen)) == sorted(["30000"] * 3 + ["fourth"]) and len(other) == 3


def test_collector_finalizers_that_call_back_during_binding_calls() -> None:
    ll = landlord()
    manager = RenewalManager()
    calls: List[int] = []

    class Cycle:
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            calls.append(len(ll) + len(manager))
            ll.grant(b"gc", ANY, 0)

    def scenario() -> None:
        old = gc.get_threshold()
        gc.set_threshold(1, 1, 1)  # collect at almost every allocation
        try:
            g = ll.grant(b"r", ANY, 0)
            lease = Lease(ll.id, g.cookie, g.expiration)
            manager.renew_for(lease, FOREVER, ANY, 0)
            unknown = Lease(1, "0" * 32, 0)
            for i in range(300):
                Cycle()  # garbage at once: the next allocation collects it
                try:
                    manager.remove(unknown)  # raises: the error is built unlocked
                except leasehold.UnknownLeaseError:
                    pass
                Cycle()
                ll.renew(g.cookie, ANY, i)
                ll.leases()
                ll.get(g.cookie, i)
                ll.renew_all([(g.cookie, ANY), ("0" * 32, ANY)], i)
                ll.handle_bytes(Request.renew(i, g.cookie, ANY).encode(), "binary", i)
                manager.leases()
                manager.handle_timeout(i)
                manager.drain_events()
        finally:
            gc.set_threshold(*old)
        gc.collect()

    bounded(scenario)
    assert len(calls) >= 600


def test_poller_resources_die_outside_its_lock() -> None:
    poller = Poller(1, 3.0, 15_000, FOREVER, 0.2, seed=bytes(32))
    seen: List[object] = []
    admitted = [poller.join(CallsBack(seen, lambda: (len(poller), poller.poll_timeout() is not None)), 0) for _ in range(3)]

    def scenario() -> None:
        poller.leave(admitted[0].cookie, 1)  # returned, dropped by the caller
        now = 0
        for _ in range(500):  # nobody answers: the other two expire
            poller.handle_timeout(now)
            while poller.poll_transmit() is not None:
                pass
            while (e := poller.poll_expired()) is not None:
                del e
            nxt = poller.poll_timeout()
            if nxt is None or len(poller) == 0:
                break
            now = max(nxt, now + 1)

    bounded(scenario)
    no_errors(seen)
    assert len(seen) == 3 and len(poller) == 0


# --- drivers: callbacks and transports that call back into the driver --------------------


def grant_over(ll: Landlord, duration: int, now: int) -> Lease:
    return lease_from_reply(ll.handle_request(Request.grant(1, b"r", duration), now), now)


def test_threaded_landlord_driver_callback_calls_back_and_stops_it() -> None:
    ll = Landlord(1, Policy.fixed(50), seed=bytes(32))
    got: List[object] = []
    driver = threaded.LandlordDriver(ll)

    def on_expired(e: Expired) -> None:
        got.append((e.resource, len(ll)))
        if e.resource == b"first":
            ll.grant(b"second", ANY, driver.now())  # the landlord, from its own expiry thread
            driver.wake()
        else:
            driver.stop()  # stopping from inside the callback returns at once

    driver._on_expired = on_expired

    def scenario() -> None:
        with driver:
            ll.grant(b"first", ANY, driver.now())
            driver.wake()
            deadline = time.monotonic() + 10
            while len(got) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
        assert driver._thread is None

    bounded(scenario)
    assert got == [(b"first", 0), (b"second", 0)] and not driver.errors


def test_threaded_renewal_driver_event_handler_and_transport_call_back() -> None:
    ll = Landlord(1, Policy.bounded(400, 400), seed=bytes(32))
    manager = RenewalManager(initial_rtt=5, min_rto=20)
    events: List[RenewalEvent] = []
    sent: List[str] = []
    stopped = threading.Event()
    box: Dict[str, threaded.RenewalDriver[RenewalEvent]] = {}

    def transport(landlord_id: int, msg: bytes) -> bytes:
        req = Request.decode(msg)
        sent.append(req.op)
        assert len(manager) >= 0  # the manager, from a sender thread
        if req.op == "cancel":
            box["d"].stop()  # from the transport: asks, returns, the driver finishes
        return ll.handle_bytes(msg, "binary", box["d"].now())

    def on_event(e: RenewalEvent) -> None:
        events.append(e)
        d = box["d"]
        if e.kind == "desired_expiration_reached" and len(events) == 1:
            extra = grant_over(ll, 400, d.now())
            manager.renew_for(extra, FOREVER, 400, d.now())  # back into the manager
            manager.cancel(extra, d.now())
            d.wake()  # back into the driver, from its own thread

    def scenario() -> None:
        d = threaded.RenewalDriver(manager, transport, on_event=on_event)
        box["d"] = d
        lease = grant_over(ll, 400, d.now())
        manager.renew_for(lease, 150, 400, d.now())
        d.start()
        d.wake()
        deadline = time.monotonic() + 10
        while "cancel" not in sent and time.monotonic() < deadline:
            time.sleep(0.01)
        t = d._thread
        if t is not None:
            t.join(10)  # ends by itself after the stop
            assert not t.is_alive()
        stopped.set()
        d.stop()  # a second stop from outside is harmless

    bounded(scenario)
    assert stopped.is_set() and "cancel" in sent and events[0].kind == "desired_expiration_reached"
    assert len(manager) == 0 and sent.count("cancel") == 1
    assert manager.stats()["leases_cancelled"] == 1  # the stopping transport's reply was taken


def test_threaded_renewal_driver_stopped_from_its_event_handler() -> None:
    ll = Landlord(1, Policy.bounded(400, 400), seed=bytes(32))
    manager = RenewalManager(initial_rtt=5, min_rto=20)
    box: Dict[str, threaded.RenewalDriver[RenewalEvent]] = {}
    events: List[str] = []

    def on_event(e: RenewalEvent) -> None:
        events.append(e.kind)
        box["d"].stop()

    def scenario() -> None:
        d = threaded.RenewalDriver(manager, lambda _l, m: ll.handle_bytes(m, "binary", box["d"].now()), on_event=on_event)
        box["d"] = d
        manager.renew_for(grant_over(ll, 400, d.now()), 100, 400, d.now())
        d.start()
        t = d._thread
        assert t is not None
        t.join(10)
        assert not t.is_alive() and not d.errors

    bounded(scenario)
    assert events == ["desired_expiration_reached"]


def test_asyncio_drivers_stopped_from_callbacks_and_transports() -> None:
    async def main() -> List[str]:
        ll = Landlord(1, Policy.bounded(400, 400), seed=bytes(32))
        log: List[str] = []

        ld = aio.LandlordDriver(ll)

        async def on_expired(e: Expired) -> None:
            log.append(f"expired {len(ll)}")
            await ld.stop()  # from inside the loop: returns at once

        ld._on_expired = on_expired
        ld.start()
        ll.grant(b"x", 50, ld.now())
        ld.wake()
        assert ld._task is not None
        await asyncio.wait_for(asyncio.shield(ld._task), 10)

        manager = RenewalManager(initial_rtt=5, min_rto=20)
        box: Dict[str, aio.RenewalDriver[RenewalEvent]] = {}

        async def transport(_l: int, msg: bytes) -> bytes:
            req = Request.decode(msg)
            log.append(req.op)
            if req.op == "cancel":
                await box["d"].stop()  # from a send task: must not wait for itself
            return ll.handle_bytes(msg, "binary", box["d"].now())

        async def on_event(e: RenewalEvent) -> None:
            log.append(e.kind)
            d = box["d"]
            extra = grant_over(ll, 400, d.now())
            manager.renew_for(extra, FOREVER, 400, d.now())
            manager.cancel(extra, d.now())
            d.wake()

        d = aio.RenewalDriver(manager, transport, on_event=on_event)
        box["d"] = d
        manager.renew_for(grant_over(ll, 400, d.now()), 100, 400, d.now())
        task = d.start()
        await asyncio.wait_for(asyncio.shield(task), 10)
        await asyncio.wait_for(d.stop(), 10)

        # stop awaited from on_event
        m2 = RenewalManager(initial_rtt=5, min_rto=20)
        box2: Dict[str, aio.RenewalDriver[RenewalEvent]] = {}

        async def t2(_l: int, msg: bytes) -> bytes:
            return ll.handle_bytes(msg, "binary", box2["d"].now())

        async def on_event2(e: RenewalEvent) -> None:
            log.append("2:" + e.kind)
            await box2["d"].stop()

        d2 = aio.RenewalDriver(m2, t2, on_event=on_event2)
        box2["d"] = d2
        m2.renew_for(grant_over(ll, 400, d2.now()), 100, 400, d2.now())
        await asyncio.wait_for(asyncio.shield(d2.start()), 10)
        return log

    log = bounded(lambda: asyncio.run(main()))
    assert log[0] == "expired 0"
    assert "desired_expiration_reached" in log and "cancel" in log and log[-1] == "2:desired_expiration_reached"


def test_renewal_service_event_handler_calls_back_into_the_service() -> None:
    svc = RenewalService(9, seed=bytes(32))
    printer = Landlord(1, Policy.bounded(60_000, 60_000), seed=bytes(32))
    got: List[SetEvent] = []
    box: Dict[str, threaded.RenewalDriver[SetEvent]] = {}

    def on_event(e: SetEvent) -> None:
        got.append(e)
        d = box["d"]
        rs, _ = svc.create_set(60_000, d.now())  # back into the service from its driver
        assert len(svc.sets()) >= 2 and rs.leases(d.now()) == []
        d.stop()

    def scenario() -> None:
        d = threaded.RenewalDriver(svc, lambda _l, m: printer.handle_bytes(m, "binary", box["d"].now()), on_event=on_event)
        box["d"] = d
        rs, _ = svc.create_set(300, d.now())
        rs.set_expiration_warning_listener(250, b"hb", d.now())
        d.start()
        t = d._thread
        assert t is not None
        t.join(10)
        assert not t.is_alive() and not d.errors

    bounded(scenario)
    assert [e.kind for e in got] == ["expiration_warning"] and got[0].handback == b"hb"
