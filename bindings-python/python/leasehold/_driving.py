"""What every driver shares, written once for threads and asyncio: the interface of the parts
they drive, the host's step (advance the timers, take what is due), and how a transport's
outcome goes back to the core (the reply, or the failure as the right ``LeaseError``).

A new sans-I/O part with the renewer's interface (``poll_timeout``, ``handle_timeout``,
``poll_transmit``, ``handle_reply``, ``handle_failure``, ``drain_events``) is driven by the
existing ``RenewalDriver`` of :mod:`leasehold.threaded` and :mod:`leasehold.aio` as it is. A part
with another interface gets a small driver on the same loops (``_Worker`` in each module: jobs
on a pool or in tasks, stop with or without finishing them) and reports its outcomes here
(``report_delivery``, ``report_probe`` for the discovery service).
"""

from __future__ import annotations

from typing import Callable, List, Optional, Protocol, Sequence, TypeVar, Union

from ._errors import IndefiniteError, LeaseError
from ._native import Reply, Transmit
from .discovery import Announcement, Delivery, DiscoveryService, Registrar, UnicastRequest, UnicastResponse
from ._types import Encoding

E = TypeVar("E", covariant=True)

Clock = Callable[[], int]


class Timed(Protocol):
    """A part with a timer: the host calls ``handle_timeout`` when ``poll_timeout`` says."""

    def poll_timeout(self) -> Optional[int]: ...

    def handle_timeout(self, now: int) -> None: ...


class Renewer(Timed, Protocol[E]):
    """The holder-side sans-I/O interface: timers, requests out, replies and failures in, events out."""

    def poll_transmit(self, now: int) -> Optional[Transmit]: ...

    def handle_reply(self, reply: Reply, now: int) -> None: ...

    def handle_failure(self, request_id: int, error: LeaseError, now: int) -> None: ...

    def drain_events(self) -> Sequence[E]: ...


def due(renewer: Renewer[object], clock: Clock) -> List[Transmit]:
    """Advances the renewer to now and takes every request it wants sent."""
    renewer.handle_timeout(clock())
    out: List[Transmit] = []
    while True:
        t = renewer.poll_transmit(clock())
        if t is None:
            return out
        out.append(t)


def as_failure(exc: BaseException) -> LeaseError:
    """A transport's exception as the renewer must hear it: a ``LeaseError`` as itself (a
    definite one drops the request's leases), anything else an ``IndefiniteError`` (retried)."""
    if isinstance(exc, LeaseError):
        return exc
    return IndefiniteError(f"indefinite failure: {exc!r}", repr(exc))


def settle(
    renewer: Renewer[object],
    request_id: int,
    clock: Clock,
    encoding: Encoding,
    data: Optional[bytes] = None,
    error: Optional[BaseException] = None,
) -> None:
    """Hands a transport's outcome for request ``request_id`` back to the renewer: the reply
    message ``data``, or the failure ``error``. A reply that does not decode is a failure."""
    if error is None:
        try:
            reply = Reply.decode(data if data is not None else b"", encoding)
        except LeaseError as e:
            error = e
        else:
            renewer.handle_reply(reply, clock())
            return
    renewer.handle_failure(request_id, as_failure(error), clock())


class DiscoveryCalls:
    """What a discovery driver of either loop is fed with, written once: each call runs at the
    driver's clock and wakes it (its ``_Worker`` gives ``wake``)."""

    service: DiscoveryService
    clock: Clock
    wake: Callable[[], None]

    def _next(self) -> Optional[int]:
        return self.service.poll_timeout()

    def handle_datagram(self, data: bytes) -> None:
        """An announcement datagram heard (raises ``DecodeError`` for a bad one)."""
        self.service.handle_datagram(data, self.clock())
        self.wake()

    def handle_announcement(self, announcement: Announcement) -> None:
        """An announcement heard."""
        self.service.handle_announcement(announcement, self.clock())
        self.wake()

    def registrar_unreachable(self, registrar: Union[str, bytes, int, Registrar]) -> bool:
        """The host found ``registrar`` unreachable; returns whether the service knew it."""
        known = self.service.registrar_unreachable(registrar, self.clock())
        self.wake()
        return known


#: What unicast discovery of a locator finds: the registrar's answer (or its announcement).
ProbeResult = Union[UnicastResponse, Announcement]


def report_probe(
    service: DiscoveryService,
    request: UnicastRequest,
    clock: Clock,
    result: Optional[object] = None,
    error: Optional[BaseException] = None,
) -> None:
    """Hands the outcome of unicast discovery ``request`` back to the service: what the probe
    found, or the failure (retried after the core's back-off). A probe that returned anything
    but a ``UnicastResponse`` or an ``Announcement`` failed."""
    if error is None and not isinstance(result, (UnicastResponse, Announcement)):
        error = TypeError(f"a probe returns a UnicastResponse or an Announcement, got {type(result).__name__}")
    if error is not None:
        service.handle_unicast(request.id, as_failure(error), clock())
    else:
        assert isinstance(result, (UnicastResponse, Announcement))
        service.handle_unicast(request.id, result, clock())


def report_delivery(
    service: DiscoveryService,
    event: Delivery,
    clock: Clock,
    answer: Optional[object] = None,
    error: Optional[BaseException] = None,
) -> None:
    """Hands the outcome of delivering ``event`` back to the service: delivered (the deliverer
    returned None), the listener's event reply (its JSON object form, ``EventReply.received``),
    or the failure (a ``LeaseError`` as itself: indefinite is retried, definite cancels the
    registration; any other exception is indefinite). An answer about another event, or of
    another type, is an indefinite failure."""
    now = clock()
    if error is None and answer is not None:
        if not isinstance(answer, dict):
            error = TypeError(f"a deliverer returns None or an event reply (dict), got {type(answer).__name__}")
        elif (answer.get("event_id"), answer.get("sequence")) != (str(event.event_id), str(event.sequence)):
            about = f"answer for event {answer.get('event_id')} #{answer.get('sequence')}"
            error = IndefiniteError(f"indefinite failure: {about}", about)
    if error is not None:
        service.delivery_failed(event.event_id, event.sequence, as_failure(error), now)
    elif isinstance(answer, dict):
        service.handle_event_reply(answer, now)
    else:
        service.delivered(event.event_id, event.sequence, now)
