"""Thread-based drivers: run leasehold's sans-I/O state machines on a background thread.

For programs without an event loop.  Like the asyncio drivers they only convert clocks and
transports; every decision about leases stays in the core.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Generic, List, Optional, Sequence, TypeVar, Union

from ._clock import monotonic_ms, wait_seconds
from ._driving import Renewer, due, settle
from ._native import Expired, Landlord, Lease, Policy, Reply, Request, Transmit, lease_from_reply
from ._types import Duration, Encoding

__all__ = ["LandlordDriver", "RenewalDriver", "monotonic_ms", "obtain_lease", "Send", "Transport"]

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


class RenewalDriver(_Loop, Generic[E]):
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
        super().__init__(clock, name)
        self.renewer = renewer
        self._transport = _sender(transport, encoding, timeout)
        self._on_event = on_event
        self._encoding: Encoding = encoding
        self._pool = ThreadPoolExecutor(max_workers=senders, thread_name_prefix=name + "-send")
        self._sender = threading.local()  # .active is True on a sender thread inside the transport
        self._finish_lock = threading.Lock()
        self._exit_flush: Optional[bool] = None  # set when stop() was asked from inside the driver
        self._finished = False
        self._flush = True

    def _send(self, t: Transmit) -> None:
        request_id = t.id
        self._sender.active = True
        try:
            data = self._transport(t.landlord, t.request.encode(self._encoding))
        except Exception as e:
            settle(self.renewer, request_id, self.clock, self._encoding, error=e)
        else:
            settle(self.renewer, request_id, self.clock, self._encoding, data)
        finally:
            self._sender.active = False
        self.wake()

    def _deliver(self) -> None:
        for event in self.renewer.drain_events():
            _call(self._on_event, event, self.errors)

    def _pump(self) -> None:
        for t in due(self.renewer, self.clock):
            self._pool.submit(self._send, t)
        self._deliver()

    def _step(self) -> Optional[int]:
        self._pump()
        return self.renewer.poll_timeout()

    def _inside(self) -> bool:
        return super()._inside() or getattr(self._sender, "active", False)

    def _asked_from_inside(self, inside: bool) -> None:
        if inside and self._exit_flush is None:
            self._exit_flush = self._flush

    def _exited(self) -> None:
        if self._exit_flush is not None:  # stop() was asked from a callback or the transport
            self._finish(self._exit_flush)

    def _finish(self, flush: bool) -> None:
        """Sends what is due (with ``flush``), shuts the senders down and delivers the last events; once."""
        with self._finish_lock:
            if self._finished:
                return
            self._finished = True
        if flush:
            self._pump()
        self._pool.shutdown(wait=flush, cancel_futures=not flush)
        if flush:
            self._deliver()

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
        self._flush = flush
        if not self._halt(timeout):
            self._finish(flush)

    def __enter__(self) -> "RenewalDriver[E]":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
