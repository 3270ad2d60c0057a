"""Renewal sets at a remote lease renewal service (``leasehold-server --renewal-shards N``,
``POST /renewal``; Jini's LR, seed 003): hand leases to a set before going away, take them
back, register listeners for the set's events, keep the set itself alive::

    from leasehold.renewal import RemoteSet

    s = RemoteSet.create("http://127.0.0.1:7422", 3_600_000)        # a set for an hour
    s.listen("renewal_failure", "http://10.0.0.5:8080/events", b"job 42")
    s.add(lease, ["http://127.0.0.1:7421"], membership=86_400_000, renew=30_000)
    # ... the process may exit now: the service renews the lease for a day ...

Thin by design: the set messages are the core's (``leasehold::service::wire``), encoded
and checked by the core (:class:`SetRequest`, :class:`SetReply`, :class:`SetEventMessage`), and
carried by :class:`leasehold.http.Cluster` (failover between the service's servers, the owner
hint, the line between a definite answer and an indefinite failure). A set's own lease is a
lease like any other, renewed and cancelled with the ordinary ``renew`` / ``cancel`` messages at
the service. Every method has an asyncio twin (``acreate``, ``aadd``, ...).

Times follow the core's rule: ``now`` is on the clock of the caller's leases (the drivers'
:func:`leasehold.monotonic_ms` by default); the service is told how long a lease has left,
never an absolute time, so the two clocks need not agree.
"""

from __future__ import annotations

import datetime
import itertools
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ._clock import monotonic_ms
from ._errors import LeaseError
from ._machine import MessageKind
from ._native import FOREVER, Lease, Reply, Request, error_from_code
from .http import Cluster

__all__ = ["RemoteSet", "SetEventMessage", "SetReply", "SetRequest", "decode_event"]

Duration = Union[int, datetime.timedelta]
Servers = Union[str, Sequence[str], Cluster]


class SetRequest(MessageKind):
    """Set requests (create_set, add, remove, leases, listen, unlisten) in their JSON object
    form, to and from either encoding (the service answers in the one it was sent)."""

    kind = "SetRequest"


class SetReply(MessageKind):
    """Set replies (set_created, done, removed, leases, registered, error)."""

    kind = "SetReply"


class SetEventMessage(MessageKind):
    """The events a renewal service POSTs to a listener (expiration_warning, renewal_failure)."""

    kind = "SetEvent"


def decode_event(body: Union[bytes, str]) -> Dict[str, Any]:
    """A POSTed event's body (JSON) as its object form, checked by the core:
    ``{"event_id", "sequence", "service", "set", "handback", "body": {"kind": ...}}``."""
    return SetEventMessage.decode(body, "json")


_ids = itertools.count(1)


def _ms(d: Duration) -> int:
    return int(d.total_seconds() * 1000) if isinstance(d, datetime.timedelta) else int(d)


def _after(now: int, d: int) -> int:
    return FOREVER if d == FOREVER else min(now + d, FOREVER - 1)


def _request(body: Dict[str, Any]) -> bytes:
    return SetRequest.encode({"v": 1, "id": str(next(_ids)), "body": body}, "json")


def _answer(data: bytes, op: str) -> Tuple[int, Dict[str, Any]]:
    """(the answering service, the reply's body) if it is ``op``; an error reply raises."""
    reply = SetReply.decode(data, "json")
    body: Dict[str, Any] = reply["body"]
    if body["op"] == "error":
        raise _error(int(body["code"]), body["message"])
    if body["op"] != op:
        raise LeaseError(f"expected {op}, got {body['op']}")
    return int(reply["landlord"], 16), body


def _error(code: int, said: str) -> LeaseError:
    """The error of an error reply, with what the service said about it (the core's unknown
    lease has no words of its own; the service's say which set, or why none)."""
    err = error_from_code(code, said)
    if said and said not in err.message:
        try:
            return type(err)(f"{err.message}: {said}", said, code=int(err.code))
        except TypeError:
            pass
    return err


def _cluster(servers: Servers, timeout: float, token: Optional[str]) -> Cluster:
    if isinstance(servers, Cluster):
        if servers.encoding != "json":
            raise ValueError("renewal sets speak JSON: give a Cluster(..., encoding='json')")
        return servers
    return Cluster(servers, encoding="json", timeout=timeout, token=token)


def _create_body(duration: Duration) -> bytes:
    return _request({"op": "create_set", "duration": str(_ms(duration))})


def _client_lease(lease: Lease, urls: Sequence[str], now: int) -> Dict[str, Any]:
    remaining = FOREVER if lease.expiration == FOREVER else lease.remaining(now)
    return {
        "landlord": f"{lease.landlord:016x}",
        "cookie": lease.cookie,
        "remaining": str(remaining),
        "urls": list(urls),
    }


def _lease_reply(data: bytes, op: str) -> Reply:
    reply = Reply.decode(data, "json")
    if reply.error is not None:
        raise reply.error
    if reply.op != op:
        raise LeaseError(f"expected {op}, got {reply.op}")
    return reply


class RemoteSet:
    """A renewal set at a remote renewal service, reached through a JSON
    :class:`~leasehold.http.Cluster` of its servers. Make one with :meth:`create` (or
    :meth:`acreate`), or from a kept :attr:`lease` and :attr:`number`."""

    def __init__(self, cluster: Cluster, lease: Lease, number: int) -> None:
        self.cluster = _cluster(cluster, 1.0, None)
        #: The set's own lease (landlord: the renewal service; expiration on the caller's clock).
        self.lease = lease
        #: The set's number (the ``set`` of its events).
        self.number = number

    @classmethod
    def _made(cls, cluster: Cluster, data: bytes, now: int) -> "RemoteSet":
        service, body = _answer(data, "set_created")
        lease = Lease(service, body["cookie"], _after(now, int(body["duration"])))
        return cls(cluster, lease, int(body["set"]))

    @classmethod
    def create(
        cls,
        servers: Servers,
        duration: Duration,
        *,
        now: Optional[int] = None,
        timeout: float = 1.0,
        token: Optional[str] = None,
    ) -> "RemoteSet":
        """Creates a set leased for at most ``duration`` ms (positive, FOREVER or ANY) at one
        of ``servers`` (URLs or a JSON Cluster); the set's lease counts from ``now`` (the time
        the request is sent, :func:`~leasehold.monotonic_ms` when None)."""
        cluster = _cluster(servers, timeout, token)
        sent = monotonic_ms() if now is None else now
        return cls._made(cluster, cluster.post(_create_body(duration), endpoint="renewal", kind="SetReply"), sent)

    @classmethod
    async def acreate(
        cls,
        servers: Servers,
        duration: Duration,
        *,
        now: Optional[int] = None,
        timeout: float = 1.0,
        token: Optional[str] = None,
    ) -> "RemoteSet":
        """:meth:`create` on asyncio."""
        cluster = _cluster(servers, timeout, token)
        sent = monotonic_ms() if now is None else now
        data = await cluster.apost(_create_body(duration), endpoint="renewal", kind="SetReply")
        return cls._made(cluster, data, sent)

    @property
    def service(self) -> int:
        """The renewal service (a renewal shard's landlord id) that holds the set."""
        return self.lease.landlord

    def _call(self, body: Dict[str, Any], op: str) -> Dict[str, Any]:
        data = self.cluster.post(_request(body), self.service, endpoint="renewal", kind="SetReply")
        return _answer(data, op)[1]

    async def _acall(self, body: Dict[str, Any], op: str) -> Dict[str, Any]:
        data = await self.cluster.apost(_request(body), self.service, endpoint="renewal", kind="SetReply")
        return _answer(data, op)[1]

    def _add(self, lease: Lease, landlord_urls: Union[str, Sequence[str]], membership: Duration, renew: Duration, now: Optional[int]) -> Dict[str, Any]:
        urls = [landlord_urls] if isinstance(landlord_urls, str) else list(landlord_urls)
        at = monotonic_ms() if now is None else now
        return {
            "op": "add",
            "set": self.lease.cookie,
            "lease": _client_lease(lease, urls, at),
            "membership": str(_ms(membership)),
            "renew": str(_ms(renew)),
        }

    def add(
        self,
        lease: Lease,
        landlord_urls: Union[str, Sequence[str]],
        membership: Duration = FOREVER,
        renew: Duration = 60_000,
        *,
        now: Optional[int] = None,
    ) -> None:
        """Hands ``lease`` to the set: renewed with its landlord (reached at ``landlord_urls``,
        the servers of its cluster) until ``membership`` ms from now (FOREVER: until removed),
        asking for ``renew`` ms each time. ``now`` is on the clock of the lease's expiration.
        Adding a lease the set holds updates its membership."""
        self._call(self._add(lease, landlord_urls, membership, renew, now), "done")

    async def aadd(
        self,
        lease: Lease,
        landlord_urls: Union[str, Sequence[str]],
        membership: Duration = FOREVER,
        renew: Duration = 60_000,
        *,
        now: Optional[int] = None,
    ) -> None:
        """:meth:`add` on asyncio."""
        await self._acall(self._add(lease, landlord_urls, membership, renew, now), "done")

    def _remove(self, lease: Lease, landlord_urls: Union[str, Sequence[str]]) -> Dict[str, Any]:
        urls = [landlord_urls] if isinstance(landlord_urls, str) else list(landlord_urls)
        return {"op": "remove", "set": self.lease.cookie, "landlord": f"{lease.landlord:016x}", "cookie": lease.cookie, "urls": urls}

    def remove(self, lease: Lease, landlord_urls: Union[str, Sequence[str]]) -> Optional[Dict[str, Any]]:
        """Takes ``lease`` back (it is not cancelled): the lease as the service last renewed
        it (``remaining`` ms as the reply was written), or None if the set did not hold it."""
        lease_form: Optional[Dict[str, Any]] = self._call(self._remove(lease, landlord_urls), "removed").get("lease")
        return lease_form

    async def aremove(self, lease: Lease, landlord_urls: Union[str, Sequence[str]]) -> Optional[Dict[str, Any]]:
        """:meth:`remove` on asyncio."""
        lease_form: Optional[Dict[str, Any]] = (await self._acall(self._remove(lease, landlord_urls), "removed")).get("lease")
        return lease_form

    def leases(self) -> List[Dict[str, Any]]:
        """The set's leases with their memberships (``landlord``, ``cookie``, ``remaining``,
        ``urls``, ``membership``, ``renew``)."""
        found: List[Dict[str, Any]] = self._call({"op": "leases", "set": self.lease.cookie}, "leases")["leases"]
        return found

    async def aleases(self) -> List[Dict[str, Any]]:
        """:meth:`leases` on asyncio."""
        found: List[Dict[str, Any]] = (await self._acall({"op": "leases", "set": self.lease.cookie}, "leases"))["leases"]
        return found

    def _listen(self, event: str, url: str, handback: bytes, min_warning: Duration) -> Dict[str, Any]:
        return {
            "op": "listen",
            "set": self.lease.cookie,
            "event": event,
            "min_warning": str(_ms(min_warning)),
            "url": url,
            "handback": bytes(handback).hex(),
        }

    def listen(self, event: str, url: str, handback: bytes = b"", min_warning: Duration = 0) -> Tuple[int, int]:
        """Registers ``url`` for the set's ``event`` (``"expiration_warning"``, ``min_warning``
        ms before the set's lease expires; ``"renewal_failure"``): the registration's event id
        and the sequence number its next event follows. Events are POSTed to ``url`` as JSON
        (:func:`decode_event`); answer 2xx, or 404/410 to end the registration."""
        body = self._call(self._listen(event, url, handback, min_warning), "registered")
        return int(body["event_id"]), int(body["sequence"])

    async def alisten(self, event: str, url: str, handback: bytes = b"", min_warning: Duration = 0) -> Tuple[int, int]:
        """:meth:`listen` on asyncio."""
        body = await self._acall(self._listen(event, url, handback, min_warning), "registered")
        return int(body["event_id"]), int(body["sequence"])

    def unlisten(self, event: str) -> None:
        """Ends the set's registration for ``event``."""
        self._call({"op": "unlisten", "set": self.lease.cookie, "event": event}, "done")

    async def aunlisten(self, event: str) -> None:
        """:meth:`unlisten` on asyncio."""
        await self._acall({"op": "unlisten", "set": self.lease.cookie, "event": event}, "done")

    def _renewed(self, data: bytes, sent: int) -> int:
        granted = _lease_reply(data, "renewed").duration
        assert granted is not None
        self.lease = self.lease.with_expiration(_after(sent, granted))
        return granted

    def renew(self, duration: Duration, *, now: Optional[int] = None) -> int:
        """Renews the set's own lease for ``duration`` ms (a lease like any other): the
        duration granted; :attr:`lease` moves on from ``now``."""
        sent = monotonic_ms() if now is None else now
        data = self.cluster.post(Request.renew(next(_ids), self.lease.cookie, _ms(duration)).encode("json"), self.service)
        return self._renewed(data, sent)

    async def arenew(self, duration: Duration, *, now: Optional[int] = None) -> int:
        """:meth:`renew` on asyncio."""
        sent = monotonic_ms() if now is None else now
        data = await self.cluster.apost(Request.renew(next(_ids), self.lease.cookie, _ms(duration)).encode("json"), self.service)
        return self._renewed(data, sent)

    def cancel(self) -> None:
        """Cancels the set's lease: the set is destroyed, its leases are no longer renewed
        (not cancelled)."""
        _lease_reply(self.cluster.post(Request.cancel(next(_ids), self.lease.cookie).encode("json"), self.service), "cancelled")

    async def acancel(self) -> None:
        """:meth:`cancel` on asyncio."""
        _lease_reply(await self.cluster.apost(Request.cancel(next(_ids), self.lease.cookie).encode("json"), self.service), "cancelled")

    def __repr__(self) -> str:
        return f"RemoteSet(service={self.service:016x}, number={self.number}, expiration={self.lease.expiration})"
