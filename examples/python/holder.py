"""A lease holder: obtains a lease from a landlord over HTTP and keeps it alive until stopped.

Run a landlord first (python examples/python/landlord_service.py), then:

    python examples/python/holder.py --url http://127.0.0.1:8470/ --resource printer

Against a cluster of ``leasehold-server`` processes, give every server, comma-separated
(``--url http://127.0.0.1:7420,http://127.0.0.1:7421``): each request tries them in turn, so the
lease survives a server's death with no code of the holder's.

The holder prints ``holding <cookie>`` once it has its lease, then one line per event of its
renewal manager.  SIGINT or SIGTERM cancel the lease at the landlord and exit; a holder that is
killed outright just stops renewing, and the landlord expires its lease.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from typing import Optional, Sequence

from leasehold import FOREVER, LeaseError, RenewalEvent, RenewalManager, aio
from leasehold.http import Cluster


async def hold(args: argparse.Namespace) -> int:
    servers = Cluster(args.url.split(","), timeout=args.timeout)
    try:
        lease = await aio.obtain_lease(servers.asend, args.resource.encode(), args.lease_ms)
    except LeaseError as e:
        print(f"refused  {e}", flush=True)
        return 1
    print(f"holding  {lease.cookie} from landlord {lease.landlord}, {lease.remaining(aio.monotonic_ms())} ms", flush=True)

    manager = RenewalManager(initial_rtt=args.rtt_ms, min_rto=args.min_rto_ms)
    hold_for = FOREVER if args.hold_ms == 0 else args.hold_ms
    manager.renew_for(lease, hold_for, args.lease_ms, aio.monotonic_ms())

    done = asyncio.Event()

    def on_event(event: RenewalEvent) -> None:
        if event.kind != "renewed" or args.verbose:
            print(f"{event.kind:8} {event.lease.cookie} expires {event.lease.expiration} error={event.error!r}", flush=True)
        if event.kind != "renewed":
            done.set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, done.set)

    driver = aio.RenewalDriver(manager, servers.atransport, on_event=on_event)
    async with driver:
        await done.wait()
        if manager.lease(lease) is not None:
            manager.cancel(lease, driver.now())
            driver.wake()
    print(f"stopped  {lease.cookie}", flush=True)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="leasehold holder over HTTP")
    ap.add_argument("--url", default="http://127.0.0.1:8470/", help="the landlord's URL, or several, comma-separated")
    ap.add_argument("--resource", default="printer")
    ap.add_argument("--lease-ms", type=int, default=2_000, help="duration to ask for at each renewal")
    ap.add_argument("--hold-ms", type=int, default=0, help="how long to keep the lease (0: until stopped)")
    ap.add_argument("--rtt-ms", type=int, default=50, help="round-trip guess before the first measurement")
    ap.add_argument("--min-rto-ms", type=int, default=100, help="shortest request time-out")
    ap.add_argument("--timeout", type=float, default=2.0, help="HTTP time-out in seconds")
    ap.add_argument("--verbose", action="store_true", help="also print every renewal")
    return asyncio.run(hold(ap.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
