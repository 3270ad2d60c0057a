"""Landlord throughput from Python: the native binding against a pure-Python landlord (dict + heapq).

Both landlords implement the same contract for the measured operations (bounded policy, grant,
renew with the never-shorten rule, renew_all with per-lease results, expiry by deadline order).
Prints one table; run it through scripts/bench-python.sh.
"""

from __future__ import annotations

import argparse
import heapq
import random
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import leasehold
from leasehold import ANY, FOREVER, Landlord, Policy

MAX = 3_600_000
DEFAULT = 600_000


class UnknownLease(Exception):
    pass


class PurePythonLandlord:
    """The obvious pure-Python landlord: a dict of leases and a heap of deadlines (lazy deletion)."""

    def __init__(self, seed: int) -> None:
        self.leases: Dict[str, List[Any]] = {}
        self.heap: List[Tuple[int, str]] = []
        self.rng = random.Random(seed)
        self.expired: List[Tuple[str, int, Any]] = []

    def _duration(self, requested: int) -> int:
        if requested < 0 and requested != ANY:
            raise ValueError("negative duration")
        return DEFAULT if requested == ANY else min(requested, MAX)

    def grant(self, resource: Any, duration: int, now: int) -> Tuple[str, int, int]:
        d = self._duration(duration)
        exp = FOREVER if d == FOREVER else min(now + d, FOREVER)
        cookie = "%032x" % self.rng.getrandbits(128)
        while cookie in self.leases:
            cookie = "%032x" % self.rng.getrandbits(128)
        self.leases[cookie] = [exp, resource]
        heapq.heappush(self.heap, (exp, cookie))
        return cookie, d, exp

    def renew(self, cookie: str, duration: int, now: int) -> int:
        d = self._duration(duration)
        entry = self.leases.get(cookie)
        if entry is None or (entry[0] != FOREVER and entry[0] < now):
            raise UnknownLease(cookie)
        old = entry[0]
        new = min(now + d, FOREVER)
        if new < old:  # never shorten unless the holder asked for a shorter lease
            if duration == ANY or now + duration > old:
                d = old - now
                new = old
            else:
                d = duration
        entry[0] = new
        heapq.heappush(self.heap, (new, cookie))
        return d

    def renew_all(self, items: List[Tuple[str, int]], now: int) -> List[Union[int, Exception]]:
        out: List[Union[int, Exception]] = []
        for cookie, duration in items:
            try:
                out.append(self.renew(cookie, duration, now))
            except (UnknownLease, ValueError) as e:
                out.append(e)
        return out

    def handle_timeout(self, now: int) -> None:
        heap, leases = self.heap, self.leases
        while heap and heap[0][0] < now:
            exp, cookie = heapq.heappop(heap)
            entry = leases.get(cookie)
            if entry is not None and entry[0] == exp:
                del leases[cookie]
                self.expired.append((cookie, exp, entry[1]))

    def drain_expired(self) -> List[Tuple[str, int, Any]]:
        out, self.expired = self.expired, []
        return out


def timed(f: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def run(n: int, batch: int, seed: int) -> List[Tuple[str, float, float]]:
    rng = random.Random(seed)
    rows: List[Tuple[str, float, float]] = []
    native = Landlord(1, Policy.bounded(MAX, DEFAULT), seed=bytes(32))
    pure = PurePythonLandlord(seed)
    durations = [rng.randrange(60_000, MAX) for _ in range(n)]

    # grant: n single calls each.
    nc: List[str] = []
    pc: List[str] = []

    def grant_native() -> None:
        g = native.grant
        nc.extend([g(i, d, 0).cookie for i, d in enumerate(durations)])

    def grant_pure() -> None:
        g = pure.grant
        pc.extend([g(i, d, 0)[0] for i, d in enumerate(durations)])

    rows.append(("grant (single)", n / timed(grant_native), n / timed(grant_pure)))

    order = list(range(n))
    rng.shuffle(order)
    n_items = [(nc[i], ANY) for i in order]
    p_items = [(pc[i], ANY) for i in order]

    def renew_native() -> None:
        r = native.renew
        for c, d in n_items:
            r(c, d, 1_000)

    def renew_pure() -> None:
        r = pure.renew
        for c, d in p_items:
            r(c, d, 1_000)

    rows.append(("renew (single)", n / timed(renew_native), n / timed(renew_pure)))

    def renew_all_native() -> None:
        r = native.renew_all
        for k in range(0, n, batch):
            r(n_items[k : k + batch], 2_000)

    def renew_all_pure() -> None:
        r = pure.renew_all
        for k in range(0, n, batch):
            r(p_items[k : k + batch], 2_000)

    rows.append((f"renew_all (batches of {batch})", n / timed(renew_all_native), n / timed(renew_all_pure)))

    # The same batches as binary wire messages, answered by one call each (what a server does).
    msgs = [
        leasehold.Request.renew_all(k, n_items[k : k + batch]).encode("binary") for k in range(0, n, batch)
    ]

    def wire_native() -> None:
        h = native.handle_bytes
        for m in msgs:
            h(m, "binary", 3_000)

    t_wire = timed(wire_native)
    rows.append((f"renew_all wire msg (batches of {batch})", n / t_wire, float("nan")))

    # Expiry: everything expires; find and hand back all n leases.
    def expire_native() -> None:
        native.handle_timeout(FOREVER - 1)
        got = native.drain_expired()
        while native.poll_timeout() is not None:
            native.handle_timeout(FOREVER - 1)
            got.extend(native.drain_expired())
        assert len(got) == n, len(got)

    def expire_pure() -> None:
        pure.handle_timeout(FOREVER - 1)
        assert len(pure.drain_expired()) == n

    rows.append(("expire all (handle_timeout + drain)", n / timed(expire_native), n / timed(expire_pure)))
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args(argv)
    print(f"leasehold {leasehold.__version__}, Python {sys.version.split()[0]}; ops/s (higher is better)")
    print(f"| leases | operation | native ops/s | pure-Python ops/s | speed-up |")
    print(f"|---:|---|---:|---:|---:|")
    for n in (int(s) for s in args.sizes.split(",")):
        for name, fast, slow in run(n, args.batch, args.seed):
            ratio = fast / slow if slow == slow else float("nan")
            slow_s = f"{slow:,.0f}" if slow == slow else "n/a"
            ratio_s = f"{ratio:.1f}x" if ratio == ratio else "n/a"
            print(f"| {n:,} | {name} | {fast:,.0f} | {slow_s} | {ratio_s} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
