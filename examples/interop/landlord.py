"""The Python landlord of the interop test: serves POST over loopback HTTP, commands on stdin.

Usage: python landlord.py ID   (the line protocol is in examples/interop/README.md)
"""

from __future__ import annotations

import os
import sys
import time

import leasehold
from leasehold.http import serve_threaded


def now_ms() -> int:
    """Epoch milliseconds: the clock every runtime of the test shares."""
    return time.time_ns() // 1_000_000


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: landlord.py ID", file=sys.stderr)
        return 2
    landlord = leasehold.Landlord(int(sys.argv[1]), leasehold.Policy.bounded(60_000, 30_000), seed=os.urandom(32))
    server = serve_threaded(lambda body, encoding: landlord.handle_bytes(body, encoding, now_ms()))
    print(f"url http://127.0.0.1:{server.server_address[1]}/lease", flush=True)
    for line in sys.stdin:
        words = line.split()
        if len(words) == 2 and words[0] == "grant":
            now = now_ms()
            g = landlord.grant(b"interop", int(words[1]), now)
            lease = landlord.lease(g.cookie, now)
            assert lease is not None
            answer = f"granted {g.cookie} {g.expiration} {now} {lease.to_json(now)} {lease.to_bytes(now).hex()}"
        elif len(words) == 2 and words[0] == "query":
            got = landlord.get(words[1], now_ms())
            answer = f"expiration {got[0] if got else 'none'}"
        else:
            answer = f"error unknown command {line.strip()!r}"
        print(answer, flush=True)
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
