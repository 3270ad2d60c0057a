"""Records: how the core's values look in Python, written once for every part.

The native module converts a core value with its serde description (pythonize): a Rust struct
becomes a :class:`Record` named after the Rust type, with the Rust field names (snake_case).
A record reads like an object (``r.id``) and like a mapping (``r["id"]``, ``dict(r)``: it is a
``dict`` underneath), cannot be changed, compares and hashes by value, and prints with its name.

A subclass declared with annotations (``class Registrar(Record): id: str ...``) is the type
the native module makes for that Rust name, and its annotations are checked against the data
the core sends: a field the core adds, drops or renames raises ``TypeError`` at the first
conversion (the tests convert every kind), so the Python types cannot drift from Rust.
Records of names no class declares are made on the fly (untyped).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, ClassVar, Dict, Tuple, Type

_KINDS: Dict[str, Type["Record"]] = {}


def _frozen(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_frozen(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _frozen(x)) for k, x in v.items()))
    return v


def _frozen_error(self: Any, *args: Any, **kw: Any) -> Any:
    raise TypeError(f"{type(self).__name__} is read-only")


def _frozen_attr(self: Any, *args: Any) -> Any:
    raise AttributeError(f"{type(self).__name__} is read-only")


class Record(Dict[str, Any]):
    """A core value: attribute and key access, frozen, compared by value. A ``dict`` underneath,
    so that the native module reads and writes it at the speed of a dict."""

    __slots__ = ()
    _fields: ClassVar[Tuple[str, ...]] = ()

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._fields = cls.__dict__.get("_fields") or tuple(cls.__dict__.get("__annotations__", {}))
        for name in cls._fields:  # attribute access in C, and no `__getattr__` for pythonize's probes
            if not hasattr(dict, name) and name not in cls.__dict__:
                setattr(cls, name, property(itemgetter(name)))
        _KINDS.setdefault(cls.__name__, cls)

    def __init__(self, *args: Any, **fields: Any) -> None:
        names = type(self)._fields
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes {len(names)} fields, got {len(args)}")
        d = dict(zip(names, args))
        for k, v in fields.items():
            if k in d:
                raise TypeError(f"{type(self).__name__} got {k!r} twice")
            d[k] = v
        missing = [n for n in names if n not in d]
        if names and (missing or len(d) != len(names)):
            extra = sorted(set(d) - set(names))
            raise TypeError(f"{type(self).__name__}: missing {missing}, unknown {extra}")
        dict.__init__(self, self._check(d))

    def _check(self, d: Dict[str, Any]) -> Any:
        """The fields as the core reads them (a subclass checks and normalises them there)."""
        return d

    __setattr__ = __delattr__ = _frozen_attr
    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _frozen_error

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record):
            return type(self).__name__ == type(other).__name__ and dict.__eq__(self, other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:  # type: ignore[override]
        return hash((type(self).__name__, _frozen(dict(self))))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.items())
        return f"{type(self).__name__}({inner})"


def record(name: str, fields: Dict[str, Any]) -> Any:
    """The record for Rust type ``name``, its fields checked against the declared ones (called by
    the native module for the first value of each name; it then makes that class's records)."""
    cls: Type[Record] = _KINDS.get(name) or type(name, (Record,), {"__slots__": (), "__module__": __name__, "__annotations__": dict.fromkeys(fields, "Any")})
    if cls._fields and tuple(fields) != cls._fields:
        raise TypeError(f"{name}: the core sends {tuple(fields)}, leasehold declares {cls._fields}")
    r: Record = dict.__new__(cls)
    dict.update(r, fields)
    return r
