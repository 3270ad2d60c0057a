#!/usr/bin/env python3
"""What the fault suite asks of servers over HTTP (run with the venv that has the ``leasehold``
binding, in the namespace the servers are reached from). Each subcommand prints one JSON object.

- ``ready URL... --limit-ms L``: polls every server's ``/readyz`` every 50 ms until all answer
  200; ``{"ms": time it took or -1, "each": {url: ms}, "why": {url: the last body that was not
  ready}}``.
- ``first-ready URL --shards N --limit-ms L [--since MS]``: a server that is starting: polls
  ``/readyz`` (and ``/healthz``) every 20 ms until it answers 200, then at once asks that server
  alone for every shard (a renewal of a made-up cookie: any reply means the shard is served,
  here or by the owner it forwards to). A shard that does not answer is a lie (finding 4: ready
  before its shards are served) unless ``/readyz``, asked again at once, no longer says 200 (the
  cluster changed meanwhile: a shard handed over as servers join): then it polls on.
  ``{"ms" (since --since, ms since the epoch, or since the probe started), "polls",
  "statuses", "served": bool, "unserved": [...], "healthz_early": n, "changed": n}``:
  ``healthz_early`` counts polls where ``/healthz`` said 200 while ``/readyz``, asked before
  and after it, did not.
- ``not-ready URL --limit-ms L [--grants N]``: polls until ``/readyz`` answers anything but 200
  (503, or no answer); ``{"ms", "status", "body", "grants"}``. With ``--grants``, each poll also
  sends N grants of distinct 400-byte resources (2 s leases, never renewed), so that the
  stores must write: a full disk is only found out by a write, and the holders' own renewals
  may be too few to need a new page of the file system within the limit on a loaded machine.
- ``readyz URL``: ``{"status", "body"}`` (the body parsed when it is JSON).
- ``metric URL NAME``: ``{"values": {labels: value}}`` of one metric from ``/metrics``.
- ``shard URL K``: one renewal of a made-up cookie sent to that server alone for landlord K:
  ``{"status", "op"}``: ``status`` 200 with ``op`` ``error`` when the shard answered (with a
  wire reply, which for that cookie the server sends as a 404 "unknown lease"), else the
  HTTP status (503: not served) and ``op`` null.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import time
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

from leasehold import Reply, Request

COOKIE = "0" * 31 + "1"


def get(url: str, path: str, timeout: float = 1.0) -> Tuple[int, bytes]:
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    except (OSError, http.client.HTTPException):
        return 0, b""
    finally:
        c.close()


def post_wire(url: str, path: str, request: Request, timeout: float) -> Tuple[int, str, bytes]:
    """POSTs one wire request (binary); the status, the Content-Type and the body."""
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=timeout)
    try:
        c.request("POST", path, body=request.encode("binary"), headers={"Content-Type": "application/octet-stream"})
        r = c.getresponse()
        return r.status, r.getheader("Content-Type") or "", r.read()
    finally:
        c.close()


def post_shard(url: str, k: int, timeout: float = 1.0) -> Tuple[int, Optional[str]]:
    try:
        status, ctype, data = post_wire(url, f"/lease?landlord={k:016x}", Request.renew(k, COOKIE, 1), timeout)
        # A wire reply comes with the status that says what it is (404 for "unknown lease", 409,
        # 400): any of them means the shard answered. 503 (not served, plain text) and any
        # answer without a wire reply mean it did not.
        if status >= 500 or not ctype.startswith("application/octet-stream"):
            return status, None
        reply = Reply.decode(data, "binary")
        return 200, reply.op if reply.landlord == k else f"landlord {reply.landlord}"
    except (OSError, http.client.HTTPException, ValueError) as e:
        return 0, repr(e)


def parse(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return body.decode(errors="replace")[:300]


def now_ms() -> float:
    return time.monotonic() * 1000


def cmd_ready(a: argparse.Namespace) -> Dict[str, Any]:
    t0 = now_ms()
    each: Dict[str, int] = {}
    why: Dict[str, Any] = {}
    while True:
        for u in a.urls:
            if u in each:
                continue
            status, body = get(u, "/readyz")
            if status == 200:
                each[u] = round(now_ms() - t0)
            else:
                why[u] = parse(body) if body else status
        if len(each) == len(a.urls):
            return {"ms": max(each.values()), "each": each, "why": {u: why[u] for u in why if each[u] > 0}}
        if now_ms() - t0 > a.limit_ms:
            return {"ms": -1, "each": each, "why": why}
        time.sleep(0.05)


def cmd_first_ready(a: argparse.Namespace) -> Dict[str, Any]:
    t0 = now_ms()
    since = a.since if a.since else time.time() * 1000
    polls, healthz_early, changed = 0, 0, 0
    statuses: Dict[str, int] = {}
    while True:
        status, body = get(a.url, "/readyz", timeout=0.5)
        hz, _ = get(a.url, "/healthz", timeout=0.5)
        polls += 1
        statuses[str(status)] = statuses.get(str(status), 0) + 1
        if hz == 200 and status != 200 and get(a.url, "/readyz", timeout=0.5)[0] != 200:
            healthz_early += 1  # (not ready before and after: not a change between the two)
        if status == 200:
            ms = round(time.time() * 1000 - since)
            unserved: List[Any] = []
            for k in range(1, a.shards + 1):
                s, op = post_shard(a.url, k)
                if s != 200 or op != "error":
                    unserved.append({"shard": k, "status": s, "op": op})
            # A shard handed over in the instant between /readyz and the probe answers again
            # within a moment (a holder retries); one that still does not after 1 s is a lie.
            grace = now_ms() + 1000
            while unserved and now_ms() < grace:
                time.sleep(0.1)
                still = []
                for u in unserved:
                    s, op = post_shard(a.url, u["shard"])
                    if s != 200 or op != "error":
                        still.append({"shard": u["shard"], "status": s, "op": op})
                unserved = still
            again, body2 = get(a.url, "/readyz", timeout=0.5)
            if not unserved or again == 200:
                claimed = parse(body)
                if unserved and isinstance(claimed, dict):
                    # What it said of the shards that did not answer, when it said it was ready.
                    bad = {u["shard"] for u in unserved}
                    claimed = [x for x in claimed.get("shards", []) if x.get("shard") in bad]
                return {"ms": ms, "polls": polls, "statuses": statuses, "served": not unserved,
                        "unserved": unserved, "healthz_early": healthz_early, "changed": changed,
                        "body": claimed}
            changed += 1  # no longer ready: the cluster changed; a lie only if it still said 200
        if now_ms() - t0 > a.limit_ms:
            return {"ms": -1, "polls": polls, "statuses": statuses, "served": False, "unserved": [],
                    "healthz_early": healthz_early, "changed": changed, "body": parse(body)}
        time.sleep(0.02)


def post_grant(url: str, i: int, timeout: float = 0.5) -> int:
    try:
        return post_wire(url, "/lease", Request.grant(i, b"fault/fill/%08d/" % i + b"x" * 384, 2000), timeout)[0]
    except (OSError, http.client.HTTPException):
        return 0


def cmd_not_ready(a: argparse.Namespace) -> Dict[str, Any]:
    t0 = now_ms()
    sent: Dict[str, int] = {}
    while True:
        status, body = get(a.url, "/readyz", timeout=0.5)
        if status != 200:
            return {"ms": round(now_ms() - t0), "status": status, "body": parse(body), "grants": sent}
        if now_ms() - t0 > a.limit_ms:
            return {"ms": -1, "status": status, "body": parse(body), "grants": sent}
        for _ in range(a.grants):
            k = str(post_grant(a.url, sum(sent.values())))
            sent[k] = sent.get(k, 0) + 1
        time.sleep(0.05)


def cmd_readyz(a: argparse.Namespace) -> Dict[str, Any]:
    status, body = get(a.url, "/readyz")
    return {"status": status, "body": parse(body)}


def cmd_metric(a: argparse.Namespace) -> Dict[str, Any]:
    status, body = get(a.url, "/metrics")
    values: Dict[str, float] = {}
    for line in body.decode(errors="replace").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name_labels, _, value = line.rpartition(" ")
        name = name_labels.split("{", 1)[0]
        if name == a.name:
            labels = name_labels[len(name):] or "{}"
            try:
                values[labels] = float(value)
            except ValueError:
                pass
    return {"status": status, "values": values}


def cmd_shard(a: argparse.Namespace) -> Dict[str, Any]:
    s, op = post_shard(a.url, a.k)
    return {"status": s, "op": op}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("ready")
    p.add_argument("urls", nargs="+")
    p.add_argument("--limit-ms", type=int, default=30000)
    p = sub.add_parser("first-ready")
    p.add_argument("url")
    p.add_argument("--shards", type=int, required=True)
    p.add_argument("--limit-ms", type=int, default=30000)
    p.add_argument("--since", type=float, default=0, help="ms since the epoch to count from")
    p = sub.add_parser("not-ready")
    p.add_argument("url")
    p.add_argument("--limit-ms", type=int, default=30000)
    p.add_argument("--grants", type=int, default=0, help="grants to send with each poll")
    p = sub.add_parser("readyz")
    p.add_argument("url")
    p = sub.add_parser("metric")
    p.add_argument("url")
    p.add_argument("name")
    p = sub.add_parser("shard")
    p.add_argument("url")
    p.add_argument("k", type=int)
    a = ap.parse_args(argv)
    out = {"ready": cmd_ready, "first-ready": cmd_first_ready, "not-ready": cmd_not_ready, "readyz": cmd_readyz,
           "metric": cmd_metric, "shard": cmd_shard}[a.cmd](a)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
