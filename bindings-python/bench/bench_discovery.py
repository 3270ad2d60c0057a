#!/usr/bin/env python3
"""Per-call cost of the discovery service through the Python binding: the host's hot loop
(announcements in, events out and reported, probes out), registrations, and a registration's
reads. Prints a table of microseconds per call (median of 5 runs). It uses only calls that the
binding had before and after issue 24, so the same script measures both.

    python bindings-python/bench/bench_discovery.py [--n 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable, List, Tuple

from leasehold import ANY, Announcement, DiscoveryService


def rid(i: int) -> str:
    return f"{i:032x}"


def run(n: int) -> List[Tuple[str, float]]:
    rows: List[Tuple[str, float]] = []

    def timed(name: str, f: Callable[[], int]) -> None:
        samples = []
        for _ in range(5):
            t = time.perf_counter()
            calls = f()
            samples.append((time.perf_counter() - t) / calls * 1e6)
        rows.append((name, statistics.median(samples)))

    def register() -> int:
        svc = DiscoveryService(7, seed=bytes(32))
        for i in range(n):
            svc.register(["printers"], [], b"h", ANY, i)
        return n

    def announce_and_deliver() -> int:
        svc = DiscoveryService(7, seed=bytes(32))
        for i in range(20):
            svc.register(["printers"], [], b"h", ANY, 0)
        calls = 0
        for i in range(n):
            svc.handle_announcement(Announcement(rid(i % 50 + 1), ["printers"], f"10.0.0.{i % 50 + 1}:4160", i + 1, 30_000), i)
            calls += 1
            while (e := svc.poll_event(i)) is not None:
                svc.delivered(e.event_id, e.sequence, i)
                calls += 2
        return calls

    def reads() -> int:
        svc = DiscoveryService(7, seed=bytes(32))
        reg, _ = svc.register(["printers"], ["lookup.example:4160"], b"h", ANY, 0)
        for i in range(1, 11):
            svc.handle_announcement(Announcement(rid(i), ["printers"], f"10.0.0.{i}:4160", 1, 30_000), 0)
        for _ in range(n):
            reg.registrars(1)
            reg.groups(1)
            reg.lease(1)
        return 3 * n

    timed("register", register)
    timed("announcement, poll_event, delivered (mixed)", announce_and_deliver)
    timed("registrars / groups / lease (10 registrars)", reads)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    a = ap.parse_args()
    print("| call | µs per call |")
    print("|---|---:|")
    for name, us in run(a.n):
        print(f"| {name} | {us:.2f} |")


if __name__ == "__main__":
    main()
