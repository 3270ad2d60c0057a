"""Thread-based drivers: run leasehold's sans-I/O state machines on a background thread.

For programs without an event loop.  Like the asyncio drivers they only convert clocks and
transports; every decision about leases stays in the core.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional

from ._clock import monotonic_ms, wait_seconds
from ._native import Expired, Landlord
from ._types import Encoding

__all__ = ["LandlordDriver"]

Clock = Callable[[], int]


class LandlordDriver:
    """Runs a landlord's expiry on a daemon thread; ``on_expired`` is called on that thread.

    The landlord itself is thread-safe, so request handlers on other threads can call
    :meth:`handle_bytes` (or the landlord directly, then :meth:`wake`).
    """

    def __init__(
        self,
        landlord: Landlord,
        *,
        on_expired: Optional[Callable[[Expired], None]] = None,
        clock: Clock = monotonic_ms,
        name: str = "leasehold-landlord",
    ) -> None:
        self.landlord = landlord
        self.clock = clock
        self._on_expired = on_expired
        self._cond = threading.Condition()
        self._woken = False
        self._stopping = False
        self._thread: Optional[threading.Thread] = None
        self._name = name
        #: Exceptions raised by ``on_expired`` (the driver keeps running).
        self.errors: list[BaseException] = []

    def now(self) -> int:
        """The driver's clock, in ms."""
        return self.clock()

    def wake(self) -> None:
        """Re-reads the landlord's next deadline (call after granting or renewing directly)."""
        with self._cond:
            self._woken = True
            self._cond.notify()

    def handle_bytes(self, data: bytes, encoding: Encoding = "binary") -> bytes:
        """Answers a request message at the driver's clock and returns the reply message."""
        reply = self.landlord.handle_bytes(data, encoding, self.clock())
        self.wake()
        return reply

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._stopping:
                    return
                self._woken = False
            self.landlord.handle_timeout(self.clock())
            for expired in self.landlord.drain_expired():
                if self._on_expired is not None:
                    try:
                        self._on_expired(expired)
                    except Exception as exc:  # a callback's failure must not stop expiry
                        self.errors.append(exc)
            delay = wait_seconds(self.landlord.poll_timeout(), self.clock())
            with self._cond:
                if not self._woken and not self._stopping:
                    self._cond.wait(delay)

    def start(self) -> "LandlordDriver":
        """Starts the background thread."""
        if self._thread is None:
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: Optional[float] = 5.0) -> None:
        """Stops the thread and joins it."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> "LandlordDriver":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
