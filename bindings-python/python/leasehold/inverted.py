"""Inverted leasing (seed 004): the landlord polls (``Poller``), holders answer
(``PollListener``). The two parts are native classes; the values they exchange are records
(``p.seq``, ``p["seq"]``, frozen), read and written by the core, with ``to_json``/``from_json``
for their JSON text form. Ids and cookies are hex text, durations int ms."""

# mypy: disable-error-code="no-any-return"

from __future__ import annotations

from typing import Any, Dict, Union

from . import _native
from ._data import Record
from ._machine import ms


class _Value(Record):
    """A value of inverted leasing: checked by the core when made by hand."""

    def _check(self, d: Dict[str, Any]) -> Any:
        d = {k: (f"{v:016x}" if k == "landlord" and isinstance(v, int) else ms(v)) for k, v in d.items()}
        return _native.normalize(type(self).__name__, d)

    def to_json(self) -> str:
        """Its JSON text."""
        return _native.normalize(type(self).__name__, self, "to")

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> Any:
        """The value of a JSON text; a bad one raises ``DecodeError``."""
        return _native.normalize(cls.__name__, text, "from")


class Poll(_Value):
    """A poll, multicast by the landlord to every holder: round ``seq``, listening time
    ``duration`` (D) and extra time ``extra`` (A), in ms; ``landlord`` its id (16 hex digits)."""

    landlord: str
    seq: int
    duration: int
    extra: int


class Admission(_Value):
    """The landlord's answer to a join: the holder's cookie and when the next poll comes."""

    cookie: str
    next_poll_in: int


class Confirm(_Value):
    """The landlord's confirmation of a poll response."""

    cookie: str
    seq: int


class TrafficStats(Record):
    """Message and byte counters of one side (``stats()``; also a mapping)."""

    messages_sent: int
    messages_received: int
    bytes_sent: int
    bytes_received: int
    polls: int
    joins: int
    denials: int
    responses: int
    cancelled: int
