#!/usr/bin/env python3
"""Per-call cost of the renewal parts through the Python binding: a renewal manager's events
(renewed, renewal_failed), its settings and readings (constructor, config, rtt), a renewal
service's constructor and set events. Prints microseconds per call (median of 5 runs). It uses
only calls the binding had before and after the events became records, so the same script
measures both wheels.

    python bindings-python/bench/bench_renewal.py [--n 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable, List, Tuple

from leasehold import FOREVER, Landlord, Lease, Policy, RenewalManager, RenewalService


def run(n: int) -> List[Tuple[str, float]]:
    rows: List[Tuple[str, float]] = []

    def timed(name: str, f: Callable[[], Tuple[int, float]]) -> None:
        samples = []
        for _ in range(5):
            calls, seconds = f()
            samples.append(seconds / calls * 1e6)
        rows.append((name, statistics.median(samples)))

    def whole(f: Callable[[], int]) -> Callable[[], Tuple[int, float]]:
        def go() -> Tuple[int, float]:
            t = time.perf_counter()
            return f(), time.perf_counter() - t
        return go

    def renewed_events() -> Tuple[int, float]:
        ll = Landlord(1, Policy.bounded(1_000, 1_000), seed=bytes(32))
        m = RenewalManager(initial_rtt=5, min_rto=20, report_renewals=True)
        for i in range(n):
            g = ll.grant(f"r{i}", 1_000, 0)
            m.renew_for(Lease(1, g.cookie, g.expiration), FOREVER, 1_000, 0)
        m.handle_timeout(900)
        while (t := m.poll_transmit(900)) is not None:
            m.handle_reply(ll.handle_request(t.request, 900), 900)
        t0 = time.perf_counter()
        got = 0
        while (e := m.poll_event()) is not None:
            got += e.kind == "renewed"
        seconds = time.perf_counter() - t0
        assert got == n, got
        return got, seconds

    def make_manager() -> int:
        for _ in range(n):
            RenewalManager(initial_rtt=5, min_rto=20, report_renewals=True)
        return n

    def readings() -> int:
        m = RenewalManager()
        for _ in range(n):
            m.config
        return n

    def make_service() -> int:
        for _ in range(n):
            RenewalService(9, seed=bytes(32), manager={"initial_rtt": 10})
        return n

    def set_events() -> int:
        svc = RenewalService(9, seed=bytes(32))
        for _ in range(n):
            s, _lease = svc.create_set(1_000, 0)
            s.set_expiration_warning_listener(500, b"h", 0)
        svc.handle_timeout(600)
        calls = 0
        while (e := svc.poll_event()) is not None:
            assert e.kind == "expiration_warning"
            calls += 1
        assert calls == n, calls
        return calls

    timed("RenewalManager poll_event + kind (renewed)", renewed_events)
    timed("RenewalManager(**settings)", whole(make_manager))
    timed("RenewalManager.config", whole(readings))
    timed("RenewalService(id, **settings)", whole(make_service))
    timed("RenewalService create_set + listener + poll_event", whole(set_events))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    a = ap.parse_args()
    for name, us in run(a.n):
        print(f"{name:55} {us:8.2f} us/call")


if __name__ == "__main__":
    main()
