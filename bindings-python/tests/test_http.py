"""Real loopback HTTP: a landlord served by Python over HTTP on 127.0.0.1, holders renewing
through real requests, one holder killed, and its lease expiring at the landlord.

Leases are a few hundred milliseconds, so each test runs in a few seconds of real time.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
import threading
import time
from functools import partial
from typing import Dict, List

import pytest

from conftest import repo_root
from leasehold import (
    ANY, Expired, IndefiniteError, Landlord, Lease, LeaseDeniedError, Policy, RenewalEvent,
    RenewalManager, Reply, Request, aio, monotonic_ms, threaded,
)
from leasehold import Encoding
from leasehold.http import apost, post, serve_asyncio, serve_threaded

# Asyncio holders and their landlord share one loop. The first renewal comes at most a tenth of
# the lease, or three attempt time-outs, before the end: with initial_rtt 20 and min_rto 50 that
# was 200 ms with a 147 ms time-out, which a machine at load 8 on 2 cores often missed.
LEASE_MS = 2_000
PROCESS_LEASE_MS = 500  # holder processes: a little longer, so a loaded machine cannot starve them


def read_line(proc: "subprocess.Popen[str]", timeout: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "holder printed nothing in time"
    return proc.stdout.readline().strip()


def test_holder_processes_renew_over_http_and_a_killed_one_expires() -> None:
    landlord = Landlord(1, Policy.bounded(PROCESS_LEASE_MS, PROCESS_LEASE_MS), seed=os.urandom(32))
    expired: Dict[str, float] = {}
    expired_event = threading.Event()

    def on_expired(e: Expired) -> None:
        expired[e.cookie] = time.monotonic()
        expired_event.set()

    holder = repo_root() / "examples" / "python" / "holder.py"
    procs: List["subprocess.Popen[str]"] = []
    with threaded.LandlordDriver(landlord, on_expired=on_expired) as driver:
        server = serve_threaded(driver.handle_bytes)
        url = f"http://127.0.0.1:{server.server_port}/"
        try:
            for i in range(3):
                procs.append(
                    subprocess.Popen(
                        [sys.executable, str(holder), "--url", url, "--resource", f"holder-{i}", "--lease-ms", str(PROCESS_LEASE_MS)],
                        stdout=subprocess.PIPE,
                        text=True,
                        cwd=str(repo_root().parent),
                    )
                )
            cookies = []
            for p in procs:
                line = read_line(p, 10)
                assert line.startswith("holding"), line
                cookies.append(line.split()[1])
            # Several lease periods pass: every lease is still alive because it is being renewed.
            time.sleep(4 * PROCESS_LEASE_MS / 1000)
            assert expired == {}
            for c in cookies:
                assert landlord.get(c, driver.now()) is not None

            procs[0].kill()  # a crash: no cancel, no more renewals
            killed_at = time.monotonic()
            procs[0].wait(5)
            assert expired_event.wait(5)
            assert list(expired) == [cookies[0]]
            assert expired[cookies[0]] - killed_at <= (PROCESS_LEASE_MS + 1_500) / 1000
            assert landlord.get(cookies[0], driver.now()) is None

            time.sleep(2 * PROCESS_LEASE_MS / 1000)
            for c in cookies[1:]:
                assert landlord.get(c, driver.now()) is not None
            for p in procs[1:]:
                p.send_signal(signal.SIGTERM)  # a clean stop cancels the lease
                assert p.wait(10) == 0
            assert len(landlord) == 0 and list(expired) == [cookies[0]]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
                if p.stdout is not None:
                    p.stdout.close()
            server.shutdown()
            server.server_close()


def test_asyncio_landlord_and_holders_over_http() -> None:
    async def main() -> None:
        landlord = Landlord(2, Policy.bounded(LEASE_MS, LEASE_MS), seed=os.urandom(32))
        expired: List[str] = []
        gone = asyncio.Event()

        def on_expired(e: Expired) -> None:
            expired.append(e.cookie)
            gone.set()

        async with aio.LandlordDriver(landlord, on_expired=on_expired) as ldriver:
            server = await serve_asyncio(ldriver.handle_bytes)
            port = server.sockets[0].getsockname()[1]
            send = partial(apost, f"http://127.0.0.1:{port}/")
            try:
                drivers = []
                leases: List[Lease] = []
                events: List[RenewalEvent] = []
                for i in range(3):
                    lease = await aio.obtain_lease(send, b"r%d" % i, ANY)
                    assert 0 < lease.remaining(monotonic_ms()) <= LEASE_MS
                    manager = RenewalManager(initial_rtt=100, min_rto=200)
                    manager.renew_for(lease, 60_000, LEASE_MS, monotonic_ms())
                    d = aio.RenewalDriver(manager, lambda _l, m: send(m), on_event=events.append)
                    d.start()
                    drivers.append(d)
                    leases.append(lease)
                await asyncio.sleep(4 * LEASE_MS / 1000)
                assert expired == []
                assert all(e.kind == "renewed" for e in events) and len(events) >= 6

                await drivers[0].stop(flush=False)  # this holder goes silent
                await asyncio.wait_for(gone.wait(), 5)
                assert expired == [leases[0].cookie]

                for d, lease in zip(drivers[1:], leases[1:]):
                    d.renewer.cancel(lease, d.now())  # type: ignore[attr-defined]
                    d.wake()
                    await d.stop()
                assert len(landlord) == 0 and expired == [leases[0].cookie]
            finally:
                server.close()
                await server.wait_closed()

    asyncio.run(main())


def test_transport_failures_are_indefinite_and_retried() -> None:
    """The first two sends fail in transport: the manager retries (indefinite) and keeps the lease."""
    landlord = Landlord(3, Policy.bounded(1_000, 1_000), seed=os.urandom(32))
    calls: List[str] = []
    renewed = threading.Event()

    def transport(_landlord: int, message: bytes) -> bytes:
        if len(calls) < 2:
            calls.append("down")
            raise ConnectionError("landlord down")
        calls.append("ok")
        return landlord.handle_bytes(message, "binary", monotonic_ms())

    def on_event(e: RenewalEvent) -> None:
        events.append(e)
        if e.kind == "renewed":
            renewed.set()

    g = landlord.grant("x", 1_000, monotonic_ms())
    lease = Lease.from_grant(3, g.cookie, monotonic_ms() - 1, 1_000)
    manager = RenewalManager(initial_rtt=10, min_rto=50)
    events: List[RenewalEvent] = []
    with threaded.RenewalDriver(manager, transport, on_event=on_event) as driver:
        manager.renew_for(lease, 60_000, 1_000, driver.now())
        driver.wake()
        assert renewed.wait(5)
    assert calls[:3] == ["down", "down", "ok"]
    assert manager.stats()["indefinite_failures"] >= 2
    assert not any(e.kind == "renewal_failed" for e in events)
    assert landlord.get(g.cookie, monotonic_ms()) is not None


def test_blocking_client_and_errors() -> None:
    landlord = Landlord(4, Policy.capacity(1, Policy.fixed(1_000)), seed=os.urandom(32))
    server = serve_threaded(lambda m, enc: landlord.handle_bytes(m, enc, monotonic_ms()))
    url = f"http://127.0.0.1:{server.server_port}/"
    try:
        lease = threaded.obtain_lease(partial(post, url, encoding="json"), b"disk", 500, encoding="json")
        assert landlord.get(lease.cookie, monotonic_ms()) is not None
        with pytest.raises(LeaseDeniedError):
            threaded.obtain_lease(partial(post, url), b"second", 500)
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(IndefiniteError):
        post(url, b"anything", timeout=1.0)  # nobody listens any more


def test_keep_alive_client_is_not_stalled() -> None:
    """One HTTP/1.1 connection reused for 300 requests: each reply is one write on a TCP_NODELAY
    socket, so no request waits for a delayed ACK (~40 ms each, ~12 s in all, before the fix)."""
    import http.client

    landlord = Landlord(6, Policy.fixed(60_000), seed=os.urandom(32))
    server = serve_threaded(lambda m, enc: landlord.handle_bytes(m, enc, monotonic_ms()))
    conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=10)
    try:
        g = landlord.grant(b"r", ANY, monotonic_ms())
        sock = None
        t0 = time.perf_counter()
        for i in range(300):
            enc: Encoding = "json" if i % 2 else "binary"
            body = Request.renew(i, g.cookie, 60_000).encode(enc)
            ctype = "application/json" if enc == "json" else "application/octet-stream"
            conn.request("POST", "/", body=body, headers={"Content-Type": ctype})
            resp = conn.getresponse()
            reply = Reply.decode(resp.read(), enc)
            assert resp.status == 200 and reply.op == "renewed" and reply.id == i
            if sock is None:
                sock = conn.sock
            assert conn.sock is sock  # the same connection throughout
        elapsed = time.perf_counter() - t0
        assert elapsed < 5.0, f"300 keep-alive requests took {elapsed:.1f} s"
        conn.request("POST", "/", body=Request.renew(1, g.cookie, 1).encode(), headers={"Connection": "close"})
        resp = conn.getresponse()
        assert resp.getheader("Connection") == "close" and Reply.decode(resp.read()).op == "renewed"
    finally:
        conn.close()
        server.shutdown()
        server.server_close()


def test_extra_headers_reach_the_server_in_both_clients() -> None:
    """``headers`` go with the POST (the discovery client's ``leasehold-listener``), in the
    blocking and the asyncio client; the helper's own Content-Type wins; a value that would
    split the request is refused before anything is sent."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: List[Dict[str, str]] = []

    class Echo(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            seen.append({k.lower(): v for k, v in self.headers.items()})
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/discovery"
    try:
        extra = {"leasehold-listener": "http://127.0.0.1:9/events", "Content-Type": "text/plain"}
        assert post(url, b"one", "json", headers=extra) == b"one"
        assert asyncio.run(apost(url, b"two", "binary", headers=extra)) == b"two"
        assert post(url, b"three") == b"three"
        assert [h.get("leasehold-listener") for h in seen] == ["http://127.0.0.1:9/events"] * 2 + [None]
        assert [h["content-type"] for h in seen] == ["application/json"] + ["application/octet-stream"] * 2
        bad = {"x": "a\r\nInjected: 1"}
        with pytest.raises(ValueError, match="split the request"):
            post(url, b"x", headers=bad)
        with pytest.raises(ValueError, match="split the request"):
            asyncio.run(apost(url, b"x", headers=bad))
        assert len(seen) == 3
    finally:
        server.shutdown()
        server.server_close()
