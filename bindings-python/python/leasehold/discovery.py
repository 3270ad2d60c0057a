"""The lookup discovery service (seed 003, LD). Every rule is the core's: this module names the
calls (the native ``DiscoveryMachine`` takes each as data) and declares the records the core
sends (checked against Rust at every conversion). Values are records (``r.id``, ``r["id"]``,
frozen); messages (``DiscoveryRequest``, ``DiscoveryReply``, ``EventReply``, the event message
``DiscoveryEvent``) are their canonical JSON object form, as the shared vectors write them.
"""

# The core's answers arrive as Any (data made at run time, checked against the records
# declared here); each method below says what it returns.
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from . import _machine, _native
from ._data import Record
from ._errors import LeaseError
from ._machine import as_bytes, names, settings
from ._types import Encoding

ANNOUNCEMENT_MAX_BYTES: int = _native.ANNOUNCEMENT_MAX_BYTES


class Registrar(Record):
    """A lookup service as the discovery service knows it."""

    id: str
    groups: List[str]
    locators: List[str]

    def _check(self, d: Dict[str, Any]) -> Any:
        d = {**d, "id": registrar_id(d["id"]), "groups": names(d["groups"], "groups"), "locators": names(d["locators"], "locators")}
        return _native.normalize("Registrar", d)


class Announcement(Record):
    """A registrar's multicast announcement; ``encode()`` gives the datagram."""

    registrar: str
    groups: List[str]
    locator: str
    sequence: int
    ttl: int

    def _check(self, d: Dict[str, Any]) -> Any:
        d = {**d, "groups": names(d["groups"], "groups"), "registrar": registrar_id(d["registrar"]), "ttl": _machine.ms(d["ttl"])}
        return _native.normalize("Announcement", d)

    def encode(self) -> bytes:
        return _native.announcement_encode(self)

    @staticmethod
    def decode(data: bytes) -> "Announcement":
        return _native.announcement_decode(data)


class UnicastResponse(Record):
    """What unicast discovery of a locator found: the registrar there and its groups."""

    registrar: str
    groups: List[str]

    def _check(self, d: Dict[str, Any]) -> Any:
        d = {"registrar": registrar_id(d["registrar"]), "groups": names(d["groups"], "groups")}
        return _native.normalize("UnicastResponse", d)


class UnicastRequest(Record):
    """A unicast discovery to make: contact ``locator``, answer ``handle_unicast(id, ...)``."""

    id: int
    locator: str
    host: str
    port: int


class EventSource(Record):
    """Who sends a registration's events: the service and the registration's number."""

    service: str
    object: int


class Delivery(Record):
    """A discovered or discarded event to deliver to ``listener`` (Jini ``RemoteDiscoveryEvent``)."""

    event_id: int
    source: EventSource
    sequence: int
    handback: bytes
    discarded: bool
    registrars: List[Registrar]
    listener: bytes

    def encode(self, encoding: Encoding = "binary") -> bytes:
        """The event message to send to ``listener`` (a ``DiscoveryEvent``)."""
        m = {"v": 1, "event_id": str(self.event_id), "source": {"service": self.source.service, "object": str(self.source.object)},
             "sequence": str(self.sequence), "handback": self.handback.hex(), "discarded": self.discarded, "registrars": [dict(r) for r in self.registrars]}
        return DiscoveryEvent.encode(m, encoding)


class DiscoveryRequest(_machine.MessageKind):
    """``{"v": 1, "id": "1", "body": {"op": "register", "groups": [...], ...}}``."""
    kind = "DiscoveryRequest"


class DiscoveryReply(_machine.MessageKind):
    """``{"v": 1, "id": "1", "landlord": "...", "body": {"op": "registered", ...}}``."""
    kind = "DiscoveryReply"


class DiscoveryEvent(_machine.MessageKind):
    """The event message sent to a listener (``poll_event`` hands out a :class:`Delivery`)."""
    kind = "DiscoveryEvent"


class EventReply(_machine.MessageKind):
    """A listener's answer: ``{"v": 1, "event_id": "1", "sequence": "1", "body": {"op": "received"}}``."""
    kind = "EventReply"

    @staticmethod
    def of(event_id: int, sequence: int, body: Dict[str, Any]) -> Dict[str, Any]:
        return {"v": 1, "event_id": str(event_id), "sequence": str(sequence), "body": body}

    @staticmethod
    def received(event_id: int, sequence: int) -> Dict[str, Any]:
        return EventReply.of(event_id, sequence, {"op": "received"})

    @staticmethod
    def unknown_event(event_id: int, sequence: int) -> Dict[str, Any]:
        return EventReply.of(event_id, sequence, {"op": "unknown_event"})

    @staticmethod
    def failure(event_id: int, sequence: int, error: LeaseError) -> Dict[str, Any]:
        return EventReply.of(event_id, sequence, {"op": "error", "code": int(error.code), "message": str(error)})


def registrar_id(r: Any) -> str:
    """A registrar id as the core reads it (32 hex digits) from those, 16 bytes, an int or a ``Registrar``."""
    if isinstance(r, Registrar) or isinstance(r, bool) or not isinstance(r, (int, bytes, str)):
        if isinstance(r, Registrar):
            return r.id
        raise TypeError(f"a registrar id is a str, bytes, int or Registrar, got {type(r).__name__}")
    if isinstance(r, str):
        return r.lower()
    if isinstance(r, int) and 0 <= r < 2**128 or isinstance(r, bytes) and len(r) == 16:
        return f"{r:032x}" if isinstance(r, int) else r.hex()
    raise _native.error_from_code(4, "a registrar id is 16 bytes or an int from 0 to 2**128 - 1")


def _groups(g: Any) -> Optional[List[str]]: return None if g is None else names(g, "groups")  # noqa: E704
def _listener(v: Any) -> Any: return v.encode() if isinstance(v, str) else as_bytes(v, "listener")  # noqa: E704


class DiscoveryService(_machine.Part):
    """The lookup discovery service (sans-I/O; ``threaded``/``aio``'s ``DiscoveryDriver`` run it).
    Settings: ``seed``, ``lease_policy``, ``grace``, ``limits``, ``event_retry``, ``unicast_retry``,
    ``delivery_timeout``, ``unicast_timeout``, ``max_registrars``, ``max_announcement_ttl``,
    ``restore_jump``; ``open`` keeps it in a directory (answers leave once durable)."""

    _Native = _native.DiscoveryMachine
    __slots__ = ()

    def __init__(self, id: int, **options: Any) -> None:
        super().__init__(id=id, **settings(**options))

    @classmethod
    def open(cls, data_dir: Any, id: int, now: int, **options: Any) -> "DiscoveryService":
        return cls._open(data_dir, now, id=id, **settings(**options))

    @classmethod
    def restore(cls, snapshot: str, now: int, id: int, **options: Any) -> "DiscoveryService":
        return cls._restore(snapshot, now, id=id, **settings(**options))

    @property
    def id(self) -> int:
        return int(self._call("id", 0), 16)

    @property
    def now(self) -> Optional[int]:
        return self._call("now", 0)

    def register(self, groups: Any, locators: Any, handback: bytes, lease_duration: Any, now: int, *,
                 listener: Any = None) -> Tuple["DiscoveryRegistration", Any]:
        r = self._call("register", now, groups=_groups(groups), locators=names(locators, "locators"),
                       handback=as_bytes(handback, "handback"), lease_duration=_machine.ms(lease_duration),
                       listener=None if listener is None else _listener(listener))
        return DiscoveryRegistration(self, r["id"]), r["event"]

    def registration(self, id: int) -> "DiscoveryRegistration":
        return DiscoveryRegistration(self, id)

    def registrations(self) -> List["DiscoveryRegistration"]:
        return [DiscoveryRegistration(self, i) for i in self._call("registrations", 0)]

    def registration_of(self, cookie: str, now: int) -> Optional["DiscoveryRegistration"]:
        i = self._call("registration_of", now, cookie=cookie)
        return None if i is None else DiscoveryRegistration(self, i)

    def __len__(self) -> int:
        return len(self._call("registrations", 0))

    def discovered(self) -> List[Registrar]:
        return self._call("discovered", 0)

    def registrar(self, id: Any) -> Optional[Registrar]:
        return self._call("registrar", 0, registrar=registrar_id(id))

    def handle_announcement(self, announcement: Announcement, now: int) -> None:
        self._call("announcement", now, announcement=announcement)

    def handle_datagram(self, data: bytes, now: int) -> None:
        self._call("datagram", now, datagram=as_bytes(data, "data"))

    def handle_unicast(self, request_id: int, result: Any, now: int) -> bool:
        if isinstance(result, (UnicastResponse, Announcement)):
            found = {"registrar": result["registrar"], "groups": result["groups"]}
            return self._call("unicast_found", now, request=request_id, found=found)
        if isinstance(result, LeaseError):
            return self._call("unicast_failed", now, request=request_id, reason=str(result))
        raise TypeError(f"a unicast result is a UnicastResponse, an Announcement or a LeaseError, got {type(result).__name__}")

    def registrar_unreachable(self, registrar: Any, now: int) -> bool:
        return self._call("unreachable", now, registrar=registrar_id(registrar))

    def poll_transmit(self, now: int) -> Optional[UnicastRequest]:
        return self._m.poll_transmit(now)

    def poll_event(self, now: int) -> Optional[Delivery]:
        """The next event to deliver (to ``event.listener``); report it with ``delivered`` &c."""
        return self._m.poll_event(now)

    def drain_events(self, now: int) -> List[Delivery]:
        return list(iter(lambda: self._m.poll_event(now), None))

    def delivered(self, event_id: int, sequence: int, now: int) -> bool:
        return self._call("delivered", now, event_id=event_id, sequence=sequence)

    def delivery_failed(self, event_id: int, sequence: int, error: LeaseError, now: int) -> bool:
        if not isinstance(error, LeaseError):
            raise TypeError(f"expected a leasehold.LeaseError, got {type(error).__name__}")
        return self.handle_event_reply(EventReply.failure(event_id, sequence, error), now)

    def unknown_event(self, event_id: int, sequence: int, now: int) -> bool:
        return self._call("delivery_failed", now, event_id=event_id, sequence=sequence, failure={"kind": "unknown_event"})

    def handle_event_reply(self, reply: Dict[str, Any], now: int) -> bool:
        return self._serve("event_reply", EventReply.encode(reply, "binary"), "binary", now)

    def _serve(self, protocol: str, message: Any, encoding: Encoding, now: int, listener: Any = None, wait: bool = True) -> Any:
        raw = message.encode() if isinstance(message, str) else as_bytes(message, "data")
        op = {"op": "serve", "protocol": protocol, "message": raw, "encoding": encoding,
              "listener": None if listener is None else _listener(listener)}
        return self._m.handle(op, now) if wait else self._m.handle_nowait(op, now)

    def handle_discovery(self, request: Dict[str, Any], now: int, *, listener: Any = None) -> Dict[str, Any]:
        out = self._serve("discovery", DiscoveryRequest.encode(request, "json"), "json", now, listener)
        return DiscoveryReply.decode(out, "json")

    def handle_discovery_bytes(self, data: bytes, encoding: Encoding, now: int, *, listener: Any = None) -> bytes:
        return self._serve("discovery", data, encoding, now, listener)

    def answer_discovery_bytes(self, data: bytes, encoding: Encoding, now: int, *, listener: Any = None) -> Tuple[bytes, int]:
        return self._serve("discovery", data, encoding, now, listener, wait=False)

    def handle_bytes(self, data: bytes, encoding: Encoding, now: int) -> bytes:
        return self._serve("lease", data, encoding, now)

    def answer_bytes(self, data: bytes, encoding: Encoding, now: int) -> Tuple[bytes, int]:
        return self._serve("lease", data, encoding, now, wait=False)

    def handle_request(self, request: Any, now: int) -> Any:
        return _native.Reply.decode(self.handle_bytes(request.encode("binary"), "binary", now), "binary")

    def __repr__(self) -> str:
        return f"DiscoveryService(id={self.id}, registrations={len(self)}, discovered={len(self.discovered())}{', durable' * self._m.durable})"


class DiscoveryRegistration:
    """A registration (Jini ``LookupDiscoveryRegistration``); every method raises
    ``UnknownLeaseError`` once its lease expired or was cancelled."""

    __slots__ = ("service", "id")

    def __init__(self, service: DiscoveryService, id: int) -> None:
        self.service, self.id = service, id

    def _call(self, op: str, now: int, **fields: Any) -> Any:
        return self.service._m.handle({"op": op, "registration": self.id, **fields}, now)

    def lease(self, now: int) -> Any:
        return self._call("lease", now)

    def event_registration(self, now: int) -> Any:
        return self._call("event_registration", now)

    def registrars(self, now: int) -> List[Registrar]:
        return self._call("registrars", now)

    def groups(self, now: int) -> Optional[FrozenSet[str]]:
        g = self._call("groups", now)
        return None if g is None else frozenset(g)

    def locators(self, now: int) -> FrozenSet[str]:
        return frozenset(self._call("locators", now))

    def add_groups(self, groups: Any, now: int) -> None:
        self._call("add_groups", now, groups=names(groups, "groups"))

    def set_groups(self, groups: Any, now: int) -> None:
        self._call("set_groups", now, groups=_groups(groups))

    def remove_groups(self, groups: Any, now: int) -> None:
        self._call("remove_groups", now, groups=names(groups, "groups"))

    def add_locators(self, locators: Any, now: int) -> None:
        self._call("add_locators", now, locators=names(locators, "locators"))

    def set_locators(self, locators: Any, now: int) -> None:
        self._call("set_locators", now, locators=names(locators, "locators"))

    def remove_locators(self, locators: Any, now: int) -> None:
        self._call("remove_locators", now, locators=names(locators, "locators"))

    def discard(self, registrar: Any, now: int) -> None:
        self._call("discard", now, registrar=registrar_id(registrar))

    def set_listener(self, listener: Any, now: int) -> None:
        self._call("set_listener", now, listener=_listener(listener))

    def listener(self) -> Optional[bytes]:
        return self._call("listener", 0)

    def renew(self, duration: Any, now: int) -> int:
        return self._call("renew", now, duration=_machine.ms(duration))

    def cancel(self, now: int) -> None:
        self._call("cancel", now)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DiscoveryRegistration):
            return NotImplemented
        return self.id == other.id and self.service._m is other.service._m

    def __hash__(self) -> int:
        return self.id

    def __repr__(self) -> str:
        return f"DiscoveryRegistration(id={self.id})"
