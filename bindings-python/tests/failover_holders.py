"""Python holders for the failover test of ``scripts/test-server.sh``: they keep leases renewed
through a ``leasehold-server`` cluster with nothing but the binding's own parts (a
``RenewalManager`` run by ``threaded.RenewalDriver`` over a list of server URLs, which is
``leasehold.http.Cluster``), while the script kills and pauses servers.

What they were told is checked against what the servers do (the transport is wrapped only to
watch the replies go by): ``early`` counts "unknown lease" answers to requests sent before a
lease's promised expiration (the send time plus the duration granted); ``lost`` counts leases
renewed to the end that the servers do not know at the final check; ``failed_for_good`` counts
renewals the manager gave up on (a ``renewal_failed`` event). All three must be 0.

    python failover_holders.py --servers http://127.0.0.1:7420,... --run-ms 60000 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from typing import Dict, List, Optional, Sequence

from leasehold import (
    FOREVER,
    Encoding,
    IndefiniteError,
    Lease,
    RenewalEvent,
    RenewalManager,
    Reply,
    Request,
    UnknownLeaseError,
    local_expiration,
    monotonic_ms,
    threaded,
)
from leasehold.http import Cluster


class Watch:
    """The promise of every lease, updated from the replies the holders receive."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.promised: Dict[str, int] = {}
        self.counts = {"grants_acked": 0, "renewals_acked": 0, "early_expiries": 0, "lost": 0, "failed_for_good": 0, "kept_checked": 0}
        self.notes: List[str] = []

    def judge(self, request: Request, reply: Reply, sent: int) -> None:
        cookies = [request.cookie] if request.cookie is not None else [c for c, _ in request.items or []]
        results: List[object] = list(reply.results or []) if reply.op == "renewed_all" else [reply.duration if reply.op == "renewed" else reply.error] * len(cookies)
        with self.lock:
            for cookie, outcome in zip(cookies, results):
                if isinstance(outcome, int):
                    self.counts["renewals_acked"] += 1
                    self.promised[cookie] = max(self.promised.get(cookie, 0), local_expiration(sent, outcome))
                elif isinstance(outcome, UnknownLeaseError) and sent < self.promised.get(cookie, 0):
                    self.counts["early_expiries"] += 1
                    self.notes.append(f"{cookie}: unknown {self.promised[cookie] - sent} ms before its promise")


def hold(h: int, servers: Cluster, args: argparse.Namespace, watch: Watch) -> None:
    enc: Encoding = args.encoding

    def transport(landlord: int, message: bytes) -> bytes:
        sent = monotonic_ms()
        data = servers.transport(landlord, message)
        watch.judge(Request.decode(message, enc), Reply.decode(data, enc), sent)
        return data

    leases: List[Lease] = []
    for i in range(args.leases):
        for _ in range(50):  # a grant while no server answers is simply asked again
            try:
                lease = threaded.obtain_lease(servers.send, b"py-%d-%d" % (h, i), args.lease_ms, encoding=enc)
            except IndefiniteError:
                time.sleep(0.1)
                continue
            leases.append(lease)
            with watch.lock:
                watch.counts["grants_acked"] += 1
                watch.promised[lease.cookie] = lease.expiration
            break
    manager = RenewalManager(renew_divisor=args.renew_divisor, min_rto=100, report_renewals=False)
    for lease in leases:
        manager.renew_for(lease, FOREVER, args.lease_ms, monotonic_ms())
    failed: List[str] = []

    def on_event(e: RenewalEvent) -> None:
        if e.kind == "renewal_failed":
            failed.append(e.lease.cookie)
            with watch.lock:
                watch.counts["failed_for_good"] += 1
                watch.notes.append(f"{e.lease.cookie}: renewal failed for good: {e.error!r}")

    with threaded.RenewalDriver(manager, transport, on_event=on_event, encoding=enc, name=f"py-holder-{h}"):
        time.sleep(args.run_ms / 1000)
    # Final check: every lease renewed to the end is held by the servers.
    for lease in leases:
        if lease.cookie in failed:
            continue
        for attempt in range(50):
            sent = monotonic_ms()
            try:
                data = servers.transport(lease.landlord, Request.renew(1 << 40 | attempt, lease.cookie, args.lease_ms).encode(enc))
            except IndefiniteError:
                time.sleep(0.1)
                continue
            reply = Reply.decode(data, enc)
            with watch.lock:
                watch.counts["kept_checked"] += 1
                if reply.op != "renewed":
                    watch.counts["lost"] += 1
                    watch.notes.append(f"{lease.cookie}: {reply.error!r} at the final check ({watch.promised.get(lease.cookie, 0) - sent} ms before its promise)")
            break
        else:
            with watch.lock:
                watch.counts["lost"] += 1
                watch.notes.append(f"{lease.cookie}: no server answered the final check")


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--servers", required=True, help="server URLs, comma-separated")
    ap.add_argument("--holders", type=int, default=2)
    ap.add_argument("--leases", type=int, default=20, help="leases per holder")
    ap.add_argument("--lease-ms", type=int, default=10_000)
    ap.add_argument("--renew-divisor", type=int, default=2)
    ap.add_argument("--run-ms", type=int, default=20_000)
    ap.add_argument("--timeout-ms", type=int, default=500, help="time-out of one HTTP attempt")
    ap.add_argument("--encoding", choices=["binary", "json"], default="binary")
    ap.add_argument("--json", help="write the counts here")
    args = ap.parse_args(argv)
    servers = Cluster(args.servers.split(","), encoding=args.encoding, timeout=args.timeout_ms / 1000)
    watch = Watch()
    threads = [threading.Thread(target=hold, args=(h, servers, args, watch)) for h in range(args.holders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c = watch.counts
    print(
        f"python holders: grants acknowledged {c['grants_acked']}, renewals acknowledged {c['renewals_acked']}, "
        f"kept leases checked {c['kept_checked']}; acknowledged leases lost {c['lost']}, early expiries "
        f"{c['early_expiries']}, renewals that failed for good {c['failed_for_good']}",
        flush=True,
    )
    for note in watch.notes[:20]:
        print("python holders:", note, file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(c, f)
    ok = c["lost"] == c["early_expiries"] == c["failed_for_good"] == 0 and c["grants_acked"] > 0 and c["kept_checked"] > 0
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
