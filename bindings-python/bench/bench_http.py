"""Renewals over loopback HTTP from Python: ``leasehold.http.serve_threaded`` answering a client
that keeps one HTTP/1.1 connection (``http.client.HTTPConnection``) and one that opens a
connection per request (``leasehold.http.post``, urllib). Prints one table (requests/s).

Run it through scripts/bench-python.sh (``--http-only`` runs just this table).
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import time
from typing import Callable, List, Optional, Tuple

import leasehold
from leasehold import ANY, Landlord, Policy, Reply, Request, monotonic_ms
from leasehold.http import post, serve_threaded


def measure(n: int, one: Callable[[int], None]) -> Tuple[float, float, float]:
    """Requests/s over ``n`` sequential requests, with p50 and p99 latency in ms."""
    lat: List[float] = []
    t0 = time.perf_counter()
    for i in range(n):
        s = time.perf_counter()
        one(i)
        lat.append((time.perf_counter() - s) * 1000)
    total = time.perf_counter() - t0
    lat.sort()
    return n / total, statistics.median(lat), lat[min(len(lat) - 1, int(len(lat) * 0.99))]


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=3000)
    args = ap.parse_args(argv)
    n = args.requests
    landlord = Landlord(1, Policy.fixed(600_000), seed=os.urandom(32))
    server = serve_threaded(lambda m, enc: landlord.handle_bytes(m, enc, monotonic_ms()))
    url = f"http://127.0.0.1:{server.server_port}/"
    cookie = landlord.grant(b"r", ANY, monotonic_ms()).cookie
    msgs = [Request.renew(i, cookie, 600_000).encode() for i in range(n)]
    rows = []
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=10)

        def keep_alive(i: int) -> None:
            conn.request("POST", "/", body=msgs[i], headers={"Content-Type": "application/octet-stream"})
            assert Reply.decode(conn.getresponse().read()).op == "renewed"

        def per_request(i: int) -> None:
            assert Reply.decode(post(url, msgs[i])).op == "renewed"

        measure(min(n, 200), keep_alive)  # warm up
        rows.append(("keep-alive (http.client, one connection)", n, *measure(n, keep_alive)))
        conn.close()
        m = max(1, n // 3)
        rows.append(("no keep-alive (leasehold.http.post, urllib)", m, *measure(m, per_request)))
    finally:
        server.shutdown()
        server.server_close()
    print(f"leasehold {leasehold.__version__}, Python {sys.version.split()[0]}; "
          "one renew per request over loopback HTTP to leasehold.http.serve_threaded")
    print("| client | requests | requests/s | p50 ms | p99 ms |")
    print("|---|---:|---:|---:|---:|")
    for name, count, rps, p50, p99 in rows:
        print(f"| {name} | {count:,} | {rps:,.0f} | {p50:.2f} | {p99:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
