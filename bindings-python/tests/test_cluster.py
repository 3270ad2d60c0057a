"""The cluster transport (docs/server-transports.md) against real loopback servers: a dead one,
one answering 503, a paused one (accepts connections, never answers), one redirecting with
307, and landlords that name the owner of a shard. Sync (``post``, the threaded driver) and
asyncio (``apost``, the asyncio driver)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator, List, Optional, Tuple

import pytest

from leasehold import (
    FOREVER, IndefiniteError, Landlord, Policy, RenewalEvent, RenewalManager, Reply, Request, aio,
    monotonic_ms, threaded,
)
from leasehold.http import Cluster, apost, encoding_of, post


class Server:
    """A loopback HTTP server whose behaviour can change: "ok" (answers with its landlord),
    "503", "redirect" (307 to ``target``), "close" (drops the connection)."""

    def __init__(self, landlord: Landlord, owner: Optional[str] = None) -> None:
        self.landlord = landlord
        self.mode = "ok"
        self.owner = owner
        self.target = ""
        self.paths: List[str] = []
        me = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                me.paths.append(self.path)
                if me.mode == "503":
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif me.mode == "redirect":
                    self.send_response(307)
                    self.send_header("Location", me.target + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif me.mode in ("wire404", "html404"):
                    # As leasehold-server answers an unknown lease: a 404 with the wire reply
                    # in the body; or a proxy's 404 page, which carries none.
                    enc = encoding_of(self.headers.get("Content-Type"))
                    wire = me.mode == "wire404"
                    reply = me.landlord.handle_bytes(body, enc, monotonic_ms()) if wire else b"<h1>404</h1>"
                    self.send_response(404)
                    ctype = ("application/json" if enc == "json" else "application/octet-stream") if wire else "text/html"
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)
                elif me.mode == "close":
                    self.close_connection = True
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                else:
                    enc = encoding_of(self.headers.get("Content-Type"))
                    reply = me.landlord.handle_bytes(body, enc, monotonic_ms())
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(reply)))
                    if me.owner:
                        self.send_header("X-Leasehold-Owner", me.owner)
                    self.end_headers()
                    self.wfile.write(reply)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_port}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def dead_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nobody listens there: connections are refused
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def paused() -> Iterator[str]:
    """A server that accepts connections (the kernel's backlog) and never answers, as a
    SIGSTOPped process does."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    try:
        yield f"http://127.0.0.1:{s.getsockname()[1]}"
    finally:
        s.close()


@pytest.fixture
def landlord() -> Landlord:
    return Landlord(42, Policy.bounded(60_000, 30_000), seed=bytes(32))


@pytest.fixture
def good(landlord: Landlord) -> Iterator[Server]:
    s = Server(landlord)
    yield s
    s.close()


def grant(urls: List[str], **kw: float) -> Tuple[Reply, Cluster]:
    c = Cluster(urls, timeout=kw.get("timeout", 0.5))
    return Reply.decode(c.post(Request.grant(1, b"r", 10_000).encode())), c


def test_grants_and_renewals_go_where_the_protocol_says(good: Server) -> None:
    r, c = grant([good.url])
    assert r.op == "granted" and r.cookie is not None
    c.post(Request.renew(2, r.cookie, 5_000).encode(), landlord=42)
    assert good.paths == ["/lease", "/lease?landlord=000000000000002a"]
    # A URL with its own path keeps it.
    Cluster([good.url + "/x/"]).post(Request.cancel(3, r.cookie).encode(), landlord=42)
    assert good.paths[-1] == "/x/?landlord=000000000000002a"


def test_the_landlord_id_is_written_as_the_wire_writes_it() -> None:
    from leasehold.http import landlord_query

    assert landlord_query(16) == "landlord=0000000000000010"
    assert landlord_query("000000000000000A") == "landlord=000000000000000a"
    for bad in ("16", "0x10", -1, 1 << 64):
        with pytest.raises(ValueError):
            landlord_query(bad)


def test_a_wire_reply_with_an_error_status_is_a_definite_answer(good: Server, landlord: Landlord) -> None:
    wire, html = Server(landlord), Server(landlord)
    wire.mode, html.mode = "wire404", "html404"
    try:
        r, _ = grant([good.url])
        assert r.cookie is not None
        gone = Request.renew(2, "00" * 16, 1_000).encode()
        # The 404 with a wire reply is returned at once: the next server is never asked.
        c = Cluster([wire.url, good.url])
        answer = Reply.decode(c.post(gone, landlord=42))
        assert answer.op == "error" and good.paths == ["/lease"]
        # A 404 page without a wire reply is not the landlord's answer: the next server is.
        c = Cluster([html.url, good.url])
        assert Reply.decode(c.post(Request.renew(3, r.cookie, 1_000).encode(), landlord=42)).op == "renewed"
        assert good.paths[-1] == "/lease?landlord=000000000000002a"
        # Only a 404 page: an indefinite failure.
        with pytest.raises(IndefiniteError):
            Cluster([html.url]).post(gone, landlord=42)
    finally:
        wire.close()
        html.close()


def test_dead_503_and_paused_servers_are_skipped(good: Server, landlord: Landlord, paused: str) -> None:
    unavailable = Server(landlord)
    unavailable.mode = "503"
    dropping = Server(landlord)
    dropping.mode = "close"
    try:
        t0 = time.monotonic()
        r, c = grant([dead_url(), unavailable.url, dropping.url, paused, good.url], timeout=0.3)
        took = time.monotonic() - t0
        assert r.op == "granted"
        assert unavailable.paths == ["/lease"] and dropping.paths == ["/lease"]
        assert 0.3 <= took < 3, took  # the paused one cost one time-out
        # The next send starts from the server that answered last: no time-out this time.
        t0 = time.monotonic()
        assert r.cookie is not None
        Reply.decode(c.post(Request.renew(2, r.cookie, 1_000).encode(), landlord=42))
        assert time.monotonic() - t0 < 0.25
        assert unavailable.paths == ["/lease"]
    finally:
        unavailable.close()
        dropping.close()


def test_307_is_followed_with_the_same_body(good: Server, landlord: Landlord) -> None:
    redirecting = Server(landlord)
    redirecting.mode = "redirect"
    redirecting.target = good.url
    try:
        r, c = grant([redirecting.url])
        assert r.op == "granted" and good.paths == ["/lease"]
        assert r.cookie is not None
        renewed = Reply.decode(c.post(Request.renew(2, r.cookie, 1_000).encode(), landlord=42))
        assert renewed.op == "renewed" and good.paths[-1] == "/lease?landlord=000000000000002a"

        async def via_asyncio() -> Reply:
            assert r.cookie is not None
            return Reply.decode(await c.apost(Request.renew(3, r.cookie, 1_000).encode(), landlord=42))

        assert asyncio.run(via_asyncio()).op == "renewed"
    finally:
        redirecting.close()


def test_the_owner_named_by_a_server_is_tried_first(landlord: Landlord) -> None:
    owner = Server(landlord)
    other = Server(landlord, owner=owner.url)
    try:
        r, c = grant([other.url, owner.url])
        assert r.cookie is not None and other.paths == ["/lease"]
        c.post(Request.renew(2, r.cookie, 1_000).encode(), landlord=42)  # answered by `other`, naming `owner`
        c.post(Request.renew(3, r.cookie, 1_000).encode(), landlord=42)
        assert other.paths == ["/lease", "/lease?landlord=000000000000002a"]
        assert owner.paths == ["/lease?landlord=000000000000002a"]
    finally:
        owner.close()
        other.close()


def test_every_server_failing_is_one_indefinite_failure(paused: str) -> None:
    with pytest.raises(IndefiniteError) as err:
        post([dead_url(), paused], Request.grant(1, b"r", 1_000).encode(), timeout=0.2)
    assert not err.value.definite
    assert err.value.detail.count("http://127.0.0.1:") == 2

    async def both() -> None:
        await apost([dead_url(), paused], Request.grant(1, b"r", 1_000).encode(), timeout=0.2)

    with pytest.raises(IndefiniteError):
        asyncio.run(both())


def test_threaded_driver_renews_through_a_list_while_servers_die(landlord: Landlord) -> None:
    a, b = Server(landlord), Server(landlord)
    events: List[RenewalEvent] = []
    try:
        lease = threaded.obtain_lease([a.url, b.url], b"printer", 600)
        manager = RenewalManager(report_renewals=True)
        manager.renew_for(lease, FOREVER, 600, monotonic_ms())
        with threaded.RenewalDriver(manager, [a.url, b.url], on_event=events.append, timeout=0.3) as driver:
            time.sleep(0.8)
            a.mode = "503"
            time.sleep(0.8)
            a.mode, b.mode = "ok", "close"
            time.sleep(0.8)
            assert driver.errors == []
        assert [e.kind for e in events if e.kind != "renewed"] == []
        assert sum(e.kind == "renewed" for e in events) >= 4
        assert any("landlord=000000000000002a" in p for p in b.paths) and any("landlord=000000000000002a" in p for p in a.paths)
        assert landlord.get(lease.cookie, monotonic_ms()) is not None
    finally:
        a.close()
        b.close()


def test_asyncio_driver_renews_through_a_list(landlord: Landlord) -> None:
    dead = dead_url()
    good = Server(landlord)

    async def main() -> List[RenewalEvent]:
        events: List[RenewalEvent] = []
        lease = await aio.obtain_lease([dead, good.url], b"printer", 500)
        manager = RenewalManager(report_renewals=True)
        manager.renew_for(lease, 1_200, 500, monotonic_ms())
        done = asyncio.Event()

        def on_event(e: RenewalEvent) -> None:
            events.append(e)
            if e.kind != "renewed":
                done.set()

        async with aio.RenewalDriver(manager, [dead, good.url], on_event=on_event, timeout=0.3):
            await asyncio.wait_for(done.wait(), 10)
        return events

    try:
        events = asyncio.run(main())
    finally:
        good.close()
    assert events[-1].kind == "desired_expiration_reached"
    assert sum(e.kind == "renewed" for e in events) >= 2
    assert all(p.endswith("landlord=000000000000002a") for p in good.paths[1:])
