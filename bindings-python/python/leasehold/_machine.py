"""The Python side of every sans-I/O part, written once.

A part's native class (made by ``machine_class!`` in the Rust crate) takes its settings as data
and every call as ``handle({"op": ..., ...}, now)``. :class:`Part` holds it and gives the
part's Python class the shared methods (the timer, ``poll_transmit``, ``poll_event``,
``take_due``, ``snapshot``, the durable methods of a stored part) by delegation; the part's own
class only names its calls. :func:`settings` turns Python arguments into the data the core reads
(``timedelta`` to ms, a ``Policy`` or ``Limits`` to its data form).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, Dict, Optional, Type, TypeVar, Union

from ._types import Encoding

from . import _native

P = TypeVar("P", bound="Part")


def ms(value: Any) -> Any:
    """A duration as the core reads it: int ms (a ``timedelta`` converted), anything else as is."""
    if isinstance(value, timedelta):
        if value < timedelta(0):
            raise _native.error_from_code(4, "a duration must not be a negative timedelta (use ANY)")
        return value // timedelta(milliseconds=1)
    return value


def data(value: Any) -> Any:
    """A setting as data: durations, lists of durations, ``Policy`` and ``Limits`` objects, and
    dicts of settings (a renewal service's ``manager``)."""
    if isinstance(value, dict):
        return settings(**value)
    if isinstance(value, _native.Policy):
        return json.loads(value.to_json())
    if isinstance(value, _native.Limits):
        return {k: getattr(value, k) for k in ("max_message_bytes", "max_batch", "max_resource_bytes")}
    if isinstance(value, (list, tuple)):
        return [ms(v) for v in value]
    return ms(value)


def settings(**options: Any) -> Dict[str, Any]:
    """Keyword settings as the data a part's options read (None: not given)."""
    return {k: data(v) for k, v in options.items() if v is not None}


def names(value: Any, what: str) -> Any:
    """An iterable of names, refusing a single str (a common slip) with ``TypeError``."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{what} must be an iterable of str, not a single {type(value).__name__} (wrap one name in a list)")
    return list(value)


def as_bytes(value: Any, what: str) -> Any:
    """``bytes`` for a bytes-like value (bytearray, memoryview); anything else as is."""
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        raise TypeError(f"{what} must be bytes, bytearray or memoryview, got str")
    return value


class Part:
    """A sans-I/O part: the native machine and the methods every part shares."""

    _Native: Any = None
    __slots__ = ("_m",)

    def __init__(self, **options: Any) -> None:
        self._m = self._Native(**options)

    @classmethod
    def _wrap(cls: Type[P], m: Any) -> P:
        obj = cls.__new__(cls)
        obj._m = m
        return obj

    @classmethod
    def _open(cls: Type[P], data_dir: Any, now: int, **options: Any) -> P:
        return cls._wrap(cls._Native.open(data_dir, now, **options))

    @classmethod
    def _restore(cls: Type[P], snapshot: str, now: int, **options: Any) -> P:
        return cls._wrap(cls._Native.restore(snapshot, now, **options))

    def __getattr__(self, name: str) -> Any:
        # The shared methods: poll_timeout, handle_timeout, poll_transmit, poll_event,
        # take_due, snapshot, handle, handle_nowait, durable, journal_seq, wait_durable, ...
        return getattr(object.__getattribute__(self, "_m"), name)

    def _call(self, op: str, now: int, **fields: Any) -> Any:
        return self._m.handle({"op": op, **fields}, now)

    def poll_timeout(self) -> Optional[int]:
        """When to call ``handle_timeout`` next (ms, host's clock), or None."""
        t: Optional[int] = self._m.poll_timeout()
        return t

    def handle_timeout(self, now: int) -> None:
        """Advances the part to ``now``."""
        self._m.handle_timeout(now)

    def snapshot(self, now: int) -> str:
        """Everything it holds at ``now``, as JSON text (it holds secrets)."""
        text: str = self._m.snapshot(now)
        return text


class MessageKind:
    """A wire message kind: ``encode(message, encoding)`` and ``decode(data, encoding, limits)``
    between bytes and the JSON object form."""

    kind = ""

    @classmethod
    def encode(cls, message: Dict[str, Any], encoding: Encoding = "binary") -> bytes:
        return _native.encode_message(cls.kind, message, encoding)

    @classmethod
    def decode(cls, data: Union[bytes, str], encoding: Encoding = "binary", limits: Any = None) -> Dict[str, Any]:
        raw = data.encode() if isinstance(data, str) else data
        return _native.decode_message(cls.kind, raw, encoding, limits)

