"""asyncio drivers: run leasehold's sans-I/O state machines on the event loop's real clock.

The drivers only convert: they read the clock, sleep until the time the core asks for
(``poll_timeout``), call ``handle_timeout`` and hand what comes out to your callbacks or your
transport.  Every decision about leases stays in the core.
"""

from __future__ import annotations

import asyncio
import inspect
from functools import partial
from typing import Any, Dict, Awaitable, Callable, Generic, List, Optional, Sequence, Set, TypeVar, Union

from ._clock import monotonic_ms, wait_seconds
from ._driving import DiscoveryCalls, ProbeResult, Renewer, due, report_delivery, report_probe, settle
from .discovery import ANNOUNCEMENT_MAX_BYTES, Announcement, Delivery, DiscoveryService, UnicastRequest
from ._native import Expired, Landlord, Lease, Policy, Reply, Request, Transmit, lease_from_reply
from ._types import Duration, Encoding

__all__ = [
    "DiscoveryDriver", "LandlordDriver", "RenewalDriver", "monotonic_ms", "obtain_lease", "probe_tcp",
    "Deliver", "Probe", "Send", "Transport",
]

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


class _Syncer:
    """Waits until a journal record of a durable part (a landlord, a discovery service) is
    durable, syncing off the loop: one sync at a time, and every waiter that arrives during it
    waits for the next one (group commit)."""

    def __init__(self, part: Union[Landlord, DiscoveryService]) -> None:
        self.part = part
        self._sync: Optional["asyncio.Future[int]"] = None

    async def wait(self, seq: int) -> None:
        while self.part.durable_seq < seq:
            sync = self._sync
            if sync is None:
                sync = asyncio.get_running_loop().run_in_executor(None, self.part.commit)
                self._sync = sync
            try:
                await asyncio.shield(sync)
            finally:
                if self._sync is sync and sync.done():
                    self._sync = None


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
        self._syncer = _Syncer(landlord)

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
        """Waits until journal record ``seq`` is durable (a sync off the loop, shared)."""
        await self._syncer.wait(seq)

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


#: A job of a driver: one request's I/O, reporting its own outcome to the part.
Job = Callable[[], Awaitable[None]]


class _Worker(_Loop):
    """A driver loop that runs the I/O its part asks for as tasks, one per request, and stops
    either after finishing what is under way (``flush``) or at once.

    A driver says what is due (:meth:`_jobs`: coroutine functions, each reporting its own
    outcome to the part), what to deliver in the loop (:meth:`_deliver`) and when to run next
    (:meth:`_next`).  Jobs and callbacks may await :meth:`stop`: it does not wait for itself.
    """

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock)
        self._sends: Set[asyncio.Task[None]] = set()
        self._exit_flush: Optional[bool] = None  # set when stop() was awaited from inside run()

    async def _jobs(self) -> List[Job]:
        """Advances the part to now and takes what it wants done."""
        raise NotImplementedError

    async def _deliver(self) -> None:
        """Delivers what the part handed out, in the loop."""

    def _next(self) -> Optional[int]:
        """When to run again (ms on the clock), None for never."""
        raise NotImplementedError

    async def _job(self, job: Job) -> None:
        try:
            await job()
        except Exception as exc:  # a job reports its own outcome; anything else is reported here
            asyncio.get_running_loop().call_exception_handler(
                {"message": "leasehold: a driver's job failed", "exception": exc}
            )
        self.wake()

    async def _launch(self) -> None:
        """Starts every job that is due, each in its own task."""
        loop = asyncio.get_running_loop()
        for job in await self._jobs():
            task = loop.create_task(self._job(job))
            self._sends.add(task)
            task.add_done_callback(self._sends.discard)

    async def _step(self) -> Optional[int]:
        await self._launch()
        await self._deliver()
        return self._next()

    async def _exited(self) -> None:
        if self._exit_flush is not None:  # stop() was awaited from inside: finish here
            await self._finish(self._exit_flush)

    def _started(self) -> None:
        self._exit_flush = None

    async def _finish(self, flush: bool) -> None:
        # Never wait for (or cancel) the task this runs in: stop() may be awaited by a job.
        me = asyncio.current_task()
        if flush and self._sends:
            await asyncio.gather(*[t for t in self._sends if t is not me], return_exceptions=True)
            await self._deliver()
        others = [t for t in self._sends if t is not me]
        for task in others:
            task.cancel()
        if others:
            await asyncio.gather(*others, return_exceptions=True)

    async def _stop(self, flush: bool) -> None:
        if flush and self._task is not None:
            await self._launch()
        if await self._halt():
            if self._exit_flush is None:
                self._exit_flush = flush
            return
        await self._finish(flush)


class RenewalDriver(_Worker, Generic[E]):
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

    async def _send(self, t: Transmit) -> None:
        request_id = t.id
        try:
            data = await self._transport(t.landlord, t.request.encode(self._encoding))
        except Exception as e:
            settle(self.renewer, request_id, self.clock, self._encoding, error=e)
        else:
            settle(self.renewer, request_id, self.clock, self._encoding, data)

    async def _jobs(self) -> List[Job]:
        return [partial(self._send, t) for t in due(self.renewer, self.clock)]

    async def _deliver(self) -> None:
        for event in self.renewer.drain_events():
            await _call(self._on_event, event, "on_event")

    def _next(self) -> Optional[int]:
        return self.renewer.poll_timeout()

    async def stop(self, *, flush: bool = True) -> None:
        """Stops the loop. With ``flush`` (the default) requests already handed out (cancels
        included) are sent and answered first; without it they are abandoned.

        Awaited from ``on_event`` (inside the loop) it asks the loop to end and finish once the
        callback returns; awaited from the transport it does not wait for that send itself.
        """
        await self._stop(flush)

    async def __aenter__(self) -> "RenewalDriver[E]":
        self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()


async def probe_tcp(request: UnicastRequest, timeout: float = 1.0) -> Announcement:
    """Unicast discovery as the project's lookup services answer it (``examples/discovery``): a
    TCP connection to the locator, on which the registrar writes its announcement datagram and
    closes. A refused connection, a time-out or a bad datagram raises (the probe failed)."""

    async def read() -> bytes:
        reader, writer = await asyncio.open_connection(request.host, request.port)
        try:
            return await reader.read(ANNOUNCEMENT_MAX_BYTES + 1)
        finally:
            writer.close()

    data = await asyncio.wait_for(read(), timeout)
    return Announcement.decode(data)


#: Carries an event to its listener (``event.listener``): returns None once delivered, or the
#: listener's ``EventReply``; raises when it could not deliver. Plain or ``async``.
Deliver = Callable[[Delivery], Union[Optional[Dict[str, Any]], Awaitable[Optional[Dict[str, Any]]]]]
#: Unicast discovery of a locator: returns what answered there; raises when nothing did.
Probe = Callable[[UnicastRequest], Union[ProbeResult, Awaitable[ProbeResult]]]


async def _maybe_await(value: Union[T, Awaitable[T]]) -> T:
    if inspect.isawaitable(value):
        return await value
    return value


class DiscoveryDriver(DiscoveryCalls, _Worker):
    """Runs a lookup discovery service on the event loop.

    Each event goes out in its own task through ``deliver(event)`` (to ``event.listener``;
    events of one registration one at a time, in order), each unicast discovery through
    ``probe(request)`` (default :func:`probe_tcp`); both may be plain or ``async``.  Their
    outcomes go back to the service, which retries failures with its back-off.  A durable
    service (:meth:`open`, or ``DiscoveryService.open``) hands nothing out before it is on disk
    (syncs run off the loop, one for everything due meanwhile).

    Feed it what the host hears with :meth:`handle_datagram`, :meth:`handle_announcement` and
    :meth:`registrar_unreachable`; answer clients with :meth:`handle_discovery` and
    :meth:`handle` (registration leases), which wait for the disk off the loop.
    """

    def __init__(
        self,
        service: DiscoveryService,
        deliver: Deliver,
        *,
        probe: Probe = probe_tcp,
        clock: Clock = monotonic_ms,
    ) -> None:
        super().__init__(clock)
        self.service = service
        self._deliver_event = deliver
        self._probe = probe
        self._syncer = _Syncer(service)

    @classmethod
    def open(
        cls,
        data_dir: str,
        id: int,
        deliver: Deliver,
        *,
        probe: Probe = probe_tcp,
        clock: Clock = monotonic_ms,
        **settings: Any,
    ) -> "DiscoveryDriver":
        """A driver of the durable service kept in ``data_dir`` (created if needed, recovered if
        not: see ``DiscoveryService.open``, which gets ``settings``), resumed at the driver's clock."""
        service = DiscoveryService.open(data_dir, id, clock(), **settings)
        return cls(service, deliver, probe=probe, clock=clock)

    async def _send_event(self, event: Delivery) -> None:
        try:
            answer = await _maybe_await(self._deliver_event(event))
        except Exception as e:
            report_delivery(self.service, event, self.clock, error=e)
        else:
            report_delivery(self.service, event, self.clock, answer)

    async def _send_probe(self, request: UnicastRequest) -> None:
        try:
            found = await _maybe_await(self._probe(request))
        except Exception as e:
            report_probe(self.service, request, self.clock, error=e)
        else:
            report_probe(self.service, request, self.clock, found)

    async def _jobs(self) -> List[Job]:
        probes, events, seq = self.service.take_due(self.clock())
        await self._syncer.wait(seq)  # nothing leaves before it is on disk
        jobs: List[Job] = [partial(self._send_probe, p) for p in probes]
        return jobs + [partial(self._send_event, e) for e in events]

    async def handle_discovery(
        self, data: bytes, encoding: Encoding = "binary", *, listener: Union[bytes, str, None] = None
    ) -> bytes:
        """Answers a discovery request message (a registration it makes gets ``listener``) and
        returns the reply message once it may leave (durable)."""
        reply, seq = self.service.answer_discovery_bytes(data, encoding, self.clock(), listener=listener)
        self.wake()
        await self._syncer.wait(seq)
        return reply

    async def handle(self, data: bytes, encoding: Encoding = "binary") -> bytes:
        """Answers a registration lease request message (renew, cancel) and returns the reply
        message once it may leave (durable)."""
        reply, seq = self.service.answer_bytes(data, encoding, self.clock())
        self.wake()
        await self._syncer.wait(seq)
        return reply

    async def stop(self, *, flush: bool = True) -> None:
        """Stops the loop. With ``flush`` (the default) deliveries and probes under way are
        finished and reported first; without it they are cancelled (the service hands them out
        again after its time-outs). Awaited from ``deliver`` or ``probe`` it does not wait for
        itself."""
        await self._stop(flush)

    async def __aenter__(self) -> "DiscoveryDriver":
        self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()
