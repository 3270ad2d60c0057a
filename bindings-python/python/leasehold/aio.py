"""asyncio drivers: run leasehold's sans-I/O state machines on the event loop's real clock.

The drivers only convert: they read the clock, sleep until the time the core asks for
(``poll_timeout``), call ``handle_timeout`` and hand what comes out to your callbacks or your
transport.  Every decision about leases stays in the core.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Awaitable, Callable, Optional, Union

from ._clock import monotonic_ms, wait_seconds
from ._native import Expired, Landlord
from ._types import Encoding

__all__ = ["LandlordDriver"]

Clock = Callable[[], int]
ExpiredCallback = Callable[[Expired], Union[None, Awaitable[None]]]


async def _maybe_await(value: object) -> None:
    if inspect.isawaitable(value):
        await value


class LandlordDriver:
    """Runs a landlord's expiry on the event loop.

    ``on_expired`` (plain or ``async``) gets each expired lease.  After changing the landlord
    directly (grant, renew, cancel), call :meth:`wake` so a new earliest deadline is seen; the
    helpers :meth:`handle_bytes` and :meth:`handle_request` do it for you.
    """

    def __init__(
        self,
        landlord: Landlord,
        *,
        on_expired: Optional[ExpiredCallback] = None,
        clock: Clock = monotonic_ms,
    ) -> None:
        self.landlord = landlord
        self.clock = clock
        self._on_expired = on_expired
        self._wake: Optional[asyncio.Event] = None  # made on the loop that runs the driver
        self._task: Optional[asyncio.Task[None]] = None
        self._stopping = False

    def now(self) -> int:
        """The driver's clock, in ms."""
        return self.clock()

    def wake(self) -> None:
        """Re-reads the landlord's next deadline (call after granting or renewing directly).

        Call it from the loop's thread (from another thread, use ``loop.call_soon_threadsafe``).
        """
        if self._wake is not None:
            self._wake.set()

    def handle_bytes(self, data: bytes, encoding: Encoding = "binary") -> bytes:
        """Answers a request message at the driver's clock and returns the reply message."""
        reply = self.landlord.handle_bytes(data, encoding, self.clock())
        self.wake()
        return reply

    async def run(self) -> None:
        """The loop: expire what is due, hand it out, sleep until the next deadline or a wake."""
        wake = self._wake = asyncio.Event()
        while not self._stopping:
            wake.clear()
            self.landlord.handle_timeout(self.clock())
            for expired in self.landlord.drain_expired():
                try:
                    await _maybe_await(self._on_expired(expired) if self._on_expired else None)
                except Exception as exc:  # a callback's failure must not stop expiry
                    asyncio.get_running_loop().call_exception_handler(
                        {"message": "leasehold: on_expired callback failed", "exception": exc}
                    )
            delay = wait_seconds(self.landlord.poll_timeout(), self.clock())
            if self._stopping:
                break
            try:
                await asyncio.wait_for(wake.wait(), delay)
            except asyncio.TimeoutError:
                pass

    def start(self) -> "asyncio.Task[None]":
        """Starts :meth:`run` as a task on the running loop."""
        if self._task is None or self._task.done():
            self._stopping = False
            self._task = asyncio.get_running_loop().create_task(self.run())
        return self._task

    async def stop(self) -> None:
        """Stops the loop and waits for it to finish."""
        self._stopping = True
        self.wake()
        if self._task is not None:
            await self._task
            self._task = None

    async def __aenter__(self) -> "LandlordDriver":
        self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()
