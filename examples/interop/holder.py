"""The Python holder of the interop test: reads a lease in DURATION form, renews it over HTTP.

Usage: python holder.py URL LEASE.json LEASE.hex RENEW_MS json|binary
(the line protocol is in examples/interop/README.md)
"""

from __future__ import annotations

import sys
import time
from typing import List, Tuple, Union

import leasehold
from leasehold.http import post
from leasehold import Encoding


def now_ms() -> int:
    """Epoch milliseconds: the clock every runtime of the test shares."""
    return time.time_ns() // 1_000_000


def main() -> int:
    if len(sys.argv) != 6 or sys.argv[5] not in ("json", "binary"):
        print("usage: holder.py URL LEASE.json LEASE.hex RENEW_MS json|binary", file=sys.stderr)
        return 2
    url, json_path, hex_path, renew = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    encoding: Encoding = "json" if sys.argv[5] == "json" else "binary"
    with open(json_path) as f:
        text = f.read().strip()
    with open(hex_path) as f:
        data = bytes.fromhex(f.read().strip())

    # Read both forms at one `now`, and write them back at that same `now`.
    now = now_ms()
    from_json = leasehold.Lease.from_json(text, now)
    from_bytes = leasehold.Lease.from_bytes(data, now)
    out: List[Tuple[str, Union[int, str]]] = [
        ("runtime", "python"),
        ("read_now", now),
        ("read_json", from_json.expiration),
        ("read_hex", from_bytes.expiration),
        ("reser_json", from_json.to_json(now)),
        ("reser_hex", from_bytes.to_bytes(now).hex()),
    ]

    # Renew over HTTP; the new expiration counts from when the request was sent.
    request = leasehold.Request.renew(1, from_json.cookie, renew).encode(encoding)
    sent_at = now_ms()
    body = post(url, request, encoding)
    received_at = now_ms()
    reply = leasehold.Reply.decode(body, encoding)
    if reply.op != "renewed" or reply.duration is None:
        print(f"interop (python): renewal refused: {reply.error or reply.op}", file=sys.stderr)
        return 1
    renewed = leasehold.Lease.from_grant(from_json.landlord, from_json.cookie, sent_at, reply.duration)
    now = now_ms()
    out += [
        ("sent_at", sent_at),
        ("rtt", received_at - sent_at),
        ("granted", reply.duration),
        ("renewed", renewed.expiration),
        ("write_now", now),
        ("json", renewed.to_json(now)),
        ("hex", renewed.to_bytes(now).hex()),
    ]
    for key, value in out:
        print(key, value)
    return 0


if __name__ == "__main__":
    sys.exit(main())
