"""Thread-based drivers: run leasehold's sans-I/O state machines on a background thread.

For programs without an event loop.  Like the asyncio drivers they only convert clocks and
transports; every decision about leases stays in the core.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Generic, List, Optional, TypeVar

from ._clock import monotonic_ms, wait_seconds
from ._driving import Renewer
from ._errors import IndefiniteError, LeaseError
from ._native import Expired, Landlord, Lease, Reply, Request, Transmit, lease_from_reply
from ._types import Duration, Encoding

__all__ = ["LandlordDriver", "RenewalDriver", "monotonic_ms", "obtain_lease", "Send", "Transport"]

E = TypeVar("E")
#: The host's transport for one landlord: sends a request message, returns the reply message.
Send = Callable[[bytes], bytes]
#: The host's transport for a renewal driver: (landlord id, request message) -> reply message.
Transport = Callable[[int, bytes], bytes]

Clock = Callable[[], int]


class LandlordDriver:
    """Runs a landlord's expiry on a daemon thread; ``on_expired`` is called on that thread.

    The landlord itself is thread-safe, so request handlers on other threads can call
    :meth:`handle_bytes` (or the landlord directly, then :meth:`wake`).
    """

    def __init__(
        self,
        landlord: Landlord,
        *,
        on_expired: Optional[Callable[[Expired], None]] = None,
        clock: Clock = monotonic_ms,
        name: str = "leasehold-landlord",
    ) -> None:
        self.landlord = landlord
        self.clock = clock
        self._on_expired = on_expired
        self._cond = threading.Condition()
        self._woken = False
        self._stopping = False
        self._thread: Optional[threading.Thread] = None
        self._name = name
        #: Exceptions raised by ``on_expired`` (the driver keeps running).
        self.errors: list[BaseException] = []

    def now(self) -> int:
        """The driver's clock, in ms."""
        return self.clock()

    def wake(self) -> None:
        """Re-reads the landlord's next deadline (call after granting or renewing directly)."""
        with self._cond:
            self._woken = True
            self._cond.notify()

    def handle_bytes(self, data: bytes, encoding: Encoding = "binary") -> bytes:
        """Answers a request message at the driver's clock and returns the reply message."""
        reply = self.landlord.handle_bytes(data, encoding, self.clock())
        self.wake()
        return reply

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._stopping:
                    return
                self._woken = False
            self.landlord.handle_timeout(self.clock())
            for expired in self.landlord.drain_expired():
                if self._on_expired is not None:
                    try:
                        self._on_expired(expired)
                    except Exception as exc:  # a callback's failure must not stop expiry
                        self.errors.append(exc)
            delay = wait_seconds(self.landlord.poll_timeout(), self.clock())
            with self._cond:
                if not self._woken and not self._stopping:
                    self._cond.wait(delay)

    def start(self) -> "LandlordDriver":
        """Starts the background thread."""
        if self._thread is None:
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: Optional[float] = 5.0) -> None:
        """Stops the thread and joins it.

        Called from ``on_expired`` (on the driver's own thread) it only asks the loop to end,
        which it does once the callback returns.
        """
        with self._cond:
            self._stopping = True
            self._cond.notify()
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return
        self._thread = None
        thread.join(timeout)

    def __enter__(self) -> "LandlordDriver":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def obtain_lease(
    send: Send,
    resource: bytes,
    duration: Duration,
    *,
    encoding: Encoding = "binary",
    clock: Clock = monotonic_ms,
    request_id: int = 0,
    max_drift_ppm: int = 0,
) -> Lease:
    """Asks a landlord for a lease over ``send``; the lease counts from the time the request was sent."""
    message = Request.grant(request_id, resource, duration).encode(encoding)
    sent_at = clock()
    reply = Reply.decode(send(message), encoding)
    return lease_from_reply(reply, sent_at, max_drift_ppm)


class RenewalDriver(Generic[E]):
    """Runs a renewal manager (or renewal service) on a daemon thread.

    Requests go out on a small thread pool through ``transport(landlord, message) -> reply``;
    an exception it raises is reported as an indefinite failure (a ``LeaseError`` as itself).
    ``on_event`` is called on the driver's thread.  After adding leases, call :meth:`wake`.
    """

    def __init__(
        self,
        renewer: Renewer[E],
        transport: Transport,
        *,
        on_event: Optional[Callable[[E], None]] = None,
        encoding: Encoding = "binary",
        clock: Clock = monotonic_ms,
        senders: int = 4,
        name: str = "leasehold-renewal",
    ) -> None:
        self.renewer = renewer
        self.clock = clock
        self._transport = transport
        self._on_event = on_event
        self._encoding: Encoding = encoding
        self._cond = threading.Condition()
        self._woken = False
        self._stopping = False
        self._thread: Optional[threading.Thread] = None
        self._pool = ThreadPoolExecutor(max_workers=senders, thread_name_prefix=name + "-send")
        self._name = name
        self._sender = threading.local()  # .active is True on a sender thread inside the transport
        self._finish_lock = threading.Lock()
        self._exit_flush: Optional[bool] = None  # set when stop() was asked from inside the driver
        self._finished = False
        #: Exceptions raised by ``on_event`` (the driver keeps running).
        self.errors: List[BaseException] = []

    def now(self) -> int:
        """The driver's clock, in ms."""
        return self.clock()

    def wake(self) -> None:
        """Re-reads the renewer's timers (call after adding, changing or cancelling leases)."""
        with self._cond:
            self._woken = True
            self._cond.notify()

    def _send(self, t: Transmit) -> None:
        request_id = t.id
        self._sender.active = True
        try:
            reply = Reply.decode(self._transport(t.landlord, t.request.encode(self._encoding)), self._encoding)
        except LeaseError as e:
            self.renewer.handle_failure(request_id, e, self.clock())
        except Exception as e:  # any transport failure is indefinite: the manager retries
            self.renewer.handle_failure(request_id, IndefiniteError(f"indefinite failure: {e!r}", repr(e)), self.clock())
        else:
            self.renewer.handle_reply(reply, self.clock())
        finally:
            self._sender.active = False
        self.wake()

    def _deliver(self) -> None:
        for event in self.renewer.drain_events():
            if self._on_event is not None:
                try:
                    self._on_event(event)
                except Exception as exc:  # a callback's failure must not stop renewals
                    self.errors.append(exc)

    def _pump(self) -> None:
        self.renewer.handle_timeout(self.clock())
        while True:
            t = self.renewer.poll_transmit(self.clock())
            if t is None:
                break
            self._pool.submit(self._send, t)
        self._deliver()

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._stopping:
                    break
                self._woken = False
            self._pump()
            delay = wait_seconds(self.renewer.poll_timeout(), self.clock())
            with self._cond:
                if not self._woken and not self._stopping:
                    self._cond.wait(delay)
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
        if self._thread is None:
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        return self

    def stop(self, *, flush: bool = True, timeout: Optional[float] = 5.0) -> None:
        """Stops the thread. With ``flush`` (the default) requests already due (cancels included)
        are sent and answered first; without it they are abandoned.

        Called from ``on_event`` or from the transport (threads the driver runs), it only asks
        the driver to stop and returns at once; the driver's thread then finishes the job.
        """
        thread = self._thread
        inside = thread is threading.current_thread() or getattr(self._sender, "active", False)
        with self._cond:
            self._stopping = True
            if inside and self._exit_flush is None:
                self._exit_flush = flush
            self._cond.notify()
        if inside:
            return
        self._thread = None
        if thread is not None:
            thread.join(timeout)
        self._finish(flush)

    def __enter__(self) -> "RenewalDriver[E]":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
