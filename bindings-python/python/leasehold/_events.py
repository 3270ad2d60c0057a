"""A renewal service's events as records of the core's data form (``SetEventData``): a dict
underneath, read by the attributes the native class had."""

from __future__ import annotations

from typing import Any, Dict, Optional

from ._data import _KINDS, Record
from ._errors import LeaseError
from ._native import Lease, error_from_code


def _error(e: Optional[Dict[str, Any]]) -> Optional[LeaseError]:
    return None if e is None else error_from_code(int(e["code"]), str(e["message"]))


class SetEvent(Record):
    """An event of a renewal set (the core's ``SetEventData``, Jini ``RemoteEvent``): ``kind`` is
    "expiration_warning" (with ``expiration``) or "renewal_failure" (with ``lease``, ``error``)."""

    __slots__ = ()
    _fields = ("event_id", "source", "sequence", "handback", "kind")
    event_id = property(lambda self: int(self["event_id"]))
    sequence = property(lambda self: int(self["sequence"]))
    handback = property(lambda self: bytes(self["handback"]), doc="As registered.")
    kind = property(lambda self: str(self["kind"]["type"]))
    source_service = property(lambda self: int(self["source"]["service"], 16), doc="The service's landlord id.")
    source_object = property(lambda self: int(self["source"]["object"]), doc="The set's number.")
    set_id = property(lambda self: int(self["kind"]["set"]), doc="The set the event is about.")

    @property
    def expiration(self) -> Optional[int]:
        """For an expiration warning: when the set's lease expires."""
        return self["kind"].get("expiration")  # type: ignore[no-any-return]

    @property
    def lease(self) -> Optional[Lease]:
        """For a renewal failure: the client lease that left the set."""
        return self["kind"].get("lease")  # type: ignore[no-any-return]

    @property
    def error(self) -> Optional[LeaseError]:
        """For a renewal failure: the last error, if any."""
        return _error(self["kind"].get("error"))


_KINDS["SetEventData"] = SetEvent
