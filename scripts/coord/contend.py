"""A Python contender for scripts/test-coord.sh: the installed wheel's lock recipe
(``leasehold.coord.lock`` on a ``threaded.RenewalDriver``, or ``alock`` on an
``aio.RenewalDriver`` with ``--asyncio``) contending for the same lock as the Rust holders
(``leasehold-contend``), writing to the same fenced register with the lock's token.

The register is ``leasehold-contend --role register`` (``POST /write?writer=&token=``), which runs
the fenced statement in PostgreSQL (``UPDATE ... WHERE token <= $1``): the fence is the
database's, this process only passes its token. It logs JSON lines in the Rust holders' form
(``acquired``, ``write`` with ``ok``, ``lost``, ``released``, ``done``), which the script's checks
read. ``--careless`` writes without checking that the lease is still held (only the fence
protects the register).

    python contend.py --servers URL,URL --register URL --name py1 --log py1.jsonl [--asyncio]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Dict, TextIO

from leasehold import IndefiniteError, LeaseDeniedError, LeaseError, RenewalManager, monotonic_ms
from leasehold.coord import alock, lock
from leasehold.http import Cluster


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--servers", required=True)
    p.add_argument("--register", required=True, help="the register's URL (leasehold-contend --role register)")
    p.add_argument("--lock", default="locks/register")
    p.add_argument("--name", default="py")
    p.add_argument("--lease-ms", type=int, default=2000)
    p.add_argument("--writes", type=int, default=5)
    p.add_argument("--gap-ms", type=int, default=40)
    p.add_argument("--careless", action="store_true")
    p.add_argument("--run-ms", type=int, default=30000)
    p.add_argument("--log", required=True)
    p.add_argument("--stop-file", help="stop after the current turn once this file exists")
    p.add_argument("--asyncio", action="store_true", help="alock on asyncio instead of lock on a thread")
    return p.parse_args()


class Log:
    def __init__(self, path: str) -> None:
        self.f: TextIO = open(path, "w", buffering=1)
        self.start = time.monotonic()

    def __call__(self, **rec: Any) -> None:
        rec = {"at": int((time.monotonic() - self.start) * 1000), **rec}
        self.f.write(json.dumps(rec) + "\n")


def write(o: argparse.Namespace, token: int) -> Dict[str, Any]:
    """One fenced write through the register: its answer, or an error."""
    url = f"{o.register}/write?writer={o.name}&token={token}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=b"", method="POST"), timeout=5) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        try:
            return json.loads(e.read())
        except ValueError:
            return {"error": f"HTTP {e.code}"}
    except (OSError, ValueError) as e:
        return {"error": str(e)}


def running(o: argparse.Namespace, end: float) -> bool:
    return time.monotonic() < end and not (o.stop_file and os.path.exists(o.stop_file))


def held_log(log: Log, held: Any) -> None:
    safe = held.safe_until()
    log(acquired=held.token, landlord=held.landlord, safe_ms=None if safe is None else max(0, safe - monotonic_ms()))


def run_sync(o: argparse.Namespace, log: Log) -> None:
    from leasehold.threaded import RenewalDriver

    cluster = Cluster(o.servers.split(","), timeout=0.5)
    driver = RenewalDriver(RenewalManager(max_clock_drift_ppm=100), cluster.transport).start()
    end = time.monotonic() + o.run_ms / 1000
    try:
        while running(o, end):
            try:
                held = lock(cluster, o.lock, wait=3.0, lease=o.lease_ms / 1000, holder=o.name, driver=driver)
            except LeaseDeniedError:
                continue
            except LeaseError as e:  # IndefiniteError: no server answered for the whole wait
                log(acquire_failed=str(e))
                time.sleep(0.1)
                continue
            held_log(log, held)
            for _ in range(o.writes):
                if not o.careless and not held.held:
                    log(lost=held.token)
                    break
                log(write=held.token, **write(o, held.token))
                time.sleep(o.gap_ms / 1000)
            try:
                held.release()
                log(released=held.token)
            except LeaseError as e:
                log(release_failed=held.token, why=str(e))
    finally:
        driver.stop(flush=False)
    log(done=True)


async def run_async(o: argparse.Namespace, log: Log) -> None:
    from leasehold.aio import RenewalDriver

    cluster = Cluster(o.servers.split(","), timeout=0.5)
    driver = RenewalDriver(RenewalManager(max_clock_drift_ppm=100), cluster.atransport)
    driver.start()
    end = time.monotonic() + o.run_ms / 1000
    try:
        while running(o, end):
            try:
                held = await alock(cluster, o.lock, wait=3.0, lease=o.lease_ms / 1000, holder=o.name, driver=driver)
            except LeaseDeniedError:
                continue
            except LeaseError as e:
                log(acquire_failed=str(e))
                await asyncio.sleep(0.1)
                continue
            held_log(log, held)
            for _ in range(o.writes):
                if not o.careless and not held.held:
                    log(lost=held.token)
                    break
                log(write=held.token, **await asyncio.to_thread(write, o, held.token))
                await asyncio.sleep(o.gap_ms / 1000)
            try:
                await held.release()
                log(released=held.token)
            except LeaseError as e:
                log(release_failed=held.token, why=str(e))
    finally:
        await driver.stop(flush=False)
    log(done=True)


def main() -> int:
    o = parse()
    log = Log(o.log)
    if o.asyncio:
        asyncio.run(run_async(o, log))
    else:
        run_sync(o, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
