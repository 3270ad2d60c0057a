"""The exception hierarchy of leasehold, one class per stable error code of the core.

``LeaseError`` is the base of everything leasehold raises about leases.  Invalid arguments and
undecodable input raise subclasses that are also ``ValueError``, so code that already catches
``ValueError`` for bad input keeps working.
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar, Dict, Optional

__all__ = [
    "ErrorCode",
    "LeaseError",
    "UnknownLeaseError",
    "LeaseDeniedError",
    "LeaseMapError",
    "InvalidArgumentError",
    "DecodeError",
    "IndefiniteError",
    "ReentrantCallError",
    "StoreError",
]


class ErrorCode(IntEnum):
    """Stable numeric error codes, the same in every binding (C status codes, JS ``code``)."""

    OK = 0
    UNKNOWN_LEASE = 1
    LEASE_DENIED = 2
    LEASE_MAP = 3
    INVALID_ARGUMENT = 4
    DECODE = 5
    INDEFINITE = 6


class LeaseError(Exception):
    """Base of leasehold's errors.

    ``message`` is the full text, ``detail`` the part after the category (what travels on the
    wire), ``code`` the stable :class:`ErrorCode`.
    """

    default_code: ClassVar[ErrorCode] = ErrorCode.INDEFINITE

    def __init__(self, message: str = "", detail: Optional[str] = None, *, code: Optional[int] = None) -> None:
        super().__init__(message)
        self.message: str = message
        self.detail: str = message if detail is None else detail
        self.code: ErrorCode = self.default_code if code is None else ErrorCode(code)

    @property
    def definite(self) -> bool:
        """True when retrying cannot help (every error but an indefinite one)."""
        from ._native import is_definite_code

        return is_definite_code(int(self.code))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class UnknownLeaseError(LeaseError):
    """The lease is unknown to its grantor: never granted, cancelled, or expired."""

    default_code = ErrorCode.UNKNOWN_LEASE


class LeaseDeniedError(LeaseError):
    """The grantor refused the request; a denied renewal leaves the lease as it was."""

    default_code = ErrorCode.LEASE_DENIED


class LeaseMapError(LeaseError):
    """Some leases of a batch failed; ``failures`` maps each failed cookie to its error."""

    default_code = ErrorCode.LEASE_MAP

    def __init__(
        self,
        message: str = "",
        detail: Optional[str] = None,
        failures: Optional[Dict[str, LeaseError]] = None,
        *,
        code: Optional[int] = None,
    ) -> None:
        super().__init__(message, detail, code=code)
        self.failures: Dict[str, LeaseError] = dict(failures or {})


class InvalidArgumentError(LeaseError, ValueError):
    """A bad argument: a negative duration other than ANY, an impossible policy setting, ..."""

    default_code = ErrorCode.INVALID_ARGUMENT


class DecodeError(LeaseError, ValueError):
    """Bytes or text that do not decode: malformed, truncated, oversized or another version."""

    default_code = ErrorCode.DECODE


class IndefiniteError(LeaseError):
    """An indefinite failure (transport error, time-out): worth retrying."""

    default_code = ErrorCode.INDEFINITE


class ReentrantCallError(LeaseError, RuntimeError):
    """A call reached a landlord, manager or service that its own thread is already inside.

    It happens only if code run by that outer call (a destructor, callback or transport) calls
    back in while the object is busy; leasehold raises this instead of deadlocking.  Make the
    call after the outer one has returned.  Indefinite: the same call later can succeed.
    """

    default_code = ErrorCode.INDEFINITE


class StoreError(LeaseError, OSError):
    """A durable landlord's store could not be opened, read or written (and is not damaged:
    damage is a :class:`DecodeError`): a directory another process holds, a full disk, a
    failed sync.  ``errno`` is the operating system's error number when there is one.

    After a failed write nothing more is acknowledged by that landlord (what reached the disk
    is unknown): let the process go and open the store again, which keeps what was durable.
    Indefinite: a holder's request may succeed once the store is back.
    """

    default_code = ErrorCode.INDEFINITE

    def __init__(self, message: str = "", errno: Optional[int] = None, *, code: Optional[int] = None) -> None:
        super().__init__(message, None, code=code)
        self.errno = errno
        self.strerror = message
