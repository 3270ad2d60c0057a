"""The real-clock drivers: expiry happens on time, and both drivers stop cleanly."""

from __future__ import annotations

import asyncio
import threading
import time

import leasehold
from leasehold import ANY, Expired, Landlord, Policy, Reply, Request, aio, threaded


def make() -> Landlord:
    return Landlord(1, Policy.fixed(150), seed=bytes(32))


def test_asyncio_landlord_driver_expires_on_time() -> None:
    async def main() -> None:
        ll = make()
        got: list[tuple[Expired, int]] = []
        done = asyncio.Event()

        async def on_expired(e: Expired) -> None:
            got.append((e, leasehold.monotonic_ms()))
            if len(got) == 2:
                done.set()

        async with aio.LandlordDriver(ll, on_expired=on_expired) as driver:
            t0 = driver.now()
            reply = Reply.decode(driver.handle_bytes(Request.grant(1, b"a", ANY).encode()))
            assert reply.op == "granted"
            ll.grant("b", 100, driver.now())
            driver.wake()
            await asyncio.wait_for(done.wait(), 5)
        assert {e.resource for e, _ in got} == {b"a", "b"}
        assert all(at - t0 >= 100 for _, at in got)
        assert len(ll) == 0

    asyncio.run(main())


def test_asyncio_driver_survives_a_failing_callback_and_stops_idle() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        reported: list[object] = []
        loop.set_exception_handler(lambda _loop, ctx: reported.append(ctx.get("exception")))
        ll = make()
        seen: list[str] = []

        def on_expired(e: Expired) -> None:
            seen.append(e.cookie)
            if len(seen) == 1:
                raise RuntimeError("callback failed")

        driver = aio.LandlordDriver(ll, on_expired=on_expired)
        driver.start()
        ll.grant("a", 50, driver.now())
        ll.grant("b", 60, driver.now())
        driver.wake()
        for _ in range(200):
            if len(seen) == 2:
                break
            await asyncio.sleep(0.01)
        await driver.stop()
        assert len(seen) == 2 and isinstance(reported[0], RuntimeError)
        idle = aio.LandlordDriver(make())  # nothing to expire: waits for a wake, stops at once
        idle.start()
        await asyncio.sleep(0.01)
        await asyncio.wait_for(idle.stop(), 1)

    asyncio.run(main())


def test_threaded_landlord_driver_expires_and_stops() -> None:
    ll = make()
    expired = threading.Event()
    got: list[Expired] = []

    def on_expired(e: Expired) -> None:
        got.append(e)
        expired.set()

    with threaded.LandlordDriver(ll, on_expired=on_expired) as driver:
        t0 = time.monotonic()
        driver.handle_bytes(Request.grant(1, b"x", ANY).encode("json"), "json")
        assert expired.wait(5)
        assert time.monotonic() - t0 >= 0.14
    assert got[0].resource == b"x" and len(ll) == 0
    assert not any(t.name == "leasehold-landlord" for t in threading.enumerate())
