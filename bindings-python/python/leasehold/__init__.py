"""leasehold: distributed leases in the Jini model, over a sans-I/O Rust core.

A *landlord* grants leases on resources for negotiated durations; holders renew or cancel them;
a lease nobody renews expires.  Every call that depends on time takes ``now`` in milliseconds on
the host's clock; durations are int milliseconds (``FOREVER``, ``ANY``) or ``datetime.timedelta``.
The drivers in :mod:`leasehold.aio` and :mod:`leasehold.threaded` run the state machines on a
real clock.  ``DiscoveryService`` is Jini's lookup discovery service: registrations (leased)
whose clients hear discovered and discarded events about lookup services (registrars).
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
    ReentrantCallError,
    StoreError,
    UnknownLeaseError,
)
from ._events import SetEvent
from ._native import (
    ABSOLUTE,
    ListenerEvent,
    ListenerTransmit,
    PollListener,
    Poller,
    expected_detection,
    inverted_bandwidth,
    ANY,
    DURATION,
    FOREVER,
    EventRegistration,
    GapTracker,
    LEASE_BINARY_LEN,
    SERIAL_VERSION,
    WIRE_VERSION,
    Expired,
    Grant,
    Landlord,
    Lease,
    LeaseMap,
    Limits,
    Policy,
    RenewalEvent,
    RenewalManager,
    RenewalService,
    RenewalSet,
    Reply,
    Request,
    Transmit,
    __version__,
    error_from_code,
    is_definite_code,
    lease_from_reply,
    local_expiration,
)
from ._types import Duration, Encoding
from ._data import Record
from .inverted import Admission, Confirm, Poll, TrafficStats
from .discovery import (
    ANNOUNCEMENT_MAX_BYTES,
    Announcement,
    Delivery,
    DiscoveryEvent,
    DiscoveryRegistration,
    DiscoveryReply,
    DiscoveryRequest,
    DiscoveryService,
    EventReply,
    EventSource,
    Registrar,
    UnicastRequest,
    UnicastResponse,
)
from . import aio, http, threaded  # noqa: E402  (submodules: drivers and the HTTP transport)


#: The groups of a registration that wants every lookup service (Jini ``ALL_GROUPS``).
ALL_GROUPS = None
#: The groups of a registration that wants none by group (Jini ``NO_GROUPS``).
NO_GROUPS: frozenset[str] = frozenset()


class SerialFormat(IntEnum):
    """How a lease is written out (Jini ``Lease.DURATION`` and ``Lease.ABSOLUTE``)."""

    DURATION = 1
    ABSOLUTE = 2


__all__ = [
    "ALL_GROUPS",
    "ANNOUNCEMENT_MAX_BYTES",
    "Announcement",
    "Delivery",
    "DiscoveryEvent",
    "EventSource",
    "Record",
    "DiscoveryRegistration",
    "DiscoveryReply",
    "DiscoveryRequest",
    "DiscoveryService",
    "EventReply",
    "NO_GROUPS",
    "Registrar",
    "UnicastRequest",
    "UnicastResponse",
    "Admission",
    "Confirm",
    "ListenerEvent",
    "ListenerTransmit",
    "Poll",
    "TrafficStats",
    "PollListener",
    "Poller",
    "expected_detection",
    "inverted_bandwidth",
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
    "EventRegistration",
    "GapTracker",
    "Expired",
    "Grant",
    "IndefiniteError",
    "InvalidArgumentError",
    "Landlord",
    "Lease",
    "LeaseDeniedError",
    "LeaseError",
    "LeaseMap",
    "LeaseMapError",
    "Limits",
    "Policy",
    "RenewalEvent",
    "RenewalManager",
    "RenewalService",
    "RenewalSet",
    "Reply",
    "Request",
    "SetEvent",
    "Transmit",
    "SerialFormat",
    "ReentrantCallError",
    "StoreError",
    "UnknownLeaseError",
    "__version__",
    "aio",
    "epoch_ms",
    "error_from_code",
    "is_definite_code",
    "lease_from_reply",
    "local_expiration",
    "http",
    "threaded",
    "monotonic_ms",
]
