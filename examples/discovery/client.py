#!/usr/bin/env python3
"""A Python client of the lookup discovery service (the discovery run's second runtime).

It follows the contract of examples/discovery/client.rs: the same flags; one JSON line on stdout
per thing that happens (``listening``, ``registered``, ``event``, ``registrars``,
``renew_failed``, ``lost``, ``cancelled``); commands on stdin (``registrars``, ``quit``).

Everything it says and hears is a message of the installed ``leasehold`` wheel: the
registration is a ``DiscoveryRequest`` (its JSON object form, as the shared vectors write it,
encoded by the wheel) POSTed to ``<lds>/discovery`` with the listener's URL in the
``leasehold-listener`` header, renewals and the final cancel are lease ``Request`` messages
POSTed to ``<lds>/lease?landlord=<the registration's landlord>`` (a leasehold-server runs
landlord shards beside its discovery service: the query sends them to the service), and each event pushed to the listener (``leasehold.http``'s server)
is decoded as a ``DiscoveryEvent`` (a dict) and answered with an ``EventReply``.

    client.py --lds URL --name NAME [--groups all|none|G1,G2] [--locators H:P,...]
              [--lease-ms MS] [--encoding json|binary]
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from typing import Any, Dict, Iterable, List, Optional

from leasehold import (
    ALL_GROUPS,
    NO_GROUPS,
    DiscoveryEvent,
    DiscoveryReply,
    DiscoveryRequest,
    Encoding,
    EventReply,
    LeaseError,
    Reply,
    Request,
    UnknownLeaseError,
    http,
)

#: The header the discovery service reads a registration's listener from.
LISTENER_HEADER = "leasehold-listener"

_out = threading.Lock()


def say(**fields: object) -> None:
    """One JSON line on stdout (lines from the listener's threads never interleave)."""
    line = json.dumps(fields)
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Client:
    def __init__(self, lds: str, name: str, encoding: Encoding) -> None:
        self.lds = lds.rstrip("/")
        self.name = name
        self.encoding: Encoding = encoding
        #: The registration lease's landlord, once registered (named in later requests).
        self.landlord: Optional[int] = None
        self.service = http.Cluster(self.lds + "/discovery", encoding=encoding, timeout=5.0)

    def discovery(self, op: str, listener: Optional[str] = None, **fields: Any) -> Dict[str, Any]:
        """A discovery request (its JSON object form) and the reply's body."""
        headers = {LISTENER_HEADER: listener} if listener is not None else None
        request = DiscoveryRequest.encode({"v": 1, "id": "1", "body": {"op": op, **fields}}, self.encoding)
        # An error reply under a 4xx status (404: no such registration) is the service's answer.
        body = self.service.post(request, self.landlord, headers=headers, kind="DiscoveryReply")
        decoded = DiscoveryReply.decode(body, self.encoding)
        reply: Dict[str, Any] = decoded["body"]
        if reply.get("op") == "registered":
            landlord = decoded["landlord"]
            self.landlord = int(landlord, 16) if isinstance(landlord, str) else int(landlord)
        return reply

    def lease(self, request: Request) -> Reply:
        body = http.post(self.lds + "/lease", request.encode(self.encoding), self.encoding, landlord=self.landlord)
        return Reply.decode(body, self.encoding)

    def on_event(self, body: bytes, encoding: Encoding) -> bytes:
        """The listener: an event in, its event reply out (in the event's own encoding)."""
        e = DiscoveryEvent.decode(body, encoding)
        say(
            type="event",
            name=self.name,
            event_id=int(e["event_id"]),
            sequence=int(e["sequence"]),
            discarded=e["discarded"],
            registrars=[r["id"] for r in e["registrars"]],
            handback=bytes.fromhex(e["handback"]).decode("utf-8", "replace"),
        )
        return EventReply.encode(EventReply.received(int(e["event_id"]), int(e["sequence"])), encoding)

    def renew_forever(self, cookie: str, lease_ms: int, stop: threading.Event) -> None:
        """Renews every third of the lease; a failure is retried soon after; a lease the
        service no longer knows ends the loop."""
        wait = lease_ms / 3
        while not stop.wait(wait / 1000):
            try:
                reply = self.lease(Request.renew(1, cookie, lease_ms))
            except LeaseError as e:  # transport failures are IndefiniteError
                say(type="renew_failed", name=self.name, error=str(e))
                wait = 250
                continue
            if reply.op == "renewed":
                wait = lease_ms / 3
            elif isinstance(reply.error, UnknownLeaseError):
                say(type="lost", name=self.name, error=str(reply.error))
                return
            else:
                say(type="renew_failed", name=self.name, error=f"{reply.op}: {reply.error}")
                wait = 250


def groups_of(text: str) -> Optional[Iterable[str]]:
    if text == "all":
        return ALL_GROUPS
    if text in ("none", ""):
        return NO_GROUPS
    return text.split(",")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="Registers with a lookup discovery service and prints what it hears.")
    ap.add_argument("--lds", required=True, help="the service: a leasehold-server run with --discovery-port (http://127.0.0.1:PORT)")
    ap.add_argument("--name", required=True, help="printed on every line; also the registration's handback")
    ap.add_argument("--groups", default="none", help="all | none | a comma-separated list (default none)")
    ap.add_argument("--locators", default="", help="comma-separated host:port locators (default none)")
    ap.add_argument("--lease-ms", type=int, default=10_000, help="registration lease asked for; renewed every third of it")
    ap.add_argument("--encoding", default="json", choices=["json", "binary"])
    a = ap.parse_args(argv)
    encoding: Encoding = "json" if a.encoding == "json" else "binary"
    client = Client(a.lds, a.name, encoding)

    server = http.serve_threaded(client.on_event)
    url = f"http://127.0.0.1:{server.server_address[1]}/events"
    say(type="listening", name=a.name, url=url)

    locators = [loc for loc in a.locators.split(",") if loc]
    groups = groups_of(a.groups)
    reply = client.discovery(
        "register", url, groups=None if groups is None else list(groups), locators=locators,
        handback=a.name.encode().hex(), duration=str(a.lease_ms),
    )
    if reply["op"] != "registered":
        print(f"client.py: register answered {reply}", file=sys.stderr)
        return 2
    cookie: str = reply["cookie"]
    say(
        type="registered",
        name=a.name,
        registration=int(reply["registration"]),
        cookie=cookie,
        event_id=int(reply["event_id"]),
        sequence=int(reply["sequence"]),
        duration=int(reply["duration"]),
    )

    stop = threading.Event()
    renewer = threading.Thread(target=client.renew_forever, args=(cookie, a.lease_ms, stop), daemon=True)
    renewer.start()

    for line in sys.stdin:
        command = line.strip()
        if command == "registrars":
            try:
                r = client.discovery("get_registrars", cookie=cookie)
            except LeaseError as e:
                say(type="registrars", name=a.name, error=str(e))
                continue
            if r["op"] != "registrars":
                say(type="registrars", name=a.name, error=f"{r['op']}: {r.get('message')}")
            else:
                say(type="registrars", name=a.name, registrars=[x["id"] for x in r["registrars"]])
        elif command == "quit":
            break
        elif command:
            print(f"client.py: unknown command {command!r}", file=sys.stderr)
    stop.set()
    try:
        ok = client.lease(Request.cancel(1, cookie)).op == "cancelled"
    except LeaseError:
        ok = False
    say(type="cancelled", name=a.name, ok=ok)
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
