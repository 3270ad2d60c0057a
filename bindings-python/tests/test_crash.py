"""Crash test with real processes: the example landlord service (durable, ``serve_threaded``
over loopback HTTP) under load from holder threads, killed with SIGKILL at random moments and
started again on the same directory, several times.

Every holder remembers what it was told (a lease's promised expiration is the time its request
was sent plus the duration granted) and checks the landlord against it:

- ``early``: "unknown lease" to a request sent before an acknowledged lease's promise;
- ``cancel_back``: a lease whose cancel was acknowledged renewed again;
- ``expiry_back``: an abandoned lease the landlord once said was gone renewed again;
- ``lost``: a lease renewed to the end unknown at the final check.

A request that failed in transport (the landlord died under it) promises nothing: a renewal
that may or may not have happened only ever lengthens a lease; a cancel that may or may not
have happened takes the lease out of the checks. The counts are printed (pytest -s shows them)
and every violation count must be 0.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from conftest import repo_root
from leasehold import IndefiniteError, Reply, Request, monotonic_ms
from leasehold.http import post

KILLS = int(os.environ.get("LEASEHOLD_CRASH_KILLS", "6"))
HOLDERS = 4
LEASE_MS = 3_000


@dataclass
class Track:
    cookie: str
    promised: int
    state: str = "kept"  # kept, cancelled, abandoned, gone (abandoned, said gone), unsure
    next_probe: int = 0


@dataclass
class Counts:
    grants: int = 0
    renewals: int = 0
    cancels: int = 0
    probes: int = 0
    failures: int = 0
    early: int = 0
    cancel_back: int = 0
    expiry_back: int = 0
    lost: int = 0
    kept_checked: int = 0
    notes: List[str] = field(default_factory=list)


class Service:
    """The example landlord service, started and killed on one directory."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.proc: Optional["subprocess.Popen[str]"] = None
        self.url = ""
        self.banners: List[str] = []

    def start(self) -> None:
        script = repo_root() / "examples" / "python" / "landlord_service.py"
        port = self.url.rsplit(":", 1)[1].rstrip("/") if self.url else "0"
        # Its output goes to a file: a pipe nobody reads could fill up and stall the service.
        log = self.data.parent / f"service-{len(self.banners)}.log"
        with open(log, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, str(script), "--port", port, "--data", str(self.data), "--max-ms", str(LEASE_MS), "--default-ms", str(LEASE_MS)],
                stdout=out,
                text=True,
            )
        deadline = time.monotonic() + 20
        banner = ""
        while " on http://127.0.0.1:" not in banner:
            assert time.monotonic() < deadline and self.proc.poll() is None, f"no banner: {log.read_text()!r}"
            time.sleep(0.02)
            banner = log.read_text().split("\n", 1)[0] if "\n" in log.read_text() else ""
        self.banners.append(banner)
        self.url = banner.rsplit(" on ", 1)[1]

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def send(url: str, req: Request) -> Optional[Reply]:
    try:
        return Reply.decode(post(url, req.encode(), timeout=1.0))
    except IndefiniteError:
        return None


def holder(h: int, service: Service, stop: threading.Event, c: Counts, lock: threading.Lock) -> None:
    rng = random.Random(h)
    tracks: Dict[str, Track] = {}
    rid = h << 40
    while not stop.is_set():
        rid += 1
        now = monotonic_ms()
        kept = [t for t in tracks.values() if t.state == "kept"]
        roll = rng.random()
        if len(kept) < 6 or roll < 0.1:
            r = send(service.url, Request.grant(rid, b"h%d-%d" % (h, rid), LEASE_MS))
            if r is None:
                with lock:
                    c.failures += 1
                continue
            if r.op == "granted" and r.cookie is not None and r.duration is not None:
                tracks[r.cookie] = Track(r.cookie, now + r.duration)
                with lock:
                    c.grants += 1
            continue
        if roll < 0.15 and kept:
            t = rng.choice(kept)
            r = send(service.url, Request.cancel(rid, t.cookie))
            with lock:
                if r is None:
                    c.failures += 1
                    t.state = "unsure"  # it may or may not have been cancelled
                elif r.op == "cancelled":
                    c.cancels += 1
                    t.state = "cancelled"
                elif isinstance(r.error, Exception) and now < t.promised:
                    c.early += 1
                    c.notes.append(f"cancel of {t.cookie}: {r.error!r} {t.promised - now} ms before its promise")
                    t.state = "unsure"  # counted once
            continue
        if roll < 0.18 and kept:
            rng.choice(kept).state = "abandoned"  # stops renewing it
            continue
        # Renew the kept leases that are due (a third of the lease left), probe the others.
        for t in list(tracks.values()):
            if stop.is_set():
                break
            now = monotonic_ms()
            if t.state == "kept" and t.promised - now > LEASE_MS // 3:
                continue
            if t.state == "unsure" or (t.state != "kept" and now < t.next_probe):
                continue
            if t.state == "abandoned" and now < t.promised:
                continue  # still promised: it must live on; probed once past its promise
            # Cancelled leases are probed at once (a lost cancel would make one come back
            # while still promised), then now and then, like expired ones.
            t.next_probe = now + 300
            rid += 1
            duration = LEASE_MS if t.state == "kept" else 1
            r = send(service.url, Request.renew(rid, t.cookie, duration))
            with lock:
                if r is None:
                    c.failures += 1
                    continue
                renewed = r.op == "renewed" and r.duration is not None
                if t.state == "kept":
                    if renewed and r.duration is not None:
                        c.renewals += 1
                        t.promised = max(t.promised, now + r.duration)
                    elif now < t.promised:
                        c.early += 1
                        c.notes.append(f"renewal of {t.cookie}: {r.error!r}, {t.promised - now} ms before its promise")
                        t.state = "unsure"  # counted once
                    else:
                        t.state = "unsure"  # this holder was too slow: its own fault, not the landlord's
                    continue
                c.probes += 1
                if renewed and t.state == "cancelled":
                    c.cancel_back += 1
                    c.notes.append(f"cancelled lease {t.cookie} renewed again")
                elif renewed and t.state == "gone":
                    c.expiry_back += 1
                    c.notes.append(f"expired lease {t.cookie} renewed again")
                elif not renewed and t.state == "abandoned":
                    t.state = "gone"
        stop.wait(0.02)
    # Final check: the leases kept to the end are held (the landlord is up again by now).
    for t in tracks.values():
        if t.state != "kept":
            continue
        rid += 1
        r = None
        for _ in range(50):
            sent = monotonic_ms()
            r = send(service.url, Request.renew(rid, t.cookie, LEASE_MS))
            if r is not None:
                break
            time.sleep(0.1)
        with lock:
            c.kept_checked += 1
            if r is not None and r.op != "renewed" and sent >= t.promised:
                continue  # this holder came too late (a stalled thread): nothing was promised
            if r is None or r.op != "renewed":
                c.lost += 1
                c.notes.append(f"lease {t.cookie} renewed to the end: {r!r} at the final check")


def test_sigkilled_durable_landlord_keeps_every_promise(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    service = Service(tmp_path / "store")
    service.start()
    counts = Counts()
    lock = threading.Lock()
    stop = threading.Event()
    holders = [threading.Thread(target=holder, args=(h, service, stop, counts, lock)) for h in range(HOLDERS)]
    for t in holders:
        t.start()
    seed = int(os.environ.get("LEASEHOLD_CRASH_SEED", "0")) or int.from_bytes(os.urandom(4), "little")
    rng = random.Random(seed)
    try:
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.4, 1.4))
            service.kill()
            time.sleep(rng.uniform(0.0, 0.3))  # down for a while: holders fail and retry
            service.start()
        time.sleep(1.0)
    finally:
        stop.set()
        for t in holders:
            t.join(60)
        service.kill()
    c = counts
    with capsys.disabled():  # the counts are the point: shown in every run, not only with -s
        report(c, seed, service.banners)
    assert c.notes == [], c.notes[:10]
    assert c.early == c.cancel_back == c.expiry_back == c.lost == 0
    assert c.grants > 0 and c.renewals > 0 and c.cancels > 0 and c.kept_checked > 0
    assert all("recovered" in b for b in service.banners[1:]), service.banners


def report(c: Counts, seed: int, banners: List[str]) -> None:
    print(
        f"\ncrash test ({KILLS} SIGKILLs at moments from LEASEHOLD_CRASH_SEED={seed}): grants acknowledged {c.grants}, renewals acknowledged {c.renewals}, "
        f"cancels acknowledged {c.cancels}, probes {c.probes}, transport failures {c.failures}, "
        f"kept leases checked {c.kept_checked}\n"
        f"crash test violations: early expiries {c.early}, cancelled back {c.cancel_back}, "
        f"expired back {c.expiry_back}, acknowledged leases lost {c.lost}"
    )
    for line in banners[1:3]:
        print("restart:", line)
