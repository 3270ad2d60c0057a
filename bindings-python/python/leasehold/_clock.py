"""Clocks for the drivers: milliseconds as int, which is what every ``now`` of the core takes."""

import time


def monotonic_ms() -> int:
    """Milliseconds on the monotonic clock: never jumps, the right clock for lease timers."""
    return time.monotonic_ns() // 1_000_000


def epoch_ms() -> int:
    """Milliseconds since the Unix epoch: needed only for ABSOLUTE serial formats."""
    return time.time_ns() // 1_000_000


#: Longest single wait of a driver, in seconds (a deadline further away is waited for in steps).
MAX_WAIT_S = 3600.0


def wait_seconds(deadline: "int | None", now: int) -> "float | None":
    """Seconds from ``now`` until ``deadline`` (both ms), clamped to [0, MAX_WAIT_S]; None for never."""
    if deadline is None:
        return None
    return min(max(deadline - now, 0) / 1000.0, MAX_WAIT_S)
