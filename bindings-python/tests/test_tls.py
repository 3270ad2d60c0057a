"""``Cluster`` over TLS (``https://``, a CA bundle, a client certificate, a token), sync and
asyncio, against a loopback HTTPS server that checks them as ``leasehold-server`` does
(``--tls-client-ca --tls-client-auth optional --tokens``): certificates made with openssl
(``scripts/lib/mkcerts.sh``). The server itself is tested over TLS in
``scripts/test-security.sh``."""

from __future__ import annotations

import asyncio
import os
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator, List, Tuple, cast

import pytest

from leasehold import IndefiniteError, Landlord, Policy, Reply, Request, monotonic_ms
from leasehold.http import Cluster

TOKEN = "lh_0011223344556677_" + "ab" * 32


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("certs")
    root = Path(os.environ.get("LEASEHOLD_ROOT", Path(__file__).resolve().parents[2]))
    subprocess.run(["bash", str(root / "scripts/lib/mkcerts.sh"), str(d)], check=True)
    return d


class TlsServer:
    """HTTPS on loopback; a request needs the token or a client certificate naming
    worker.example (401 with a wire reply otherwise, as leasehold-server answers)."""

    def __init__(self, certs: Path) -> None:
        ll = Landlord(7, Policy.bounded(60_000, 30_000), seed=bytes(32))
        self.seen: List[Tuple[str, str]] = []
        me = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                peer = cast(ssl.SSLSocket, self.connection).getpeercert() or {}
                alt = cast(Tuple[Tuple[str, str], ...], peer.get("subjectAltName", ()))
                names = [v for k, v in alt if k == "DNS"]
                auth = self.headers.get("Authorization", "")
                me.seen.append((auth, ",".join(names)))
                if auth == f"Bearer {TOKEN}" or "worker.example" in names:
                    status, reply = 200, ll.handle_bytes(body, "binary", monotonic_ms())
                else:
                    # What leasehold-server answers without an identity: 401 and a wire reply.
                    req = Request.decode(body)
                    status, reply = 401, _denied(req.id)
                self.send_response(status)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: object) -> None:
                pass

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certs / "server.pem", certs / "server.key")
        ctx.load_verify_locations(certs / "ca.pem")
        ctx.verify_mode = ssl.CERT_OPTIONAL
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.socket = ctx.wrap_socket(self.http.socket, server_side=True)
        self.http.daemon_threads = True
        self.url = f"https://127.0.0.1:{self.http.server_port}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def _denied(rid: int) -> bytes:
    # An error reply (a landlord's answer to a renewal of a lease it never granted).
    ll = Landlord(7, Policy.bounded(1000, 1000), seed=bytes(32))
    return ll.handle_bytes(Request.renew(rid, bytes(16), 1000).encode(), "binary", monotonic_ms())


@pytest.fixture
def server(certs: Path) -> Iterator[TlsServer]:
    s = TlsServer(certs)
    yield s
    s.close()


def grant(c: Cluster) -> Reply:
    return Reply.decode(c.post(Request.grant(1, b"r", 10_000).encode()))


def test_https_with_a_ca_bundle_and_a_token(server: TlsServer, certs: Path) -> None:
    c = Cluster(server.url, cafile=str(certs / "ca.pem"), token=TOKEN, timeout=2)
    r = grant(c)
    assert r.op == "granted"
    assert server.seen[-1][0] == f"Bearer {TOKEN}"
    # The renewal names its landlord, over the same TLS settings.
    assert r.cookie is not None
    r2 = Reply.decode(c.post(Request.renew(2, r.cookie, 5_000).encode(), landlord=7))
    assert r2.op == "renewed"


def test_a_client_certificate_names_the_identity(server: TlsServer, certs: Path) -> None:
    c = Cluster(
        server.url,
        cafile=str(certs / "ca.pem"),
        certfile=str(certs / "client.pem"),
        keyfile=str(certs / "client.key"),
        timeout=2,
    )
    assert grant(c).op == "granted"
    assert server.seen[-1] == ("", "worker.example")


def test_without_an_identity_the_refusal_is_a_definite_answer(server: TlsServer, certs: Path) -> None:
    c = Cluster(server.url, cafile=str(certs / "ca.pem"), timeout=2)
    r = grant(c)
    assert r.op == "error"


def test_a_server_signed_by_another_ca_is_refused(server: TlsServer, certs: Path) -> None:
    c = Cluster(server.url, cafile=str(certs / "otherca.pem"), token=TOKEN, timeout=2)
    with pytest.raises(IndefiniteError, match="CERTIFICATE_VERIFY_FAILED"):
        grant(c)
    assert server.seen == []


def test_asyncio_over_tls(server: TlsServer, certs: Path) -> None:
    c = Cluster(server.url, cafile=str(certs / "ca.pem"), token=TOKEN, timeout=2)

    async def go() -> Reply:
        return Reply.decode(await c.apost(Request.grant(1, b"a", 10_000).encode()))

    assert asyncio.run(go()).op == "granted"
    bad = Cluster(server.url, cafile=str(certs / "otherca.pem"), token=TOKEN, timeout=2)
    with pytest.raises(IndefiniteError):
        asyncio.run(bad.apost(Request.grant(1, b"a", 10_000).encode()))


def test_tls_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="not both"):
        Cluster("https://127.0.0.1:1", ssl_context=ssl.create_default_context(), cafile="x")
    with pytest.raises(ValueError, match="split the request"):
        Cluster("https://127.0.0.1:1", token="a\r\nb")
