"""Records: how the core's values look in Python, written once for every part.

The native module converts a core value with its serde description (pythonize): a Rust struct
becomes a :class:`Record` named after the Rust type, with the Rust field names (snake_case).
A record reads like an object (``r.id``) and like a mapping (``r["id"]``, ``dict(r)``), cannot
be changed, compares and hashes by value, and prints with its name.

A subclass declared with annotations (``class Registrar(Record): id: str ...``) is the type
the native module makes for that Rust name, and its annotations are checked against the data
the core sends: a field the core adds, drops or renames raises ``TypeError`` at the first
conversion (the tests convert every kind), so the Python types cannot drift from Rust.
Records of names no class declares are made on the fly (untyped).
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Dict, Iterator, Mapping, Tuple, Type

_KINDS: Dict[str, Type["Record"]] = {}
#: Rust names whose values become another Python type (a native ``Lease``, say): name to
#: a function of the record's fields.
FACTORIES: Dict[str, Callable[[Dict[str, Any]], Any]] = {}


def _frozen(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_frozen(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _frozen(x)) for k, x in v.items()))
    return v


class Record(Mapping[str, Any]):
    """A core value: attribute and key access, frozen, compared by value."""

    __slots__ = ("_d",)
    _fields: ClassVar[Tuple[str, ...]] = ()

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._fields = tuple(getattr(cls, "__annotations__", {}))
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
        object.__setattr__(self, "_d", dict(self._check(d)))

    def _check(self, d: Dict[str, Any]) -> Any:
        """The fields as the core reads them (a subclass checks and normalises them there)."""
        return d

    def __getattr__(self, name: str) -> Any:
        try:
            return object.__getattribute__(self, "_d")[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __getitem__(self, key: str) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record):
            return type(self).__name__ == type(other).__name__ and self._d == other._d
        return NotImplemented

    def __hash__(self) -> int:
        return hash((type(self).__name__, _frozen(self._d)))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._d.items())
        return f"{type(self).__name__}({inner})"

    def _replace(self, **fields: Any) -> "Record":
        return type(self)(**{**self._d, **fields})


def record(name: str, fields: Dict[str, Any]) -> Any:
    """The record for Rust type ``name`` (called by the native module)."""
    make = FACTORIES.get(name)
    if make is not None:
        return make(fields)
    cls = _KINDS.get(name)
    if cls is None:
        cls = type(name, (Record,), {"__slots__": (), "__module__": __name__})
    elif cls._fields and tuple(fields) != cls._fields:
        raise TypeError(f"{name}: the core sends {tuple(fields)}, leasehold declares {cls._fields}")
    r = cls.__new__(cls)
    object.__setattr__(r, "_d", fields)
    return r
