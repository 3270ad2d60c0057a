"""A landlord served over HTTP: holders POST wire messages, leases nobody renews expire.

Run:  python examples/python/landlord_service.py --port 8470
Then: python examples/python/holder.py --url http://127.0.0.1:8470/

The service grants at most --max-ms per lease (ANY gets --default-ms) and prints every grant
that expires.  Ctrl-C stops it.

It is durable by default: its leases live in a directory (--data, by default ``landlord-data``
beside this file), every reply leaves only once what it says is on disk, and a service killed
at any moment (even with SIGKILL) and started again on the same directory keeps every lease
it acknowledged, each with the time it had left.  --memory keeps them in memory instead.
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from typing import Optional, Sequence

import leasehold
from leasehold import Expired, Landlord, Policy
from leasehold.http import serve_threaded
from leasehold.threaded import LandlordDriver


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="leasehold landlord over HTTP")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8470)
    ap.add_argument("--id", type=int, default=1, help="landlord id")
    ap.add_argument("--max-ms", type=int, default=10_000)
    ap.add_argument("--default-ms", type=int, default=2_000)
    ap.add_argument("--grace-ms", type=int, default=0)
    ap.add_argument("--run-for", type=float, default=0.0, help="stop after this many seconds (0: until Ctrl-C)")
    ap.add_argument("--data", default=str(Path(__file__).resolve().parent / "landlord-data"), help="the store's directory")
    ap.add_argument("--memory", action="store_true", help="keep the leases in memory only (lost when the service stops)")
    args = ap.parse_args(argv)

    policy = Policy.bounded(args.max_ms, args.default_ms)

    def on_expired(e: Expired) -> None:
        print(f"expired  {e.cookie} resource={e.resource!r} at {e.expiration}", flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.memory:
        driver = LandlordDriver(Landlord(args.id, policy, grace=args.grace_ms), on_expired=on_expired)
        where = "in memory"
    else:
        driver = LandlordDriver.open(args.data, args.id, policy, on_expired=on_expired, grace=args.grace_ms)
        rec = driver.landlord.recovery or {}
        where = f"durable in {args.data}: {'new store' if rec.get('created') else 'recovered'}, {len(driver.landlord)} lease(s)"
        if rec.get("torn_tail"):
            where += ", torn tail dropped"
    landlord = driver.landlord
    server = serve_threaded(driver.handle_bytes, args.host, args.port)
    print(f"leasehold {leasehold.__version__} landlord {landlord.id} ({where}) on http://{args.host}:{server.server_port}/", flush=True)
    with driver:  # expiry starts after the banner (leases due while the service was down expire now)
        stop.wait(args.run_for or None)
        server.shutdown()
        server.server_close()
    print(f"stopped with {len(landlord)} lease(s) live", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
