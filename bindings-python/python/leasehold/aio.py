"""asyncio drivers: run leasehold's sans-I/O state machines on the event loop's real clock.

The drivers only convert: they read the clock, sleep until the time the core asks for
(``poll_timeout``), call ``handle_timeout`` and hand what comes out to your callbacks or your
transport.  Every decision about leases stays in the core.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Awaitable, Callable, Generic, Optional, Set, TypeVar, Union

from ._clock import monotonic_ms, wait_seconds
from ._driving import Renewer
from ._errors import IndefiniteError, LeaseError
from ._native import Expired, Landlord, Lease, Reply, Request, Transmit, lease_from_reply
from ._types import Duration, Encoding

__all__ = ["LandlordDriver", "RenewalDriver", "monotonic_ms", "obtain_lease", "Send", "Transport"]

E = TypeVar("E")
#: The host's transport for one landlord: sends a request message, returns the reply message.
Send = Callable[[bytes], Awaitable[bytes]]
#: The host's transport for a renewal driver: (landlord id, request message) -> reply message.
Transport = Callable[[int, bytes], Awaitable[bytes]]

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
        """Stops the loop and waits for it to finish.

        Awaited from ``on_expired`` (inside the loop) it only asks the loop to end, which it does
        once the callback returns.
        """
        self._stopping = True
        self.wake()
        task = self._task
        if task is not None and task is not asyncio.current_task():
            self._task = None
            await task

    async def __aenter__(self) -> "LandlordDriver":
        self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()


async def obtain_lease(
    send: Send,
    resource: bytes,
    duration: Duration,
    *,
    encoding: Encoding = "binary",
    clock: Clock = monotonic_ms,
    request_id: int = 0,
    max_drift_ppm: int = 0,
) -> Lease:
    """Asks a landlord for a lease over ``send``; the lease counts from the time the request was sent.

    A refused grant raises its error (``LeaseDeniedError``, ...); a transport failure raises
    whatever ``send`` raised.
    """
    message = Request.grant(request_id, resource, duration).encode(encoding)
    sent_at = clock()
    reply = Reply.decode(await send(message), encoding)
    return lease_from_reply(reply, sent_at, max_drift_ppm)


class RenewalDriver(Generic[E]):
    """Runs a renewal manager (or renewal service) on the event loop.

    ``transport(landlord, message)`` carries a request message to a landlord and returns its
    reply message; an exception it raises is reported to the manager as an indefinite failure
    (a ``LeaseError`` it raises is reported as itself).  ``on_event`` (plain or ``async``) gets
    every event.  After adding leases (``renew_for``, ``renew_until``, ``cancel``), call
    :meth:`wake`.
    """

    def __init__(
        self,
        renewer: Renewer[E],
        transport: Transport,
        *,
        on_event: Optional[Callable[[E], Union[None, Awaitable[None]]]] = None,
        encoding: Encoding = "binary",
        clock: Clock = monotonic_ms,
    ) -> None:
        self.renewer = renewer
        self.clock = clock
        self._transport = transport
        self._on_event = on_event
        self._encoding: Encoding = encoding
        self._wake: Optional[asyncio.Event] = None
        self._task: Optional[asyncio.Task[None]] = None
        self._sends: Set[asyncio.Task[None]] = set()
        self._stopping = False
        self._exit_flush: Optional[bool] = None  # set when stop() was awaited from inside run()

    def now(self) -> int:
        """The driver's clock, in ms."""
        return self.clock()

    def wake(self) -> None:
        """Re-reads the renewer's timers (call after adding, changing or cancelling leases)."""
        if self._wake is not None:
            self._wake.set()

    async def _send(self, t: Transmit) -> None:
        request_id = t.id
        try:
            data = await self._transport(t.landlord, t.request.encode(self._encoding))
            reply = Reply.decode(data, self._encoding)
        except LeaseError as e:
            self.renewer.handle_failure(request_id, e, self.clock())
        except Exception as e:  # any transport failure is indefinite: the manager retries
            self.renewer.handle_failure(request_id, IndefiniteError(f"indefinite failure: {e!r}", repr(e)), self.clock())
        else:
            self.renewer.handle_reply(reply, self.clock())
        self.wake()

    async def _deliver(self) -> None:
        for event in self.renewer.drain_events():
            try:
                await _maybe_await(self._on_event(event) if self._on_event else None)
            except Exception as exc:  # a callback's failure must not stop renewals
                asyncio.get_running_loop().call_exception_handler(
                    {"message": "leasehold: on_event callback failed", "exception": exc}
                )

    async def run(self) -> None:
        """The loop: advance timers, send what is due, deliver events, sleep until the next timer."""
        loop = asyncio.get_running_loop()
        wake = self._wake = asyncio.Event()
        while not self._stopping:
            wake.clear()
            self.renewer.handle_timeout(self.clock())
            while True:
                t = self.renewer.poll_transmit(self.clock())
                if t is None:
                    break
                task = loop.create_task(self._send(t))
                self._sends.add(task)
                task.add_done_callback(self._sends.discard)
            await self._deliver()
            delay = wait_seconds(self.renewer.poll_timeout(), self.clock())
            if self._stopping:
                break
            try:
                await asyncio.wait_for(wake.wait(), delay)
            except asyncio.TimeoutError:
                pass
        if self._exit_flush is not None:  # stop() was awaited from on_event: finish here
            await self._finish(self._exit_flush)

    def start(self) -> "asyncio.Task[None]":
        """Starts :meth:`run` as a task on the running loop."""
        if self._task is None or self._task.done():
            self._stopping = False
            self._exit_flush = None
            self._task = asyncio.get_running_loop().create_task(self.run())
        return self._task

    async def _finish(self, flush: bool) -> None:
        # Never wait for (or cancel) the task this runs in: stop() may be awaited by a send.
        me = asyncio.current_task()
        if flush and self._sends:
            await asyncio.gather(*[t for t in self._sends if t is not me], return_exceptions=True)
            await self._deliver()
        others = [t for t in self._sends if t is not me]
        for task in others:
            task.cancel()
        if others:
            await asyncio.gather(*others, return_exceptions=True)

    async def stop(self, *, flush: bool = True) -> None:
        """Stops the loop. With ``flush`` (the default) requests already handed out (cancels
        included) are sent and answered first; without it they are abandoned.

        Awaited from ``on_event`` (inside the loop) it asks the loop to end and finish once the
        callback returns; awaited from the transport it does not wait for that send itself.
        """
        if flush and self._task is not None:
            self.renewer.handle_timeout(self.clock())
            while True:
                t = self.renewer.poll_transmit(self.clock())
                if t is None:
                    break
                send = asyncio.get_running_loop().create_task(self._send(t))
                self._sends.add(send)
                send.add_done_callback(self._sends.discard)
        self._stopping = True
        self.wake()
        run = self._task
        if run is not None and run is asyncio.current_task():
            if self._exit_flush is None:
                self._exit_flush = flush
            return
        self._task = None
        if run is not None:
            await run
        await self._finish(flush)

    async def __aenter__(self) -> "RenewalDriver[E]":
        self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()
