"""The renewal service's cost (issue 26): a landlord server L and a renewal server S (one renewal
shard), both release builds on the file store. A holder grants N leases at L, hands them all to
renewal sets at S with a renewal duration R, and goes quiet; then for W seconds the script reads
S's CPU time (/proc/PID/stat) and its renewal shard's counters (/metrics): the client-lease
renewals its landlord granted, and how many leases it keeps. Printed: renewals per second, S's
CPU per lease renewal, and what that makes the leases one renewal shard keeps alive per core (a
lease is renewed when half its grant is left, so every R/2; at R = 60 s, Norm's common setting).
Usage: bench_renewal_service.py BIN N R_MS W_S"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Tuple

TICK = os.sysconf("SC_CLK_TCK")


def start(bin_: str, data: str, *args: str) -> Tuple[subprocess.Popen[str], str]:
    p = subprocess.Popen(
        [bin_, "--data", data, "--listen", "127.0.0.1:0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "RUST_LOG": "warn"},
    )
    assert p.stdout is not None
    line = p.stdout.readline()
    return p, line.strip().rsplit(" ", 1)[-1]


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def metric(url: str, name: str, shard: int) -> float:
    host = url.removeprefix("http://")
    c = http.client.HTTPConnection(host, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    for line in text.splitlines():
        if line.startswith(f'{name}{{shard="{shard}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


class Conn:
    """One keep-alive connection posting JSON."""

    def __init__(self, url: str) -> None:
        self.c = http.client.HTTPConnection(url.removeprefix("http://"), timeout=30)

    def post(self, path: str, body: Dict[str, object]) -> Dict[str, object]:
        self.c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = self.c.getresponse()
        data = r.read()
        assert r.status == 200, (r.status, data)
        out: Dict[str, object] = json.loads(data)
        return out


def main() -> None:
    bin_, n, renew, window = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    with tempfile.TemporaryDirectory(prefix="lh-bench-rs-") as d:
        lp, lurl = start(bin_, os.path.join(d, "l"), "--shards", "4")
        sp, surl = start(bin_, os.path.join(d, "s"), "--shards", "1", "--renewal-shards", "1")
        try:
            time.sleep(0.5)
            s = Conn(surl)
            sets: List[str] = []
            for _ in range(4):
                r = s.post("/renewal", {"v": 1, "id": "1", "body": {"op": "create_set", "duration": "7200000"}})
                sets.append(r["body"]["cookie"])  # type: ignore[index]
            service = "0000000000000002"
            t0 = time.monotonic()
            threads = 4

            def hand(k: int) -> None:
                lc, sc = Conn(lurl), Conn(surl)
                for i in range(k, n, threads):
                    sent = time.monotonic()
                    g = lc.post("/lease", {"v": 1, "id": str(i), "body": {"op": "grant", "resource": f"b/{i}".encode().hex(), "duration": str(renew)}})
                    left = renew - int((time.monotonic() - sent) * 1000)
                    lease = {"landlord": g["landlord"], "cookie": g["body"]["cookie"], "remaining": str(left), "urls": [lurl]}  # type: ignore[index]
                    body = {"op": "add", "set": sets[i % 4], "lease": lease, "membership": "9223372036854775807", "renew": str(renew)}
                    sc.post(f"/renewal?landlord={service}", {"v": 1, "id": str(i), "body": body})

            ts = [threading.Thread(target=hand, args=(k,)) for k in range(threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            handed = time.monotonic() - t0
            # Let the first round of renewals settle into their rhythm, then measure.
            time.sleep(renew / 1000)
            c0, r0, l0 = cpu_s(sp.pid), metric(surl, "leasehold_renewals_total", 2), cpu_s(lp.pid)
            w0 = time.monotonic()
            time.sleep(window)
            c1, r1, l1 = cpu_s(sp.pid), metric(surl, "leasehold_renewals_total", 2), cpu_s(lp.pid)
            w1 = time.monotonic()
            kept = metric(surl, "leasehold_live_leases", 2)
            live = sum(metric(lurl, "leasehold_live_leases", i) for i in range(1, 5))
        finally:
            for p in (lp, sp):
                p.kill()
                p.wait()
                if p.stdout is not None:
                    p.stdout.close()
    renewals = r1 - r0
    secs = w1 - w0
    cpu = c1 - c0
    per = cpu / renewals * 1e6 if renewals else float("nan")
    per_core_60 = (1e6 / per) * 30 if renewals else 0
    per_core_r = (1e6 / per) * (renew / 2000) if renewals else 0
    print(f"{n} leases handed over in {handed:.1f} s (grant + add, 4 holders); measured for {secs:.1f} s")
    print()
    print("| leases | renew (ms) | kept by the service | live at the landlord | lease renewals/s | service CPU (s) | CPU per lease renewal (us) | landlord CPU per renewal (us) | leases per renewal shard per core, renew 60 s | same, at this renew |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {n} | {renew} | {kept:.0f} | {live:.0f} | {renewals / secs:.0f} | {cpu:.2f} | {per:.1f} | "
        f"{(l1 - l0) / renewals * 1e6 if renewals else float('nan'):.1f} | {per_core_60:,.0f} | {per_core_r:,.0f} |"
    )


if __name__ == "__main__":
    main()
