"""asyncio drivers: run leasehold's sans-I/O state machines on the event loop's real clock.

The drivers only convert: they read the clock, sleep until the time the core asks for
(``poll_timeout``), call ``handle_timeout`` and hand what comes out to your callbacks or your
transport.  Every decision about leases stays in the core.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Awaitable, Callable, Generic, Optional, Sequence, Set, TypeVar, Union

from ._clock import monotonic_ms, wait_seconds
from ._driving import Renewer, due, settle
from ._native import Expired, Landlord, Lease, Policy, Reply, Request, Transmit, lease_from_reply
from ._types import Duration, Encoding

__all__ = ["LandlordDriver", "RenewalDriver", "monotonic_ms", "obtain_lease", "Send", "Transport"]

E = TypeVar("E")
T = TypeVar("T")
#: The host's transport for one landlord: sends a request message, returns the reply message.
Send = Callable[[bytes], Awaitable[bytes]]
#: The host's transport for a renewal driver: (landlord id, request message) -> reply message.
Transport = Callable[[int, bytes], Awaitable[bytes]]
#: Where requests go: a transport, or the URL (or list of URLs) of landlord servers over HTTP.
Servers = Union[str, Sequence[str]]

Clock = Callable[[], int]
ExpiredCallback = Callable[[Expired], Union[None, Awaitable[None]]]


async def _call(callback: Optional[Callable[[T], object]], value: T, what: str) -> None:
    """Runs a user callback (plain or ``async``); its failure goes to the loop's exception
    handler and never stops the driver."""
    if callback is None:
        return
    try:
        result = callback(value)
        if inspect.isawaitable(result):
            await result
    except Exception as exc:
        asyncio.get_running_loop().call_exception_handler(
            {"message": f"leasehold: {what} callback failed", "exception": exc}
        )


class _Loop:
    """A task that runs ``_step`` whenever a deadline passes or :meth:`wake` is called."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._wake: Optional[asyncio.Event] = None  # made on the loop that runs the driver
        self._task: Optional[asyncio.Task[None]] = None
        self._stopping = False

    def now(self) -> int:
        """The driver's clock, in ms."""
        return self.clock()

    def wake(self) -> None:
        """Runs the loop now: call after changing the driven object directly, so that its new
        earliest deadline (or the requests it wants sent) is seen.

        Call it from the loop's thread (from another thread, use ``loop.call_soon_threadsafe``).
        """
        if self._wake is not None:
            self._wake.set()

    async def _step(self) -> Optional[int]:
        """One round of work; returns the next deadline (ms on the clock), None for none."""
        raise NotImplementedError

    async def _exited(self) -> None:
        """Runs in the task after the loop ends."""

    async def run(self) -> None:
        """The loop: do what is due, then sleep until the next deadline or a wake."""
        wake = self._wake = asyncio.Event()
        while not self._stopping:
            wake.clear()
            delay = wait_seconds(await self._step(), self.clock())
            if self._stopping:
                break
            try:
                await asyncio.wait_for(wake.wait(), delay)
            except asyncio.TimeoutError:
                pass
        await self._exited()

    def start(self) -> "asyncio.Task[None]":
        """Starts :meth:`run` as a task on the running loop."""
        if self._task is None or self._task.done():
            self._stopping = False
            self._started()
            self._task = asyncio.get_running_loop().create_task(self.run())
        return self._task

    def _started(self) -> None:
        """Called when a new run starts."""

    async def _halt(self) -> bool:
        """Asks the loop to end and waits for it, unless awaited from inside it (then True)."""
        self._stopping = True
        self.wake()
        task = self._task
        if task is not None and task is asyncio.current_task():
            return True
        self._task = None
        if task is not None:
            await task
        return False


class LandlordDriver(_Loop):
    """Runs a landlord's expiry on the event loop.

    ``on_expired`` (plain or ``async``) gets each expired lease.  After changing the landlord
    directly (grant, renew, cancel), call :meth:`wake` so a new earliest deadline is seen; the
    helpers :meth:`handle_bytes` and :meth:`handle` do it for you.  A durable landlord
    (:meth:`open`, or ``Landlord.open``) answers only once what it answers is on disk: serve it
    with :meth:`handle`, which waits for the disk off the loop, one sync for every request
    that arrived meanwhile.
    """

    def __init__(
        self,
        landlord: Landlord,
        *,
        on_expired: Optional[ExpiredCallback] = None,
        clock: Clock = monotonic_ms,
    ) -> None:
        super().__init__(clock)
        self.landlord = landlord
        self._on_expired = on_expired
        self._sync: Optional["asyncio.Future[int]"] = None

    @classmethod
    def open(
        cls,
        data_dir: str,
        id: int,
        policy: Policy,
        *,
        on_expired: Optional[ExpiredCallback] = None,
        clock: Clock = monotonic_ms,
        **settings: Any,
    ) -> "LandlordDriver":
        """A driver of the durable landlord kept in ``data_dir`` (created if needed, recovered
        if not: see ``Landlord.open``, which gets ``settings``), resumed at the driver's clock."""
        landlord = Landlord.open(data_dir, id, policy, clock(), **settings)
        return cls(landlord, on_expired=on_expired, clock=clock)

    def handle_bytes(self, data: bytes, encoding: Encoding = "binary") -> bytes:
        """Answers a request message at the driver's clock and returns the reply message.

        For a durable landlord this blocks until the reply's records are durable: on the loop,
        prefer :meth:`handle`.
        """
        reply = self.landlord.handle_bytes(data, encoding, self.clock())
        self.wake()
        return reply

    async def handle(self, data: bytes, encoding: Encoding = "binary") -> bytes:
        """Answers a request message and returns the reply message once it may leave: for a
        durable landlord, once the records it depends on are durable (the sync runs off the
        loop, and one sync covers every request answered meanwhile: group commit)."""
        reply, seq = self.landlord.answer_bytes(data, encoding, self.clock())
        self.wake()
        await self._durable(seq)
        return reply

    async def _durable(self, seq: int) -> None:
        """Waits until journal record ``seq`` is durable, starting a sync off the loop when none
        is under way; requests answered during a sync wait for the next one."""
        while self.landlord.durable_seq < seq:
            sync = self._sync
            if sync is None:
                sync = asyncio.get_running_loop().run_in_executor(None, self.landlord.commit)
                self._sync = sync
            try:
                await asyncio.shield(sync)
            finally:
                if self._sync is sync and sync.done():
                    self._sync = None

    async def _step(self) -> Optional[int]:
        self.landlord.handle_timeout(self.clock())
        # Expired leases are journaled as handed out (and time while leases are held): durable
        # before anyone acts on them.
        expired, seq = self.landlord.take_expired()
        await self._durable(seq)
        for e in expired:
            await _call(self._on_expired, e, "on_expired")
        return self.landlord.poll_timeout()

    async def stop(self) -> None:
        """Stops the loop and waits for it to finish.

        Awaited from ``on_expired`` (inside the loop) it only asks the loop to end, which it does
        once the callback returns.
        """
        await self._halt()

    async def __aenter__(self) -> "LandlordDriver":
        self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()


def _sender(transport: Union[Transport, Servers], encoding: Encoding, timeout: float) -> Transport:
    if isinstance(transport, str) or not callable(transport):
        from .http import Cluster

        return Cluster(transport, encoding=encoding, timeout=timeout).atransport
    return transport


async def obtain_lease(
    send: Union[Send, Servers],
    resource: bytes,
    duration: Duration,
    *,
    encoding: Encoding = "binary",
    clock: Clock = monotonic_ms,
    request_id: int = 0,
    max_drift_ppm: int = 0,
    timeout: float = 1.0,
) -> Lease:
    """Asks a landlord for a lease over ``send`` (or by HTTP from the server URL or URLs given
    instead, each tried in turn); the lease counts from the time the request was sent.

    A refused grant raises its error (``LeaseDeniedError``, ...); a transport failure raises
    whatever ``send`` raised.
    """
    if isinstance(send, str) or not callable(send):
        from .http import Cluster

        send = Cluster(send, encoding=encoding, timeout=timeout).asend
    message = Request.grant(request_id, resource, duration).encode(encoding)
    sent_at = clock()
    reply = Reply.decode(await send(message), encoding)
    return lease_from_reply(reply, sent_at, max_drift_ppm)


class RenewalDriver(_Loop, Generic[E]):
    """Runs a renewal manager (or renewal service) on the event loop.

    ``transport(landlord, message)`` carries a request message to a landlord and returns its
    reply message; instead of a transport, give the URL or list of URLs of landlord servers
    (``leasehold.http.Cluster``: each tried in turn, ``timeout`` seconds per attempt).  An
    exception the transport raises is reported to the manager as an indefinite failure (a
    ``LeaseError`` it raises is reported as itself).  ``on_event`` (plain or ``async``) gets
    every event.  After adding leases (``renew_for``, ``renew_until``, ``cancel``), call
    :meth:`wake`.
    """

    def __init__(
        self,
        renewer: Renewer[E],
        transport: Union[Transport, Servers],
        *,
        on_event: Optional[Callable[[E], Union[None, Awaitable[None]]]] = None,
        encoding: Encoding = "binary",
        clock: Clock = monotonic_ms,
        timeout: float = 1.0,
    ) -> None:
        super().__init__(clock)
        self.renewer = renewer
        self._transport = _sender(transport, encoding, timeout)
        self._on_event = on_event
        self._encoding: Encoding = encoding
        self._sends: Set[asyncio.Task[None]] = set()
        self._exit_flush: Optional[bool] = None  # set when stop() was awaited from inside run()

    async def _send(self, t: Transmit) -> None:
        request_id = t.id
        try:
            data = await self._transport(t.landlord, t.request.encode(self._encoding))
        except Exception as e:
            settle(self.renewer, request_id, self.clock, self._encoding, error=e)
        else:
            settle(self.renewer, request_id, self.clock, self._encoding, data)
        self.wake()

    def _launch(self) -> None:
        """Sends every request that is due, each in its own task."""
        loop = asyncio.get_running_loop()
        for t in due(self.renewer, self.clock):
            task = loop.create_task(self._send(t))
            self._sends.add(task)
            task.add_done_callback(self._sends.discard)

    async def _deliver(self) -> None:
        for event in self.renewer.drain_events():
            await _call(self._on_event, event, "on_event")

    async def _step(self) -> Optional[int]:
        self._launch()
        await self._deliver()
        return self.renewer.poll_timeout()

    async def _exited(self) -> None:
        if self._exit_flush is not None:  # stop() was awaited from on_event: finish here
            await self._finish(self._exit_flush)

    def _started(self) -> None:
        self._exit_flush = None

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
            self._launch()
        if await self._halt():
            if self._exit_flush is None:
                self._exit_flush = flush
            return
        await self._finish(flush)

    async def __aenter__(self) -> "RenewalDriver[E]":
        self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()
