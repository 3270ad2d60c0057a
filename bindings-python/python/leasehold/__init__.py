"""leasehold: distributed leases in the Jini model, over a sans-I/O Rust core.

A *landlord* grants leases on resources for negotiated durations; holders renew or cancel them;
a lease nobody renews expires.  Every call that depends on time takes ``now`` in milliseconds on
the host's clock; durations are int milliseconds (``FOREVER``, ``ANY``) or ``datetime.timedelta``.
The drivers in :mod:`leasehold.aio` and :mod:`leasehold.threaded` run the state machines on a
real clock.
"""

from __future__ import annotations

from enum import IntEnum

from ._clock import epoch_ms, monotonic_ms
from ._errors import (
    DecodeError,
    ErrorCode,
    IndefiniteError,
    InvalidArgumentError,
    LeaseDeniedError,
    LeaseError,
    LeaseMapError,
    UnknownLeaseError,
)
from ._native import (
    ABSOLUTE,
    ANY,
    DURATION,
    FOREVER,
    LEASE_BINARY_LEN,
    SERIAL_VERSION,
    WIRE_VERSION,
    Expired,
    Grant,
    Landlord,
    Lease,
    Limits,
    Policy,
    Reply,
    Request,
    __version__,
    error_from_code,
    is_definite_code,
)
from ._types import Duration, Encoding
from . import aio, http, threaded  # noqa: E402  (submodules: drivers and the HTTP transport)


class SerialFormat(IntEnum):
    """How a lease is written out (Jini ``Lease.DURATION`` and ``Lease.ABSOLUTE``)."""

    DURATION = 1
    ABSOLUTE = 2


__all__ = [
    "ABSOLUTE",
    "ANY",
    "DURATION",
    "FOREVER",
    "LEASE_BINARY_LEN",
    "SERIAL_VERSION",
    "WIRE_VERSION",
    "DecodeError",
    "Duration",
    "Encoding",
    "ErrorCode",
    "Expired",
    "Grant",
    "IndefiniteError",
    "InvalidArgumentError",
    "Landlord",
    "Lease",
    "LeaseDeniedError",
    "LeaseError",
    "LeaseMapError",
    "Limits",
    "Policy",
    "Reply",
    "Request",
    "SerialFormat",
    "UnknownLeaseError",
    "__version__",
    "aio",
    "epoch_ms",
    "error_from_code",
    "is_definite_code",
    "http",
    "threaded",
    "monotonic_ms",
]
