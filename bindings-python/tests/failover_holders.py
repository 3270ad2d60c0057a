"""Python holders for the fault suite, ``scripts/test-faults.sh``: they keep leases renewed
through a ``leasehold-server`` cluster with nothing but the binding's own parts (a
``RenewalManager`` run by ``threaded.RenewalDriver`` over a list of server URLs, which is
``leasehold.http.Cluster``), while the script kills and pauses servers.

What they were told is checked against what the servers do (the transport is wrapped only to
watch the replies go by): ``early`` counts "unknown lease" answers to requests sent before a
lease's promised expiration (the send time plus the duration granted); ``lost`` counts leases
renewed to the end that the servers do not know at the final check; ``failed_for_good`` counts
renewals the manager gave up on (a ``renewal_failed`` event). All three must be 0.

    python failover_holders.py --servers http://127.0.0.1:7420,... --run-ms 60000 --json out.json

For the fault suite (``scripts/test-faults.sh``), ``--history FILE`` writes every request as one
JSON line, in the form ``leasehold-load --history`` writes (``scripts/faults/check.py`` judges
both): holder, op, send and answer times (ms since the Unix epoch), the server that answered, and
per lease its landlord and outcome (``granted``, ``renewed``, ``cancelled``, an error code's name
such as ``unknown_lease``; null when no server answered); and the events ``abandon``,
``gave_up`` and ``end``. ``--churn-ms N`` keeps traffic flowing: every N ms each holder grants
one more lease to keep, and every third time cancels one or abandons one (which it then probes,
once past its promise, until the servers say it is gone, and after that, to see it stays gone).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from leasehold import (
    FOREVER,
    Encoding,
    ErrorCode,
    IndefiniteError,
    Lease,
    LeaseError,
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


def wall_ms() -> float:
    """Milliseconds since the Unix epoch: the clock every holder of a test shares."""
    return time.time() * 1000.0


class Recorder:
    """The history file (JSON lines), shared by the holders of this process."""

    def __init__(self, path: Optional[str]) -> None:
        self.lock = threading.Lock()
        self.out = open(path, "w") if path else None

    def write(self, record: Dict[str, Any]) -> None:
        if self.out is None:
            return
        line = json.dumps(record, separators=(",", ":"))
        with self.lock:
            self.out.write(line + "\n")

    def request(self, h: str, op: str, sent: float, done: float, server: Optional[Tuple[str, Optional[str]]], err: Optional[str], items: List[List[Any]]) -> None:
        if self.out is None:
            return
        r: Dict[str, Any] = {"t": "req", "h": h, "op": op, "sent": sent, "done": done, "ok": err is None, "items": items}
        if server is not None:
            r["server"] = server[0]
            if server[1]:
                r["owner"] = server[1]
        if err is not None:
            r["err"] = err
        self.write(r)

    def event(self, t: str, h: str, cookie: Optional[str] = None, why: Optional[str] = None) -> None:
        r: Dict[str, Any] = {"t": t, "h": h, "at": wall_ms()}
        if cookie is not None:
            r["cookie"] = cookie
        if why is not None:
            r["why"] = why
        self.write(r)

    def close(self) -> None:
        if self.out is not None:
            self.out.close()


class RecordingCluster(Cluster):
    """The binding's cluster client, remembering (per thread) which server answered a call."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._last = threading.local()

    def _settled(
        self,
        i: int,
        landlord: Optional[int],
        url: str,
        response: Tuple[int, Dict[str, str], bytes],
        failures: List[str],
        kind: str = "Reply",
    ) -> Optional[bytes]:
        body = super()._settled(i, landlord, url, response, failures, kind)
        if body is not None:
            self._last.answered = (url, response[1].get("x-leasehold-owner"))
        return body

    def post(self, data: bytes, landlord: Optional[int] = None, **kwargs: Any) -> bytes:
        self._last.answered = None
        return super().post(data, landlord, **kwargs)

    def answered(self) -> Optional[Tuple[str, Optional[str]]]:
        """(URL, owner it named) of the server that answered this thread's last call."""
        return getattr(self._last, "answered", None)


def outcome(x: object) -> Optional[str]:
    """The name of one lease's outcome in a reply, for the history."""
    if isinstance(x, int):
        return "renewed"
    if x is None:
        return "cancelled"
    code = getattr(x, "code", None)
    return ErrorCode(code).name.lower() if code is not None else "error"


def items_of(request: Request, landlord: int, reply: Optional[Reply]) -> List[List[Any]]:
    """[cookie, landlord, outcome, duration] per lease of the request."""
    if request.op == "grant":
        if reply is None:
            return []
        if reply.op == "granted":
            return [[reply.cookie, reply.landlord, "granted", reply.duration]]
        return [["", reply.landlord, outcome(reply.error), None]]
    cookies = [request.cookie] if request.cookie is not None else [c for c, _ in request.items or []] or list(request.cookies or [])
    if reply is None:
        return [[c, landlord, None, None] for c in cookies]
    if reply.op in ("renewed_all", "cancelled_all"):
        results: List[Any] = list(reply.results or [])
    elif reply.op == "renewed":
        results = [reply.duration] * len(cookies)
    elif reply.op == "cancelled":
        results = [None] * len(cookies)
    else:
        results = [reply.error] * len(cookies)
    return [[c, landlord, outcome(r), r if isinstance(r, int) else None] for c, r in zip(cookies, results)]


class Watch:
    """The promise of every lease, updated from the replies the holders receive."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.promised: Dict[str, int] = {}
        self.counts = {"grants_acked": 0, "renewals_acked": 0, "early_expiries": 0, "lost": 0, "failed_for_good": 0, "kept_checked": 0, "expiry_came_back": 0}
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


def hold(h: int, urls: List[str], args: argparse.Namespace, watch: Watch, rec: Recorder) -> None:
    enc: Encoding = args.encoding
    name = f"{args.name}-{h}"
    # A client per holder, so that each knows which server answered its own calls.
    servers = RecordingCluster(urls, encoding=enc, timeout=args.timeout_ms / 1000)

    def call(landlord: Optional[int], message: bytes, op: Optional[str] = None) -> bytes:
        """One request through the cluster, written into the history."""
        request = Request.decode(message, enc)
        wall = wall_ms()
        try:
            data = servers.post(message, landlord)
        except Exception as e:
            rec.request(name, op or request.op, wall, wall_ms(), None, repr(e), items_of(request, landlord or 0, None))
            raise
        reply = Reply.decode(data, enc)
        rec.request(name, op or request.op, wall, wall_ms(), servers.answered(), None, items_of(request, landlord or 0, reply))
        return data

    def transport(landlord: int, message: bytes) -> bytes:
        sent = monotonic_ms()
        data = call(landlord, message)
        watch.judge(Request.decode(message, enc), Reply.decode(data, enc), sent)
        return data

    def grant(resource: bytes) -> Optional[Lease]:
        try:
            lease = threaded.obtain_lease(lambda m: call(None, m), resource, args.lease_ms, encoding=enc)
        except LeaseError:  # no server answered, or a denial: no lease
            return None
        with watch.lock:
            watch.counts["grants_acked"] += 1
            watch.promised[lease.cookie] = lease.expiration
        return lease

    leases: List[Lease] = []
    for i in range(args.leases):
        for _ in range(50):  # a grant while no server answers is simply asked again
            lease = grant(b"py-%d-%d" % (h, i))
            if lease is None:
                time.sleep(0.1)
                continue
            leases.append(lease)
            break
    manager = RenewalManager(renew_divisor=args.renew_divisor, min_rto=100, report_renewals=False)
    for lease in leases:
        manager.renew_for(lease, FOREVER, args.lease_ms, monotonic_ms())
    failed: List[str] = []
    abandoned: Dict[str, Lease] = {}
    gone_for: Dict[str, bool] = {}  # abandoned lease -> whether a server said it is gone
    next_probe: Dict[str, int] = {}
    probe_id = 1 << 41 | h << 32

    def on_event(e: RenewalEvent) -> None:
        if e.kind == "renewal_failed":
            failed.append(e.lease.cookie)
            rec.event("gave_up", name, e.lease.cookie, repr(e.error))
            with watch.lock:
                watch.counts["failed_for_good"] += 1
                watch.notes.append(f"{e.lease.cookie}: renewal failed for good: {e.error!r}")

    end = time.monotonic() + args.run_ms / 1000

    def over() -> bool:
        return time.monotonic() >= end or bool(args.stop_file and os.path.exists(args.stop_file))

    with threaded.RenewalDriver(manager, transport, on_event=on_event, encoding=enc, name=f"py-holder-{h}", senders=4) as driver:
        while not args.churn_ms and not over():
            time.sleep(max(0.0, min(0.1, end - time.monotonic())))
        churned = 0
        next_churn = time.monotonic() + args.churn_ms / 1000
        while args.churn_ms and not over():
            time.sleep(max(0.0, min(next_churn, end, time.monotonic() + 0.1) - time.monotonic()))
            if over():
                break
            if time.monotonic() < next_churn:
                continue
            next_churn += args.churn_ms / 1000
            churned += 1
            lease = grant(b"py-%d-churn-%d" % (h, churned))
            if lease is not None:
                leases.append(lease)
                manager.renew_for(lease, FOREVER, args.lease_ms, monotonic_ms())
                driver.wake()
            kept = [x for x in leases if x.cookie not in failed]
            if churned % 3 and kept:
                victim = kept[0]
                leases.remove(victim)
                if churned % 3 == 1:
                    manager.cancel(victim, monotonic_ms())
                    driver.wake()
                else:
                    manager.remove(victim)
                    rec.event("abandon", name, victim.cookie)
                    gone_for[victim.cookie] = False
                    with watch.lock:
                        next_probe[victim.cookie] = watch.promised.get(victim.cookie, 0) + 50
                    abandoned[victim.cookie] = victim
            # Abandoned leases past their promise: renewed for 1 ms until a server says they
            # are gone (every 300 ms), then now and then (every 3 s) to see they stay gone.
            now = monotonic_ms()
            for cookie, due in list(next_probe.items()):
                with watch.lock:
                    # Not before its promise, which a renewal still under way at the abandon moved on.
                    promised = watch.promised.get(cookie, 0)
                if due > now or (not gone_for[cookie] and promised + 50 > now):
                    continue
                probe_id += 1
                next_probe[cookie] = now + (3000 if gone_for[cookie] else 300)
                try:
                    data = call(abandoned[cookie].landlord, Request.renew(probe_id, cookie, 1).encode(enc), "probe")
                except IndefiniteError:
                    continue
                reply = Reply.decode(data, enc)
                if reply.op == "error" and isinstance(reply.error, UnknownLeaseError):
                    gone_for[cookie] = True
                elif reply.op == "renewed" and gone_for[cookie]:
                    with watch.lock:
                        watch.counts["expiry_came_back"] += 1
                        watch.notes.append(f"{cookie}: expired lease renewed again")
    rec.event("end", name)
    # Final check: every lease renewed to the end is held by the servers.
    for lease in leases:
        if lease.cookie in failed:
            continue
        for attempt in range(50):
            sent = monotonic_ms()
            try:
                data = call(lease.landlord, Request.renew(1 << 40 | attempt, lease.cookie, args.lease_ms).encode(enc), "final")
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
    ap.add_argument("--history", help="write every request here, one JSON line each")
    ap.add_argument("--name", default="py", help="holder names in the history: NAME-0, NAME-1, ...")
    ap.add_argument("--churn-ms", type=int, default=0, help="every N ms a holder grants one more lease, and cancels or abandons one every third time")
    ap.add_argument("--stop-file", help="stop renewing (and check) once this file exists, or after --run-ms")
    args = ap.parse_args(argv)
    urls = args.servers.split(",")
    watch = Watch()
    rec = Recorder(args.history)
    threads = [threading.Thread(target=hold, args=(h, urls, args, watch, rec)) for h in range(args.holders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rec.close()
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
    ok = c["lost"] == c["early_expiries"] == c["failed_for_good"] == c["expiry_came_back"] == 0 and c["grants_acked"] > 0 and c["kept_checked"] > 0
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
