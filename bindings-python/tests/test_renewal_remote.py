"""A renewal set at a remote renewal service (issue 26) in Python: the set messages against the
shared vectors (core/tests/vectors/renewal.json), and :class:`leasehold.renewal.RemoteSet`,
blocking and asyncio, against a real ``leasehold-server --renewal-shards 1`` (its binary:
``LEASEHOLD_SERVER_BIN``, else ``target/debug/leasehold-server``, built if missing), with a
listener for the service's events."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from conftest import repo_root
from leasehold import FOREVER, DecodeError, Lease, Reply, Request, UnknownLeaseError, monotonic_ms
from leasehold.http import Cluster
from leasehold.renewal import RemoteSet, SetEventMessage, SetReply, SetRequest, decode_event
from test_coord import Server


def vectors() -> Dict[str, Any]:
    with open(repo_root() / "core" / "tests" / "vectors" / "renewal.json", encoding="utf-8") as f:
        data: Dict[str, Any] = json.load(f)
    return data


def test_set_message_vectors() -> None:
    v = vectors()
    for kind, cases in ((SetRequest, v["requests"]), (SetReply, v["replies"]), (SetEventMessage, v["events"])):
        assert cases
        for c in cases:
            obj = kind.decode(c["json"].encode(), "json")
            assert obj == c["message"], c["name"]
            assert kind.encode(obj, "json") == c["json"].encode(), c["name"]
            assert kind.decode(bytes.fromhex(c["hex"]), "binary") == obj, c["name"]
            assert kind.encode(obj, "binary").hex() == c["hex"], c["name"]
    kinds = {"request": SetRequest, "reply": SetReply, "event": SetEventMessage}
    refused = [d for d in v["decode"] if "error_code" in d and "limits" not in d]
    assert refused
    for d in refused:
        with pytest.raises(DecodeError):
            kinds[d["kind"]].decode(d["text"].encode(), "json")
    for d in v["decode_binary"]:
        if "limits" in d:
            continue
        if "error_code" in d:
            with pytest.raises(DecodeError):
                kinds[d["kind"]].decode(bytes.fromhex(d["hex"]), "binary")
        else:
            assert kinds[d["kind"]].decode(bytes.fromhex(d["hex"]), "binary") == d["decoded"], d["name"]


class Listener:
    """An HTTP listener for the service's events (decoded by the core)."""

    def __init__(self) -> None:
        self.events: List[Dict[str, Any]] = []
        got = self.events

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                got.append(decode_event(body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/events"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server("--renewal-shards", "1")
    try:
        yield s
    finally:
        s.close()


def grant(cluster: Cluster, resource: bytes, ms: int) -> Lease:
    sent = monotonic_ms()
    reply = Reply.decode(cluster.post(Request.grant(1, resource, ms).encode("json")), "json")
    assert reply.op == "granted" and reply.duration is not None and reply.cookie is not None, reply
    return Lease.from_grant(reply.landlord, reply.cookie, sent, reply.duration)


def until(f: Any, limit: float = 15.0) -> None:
    end = time.monotonic() + limit
    while not f():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def test_a_lease_handed_over_is_kept_and_a_refused_one_reported(server: Server) -> None:
    landlords = Cluster(server.url, encoding="json")
    listener = Listener()
    try:
        s = RemoteSet.create(server.url, 60_000)
        assert s.service == 2 and s.number >= 1 and s.lease.remaining(monotonic_ms()) > 50_000
        event_id, sequence = s.listen("renewal_failure", listener.url, b"py")
        assert event_id > 0 and sequence == 0
        kept = grant(landlords, b"py/kept", 1_500)
        refused = grant(landlords, b"py/refused", 1_500)
        s.add(kept, [server.url], FOREVER, 1_500)
        s.add(refused, server.url, FOREVER, 1_500)
        assert {(int(l["landlord"], 16), l["cookie"]) for l in s.leases()} == {(1, kept.cookie), (1, refused.cookie)}
        # The landlord refuses one (the holder cancels it there): a renewal-failure event.
        cancel = Reply.decode(landlords.post(Request.cancel(2, refused.cookie).encode("json"), 1), "json")
        assert cancel.op == "cancelled"
        until(lambda: len(listener.events) >= 1)
        e = listener.events[0]
        assert (int(e["service"], 16), int(e["set"]), bytes.fromhex(e["handback"])) == (2, s.number, b"py")
        assert e["body"]["kind"] == "renewal_failure"
        assert e["body"]["lease"]["cookie"] == refused.cookie and e["body"]["error"]["code"] == 1
        # The other outlives its own 1.5 s: taken back with time left, then still alive.
        time.sleep(4)
        back = s.remove(kept, [server.url])
        assert back is not None and back["cookie"] == kept.cookie and int(back["remaining"]) > 0, back
        assert s.remove(kept, [server.url]) is None
        renewed = Reply.decode(landlords.post(Request.renew(3, kept.cookie, 1_000).encode("json"), 1), "json")
        assert renewed.op == "renewed"
        # The set's own lease: renewed and cancelled like any lease; then the set is gone.
        assert s.renew(30_000) == 30_000
        s.unlisten("renewal_failure")
        s.cancel()
        with pytest.raises(UnknownLeaseError):
            s.leases()
    finally:
        listener.close()


def test_asyncio_remote_set(server: Server) -> None:
    async def main() -> Tuple[int, int]:
        landlords = Cluster(server.url, encoding="json")
        s = await RemoteSet.acreate([server.url], 20_000)
        lease = grant(landlords, b"py/async", 10_000)
        await s.aadd(lease, [server.url], membership=60_000, renew=5_000)
        listed = await s.aleases()
        assert [l["cookie"] for l in listed] == [lease.cookie] and int(listed[0]["membership"]) <= 60_000
        reg = await s.alisten("expiration_warning", "http://127.0.0.1:9/none", min_warning=5_000)
        await s.aunlisten("expiration_warning")
        removed = await s.aremove(lease, server.url)
        assert removed is not None and removed["cookie"] == lease.cookie
        granted = await s.arenew(10_000)
        await s.acancel()
        return reg[1], granted

    assert asyncio.run(main()) == (0, 10_000)


def test_a_set_needs_a_json_cluster_and_a_service(server: Server) -> None:
    with pytest.raises(ValueError, match="JSON"):
        RemoteSet.create(Cluster(server.url), 1_000)
    plain = Server()
    try:
        with pytest.raises(UnknownLeaseError) as e:
            RemoteSet.create(plain.url, 1_000)
        assert "--renewal-shards" in e.value.detail, e.value.detail
    finally:
        plain.close()
