"""Coordinating with leases: the :class:`Fence` a protected resource checks tokens with, the
coordination messages, and the ``lock`` / ``elect`` / ``observe`` recipes over a
``leasehold-server`` cluster (``POST /coord``), in a blocking form (a renewal driver thread)
and an asyncio form (``alock``, ``aelect``, ``aobserve``).

A lock is not a promise that no one else acts: a holder paused past its lease still acts after
the lock went to someone else. Pass :attr:`Lock.token` with every operation on the resource and
have the resource check it with a :class:`Fence`::

    from leasehold.coord import lock

    with lock("http://127.0.0.1:7420", "locks/report", wait=5.0) as held:
        write_report(token=held.token)   # the resource's Fence refuses older tokens

Every rule (exclusivity, waiting in line, tokens, watches, when to renew) is the core's: the
recipes carry messages (their JSON object form, encoded by the core) and keep the lease renewed
with the core's ``RenewalManager``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, TypeVar, Union

from . import _native
from ._clock import monotonic_ms
from ._data import Record
from ._errors import ErrorCode, IndefiniteError, LeaseDeniedError, LeaseError, UnknownLeaseError
from ._machine import MessageKind
from ._native import FOREVER, Lease, RenewalManager, error_from_code, local_expiration
from ._types import Encoding
from .http import Cluster

__all__ = [
    "AsyncLock",
    "AsyncObserver",
    "CoordReply",
    "CoordRequest",
    "Fence",
    "FenceCheck",
    "FencedError",
    "Leader",
    "Lock",
    "Observer",
    "alock",
    "aelect",
    "aobserve",
    "elect",
    "lock",
    "observe",
]


class FencedError(LeaseError):
    """A :class:`Fence` refused a token older than the highest it accepted: the lease behind
    it has ended and the resource has a newer holder."""

    def __init__(self, token: int, highest: int) -> None:
        message = (
            f"fenced: token {token} is older than {highest}, the highest this resource has accepted"
        )
        super().__init__(message, message, code=int(ErrorCode.LEASE_DENIED))
        self.token = token
        self.highest = highest


class FenceCheck(Record):
    """What a fence's check decided (the core's ``FenceCheck``, checked against it)."""

    accepted: bool
    token: int
    highest: int


class Fence:
    """The resource's side of fencing tokens (the core's ``Fence``): it accepts an operation
    only with a token at least the highest it has accepted, and then remembers it. Keep
    :attr:`highest` (or :meth:`snapshot`) with the resource's data, and check under the same
    lock as the write."""

    __slots__ = ("_m",)

    def __init__(self, highest: int = 0) -> None:
        self._m = _native.FenceMachine(highest=highest)

    @classmethod
    def restore(cls, snapshot: str) -> "Fence":
        """A fence from :meth:`snapshot` text."""
        f = cls.__new__(cls)
        f._m = _native.FenceMachine.restore(snapshot)
        return f

    def snapshot(self) -> str:
        """The fence as JSON text (``{"highest":"7"}``)."""
        return str(self._m.snapshot())

    def check(self, token: int) -> None:
        """Accepts ``token`` (and remembers it), or raises :class:`FencedError`."""
        r = self._m.handle({"op": "check", "token": token})
        if not r["accepted"]:
            raise FencedError(int(r["token"]), int(r["highest"]))

    def admits(self, token: int) -> bool:
        """Whether ``token`` would be accepted (nothing changes)."""
        return bool(self._m.handle({"op": "admits", "token": token}))

    @property
    def highest(self) -> int:
        """The highest token accepted so far."""
        return int(self._m.handle({"op": "highest"}))

    def __repr__(self) -> str:
        return f"Fence(highest={self.highest})"


class CoordRequest(MessageKind):
    """Coordination requests (acquire, watch, poll, holders) in their JSON object form."""

    kind = "CoordRequest"


class CoordReply(MessageKind):
    """Coordination replies (acquired, watching, events, holders, error)."""

    kind = "CoordReply"


_ids = itertools.count(1)
#: Longest a single request asks the server to hold it (a vanished server costs at most this).
MOST_HELD = 20.0


def _request(body: Dict[str, Any]) -> Dict[str, Any]:
    return {"v": 1, "id": str(next(_ids)), "body": body}


def _bytes(b: Union[str, bytes]) -> bytes:
    return b.encode() if isinstance(b, str) else bytes(b)


def _ms(seconds: Optional[float]) -> int:
    return 0 if seconds is None else max(0, int(seconds * 1000))


def _body(reply: Dict[str, Any], op: str) -> Dict[str, Any]:
    """The reply's body if it is ``op``; an error reply raises its error."""
    body: Dict[str, Any] = reply["body"]
    if body["op"] == "error":
        raise error_from_code(int(body["code"]), body["message"])
    if body["op"] != op:
        raise LeaseError(f"expected {op}, got {body['op']}")
    return body


def _acquire_body(name: Union[str, bytes], lease_ms: int, wait_ms: int, holder: Union[str, bytes]) -> Dict[str, Any]:
    return {
        "op": "acquire",
        "resource": _bytes(name).hex(),
        "duration": str(lease_ms),
        "wait": str(wait_ms),
        "holder": _bytes(holder).hex(),
    }


def _watch_body(name: Union[str, bytes], lease_ms: int) -> Dict[str, Any]:
    return {"op": "watch", "resource": _bytes(name).hex(), "prefix": False, "renewals": False, "duration": str(lease_ms), "handback": ""}


class _Coord:
    """Coordination messages over a cluster, blocking or asyncio (the same encoding both ways)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.encoding: Encoding = cluster.encoding

    def _encode(self, body: Dict[str, Any]) -> bytes:
        return CoordRequest.encode(_request(body), self.encoding)

    def call(self, body: Dict[str, Any], landlord: Optional[int] = None, wait_ms: int = 0) -> Dict[str, Any]:
        data = self.cluster.post(self._encode(body), landlord, endpoint="coord", kind="CoordReply", wait=wait_ms / 1000)
        return CoordReply.decode(data, self.encoding)

    async def acall(self, body: Dict[str, Any], landlord: Optional[int] = None, wait_ms: int = 0) -> Dict[str, Any]:
        data = await self.cluster.apost(self._encode(body), landlord, endpoint="coord", kind="CoordReply", wait=wait_ms / 1000)
        return CoordReply.decode(data, self.encoding)

    # An acquire's reply and when the answered attempt was sent (monotonic ms): its lease counts
    # from there, not from a first attempt at a server that failed (after a failover that
    # attempt, held for the wait, can take longer than the lease).
    def acquire(self, body: Dict[str, Any], wait_ms: int) -> Tuple[Dict[str, Any], int]:
        sent = [monotonic_ms()]
        data = self.cluster.post(
            self._encode(body), None, endpoint="coord", kind="CoordReply", wait=wait_ms / 1000, on_attempt=lambda: sent.__setitem__(0, monotonic_ms())
        )
        return CoordReply.decode(data, self.encoding), sent[0]

    async def aacquire(self, body: Dict[str, Any], wait_ms: int) -> Tuple[Dict[str, Any], int]:
        sent = [monotonic_ms()]
        data = await self.cluster.apost(
            self._encode(body), None, endpoint="coord", kind="CoordReply", wait=wait_ms / 1000, on_attempt=lambda: sent.__setitem__(0, monotonic_ms())
        )
        return CoordReply.decode(data, self.encoding), sent[0]


def _cluster(servers: Union[str, Sequence[str], Cluster], timeout: float) -> Cluster:
    return servers if isinstance(servers, Cluster) else Cluster(servers, timeout=timeout)


class Leader:
    """An election's leader as observers see it: its fencing token and its value."""

    __slots__ = ("token", "value")

    def __init__(self, token: int, value: bytes) -> None:
        self.token = token
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Leader) and (self.token, self.value) == (other.token, other.value)

    def __hash__(self) -> int:
        return hash((self.token, self.value))

    def __repr__(self) -> str:
        return f"Leader(token={self.token}, value={self.value!r})"


class _Held:
    """A lease acquired at a landlord and kept renewed by a ``RenewalManager``."""

    def __init__(self, manager: RenewalManager, wake: Any, body: Dict[str, Any], landlord: int, sent: int, drift_ppm: int) -> None:
        self._manager = manager
        self._wake = wake
        self.token: int = int(body["token"])
        self.resource: bytes = bytes.fromhex(body["resource"])
        self.landlord: int = landlord
        start = sent + int(body["waited"])
        self.lease: Lease = Lease(landlord, body["cookie"], local_expiration(start, int(body["duration"]), drift_ppm))
        self.released = False

    def safe_until(self) -> Optional[int]:
        """Until when (monotonic ms, ``leasehold.monotonic_ms``) the lease is known held: its
        expiration as last granted, counted from the request's send time plus its wait, less
        the clock drift allowed; None once it is lost or released."""
        if self.released:
            return None
        current = self._manager.lease(self.lease)
        return None if current is None else int(current.expiration)

    @property
    def held(self) -> bool:
        """Whether the lease is known held now."""
        t = self.safe_until()
        return t is not None and monotonic_ms() < t


def _acquired(reply: Dict[str, Any]) -> Dict[str, Any]:
    return _body(reply, "acquired")


def _cancel_request(held: _Held, encoding: Encoding) -> bytes:
    from ._native import Request

    try:
        held._manager.remove(held.lease)  # stop renewing (it may be gone already)
    except LeaseError:
        pass
    return Request.cancel(next(_ids), held.lease.cookie).encode(encoding)


def _cancelled(data: bytes, encoding: Encoding) -> None:
    from ._native import Reply

    error = Reply.decode(data, encoding).error
    if error is not None and not isinstance(error, UnknownLeaseError):
        raise error


class Lock(_Held):
    """An exclusive resource held (see :func:`lock`): :attr:`token`, :meth:`safe_until`,
    :attr:`held`, :meth:`release`; a context manager that releases on exit."""

    def __init__(self, driver: Any, own: bool, cluster: Cluster, *args: Any) -> None:
        super().__init__(driver.renewer, driver.wake, *args)
        self._driver = driver
        self._own = own
        self._cluster = cluster

    def release(self) -> None:
        """Stops renewing and cancels the lease, waiting for the landlord's answer (the next
        waiter gets it at once); a lease already gone is not an error."""
        if self.released:
            return
        self.released = True
        try:
            data = self._cluster.post(_cancel_request(self, self._cluster.encoding), self.landlord)
            _cancelled(data, self._cluster.encoding)
        finally:
            if self._own:
                self._driver.stop(flush=False)

    def __enter__(self) -> "Lock":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"Lock(resource={self.resource!r}, token={self.token}, landlord={self.landlord:016x})"


def _driver(cluster: Cluster, driver: Any, drift_ppm: int) -> Any:
    if driver is not None:
        return driver
    from .threaded import RenewalDriver

    return RenewalDriver(RenewalManager(max_clock_drift_ppm=drift_ppm), cluster.transport).start()


def _retry_pause(e: Exception, deadline: float) -> Optional[float]:
    """After a failed acquire: seconds to pause before the next (no server answered: 0.1,
    held elsewhere: none, the server waited), or None once the wait is over (re-raise ``e``)."""
    if time.monotonic() >= deadline:
        return None
    return 0.1 if isinstance(e, IndefiniteError) else 0.0


_H = TypeVar("_H", bound="_Held")


def _hold(cls: Callable[..., _H], d: Any, own: bool, cluster: Cluster, got: Any, reply: Any, sent: int, lease: float, drift_ppm: int) -> _H:
    """The held lock from an acquire's reply, its lease kept renewed on driver ``d``."""
    held = cls(d, own, cluster, got, int(reply["landlord"], 16), sent, drift_ppm)
    d.renewer.renew_for(held.lease, FOREVER, _ms(lease), monotonic_ms())
    d.wake()
    return held


def lock(
    servers: Union[str, Sequence[str], Cluster],
    name: Union[str, bytes],
    *,
    wait: Optional[float] = None,
    lease: float = 10.0,
    holder: Union[str, bytes] = b"",
    driver: Any = None,
    timeout: float = 1.0,
    max_drift_ppm: int = 100,
) -> Lock:
    """Acquires the exclusive resource ``name`` (or a pool's member: :attr:`Lock.resource` says
    which), waiting up to ``wait`` seconds if it is held (first come first served), and keeps
    its lease (``lease`` seconds at a time) renewed on a ``threaded.RenewalDriver`` (``driver``,
    or one of its own that stops on release). Held by someone else: ``LeaseDeniedError`` (the
    message says until when at most). While no server answers it retries until the wait is over,
    then raises ``IndefiniteError``."""
    cluster = _cluster(servers, timeout)
    coord = _Coord(cluster)
    deadline = time.monotonic() + (wait or 0.0)
    while True:
        left = max(0.0, deadline - time.monotonic())
        body = _acquire_body(name, _ms(lease), _ms(min(left, MOST_HELD)), holder)
        try:
            reply, sent = coord.acquire(body, _ms(min(left, MOST_HELD)))
            got = _acquired(reply)
        except (IndefiniteError, LeaseDeniedError) as e:
            if (pause := _retry_pause(e, deadline)) is None:
                raise
            time.sleep(pause)
            continue
        return _hold(Lock, _driver(cluster, driver, max_drift_ppm), driver is None, cluster, got, reply, sent, lease, max_drift_ppm)


class AsyncLock(_Held):
    """An exclusive resource held (see :func:`alock`); ``async with`` releases on exit."""

    def __init__(self, driver: Any, own: bool, cluster: Cluster, *args: Any) -> None:
        super().__init__(driver.renewer, driver.wake, *args)
        self._driver = driver
        self._own = own
        self._cluster = cluster

    async def release(self) -> None:
        """As :meth:`Lock.release`."""
        if self.released:
            return
        self.released = True
        try:
            data = await self._cluster.apost(_cancel_request(self, self._cluster.encoding), self.landlord)
            _cancelled(data, self._cluster.encoding)
        finally:
            if self._own:
                await self._driver.stop(flush=False)

    async def __aenter__(self) -> "AsyncLock":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.release()

    def __repr__(self) -> str:
        return f"AsyncLock(resource={self.resource!r}, token={self.token}, landlord={self.landlord:016x})"


def _adriver(cluster: Cluster, driver: Any, drift_ppm: int) -> Any:
    if driver is not None:
        return driver
    from .aio import RenewalDriver

    d = RenewalDriver(RenewalManager(max_clock_drift_ppm=drift_ppm), cluster.atransport)
    d.start()
    return d


async def alock(
    servers: Union[str, Sequence[str], Cluster],
    name: Union[str, bytes],
    *,
    wait: Optional[float] = None,
    lease: float = 10.0,
    holder: Union[str, bytes] = b"",
    driver: Any = None,
    timeout: float = 1.0,
    max_drift_ppm: int = 100,
) -> AsyncLock:
    """:func:`lock` on asyncio: the lease is kept renewed by an ``aio.RenewalDriver``."""
    cluster = _cluster(servers, timeout)
    coord = _Coord(cluster)
    deadline = time.monotonic() + (wait or 0.0)
    while True:
        left = max(0.0, deadline - time.monotonic())
        body = _acquire_body(name, _ms(lease), _ms(min(left, MOST_HELD)), holder)
        try:
            reply, sent = await coord.aacquire(body, _ms(min(left, MOST_HELD)))
            got = _acquired(reply)
        except (IndefiniteError, LeaseDeniedError) as e:
            if (pause := _retry_pause(e, deadline)) is None:
                raise
            await asyncio.sleep(pause)
            continue
        return _hold(AsyncLock, _adriver(cluster, driver, max_drift_ppm), driver is None, cluster, got, reply, sent, lease, max_drift_ppm)


def elect(
    servers: Union[str, Sequence[str], Cluster],
    name: Union[str, bytes],
    value: Union[str, bytes],
    *,
    give_up: Optional[float] = None,
    lease: float = 10.0,
    driver: Any = None,
    timeout: float = 1.0,
) -> Lock:
    """Campaigns for ``name`` with ``value`` (what observers see): waits in line until this
    process leads or ``give_up`` seconds passed (None: for ever). The leadership is a
    :class:`Lock` on the name: its token is the leader's fencing token; ``release()`` (or
    leaving the ``with`` block) resigns, and the next candidate leads at once."""
    start = time.monotonic()
    while True:
        left = 3600.0 if give_up is None else max(0.0, give_up - (time.monotonic() - start))
        try:
            return lock(servers, name, wait=left, lease=lease, holder=value, driver=driver, timeout=timeout)
        except (LeaseDeniedError, IndefiniteError):
            if give_up is not None and time.monotonic() - start >= give_up:
                raise


async def aelect(
    servers: Union[str, Sequence[str], Cluster],
    name: Union[str, bytes],
    value: Union[str, bytes],
    *,
    give_up: Optional[float] = None,
    lease: float = 10.0,
    driver: Any = None,
    timeout: float = 1.0,
) -> AsyncLock:
    """:func:`elect` on asyncio."""
    start = time.monotonic()
    while True:
        left = 3600.0 if give_up is None else max(0.0, give_up - (time.monotonic() - start))
        try:
            return await alock(servers, name, wait=left, lease=lease, holder=value, driver=driver, timeout=timeout)
        except (LeaseDeniedError, IndefiniteError):
            if give_up is not None and time.monotonic() - start >= give_up:
                raise


class _Watch:
    """What an observer knows: the watch (landlord, cookie), the last event applied, the leader."""

    def __init__(self, name: Union[str, bytes], lease_ms: int) -> None:
        self.name = name
        self.lease_ms = lease_ms
        self.landlord = 0
        self.cookie = ""
        self.last = 0
        self.leader: Optional[Leader] = None
        self.watching = False

    def registered(self, reply: Dict[str, Any]) -> None:
        body = _body(reply, "watching")
        self.landlord = int(reply["landlord"], 16)
        self.cookie = body["cookie"]
        self.last = int(body["sequence"])
        self.leader = _leader_of(body["current"])
        self.watching = True

    def poll_body(self, wait_ms: int) -> Dict[str, Any]:
        return {"op": "poll", "cookie": self.cookie, "since": str(self.last), "wait": str(wait_ms), "max": 0}

    def apply(self, reply: Dict[str, Any]) -> None:
        """Applies a poll's answer, in order; an unknown watch (it ran out) is made again."""
        body: Dict[str, Any] = reply["body"]
        if body["op"] == "error" and int(body["code"]) == int(ErrorCode.UNKNOWN_LEASE):
            self.watching = False
            return
        body = _body(reply, "events")
        if "missed" in body:
            self.last = int(body["missed"]["to"])
            self.leader = _leader_of(body.get("current") or [])
        for ev in body["events"]:
            self.last = int(ev["sequence"])
            token = int(ev["token"])
            if ev["kind"] == "granted":
                self.leader = Leader(token, bytes.fromhex(ev["holder"]))
            elif ev["kind"] in ("cancelled", "expired") and self.leader is not None and self.leader.token == token:
                self.leader = None


def _leader_of(holders: List[Dict[str, Any]]) -> Optional[Leader]:
    return Leader(int(holders[0]["token"]), bytes.fromhex(holders[0]["holder"])) if holders else None


class _Observing:
    """What :class:`Observer` and :class:`AsyncObserver` share: the watch, its renewal, the
    leader as last seen."""

    def __init__(self, cluster: Cluster, name: Union[str, bytes], lease: float) -> None:
        self._coord = _Coord(cluster)
        self._w = _Watch(name, _ms(lease))
        self._renewed = 0.0

    @contextlib.contextmanager
    def _renewal(self) -> Iterator[bytes]:
        """The renew request of the watch, to send in the block and give the reply to
        :meth:`_renewed_by`: a watch the landlord no longer knows is made again, an indefinite
        failure is tried again later."""
        from ._native import Request

        try:
            yield Request.renew(next(_ids), self._w.cookie, self._w.lease_ms).encode(self._coord.encoding)
        except UnknownLeaseError:
            self._w.watching = False
        except IndefiniteError:
            pass

    def _renewed_by(self, reply: bytes) -> None:
        from ._native import Reply

        r = Reply.decode(reply, self._coord.encoding)
        if r.error is not None:
            raise r.error
        self._renewed = time.monotonic()

    @property
    def leader(self) -> Optional[Leader]:
        """The leader as last seen (None: no leader)."""
        return self._w.leader

    @property
    def last_event(self) -> int:
        """The number of the last event applied."""
        return self._w.last


class Observer(_Observing):
    """Follows an election's leader through a watch on its name (see :func:`observe`)."""

    def __init__(self, cluster: Cluster, name: Union[str, bytes], lease: float) -> None:
        super().__init__(cluster, name, lease)
        self._lock = threading.Lock()
        self._register()

    def _register(self) -> None:
        self._w.registered(self._coord.call(_watch_body(self._w.name, self._w.lease_ms)))
        self._renewed = time.monotonic()

    def _renew(self) -> None:
        with self._renewal() as req:
            self._renewed_by(self._coord.cluster.post(req, self._w.landlord))

    def next(self, timeout: float) -> bool:
        """Waits up to ``timeout`` seconds for the leader to change; True if it changed (read
        :attr:`leader`). Every event is applied in order; if the watch missed some, the leader is
        read again from what the landlord holds; a watch that ran out is made again."""
        deadline = time.monotonic() + timeout
        before = self._w.leader
        with self._lock:
            while True:
                if not self._w.watching:
                    self._register()
                elif time.monotonic() - self._renewed > self._w.lease_ms / 3000:
                    self._renew()
                    continue
                left = _ms(min(max(0.0, deadline - time.monotonic()), MOST_HELD))
                try:
                    self._w.apply(self._coord.call(self._w.poll_body(left), self._w.landlord, left))
                except IndefiniteError:
                    time.sleep(0.1)
                if self._w.leader != before:
                    return True
                if time.monotonic() >= deadline:
                    return False

    def close(self) -> None:
        """Ends the watch."""
        from ._native import Request

        try:
            self._coord.cluster.post(Request.cancel(next(_ids), self._w.cookie).encode(self._coord.encoding), self._w.landlord)
        except LeaseError:
            pass

    def __enter__(self) -> "Observer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def observe(servers: Union[str, Sequence[str], Cluster], name: Union[str, bytes], *, lease: float = 30.0, timeout: float = 1.0) -> Observer:
    """Follows the leader of election ``name`` (the holder of any exclusive resource) through
    a watch whose lease (``lease`` seconds) it renews as it polls."""
    return Observer(_cluster(servers, timeout), name, lease)


class AsyncObserver(_Observing):
    """:class:`Observer` on asyncio (see :func:`aobserve`)."""

    async def _register(self) -> None:
        self._w.registered(await self._coord.acall(_watch_body(self._w.name, self._w.lease_ms)))
        self._renewed = time.monotonic()

    async def _renew(self) -> None:
        with self._renewal() as req:
            self._renewed_by(await self._coord.cluster.apost(req, self._w.landlord))

    async def next(self, timeout: float) -> bool:
        """As :meth:`Observer.next`."""
        deadline = time.monotonic() + timeout
        before = self._w.leader
        while True:
            if not self._w.watching:
                await self._register()
            elif time.monotonic() - self._renewed > self._w.lease_ms / 3000:
                await self._renew()
                continue
            left = _ms(min(max(0.0, deadline - time.monotonic()), MOST_HELD))
            try:
                self._w.apply(await self._coord.acall(self._w.poll_body(left), self._w.landlord, left))
            except IndefiniteError:
                await asyncio.sleep(0.1)
            if self._w.leader != before:
                return True
            if time.monotonic() >= deadline:
                return False

    async def close(self) -> None:
        """Ends the watch."""
        from ._native import Request

        try:
            await self._coord.cluster.apost(Request.cancel(next(_ids), self._w.cookie).encode(self._coord.encoding), self._w.landlord)
        except LeaseError:
            pass

    async def __aenter__(self) -> "AsyncObserver":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


async def aobserve(
    servers: Union[str, Sequence[str], Cluster], name: Union[str, bytes], *, lease: float = 30.0, timeout: float = 1.0
) -> AsyncObserver:
    """:func:`observe` on asyncio."""
    o = AsyncObserver(_cluster(servers, timeout), name, lease)
    await o._register()
    return o
