"""Thread-based drivers: run leasehold's sans-I/O state machines on a background thread.

For programs without an event loop.  Like the asyncio drivers they only convert clocks and
transports; every decision about leases stays in the core.
"""

from __future__ import annotations

import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Dict, Callable, Generic, List, Optional, Sequence, TypeVar, Union

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
Send = Callable[[bytes], bytes]
#: The host's transport for a renewal driver: (landlord id, request message) -> reply message.
Transport = Callable[[int, bytes], bytes]
#: Where requests go: a transport, or the URL (or list of URLs) of landlord servers over HTTP.
Servers = Union[str, Sequence[str]]

Clock = Callable[[], int]


def _call(callback: Optional[Callable[[T], object]], value: T, errors: List[BaseException]) -> None:
    """Runs a user callback; its failure is kept in ``errors`` and never stops the driver."""
    if callback is None:
        return
    try:
        callback(value)
    except Exception as exc:
        errors.append(exc)


class _Loop:
    """A daemon thread that runs ``_step`` whenever a deadline passes or :meth:`wake` is called."""

    def __init__(self, clock: Clock, name: str) -> None:
        self.clock = clock
        self._name = name
        self._cond = threading.Condition()
        self._woken = False
        self._stopping = False
        self._thread: Optional[threading.Thread] = None
        #: Exceptions raised by the callbacks (the driver keeps running).
        self.errors: List[BaseException] = []

    def now(self) -> int:
        """The driver's clock, in ms."""
        return self.clock()

    def wake(self) -> None:
        """Runs the loop now: call after changing the driven object directly, so that its new
        earliest deadline (or the requests it wants sent) is seen."""
        with self._cond:
            self._woken = True
            self._cond.notify()

    def _step(self) -> Optional[int]:
        """One round of work; returns the next deadline (ms on the clock), None for none."""
        raise NotImplementedError

    def _exited(self) -> None:
        """Runs on the thread after the loop ends."""

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._stopping:
                    break
                self._woken = False
            delay = wait_seconds(self._step(), self.clock())
            with self._cond:
                if not self._woken and not self._stopping:
                    self._cond.wait(delay)
        self._exited()

    def _start(self) -> None:
        if self._thread is None:
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def _inside(self) -> bool:
        """Whether the caller runs on a thread of this driver (its loop, or one it lends)."""
        return self._thread is threading.current_thread()

    def _halt(self, timeout: Optional[float]) -> bool:
        """Asks the loop to end; joins it unless called from inside. True when called from inside."""
        inside = self._inside()
        with self._cond:
            self._stopping = True
            self._asked_from_inside(inside)
            self._cond.notify()
        if inside:
            return True
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
        return False

    def _asked_from_inside(self, inside: bool) -> None:
        """Called under the loop's lock when a stop is asked."""


class LandlordDriver(_Loop):
    """Runs a landlord's expiry on a daemon thread; ``on_expired`` is called on that thread.

    The landlord itself is thread-safe, so request handlers on other threads can call
    :meth:`handle_bytes` (or the landlord directly, then :meth:`wake`).  A durable landlord
    (:meth:`open`, or ``Landlord.open``) answers only once what it answers is on disk.
    """

    def __init__(
        self,
        landlord: Landlord,
        *,
        on_expired: Optional[Callable[[Expired], None]] = None,
        clock: Clock = monotonic_ms,
        name: str = "leasehold-landlord",
    ) -> None:
        super().__init__(clock, name)
        self.landlord = landlord
        self._on_expired = on_expired

    @classmethod
    def open(
        cls,
        data_dir: str,
        id: int,
        policy: Policy,
        *,
        on_expired: Optional[Callable[[Expired], None]] = None,
        clock: Clock = monotonic_ms,
        name: str = "leasehold-landlord",
        **settings: Any,
    ) -> "LandlordDriver":
        """A driver of the durable landlord kept in ``data_dir`` (created if needed, recovered
        if not: see ``Landlord.open``, which gets ``settings``), resumed at the driver's clock."""
        landlord = Landlord.open(data_dir, id, policy, clock(), **settings)
        return cls(landlord, on_expired=on_expired, clock=clock, name=name)

    def handle_bytes(self, data: bytes, encoding: Encoding = "binary") -> bytes:
        """Answers a request message at the driver's clock and returns the reply message (for
        a durable landlord, once the records behind it are durable)."""
        reply = self.landlord.handle_bytes(data, encoding, self.clock())
        self.wake()
        return reply

    def _step(self) -> Optional[int]:
        self.landlord.handle_timeout(self.clock())
        for expired in self.landlord.drain_expired():
            _call(self._on_expired, expired, self.errors)
        return self.landlord.poll_timeout()

    def start(self) -> "LandlordDriver":
        """Starts the background thread."""
        self._start()
        return self

    def stop(self, timeout: Optional[float] = 5.0) -> None:
        """Stops the thread and joins it.

        Called from ``on_expired`` (on the driver's own thread) it only asks the loop to end,
        which it does once the callback returns.
        """
        self._halt(timeout)

    def __enter__(self) -> "LandlordDriver":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _sender(transport: Union[Transport, Servers], encoding: Encoding, timeout: float) -> Transport:
    if isinstance(transport, str) or not callable(transport):
        from .http import Cluster

        return Cluster(transport, encoding=encoding, timeout=timeout).transport
    return transport


def obtain_lease(
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
    """Asks a landlord for a lease over ``send`` (or by HTTP from the server URL or URLs
    given instead, each tried in turn); the lease counts from the time the request was sent."""
    if isinstance(send, str) or not callable(send):
        from .http import Cluster

        send = Cluster(send, encoding=encoding, timeout=timeout).send
    message = Request.grant(request_id, resource, duration).encode(encoding)
    sent_at = clock()
    reply = Reply.decode(send(message), encoding)
    return lease_from_reply(reply, sent_at, max_drift_ppm)


class _Worker(_Loop):
    """A driver loop that hands the I/O its part asks for to a small thread pool, one job per
    request, and stops either after finishing what is under way (``flush``) or at once.

    A driver says what is due (:meth:`_jobs`: callables run on the pool, each reporting its
    own outcome to the part), what to deliver on the loop's thread (:meth:`_deliver`) and when
    to run next (:meth:`_next`).  Jobs and callbacks may call :meth:`stop`: it only asks then.
    """

    def __init__(self, clock: Clock, name: str, senders: int) -> None:
        super().__init__(clock, name)
        self._pool = ThreadPoolExecutor(max_workers=senders, thread_name_prefix=name + "-send")
        self._sender = threading.local()  # .active is True on a sender thread inside a job
        self._finish_lock = threading.Lock()
        self._exit_flush: Optional[bool] = None  # set when stop() was asked from inside the driver
        self._finished = False
        self._flush = True

    def _jobs(self) -> List[Callable[[], None]]:
        """Advances the part to now and takes what it wants done (each a job for the pool)."""
        raise NotImplementedError

    def _deliver(self) -> None:
        """Delivers what the part handed out, on the loop's thread."""

    def _next(self) -> Optional[int]:
        """When to run again (ms on the clock), None for never."""
        raise NotImplementedError

    def _job(self, job: Callable[[], None]) -> None:
        self._sender.active = True
        try:
            job()
        except Exception as exc:  # a job reports its own outcome; anything else is kept
            self.errors.append(exc)
        finally:
            self._sender.active = False
        self.wake()

    def _pump(self) -> None:
        for job in self._jobs():
            self._pool.submit(self._job, job)
        self._deliver()

    def _step(self) -> Optional[int]:
        self._pump()
        return self._next()

    def _inside(self) -> bool:
        return super()._inside() or getattr(self._sender, "active", False)

    def _asked_from_inside(self, inside: bool) -> None:
        if inside and self._exit_flush is None:
            self._exit_flush = self._flush

    def _exited(self) -> None:
        if self._exit_flush is not None:  # stop() was asked from a callback or a job
            self._finish(self._exit_flush)

    def _finish(self, flush: bool) -> None:
        """Runs what is due (with ``flush``), shuts the pool down and delivers the last events; once."""
        with self._finish_lock:
            if self._finished:
                return
            self._finished = True
        if flush:
            self._pump()
        self._pool.shutdown(wait=flush, cancel_futures=not flush)
        if flush:
            self._deliver()

    def _stop(self, flush: bool, timeout: Optional[float]) -> None:
        self._flush = flush
        if not self._halt(timeout):
            self._finish(flush)


class RenewalDriver(_Worker, Generic[E]):
    """Runs a renewal manager (or renewal service) on a daemon thread.

    Requests go out on a small thread pool through ``transport(landlord, message) -> reply``,
    or by HTTP to the server URL or list of URLs given instead (``leasehold.http.Cluster``:
    each server tried in turn, ``timeout`` seconds per attempt).  An exception the transport
    raises is reported as an indefinite failure (a ``LeaseError`` as itself).  ``on_event`` is
    called on the driver's thread.  After adding leases, call :meth:`wake`.
    """

    def __init__(
        self,
        renewer: Renewer[E],
        transport: Union[Transport, Servers],
        *,
        on_event: Optional[Callable[[E], None]] = None,
        encoding: Encoding = "binary",
        clock: Clock = monotonic_ms,
        senders: int = 4,
        name: str = "leasehold-renewal",
        timeout: float = 1.0,
    ) -> None:
        super().__init__(clock, name, senders)
        self.renewer = renewer
        self._transport = _sender(transport, encoding, timeout)
        self._on_event = on_event
        self._encoding: Encoding = encoding

    def _send(self, t: Transmit) -> None:
        request_id = t.id
        try:
            data = self._transport(t.landlord, t.request.encode(self._encoding))
        except Exception as e:
            settle(self.renewer, request_id, self.clock, self._encoding, error=e)
        else:
            settle(self.renewer, request_id, self.clock, self._encoding, data)

    def _jobs(self) -> List[Callable[[], None]]:
        return [partial(self._send, t) for t in due(self.renewer, self.clock)]

    def _deliver(self) -> None:
        for event in self.renewer.drain_events():
            _call(self._on_event, event, self.errors)

    def _next(self) -> Optional[int]:
        return self.renewer.poll_timeout()

    def start(self) -> "RenewalDriver[E]":
        """Starts the background thread."""
        self._start()
        return self

    def stop(self, *, flush: bool = True, timeout: Optional[float] = 5.0) -> None:
        """Stops the thread. With ``flush`` (the default) requests already due (cancels included)
        are sent and answered first; without it they are abandoned.

        Called from ``on_event`` or from the transport (threads the driver runs), it only asks
        the driver to stop and returns at once; the driver's thread then finishes the job.
        """
        self._stop(flush, timeout)

    def __enter__(self) -> "RenewalDriver[E]":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def probe_tcp(request: UnicastRequest, timeout: float = 1.0) -> Announcement:
    """Unicast discovery as the project's lookup services answer it (``examples/discovery``): a
    TCP connection to the locator, on which the registrar writes its announcement datagram and
    closes. A refused connection, a time-out or a bad datagram raises (the probe failed)."""
    with socket.create_connection((request.host, request.port), timeout=timeout) as s:
        data = b""
        while len(data) <= ANNOUNCEMENT_MAX_BYTES:
            chunk = s.recv(ANNOUNCEMENT_MAX_BYTES + 1 - len(data))
            if not chunk:
                break
            data += chunk
    return Announcement.decode(data)


#: Carries an event to its listener (``event.listener``): returns None once delivered, or the
#: listener's ``EventReply``; raises when it could not deliver.
Deliver = Callable[[Delivery], Optional[Dict[str, Any]]]
#: Unicast discovery of a locator: returns what answered there; raises when nothing did.
Probe = Callable[[UnicastRequest], ProbeResult]


class DiscoveryDriver(DiscoveryCalls, _Worker):
    """Runs a lookup discovery service on a daemon thread.

    Each event goes out on a small thread pool through ``deliver(event)`` (to
    ``event.listener``; events of one registration one at a time, in order), each unicast
    discovery through ``probe(request)`` (default :func:`probe_tcp`); their outcomes go back to
    the service, which retries failures with its back-off.  A durable service
    (:meth:`open`, or ``DiscoveryService.open``) hands nothing out before it is on disk.

    Feed it what the host hears with :meth:`handle_datagram`, :meth:`handle_announcement` and
    :meth:`registrar_unreachable`, and answer clients with :meth:`handle_discovery_bytes` and
    :meth:`handle_bytes` (registration leases), from any thread.
    """

    def __init__(
        self,
        service: DiscoveryService,
        deliver: Deliver,
        *,
        probe: Probe = probe_tcp,
        clock: Clock = monotonic_ms,
        senders: int = 4,
        name: str = "leasehold-discovery",
    ) -> None:
        super().__init__(clock, name, senders)
        self.service = service
        self._deliver_event = deliver
        self._probe = probe

    @classmethod
    def open(
        cls,
        data_dir: str,
        id: int,
        deliver: Deliver,
        *,
        probe: Probe = probe_tcp,
        clock: Clock = monotonic_ms,
        senders: int = 4,
        name: str = "leasehold-discovery",
        **settings: Any,
    ) -> "DiscoveryDriver":
        """A driver of the durable service kept in ``data_dir`` (created if needed, recovered if
        not: see ``DiscoveryService.open``, which gets ``settings``), resumed at the driver's clock."""
        service = DiscoveryService.open(data_dir, id, clock(), **settings)
        return cls(service, deliver, probe=probe, clock=clock, senders=senders, name=name)

    def _send_event(self, event: Delivery) -> None:
        try:
            answer = self._deliver_event(event)
        except Exception as e:
            report_delivery(self.service, event, self.clock, error=e)
        else:
            report_delivery(self.service, event, self.clock, answer)

    def _send_probe(self, request: UnicastRequest) -> None:
        try:
            found = self._probe(request)
        except Exception as e:
            report_probe(self.service, request, self.clock, error=e)
        else:
            report_probe(self.service, request, self.clock, found)

    def _jobs(self) -> List[Callable[[], None]]:
        probes, events, seq = self.service.take_due(self.clock())
        self.service.wait_durable(seq)  # nothing leaves before it is on disk
        jobs: List[Callable[[], None]] = [partial(self._send_probe, p) for p in probes]
        return jobs + [partial(self._send_event, e) for e in events]

    def handle_discovery_bytes(
        self, data: bytes, encoding: Encoding = "binary", *, listener: Union[bytes, str, None] = None
    ) -> bytes:
        """Answers a discovery request message (a registration it makes gets ``listener``) and
        returns the reply message, once durable."""
        reply = self.service.handle_discovery_bytes(data, encoding, self.clock(), listener=listener)
        self.wake()
        return reply

    def handle_bytes(self, data: bytes, encoding: Encoding = "binary") -> bytes:
        """Answers a registration lease request message (renew, cancel) and returns the reply."""
        reply = self.service.handle_bytes(data, encoding, self.clock())
        self.wake()
        return reply

    def start(self) -> "DiscoveryDriver":
        """Starts the background thread."""
        self._start()
        return self

    def stop(self, *, flush: bool = True, timeout: Optional[float] = 5.0) -> None:
        """Stops the thread. With ``flush`` (the default) deliveries and probes under way are
        finished and reported first; without it they are abandoned (the service hands them out
        again after its time-outs). Called from ``deliver`` or ``probe`` it only asks."""
        self._stop(flush, timeout)

    def __enter__(self) -> "DiscoveryDriver":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
