"""What the renewal drivers drive: any sans-I/O renewer of the core (RenewalManager, RenewalService)."""

from __future__ import annotations

from typing import Optional, Protocol, Sequence, TypeVar

from ._errors import LeaseError
from ._native import Reply, Transmit

E = TypeVar("E", covariant=True)


class Renewer(Protocol[E]):
    """The holder-side sans-I/O interface: timers, requests out, replies and failures in, events out."""

    def poll_timeout(self) -> Optional[int]: ...

    def handle_timeout(self, now: int) -> None: ...

    def poll_transmit(self, now: int) -> Optional[Transmit]: ...

    def handle_reply(self, reply: Reply, now: int) -> None: ...

    def handle_failure(self, request_id: int, error: LeaseError, now: int) -> None: ...

    def drain_events(self) -> Sequence[E]: ...
